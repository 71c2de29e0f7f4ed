/* common_mem: allocation that aborts on OOM (bookkeeping) next to try
 * variants that return NULL (anything sized by user data). */
#include "common.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define KEEP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEEP_ASAN 1
#endif
#endif
#ifdef KEEP_ASAN /* a kept block is poisoned: a use after fr_free_big is still caught */
#include <sanitizer/asan_interface.h>
#define KEEP_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define KEEP_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define KEEP_POISON(p, n) ((void)(p), (void)(n))
#define KEEP_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static void oom(size_t n)
{
    fprintf(stderr, "framed: out of memory allocating %zu bytes\n", n);
    abort();
}

void *fr_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *fr_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        oom(count * size);
    return p;
}

void *fr_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *fr_xstrdup(const char *s)
{
    return fr_xstrndup(s, strlen(s));
}

char *fr_xstrndup(const char *s, size_t n)
{
    char *p = fr_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *fr_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = fr_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void *fr_try_malloc(size_t n)
{
    return malloc(n ? n : 1);
}

void *fr_try_realloc(void *p, size_t n)
{
    return realloc(p, n ? n : 1);
}

/* Freed big blocks kept for the next big allocation. glibc hands a block
 * past its mmap threshold (32 MiB, main.c) back to the system when it is
 * freed, and the next query's block of the same size is fresh pages again,
 * each zeroed by the kernel on its first touch: on this VM that was most of
 * the system time of a query like q10 (1e7 groups), run after run. Blocks
 * of at least KEEP_MIN that fr_try_malloc_big made (2 MiB aligned) and that
 * are freed through fr_free_big are kept instead, up to KEEP_SLOTS of them
 * and keep_limit bytes in all (an eighth of the machine's memory, at most
 * 4 GiB; a quarter of --memory-limit under one), and handed to a later
 * fr_try_malloc_big that they fit with little to spare (a reused block's
 * pages are all resident, and only what was asked is charged). A block not
 * reused within FR_BIG_KEEP_MS goes back (fr_big_expire, from the server's
 * and the worker's periodic threads), and all of them at the idle points
 * that trim the heap and at a runner reset (fr_big_release).
 * KEEP_MIN is glibc's mmap threshold: smaller blocks go back to its heap,
 * which hands them to any later allocation (kept here, they served only big
 * ones and the heap grew fresh pages for the rest: q10 took 25% longer). */
#define KEEP_MIN ((size_t)32 << 20)
#define KEEP_SLOTS 256
static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept_block {
    void *p;
    size_t size;
    int64_t since_ms; /* when it was kept (monotonic) */
} kept[KEEP_SLOTS];
static int nkept;
static size_t kept_bytes, keep_limit = SIZE_MAX; /* SIZE_MAX: not set yet */

/* The default bound: an eighth of the machine's memory, at most 4 GiB. */
static size_t default_keep_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t most = (size_t)4 << 30;
    if (pages <= 0 || page <= 0)
        return most;
    size_t eighth = (size_t)pages / 8 * (size_t)page;
    return eighth < most ? eighth : most;
}

/* The smallest kept block of at least n bytes and at most n + n/4 + 2 MiB
 * (the 2 MiB rounding of fr_try_malloc_big), or NULL. */
static void *take_kept(size_t n, size_t *size)
{
    void *p = NULL;
    pthread_mutex_lock(&keep_lock);
    int best = -1;
    for (int i = 0; i < nkept; i++)
        if (kept[i].size >= n && kept[i].size - n <= n / 4 + ((size_t)2 << 20) &&
            (best < 0 || kept[i].size < kept[best].size))
            best = i;
    if (best >= 0) {
        p = kept[best].p;
        *size = kept[best].size;
        kept_bytes -= kept[best].size;
        kept[best] = kept[--nkept];
    }
    pthread_mutex_unlock(&keep_lock);
    if (p)
        KEEP_UNPOISON(p, *size);
    return p;
}

void fr_free_big(void *p)
{
    if (!p)
        return;
    /* only fr_try_malloc_big's own (2 MiB aligned): a block reused has the
     * alignment and huge-page advice a fresh one would */
    size_t size = (uintptr_t)p % ((size_t)2 << 20) == 0 ? malloc_usable_size(p) : 0;
    if (size >= KEEP_MIN) {
        int64_t now = fr_mono_ms();
        pthread_mutex_lock(&keep_lock);
        for (int i = 0; i < nkept; i++) {
            if (kept[i].p == p) { /* as glibc would: never hand one block out twice */
                fprintf(stderr, "framed: double free of a big block\n");
                abort();
            }
        }
        if (keep_limit == SIZE_MAX)
            keep_limit = default_keep_limit();
        bool keep =
            nkept < KEEP_SLOTS && kept_bytes <= keep_limit && size <= keep_limit - kept_bytes;
        if (keep) {
            KEEP_POISON(p, size);
            kept[nkept++] = (struct kept_block){p, size, now};
            kept_bytes += size;
        }
        pthread_mutex_unlock(&keep_lock);
        if (keep)
            return;
    }
    free(p);
}

/* Frees the kept blocks kept at or before until_ms (INT64_MAX: all). */
static void release_kept(int64_t until_ms)
{
    struct kept_block out[KEEP_SLOTS];
    int n = 0;
    pthread_mutex_lock(&keep_lock);
    for (int i = 0; i < nkept;) {
        if (kept[i].since_ms <= until_ms) {
            out[n++] = kept[i];
            kept_bytes -= kept[i].size;
            kept[i] = kept[--nkept];
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&keep_lock);
    for (int i = 0; i < n; i++) {
        KEEP_UNPOISON(out[i].p, out[i].size);
        free(out[i].p);
    }
}

void fr_big_release(void)
{
    release_kept(INT64_MAX);
}

void fr_big_expire(void)
{
    release_kept(fr_mono_ms() - FR_BIG_KEEP_MS);
}

void fr_big_keep_limit(size_t bytes)
{
    size_t most = default_keep_limit();
    pthread_mutex_lock(&keep_lock);
    keep_limit = bytes < most ? bytes : most;
    pthread_mutex_unlock(&keep_lock);
    fr_big_release(); /* what is kept now may be over it */
}

size_t fr_big_kept_bytes(void)
{
    pthread_mutex_lock(&keep_lock);
    size_t n = kept_bytes;
    pthread_mutex_unlock(&keep_lock);
    return n;
}

void *fr_try_malloc_big(size_t n, size_t *cap)
{
    const size_t huge = (size_t)2 << 20;
    if (cap)
        *cap = n;
    if (n < 2 * huge)
        return fr_try_malloc(n);
    size_t size = 0;
    void *p = take_kept(n, &size);
    if (p) { /* pages touched before: no fault, no zeroing */
        if (cap)
            *cap = size;
        return p;
    }
    size_t rounded = (n + huge - 1) / huge * huge;
    if (rounded < n || posix_memalign(&p, huge, rounded) != 0)
        return NULL;
    (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice only: failure is harmless */
    if (cap)
        *cap = rounded;
    return p;
}
