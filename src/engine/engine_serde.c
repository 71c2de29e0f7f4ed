/* engine_serde: the binary columnar encoding of a table (partition wire and
 * spill format). All integers little-endian, no padding, no alignment:
 *
 *   "FRTB1" (5 bytes) | u32 ncols | u64 nrows | ncols x column
 *   column: u32 name_len | name bytes (no NUL) | u8 type (df_type, 1..6)
 *           | u64 null_count | u8 flags (bit 0: a validity bitmap follows)
 *           | [validity: (nrows+7)/8 bytes, Arrow bit order, 1 = valid]
 *           | fixed-width types: nrows x width bytes (bool 1: 0/1, date 4,
 *             int64/float64/timestamp 8)
 *           | string: (nrows+1) x i64 offsets (first 0, non-decreasing)
 *             | u64 data_len (= last offset) | data_len bytes
 *
 * At most FR_MAX_COLUMNS columns, no name twice; a table without columns has at most 2^24
 * rows. Nothing may follow the last column. df_table_deserialize checks every
 * length against the buffer (it reads bytes from the network) and answers
 * FR_EDATA for anything truncated or inconsistent. */
#include "engine_io_int.h"
#include "engine_ops_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "engine_serde assumes little-endian");

#define MAGIC "FRTB1"
#define MAGIC_LEN 5
#define MAX_NAME_LEN 65536
/* Rows of a table without columns (a count(*) scan's output at most). */
#define DF_SERDE_MAX_BARE_ROWS ((uint64_t)1 << 24)

static bool has_bitmap(const struct df_column *c)
{
    return c->null_count > 0 && c->validity;
}

static char *put(char *w, const void *src, size_t n)
{
    if (n) /* an empty column may have no buffer at all */
        memcpy(w, src, n);
    return w + n;
}

/* One piece of the encoding: a table buffer, or bytes the reader owns (a
 * column's header, offsets rebased to 0). */
struct serde_seg {
    const char *ptr;
    size_t len;
};

struct df_serde_reader {
    struct df_table *t; /* a share: the buffers stay while the reader reads */
    struct serde_seg *segs;
    int nsegs, cur;
    size_t off, size;
    char **owned; /* freed with the reader */
    int nowned;
};

static const char *own(df_serde_reader *r, char *bytes)
{
    r->owned[r->nowned++] = bytes;
    return bytes;
}

static void seg(df_serde_reader *r, const void *ptr, size_t len)
{
    if (len == 0)
        return;
    r->segs[r->nsegs++] = (struct serde_seg){ptr, len};
    r->size += len;
}

static int64_t count_valid(const uint8_t *bits, int64_t n);

/* A copy of bits [start, start + n) of a validity bitmap, shifted to bit 0,
 * the bits past n clear (new), or NULL when out of memory. */
static uint8_t *bits_range(const uint8_t *bits, int64_t start, int64_t n)
{
    size_t len = (size_t)(n + 7) / 8;
    uint8_t *out = fr_try_malloc(len ? len : 1);
    if (!out)
        return NULL;
    const uint8_t *src = bits + start / 8;
    unsigned shift = (unsigned)(start % 8);
    if (!shift) {
        memcpy(out, src, len);
    } else {
        size_t have = (size_t)(start + n + 7) / 8 - (size_t)(start / 8); /* bytes under the range */
        for (size_t i = 0; i < len; i++)
            out[i] = (uint8_t)((src[i] >> shift) | (i + 1 < have ? src[i + 1] << (8 - shift) : 0));
    }
    if (n % 8)
        out[len - 1] &= (uint8_t)((1u << (n % 8)) - 1);
    return out;
}

