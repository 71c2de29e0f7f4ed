/* Tests of src/runner/runner_registry.c: announces, heartbeat states
 * (active, suspect after 3 missed beats, gone after 10), picking a worker by
 * free slots and data locality, and a failed worker staying suspect until it
 * beats again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner/runner_int.h"
#include "registry_util.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_bad_announces(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 1000);
    struct fr_error err;
    fr_error_init(&err);
    json_t *no_url = json_pack("{ss}", "id", "w1");
    json_t *bad_url = json_pack("{ss ss}", "id", "w1", "url", "ftp://x");
    json_t *bad_threads = json_pack("{ss ss si}", "id", "w1", "url", "http://a", "threads", 0);
    assert_int_equal(runner_registry_announce(g, no_url, NULL, &err), FR_EINVAL);
    assert_int_equal(runner_registry_announce(g, bad_url, NULL, &err), FR_EINVAL);
    assert_int_equal(runner_registry_announce(g, bad_threads, NULL, &err), FR_EINVAL);
    json_t *list = runner_registry_list(g);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);
    json_decref(no_url);
    json_decref(bad_url);
    json_decref(bad_threads);
    runner_registry_free(g);
}

/* Every member is type- and bound-checked; nothing of a bad announce is kept. */
static void test_announce_members_checked(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 1000);
    const char *bodies[] = {
        "{\"id\": \"w1\", \"url\": \"http://a\", \"threads\": 3000000000}",
        "{\"id\": \"w1\", \"url\": \"http://a\", \"threads\": 2.5}",
        "{\"id\": \"w1\", \"url\": \"http://a\", \"config_ids\": [1, 2]}",
        "{\"id\": \"w1\", \"url\": \"http://a\", \"config_ids\": \"sha256:x\"}",
        "{\"id\": \"w1\", \"url\": \"http://a\", \"running_tasks\": \"3\"}",
        "{\"id\": \"w1\", \"url\": \"http://a\", \"running_tasks\": -1}",
        "{\"id\": \"w 1\", \"url\": \"http://a\"}",
        "{\"id\": 7, \"url\": \"http://a\"}",
        "{\"id\": \"w1\", \"url\": \"http://\"}",
        "{\"id\": \"w1\", \"url\": \"http://a b\"}",
        "{\"id\": \"w1\", \"url\": \"http://a\", \"config_ids\": [\"sha256:zz\"]}",
        "{\"id\": \"w1\", \"url\": \"http://a:9/../../x\"}",
        "{\"id\": \"w1\", \"url\": \"http://a:9/v1\"}",
        "{\"id\": \"w1\", \"url\": \"http://u@a:9\"}",
        "{\"id\": \"w1\", \"url\": \"http://a:9?x\"}",
        "[1]",
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        json_t *b = json_loads(bodies[i], 0, NULL);
        assert_non_null(b);
        struct fr_error err;
        fr_error_init(&err);
        assert_int_equal(runner_registry_announce(g, b, NULL, &err), FR_EINVAL);
        assert_true(err.message[0] != '\0');
        json_decref(b);
    }
    json_t *list = runner_registry_list(g);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);
    runner_registry_free(g);
}

/* Fake announces cannot grow the registry without bound, and workers whose
 * heartbeats stopped are forgotten after a while. */
