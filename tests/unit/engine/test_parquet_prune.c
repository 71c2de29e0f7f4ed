/* Tests of row-group pruning (src/engine/engine_parquet_prune.c): a golden
 * table of predicates over one row group's statistics, each either proven
 * to match no row (skip) or kept; whatever pruning does not understand is
 * kept, and a comparison with null or on an all-null column is skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "engine/engine.h"

/* The row group: 100 rows; i in [10, 20], f in [-1.5, 2.5], d in
 * [2024-01-10, 2024-01-20], t in [2024-01-10 00:00, 2024-01-10 12:00],
 * s in ['bravo', 'delta'], n all null, u no statistics, z with 0 nulls. */
enum { COL_I, COL_F, COL_D, COL_T, COL_S, COL_N, COL_U, COL_Z, NCOLS };
#define ROWS 100

static struct df_parquet_stats stats[NCOLS];

static void fill_stats(void)
{
    memset(stats, 0, sizeof(stats));
    stats[COL_I] = (struct df_parquet_stats){true, {.i = 10}, {.i = 20}, 3};
    stats[COL_F] = (struct df_parquet_stats){true, {.f = -1.5}, {.f = 2.5}, 0};
    stats[COL_D].has_min_max = true;
    stats[COL_D].min.i = df_ymd_to_days(2024, 1, 10);
    stats[COL_D].max.i = df_ymd_to_days(2024, 1, 20);
    stats[COL_D].null_count = -1;
    int64_t day = (int64_t)df_ymd_to_days(2024, 1, 10) * 86400000000LL;
    stats[COL_T] = (struct df_parquet_stats){true, {.i = day}, {.i = day + 43200000000LL}, 0};
    stats[COL_S] =
        (struct df_parquet_stats){true, {.s = "bravo", .len = 5}, {.s = "delta", .len = 5}, 0};
    stats[COL_N] = (struct df_parquet_stats){false, {0}, {0}, ROWS};
    stats[COL_U] = (struct df_parquet_stats){false, {0}, {0}, -1};
    stats[COL_Z] = (struct df_parquet_stats){true, {.i = 1}, {.i = 5}, 0};
}

static int calls;

static void get_stats(void *arg, int col, struct df_parquet_stats *out)
{
    (void)arg;
    calls++;
    assert_true(col >= 0 && col < NCOLS);
    *out = stats[col];
}

static void make_schema(struct df_schema *s)
{
    df_schema_init(s);
    df_schema_add(s, "i", DF_TYPE_INT64);
    df_schema_add(s, "f", DF_TYPE_FLOAT64);
    df_schema_add(s, "d", DF_TYPE_DATE);
    df_schema_add(s, "t", DF_TYPE_TIMESTAMP);
    df_schema_add(s, "s", DF_TYPE_STRING);
    df_schema_add(s, "n", DF_TYPE_INT64);
    df_schema_add(s, "u", DF_TYPE_INT64);
    df_schema_add(s, "z", DF_TYPE_INT64);
}

struct pcase {
    const char *expr;
    bool may; /* true: kept; false: skipped */
};

