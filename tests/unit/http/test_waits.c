/* Tests of src/http/http_waits.c: how soon the waiter looks at the waits
 * again, by the youngest wait's age (a short query's ?wait= must not sit out
 * a fixed 20 ms tick). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "http/http_int.h"

static void test_tick_follows_the_youngest_wait(void **state)
{
    (void)state;
    assert_int_equal(http__wait_tick_ms(0), 1);
    assert_int_equal(http__wait_tick_ms(-5000), 1); /* a clock step back: still 1 ms */
    assert_int_equal(http__wait_tick_ms(70000), 1); /* a 70 ms query: answered <= 1 ms late */
    assert_int_equal(http__wait_tick_ms(320000), 5);
    assert_int_equal(http__wait_tick_ms(1279999), 19);
    assert_int_equal(http__wait_tick_ms(1280000), 20);
    assert_int_equal(http__wait_tick_ms(INT64_MAX), 20);
    int64_t prev = 0;
    for (int64_t age = 0; age < 1000000; age += 997) {
        int64_t t = http__wait_tick_ms(age);
        assert_true(t >= prev && t >= 1 && t <= 20);
        prev = t;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tick_follows_the_youngest_wait),
    };
    return cmocka_run_group_tests(tests, 0, NULL);
}
