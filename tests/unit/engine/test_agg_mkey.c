/* Tests of src/engine/engine_agg_mkey.c: grouping by two or three keys
 * through one table per key must give the very groups, ids (in order of
 * first sight) and representative rows of one table over every key, for
 * keys of every type with nulls, -0.0, NaN and repeats; and a key of more
 * values than the ids hold makes the partial start again with one table. */
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
    assert_true(df__mkey_suits(kcols, nkeys, ROWS));
    assert_int_equal(df__mkey_init(&mk, kcols, nkeys, ROWS, MORSEL, &ex, &err), FR_OK);
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

/* A key of 70001 values outgrows the 16-bit ids after about 524288 rows
 * (each value in 8 rows running; few enough groups a morsel that the rows do
 * not pass through): the partial starts again with one table and still
 * gives every group. */
static void test_outgrown_key_starts_again(void **state)
{
    (void)state;
    enum { N = 1200000 };
    struct df_column *k1 = df_column_new(DF_TYPE_INT64, N);
    struct df_column *k2 = df_column_new(DF_TYPE_INT64, N);
    for (int i = 0; i < N; i++) {
        df_column_append_int64(k1, (i / 8) % 70001);
        df_column_append_int64(k2, i % 2);
    }
    struct df_table *in = df_table_new();
    df_table_add(in, "k1", k1);
    df_table_add(in, "k2", k2);
    struct df_options o = {0};
    o.morsel_size_rows = 4096;
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    int keys[] = {0, 1};
    struct df_agg_spec specs[] = {{DF_AGG_COUNT_STAR, -1, -1}};
    struct df_table *part = NULL;
    assert_int_equal(df_agg_partial(in, keys, 2, specs, 1, &ex, &part, &err), FR_OK);
    /* (floor(i / 8) mod 70001, i mod 2) takes every one of 70001 x 2 pairs */
    assert_int_equal(part->nrows, 140002);
    int64_t total = 0;
    for (int64_t r = 0; r < part->nrows; r++)
        total += df_column_int64(part->cols[2], r);
    assert_int_equal(total, N);
    /* the first group is row 0's keys, as one table gives it */
    assert_int_equal(df_column_int64(part->cols[0], 0), 0);
    assert_int_equal(df_column_int64(part->cols[1], 0), 0);
    df_table_free(part);
    df_table_free(in);
    assert_int_equal(ex.mem_used, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_groups_as_one_table),
        cmocka_unit_test(test_outgrown_key_starts_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
