/* engine_parquet_write_chunk: one column chunk of the Parquet writer: the
 * dictionary (an O(n) hash build, given up past its bounds), data pages v1
 * of at most ~1 MiB with RLE-hybrid definition levels and RLE_DICTIONARY or
 * PLAIN values, each page compressed, and the chunk's statistics. */
#include "engine_io_int.h"
#include "engine_parquet_write_int.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <stdlib.h>
#include <string.h>

void df__pq_chunk_init(struct df__pq_chunk *c)
{
    memset(c, 0, sizeof *c);
    fr_buf_init(&c->pages);
    fr_buf_init(&c->min);
    fr_buf_init(&c->max);
    c->dict_page_offset = -1;
}

void df__pq_chunk_cleanup(struct df__pq_chunk *c)
{
    fr_buf_cleanup(&c->pages);
    fr_buf_cleanup(&c->min);
    fr_buf_cleanup(&c->max);
}

int df__pq_physical_type(df_type t)
{
    switch (t) {
    case DF_TYPE_BOOL:
        return DF__PQ_BOOLEAN;
    case DF_TYPE_FLOAT64:
        return DF__PQ_DOUBLE;
    case DF_TYPE_STRING:
        return DF__PQ_BYTE_ARRAY;
    case DF_TYPE_DATE:
        return DF__PQ_INT32;
    default:
        return DF__PQ_INT64; /* int64, timestamp */
    }
}

/* ---- the RLE / bit-packed hybrid ------------------------------------------ */

/* Appends v[0, n) bit-packed (LSB first) at bw bits, padded to whole groups of 8. */
static void bitpack(struct fr_buf *out, const uint32_t *v, int64_t n, int bw)
{
    int64_t groups = (n + 7) / 8;
    uint64_t acc = 0;
    int nbits = 0;
    for (int64_t i = 0; i < groups * 8; i++) {
        acc |= (uint64_t)(i < n ? v[i] : 0) << nbits;
        nbits += bw;
        while (nbits >= 8) {
            fr_buf_putc(out, (char)(uint8_t)acc);
            acc >>= 8;
            nbits -= 8;
        }
    }
}

static void uleb(struct fr_buf *out, uint64_t v)
{
    struct df__tw w;
    df__tw_init(&w, out);
    df__tw_varint(&w, v);
}

static void flush_literals(struct fr_buf *out, const uint32_t *v, int64_t n, int bw)
{
    if (n == 0)
        return;
    uleb(out, (uint64_t)((n + 7) / 8) << 1 | 1);
    bitpack(out, v, n, bw);
}

/* Runs of 8 or more equal values become RLE runs; the rest goes out
 * bit-packed in groups of 8 (only the last group is padded). */
static void hybrid_encode(struct fr_buf *out, const uint32_t *v, int64_t n, int bw)
{
    int64_t lit = 0, i = 0; /* literals pending: v[lit, i) */
    while (i < n) {
        int64_t r = 1;
        while (i + r < n && v[i + r] == v[i])
            r++;
        if (r >= 8) {
            flush_literals(out, v + lit, i - lit, bw);
            uleb(out, (uint64_t)r << 1);
            uint32_t x = v[i];
            for (int b = 0; b < (bw + 7) / 8; b++)
                fr_buf_putc(out, (char)(uint8_t)(x >> (8 * b)));
            i += r;
            lit = i;
        } else {
            i = i + 8 < n ? i + 8 : n;
        }
    }
    flush_literals(out, v + lit, i - lit, bw);
}

static int bit_width(uint64_t max)
{
    int bw = 0;
    while (max >> bw)
        bw++;
    return bw;
}

/* ---- the dictionary ------------------------------------------------------- */

struct dict {
    bool strings;
    size_t width;
    uint32_t *slots; /* entry index + 1; 0 = empty */
    uint64_t mask;
    int64_t count;
    struct fr_buf plain; /* the dictionary page's PLAIN values */
    int64_t *entry_at;   /* strings: offset in plain of each entry's length */
    uint32_t *indices;   /* one per non-null value */
};

static void dict_cleanup(struct dict *d)
{
    free(d->slots);
    free(d->entry_at);
    free(d->indices);
    fr_buf_cleanup(&d->plain);
}

