/* worker_config: the worker's cache of frozen configs by ID. A miss fetches
 * the bytes from the store once, however many tasks miss the same ID at the
 * same time (single-flight: one in-flight entry, the others wait on
 * cache_cond), and verifies that they hash to the ID before caching them.
 * An ID the store does not hold is remembered for a short time (no fetch
 * meanwhile); counters are kept for cached configs and a small window of
 * recent others, so neither grows with the IDs asked for. */
#include "worker_int.h"
#include "../proto/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Keeps err's message and gives it status and kind (err may be NULL). */
static int with_kind(struct fr_error *err, int status, const char *kind)
{
    if (!err)
        return status;
    char why[sizeof(err->message)];
    snprintf(why, sizeof(why), "%s", err->message);
    return fr_error_setk(err, status, kind, "%s", why);
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

bool worker__config_held(worker *w, const char *id)
{
    const struct worker__centry *e = centry_find(w, id);
    return e && !e->loading && e->frozen;
}

/* Forgets the oldest counters of configs not cached beyond the window of
 * WORKER__RECENT_MAX. Caller holds cache_lock. */
static void stats_trim(worker *w)
{
    int others = 0;
    for (struct worker__cstats **p = &w->cstats; *p;) {
        struct worker__cstats *s = *p;
        if (centry_find(w, s->id) == NULL && ++others > WORKER__RECENT_MAX) {
            *p = s->next;
            free(s);
            continue;
        }
        p = &s->next;
    }
}

/* The counters of id, made on first use (and moved to the front: the window
 * keeps the most recent). Caller holds cache_lock. */
static struct worker_config_stats *stats_of(worker *w, const char *id)
{
    for (struct worker__cstats **p = &w->cstats; *p; p = &(*p)->next) {
        struct worker__cstats *s = *p;
        if (strcmp(s->id, id) == 0) {
            *p = s->next;
            s->next = w->cstats;
            w->cstats = s;
            return &s->stats;
        }
    }
    struct worker__cstats *s = fr_xcalloc(1, sizeof(*s));
    snprintf(s->id, sizeof(s->id), "%s", id);
    s->next = w->cstats;
    w->cstats = s;
    stats_trim(w);
    return &s->stats;
}

/* The first slot of id's bucket in the negative table (FNV-1a). */
static struct worker__negative *negative_bucket(worker *w, const char *id)
{
    uint32_t h = 2166136261u;
    for (const char *c = id; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    size_t buckets = WORKER__NEGATIVE_MAX / WORKER__NEGATIVE_WAYS;
    return &w->negative[(h % buckets) * WORKER__NEGATIVE_WAYS];
}

/* The store said it does not hold id: remembered for a while, in the
 * bucket's oldest slot. Caller holds cache_lock. */
static void negative_add(worker *w, const char *id)
{
    struct worker__negative *b = negative_bucket(w, id), *slot = b;
    for (int i = 1; i < WORKER__NEGATIVE_WAYS; i++)
        if (b[i].until_ms < slot->until_ms)
            slot = &b[i];
    size_t n = strnlen(id, sizeof(slot->id) - 1); /* a valid ID fits: sha256: + 64 hex */
    memcpy(slot->id, id, n);
    slot->id[n] = '\0';
    slot->until_ms = fr_mono_ms() + PROTO_CONFIG_NEGATIVE_TTL_MS;
}

/* True when id is remembered as absent. Caller holds cache_lock. */
static bool negative_has(worker *w, const char *id)
{
    int64_t now = fr_mono_ms();
    const struct worker__negative *b = negative_bucket(w, id);
    for (int i = 0; i < WORKER__NEGATIVE_WAYS; i++)
        if (b[i].until_ms > now && strcmp(b[i].id, id) == 0)
            return true;
    return false;
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
        rc = fr_error_setk(err, FR_ENOTFOUND, "config-not-found",
                           "the config store does not hold %s", id);
    } else if (rc != FR_OK) {
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        rc = fr_error_setk(err, FR_EUNAVAILABLE, "store-unavailable",
                           "cannot reach the config store for %s: %s", id, why);
    } else {
        rc = cfg_frozen_from_bytes(bytes, len, id, out, err);
        if (rc != FR_OK)
            rc = with_kind(err, FR_EDATA, "config-integrity");
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
        if (rc == FR_ENOTFOUND)
            negative_add(w, e->id);
    }
    bool keep = rc == FR_OK && e->linked; /* a drop during the load wins */
    if (!keep && e->linked) {
        centry_unlink(w, e);
        stats_trim(w); /* its counters join the window of recent ones */
    }
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
        stats_of(w, e->id)->cache_hits++;
    } else {
        *err = e->err;
    }
    if (!e->linked && e->waiters == 0)
        centry_free(e);
    return rc;
}

