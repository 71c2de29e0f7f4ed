/* context_events: the event bus behind GET /v1/events. A ring of the last
 * CTX_EVENTS_RING events, each with its sequence number and its text as
 * Server-Sent Events, under the "events lock"; subscribers read from their
 * position (a Last-Event-ID resumes) and are woken by a callback when an
 * event arrives, on each tick of the live thread, and at close. */
#include "context_int.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = {"query", "runner", "worker", "stats"};
#define NTYPES 4

struct ring_event {
    int64_t seq;
    unsigned type;
    char *text; /* "id: n\nevent: t\ndata: {...}\n\n" */
};

struct ctx_event_sub {
    struct ctx__bus *bus;
    unsigned types;
    int64_t pos;   /* the last sequence number it was given or skipped */
    bool reset;    /* it asked for events the ring no longer holds: told once */
    int64_t asked; /* the Last-Event-ID it gave, for the reset event */
    void (*wake)(void *arg);
    void *arg;
    struct ctx_event_sub *next;
};

struct ctx__bus {
    pthread_mutex_t lock; /* "events lock": everything below but last and closed */
    struct ring_event ring[CTX_EVENTS_RING];
    int64_t base;      /* ids start after it: the bus's start in ms x 1000 */
    atomic_llong last; /* the newest sequence number, base = none yet */
    atomic_bool closed;
    struct ctx_event_sub *subs;
    int nsubs, max_subs;
};

struct ctx__bus *ctx__bus_new_at(int max_subs, int64_t base)
{
    struct ctx__bus *b = fr_xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->lock, NULL);
    b->max_subs = max_subs > 0 ? max_subs : CTX_EVENTS_DEFAULT_STREAMS;
    b->base = base;
    atomic_store(&b->last, base);
    return b;
}

struct ctx__bus *ctx__bus_new(int max_subs)
{
    return ctx__bus_new_at(max_subs, fr_now_ms() * 1000);
}

void ctx__bus_free(struct ctx__bus *b)
{
    if (!b)
        return;
    for (int i = 0; i < CTX_EVENTS_RING; i++)
        free(b->ring[i].text);
    while (b->subs) { /* streams end before the bus goes; none should be left */
        struct ctx_event_sub *s = b->subs;
        b->subs = s->next;
        free(s);
    }
    pthread_mutex_destroy(&b->lock);
    free(b);
}

int ctx_events_parse_types(const char *list, unsigned *mask, struct fr_error *err)
{
    *mask = 0;
    if (!list) {
        *mask = CTX_EVENT_ALL;
        return FR_OK;
    }
    size_t len = strlen(list);
    if (len == 0 || len > 256)
        return fr_error_setk(err, FR_EINVAL, "invalid-parameter",
                             "types must be a comma-separated list of query, runner, worker, "
                             "stats");
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        int found = -1;
        for (int t = 0; t < NTYPES; t++)
            if (n == strlen(type_names[t]) && strncmp(p, type_names[t], n) == 0)
                found = t;
        if (found < 0)
            return fr_error_setk(err, FR_EINVAL, "invalid-parameter",
                                 "unknown event type '%.*s' in types: use query, runner, worker, "
                                 "stats",
                                 (int)(n > 64 ? 64 : n), p);
        *mask |= 1u << found;
        p += n;
        if (*p == ',' && *++p == '\0')
            return fr_error_setk(err, FR_EINVAL, "invalid-parameter", "types ends with a comma");
    }
    return FR_OK;
}

static const char *type_name(unsigned type)
{
    for (int t = 0; t < NTYPES; t++)
        if (type == 1u << t)
            return type_names[t];
    return "unknown";
}

static void wake_all_locked(struct ctx__bus *b)
{
    for (struct ctx_event_sub *s = b->subs; s; s = s->next)
        s->wake(s->arg);
}

int64_t ctx__bus_publish(struct ctx__bus *b, unsigned type, json_t *data)
{
    char *line = fr_json_dumps(data, JSON_COMPACT); /* one line: JSON escapes newlines */
    json_decref(data);
    if (!line)
        return 0;
    pthread_mutex_lock(&b->lock);
    int64_t seq = atomic_load(&b->last) + 1;
    struct ring_event *e = &b->ring[seq % CTX_EVENTS_RING];
    free(e->text);
    e->seq = seq;
    e->type = type;
    e->text =
        fr_xasprintf("id: %lld\nevent: %s\ndata: %s\n\n", (long long)seq, type_name(type), line);
    atomic_store(&b->last, seq);
    wake_all_locked(b);
    pthread_mutex_unlock(&b->lock);
    free(line);
    return seq;
}

