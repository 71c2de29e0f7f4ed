/* Tests of src/engine/engine_serde.c: round trips, and truncated or corrupt
 * buffers answered with FR_EDATA (never a crash: run under ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

static struct df_table *sample_table(void)
{
    struct df_table *t = df_table_new();
    struct df_column *b = df_column_new(DF_TYPE_BOOL, 0), *i = df_column_new(DF_TYPE_INT64, 0),
                     *f = df_column_new(DF_TYPE_FLOAT64, 0), *s = df_column_new(DF_TYPE_STRING, 0),
                     *d = df_column_new(DF_TYPE_DATE, 0), *ts = df_column_new(DF_TYPE_TIMESTAMP, 0);
    const char *words[] = {"alpha", "", "héllo ☃", "x,\"y\"\n"};
    for (int r = 0; r < 11; r++) {
        df_column_append_bool(b, r % 2);
        if (r % 3 == 0)
            df_column_append_null(i);
        else
            df_column_append_int64(i, r == 1 ? INT64_MIN : (int64_t)r * 1000000007);
        df_column_append_float64(f, r * 0.1);
        if (r == 5)
            df_column_append_null(s);
        else
            df_column_append_string(s, words[r % 4], (int64_t)strlen(words[r % 4]));
        df_column_append_int32(d, 19000 + r);
        if (r == 10)
            df_column_append_null(ts);
        else
            df_column_append_int64(ts, (int64_t)r * 86400000000LL + 123);
    }
    df_table_add(t, "b", b);
    df_table_add(t, "i", i);
    df_table_add(t, "f", f);
    df_table_add(t, "s", s);
    df_table_add(t, "d", d);
    df_table_add(t, "ts", ts);
    return t;
}

static char *render(const struct df_table *t)
{
    struct fr_buf b;
    fr_buf_init(&b);
    for (int i = 0; i < t->ncols; i++)
        fr_buf_printf(&b, "%s:%s:%lld ", t->names[i], df_type_name(t->cols[i]->type),
                      (long long)t->cols[i]->null_count);
    fr_buf_printf(&b, "rows %lld\n", (long long)t->nrows);
    df_write_ndjson_rows(t, 0, t->nrows, &b);
    return fr_buf_steal(&b, NULL);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct df_table *t = sample_table();
    char *buf;
    size_t len;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_table_serialize(t, &buf, &len, &err), FR_OK);
    assert_memory_equal(buf, "FRTB1", 5);
    struct df_table *back = NULL;
    assert_int_equal(df_table_deserialize(buf, len, &back, &err), FR_OK);
    char *a = render(t), *b = render(back);
    assert_string_equal(a, b);
    /* the decoded table is a normal one: it can grow */
    df_column_append_null(back->cols[1]);
    assert_int_equal(back->cols[1]->null_count, 5);
    free(a);
    free(b);
    free(buf);
    df_table_free(back);
    /* a slice and an empty table */
    struct df_table *s = df_table_slice(t, 3, 5), *e = df_table_new();
    struct df_table *parts[] = {s, e};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(df_table_serialize(parts[k], &buf, &len, &err), FR_OK);
        assert_int_equal(df_table_deserialize(buf, len, &back, &err), FR_OK);
        a = render(parts[k]);
        b = render(back);
        assert_string_equal(a, b);
        free(a);
        free(b);
        free(buf);
        df_table_free(back);
    }
    df_table_free(s);
    df_table_free(e);
    df_table_free(t);
}

/* The reader gives the very bytes df_table_serialize makes, whatever the
 * sizes it is read in: whole tables, a slice (string offsets not at 0),
 * empty ones. */
static void test_reader_equals_serialize(void **state)
{
    (void)state;
    struct df_table *t = sample_table();
    struct df_table *tables[] = {t, df_table_slice(t, 3, 5), df_table_slice(t, 10, 1),
                                 df_table_new(), df_table_empty_like(t)};
    const size_t chunks[] = {1, 7, 64, 1 << 20};
    struct fr_error err;
    fr_error_init(&err);
    for (size_t k = 0; k < sizeof(tables) / sizeof(tables[0]); k++) {
        char *want;
        size_t len;
        assert_int_equal(df_table_serialize(tables[k], &want, &len, &err), FR_OK);
        for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
            df_serde_reader *r = df_serde_reader_new(tables[k]);
            assert_int_equal(df_serde_reader_size(r), len);
            char *got = malloc(len + chunks[c]);
            size_t at = 0, n;
            while ((n = df_serde_reader_read(r, got + at, chunks[c])) > 0) {
                assert_true(n <= chunks[c]);
                at += n;
                assert_true(at <= len);
            }
            assert_int_equal(at, len);
            assert_memory_equal(got, want, len);
            free(got);
            df_serde_reader_free(r);
        }
        free(want);
    }
    for (size_t k = 1; k < sizeof(tables) / sizeof(tables[0]); k++)
        df_table_free(tables[k]);
    df_table_free(t);
    df_serde_reader_free(NULL);
}

