/* Tests of src/engine/engine_window.c and engine_window_parse.c: the parse
 * of window functions (names, aliases, offsets, defaults and their errors),
 * and df_window against a naive reference (every row's frame recomputed from
 * scratch) over random tables with null and NaN keys, ties, several
 * partitions, one partition and no order, plus empty input, the memory
 * account and bad arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

/* columns: id (int64, the input position), p (int64 partition, nulls), o
 * (int64 order, ties and nulls), f (float64, nulls and NaN), s (string) */
static struct df_table *make_table(int64_t n, int parts, unsigned seed)
{
    srand(seed);
    struct df_column *id = df_column_new(DF_TYPE_INT64, n), *p = df_column_new(DF_TYPE_INT64, n);
    struct df_column *o = df_column_new(DF_TYPE_INT64, n), *f = df_column_new(DF_TYPE_FLOAT64, n);
    struct df_column *s = df_column_new(DF_TYPE_STRING, n);
    static const char *const sv[] = {"a", "bb", "", "zz", "b"};
    for (int64_t r = 0; r < n; r++) {
        df_column_append_int64(id, r);
        if (rand() % 9 == 0)
            df_column_append_null(p);
        else
            df_column_append_int64(p, rand() % parts);
        if (rand() % 7 == 0)
            df_column_append_null(o);
        else
            df_column_append_int64(o, rand() % 5);
        int fr = rand() % 8;
        if (fr == 0)
            df_column_append_null(f);
        else
            df_column_append_float64(f, fr == 1 ? NAN : (double)(rand() % 7) - 2.5);
        if (rand() % 6 == 0)
            df_column_append_null(s);
        else
            df_column_append_string(s, sv[r % 5], (int64_t)strlen(sv[r % 5]));
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "id", id);
    df_table_add(t, "p", p);
    df_table_add(t, "o", o);
    df_table_add(t, "f", f);
    df_table_add(t, "s", s);
    t->nrows = n;
    return t;
}

static struct df_window_call call(const char *text, const struct df_table *t)
{
    struct df_schema s;
    df_schema_of_table(&s, t);
    struct df_window_call c;
    struct fr_error err;
    fr_error_init(&err);
    if (df_window_call_parse(text, &s, &c, &err) != FR_OK)
        fail_msg("%s: %s", text, err.message);
    df_schema_cleanup(&s);
    return c;
}

/* -1, 0, 1 of row a against row b on column c, nulls equal and last (or
 * first), NaN above every number and equal to itself. */
static int cmp2(const struct df_column *c, int64_t a, const struct df_column *d, int64_t b,
                bool nulls_first)
{
    bool va = df_column_is_valid(c, a), vb = df_column_is_valid(d, b);
    if (!va || !vb)
        return va == vb ? 0 : (!va == nulls_first) ? -1 : 1;
    if (c->type == DF_TYPE_FLOAT64) {
        double x = df_column_float64(c, a), y = df_column_float64(d, b);
        if (isnan(x) || isnan(y))
            return isnan(x) == isnan(y) ? 0 : isnan(x) ? 1 : -1;
        return (x > y) - (x < y);
    }
    if (c->type == DF_TYPE_STRING) {
        int64_t la, lb;
        const char *x = df_column_string(c, a, &la), *y = df_column_string(d, b, &lb);
        int r = memcmp(x, y, (size_t)(la < lb ? la : lb));
        return r ? (r > 0) - (r < 0) : (la > lb) - (la < lb);
    }
    int64_t x = df_column_int64(c, a), y = df_column_int64(d, b);
    return (x > y) - (x < y);
}

static int cmp_val(const struct df_column *c, int64_t a, int64_t b, bool nulls_first)
{
    return cmp2(c, a, c, b, nulls_first);
}

/* The window a check runs: partition column (or -1), order keys. */
struct win {
    const struct df_table *r; /* the operator's output */
    int part;
    const struct df_sort_key *keys;
    int nkeys;
};

static bool same_part(const struct win *w, int64_t a, int64_t b)
{
    return w->part < 0 || cmp_val(w->r->cols[w->part], a, b, false) == 0;
}

