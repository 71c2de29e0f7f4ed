/* engine_parquet_read: df_parquet_read: for each wanted column of each row
 * group, the column chunk's bytes, its pages (dictionary, data v1 and v2)
 * decompressed and decoded straight into the engine's column, nulls from the
 * definition levels; and the path conveniences (schema, validation). */
#include "engine_io_int.h"
#include "engine_parquet_meta_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one column chunk ----------------------------------------------------- */

struct chunk_read {
    df_parquet *pq;
    int rg, col;
    const struct df__pq_leaf *leaf;
    struct df_exec *ex;
    struct fr_error *err;
    struct df_column *out; /* borrowed: rows go to out->length.. */
    int64_t chunk_rows;    /* the chunk's rows (its row group's) */
    int64_t at;            /* of which the pages read so far hold */
    bool discard;          /* validation: each page's rows dropped once decoded */
    int64_t decoded;       /* bytes decoded (discard) */
    int64_t work_limit;    /* more than this is FR_ETOOLARGE (discard) */
    int64_t read_rows;     /* the rows of every row group read (the footer's word) */
    uint8_t *buf;          /* the chunk's bytes */
    size_t buf_cap;
    uint8_t *page; /* a decompressed page */
    size_t page_cap;
    uint32_t *levels, *idx;
    size_t levels_cap, idx_cap;
    void *tmp; /* converted values before scattering */
    size_t tmp_cap;
    struct df__pq_values vals, dict;
    bool has_dict;
    void *dict_conv; /* the dictionary in the engine's layout (fixed widths) */
    size_t dict_conv_cap;
    int64_t charged;     /* temporaries, released after the read */
    int64_t col_charged; /* the columns, which stay charged with the table */
};

/* Prefixes the message of the error in r->err (set by a decoder, a codec,
 * the source or this file) with where it happened; returns its status.
 * Memory (the task's limit or the process's budget), cancel and timeout
 * failures keep their own words. */
static int rd_fail(struct chunk_read *r, int status)
{
    if (!r->err)
        return status;
    status = r->err->status;
    if (status == FR_EMEMLIMIT || status == FR_ECANCELLED || status == FR_ETIMEOUT ||
        strcmp(r->err->kind, "memory-budget-exceeded") == 0) /* the process's budget */
        return status;
    char msg[sizeof(r->err->message)], kind[sizeof(r->err->kind)];
    snprintf(msg, sizeof(msg), "%s", r->err->message);
    snprintf(kind, sizeof(kind), "%s", r->err->kind);
    const char *name = r->pq->src->name ? r->pq->src->name : "parquet";
    fr_error_setk(r->err, status, kind, "%s: row group %d, column '%s': %s", name, r->rg,
                  r->leaf->name, msg);
    snprintf(r->err->file, sizeof(r->err->file), "%s", name);
    snprintf(r->err->field, sizeof(r->err->field), "%s", r->leaf->name);
    r->err->row_group = r->rg;
    return status;
}

static int charge(struct chunk_read *r, int64_t bytes)
{
    r->charged += bytes;
    return df_exec_charge(r->ex, bytes, r->err);
}

/* Grows *p to hold need bytes (charged). */
static int grow(struct chunk_read *r, void **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return FR_OK;
    size_t n = *cap ? *cap : 256;
    while (n < need)
        n *= 2;
    int rc = charge(r, (int64_t)(n - *cap));
    if (rc != FR_OK)
        return rc;
    void *q = fr_try_realloc(*p, n);
    if (!q)
        return fr_error_setk(r->err, FR_ENOSPACE, "", "no memory for a page");
    *p = q;
    *cap = n;
    return FR_OK;
}

/* The page's bytes after decompression: src itself when not compressed. */
static int page_bytes(struct chunk_read *r, int codec, const uint8_t *src, size_t n, size_t out_n,
                      const uint8_t **out)
{
    if (codec == DF__PQ_UNCOMPRESSED || (n == 0 && out_n == 0)) {
        if (n != out_n)
            return fr_error_setk(r->err, FR_EDATA, "", "page sizes differ though uncompressed");
        *out = src;
        return FR_OK;
    }
    int rc = grow(r, (void **)&r->page, &r->page_cap, out_n ? out_n : 1);
    if (rc == FR_OK)
        rc = df__pq_decompress(codec, src, n, r->page, out_n, r->err);
    *out = r->page;
    return rc;
}