static void test_registry_capped_and_pruned(void **s)
{
    (void)s;
    /* beats of 25 ms: the 2000 announces (slow under ASan on a loaded
     * machine) end before the first ones are forgotten (60 beats, 1.5 s) */
    runner_registry *g = runner_registry_new(NULL, 25);
    int accepted = 0;
    for (int i = 0; i < 2000; i++) {
        char id[32], url[64];
        snprintf(id, sizeof(id), "w%d", i);
        snprintf(url, sizeof(url), "http://10.0.%d.%d:1", i / 250, i % 250);
        json_t *b = json_pack("{ss ss si}", "id", id, "url", url, "threads", 1);
        struct fr_error err;
        fr_error_init(&err);
        if (runner_registry_announce(g, b, NULL, &err) == FR_OK)
            accepted++;
        json_decref(b);
    }
    assert_true(accepted < 2000);
    json_t *list = runner_registry_list(g);
    assert_int_equal(json_array_size(list), (size_t)accepted);
    json_decref(list);
    sleep_ms(1600); /* > 60 beats of 25 ms */
    list = runner_registry_list(g);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);
    announce(g, "w-new", "http://b", 2); /* room again */
    assert_string_equal(state(g, "http://b"), "active");
    runner_registry_free(g);
}

static void test_states_age(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 40);
    announce(g, "w1", "http://a", 1);
    assert_string_equal(state(g, "http://a"), "active");
    sleep_ms(200); /* > 3 beats */
    assert_string_equal(state(g, "http://a"), "suspect");
    sleep_ms(400); /* > 10 beats */
    assert_string_equal(state(g, "http://a"), "gone");
    assert_true(runner__registry_gone(g, "http://a"));
    announce(g, "w1", "http://a", 1); /* it comes back */
    assert_string_equal(state(g, "http://a"), "active");
    runner_registry_free(g);
}

/* A pick with no scan file and no locality wait. */
static char *pick(runner_registry *g, const char *prefer, const char *avoid, bool *alive)
{
    bool busy;
    return runner__registry_pick(g, prefer, avoid, 0, -1, &busy, alive);
}

/* Scans go where the file was read locally: a worker that read it by range
 * gets it only when the local one is full and the job may not wait; a file
 * not seen (another key) is placed by load alone. */
static void test_pick_scan_locality(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 60000);
    announce(g, "w1", "http://a", 1);
    announce(g, "w2", "http://b", 1);
    const uint64_t file = 0x1234560, other = 0x7777770;
    runner__registry_note_scan(g, "http://a", file, false);
    runner__registry_note_scan(g, "http://b", file, true);
    bool alive, busy;
    char *u1 = runner__registry_pick(g, NULL, NULL, file, 0, &busy, &alive);
    assert_string_equal(u1, "http://b");
    assert_false(busy);
    char *u2 = runner__registry_pick(g, NULL, NULL, file, 0, &busy, &alive); /* b is full */
    assert_null(u2);
    assert_true(busy);
    assert_true(alive);
    int64_t long_ago = fr_mono_ms() - RUNNER_LOCALITY_WAIT_MS - 100;
    char *u3 =
        runner__registry_pick(g, NULL, NULL, file, long_ago, &busy, &alive); /* waited enough */
    assert_string_equal(u3, "http://a");
    assert_false(busy);
    runner__registry_done(g, "http://a", false);
    char *u4 = runner__registry_pick(g, NULL, NULL, other, 0, &busy, &alive);
    assert_string_equal(u4, "http://a"); /* unknown file: the free one */
    runner__registry_done(g, "http://a", false);
    runner__registry_done(g, "http://b", false);
    runner__registry_note_scan(g, "http://b", file, false); /* b's copy changed: now by range */
    runner__registry_note_scan(g, "http://a", file, true);
    char *u5 = runner__registry_pick(g, NULL, NULL, file, 0, &busy, &alive);
    assert_string_equal(u5, "http://a");
    char *u6 = runner__registry_pick(g, NULL, NULL, file, -1, &busy, &alive); /* may not wait */
    assert_string_equal(u6, "http://b");
    assert_false(busy);
    runner__registry_done(g, "http://b", false);
    free(u6);
    free(u1);
    free(u3);
    free(u4);
    free(u5);
    runner_registry_free(g);
}

/* Delay scheduling: a task that has waited past RUNNER_LOCALITY_WAIT_MS
 * still waits for the worker with its file while that worker keeps finishing
 * tasks (a loaded machine), and goes elsewhere once the worker has finished
 * none for that long (a stalled one). */