static const char *value_at(const struct df_column *col, int64_t row, size_t width, int64_t *len)
{
    if (col->type == DF_TYPE_STRING)
        return df_column_string(col, row, len);
    *len = (int64_t)width;
    return (const char *)col->values + (size_t)row * width;
}

static bool entry_eq(const struct dict *d, uint32_t e, const char *p, int64_t len)
{
    if (!d->strings) {
        const char *q = d->plain.data + (size_t)e * d->width;
        if (d->width == 8) {
            uint64_t a, b;
            memcpy(&a, q, 8);
            memcpy(&b, p, 8);
            return a == b;
        }
        return memcmp(q, p, d->width) == 0;
    }
    uint32_t elen;
    memcpy(&elen, d->plain.data + d->entry_at[e], 4);
    return elen == (uint32_t)len && memcmp(d->plain.data + d->entry_at[e] + 4, p, (size_t)len) == 0;
}

/* Adds value p (or finds it); false when the dictionary went over its bounds. */
static bool dict_add(struct dict *d, const char *p, int64_t len, uint32_t *index)
{
    uint64_t s = XXH3_64bits(p, (size_t)len) & d->mask;
    for (; d->slots[s] != 0; s = (s + 1) & d->mask) {
        if (entry_eq(d, d->slots[s] - 1, p, len)) {
            *index = d->slots[s] - 1;
            return true;
        }
    }
    if (d->count >= DF__PQW_DICT_MAX_VALUES ||
        (int64_t)d->plain.len + len + 4 > DF__PQW_DICT_MAX_BYTES)
        return false;
    d->slots[s] = (uint32_t)(d->count + 1);
    if (d->strings) {
        d->entry_at[d->count] = (int64_t)d->plain.len;
        uint32_t l32 = (uint32_t)len;
        fr_buf_append(&d->plain, &l32, 4);
    }
    fr_buf_append(&d->plain, p, (size_t)len);
    *index = (uint32_t)d->count++;
    return true;
}

/* Builds the dictionary of the non-null values of rows [start, start+n).
 * 1 when it fits its bounds, 0 when the chunk goes PLAIN, <0 on error. */
static int dict_build(struct dict *d, const struct df_column *col, int64_t start, int64_t n,
                      int64_t nvalid, struct fr_error *err)
{
    memset(d, 0, sizeof *d);
    fr_buf_init(&d->plain);
    d->strings = col->type == DF_TYPE_STRING;
    d->width = df_type_width(col->type);
    if (col->type == DF_TYPE_BOOL || nvalid == 0)
        return 0;
    uint64_t nslots = 16;
    int64_t want = nvalid < DF__PQW_DICT_MAX_VALUES ? nvalid : DF__PQW_DICT_MAX_VALUES;
    while (nslots < (uint64_t)want * 2)
        nslots <<= 1;
    d->mask = nslots - 1;
    d->slots = calloc(nslots, sizeof *d->slots);
    d->indices = fr_try_malloc((size_t)nvalid * sizeof *d->indices);
    if (d->strings)
        d->entry_at = fr_try_malloc((size_t)want * sizeof *d->entry_at);
    if (!d->slots || !d->indices || (d->strings && !d->entry_at))
        return fr_error_set(err, FR_ENOSPACE, "parquet writer: no memory for a dictionary");
    int64_t k = 0;
    for (int64_t r = start; r < start + n; r++) {
        if (!df_column_is_valid(col, r))
            continue;
        int64_t len;
        const char *p = value_at(col, r, d->width, &len);
        if (!dict_add(d, p, len, &d->indices[k++]))
            return 0;
    }
    return 1;
}

/* ---- pages ---------------------------------------------------------------- */

struct pages {
    const struct df_column *col;
    int codec;
    const struct dict *d; /* NULL: PLAIN */
    int bw;               /* dictionary indices' bit width */
    int64_t valid_bits;   /* a valid row's level and value; 0 = strings (by length) */
    uint32_t *scratch;    /* levels or booleans of one page */
    struct fr_buf body, comp;
};