void ctx__bus_tick(struct ctx__bus *b)
{
    pthread_mutex_lock(&b->lock);
    wake_all_locked(b);
    pthread_mutex_unlock(&b->lock);
}

void ctx__bus_close(struct ctx__bus *b)
{
    pthread_mutex_lock(&b->lock);
    atomic_store(&b->closed, true);
    wake_all_locked(b);
    pthread_mutex_unlock(&b->lock);
}

/* The oldest sequence number the ring still holds (lock held). */
static int64_t oldest_locked(const struct ctx__bus *b)
{
    int64_t last = atomic_load(&b->last);
    return last - b->base >= CTX_EVENTS_RING ? last - CTX_EVENTS_RING + 1 : b->base + 1;
}

int ctx__bus_subscribe(struct ctx__bus *b, unsigned types, int64_t last_id, void (*wake)(void *),
                       void *arg, ctx_event_sub **out, struct fr_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&b->lock);
    if (atomic_load(&b->closed) || b->nsubs >= b->max_subs) {
        bool closed = atomic_load(&b->closed);
        pthread_mutex_unlock(&b->lock);
        if (closed)
            return fr_error_setk(err, FR_EUNAVAILABLE, "unavailable", "the server is stopping");
        return fr_error_setk(err, FR_EUNAVAILABLE, "unavailable",
                             "%d event streams are open already (--max-event-streams); try "
                             "again later",
                             b->max_subs);
    }
    struct ctx_event_sub *s = fr_xcalloc(1, sizeof(*s));
    s->bus = b;
    s->types = types;
    s->wake = wake;
    s->arg = arg;
    s->asked = last_id;
    int64_t last = atomic_load(&b->last), oldest = oldest_locked(b);
    s->pos = last;
    if (last_id >= 0) { /* a resume: from after last_id, or from the oldest held */
        s->reset = last_id < oldest - 1 || last_id > last;
        s->pos = s->reset ? oldest - 1 : last_id;
    }
    s->next = b->subs;
    b->subs = s;
    b->nsubs++;
    pthread_mutex_unlock(&b->lock);
    *out = s;
    return FR_OK;
}

void ctx_events_unsubscribe(ctx_event_sub *s)
{
    if (!s)
        return;
    struct ctx__bus *b = s->bus;
    pthread_mutex_lock(&b->lock);
    for (struct ctx_event_sub **p = &b->subs; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            b->nsubs--;
            break;
        }
    pthread_mutex_unlock(&b->lock);
    free(s);
}

int ctx__bus_streams(struct ctx__bus *b)
{
    pthread_mutex_lock(&b->lock);
    int n = b->nsubs;
    pthread_mutex_unlock(&b->lock);
    return n;
}

/* The reset event: the events between asked and the oldest held are gone. */
static void put_reset(struct ctx_event_sub *s, int64_t oldest, struct fr_buf *out)
{
    fr_buf_printf(out,
                  "event: reset\ndata: {\"last_event_id\":%lld,\"oldest_id\":%lld,\"reason\":"
                  "\"the events after last_event_id are no longer held; the stream starts at "
                  "oldest_id\"}\n\n",
                  (long long)s->asked, (long long)oldest);
    s->reset = false;
}

int ctx_events_read(ctx_event_sub *s, struct fr_buf *out, size_t max)
{
    struct ctx__bus *b = s->bus;
    pthread_mutex_lock(&b->lock);
    int64_t last = atomic_load(&b->last), oldest = oldest_locked(b);
    if (s->pos < oldest - 1) { /* it fell behind by a whole ring */
        s->asked = s->pos;
        s->reset = true;
        s->pos = oldest - 1;
    }
    if (s->reset)
        put_reset(s, oldest, out);
    while (s->pos < last && out->len < max) {
        const struct ring_event *e = &b->ring[(s->pos + 1) % CTX_EVENTS_RING];
        s->pos++;
        if (s->types & e->type)
            fr_buf_puts(out, e->text);
    }
    bool ended = atomic_load(&b->closed) && s->pos >= last;
    pthread_mutex_unlock(&b->lock);
    return ended ? 1 : 0;
}

bool ctx_events_idle(ctx_event_sub *s)
{
    return !s->reset && s->pos >= atomic_load(&s->bus->last) && !atomic_load(&s->bus->closed);
}
