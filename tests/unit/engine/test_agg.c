/* Tests of src/engine/engine_agg*.c: two-phase hash aggregation, each
 * aggregate with nulls, empty and one-row inputs, split invariance on
 * random data, output order and the memory limit. */
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

static const char *const NAMES[] = {"r0", "r1", "r2", "r3",  "r4",  "r5",  "r6",
                                    "r7", "r8", "r9", "r10", "r11", "r12", "r13"};

static struct df_options opts_of(bool maintain_order)
{
    struct df_options o = {0};
    o.morsel_size_rows = 7; /* tiny morsels exercise the morsel loop */
    o.maintain_order = maintain_order;
    return o;
}

/* Aggregates `in` split into nsplit pieces at cuts[], then merges. */
static int run_agg(const struct df_table *in, const int *keys, int nkeys,
                   const struct df_agg_spec *specs, int nspecs, const int64_t *cuts, int ncuts,
                   struct df_options *o, struct df_table **out, struct fr_error *err)
{
    struct df_exec ex;
    df_exec_init(&ex, o, NULL);
    struct df_table *parts[16];
    df_type types[16];
    for (int k = 0; k < nspecs; k++)
        types[k] = specs[k].arg >= 0 ? in->cols[specs[k].arg]->type : DF_TYPE_INT64;
    int np = 0, rc = FR_OK;
    int64_t prev = 0;
    for (int i = 0; i <= ncuts && rc == FR_OK; i++) {
        int64_t end = i < ncuts ? cuts[i] : in->nrows;
        struct df_table *piece = df_table_slice(in, prev, end - prev);
        rc = df_agg_partial(piece, keys, nkeys, specs, nspecs, &ex, &parts[np], err);
        if (rc == FR_OK)
            np++;
        df_table_free(piece);
        prev = end;
    }
    if (rc == FR_OK)
        rc = df_agg_final(parts, np, nkeys, specs, nspecs, types, NAMES, &ex, out, err);
    for (int i = 0; i < np; i++)
        df_table_free(parts[i]);
    assert_int_equal(ex.mem_used, 0); /* everything charged was given back */
    return rc;
}

static struct df_column *strings_col(const char *const *v, int n)
{
    struct df_column *c = df_column_new(DF_TYPE_STRING, n);
    for (int i = 0; i < n; i++) {
        if (v[i])
            df_column_append_string(c, v[i], (int64_t)strlen(v[i]));
        else
            df_column_append_null(c);
    }
    return c;
}

/* ints with INT64_MIN standing for null */
static struct df_column *ints_col(const int64_t *v, int n)
{
    struct df_column *c = df_column_new(DF_TYPE_INT64, n);
    for (int i = 0; i < n; i++) {
        if (v[i] == INT64_MIN)
            df_column_append_null(c);
        else
            df_column_append_int64(c, v[i]);
    }
    return c;
}

static struct df_column *floats_col(const double *v, int n)
{
    struct df_column *c = df_column_new(DF_TYPE_FLOAT64, n);
    for (int i = 0; i < n; i++) {
        if (isnan(v[i]))
            df_column_append_null(c);
        else
            df_column_append_float64(c, v[i]);
    }
    return c;
}

#define NUL INT64_MIN

static void assert_cell_null(const struct df_table *t, int col, int64_t row)
{
    assert_false(df_column_is_valid(t->cols[col], row));
}

static void assert_str(const struct df_table *t, int col, int64_t row, const char *s)
{
    int64_t n;
    const char *p = df_column_string(t->cols[col], row, &n);
    assert_true(df_column_is_valid(t->cols[col], row));
    assert_int_equal(n, (int64_t)strlen(s));
    assert_memory_equal(p, s, (size_t)n);
}

/* key: a a b null a b null c; x: 1 null 3 4 5 null 7 null */
static struct df_table *sample_table(void)
{
    const char *k[] = {"a", "a", "b", NULL, "a", "b", NULL, "c"};
    int64_t x[] = {1, NUL, 3, 4, 5, NUL, 7, NUL};
    double y[] = {2.0, 1.0, 9.0, 8.0, 11.0, 5.0, NAN, 1.5};
    struct df_table *t = df_table_new();
    df_table_add(t, "k", strings_col(k, 8));
    df_table_add(t, "x", ints_col(x, 8));
    df_table_add(t, "y", floats_col(y, 8));
    return t;
}

