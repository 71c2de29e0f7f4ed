/* test_text: the one edit distance behind every "did you mean". */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distances),
        cmocka_unit_test(test_too_long_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