df_serde_reader *df_serde_reader_new_range(const struct df_table *t, int64_t start, int64_t n)
{
    if (start < 0 || start > t->nrows || n < 0 || n > t->nrows - start)
        return NULL;
    df_serde_reader *r = fr_xcalloc(1, sizeof(*r));
    r->t = df_table_share(t);
    r->segs = fr_xcalloc((size_t)t->ncols * 6 + 2, sizeof(*r->segs));
    r->owned = fr_xcalloc((size_t)t->ncols * 4 + 2, sizeof(*r->owned));
    char *head = fr_xmalloc(MAGIC_LEN + 4 + 8);
    uint32_t ncols = (uint32_t)t->ncols;
    uint64_t nrows = (uint64_t)n;
    put(put(put(head, MAGIC, MAGIC_LEN), &ncols, 4), &nrows, 8);
    seg(r, own(r, head), MAGIC_LEN + 4 + 8);
    bool whole = start == 0 && n == t->nrows;
    for (int i = 0; i < t->ncols; i++) {
        const struct df_column *c = t->cols[i];
        const char *name = t->names[i];
        uint32_t name_len = (uint32_t)strlen(name);
        uint8_t type = (uint8_t)c->type, flags = has_bitmap(c) && n > 0 ? 1 : 0;
        uint64_t nulls = (uint64_t)(flags ? c->null_count : 0);
        const uint8_t *bits = c->validity;
        if (flags && !whole) { /* the range's own bits and null count */
            uint8_t *own_bits = bits_range(c->validity, start, n);
            if (!own_bits) {
                df_serde_reader_free(r);
                return NULL;
            }
            own(r, (char *)own_bits);
            bits = own_bits;
            nulls = (uint64_t)(n - count_valid(own_bits, n));
            flags = nulls > 0;
        }
        size_t hlen = 4 + name_len + 1 + 8 + 1;
        char *h = fr_xmalloc(hlen);
        put(put(put(put(put(h, &name_len, 4), name, name_len), &type, 1), &nulls, 8), &flags, 1);
        seg(r, own(r, h), hlen);
        if (flags)
            seg(r, bits, (size_t)(n + 7) / 8);
        if (c->type != DF_TYPE_STRING) {
            size_t w = df_type_width(c->type);
            if (n > 0) /* an empty column may have no buffer at all */
                seg(r, (const char *)c->values + (size_t)start * w, (size_t)n * w);
            continue;
        }
        int64_t base = c->offsets[start];
        const int64_t *offs = c->offsets + start;
        size_t olen = (size_t)(n + 1) * 8;
        if (base == 0) {
            seg(r, offs, olen);
        } else { /* a slice's offsets start past 0: the encoding's start at 0 */
            int64_t *rebased = fr_try_malloc(olen);
            if (!rebased) { /* sized by the data: no memory is an answer, not an abort */
                df_serde_reader_free(r);
                return NULL;
            }
            for (int64_t k = 0; k <= n; k++)
                rebased[k] = offs[k] - base;
            seg(r, own(r, (char *)rebased), olen);
        }
        uint64_t data_len = (uint64_t)(offs[n] - base);
        char *dl = fr_xmalloc(8);
        put(dl, &data_len, 8);
        seg(r, own(r, dl), 8);
        if (data_len)
            seg(r, c->data + base, data_len);
    }
    return r;
}

df_serde_reader *df_serde_reader_new(const struct df_table *t)
{
    return df_serde_reader_new_range(t, 0, t->nrows);
}

size_t df_serde_reader_size(const df_serde_reader *r)
{
    return r->size;
}

size_t df_serde_reader_read(df_serde_reader *r, char *buf, size_t max)
{
    size_t done = 0;
    while (done < max && r->cur < r->nsegs) {
        const struct serde_seg *g = &r->segs[r->cur];
        size_t n = g->len - r->off;
        if (n > max - done)
            n = max - done;
        memcpy(buf + done, g->ptr + r->off, n);
        done += n;
        r->off += n;
        if (r->off == g->len) {
            r->cur++;
            r->off = 0;
        }
    }
    return done;
}

void df_serde_reader_free(df_serde_reader *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nowned; i++)
        free(r->owned[i]);
    free(r->owned);
    free(r->segs);
    df_table_free(r->t);
    free(r);
}

