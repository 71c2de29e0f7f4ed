/* Tests of src/engine/engine_agg_imap.c: grouping one int64 key through the
 * direct map must give the very group ids (in order of first sight) and
 * representative rows of the key's table alone: keys inside the window,
 * keys past it on both sides (INT64_MIN and INT64_MAX among them), a window
 * the rows leave for good (the map is dropped, the table goes on), and a
 * first morsel too wide for a map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_ops_int.h"

#define ROWS 60000
#define MORSEL 4096

/* kind 0: 1..5000, and after the first morsel a few far keys; 1: a window the keys leave after
 * the first morsels; 2: a first morsel spanning the whole int64 range. */
static struct df_column *keys(int kind)
{
    struct df_column *c = df_column_new(DF_TYPE_INT64, ROWS);
    srand(7u + (unsigned)kind);
    for (int i = 0; i < ROWS; i++) {
        int r = rand();
        int64_t v = 1 + r % 5000;
        if (kind == 0 && i >= MORSEL && r % 101 == 0)
            v = r % 2 ? INT64_MAX - r % 3 : INT64_MIN + r % 3;
        if (kind == 0 && i >= MORSEL && r % 103 == 0)
            v = -(int64_t)(r % 300000); /* under the window, some of it */
        if (kind == 1 && i >= 3 * MORSEL)
            v = 1000000000 + r % 777;
        if (kind == 2 && i < 2)
            v = i ? INT64_MAX : INT64_MIN;
        df_column_append_int64(c, v);
    }
    return c;
}

static void check_same_groups(int kind, bool mapped, bool dropped)
{
    struct df_column *k = keys(kind);
    const struct df_column *src[1] = {k};
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct fr_error err;
    fr_error_init(&err);
    df_type t = DF_TYPE_INT64;
    struct df__gtab ref, gt;
    df__gtab_init(&ref, &t, 1, true, &ex);
    df__gtab_add_source(&ref, src);
    df__gtab_init(&gt, &t, 1, true, &ex);
    df__gtab_add_source(&gt, src);
    struct df__imap im;
    assert_true(df__imap_suits(k));
    assert_int_equal(df__imap_init(&im, k, 0, MORSEL, MORSEL, &ex, &err), FR_OK);
    assert_true((im.map != NULL) == mapped);
    uint64_t h[MORSEL], h2[MORSEL];
    int64_t want[MORSEL], got[MORSEL];
    for (int64_t s = 0; s < ROWS; s += MORSEL) {
        int64_t m = ROWS - s < MORSEL ? ROWS - s : MORSEL;
        df__hash_columns(src, 1, s, m, h);
        assert_int_equal(df__gtab_insert(&ref, 0, NULL, s, m, h, want, &err), FR_OK);
        if (im.map)
            assert_int_equal(df__imap_group(&im, &gt, k, s, m, h2, got, &err), FR_OK);
        else {
            df__hash_columns(src, 1, s, m, h2);
            assert_int_equal(df__gtab_insert(&gt, 0, NULL, s, m, h2, got, &err), FR_OK);
        }
        for (int64_t i = 0; i < m; i++)
            if (got[i] != want[i])
                fail_msg("row %lld: group %lld, the table alone gives %lld", (long long)(s + i),
                         (long long)got[i], (long long)want[i]);
    }
    assert_true((im.map == NULL) == (dropped || !mapped));
    assert_int_equal(gt.ngroups, ref.ngroups);
    assert_true(ref.ngroups > 100);
    for (int64_t g = 0; g < ref.ngroups; g++) {
        assert_int_equal(gt.rep_row[g], ref.rep_row[g]);
        assert_int_equal(gt.kv[g], ref.kv[g]);
    }
    df__imap_cleanup(&im);
    df__gtab_cleanup(&gt);
    df__gtab_cleanup(&ref);
    assert_int_equal(ex.mem_used, 0);
    df_column_unref(k);
}

static void test_window_and_far_keys(void **state)
{
    (void)state;
    check_same_groups(0, true, false);
}

static void test_keys_leave_the_window(void **state)
{
    (void)state;
    check_same_groups(1, true, true);
}

static void test_too_wide_for_a_map(void **state)
{
    (void)state;
    check_same_groups(2, false, false);
}

/* A key with nulls, or of another type, takes no map. */
static void test_suits(void **state)
{
    (void)state;
    struct df_column *c = df_column_new(DF_TYPE_INT64, 4);
    df_column_append_int64(c, 1);
    assert_true(df__imap_suits(c));
    df_column_append_null(c);
    assert_false(df__imap_suits(c));
    df_column_unref(c);
    c = df_column_new(DF_TYPE_FLOAT64, 4);
    df_column_append_float64(c, 1);
    assert_false(df__imap_suits(c));
    df_column_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_and_far_keys),
        cmocka_unit_test(test_keys_leave_the_window),
        cmocka_unit_test(test_too_wide_for_a_map),
        cmocka_unit_test(test_suits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