static void test_pick_locality_wait_follows_progress(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 60000);
    announce(g, "w1", "http://a", 1);
    announce(g, "w2", "http://b", 1);
    const uint64_t file = 0x4242420;
    runner__registry_note_scan(g, "http://a", file, false);
    runner__registry_note_scan(g, "http://b", file, true);
    bool alive, held;
    int64_t since = fr_mono_ms() - RUNNER_LOCALITY_WAIT_MS - 100; /* waited long already */
    char *u1 = runner__registry_pick(g, NULL, NULL, file, 0, &held, &alive);
    assert_string_equal(u1, "http://b");
    runner__registry_done(g, "http://b", false); /* b finishes a task now... */
    runner__registry_progress(g, "http://b");
    char *u2 = runner__registry_pick(g, NULL, NULL, file, 0, &held, &alive);
    assert_string_equal(u2, "http://b"); /* ...and takes the next */
    char *u3 = runner__registry_pick(g, NULL, NULL, file, since, &held, &alive);
    assert_null(u3); /* b is busy but making progress: the old task waits for it */
    assert_true(held);
    sleep_ms(RUNNER_LOCALITY_WAIT_MS + 100); /* b finishes nothing for longer than the wait */
    char *u4 = runner__registry_pick(g, NULL, NULL, file, since, &held, &alive);
    assert_string_equal(u4, "http://a");
    assert_false(held);
    runner__registry_done(g, "http://a", false);
    /* a failed answer is no progress; and however busy b keeps, a task that
     * waited RUNNER_LOCALITY_WAIT_MAX_MS in all goes elsewhere */
    runner__registry_done(g, "http://b", true);
    sleep_ms(2);
    announce(g, "w2", "http://b", 1); /* beats again, after the failure: active */
    char *u5 = runner__registry_pick(g, NULL, NULL, file, 0, &held, &alive);
    assert_string_equal(u5, "http://b");
    char *u6 = runner__registry_pick(g, NULL, NULL, file, since, &held, &alive);
    assert_string_equal(u6, "http://a"); /* b's last 200 was over the wait ago */
    runner__registry_done(g, "http://a", false);
    runner__registry_progress(g, "http://b");
    int64_t ages_ago = fr_mono_ms() - RUNNER_LOCALITY_WAIT_MAX_MS - 10;
    char *u7 = runner__registry_pick(g, NULL, NULL, file, ages_ago, &held, &alive);
    assert_string_equal(u7, "http://a"); /* b progresses, but the wait is used up */
    assert_false(held);
    free(u1);
    free(u2);
    free(u4);
    free(u5);
    free(u6);
    free(u7);
    runner_registry_free(g);
}

static void test_pick_slots_locality_failures(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 60000);
    announce(g, "w1", "http://a", 1);
    announce(g, "w2", "http://b", 2);
    bool alive;
    char *u1 = pick(g, "http://b", NULL, &alive); /* locality */
    assert_string_equal(u1, "http://b");
    char *u2 = pick(g, NULL, NULL, &alive); /* least loaded: a (0/1) */
    assert_string_equal(u2, "http://a");
    char *u3 = pick(g, "http://a", NULL, &alive); /* a is full */
    assert_string_equal(u3, "http://b");
    char *u4 = pick(g, NULL, NULL, &alive); /* every slot taken */
    assert_null(u4);
    assert_true(alive);
    runner__registry_done(g, "http://a", true); /* a failed a call */
    assert_string_equal(state(g, "http://a"), "suspect");
    char *u5 = pick(g, NULL, NULL, &alive);
    assert_null(u5); /* a is free but suspect, b is full */
    runner__registry_done(g, "http://b", false);
    /* avoid b, but a is suspect: the lone active worker is better than none
     * (a job that failed once on it must not wait for a worker that is not there) */
    char *u6 = pick(g, NULL, "http://b", &alive);
    assert_string_equal(u6, "http://b");
    runner__registry_done(g, "http://b", false);
    sleep_ms(2);
    announce(g, "w1", "http://a", 1); /* a newer heartbeat makes it active again */
    assert_string_equal(state(g, "http://a"), "active");
    char *u8 = pick(g, NULL, "http://b", &alive); /* avoid b: a is there */
    assert_string_equal(u8, "http://a");
    runner__registry_done(g, "http://a", false);
    char *u7 = pick(g, NULL, NULL, &alive);
    assert_string_equal(u7, "http://a");
    free(u6);
    free(u8);
    free(u1);
    free(u2);
    free(u3);
    free(u7);
    runner_registry_free(g);
}