static int ocmp(const struct win *w, int64_t a, int64_t b)
{
    for (int k = 0; k < w->nkeys; k++) {
        int c = cmp_val(w->r->cols[w->keys[k].col], a, b, w->keys[k].nulls_first);
        bool nulls = !df_column_is_valid(w->r->cols[w->keys[k].col], a) ||
                     !df_column_is_valid(w->r->cols[w->keys[k].col], b);
        if (c)
            return w->keys[k].desc && !nulls ? -c : c;
    }
    return 0;
}

/* In i's frame: its partition, and with an order the rows up to its peers. */
static bool in_frame(const struct win *w, int64_t i, int64_t j)
{
    return same_part(w, i, j) && (w->nkeys == 0 || ocmp(w, j, i) <= 0);
}

/* The reference rank-like value of row i. */
static int64_t ref_rank(const struct win *w, const struct df_window_call *c, int64_t i)
{
    int64_t v = 1;
    for (int64_t j = 0; j < w->r->nrows; j++) {
        if (!same_part(w, i, j))
            continue;
        if (c->func == DF_WIN_ROW_NUMBER && j < i)
            v++;
        else if (c->func == DF_WIN_RANK && ocmp(w, j, i) < 0)
            v++;
        else if (c->func == DF_WIN_DENSE_RANK && ocmp(w, j, i) < 0) {
            bool first = true; /* count each peer class once */
            for (int64_t k = 0; k < j && first; k++)
                first = !(same_part(w, i, k) && ocmp(w, k, j) == 0);
            v += first;
        }
    }
    return v;
}

/* lag/lead: the source row, or -1 past the partition's edge. */
static int64_t ref_shift(const struct win *w, const struct df_window_call *c, int64_t i)
{
    int64_t step = c->func == DF_WIN_LAG ? -1 : 1, left = c->offset, j = i;
    while (left > 0) {
        j += step;
        if (j < 0 || j >= w->r->nrows)
            return -1;
        if (same_part(w, i, j))
            left--;
    }
    return j;
}

static void check_shift(const struct win *w, const struct df_window_call *c,
                        const struct df_column *out, int64_t i)
{
    const struct df_column *x = w->r->cols[c->arg];
    int64_t j = ref_shift(w, c, i);
    if (j >= 0)
        assert_int_equal(cmp2(out, i, x, j, false), 0);
    else if (c->dflt)
        assert_int_equal(cmp2(out, i, c->dflt, 0, false), 0);
    else
        assert_false(df_column_is_valid(out, i));
}

/* sum, avg, count, count(*): as a double (valid false for null). */
static double ref_agg(const struct win *w, const struct df_window_call *c, int64_t i, bool *valid,
                      int64_t *best)
{
    const struct df_column *x = c->arg >= 0 ? w->r->cols[c->arg] : NULL;
    double sum = 0;
    int64_t rows = 0, n = 0;
    *best = -1;
    for (int64_t j = 0; j < w->r->nrows; j++) {
        if (!in_frame(w, i, j))
            continue;
        rows++;
        if (!x || !df_column_is_valid(x, j))
            continue;
        n++;
        if (x->type == DF_TYPE_FLOAT64 || x->type == DF_TYPE_INT64)
            sum += x->type == DF_TYPE_FLOAT64 ? df_column_float64(x, j)
                                              : (double)df_column_int64(x, j);
        int cmp = *best < 0 ? 0 : cmp_val(x, j, *best, false);
        if (*best < 0 || (c->func == DF_WIN_MIN ? cmp < 0 : cmp > 0))
            *best = j;
    }
    *valid = true;
    if (c->func == DF_WIN_COUNT_STAR)
        return (double)rows;
    if (c->func == DF_WIN_COUNT)
        return (double)n;
    *valid = n > 0;
    return c->func == DF_WIN_AVG && n ? sum / (double)n : sum;
}

static void check_agg(const struct win *w, const struct df_window_call *c,
                      const struct df_column *out, int64_t i)
{
    bool valid;
    int64_t best;
    double v = ref_agg(w, c, i, &valid, &best);
    if (c->func == DF_WIN_MIN || c->func == DF_WIN_MAX) {
        if (best < 0)
            assert_false(df_column_is_valid(out, i));
        else
            assert_int_equal(cmp2(out, i, w->r->cols[c->arg], best, false), 0);
        return;
    }
    assert_int_equal(df_column_is_valid(out, i), valid);
    if (!valid)
        return;
    double got =
        out->type == DF_TYPE_FLOAT64 ? df_column_float64(out, i) : (double)df_column_int64(out, i);
    if (isnan(v))
        assert_true(isnan(got));
    else
        assert_true(fabs(got - v) <= 1e-9 * fmax(1, fabs(v)));
}

