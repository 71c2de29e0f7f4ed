/* engine_parquet_thrift: the Thrift compact protocol reader the Parquet
 * footer and page headers are written in, over a bounded buffer of hostile
 * bytes (failures are sticky; see engine_parquet_meta_int.h), and the page
 * header parser built on it. */
#include "engine_parquet_meta_int.h"

#include <string.h>

void df__tc_init(struct df__tc *r, const uint8_t *p, size_t n)
{
    r->p = p;
    r->end = p + n;
    r->depth = 0;
    r->failed = false;
    r->why = NULL;
}

bool df__tc_fail(struct df__tc *r, const char *why)
{
    if (!r->failed) {
        r->failed = true;
        r->why = why;
    }
    r->p = r->end;
    return false;
}

int df__tc_byte(struct df__tc *r)
{
    if (r->failed || r->p >= r->end) {
        df__tc_fail(r, "truncated");
        return -1;
    }
    return *r->p++;
}

int64_t df__tc_varint(struct df__tc *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        int b = df__tc_byte(r);
        if (b < 0)
            return 0;
        if (shift == 63 && (b & 0x7e)) {
            df__tc_fail(r, "varint overflows 64 bits");
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return (int64_t)v;
    }
    df__tc_fail(r, "varint longer than 10 bytes");
    return 0;
}

