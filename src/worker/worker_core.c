/* worker_core: the worker handle's life (new, start, stop, free), its
 * identity and the accessors the HTTP edge reads; also /v1/info and the
 * worker's Prometheus metrics, which read every part of the state. */
#include "worker_int.h"
#include "../engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

void worker__random_id(const char *prefix, int nbytes, char *out, size_t outsz)
{
    uint8_t rnd[32];
    if (nbytes > (int)sizeof(rnd))
        nbytes = (int)sizeof(rnd);
    if (getrandom(rnd, (size_t)nbytes, 0) != (ssize_t)nbytes) {
        /* No entropy to spare: the clock and an address are unique enough here. */
        uint64_t a = (uint64_t)fr_mono_us(), b = (uint64_t)(uintptr_t)out;
        for (int i = 0; i < nbytes; i++)
            rnd[i] = (uint8_t)((i < 8 ? a >> (8 * i) : b >> (8 * (i % 8))) & 0xff);
    }
    size_t n = (size_t)snprintf(out, outsz, "%s", prefix);
    for (int i = 0; i < nbytes && n + 2 < outsz; i++)
        n += (size_t)snprintf(out + n, outsz - n, "%02x", rnd[i]);
}

static int default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 1 ? (int)n : 1;
}

int worker_new_with_store(const struct worker_options *o, store *st, worker **out,
                          struct fr_error *err)
{
    int data_source = PLAN_DATA_AUTO;
    if (worker__data_source_parse(o->data_source, &data_source) != FR_OK) {
        store_free(st);
        return fr_error_set(err, FR_EINVAL,
                            "--data-source must be auto, local or remote, not '%.40s'",
                            o->data_source);
    }
    worker *w = fr_xcalloc(1, sizeof(*w));
    w->data_source = data_source;
    worker__random_id("w-", 8, w->id, sizeof(w->id));
    w->coordinator = o->coordinator && *o->coordinator ? fr_xstrdup(o->coordinator) : NULL;
    w->secret = o->secret && *o->secret ? fr_xstrdup(o->secret) : NULL;
    w->data_dir = fr_xstrdup(o->data_dir && *o->data_dir ? o->data_dir : "./data");
    w->threads = o->threads > 0 ? o->threads : default_threads();
    w->heartbeat_ms = o->heartbeat_ms > 0 ? o->heartbeat_ms : 1000;
    w->started_us = fr_mono_us();
    w->store = st;
    pthread_mutex_init(&w->url_lock, NULL);
    pthread_mutex_init(&w->cache_lock, NULL);
    pthread_cond_init(&w->cache_cond, NULL);
    w->negative = fr_xcalloc(WORKER__NEGATIVE_MAX, sizeof(*w->negative));
    pthread_mutex_init(&w->parts_lock, NULL);
    pthread_mutex_init(&w->rooms_lock, NULL);
    pthread_mutex_init(&w->slots_lock, NULL);
    pthread_cond_init(&w->slots_cond, NULL);
    pthread_mutex_init(&w->hb_lock, NULL);
    fr_cond_init_mono(&w->hb_cond); /* the heartbeat's waits are monotonic */
    *out = w;
    return FR_OK;
}

int worker_new(const struct worker_options *o, worker **out, struct fr_error *err)
{
    *out = NULL;
    const char *url = o->store_url && *o->store_url ? o->store_url : o->coordinator;
    if (!url || !*url)
        return fr_error_set(err, FR_EINVAL, "a worker needs --coordinator or --store");
    /* The store signs its requests as this worker; the ID is made here and
     * handed over so both agree. */
    store *st = NULL;
    char id[40];
    worker__random_id("w-", 8, id, sizeof(id));
    int rc = store_open_url(url, NULL, o->secret, id, &st, err);
    if (rc != FR_OK)
        return rc;
    rc = worker_new_with_store(o, st, out, err);
    if (rc == FR_OK)
        snprintf((*out)->id, sizeof((*out)->id), "%s", id);
    return rc;
}

int worker_start(worker *w, const char *url, struct fr_error *err)
{
    pthread_mutex_lock(&w->url_lock);
    snprintf(w->url, sizeof(w->url), "%s", url);
    size_t n = strlen(w->url);
    while (n > 0 && w->url[n - 1] == '/')
        w->url[--n] = '\0';
    pthread_mutex_unlock(&w->url_lock);
    return w->coordinator ? worker__heartbeat_start(w, err) : FR_OK;
}

void worker_stop(worker *w)
{
    if (w)
        worker__heartbeat_stop(w);
}

void worker_free(worker *w)
{
    if (!w)
        return;
    worker_stop(w);
    while (w->centries) {
        struct worker__centry *e = w->centries;
        w->centries = e->next;
        cfg_frozen_unref(e->frozen);
        free(e);
    }
    while (w->cstats) {
        struct worker__cstats *s = w->cstats;
        w->cstats = s->next;
        free(s);
    }
    while (w->parts) {
        struct worker__part *p = w->parts;
        w->parts = p->next;
        df_table_free(p->table);
        free(p);
    }
    store_free(w->store);
    worker__rooms_drop(w);
    pthread_mutex_destroy(&w->rooms_lock);
    pthread_mutex_destroy(&w->url_lock);
    pthread_mutex_destroy(&w->cache_lock);
    pthread_cond_destroy(&w->cache_cond);
    free(w->negative);
    pthread_mutex_destroy(&w->parts_lock);
    pthread_mutex_destroy(&w->slots_lock);
    pthread_cond_destroy(&w->slots_cond);
    pthread_mutex_destroy(&w->hb_lock);
    pthread_cond_destroy(&w->hb_cond);
    free(w->coordinator);
    free(w->secret);
    free(w->data_dir);
    free(w);
}