/* Clears the validity bit of row i (allocating the bitmap, all valid, at
 * the first null). */
static int set_null(struct df_column *c, int64_t i)
{
    if (!c->validity) {
        size_t bytes = (size_t)((c->capacity + 7) / 8) + 1;
        c->validity = fr_try_malloc(bytes);
        if (!c->validity)
            return FR_ENOSPACE;
        memset(c->validity, 0xff, bytes);
    }
    c->validity[i >> 3] &= (uint8_t) ~(1u << (i & 7));
    c->null_count++;
    return FR_OK;
}

static void gather(size_t w, const void *dict, const uint32_t *idx, int64_t n, void *dst)
{
    if (w == 8)
        for (int64_t i = 0; i < n; i++)
            ((uint64_t *)dst)[i] = ((const uint64_t *)dict)[idx[i]];
    else if (w == 4)
        for (int64_t i = 0; i < n; i++)
            ((uint32_t *)dst)[i] = ((const uint32_t *)dict)[idx[i]];
    else
        for (int64_t i = 0; i < n; i++)
            ((uint8_t *)dst)[i] = ((const uint8_t *)dict)[idx[i]];
}

/* Spreads the n valid values of src over rows (levels: 1 = valid). */
static int scatter(struct df_column *c, size_t w, const char *src, const uint32_t *levels,
                   int64_t rows)
{
    char *dst = (char *)c->values + (size_t)c->length * w;
    int64_t k = 0;
    for (int64_t i = 0; i < rows; i++) {
        if (levels[i]) {
            memcpy(dst + (size_t)i * w, src + (size_t)k * w, w);
            k++;
        } else {
            memset(dst + (size_t)i * w, 0, w); /* the column is not zeroed */
            if (set_null(c, c->length + i) != FR_OK)
                return FR_ENOSPACE;
        }
    }
    return FR_OK;
}

static int place_fixed(struct chunk_read *r, int64_t rows, int64_t nonnull, bool dict,
                       const struct df__pq_values *v)
{
    struct df_column *c = r->out;
    size_t w = df_type_width(c->type);
    char *g = (char *)c->values + (size_t)c->length * w;
    if (nonnull < rows) {
        int rc = grow(r, &r->tmp, &r->tmp_cap, (size_t)nonnull * w + 1);
        if (rc != FR_OK)
            return rc;
        g = r->tmp;
    }
    if (dict)
        gather(w, r->dict_conv, r->idx, nonnull, g);
    else if (df__pq_convert(r->leaf, v, 0, nonnull, g, r->err) != FR_OK)
        return FR_EDATA;
    if (nonnull < rows && scatter(c, w, g, r->levels, rows) != FR_OK)
        return fr_error_setk(r->err, FR_ENOSPACE, "", "no memory for a validity bitmap");
    return FR_OK;
}

/* Room for `bytes` more string bytes in r->out (and 16 of slack for
 * copy_strings), charged before the allocation so that a page claiming
 * gigabytes meets the memory limit. */
static int reserve_strings(struct chunk_read *r, int64_t bytes)
{
    struct df_column *c = r->out;
    bytes += 16;
    if (c->data_len + bytes <= c->data_cap)
        return FR_OK;
    r->col_charged += bytes;
    int rc = df_exec_charge(r->ex, bytes, r->err);
    if (rc != FR_OK)
        return rc;
    int64_t before = df_column_bytes(c);
    if (df_column_reserve(c, 0, bytes) != FR_OK)
        return fr_error_setk(r->err, FR_ENOSPACE, "", "no memory for %lld bytes of strings",
                             (long long)bytes);
    int64_t adjust = df_column_bytes(c) - before - bytes;
    r->col_charged += adjust;
    return df_exec_charge(r->ex, adjust, r->err);
}

/* Appends n strings of v (v's k-th, or idx[k]-th, for k from k0) to c's
 * rows from `row` on. One of up to 16 bytes moves as two 8-byte words (no libc
 * call) when both buffers have room past it: reserve_strings leaves 16
 * bytes of slack in c->data. */
