/* Tests of src/engine/engine_arrow.c: the framing of the messages (the
 * continuation, lengths, 8-byte alignment, the end marker), the schema read
 * back by a tiny flatbuffer reader of the test's own, and every buffer of a
 * record batch byte by byte (bitmaps re-based, offsets from 0, null slots 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

/* ---- a tiny flatbuffer reader (positions into one message's metadata) ---- */

struct fb {
    const uint8_t *d;
    size_t len;
};

static uint64_t rd(const struct fb *b, size_t pos, int size)
{
    assert_true(pos + (size_t)size <= b->len);
    assert_int_equal(pos % (size_t)size, 0); /* every scalar aligned to its size */
    uint64_t v = 0;
    for (int i = size - 1; i >= 0; i--)
        v = v << 8 | b->d[pos + (size_t)i];
    return v;
}

/* The position of field id of the table at t, 0 when absent. */
static size_t field(const struct fb *b, size_t t, int id)
{
    size_t vt = t - (size_t)(int32_t)rd(b, t, 4);
    size_t vt_size = rd(b, vt, 2);
    if (4 + 2 * (size_t)id >= vt_size)
        return 0;
    size_t off = rd(b, vt + 4 + 2 * (size_t)id, 2);
    return off ? t + off : 0;
}

static uint64_t scalar(const struct fb *b, size_t t, int id, int size, uint64_t dflt)
{
    size_t at = field(b, t, id);
    return at ? rd(b, at, size) : dflt;
}

static size_t deref(const struct fb *b, size_t at)
{
    assert_true(at != 0);
    return at + rd(b, at, 4);
}

/* A subtable, vector or string field: its target's position. */
static size_t child(const struct fb *b, size_t t, int id)
{
    return deref(b, field(b, t, id));
}

static const char *string_at(const struct fb *b, size_t s, size_t *n)
{
    *n = rd(b, s, 4);
    assert_int_equal(b->d[s + 4 + *n], 0);
    return (const char *)b->d + s + 4;
}

/* ---- the stream's messages ---- */

struct msg {
    struct fb meta;
    size_t root;         /* the Message table */
    const uint8_t *body; /* after the metadata */
    int64_t body_len;    /* the Message's bodyLength */
    size_t end;          /* the position after the message in the stream */
};

