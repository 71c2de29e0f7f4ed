/* Tests of src/context/context_events.c: the event ring's sequence numbers,
 * its overflow past CTX_EVENTS_RING, a resume from an ID still held and from
 * one that fell off (a "reset" event, then the oldest held), ids of two runs
 * that never meet (a resume across a restart says reset), the type
 * filter, the stream limit and the wake on publish and close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/context_int.h"

static void count_wake(void *arg)
{
    (*(int *)arg)++;
}

static void publish_n(struct ctx__bus *b, unsigned type, int n)
{
    for (int i = 0; i < n; i++)
        ctx__bus_publish(b, type, json_pack("{si}", "n", i));
}

/* The ids in text ("id: N" lines), in order, into ids; returns how many. */
static int ids_of(const char *text, int64_t *ids, int max)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, "id: ")) && n < max; p += 4)
        if (p == text || p[-1] == '\n')
            ids[n++] = strtoll(p + 4, NULL, 10);
    return n;
}

static void read_all(ctx_event_sub *s, struct fr_buf *out)
{
    fr_buf_init(out);
    ctx_events_read(s, out, 1 << 24);
    fr_buf_putc(out, '\0');
}

static void test_sequence_and_format(void **state)
{
    (void)state;
    struct ctx__bus *b = ctx__bus_new_at(4, 0);
    struct fr_error err;
    fr_error_init(&err);
    int woken = 0;
    ctx_event_sub *s = NULL;
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, -1, count_wake, &woken, &s, &err), FR_OK);
    assert_true(ctx_events_idle(s));
    assert_int_equal(ctx__bus_publish(b, CTX_EVENT_QUERY, json_pack("{ss}", "id", "q-1")), 1);
    assert_int_equal(ctx__bus_publish(b, CTX_EVENT_STATS, json_pack("{ss}", "t", "a\nb")), 2);
    assert_int_equal(woken, 2);
    assert_false(ctx_events_idle(s));
    struct fr_buf out;
    read_all(s, &out);
    assert_string_equal(out.data, "id: 1\nevent: query\ndata: {\"id\":\"q-1\"}\n\n"
                                  "id: 2\nevent: stats\ndata: {\"t\":\"a\\nb\"}\n\n");
    assert_true(ctx_events_idle(s));
    fr_buf_cleanup(&out);
    ctx__bus_tick(b);
    assert_int_equal(woken, 3);
    ctx_events_unsubscribe(s);
    ctx__bus_publish(b, CTX_EVENT_QUERY, json_object());
    assert_int_equal(woken, 3); /* gone: not woken */
    ctx__bus_free(b);
}