/* An announced URL with a trailing '/' is stored without it, as static ones
 * are: calls append /v1/..., and "//v1/tasks" would be a 404. A heartbeat
 * with and one without the slash are the same worker. */
static void test_announced_url_trailing_slash(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 60000);
    announce(g, "w1", "http://127.0.0.1:9/", 1);
    assert_string_equal(state(g, "http://127.0.0.1:9"), "active");
    announce(g, "w1", "http://127.0.0.1:9", 1);
    json_t *list = runner_registry_list(g);
    assert_int_equal(json_array_size(list), 1);
    json_decref(list);
    bool alive;
    char *u = pick(g, NULL, NULL, &alive);
    assert_string_equal(u, "http://127.0.0.1:9");
    free(u);
    runner_registry_free(g);
}

static void test_ties_rotate(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 60000);
    announce(g, "w1", "http://a", 4);
    announce(g, "w2", "http://b", 4);
    bool alive;
    char *u1 = pick(g, NULL, NULL, &alive);
    runner__registry_done(g, u1, false); /* both idle again: the next pick is the other */
    char *u2 = pick(g, NULL, NULL, &alive);
    assert_string_not_equal(u1, u2);
    free(u1);
    free(u2);
    runner_registry_free(g);
}

static void test_static_workers(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new("http://x:1/,http://y:2", 1000);
    json_t *list = runner_registry_list(g);
    assert_int_equal(json_array_size(list), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "url")),
                        "http://x:1");
    assert_true(json_is_true(json_object_get(json_array_get(list, 0), "static")));
    json_decref(list);
    assert_string_equal(state(g, "http://y:2"), "active");
    runner__registry_done(g, "http://y:2", true);
    assert_string_equal(state(g, "http://y:2"), "suspect");
    char **urls = runner__registry_urls(g);
    int n = 0;
    for (; urls[n]; n++)
        free(urls[n]);
    free(urls);
    assert_int_equal(n, 2);
    runner_registry_free(g);
}

/* Workers by state as /metrics gauges, and the live count the remote
 * runner's admission reads (no worker: 503 no-workers at once). */
static void test_live_count_and_metrics(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 20);
    assert_int_equal(runner__registry_live(g), 0);
    announce(g, "w1", "http://w1", 2);
    announce(g, "w2", "http://w2", 2);
    assert_int_equal(runner__registry_live(g), 2);
    struct fr_buf b;
    fr_buf_init(&b);
    runner_registry_metrics(g, &b);
    assert_non_null(strstr(b.data, "framed_workers{state=\"active\"} 2\n"));
    assert_non_null(strstr(b.data, "framed_workers{state=\"gone\"} 0\n"));
    fr_buf_cleanup(&b);
    sleep_ms(300); /* > 10 beats of 20 ms: both gone */
    assert_int_equal(runner__registry_live(g), 0);
    fr_buf_init(&b);
    runner_registry_metrics(g, &b);
    assert_non_null(strstr(b.data, "framed_workers{state=\"gone\"} 2\n"));
    fr_buf_cleanup(&b);
    runner_registry_free(g);
}

#define CFG_A "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CFG_B "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* A config ID from a number (out: 72 bytes), for many distinct ones. */
static void numbered_id(char *out, int n)
{
    snprintf(out, 72, "sha256:%064x", n);
}

