/* Tests of src/engine/engine_agg_values.c and the Welford states: median
 * against a sort of each group's values, through partials of every shape
 * (empty pieces, groups absent from some partials, all-null groups,
 * duplicates, -0.0 and 0.0, even and odd counts), the partial's value blobs
 * holding exactly each group's non-null values, and stddev / corr states
 * whose counts a peer made negative or past 2^53 refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

#define NGROUPS 53
#define NROWS 4000

static const char *const NAMES[] = {"m_float", "m_int", "n"};

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* key i % 53 (group 7 all null, group 11 only in rows >= 3000); f a float
 * with duplicates and ~10% nulls; v an int64. */
static struct df_table *values_table(unsigned seed)
{
    struct df_column *k = df_column_new(DF_TYPE_INT64, NROWS);
    struct df_column *f = df_column_new(DF_TYPE_FLOAT64, NROWS);
    struct df_column *v = df_column_new(DF_TYPE_INT64, NROWS);
    srand(seed);
    for (int i = 0; i < NROWS; i++) {
        int g = i % NGROUPS;
        if (g == 11 && i < 3000)
            g = 12;
        df_column_append_int64(k, g);
        bool null = g == 7 || rand() % 10 == 0;
        double d = (rand() % 50) / 4.0 - 5.0;
        if (d == 0.0 && rand() % 2)
            d = -0.0;
        if (null) {
            df_column_append_null(f);
            df_column_append_null(v);
        } else {
            df_column_append_float64(f, d);
            df_column_append_int64(v, (int64_t)(rand() % 1000) - 500);
        }
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "k", k);
    df_table_add(t, "f", f);
    df_table_add(t, "v", v);
    return t;
}

/* The median of group g's non-null values of column col, by sorting;
 * returns false when the group has none. */
static bool expected_median(const struct df_table *in, int col, int64_t g, double *out)
{
    double *buf = malloc(sizeof(double) * NROWS);
    int n = 0;
    for (int64_t r = 0; r < in->nrows; r++) {
        if (df_column_int64(in->cols[0], r) != g || !df_column_is_valid(in->cols[col], r))
            continue;
        buf[n++] = in->cols[col]->type == DF_TYPE_FLOAT64
                       ? df_column_float64(in->cols[col], r)
                       : (double)df_column_int64(in->cols[col], r);
    }
    if (n)
        qsort(buf, (size_t)n, sizeof(double), cmp_double);
    if (n)
        *out = n % 2 ? buf[n / 2] : (buf[n / 2 - 1] + buf[n / 2]) / 2;
    free(buf);
    return n > 0;
}

/* Runs median(f), median(v), count(f) over `in` cut at cuts[0..ncuts). */
static struct df_table *median_of(const struct df_table *in, const int64_t *cuts, int ncuts,
                                  int64_t morsel)
{
    struct df_options o = {0};
    o.morsel_size_rows = morsel;
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int keys[] = {0};
    struct df_agg_spec specs[] = {
        {DF_AGG_MEDIAN, 1, -1}, {DF_AGG_MEDIAN, 2, -1}, {DF_AGG_COUNT, 1, -1}};
    df_type types[] = {DF_TYPE_FLOAT64, DF_TYPE_INT64, DF_TYPE_FLOAT64};
    struct df_table *parts[8], *out = NULL;
    int np = 0;
    int64_t prev = 0;
    for (int i = 0; i <= ncuts; i++) {
        int64_t end = i < ncuts ? cuts[i] : in->nrows;
        struct df_table *piece = df_table_slice(in, prev, end - prev);
        assert_int_equal(df_agg_partial(piece, keys, 1, specs, 3, &ex, &parts[np++], &err), FR_OK);
        df_table_free(piece);
        prev = end;
    }
    assert_int_equal(df_agg_final(parts, np, 1, specs, 3, types, NAMES, &ex, &out, &err), FR_OK);
    for (int i = 0; i < np; i++)
        df_table_free(parts[i]);
    assert_int_equal(ex.mem_used, 0); /* everything charged was given back */
    return out;
}