static void test_each_aggregate_with_nulls(void **state)
{
    (void)state;
    struct df_table *in = sample_table();
    int keys[] = {0};
    struct df_agg_spec specs[] = {
        {DF_AGG_COUNT_STAR, -1, -1},    {DF_AGG_COUNT, 1, -1},  {DF_AGG_SUM, 1, -1},
        {DF_AGG_MEAN, 1, -1},           {DF_AGG_MIN, 1, -1},    {DF_AGG_MAX, 2, -1},
        {DF_AGG_FIRST, 1, -1},          {DF_AGG_STDDEV, 1, -1}, {DF_AGG_MEDIAN, 2, -1},
        {DF_AGG_COUNT_DISTINCT, 0, -1}, {DF_AGG_CORR, 1, 2},    {DF_AGG_MIN, 0, -1},
    };
    struct df_options o = opts_of(true);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *r = NULL;
    int64_t cuts[] = {3};
    assert_int_equal(run_agg(in, keys, 1, specs, 12, cuts, 1, &o, &r, &err), FR_OK);
    assert_int_equal(r->nrows, 4); /* a, b, null, c in order of appearance */
    assert_int_equal(r->ncols, 13);
    assert_string_equal(r->names[0], "k");
    assert_string_equal(r->names[1], "r0");
    assert_str(r, 0, 0, "a");
    assert_str(r, 0, 1, "b");
    assert_cell_null(r, 0, 2);
    assert_str(r, 0, 3, "c");
    /* count(*) */
    assert_int_equal(df_column_int64(r->cols[1], 0), 3);
    assert_int_equal(df_column_int64(r->cols[1], 3), 1);
    /* count(x): a has 1,null,5 */
    assert_int_equal(df_column_int64(r->cols[2], 0), 2);
    assert_int_equal(df_column_int64(r->cols[2], 3), 0);
    /* sum(x): a 6, b 3, null 11, c null */
    assert_int_equal(r->cols[3]->type, DF_TYPE_INT64);
    assert_int_equal(df_column_int64(r->cols[3], 0), 6);
    assert_int_equal(df_column_int64(r->cols[3], 2), 11);
    assert_cell_null(r, 3, 3);
    /* mean(x) */
    assert_float_equal(df_column_float64(r->cols[4], 0), 3.0, 1e-12);
    assert_cell_null(r, 4, 3);
    /* min(x), max(y) */
    assert_int_equal(df_column_int64(r->cols[5], 0), 1);
    assert_float_equal(df_column_float64(r->cols[6], 0), 11.0, 0);
    assert_float_equal(df_column_float64(r->cols[6], 2), 8.0, 0);
    /* first(x): the first non-null */
    assert_int_equal(df_column_int64(r->cols[7], 0), 1);
    assert_int_equal(df_column_int64(r->cols[7], 1), 3);
    assert_cell_null(r, 7, 3);
    /* stddev(x): a {1,5} -> sqrt(8); b {3} -> null */
    assert_float_equal(df_column_float64(r->cols[8], 0), sqrt(8.0), 1e-12);
    assert_cell_null(r, 8, 1);
    /* median(y): a {2,1,11} -> 2; b {9,5} -> 7 */
    assert_float_equal(df_column_float64(r->cols[9], 0), 2.0, 0);
    assert_float_equal(df_column_float64(r->cols[9], 1), 7.0, 0);
    /* count_distinct(k): null keys count 0 */
    assert_int_equal(df_column_int64(r->cols[10], 0), 1);
    assert_int_equal(df_column_int64(r->cols[10], 2), 0);
    /* corr(x, y): a pairs (1,2),(5,11): perfectly correlated */
    assert_float_equal(df_column_float64(r->cols[11], 0), 1.0, 1e-12);
    assert_cell_null(r, 11, 1);
    /* min of a string */
    assert_str(r, 12, 1, "b");
    df_table_free(r);
    df_table_free(in);
}

static void test_empty_and_one_row(void **state)
{
    (void)state;
    struct df_table *in = sample_table();
    struct df_table *empty = df_table_slice(in, 0, 0);
    struct df_agg_spec specs[] = {{DF_AGG_COUNT_STAR, -1, -1}, {DF_AGG_SUM, 1, -1},
                                  {DF_AGG_MEDIAN, 2, -1},      {DF_AGG_COUNT_DISTINCT, 1, -1},
                                  {DF_AGG_MAX, 0, -1},         {DF_AGG_STDDEV, 2, -1}};
    struct df_options o = opts_of(false);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *r = NULL;
    /* no keys, no rows: exactly one row */
    assert_int_equal(run_agg(empty, NULL, 0, specs, 6, NULL, 0, &o, &r, &err), FR_OK);
    assert_int_equal(r->nrows, 1);
    assert_int_equal(df_column_int64(r->cols[0], 0), 0);
    assert_cell_null(r, 1, 0);
    assert_cell_null(r, 2, 0);
    assert_int_equal(df_column_int64(r->cols[3], 0), 0);
    assert_cell_null(r, 4, 0);
    assert_cell_null(r, 5, 0);
    df_table_free(r);
    /* with keys and no rows: no groups */
    int keys[] = {0};
    assert_int_equal(run_agg(empty, keys, 1, specs, 6, NULL, 0, &o, &r, &err), FR_OK);
    assert_int_equal(r->nrows, 0);
    assert_int_equal(r->ncols, 7);
    df_table_free(r);
    /* one row */
    struct df_table *one = df_table_slice(in, 2, 1);
    assert_int_equal(run_agg(one, keys, 1, specs, 6, NULL, 0, &o, &r, &err), FR_OK);
    assert_int_equal(r->nrows, 1);
    assert_int_equal(df_column_int64(r->cols[1], 0), 1);
    assert_int_equal(df_column_int64(r->cols[2], 0), 3);
    assert_float_equal(df_column_float64(r->cols[3], 0), 9.0, 0);
    assert_int_equal(df_column_int64(r->cols[4], 0), 1);
    assert_str(r, 5, 0, "b");
    assert_cell_null(r, 6, 0);
    df_table_free(r);
    df_table_free(one);
    df_table_free(empty);
    df_table_free(in);
}

static void test_all_null_group(void **state)
{
    (void)state;
    int64_t k[] = {1, 2, 1, 2};
    int64_t x[] = {NUL, 5, NUL, 6};
    struct df_table *in = df_table_new();
    df_table_add(in, "k", ints_col(k, 4));
    df_table_add(in, "x", ints_col(x, 4));
    struct df_agg_spec specs[] = {{DF_AGG_COUNT, 1, -1},          {DF_AGG_SUM, 1, -1},
                                  {DF_AGG_MEAN, 1, -1},           {DF_AGG_MIN, 1, -1},
                                  {DF_AGG_FIRST, 1, -1},          {DF_AGG_MEDIAN, 1, -1},
                                  {DF_AGG_COUNT_DISTINCT, 1, -1}, {DF_AGG_CORR, 1, 1}};
    struct df_options o = opts_of(true);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *r = NULL;
    int keys[] = {0};
    int64_t cuts[] = {1, 2};
    assert_int_equal(run_agg(in, keys, 1, specs, 8, cuts, 2, &o, &r, &err), FR_OK);
    assert_int_equal(r->nrows, 2);
    assert_int_equal(df_column_int64(r->cols[0], 0), 1);
    assert_int_equal(df_column_int64(r->cols[1], 0), 0);
    for (int c = 2; c <= 6; c++)
        assert_cell_null(r, c, 0);
    assert_int_equal(df_column_int64(r->cols[7], 0), 0);
    assert_cell_null(r, 8, 0);
    assert_int_equal(df_column_int64(r->cols[2], 1), 11);
    assert_float_equal(df_column_float64(r->cols[6], 1), 5.5, 0);
    assert_float_equal(df_column_float64(r->cols[8], 1), 1.0, 1e-12);
    df_table_free(r);
    df_table_free(in);
}