int64_t df__tc_i64(struct df__tc *r)
{
    uint64_t u = (uint64_t)df__tc_varint(r);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

int32_t df__tc_i32(struct df__tc *r)
{
    int64_t v = df__tc_i64(r);
    if (v < INT32_MIN || v > INT32_MAX) {
        df__tc_fail(r, "i32 out of range");
        return 0;
    }
    return (int32_t)v;
}

double df__tc_double(struct df__tc *r)
{
    if (r->failed || r->end - r->p < 8) {
        df__tc_fail(r, "truncated");
        return 0;
    }
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--)
        u = (u << 8) | r->p[i];
    r->p += 8;
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

bool df__tc_bool(struct df__tc *r, int type)
{
    if (type == DF__TC_TRUE)
        return true;
    if (type == DF__TC_FALSE)
        return false;
    return df__tc_byte(r) == DF__TC_TRUE; /* a list element: one byte */
}

void df__tc_binary(struct df__tc *r, const uint8_t **p, size_t *n)
{
    int64_t len = df__tc_varint(r);
    *p = r->p;
    *n = 0;
    if (r->failed)
        return;
    if (len < 0 || len > r->end - r->p) {
        df__tc_fail(r, "binary longer than the bytes left");
        return;
    }
    *n = (size_t)len;
    r->p += len;
}

void df__tc_list(struct df__tc *r, int *elem_type, int64_t *count)
{
    int b = df__tc_byte(r);
    *elem_type = b < 0 ? 0 : b & 0x0f;
    *count = 0;
    if (b < 0)
        return;
    int64_t n = (b >> 4) & 0x0f;
    if (n == 15)
        n = df__tc_varint(r);
    if (r->failed)
        return;
    /* Every element takes at least one byte, whatever its type. */
    if (n < 0 || n > r->end - r->p) {
        df__tc_fail(r, "list longer than the bytes left");
        return;
    }
    if (*elem_type == DF__TC_STOP || *elem_type > DF__TC_STRUCT) {
        df__tc_fail(r, "list of an unknown type");
        return;
    }
    *count = n;
}

bool df__tc_enter(struct df__tc *r)
{
    if (r->failed)
        return false;
    if (++r->depth > DF__TC_MAX_DEPTH)
        return df__tc_fail(r, "nested too deeply");
    return true;
}

void df__tc_leave(struct df__tc *r)
{
    r->depth--;
}

bool df__tc_field(struct df__tc *r, int *last, int *id, int *type)
{
    int b = df__tc_byte(r);
    if (b <= 0) /* STOP or truncated */
        return false;
    *type = b & 0x0f;
    int delta = (b >> 4) & 0x0f;
    if (*type > DF__TC_STRUCT || *type == DF__TC_STOP)
        return df__tc_fail(r, "field of an unknown type");
    if (delta)
        *id = *last + delta;
    else
        *id = (int)df__tc_i64(r);
    if (r->failed)
        return false;
    if (*id < INT16_MIN || *id > INT16_MAX)
        return df__tc_fail(r, "field id out of range");
    *last = *id;
    return true;
}

bool df__tc_is(int type, int want)
{
    if (want == DF__TC_TRUE || want == DF__TC_FALSE)
        return type == DF__TC_TRUE || type == DF__TC_FALSE;
    if (want == DF__TC_LIST)
        return type == DF__TC_LIST || type == DF__TC_SET;
    return type == want;
}

static void tc_skip_struct(struct df__tc *r)
{
    if (!df__tc_enter(r))
        return;
    int last = 0, id, type;
    while (df__tc_field(r, &last, &id, &type))
        df__tc_skip(r, type);
    df__tc_leave(r);
}

static void tc_skip_map(struct df__tc *r)
{
    int64_t n = df__tc_varint(r);
    if (r->failed || n == 0)
        return;
    int kv = df__tc_byte(r);
    if (n < 0 || n > (r->end - r->p) / 2 || kv < 0) {
        df__tc_fail(r, "map longer than the bytes left");
        return;
    }
    int kt = kv >> 4, vt = kv & 0x0f;
    if (kt == DF__TC_STOP || kt > DF__TC_STRUCT || vt == DF__TC_STOP || vt > DF__TC_STRUCT) {
        df__tc_fail(r, "map of an unknown type");
        return;
    }
    for (int64_t i = 0; i < n && !r->failed; i++) {
        df__tc_skip(r, kt);
        df__tc_skip(r, vt);
    }
}

void df__tc_skip(struct df__tc *r, int type)
{
    const uint8_t *p;
    size_t n;
    int64_t count;
    int et;
    if (r->failed)
        return;
    switch (type) {
    case DF__TC_TRUE:
    case DF__TC_FALSE:
        return; /* a field's bool is in its header; list bools are handled below */
    case DF__TC_BYTE:
        df__tc_byte(r);
        return;
    case DF__TC_I16:
    case DF__TC_I32:
    case DF__TC_I64:
        df__tc_varint(r);
        return;
    case DF__TC_DOUBLE:
        df__tc_double(r);
        return;
    case DF__TC_BINARY:
        df__tc_binary(r, &p, &n);
        return;
    case DF__TC_LIST:
    case DF__TC_SET:
        df__tc_list(r, &et, &count);
        if (!df__tc_enter(r))
            return;
        for (int64_t i = 0; i < count && !r->failed; i++) {
            if (et == DF__TC_TRUE || et == DF__TC_FALSE)
                df__tc_byte(r);
            else
                df__tc_skip(r, et);
        }
        df__tc_leave(r);
        return;
    case DF__TC_MAP:
        if (df__tc_enter(r)) {
            tc_skip_map(r);
            df__tc_leave(r);
        }
        return;
    case DF__TC_STRUCT:
        tc_skip_struct(r);
        return;
    default:
        df__tc_fail(r, "value of an unknown type");
    }
}

/* ---- page headers --------------------------------------------------------- */

/* DataPageHeader (v1), DictionaryPageHeader and DataPageHeaderV2 share the
 * reader: fields are told apart by the header kind. */
static void page_sub(struct df__tc *r, int kind, struct df__pq_page_header *h)
{
    if (!df__tc_enter(r))
        return;
    int last = 0, id, t;
    while (df__tc_field(r, &last, &id, &t)) {
        bool i32 = df__tc_is(t, DF__TC_I32);
        if (id == 1 && i32)
            h->num_values = df__tc_i32(r);
        else if (kind == 2 && id == 2 && i32) /* v2: num_nulls */
            h->num_nulls = df__tc_i32(r);
        else if (kind != 2 && id == 2 && i32)
            h->encoding = df__tc_i32(r);
        else if (kind == 0 && id == 3 && i32)
            h->def_encoding = df__tc_i32(r);
        else if (kind == 2 && id == 4 && i32)
            h->encoding = df__tc_i32(r);
        else if (kind == 2 && id == 5 && i32)
            h->def_len = df__tc_i32(r);
        else if (kind == 2 && id == 6 && i32)
            h->rep_len = df__tc_i32(r);
        else if (kind == 2 && id == 7 && df__tc_is(t, DF__TC_TRUE))
            h->is_compressed = df__tc_bool(r, t);
        else
            df__tc_skip(r, t);
    }
    df__tc_leave(r);
}

int df__pq_page_header_parse(const uint8_t *p, size_t n, struct df__pq_page_header *h, size_t *used,
                             struct fr_error *err)
{
    memset(h, 0, sizeof(*h));
    h->type = -1;
    h->uncompressed_size = h->compressed_size = -1;
    h->num_values = -1;
    h->is_compressed = true;
    struct df__tc r;
    df__tc_init(&r, p, n);
    int last = 0, id, t;
    bool sub = false;
    df__tc_enter(&r);
    while (df__tc_field(&r, &last, &id, &t)) {
        bool i32 = df__tc_is(t, DF__TC_I32);
        if (id == 1 && i32)
            h->type = df__tc_i32(&r);
        else if (id == 2 && i32)
            h->uncompressed_size = df__tc_i32(&r);
        else if (id == 3 && i32)
            h->compressed_size = df__tc_i32(&r);
        else if ((id == 5 || id == 7 || id == 8) && t == DF__TC_STRUCT) {
            page_sub(&r, id == 5 ? 0 : id == 7 ? 1 : 2, h);
            sub = true;
        } else
            df__tc_skip(&r, t);
    }
    if (r.failed)
        return strcmp(r.why, "truncated") == 0
                   ? fr_error_setk(err, FR_EDATA, "", "page header truncated")
                   : fr_error_setk(err, FR_EDATA, "", "page header malformed (%s)", r.why);
    *used = (size_t)(r.p - p);
    if (h->type < 0 || h->uncompressed_size < 0 || h->compressed_size < 0)
        return fr_error_setk(err, FR_EDATA, "", "page header without its type or sizes");
    if (h->uncompressed_size > DF__PQ_MAX_PAGE_BYTES || h->compressed_size > DF__PQ_MAX_PAGE_BYTES)
        return fr_error_setk(err, FR_EDATA, "", "page larger than 1 GiB");
    bool data = h->type == DF__PQ_DATA_PAGE || h->type == DF__PQ_DATA_PAGE_V2 ||
                h->type == DF__PQ_DICTIONARY_PAGE;
    if (data && (!sub || h->num_values < 0))
        return fr_error_setk(err, FR_EDATA, "", "page header without its value count");
    if (h->type == DF__PQ_DATA_PAGE_V2 &&
        (h->def_len < 0 || h->rep_len < 0 || h->num_nulls < 0 || h->num_nulls > h->num_values ||
         h->def_len + h->rep_len > h->compressed_size ||
         h->def_len + h->rep_len > h->uncompressed_size))
        return fr_error_setk(err, FR_EDATA, "", "page header v2 with bad level lengths");
    return FR_OK;
}
