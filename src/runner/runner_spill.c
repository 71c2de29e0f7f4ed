/* runner_spill: stage outputs and result partitions moved to disk when the
 * memory budget runs short, so a query whose intermediate data and answer
 * do not fit in --memory-limit next to the dataframes still runs.
 *
 * One file per runner, opened without a name (O_TMPFILE, else created and
 * unlinked at once) in the spill directory: nothing is left behind when the
 * server is killed. A spilled partition is a region of it in the partition
 * wire format (engine_serde.c), at an offset aligned to 64 KiB (a multiple
 * of every page size) so that it can be mapped. A region is shared by the partition and its views
 * (a result being read, a kept dataframe) and given back when the last lets
 * go: its disk space goes at once (a punched hole), and once no region
 * lives the file is cut to nothing and the next region starts at 0 again.
 * Nothing maps a region that is not held, so a mapping never reaches past
 * the file's end. The file is shared by its regions too: a result view may
 * outlive its runner.
 *
 * Only the local backend spills (a worker's partitions are on the worker),
 * and never a preview's outputs. What is on disk is not charged to the
 * budget; a task reading it back charges it as its working memory, and a
 * result read is refused when it does not fit what the budget has left, and
 * charged (runner_set_read_back) while its reader holds the copy. */
#include "runner_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPILL_ALIGN 65536     /* a multiple of every page size (mmap's offsets) */
#define SPILL_CHUNK (4 << 20) /* bytes written per pwrite */

struct runner_spill_file {
    atomic_int refs; /* the runner's and one per live region */
    pthread_mutex_t lock;
    char *dir;
    int fd; /* -1 until the first spill */
    int64_t end, live;
    int64_t cap, live_bytes; /* the most the live regions may take on disk; what they take */
};

/* The process's spill files together (every runner's): bytes their live
 * regions take now, and bytes ever written (for /metrics). */
static atomic_llong spill_live_total, spill_written_total;

void runner_spill_stats(int64_t *live, int64_t *written)
{
    *live = atomic_load(&spill_live_total);
    *written = atomic_load(&spill_written_total);
}

static void file_unref(struct runner_spill_file *f)
{
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    atomic_fetch_sub(&spill_live_total, f->live_bytes); /* a cut that failed left some */
    if (f->fd >= 0)
        close(f->fd);
    free(f->dir);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

void runner__spill_init(runner *r)
{
    struct runner_spill_file *f = fr_xcalloc(1, sizeof(*f));
    atomic_init(&f->refs, 1);
    pthread_mutex_init(&f->lock, NULL);
    f->fd = -1;
    r->spill = f;
}

void runner__spill_cleanup(runner *r)
{
    file_unref(r->spill);
    r->spill = NULL;
}

void runner_set_spill_dir(runner *r, const char *dir, int64_t max_bytes)
{
    struct runner_spill_file *f = r->spill;
    pthread_mutex_lock(&f->lock);
    free(f->dir);
    f->dir = dir && dir[0] && max_bytes > 0 ? fr_xstrdup(dir) : NULL;
    f->cap = max_bytes;
    pthread_mutex_unlock(&f->lock);
}

bool runner__spill_enabled(runner *r)
{
    pthread_mutex_lock(&r->spill->lock);
    bool on = r->spill->dir != NULL;
    pthread_mutex_unlock(&r->spill->lock);
    return on;
}

/* Opens the file on first use (f->lock held). */
static int open_file(struct runner_spill_file *f, struct fr_error *err)
{
    if (f->fd >= 0)
        return FR_OK;
    if (!f->dir)
        return fr_error_set(err, FR_ENOSPACE, "no spill directory is set");
    int fd = open(f->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) { /* a file system without O_TMPFILE: a name, gone at once */
        char *path = fr_xasprintf("%s/spill-XXXXXX", f->dir);
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
        free(path);
    }
    if (fd < 0)
        return fr_error_set(err, FR_EIO, "cannot open a spill file in %s: %s", f->dir,
                            strerror(errno));
    f->fd = fd;
    f->end = 0;
    return FR_OK;
}

static int64_t span_of(int64_t len)
{
    return (len + SPILL_ALIGN - 1) / SPILL_ALIGN * SPILL_ALIGN;
}

/* A new region of len bytes (held once); its file descriptor in *fd. */
static struct runner_spilled *reserve(struct runner_spill_file *f, int64_t len, int *fd,
                                      struct fr_error *err)
{
    struct runner_spilled *s = NULL;
    pthread_mutex_lock(&f->lock);
    if (f->live_bytes + span_of(len) > f->cap)
        fr_error_set(err, FR_ENOSPACE, /* the output stays in memory: never a client's error */
                     "the spill file would pass --spill-limit (%lld bytes; %lld in use)",
                     (long long)f->cap, (long long)f->live_bytes);
    else if (open_file(f, err) == FR_OK) {
        s = fr_xcalloc(1, sizeof(*s));
        atomic_init(&s->refs, 1);
        s->file = f;
        s->off = f->end;
        s->len = len;
        f->end += span_of(len);
        f->live++;
        f->live_bytes += span_of(len);
        atomic_fetch_add(&spill_live_total, span_of(len));
        atomic_fetch_add(&f->refs, 1);
        *fd = f->fd;
    }
    pthread_mutex_unlock(&f->lock);
    return s;
}

static void region_unref(struct runner_spilled *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    struct runner_spill_file *f = s->file;
    pthread_mutex_lock(&f->lock);
    if (--f->live == 0) { /* nothing lives: the file starts over */
        if (ftruncate(f->fd, 0) == 0) {
            f->end = 0;
            atomic_fetch_sub(&spill_live_total, f->live_bytes);
            f->live_bytes = 0;
        }
    } else if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)s->off,
                         (off_t)span_of(s->len)) == 0) {
        f->live_bytes -= span_of(s->len); /* else its disk stays taken until the file is cut */
        atomic_fetch_sub(&spill_live_total, span_of(s->len));
    }
    pthread_mutex_unlock(&f->lock);
    free(s);
    file_unref(f);
}