static void copy_strings(struct df_column *c, int64_t row, const struct df__pq_values *v,
                         const uint32_t *idx, int64_t k0, int64_t n)
{
    /* locals: the stores through char pointers would reload the fields */
    int64_t *off = c->offsets + row + 1, pos = c->data_len;
    const int64_t src_cap = (int64_t)v->data_cap, dst_cap = c->data_cap;
    const int64_t *so = v->offsets;
    const char *src = v->data;
    char *dst = c->data;
    for (int64_t k = 0; k < n; k++) {
        int64_t j = idx ? (int64_t)idx[k0 + k] : k0 + k;
        int64_t s = so[j], len = so[j + 1] - s;
        if (len <= 16 && s + 16 <= src_cap && pos + 16 <= dst_cap) {
            uint64_t a, b;
            memcpy(&a, src + s, 8);
            memcpy(&b, src + s + 8, 8);
            memcpy(dst + pos, &a, 8);
            memcpy(dst + pos + 8, &b, 8);
        } else if (len > 0) {
            memcpy(dst + pos, src + s, (size_t)len);
        }
        pos += len;
        off[k] = pos;
    }
    c->data_len = pos;
}

static int place_strings(struct chunk_read *r, int64_t rows, int64_t nonnull, bool dict)
{
    struct df_column *c = r->out;
    const struct df__pq_values *v = dict ? &r->dict : &r->vals;
    int64_t bytes = 0;
    if (dict) {
        for (int64_t k = 0; k < nonnull; k++)
            bytes += v->offsets[r->idx[k] + 1] - v->offsets[r->idx[k]];
    } else {
        bytes = v->offsets[nonnull] - v->offsets[0];
    }
    int rc = reserve_strings(r, bytes);
    if (rc != FR_OK)
        return rc;
    if (nonnull == rows) {
        copy_strings(c, c->length, v, dict ? r->idx : NULL, 0, rows);
        return FR_OK;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < rows; i++) {
        int64_t row = c->length + i;
        if (!r->levels[i]) {
            if (set_null(c, row) != FR_OK)
                return fr_error_setk(r->err, FR_ENOSPACE, "", "no memory for a bitmap");
            c->offsets[row + 1] = c->data_len;
        } else {
            copy_strings(c, row, v, dict ? r->idx : NULL, k, 1);
            k++;
        }
    }
    return FR_OK;
}

/* Reallocates c's values (or offsets) for cap rows, not zeroed (every
 * slot is written by the pages, nulls' included; big buffers ask for huge
 * pages, df__alloc_large, as the CSV reader does: first touches fault 2 MiB
 * at a time), and its validity bitmap, the new rows valid. */
static int realloc_rows(struct df_column *c, int64_t cap)
{
    size_t w = df_type_width(c->type), elem = w ? w : sizeof(int64_t);
    void **slot = w ? &c->values : (void **)&c->offsets;
    int64_t *v = df__alloc_large((size_t)(cap + (w ? 0 : 1)) * elem);
    if (!v)
        return FR_ENOSPACE;
    if (*slot)
        memcpy(v, *slot, (size_t)(c->length + (w ? 0 : 1)) * elem);
    else if (!w)
        v[0] = 0;
    free(*slot);
    *slot = v;
    if (c->validity) { /* set_null's size: bits past the old capacity are still 1s */
        size_t old = (size_t)((c->capacity + 7) / 8) + 1, n = (size_t)((cap + 7) / 8) + 1;
        uint8_t *q = fr_try_realloc(c->validity, n);
        if (!q)
            return FR_ENOSPACE;
        memset(q + old, 0xff, n - old);
        c->validity = q;
    }
    c->capacity = cap;
    return FR_OK;
}

/* Room for `rows` more rows in r->out. Columns grow page by page as the
 * pages' value counts say, never sized by the footer's row count: by 8
 * times what the pages hold so far, capped at the read's rows, so that an
 * honest file gets exactly its rows after a copy or two of its first
 * pages (in validation, exactly the page: it is dropped once checked).
 * Charged before the allocation. */
