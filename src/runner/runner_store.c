/* runner_store: the runner's own store entry (I4): put under the runner's
 * hold by its constructor, released by runner_free; with leases (Redis) a
 * thread renews every lease/3, putting back bytes the store lost or repairing
 * bytes that changed. */
#include "runner_int.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* One renewal: the lease, and the bytes when missing or changed. */
static void renew_once(runner *r)
{
    struct fr_error err;
    fr_error_init(&err);
    enum store_restored what = STORE_INTACT;
    if (store_restore(r->store, r->id, r->frozen->canonical, r->frozen->canonical_len, &what,
                      &err) != FR_OK)
        FR_LOG(FR_LOG_DEBUG, "runner %s: renewing the store lease on %s failed: %s", r->id,
               r->frozen->id, err.message); /* the store logs unavailability once */
}

static void *renew_main(void *arg)
{
    runner *r = arg;
    int64_t period_ms = store_lease_ms(r->store) / 3;
    pthread_mutex_lock(&r->renew_lock);
    while (!r->renew_stop) {
        struct timespec until;
        fr_mono_deadline(&until, period_ms);
        int rc = 0;
        while (!r->renew_stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&r->renew_cond, &r->renew_lock, &until);
        if (r->renew_stop)
            break;
        pthread_mutex_unlock(&r->renew_lock);
        renew_once(r);
        pthread_mutex_lock(&r->renew_lock);
    }
    pthread_mutex_unlock(&r->renew_lock);
    return NULL;
}

int runner__store_hold(runner *r, store *st, struct fr_error *err)
{
    if (!st)
        return FR_OK;
    char id[80];
    int rc =
        store_hold(st, r->id, r->frozen->canonical, r->frozen->canonical_len, id, sizeof(id), err);
    if (rc != FR_OK)
        return rc;
    r->store = st;
    r->held = true;
    if (strcmp(id, r->frozen->id) != 0) { /* cannot happen: both hash the same bytes */
        runner__store_unhold(r, NULL);
        return fr_error_setk(err, FR_EINTERNAL, "internal",
                             "the store filed the config as %s, not %s", id, r->frozen->id);
    }
    if (store_lease_ms(st) <= 0)
        return FR_OK;
    fr_cond_init_mono(&r->renew_cond);
    if (pthread_create(&r->renew_thread, NULL, renew_main, r) != 0) {
        pthread_cond_destroy(&r->renew_cond);
        runner__store_unhold(r, NULL);
        return fr_error_setk(err, FR_EINTERNAL, "internal",
                             "cannot start the store lease renewal thread");
    }
    r->renewing = true;
    return FR_OK;
}

int runner__store_unhold(runner *r, struct fr_error *err)
{
    if (r->renewing) {
        pthread_mutex_lock(&r->renew_lock);
        r->renew_stop = true;
        pthread_cond_broadcast(&r->renew_cond);
        pthread_mutex_unlock(&r->renew_lock);
        pthread_join(r->renew_thread, NULL);
        pthread_cond_destroy(&r->renew_cond);
        r->renewing = false;
    }
    if (!r->held)
        return FR_OK;
    r->held = false;
    return store_unhold(r->store, r->frozen->id, r->id, err);
}

int runner__config_reput(runner *r, struct fr_error *err)
{
    if (!r->held)
        return fr_error_setk(err, FR_ENOTFOUND, "config-not-found",
                             "runner %s holds no store entry to put back", r->id);
    enum store_restored what = STORE_INTACT;
    int rc =
        store_restore(r->store, r->id, r->frozen->canonical, r->frozen->canonical_len, &what, err);
    if (rc == FR_OK)
        FR_LOG(FR_LOG_WARN, "runner %s: a worker could not resolve %s; the store %s", r->id,
               r->frozen->id,
               what == STORE_INTACT ? "has it (the worker will retry)" : "had lost it: put back");
    return rc;
}

void runner_config_serve(runner *r, char **bytes, size_t *len)
{
    if (r->held) {
        struct fr_error err;
        fr_error_init(&err);
        enum store_restored what = STORE_INTACT;
        if (store_restore(r->store, r->id, r->frozen->canonical, r->frozen->canonical_len, &what,
                          &err) != FR_OK)
            FR_LOG(FR_LOG_DEBUG, "runner %s: cannot check the store's copy of %s: %s", r->id,
                   r->frozen->id, err.message);
    }
    *len = r->frozen->canonical_len;
    *bytes = fr_xmalloc(*len + 1);
    memcpy(*bytes, r->frozen->canonical, *len);
    (*bytes)[*len] = '\0';
}