static void test_median_matches_sort(void **state)
{
    (void)state;
    struct df_table *in = values_table(3);
    /* one partial passed through, several, one grouped (the final phase's
     * one-partial route), two grouped */
    const int64_t cuts[][4] = {{0}, {1000, 1000, 2500, 3999}, {7, 3000}, {0}, {2000}};
    const int ncuts[] = {0, 4, 2, 0, 1};
    const int64_t morsels[] = {7, 1024, 100, 4096, 4096};
    for (int t = 0; t < 5; t++) {
        struct df_table *r = median_of(in, cuts[t], ncuts[t], morsels[t]);
        assert_int_equal(r->nrows, NGROUPS);
        bool seen[NGROUPS] = {false};
        for (int64_t row = 0; row < r->nrows; row++) {
            int64_t g = df_column_int64(r->cols[0], row);
            assert_true(g >= 0 && g < NGROUPS && !seen[g]);
            seen[g] = true;
            int64_t count = 0;
            for (int64_t i = 0; i < in->nrows; i++)
                count += df_column_int64(in->cols[0], i) == g && df_column_is_valid(in->cols[1], i);
            assert_int_equal(df_column_int64(r->cols[3], row), count);
            for (int c = 0; c < 2; c++) {
                double want;
                if (!expected_median(in, 1 + c, g, &want)) {
                    assert_false(df_column_is_valid(r->cols[1 + c], row));
                    continue;
                }
                assert_true(df_column_is_valid(r->cols[1 + c], row));
                assert_true(df_column_float64(r->cols[1 + c], row) == want);
            }
        }
        df_table_free(r);
    }
    df_table_free(in);
}

/* The partial's state for median(f): every partial row's blob is a whole
 * number of 8-byte values, and each key's blob holds as many values as the
 * key has non-null f in the piece. */
static void test_partial_blobs_hold_each_groups_values(void **state)
{
    (void)state;
    struct df_table *in = values_table(5);
    for (int m = 0; m < 2; m++) {
        struct df_options o = {0};
        o.morsel_size_rows = m ? 4096 : 500; /* one morsel, then eight */
        struct df_exec ex;
        df_exec_init(&ex, &o, NULL);
        struct fr_error err;
        fr_error_init(&err);
        int keys[] = {0};
        struct df_agg_spec specs[] = {{DF_AGG_MEDIAN, 1, -1}};
        struct df_table *part = NULL;
        assert_int_equal(df_agg_partial(in, keys, 1, specs, 1, &ex, &part, &err), FR_OK);
        int64_t have[NGROUPS] = {0}, want[NGROUPS] = {0};
        for (int64_t r = 0; r < in->nrows; r++)
            want[df_column_int64(in->cols[0], r)] += df_column_is_valid(in->cols[1], r);
        assert_int_equal(part->nrows, NGROUPS); /* grouped: one row per key */
        assert_int_equal(part->cols[1]->type, DF_TYPE_STRING);
        for (int64_t r = 0; r < part->nrows; r++) {
            int64_t len;
            (void)df_column_string(part->cols[1], r, &len);
            assert_int_equal(len % 8, 0);
            have[df_column_int64(part->cols[0], r)] += len / 8;
        }
        assert_memory_equal(have, want, sizeof(have));
        df_table_free(part);
        assert_int_equal(ex.mem_used, 0);
    }
    df_table_free(in);
}

/* A partial stddev(f) / corr(f, v) state with no keys, its count (column
 * 0) set to n, merged once or twice: the status of df_agg_final. */
