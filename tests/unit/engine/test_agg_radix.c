/* Tests of src/engine/engine_agg_radix.c: a partial over many groups split
 * by hash before grouping gives, bucket by bucket, the same groups and
 * states as one table whose partial is split after (every aggregate, null
 * and string keys, one and two keys), and the same final answer; the split
 * is taken only where it pays (many groups), never with maintain_order,
 * nor for rows that pass through ungrouped or for few rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "engine/engine.h"
#include "engine/engine_ops_int.h"

#define NBUCKETS 3 /* odd: parts nest in buckets by the same hash bits */
/* the split from this many expected groups here (the default's 524288 would
 * need inputs of millions of rows) */
#define MIN_GROUPS 65536.0

/* k: strings "g<n>" of `groups` values (1 in 50 null), k2: 0 or 1, v:
 * int64, f: float64 (1 in 20 null). */
static struct df_table *table(int64_t n, int groups, unsigned seed)
{
    srand(seed);
    struct df_column *k = df_column_new(DF_TYPE_STRING, n), *k2 = df_column_new(DF_TYPE_INT64, n);
    struct df_column *v = df_column_new(DF_TYPE_INT64, n), *f = df_column_new(DF_TYPE_FLOAT64, n);
    for (int64_t r = 0; r < n; r++) {
        char buf[32];
        if (rand() % 50 == 0) {
            df_column_append_null(k);
        } else {
            int len = snprintf(buf, sizeof(buf), "g%d", rand() % groups);
            df_column_append_string(k, buf, len);
        }
        df_column_append_int64(k2, rand() % 2);
        df_column_append_int64(v, rand() % 1000 - 500);
        if (rand() % 20 == 0)
            df_column_append_null(f);
        else
            df_column_append_float64(f, rand() / 7.0);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "k", k);
    df_table_add(t, "k2", k2);
    df_table_add(t, "v", v);
    df_table_add(t, "f", f);
    t->nrows = n;
    return t;
}

static const struct df_agg_spec SPECS[] = {
    {DF_AGG_COUNT_STAR, -1, -1}, {DF_AGG_SUM, 2, -1},   {DF_AGG_MEAN, 3, -1},
    {DF_AGG_MIN, 3, -1},         {DF_AGG_MAX, 2, -1},   {DF_AGG_STDDEV, 3, -1},
    {DF_AGG_MEDIAN, 3, -1},      {DF_AGG_FIRST, 2, -1}, {DF_AGG_COUNT_DISTINCT, 2, -1},
    {DF_AGG_CORR, 2, 3},         {DF_AGG_COUNT, 3, -1},
};
#define NSPECS ((int)(sizeof(SPECS) / sizeof(SPECS[0])))

