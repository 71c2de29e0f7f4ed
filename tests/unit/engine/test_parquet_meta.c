/* Tests of src/engine/engine_parquet_thrift.c, engine_parquet_meta.c and
 * engine_parquet_schema.c on hand-made bytes: the Thrift compact reader
 * (varints, field headers, unknown fields of every type skipped, the
 * nesting limit, sizes larger than the bytes left, every truncation), page
 * headers, and footers built here: the type mapping and each refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/engine_parquet_meta_int.h"
#include "parquet_fixture.h"

/* ---- a small Thrift compact writer ---------------------------------------- */
struct tw {
    uint8_t *b;
    size_t n, cap;
    int last[80];
    int depth;
};

static void tw_init(struct tw *w)
{
    memset(w, 0, sizeof(*w));
    w->cap = 1 << 20;
    w->b = malloc(w->cap);
}

static void tw_byte(struct tw *w, int v)
{
    assert_true(w->n < w->cap);
    w->b[w->n++] = (uint8_t)v;
}

static void tw_varint(struct tw *w, uint64_t v)
{
    while (v >= 0x80) {
        tw_byte(w, (int)(v & 0x7f) | 0x80);
        v >>= 7;
    }
    tw_byte(w, (int)v);
}

static void tw_zz(struct tw *w, int64_t v)
{
    tw_varint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void tw_field(struct tw *w, int id, int type)
{
    int d = id - w->last[w->depth];
    if (d > 0 && d <= 15)
        tw_byte(w, d << 4 | type);
    else {
        tw_byte(w, type);
        tw_zz(w, id);
    }
    w->last[w->depth] = id;
}

static void tw_i32(struct tw *w, int id, int64_t v)
{
    tw_field(w, id, DF__TC_I32);
    tw_zz(w, v);
}

static void tw_i64(struct tw *w, int id, int64_t v)
{
    tw_field(w, id, DF__TC_I64);
    tw_zz(w, v);
}

static void tw_str(struct tw *w, int id, const char *s)
{
    if (id)
        tw_field(w, id, DF__TC_BINARY);
    tw_varint(w, strlen(s));
    for (const char *p = s; *p; p++)
        tw_byte(w, *p);
}

static void tw_list(struct tw *w, int id, int etype, int64_t count)
{
    if (id)
        tw_field(w, id, DF__TC_LIST);
    if (count < 15)
        tw_byte(w, (int)count << 4 | etype);
    else {
        tw_byte(w, 0xf0 | etype);
        tw_varint(w, (uint64_t)count);
    }
}

/* A struct: as a field (id > 0) or a list element (id 0). */
static void tw_begin(struct tw *w, int id)
{
    if (id)
        tw_field(w, id, DF__TC_STRUCT);
    w->last[++w->depth] = 0;
}

static void tw_end(struct tw *w)
{
    tw_byte(w, 0);
    w->depth--;
}

/* Unknown fields of every type, ids from `id`. */
static void tw_every_type(struct tw *w, int id)
{
    tw_field(w, id, DF__TC_TRUE);
    tw_field(w, id + 1, DF__TC_FALSE);
    tw_field(w, id + 2, DF__TC_BYTE);
    tw_byte(w, 0x7f);
    tw_field(w, id + 3, DF__TC_I16);
    tw_zz(w, -300);
    tw_i32(w, id + 4, -70000);
    tw_i64(w, id + 5, (int64_t)1 << 50);
    tw_field(w, id + 6, DF__TC_DOUBLE);
    for (int i = 0; i < 8; i++)
        tw_byte(w, i);
    tw_str(w, id + 7, "unknown");
    tw_list(w, id + 8, DF__TC_I32, 3);
    for (int i = 0; i < 3; i++)
        tw_zz(w, i);
    tw_list(w, id + 9, DF__TC_I64, 20); /* the long size form */
    for (int i = 0; i < 20; i++)
        tw_zz(w, i * 1000);
    tw_field(w, id + 10, DF__TC_SET);
    tw_byte(w, 2 << 4 | DF__TC_BINARY);
    tw_str(w, 0, "a");
    tw_str(w, 0, "b");
    tw_field(w, id + 11, DF__TC_MAP);
    tw_varint(w, 2);
    tw_byte(w, DF__TC_BINARY << 4 | DF__TC_STRUCT);
    for (int i = 0; i < 2; i++) {
        tw_str(w, 0, "k");
        tw_begin(w, 0);
        tw_i32(w, 1, i);
        tw_end(w);
    }
    tw_field(w, id + 12, DF__TC_MAP); /* an empty map: no type byte */
    tw_varint(w, 0);
    tw_list(w, id + 13, DF__TC_TRUE, 3); /* bools in a list: a byte each */
    tw_byte(w, 1);
    tw_byte(w, 2);
    tw_byte(w, 1);
    tw_begin(w, id + 14);
    tw_list(w, 1, DF__TC_STRUCT, 1);
    tw_begin(w, 0);
    tw_str(w, 300, "long field id");
    tw_end(w);
    tw_end(w);
}

/* ---- the Thrift reader ---------------------------------------------------- */

static void test_varints(void **state)
{
    (void)state;
    struct tw w;
    tw_init(&w);
    tw_zz(&w, -1);
    tw_zz(&w, INT64_MIN);
    tw_zz(&w, INT64_MAX);
    tw_zz(&w, (int64_t)INT32_MAX + 1);
    struct df__tc r;
    df__tc_init(&r, w.b, w.n);
    assert_int_equal(df__tc_i64(&r), -1);
    assert_true(df__tc_i64(&r) == INT64_MIN);
    assert_true(df__tc_i64(&r) == INT64_MAX);
    assert_false(r.failed);
    assert_int_equal(df__tc_i32(&r), 0); /* out of range */
    assert_true(r.failed);
    static const uint8_t eleven[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0x01};
    df__tc_init(&r, eleven, sizeof(eleven));
    df__tc_varint(&r);
    assert_true(r.failed);
    static const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    df__tc_init(&r, over, sizeof(over));
    df__tc_varint(&r);
    assert_true(r.failed);
    free(w.b);
}

static void test_unknown_fields_of_every_type_skipped(void **state)
{
    (void)state;
    struct tw w;
    tw_init(&w);
    w.last[0] = 0;
    tw_every_type(&w, 2);
    tw_i32(&w, 40, 12345);
    tw_byte(&w, 0);
    /* exact-size copy so that ASan sees any read past the end */
    uint8_t *b = malloc(w.n);
    memcpy(b, w.b, w.n);
    struct df__tc r;
    df__tc_init(&r, b, w.n);
    int last = 0, id, t, seen = 0;
    int32_t v = 0;
    while (df__tc_field(&r, &last, &id, &t)) {
        if (id == 40 && t == DF__TC_I32)
            v = df__tc_i32(&r);
        else
            df__tc_skip(&r, t);
        seen++;
    }
    assert_false(r.failed);
    assert_int_equal(v, 12345);
    assert_int_equal(seen, 16);
    assert_ptr_equal(r.p, b + w.n);
    /* Cut anywhere: the reader fails, never reads past the cut. */
    for (size_t cut = 0; cut < w.n; cut++) {
        uint8_t *c = malloc(cut ? cut : 1);
        memcpy(c, w.b, cut);
        df__tc_init(&r, c, cut);
        last = 0;
        while (df__tc_field(&r, &last, &id, &t))
            df__tc_skip(&r, t);
        assert_true(r.failed);
        free(c);
    }
    free(b);
    free(w.b);
}

static void test_nesting_limit(void **state)
{
    (void)state;
    for (int depth = 60; depth <= 70; depth += 10) {
        struct tw w;
        tw_init(&w);
        for (int i = 0; i < depth; i++)
            tw_byte(&w, 1 << 4 | DF__TC_STRUCT); /* field 1, a struct, inside the last */
        for (int i = 0; i <= depth; i++)
            tw_byte(&w, 0);
        struct df__tc r;
        df__tc_init(&r, w.b, w.n);
        df__tc_skip(&r, DF__TC_STRUCT);
        assert_int_equal(r.failed, depth > DF__TC_MAX_DEPTH - 1);
        if (r.failed)
            assert_string_equal(r.why, "nested too deeply");
        free(w.b);
    }
    /* Lists of lists nest too. */
    uint8_t lists[200];
    for (int i = 0; i < 200; i++)
        lists[i] = 1 << 4 | DF__TC_LIST;
    struct df__tc r;
    df__tc_init(&r, lists, sizeof(lists));
    df__tc_skip(&r, DF__TC_LIST);
    assert_true(r.failed);
}

static void test_sizes_larger_than_the_bytes_refused(void **state)
{
    (void)state;
    struct tw w;
    tw_init(&w);
    tw_list(&w, 0, DF__TC_I64, (int64_t)1 << 40);
    struct df__tc r;
    int et;
    int64_t n;
    df__tc_init(&r, w.b, w.n);
    df__tc_list(&r, &et, &n);
    assert_true(r.failed);
    assert_int_equal(n, 0);
    w.n = 0;
    tw_list(&w, 0, DF__TC_STRUCT, 100); /* 100 structs in 2 bytes */
    tw_byte(&w, 0);
    df__tc_init(&r, w.b, w.n);
    df__tc_list(&r, &et, &n);
    assert_true(r.failed);
    w.n = 0;
    tw_varint(&w, 1000); /* a map of 1000 pairs */
    tw_byte(&w, 0x55);
    df__tc_init(&r, w.b, w.n);
    df__tc_skip(&r, DF__TC_MAP);
    assert_true(r.failed);
    w.n = 0;
    tw_varint(&w, (uint64_t)1 << 62); /* a binary of 2^62 bytes */
    df__tc_init(&r, w.b, w.n);
    const uint8_t *p;
    size_t len = 0;
    df__tc_binary(&r, &p, &len);
    assert_true(r.failed);
    assert_int_equal(len, 0);
    free(w.b);
}

static void test_page_headers(void **state)
{
    (void)state;
    struct tw w;
    tw_init(&w);
    tw_i32(&w, 1, DF__PQ_DATA_PAGE_V2);
    tw_i32(&w, 2, 100);
    tw_i32(&w, 3, 80);
    tw_every_type(&w, 20); /* unknown fields */
    tw_begin(&w, 8);
    tw_i32(&w, 1, 10);
    tw_i32(&w, 2, 3);
    tw_i32(&w, 3, 10);
    tw_i32(&w, 4, DF__PQ_DELTA_BINARY_PACKED);
    tw_i32(&w, 5, 4);
    tw_i32(&w, 6, 0);
    tw_field(&w, 7, DF__TC_FALSE);
    tw_end(&w);
    tw_byte(&w, 0);
    struct df__pq_page_header h;
    size_t used = 0;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df__pq_page_header_parse(w.b, w.n + 5, &h, &used, &err), FR_OK);
    assert_int_equal(used, w.n);
    assert_int_equal(h.type, DF__PQ_DATA_PAGE_V2);
    assert_int_equal(h.num_values, 10);
    assert_int_equal(h.num_nulls, 3);
    assert_int_equal(h.encoding, DF__PQ_DELTA_BINARY_PACKED);
    assert_int_equal(h.def_len, 4);
    assert_false(h.is_compressed);
    for (size_t cut = 0; cut < w.n; cut++) {
        assert_int_equal(df__pq_page_header_parse(w.b, cut, &h, &used, &err), FR_EDATA);
        assert_memory_equal(err.message, "page header", 11);
    }
    /* Levels longer than the page. */
    size_t at = w.n;
    w.last[0] = 0;
    tw_i32(&w, 1, DF__PQ_DATA_PAGE_V2);
    tw_i32(&w, 2, 10);
    tw_i32(&w, 3, 10);
    tw_begin(&w, 8);
    tw_i32(&w, 1, 10);
    tw_i32(&w, 2, 0);
    tw_i32(&w, 3, 10);
    tw_i32(&w, 4, 0);
    tw_i32(&w, 5, 11);
    tw_i32(&w, 6, 0);
    tw_end(&w);
    tw_byte(&w, 0);
    assert_int_equal(df__pq_page_header_parse(w.b + at, w.n - at, &h, &used, &err), FR_EDATA);
    free(w.b);
}

