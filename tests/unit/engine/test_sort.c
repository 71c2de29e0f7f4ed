/* Tests of src/engine/engine_sort.c: stable multi-key sort with per-key
 * direction and null placement, float and string order, the k-way merge of
 * sorted runs, and the memory limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

static struct df_options OPTS = {.morsel_size_rows = 1024};

static struct df_table *sorted(const struct df_table *in, const struct df_sort_key *keys, int nkeys)
{
    struct df_exec ex;
    df_exec_init(&ex, &OPTS, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *out = NULL;
    assert_int_equal(df_sort(in, keys, nkeys, &ex, &out, &err), FR_OK);
    assert_int_equal(ex.mem_used, 0);
    return out;
}

/* A random table: i (int64, nulls), s (short strings, nulls), f (float64
 * with NaN and -0.0, nulls), b (bool), d (date), id (the input row). */
static struct df_table *random_table(int64_t n, unsigned seed)
{
    srand(seed);
    struct df_column *i = df_column_new(DF_TYPE_INT64, n), *s = df_column_new(DF_TYPE_STRING, n);
    struct df_column *f = df_column_new(DF_TYPE_FLOAT64, n), *b = df_column_new(DF_TYPE_BOOL, n);
    struct df_column *d = df_column_new(DF_TYPE_DATE, n), *id = df_column_new(DF_TYPE_INT64, n);
    static const char *const words[] = {"",  "a",          "ab",         "ab\0", "abc",
                                        "b", "abcdefghij", "abcdefghik", "zz",   "\xc3\xa9"};
    static const int64_t lens[] = {0, 1, 2, 3, 3, 1, 10, 10, 2, 2};
    static const double floats[] = {0.0, -0.0, 1.5, -2.0, INFINITY, -INFINITY, NAN, 3.0};
    for (int64_t r = 0; r < n; r++) {
        if (rand() % 10 == 0)
            df_column_append_null(i);
        else
            df_column_append_int64(i, rand() % 7 - 3 + (rand() % 50 == 0 ? INT64_MAX / 2 : 0));
        int w = rand() % 10;
        if (rand() % 9 == 0)
            df_column_append_null(s);
        else
            df_column_append_string(s, words[w], lens[w]);
        if (rand() % 8 == 0)
            df_column_append_null(f);
        else
            df_column_append_float64(f, floats[rand() % 8]);
        df_column_append_bool(b, rand() % 2);
        df_column_append_int32(d, rand() % 5 - 2);
        df_column_append_int64(id, r);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "i", i);
    df_table_add(t, "s", s);
    df_table_add(t, "f", f);
    df_table_add(t, "b", b);
    df_table_add(t, "d", d);
    df_table_add(t, "id", id);
    return t;
}

/* An independent reference comparison of two rows of t under keys. */
static int ref_cmp(const struct df_table *t, int64_t x, int64_t y, const struct df_sort_key *keys,
                   int nkeys)
{
    for (int k = 0; k < nkeys; k++) {
        const struct df_column *c = t->cols[keys[k].col];
        bool vx = df_column_is_valid(c, x), vy = df_column_is_valid(c, y);
        if (!vx && !vy)
            continue;
        if (!vx || !vy)
            return (!vx) == keys[k].nulls_first ? -1 : 1;
        int r = 0;
        if (c->type == DF_TYPE_STRING) {
            int64_t nx, ny;
            const char *px = df_column_string(c, x, &nx), *py = df_column_string(c, y, &ny);
            for (int64_t i = 0; i < nx && i < ny && r == 0; i++)
                r = (unsigned char)px[i] < (unsigned char)py[i]   ? -1
                    : (unsigned char)px[i] > (unsigned char)py[i] ? 1
                                                                  : 0;
            if (r == 0)
                r = nx < ny ? -1 : nx > ny;
        } else if (c->type == DF_TYPE_FLOAT64) {
            double a = df_column_float64(c, x), b = df_column_float64(c, y);
            r = isnan(a) ? (isnan(b) ? 0 : 1) : isnan(b) ? -1 : a < b ? -1 : a > b;
        } else if (c->type == DF_TYPE_DATE) {
            int32_t a = df_column_int32(c, x), b = df_column_int32(c, y);
            r = a < b ? -1 : a > b;
        } else if (c->type == DF_TYPE_BOOL) {
            r = (int)df_column_bool(c, x) - (int)df_column_bool(c, y);
        } else {
            int64_t a = df_column_int64(c, x), b = df_column_int64(c, y);
            r = a < b ? -1 : a > b;
        }
        if (r)
            return keys[k].desc ? -r : r;
    }
    return 0;
}

/* out must be in->rows ordered by keys, ties in input order (the id column). */
static void assert_sorted_stable(const struct df_table *out, const struct df_sort_key *keys,
                                 int nkeys, int64_t nrows)
{
    assert_int_equal(out->nrows, nrows);
    int idc = df_table_find(out, "id");
    char *seen = calloc((size_t)nrows, 1);
    for (int64_t r = 0; r < out->nrows; r++) {
        int64_t id = df_column_int64(out->cols[idc], r);
        assert_false(seen[id]);
        seen[id] = 1;
        if (r == 0)
            continue;
        int c = ref_cmp(out, r - 1, r, keys, nkeys);
        assert_true(c <= 0);
        if (c == 0)
            assert_true(df_column_int64(out->cols[idc], r - 1) < id);
    }
    free(seen);
}