static const struct pcase cases[] = {
    /* comparisons, both sides */
    {"i > 20", false},
    {"i >= 20", true},
    {"i < 10", false},
    {"i <= 10", true},
    {"i = 15", true},
    {"i = 21", false},
    {"i = 9", false},
    {"20 < i", false},
    {"10 > i", false},
    {"15 = i", true},
    {"i != 15", true}, /* not understood: kept */
    /* int column against a float literal (the column is cast) */
    {"i > 20.5", false},
    {"i > 19.5", true},
    /* floats */
    {"f > 2.5", false},
    {"f >= 2.5", true},
    {"f < -1.5", false},
    {"f < 0", true},
    /* dates, timestamps and strings (a date literal against a timestamp) */
    {"d > date '2024-01-20'", false},
    {"d >= '2024-01-20'", true},
    {"d < date '2024-01-10'", false},
    {"t > timestamp '2024-01-10 12:00:00'", false},
    {"t > timestamp '2024-01-10 11:59:59'", true},
    {"t < date '2024-01-10'", false},
    {"t >= date '2024-01-10'", true},
    {"s > 'delta'", false},
    {"s >= 'delta'", true},
    {"s < 'bravo'", false},
    {"s = 'charlie'", true},
    {"s = 'echo'", false},
    {"s = 'b'", false},
    {"s > 'deltaa'", false},
    /* between, in */
    {"i between 21 and 30", false},
    {"i between 0 and 9", false},
    {"i between 0 and 10", true},
    {"i between 20 and 30", true},
    {"i not between 10 and 20", true},
    {"i in (1, 2, 30)", false},
    {"i in (1, 12)", true},
    {"i not in (10, 11)", true},
    {"s in ('alpha', 'echo')", false},
    {"s in ('alpha', 'charlie')", true},
    /* null counts */
    {"n is null", true},
    {"n is not null", false},
    {"z is null", false},
    {"z is not null", true},
    {"i is null", true},
    {"u is null", true},
    {"u is not null", true},
    /* through a cast: a failing cast makes a null, so IS NULL is kept */
    {"cast(s as int64) is null", true},
    {"cast(s as float64) is null", true},
    {"cast(z as float64) is null", false},
    {"cast(z as string) is null", false},
    {"cast(s as int64) is not null", true},
    {"cast(n as string) is not null", false},
    {"cast(n as float64) is not null", false},
    {"n > 1", false}, /* every row null: no comparison is true */
    {"n = 1 or i > 100", false},
    {"i = null", false},
    /* no statistics: kept */
    {"u > 1000", true},
    {"u between 1 and 2", true},
    /* and, or, not, other forms */
    {"i > 15 and f > 100", false},
    {"i > 15 and f > 0", true},
    {"i > 100 or f > 100", false},
    {"i > 100 or f > 0", true},
    {"not (i > 15)", true},
    {"i + 1 > 100", true},
    {"abs(i) > 100", true},
    {"s like 'z%'", true},
    {"i > 15 and (s = 'echo' or d > date '2025-01-01')", false},
    {"false", false},
    {"true", true},
};

static void test_golden(void **state)
{
    (void)state;
    fill_stats();
    struct df_schema s;
    make_schema(&s);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        df_expr *e = NULL;
        struct fr_error err;
        fr_error_init(&err);
        if (df_expr_parse(cases[k].expr, &s, &e, &err) != FR_OK)
            fail_msg("%s: %s", cases[k].expr, err.message);
        bool got = df_expr_may_match(e, get_stats, NULL, ROWS);
        if (got != cases[k].may)
            fail_msg("%s: expected %s, got %s", cases[k].expr, cases[k].may ? "kept" : "skipped",
                     got ? "kept" : "skipped");
        df_expr_free(e);
    }
    df_schema_cleanup(&s);
}

/* No expression or no statistics callback: every row group may match. */
static void test_nothing_known(void **state)
{
    (void)state;
    assert_true(df_expr_may_match(NULL, get_stats, NULL, ROWS));
    struct df_schema s;
    make_schema(&s);
    df_expr *e = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_expr_parse("i > 1000", &s, &e, &err), FR_OK);
    assert_true(df_expr_may_match(e, NULL, NULL, ROWS));
    fill_stats();
    calls = 0;
    assert_false(df_expr_may_match(e, get_stats, NULL, ROWS));
    assert_true(calls > 0);
    /* an empty group whose column says 0 nulls of 0 rows is judged by min/max */
    stats[COL_I].has_min_max = false;
    stats[COL_I].null_count = 0;
    assert_true(df_expr_may_match(e, get_stats, NULL, 0));
    df_expr_free(e);
    df_schema_cleanup(&s);
}

/* NaN bounds say nothing about the order: kept. */
static void test_nan_bounds(void **state)
{
    (void)state;
    fill_stats();
    stats[COL_F].max.f = __builtin_nan("");
    struct df_schema s;
    make_schema(&s);
    df_expr *e = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_expr_parse("f > 100", &s, &e, &err), FR_OK);
    assert_true(df_expr_may_match(e, get_stats, NULL, ROWS));
    df_expr_free(e);
    df_schema_cleanup(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_nothing_known),
        cmocka_unit_test(test_nan_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
