/* common_mem: allocation that aborts on OOM (bookkeeping) next to try
 * variants that return NULL (anything sized by user data). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

void *fr_try_malloc_big(size_t n, size_t *cap)
{
    const size_t huge = (size_t)2 << 20;
    if (cap)
        *cap = n;
    if (n < 2 * huge)
        return fr_try_malloc(n);
    void *p = NULL;
    size_t rounded = (n + huge - 1) / huge * huge;
    if (rounded < n || posix_memalign(&p, huge, rounded) != 0)
        return NULL;
    (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice only: failure is harmless */
    if (cap)
        *cap = rounded;
    return p;
}
