/* context_ops: the operations views of the coordinator's state: /v1/info,
 * the Prometheus metrics the context owns, and readiness. */
#include "context_int.h"

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
                          "uptime_s", (json_int_t)((fr_now_ms() - c->started_ms) / 1000), "runner",
                          "state", runner_state_name(c->runner_state), "kind", ctx__runner_kind(c));
    pthread_mutex_unlock(&c->lock);
    return j;
}

void ctx_metrics(ctx *c, struct fr_buf *out)
{
    pthread_mutex_lock(&c->lock);
    fr_buf_puts(out, "# HELP framed_runner_state Runner state (1 for the current one).\n"
                     "# TYPE framed_runner_state gauge\n");
    for (int s = 0; s < 3; s++)
        fr_buf_printf(out, "framed_runner_state{state=\"%s\"} %d\n", runner_state_name(s),
                      c->runner_state == (enum ctx_runner_state)s);
    fr_buf_printf(out,
                  "# HELP framed_config_locked 1 while a runner holds a frozen config.\n"
                  "# TYPE framed_config_locked gauge\nframed_config_locked %d\n",
                  c->runner != NULL);
    int64_t by_state[5] = {0};
    for (int i = 0; i < c->nqueries; i++)
        by_state[runner_query_state(c->queries[i]->q)]++;
    fr_buf_puts(out, "# HELP framed_queries Queries known to the coordinator, by state.\n"
                     "# TYPE framed_queries gauge\n");
    for (int s = 0; s < 5; s++)
        fr_buf_printf(out, "framed_queries{state=\"%s\"} %lld\n", runner_qstate_name(s),
                      (long long)by_state[s]);
    fr_buf_printf(out,
                  "# HELP framed_dataframes Dataframes alive.\n# TYPE framed_dataframes "
                  "gauge\nframed_dataframes %d\n",
                  c->nframes);
    fr_buf_printf(out,
                  "# HELP framed_memory_used_bytes Bytes of kept results and dataframes.\n"
                  "# TYPE framed_memory_used_bytes gauge\nframed_memory_used_bytes %lld\n",
                  (long long)c->mem_used);
    pthread_mutex_unlock(&c->lock);
    runner_registry_metrics(c->registry, out);
}

bool ctx_ready(ctx *c)
{
    pthread_mutex_lock(&c->lock);
    bool ok = !c->shutting_down;
    pthread_mutex_unlock(&c->lock);
    return ok;
}

void ctx_begin_shutdown(ctx *c)
{
    pthread_mutex_lock(&c->lock);
    c->shutting_down = true;
    pthread_mutex_unlock(&c->lock);
}
