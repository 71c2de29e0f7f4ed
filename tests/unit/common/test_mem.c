/* test_mem: the big-buffer allocation shared by the engine's columns, the
 * client's partition bodies and the worker's range-read blocks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

#define MiB ((size_t)1 << 20)

static void test_small_is_plain(void **state)
{
    (void)state;
    size_t cap = 0;
    char *p = fr_try_malloc_big(100, &cap);
    assert_non_null(p);
    assert_int_equal(cap, 100);
    memset(p, 1, 100);
    free(p);
    p = fr_try_malloc_big(4 * MiB - 1, &cap); /* under 4 MiB: as asked */
    assert_non_null(p);
    assert_int_equal(cap, 4 * MiB - 1);
    free(p);
    p = fr_try_malloc_big(0, &cap); /* nothing asked: still a pointer free() takes */
    assert_non_null(p);
    assert_int_equal(cap, 0);
    free(p);
}

static void test_big_is_aligned_and_rounded(void **state)
{
    (void)state;
    size_t cap = 0;
    char *p = fr_try_malloc_big(5 * MiB + 1, &cap);
    assert_non_null(p);
    assert_int_equal(cap, 6 * MiB); /* rounded up to 2 MiB: all of it usable */
    assert_int_equal((uintptr_t)p % (2 * MiB), 0);
    memset(p, 7, cap);
    assert_int_equal(p[cap - 1], 7);
    free(p);
    p = fr_try_malloc_big(8 * MiB, NULL); /* a whole multiple stays as it is; cap optional */
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % (2 * MiB), 0);
    free(p);
}

static void test_overflow_is_refused(void **state)
{
    (void)state;
    size_t cap = 1;
    /* rounding up would wrap past SIZE_MAX: NULL, not a small buffer */
    assert_null(fr_try_malloc_big(SIZE_MAX - 100, &cap));
    assert_null(fr_try_malloc_big(SIZE_MAX, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_is_plain),
        cmocka_unit_test(test_big_is_aligned_and_rounded),
        cmocka_unit_test(test_overflow_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
