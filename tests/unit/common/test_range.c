/* Tests of src/common/common_range.c: the Range header forms of RFC 9110
 * section 14.1.2 (a-b, a-, -n), cutting at the end, what is unsatisfiable,
 * what does not parse, multiple ranges, other units, bounds; and the ETag. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/common.h"

static enum fr_range_kind parse(const char *v, int64_t size, int64_t *s, int64_t *e)
{
    *s = *e = -7;
    return fr_range_parse(v, size, s, e);
}

static void expect_one(const char *v, int64_t size, int64_t start, int64_t end)
{
    int64_t s, e;
    assert_int_equal(parse(v, size, &s, &e), FR_RANGE_ONE);
    assert_int_equal(s, start);
    assert_int_equal(e, end);
}

static void expect_kind(const char *v, int64_t size, enum fr_range_kind kind)
{
    int64_t s, e;
    assert_int_equal(parse(v, size, &s, &e), kind);
    assert_int_equal(s, -7); /* untouched */
    assert_int_equal(e, -7);
}

static void test_forms(void **state)
{
    (void)state;
    expect_one("bytes=0-499", 10000, 0, 500);
    expect_one("bytes=500-999", 10000, 500, 1000);
    expect_one("bytes=9500-", 10000, 9500, 10000);
    expect_one("bytes=-500", 10000, 9500, 10000);
    expect_one("bytes=0-0", 1, 0, 1);
    expect_one("bytes=5-5", 10, 5, 6);
    expect_one("BYTES=1-2", 10, 1, 3);
    expect_one("  bytes=1-2 \t", 10, 1, 3);
    expect_one("bytes= 1 - 2", 10, 1, 3); /* lenient inside the range */
}

static void test_cut_at_end(void **state)
{
    (void)state;
    expect_one("bytes=0-99999", 100, 0, 100);
    expect_one("bytes=-1000", 100, 0, 100);
    expect_one("bytes=90-999999999999999999999999", 100, 90, 100); /* saturates */
    expect_one("bytes=0-9223372036854775807", 100, 0, 100);
}

static void test_unsatisfiable(void **state)
{
    (void)state;
    expect_kind("bytes=100-", 100, FR_RANGE_UNSATISFIABLE);
    expect_kind("bytes=100-200", 100, FR_RANGE_UNSATISFIABLE);
    expect_kind("bytes=99999999999999999999-", 100, FR_RANGE_UNSATISFIABLE);
    expect_kind("bytes=-0", 100, FR_RANGE_UNSATISFIABLE);
    expect_kind("bytes=0-", 0, FR_RANGE_UNSATISFIABLE);
    expect_kind("bytes=-5", 0, FR_RANGE_UNSATISFIABLE);
}

static void test_invalid(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "bytes=",      "bytes=-",    "bytes=5-2",  "bytes=a-b", "bytes=1-2x",
        "bytes=--1",   "bytes=1--2", "bytes=+1-2", "bytes 1-2", "bytes=1 2-3",
        "bytes=0x1-2", "=1-2",       "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t s, e;
        enum fr_range_kind k = parse(bad[i], 100, &s, &e);
        if (k != FR_RANGE_INVALID)
            fail_msg("'%s' gave %d", bad[i], (int)k);
    }
    char longv[400];
    memset(longv, '1', sizeof(longv) - 1);
    memcpy(longv, "bytes=", 6);
    longv[sizeof(longv) - 1] = '\0';
    expect_kind(longv, 100, FR_RANGE_INVALID); /* past 256 bytes: not looked at */
}

static void test_multiple_and_units(void **state)
{
    (void)state;
    expect_kind("bytes=0-1,5-6", 100, FR_RANGE_MULTIPLE);
    expect_kind("bytes=0-1, -5", 100, FR_RANGE_MULTIPLE);
    expect_kind("bytes=,", 100, FR_RANGE_MULTIPLE);
    expect_kind("items=0-1", 100, FR_RANGE_NONE);
    expect_kind("bytesx=0-1", 100, FR_RANGE_NONE);
    expect_kind(NULL, 100, FR_RANGE_NONE);
}

static void test_etag(void **state)
{
    (void)state;
    char a[FR_ETAG_MAX], b[FR_ETAG_MAX], c[FR_ETAG_MAX], d[FR_ETAG_MAX];
    fr_etag_of(4096, 1700000000123456789LL, a);
    fr_etag_of(4096, 1700000000123456789LL, b);
    fr_etag_of(4097, 1700000000123456789LL, c);
    fr_etag_of(4096, 1700000000123456790LL, d);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    assert_string_not_equal(a, d);
    assert_string_equal(a, "\"1000-17979cfe3d85cd15\"");
    fr_etag_of(INT64_MAX, INT64_MAX, a);
    assert_true(strlen(a) < FR_ETAG_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_cut_at_end),
        cmocka_unit_test(test_unsatisfiable),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_multiple_and_units),
        cmocka_unit_test(test_etag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