static int reserve_rows(struct chunk_read *r, int64_t rows)
{
    struct df_column *c = r->out;
    int64_t need = c->length + rows;
    if (need <= c->capacity)
        return FR_OK;
    int64_t cap = need * 8 < r->read_rows ? need * 8 : r->read_rows;
    cap = cap > need && !r->discard ? cap : need;
    int64_t w = df_type_width(c->type) ? (int64_t)df_type_width(c->type) : 8;
    int64_t est = (cap - c->capacity) * w;
    r->col_charged += est; /* charged even when over the limit */
    int rc = df_exec_charge(r->ex, est, r->err);
    if (rc != FR_OK)
        return rc;
    int64_t before = df_column_bytes(c);
    if (realloc_rows(c, cap) != FR_OK)
        return fr_error_setk(r->err, FR_ENOSPACE, "", "no memory for %lld rows", (long long)cap);
    int64_t d = df_column_bytes(c) - before - est;
    r->col_charged += d;
    return df_exec_charge(r->ex, d, r->err);
}

/* A page of a fixed-width type whose uncompressed size is far above what
 * its values and their levels can take is malformed before it is
 * decompressed (a gigabyte of zeros for one value). */
static int check_page_size(struct chunk_read *r, const struct df__pq_page_header *h)
{
    int t = r->leaf->ptype;
    int64_t w = t == DF__PQ_BOOLEAN                       ? 1
                : t == DF__PQ_INT32 || t == DF__PQ_FLOAT  ? 4
                : t == DF__PQ_INT64 || t == DF__PQ_DOUBLE ? 8
                                                          : 0;
    /* w bytes a value, at most 4 more for its levels and the encodings'
     * overhead (block headers, bit widths), and a constant */
    if (w == 0 || h->num_values < 0 || h->uncompressed_size <= h->num_values * (w + 4) + 1024)
        return FR_OK;
    return fr_error_setk(r->err, FR_EDATA, "",
                         "a page of %lld values claims %lld bytes uncompressed, more than they "
                         "can take",
                         (long long)h->num_values, (long long)h->uncompressed_size);
}

/* A data page decoded: in validation its rows are counted against the
 * work budget and dropped, so memory holds one page at a time. */
static int page_done(struct chunk_read *r, int64_t rows)
{
    r->at += rows;
    if (!r->discard)
        return FR_OK;
    struct df_column *c = r->out;
    r->decoded += rows * (int64_t)(df_type_width(c->type) ? df_type_width(c->type) : 8) +
                  (c->type == DF_TYPE_STRING ? c->data_len : 0);
    c->length = 0;
    c->data_len = 0;
    c->null_count = 0;
    if (c->validity)
        memset(c->validity, 0xff, (size_t)((c->capacity + 7) / 8));
    if (r->work_limit > 0 && r->decoded > r->work_limit)
        return fr_error_setk(r->err, FR_ETOOLARGE, "payload-too-large",
                             "the file decodes to more than %lld bytes, the upload's limit",
                             (long long)r->work_limit);
    return FR_OK;
}

/* ---- pages ---------------------------------------------------------------- */

static int read_dict_page(struct chunk_read *r, const struct df__pq_page_header *h,
                          const uint8_t *p, int codec)
{
    if (r->has_dict || r->at > 0)
        return fr_error_setk(r->err, FR_EDATA, "", "a dictionary page after the first page");
    if (h->encoding != DF__PQ_PLAIN && h->encoding != DF__PQ_PLAIN_DICTIONARY)
        return fr_error_setk(r->err, FR_EVALIDATION, "unsupported-parquet",
                             "a dictionary page in encoding %d", h->encoding);
    const uint8_t *d = NULL;
    int rc = check_page_size(r, h);
    if (rc == FR_OK)
        rc = page_bytes(r, codec, p, (size_t)h->compressed_size, (size_t)h->uncompressed_size, &d);
    if (rc == FR_OK)
        rc = df__pq_decode_values(DF__PQ_PLAIN, d, (size_t)h->uncompressed_size, h->num_values,
                                  &r->dict, r->err);
    if (rc != FR_OK || r->leaf->type == DF_TYPE_STRING) {
        r->has_dict = rc == FR_OK;
        return rc;
    }
    size_t w = df_type_width(r->leaf->type);
    if ((rc = grow(r, &r->dict_conv, &r->dict_conv_cap, (size_t)h->num_values * w + 1)) != FR_OK)
        return rc;
    rc = df__pq_convert(r->leaf, &r->dict, 0, h->num_values, r->dict_conv, r->err);
    r->has_dict = rc == FR_OK;
    return rc;
}