int df_table_serialize(const struct df_table *t, char **out, size_t *len, struct fr_error *err)
{
    *out = NULL;
    *len = 0;
    df_serde_reader *r = df_serde_reader_new(t); /* one description of the layout: the reader's */
    if (!r)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory encoding a table of %lld rows",
                            (long long)t->nrows);
    size_t total = df_serde_reader_size(r);
    char *buf = fr_try_malloc(total);
    if (!buf) {
        df_serde_reader_free(r);
        return fr_error_set(err, FR_ETOOLARGE, "out of memory encoding a table of %zu bytes",
                            total);
    }
    size_t got = df_serde_reader_read(r, buf, total);
    df_serde_reader_free(r);
    if (got != total) { /* cannot happen: the reader gives exactly its size */
        free(buf);
        return fr_error_set(err, FR_EINTERNAL, "encoding a table gave %zu of %zu bytes", got,
                            total);
    }
    *out = buf;
    *len = total;
    return FR_OK;
}

/* A bounds-checked cursor over the input. */
struct cursor {
    const unsigned char *p;
    size_t left;
};

static bool take(struct cursor *c, void *dst, size_t n)
{
    if (n > c->left)
        return false;
    if (dst)
        memcpy(dst, c->p, n);
    c->p += n;
    c->left -= n;
    return true;
}

static int corrupt(struct fr_error *err, int col, const char *what)
{
    if (col < 0)
        return fr_error_set(err, FR_EDATA, "corrupt table encoding: %s", what);
    return fr_error_set(err, FR_EDATA, "corrupt table encoding: %s in column %d", what, col + 1);
}

static int64_t count_valid(const uint8_t *bits, int64_t n)
{
    int64_t v = 0;
    for (int64_t i = 0; i < n / 8; i++)
        v += __builtin_popcount(bits[i]);
    for (int64_t i = n / 8 * 8; i < n; i++)
        v += (bits[i >> 3] >> (i & 7)) & 1;
    return v;
}

/* The columns are sized exactly, their buffers written once by the copy
 * (no zero-fill first: a fetched partition is hundreds of MB of fresh pages). */
static int read_strings(struct cursor *cur, struct df_column **cp, int64_t nrows, int col,
                        struct fr_error *err)
{
    const unsigned char *offs = cur->p;
    uint64_t data_len;
    if ((uint64_t)nrows + 1 > cur->left / 8 || !take(cur, NULL, (size_t)(nrows + 1) * 8) ||
        !take(cur, &data_len, 8) || data_len > cur->left)
        return corrupt(err, col, "truncated string offsets");
    struct df_column *c = *cp = df__column_sized(DF_TYPE_STRING, nrows, (int64_t)data_len, false);
    if (!c)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory decoding %lld strings",
                            (long long)nrows);
    memcpy(c->offsets, offs, (size_t)(nrows + 1) * 8);
    for (int64_t i = 0; i < nrows; i++)
        if (c->offsets[i + 1] < c->offsets[i])
            return corrupt(err, col, "decreasing string offsets");
    if (c->offsets[0] != 0 || (uint64_t)c->offsets[nrows] != data_len)
        return corrupt(err, col, "string offsets that do not match the data");
    take(cur, c->data, (size_t)data_len);
    c->data_len = (int64_t)data_len;
    return FR_OK;
}

static int read_values(struct cursor *cur, struct df_column **cp, df_type type, int64_t nrows,
                       int col, struct fr_error *err)
{
    size_t w = df_type_width(type);
    if ((uint64_t)nrows > cur->left / w)
        return corrupt(err, col, "truncated values");
    struct df_column *c = *cp = df__column_sized(type, nrows, 0, false);
    if (!c)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory decoding %lld values",
                            (long long)nrows);
    take(cur, c->values, (size_t)nrows * w);
    if (c->type == DF_TYPE_BOOL)
        for (int64_t i = 0; i < nrows; i++)
            if (((uint8_t *)c->values)[i] > 1)
                return corrupt(err, col, "a bool that is neither 0 nor 1");
    return FR_OK;
}