/* Random data with several key types; returns a new table. */
static struct df_table *random_table(int64_t n, unsigned seed)
{
    srand(seed);
    struct df_column *ki = df_column_new(DF_TYPE_INT64, n), *ks = df_column_new(DF_TYPE_STRING, n);
    struct df_column *kb = df_column_new(DF_TYPE_BOOL, n), *kd = df_column_new(DF_TYPE_DATE, n);
    struct df_column *x = df_column_new(DF_TYPE_INT64, n), *y = df_column_new(DF_TYPE_FLOAT64, n);
    struct df_column *kf = df_column_new(DF_TYPE_FLOAT64, n);
    for (int64_t i = 0; i < n; i++) {
        char buf[16];
        int r = rand();
        if (r % 17 == 0)
            df_column_append_null(ki);
        else
            df_column_append_int64(ki, r % 23);
        snprintf(buf, sizeof(buf), "s%d", rand() % 31);
        if (r % 13 == 0)
            df_column_append_null(ks);
        else
            df_column_append_string(ks, buf, (int64_t)strlen(buf));
        df_column_append_bool(kb, rand() % 2);
        df_column_append_int32(kd, 19000 + rand() % 3);
        df_column_append_float64(kf, (rand() % 5) * 0.5);
        if (rand() % 9 == 0)
            df_column_append_null(x);
        else
            df_column_append_int64(x, rand() % 1000 - 500);
        if (rand() % 11 == 0)
            df_column_append_null(y);
        else
            df_column_append_float64(y, (rand() % 100000) / 7.0 + 1e6);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "ki", ki);
    df_table_add(t, "ks", ks);
    df_table_add(t, "kb", kb);
    df_table_add(t, "kd", kd);
    df_table_add(t, "kf", kf);
    df_table_add(t, "x", x);
    df_table_add(t, "y", y);
    return t;
}

static void assert_tables_close(const struct df_table *a, const struct df_table *b)
{
    assert_int_equal(a->nrows, b->nrows);
    assert_int_equal(a->ncols, b->ncols);
    for (int c = 0; c < a->ncols; c++) {
        assert_int_equal(a->cols[c]->type, b->cols[c]->type);
        for (int64_t r = 0; r < a->nrows; r++) {
            bool va = df_column_is_valid(a->cols[c], r), vb = df_column_is_valid(b->cols[c], r);
            assert_int_equal(va, vb);
            if (!va)
                continue;
            if (a->cols[c]->type == DF_TYPE_FLOAT64) {
                double x = df_column_float64(a->cols[c], r), y = df_column_float64(b->cols[c], r);
                if (isnan(x) || isnan(y))
                    assert_true(isnan(x) && isnan(y));
                else
                    assert_true(fabs(x - y) <= 1e-9 * fmax(1.0, fmax(fabs(x), fabs(y))));
            } else if (a->cols[c]->type == DF_TYPE_STRING) {
                int64_t n1, n2;
                const char *p1 = df_column_string(a->cols[c], r, &n1);
                const char *p2 = df_column_string(b->cols[c], r, &n2);
                assert_int_equal(n1, n2);
                assert_memory_equal(p1, p2, (size_t)n1);
            } else {
                struct df_column *ca = a->cols[c], *cb = b->cols[c];
                int64_t sel[1] = {r};
                struct df_column *ta = df_column_take(ca, sel, 1), *tb = df_column_take(cb, sel, 1);
                assert_memory_equal(ta->values, tb->values, df_type_width(ca->type));
                df_column_unref(ta);
                df_column_unref(tb);
            }
        }
    }
}

static void test_split_invariance(void **state)
{
    (void)state;
    struct df_table *in = random_table(3000, 42);
    struct df_agg_spec specs[] = {
        {DF_AGG_COUNT_STAR, -1, -1},
        {DF_AGG_COUNT, 5, -1},
        {DF_AGG_COUNT_DISTINCT, 5, -1},
        {DF_AGG_SUM, 5, -1},
        {DF_AGG_SUM, 6, -1},
        {DF_AGG_MEAN, 6, -1},
        {DF_AGG_MIN, 1, -1},
        {DF_AGG_MAX, 6, -1},
        {DF_AGG_STDDEV, 6, -1},
        {DF_AGG_FIRST, 1, -1},
        {DF_AGG_MEDIAN, 5, -1},
        {DF_AGG_CORR, 5, 6},
        {DF_AGG_COUNT_DISTINCT, 1, -1},
        {DF_AGG_MEDIAN, 6, -1},
    };
    const int keysets[][4] = {{0}, {1}, {0, 1}, {2, 3, 4}, {1, 3}};
    const int nk[] = {1, 1, 2, 3, 2};
    struct df_options o = opts_of(true);
    struct fr_error err;
    fr_error_init(&err);
    srand(7);
    for (int ks = 0; ks < 5; ks++) {
        struct df_table *whole = NULL;
        assert_int_equal(run_agg(in, keysets[ks], nk[ks], specs, 14, NULL, 0, &o, &whole, &err),
                         FR_OK);
        assert_true(whole->nrows > 1);
        for (int trial = 0; trial < 4; trial++) {
            int64_t cuts[6];
            int ncuts = 1 + rand() % 6;
            for (int i = 0; i < ncuts; i++)
                cuts[i] = rand() % (in->nrows + 1);
            for (int i = 1; i < ncuts; i++) /* sort the cut points */
                for (int j = i; j > 0 && cuts[j] < cuts[j - 1]; j--) {
                    int64_t t = cuts[j];
                    cuts[j] = cuts[j - 1];
                    cuts[j - 1] = t;
                }
            struct df_table *split = NULL;
            assert_int_equal(
                run_agg(in, keysets[ks], nk[ks], specs, 14, cuts, ncuts, &o, &split, &err), FR_OK);
            assert_tables_close(whole, split);
            df_table_free(split);
        }
        df_table_free(whole);
    }
    df_table_free(in);
}