/* The one config an announce's answer named, or "" for none (asserts at most one). */
static const char *told_one(json_t *told)
{
    static char id[72];
    assert_true(json_array_size(told) <= 1);
    snprintf(id, sizeof(id), "%s",
             json_array_size(told) ? json_string_value(json_array_get(told, 0)) : "");
    json_decref(told);
    return id;
}

/* A worker hung through runner A's reset (its release timed out) and came
 * back under runner B: it is told to drop A, in the answer to its second
 * heartbeat, and B is not touched (it used to be told to drop the live
 * runner's config in the place of the one it owed). A drop owed of the live
 * runner's config is that runner's to tell (with its partitions marked lost),
 * never the heartbeat answer's. */
static void test_drops_owed_by_config(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 20);
    announce(g, "w1", "http://w1", 2);
    announce(g, "w2", "http://w2", 2);
    runner__registry_set_live(g, CFG_A);
    sleep_ms(100); /* > 3 beats of 20 ms: w1's heartbeats lapsed */
    announce(g, "w2", "http://w2", 2);
    assert_true(runner__registry_owe_drop(g, "http://w1", CFG_A));
    assert_true(runner__registry_owe_release(g, "http://w1", CFG_A)); /* the reset's release */
    runner__registry_set_live(g, NULL);
    runner__registry_set_live(g, CFG_B);
    assert_string_equal(told_one(announce_told(g, "w1", "http://w1", 2)), "");
    assert_null(runner__registry_take_returned(g, CFG_B)); /* B is not owed */
    assert_string_equal(told_one(announce_told(g, "w1", "http://w1", 2)), CFG_A);
    assert_string_equal(told_one(announce_told(g, "w1", "http://w1", 2)), ""); /* told once */
    assert_string_equal(told_one(announce_told(g, "w2", "http://w2", 2)), "");
    /* a drop owed of B, the live runner's: not in the answer, B's to take */
    sleep_ms(100);
    assert_true(runner__registry_owe_drop(g, "http://w1", CFG_B));
    assert_string_equal(told_one(announce_told(g, "w1", "http://w1", 2)), "");
    assert_string_equal(told_one(announce_told(g, "w1", "http://w1", 2)), "");
    assert_null(runner__registry_take_returned(g, CFG_A));
    char **urls = runner__registry_take_returned(g, CFG_B);
    assert_non_null(urls);
    assert_string_equal(urls[0], "http://w1");
    assert_null(urls[1]);
    free(urls[0]);
    free(urls);
    /* B reset with w1 hung again: without a live runner the answer tells it */
    sleep_ms(100);
    assert_true(runner__registry_owe_drop(g, "http://w1", CFG_B));
    runner__registry_set_live(g, NULL);
    announce(g, "w1", "http://w1", 2);
    assert_string_equal(told_one(announce_told(g, "w1", "http://w1", 2)), CFG_B);
    runner_registry_free(g);
}

/* A heartbeat answer can be lost: a told drop is told again while the
 * worker's heartbeat still reports the config (3 answers at most), and
 * settled once it does not. A release that succeeded settles an older debt
 * of it (a later runner of the same config must not find it owed). A worker
 * gone at the reset, which the reset does not call, owes the drop too. */