/* ---- footers -------------------------------------------------------------- */

/* A leaf of a hand-made schema. */
struct leaf {
    const char *name;
    int type, repetition, converted; /* converted -1 = none */
    int logical;                     /* LogicalType field id, 0 = none */
    int children;                    /* > 0: a group */
};

struct file_opts {
    int ncols;
    int nchunks;       /* per row group */
    int64_t rows;      /* the row group's (one row group) */
    int64_t file_rows; /* FileMetaData num_rows */
    int64_t data_off;  /* of every chunk */
    int codec;
    bool unknown;       /* unknown fields everywhere */
    int types_override; /* a chunk's type, -1 = the leaf's */
};

static void write_logical(struct tw *w, int logical)
{
    tw_begin(w, 10);
    tw_begin(w, logical);
    if (logical == 8) { /* TIMESTAMP(isAdjustedToUTC=true, NANOS) */
        tw_field(w, 1, DF__TC_TRUE);
        tw_begin(w, 2);
        tw_begin(w, 3);
        tw_end(w);
        tw_end(w);
    } else if (logical == 10) { /* INTEGER(8, unsigned) */
        tw_field(w, 1, DF__TC_BYTE);
        tw_byte(w, 8);
        tw_field(w, 2, DF__TC_FALSE);
    } else if (logical == 5) { /* DECIMAL(scale 2, precision 9) */
        tw_i32(w, 1, 2);
        tw_i32(w, 2, 9);
    }
    tw_end(w);
    tw_end(w);
}