/* Keys mostly distinct in the first morsel make the partial pass its rows
 * through ungrouped: the results must equal those of a run that groups in
 * the partial (one morsel over the whole piece), with one partial or
 * several, with later rows repeating earlier keys, with null keys, -0.0
 * against 0.0 and NaN among the keys and values. */
static void test_pass_through_partials(void **state)
{
    (void)state;
    int64_t n = 400;
    struct df_column *ki = df_column_new(DF_TYPE_INT64, n), *ks = df_column_new(DF_TYPE_STRING, n);
    struct df_column *kf = df_column_new(DF_TYPE_FLOAT64, n), *x = df_column_new(DF_TYPE_INT64, n);
    struct df_column *y = df_column_new(DF_TYPE_FLOAT64, n);
    for (int64_t i = 0; i < n; i++) {
        /* rows 0..99 all distinct, then the same keys again (and some new) */
        int64_t k = i < 100 ? i : (i * 37) % 130;
        char buf[32];
        if (k % 29 == 3)
            df_column_append_null(ki);
        else
            df_column_append_int64(ki, k);
        snprintf(buf, sizeof(buf), k % 3 ? "short%lld" : "a-much-longer-key-%lld", (long long)k);
        if (k % 31 == 5)
            df_column_append_null(ks);
        else
            df_column_append_string(ks, buf, (int64_t)strlen(buf));
        double f = k % 7 == 0 ? (i % 2 ? -0.0 : 0.0) : k % 11 == 0 ? NAN : (double)(k % 5);
        df_column_append_float64(kf, f);
        if (i % 13 == 0)
            df_column_append_null(x);
        else
            df_column_append_int64(x, (i * 7919) % 1000 - 500);
        if (i % 17 == 0)
            df_column_append_null(y);
        else
            df_column_append_float64(y, i % 19 == 0 ? -0.0 : i % 23 == 0 ? NAN : (i % 97) / 7.0);
    }
    struct df_table *in = df_table_new();
    df_table_add(in, "ki", ki);
    df_table_add(in, "ks", ks);
    df_table_add(in, "kf", kf);
    df_table_add(in, "x", x);
    df_table_add(in, "y", y);
    struct df_agg_spec specs[] = {
        {DF_AGG_COUNT_STAR, -1, -1}, {DF_AGG_COUNT, 3, -1},  {DF_AGG_SUM, 3, -1},
        {DF_AGG_SUM, 4, -1},         {DF_AGG_MEAN, 4, -1},   {DF_AGG_MIN, 1, -1},
        {DF_AGG_MAX, 4, -1},         {DF_AGG_STDDEV, 4, -1}, {DF_AGG_FIRST, 1, -1},
        {DF_AGG_MEDIAN, 3, -1},      {DF_AGG_CORR, 3, 4},    {DF_AGG_COUNT_DISTINCT, 1, -1},
    };
    const int keysets[][3] = {{0}, {1}, {0, 1}, {2}, {0, 1, 2}};
    const int nk[] = {1, 1, 2, 1, 3};
    struct fr_error err;
    fr_error_init(&err);
    for (int ks_i = 0; ks_i < 5; ks_i++) {
        for (int ord = 0; ord < 2; ord++) {
            struct df_options whole_o = opts_of(ord == 1), small_o = opts_of(ord == 1);
            whole_o.morsel_size_rows = 1000000; /* one morsel: always grouped */
            small_o.morsel_size_rows = 8;
            struct df_table *ref = NULL, *one = NULL, *split = NULL;
            assert_int_equal(
                run_agg(in, keysets[ks_i], nk[ks_i], specs, 12, NULL, 0, &whole_o, &ref, &err),
                FR_OK);
            assert_true(ref->nrows > 1 && ref->nrows < n);
            /* a single passed-through partial must still be regrouped */
            assert_int_equal(
                run_agg(in, keysets[ks_i], nk[ks_i], specs, 12, NULL, 0, &small_o, &one, &err),
                FR_OK);
            int64_t cuts[] = {150, 151, 290};
            assert_int_equal(
                run_agg(in, keysets[ks_i], nk[ks_i], specs, 12, cuts, 3, &small_o, &split, &err),
                FR_OK);
            if (ord == 1) { /* same order: compare row by row */
                assert_tables_close(ref, one);
                assert_tables_close(ref, split);
            } else {
                assert_int_equal(ref->nrows, one->nrows);
                assert_int_equal(ref->nrows, split->nrows);
            }
            df_table_free(ref);
            df_table_free(one);
            df_table_free(split);
        }
    }
    /* every row its own group, and the edge sizes: 0, 1 and 2 rows */
    for (int64_t rows = 0; rows <= 40; rows += rows < 2 ? 1 : 38) {
        struct df_table *part = df_table_slice(in, 0, rows);
        struct df_options whole_o = opts_of(true), small_o = opts_of(true);
        whole_o.morsel_size_rows = 1000000;
        small_o.morsel_size_rows = 4;
        int keys[] = {0, 1};
        struct df_table *ref = NULL, *got = NULL;
        assert_int_equal(run_agg(part, keys, 2, specs, 12, NULL, 0, &whole_o, &ref, &err), FR_OK);
        assert_int_equal(run_agg(part, keys, 2, specs, 12, NULL, 0, &small_o, &got, &err), FR_OK);
        assert_int_equal(ref->nrows, rows);
        assert_tables_close(ref, got);
        df_table_free(ref);
        df_table_free(got);
        df_table_free(part);
    }
    df_table_free(in);
}