static void test_drops_told_until_done(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 20);
    announce(g, "w1", "http://w1", 2);
    assert_true(runner__registry_owe_release(g, "http://w1", CFG_A));
    json_decref(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_A)));
    for (int i = 0; i < 3; i++) /* the answers got lost: it still holds A */
        assert_string_equal(
            told_one(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_A))), CFG_A);
    assert_string_equal(
        told_one(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_A))), "");
    /* told once, then reported gone from the worker: settled */
    assert_true(runner__registry_owe_release(g, "http://w1", CFG_B));
    json_decref(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_B)));
    assert_string_equal(
        told_one(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_B))), CFG_B);
    assert_string_equal(told_one(announce_holding(g, "w1", "http://w1", 2, json_array())), "");
    assert_true(runner__registry_owe_release(g, "http://w1", CFG_B));
    assert_string_equal(
        told_one(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_B))), "");
    /* forgiven (its release answered): not told */
    runner__registry_forgive(g, "http://w1", CFG_B);
    assert_string_equal(
        told_one(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_B))), "");
    assert_string_equal(
        told_one(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_B))), "");
    /* told already, then a runner of the same config goes live: settled (the
     * answer's drop took what the worker held when its heartbeat left) */
    assert_true(runner__registry_owe_release(g, "http://w1", CFG_A));
    json_decref(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_A)));
    assert_string_equal(
        told_one(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_A))), CFG_A);
    runner__registry_set_live(g, CFG_A);
    assert_null(runner__registry_take_returned(g, CFG_A));
    runner__registry_set_live(g, NULL);
    assert_string_equal(
        told_one(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_A))), "");
    runner_registry_free(g);
    /* gone at a reset: not called, and owes it in the same look; the active
     * one is called and owes nothing (beats of 50 ms: gone after 500) */
    g = runner_registry_new(NULL, 50);
    announce(g, "w1", "http://w1", 2);
    announce(g, "w2", "http://w2", 2);
    sleep_ms(700);
    announce(g, "w2", "http://w2", 2);
    int gone = 0;
    char **urls = runner__registry_release_targets(g, CFG_A, &gone);
    assert_int_equal(gone, 1);
    assert_string_equal(urls[0], "http://w2");
    assert_null(urls[1]);
    free(urls[0]);
    free(urls);
    assert_string_equal(told_one(announce_told(g, "w2", "http://w2", 2)), "");
    announce(g, "w1", "http://w1", 2);
    assert_string_equal(
        told_one(announce_holding(g, "w1", "http://w1", 2, json_pack("[s]", CFG_A))), CFG_A);
    runner_registry_free(g);
}

/* A worker hung through many resets owes at most REG_MAX_OWED (8) drops:
 * the newest are told; a static worker (no heartbeat) owes none. */
static void test_drops_owed_bounded(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new("http://static1", 1000);
    announce(g, "w1", "http://w1", 2);
    char id[72];
    for (int i = 0; i < 11; i++) {
        numbered_id(id, i);
        assert_true(runner__registry_owe_release(g, "http://w1", id));
    }
    numbered_id(id, 10);
    assert_true(runner__registry_owe_release(g, "http://w1", id)); /* once per config */
    assert_false(runner__registry_owe_release(g, "http://static1", id));
    assert_false(runner__registry_owe_release(g, "http://unknown", id));
    json_decref(announce_told(g, "w1", "http://w1", 2));
    json_t *told = announce_told(g, "w1", "http://w1", 2);
    assert_int_equal(json_array_size(told), 8);
    for (int i = 0; i < 8; i++) {
        numbered_id(id, 3 + i);
        assert_string_equal(json_string_value(json_array_get(told, (size_t)i)), id);
    }
    json_decref(told);
    runner_registry_free(g);
}

/* A worker that hung owes a drop: it is handed out once, only after two
 * heartbeats since and with no task running. */
static void test_returned_after_hang(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 20);
    runner__registry_set_live(g, CFG_A); /* the live runner's debts: its own to take */
    announce(g, "w1", "http://w1", 2);
    announce(g, "w2", "http://w2", 2);
    assert_null(runner__registry_take_returned(g, CFG_A));
    sleep_ms(100); /* > 3 beats of 20 ms: w1's heartbeats lapsed */
    announce(g, "w2", "http://w2", 2);
    assert_true(runner__registry_owe_drop(g, "http://w1", CFG_A));
    runner__registry_done(g, "http://w1", true);
    assert_null(runner__registry_take_returned(g, CFG_A)); /* suspect, no beat yet */
    sleep_ms(2); /* a heartbeat later than the failure, to the millisecond */
    announce(g, "w1", "http://w1", 2);
    assert_null(runner__registry_take_returned(g, CFG_A)); /* one beat: late requests may run */
    announce(g, "w1", "http://w1", 2);
    char **urls = runner__registry_take_returned(g, CFG_A);
    assert_non_null(urls);
    assert_string_equal(urls[0], "http://w1");
    assert_null(urls[1]);
    free(urls[0]);
    free(urls);
    announce(g, "w1", "http://w1", 2);
    assert_null(runner__registry_take_returned(g, CFG_A)); /* taken once */
    runner_registry_free(g);
}