static void write_schema(struct tw *w, const struct leaf *l, int n, const struct file_opts *o)
{
    tw_list(w, 2, DF__TC_STRUCT, n + 1);
    tw_begin(w, 0);
    tw_str(w, 4, "schema");
    int top = 0;
    for (int i = 0; i < n; i++)
        top += i == 0 || l[i - 1].children == 0 ? 1 : 0;
    tw_i32(w, 5, top);
    tw_end(w);
    for (int i = 0; i < n; i++) {
        tw_begin(w, 0);
        if (l[i].children == 0)
            tw_i32(w, 1, l[i].type);
        if (l[i].type == DF__PQ_FIXED_LEN_BYTE_ARRAY)
            tw_i32(w, 2, 16);
        tw_i32(w, 3, l[i].repetition);
        tw_str(w, 4, l[i].name);
        if (l[i].children)
            tw_i32(w, 5, l[i].children);
        if (l[i].converted >= 0)
            tw_i32(w, 6, l[i].converted);
        if (l[i].converted == 5) {
            tw_i32(w, 7, 3);
            tw_i32(w, 8, 12);
        }
        if (o->unknown)
            tw_every_type(w, 11);
        if (l[i].logical)
            write_logical(w, l[i].logical);
        tw_end(w);
    }
}

static void write_chunk(struct tw *w, const struct leaf *l, const struct file_opts *o)
{
    tw_begin(w, 0);
    tw_i64(w, 2, o->data_off);
    tw_begin(w, 3);
    tw_i32(w, 1, o->types_override >= 0 ? o->types_override : l->type);
    tw_list(w, 2, DF__TC_I32, 1);
    tw_zz(w, 0);
    tw_list(w, 3, DF__TC_BINARY, 1);
    tw_str(w, 0, l->name);
    tw_i32(w, 4, o->codec);
    tw_i64(w, 5, o->rows);
    tw_i64(w, 6, 8);
    tw_i64(w, 7, 8);
    tw_i64(w, 9, o->data_off);
    tw_end(w);
    tw_end(w);
}