/* The output is sorted by (partition, order) and stable (id rises among ties). */
static void check_sorted(const struct win *w)
{
    const struct df_column *id = w->r->cols[0];
    for (int64_t i = 1; i < w->r->nrows; i++) {
        int c = w->part >= 0 ? cmp_val(w->r->cols[w->part], i - 1, i, false) : 0;
        if (c == 0)
            c = ocmp(w, i - 1, i);
        assert_true(c <= 0);
        if (c == 0)
            assert_true(df_column_int64(id, i - 1) < df_column_int64(id, i));
    }
}

static const char *const funcs[] = {
    "row_number() as rn", "rank() as r",     "dense_rank() as dr",  "lag(o, 2, -1) as lg",
    "lead(s) as ld",      "lag(f, 0) as l0", "lead(f, 3, 1) as l3", "sum(o) as so",
    "avg(f) as af",       "min(s) as mn",    "max(f) as mx",        "count(f) as cf",
    "count(*) as cs",     "sum(f) as sf",    "mean(o) as ao",       "max(s) as xs",
};
#define NFUNCS ((int)(sizeof(funcs) / sizeof(funcs[0])))

static void check_window(const struct df_table *t, int part, const struct df_sort_key *keys,
                         int nkeys)
{
    struct df_options o = {0};
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_window_call calls[NFUNCS];
    for (int k = 0; k < NFUNCS; k++)
        calls[k] = call(funcs[k], t);
    struct df_table *r = NULL;
    assert_int_equal(df_window(t, &part, part >= 0, keys, nkeys, calls, NFUNCS, &ex, &r, &err),
                     FR_OK);
    assert_int_equal(ex.mem_used, 0);
    assert_int_equal(r->nrows, t->nrows);
    assert_int_equal(r->ncols, t->ncols + NFUNCS);
    struct win w = {r, part, keys, nkeys};
    check_sorted(&w);
    for (int k = 0; k < NFUNCS; k++) {
        const struct df_window_call *c = &calls[k];
        const struct df_column *out = r->cols[t->ncols + k];
        assert_string_equal(r->names[t->ncols + k], c->name);
        assert_int_equal(out->type, c->type);
        for (int64_t i = 0; i < r->nrows; i++) {
            if (c->func <= DF_WIN_DENSE_RANK)
                assert_int_equal(df_column_int64(out, i), ref_rank(&w, c, i));
            else if (c->func == DF_WIN_LAG || c->func == DF_WIN_LEAD)
                check_shift(&w, c, out, i);
            else
                check_agg(&w, c, out, i);
        }
    }
    for (int k = 0; k < NFUNCS; k++)
        df_window_call_cleanup(&calls[k]);
    df_table_free(r);
}

static void test_against_reference(void **state)
{
    (void)state;
    struct df_sort_key one[] = {{2, false, false}};
    struct df_sort_key two[] = {{3, true, true}, {2, false, false}};
    struct df_sort_key nf[] = {{2, true, true}};
    for (unsigned seed = 1; seed <= 6; seed++) {
        struct df_table *t = make_table(seed == 1 ? 1 : 40 + 17 * seed, 1 + (int)seed % 4, seed);
        check_window(t, 1, one, 1);
        check_window(t, 1, two, 2);
        check_window(t, 1, nf, 1);
        check_window(t, 1, NULL, 0);
        check_window(t, -1, one, 1);
        check_window(t, -1, NULL, 0);
        df_table_free(t);
    }
}