static void test_maintain_order_across_partials(void **state)
{
    (void)state;
    int64_t k[] = {5, 3, 5, 9, 1, 3, 7, 1};
    struct df_table *in = df_table_new();
    df_table_add(in, "k", ints_col(k, 8));
    struct df_agg_spec specs[] = {{DF_AGG_COUNT_STAR, -1, -1}};
    struct df_options o = opts_of(true);
    struct fr_error err;
    fr_error_init(&err);
    int keys[] = {0};
    int64_t cuts[] = {2, 5};
    struct df_table *r = NULL;
    assert_int_equal(run_agg(in, keys, 1, specs, 1, cuts, 2, &o, &r, &err), FR_OK);
    int64_t want[] = {5, 3, 9, 1, 7}, cnt[] = {2, 2, 1, 2, 1};
    assert_int_equal(r->nrows, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(df_column_int64(r->cols[0], i), want[i]);
        assert_int_equal(df_column_int64(r->cols[1], i), cnt[i]);
    }
    df_table_free(r);
    df_table_free(in);
}

static void test_memory_limit(void **state)
{
    (void)state;
    struct df_table *in = random_table(20000, 3);
    struct df_agg_spec specs[] = {{DF_AGG_MEDIAN, 6, -1}, {DF_AGG_SUM, 5, -1}};
    struct df_options o = opts_of(false);
    o.task_memory_limit_bytes = 4096;
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *r = NULL;
    int keys[] = {0, 1};
    assert_int_equal(run_agg(in, keys, 2, specs, 2, NULL, 0, &o, &r, &err), FR_EMEMLIMIT);
    assert_null(r);
    assert_non_null(strstr(err.message, "task_memory_limit_bytes"));
    o.task_memory_limit_bytes = 64 << 20;
    assert_int_equal(run_agg(in, keys, 2, specs, 2, NULL, 0, &o, &r, &err), FR_OK);
    df_table_free(r);
    df_table_free(in);
}

static void test_bad_argument_type(void **state)
{
    (void)state;
    struct df_table *in = sample_table();
    struct df_agg_spec specs[] = {{DF_AGG_SUM, 0, -1}};
    struct df_options o = opts_of(false);
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *r = NULL;
    assert_int_equal(df_agg_partial(in, NULL, 0, specs, 1, &ex, &r, &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "sum() of a string"));
    df_table_free(in);
}

/* A partial whose state columns have the wrong types (a task spec that
 * names other inputs than the partials it merges) is refused, not merged
 * through pointers of the wrong kind (found by fuzz_task). */
static void test_final_refuses_mismatched_partials(void **state)
{
    (void)state;
    struct df_table *p = df_table_new();
    struct df_column *i = df_column_new(DF_TYPE_INT64, 1), *f = df_column_new(DF_TYPE_FLOAT64, 1);
    struct df_column *s = df_column_new(DF_TYPE_STRING, 1), *d = df_column_new(DF_TYPE_DATE, 1);
    df_column_append_int64(i, 1);
    df_column_append_float64(f, 0.5);
    df_column_append_string(s, "x", 1);
    df_column_append_int32(d, 19000);
    struct df_column *h = df_column_new(DF_TYPE_INT64, 1);
    df_column_append_int64(h, 0);
    df_table_add(p, "k", i);
    df_table_add(p, "h", h);
    df_table_add(p, "v", f);
    df_table_add(p, "s", s);
    df_table_add(p, "d", d);
    /* count(*), sum(int64), max(float64), count(x): states int64, (int64, int64), float64,
     * int64: v is where sum's high half should be */
    struct df_agg_spec specs[] = {{DF_AGG_COUNT_STAR, -1, -1},
                                  {DF_AGG_SUM, 0, -1},
                                  {DF_AGG_MAX, 1, -1},
                                  {DF_AGG_COUNT, 2, -1}};
    const df_type types[] = {DF_TYPE_INT64, DF_TYPE_INT64, DF_TYPE_FLOAT64, DF_TYPE_STRING};
    struct df_options o = opts_of(false);
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *r = NULL;
    assert_int_equal(df_agg_final(&p, 1, 0, specs, 4, types, NAMES, &ex, &r, &err), FR_EINVAL);
    assert_null(r);
    assert_non_null(strstr(err.message, "column 'v' is float64 where int64 was expected"));
    /* mean's state over int64 is (sum, n, high bits): two columns are refused */
    struct df_table *two = df_table_project(p, (const int[]){0, 0}, 2);
    struct df_agg_spec mean[] = {{DF_AGG_MEAN, 0, -1}};
    fr_error_init(&err);
    assert_int_equal(df_agg_final(&two, 1, 0, mean, 1, types, NAMES, &ex, &r, &err), FR_EINVAL);
    assert_null(r);
    df_table_free(two);
    df_table_free(p);
}

/* Merges one crafted state blob of `len` bytes for count_distinct(string)
 * or median(int64) with no keys; returns the status of df_agg_final. The
 * blob is copied into an exactly-sized heap buffer so ASan sees any read
 * past its end. */
