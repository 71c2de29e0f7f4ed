/* test_net: which peer addresses count as this machine's (the rule behind
 * accepting unsigned worker announces). Plain sockaddr values, no traffic. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "common/common.h"

static bool v4(const char *text)
{
    struct sockaddr_in in;
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, text, &in.sin_addr), 1);
    return fr_sockaddr_is_loopback((const struct sockaddr *)&in);
}

static bool v6(const char *text)
{
    struct sockaddr_in6 in;
    memset(&in, 0, sizeof in);
    in.sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, text, &in.sin6_addr), 1);
    return fr_sockaddr_is_loopback((const struct sockaddr *)&in);
}

static void test_loopback_peers(void **state)
{
    (void)state;
    assert_true(v4("127.0.0.1"));
    assert_true(v4("127.200.3.4"));
    assert_true(v6("::1"));
    assert_true(v6("::ffff:127.0.0.1"));
}

static void test_other_peers(void **state)
{
    (void)state;
    assert_false(v4("10.0.0.1"));
    assert_false(v4("192.0.2.99"));
    assert_false(v4("128.0.0.1"));
    assert_false(v4("0.0.0.0"));
    assert_false(v6("::"));
    assert_false(v6("2001:db8::1"));
    assert_false(v6("::ffff:192.0.2.1"));
    assert_false(fr_sockaddr_is_loopback(NULL));
    struct sockaddr un = {.sa_family = AF_UNIX};
    assert_false(fr_sockaddr_is_loopback(&un));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loopback_peers),
        cmocka_unit_test(test_other_peers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
