/* Tests of src/http/http_conns.c: when a peer counts as gone (the watchdog
 * shuts such a connection down in the middle of its body). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/http_int.h"

/* A connected loopback TCP pair: *client and *server. */
static void tcp_pair(int *client, int *server)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 1), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    *client = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(*client, (struct sockaddr *)&a, sizeof(a)), 0);
    *server = accept(lfd, NULL, NULL);
    assert_true(*server >= 0);
    close(lfd);
}

/* Waits until the FIN of the client has reached server. */
static void wait_rdhup(int server)
{
    struct pollfd p = {.fd = server, .events = POLLRDHUP};
    assert_int_equal(poll(&p, 1, 5000), 1);
    assert_true(p.revents & POLLRDHUP);
}

static void test_open_peer_is_not_gone(void **state)
{
    (void)state;
    int c, s;
    tcp_pair(&c, &s);
    assert_false(http__conns_peer_gone(s));
    assert_int_equal(write(c, "abc", 3), 3);
    assert_false(http__conns_peer_gone(s));
    close(c);
    close(s);
}

/* A client that sent its whole body, then shut its write side down (nc -N,
 * HTTP/1.0 style), waits for the answer: not gone while bytes are unread. */
static void test_half_close_with_unread_body_is_not_gone(void **state)
{
    (void)state;
    int c, s;
    tcp_pair(&c, &s);
    assert_int_equal(write(c, "a,b\n1,2\n", 8), 8);
    assert_int_equal(shutdown(c, SHUT_WR), 0);
    wait_rdhup(s);
    assert_false(http__conns_peer_gone(s));
    char buf[16];
    assert_int_equal(read(s, buf, sizeof(buf)), 8);
    assert_true(http__conns_peer_gone(s)); /* all read: no more is coming */
    close(c);
    close(s);
}

static void test_half_close_with_nothing_unread_is_gone(void **state)
{
    (void)state;
    int c, s;
    tcp_pair(&c, &s);
    assert_int_equal(shutdown(c, SHUT_WR), 0);
    wait_rdhup(s);
    assert_true(http__conns_peer_gone(s));
    close(c);
    close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_peer_is_not_gone),
        cmocka_unit_test(test_half_close_with_unread_body_is_not_gone),
        cmocka_unit_test(test_half_close_with_nothing_unread_is_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
