/* worker_source: the byte source of a scan task whose file this worker does
 * not have (or has in another version): the engine's readers read through
 * it, and it fetches large blocks by HTTP Range from the coordinator
 * (proto_read_range). A fetch thread reads the next block while the reader
 * parses the current one, so the network and the parsing overlap. Per task;
 * nothing outlives it, so no stale bytes can reach a later task. Every block
 * is checked against the file's entity tag: a file that changed mid-scan
 * fails the task. A Parquet task reads at offsets instead (its range's line
 * is 0): the footer by one read of the file's tail, then each column chunk
 * it asks for, whole, never the unprojected chunks between them. */
#include "worker_int.h"
#include "../proto/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Past the task's range the reader only finishes its last record: small
 * blocks there. */
#define TAIL_BLOCK (1 << 20)
/* Reads at offsets: the tail read that brings a footer's length brings this
 * much of the end of the file with it (most footers: one read; a longer one
 * takes a second); any read fetches at least MIN_OFFSET_READ (the reader's
 * 4-byte magic). */
#define FOOTER_BLOCK (32 << 10)
#define MIN_OFFSET_READ (4 << 10)

struct block {
    char *data; /* owned, PROTO_RANGE_BLOCK bytes */
    int64_t off;
    size_t len;
};

struct worker__remote_source {
    struct df_source base;
    struct worker__remote_ctx *rc; /* borrowed: the task's */
    char *rel;                     /* owned */
    int64_t range_end;             /* the task's range ends here (a hint) */
    bool at_offsets;               /* Parquet: reads at offsets, not forward */
    struct block cur;              /* what the reader reads from (reader only) */
    int64_t read_end;              /* the end of the reader's current read (reader only) */

    pthread_mutex_t lock; /* everything below */
    pthread_cond_t cond;
    pthread_t thread;
    bool thread_started;
    bool stop;
    bool want; /* a fetch of want_off is asked for or running */
    bool done; /* it finished: spare, rc and ferr hold the outcome */
    int64_t want_off;
    int64_t want_len;           /* at_offsets: the bytes the reader still wants from want_off */
    struct block spare;         /* the fetch thread fills it */
    int frc;                    /* the fetch's status */
    struct fr_error ferr;       /* its error */
    char etag[FR_ETAG_MAX + 8]; /* expected; "" until the first answer */
    int64_t size;               /* the file's, -1 until known (base.size is the reader's copy) */
};

/* A read block on huge pages: a fresh 4 KiB page costs about 12 us at its
 * first touch here (bench/PERF-NOTES), 2 MiB ones a fraction of it; NULL on
 * OOM. free() frees it. */
static char *block_alloc(void)
{
    return fr_try_malloc_big(PROTO_RANGE_BLOCK, NULL);
}

static size_t block_want(const struct worker__remote_source *s, int64_t off, int64_t size,
                         int64_t want_len)
{
    int64_t want = off < s->range_end ? s->range_end - off : TAIL_BLOCK;
    if (s->at_offsets) /* what was asked; the tail block (the footer) whole */
        want = off >= s->range_end          ? TAIL_BLOCK
               : want_len > MIN_OFFSET_READ ? want_len
                                            : MIN_OFFSET_READ;
    if (want > PROTO_RANGE_BLOCK)
        want = PROTO_RANGE_BLOCK;
    if (size >= 0 && want > size - off)
        want = size - off;
    return want > 0 ? (size_t)want : 1;
}

/* True when a range read should give up (the fetch thread's curl progress
 * callback, lock not held): the source closes, the task's deadline passed,
 * or the worker stops (SIGTERM: its drain must not wait on a silent
 * coordinator). */
static bool fetch_abort(void *arg)
{
    struct worker__remote_source *s = arg;
    worker *w = s->rc->w;
    pthread_mutex_lock(&s->lock);
    bool stop = s->stop;
    pthread_mutex_unlock(&s->lock);
    if (!stop && s->rc->deadline_us > 0 && fr_mono_us() >= s->rc->deadline_us)
        stop = true;
    if (!stop) {
        pthread_mutex_lock(&w->hb_lock);
        stop = w->hb_stop;
        pthread_mutex_unlock(&w->hb_lock);
    }
    return stop;
}

/* One block at off into b (fetch thread, lock not held); checks the file
 * did not change against etag/size (copies, updated under the lock). */
