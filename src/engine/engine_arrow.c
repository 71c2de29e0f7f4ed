/* engine_arrow: a table as an Arrow IPC stream (the encapsulated message
 * format): a schema message, record batches of row ranges, the end-of-stream
 * marker. The flatbuffers are laid out front to back by a small builder (a
 * table's vtable before it, its children after it), every scalar aligned. */
#include "engine.h"
#include "engine_io_int.h"

#include <stdlib.h>
#include <string.h>

enum { MSG_SCHEMA = 1, MSG_RECORD_BATCH = 3, METADATA_V5 = 4 };
enum { T_INT = 2, T_FLOAT = 3, T_BOOL = 6, T_DATE = 8, T_TIMESTAMP = 10, T_LARGE_UTF8 = 20 };
#define MAX_FIELDS 8

/* ---- the flatbuffer builder (positions, never pointers: the buffer moves) ---- */

/* A table field: size 0 = absent; an offset field (is_off) is patched later. */
struct fb_field {
    int size;
    uint64_t value;
    bool is_off;
};

static void put_bytes(struct fr_buf *b, const void *p, size_t n)
{
    fr_buf_append(b, p, n);
}

static void put_le(struct fr_buf *b, uint64_t v, int size)
{
    uint8_t le[8];
    for (int i = 0; i < size; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    put_bytes(b, le, (size_t)size);
}

static void pad_to(struct fr_buf *b, size_t align, size_t rem)
{
    static const uint8_t zeros[8];
    while (b->len % align != rem)
        put_bytes(b, zeros, 1);
}

static void set_le32(struct fr_buf *b, size_t pos, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b->data[pos + (size_t)i] = (char)(uint8_t)(v >> (8 * i));
}

/* Points the offset field at `at` to the object at `target` (after it). */
static void fb_patch(struct fr_buf *b, size_t at, size_t target)
{
    set_le32(b, at, (uint32_t)(target - at));
}

/* Writes a vtable then its table; fpos[i] = the position of field i (for
 * fb_patch). Returns the table's position. */
static size_t fb_table(struct fr_buf *b, const struct fb_field *f, int n, size_t *fpos)
{
    pad_to(b, 4, 0);
    size_t vt = b->len, vt_size = 4 + 2 * (size_t)n;
    size_t table = vt + vt_size + ((4 - vt_size % 4) % 4);
    uint16_t off[MAX_FIELDS];
    size_t cur = 4; /* after the soffset to the vtable */
    for (int i = 0; i < n; i++) {
        off[i] = 0;
        if (f[i].size == 0)
            continue;
        while ((table + cur) % (size_t)f[i].size)
            cur++;
        off[i] = (uint16_t)cur;
        cur += (size_t)f[i].size;
    }
    put_le(b, vt_size, 2);
    put_le(b, cur, 2);
    for (int i = 0; i < n; i++)
        put_le(b, off[i], 2);
    pad_to(b, 4, 0);
    put_le(b, (uint32_t)(table - vt), 4); /* vtable = table - soffset */
    for (int i = 0; i < n; i++) {
        if (f[i].size == 0)
            continue;
        pad_to(b, (size_t)f[i].size, 0);
        fpos[i] = b->len;
        put_le(b, f[i].value, f[i].size);
    }
    pad_to(b, 4, 0);
    return table;
}

static size_t fb_string(struct fr_buf *b, const char *s)
{
    pad_to(b, 4, 0);
    size_t at = b->len, n = strlen(s);
    put_le(b, n, 4);
    put_bytes(b, s, n + 1);
    return at;
}

/* A vector of n offsets (placeholders at the returned position + 4 + 4i). */
static size_t fb_offset_vector(struct fr_buf *b, int n)
{
    pad_to(b, 4, 0);
    size_t at = b->len;
    put_le(b, (uint64_t)n, 4);
    for (int i = 0; i < n; i++)
        put_le(b, 0, 4);
    return at;
}

/* A vector of n structs of two int64 each (FieldNode, Buffer). */
static size_t fb_pair_vector(struct fr_buf *b, const int64_t *pairs, int n)
{
    pad_to(b, 8, 4); /* the elements after the length are 8-aligned */
    size_t at = b->len;
    put_le(b, (uint64_t)n, 4);
    for (int i = 0; i < 2 * n; i++)
        put_le(b, (uint64_t)pairs[i], 8);
    return at;
}

/* ---- messages ---- */

/* The root offset then the Message table; header written by the caller at
 * the returned patch position. */
static size_t message_begin(struct fr_buf *b, uint8_t header_type, int64_t body_len)
{
    put_le(b, 0, 4); /* root offset */
    struct fb_field f[4] = {{2, METADATA_V5, false},
                            {1, header_type, false},
                            {4, 0, true},
                            {8, (uint64_t)body_len, false}};
    size_t fpos[4];
    size_t table = fb_table(b, f, 4, fpos);
    fb_patch(b, 0, table);
    return fpos[2];
}

/* Appends the framing (continuation, padded length), the metadata, padding. */
static void frame(struct fr_buf *out, const struct fr_buf *meta)
{
    size_t padded = (meta->len + 7) & ~(size_t)7;
    put_le(out, 0xFFFFFFFFu, 4);
    put_le(out, (uint64_t)padded, 4);
    put_bytes(out, meta->data, meta->len);
    static const uint8_t zeros[8];
    put_bytes(out, zeros, padded - meta->len);
}

/* The type table of a column; its union tag in *tag. */
static size_t field_type(struct fr_buf *b, df_type t, uint8_t *tag)
{
    size_t pos[2];
    switch (t) {
    case DF_TYPE_BOOL:
        *tag = T_BOOL;
        return fb_table(b, NULL, 0, pos);
    case DF_TYPE_INT64: {
        *tag = T_INT;
        struct fb_field f[2] = {{4, 64, false}, {1, 1, false}};
        return fb_table(b, f, 2, pos);
    }
    case DF_TYPE_FLOAT64: {
        *tag = T_FLOAT;
        struct fb_field f[1] = {{2, 2, false}}; /* DOUBLE */
        return fb_table(b, f, 1, pos);
    }
    case DF_TYPE_DATE: {
        *tag = T_DATE;
        struct fb_field f[1] = {{2, 0, false}}; /* DAY (the default is MILLISECOND) */
        return fb_table(b, f, 1, pos);
    }
    case DF_TYPE_TIMESTAMP: {
        *tag = T_TIMESTAMP;
        struct fb_field f[2] = {{2, 2, false}, {4, 0, true}}; /* MICROSECOND, "UTC" */
        size_t table = fb_table(b, f, 2, pos);
        fb_patch(b, pos[1], fb_string(b, "UTC"));
        return table;
    }
    default:
        *tag = T_LARGE_UTF8;
        return fb_table(b, NULL, 0, pos);
    }
}

static size_t schema_field(struct fr_buf *b, const char *name, df_type type)
{
    struct fb_field f[6] = {{4, 0, true}, {1, 1, false}, {1, 0, false},
                            {4, 0, true}, {0, 0, false}, {4, 0, true}};
    uint8_t tag = 0; /* the type's union tag: set once its table is written */
    size_t pos[6];
    size_t table = fb_table(b, f, 6, pos);
    fb_patch(b, pos[0], fb_string(b, name));
    size_t type_table = field_type(b, type, &tag);
    b->data[pos[2]] = (char)tag;
    fb_patch(b, pos[3], type_table);
    fb_patch(b, pos[5], fb_offset_vector(b, 0));
    return table;
}

void df_arrow_write_schema(const struct df_table *t, struct fr_buf *out)
{
    struct fr_buf meta;
    fr_buf_init(&meta);
    size_t header_at = message_begin(&meta, MSG_SCHEMA, 0);
    struct fb_field f[2] = {{2, 0, false}, {4, 0, true}}; /* Little, fields */
    size_t pos[2];
    size_t schema = fb_table(&meta, f, 2, pos);
    fb_patch(&meta, header_at, schema);
    size_t vec = fb_offset_vector(&meta, t->ncols);
    fb_patch(&meta, pos[1], vec);
    for (int i = 0; i < t->ncols; i++) {
        size_t field = schema_field(&meta, t->names[i], t->cols[i]->type);
        fb_patch(&meta, vec + 4 + 4 * (size_t)i, field);
    }
    frame(out, &meta);
    fr_buf_cleanup(&meta);
}

void df_arrow_write_eos(struct fr_buf *out)
{
    put_le(out, 0xFFFFFFFFu, 4);
    put_le(out, 0, 4);
}

/* ---- record batches ---- */

static int64_t pad8(int64_t n)
{
    return (n + 7) & ~(int64_t)7;
}

static int64_t nulls_in(const struct df_column *c, int64_t start, int64_t n)
{
    if (!c->validity || c->null_count == 0)
        return 0;
    int64_t valid = 0, i = start, end = start + n;
    for (; i < end && (i & 7); i++)
        valid += df_column_is_valid(c, i);
    for (; i + 64 <= end; i += 64) {
        uint64_t w;
        memcpy(&w, c->validity + (i >> 3), 8);
        valid += __builtin_popcountll(w);
    }
    for (; i < end; i++)
        valid += df_column_is_valid(c, i);
    return n - valid;
}

/* The buffers of one column: their lengths (unpadded) in len[0..nbuf). */
static int column_buffers(const struct df_column *c, int64_t n, int64_t nulls, int64_t start,
                          int64_t *len)
{
    len[0] = nulls > 0 ? (n + 7) / 8 : 0;
    switch (c->type) {
    case DF_TYPE_BOOL:
        len[1] = (n + 7) / 8;
        return 2;
    case DF_TYPE_DATE:
        len[1] = 4 * n;
        return 2;
    case DF_TYPE_STRING:
        len[1] = 8 * (n + 1);
        len[2] = c->offsets[start + n] - c->offsets[start];
        return 3;
    default:
        len[1] = 8 * n;
        return 2;
    }
}

/* Bits [start, start+n) of src, re-based to bit 0, into dst (zeroed, the
 * bits past n stay 0). */
static void copy_bits(uint8_t *dst, const uint8_t *src, int64_t start, int64_t n)
{
    if ((start & 7) == 0) {
        memcpy(dst, src + (start >> 3), (size_t)((n + 7) / 8));
        if (n & 7)
            dst[n >> 3] &= (uint8_t)((1u << (n & 7)) - 1);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t j = start + i;
        if ((src[j >> 3] >> (j & 7)) & 1)
            dst[i >> 3] |= (uint8_t)(1u << (i & 7));
    }
}

static void pack_bools(uint8_t *dst, const uint8_t *values, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint8_t *v = values + i;
        dst[i >> 3] =
            (uint8_t)((v[0] != 0) | (v[1] != 0) << 1 | (v[2] != 0) << 2 | (v[3] != 0) << 3 |
                      (v[4] != 0) << 4 | (v[5] != 0) << 5 | (v[6] != 0) << 6 | (v[7] != 0) << 7);
    }
    for (; i < n; i++)
        if (values[i])
            dst[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/* The values (buffer k >= 1) of rows [start, start+n) of c into dst. */
static void fill_buffer(uint8_t *dst, const struct df_column *c, int k, int64_t start, int64_t n)
{
    if (c->type == DF_TYPE_BOOL) {
        pack_bools(dst, (const uint8_t *)c->values + start, n);
    } else if (c->type == DF_TYPE_STRING && k == 1) {
        int64_t base = c->offsets[start];
        for (int64_t i = 0; i <= n; i++) {
            int64_t o = c->offsets[start + i] - base;
            memcpy(dst + 8 * i, &o, 8);
        }
    } else if (c->type == DF_TYPE_STRING) {
        int64_t base = c->offsets[start];
        memcpy(dst, c->data + base, (size_t)(c->offsets[start + n] - base));
    } else {
        size_t w = df_type_width(c->type);
        if (n > 0)
            memcpy(dst, (const char *)c->values + (size_t)start * w, (size_t)n * w);
    }
}

/* Zeroes the values of the null slots among rows [start, start+n) in dst
 * (the batch's buffer 1): columns keep them zero, this makes sure of it. */
static void zero_nulls(uint8_t *dst, const struct df_column *c, int64_t start, int64_t n)
{
    size_t w = df_type_width(c->type);
    for (int64_t i = 0; i < n; i++) {
        if (df_column_is_valid(c, start + i))
            continue;
        if (c->type == DF_TYPE_BOOL)
            dst[i >> 3] &= (uint8_t) ~(1u << (i & 7));
        else
            memset(dst + (size_t)i * w, 0, w);
    }
}

/* Room for n more bytes, not zeroed (the caller writes every one); returns
 * where they start (b->len grows). */
static uint8_t *buf_extend_raw(struct fr_buf *b, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap * 2 > b->len + n + 1 ? b->cap * 2 : b->len + n + 1;
        b->data = fr_xrealloc(b->data, cap);
        b->cap = cap;
    }
    uint8_t *p = (uint8_t *)b->data + b->len;
    b->len += n;
    b->data[b->len] = '\0';
    return p;
}

struct batch_layout {
    int64_t *nodes;   /* 2 per column: length, null_count */
    int64_t *buffers; /* 2 per buffer: offset, length */
    int nbuffers;
    int64_t body_len;
};

static void batch_layout(const struct df_table *t, int64_t start, int64_t n, struct batch_layout *l)
{
    l->nodes = fr_xcalloc((size_t)(2 * t->ncols + 1), sizeof(int64_t));
    l->buffers = fr_xcalloc((size_t)(6 * t->ncols + 1), sizeof(int64_t));
    l->nbuffers = 0;
    l->body_len = 0;
    for (int c = 0; c < t->ncols; c++) {
        int64_t nulls = nulls_in(t->cols[c], start, n), len[3];
        l->nodes[2 * c] = n;
        l->nodes[2 * c + 1] = nulls;
        int nb = column_buffers(t->cols[c], n, nulls, start, len);
        for (int k = 0; k < nb; k++) {
            l->buffers[2 * l->nbuffers] = l->body_len;
            l->buffers[2 * l->nbuffers + 1] = len[k];
            l->nbuffers++;
            l->body_len += pad8(len[k]);
        }
    }
}

static void batch_metadata(const struct df_table *t, int64_t n, const struct batch_layout *l,
                           struct fr_buf *meta)
{
    size_t header_at = message_begin(meta, MSG_RECORD_BATCH, l->body_len);
    struct fb_field f[3] = {{8, (uint64_t)n, false}, {4, 0, true}, {4, 0, true}};
    size_t pos[3];
    size_t batch = fb_table(meta, f, 3, pos);
    fb_patch(meta, header_at, batch);
    fb_patch(meta, pos[1], fb_pair_vector(meta, l->nodes, t->ncols));
    fb_patch(meta, pos[2], fb_pair_vector(meta, l->buffers, l->nbuffers));
}

/* new: rows [start, start + n) of t with invalid UTF-8 in its strings
 * replaced (utf8 must be valid: readers refuse other bytes), or NULL when
 * they are valid. */
static struct df_table *repaired_rows(const struct df_table *t, int64_t start, int64_t n)
{
    struct df_table *fixed = NULL;
    for (int c = 0; c < t->ncols; c++) {
        struct df_column *r = df__utf8_repaired(t->cols[c], start, n);
        if (!r)
            continue;
        if (!fixed)
            fixed = df_table_slice(t, start, n);
        df_column_unref(fixed->cols[c]);
        fixed->cols[c] = r;
    }
    return fixed;
}

void df_arrow_write_batch(const struct df_table *t, int64_t start, int64_t n, struct fr_buf *out)
{
    struct df_table *fixed = repaired_rows(t, start, n);
    if (fixed) {
        t = fixed;
        start = 0;
    }
    struct batch_layout l;
    batch_layout(t, start, n, &l);
    struct fr_buf meta;
    fr_buf_init(&meta);
    batch_metadata(t, n, &l, &meta);
    frame(out, &meta);
    fr_buf_cleanup(&meta);
    /* every byte is written: bit buffers are zeroed first (bits are or-ed
     * in), the others copied, then their padding zeroed */
    uint8_t *body = buf_extend_raw(out, (size_t)l.body_len);
    int b = 0;
    for (int c = 0; c < t->ncols; c++) {
        const struct df_column *col = t->cols[c];
        int64_t len[3];
        int nb = column_buffers(col, n, l.nodes[2 * c + 1], start, len);
        for (int k = 0; k < nb; k++, b++) {
            uint8_t *dst = body + l.buffers[2 * b];
            int64_t blen = l.buffers[2 * b + 1], padded = pad8(blen);
            if (k == 0 || col->type == DF_TYPE_BOOL)
                memset(dst, 0, (size_t)padded);
            else if (padded > blen)
                memset(dst + blen, 0, (size_t)(padded - blen));
            if (k == 0 && len[0] > 0)
                copy_bits(dst, col->validity, start, n);
            else if (k > 0)
                fill_buffer(dst, col, k, start, n);
            if (k == 1 && len[0] > 0 && col->type != DF_TYPE_STRING)
                zero_nulls(dst, col, start, n);
        }
    }
    free(l.nodes);
    free(l.buffers);
    df_table_free(fixed);
}