/* Whether the levels p[0, n) start with one RLE run of 1s that covers
 * `rows` values (a page without nulls, as writers write it). */
static bool levels_all_set(const uint8_t *p, size_t n, int64_t rows)
{
    uint64_t h = 0;
    size_t pos = 0;
    for (int shift = 0; pos < n && pos < 5; shift += 7) {
        uint8_t b = p[pos++];
        h |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return !(h & 1) && (h >> 1) >= (uint64_t)rows && pos < n && p[pos] == 1;
    }
    return false;
}

/* Definition levels (width 1) of `rows` values: *nonnull = the 1s. The
 * levels are left undecoded when they are all 1s (nonnull == rows). */
static int read_levels(struct chunk_read *r, const uint8_t *p, size_t n, int64_t rows,
                       int64_t *nonnull)
{
    if (levels_all_set(p, n, rows)) {
        *nonnull = rows;
        return FR_OK;
    }
    size_t cap = r->levels_cap;
    int rc = grow(r, (void **)&r->levels, &cap, (size_t)rows * sizeof(uint32_t) + 4);
    r->levels_cap = cap;
    if (rc == FR_OK)
        rc = df__pq_rle_decode(p, n, 1, r->levels, rows, NULL, r->err);
    if (rc != FR_OK)
        return rc;
    int64_t k = 0;
    for (int64_t i = 0; i < rows; i++)
        k += r->levels[i] != 0;
    *nonnull = k;
    return FR_OK;
}

/* PLAIN byte arrays straight from the page into the column: the data
 * cannot exceed the page's bytes less the 4-byte lengths. */
static int place_plain_strings(struct chunk_read *r, const uint8_t *p, size_t n, int64_t rows,
                               int64_t nonnull)
{
    struct df_column *c = r->out;
    if ((uint64_t)nonnull > n / 4)
        return fr_error_setk(r->err, FR_EDATA, "", "PLAIN: %zu bytes cannot hold %lld strings", n,
                             (long long)nonnull);
    int rc = reserve_strings(r, (int64_t)(n - 4 * (size_t)nonnull));
    size_t pos = 0;
    int64_t k = 0; /* strings read */
    bool nulls = nonnull < rows;
    for (int64_t i = 0; rc == FR_OK && i < rows; i++) {
        int64_t row = c->length + i;
        if (nulls && !r->levels[i]) {
            if (set_null(c, row) != FR_OK)
                return fr_error_setk(r->err, FR_ENOSPACE, "", "no memory for a bitmap");
        } else {
            uint32_t len;
            if (n - pos < 4)
                return fr_error_setk(r->err, FR_EDATA, "", "PLAIN: strings truncated");
            memcpy(&len, p + pos, 4);
            pos += 4;
            /* the later strings' lengths must still fit: data stays in the reserve */
            if (len > n - pos || n - pos - len < 4 * (size_t)(nonnull - ++k))
                return fr_error_setk(r->err, FR_EDATA, "", "PLAIN: a string longer than the page");
            memcpy(c->data + c->data_len, p + pos, len);
            pos += len;
            c->data_len += len;
        }
        c->offsets[row + 1] = c->data_len;
    }
    return rc;
}

/* PLAIN fixed-width values read in place (no copy into r->vals). */
static int place_plain_fixed(struct chunk_read *r, const uint8_t *p, size_t n, int64_t rows,
                             int64_t nonnull)
{
    int t = r->leaf->ptype;
    size_t w = t == DF__PQ_INT32 || t == DF__PQ_FLOAT ? 4 : 8;
    if ((uint64_t)nonnull > n / w)
        return fr_error_setk(r->err, FR_EDATA, "", "PLAIN: %zu bytes cannot hold %lld values", n,
                             (long long)nonnull);
    struct df__pq_values view = {.type = t, .count = nonnull, .fixed = (void *)p};
    return place_fixed(r, rows, nonnull, false, &view);
}