static int fetch(struct worker__remote_source *s, int64_t off, int64_t want_len, struct block *b,
                 const char *etag, int64_t size, void **handle, struct fr_error *err,
                 struct proto_range_info *info)
{
    struct worker__remote_ctx *rc = s->rc;
    size_t got = 0;
    const struct proto_range_abort ab = {.abort = fetch_abort, .arg = s};
    int r =
        proto_read_range(rc->peer, rc->coordinator, s->rel, off, block_want(s, off, size, want_len),
                         etag[0] ? etag : NULL, b->data, &got, handle, info, &ab, err);
    if (r != FR_OK)
        return r;
    atomic_fetch_add(&rc->w->range_reads, 1);
    atomic_fetch_add(&rc->w->range_bytes, (long long)got);
    if (etag[0] && info->etag[0] && strcmp(info->etag, etag) != 0)
        return fr_error_setk(err, FR_ECONFLICT, "dataset-changed",
                             "%.200s changed on the coordinator while the task read it", s->rel);
    if (size >= 0 && info->total != size)
        return fr_error_setk(err, FR_ECONFLICT, "dataset-changed",
                             "%.200s has %lld bytes on the coordinator, not the %lld the task "
                             "was planned with",
                             s->rel, (long long)info->total, (long long)size);
    b->off = off;
    b->len = got;
    return FR_OK;
}

static void *fetch_thread(void *arg)
{
    struct worker__remote_source *s = arg;
    void *handle = NULL; /* this thread's connection to the coordinator */
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stop && (!s->want || s->done))
            pthread_cond_wait(&s->cond, &s->lock);
        if (s->stop)
            break;
        int64_t off = s->want_off, size = s->size, want_len = s->want_len;
        char etag[sizeof(s->etag)];
        memcpy(etag, s->etag, sizeof(etag));
        struct block b = s->spare;
        pthread_mutex_unlock(&s->lock);
        struct fr_error err;
        struct proto_range_info info = {.total = -1};
        fr_error_init(&err);
        int r = fetch(s, off, want_len, &b, etag, size, &handle, &err, &info);
        pthread_mutex_lock(&s->lock);
        s->spare = b;
        s->frc = r;
        s->ferr = err;
        if (r == FR_OK && !s->etag[0])
            snprintf(s->etag, sizeof(s->etag), "%s", info.etag);
        if (r == FR_OK && s->size < 0)
            s->size = info.total;
        s->done = true;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    fr_client_handle_free(handle);
    return NULL;
}

/* Asks for the block at off (lock held; no fetch pending). */
static void ask(struct worker__remote_source *s, int64_t off)
{
    s->want = true;
    s->done = false;
    s->want_off = off;
    s->want_len = s->read_end - off;
    pthread_cond_broadcast(&s->cond);
}

/* Makes cur the block at off: the prefetched one when it is that, else a
 * fetch now; then asks for the block after it. */
static int advance(struct worker__remote_source *s, int64_t off, struct fr_error *err)
{
    pthread_mutex_lock(&s->lock);
    if (s->want && s->want_off != off) { /* a prefetch of another block: let it end */
        while (!s->done)
            pthread_cond_wait(&s->cond, &s->lock);
        s->want = false;
    }
    if (!s->want)
        ask(s, off);
    while (!s->done)
        pthread_cond_wait(&s->cond, &s->lock);
    s->want = false;
    int r = s->frc;
    if (r != FR_OK) {
        *err = s->ferr;
        pthread_mutex_unlock(&s->lock);
        return r;
    }
    struct block t = s->cur;
    s->cur = s->spare;
    s->spare = t;
    s->base.size = s->size;
    int64_t next = s->cur.off + (int64_t)s->cur.len;
    /* forward reads: the next block of the range; at offsets: the rest of
     * the read in progress, if this block did not hold it all */
    int64_t upto = s->at_offsets ? s->read_end : s->range_end;
    if (s->cur.len > 0 && next < upto && (s->size < 0 || next < s->size))
        ask(s, next);
    pthread_mutex_unlock(&s->lock);
    return FR_OK;
}

/* The coordinator's definite answers stay what they are (no such file: 404;
 * a path it refuses: 400; not its runner's config: 409), and so does a file
 * that changed since the task was planned (409 dataset-changed: a retry
 * would read the same new file). Anything else (no answer, 5xx, a short
 * read) is 503 dataset-unavailable, the cause kept: the coordinator retries
 * the task (task_max_retries). */