static void test_mixed_directions_and_nulls(void **state)
{
    (void)state;
    struct df_table *in = random_table(2000, 1);
    struct df_sort_key sets[][3] = {
        {{0, false, false}},
        {{0, true, true}},
        {{1, false, true}, {0, true, false}},
        {{2, true, false}, {1, true, true}},
        {{3, false, false}, {4, true, false}, {2, false, true}},
        {{1, true, false}},
        {{4, false, false}, {0, false, true}},
    };
    int nk[] = {1, 1, 2, 2, 3, 1, 2};
    for (int i = 0; i < 7; i++) {
        struct df_table *out = sorted(in, sets[i], nk[i]);
        assert_sorted_stable(out, sets[i], nk[i], in->nrows);
        df_table_free(out);
    }
    df_table_free(in);
}

static void test_small_exact_order(void **state)
{
    (void)state;
    /* x: 3 null 1 NaN -inf 2 ; desc with nulls first -> null NaN 3 2 1 -inf */
    struct df_column *x = df_column_new(DF_TYPE_FLOAT64, 6);
    double v[] = {3, 0, 1, NAN, -INFINITY, 2};
    for (int i = 0; i < 6; i++) {
        if (i == 1)
            df_column_append_null(x);
        else
            df_column_append_float64(x, v[i]);
    }
    struct df_table *in = df_table_new();
    df_table_add(in, "x", x);
    struct df_sort_key k = {0, true, true};
    struct df_table *out = sorted(in, &k, 1);
    assert_false(df_column_is_valid(out->cols[0], 0));
    assert_true(isnan(df_column_float64(out->cols[0], 1)));
    assert_float_equal(df_column_float64(out->cols[0], 2), 3, 0);
    assert_float_equal(df_column_float64(out->cols[0], 5), -INFINITY, 0);
    df_table_free(out);
    /* ascending, nulls last: -inf 1 2 3 NaN null */
    k = (struct df_sort_key){0, false, false};
    out = sorted(in, &k, 1);
    assert_float_equal(df_column_float64(out->cols[0], 0), -INFINITY, 0);
    assert_true(isnan(df_column_float64(out->cols[0], 4)));
    assert_false(df_column_is_valid(out->cols[0], 5));
    df_table_free(out);
    df_table_free(in);
}

static void test_stability_with_many_ties(void **state)
{
    (void)state;
    struct df_table *in = random_table(5000, 9);
    struct df_sort_key k = {3, true, false}; /* bool: two values, 2500 ties each */
    struct df_table *out = sorted(in, &k, 1);
    assert_sorted_stable(out, &k, 1, in->nrows);
    assert_true(df_column_bool(out->cols[3], 0));
    df_table_free(out);
    df_table_free(in);
}

/* Ties on the first keys big enough that later keys are radix sorted
 * within a run (over 2048 rows), and small runs sorted in place; every
 * type as a later key, with nulls first and last. */
static void test_multi_key_large_tie_runs(void **state)
{
    (void)state;
    struct df_table *in = random_table(30000, 17);
    struct df_sort_key sets[][4] = {
        {{3, false, false}, {0, true, true}, {2, false, false}},
        {{3, true, true}, {4, false, false}, {2, true, true}, {1, false, false}},
        {{4, false, true}, {2, true, false}},
        {{3, false, false}, {1, true, false}, {0, false, true}},
        {{0, false, false}, {4, true, true}, {3, false, false}, {2, false, false}},
        {{2, false, true}, {3, true, false}},
    };
    int nk[] = {3, 4, 2, 3, 4, 2};
    for (int i = 0; i < 6; i++) {
        struct df_table *out = sorted(in, sets[i], nk[i]);
        assert_sorted_stable(out, sets[i], nk[i], in->nrows);
        df_table_free(out);
    }
    df_table_free(in);
}

static void test_merge_sorted_runs(void **state)
{
    (void)state;
    struct df_table *in = random_table(3000, 5);
    struct df_sort_key keys[] = {{1, false, true}, {0, true, false}};
    int64_t cuts[] = {0, 700, 701, 1800, 3000};
    struct df_table *runs[4];
    for (int i = 0; i < 4; i++) {
        struct df_table *piece = df_table_slice(in, cuts[i], cuts[i + 1] - cuts[i]);
        runs[i] = sorted(piece, keys, 2);
        df_table_free(piece);
    }
    struct df_exec ex;
    df_exec_init(&ex, &OPTS, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *merged = NULL;
    assert_int_equal(df_sort_merge(runs, 4, keys, 2, &ex, &merged, &err), FR_OK);
    assert_sorted_stable(merged, keys, 2, in->nrows);
    /* the same as sorting everything at once, ids included */
    struct df_table *whole = sorted(in, keys, 2);
    for (int64_t r = 0; r < whole->nrows; r++)
        assert_int_equal(df_column_int64(whole->cols[5], r), df_column_int64(merged->cols[5], r));
    df_table_free(whole);
    df_table_free(merged);
    for (int i = 0; i < 4; i++)
        df_table_free(runs[i]);
    df_table_free(in);
}

static void test_errors_and_limit(void **state)
{
    (void)state;
    struct df_table *in = random_table(1000, 2);
    struct df_options o = {.morsel_size_rows = 1024, .task_memory_limit_bytes = 1000};
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *out = NULL;
    struct df_sort_key k = {0, false, false};
    assert_int_equal(df_sort(in, &k, 1, &ex, &out, &err), FR_EMEMLIMIT);
    assert_null(out);
    k.col = 42;
    assert_int_equal(df_sort(in, &k, 1, &ex, &out, &err), FR_EINVAL);
    df_table_free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_directions_and_nulls),
        cmocka_unit_test(test_small_exact_order),
        cmocka_unit_test(test_stability_with_many_ties),
        cmocka_unit_test(test_multi_key_large_tie_runs),
        cmocka_unit_test(test_merge_sorted_runs),
        cmocka_unit_test(test_errors_and_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