static int read_values(struct chunk_read *r, int encoding, const uint8_t *p, size_t n, int64_t rows,
                       int64_t nonnull)
{
    bool dict = encoding == DF__PQ_PLAIN_DICTIONARY || encoding == DF__PQ_RLE_DICTIONARY;
    int t = r->leaf->ptype, rc;
    if (encoding == DF__PQ_PLAIN && t == DF__PQ_BYTE_ARRAY && r->leaf->type == DF_TYPE_STRING)
        return place_plain_strings(r, p, n, rows, nonnull);
    if (encoding == DF__PQ_PLAIN &&
        (t == DF__PQ_INT32 || t == DF__PQ_INT64 || t == DF__PQ_FLOAT || t == DF__PQ_DOUBLE))
        return place_plain_fixed(r, p, n, rows, nonnull);
    if (dict) {
        if (!r->has_dict)
            return fr_error_setk(r->err, FR_EDATA, "", "dictionary indices without a dictionary");
        size_t cap = r->idx_cap;
        rc = grow(r, (void **)&r->idx, &cap, (size_t)nonnull * sizeof(uint32_t) + 4);
        r->idx_cap = cap;
        if (rc == FR_OK)
            rc = df__pq_decode_dict_indices(p, n, nonnull, r->dict.count, r->idx, r->err);
    } else {
        rc = df__pq_decode_values(encoding, p, n, nonnull, &r->vals, r->err);
        if (rc == FR_OK && r->vals.count != nonnull)
            rc = fr_error_setk(r->err, FR_EDATA, "", "a page with fewer values than it says");
    }
    if (rc != FR_OK)
        return rc;
    return r->leaf->type == DF_TYPE_STRING ? place_strings(r, rows, nonnull, dict)
                                           : place_fixed(r, rows, nonnull, dict, &r->vals);
}