static void page_header(struct fr_buf *out, int type, size_t raw, size_t comp, int64_t nvalues,
                        int encoding)
{
    struct df__tw w;
    df__tw_init(&w, out);
    df__tw_field_i32(&w, 1, type);
    df__tw_field_i32(&w, 2, (int32_t)raw);
    df__tw_field_i32(&w, 3, (int32_t)comp);
    df__tw_field_struct(&w, type == DF__PQ_DICTIONARY_PAGE ? 7 : 5);
    df__tw_field_i32(&w, 1, (int32_t)nvalues);
    df__tw_field_i32(&w, 2, encoding);
    if (type == DF__PQ_DATA_PAGE) {
        df__tw_field_i32(&w, 3, DF__PQ_RLE); /* definition levels */
        df__tw_field_i32(&w, 4, DF__PQ_RLE); /* repetition levels (none) */
    }
    df__tw_struct_end(&w);
    df__tw_struct_end(&w);
}

/* Compresses pg->body and appends header and page to the chunk. */
static int page_flush(struct df__pq_chunk *c, struct pages *pg, int type, int64_t nvalues,
                      int encoding, struct fr_error *err)
{
    pg->comp.len = 0;
    int rc =
        df__pq_compress(pg->codec, (const uint8_t *)pg->body.data, pg->body.len, &pg->comp, err);
    if (rc != 0)
        return rc;
    if (pg->body.len > INT32_MAX || pg->comp.len > INT32_MAX)
        return fr_error_set(err, FR_ETOOLARGE, "parquet writer: a page is over 2 GiB");
    size_t at = c->pages.len;
    page_header(&c->pages, type, pg->body.len, pg->comp.len, nvalues, encoding);
    c->uncompressed_bytes += (int64_t)(c->pages.len - at + pg->body.len);
    fr_buf_append(&c->pages, pg->comp.data, pg->comp.len);
    return 0;
}

static void put_u32(struct fr_buf *b, uint32_t v)
{
    fr_buf_append(b, &v, 4); /* little-endian hosts only (as the engine's serde) */
}

static void plain_values(struct pages *pg, int64_t r0, int64_t r1)
{
    const struct df_column *col = pg->col;
    size_t width = df_type_width(col->type);
    int64_t k = 0;
    if (!col->validity && col->type != DF_TYPE_BOOL && col->type != DF_TYPE_STRING) {
        fr_buf_append(&pg->body, (const char *)col->values + (size_t)r0 * width,
                      (size_t)(r1 - r0) * width);
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        if (!df_column_is_valid(col, r))
            continue;
        if (col->type == DF_TYPE_BOOL) {
            pg->scratch[k++] = df_column_bool(col, r);
        } else if (col->type == DF_TYPE_STRING) {
            int64_t len;
            const char *s = df_column_string(col, r, &len);
            put_u32(&pg->body, (uint32_t)len);
            fr_buf_append(&pg->body, s, (size_t)len);
        } else {
            fr_buf_append(&pg->body, (const char *)col->values + (size_t)r * width, width);
        }
    }
    if (col->type == DF_TYPE_BOOL)
        bitpack(&pg->body, pg->scratch, k, 1);
}

/* One data page of rows [r0, r1) whose first non-null value is the k0-th. */
static int data_page(struct df__pq_chunk *c, struct pages *pg, int64_t r0, int64_t r1, int64_t k0,
                     int64_t *nvalid, struct fr_error *err)
{
    pg->body.len = 0;
    int64_t valid = 0;
    for (int64_t r = r0; r < r1; r++) {
        pg->scratch[r - r0] = df_column_is_valid(pg->col, r);
        valid += pg->scratch[r - r0];
    }
    put_u32(&pg->body, 0);
    hybrid_encode(&pg->body, pg->scratch, r1 - r0, 1);
    uint32_t levels_len = (uint32_t)(pg->body.len - 4);
    memcpy(pg->body.data, &levels_len, 4);
    if (pg->d) {
        fr_buf_putc(&pg->body, (char)pg->bw);
        hybrid_encode(&pg->body, pg->d->indices + k0, valid, pg->bw);
    } else {
        plain_values(pg, r0, r1);
    }
    *nvalid = valid;
    return page_flush(c, pg, DF__PQ_DATA_PAGE, r1 - r0,
                      pg->d ? DF__PQ_RLE_DICTIONARY : DF__PQ_PLAIN, err);
}

/* Bits row r adds to a page: its level and its value. */
static inline int64_t row_bits(const struct pages *pg, int64_t r)
{
    if (!df_column_is_valid(pg->col, r))
        return 1;
    if (pg->valid_bits)
        return pg->valid_bits;
    return 1 + 8 * (4 + pg->col->offsets[r + 1] - pg->col->offsets[r]);
}

