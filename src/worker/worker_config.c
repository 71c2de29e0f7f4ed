/* worker_config: the worker's cache of frozen configs by ID. A miss fetches
 * the bytes from the store once, however many tasks miss the same ID at the
 * same time (single-flight: one in-flight entry, the others wait on
 * cache_cond), and verifies that they hash to the ID before caching them. */
#include "worker_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int set_kind(struct fr_error *err, int status, const char *kind)
{
    if (err)
        snprintf(err->kind, sizeof(err->kind), "%s", kind);
    return status;
}

/* The linked entry of id, or NULL. Caller holds cache_lock. */
static struct worker__centry *centry_find(worker *w, const char *id)
{
    for (struct worker__centry *e = w->centries; e; e = e->next) {
        if (strcmp(e->id, id) == 0)
            return e;
    }
    return NULL;
}

/* Takes e out of the list. Caller holds cache_lock. */
static void centry_unlink(worker *w, struct worker__centry *e)
{
    for (struct worker__centry **p = &w->centries; *p; p = &(*p)->next) {
        if (*p == e) {
            *p = e->next;
            break;
        }
    }
    e->next = NULL;
    e->linked = false;
}

static void centry_free(struct worker__centry *e)
{
    cfg_frozen_unref(e->frozen);
    free(e);
}

/* Fetches and verifies id from the store, without any lock held. */
static int fetch_verified(worker *w, const char *id, struct cfg_frozen **out, struct fr_error *err)
{
    char *bytes = NULL;
    size_t len = 0;
    int rc = store_get(w->store, id, &bytes, &len, err);
    if (rc == FR_ENOTFOUND) {
        fr_error_set(err, FR_ENOTFOUND, "the config store does not hold %s", id);
        rc = set_kind(err, FR_ENOTFOUND, "config-not-found");
    } else if (rc != FR_OK) {
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        fr_error_set(err, FR_EUNAVAILABLE, "cannot reach the config store for %s: %s", id, why);
        rc = set_kind(err, FR_EUNAVAILABLE, "store-unavailable");
    } else {
        rc = cfg_frozen_from_bytes(bytes, len, id, out, err);
        if (rc != FR_OK)
            rc = set_kind(err, FR_EDATA, "config-integrity");
    }
    free(bytes);
    return rc;
}

/* The loader's half: fetch, then publish the outcome to the waiters. */
static int load(worker *w, struct worker__centry *e, struct cfg_frozen **out, struct fr_error *err)
{
    struct cfg_frozen *f = NULL;
    int rc = fetch_verified(w, e->id, &f, err);
    pthread_mutex_lock(&w->cache_lock);
    e->loading = false;
    e->rc = rc;
    if (rc == FR_OK) {
        e->frozen = f;
        *out = cfg_frozen_ref(f);
    } else {
        e->err = *err;
    }
    bool keep = rc == FR_OK && e->linked; /* a drop during the load wins */
    if (!keep && e->linked)
        centry_unlink(w, e);
    pthread_cond_broadcast(&w->cache_cond);
    if (!keep && e->waiters == 0)
        centry_free(e);
    pthread_mutex_unlock(&w->cache_lock);
    return rc;
}

/* The waiter's half: waits for e's load and takes its outcome. Caller holds
 * cache_lock. */
static int wait_load(worker *w, struct worker__centry *e, struct cfg_frozen **out,
                     struct fr_error *err)
{
    e->waiters++;
    while (e->loading)
        pthread_cond_wait(&w->cache_cond, &w->cache_lock);
    e->waiters--;
    int rc = e->rc;
    if (rc == FR_OK) {
        *out = cfg_frozen_ref(e->frozen);
        if (e->linked)
            e->stats.cache_hits++;
    } else {
        *err = e->err;
    }
    if (!e->linked && e->waiters == 0)
        centry_free(e);
    return rc;
}

int worker_config_get(worker *w, const char *id, struct cfg_frozen **out, struct fr_error *err)
{
    struct fr_error local;
    if (!err) {
        fr_error_init(&local);
        err = &local;
    }
    *out = NULL;
    if (!store_id_valid(id)) {
        fr_error_set(err, FR_EINVAL, "Framed-Config-Id must be sha256:<64 lowercase hex>");
        return set_kind(err, FR_EINVAL, "missing-config-id");
    }
    pthread_mutex_lock(&w->cache_lock);
    struct worker__centry *e = centry_find(w, id);
    if (e && !e->loading) {
        e->stats.cache_hits++;
        *out = cfg_frozen_ref(e->frozen);
        pthread_mutex_unlock(&w->cache_lock);
        return FR_OK;
    }
    if (e) {
        int rc = wait_load(w, e, out, err);
        pthread_mutex_unlock(&w->cache_lock);
        return rc;
    }
    e = fr_xcalloc(1, sizeof(*e));
    snprintf(e->id, sizeof(e->id), "%s", id);
    e->loading = true;
    e->linked = true;
    e->stats.fetches = 1;
    fr_error_init(&e->err);
    e->next = w->centries;
    w->centries = e;
    pthread_mutex_unlock(&w->cache_lock);
    return load(w, e, out, err);
}

void worker_config_drop(worker *w, const char *id, bool *was_cached, int64_t *dropped_partitions)
{
    pthread_mutex_lock(&w->cache_lock);
    struct worker__centry *e = centry_find(w, id);
    bool cached = e && !e->loading;
    if (e) {
        centry_unlink(w, e);
        if (!e->loading && e->waiters == 0)
            centry_free(e);
    }
    pthread_mutex_unlock(&w->cache_lock);
    int64_t n = worker__partitions_drop_config(w, id);
    if (was_cached)
        *was_cached = cached;
    if (dropped_partitions)
        *dropped_partitions = n;
}

int worker_config_stats(worker *w, const char *id, struct worker_config_stats *out)
{
    int rc = FR_ENOTFOUND;
    pthread_mutex_lock(&w->cache_lock);
    struct worker__centry *e = centry_find(w, id);
    if (e && !e->loading) {
        *out = e->stats;
        rc = FR_OK;
    }
    pthread_mutex_unlock(&w->cache_lock);
    return rc;
}

void worker__config_count_task(worker *w, const char *id)
{
    pthread_mutex_lock(&w->cache_lock);
    struct worker__centry *e = centry_find(w, id);
    if (e && !e->loading)
        e->stats.tasks++;
    pthread_mutex_unlock(&w->cache_lock);
}

json_t *worker_config_ids(worker *w)
{
    json_t *ids = json_array();
    pthread_mutex_lock(&w->cache_lock);
    for (struct worker__centry *e = w->centries; e; e = e->next) {
        if (!e->loading)
            json_array_append_new(ids, json_string(e->id));
    }
    pthread_mutex_unlock(&w->cache_lock);
    return ids;
}