/* Parsed shapes: names, aliases, offsets, defaults, types. */
static void test_parse(void **state)
{
    (void)state;
    struct df_table *t = make_table(3, 2, 1);
    struct df_window_call c = call("  LAG( f , 2, 1 ) AS \"my \"\"p\"\"\"  ", t);
    assert_int_equal(c.func, DF_WIN_LAG);
    assert_string_equal(c.name, "my \"p\"");
    assert_int_equal(c.offset, 2);
    assert_int_equal(c.arg, 3);
    assert_int_equal(c.type, DF_TYPE_FLOAT64);
    assert_non_null(c.dflt); /* an integer default widened to the float argument */
    assert_true(df_column_float64(c.dflt, 0) == 1.0);
    df_window_call_cleanup(&c);
    c = call("count(*)", t);
    assert_int_equal(c.func, DF_WIN_COUNT_STAR);
    assert_string_equal(c.name, "count(*)");
    assert_int_equal(c.type, DF_TYPE_INT64);
    df_window_call_cleanup(&c);
    c = call("sum(o * 2) as s", t);
    assert_int_equal(c.arg, -1); /* an expression: the caller computes it */
    assert_string_equal(c.arg_text, "o * 2");
    assert_int_equal(c.type, DF_TYPE_INT64);
    df_window_call_cleanup(&c);
    c = call("lead(s, 1, 'it''s') as n", t);
    assert_int_equal(c.func, DF_WIN_LEAD);
    assert_int_equal(c.type, DF_TYPE_STRING);
    assert_string_equal(c.default_text, "'it''s'");
    df_window_call_cleanup(&c);
    c = call("lag(o, 0, null) as z", t);
    assert_null(c.dflt);
    assert_int_equal(c.offset, 0);
    df_window_call_cleanup(&c);
    c = call("avg(o)", t);
    assert_int_equal(c.type, DF_TYPE_FLOAT64);
    df_window_call_cleanup(&c);
    df_table_free(t);
}

static void expect_error(const struct df_table *t, const char *text, const char *kind,
                         const char *contains)
{
    struct df_schema s;
    df_schema_of_table(&s, t);
    struct df_window_call c;
    struct fr_error err;
    fr_error_init(&err);
    if (df_window_call_parse(text, &s, &c, &err) != FR_EINVAL)
        fail_msg("%s: parsed, expected %s with '%s'", text, kind, contains);
    if (strcmp(err.kind, kind) != 0 || !strstr(err.message, contains))
        fail_msg("%s: got %s '%s', expected %s with '%s'", text, err.kind, err.message, kind,
                 contains);
    df_window_call_cleanup(&c);
    df_schema_cleanup(&s);
}

static void test_parse_errors(void **state)
{
    (void)state;
    struct df_table *t = make_table(3, 2, 1);
    expect_error(t, "rnak() as r", "invalid-expression", "did you mean 'rank'");
    expect_error(t, "percent_rank()", "invalid-expression", "unknown window function");
    expect_error(t, "rank(o)", "invalid-expression", "rank takes no arguments");
    expect_error(t, "sum()", "invalid-expression", "sum takes one argument");
    expect_error(t, "sum(o, f)", "invalid-expression", "sum takes one argument");
    expect_error(t, "lag(o, 1, 2, 3)", "invalid-expression", "lag takes");
    expect_error(t, "lag(o, 1, 2, 3, 4, 5, 6)", "invalid-expression", "lag takes");
    expect_error(t, "sum(s)", "invalid-expression", "numeric argument, not string");
    expect_error(t, "sum(nope)", "invalid-expression", "unknown column 'nope'");
    expect_error(t, "rank() over (order by o)", "invalid-expression", "only 'as alias'");
    expect_error(t, "rank() as", "invalid-expression", "only 'as alias'");
    expect_error(t, "rank() as a b", "invalid-expression", "alias must be");
    expect_error(t, "rank(", "invalid-expression", "a call name(args)");
    expect_error(t, "(o)", "invalid-expression", "a call name(args)");
    expect_error(t, "lag(o, 1000001)", "invalid-plan", "from 0 to 1000000");
    expect_error(t, "lag(o, -1)", "invalid-plan", "from 0 to 1000000");
    expect_error(t, "lag(o, o)", "invalid-plan", "integer literal");
    expect_error(t, "lag(o, 1, 'x')", "invalid-plan", "is string, but its argument is int64");
    expect_error(t, "lag(o, 1, 1.5)", "invalid-plan", "is float64, but its argument is int64");
    expect_error(t, "lag(o, 1, f)", "invalid-plan", "must be a literal");
    expect_error(t, "lag(null)", "invalid-expression", "bare null");
    df_table_free(t);
}

/* No rows: no rows out, the function columns typed. */
static void test_empty(void **state)
{
    (void)state;
    struct df_table *t = make_table(0, 2, 1);
    check_window(t, 1, NULL, 0);
    struct df_sort_key k[] = {{2, false, false}};
    check_window(t, -1, k, 1);
    df_table_free(t);
}

/* The account: over the task's limit fails with FR_EMEMLIMIT; bad
 * arguments fail with FR_EINVAL; nothing stays charged. */
