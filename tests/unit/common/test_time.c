/* test_time: RFC 3339 parsing (the history's since/until filters) and its
 * round trip with the ISO 8601 times framed writes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "common/common.h"

static void test_valid_times(void **state)
{
    (void)state;
    assert_int_equal(fr_rfc3339_parse_ms("1970-01-01T00:00:00Z"), 0);
    assert_int_equal(fr_rfc3339_parse_ms("1970-01-01T00:00:01.5Z"), 1500);
    assert_int_equal(fr_rfc3339_parse_ms("1970-01-01t00:00:00.123456789z"), 123);
    assert_int_equal(fr_rfc3339_parse_ms("2026-12-01T13:00:00.123Z"), 1796130000123LL);
    /* an offset names local time: 14:00+01:00 is 13:00Z */
    assert_int_equal(fr_rfc3339_parse_ms("2026-12-01T14:00:00+01:00"), 1796130000000LL);
    assert_int_equal(fr_rfc3339_parse_ms("2026-12-01T12:30:00-00:30"), 1796130000000LL);
    assert_true(fr_rfc3339_parse_ms("2024-02-29T00:00:00Z") > 0); /* a leap day */
}

static void test_malformed_times(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "2026-12-01",
        "2026-12-01 13:00:00Z",  /* a space for the T */
        "2026-12-01T13:00:00",   /* no zone */
        "2026-12-01T13:00:00.Z", /* an empty fraction */
        "2026-12-01T13:00:00.1234567890Z",
        "2026-13-01T13:00:00Z", /* month 13 */
        "2026-02-29T00:00:00Z", /* not a leap year */
        "2026-12-01T24:00:00Z",
        "2026-12-01T13:60:00Z",
        "2026-12-01T13:00:00+24:00",
        "2026-12-01T13:00:00+0100",
        "1969-12-31T23:59:59Z", /* before the epoch */
        "2026-12-01T13:00:00Zjunk",
        "+026-12-01T13:00:00Z",
        "2026-12-01T13:00:00.12a3Z",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (fr_rfc3339_parse_ms(bad[i]) != -1)
            fail_msg("'%s' was taken", bad[i]);
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    static const int64_t ms[] = {0, 999, 1796130000123LL, 4102444799999LL};
    for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
        char text[40];
        fr_iso8601_ms(ms[i], text, sizeof(text));
        assert_int_equal(fr_rfc3339_parse_ms(text), ms[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_times),
        cmocka_unit_test(test_malformed_times),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