static int merge_state_blob(enum df_agg_func f, df_type arg, const char *blob, int64_t len)
{
    struct df_table *p = df_table_new();
    struct df_column *c = df_column_new(DF_TYPE_STRING, 1);
    char *exact = malloc(len ? (size_t)len : 1);
    memcpy(exact, blob, (size_t)len);
    df_column_append_string(c, exact, len);
    free(exact);
    df_table_add(p, "state", c);
    struct df_agg_spec specs[] = {{f, 0, -1}};
    struct df_options o = opts_of(false);
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *r = NULL;
    int rc = df_agg_final(&p, 1, 0, specs, 1, &arg, NAMES, &ex, &r, &err);
    if (rc != FR_OK)
        assert_null(r);
    df_table_free(r);
    df_table_free(p);
    return rc;
}

/* Partial median / count_distinct states come from peers: a blob that ends
 * inside a length prefix, holds a length past its end, or is not a whole
 * number of 8-byte values is refused as bad data, not read past. */
static void test_final_refuses_malformed_value_states(void **state)
{
    (void)state;
    /* one well-formed string "ab": 4-byte length 2, then the bytes */
    const char good[] = {2, 0, 0, 0, 'a', 'b'};
    assert_int_equal(merge_state_blob(DF_AGG_COUNT_DISTINCT, DF_TYPE_STRING, good, 6), FR_OK);
    /* ends after two bytes of a second length prefix */
    const char mid_header[] = {2, 0, 0, 0, 'a', 'b', 1, 0};
    assert_int_equal(merge_state_blob(DF_AGG_COUNT_DISTINCT, DF_TYPE_STRING, mid_header, 8),
                     FR_EDATA);
    /* a length of 0xFFFFFFFF with one byte behind it */
    const char huge[] = {(char)0xff, (char)0xff, (char)0xff, (char)0xff, 'x'};
    assert_int_equal(merge_state_blob(DF_AGG_COUNT_DISTINCT, DF_TYPE_STRING, huge, 5), FR_EDATA);
    /* a length one past the end */
    const char past[] = {3, 0, 0, 0, 'a', 'b'};
    assert_int_equal(merge_state_blob(DF_AGG_COUNT_DISTINCT, DF_TYPE_STRING, past, 6), FR_EDATA);
    /* median values are 8 bytes each: 8 is fine, 11 and 3 are not */
    const char vals[11] = {0};
    assert_int_equal(merge_state_blob(DF_AGG_MEDIAN, DF_TYPE_INT64, vals, 8), FR_OK);
    assert_int_equal(merge_state_blob(DF_AGG_MEDIAN, DF_TYPE_INT64, vals, 11), FR_EDATA);
    assert_int_equal(merge_state_blob(DF_AGG_MEDIAN, DF_TYPE_INT64, vals, 3), FR_EDATA);
    assert_int_equal(merge_state_blob(DF_AGG_COUNT_DISTINCT, DF_TYPE_INT64, vals, 11), FR_EDATA);
}

static void test_result_types_and_names(void **state)
{
    (void)state;
    assert_int_equal(df_agg_result_type(DF_AGG_SUM, DF_TYPE_BOOL), DF_TYPE_INT64);
    assert_int_equal(df_agg_result_type(DF_AGG_SUM, DF_TYPE_FLOAT64), DF_TYPE_FLOAT64);
    assert_int_equal(df_agg_result_type(DF_AGG_MAX, DF_TYPE_DATE), DF_TYPE_DATE);
    assert_int_equal(df_agg_result_type(DF_AGG_MEDIAN, DF_TYPE_INT64), DF_TYPE_FLOAT64);
    assert_int_equal(df_agg_result_type(DF_AGG_COUNT_DISTINCT, DF_TYPE_STRING), DF_TYPE_INT64);
    assert_string_equal(df_agg_func_name(DF_AGG_COUNT_STAR), "count");
    assert_string_equal(df_agg_func_name(DF_AGG_COUNT_DISTINCT), "count_distinct");
    assert_string_equal(df_agg_func_name(DF_AGG_CORR), "corr");
}

/* ---- several keys (the grouping table's row mode) ----------------------- */

/* Reference key equality: nulls equal nulls, -0.0 equals 0.0, NaN equals
 * NaN, strings by bytes. */
static bool ref_value_equal(const struct df_column *c, int64_t a, int64_t b)
{
    bool va = df_column_is_valid(c, a), vb = df_column_is_valid(c, b);
    if (!va || !vb)
        return va == vb;
    switch (c->type) {
    case DF_TYPE_STRING: {
        int64_t na, nb;
        const char *pa = df_column_string(c, a, &na), *pb = df_column_string(c, b, &nb);
        return na == nb && (na == 0 || memcmp(pa, pb, (size_t)na) == 0);
    }
    case DF_TYPE_FLOAT64: {
        double x = df_column_float64(c, a), y = df_column_float64(c, b);
        return x == y || (isnan(x) && isnan(y));
    }
    case DF_TYPE_BOOL:
        return df_column_bool(c, a) == df_column_bool(c, b);
    case DF_TYPE_DATE:
        return df_column_int32(c, a) == df_column_int32(c, b);
    default:
        return df_column_int64(c, a) == df_column_int64(c, b);
    }
}

/* Keys that collide in a record's fixed part: long strings of one length
 * and prefix (compared through their pointers), 12-byte strings differing
 * in the last byte, empty strings, -0.0 and 0.0, NaN, nulls everywhere. */