static int read_data_page(struct chunk_read *r, const struct df__pq_page_header *h,
                          const uint8_t *p, int codec)
{
    int64_t rows = h->num_values, nonnull = rows;
    if (rows > r->chunk_rows - r->at)
        return fr_error_setk(r->err, FR_EDATA, "", "pages hold more values than the chunk");
    const uint8_t *d = NULL;
    size_t dn = 0;
    int rc = check_page_size(r, h);
    if (rc == FR_OK)
        rc = reserve_rows(r, rows);
    if (rc != FR_OK)
        return rc;
    if (h->type == DF__PQ_DATA_PAGE) {
        dn = (size_t)h->uncompressed_size;
        rc = page_bytes(r, codec, p, (size_t)h->compressed_size, dn, &d);
        if (rc == FR_OK && r->leaf->optional) {
            if (h->def_encoding != DF__PQ_RLE)
                return fr_error_setk(r->err, FR_EVALIDATION, "unsupported-parquet",
                                     "definition levels in encoding %d", h->def_encoding);
            uint32_t len = dn >= 4 ? (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
                                         (uint32_t)d[3] << 24
                                   : UINT32_MAX;
            if (dn < 4 || len > dn - 4)
                return fr_error_setk(r->err, FR_EDATA, "", "definition levels truncated");
            rc = read_levels(r, d + 4, len, rows, &nonnull);
            d += 4 + len;
            dn -= 4 + (size_t)len;
        }
    } else {
        size_t lv = (size_t)(h->def_len + h->rep_len);
        rc = r->leaf->optional ? read_levels(r, p, (size_t)h->def_len, rows, &nonnull) : FR_OK;
        if (rc == FR_OK && r->leaf->optional && rows - nonnull != h->num_nulls)
            rc = fr_error_setk(r->err, FR_EDATA, "", "num_nulls differs from the levels");
        dn = (size_t)h->uncompressed_size - lv;
        if (rc == FR_OK)
            rc = page_bytes(r, h->is_compressed ? codec : DF__PQ_UNCOMPRESSED, p + lv,
                            (size_t)h->compressed_size - lv, dn, &d);
    }
    if (rc == FR_OK)
        rc = read_values(r, h->encoding, d, dn, rows, nonnull);
    if (rc == FR_OK) {
        r->out->length += rows;
        rc = page_done(r, rows);
    }
    return rc;
}

/* ---- chunks and row groups ------------------------------------------------ */

static int walk_pages(struct chunk_read *r, const struct df__pq_chunk *k, size_t len)
{
    size_t pos = 0;
    r->at = 0;
    while (r->at < r->chunk_rows) {
        int rc = df_exec_check_cancel(r->ex, r->err);
        if (rc != FR_OK)
            return rc;
        if (pos >= len)
            return fr_error_setk(r->err, FR_EDATA, "", "the chunk ends before its values");
        struct df__pq_page_header h;
        size_t used = 0;
        if ((rc = df__pq_page_header_parse(r->buf + pos, len - pos, &h, &used, r->err)) != FR_OK)
            return rc;
        pos += used;
        if (h.compressed_size > (int64_t)(len - pos))
            return fr_error_setk(r->err, FR_EDATA, "", "a page runs past the chunk's end");
        const uint8_t *p = r->buf + pos;
        pos += (size_t)h.compressed_size;
        if (h.type == DF__PQ_DICTIONARY_PAGE)
            rc = read_dict_page(r, &h, p, k->codec);
        else if (h.type == DF__PQ_DATA_PAGE || h.type == DF__PQ_DATA_PAGE_V2)
            rc = read_data_page(r, &h, p, k->codec);
        if (rc != FR_OK)
            return rc; /* other pages (index pages) are skipped */
    }
    return FR_OK;
}

static int read_chunk(struct chunk_read *r)
{
    const struct df__pq_chunk *k = &r->pq->rgs[r->rg].chunks[r->col];
    r->has_dict = false;
    if (k->num_values == 0)
        return FR_OK;
    size_t len = (size_t)k->compressed;
    int rc = grow(r, (void **)&r->buf, &r->buf_cap, len ? len : 1); /* reused across chunks */
    if (rc == FR_OK)
        rc = df__pq_read_full(r->pq->src, k->start, r->buf, len, r->err);
    if (rc == FR_OK)
        rc = walk_pages(r, k, len);
    return rc;
}

/* A new column read from row groups [rg0, rg0 + nrg), grown page by page. */
static int read_column(struct chunk_read *r, int rg0, int nrg)
{
    struct df_column *c = df_column_new(r->leaf->type, 0);
    r->out = c;
    r->col_charged += df_column_bytes(c);
    int rc = df_exec_charge(r->ex, df_column_bytes(c), r->err);
    for (int g = rg0; rc == FR_OK && g < rg0 + nrg; g++) {
        r->rg = g;
        r->chunk_rows = r->pq->rgs[g].num_rows;
        rc = read_chunk(r);
        if (rc != FR_OK)
            rc = rd_fail(r, rc);
    }
    if (rc == FR_OK && c->validity && c->null_count == 0) {
        free(c->validity);
        c->validity = NULL;
    }
    return rc;
}

static void reader_cleanup(struct chunk_read *r)
{
    free(r->buf);
    free(r->page);
    free(r->levels);
    free(r->idx);
    free(r->tmp);
    free(r->dict_conv);
    df__pq_values_cleanup(&r->vals);
    df__pq_values_cleanup(&r->dict);
    struct fr_error ignored;
    fr_error_init(&ignored);
    df_exec_charge(r->ex, -r->charged, &ignored);
}

/* df_parquet_read, or (v non-NULL) validation: pages dropped as decoded,
 * v->decoded counted against v->work_limit. */
static int read_table(df_parquet *pq, int rg_first, int n_rg, const int *columns, int ncolumns,
                      struct df_exec *ex, struct chunk_read *v, struct df_table **out,
                      struct fr_error *err)
{
    *out = NULL;
    int n = ncolumns < 0 ? pq->schema.nfields : ncolumns;
    if (rg_first < 0 || n_rg < 0 || rg_first > pq->nrg - n_rg)
        return fr_error_setk(err, FR_EINVAL, "", "row groups [%d, +%d) outside the file's %d",
                             rg_first, n_rg, pq->nrg);
    for (int j = 0; ncolumns >= 0 && j < ncolumns; j++)
        if (columns[j] < 0 || columns[j] >= pq->schema.nfields)
            return fr_error_setk(err, FR_EINVAL, "", "column %d outside the schema", columns[j]);
    int64_t rows = 0;
    for (int g = rg_first; g < rg_first + n_rg; g++)
        rows += pq->rgs[g].num_rows;
    if (rows > ((int64_t)1 << 40))
        return df__pq_meta_fail(err, pq->src, "", FR_EDATA, NULL,
                                "row groups of %lld rows: more than a file holds", (long long)rows);
    struct df_table *t = df_table_new();
    int rc = FR_OK;
    /* One reader for every column: its page buffers are reused. */
    struct chunk_read r = {.pq = pq, .ex = ex, .err = err};
    if (v) {
        r.discard = true;
        r.decoded = v->decoded;
        r.work_limit = v->work_limit;
    }
    df__pq_values_init(&r.vals, 0, 0);
    df__pq_values_init(&r.dict, 0, 0);
    r.vals.ex = r.dict.ex = ex;
    for (int j = 0; j < n && rc == FR_OK; j++) {
        int c = ncolumns < 0 ? j : columns[j];
        r.col = c;
        r.leaf = &pq->leaves[c];
        r.vals.type = r.dict.type = r.leaf->ptype;
        r.vals.type_length = r.dict.type_length = r.leaf->type_length;
        r.read_rows = rows;
        rc = read_column(&r, rg_first, n_rg);
        if (rc == FR_OK)
            df_table_add(t, pq->schema.fields[c].name, r.out);
        else
            df_column_unref(r.out);
        r.out = NULL;
    }
    reader_cleanup(&r);
    if (v)
        v->decoded = r.decoded;
    int64_t col_charged = r.col_charged;
    if (rc != FR_OK) {
        struct fr_error ignored;
        fr_error_init(&ignored);
        df_exec_charge(ex, -col_charged, &ignored);
        df_table_free(t);
        return rc;
    }
    t->nrows = v ? 0 : rows;
    *out = t;
    return FR_OK;
}

int df_parquet_read(df_parquet *pq, int rg_first, int n_rg, const int *columns, int ncolumns,
                    struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    return read_table(pq, rg_first, n_rg, columns, ncolumns, ex, NULL, out, err);
}

/* ---- path conveniences ---------------------------------------------------- */

int df_parquet_file_schema(const char *path, struct df_schema *out, int64_t *num_rows,
                           struct fr_error *err)
{
    struct df_file_source fs;
    int rc = df_file_source_open(&fs, path, err);
    if (rc != FR_OK)
        return rc;
    df_parquet *pq = NULL;
    rc = df_parquet_open(&fs.base, &pq, err);
    if (rc == FR_OK) {
        df_schema_copy(out, &pq->schema);
        if (num_rows)
            *num_rows = pq->num_rows;
    }
    df_parquet_free(pq);
    df_file_source_close(&fs);
    return rc;
}

int df_parquet_file_validate(const char *path, struct df_exec *ex, struct fr_error *err)
{
    struct df_file_source fs;
    int rc = df_file_source_open(&fs, path, err);
    if (rc != FR_OK)
        return rc;
    df_parquet *pq = NULL;
    rc = df_parquet_open(&fs.base, &pq, err);
    struct chunk_read budget = {.work_limit = DF_PARQUET_VALIDATE_MIN_WORK};
    if (rc == FR_OK && fs.base.size > budget.work_limit / DF_PARQUET_VALIDATE_RATIO)
        budget.work_limit = fs.base.size * DF_PARQUET_VALIDATE_RATIO;
    for (int g = 0; rc == FR_OK && g < pq->nrg; g++) {
        struct df_table *t = NULL;
        int64_t before = ex->mem_used;
        rc = read_table(pq, g, 1, NULL, -1, ex, &budget, &t, err);
        df_table_free(t);
        struct fr_error ignored;
        fr_error_init(&ignored);
        df_exec_charge(ex, before - ex->mem_used, &ignored);
    }
    df_parquet_free(pq);
    df_file_source_close(&fs);
    return rc;
}