static char *read_all(df_serde_reader *r, size_t *len)
{
    *len = df_serde_reader_size(r);
    char *got = malloc(*len + 1);
    size_t at = 0, n;
    while ((n = df_serde_reader_read(r, got + at, 13)) > 0)
        at += n;
    assert_int_equal(at, *len);
    return got;
}

/* A range reader (a worker serving rows [start, start + n) of a partition)
 * gives the slice's own encoding for every start and length: as long, and
 * decoding to the same table (validity bits shifted to bit 0 from any bit,
 * the range's null count, no bitmap when it has no null, string offsets from
 * 0; the value bytes under a null are not compared: they are anything).
 * Out-of-range asks get NULL. */
static void test_reader_range(void **state)
{
    (void)state;
    struct df_table *small = sample_table(), *big = df_table_new();
    struct df_column *i = df_column_new(DF_TYPE_INT64, 0), *s = df_column_new(DF_TYPE_STRING, 0);
    for (int r = 0; r < 150; r++) {
        if (r % 7 == 3 || (r >= 40 && r < 60))
            df_column_append_null(i);
        else
            df_column_append_int64(i, r * 3);
        if (r % 5 == 0)
            df_column_append_null(s);
        else
            df_column_append_string(s, "abcdefghij", r % 10);
    }
    df_table_add(big, "i", i);
    df_table_add(big, "s", s);
    struct df_table *tables[] = {small, big};
    struct fr_error err;
    fr_error_init(&err);
    for (int k = 0; k < 2; k++) {
        struct df_table *t = tables[k];
        int step = t->nrows > 20 ? 3 : 1;
        for (int64_t start = 0; start <= t->nrows; start += step)
            for (int64_t n = 0; n <= t->nrows - start; n += step) {
                struct df_table *slice = df_table_slice(t, start, n);
                char *want;
                size_t want_len, got_len;
                assert_int_equal(df_table_serialize(slice, &want, &want_len, &err), FR_OK);
                df_serde_reader *r = df_serde_reader_new_range(t, start, n);
                assert_non_null(r);
                char *got = read_all(r, &got_len);
                assert_int_equal(got_len, want_len);
                if (k == 1 && n > 0 && got[31] == 1) { /* column i's bitmap, bit 0 on, the rest 0 */
                    assert_int_equal(want[31], 1);
                    assert_memory_equal(got + 32, want + 32, (size_t)(n + 7) / 8);
                    if (n % 8)
                        assert_int_equal((unsigned char)got[32 + (n + 7) / 8 - 1] >> (n % 8), 0);
                }
                struct df_table *back = NULL;
                assert_int_equal(df_table_deserialize(got, got_len, &back, &err), FR_OK);
                char *a = render(slice), *b = render(back);
                assert_string_equal(a, b);
                free(a);
                free(b);
                free(got);
                free(want);
                df_table_free(back);
                df_serde_reader_free(r);
                df_table_free(slice);
            }
        assert_null(df_serde_reader_new_range(t, -1, 1));
        assert_null(df_serde_reader_new_range(t, 0, t->nrows + 1));
        assert_null(df_serde_reader_new_range(t, t->nrows, 1));
        assert_null(df_serde_reader_new_range(t, 1, INT64_MAX));
    }
    df_table_free(small);
    df_table_free(big);
}

/* A table with no rows (columns without buffers: a filter that kept
 * nothing, as a worker serves it) round-trips. */
static void test_empty_table_round_trip(void **state)
{
    (void)state;
    struct df_table *full = sample_table();
    struct df_table *t = df_table_empty_like(full);
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(df_table_serialize(t, &bytes, &len, NULL), FR_OK);
    struct df_table *back = NULL;
    assert_int_equal(df_table_deserialize(bytes, len, &back, NULL), FR_OK);
    assert_int_equal(back->nrows, 0);
    assert_int_equal(back->ncols, full->ncols);
    char *want = render(t), *got = render(back);
    assert_string_equal(got, want);
    free(want);
    free(got);
    free(bytes);
    df_table_free(back);
    df_table_free(t);
    df_table_free(full);
}

static void test_truncated_at_every_byte(void **state)
{
    (void)state;
    struct df_table *t = sample_table();
    char *buf;
    size_t len;
    struct fr_error err;
    assert_int_equal(df_table_serialize(t, &buf, &len, &err), FR_OK);
    for (size_t cut = 0; cut < len; cut++) {
        char *copy = malloc(cut ? cut : 1); /* exact size so ASan sees any overread */
        memcpy(copy, buf, cut);
        struct df_table *back = (struct df_table *)1;
        fr_error_init(&err);
        assert_int_equal(df_table_deserialize(copy, cut, &back, &err), FR_EDATA);
        assert_null(back);
        assert_non_null(strstr(err.message, "corrupt"));
        free(copy);
    }
    /* one byte too many */
    char *longer = malloc(len + 1);
    memcpy(longer, buf, len);
    longer[len] = 0;
    struct df_table *back;
    assert_int_equal(df_table_deserialize(longer, len + 1, &back, &err), FR_EDATA);
    free(longer);
    free(buf);
    df_table_free(t);
}

