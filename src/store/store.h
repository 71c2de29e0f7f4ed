/* store: the config store. hold(holder, bytes) -> content-addressed ID,
 * get(ID), unhold(ID, holder): an entry lives as long as a holder (a runner)
 * holds it (I4), and dead holders' holds are reclaimed. Backends are a
 * vtable: embedded (state dir), http (read-only, a coordinator's), redis. */
#ifndef FRAMED_STORE_H
#define FRAMED_STORE_H

#include "../common/common.h"

#include <pthread.h>

typedef struct store store;

/* What a restore found before making the entry whole again. */
enum store_restored {
    STORE_INTACT,   /* the bytes were there, unchanged */
    STORE_RESTORED, /* the entry was missing (lost, expired): put back */
    STORE_REPAIRED, /* other bytes were stored under the ID (corrupt): overwritten */
};

struct store_vtable {
    const char *name;
    /* holder's hold on the bytes' ID (sha256 of bytes): the bytes are stored
     * (copied) when absent. A holder holds an ID at most once: a second put
     * by the same holder adds nothing (with leases, it renews the lease).
     * FR_ECONFLICT when other bytes are stored under the ID. */
    int (*put)(store *s, const char *holder, const char *bytes, size_t len, char *id_out,
               size_t id_outsz, struct fr_error *err);
    /* *bytes is new. FR_ENOTFOUND when absent or released, FR_EINVAL when id
     * is not of the form sha256:<64 hex>. Bytes are returned as stored: the
     * caller verifies they hash to id. FR_EIO: the store is unreachable. */
    int (*get)(store *s, const char *id, char **bytes, size_t *len, struct fr_error *err);
    /* Drops holder's hold; the entry is removed with its last hold.
     * FR_ENOTFOUND if holder did not hold id. */
    int (*release)(store *s, const char *id, const char *holder, struct fr_error *err);
    /* Live holds on an ID (0 if absent). */
    int (*refcount)(store *s, const char *id, int64_t *count, struct fr_error *err);
    /* Makes the store hold exactly bytes under their ID with holder's hold
     * (renewing its lease): missing or different bytes are written back;
     * *what tells which. NULL for a read-only backend. */
    int (*restore)(store *s, const char *holder, const char *bytes, size_t len,
                   enum store_restored *what, struct fr_error *err);
    void (*free)(store *s);
};

/* What the store went through, for logs, /readyz and /metrics. */
struct store_health {
    int64_t corruptions;       /* entries found holding bytes that do not hash to their ID */
    int64_t restores;          /* entries put back after the store lost them */
    char last_corruption[200]; /* "sha256:... (how it was found)" or "" */
    bool unavailable;          /* the last call could not reach the store */
    char last_error[200];      /* why, when unavailable */
};

struct store {
    const struct store_vtable *vt;
    int64_t lease_ms;            /* a hold's lease (redis); 0: holds do not expire */
    pthread_mutex_t health_lock; /* guards health */
    struct store_health health;
};

/* Shared by the backends (store_open.c): base init and cleanup. */
void store__base_init(store *s, const struct store_vtable *vt, int64_t lease_ms);
void store__base_cleanup(store *s);
/* Records whether the last call reached the store (msg: why not). */
void store__note_reachable(store *s, bool ok, const char *msg);

static inline int store_hold(store *s, const char *holder, const char *bytes, size_t len,
                             char *id_out, size_t id_outsz, struct fr_error *err)
{
    return s->vt->put(s, holder, bytes, len, id_out, id_outsz, err);
}
static inline int store_get(store *s, const char *id, char **bytes, size_t *len,
                            struct fr_error *err)
{
    return s->vt->get(s, id, bytes, len, err);
}
static inline int store_unhold(store *s, const char *id, const char *holder, struct fr_error *err)
{
    return s->vt->release(s, id, holder, err);
}
static inline int store_refcount(store *s, const char *id, int64_t *count, struct fr_error *err)
{
    return s->vt->refcount(s, id, count, err);
}
/* FR_EINVAL for a read-only store. */
int store_restore(store *s, const char *holder, const char *bytes, size_t len,
                  enum store_restored *what, struct fr_error *err);
static inline void store_free(store *s)
{
    if (s)
        s->vt->free(s);
}

/* The holder of store_put/store_release: one anonymous hold, for tools and
 * tests that hold a config outside any runner. */
#define STORE_ANON_HOLDER "anonymous"
static inline int store_put(store *s, const char *bytes, size_t len, char *id_out, size_t id_outsz,
                            struct fr_error *err)
{
    return store_hold(s, STORE_ANON_HOLDER, bytes, len, id_out, id_outsz, err);
}
static inline int store_release(store *s, const char *id, struct fr_error *err)
{
    return store_unhold(s, id, STORE_ANON_HOLDER, err);
}

/* A hold's lease (ms, redis only; bounds STORE_LEASE_MIN_MS..MAX). Live
 * holders renew theirs every lease/3. 0 for stores whose holds do not expire. */
#define STORE_LEASE_DEFAULT_MS 30000
#define STORE_LEASE_MIN_MS 300
#define STORE_LEASE_MAX_MS 3600000
int store_set_lease_ms(store *s, int64_t ms, struct fr_error *err);
int64_t store_lease_ms(const store *s);
/* Counts a corruption (bytes under id that do not hash to it) and logs it at
 * error; how: where it was found. */
void store_note_corruption(store *s, const char *id, const char *how);
void store_note_restored(store *s, const char *id);
/* A copy of the health record. */
void store_health_get(store *s, struct store_health *out);

/* new: the embedded store, persisting entries as files under dir (created
 * if needed). Holds found there at open belong to dead incarnations (the
 * state lock lets one server use a state dir): they are dropped and the
 * entries removed, logged. dir NULL = memory only. Thread-safe (one mutex). */
int store_embedded_open(const char *dir, store **out, struct fr_error *err);
/* Test hook: overwrites the stored bytes of id (in memory and, when
 * persisted, on disk) without changing the ID, so integrity checks can be
 * proven. FR_ENOTFOUND if absent, FR_EINVAL if s is not embedded. */
int store_embedded_tamper(store *s, const char *id, const char *bytes, size_t len);

/* new: a read-only client of a coordinator's store (GET {base}/v1/configs/{id});
 * put and release fail with FR_EINVAL. Requests are signed when secret is set. */
int store_http_open(const char *base_url, const char *secret, const char *sender, store **out,
                    struct fr_error *err);
/* new: the Redis backend (hiredis), url redis://host:port[/db]. Keys:
 * framed:config:<id> holds the bytes, framed:config:<id>:holds a ZSET of
 * holders scored by their lease's expiry (Redis server TIME, ms); both keys
 * carry a PEXPIRE at the latest expiry, so Redis removes them by itself once
 * the last lease lapses. Scripts are atomic (Lua). Thread-safe (one
 * connection behind a mutex, reconnecting on a broken link). */
int store_redis_open(const char *url, store **out, struct fr_error *err);
/* new: by URL: NULL/"embedded" -> embedded (in dir), redis://... -> Redis,
 * http(s)://... -> the read-only coordinator client. */
int store_open_url(const char *url, const char *dir, const char *secret, const char *sender,
                   store **out, struct fr_error *err);

/* True when id has the form sha256:<64 lowercase hex>. */
bool store_id_valid(const char *id);
/* True when a holder name is 1-64 of [A-Za-z0-9._-] (it is a file line and
 * a Redis ZSET member). */
bool store_holder_valid(const char *holder);

#endif