/* new (free): a whole file: magic, 64 bytes of "pages", the footer. */
static uint8_t *make_file(const struct leaf *l, int n, const struct file_opts *o, size_t *len)
{
    struct tw w;
    tw_init(&w);
    for (int i = 0; i < 4; i++)
        tw_byte(&w, "PAR1"[i]);
    for (int i = 0; i < 64; i++)
        tw_byte(&w, 0);
    size_t foot = w.n;
    tw_i32(&w, 1, 2);
    if (o->unknown)
        tw_every_type(&w, 100);
    write_schema(&w, l, n, o);
    tw_i64(&w, 3, o->file_rows);
    tw_list(&w, 4, DF__TC_STRUCT, 1);
    tw_begin(&w, 0);
    tw_list(&w, 1, DF__TC_STRUCT, o->nchunks);
    for (int i = 0; i < o->nchunks; i++)
        write_chunk(&w, &l[i < n ? i : n - 1], o);
    tw_i64(&w, 2, 64);
    tw_i64(&w, 3, o->rows);
    tw_end(&w);
    tw_byte(&w, 0);
    size_t flen = w.n - foot;
    for (int i = 0; i < 4; i++)
        tw_byte(&w, (int)(flen >> (8 * i)) & 0xff);
    for (int i = 0; i < 4; i++)
        tw_byte(&w, "PAR1"[i]);
    *len = w.n;
    return w.b;
}

