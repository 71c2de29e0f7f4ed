/* http_waits: requests that wait for something (?wait= on a query) without a
 * thread each. A deferred job hands its suspended connection over; one waiter
 * thread per server checks the waits (a cheap predicate each, within about a
 * 64th of the youngest wait's age, 1 ms to HTTP__WAIT_TICK_MS apart) and,
 * when one is ready, times out or the server
 * stops, or its client went away (the query keeps running), has the route set
 * its reply and resumes the connection. At most
 * --max-waiting-requests wait at once (README: limits): past that, 503. */
#include "http_int.h"

#include <microhttpd.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HTTP__WAIT_TICK_MS 20

struct http__wait {
    struct http_request *req; /* suspended until the waiter resumes it */
    const struct http__wait_ops *ops;
    void *arg; /* owned: ops->free */
    int64_t start_us, deadline_us;
    struct http__wait *next;
};

struct http__waits {
    pthread_mutex_t lock; /* guards every field below */
    pthread_cond_t cond;  /* a wait was added, or stop */
    struct http__wait *head;
    int reserved; /* waits registered or about to be (reserve .. hand-off) */
    int max;
    bool stopping;
    pthread_t thread;
    bool running;
};

static void *waiter_main(void *arg);

struct http__waits *http__waits_new(int max, struct fr_error *err)
{
    struct http__waits *w = fr_xcalloc(1, sizeof(*w));
    pthread_mutex_init(&w->lock, NULL);
    fr_cond_init_mono(&w->cond);
    w->max = max > 0 ? max : 1024;
    int rc = pthread_create(&w->thread, NULL, waiter_main, w);
    if (rc != 0) {
        fr_error_set(err, FR_EIO, "cannot start the waiter thread: %s", strerror(rc));
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    w->running = true;
    return w;
}

void http__waits_stop(struct http__waits *w)
{
    if (!w || !w->running)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    w->running = false;
}

void http__waits_free(struct http__waits *w)
{
    if (!w)
        return;
    http__waits_stop(w);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

int http__waits_count(struct http__waits *w)
{
    pthread_mutex_lock(&w->lock);
    int n = w->reserved;
    pthread_mutex_unlock(&w->lock);
    return n;
}

bool http__wait_reserve(struct http_request *req)
{
    struct http__waits *w = http__server_waits(req->srv);
    pthread_mutex_lock(&w->lock);
    bool ok = !w->stopping && w->reserved < w->max;
    if (ok)
        w->reserved++;
    pthread_mutex_unlock(&w->lock);
    if (!ok) {
        http__reply_problem(req, FR_EUNAVAILABLE, "unavailable",
                            "%d requests are waiting already (--max-waiting-requests); try "
                            "again later or without ?wait=",
                            w->max); /* with Retry-After */
        return false;
    }
    req->wait_reserved = true;
    return true;
}

void http__wait_unreserve(struct http_request *req)
{
    if (!req->wait_reserved)
        return;
    struct http__waits *w = http__server_waits(req->srv);
    pthread_mutex_lock(&w->lock);
    w->reserved--;
    pthread_mutex_unlock(&w->lock);
    req->wait_reserved = false;
}

void http__wait_hand_off(struct http_request *req, const struct http__wait_ops *ops, void *arg,
                         int64_t wait_ms)
{
    struct http__wait *wt = fr_xcalloc(1, sizeof(*wt));
    wt->req = req;
    wt->ops = ops;
    wt->arg = arg;
    wt->start_us = fr_mono_us();
    wt->deadline_us = wt->start_us + wait_ms * 1000;
    req->pending_wait = wt; /* registered by http__wait_register once the job returned */
}

void http__wait_register(struct http_request *req)
{
    struct http__wait *wt = req->pending_wait;
    struct http__waits *w = http__server_waits(req->srv);
    req->pending_wait = NULL;
    req->wait_reserved = false; /* the reservation is the wait's now */
    pthread_mutex_lock(&w->lock);
    wt->next = w->head;
    w->head = wt;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    /* from here on the waiter owns req (it may be resumed and freed) */
}

/* Sets the wait's reply and resumes its connection. */
static void wait_finish(struct http__waits *w, struct http__wait *wt, bool ready)
{
    struct http_request *req = wt->req;
    wt->ops->finish(req, wt->arg, ready);
    wt->ops->free(wt->arg);
    free(wt);
    pthread_mutex_lock(&w->lock);
    w->reserved--;
    pthread_mutex_unlock(&w->lock);
    atomic_store(&req->deferred_done, true);
    MHD_resume_connection(req->conn); /* req may be freed by MHD from here on */
}

/* True when the suspended connection's client closed or reset it: MHD does
 * not watch a suspended socket, so a client that gave up would keep its slot
 * of --max-waiting-requests until the wait ends. Bytes pipelined behind the
 * request (POLLIN alone) are not a departure. */
static bool client_gone(struct http_request *req)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return !ci || ci->connect_fd == MHD_INVALID_SOCKET || http__conns_peer_gone(ci->connect_fd);
}

/* Takes the waits that are done (ready, past their deadline, their client
 * gone, or all of them when stopping) off the list, w->lock held; returns them linked. */
static struct http__wait *take_done(struct http__waits *w, int64_t now)
{
    struct http__wait *done = NULL, **p = &w->head;
    while (*p) {
        struct http__wait *wt = *p;
        if (w->stopping || now >= wt->deadline_us || wt->ops->ready(wt->arg) ||
            client_gone(wt->req)) {
            *p = wt->next;
            wt->next = done;
            done = wt;
        } else {
            p = &wt->next;
        }
    }
    return done;
}

int64_t http__wait_tick_ms(int64_t age_us)
{
    int64_t ms = age_us / 64000;
    return ms < 1 ? 1 : ms > HTTP__WAIT_TICK_MS ? HTTP__WAIT_TICK_MS : ms;
}

static void tick_wait(struct http__waits *w)
{
    if (!w->head) {
        pthread_cond_wait(&w->cond, &w->lock);
        return;
    }
    int64_t now = fr_mono_us(), youngest = now - w->head->start_us;
    for (struct http__wait *wt = w->head->next; wt; wt = wt->next)
        youngest = now - wt->start_us < youngest ? now - wt->start_us : youngest;
    struct timespec ts;
    fr_mono_deadline(&ts, http__wait_tick_ms(youngest));
    pthread_cond_timedwait(&w->cond, &w->lock, &ts);
}

static void *waiter_main(void *arg)
{
    struct http__waits *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        struct http__wait *done = take_done(w, fr_mono_us());
        bool stop = w->stopping && !w->head;
        pthread_mutex_unlock(&w->lock);
        while (done) {
            struct http__wait *next = done->next;
            wait_finish(w, done, done->ops->ready(done->arg));
            done = next;
        }
        pthread_mutex_lock(&w->lock);
        if (stop && !w->head)
            break;
        if (!w->stopping)
            tick_wait(w);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}
