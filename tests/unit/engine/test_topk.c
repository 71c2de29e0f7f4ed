/* Tests of src/engine/engine_topk.c: df_top_k's fast path (one sort key of
 * a fixed-width type, ranks as integers) against its general path (the
 * same key plus a constant second key, which changes no order), over nulls
 * first and last, -0.0 against 0.0 (ties keep input order), NaN, integer
 * extremes, ascending and descending, k of 1, 2 and 5, no group keys, and
 * empty, one-row and all-distinct inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

/* columns: g (int64 group), f (float64), i (int64), d (date), b (bool),
 * c (a constant int64) */
static struct df_table *make_table(int64_t n, int64_t groups, unsigned seed)
{
    srand(seed);
    struct df_column *g = df_column_new(DF_TYPE_INT64, n), *f = df_column_new(DF_TYPE_FLOAT64, n);
    struct df_column *i = df_column_new(DF_TYPE_INT64, n), *d = df_column_new(DF_TYPE_DATE, n);
    struct df_column *b = df_column_new(DF_TYPE_BOOL, n), *c = df_column_new(DF_TYPE_INT64, n);
    static const double fv[] = {0.0, -0.0, 1.5, -1.5, NAN, INFINITY, -INFINITY, 2.0, 1e300};
    static const int64_t iv[] = {INT64_MIN, INT64_MAX, 0, -1, 1, 7, 7, -7};
    for (int64_t r = 0; r < n; r++) {
        df_column_append_int64(g, groups ? rand() % groups : r);
        if (rand() % 7 == 0)
            df_column_append_null(f);
        else
            df_column_append_float64(f, fv[rand() % 9]);
        if (rand() % 6 == 0)
            df_column_append_null(i);
        else
            df_column_append_int64(i, iv[rand() % 8]);
        if (rand() % 5 == 0)
            df_column_append_null(d);
        else
            df_column_append_int32(d, rand() % 5 - 2);
        if (rand() % 4 == 0)
            df_column_append_null(b);
        else
            df_column_append_bool(b, rand() % 2);
        df_column_append_int64(c, 42);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "g", g);
    df_table_add(t, "f", f);
    df_table_add(t, "i", i);
    df_table_add(t, "d", d);
    df_table_add(t, "b", b);
    df_table_add(t, "c", c);
    t->nrows = n;
    return t;
}

/* The same rows in the same order: equal bytes, validity and strings. */
static void assert_same_rows(const struct df_table *a, const struct df_table *b)
{
    assert_int_equal(a->nrows, b->nrows);
    assert_int_equal(a->ncols, b->ncols);
    for (int c = 0; c < a->ncols; c++) {
        const struct df_column *x = a->cols[c], *y = b->cols[c];
        size_t w = df_type_width(x->type);
        for (int64_t r = 0; r < a->nrows; r++) {
            assert_int_equal(df_column_is_valid(x, r), df_column_is_valid(y, r));
            assert_memory_equal((const char *)x->values + w * (size_t)r,
                                (const char *)y->values + w * (size_t)r, w);
        }
    }
}

static void check(const struct df_table *t, int nby, int col, bool desc, bool nulls_first,
                  int64_t k, int morsel)
{
    struct df_options o = {0};
    o.morsel_size_rows = morsel;
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int by[] = {0};
    struct df_sort_key fast[1] = {{col, desc, nulls_first}};
    struct df_sort_key slow[2] = {{col, desc, nulls_first}, {5, false, false}};
    struct df_table *a = NULL, *b = NULL;
    assert_int_equal(df_top_k(t, by, nby, fast, 1, k, &ex, &a, &err), FR_OK);
    assert_int_equal(df_top_k(t, by, nby, slow, 2, k, &ex, &b, &err), FR_OK);
    assert_same_rows(a, b);
    df_table_free(a);
    df_table_free(b);
    assert_int_equal(ex.mem_used, 0);
}

static void test_fast_equals_general(void **state)
{
    (void)state;
    const int64_t sizes[] = {0, 1, 2, 300, 2000};
    const int64_t groups[] = {3, 0 /* every row its own group */, 50};
    const int64_t ks[] = {1, 2, 5};
    for (int si = 0; si < 5; si++)
        for (int gi = 0; gi < 3; gi++) {
            struct df_table *t = make_table(sizes[si], groups[gi], (unsigned)(si * 7 + gi));
            for (int col = 1; col <= 4; col++)
                for (int m = 0; m < 4; m++)
                    for (int ki = 0; ki < 3; ki++)
                        for (int nby = 0; nby <= 1; nby++)
                            check(t, nby, col, m & 1, (m >> 1) & 1, ks[ki], ki == 1 ? 7 : 4096);
            df_table_free(t);
        }
}

/* Hand-checked: the two largest per group, -0.0 and 0.0 tie (the earlier
 * row stays first), NaN sorts above every number, nulls last. */
