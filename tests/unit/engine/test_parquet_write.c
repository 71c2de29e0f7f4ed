/* Tests of src/engine/engine_parquet_write*.c and the Thrift compact writer:
 * tables of every type (nulls, empty strings, NaN, zero rows, several row
 * groups, every codec, a dictionary overflowing to PLAIN, pages split) are
 * written, their bytes walked by a test-only Thrift reader, and read back
 * by our reader (df_parquet_open/read) value for value. With
 * FRAMED_PARQUET_OUT_DIR set, each file and its rows as JSON (name.json) go
 * there for tests/integration/parquet_writer_duckdb.test.mjs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_parquet_write_int.h"
#include "parquet_write_fixture.h"

/* ---- tables --------------------------------------------------------------- */

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 17;
}

static const char *const words[] = {"", "a", "bb", "zebra", "été", "snow ☃", "x y", "\"q\""};

/* n rows of the six types; row i is null in column c when (i + c) % 7 == 3. */
static struct df_table *all_types(int64_t n, uint64_t seed)
{
    struct df_table *t = df_table_new();
    static const df_type types[] = {DF_TYPE_INT64,  DF_TYPE_FLOAT64, DF_TYPE_BOOL,
                                    DF_TYPE_STRING, DF_TYPE_DATE,    DF_TYPE_TIMESTAMP};
    static const char *const names[] = {"i", "f", "b", "s", "d", "ts"};
    for (int c = 0; c < 6; c++) {
        struct df_column *col = df_column_new(types[c], n);
        for (int64_t i = 0; i < n; i++) {
            uint64_t x = lcg(&seed);
            if ((i + c) % 7 == 3) {
                df_column_append_null(col);
                continue;
            }
            switch (types[c]) {
            case DF_TYPE_INT64:
                df_column_append_int64(col, (int64_t)(x % 2000001) - 1000000);
                break;
            case DF_TYPE_FLOAT64: {
                double v = i % 11 == 5 ? NAN : i % 13 == 6 ? -0.0 : (double)(x % 100000) / 7.0;
                df_column_append_float64(col, x % 2 ? v : -v);
                break;
            }
            case DF_TYPE_BOOL:
                df_column_append_bool(col, x % 3 == 0);
                break;
            case DF_TYPE_STRING: {
                const char *w = words[x % 8];
                df_column_append_string(col, w, (int64_t)strlen(w));
                break;
            }
            case DF_TYPE_DATE:
                df_column_append_int32(col, (int32_t)(x % 40000) - 3000);
                break;
            default:
                df_column_append_int64(col,
                                       (int64_t)(x % 4000000000000ull) * 1000 + (int64_t)(x % 999));
            }
        }
        assert_true(df_column_ok(col));
        df_table_add(t, names[c], col);
    }
    return t;
}

/* ---- writing, and the expected rows for other readers --------------------- */

static json_t *value_json(const struct df_column *c, int64_t i)
{
    char buf[40];
    if (!df_column_is_valid(c, i))
        return json_null();
    switch (c->type) {
    case DF_TYPE_BOOL:
        return json_boolean(df_column_bool(c, i));
    case DF_TYPE_FLOAT64: {
        double v = df_column_float64(c, i);
        if (isnan(v))
            return json_string("NaN");
        if (v == 0 && signbit(v))
            return json_string("-0");
        snprintf(buf, sizeof buf, "%.17g", v);
        return json_string(buf);
    }
    case DF_TYPE_STRING: {
        int64_t len;
        const char *s = df_column_string(c, i, &len);
        return json_stringn(s, (size_t)len);
    }
    case DF_TYPE_DATE:
        return json_integer(df_column_int32(c, i));
    default: /* int64, timestamp: as strings, exact */
        snprintf(buf, sizeof buf, "%lld", (long long)df_column_int64(c, i));
        return json_string(buf);
    }
}

