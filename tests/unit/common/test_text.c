/* test_text: the one edit distance behind every "did you mean", and the
 * GLIBC_TUNABLES value the roles restart with. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "common/common.h"

static void test_distances(void **state)
{
    (void)state;
    assert_int_equal(fr_edit_distance("", ""), 0);
    assert_int_equal(fr_edit_distance("abc", ""), 3);
    assert_int_equal(fr_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(fr_edit_distance("FRAMED_PORT", "FRAMED_PROT"), 2);
    assert_int_equal(fr_edit_distance("Shuffle_Partitions", "shuffle_partitions"), 0);
    assert_int_equal(fr_edit_distance("fare", "far"), 1);
}

static void test_too_long_is_refused(void **state)
{
    (void)state;
    char longer[129];
    memset(longer, 'a', 128);
    longer[128] = '\0';
    assert_int_equal(fr_edit_distance(longer, "a"), -1);
    longer[127] = '\0'; /* 127 bytes: still measured */
    assert_int_equal(fr_edit_distance(longer, longer), 0);
}

static void test_malloc_tunables(void **state)
{
    (void)state;
    char out[512];
    assert_true(fr_malloc_tunables(NULL, false, out, sizeof(out)));
    assert_string_equal(out, FR_MALLOC_TUNABLES);
    assert_true(fr_malloc_tunables("", false, out, sizeof(out)));
    assert_string_equal(out, FR_MALLOC_TUNABLES);
    assert_non_null(strstr(out, "glibc.malloc.hugetlb=1"));
    assert_null(strstr(out, "arena_max"));
    /* a worker: one arena too */
    assert_true(fr_malloc_tunables(NULL, true, out, sizeof(out)));
    assert_string_equal(out, FR_MALLOC_TUNABLES ":glibc.malloc.arena_max=1");
    /* another namespace's tunables are kept, ours after them */
    assert_true(fr_malloc_tunables("glibc.rtld.optional_static_tls=4096", false, out, sizeof(out)));
    assert_string_equal(out, "glibc.rtld.optional_static_tls=4096:" FR_MALLOC_TUNABLES);
    /* any malloc tunable already set (the operator's, or ours after the restart): none */
    strcpy(out, "untouched");
    assert_false(fr_malloc_tunables("glibc.malloc.hugetlb=0", true, out, sizeof(out)));
    assert_false(fr_malloc_tunables(FR_MALLOC_TUNABLES, false, out, sizeof(out)));
    assert_false(
        fr_malloc_tunables("glibc.rtld.x=1:glibc.malloc.arena_max=2", true, out, sizeof(out)));
    assert_string_equal(out, "untouched");
    /* too long for out: none, rather than a cut value */
    assert_false(fr_malloc_tunables(NULL, false, out, sizeof(FR_MALLOC_TUNABLES) - 1));
    assert_true(fr_malloc_tunables(NULL, false, out, sizeof(FR_MALLOC_TUNABLES)));
    assert_int_equal(strlen(out), sizeof(FR_MALLOC_TUNABLES) - 1);
    assert_false(fr_malloc_tunables(NULL, true, out, sizeof(FR_MALLOC_TUNABLES)));
    assert_true(fr_malloc_tunables(NULL, true, out,
                                   sizeof(FR_MALLOC_TUNABLES) + strlen(FR_MALLOC_TUNABLES_WORKER)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distances),
        cmocka_unit_test(test_too_long_is_refused),
        cmocka_unit_test(test_malloc_tunables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