static struct df_table *collision_table(int64_t n, unsigned seed)
{
    static const char *const words[] = {"prefix_long_key_A",
                                        "prefix_long_key_B",
                                        "prefix_long_key_AB",
                                        "abcdefghijkl",
                                        "abcdefghijkm",
                                        "",
                                        "a",
                                        "ab",
                                        "prefix_long_",
                                        "id001"};
    static const double floats[] = {0.0, -0.0, NAN, 1.5, -1.5, 1e300};
    srand(seed);
    struct df_column *s = df_column_new(DF_TYPE_STRING, n), *f = df_column_new(DF_TYPE_FLOAT64, n);
    struct df_column *i = df_column_new(DF_TYPE_INT64, n), *b = df_column_new(DF_TYPE_BOOL, n);
    struct df_column *d = df_column_new(DF_TYPE_DATE, n), *s2 = df_column_new(DF_TYPE_STRING, n);
    for (int64_t r = 0; r < n; r++) {
        const char *w = words[rand() % 10];
        if (rand() % 11 == 0)
            df_column_append_null(s);
        else
            df_column_append_string(s, w, (int64_t)strlen(w));
        w = words[rand() % 3];
        df_column_append_string(s2, w, (int64_t)strlen(w));
        if (rand() % 9 == 0)
            df_column_append_null(f);
        else
            df_column_append_float64(f, floats[rand() % 6]);
        if (rand() % 7 == 0)
            df_column_append_null(i);
        else
            df_column_append_int64(i, rand() % 3 - 1);
        df_column_append_bool(b, rand() % 2);
        if (rand() % 13 == 0)
            df_column_append_null(d);
        else
            df_column_append_int32(d, rand() % 3);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "s", s);
    df_table_add(t, "f", f);
    df_table_add(t, "i", i);
    df_table_add(t, "b", b);
    df_table_add(t, "d", d);
    df_table_add(t, "s2", s2);
    return t;
}

static void test_multi_key_collisions(void **state)
{
    (void)state;
    int64_t n = 3000;
    struct df_table *in = collision_table(n, 3);
    const int keysets[][4] = {{0, 1}, {0, 2, 3}, {4, 1}, {1}, {3}, {5, 0}, {0, 1, 2, 4}, {4}};
    const int nk[] = {2, 3, 2, 1, 1, 2, 4, 1};
    struct df_agg_spec specs[] = {{DF_AGG_COUNT_STAR, -1, -1}, {DF_AGG_FIRST, 2, -1}};
    struct df_options o = opts_of(true);
    o.morsel_size_rows = 1000; /* chunks of rows inside a morsel too */
    struct fr_error err;
    fr_error_init(&err);
    int64_t *first = malloc(sizeof(int64_t) * (size_t)n),
            *count = malloc(sizeof(int64_t) * (size_t)n);
    for (int ks = 0; ks < 8; ks++) {
        /* the reference: groups by first appearance, by comparing with each */
        int64_t ng = 0;
        for (int64_t r = 0; r < n; r++) {
            int64_t g = 0;
            for (; g < ng; g++) {
                bool eq = true;
                for (int k = 0; k < nk[ks] && eq; k++)
                    eq = ref_value_equal(in->cols[keysets[ks][k]], first[g], r);
                if (eq)
                    break;
            }
            if (g == ng) {
                first[ng] = r;
                count[ng++] = 0;
            }
            count[g]++;
        }
        int64_t cuts[] = {1234, 2000};
        for (int split = 0; split < 2; split++) {
            struct df_table *r = NULL;
            assert_int_equal(
                run_agg(in, keysets[ks], nk[ks], specs, 2, cuts, split ? 2 : 0, &o, &r, &err),
                FR_OK);
            assert_int_equal(r->nrows, ng);
            for (int64_t g = 0; g < ng; g++) {
                for (int k = 0; k < nk[ks]; k++) { /* keys equal the first row's */
                    const struct df_column *c = in->cols[keysets[ks][k]];
                    struct df_table *pair = df_table_new();
                    df_table_add(pair, "x", df_column_take(c, &first[g], 1));
                    int64_t sel = g;
                    struct df_column *got = df_column_take(r->cols[k], &sel, 1);
                    struct df_table *both = df_table_new();
                    df_table_add(both, "x", got);
                    const struct df_column *cc[2] = {pair->cols[0], both->cols[0]};
                    assert_true(df_column_is_valid(cc[0], 0) == df_column_is_valid(cc[1], 0));
                    if (df_column_is_valid(cc[0], 0) && c->type == DF_TYPE_STRING) {
                        int64_t la, lb;
                        const char *pa = df_column_string(cc[0], 0, &la);
                        const char *pb = df_column_string(cc[1], 0, &lb);
                        assert_int_equal(la, lb);
                        assert_true(la == 0 || memcmp(pa, pb, (size_t)la) == 0);
                    }
                    df_table_free(pair);
                    df_table_free(both);
                }
                assert_int_equal(df_column_int64(r->cols[nk[ks]], g), count[g]);
            }
            df_table_free(r);
        }
    }
    free(first);
    free(count);
    df_table_free(in);
}

/* A first morsel with more distinct keys than half its rows still groups
 * when the whole piece has many rows per group (1e5 groups in 5e6 rows look
 * like this at 122880-row morsels): the partial holds one row per group, not
 * its rows passed through; a morsel of distinct keys alone passes them. */
static void test_partial_groups_repeating_keys(void **state)
{
    (void)state;
    int64_t n = 6000;
    for (int distinct = 0; distinct < 2; distinct++) {
        struct df_column *k = df_column_new(DF_TYPE_INT64, n), *x = df_column_new(DF_TYPE_INT64, n);
        for (int64_t i = 0; i < n; i++) {
            df_column_append_int64(k, distinct ? i : (i * 61) % 100);
            df_column_append_int64(x, i % 5);
        }
        struct df_table *in = df_table_new();
        df_table_add(in, "k", k);
        df_table_add(in, "x", x);
        struct df_options o = opts_of(true);
        o.morsel_size_rows = 120; /* 100 distinct keys in the first morsel */
        struct df_exec ex;
        df_exec_init(&ex, &o, NULL);
        struct fr_error err;
        fr_error_init(&err);
        int keys[] = {0};
        struct df_agg_spec specs[] = {{DF_AGG_SUM, 1, -1}};
        struct df_table *part = NULL;
        assert_int_equal(df_agg_partial(in, keys, 1, specs, 1, &ex, &part, &err), FR_OK);
        assert_int_equal(part->nrows, distinct ? n : 100);
        assert_int_equal(part->names[1][1] == 'r', distinct);
        df_table_free(part);
        df_table_free(in);
    }
}

