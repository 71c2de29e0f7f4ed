/* Tests of src/engine/engine_join.c: every `how` against a nested-loop
 * reference (duplicate keys, null keys, multi-column keys, either build
 * side), column naming with merge_keys and suffix, int64 with float64 keys,
 * type errors and the memory limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

#define NUL INT64_MIN

static struct df_options ORDERED = {.morsel_size_rows = 5, .maintain_order = true};

static struct df_column *ints_col(const int64_t *v, int n)
{
    struct df_column *c = df_column_new(DF_TYPE_INT64, n);
    for (int i = 0; i < n; i++) {
        if (v[i] == NUL)
            df_column_append_null(c);
        else
            df_column_append_int64(c, v[i]);
    }
    return c;
}

/* Keys a (int64, nulls) and b (string), payload id = row. */
static struct df_table *random_side(int n, const char *idname, unsigned seed)
{
    srand(seed);
    struct df_column *a = df_column_new(DF_TYPE_INT64, n), *b = df_column_new(DF_TYPE_STRING, n);
    struct df_column *id = df_column_new(DF_TYPE_INT64, n);
    for (int i = 0; i < n; i++) {
        if (rand() % 8 == 0)
            df_column_append_null(a);
        else
            df_column_append_int64(a, rand() % 6);
        df_column_append_string(b, rand() % 2 ? "x" : "y", 1);
        df_column_append_int64(id, i);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "a", a);
    df_table_add(t, "b", b);
    df_table_add(t, idname, id);
    return t;
}

static bool ref_match(const struct df_table *l, int64_t x, const struct df_table *r, int64_t y,
                      int nkeys)
{
    for (int k = 0; k < nkeys; k++) {
        const struct df_column *cl = l->cols[k], *cr = r->cols[k];
        if (!df_column_is_valid(cl, x) || !df_column_is_valid(cr, y))
            return false;
        if (cl->type == DF_TYPE_STRING) {
            int64_t n1, n2;
            const char *p1 = df_column_string(cl, x, &n1), *p2 = df_column_string(cr, y, &n2);
            if (n1 != n2 || memcmp(p1, p2, (size_t)n1) != 0)
                return false;
        } else if (df_column_int64(cl, x) != df_column_int64(cr, y)) {
            return false;
        }
    }
    return true;
}

/* The reference result as (left id, right id) pairs, -1 for none. */
static int64_t ref_join(const struct df_table *l, const struct df_table *r, int nkeys,
                        enum df_join_how how, int64_t *lo, int64_t *ro)
{
    int64_t n = 0;
    char *rmatched = calloc((size_t)r->nrows + 1, 1);
    for (int64_t x = 0; x < l->nrows; x++) {
        bool any = false;
        for (int64_t y = 0; y < r->nrows; y++) {
            if (!ref_match(l, x, r, y, nkeys))
                continue;
            rmatched[y] = 1;
            if (how != DF_JOIN_SEMI && how != DF_JOIN_ANTI) {
                lo[n] = x;
                ro[n++] = y;
            } else if (!any && how == DF_JOIN_SEMI) {
                lo[n] = x;
                ro[n++] = -1;
            }
            any = true;
        }
        if (!any && (how == DF_JOIN_LEFT || how == DF_JOIN_OUTER || how == DF_JOIN_ANTI)) {
            lo[n] = x;
            ro[n++] = -1;
        }
    }
    for (int64_t y = 0; y < r->nrows; y++)
        if (!rmatched[y] && (how == DF_JOIN_RIGHT || how == DF_JOIN_OUTER)) {
            lo[n] = -1;
            ro[n++] = y;
        }
    free(rmatched);
    return n;
}

static int64_t id_at(const struct df_table *t, const char *name, int64_t row)
{
    int c = df_table_find(t, name);
    assert_true(c >= 0);
    return df_column_is_valid(t->cols[c], row) ? df_column_int64(t->cols[c], row) : -1;
}

