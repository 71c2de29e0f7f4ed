/* Tests for common_json: floats print as the shortest text that reads back
 * to the same double, in JSON written by jansson (fr_json_dumps) as in the
 * result writers; strings and integers are left exactly as jansson wrote. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/common.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void expect_format(double v, const char *want)
{
    char out[32];
    size_t n = fr_format_double(v, out);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

static void test_format_shortest(void **state)
{
    (void)state;
    expect_format(64.904572, "64.904572");
    expect_format(0.1, "0.1");
    expect_format(0.1 + 0.2, "0.30000000000000004"); /* needs all 17 digits */
    expect_format(3.0, "3.0");
    expect_format(-0.0, "-0.0");
    expect_format(1e300, "1e+300");
    expect_format(5e-324, "5e-324");
    expect_format(-2.5e-310, "-2.5e-310");
    expect_format(0.0, "0.0");
    expect_format(123456789.123, "123456789.123");
    expect_format(2.0 / 3.0, "0.6666666666666666");
    char out[32];
    assert_int_equal(fr_format_double(NAN, out), 0);
    assert_int_equal(fr_format_double(INFINITY, out), 0);
}

/* Every double prints shortest-first and reads back exactly. */
static void test_format_round_trips(void **state)
{
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof(v));
        if (!isfinite(v))
            continue;
        char out[32], shorter[32];
        size_t n = fr_format_double(v, out);
        assert_true(n > 0 && n < 32);
        assert_true(strtod(out, NULL) == v);
        /* no text with one significant digit fewer reads back (when %.15g failed) */
        snprintf(shorter, sizeof(shorter), "%.15g", v);
        if (strtod(shorter, NULL) == v)
            assert_true(strlen(out) <= strlen(shorter) + 2); /* ".0" at most */
    }
}

static void test_dumps_rewrites_reals_only(void **state)
{
    (void)state;
    json_t *j =
        json_pack("{s:f, s:[f, I, f], s:s, s:{s:f}, s:b, s:n}", "v3", 64.904572, "a", 0.1,
                  (json_int_t)12345678901234, 1e21, "s",
                  "0.10000000000000001 \"64.904572000000002\" 1e5", "o", "x-1.5", 2.5, "t", 1, "z");
    char *text = fr_json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_non_null(text);
    assert_string_equal(text, "{\"v3\":64.904572,\"a\":[0.1,12345678901234,1e+21],"
                              "\"s\":\"0.10000000000000001 \\\"64.904572000000002\\\" 1e5\","
                              "\"o\":{\"x-1.5\":2.5},\"t\":true,\"z\":null}");
    json_t *back = json_loads(text, 0, NULL);
    assert_non_null(back);
    assert_true(json_equal(j, back));
    json_decref(back);
    free(text);
    json_decref(j);
}

static void test_dumps_flags_and_any(void **state)
{
    (void)state;
    json_t *r = json_real(-2.0);
    char *text = fr_json_dumps(r, JSON_ENCODE_ANY);
    assert_string_equal(text, "-2.0");
    free(text);
    assert_null(fr_json_dumps(r, 0)); /* a bare real is not a document without ENCODE_ANY */
    json_decref(r);
    json_t *a = json_pack("[f]", 1.0 / 3.0);
    text = fr_json_dumps(a, JSON_INDENT(2));
    assert_string_equal(text, "[\n  0.3333333333333333\n]");
    free(text);
    json_decref(a);
    assert_null(fr_json_dumps(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_shortest),
        cmocka_unit_test(test_format_round_trips),
        cmocka_unit_test(test_dumps_rewrites_reals_only),
        cmocka_unit_test(test_dumps_flags_and_any),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
