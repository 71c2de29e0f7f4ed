/* store: the config store. put(bytes) -> content-addressed ID, get(ID),
 * release(ID); entries are reference counted: the store holds a config
 * exactly as long as some runner holds it (I4). Backends are a vtable:
 * embedded (in process, persisted in the state dir), http (read-only client
 * of a coordinator's GET /v1/configs/{id}) and redis (shared). */
#ifndef FRAMED_STORE_H
#define FRAMED_STORE_H

#include "../common/common.h"

typedef struct store store;

struct store_vtable {
    const char *name;
    /* Stores bytes (copied) under their ID (sha256 of bytes), count += 1. */
    int (*put)(store *s, const char *bytes, size_t len, char *id_out, size_t id_outsz,
               struct fr_error *err);
    /* *bytes is new. FR_ENOTFOUND when absent or released, FR_EINVAL when id
     * is not of the form sha256:<64 hex>. Bytes are returned as stored: the
     * caller verifies they hash to id. */
    int (*get)(store *s, const char *id, char **bytes, size_t *len, struct fr_error *err);
    /* count -= 1; the entry is removed at zero. FR_ENOTFOUND if absent. */
    int (*release)(store *s, const char *id, struct fr_error *err);
    /* Reference count of an ID (0 if absent). */
    int (*refcount)(store *s, const char *id, int64_t *count, struct fr_error *err);
    void (*free)(store *s);
};

struct store {
    const struct store_vtable *vt;
};

static inline int store_put(store *s, const char *bytes, size_t len, char *id_out, size_t id_outsz,
                            struct fr_error *err)
{
    return s->vt->put(s, bytes, len, id_out, id_outsz, err);
}
static inline int store_get(store *s, const char *id, char **bytes, size_t *len,
                            struct fr_error *err)
{
    return s->vt->get(s, id, bytes, len, err);
}
static inline int store_release(store *s, const char *id, struct fr_error *err)
{
    return s->vt->release(s, id, err);
}
static inline int store_refcount(store *s, const char *id, int64_t *count, struct fr_error *err)
{
    return s->vt->refcount(s, id, count, err);
}
static inline void store_free(store *s)
{
    if (s)
        s->vt->free(s);
}

/* new: the embedded store, persisting entries as files under dir (created
 * if needed; entries found there are loaded with their counts). dir NULL =
 * memory only. Thread-safe (one mutex, `lock`). */
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
 * framed:config:<id> holds the bytes, framed:config:<id>:refs the count; put,
 * release and the removal at zero are atomic (Lua scripts). Thread-safe (one
 * connection behind a mutex, reconnecting once on a broken link). */
int store_redis_open(const char *url, store **out, struct fr_error *err);
/* new: by URL: NULL/"embedded" -> embedded (in dir), redis://... -> Redis,
 * http(s)://... -> the read-only coordinator client. */
int store_open_url(const char *url, const char *dir, const char *secret, const char *sender,
                   store **out, struct fr_error *err);

/* True when id has the form sha256:<64 lowercase hex>. */
bool store_id_valid(const char *id);

#endif