/* Cuts rows [start, start+n) into pages of at most DF__PQW_PAGE_BYTES (a
 * page holds at least one row); n == 0 still gets one empty page. */
static int data_pages(struct df__pq_chunk *c, struct pages *pg, int64_t start, int64_t n,
                      struct fr_error *err)
{
    int64_t r0 = start, end = start + n, k = 0;
    pg->valid_bits = pg->d                           ? 1 + pg->bw
                     : pg->col->type == DF_TYPE_BOOL ? 2
                     : pg->col->type == DF_TYPE_STRING
                         ? 0
                         : 1 + 8 * (int64_t)df_type_width(pg->col->type);
    do {
        int64_t bits = r0 < end ? row_bits(pg, r0) : 0, r1 = r0 < end ? r0 + 1 : r0;
        for (; r1 < end; r1++) {
            int64_t b = row_bits(pg, r1);
            if (bits + b > DF__PQW_PAGE_BYTES * 8)
                break;
            bits += b;
        }
        int64_t nvalid;
        int rc = data_page(c, pg, r0, r1, k, &nvalid, err);
        if (rc != 0)
            return rc;
        k += nvalid;
        r0 = r1;
    } while (r0 < end);
    return 0;
}

/* ---- statistics ----------------------------------------------------------- */

static int bytes_cmp(const char *a, int64_t alen, const char *b, int64_t blen)
{
    int c = memcmp(a, b, (size_t)(alen < blen ? alen : blen));
    return c != 0 ? c : (alen > blen) - (alen < blen);
}

/* Byte-wise min and max of the strings; bounds longer than
 * DF__PQW_STAT_MAX_BYTES are cut: the min to a prefix (still <= every
 * value), the max to a prefix whose last ASCII byte below 0x7F is bumped
 * (still >= every value, still UTF-8); without such a byte there is none. */
static void string_stats(struct df__pq_chunk *c, const struct df_column *col, int64_t start,
                         int64_t n)
{
    const char *mn = NULL, *mx = NULL;
    int64_t mnl = 0, mxl = 0;
    for (int64_t r = start; r < start + n; r++) {
        if (!df_column_is_valid(col, r))
            continue;
        int64_t len;
        const char *s = df_column_string(col, r, &len);
        if (!mn || bytes_cmp(s, len, mn, mnl) < 0)
            mn = s, mnl = len;
        if (!mx || bytes_cmp(s, len, mx, mxl) > 0)
            mx = s, mxl = len;
    }
    if (!mn)
        return;
    c->min_exact = mnl <= DF__PQW_STAT_MAX_BYTES;
    if (!c->min_exact) {
        mnl = DF__PQW_STAT_MAX_BYTES;
        while (mnl > 0 && ((uint8_t)mn[mnl] & 0xC0) == 0x80) /* not inside a character */
            mnl--;
    }
    c->max_exact = mxl <= DF__PQW_STAT_MAX_BYTES;
    if (!c->max_exact) {
        int64_t i = DF__PQW_STAT_MAX_BYTES - 1;
        while (i >= 0 && (uint8_t)mx[i] >= 0x7F)
            i--;
        if (i < 0)
            return;
        fr_buf_append(&c->max, mx, (size_t)i);
        fr_buf_putc(&c->max, (char)(mx[i] + 1));
    } else {
        fr_buf_append(&c->max, mx, (size_t)mxl);
    }
    fr_buf_append(&c->min, mn, (size_t)mnl);
    c->has_min_max = true;
}

static void float_stats(struct df__pq_chunk *c, const struct df_column *col, int64_t start,
                        int64_t n)
{
    bool any = false;
    double mn = 0, mx = 0;
    for (int64_t r = start; r < start + n; r++) {
        double v = df_column_float64(col, r);
        if (!df_column_is_valid(col, r) || v != v) /* NaN never enters min/max */
            continue;
        if (!any || v < mn)
            mn = v;
        if (!any || v > mx)
            mx = v;
        any = true;
    }
    if (!any)
        return;
    if (mn == 0)
        mn = -0.0; /* the format's rule: a zero min is written -0, a zero max +0 */
    if (mx == 0)
        mx = 0.0;
    fr_buf_append(&c->min, &mn, 8);
    fr_buf_append(&c->max, &mx, 8);
    c->has_min_max = c->min_exact = c->max_exact = true;
}