static void test_overflow_and_resume(void **state)
{
    (void)state;
    struct ctx__bus *b = ctx__bus_new_at(4, 0);
    struct fr_error err;
    fr_error_init(&err);
    int woken = 0;
    publish_n(b, CTX_EVENT_STATS, CTX_EVENTS_RING + 100); /* 1..1124; 101..1124 held */
    /* a resume from an id still held: the events after it */
    ctx_event_sub *s = NULL;
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, 1120, count_wake, &woken, &s, &err),
                     FR_OK);
    struct fr_buf out;
    read_all(s, &out);
    int64_t ids[2048];
    int n = ids_of(out.data, ids, 2048);
    assert_int_equal(n, 4);
    assert_int_equal(ids[0], 1121);
    assert_int_equal(ids[3], 1124);
    assert_null(strstr(out.data, "event: reset"));
    fr_buf_cleanup(&out);
    ctx_events_unsubscribe(s);
    /* the oldest held is 101: resuming from 100 misses nothing */
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, 100, count_wake, &woken, &s, &err),
                     FR_OK);
    read_all(s, &out);
    n = ids_of(out.data, ids, 2048);
    assert_int_equal(n, CTX_EVENTS_RING);
    assert_int_equal(ids[0], 101);
    assert_null(strstr(out.data, "event: reset"));
    fr_buf_cleanup(&out);
    ctx_events_unsubscribe(s);
    /* from an id that fell off: a reset event first, then from the oldest */
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, 5, count_wake, &woken, &s, &err), FR_OK);
    assert_false(ctx_events_idle(s));
    read_all(s, &out);
    assert_true(
        strncmp(out.data, "event: reset\ndata: {\"last_event_id\":5,\"oldest_id\":101,", 54) == 0);
    n = ids_of(out.data, ids, 2048);
    assert_int_equal(n, CTX_EVENTS_RING);
    assert_int_equal(ids[0], 101);
    for (int i = 1; i < n; i++)
        assert_int_equal(ids[i], ids[i - 1] + 1);
    fr_buf_cleanup(&out);
    /* a reader that falls a whole ring behind while connected is told too */
    publish_n(b, CTX_EVENT_STATS, CTX_EVENTS_RING + 10);
    read_all(s, &out);
    assert_non_null(strstr(out.data, "\"last_event_id\":1124,\"oldest_id\":1135"));
    n = ids_of(out.data, ids, 2048);
    assert_int_equal(ids[0], 1135);
    fr_buf_cleanup(&out);
    ctx_events_unsubscribe(s);
    /* an id from the future (a restarted server): reset, from the oldest */
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, 999999, count_wake, &woken, &s, &err),
                     FR_OK);
    read_all(s, &out);
    assert_non_null(strstr(out.data, "event: reset"));
    fr_buf_cleanup(&out);
    ctx_events_unsubscribe(s);
    ctx__bus_free(b);
}

static void test_filter_and_bounded_read(void **state)
{
    (void)state;
    struct ctx__bus *b = ctx__bus_new_at(4, 0);
    struct fr_error err;
    fr_error_init(&err);
    int woken = 0;
    ctx_event_sub *s = NULL;
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_WORKER | CTX_EVENT_RUNNER, -1, count_wake,
                                        &woken, &s, &err),
                     FR_OK);
    publish_n(b, CTX_EVENT_STATS, 3);
    ctx__bus_publish(b, CTX_EVENT_RUNNER, json_object());
    publish_n(b, CTX_EVENT_QUERY, 3);
    ctx__bus_publish(b, CTX_EVENT_WORKER, json_object());
    struct fr_buf out;
    read_all(s, &out);
    int64_t ids[16];
    assert_int_equal(ids_of(out.data, ids, 16), 2);
    assert_int_equal(ids[0], 4);
    assert_int_equal(ids[1], 8);
    assert_true(ctx_events_idle(s)); /* the skipped ones count as read */
    fr_buf_cleanup(&out);
    ctx_events_unsubscribe(s);
    /* a read stops once max bytes are taken; the rest comes next time */
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, 0, count_wake, &woken, &s, &err), FR_OK);
    fr_buf_init(&out);
    ctx_events_read(s, &out, 1);
    fr_buf_putc(&out, '\0');
    assert_int_equal(ids_of(out.data, ids, 16), 1);
    fr_buf_cleanup(&out);
    read_all(s, &out);
    assert_int_equal(ids_of(out.data, ids, 16), 7);
    assert_int_equal(ids[0], 2);
    fr_buf_cleanup(&out);
    ctx_events_unsubscribe(s);
    ctx__bus_free(b);
}

static void test_parse_types(void **state)
{
    (void)state;
    struct fr_error err;
    unsigned mask = 0;
    fr_error_init(&err);
    assert_int_equal(ctx_events_parse_types(NULL, &mask, &err), FR_OK);
    assert_int_equal(mask, CTX_EVENT_ALL);
    assert_int_equal(ctx_events_parse_types("query,stats", &mask, &err), FR_OK);
    assert_int_equal(mask, CTX_EVENT_QUERY | CTX_EVENT_STATS);
    assert_int_equal(ctx_events_parse_types("worker,worker", &mask, &err), FR_OK);
    assert_int_equal(mask, CTX_EVENT_WORKER);
    const char *bad[] = {"",      "bogus", "query,", ",query",     "query,,stats",
                         "Query", "quer",  "queryx", "query stats"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fr_error_init(&err);
        assert_int_equal(ctx_events_parse_types(bad[i], &mask, &err), FR_EINVAL);
        assert_string_equal(err.kind, "invalid-parameter");
    }
    char longer[400];
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    assert_int_equal(ctx_events_parse_types(longer, &mask, &err), FR_EINVAL);
}

