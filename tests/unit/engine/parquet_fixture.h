/* parquet_fixture: what the Parquet reader's tests share: the fixture files
 * of tests/data/parquet read into memory, and a df_source over bytes that
 * can hide a range of them (a file cut short behind a valid footer). */
#ifndef FRAMED_TEST_PARQUET_FIXTURE_H
#define FRAMED_TEST_PARQUET_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

struct mem_source {
    struct df_source base;
    const uint8_t *data;
    size_t len;
    int64_t hole_lo, hole_hi; /* reads starting in [lo, hi) get nothing */
};

static inline int mem_read(struct df_source *s, int64_t off, char *buf, size_t len, size_t *got,
                           struct fr_error *err)
{
    struct mem_source *m = (struct mem_source *)s;
    *got = 0;
    if (off < 0 || (uint64_t)off > m->len)
        return fr_error_set(err, FR_EIO, "read outside the source");
    if (off >= m->hole_lo && off < m->hole_hi)
        return FR_OK;
    size_t n = m->len - (size_t)off < len ? m->len - (size_t)off : len;
    if (m->hole_lo > off && (uint64_t)(m->hole_lo - off) < n)
        n = (size_t)(m->hole_lo - off);
    memcpy(buf, m->data + off, n);
    *got = n;
    return FR_OK;
}

static inline void mem_source_init(struct mem_source *m, const void *data, size_t len,
                                   const char *name)
{
    m->base.read = mem_read;
    m->base.size = (int64_t)len;
    m->base.name = name;
    m->data = data;
    m->len = len;
    m->hole_lo = m->hole_hi = -1;
}

/* new (free): the fixture's path under FRAMED_TEST_DATA. */
static inline char *fixture_path(const char *name)
{
    const char *dir = getenv("FRAMED_TEST_DATA");
    return fr_xasprintf("%s/parquet/%s", dir ? dir : "tests/data", name);
}

/* new (free): a fixture's bytes; NULL when it cannot be read. */
static inline uint8_t *fixture_bytes(const char *name, size_t *len)
{
    char *path = fixture_path(name);
    *len = 0;
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

#endif