static struct msg read_msg(const struct fr_buf *s, size_t pos)
{
    const uint8_t *p = (const uint8_t *)s->data + pos;
    assert_int_equal(pos % 8, 0);
    assert_true(pos + 8 <= s->len);
    assert_memory_equal(p, "\xff\xff\xff\xff", 4);
    uint32_t meta_len =
        (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    assert_true(meta_len > 0);
    assert_int_equal(meta_len % 8, 0); /* the padding is counted */
    struct msg m = {.meta = {p + 8, meta_len}};
    m.root = rd(&m.meta, 0, 4);                            /* the root offset, at 0 */
    assert_int_equal(scalar(&m.meta, m.root, 0, 2, 0), 4); /* MetadataVersion V5 */
    m.body_len = (int64_t)scalar(&m.meta, m.root, 3, 8, 0);
    assert_int_equal(m.body_len % 8, 0);
    m.body = p + 8 + meta_len;
    m.end = pos + 8 + meta_len + (size_t)m.body_len;
    assert_true(m.end <= s->len);
    return m;
}

static struct df_table *sample(void)
{
    struct df_table *t = df_table_new();
    struct df_column *b = df_column_new(DF_TYPE_BOOL, 0), *i = df_column_new(DF_TYPE_INT64, 0),
                     *f = df_column_new(DF_TYPE_FLOAT64, 0), *s = df_column_new(DF_TYPE_STRING, 0),
                     *d = df_column_new(DF_TYPE_DATE, 0), *ts = df_column_new(DF_TYPE_TIMESTAMP, 0);
    for (int r = 0; r < 20; r++) {
        if (r % 4 == 1)
            df_column_append_null(b);
        else
            df_column_append_bool(b, r % 3 == 0);
        if (r == 5 || r == 12)
            df_column_append_null(i);
        else
            df_column_append_int64(i, (int64_t)r * 100 - 7);
        df_column_append_float64(f, r + 0.5);
        char w[8];
        int n = r % 3;
        memset(w, 'a' + r, sizeof(w));
        if (r == 6)
            df_column_append_null(s);
        else
            df_column_append_string(s, w, n);
        df_column_append_int32(d, 19000 + r);
        df_column_append_int64(ts, (int64_t)r * 1000001);
    }
    /* nulls over values (set_null keeps the value bytes): the batch must zero them */
    df_column_set_null(b, 6);
    df_column_set_null(f, 4);
    df_column_set_null(d, 7);
    df_column_set_null(ts, 15);
    df_table_add(t, "flag", b);
    df_table_add(t, "n", i);
    df_table_add(t, "x", f);
    df_table_add(t, "name", s);
    df_table_add(t, "day", d);
    df_table_add(t, "at", ts);
    return t;
}

static void test_schema(void **state)
{
    (void)state;
    struct df_table *t = sample();
    struct fr_buf out;
    fr_buf_init(&out);
    df_arrow_write_schema(t, &out);
    struct msg m = read_msg(&out, 0);
    assert_int_equal(m.end, out.len);
    assert_int_equal(m.body_len, 0);
    assert_int_equal(scalar(&m.meta, m.root, 1, 1, 0), 1); /* header: Schema */
    size_t schema = child(&m.meta, m.root, 2);
    assert_int_equal(scalar(&m.meta, schema, 0, 2, 0), 0); /* Little */
    size_t fields = child(&m.meta, schema, 1);
    assert_int_equal(rd(&m.meta, fields, 4), 6);
    static const uint8_t tags[] = {6,  2, 3,
                                   20, 8, 10}; /* Bool Int FloatingPoint LargeUtf8 Date Timestamp */
    for (int k = 0; k < 6; k++) {
        size_t fld = deref(&m.meta, fields + 4 + 4 * (size_t)k), n;
        const char *name = string_at(&m.meta, child(&m.meta, fld, 0), &n);
        assert_int_equal(n, strlen(t->names[k]));
        assert_memory_equal(name, t->names[k], n);
        assert_int_equal(scalar(&m.meta, fld, 1, 1, 0), 1); /* nullable */
        assert_int_equal(scalar(&m.meta, fld, 2, 1, 0), tags[k]);
        size_t type = child(&m.meta, fld, 3);
        assert_int_equal(rd(&m.meta, child(&m.meta, fld, 5), 4), 0); /* children: [] */
        if (tags[k] == 2) {
            assert_int_equal(scalar(&m.meta, type, 0, 4, 0), 64);
            assert_int_equal(scalar(&m.meta, type, 1, 1, 0), 1);
        } else if (tags[k] == 3) {
            assert_int_equal(scalar(&m.meta, type, 0, 2, 0), 2); /* DOUBLE */
        } else if (tags[k] == 8) {
            assert_int_not_equal(field(&m.meta, type, 0), 0); /* DAY written: the default is ms */
            assert_int_equal(scalar(&m.meta, type, 0, 2, 1), 0);
        } else if (tags[k] == 10) {
            assert_int_equal(scalar(&m.meta, type, 0, 2, 0), 2); /* MICROSECOND */
            const char *tz = string_at(&m.meta, child(&m.meta, type, 1), &n);
            assert_int_equal(n, 3);
            assert_memory_equal(tz, "UTC", 3);
        }
    }
    fr_buf_cleanup(&out);
    df_table_free(t);
}

/* The RecordBatch of a message: its nodes and buffers as (a, b) pairs. */
static size_t batch_of(const struct msg *m, int64_t *length)
{
    assert_int_equal(scalar(&m->meta, m->root, 1, 1, 0), 3); /* header: RecordBatch */
    size_t rb = child(&m->meta, m->root, 2);
    *length = (int64_t)scalar(&m->meta, rb, 0, 8, 0);
    return rb;
}

static int64_t pair(const struct msg *m, size_t vec, int i, int k)
{
    return (int64_t)rd(&m->meta, vec + 4 + 16 * (size_t)i + 8 * (size_t)k, 8);
}

static bool bit(const uint8_t *p, int64_t i)
{
    return (p[i >> 3] >> (i & 7)) & 1;
}

/* Checks row r of col against slot i of its buffers (buf[0] the validity,
 * NULL when the batch has none). */
static void check_value(const struct df_column *col, int64_t r, const uint8_t *const *buf,
                        int64_t i)
{
    bool valid = df_column_is_valid(col, r);
    if (buf[0])
        assert_int_equal(bit(buf[0], i), valid);
    if (col->type == DF_TYPE_BOOL) {
        assert_int_equal(bit(buf[1], i), valid && df_column_bool(col, r));
    } else if (col->type == DF_TYPE_DATE) {
        int32_t v;
        memcpy(&v, buf[1] + 4 * i, 4);
        assert_int_equal(v, valid ? df_column_int32(col, r) : 0);
    } else if (col->type == DF_TYPE_STRING) {
        int64_t o0, o1, len;
        memcpy(&o0, buf[1] + 8 * i, 8);
        memcpy(&o1, buf[1] + 8 * (i + 1), 8);
        const char *want = df_column_string(col, r, &len);
        assert_int_equal(o1 - o0, len);
        assert_memory_equal(buf[2] + o0, want, (size_t)len);
    } else {
        uint64_t v, w;
        memcpy(&v, buf[1] + 8 * i, 8);
        memcpy(&w, (const char *)col->values + 8 * r, 8);
        assert_int_equal(v, valid ? w : 0);
    }
}

/* Checks rows [start, start+n) of t in the batch message m, buffer by buffer. */
static void check_batch(const struct df_table *t, const struct msg *m, int64_t start, int64_t n)
{
    int64_t length;
    size_t rb = batch_of(m, &length);
    assert_int_equal(length, n);
    size_t nodes = child(&m->meta, rb, 1), bufs = child(&m->meta, rb, 2);
    assert_int_equal(rd(&m->meta, nodes, 4), t->ncols);
    int b = 0;
    int64_t next = 0;
    for (int c = 0; c < t->ncols; c++) {
        const struct df_column *col = t->cols[c];
        int64_t nulls = 0;
        for (int64_t i = 0; i < n; i++)
            nulls += !df_column_is_valid(col, start + i);
        assert_int_equal(pair(m, nodes, c, 0), n);
        assert_int_equal(pair(m, nodes, c, 1), nulls);
        int nb = col->type == DF_TYPE_STRING ? 3 : 2;
        const uint8_t *buf[3];
        for (int k = 0; k < nb; k++, b++) {
            int64_t off = pair(m, bufs, b, 0), len = pair(m, bufs, b, 1);
            assert_int_equal(off, next); /* in order, each 8-aligned */
            assert_int_equal(off % 8, 0);
            next = off + ((len + 7) & ~7);
            buf[k] = m->body + off;
            if (k == 0)
                assert_int_equal(len, nulls ? (n + 7) / 8 : 0);
        }
        if (!nulls)
            buf[0] = NULL;
        for (int64_t i = 0; i < n; i++)
            check_value(col, start + i, buf, i);
        if (nulls && (n & 7)) /* the bits past the slice are 0 */
            assert_int_equal(buf[0][n >> 3] >> (n & 7), 0);
        if (col->type == DF_TYPE_STRING) {
            int64_t o0;
            memcpy(&o0, buf[1], 8);
            assert_int_equal(o0, 0); /* re-based */
        }
    }
    assert_int_equal(rd(&m->meta, bufs, 4), b);
    assert_int_equal(next, m->body_len);
}

static void test_batches(void **state)
{
    (void)state;
    struct df_table *t = sample();
    struct fr_buf out;
    fr_buf_init(&out);
    df_arrow_write_schema(t, &out);
    static const int64_t ranges[][2] = {{0, 20}, {3, 10}, {13, 7}, {8, 8}, {19, 1}, {20, 0}};
    for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++)
        df_arrow_write_batch(t, ranges[k][0], ranges[k][1], &out);
    df_arrow_write_eos(&out);
    struct msg m = read_msg(&out, 0);
    for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++) {
        m = read_msg(&out, m.end);
        check_batch(t, &m, ranges[k][0], ranges[k][1]);
    }
    assert_int_equal(out.len, m.end + 8); /* the end-of-stream marker */
    assert_memory_equal(out.data + m.end, "\xff\xff\xff\xff\0\0\0\0", 8);
    fr_buf_cleanup(&out);
    df_table_free(t);
}