static void test_limit_and_close(void **state)
{
    (void)state;
    struct ctx__bus *b = ctx__bus_new_at(2, 0);
    struct fr_error err;
    fr_error_init(&err);
    int woken = 0;
    ctx_event_sub *s1 = NULL, *s2 = NULL, *s3 = NULL;
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, -1, count_wake, &woken, &s1, &err),
                     FR_OK);
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, -1, count_wake, &woken, &s2, &err),
                     FR_OK);
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, -1, count_wake, &woken, &s3, &err),
                     FR_EUNAVAILABLE);
    assert_null(s3);
    assert_int_equal(ctx__bus_streams(b), 2);
    ctx_events_unsubscribe(s2); /* its slot is free again */
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, -1, count_wake, &woken, &s2, &err),
                     FR_OK);
    ctx__bus_publish(b, CTX_EVENT_QUERY, json_object());
    woken = 0;
    ctx__bus_close(b);
    assert_int_equal(woken, 2);
    assert_false(ctx_events_idle(s1));
    struct fr_buf out;
    fr_buf_init(&out);
    assert_int_equal(ctx_events_read(s1, &out, 1 << 20), 1); /* what was left, then the end */
    assert_non_null(strstr(out.data, "id: 1\n"));
    fr_buf_cleanup(&out);
    assert_int_equal(ctx__bus_subscribe(b, CTX_EVENT_ALL, -1, count_wake, &woken, &s3, &err),
                     FR_EUNAVAILABLE);
    ctx_events_unsubscribe(s1);
    ctx_events_unsubscribe(s2);
    ctx__bus_free(b);
}

/* Two runs of the server: the second's ids start past every id of the
 * first, so a Last-Event-ID from the first run gets a reset, never a silent
 * resume; a new bus starts its ids at its start time in ms x 1000. */
static void test_ids_unique_across_runs(void **state)
{
    (void)state;
    struct fr_error err;
    fr_error_init(&err);
    int woken = 0;
    struct ctx__bus *run1 = ctx__bus_new_at(4, 1000000);
    publish_n(run1, CTX_EVENT_STATS, 50); /* 1000001..1000050 */
    ctx__bus_free(run1);
    struct ctx__bus *run2 = ctx__bus_new_at(4, 2000000);
    publish_n(run2, CTX_EVENT_STATS, 100); /* 2000001..2000100 */
    ctx_event_sub *s = NULL;
    assert_int_equal(ctx__bus_subscribe(run2, CTX_EVENT_ALL, 1000050, count_wake, &woken, &s, &err),
                     FR_OK);
    struct fr_buf out;
    read_all(s, &out);
    assert_non_null(
        strstr(out.data, "event: reset\ndata: {\"last_event_id\":1000050,\"oldest_id\":2000001,"));
    int64_t ids[128];
    assert_int_equal(ids_of(out.data, ids, 128), 100);
    assert_int_equal(ids[0], 2000001);
    fr_buf_cleanup(&out);
    ctx_events_unsubscribe(s);
    ctx__bus_free(run2);
    int64_t before = fr_now_ms() * 1000;
    struct ctx__bus *b = ctx__bus_new(4);
    int64_t id = ctx__bus_publish(b, CTX_EVENT_STATS, json_object());
    assert_true(id > before);
    assert_true(id <= fr_now_ms() * 1000 + 1);
    ctx__bus_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequence_and_format),
        cmocka_unit_test(test_overflow_and_resume),
        cmocka_unit_test(test_filter_and_bounded_read),
        cmocka_unit_test(test_parse_types),
        cmocka_unit_test(test_limit_and_close),
        cmocka_unit_test(test_ids_unique_across_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