static int unavailable(const struct worker__remote_source *s, struct fr_error *err)
{
    char why[sizeof(err->message)];
    snprintf(why, sizeof(why), "%s", err->message);
    bool definite = err->status == FR_ENOTFOUND || err->status == FR_EINVAL ||
                    (err->status == FR_ECONFLICT && strcmp(err->kind, "config-mismatch") == 0);
    if (err->status == FR_ECONFLICT && strcmp(err->kind, "dataset-changed") == 0)
        return err->status; /* its own words say what changed */
    if (definite) {
        char kind[sizeof(err->kind)];
        snprintf(kind, sizeof(kind), "%s", err->kind);
        return fr_error_setk(err, err->status, kind,
                             "%.200s is not here and the coordinator did not serve it: %.600s",
                             s->rel, why);
    }
    return fr_error_setk(err, FR_EUNAVAILABLE, "dataset-unavailable",
                         "reading %.200s from the coordinator by range: %.600s", s->rel, why);
}

/* Where the block holding at starts: at itself, except for a read at
 * offsets past the range (the footer), whose block ends at the file's end
 * so that the footer's length and the footer come in one read. */
static int64_t block_start(const struct worker__remote_source *s, int64_t at)
{
    if (!s->at_offsets || at < s->range_end || s->base.size < 0)
        return at;
    int64_t from = s->base.size - FOOTER_BLOCK;
    if (from < s->range_end)
        from = s->range_end;
    return from < at ? from : at;
}

static int remote_read(struct df_source *base, int64_t off, char *buf, size_t len, size_t *got,
                       struct fr_error *err)
{
    struct worker__remote_source *s = (struct worker__remote_source *)base;
    size_t done = 0;
    *got = 0;
    s->read_end = off + (int64_t)len;
    while (done < len) {
        int64_t at = off + (int64_t)done;
        if (base->size >= 0 && at >= base->size)
            break;
        if (at < s->cur.off || at >= s->cur.off + (int64_t)s->cur.len) {
            int rc = advance(s, block_start(s, at), err);
            if (rc != FR_OK)
                return unavailable(s, err);
            if (s->cur.len == 0 || at >= s->cur.off + (int64_t)s->cur.len)
                break;
        }
        size_t in = (size_t)(s->cur.off + (int64_t)s->cur.len - at);
        size_t n = in < len - done ? in : len - done;
        memcpy(buf + done, s->cur.data + (at - s->cur.off), n);
        done += n;
    }
    *got = done;
    return FR_OK;
}

int worker__remote_open(void *ctx, const char *rel, int64_t size, int64_t mtime_ns,
                        const struct df_byte_range *range, struct df_source **out,
                        struct fr_error *err)
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
    s->range_end = range ? range->end : INT64_MAX;
    s->at_offsets = range && range->line == 0;
    s->size = size >= 0 ? size : -1;
    const char *slash = strrchr(s->rel, '/');
    s->base = (struct df_source){
        .read = remote_read, .size = s->size, .name = slash ? slash + 1 : s->rel};
    if (size >= 0 && mtime_ns >= 0)
        fr_etag_of(size, mtime_ns, s->etag);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->cur.data = block_alloc();
    s->spare.data = block_alloc();
    if (!s->cur.data || !s->spare.data) {
        worker__remote_close(ctx, &s->base);
        return fr_error_set(err, FR_EMEMLIMIT, "no memory for the %d MiB read blocks",
                            PROTO_RANGE_BLOCK >> 20);
    }
    if (pthread_create(&s->thread, NULL, fetch_thread, s) != 0) {
        worker__remote_close(ctx, &s->base);
        return fr_error_set(err, FR_EINTERNAL, "cannot start a range read thread");
    }
    s->thread_started = true;
    *out = &s->base;
    return FR_OK;
}

void worker__remote_close(void *ctx, struct df_source *src)
{
    (void)ctx;
    struct worker__remote_source *s = (struct worker__remote_source *)src;
    if (!s)
        return;
    if (s->thread_started) { /* a running fetch gives up (fetch_abort), then the thread */
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
    }
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s->cur.data);
    free(s->spare.data);
    free(s->rel);
    free(s);
}

int worker__data_source_parse(const char *name, int *mode)
{
    static const char *const names[] = {"auto", "local", "remote"};
    static const int modes[] = {PLAN_DATA_AUTO, PLAN_DATA_LOCAL, PLAN_DATA_REMOTE};
    if (!name || !*name) {
        *mode = PLAN_DATA_AUTO;
        return FR_OK;
    }
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, names[i]) == 0) {
            *mode = modes[i];
            return FR_OK;
        }
    }
    return FR_EINVAL;
}