static void int_stats(struct df__pq_chunk *c, const struct df_column *col, int64_t start, int64_t n)
{
    bool any = false;
    int64_t mn = 0, mx = 0;
    for (int64_t r = start; r < start + n; r++) {
        if (!df_column_is_valid(col, r))
            continue;
        int64_t v = col->type == DF_TYPE_DATE   ? df_column_int32(col, r)
                    : col->type == DF_TYPE_BOOL ? df_column_bool(col, r)
                                                : df_column_int64(col, r);
        if (!any || v < mn)
            mn = v;
        if (!any || v > mx)
            mx = v;
        any = true;
    }
    if (!any)
        return;
    if (col->type == DF_TYPE_BOOL) {
        fr_buf_putc(&c->min, (char)mn);
        fr_buf_putc(&c->max, (char)mx);
    } else if (col->type == DF_TYPE_DATE) {
        int32_t a = (int32_t)mn, b = (int32_t)mx;
        fr_buf_append(&c->min, &a, 4);
        fr_buf_append(&c->max, &b, 4);
    } else {
        fr_buf_append(&c->min, &mn, 8);
        fr_buf_append(&c->max, &mx, 8);
    }
    c->has_min_max = c->min_exact = c->max_exact = true;
}

static void chunk_stats(struct df__pq_chunk *c, const struct df_column *col, int64_t start,
                        int64_t n)
{
    c->null_count = 0;
    for (int64_t r = start; r < start + n; r++)
        c->null_count += !df_column_is_valid(col, r);
    if (col->type == DF_TYPE_STRING)
        string_stats(c, col, start, n);
    else if (col->type == DF_TYPE_FLOAT64)
        float_stats(c, col, start, n);
    else
        int_stats(c, col, start, n);
}

/* ---- the chunk ------------------------------------------------------------ */

static void chunk_reset(struct df__pq_chunk *c)
{
    c->pages.len = c->min.len = c->max.len = 0;
    c->num_values = c->uncompressed_bytes = c->null_count = 0;
    c->dict_page_offset = -1;
    c->data_page_offset = 0;
    c->dictionary = c->has_min_max = c->min_exact = c->max_exact = false;
}

static int dict_page(struct df__pq_chunk *c, struct pages *pg, struct dict *d, struct fr_error *err)
{
    pg->body.len = 0;
    fr_buf_append(&pg->body, d->plain.data, d->plain.len);
    c->dict_page_offset = (int64_t)c->pages.len;
    pg->d = d;
    pg->bw = bit_width((uint64_t)(d->count - 1));
    if (pg->bw == 0)
        pg->bw = 1; /* a width of 0 is legal, but not every reader takes it */
    c->dictionary = true;
    return page_flush(c, pg, DF__PQ_DICTIONARY_PAGE, d->count, DF__PQ_PLAIN, err);
}

int df__pq_chunk_encode(struct df__pq_chunk *c, const struct df_column *col, int64_t start,
                        int64_t n, int codec, struct fr_error *err)
{
    /* STRING is UTF-8 (readers refuse other bytes): invalid bytes as U+FFFD */
    struct df_column *repaired = df__utf8_repaired(col, start, n);
    if (repaired) {
        col = repaired;
        start = 0;
    }
    chunk_reset(c);
    chunk_stats(c, col, start, n);
    c->num_values = n;
    struct dict d;
    struct pages pg = {.col = col, .codec = codec};
    fr_buf_init(&pg.body);
    fr_buf_init(&pg.comp);
    int rc = dict_build(&d, col, start, n, n - c->null_count, err);
    if (rc < 0)
        goto out;
    if (rc == 1 && (rc = dict_page(c, &pg, &d, err)) != 0)
        goto out;
    c->data_page_offset = (int64_t)c->pages.len;
    pg.scratch = fr_try_malloc((size_t)(n > 0 ? n : 1) * sizeof *pg.scratch);
    if (!pg.scratch) {
        rc = fr_error_set(err, FR_ENOSPACE, "parquet writer: no memory for a page's levels");
        goto out;
    }
    rc = data_pages(c, &pg, start, n, err);
out:
    free(pg.scratch);
    fr_buf_cleanup(&pg.body);
    fr_buf_cleanup(&pg.comp);
    dict_cleanup(&d);
    df_column_unref(repaired);
    return rc;
}
