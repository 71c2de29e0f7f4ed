/* Tests of the remote runner's partition fetch (src/runner/runner_remote.c):
 * a worker that accepts the connection and never answers (a hung,
 * SIGSTOPped one: the kernel accepts for it) costs a fetch no more than the
 * config's task_timeout_ms, not the protocol's 120 s, and the fetch fails
 * input-lost naming the worker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runner/runner_int.h"

static void test_fetch_bounded_by_task_timeout(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 8), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    char owner[64];
    snprintf(owner, sizeof(owner), "http://127.0.0.1:%d", ntohs(a.sin_port));

    struct cfg c;
    cfg_defaults(&c);
    c.task_timeout_ms = 300;
    struct cfg_frozen *frozen = cfg_freeze(&c);
    cfg_cleanup(&c);
    runner_registry *g = runner_registry_new(NULL, 1000);
    runner *r = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(runner_remote_new(frozen, NULL, g, NULL, NULL, &r, &err), FR_OK); /* steals */
    struct runner_part *p = runner__part_remote(owner, "p-0dd", 1, 8);
    p->borrowed = true; /* nothing to drop on the silent worker */
    assert_int_not_equal(runner__part_table(r, p, 0, &err), FR_OK);
    assert_string_equal(err.kind, "input-lost");
    assert_non_null(strstr(err.message, owner));
    const char *after = strstr(err.message, "after ");
    assert_non_null(after);
    long ms = strtol(after + 6, NULL, 10);
    assert_true(ms > 0 && ms < 1000); /* not PROTO_FETCH_TIMEOUT_MS */
    runner__part_free(r, p);
    runner_free(r, NULL);
    runner_registry_free(g);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fetch_bounded_by_task_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