struct runner_spilled *runner__spill_ref(struct runner_spilled *s)
{
    if (s)
        atomic_fetch_add(&s->refs, 1);
    return s;
}

void runner__spill_release(struct runner_part *p)
{
    region_unref(p->spilled);
    p->spilled = NULL;
}

/* Writes all of sr at offset off of fd. */
static int write_all(int fd, df_serde_reader *sr, int64_t off, int64_t len, struct fr_error *err)
{
    char *buf = fr_try_malloc(SPILL_CHUNK);
    if (!buf)
        return fr_error_set(err, FR_ENOSPACE, "no memory for the spill's write buffer");
    int rc = FR_OK;
    int64_t at = 0;
    while (rc == FR_OK && at < len) {
        size_t n = df_serde_reader_read(sr, buf, SPILL_CHUNK);
        if (n == 0)
            rc = fr_error_set(err, FR_EINTERNAL, "a partition's encoding ended early");
        for (size_t done = 0; rc == FR_OK && done < n;) {
            ssize_t w = pwrite(fd, buf + done, n - done, (off_t)(off + at));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                rc = fr_error_set(err, FR_EIO, "the spill file cannot be written: %s",
                                  w < 0 ? strerror(errno) : "no progress");
                break;
            }
            done += (size_t)w;
            at += w;
        }
    }
    free(buf);
    return rc;
}

int runner__spill(runner *r, struct runner_part *p, struct fr_error *err)
{
    if (!p->table || p->url || p->spilled)
        return FR_OK;
    df_serde_reader *sr = df_serde_reader_new(p->table);
    if (!sr)
        return fr_error_set(err, FR_ENOSPACE, "no memory to encode a partition for the spill");
    int64_t len = (int64_t)df_serde_reader_size(sr);
    int fd = -1;
    struct runner_spilled *s = reserve(r->spill, len, &fd, err);
    int rc = s ? write_all(fd, sr, s->off, len, err) : FR_ENOSPACE;
    df_serde_reader_free(sr);
    if (rc != FR_OK) {
        region_unref(s);
        return rc;
    }
    p->rows = p->table->nrows;
    p->bytes = df_table_bytes(p->table);
    p->spilled = s;
    df_table_free(p->table);
    p->table = NULL;
    atomic_fetch_add(&spill_written_total, len);
    return FR_OK;
}

int runner__spill_load(const struct runner_part *p, struct df_table **out, struct fr_error *err)
{
    *out = NULL;
    const struct runner_spilled *s = p->spilled;
    if (!s)
        return fr_error_set(err, FR_EINTERNAL, "the partition is not on disk");
    pthread_mutex_lock(&s->file->lock);
    int fd = s->file->fd; /* open while s is held */
    pthread_mutex_unlock(&s->file->lock);
    /* mapped, not read: the file's pages are the page cache's, so the
     * decode does not hold the bytes twice in this process's memory */
    void *map = mmap(NULL, (size_t)s->len, PROT_READ, MAP_PRIVATE, fd, (off_t)s->off);
    if (map == MAP_FAILED)
        return fr_error_set(err, FR_EIO, "a spilled partition cannot be mapped: %s",
                            strerror(errno));
    (void)madvise(map, (size_t)s->len, MADV_SEQUENTIAL);
    int rc = df_table_deserialize(map, (size_t)s->len, out, err);
    munmap(map, (size_t)s->len);
    if (rc == FR_OK && (*out)->nrows != p->rows) {
        rc = fr_error_set(err, FR_EINTERNAL,
                          "a spilled partition came back with %lld rows, not %lld",
                          (long long)(*out)->nrows, (long long)p->rows);
        df_table_free(*out);
        *out = NULL;
    }
    return rc;
}
