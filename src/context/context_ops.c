/* context_ops: the operations views of the coordinator's state: /v1/info,
 * the Prometheus metrics the context owns, and readiness (including whether
 * a coordinator without a runner could freeze: its store answers). */
#include "context_int.h"

#include <stdio.h>

static void store_metrics(ctx *c, struct fr_buf *out);

static const char *runner_state_name(enum ctx_runner_state s)
{
    static const char *const names[] = {"none", "active", "draining"};
    return names[s];
}

json_t *ctx_info(ctx *c)
{
    pthread_mutex_lock(&c->lock);
    json_t *j = json_pack("{ss ss so? sI s{ss ss}}", "version", FRAMED_VERSION, "role",
                          "coordinator", "config_id", c->runner ? json_string(c->config_id) : NULL,
                          "uptime_s", (json_int_t)((fr_mono_ms() - c->started_ms) / 1000), "runner",
                          "state", runner_state_name(c->runner_state), "kind", ctx__runner_kind(c));
    pthread_mutex_unlock(&c->lock);
    return j;
}

/* The metric families of the context, one writer per area, each called with
 * c->lock held (ctx_metrics). A new family goes into its area's writer or a
 * new writer called from ctx_metrics: HELP and TYPE once, then its series. */
static void write_runner_metrics(ctx *c, struct fr_buf *out)
{
    fr_buf_puts(out, "# HELP framed_runner_state Runner state (1 for the current one).\n"
                     "# TYPE framed_runner_state gauge\n");
    for (int s = 0; s < 3; s++)
        fr_buf_printf(out, "framed_runner_state{state=\"%s\"} %d\n", runner_state_name(s),
                      c->runner_state == (enum ctx_runner_state)s);
    fr_buf_printf(out,
                  "# HELP framed_config_locked 1 while a runner holds a frozen config.\n"
                  "# TYPE framed_config_locked gauge\nframed_config_locked %d\n",
                  c->runner != NULL);
}

static void write_query_metrics(ctx *c, struct fr_buf *out)
{
    int64_t by_state[5] = {0};
    for (int i = 0; i < c->nqueries; i++)
        by_state[runner_query_state(c->queries[i]->q)]++;
    fr_buf_puts(out, "# HELP framed_queries Queries known to the coordinator, by state.\n"
                     "# TYPE framed_queries gauge\n");
    for (int s = 0; s < 5; s++)
        fr_buf_printf(out, "framed_queries{state=\"%s\"} %lld\n", runner_qstate_name(s),
                      (long long)by_state[s]);
}

static void write_memory_metrics(ctx *c, struct fr_buf *out)
{
    fr_buf_printf(out,
                  "# HELP framed_dataframes Dataframes alive.\n# TYPE framed_dataframes "
                  "gauge\nframed_dataframes %d\n",
                  c->nframes);
    fr_buf_printf(out,
                  "# HELP framed_memory_used_bytes Bytes of kept results and dataframes.\n"
                  "# TYPE framed_memory_used_bytes gauge\nframed_memory_used_bytes %lld\n",
                  (long long)c->mem_used);
    fr_buf_printf(out,
                  "# HELP framed_memory_checking_bytes Bytes the upload checks running now hold "
                  "(in the --memory-limit budget too).\n# TYPE framed_memory_checking_bytes "
                  "gauge\nframed_memory_checking_bytes %lld\n",
                  (long long)atomic_load(&c->checking));
    fr_buf_printf(out,
                  "# HELP framed_memory_kept_free_bytes Freed big blocks kept for reuse (outside "
                  "the --memory-limit budget: at most a quarter of it, or an eighth of the "
                  "machine's memory; given back after 10 s unused).\n"
                  "# TYPE framed_memory_kept_free_bytes gauge\nframed_memory_kept_free_bytes "
                  "%zu\n",
                  fr_big_kept_bytes());
    int64_t mem[3] = {0, 0, atomic_load(&c->read_back)};
    if (c->runner) /* c->lock held: the runner stays */
        runner_memory_parts(c->runner, &mem[0], &mem[1]);
    fr_buf_printf(
        out,
        "# HELP framed_runner_memory_bytes Bytes the runner holds on this process "
        "(in the --memory-limit budget too): its queries' stage outputs held here, "
        "its running tasks' working memory, and spilled result parts read back for "
        "their readers (this one counts across resets).\n# TYPE framed_runner_memory_bytes gauge\n"
        "framed_runner_memory_bytes{kind=\"held\"} %lld\n"
        "framed_runner_memory_bytes{kind=\"working\"} %lld\n"
        "framed_runner_memory_bytes{kind=\"read_back\"} %lld\n",
        (long long)mem[0], (long long)mem[1], (long long)mem[2]);
    int64_t live = 0, written = 0;
    runner_spill_stats(&live, &written);
    fr_buf_printf(out,
                  "# HELP framed_spill_bytes Bytes the spill files hold now (--spill-dir; each "
                  "runner's at most --spill-limit).\n# TYPE framed_spill_bytes "
                  "gauge\nframed_spill_bytes %lld\n"
                  "# HELP framed_spill_written_bytes_total Bytes written to the spill file.\n"
                  "# TYPE framed_spill_written_bytes_total counter\n"
                  "framed_spill_written_bytes_total %lld\n",
                  (long long)live, (long long)written);
}

