/* store_open: picks the config store backend from a URL as a user writes it
 * (embedded, redis://host:port[/db], http(s)://coordinator), and what every
 * backend shares: the lease setting and the health record (corruptions
 * found, entries restored, reachability). */
#include "store.h"

#include <stdio.h>
#include <string.h>

int store_open_url(const char *url, const char *dir, const char *secret, const char *sender,
                   store **out, struct fr_error *err)
{
    *out = NULL;
    if (!url || strcmp(url, "embedded") == 0)
        return store_embedded_open(dir, out, err);
    if (strncmp(url, "redis://", 8) == 0)
        return store_redis_open(url, out, err);
    if (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0)
        return store_http_open(url, secret, sender, out, err);
    return fr_error_set(err, FR_EINVAL,
                        "unknown store '%.200s': expected embedded, redis://host:port[/db] or "
                        "http(s)://coordinator:port",
                        url);
}

void store__base_init(store *s, const struct store_vtable *vt, int64_t lease_ms)
{
    s->vt = vt;
    s->lease_ms = lease_ms;
    pthread_mutex_init(&s->health_lock, NULL);
    memset(&s->health, 0, sizeof(s->health));
}

void store__base_cleanup(store *s)
{
    pthread_mutex_destroy(&s->health_lock);
}

bool store_holder_valid(const char *holder)
{
    size_t n = holder ? strlen(holder) : 0;
    return n >= 1 && n <= 64 &&
           strspn(holder, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

int store_restore(store *s, const char *holder, const char *bytes, size_t len,
                  enum store_restored *what, struct fr_error *err)
{
    *what = STORE_INTACT;
    if (!s->vt->restore)
        return fr_error_set(err, FR_EINVAL, "the %s store is read-only from here", s->vt->name);
    int rc = s->vt->restore(s, holder, bytes, len, what, err);
    if (rc == FR_OK && *what != STORE_INTACT) {
        char id[80];
        fr_sha256_id(bytes, len, id, sizeof(id));
        if (*what == STORE_REPAIRED)
            store_note_corruption(s, id, "found by a restore, which put the right bytes back");
        else
            store_note_restored(s, id);
    }
    return rc;
}

int store_set_lease_ms(store *s, int64_t ms, struct fr_error *err)
{
    if (ms < STORE_LEASE_MIN_MS || ms > STORE_LEASE_MAX_MS)
        return fr_error_setk(err, FR_EINVAL, "invalid-parameter",
                             "--store-lease-ms %lld (FRAMED_STORE_LEASE_MS) is out of bounds: "
                             "%d to %d ms",
                             (long long)ms, STORE_LEASE_MIN_MS, STORE_LEASE_MAX_MS);
    if (s->lease_ms > 0) /* stores whose holds do not expire keep 0 */
        s->lease_ms = ms;
    return FR_OK;
}

int64_t store_lease_ms(const store *s)
{
    return s->lease_ms;
}

void store_note_corruption(store *s, const char *id, const char *how)
{
    FR_LOG(FR_LOG_ERROR,
           "store: CORRUPTION: the %s store holds bytes under %s that do not hash "
           "to it (%s)",
           s->vt->name, id, how);
    pthread_mutex_lock(&s->health_lock);
    s->health.corruptions++;
    snprintf(s->health.last_corruption, sizeof(s->health.last_corruption), "%.80s (%.100s)", id,
             how);
    pthread_mutex_unlock(&s->health_lock);
}

void store_note_restored(store *s, const char *id)
{
    FR_LOG(FR_LOG_WARN, "store: the %s store had lost %s; its holder put it back", s->vt->name, id);
    pthread_mutex_lock(&s->health_lock);
    s->health.restores++;
    pthread_mutex_unlock(&s->health_lock);
}

void store__note_reachable(store *s, bool ok, const char *msg)
{
    pthread_mutex_lock(&s->health_lock);
    bool was = s->health.unavailable;
    s->health.unavailable = !ok;
    if (!ok)
        snprintf(s->health.last_error, sizeof(s->health.last_error), "%s", msg ? msg : "");
    pthread_mutex_unlock(&s->health_lock);
    if (was && ok)
        FR_LOG(FR_LOG_INFO, "store: the %s store is reachable again", s->vt->name);
    else if (!was && !ok)
        FR_LOG(FR_LOG_WARN, "store: the %s store is unavailable: %s", s->vt->name, msg ? msg : "");
}

void store_health_get(store *s, struct store_health *out)
{
    pthread_mutex_lock(&s->health_lock);
    *out = s->health;
    pthread_mutex_unlock(&s->health_lock);
}