/* name.parquet and name.json (columns and rows) into FRAMED_PARQUET_OUT_DIR. */
static void export_file(const char *name, const struct df_table *t, const struct fr_buf *f)
{
    const char *dir = getenv("FRAMED_PARQUET_OUT_DIR");
    if (!dir || !*dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.parquet", dir, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(f->data, 1, f->len, fp), f->len);
    assert_int_equal(fclose(fp), 0);
    json_t *cols = json_array(), *rows = json_array();
    for (int c = 0; c < t->ncols; c++)
        json_array_append_new(cols, json_pack("[ss]", t->names[c], df_type_name(t->cols[c]->type)));
    for (int64_t i = 0; i < t->nrows; i++) {
        json_t *row = json_array();
        for (int c = 0; c < t->ncols; c++)
            json_array_append_new(row, value_json(t->cols[c], i));
        json_array_append_new(rows, row);
    }
    json_t *doc = json_pack("{soso}", "columns", cols, "rows", rows);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    assert_int_equal(json_dump_file(doc, path, JSON_COMPACT), 0);
    json_decref(doc);
}

/* Writes t in row groups of rg_rows (0 = one call with every row; -1 = no
 * call at all), each call's bytes in a fresh buffer as a stream would send
 * them; returns the whole file in *f (caller-initialized). */
static void write_file(const char *name, const struct df_table *t, enum df_parquet_codec codec,
                       int64_t rg_rows, struct fr_buf *f)
{
    struct df_schema s;
    df_schema_init(&s);
    df_schema_of_table(&s, t);
    df_parquet_writer *w = df_parquet_writer_new(&s, codec);
    df_schema_cleanup(&s);
    struct fr_error err;
    fr_error_init(&err);
    int64_t at = 0, groups = 0;
    do {
        if (rg_rows < 0)
            break;
        int64_t n = rg_rows == 0 || t->nrows - at < rg_rows ? t->nrows - at : rg_rows;
        struct fr_buf part;
        fr_buf_init(&part);
        assert_int_equal(df_parquet_writer_write(w, t, at, n, &part, &err), 0);
        fr_buf_append(f, part.data, part.len);
        fr_buf_cleanup(&part);
        at += n;
        groups++;
    } while (at < t->nrows);
    assert_int_equal(df_parquet_writer_finish(w, f, &err), 0);
    df_parquet_writer_free(w);
    read_back(f, t, groups);
    export_file(name, t, f);
}

static int64_t le64(json_t *bin)
{
    int64_t v;
    assert_int_equal(json_string_length(bin), 8);
    memcpy(&v, json_string_value(bin), 8);
    return v;
}

static double led(json_t *bin)
{
    double v;
    assert_int_equal(json_string_length(bin), 8);
    memcpy(&v, json_string_value(bin), 8);
    return v;
}

/* ---- tests ---------------------------------------------------------------- */

static void check_all_types(enum df_parquet_codec codec, int pq_codec, const char *name)
{
    struct df_table *t = all_types(1000, 7 + (uint64_t)codec);
    struct fr_buf f;
    fr_buf_init(&f);
    write_file(name, t, codec, 0, &f);
    json_t *m = footer_of(&f);
    assert_int_equal(geti(m, "1"), 2);
    assert_int_equal(geti(m, "3"), 1000);
    assert_string_equal(json_string_value(get(m, "6")), "framed");
    assert_int_equal(json_array_size(get(m, "2")), 7);
    assert_int_equal(geti(m, "2/0/5"), 6);
    static const int phys[] = {DF__PQ_INT64,      DF__PQ_DOUBLE, DF__PQ_BOOLEAN,
                               DF__PQ_BYTE_ARRAY, DF__PQ_INT32,  DF__PQ_INT64};
    static const int converted[] = {18, -1, -1, 0, 6, 10};
    for (int c = 0; c < 6; c++) {
        char p[64];
        snprintf(p, sizeof p, "2/%d", c + 1);
        json_t *el = get(m, p);
        assert_int_equal(geti(el, "1"), phys[c]);
        assert_int_equal(geti(el, "3"), 1); /* OPTIONAL */
        assert_string_equal(json_string_value(get(el, "4")), t->names[c]);
        if (converted[c] >= 0)
            assert_int_equal(geti(el, "6"), converted[c]);
        else
            assert_null(get(el, "6"));
        snprintf(p, sizeof p, "4/0/1/%d/3", c);
        json_t *md = get(m, p);
        assert_int_equal(geti(md, "4"), pq_codec);
        assert_int_equal(geti(md, "5"), 1000);
        assert_int_equal(geti(md, "12/3"), t->cols[c]->null_count);
        /* booleans are PLAIN; the rest has few distinct values: a dictionary */
        assert_true((get(md, "11") != NULL) == (c != 2));
        json_t *pages = pages_of(&f, md);
        if (c != 2)
            assert_int_equal(geti(pages, "0/1"), DF__PQ_DICTIONARY_PAGE);
        json_decref(pages);
    }
    assert_true(json_is_true(get(m, "2/6/10/8/1"))); /* timestamp: isAdjustedToUTC */
    assert_non_null(get(m, "2/6/10/8/2/2"));         /* ... in MICROS */
    assert_int_equal(geti(m, "2/1/10/10/1"), 64);    /* int64: INTEGER(64, signed) */
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    double fmn = INFINITY, fmx = -INFINITY;
    for (int64_t i = 0; i < t->nrows; i++) {
        if (df_column_is_valid(t->cols[0], i)) {
            mn = df_column_int64(t->cols[0], i) < mn ? df_column_int64(t->cols[0], i) : mn;
            mx = df_column_int64(t->cols[0], i) > mx ? df_column_int64(t->cols[0], i) : mx;
        }
        double v = df_column_float64(t->cols[1], i);
        if (df_column_is_valid(t->cols[1], i) && !isnan(v)) {
            fmn = fmin(fmn, v);
            fmx = fmax(fmx, v);
        }
    }
    assert_int_equal(le64(get(m, "4/0/1/0/3/12/6")), mn);
    assert_int_equal(le64(get(m, "4/0/1/0/3/12/5")), mx);
    assert_true(led(get(m, "4/0/1/1/3/12/6")) == fmn); /* NaN never enters min/max */
    assert_true(led(get(m, "4/0/1/1/3/12/5")) == fmx);
    json_decref(m);
    fr_buf_cleanup(&f);
    df_table_free(t);
}

static void test_all_types(void **state)
{
    (void)state;
    check_all_types(DF_PARQUET_UNCOMPRESSED, DF__PQ_UNCOMPRESSED, "all_types_plain");
    check_all_types(DF_PARQUET_SNAPPY, DF__PQ_SNAPPY, "all_types_snappy");
    check_all_types(DF_PARQUET_ZSTD, DF__PQ_ZSTD, "all_types_zstd");
}

static void test_zero_rows(void **state)
{
    (void)state;
    struct df_table *t = all_types(0, 1);
    struct fr_buf f;
    fr_buf_init(&f);
    write_file("zero_rows", t, DF_PARQUET_SNAPPY, 0, &f);
    json_t *m = footer_of(&f);
    assert_int_equal(geti(m, "3"), 0);
    assert_int_equal(json_array_size(get(m, "4")), 1);
    assert_int_equal(geti(m, "4/0/3"), 0);
    json_t *pages = pages_of(&f, get(m, "4/0/1/3/3"));
    assert_int_equal(json_array_size(pages), 1); /* one empty data page */
    assert_int_equal(geti(pages, "0/5/1"), 0);
    assert_null(get(m, "4/0/1/3/3/12/6")); /* no min/max without values */
    json_decref(pages);
    json_decref(m);
    f.len = 0;
    write_file("no_row_groups", t, DF_PARQUET_ZSTD, -1, &f);
    m = footer_of(&f);
    assert_int_equal(json_array_size(get(m, "4")), 0);
    assert_int_equal(json_array_size(get(m, "2")), 7);
    json_decref(m);
    fr_buf_cleanup(&f);
    df_table_free(t);
}

static void test_row_groups(void **state)
{
    (void)state;
    struct df_table *t = all_types(10000, 3);
    struct fr_buf f;
    fr_buf_init(&f);
    write_file("row_groups", t, DF_PARQUET_ZSTD, 3000, &f);
    json_t *m = footer_of(&f);
    assert_int_equal(geti(m, "3"), 10000);
    json_t *rgs = get(m, "4");
    assert_int_equal(json_array_size(rgs), 4);
    int64_t at = 4, rows = 0;
    for (size_t g = 0; g < 4; g++) {
        json_t *rg = json_array_get(rgs, g);
        assert_int_equal(geti(rg, "3"), g < 3 ? 3000 : 1000);
        assert_int_equal(geti(rg, "5"), at); /* row groups follow one another */
        assert_int_equal(geti(rg, "7"), (int64_t)g);
        int64_t bytes = 0;
        for (int c = 0; c < 6; c++) {
            json_t *md = get(json_array_get(get(rg, "1"), (size_t)c), "3");
            json_t *pages = pages_of(&f, md);
            int64_t values = 0;
            for (size_t p = 0; p < json_array_size(pages); p++)
                if (geti(json_array_get(pages, p), "1") == DF__PQ_DATA_PAGE)
                    values += geti(json_array_get(pages, p), "5/1");
            assert_int_equal(values, geti(rg, "3"));
            bytes += geti(md, "7");
            json_decref(pages);
        }
        assert_int_equal(geti(rg, "6"), bytes);
        at += bytes;
        rows += geti(rg, "3");
    }
    assert_int_equal(rows, 10000);
    json_decref(m);
    fr_buf_cleanup(&f);
    df_table_free(t);
}

/* 70000 distinct strings (past the dictionary's bound, and over 1 MiB: two
 * pages at least), distinct ints (PLAIN too), and a low-cardinality
 * column that keeps its dictionary. */
static void test_dictionary_overflow(void **state)
{
    (void)state;
    const int64_t n = 70000;
    struct df_column *s = df_column_new(DF_TYPE_STRING, n), *i = df_column_new(DF_TYPE_INT64, n),
                     *k = df_column_new(DF_TYPE_STRING, n);
    for (int64_t r = 0; r < n; r++) {
        char buf[64];
        int len = snprintf(buf, sizeof buf, "key-%08lld-padding", (long long)(r * 7919 % n));
        if (r % 1000 == 999)
            df_column_append_null(s);
        else
            df_column_append_string(s, buf, len);
        df_column_append_int64(i, r * 3 - 100000);
        df_column_append_string(k, words[r % 5], (int64_t)strlen(words[r % 5]));
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "s", s);
    df_table_add(t, "i", i);
    df_table_add(t, "k", k);
    struct fr_buf f;
    fr_buf_init(&f);
    write_file("dictionary_overflow", t, DF_PARQUET_SNAPPY, 0, &f);
    json_t *m = footer_of(&f);
    for (int c = 0; c < 3; c++) {
        char p[32];
        snprintf(p, sizeof p, "4/0/1/%d/3", c);
        json_t *md = get(m, p);
        bool dict = c == 2;
        assert_true((get(md, "11") != NULL) == dict);
        assert_int_equal(json_array_size(get(md, "2")), dict ? 3 : 2);
        json_t *pages = pages_of(&f, md);
        int64_t values = 0, data_pages = 0;
        for (size_t pg = 0; pg < json_array_size(pages); pg++) {
            json_t *h = json_array_get(pages, pg);
            if (geti(h, "1") != DF__PQ_DATA_PAGE)
                continue;
            data_pages++;
            values += geti(h, "5/1");
            assert_int_equal(geti(h, "5/2"), dict ? DF__PQ_RLE_DICTIONARY : DF__PQ_PLAIN);
            assert_true(geti(h, "2") <= DF__PQW_PAGE_BYTES + 64);
        }
        assert_int_equal(values, n);
        assert_true(c == 0 ? data_pages >= 2 : data_pages >= 1); /* 1.7 MB of strings */
        json_decref(pages);
    }
    assert_int_equal(geti(m, "4/0/1/0/3/12/3"), n / 1000);
    assert_string_equal(json_string_value(get(m, "4/0/1/0/3/12/6")), "key-00000000-padding");
    assert_string_equal(json_string_value(get(m, "4/0/1/0/3/12/5")), "key-00069999-padding");
    json_decref(m);
    fr_buf_cleanup(&f);
    df_table_free(t);
}

/* Strings past 64 bytes: the min is cut to a prefix, the max to a prefix
 * bumped at its last ASCII byte; neither is exact. */
static void test_long_string_stats(void **state)
{
    (void)state;
    struct df_column *s = df_column_new(DF_TYPE_STRING, 4);
    char a[100], b[100];
    memset(a, 'm', 99);
    a[99] = 0;
    memset(b, 'y', 99);
    b[70] = 'z';
    b[99] = 0;
    df_column_append_string(s, a, 99);
    df_column_append_string(s, "n", 1);
    df_column_append_string(s, b, 99);
    struct df_column *u = df_column_new(DF_TYPE_STRING, 2); /* only non-ASCII: no max */
    char e[81] = "";
    for (int j = 0; j < 40; j++)
        strcat(e, "é");
    df_column_append_string(u, e, 80);
    df_column_append_string(u, e, 80);
    df_column_append_null(s);
    df_column_append_null(u);
    df_column_append_null(u);
    struct df_table *t = df_table_new();
    df_table_add(t, "s", s);
    df_table_add(t, "u", u);
    struct fr_buf f;
    fr_buf_init(&f);
    write_file("long_strings", t, DF_PARQUET_UNCOMPRESSED, 0, &f);
    json_t *m = footer_of(&f);
    json_t *st = get(m, "4/0/1/0/3/12");
    assert_int_equal(json_string_length(get(st, "6")), 64);
    assert_memory_equal(json_string_value(get(st, "6")), a, 64);
    char want[65];
    memcpy(want, b, 64);
    want[63] = 'z';
    assert_int_equal(json_string_length(get(st, "5")), 64);
    assert_memory_equal(json_string_value(get(st, "5")), want, 64);
    assert_true(json_is_false(get(st, "7")) && json_is_false(get(st, "8")));
    st = get(m, "4/0/1/1/3/12");
    assert_null(get(st, "5"));
    assert_null(get(st, "6"));
    assert_int_equal(geti(st, "3"), 2);
    json_decref(m);
    fr_buf_cleanup(&f);
    df_table_free(t);
}

static void test_misuse(void **state)
{
    (void)state;
    struct df_table *t = all_types(10, 5);
    struct df_schema s;
    df_schema_init(&s);
    df_schema_add(&s, "i", DF_TYPE_STRING);
    df_parquet_writer *w = df_parquet_writer_new(&s, DF_PARQUET_ZSTD);
    struct fr_buf out;
    fr_buf_init(&out);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_not_equal(df_parquet_writer_write(w, t, 0, 10, &out, &err), 0); /* 6 columns */
    struct df_table *one = df_table_project(t, (const int[]){0}, 1);
    assert_int_not_equal(df_parquet_writer_write(w, one, 0, 10, &out, &err), 0); /* int64 */
    assert_int_equal(out.len, 0);
    df_parquet_writer_free(w);
    df_schema_cleanup(&s);
    df_schema_of_table(&s, one);
    w = df_parquet_writer_new(&s, DF_PARQUET_SNAPPY);
    assert_int_not_equal(df_parquet_writer_write(w, one, 5, 6, &out, &err), 0); /* past the end */
    assert_int_equal(df_parquet_writer_write(w, one, 5, 5, &out, &err), 0);
    assert_int_equal(df_parquet_writer_finish(w, &out, &err), 0);
    assert_int_not_equal(df_parquet_writer_write(w, one, 0, 5, &out, &err), 0);
    assert_int_not_equal(df_parquet_writer_finish(w, &out, &err), 0);
    json_t *m = footer_of(&out);
    assert_int_equal(geti(m, "3"), 5);
    json_decref(m);
    df_parquet_writer_free(w);
    df_parquet_writer_free(NULL);
    df_schema_cleanup(&s);
    fr_buf_cleanup(&out);
    df_table_free(one);
    df_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_types),         cmocka_unit_test(test_zero_rows),
        cmocka_unit_test(test_row_groups),        cmocka_unit_test(test_dictionary_overflow),
        cmocka_unit_test(test_long_string_stats), cmocka_unit_test(test_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