void ctx_metrics(ctx *c, struct fr_buf *out)
{
    pthread_mutex_lock(&c->lock);
    write_runner_metrics(c, out);
    write_query_metrics(c, out);
    write_memory_metrics(c, out);
    ctx__tasks_metrics(c, out);
    pthread_mutex_unlock(&c->lock);
    store_metrics(c, out);
    runner_registry_metrics(c->registry, out);
    ctx__history_metrics(c, out);
}

bool ctx_ready(ctx *c)
{
    pthread_mutex_lock(&c->lock);
    bool ok = !c->shutting_down;
    pthread_mutex_unlock(&c->lock);
    return ok;
}

int ctx_ready_store(ctx *c, struct fr_error *err)
{
    /* Any well-formed ID: the store is asked how many hold it. */
    static const char probe[] =
        "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    pthread_mutex_lock(&c->lock);
    bool held = c->runner != NULL;
    pthread_mutex_unlock(&c->lock);
    if (held)
        return FR_OK; /* the runner's config is in memory: it serves without the store */
    struct fr_error store_err;
    fr_error_init(&store_err);
    int64_t n = 0;
    if (store_refcount(c->store, probe, &n, &store_err) != FR_EIO)
        return FR_OK;
    return fr_error_setk(err, FR_EUNAVAILABLE, "store-unavailable",
                         "no runner, and the config store cannot be reached, so no config can be "
                         "frozen: %s",
                         store_err.message);
}

void ctx_begin_shutdown(ctx *c)
{
    pthread_mutex_lock(&c->lock);
    c->shutting_down = true;
    pthread_mutex_unlock(&c->lock);
}

/* The config store's health, for /metrics (takes the context lock briefly:
 * the store is asked outside it). */
static void store_metrics(ctx *c, struct fr_buf *out)
{
    struct store_health h;
    store_health_get(c->store, &h);
    char id[80] = "";
    pthread_mutex_lock(&c->lock);
    if (c->runner)
        snprintf(id, sizeof(id), "%s", c->config_id);
    pthread_mutex_unlock(&c->lock);
    int64_t entries = 0;
    if (id[0] && store_refcount(c->store, id, &entries, NULL) != FR_OK)
        entries = 0; /* the runner's entry: its live holds in the store */
    fr_buf_printf(out,
                  "# HELP framed_store_entries Live holds on the runner's config in the store.\n"
                  "# TYPE framed_store_entries gauge\nframed_store_entries %lld\n",
                  (long long)entries);
    fr_buf_printf(out,
                  "# HELP framed_store_corruptions_total Store entries found holding bytes that "
                  "do not hash to their ID.\n"
                  "# TYPE framed_store_corruptions_total counter\n"
                  "framed_store_corruptions_total %lld\n",
                  (long long)h.corruptions);
    fr_buf_printf(out,
                  "# HELP framed_store_restores_total Store entries put back after the store "
                  "lost them.\n"
                  "# TYPE framed_store_restores_total counter\nframed_store_restores_total %lld\n",
                  (long long)h.restores);
    fr_buf_printf(out,
                  "# HELP framed_store_up 1 when the last call reached the config store.\n"
                  "# TYPE framed_store_up gauge\nframed_store_up %d\n",
                  !h.unavailable);
}

char *ctx_ready_detail(ctx *c)
{
    struct store_health h;
    store_health_get(c->store, &h);
    struct fr_buf b;
    fr_buf_init(&b);
    if (h.unavailable)
        fr_buf_printf(&b, "store: unavailable: %s\n", h.last_error);
    if (h.corruptions > 0)
        fr_buf_printf(&b, "store: %lld corrupt entr%s found (last: %s)\n", (long long)h.corruptions,
                      h.corruptions == 1 ? "y" : "ies", h.last_corruption);
    ctx__history_ready_detail(c, &b);
    return b.len ? fr_buf_steal(&b, NULL) : (fr_buf_cleanup(&b), NULL);
}