static void check_tables(struct df_table *l, struct df_table *r, int nkeys)
{
    int64_t nl = l->nrows, nr = r->nrows;
    int keys[] = {0, 1};
    int64_t *lo = malloc(sizeof(int64_t) * (size_t)(nl * nr + nl + nr + 1));
    int64_t *ro = malloc(sizeof(int64_t) * (size_t)(nl * nr + nl + nr + 1));
    for (int how = DF_JOIN_INNER; how <= DF_JOIN_ANTI; how++) {
        struct df_exec ex;
        df_exec_init(&ex, &ORDERED, NULL);
        struct fr_error err;
        fr_error_init(&err);
        struct df_table *out = NULL;
        assert_int_equal(df_join(l, r, keys, keys, nkeys, how, false, "_r", &ex, &out, &err),
                         FR_OK);
        assert_int_equal(ex.mem_used, 0);
        int64_t n = ref_join(l, r, nkeys, how, lo, ro);
        assert_int_equal(out->nrows, n);
        bool semi_like = how == DF_JOIN_SEMI || how == DF_JOIN_ANTI;
        assert_int_equal(out->ncols, semi_like ? 3 : 6);
        for (int64_t i = 0; i < n; i++) {
            assert_int_equal(id_at(out, "lid", i), lo[i]);
            if (!semi_like)
                assert_int_equal(id_at(out, "rid", i), ro[i]);
        }
        df_table_free(out);
    }
    free(lo);
    free(ro);
    df_table_free(l);
    df_table_free(r);
}

static void check_against_reference(int nl, int nr, int nkeys, unsigned seed)
{
    check_tables(random_side(nl, "lid", seed), random_side(nr, "rid", seed + 1), nkeys);
}

/* Keys a (int64) distinct but for nulls (every 9th row when with_nulls)
 * and, when dup_at >= 0, row dup_at repeating row 1's key: a build side
 * of distinct keys keeps no chains until (if ever) a key repeats. */
static struct df_table *distinct_side(int n, const char *idname, int shift, bool with_nulls,
                                      int dup_at)
{
    struct df_column *a = df_column_new(DF_TYPE_INT64, n), *b = df_column_new(DF_TYPE_STRING, n);
    struct df_column *id = df_column_new(DF_TYPE_INT64, n);
    for (int i = 0; i < n; i++) {
        if (with_nulls && i % 9 == 4)
            df_column_append_null(a);
        else
            df_column_append_int64(a, i == dup_at ? (1 * 7 + shift) % 97 : (i * 7 + shift) % 97);
        df_column_append_string(b, "x", 1);
        df_column_append_int64(id, i);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "a", a);
    df_table_add(t, "b", b);
    df_table_add(t, idname, id);
    return t;
}

static void test_distinct_build_keys(void **state)
{
    (void)state;
    /* build right (the smaller side), then build left; distinct keys
     * throughout, a repeat in a late morsel, nulls; and one-row sides */
    for (int dup = 0; dup < 2; dup++)
        for (int nulls = 0; nulls < 2; nulls++) {
            check_tables(distinct_side(60, "lid", 3, nulls, -1),
                         distinct_side(40, "rid", 0, nulls, dup ? 33 : -1), 1);
            check_tables(distinct_side(30, "lid", 0, nulls, dup ? 27 : -1),
                         distinct_side(80, "rid", 5, nulls, -1), 2);
        }
    check_tables(distinct_side(1, "lid", 0, false, -1), distinct_side(1, "rid", 0, false, -1), 1);
    check_tables(distinct_side(5, "lid", 0, false, -1), distinct_side(1, "rid", 7, false, -1), 1);
    check_tables(distinct_side(0, "lid", 0, false, -1), distinct_side(3, "rid", 0, false, -1), 1);
}

static void test_all_hows_build_right(void **state)
{
    (void)state;
    check_against_reference(60, 25, 1, 3);
    check_against_reference(60, 25, 2, 4);
}

static void test_all_hows_build_left(void **state)
{
    (void)state;
    check_against_reference(20, 70, 1, 5);
    check_against_reference(20, 70, 2, 6);
    check_against_reference(0, 10, 1, 7);
    check_against_reference(10, 0, 2, 8);
}

