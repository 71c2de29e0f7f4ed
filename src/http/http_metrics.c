/* http_metrics: the HTTP layer's Prometheus metrics: a request counter by
 * route pattern, method and status, and a latency histogram by route and
 * method. Route patterns (not raw paths) are the labels, so their number
 * stays bounded. */
#include "http_int.h"

#include <microhttpd.h>

#include <stdlib.h>
#include <string.h>

static const double bucket_bounds[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                       0.25,  0.5,   1,    2.5,   5,    10};
#define NBUCKETS ((int)(sizeof(bucket_bounds) / sizeof(bucket_bounds[0])))

static const char *const known_methods[] = {"GET",    "HEAD",  "POST",   "PUT",
                                            "DELETE", "PATCH", "OPTIONS"};
#define NMETHODS ((int)(sizeof(known_methods) / sizeof(known_methods[0])))

struct request_counter {
    int route;
    int method; /* index into known_methods, NMETHODS = other */
    unsigned status;
    uint64_t count;
};

struct route_histogram {
    uint64_t buckets[NBUCKETS]; /* non-cumulative; summed when written */
    uint64_t count;
    double sum;
};

struct http__metrics {
    const struct http__router *router; /* borrowed: outlives the metrics */
    int nroutes;                       /* + 1 slot for "unmatched" */
    pthread_mutex_t lock;              /* guards counters and histograms */
    struct request_counter *counters;
    int ncounters, cap;
    struct route_histogram *histograms; /* [route * (NMETHODS + 1) + method] */
};

/* One histogram per route and method (the last method slot is "OTHER"). */
static struct route_histogram *histogram_at(struct http__metrics *m, int route, int method)
{
    return &m->histograms[(size_t)route * (NMETHODS + 1) + (size_t)method];
}

static const char *method_name(int method)
{
    return method < NMETHODS ? known_methods[method] : "OTHER";
}

struct http__metrics *http__metrics_new(const struct http__router *r)
{
    struct http__metrics *m = fr_xcalloc(1, sizeof(*m));
    m->router = r;
    m->nroutes = http__router_count(r);
    pthread_mutex_init(&m->lock, NULL);
    m->histograms = fr_xcalloc(((size_t)m->nroutes + 1) * (NMETHODS + 1), sizeof(*m->histograms));
    return m;
}

void http__metrics_free(struct http__metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m->counters);
    free(m->histograms);
    free(m);
}

static int method_index(const char *method)
{
    for (int i = 0; i < NMETHODS; i++) {
        if (strcmp(known_methods[i], method) == 0)
            return i;
    }
    return NMETHODS;
}

void http__metrics_observe(struct http__metrics *m, int route_index, const char *method,
                           unsigned status, double seconds)
{
    if (route_index < 0 || route_index > m->nroutes)
        route_index = m->nroutes;
    int mi = method_index(method);
    pthread_mutex_lock(&m->lock);
    struct request_counter *c = NULL;
    for (int i = 0; i < m->ncounters && !c; i++) {
        struct request_counter *k = &m->counters[i];
        if (k->route == route_index && k->method == mi && k->status == status)
            c = k;
    }
    if (!c) {
        if (m->ncounters == m->cap) {
            m->cap = m->cap ? m->cap * 2 : 64;
            m->counters = fr_xrealloc(m->counters, (size_t)m->cap * sizeof(*m->counters));
        }
        c = &m->counters[m->ncounters++];
        *c = (struct request_counter){route_index, mi, status, 0};
    }
    c->count++;
    struct route_histogram *h = histogram_at(m, route_index, mi);
    for (int b = 0; b < NBUCKETS; b++) {
        if (seconds <= bucket_bounds[b]) {
            h->buckets[b]++;
            break;
        }
    }
    h->count++;
    h->sum += seconds;
    pthread_mutex_unlock(&m->lock);
}

static void write_histogram(const struct route_histogram *h, const char *route, const char *method,
                            struct fr_buf *out)
{
    static const char name[] = "framed_http_request_duration_seconds";
    uint64_t cumulative = 0;
    for (int b = 0; b < NBUCKETS; b++) {
        cumulative += h->buckets[b];
        fr_buf_printf(out, "%s_bucket{route=\"%s\",method=\"%s\",le=\"%g\"} %llu\n", name, route,
                      method, bucket_bounds[b], (unsigned long long)cumulative);
    }
    fr_buf_printf(out, "%s_bucket{route=\"%s\",method=\"%s\",le=\"+Inf\"} %llu\n", name, route,
                  method, (unsigned long long)h->count);
    fr_buf_printf(out, "%s_sum{route=\"%s\",method=\"%s\"} %.6f\n", name, route, method, h->sum);
    fr_buf_printf(out, "%s_count{route=\"%s\",method=\"%s\"} %llu\n", name, route, method,
                  (unsigned long long)h->count);
}

static void write_histograms(struct http__metrics *m, struct fr_buf *out)
{
    fr_buf_puts(out, "# HELP framed_http_request_duration_seconds Time from a request's first "
                     "byte to its completion, by route pattern and method.\n"
                     "# TYPE framed_http_request_duration_seconds histogram\n");
    for (int r = 0; r <= m->nroutes; r++) {
        for (int mi = 0; mi <= NMETHODS; mi++) {
            const struct route_histogram *h = histogram_at(m, r, mi);
            if (h->count > 0)
                write_histogram(h, http__router_pattern(m->router, r), method_name(mi), out);
        }
    }
}

void http__metrics_write(struct http__metrics *m, struct fr_buf *out)
{
    pthread_mutex_lock(&m->lock);
    fr_buf_puts(out, "# HELP framed_http_requests_total HTTP requests by route pattern, method "
                     "and status.\n# TYPE framed_http_requests_total counter\n");
    for (int i = 0; i < m->ncounters; i++) {
        const struct request_counter *c = &m->counters[i];
        fr_buf_printf(out,
                      "framed_http_requests_total{route=\"%s\",method=\"%s\",status=\"%u\"} "
                      "%llu\n",
                      http__router_pattern(m->router, c->route), method_name(c->method), c->status,
                      (unsigned long long)c->count);
    }
    write_histograms(m, out);
    pthread_mutex_unlock(&m->lock);
}

void http__reply_metrics(struct http_request *req, struct fr_buf *role)
{
    struct fr_buf b;
    fr_buf_init(&b);
    http__metrics_write(http__server_metrics(req->srv), &b);
    http__metrics_write_process(&b, http__is_worker(req->srv) ? "worker" : "coordinator");
    fr_buf_printf(&b,
                  "# HELP framed_http_waiting_requests Requests waiting (?wait=) with no thread "
                  "of their own.\n# TYPE framed_http_waiting_requests gauge\n"
                  "framed_http_waiting_requests %d\n",
                  http__waits_count(http__server_waits(req->srv)));
    if (role->len)
        fr_buf_append(&b, role->data, role->len);
    fr_buf_cleanup(role);
    size_t len = 0;
    char *text = fr_buf_steal(&b, &len);
    http__reply_bytes(req, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len);
}
