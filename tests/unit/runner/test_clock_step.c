/* A step of the wall clock (NTP, an operator's `date -s`) changes no timeout:
 * worker liveness, a failed worker's suspect spell and a ?wait count on the
 * monotonic clock. This executable is linked with --wrap=clock_gettime
 * (CMakeLists.txt): every clock_gettime(CLOCK_REALTIME) of framed's code
 * returns the real time moved by wall_shift_s, while pthread's own timed
 * waits still see the kernel's clocks, as they would after a real step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner/runner_int.h"
#include "registry_util.h"

static _Atomic long wall_shift_s;

int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
    int rc = __real_clock_gettime(id, ts);
    if (rc == 0 && id == CLOCK_REALTIME)
        ts->tv_sec += (time_t)atomic_load(&wall_shift_s);
    return rc;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int count_urls(runner_registry *g)
{
    char **urls = runner__registry_urls(g);
    int n = 0;
    while (urls[n])
        free(urls[n++]);
    free(urls);
    return n;
}

/* The wall clock jumps an hour ahead just after a beat: the worker is still
 * active, still listed, still told of a reset (runner__registry_urls) and
 * still picked; and its last_heartbeat shows the wall time of the beat. */
static void test_wall_step_forward_keeps_workers(void **s)
{
    (void)s;
    atomic_store(&wall_shift_s, 0);
    runner_registry *g = runner_registry_new(NULL, 1000);
    announce(g, "w1", "http://127.0.0.1:7001", 2);
    announce(g, "w2", "http://127.0.0.1:7002", 2);
    atomic_store(&wall_shift_s, 3600);
    assert_string_equal(state(g, "http://127.0.0.1:7001"), "active");
    assert_string_equal(state(g, "http://127.0.0.1:7002"), "active");
    assert_int_equal(runner__registry_live(g), 2);
    assert_int_equal(count_urls(g), 2);
    assert_false(runner__registry_gone(g, "http://127.0.0.1:7001"));
    assert_false(runner__registry_lapsed(g, "http://127.0.0.1:7001"));
    bool busy = false, alive = false;
    char *url = runner__registry_pick(g, NULL, NULL, 0, -1, &busy, &alive);
    assert_non_null(url);
    assert_true(alive);
    runner__registry_done(g, url, false);
    free(url);
    /* a beat after the step is shown at the stepped wall time */
    announce(g, "w1", "http://127.0.0.1:7001", 2);
    json_t *list = runner_registry_list(g);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now); /* wrapped: the stepped clock */
    size_t i;
    json_t *w;
    int seen = 0;
    json_array_foreach(list, i, w)
    {
        const char *at = json_string_value(json_object_get(w, "last_heartbeat"));
        assert_non_null(at);
        struct tm tm = {0};
        assert_int_equal(sscanf(at, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                                &tm.tm_hour, &tm.tm_min, &tm.tm_sec),
                         6);
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        long long d = (long long)timegm(&tm) - (long long)now.tv_sec;
        /* w1 beat just now, at the stepped time; w2 before the step, an hour back */
        if (strcmp(json_string_value(json_object_get(w, "id")), "w1") == 0) {
            assert_true(d > -120 && d < 120);
            seen++;
        } else {
            assert_true(d > -3600 - 120 && d < -3600 + 120);
        }
    }
    assert_int_equal(seen, 1);
    json_decref(list);
    runner_registry_free(g);
    atomic_store(&wall_shift_s, 0);
}

/* The wall clock jumps an hour back: a worker that stopped beating still
 * goes suspect after 3 beats and gone after 10, not an hour later (beats of
 * 500 ms: suspect from 1.5 s, gone from 5 s, forgotten from 30 s). */
static void test_wall_step_back_still_ages_workers(void **s)
{
    (void)s;
    atomic_store(&wall_shift_s, 0);
    runner_registry *g = runner_registry_new(NULL, 500);
    announce(g, "w1", "http://127.0.0.1:7001", 2);
    atomic_store(&wall_shift_s, -3600);
    sleep_ms(1700); /* over 3 beats */
    assert_string_equal(state(g, "http://127.0.0.1:7001"), "suspect");
    assert_true(runner__registry_lapsed(g, "http://127.0.0.1:7001"));
    sleep_ms(3600); /* over 10 beats */
    assert_true(runner__registry_gone(g, "http://127.0.0.1:7001"));
    assert_int_equal(count_urls(g), 0);
    runner_registry_free(g);
    atomic_store(&wall_shift_s, 0);
}

/* A static worker whose call failed is suspect for 3 beats, then active
 * again: a wall clock stepped back an hour does not stretch that to an hour. */
static void test_wall_step_back_ends_a_static_suspect_spell(void **s)
{
    (void)s;
    atomic_store(&wall_shift_s, 0);
    runner_registry *g = runner_registry_new("http://127.0.0.1:7101", 500); /* 1.5 s spell */
    assert_string_equal(state(g, "http://127.0.0.1:7101"), "active");
    runner__registry_suspect(g, "http://127.0.0.1:7101");
    assert_string_equal(state(g, "http://127.0.0.1:7101"), "suspect");
    atomic_store(&wall_shift_s, -3600);
    sleep_ms(1700);
    assert_string_equal(state(g, "http://127.0.0.1:7101"), "active");
    runner_registry_free(g);
    atomic_store(&wall_shift_s, 0);
}

struct waiter {
    runner_query *q;
    atomic_bool done;
    bool settled;
};

static void *wait_main(void *arg)
{
    struct waiter *w = arg;
    w->settled = runner_query_wait(w->q, 200);
    atomic_store(&w->done, true);
    return NULL;
}

/* A ?wait of 200 ms on a query that does not end returns after about 200 ms
 * even when the wall clock was just stepped an hour ahead (a realtime
 * deadline would hold the request's thread for that hour). */
static void test_query_wait_ignores_wall_step(void **s)
{
    (void)s;
    runner_query *q = runner_query_new("q-clock", NULL);
    atomic_store(&wall_shift_s, 3600);
    struct waiter w = {.q = q};
    atomic_init(&w.done, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_main, &w), 0);
    for (int i = 0; i < 300 && !atomic_load(&w.done); i++)
        sleep_ms(10);
    atomic_store(&wall_shift_s, 0);
    if (!atomic_load(&w.done)) {
        pthread_detach(t); /* it would hold q for an hour: fail, and leave it */
        fail_msg("runner_query_wait(200 ms) still waiting after 3 s: its deadline is on the "
                 "wall clock");
    }
    pthread_join(t, NULL);
    assert_false(w.settled);
    runner_query_unref(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wall_step_forward_keeps_workers),
        cmocka_unit_test(test_wall_step_back_still_ages_workers),
        cmocka_unit_test(test_wall_step_back_ends_a_static_suspect_spell),
        cmocka_unit_test(test_query_wait_ignores_wall_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