/* Every byte of a batch is written, padding and the bits past the rows
 * included: one written into a buffer whose spare room holds junk (a reused
 * chunk) is the very bytes of one written into fresh zeroed memory. */
static void test_batch_bytes_do_not_depend_on_the_buffer(void **state)
{
    (void)state;
    struct df_table *t = sample();
    static const int64_t ranges[][2] = {{0, 20}, {3, 10}, {13, 7}, {5, 3}, {19, 1}, {20, 0}};
    for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++) {
        struct fr_buf clean, dirty;
        fr_buf_init(&clean);
        fr_buf_init(&dirty);
        df_arrow_write_batch(t, ranges[k][0], ranges[k][1], &clean);
        dirty.data = malloc(clean.len + 64);
        dirty.cap = clean.len + 64;
        memset(dirty.data, 0xA5, dirty.cap); /* junk where the batch goes */
        df_arrow_write_batch(t, ranges[k][0], ranges[k][1], &dirty);
        assert_int_equal(dirty.len, clean.len);
        assert_memory_equal(dirty.data, clean.data, clean.len);
        fr_buf_cleanup(&clean);
        fr_buf_cleanup(&dirty);
    }
    df_table_free(t);
}

/* A slice without nulls has no bitmap (length 0); an empty slice's string
 * offsets are the one entry 0. */