static int merge_moment_count(enum df_agg_func f, int64_t n, int times)
{
    struct df_table *in = values_table(9);
    struct df_options o = {0};
    o.morsel_size_rows = 512;
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_agg_spec specs[] = {{f, 1, f == DF_AGG_CORR ? 2 : -1}};
    df_type types[] = {DF_TYPE_FLOAT64};
    struct df_table *part = NULL, *r = NULL;
    assert_int_equal(df_agg_partial(in, NULL, 0, specs, 1, &ex, &part, &err), FR_OK);
    assert_int_equal(part->nrows, 1);
    assert_int_equal(part->cols[0]->type, DF_TYPE_INT64);
    ((int64_t *)part->cols[0]->values)[0] = n;
    struct df_table *parts[] = {part, part};
    int rc = df_agg_final(parts, times, 0, specs, 1, types, NAMES, &ex, &r, &err);
    if (rc == FR_OK)
        assert_true(df_column_is_valid(r->cols[0], 0));
    else
        assert_null(r);
    df_table_free(r);
    df_table_free(part);
    df_table_free(in);
    assert_int_equal(ex.mem_used, 0);
    return rc;
}

static void test_final_refuses_bad_moment_counts(void **state)
{
    (void)state;
    const enum df_agg_func fs[] = {DF_AGG_STDDEV, DF_AGG_CORR};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(merge_moment_count(fs[i], 3000, 2), FR_OK);
        assert_int_equal(merge_moment_count(fs[i], -1, 1), FR_EDATA);
        assert_int_equal(merge_moment_count(fs[i], INT64_MIN, 1), FR_EDATA);
        assert_int_equal(merge_moment_count(fs[i], (int64_t)1 << 54, 1), FR_EDATA);
        /* 2^53 + 1 rounds to 2^53 as a double: compared as an integer */
        assert_int_equal(merge_moment_count(fs[i], ((int64_t)1 << 53) + 1, 1), FR_EDATA);
        assert_int_equal(merge_moment_count(fs[i], (int64_t)1 << 53, 1), FR_OK);
        /* each alone is exact, their sum is not */
        assert_int_equal(merge_moment_count(fs[i], ((int64_t)1 << 52) + 1, 1), FR_OK);
        assert_int_equal(merge_moment_count(fs[i], ((int64_t)1 << 52) + 1, 2), FR_EDATA);
    }
}

/* The partial's median list is sized once from the input, less its nulls:
 * 1e5 rows of which 1e4 values charge about the values' room, not the
 * rows' (the review of 51f3998: 1.6 MB charged for 160 KB of values). */
static void test_median_list_charges_values_not_rows(void **state)
{
    (void)state;
    enum { ROWS = 100000 };
    struct df_column *k = df_column_new(DF_TYPE_INT64, ROWS);
    struct df_column *f = df_column_new(DF_TYPE_FLOAT64, ROWS);
    for (int i = 0; i < ROWS; i++) {
        df_column_append_int64(k, i % 3);
        if (i % 10 == 0)
            df_column_append_float64(f, (double)(i % 977));
        else
            df_column_append_null(f);
    }
    struct df_table *in = df_table_new();
    df_table_add(in, "k", k);
    df_table_add(in, "f", f);
    struct df_options o = {0};
    o.morsel_size_rows = 4096;
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int keys[] = {0};
    struct df_agg_spec specs[] = {{DF_AGG_MEDIAN, 1, -1}};
    struct df_table *part = NULL;
    assert_int_equal(df_agg_partial(in, keys, 1, specs, 1, &ex, &part, &err), FR_OK);
    assert_int_equal(part->nrows, 3);
    /* 1e4 values: 160 KB of (group, value) pairs; a list for every row was 1.6 MB */
    if (ex.mem_peak > 500 * 1000)
        fail_msg("a median partial over 1e4 values peaked at %lld bytes charged",
                 (long long)ex.mem_peak);
    df_table_free(part);
    df_table_free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median_matches_sort),
        cmocka_unit_test(test_median_list_charges_values_not_rows),
        cmocka_unit_test(test_partial_blobs_hold_each_groups_values),
        cmocka_unit_test(test_final_refuses_bad_moment_counts),
    };
    return cmocka_run_group_tests(tests, 0, NULL);
}