/* Row r of t as text (float bits exact, strings as hex). */
static char *row_text(const struct df_table *t, int64_t r)
{
    struct fr_buf b;
    fr_buf_init(&b);
    for (int i = 0; i < t->ncols; i++) {
        const struct df_column *c = t->cols[i];
        if (!df_column_is_valid(c, r)) {
            fr_buf_puts(&b, "N|");
            continue;
        }
        switch (c->type) {
        case DF_TYPE_STRING: {
            int64_t n;
            const char *s = df_column_string(c, r, &n);
            for (int64_t j = 0; j < n; j++)
                fr_buf_printf(&b, "%02x", (unsigned char)s[j]);
            break;
        }
        case DF_TYPE_FLOAT64:
            fr_buf_printf(&b, "%a", df_column_float64(c, r));
            break;
        case DF_TYPE_BOOL:
            fr_buf_printf(&b, "%d", df_column_bool(c, r));
            break;
        default:
            fr_buf_printf(&b, "%lld", (long long)df_column_int64(c, r));
            break;
        }
        fr_buf_putc(&b, '|');
    }
    return b.data;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The same rows, in any order, and the same column names. */
static void assert_same_rows(const struct df_table *a, const struct df_table *b)
{
    assert_int_equal(a->ncols, b->ncols);
    for (int i = 0; i < a->ncols; i++)
        assert_string_equal(a->names[i], b->names[i]);
    assert_int_equal(a->nrows, b->nrows);
    char **x = calloc((size_t)a->nrows + 1, sizeof(char *));
    char **y = calloc((size_t)b->nrows + 1, sizeof(char *));
    for (int64_t r = 0; r < a->nrows; r++) {
        x[r] = row_text(a, r);
        y[r] = row_text(b, r);
    }
    qsort(x, (size_t)a->nrows, sizeof(char *), cmp_str);
    qsort(y, (size_t)b->nrows, sizeof(char *), cmp_str);
    for (int64_t r = 0; r < a->nrows; r++) {
        if (strcmp(x[r], y[r]) != 0)
            fail_msg("row %lld differs:\n  split first: %s\n  one table:   %s", (long long)r, x[r],
                     y[r]);
        free(x[r]);
        free(y[r]);
    }
    free(x);
    free(y);
}

/* The final answer over one task's buckets, bucket by bucket, in one table. */
static struct df_table *final_of(struct df_table **parts, int nkeys, struct df_exec *ex)
{
    df_type types[NSPECS];
    const char *names[NSPECS];
    char nb[NSPECS][8];
    for (int k = 0; k < NSPECS; k++) {
        types[k] = SPECS[k].func == DF_AGG_COUNT_STAR ? DF_TYPE_INT64
                   : SPECS[k].arg == 2                ? DF_TYPE_INT64
                                                      : DF_TYPE_FLOAT64;
        snprintf(nb[k], sizeof(nb[k]), "a%d", k);
        names[k] = nb[k];
    }
    struct df_table *outs[NBUCKETS], *all = NULL;
    struct fr_error err;
    fr_error_init(&err);
    for (int b = 0; b < NBUCKETS; b++)
        assert_int_equal(
            df_agg_final(&parts[b], 1, nkeys, SPECS, NSPECS, types, names, ex, &outs[b], &err),
            FR_OK);
    assert_int_equal(df_table_concat(outs, NBUCKETS, &all, &err), FR_OK);
    for (int b = 0; b < NBUCKETS; b++)
        df_table_free(outs[b]);
    return all;
}

static void check_split_matches(int nkeys)
{
    /* 6e5 rows of 1e5 groups (two keys: 5e4 x 2): grouping shrinks them
     * 6-fold (no pass-through), and 1e5 groups are enough to split */
    struct df_table *in = table(600000, nkeys == 1 ? 100000 : 50000, 3u + (unsigned)nkeys);
    const int keys[] = {0, 1};
    struct df_options plain_opts = {.morsel_size_rows = 122880, .maintain_order = true};
    struct df_options split_opts = {.morsel_size_rows = 122880};
    struct df_exec plain, split;
    df_exec_init(&plain, &plain_opts, NULL);
    df_exec_init(&split, &split_opts, NULL);
    assert_true(df__agg_radix_parts(in, keys, nkeys, NBUCKETS, MIN_GROUPS, &split) >
                1); /* parts concatenated */
    assert_int_equal(df__agg_radix_parts(in, keys, nkeys, NBUCKETS, MIN_GROUPS, &plain), 0);
    struct df_table *a[NBUCKETS], *b[NBUCKETS];
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df__agg_partial_split_at(in, keys, nkeys, SPECS, NSPECS, &split, NBUCKETS,
                                              MIN_GROUPS, a, &err),
                     FR_OK);
    assert_int_equal(df__agg_partial_split_at(in, keys, nkeys, SPECS, NSPECS, &plain, NBUCKETS,
                                              MIN_GROUPS, b, &err),
                     FR_OK);
    int64_t groups = 0;
    for (int i = 0; i < NBUCKETS; i++) {
        assert_same_rows(a[i], b[i]); /* bucket by bucket: the same groups and states */
        groups += a[i]->nrows;
    }
    assert_true(groups > 90000);
    struct df_table *fa = final_of(a, nkeys, &split), *fb = final_of(b, nkeys, &plain);
    assert_int_equal(fa->nrows, groups);
    assert_same_rows(fa, fb);
    df_table_free(fa);
    df_table_free(fb);
    for (int i = 0; i < NBUCKETS; i++) {
        df_table_free(a[i]);
        df_table_free(b[i]);
    }
    assert_int_equal(split.mem_used, 0); /* every charge given back */
    df_table_free(in);
}

static void test_split_matches_one_table(void **state)
{
    (void)state;
    check_split_matches(1);
    check_split_matches(2);
}