static void test_no_nulls_and_empty(void **state)
{
    (void)state;
    struct df_table *t = sample();
    struct fr_buf out;
    fr_buf_init(&out);
    df_arrow_write_batch(t, 13, 3, &out); /* rows 13..15: no nulls in n, name */
    struct msg m = read_msg(&out, 0);
    int64_t length;
    size_t rb = batch_of(&m, &length), bufs = child(&m.meta, rb, 2);
    assert_int_equal(pair(&m, bufs, 2, 1), 0); /* n's validity */
    assert_int_equal(pair(&m, bufs, 6, 1), 0); /* name's validity */
    check_batch(t, &m, 13, 3);
    out.len = 0;
    df_arrow_write_batch(t, 20, 0, &out);
    m = read_msg(&out, 0);
    rb = batch_of(&m, &length);
    bufs = child(&m.meta, rb, 2);
    assert_int_equal(length, 0);
    assert_int_equal(pair(&m, bufs, 7, 1), 8); /* name's offsets: [0] */
    assert_int_equal(pair(&m, bufs, 8, 1), 0);
    fr_buf_cleanup(&out);
    df_table_free(t);
}

/* 10000 rows cross many bitmap words; unaligned starts shift them. */
static void test_long_bitmaps(void **state)
{
    (void)state;
    struct df_table *t = df_table_new();
    struct df_column *b = df_column_new(DF_TYPE_BOOL, 0), *s = df_column_new(DF_TYPE_STRING, 0);
    for (int r = 0; r < 10000; r++) {
        if (r % 7 == 3)
            df_column_append_null(b);
        else
            df_column_append_bool(b, (r * 31) % 5 < 2);
        if (r % 97 == 0)
            df_column_append_null(s);
        else
            df_column_append_string(s, "abcdefghij", r % 11);
    }
    df_table_add(t, "b", b);
    df_table_add(t, "s", s);
    struct fr_buf out;
    fr_buf_init(&out);
    static const int64_t ranges[][2] = {{0, 10000}, {1, 9999}, {63, 4000}, {4096, 1025}};
    for (size_t k = 0; k < 4; k++) {
        out.len = 0;
        df_arrow_write_batch(t, ranges[k][0], ranges[k][1], &out);
        struct msg m = read_msg(&out, 0);
        assert_int_equal(m.end, out.len);
        check_batch(t, &m, ranges[k][0], ranges[k][1]);
    }
    fr_buf_cleanup(&out);
    df_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_batch_bytes_do_not_depend_on_the_buffer),
        cmocka_unit_test(test_no_nulls_and_empty),
        cmocka_unit_test(test_long_bitmaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