/* worker_config_get without the clock; *kind says how it was served. */
static int resolve(worker *w, const char *id, struct cfg_frozen **out, struct fr_error *err,
                   int *kind)
{
    *kind = WORKER__RESOLVE_FETCH;
    *out = NULL;
    if (!fr_config_id_valid(id)) {
        return fr_error_setk(err, FR_EINVAL, "missing-config-id",
                             FR_CONFIG_ID_HEADER " must be sha256:<64 lowercase hex>");
    }
    pthread_mutex_lock(&w->cache_lock);
    struct worker__centry *e = centry_find(w, id);
    if (e && !e->loading) {
        *kind = WORKER__RESOLVE_HIT;
        stats_of(w, id)->cache_hits++;
        *out = cfg_frozen_ref(e->frozen);
        pthread_mutex_unlock(&w->cache_lock);
        return FR_OK;
    }
    if (e) {
        int rc = wait_load(w, e, out, err);
        pthread_mutex_unlock(&w->cache_lock);
        return rc;
    }
    if (negative_has(w, id)) {
        pthread_mutex_unlock(&w->cache_lock);
        return fr_error_setk(err, FR_ENOTFOUND, "config-not-found",
                             "the config store does not hold %s (asked less than %d ms ago)", id,
                             PROTO_CONFIG_NEGATIVE_TTL_MS);
    }
    e = fr_xcalloc(1, sizeof(*e));
    snprintf(e->id, sizeof(e->id), "%s", id);
    e->loading = true;
    e->linked = true;
    stats_of(w, id)->fetches++;
    fr_error_init(&e->err);
    e->next = w->centries;
    w->centries = e;
    pthread_mutex_unlock(&w->cache_lock);
    return load(w, e, out, err);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int worker_config_get(worker *w, const char *id, struct cfg_frozen **out, struct fr_error *err)
{
    struct fr_error local;
    if (!err) {
        fr_error_init(&local);
        err = &local;
    }
    int64_t t0 = now_ns();
    int kind;
    int rc = resolve(w, id, out, err, &kind);
    if (rc == FR_OK)
        worker__resolve_record(w, kind, now_ns() - t0);
    return rc;
}

int worker_config_inline(worker *w, const char *id, const char *bytes, size_t len,
                         struct cfg_frozen **out, struct fr_error *err)
{
    *out = NULL;
    int64_t t0 = now_ns();
    if (!fr_config_id_valid(id)) {
        return fr_error_setk(err, FR_EINVAL, "missing-config-id",
                             FR_CONFIG_ID_HEADER " must be sha256:<64 lowercase hex>");
    }
    int rc = cfg_frozen_from_bytes(bytes, len, id, out, err);
    if (rc != FR_OK)
        return with_kind(err, FR_EDATA, "config-integrity");
    worker__resolve_record(w, WORKER__RESOLVE_INLINE, now_ns() - t0);
    return FR_OK;
}

/* ---- resolution latency ---- */

/* Upper bounds of the histogram's buckets, seconds; the last is +Inf. */
static const double resolve_le[WORKER__RESOLVE_BUCKETS - 1] = {
    1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3,
    5e-3, 1e-2, 2e-2, 5e-2, 0.1,  0.2,  0.5,  1,    2,    5};
static const char *const resolve_names[WORKER__RESOLVE_KINDS] = {"hit", "fetch", "inline"};

void worker__resolve_record(worker *w, int kind, int64_t ns)
{
    struct worker__resolve_hist *h = &w->resolve[kind];
    if (ns < 0)
        ns = 0;
    int b = 0;
    while (b < WORKER__RESOLVE_BUCKETS - 1 && (double)ns > resolve_le[b] * 1e9)
        b++;
    atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
    unsigned slot = atomic_fetch_add_explicit(&h->next, 1, memory_order_relaxed);
    atomic_store_explicit(&h->ring_ns[slot % WORKER__RESOLVE_RING],
                          ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns, memory_order_relaxed);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[n], in microseconds. */
static json_t *pct_us(const uint32_t *v, size_t n, double p)
{
    if (n == 0)
        return json_null();
    size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return json_real((double)v[rank - 1] / 1000.0);
}

json_t *worker__resolve_info(worker *w)
{
    json_t *j = json_object();
    static const char *const counts[WORKER__RESOLVE_KINDS] = {"hits", "fetches", "inlines"};
    uint32_t *v = fr_xcalloc(WORKER__RESOLVE_RING, sizeof(*v));
    for (int k = 0; k < WORKER__RESOLVE_KINDS; k++) {
        struct worker__resolve_hist *h = &w->resolve[k];
        long long count = atomic_load(&h->count);
        size_t n = count < WORKER__RESOLVE_RING ? (size_t)count : WORKER__RESOLVE_RING;
        for (size_t i = 0; i < n; i++)
            v[i] = atomic_load_explicit(&h->ring_ns[i], memory_order_relaxed);
        qsort(v, n, sizeof(*v), cmp_u32);
        char key[32];
        snprintf(key, sizeof(key), "%s_p50", resolve_names[k]);
        json_object_set_new(j, key, pct_us(v, n, 50));
        snprintf(key, sizeof(key), "%s_p99", resolve_names[k]);
        json_object_set_new(j, key, pct_us(v, n, 99));
        json_object_set_new(j, counts[k], json_integer(count));
    }
    free(v);
    json_object_set_new(j, "window", json_integer(WORKER__RESOLVE_RING));
    return j;
}

void worker__resolve_metrics(worker *w, struct fr_buf *out)
{
    const char *name = "framed_worker_config_resolve_seconds";
    fr_buf_printf(out,
                  "# HELP %s Time to resolve a task's config: hit = a ready cache entry, "
                  "fetch = a store fetch (or a wait for another task's), inline = verified "
                  "from the task body.\n# TYPE %s histogram\n",
                  name, name);
    for (int k = 0; k < WORKER__RESOLVE_KINDS; k++) {
        struct worker__resolve_hist *h = &w->resolve[k];
        long long cum = 0;
        for (int b = 0; b < WORKER__RESOLVE_BUCKETS; b++) {
            cum += atomic_load_explicit(&h->buckets[b], memory_order_relaxed);
            if (b < WORKER__RESOLVE_BUCKETS - 1)
                fr_buf_printf(out, "%s_bucket{result=\"%s\",le=\"%g\"} %lld\n", name,
                              resolve_names[k], resolve_le[b], cum);
            else
                fr_buf_printf(out, "%s_bucket{result=\"%s\",le=\"+Inf\"} %lld\n", name,
                              resolve_names[k], cum);
        }
        fr_buf_printf(out, "%s_sum{result=\"%s\"} %.9f\n", name, resolve_names[k],
                      (double)atomic_load(&h->sum_ns) / 1e9);
        fr_buf_printf(out, "%s_count{result=\"%s\"} %lld\n", name, resolve_names[k],
                      (long long)atomic_load(&h->count));
    }
}

void worker_config_drop(worker *w, const char *id, bool *was_cached, int64_t *dropped_partitions)
{
    worker__config_drop_before(w, id, INT64_MAX, was_cached, dropped_partitions);
}

void worker__config_drop_before(worker *w, const char *id, int64_t max_seq, bool *was_cached,
                                int64_t *dropped_partitions)
{
    pthread_mutex_lock(&w->cache_lock);
    struct worker__centry *e = centry_find(w, id);
    bool cached = e && !e->loading;
    if (e) {
        centry_unlink(w, e);
        if (!e->loading && e->waiters == 0)
            centry_free(e);
    }
    stats_trim(w); /* its counters join the window of recent ones */
    pthread_mutex_unlock(&w->cache_lock);
    int64_t n = worker__partitions_drop_config(w, id, max_seq);
    if (was_cached)
        *was_cached = cached;
    if (dropped_partitions)
        *dropped_partitions = n;
}

int worker_config_stats(worker *w, const char *id, struct worker_config_stats *out)
{
    int rc = FR_ENOTFOUND;
    pthread_mutex_lock(&w->cache_lock);
    for (struct worker__cstats *s = w->cstats; s; s = s->next) {
        if (strcmp(s->id, id) == 0) {
            *out = s->stats;
            rc = FR_OK;
        }
    }
    pthread_mutex_unlock(&w->cache_lock);
    return rc;
}

void worker__config_count_task(worker *w, const char *id)
{
    pthread_mutex_lock(&w->cache_lock);
    stats_of(w, id)->tasks++;
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