static void test_limits(void **state)
{
    (void)state;
    struct df_table *t = make_table(5000, 3, 2);
    struct df_options o = {0};
    o.task_memory_limit_bytes = 64 * 1024;
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_window_call c = call("sum(o) as s", t);
    int part = 1;
    struct df_table *r = NULL;
    assert_int_equal(df_window(t, &part, 1, NULL, 0, &c, 1, &ex, &r, &err), FR_EMEMLIMIT);
    assert_null(r);
    assert_int_equal(ex.mem_used, 0);
    o.task_memory_limit_bytes = 0;
    part = 9;
    assert_int_equal(df_window(t, &part, 1, NULL, 0, &c, 1, &ex, &r, &err), FR_EINVAL);
    part = 1;
    struct df_sort_key bad[] = {{-1, false, false}};
    assert_int_equal(df_window(t, &part, 1, bad, 1, &c, 1, &ex, &r, &err), FR_EINVAL);
    assert_int_equal(df_window(t, &part, 1, NULL, 0, &c, DF_WINDOW_MAX_FUNCS + 1, &ex, &r, &err),
                     FR_EINVAL);
    c.arg = -1; /* an argument that is not a column */
    assert_int_equal(df_window(t, &part, 1, NULL, 0, &c, 1, &ex, &r, &err), FR_EINVAL);
    assert_int_equal(ex.mem_used, 0);
    df_window_call_cleanup(&c);
    df_table_free(t);
}

/* int64 sums are exact: avg of 1e18, 1, -1e18, 2 is 1/3 then 3/4 (a double
 * sum loses the 1); a sum past int64 fails with arithmetic-overflow naming
 * the column, never a wrapped number or a null. */
static void test_int64_sums(void **state)
{
    (void)state;
    static const int64_t vals[] = {1000000000000000000, 1, -1000000000000000000, 2};
    struct df_column *id = df_column_new(DF_TYPE_INT64, 4), *v = df_column_new(DF_TYPE_INT64, 4);
    for (int i = 0; i < 4; i++) {
        df_column_append_int64(id, i);
        df_column_append_int64(v, vals[i]);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "id", id);
    df_table_add(t, "v", v);
    t->nrows = 4;
    struct df_window_call c[] = {call("avg(v) as a", t), call("sum(v) as s", t)};
    struct df_sort_key k[] = {{0, false, false}};
    struct df_table *r = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_window(t, NULL, 0, k, 1, c, 2, NULL, &r, &err), FR_OK);
    assert_true(fabs(df_column_float64(r->cols[2], 2) - 1.0 / 3.0) < 1e-12);
    assert_true(fabs(df_column_float64(r->cols[2], 3) - 0.75) < 1e-12);
    assert_int_equal(df_column_int64(r->cols[3], 3), 3);
    df_table_free(r);
    df_window_call_cleanup(&c[0]);
    df_window_call_cleanup(&c[1]);
    df_table_free(t);
    /* INT64_MAX + 1 - 2: the middle row's sum leaves the range */
    static const int64_t big[] = {INT64_MAX, 1, -2};
    v = df_column_new(DF_TYPE_INT64, 3);
    for (int i = 0; i < 3; i++)
        df_column_append_int64(v, big[i]);
    t = df_table_new();
    df_table_add(t, "v", v);
    t->nrows = 3;
    struct df_window_call s = call("sum(v) as s", t);
    struct df_sort_key none[] = {{0, true, false}}; /* descending: MAX, 1, -2 */
    fr_error_init(&err);
    assert_int_equal(df_window(t, NULL, 0, none, 1, &s, 1, NULL, &r, &err), FR_EDATA);
    assert_null(r);
    assert_string_equal(err.kind, "arithmetic-overflow");
    assert_non_null(strstr(err.message, "'v'"));
    assert_non_null(strstr(err.message, "cast to double to sum past int64"));
    /* the whole partition: INT64_MAX + 1 - 2 fits again, and is exact */
    fr_error_init(&err);
    assert_int_equal(df_window(t, NULL, 0, NULL, 0, &s, 1, NULL, &r, &err), FR_OK);
    assert_int_equal(df_column_int64(r->cols[1], 0), INT64_MAX - 1);
    df_table_free(r);
    df_window_call_cleanup(&s);
    df_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_int64_sums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