static void test_naming_and_suffix(void **state)
{
    (void)state;
    int64_t lk[] = {1, 2, NUL}, lv[] = {10, 20, 30}, lv2[] = {7, 8, 9};
    int64_t rk[] = {2, 3, NUL}, rv[] = {200, 300, 400};
    struct df_table *l = df_table_new(), *r = df_table_new();
    df_table_add(l, "k", ints_col(lk, 3));
    df_table_add(l, "v", ints_col(lv, 3));
    df_table_add(l, "v_right", ints_col(lv2, 3));
    df_table_add(r, "k", ints_col(rk, 3));
    df_table_add(r, "v", ints_col(rv, 3));
    struct df_exec ex;
    df_exec_init(&ex, &ORDERED, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int key = 0;
    struct df_table *out = NULL;
    assert_int_equal(df_join(l, r, &key, &key, 1, DF_JOIN_OUTER, true, NULL, &ex, &out, &err),
                     FR_OK);
    assert_int_equal(out->ncols, 4);
    assert_string_equal(out->names[0], "k");
    assert_string_equal(out->names[3], "v_right_right");
    /* left order (1, 2, null), then the right-only rows 3 and null */
    assert_int_equal(out->nrows, 5);
    assert_int_equal(df_column_int64(out->cols[0], 0), 1);
    assert_int_equal(df_column_int64(out->cols[0], 1), 2);
    assert_int_equal(df_column_int64(out->cols[3], 1), 200);
    assert_false(df_column_is_valid(out->cols[0], 2)); /* null keys never match */
    assert_false(df_column_is_valid(out->cols[3], 2));
    assert_int_equal(df_column_int64(out->cols[0], 3), 3); /* merged key of a right-only row */
    assert_false(df_column_is_valid(out->cols[1], 3));
    assert_int_equal(df_column_int64(out->cols[3], 3), 300);
    assert_false(df_column_is_valid(out->cols[0], 4));
    assert_int_equal(df_column_int64(out->cols[3], 4), 400);
    df_table_free(out);
    /* without merge_keys both key columns stay, the right one suffixed */
    assert_int_equal(df_join(l, r, &key, &key, 1, DF_JOIN_INNER, false, "_x", &ex, &out, &err),
                     FR_OK);
    assert_int_equal(out->ncols, 5);
    assert_string_equal(out->names[3], "k_x");
    assert_string_equal(out->names[4], "v_x");
    assert_int_equal(out->nrows, 1);
    df_table_free(out);
    df_table_free(l);
    df_table_free(r);
}

static void test_int_float_keys(void **state)
{
    (void)state;
    int64_t lk[] = {1, 2, 3, 4};
    struct df_table *l = df_table_new(), *r = df_table_new();
    df_table_add(l, "k", ints_col(lk, 4));
    struct df_column *fk = df_column_new(DF_TYPE_FLOAT64, 3);
    df_column_append_float64(fk, 3.0);
    df_column_append_float64(fk, 2.5);
    df_column_append_float64(fk, 1.0);
    df_table_add(r, "k", fk);
    struct df_exec ex;
    df_exec_init(&ex, &ORDERED, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int key = 0;
    struct df_table *out = NULL;
    assert_int_equal(df_join(l, r, &key, &key, 1, DF_JOIN_INNER, false, "_r", &ex, &out, &err),
                     FR_OK);
    assert_int_equal(out->nrows, 2);
    assert_int_equal(df_column_int64(out->cols[0], 0), 1);
    assert_float_equal(df_column_float64(out->cols[1], 0), 1.0, 0);
    assert_int_equal(df_column_int64(out->cols[0], 1), 3);
    df_table_free(out);
    /* an outer join with merged keys holds both kinds: float64 */
    assert_int_equal(df_join(l, r, &key, &key, 1, DF_JOIN_OUTER, true, "_r", &ex, &out, &err),
                     FR_OK);
    assert_int_equal(out->nrows, 5);
    assert_int_equal(out->cols[0]->type, DF_TYPE_FLOAT64);
    assert_float_equal(df_column_float64(out->cols[0], 4), 2.5, 0);
    df_table_free(out);
    /* int64 with string is an error that names the columns */
    struct df_table *s = df_table_new();
    struct df_column *sk = df_column_new(DF_TYPE_STRING, 1);
    df_column_append_string(sk, "1", 1);
    df_table_add(s, "name", sk);
    assert_int_equal(df_join(l, s, &key, &key, 1, DF_JOIN_INNER, false, "_r", &ex, &out, &err),
                     FR_EINVAL);
    assert_null(out);
    assert_non_null(strstr(err.message, "'k' (int64)"));
    assert_non_null(strstr(err.message, "'name' (string)"));
    df_table_free(s);
    df_table_free(l);
    df_table_free(r);
}

/* A left join on unique right keys keeps every left row once, in order: the
 * output's left columns are the input's, shared, not copied (with merged
 * keys too); the right side is gathered, null where nothing matched. A join
 * that drops or repeats a left row copies them. */
static void test_left_join_shares_left_columns(void **state)
{
    (void)state;
    int64_t lk[] = {3, 1, NUL, 7, 1, 2}, lv[] = {10, 11, 12, 13, 14, 15};
    int64_t rk[] = {1, 2, 3}, rv[] = {100, 200, 300};
    struct df_table *l = df_table_new(), *r = df_table_new();
    df_table_add(l, "k", ints_col(lk, 6));
    df_table_add(l, "v", ints_col(lv, 6));
    df_table_add(r, "k", ints_col(rk, 3));
    df_table_add(r, "w", ints_col(rv, 3));
    struct df_exec ex;
    df_exec_init(&ex, &ORDERED, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int key = 0;
    for (int merge = 0; merge < 2; merge++) {
        struct df_table *out = NULL;
        assert_int_equal(df_join(l, r, &key, &key, 1, DF_JOIN_LEFT, merge, "_r", &ex, &out, &err),
                         FR_OK);
        assert_int_equal(out->nrows, 6);
        assert_ptr_equal(out->cols[0], l->cols[0]);
        assert_ptr_equal(out->cols[1], l->cols[1]);
        const struct df_column *w = out->cols[merge ? 2 : 3];
        const int64_t want[] = {300, 100, NUL, NUL, 100, 200};
        for (int i = 0; i < 6; i++) {
            if (want[i] == NUL)
                assert_false(df_column_is_valid(w, i));
            else
                assert_int_equal(df_column_int64(w, i), want[i]);
        }
        df_table_free(out);
    }
    struct df_table *out = NULL; /* an inner join drops rows 2 and 3: copies */
    assert_int_equal(df_join(l, r, &key, &key, 1, DF_JOIN_INNER, false, "_r", &ex, &out, &err),
                     FR_OK);
    assert_int_equal(out->nrows, 4);
    assert_ptr_not_equal(out->cols[1], l->cols[1]);
    assert_int_equal(df_column_int64(out->cols[1], 3), 15);
    df_table_free(out);
    df_table_free(l);
    df_table_free(r);
}

static void test_memory_limit(void **state)
{
    (void)state;
    /* every key equal: 300 x 300 pairs */
    struct df_column *a = df_column_new(DF_TYPE_INT64, 300), *b = df_column_new(DF_TYPE_INT64, 300);
    for (int i = 0; i < 300; i++) {
        df_column_append_int64(a, 7);
        df_column_append_int64(b, 7);
    }
    struct df_table *l = df_table_new(), *r = df_table_new();
    df_table_add(l, "k", a);
    df_table_add(r, "k", b);
    struct df_options o = ORDERED;
    o.task_memory_limit_bytes = 200000;
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int key = 0;
    struct df_table *out = NULL;
    assert_int_equal(df_join(l, r, &key, &key, 1, DF_JOIN_INNER, true, "_r", &ex, &out, &err),
                     FR_EMEMLIMIT);
    assert_null(out);
    assert_int_equal(ex.mem_used, 0);
    o.task_memory_limit_bytes = 0;
    assert_int_equal(df_join(l, r, &key, &key, 1, DF_JOIN_INNER, true, "_r", &ex, &out, &err),
                     FR_OK);
    assert_int_equal(out->nrows, 90000);
    df_table_free(out);
    df_table_free(l);
    df_table_free(r);
}

static void test_how_parse(void **state)
{
    (void)state;
    enum df_join_how h;
    assert_int_equal(df_join_how_parse("full", &h), FR_OK);
    assert_int_equal(h, DF_JOIN_OUTER);
    assert_int_equal(df_join_how_parse("anti", &h), FR_OK);
    assert_int_equal(h, DF_JOIN_ANTI);
    assert_int_equal(df_join_how_parse("semi", &h), FR_OK);
    assert_int_equal(h, DF_JOIN_SEMI);
    assert_int_equal(df_join_how_parse("cross", &h), FR_EINVAL);
    /* a task spec without "how" (json_string_value gives NULL; found by fuzz_task) */
    assert_int_equal(df_join_how_parse(NULL, &h), FR_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_hows_build_right),
        cmocka_unit_test(test_all_hows_build_left),
        cmocka_unit_test(test_distinct_build_keys),
        cmocka_unit_test(test_naming_and_suffix),
        cmocka_unit_test(test_int_float_keys),
        cmocka_unit_test(test_left_join_shares_left_columns),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_how_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