/* Opens the hand-made file: the status, with err and a message check. */
static int open_bytes(const uint8_t *b, size_t len, struct fr_error *err)
{
    struct mem_source m;
    mem_source_init(&m, b, len, "hand.parquet");
    fr_error_init(err);
    df_parquet *pq = NULL;
    int rc = df_parquet_open(&m.base, &pq, err);
    df_parquet_free(pq);
    if (rc != FR_OK) {
        assert_non_null(strstr(err->message, "hand.parquet: "));
        assert_string_equal(err->file, "hand.parquet");
    }
    return rc;
}

static void expect_refusal(const struct leaf *l, int n, const struct file_opts *o, int status,
                           const char *kind, const char *field)
{
    size_t len = 0;
    uint8_t *b = make_file(l, n, o, &len);
    struct fr_error err;
    int rc = open_bytes(b, len, &err);
    if (rc != status)
        fail_msg("status %d (%s), want %d", rc, err.message, status);
    assert_string_equal(err.kind, kind);
    assert_string_equal(err.field, field);
    if (field[0])
        assert_non_null(strstr(err.message, field));
    free(b);
}

static const struct file_opts base_opts = {.ncols = 1,
                                           .nchunks = 1,
                                           .rows = 0,
                                           .file_rows = 0,
                                           .data_off = 4,
                                           .codec = 1,
                                           .types_override = -1};

static void test_type_mapping(void **state)
{
    (void)state;
    static const struct leaf leaves[] = {
        {"i32", DF__PQ_INT32, 1, -1, 0, 0},      {"i8", DF__PQ_INT32, 0, 15, 0, 0},
        {"u8", DF__PQ_INT32, 1, -1, 10, 0},      {"u32", DF__PQ_INT32, 1, 13, 0, 0},
        {"i64", DF__PQ_INT64, 1, 18, 0, 0},      {"f", DF__PQ_FLOAT, 1, -1, 0, 0},
        {"dbl", DF__PQ_DOUBLE, 1, -1, 0, 0},     {"b", DF__PQ_BOOLEAN, 1, -1, 0, 0},
        {"s", DF__PQ_BYTE_ARRAY, 1, 0, 0, 0},    {"raw", DF__PQ_BYTE_ARRAY, 1, -1, 0, 0},
        {"js", DF__PQ_BYTE_ARRAY, 1, 19, 0, 0},  {"d", DF__PQ_INT32, 1, 6, 0, 0},
        {"tms", DF__PQ_INT64, 1, 9, 0, 0},       {"tns", DF__PQ_INT64, 1, -1, 8, 0},
        {"dec", DF__PQ_INT32, 1, -1, 5, 0},      {"decf", DF__PQ_FIXED_LEN_BYTE_ARRAY, 1, 5, 0, 0},
        {"decb", DF__PQ_BYTE_ARRAY, 1, 5, 0, 0},
    };
    static const df_type want[] = {
        DF_TYPE_INT64,   DF_TYPE_INT64,   DF_TYPE_INT64,     DF_TYPE_INT64,     DF_TYPE_INT64,
        DF_TYPE_FLOAT64, DF_TYPE_FLOAT64, DF_TYPE_BOOL,      DF_TYPE_STRING,    DF_TYPE_STRING,
        DF_TYPE_STRING,  DF_TYPE_DATE,    DF_TYPE_TIMESTAMP, DF_TYPE_TIMESTAMP, DF_TYPE_FLOAT64,
        DF_TYPE_FLOAT64, DF_TYPE_FLOAT64};
    int n = (int)(sizeof(leaves) / sizeof(leaves[0]));
    for (int unknown = 0; unknown < 2; unknown++) {
        struct file_opts o = base_opts;
        o.ncols = o.nchunks = n;
        o.unknown = unknown;
        size_t len = 0;
        uint8_t *b = make_file(leaves, n, &o, &len);
        /* one chunk per leaf, each with its own type */
        df_parquet *pq = NULL;
        struct fr_error err;
        struct mem_source m;
        mem_source_init(&m, b, len, "hand.parquet");
        fr_error_init(&err);
        int rc = df_parquet_open(&m.base, &pq, &err);
        if (rc != FR_OK)
            fail_msg("%s", err.message);
        const struct df_schema *s = df_parquet_schema(pq);
        assert_int_equal(s->nfields, n);
        for (int i = 0; i < n; i++) {
            assert_string_equal(s->fields[i].name, leaves[i].name);
            if (s->fields[i].type != want[i])
                fail_msg("%s: %s", leaves[i].name, df_type_name(s->fields[i].type));
        }
        assert_int_equal(df_parquet_num_row_groups(pq), 1);
        struct df_exec ex;
        const struct df_options eo = {.morsel_size_rows = 16};
        df_exec_init(&ex, &eo, NULL);
        struct df_table *t = NULL;
        assert_int_equal(df_parquet_read(pq, 0, 1, NULL, -1, &ex, &t, &err), FR_OK);
        assert_int_equal(t->nrows, 0);
        assert_int_equal(t->ncols, n);
        df_table_free(t);
        df_parquet_free(pq);
        free(b);
    }
}