static void test_split_only_where_it_pays(void **state)
{
    (void)state;
    struct df_options opts = {.morsel_size_rows = 122880};
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    const int key = 0;
    struct df_table *few = table(300000, 5000, 1), *small = table(100000, 90000, 2);
    assert_int_equal(df__agg_radix_parts(few, &key, 1, NBUCKETS, MIN_GROUPS, &ex), 0);
    assert_int_equal(df__agg_radix_parts(small, &key, 1, NBUCKETS, MIN_GROUPS, &ex), 0);
    /* every row its own group: the rows pass through, no split */
    struct df_column *id = df_column_new(DF_TYPE_INT64, 300000);
    for (int64_t r = 0; r < 300000; r++)
        df_column_append_int64(id, r * 7919);
    struct df_table *distinct = df_table_new();
    df_table_add(distinct, "id", id);
    assert_int_equal(df__agg_radix_parts(distinct, &key, 1, NBUCKETS, MIN_GROUPS, &ex), 0);
    /* more groups, more parts per bucket, within the cap */
    struct df_table *many = table(1000000, 250000, 4);
    int k8 = df__agg_radix_parts(many, &key, 1, 8, MIN_GROUPS, &ex);
    assert_true(k8 >= 2 && k8 * 8 <= 256);
    assert_int_equal(df__agg_radix_parts(many, &key, 1, 4096, MIN_GROUPS, &ex), 1);
    /* the default: 2.5e5 groups are not enough */
    assert_int_equal(df__agg_radix_parts(many, &key, 1, 8, 524288.0, &ex), 0);
    df_table_free(few);
    df_table_free(small);
    df_table_free(distinct);
    df_table_free(many);
}

/* The split copies the rows: where that copy is over the task's memory
 * limit but one table's partial fits, the task still succeeds (the split
 * is declined) with the same answer; every charge is given back, after a
 * failure too. */
static void test_split_declined_over_the_limit(void **state)
{
    (void)state;
    enum { N = 600000 };
    srand(9);
    struct df_column *k = df_column_new(DF_TYPE_INT64, N), *s = df_column_new(DF_TYPE_STRING, N);
    char wide[100];
    memset(wide, 'w', sizeof(wide));
    for (int64_t r = 0; r < N; r++) {
        df_column_append_int64(k, rand() % 100000);
        df_column_append_string(s, wide, 60 + rand() % 40);
    }
    struct df_table *in = df_table_new();
    df_table_add(in, "k", k);
    df_table_add(in, "s", s);
    in->nrows = N;
    const struct df_agg_spec specs[] = {{DF_AGG_COUNT, 1, -1}, {DF_AGG_SUM, 0, -1}};
    const int key = 0;
    struct df_options free_opts = {.morsel_size_rows = 122880};
    struct df_options tight = {.morsel_size_rows = 122880,
                               .task_memory_limit_bytes = df_table_bytes(in) / 2};
    struct df_options tiny = {.morsel_size_rows = 122880, .task_memory_limit_bytes = 100000};
    struct df_exec a, b, c;
    df_exec_init(&a, &free_opts, NULL);
    df_exec_init(&b, &tight, NULL);
    df_exec_init(&c, &tiny, NULL);
    assert_true(df__agg_radix_parts(in, &key, 1, NBUCKETS, MIN_GROUPS, &b) > 0);
    struct df_table *x[NBUCKETS], *y[NBUCKETS], *z[NBUCKETS];
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(
        df__agg_partial_split_at(in, &key, 1, specs, 2, &a, NBUCKETS, MIN_GROUPS, x, &err), FR_OK);
    assert_int_equal(
        df__agg_partial_split_at(in, &key, 1, specs, 2, &b, NBUCKETS, MIN_GROUPS, y, &err), FR_OK);
    assert_true(a.mem_peak > tight.task_memory_limit_bytes); /* the split's copy: over it */
    assert_true(b.mem_peak <= tight.task_memory_limit_bytes * 2);
    for (int i = 0; i < NBUCKETS; i++) {
        assert_same_rows(x[i], y[i]);
        df_table_free(x[i]);
        df_table_free(y[i]);
    }
    assert_int_equal(
        df__agg_partial_split_at(in, &key, 1, specs, 2, &c, NBUCKETS, MIN_GROUPS, z, &err),
        FR_EMEMLIMIT);
    for (int i = 0; i < NBUCKETS; i++)
        assert_null(z[i]);
    assert_int_equal(a.mem_used, 0);
    assert_int_equal(b.mem_used, 0);
    assert_int_equal(c.mem_used, 0);
    df_table_free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_matches_one_table),
        cmocka_unit_test(test_split_only_where_it_pays),
        cmocka_unit_test(test_split_declined_over_the_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