const char *worker_id(const worker *w)
{
    return w->id;
}

void worker_url_copy(worker *w, char *out, size_t outsz)
{
    pthread_mutex_lock(&w->url_lock);
    snprintf(out, outsz, "%s", w->url);
    pthread_mutex_unlock(&w->url_lock);
}

const char *worker_secret(const worker *w)
{
    return w->secret;
}

int worker_threads(const worker *w)
{
    return w->threads;
}

int worker_running_tasks(worker *w)
{
    pthread_mutex_lock(&w->slots_lock);
    int n = w->running;
    pthread_mutex_unlock(&w->slots_lock);
    return n;
}

json_t *worker__announce_body(worker *w)
{
    char url[512];
    worker_url_copy(w, url, sizeof(url));
    json_t *ids = worker_config_ids(w);
    while (json_array_size(ids) > WORKER_ANNOUNCE_MAX_CONFIG_IDS) /* the coordinator's bound */
        json_array_remove(ids, json_array_size(ids) - 1);
    return json_pack("{ss ss si si so}", "id", w->id, "url", url, "threads", w->threads,
                     "running_tasks", worker_running_tasks(w), "config_ids", ids);
}

json_t *worker_info(worker *w)
{
    char url[512];
    worker_url_copy(w, url, sizeof(url));
    json_t *configs = json_object();
    pthread_mutex_lock(&w->cache_lock);
    for (struct worker__cstats *s = w->cstats; s; s = s->next) {
        json_object_set_new(configs, s->id,
                            json_pack("{sI sI sI}", "fetches", (json_int_t)s->stats.fetches,
                                      "cache_hits", (json_int_t)s->stats.cache_hits, "tasks",
                                      (json_int_t)s->stats.tasks));
    }
    pthread_mutex_unlock(&w->cache_lock);
    int64_t nparts = 0, bytes = 0;
    worker_partition_totals(w, &nparts, &bytes);
    return json_pack("{ss ss ss ss so sI si sI so so}", "version", FRAMED_VERSION, "role", "worker",
                     "id", w->id, "url", url, "config_ids", worker_config_ids(w), "uptime_s",
                     (json_int_t)((fr_mono_us() - w->started_us) / 1000000), "running_tasks",
                     worker_running_tasks(w), "partitions", (json_int_t)nparts, "configs", configs,
                     "resolve_us", worker__resolve_info(w));
}

static void metric_help(struct fr_buf *out, const char *name, const char *type, const char *help)
{
    fr_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One counter family over the cached configs (a dropped config's series go
 * with it); which: 0 fetches, 1 hits, 2 tasks. */
static void config_counters(worker *w, struct fr_buf *out, const char *name, int which)
{
    pthread_mutex_lock(&w->cache_lock);
    for (struct worker__cstats *s = w->cstats; s; s = s->next) {
        if (!worker__config_held(w, s->id))
            continue;
        const struct worker_config_stats *st = &s->stats;
        int64_t v = which == 0 ? st->fetches : which == 1 ? st->cache_hits : st->tasks;
        fr_buf_printf(out, "%s{config_id=\"%s\"} %lld\n", name, s->id, (long long)v);
    }
    pthread_mutex_unlock(&w->cache_lock);
}

void worker_metrics(worker *w, struct fr_buf *out)
{
    metric_help(out, "framed_worker_config_fetches_total", "counter",
                "Config fetches from the store, by config ID.");
    config_counters(w, out, "framed_worker_config_fetches_total", 0);
    metric_help(out, "framed_worker_config_cache_hits_total", "counter",
                "Config resolutions served without a store fetch, by config ID.");
    config_counters(w, out, "framed_worker_config_cache_hits_total", 1);
    metric_help(out, "framed_worker_tasks_total", "counter", "Tasks run, by config ID.");
    config_counters(w, out, "framed_worker_tasks_total", 2);
    worker__resolve_metrics(w, out);
    worker__task_metrics(w, out);
    int64_t nparts = 0, bytes = 0;
    worker_partition_totals(w, &nparts, &bytes);
    metric_help(out, "framed_memory_kept_free_bytes", "gauge",
                "Freed big blocks kept for reuse (at most an eighth of the machine's memory; "
                "given back after 10 s unused).");
    fr_buf_printf(out, "framed_memory_kept_free_bytes %zu\n", fr_big_kept_bytes());
    metric_help(out, "framed_worker_running_tasks", "gauge", "Tasks running now.");
    fr_buf_printf(out, "framed_worker_running_tasks %d\n", worker_running_tasks(w));
    metric_help(out, "framed_worker_partitions", "gauge", "Partitions held.");
    fr_buf_printf(out, "framed_worker_partitions %lld\n", (long long)nparts);
    metric_help(out, "framed_worker_partition_bytes", "gauge", "Bytes of partitions held.");
    fr_buf_printf(out, "framed_worker_partition_bytes %lld\n", (long long)bytes);
    worker_result_stream_totals(w, &nparts, &bytes);
    metric_help(out, "framed_worker_result_streams", "gauge",
                "Result streams (GET /v1/results) open now.");
    fr_buf_printf(out, "framed_worker_result_streams %lld\n", (long long)nparts);
    metric_help(out, "framed_worker_result_stream_bytes", "gauge",
                "Bytes open result streams hold beyond the partitions held: their encode "
                "buffers, and partitions dropped while they read them.");
    fr_buf_printf(out, "framed_worker_result_stream_bytes %lld\n", (long long)bytes);
    metric_help(out, "framed_worker_fetch_buffer_bytes", "gauge",
                "Bytes of receive buffers kept from partition fetches for the next ones "
                "(freed when the worker goes idle).");
    fr_buf_printf(out, "framed_worker_fetch_buffer_bytes %lld\n", (long long)worker__room_bytes(w));
}
