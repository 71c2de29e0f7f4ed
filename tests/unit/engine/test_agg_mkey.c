/* Tests of src/engine/engine_agg_mkey.c: grouping by two or three keys
 * through one table per key must give the very groups, ids (in order of
 * first sight) and representative rows of one table over every key, for
 * keys of every type with nulls, -0.0, NaN and repeats; and a key of more
 * values than the ids hold hands the groups to one table that goes on. The
 * direct map of the keys' ids (engine_agg_mkey.c) gives them while it fits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_ops_int.h"

#define ROWS 20000
#define MORSEL 1000

/* Column c of a table of ROWS rows: each of five types, few values, some
 * null; floats with -0.0, 0.0 and NaN (one group each way the table does). */
static struct df_column *key_column(int kind, unsigned seed)
{
    static const char *const words[] = {"a",      "id042", "", "a much longer key string",
                                        "id042 ", "b"};
    static const double floats[] = {0.0, -0.0, 1.5, -2.25, 1e300};
    df_type types[] = {DF_TYPE_STRING, DF_TYPE_INT64, DF_TYPE_FLOAT64, DF_TYPE_BOOL, DF_TYPE_DATE};
    struct df_column *c = df_column_new(types[kind], ROWS);
    srand(seed);
    for (int i = 0; i < ROWS; i++) {
        int r = rand() % 97;
        if (r == 0) {
            df_column_append_null(c);
            continue;
        }
        switch (kind) {
        case 0:
            df_column_append_string(c, words[r % 6], (int64_t)strlen(words[r % 6]));
            break;
        case 1:
            df_column_append_int64(c, (int64_t)(r % 40) - 20);
            break;
        case 2:
            df_column_append_float64(c, r % 11 == 0 ? NAN : floats[r % 5]);
            break;
        case 3:
            df_column_append_bool(c, r % 2);
            break;
        default:
            df_column_append_int32(c, 19000 + r % 9);
            break;
        }
    }
    return c;
}

/* The packed grouping against one row-mode table over the same keys. */
static void check_same_groups(const struct df_column *const *kcols, int nkeys)
{
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct fr_error err;
    fr_error_init(&err);
    df_type types[DF__MKEY_MAX];
    for (int j = 0; j < nkeys; j++)
        types[j] = kcols[j]->type;
    struct df__gtab ref;
    df__gtab_init(&ref, types, nkeys, true, &ex);
    df__gtab_add_source(&ref, kcols);
    struct df__mkey mk;
    assert_true(df__mkey_suits(nkeys, ROWS));
    assert_int_equal(df__mkey_init(&mk, kcols, nkeys, MORSEL, &ex, &err), FR_OK);
    uint64_t h[MORSEL], h2[MORSEL];
    int64_t want[MORSEL], got[MORSEL];
    for (int64_t s = 0; s < ROWS; s += MORSEL) {
        df__hash_columns(kcols, nkeys, s, MORSEL, h);
        assert_int_equal(df__gtab_insert(&ref, 0, NULL, s, MORSEL, h, want, &err), FR_OK);
        bool outgrown = true;
        assert_int_equal(df__mkey_group(&mk, s, MORSEL, h2, got, &outgrown, &err), FR_OK);
        assert_false(outgrown);
        for (int i = 0; i < MORSEL; i++)
            if (got[i] != want[i])
                fail_msg("row %lld: group %lld, one table gives %lld", (long long)(s + i),
                         (long long)got[i], (long long)want[i]);
    }
    assert_int_equal(mk.packed.ngroups, ref.ngroups);
    assert_true(ref.ngroups > 2); /* several groups, not one (bool x bool with nulls: 9) */
    for (int64_t g = 0; g < ref.ngroups; g++)
        assert_int_equal(mk.packed.rep_row[g], ref.rep_row[g]);
    /* few values a key: the groups came through the direct map, rebuilt
     * wider as the keys gained values */
    assert_non_null(mk.dense);
    assert_false(mk.dense_off);
    df__mkey_cleanup(&mk);
    df__gtab_cleanup(&ref);
    assert_int_equal(ex.mem_used, 0);
}

static void test_same_groups_as_one_table(void **state)
{
    (void)state;
    struct df_column *c[5];
    for (int k = 0; k < 5; k++)
        c[k] = key_column(k, 11u + (unsigned)k);
    /* every ordered pair of types, and a few triples */
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++) {
            const struct df_column *k2[] = {c[a], c[b]};
            check_same_groups(k2, 2);
        }
    const int triples[][3] = {{0, 1, 2}, {2, 3, 4}, {4, 0, 0}, {1, 1, 3}};
    for (int t = 0; t < 4; t++) {
        const struct df_column *k3[] = {c[triples[t][0]], c[triples[t][1]], c[triples[t][2]]};
        check_same_groups(k3, 3);
    }
    for (int k = 0; k < 5; k++)
        df_column_unref(c[k]);
}

/* k1 = (i / 8) % 70001, k2 = i % 2: 70001 x 2 groups; k1 outgrows the
 * 16-bit ids after about 524288 rows (each value 8 rows running, so few
 * groups a morsel and the rows do not pass through). */