static void test_largest_two(void **state)
{
    (void)state;
    const int64_t g[] = {1, 1, 1, 2, 2, 2, 3};
    const double v[] = {-0.0, 0.0, -1.0, 5.0, NAN, 7.0, 0.0};
    const bool null[] = {false, false, false, false, false, false, true};
    struct df_column *gc = df_column_new(DF_TYPE_INT64, 7), *vc = df_column_new(DF_TYPE_FLOAT64, 7);
    for (int r = 0; r < 7; r++) {
        df_column_append_int64(gc, g[r]);
        if (null[r])
            df_column_append_null(vc);
        else
            df_column_append_float64(vc, v[r]);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "g", gc);
    df_table_add(t, "v", vc);
    struct df_options o = {0};
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int by[] = {0};
    struct df_sort_key key[] = {{1, true, false}};
    struct df_table *r = NULL;
    assert_int_equal(df_top_k(t, by, 1, key, 1, 2, &ex, &r, &err), FR_OK);
    assert_int_equal(r->nrows, 5);
    const int64_t wg[] = {1, 1, 2, 2, 3};
    for (int i = 0; i < 5; i++)
        assert_int_equal(df_column_int64(r->cols[0], i), wg[i]);
    double x0 = df_column_float64(r->cols[1], 0), x1 = df_column_float64(r->cols[1], 1);
    assert_true(x0 == 0.0 && signbit(x0)); /* the -0.0 of row 0 first */
    assert_true(x1 == 0.0 && !signbit(x1));
    assert_true(isnan(df_column_float64(r->cols[1], 2)));
    assert_float_equal(df_column_float64(r->cols[1], 3), 7.0, 0);
    assert_false(df_column_is_valid(r->cols[1], 4));
    df_table_free(r);
    df_table_free(t);
}

/* A table (g int64, gnull[r] making g null; v int64) of n rows. */
static struct df_table *gv_table(const int64_t *g, const bool *gnull, const int64_t *v, int n)
{
    struct df_column *gc = df_column_new(DF_TYPE_INT64, n), *vc = df_column_new(DF_TYPE_INT64, n);
    for (int r = 0; r < n; r++) {
        if (gnull && gnull[r])
            df_column_append_null(gc);
        else
            df_column_append_int64(gc, g[r]);
        df_column_append_int64(vc, v[r]);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "g", gc);
    df_table_add(t, "v", vc);
    t->nrows = n;
    return t;
}

/* The plan schema's promise: groups come out ordered by the `by` columns
 * (ascending; nulls last, or first with the nulls_first option), not in
 * first appearance; within a group the sort order, ties in input order. */
static void test_groups_in_by_order(void **state)
{
    (void)state;
    const int64_t g[] = {5, -2, 0, 5, 9, -2, 0, 7};
    const bool gnull[] = {false, false, true, false, false, false, false, false};
    const int64_t v[] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct df_table *t = gv_table(g, gnull, v, 8);
    int by[] = {0};
    struct df_sort_key key[] = {{1, true, false}};
    for (int nf = 0; nf <= 1; nf++) {
        struct df_options o = {0};
        o.nulls_first = nf;
        o.morsel_size_rows = 3;
        struct df_exec ex;
        df_exec_init(&ex, &o, NULL);
        struct fr_error err;
        fr_error_init(&err);
        struct df_table *r = NULL;
        assert_int_equal(df_top_k(t, by, 1, key, 1, 2, &ex, &r, &err), FR_OK);
        assert_int_equal(r->nrows, 8);
        /* nulls last, then nulls first; -9 stands for the null group */
        static const int64_t wg[2][8] = {{-2, -2, 0, 5, 5, 7, 9, -9}, {-9, -2, -2, 0, 5, 5, 7, 9}};
        static const int64_t wv[2][8] = {{6, 2, 7, 4, 1, 8, 5, 3}, {3, 6, 2, 7, 4, 1, 8, 5}};
        for (int i = 0; i < 8; i++) {
            assert_int_equal(df_column_is_valid(r->cols[0], i), wg[nf][i] != -9);
            if (wg[nf][i] != -9)
                assert_int_equal(df_column_int64(r->cols[0], i), wg[nf][i]);
            assert_int_equal(df_column_int64(r->cols[1], i), wv[nf][i]);
        }
        df_table_free(r);
        assert_int_equal(ex.mem_used, 0);
    }
    df_table_free(t);
}

/* A partial top_k (order_groups false) skips the sort of the groups: they
 * come out in order of first appearance, each group's rows as before. */
static void test_partial_keeps_first_appearance(void **state)
{
    (void)state;
    const int64_t g[] = {5, -2, 0, 5, 9, -2, 0, 7};
    const int64_t v[] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct df_table *t = gv_table(g, NULL, v, 8);
    int by[] = {0};
    struct df_sort_key key[] = {{1, true, false}};
    struct df_options o = {0};
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *r = NULL;
    assert_int_equal(df_top_k_groups(t, by, 1, key, 1, 2, false, &ex, &r, &err), FR_OK);
    static const int64_t wg[] = {5, 5, -2, -2, 0, 0, 9, 7}, wv[] = {4, 1, 6, 2, 7, 3, 5, 8};
    assert_int_equal(r->nrows, 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(df_column_int64(r->cols[0], i), wg[i]);
        assert_int_equal(df_column_int64(r->cols[1], i), wv[i]);
    }
    df_table_free(r);
    assert_int_equal(ex.mem_used, 0);
    df_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_equals_general),
        cmocka_unit_test(test_largest_two),
        cmocka_unit_test(test_groups_in_by_order),
        cmocka_unit_test(test_partial_keeps_first_appearance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