static int read_column(struct cursor *cur, int col, int64_t nrows, struct df_table *t,
                       struct fr_error *err)
{
    uint32_t name_len;
    uint8_t type, flags;
    uint64_t nulls;
    char *name = NULL;
    struct df_column *c = NULL;
    int result = FR_EDATA;
    if (!take(cur, &name_len, 4) || name_len > MAX_NAME_LEN || name_len > cur->left) {
        result = corrupt(err, col, "a truncated column header");
        goto out;
    }
    name = fr_xstrndup((const char *)cur->p, name_len);
    take(cur, NULL, name_len);
    if (strlen(name) != name_len || !take(cur, &type, 1) || !take(cur, &nulls, 8) ||
        !take(cur, &flags, 1)) {
        result = corrupt(err, col, "a bad column header");
        goto out;
    }
    if (type < DF_TYPE_BOOL || type > DF_TYPE_TIMESTAMP || flags > 1 || nulls > (uint64_t)nrows ||
        (nulls > 0) != (flags == 1)) {
        result = corrupt(err, col, "an invalid type, flag or null count");
        goto out;
    }
    size_t bitmap = (size_t)(nrows + 7) / 8;
    const unsigned char *bits = cur->p;
    if (flags && !take(cur, NULL, bitmap)) {
        result = corrupt(err, col, "a truncated validity bitmap");
        goto out;
    }
    if (flags && count_valid(bits, nrows) != nrows - (int64_t)nulls) {
        result = corrupt(err, col, "a null count that does not match the bitmap");
        goto out;
    }
    result = type == DF_TYPE_STRING ? read_strings(cur, &c, nrows, col, err)
                                    : read_values(cur, &c, (df_type)type, nrows, col, err);
    if (result != FR_OK)
        goto out;
    if (flags) {
        c->validity = fr_try_malloc((size_t)(c->capacity + 7) / 8 + 1);
        if (!c->validity) {
            result = fr_error_set(err, FR_ETOOLARGE, "out of memory decoding a bitmap");
            goto out;
        }
        memset(c->validity, 0, (size_t)(c->capacity + 7) / 8 + 1);
        memcpy(c->validity, bits, bitmap);
        c->null_count = (int64_t)nulls;
    }
    c->length = nrows;
    df_table_add(t, name, c);
    c = NULL; /* the table owns it now */
    result = FR_OK;
out:
    df_column_unref(c);
    free(name);
    return result;
}

int df_table_deserialize(const char *data, size_t len, struct df_table **out, struct fr_error *err)
{
    struct cursor cur = {(const unsigned char *)data, len};
    char magic[MAGIC_LEN];
    uint32_t ncols;
    uint64_t nrows;
    *out = NULL;
    if (!take(&cur, magic, MAGIC_LEN) || memcmp(magic, MAGIC, MAGIC_LEN) != 0)
        return corrupt(err, -1, "no FRTB1 magic");
    if (!take(&cur, &ncols, 4) || !take(&cur, &nrows, 8))
        return corrupt(err, -1, "a truncated table header");
    /* each column takes at least 14 bytes, and each row one byte in it */
    if (ncols > cur.left / 14 || nrows > (uint64_t)INT64_MAX / 8 || (ncols > 0 && nrows > cur.left))
        return corrupt(err, -1, "column or row counts larger than the data");
    if (ncols > FR_MAX_COLUMNS) {
        return fr_error_setk(err, FR_EDATA, "too-many-columns",
                             "corrupt table encoding: more than %d columns", FR_MAX_COLUMNS);
    }
    /* A table without columns has no bytes to check its row count against,
     * and later operators allocate per row: bound it. */
    if (ncols == 0 && nrows > DF_SERDE_MAX_BARE_ROWS)
        return corrupt(err, -1, "a table without columns claims too many rows");
    /* Column names are unique in every table framed makes (the planner sees
     * to it), and operators find columns by name: a repeated one is corrupt. */
    struct df_table *t = df_table_new();
    df_name_map *names = df_name_map_new();
    int rc = FR_OK;
    for (uint32_t i = 0; i < ncols && rc == FR_OK; i++) {
        rc = read_column(&cur, (int)i, (int64_t)nrows, t, err);
        if (rc == FR_OK && df_name_map_get(names, t->names[i]) >= 0)
            rc = corrupt(err, (int)i, "a column name that is repeated");
        if (rc == FR_OK)
            df_name_map_put(names, t->names[i], (int)i);
    }
    df_name_map_free(names);
    if (rc == FR_OK && cur.left != 0)
        rc = corrupt(err, -1, "bytes after the last column");
    if (rc != FR_OK) {
        df_table_free(t);
        return rc;
    }
    t->nrows = (int64_t)nrows;
    *out = t;
    return FR_OK;
}