static void test_corrupt_bytes(void **state)
{
    (void)state;
    struct df_table *t = sample_table();
    char *buf;
    size_t len;
    struct fr_error err;
    assert_int_equal(df_table_serialize(t, &buf, &len, &err), FR_OK);
    const unsigned char flips[] = {0x01, 0x80, 0xff, 0x10};
    int ok = 0, bad = 0;
    for (size_t at = 0; at < len; at++) {
        for (size_t k = 0; k < sizeof(flips); k++) {
            char *copy = malloc(len);
            memcpy(copy, buf, len);
            copy[at] = (char)(copy[at] ^ flips[k]);
            struct df_table *back = NULL;
            int rc = df_table_deserialize(copy, len, &back, &err);
            if (rc == FR_OK) {
                char *text = render(back); /* touches every value */
                free(text);
                df_table_free(back);
                ok++;
            } else {
                assert_int_equal(rc, FR_EDATA);
                assert_null(back);
                bad++;
            }
            free(copy);
        }
    }
    assert_true(bad > 0 && ok > 0); /* value bytes may change freely; lengths may not */
    free(buf);
    df_table_free(t);
}

/* "FRTB1" | u32 ncols | u64 nrows, nothing else. */
static size_t bare_header(char *out, uint32_t ncols, uint64_t nrows)
{
    memcpy(out, "FRTB1", 5);
    memcpy(out + 5, &ncols, 4);
    memcpy(out + 9, &nrows, 8);
    return 17;
}

/* A table without columns has no bytes to prove its row count: a hostile
 * 2^60 (or 2^60 - 1) rows is refused, a modest count still decodes. */
static void test_zero_columns_bounded(void **state)
{
    (void)state;
    char buf[17];
    struct fr_error err;
    const uint64_t huge[] = {(uint64_t)1 << 60, ((uint64_t)1 << 60) - 1, ((uint64_t)1 << 24) + 1};
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        size_t len = bare_header(buf, 0, huge[i]);
        struct df_table *back = (struct df_table *)1;
        fr_error_init(&err);
        assert_int_equal(df_table_deserialize(buf, len, &back, &err), FR_EDATA);
        assert_null(back);
        assert_non_null(strstr(err.message, "row"));
    }
    struct df_table *t = df_table_new();
    t->nrows = 1000;
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(df_table_serialize(t, &bytes, &len, NULL), FR_OK);
    struct df_table *back = NULL;
    assert_int_equal(df_table_deserialize(bytes, len, &back, NULL), FR_OK);
    assert_int_equal(back->nrows, 1000);
    assert_int_equal(back->ncols, 0);
    free(bytes);
    df_table_free(back);
    df_table_free(t);
}

/* More than FR_MAX_COLUMNS columns is refused before any column is read. */
static void test_too_many_columns(void **state)
{
    (void)state;
    size_t len = 17 + (size_t)(FR_MAX_COLUMNS + 1) * 14;
    char *buf = calloc(1, len);
    bare_header(buf, FR_MAX_COLUMNS + 1, 0);
    struct df_table *back = (struct df_table *)1;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_table_deserialize(buf, len, &back, &err), FR_EDATA);
    assert_null(back);
    assert_non_null(strstr(err.message, "10000 columns"));
    assert_string_equal(err.kind, "too-many-columns");
    free(buf);
}

/* Operators find columns by name: two columns of one name are refused. */
static void test_repeated_name(void **state)
{
    (void)state;
    struct df_table *t = df_table_new();
    for (int k = 0; k < 2; k++) {
        struct df_column *c = df_column_new(DF_TYPE_INT64, 0);
        df_column_append_int64(c, k);
        df_table_add(t, "a", c);
    }
    t->nrows = 1;
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(df_table_serialize(t, &bytes, &len, NULL), FR_OK);
    struct df_table *back = (struct df_table *)1;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_table_deserialize(bytes, len, &back, &err), FR_EDATA);
    assert_null(back);
    assert_non_null(strstr(err.message, "repeated"));
    free(bytes);
    df_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_reader_equals_serialize),
        cmocka_unit_test(test_reader_range),
        cmocka_unit_test(test_empty_table_round_trip),
        cmocka_unit_test(test_truncated_at_every_byte),
        cmocka_unit_test(test_corrupt_bytes),
        cmocka_unit_test(test_zero_columns_bounded),
        cmocka_unit_test(test_too_many_columns),
        cmocka_unit_test(test_repeated_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
