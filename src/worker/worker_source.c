/* worker_source: the byte source of a scan task whose file this worker does
 * not have (or has in another version): the engine's readers read through
 * it, and it fetches large blocks by HTTP Range from the coordinator
 * (proto_read_range). Per task; nothing outlives it, so no stale bytes can
 * be served to a later task. Every block is checked against the file's
 * entity tag: a file that changed mid-scan fails the task. */
#include "worker_int.h"
#include "../proto/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct worker__remote_source {
    struct df_source base;
    struct worker__remote_ctx *rc; /* borrowed: the task's */
    char *rel;                     /* owned */
    char etag[FR_ETAG_MAX + 8];    /* expected; "" until the first answer */
    char *block;                   /* owned, PROTO_RANGE_BLOCK bytes */
    int64_t block_off;
    size_t block_len;
};

static int fetch_block(struct worker__remote_source *s, int64_t off, struct fr_error *err)
{
    struct worker__remote_ctx *rc = s->rc;
    struct proto_range_info info = {.total = -1};
    size_t want = PROTO_RANGE_BLOCK, got = 0;
    if (s->base.size >= 0 && (int64_t)want > s->base.size - off)
        want = (size_t)(s->base.size - off);
    int rcode = proto_read_range(rc->peer, rc->coordinator, s->rel, off, want,
                                 s->etag[0] ? s->etag : NULL, s->block, &got, &info, err);
    if (rcode != FR_OK)
        return rcode;
    atomic_fetch_add(&rc->w->range_reads, 1);
    atomic_fetch_add(&rc->w->range_bytes, (long long)got);
    if (s->etag[0] && info.etag[0] && strcmp(info.etag, s->etag) != 0)
        return fr_error_setk(err, FR_ECONFLICT, "dataset-changed",
                             "%.200s changed on the coordinator while the task read it", s->rel);
    if (s->base.size >= 0 && info.total != s->base.size)
        return fr_error_setk(err, FR_ECONFLICT, "dataset-changed",
                             "%.200s has %lld bytes on the coordinator, not the %lld the task "
                             "was planned with",
                             s->rel, (long long)info.total, (long long)s->base.size);
    if (!s->etag[0])
        snprintf(s->etag, sizeof(s->etag), "%s", info.etag);
    if (s->base.size < 0)
        s->base.size = info.total;
    s->block_off = off;
    s->block_len = got;
    return FR_OK;
}

static int remote_read(struct df_source *base, int64_t off, char *buf, size_t len, size_t *got,
                       struct fr_error *err)
{
    struct worker__remote_source *s = (struct worker__remote_source *)base;
    size_t done = 0;
    *got = 0;
    while (done < len) {
        int64_t at = off + (int64_t)done;
        if (base->size >= 0 && at >= base->size)
            break;
        if (at < s->block_off || at >= s->block_off + (int64_t)s->block_len) {
            int rc = fetch_block(s, at, err);
            if (rc != FR_OK)
                return rc;
            if (s->block_len == 0)
                break;
        }
        size_t in = (size_t)(s->block_off + (int64_t)s->block_len - at);
        size_t n = in < len - done ? in : len - done;
        memcpy(buf + done, s->block + (at - s->block_off), n);
        done += n;
    }
    *got = done;
    return FR_OK;
}

int worker__remote_open(void *ctx, const char *rel, int64_t size, int64_t mtime_ns,
                        struct df_source **out, struct fr_error *err)
{
    struct worker__remote_ctx *rc = ctx;
    *out = NULL;
    if (!rc->coordinator)
        return fr_error_setk(err, FR_ENOTFOUND, "dataset-not-found",
                             "no file '%.200s' in this worker's data dir, and no coordinator "
                             "to read it from",
                             rel);
    struct worker__remote_source *s = fr_xcalloc(1, sizeof(*s));
    s->rc = rc;
    s->rel = fr_xstrdup(rel);
    const char *slash = strrchr(s->rel, '/');
    s->base = (struct df_source){
        .read = remote_read, .size = size >= 0 ? size : -1, .name = slash ? slash + 1 : s->rel};
    if (size >= 0 && mtime_ns >= 0)
        fr_etag_of(size, mtime_ns, s->etag);
    s->block = fr_try_malloc(PROTO_RANGE_BLOCK);
    if (!s->block) {
        worker__remote_close(ctx, &s->base);
        return fr_error_set(err, FR_EMEMLIMIT, "no memory for a %d MiB read block",
                            PROTO_RANGE_BLOCK >> 20);
    }
    *out = &s->base;
    return FR_OK;
}

void worker__remote_close(void *ctx, struct df_source *src)
{
    (void)ctx;
    struct worker__remote_source *s = (struct worker__remote_source *)src;
    if (!s)
        return;
    free(s->block);
    free(s->rel);
    free(s);
}

int worker__data_source_parse(const char *name, int *mode)
{
    static const char *const names[] = {"auto", "local", "remote"};
    static const int modes[] = {PLAN_DATA_AUTO, PLAN_DATA_LOCAL, PLAN_DATA_REMOTE};
    for (int i = 0; i < 3; i++) {
        if (!name || !*name || strcmp(name, names[i]) == 0) {
            *mode = name && *name ? modes[i] : PLAN_DATA_AUTO;
            return FR_OK;
        }
    }
    return FR_EINVAL;
}