/* int64 sums are exact through both phases: a partial sum past int64
 * travels whole (2 * INT64_MAX, then - INT64_MAX - 5), mean divides the
 * exact sum (1e18 + 1 - 1e18 + 2 is 3, not a double's 2), and a final sum
 * past int64 fails with arithmetic-overflow, never wraps. */
/* A sum over a column without nulls does not count its values (one memory
 * access a row): every group, the ones first seen in later morsels too, still
 * has its value, not a null, in the partial states and the result; a piece
 * with nulls in the same query is counted, and a group of nulls alone there
 * stays null. */
static void test_sums_without_nulls(void **state)
{
    (void)state;
    enum { N = 600 };
    int64_t k[N], xi[N], want_i[200] = {0};
    double want_d[200] = {0};
    struct df_column *xd = df_column_new(DF_TYPE_FLOAT64, N);
    for (int i = 0; i < N; i++) {
        k[i] = (i * 7) % 200 < 100 ? i / 3 : i % 50; /* new groups keep coming */
        xi[i] = i < 400 ? i * 11 - 3000 : (i % 5 ? i : NUL);
        df_column_append_float64(xd, i * 0.5);
    }
    struct df_table *in = df_table_new();
    df_table_add(in, "k", ints_col(k, N));
    df_table_add(in, "xi", ints_col(xi, N));
    df_table_add(in, "xd", xd);
    struct df_agg_spec specs[] = {{DF_AGG_SUM, 1, -1}, {DF_AGG_SUM, 2, -1}};
    struct df_options o = opts_of(true);
    struct fr_error err;
    fr_error_init(&err);
    int keys[] = {0};
    const int64_t cuts[] = {400}; /* xi: no nulls before 400, nulls after */
    struct df_table *r = NULL;
    assert_int_equal(run_agg(in, keys, 1, specs, 2, cuts, 1, &o, &r, &err), FR_OK);
    bool seen[200] = {false}, valued[200] = {false};
    for (int i = 0; i < N; i++) {
        seen[k[i]] = true;
        if (xi[i] != NUL) {
            want_i[k[i]] += xi[i];
            valued[k[i]] = true;
        }
        want_d[k[i]] += i * 0.5;
    }
    int64_t groups = 0;
    for (int g = 0; g < 200; g++)
        groups += seen[g];
    assert_int_equal(r->nrows, groups);
    for (int64_t row = 0; row < r->nrows; row++) {
        int64_t g = df_column_int64(r->cols[0], row);
        if (valued[g])
            assert_int_equal(df_column_int64(r->cols[1], row), want_i[g]);
        else
            assert_cell_null(r, 1, row);
        assert_true(df_column_is_valid(r->cols[2], row));
        assert_float_equal(df_column_float64(r->cols[2], row), want_d[g], 1e-9);
    }
    df_table_free(r);
    df_table_free(in);
}

static void test_int64_sums_exact(void **state)
{
    (void)state;
    static const int64_t big[] = {INT64_MAX, INT64_MAX, -INT64_MAX, -5};
    static const int64_t avg[] = {1000000000000000000, 1, -1000000000000000000, 2};
    static const int64_t over[] = {INT64_MAX, 1};
    struct df_agg_spec specs[] = {{DF_AGG_SUM, 0, -1}, {DF_AGG_MEAN, 0, -1}};
    struct df_options o = opts_of(false);
    const int64_t *vals[] = {big, avg, over};
    const int nvals[] = {4, 4, 2};
    for (int t = 0; t < 3; t++) {
        struct df_column *v = df_column_new(DF_TYPE_INT64, nvals[t]);
        for (int i = 0; i < nvals[t]; i++)
            df_column_append_int64(v, vals[t][i]);
        struct df_table *in = df_table_new();
        df_table_add(in, "v", v);
        in->nrows = nvals[t];
        struct df_table *r = NULL;
        struct fr_error err;
        fr_error_init(&err);
        const int64_t cuts[] = {2};
        int rc = run_agg(in, NULL, 0, specs, 2, cuts, t == 2 ? 0 : 1, &o, &r, &err);
        if (t == 0) {
            assert_int_equal(rc, FR_OK);
            assert_int_equal(df_column_int64(r->cols[0], 0), INT64_MAX - 5);
        } else if (t == 1) {
            assert_int_equal(rc, FR_OK);
            assert_int_equal(df_column_int64(r->cols[0], 0), 3);
            assert_true(fabs(df_column_float64(r->cols[1], 0) - 0.75) < 1e-12);
        } else {
            assert_int_equal(rc, FR_EDATA);
            assert_string_equal(err.kind, "arithmetic-overflow");
            assert_non_null(strstr(err.message, "cast to double to sum past int64"));
        }
        df_table_free(r);
        df_table_free(in);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int64_sums_exact),
        cmocka_unit_test(test_sums_without_nulls),
        cmocka_unit_test(test_each_aggregate_with_nulls),
        cmocka_unit_test(test_empty_and_one_row),
        cmocka_unit_test(test_all_null_group),
        cmocka_unit_test(test_split_invariance),
        cmocka_unit_test(test_pass_through_partials),
        cmocka_unit_test(test_partial_groups_repeating_keys),
        cmocka_unit_test(test_maintain_order_across_partials),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_bad_argument_type),
        cmocka_unit_test(test_final_refuses_mismatched_partials),
        cmocka_unit_test(test_final_refuses_malformed_value_states),
        cmocka_unit_test(test_result_types_and_names),
        cmocka_unit_test(test_multi_key_collisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