static void test_refusals_name_the_column(void **state)
{
    (void)state;
    const struct file_opts o = base_opts;
    const struct leaf int96[] = {{"when", DF__PQ_INT96, 1, -1, 0, 0}};
    expect_refusal(int96, 1, &o, FR_EVALIDATION, "unsupported-parquet", "when");
    const struct leaf flba[] = {{"uuid", DF__PQ_FIXED_LEN_BYTE_ARRAY, 1, -1, 0, 0}};
    expect_refusal(flba, 1, &o, FR_EVALIDATION, "unsupported-parquet", "uuid");
    const struct leaf u64[] = {{"big", DF__PQ_INT64, 1, 14, 0, 0}};
    expect_refusal(u64, 1, &o, FR_EVALIDATION, "unsupported-parquet", "big");
    const struct leaf rep[] = {{"tags", DF__PQ_BYTE_ARRAY, 2, 0, 0, 0}};
    expect_refusal(rep, 1, &o, FR_EVALIDATION, "unsupported-parquet", "tags");
    const struct leaf time[] = {{"t", DF__PQ_INT32, 1, 7, 0, 0}};
    expect_refusal(time, 1, &o, FR_EVALIDATION, "unsupported-parquet", "t");
    const struct leaf nested[] = {{"id", DF__PQ_INT64, 1, -1, 0, 0},
                                  {"st", 0, 1, -1, 0, 1},
                                  {"x", DF__PQ_INT32, 1, -1, 0, 0}};
    struct file_opts on = o;
    on.nchunks = 2;
    expect_refusal(nested, 3, &on, FR_EVALIDATION, "unsupported-parquet", "st");
    const struct leaf two[] = {{"a", DF__PQ_INT64, 1, -1, 0, 0}, {"a", DF__PQ_INT64, 1, -1, 0, 0}};
    struct file_opts o2 = o;
    o2.nchunks = 2;
    expect_refusal(two, 2, &o2, FR_EVALIDATION, "unsupported-parquet", "a");
    const struct leaf one[] = {{"a", DF__PQ_INT64, 1, -1, 0, 0}};
    struct file_opts lzo = o;
    lzo.codec = DF__PQ_LZO;
    expect_refusal(one, 1, &lzo, FR_EVALIDATION, "unsupported-parquet", "a");
}

static void test_too_many_columns(void **state)
{
    (void)state;
    int n = FR_MAX_COLUMNS + 1;
    struct leaf *l = calloc((size_t)n, sizeof(*l));
    char(*names)[8] = calloc((size_t)n, 8);
    for (int i = 0; i < n; i++) {
        snprintf(names[i], 8, "c%d", i);
        l[i] = (struct leaf){names[i], DF__PQ_INT64, 1, -1, 0, 0};
    }
    struct file_opts o = base_opts;
    o.nchunks = 0;
    expect_refusal(l, n, &o, FR_EVALIDATION, "too-many-columns", "");
    free(l);
    free(names);
}