/* A worker that timed out a call while it still beats (a survivor that
 * waited on a hung peer) owes no drop: it holds the runner's partitions. */
static void test_no_drop_owed_while_beating(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 1000);
    runner__registry_set_live(g, CFG_A); /* the live runner's debts: its own to take */
    announce(g, "w1", "http://w1", 2);
    assert_false(runner__registry_owe_drop(g, "http://w1", CFG_A));
    runner__registry_done(g, "http://w1", true);
    sleep_ms(2);
    announce(g, "w1", "http://w1", 2);
    announce(g, "w1", "http://w1", 2);
    assert_null(runner__registry_take_returned(g, CFG_A));
    assert_false(runner__registry_lapsed(g, "http://w1"));
    assert_true(runner__registry_lapsed(g, "http://unknown")); /* forgotten: unreachable */
    runner_registry_free(g);
}

/* A worker hung longer than REG_FORGET_BEATS is forgotten, but still owes
 * its drop: announced again (as "joined"), it is told. */
static void test_forgotten_worker_still_owes_drop(void **s)
{
    (void)s;
    runner_registry *g = runner_registry_new(NULL, 5);
    runner__registry_set_live(g, CFG_A); /* the live runner's debts: its own to take */
    announce(g, "w1", "http://w1", 2);
    announce(g, "w2", "http://w2", 2);
    sleep_ms(30); /* > 3 beats */
    assert_true(runner__registry_lapsed(g, "http://w1"));
    assert_true(runner__registry_owe_drop(g, "http://w1", CFG_A));
    sleep_ms(500); /* > 60 beats of 5 ms: both forgotten */
    json_t *list = runner_registry_list(g);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);
    announce(g, "w2", "http://w2", 2); /* it owed nothing */
    announce(g, "w2", "http://w2", 2);
    assert_null(runner__registry_take_returned(g, CFG_A));
    announce(g, "w1", "http://w1", 2);
    announce(g, "w1", "http://w1", 2);
    announce(g, "w1", "http://w1", 2);
    char **urls = runner__registry_take_returned(g, CFG_A);
    assert_non_null(urls);
    assert_string_equal(urls[0], "http://w1");
    assert_null(urls[1]);
    free(urls[0]);
    free(urls);
    runner_registry_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_announces),
        cmocka_unit_test(test_announce_members_checked),
        cmocka_unit_test(test_registry_capped_and_pruned),
        cmocka_unit_test(test_states_age),
        cmocka_unit_test(test_pick_slots_locality_failures),
        cmocka_unit_test(test_ties_rotate),
        cmocka_unit_test(test_announced_url_trailing_slash),
        cmocka_unit_test(test_static_workers),
        cmocka_unit_test(test_pick_scan_locality),
        cmocka_unit_test(test_pick_locality_wait_follows_progress),
        cmocka_unit_test(test_live_count_and_metrics),
        cmocka_unit_test(test_returned_after_hang),
        cmocka_unit_test(test_no_drop_owed_while_beating),
        cmocka_unit_test(test_forgotten_worker_still_owes_drop),
        cmocka_unit_test(test_drops_owed_by_config),
        cmocka_unit_test(test_drops_owed_bounded),
        cmocka_unit_test(test_drops_told_until_done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