enum { BIG = 1200000 };

static struct df_table *outgrowing_table(void)
{
    struct df_column *k1 = df_column_new(DF_TYPE_INT64, BIG);
    struct df_column *k2 = df_column_new(DF_TYPE_INT64, BIG);
    struct df_column *c = df_column_new(DF_TYPE_INT64, BIG);
    for (int i = 0; i < BIG; i++) {
        df_column_append_int64(k1, (i / 8) % 70001);
        df_column_append_int64(k2, i % 2);
        df_column_append_int64(c, 7);
    }
    struct df_table *in = df_table_new();
    df_table_add(in, "k1", k1);
    df_table_add(in, "k2", k2);
    df_table_add(in, "c", c);
    return in;
}

/* The grouping hands its groups to one table when k1 outgrows, and every
 * row before and after gets the id one table over both keys gives. */
static void test_outgrown_key_goes_on_in_one_table(void **state)
{
    (void)state;
    struct df_table *in = outgrowing_table();
    const struct df_column *kc[] = {in->cols[0], in->cols[1]};
    df_type types[] = {DF_TYPE_INT64, DF_TYPE_INT64};
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df__gtab ref, gt;
    df__gtab_init(&ref, types, 2, true, &ex);
    df__gtab_add_source(&ref, kc);
    df__gtab_init(&gt, types, 2, true, &ex);
    df__gtab_add_source(&gt, kc);
    struct df__mkey mk;
    enum { M = 4096 };
    assert_int_equal(df__mkey_init(&mk, kc, 2, M, &ex, &err), FR_OK);
    static uint64_t h[M], h2[M];
    static int64_t want[M], got[M];
    bool multi = true;
    int64_t handed_at = -1;
    for (int64_t s = 0; s < BIG; s += M) {
        int64_t m = BIG - s < M ? BIG - s : M;
        df__hash_columns(kc, 2, s, m, h);
        assert_int_equal(df__gtab_insert(&ref, 0, NULL, s, m, h, want, &err), FR_OK);
        bool outgrown = false;
        if (multi)
            assert_int_equal(df__mkey_group(&mk, s, m, h2, got, &outgrown, &err), FR_OK);
        if (outgrown) {
            assert_int_equal(df__mkey_to_table(&mk, &gt, &err), FR_OK);
            df__mkey_cleanup(&mk);
            multi = false;
            handed_at = s;
        }
        if (!multi) {
            df__hash_columns(kc, 2, s, m, h2);
            assert_int_equal(df__gtab_insert(&gt, 0, NULL, s, m, h2, got, &err), FR_OK);
        }
        for (int64_t i = 0; i < m; i++)
            if (got[i] != want[i])
                fail_msg("row %lld: group %lld, one table gives %lld", (long long)(s + i),
                         (long long)got[i], (long long)want[i]);
    }
    /* k1's 65537th value is at row 524288 */
    assert_true(handed_at > 500000 && handed_at <= 524288);
    assert_int_equal(gt.ngroups, 140002);
    assert_int_equal(ref.ngroups, 140002);
    for (int64_t g = 0; g < ref.ngroups; g++)
        assert_int_equal(gt.rep_row[g], ref.rep_row[g]);
    df__gtab_cleanup(&gt);
    df__gtab_cleanup(&ref);
    assert_int_equal(ex.mem_used, 0);
    df_table_free(in);
}

/* The partial over those keys equals one over (k1, k2, c, c): four keys
 * take one table from the start. */
static void test_outgrown_partial_matches_one_table(void **state)
{
    (void)state;
    struct df_table *in = outgrowing_table();
    struct df_options o = {0};
    o.morsel_size_rows = 4096;
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_agg_spec specs[] = {{DF_AGG_COUNT_STAR, -1, -1}, {DF_AGG_SUM, 2, -1}};
    int two[] = {0, 1}, four[] = {0, 1, 2, 2};
    struct df_table *a = NULL, *b = NULL;
    assert_int_equal(df_agg_partial(in, two, 2, specs, 2, &ex, &a, &err), FR_OK);
    assert_int_equal(df_agg_partial(in, four, 4, specs, 2, &ex, &b, &err), FR_OK);
    assert_int_equal(a->nrows, 140002);
    assert_int_equal(b->nrows, a->nrows);
    int64_t total = 0;
    for (int64_t r = 0; r < a->nrows; r++) {
        assert_int_equal(df_column_int64(a->cols[0], r), df_column_int64(b->cols[0], r));
        assert_int_equal(df_column_int64(a->cols[1], r), df_column_int64(b->cols[1], r));
        assert_int_equal(df_column_int64(a->cols[2], r), df_column_int64(b->cols[4], r));
        total += df_column_int64(a->cols[2], r);
    }
    assert_int_equal(total, BIG);
    df_table_free(a);
    df_table_free(b);
    df_table_free(in);
    assert_int_equal(ex.mem_used, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_groups_as_one_table),
        cmocka_unit_test(test_outgrown_key_goes_on_in_one_table),
        cmocka_unit_test(test_outgrown_partial_matches_one_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