static void test_inconsistent_footers(void **state)
{
    (void)state;
    const struct leaf one[] = {{"a", DF__PQ_INT64, 1, -1, 0, 0}};
    struct file_opts o = base_opts;
    o.nchunks = 2; /* two chunks for one column */
    expect_refusal(one, 1, &o, FR_EDATA, "", "");
    o = base_opts;
    o.file_rows = 5; /* the row groups hold 0 */
    expect_refusal(one, 1, &o, FR_EDATA, "", "");
    o = base_opts;
    o.rows = o.file_rows = 3; /* the chunk says 3 values too, but its span ... */
    o.data_off = 1000;        /* ... lies past the data */
    expect_refusal(one, 1, &o, FR_EDATA, "", "a");
    o = base_opts;
    o.data_off = 2; /* inside the magic */
    expect_refusal(one, 1, &o, FR_EDATA, "", "a");
    o = base_opts;
    o.types_override = DF__PQ_DOUBLE; /* the chunk's type is not the schema's */
    expect_refusal(one, 1, &o, FR_EDATA, "", "a");
    o = base_opts;
    o.rows = -1;
    o.file_rows = -1;
    expect_refusal(one, 1, &o, FR_EDATA, "", "");
}

/* A source whose reads fail as a worker's remote source does when the file
 * changed on the coordinator. */
static int changed_read(struct df_source *s, int64_t off, char *buf, size_t len, size_t *got,
                        struct fr_error *err)
{
    (void)s, (void)off, (void)buf, (void)len;
    *got = 0;
    return fr_error_setk(err, FR_ECONFLICT, "dataset-changed", "x.parquet changed meanwhile");
}

static void test_source_errors_keep_their_kind(void **state)
{
    (void)state;
    struct df_source src = {.read = changed_read, .size = 4096, .name = "x.parquet"};
    struct fr_error err;
    fr_error_init(&err);
    df_parquet *pq = NULL;
    assert_int_equal(df_parquet_open(&src, &pq, &err), FR_ECONFLICT);
    assert_null(pq);
    assert_string_equal(err.kind, "dataset-changed");
    assert_non_null(strstr(err.message, "x.parquet changed meanwhile"));
    assert_string_equal(err.file, "x.parquet");
}

static void test_magic_and_footer_length(void **state)
{
    (void)state;
    const struct leaf one[] = {{"a", DF__PQ_INT64, 1, -1, 0, 0}};
    size_t len = 0;
    uint8_t *b = make_file(one, 1, &base_opts, &len);
    struct fr_error err;
    assert_int_equal(open_bytes(b, len, &err), FR_OK);
    b[0] = 'X';
    assert_int_equal(open_bytes(b, len, &err), FR_EDATA);
    b[0] = 'P';
    b[len - 1] = 'X';
    assert_int_equal(open_bytes(b, len, &err), FR_EDATA);
    b[len - 1] = '1';
    uint8_t saved = b[len - 5];
    b[len - 5] = 0x7f; /* a footer longer than the file */
    assert_int_equal(open_bytes(b, len, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "footer length"));
    b[len - 5] = saved;
    for (size_t cut = 0; cut < len; cut++) /* every cut of the footer, kept at the end */
        if (cut < len - 8) {
            uint8_t *c = malloc(len);
            memcpy(c, b, len);
            size_t flen = (size_t)c[len - 8] | (size_t)c[len - 7] << 8;
            size_t start = len - 8 - flen;
            if (cut > start) {
                /* drop the footer's byte at cut: its length stays, the bytes shift */
                memmove(c + cut, c + cut + 1, len - cut - 1);
                assert_int_not_equal(open_bytes(c, len - 1, &err), FR_OK);
            }
            free(c);
        }
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varints),
        cmocka_unit_test(test_unknown_fields_of_every_type_skipped),
        cmocka_unit_test(test_nesting_limit),
        cmocka_unit_test(test_sizes_larger_than_the_bytes_refused),
        cmocka_unit_test(test_page_headers),
        cmocka_unit_test(test_type_mapping),
        cmocka_unit_test(test_refusals_name_the_column),
        cmocka_unit_test(test_too_many_columns),
        cmocka_unit_test(test_inconsistent_footers),
        cmocka_unit_test(test_magic_and_footer_length),
        cmocka_unit_test(test_source_errors_keep_their_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
