/* runner_lost: what the remote runner does when a worker stops beating while
 * it holds partitions. An input whose owner's heartbeats lapsed is made again
 * on another worker by the input-free task that made it (its lineage), its
 * consumer parked meanwhile; an executor that could not fetch from an owner
 * is not blamed; a repair's failure is its consumer's. */
#include "runner_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void runner__job_failed(struct rjob *job, const struct fr_error *err)
{
    struct rjob *parked = job->repair_for;
    if (parked) {
        runner__repair_ended(job, err->status, NULL, 0, err);
        runner__job_free(job);
        job = parked;
    }
    runner__task_done(job, err->status, NULL, 0, err, 0, NULL);
}

void runner__fail_job(struct rjob *job, int status, const char *kind, const char *fmt, ...)
{
    struct fr_error err;
    va_list ap;
    fr_error_init(&err);
    va_start(ap, fmt);
    fr_error_vsetk(&err, status, kind, fmt, ap);
    va_end(ap);
    runner__job_failed(job, &err);
}

struct runner_part *runner__lapsed_input(runner_registry *g, const struct rjob *job)
{
    for (int k = 0; k < job->nslots; k++)
        for (int i = 0; i < job->ninputs[k]; i++) {
            struct runner_part *p = job->inputs[k][i];
            if (p->url && (p->lost || runner__registry_lapsed(g, p->url)))
                return p;
        }
    return NULL;
}

bool runner__repair_start(runner *r, struct rjob *job, struct runner_part *lost)
{
    int ninputs = 0;
    for (int k = 0; k < job->nslots; k++)
        ninputs += job->ninputs[k];
    /* each input once, and a few more if the worker made it on is lost too */
    if (!lost->lineage || job->repair_for ||
        job->repairs >= ninputs + job->q->r->frozen->values.task_max_retries)
        return false;
    job->repairs++;
    struct rjob *rep = fr_xcalloc(1, sizeof(*rep));
    rep->q = runner_query_ref(job->q);
    rep->stage = job->stage;
    rep->task = job->task;
    rep->spec = json_incref(lost->lineage);
    if (lost->made_stage >= 0 && !lost->kept_id) { /* recorded as the task that made it */
        rep->stage = lost->made_stage;
        rep->task = lost->made_task;
    }
    rep->rec_stage = rep->stage;
    rep->rerun = true;
    rep->avoid_url = fr_xstrdup(lost->url);
    rep->repair_for = job;
    rep->repair_part = lost;
    FR_LOG(
        FR_LOG_WARN,
        "partition %s on worker %s (it stopped beating or dropped it) is made again for task %d of "
        "stage %d "
        "of query %s",
        lost->id, lost->url, job->task, job->stage, job->q->id);
    runner__repair_started(job->q);
    runner__task_queued(rep);
    r->be->enqueue(r, rep);
    return true;
}

void runner__repair_done(runner *r, struct rjob *rep, struct runner_part **parts, int n)
{
    struct rjob *job = rep->repair_for;
    struct runner_part *p = rep->repair_part;
    struct runner_part *fresh = p->bucket < n ? parts[p->bucket] : NULL;
    runner__repair_ended(rep, FR_OK, parts, n, NULL);
    for (int i = 0; i < n; i++)
        if (i != p->bucket)
            runner__part_free(r, parts[i]);
    free(parts);
    runner__job_free(rep);
    if (!fresh || fresh->rows != p->rows) {
        runner__fail_job(job, FR_EIO, "input-lost",
                         "partition %s, lost with worker %s, could not be made again (%lld "
                         "rows, not %lld)",
                         p->id, p->url, (long long)(fresh ? fresh->rows : -1), (long long)p->rows);
        runner__part_free(r, fresh);
        return;
    }
    FR_LOG(FR_LOG_INFO, "partition %s lost with worker %s is now %s on %s", p->id, p->url,
           fresh->id, fresh->url);
    free(p->url);
    free(p->id);
    p->url = fr_xstrdup(fresh->url);
    p->id = fr_xstrdup(fresh->id);
    p->lost = false;
    fresh->lineage = json_incref(p->lineage);
    fresh->bucket = p->bucket;
    if (p->kept_id) { /* a dataframe's: its entry moves */
        runner__kept_relocate(r, p->kept_id, fresh);
    } else { /* a query's own output: p now names the new one */
        fresh->borrowed = true;
        runner__part_free(r, fresh);
    }
    r->be->enqueue(r, job);
}

bool runner__wait_for_owner(runner *r, runner_registry *g, struct rjob *job, const char *executor,
                            const struct fr_buf *body, const struct fr_error *err)
{
    json_t *b = json_loadb(body->data ? body->data : "", body->len, 0, NULL);
    const char *owner = json_string_value(json_object_get(json_object_get(b, "lost"), "url"));
    bool wait = strcmp(err->kind, "input-lost") == 0 && owner && !job->owner_waited &&
                strcmp(owner, executor) != 0;
    if (wait) {
        runner__task_retried(job, err->message);
        job->owner_waited = true;
        runner__registry_suspect(g, owner); /* not picked meanwhile */
        FR_LOG(FR_LOG_WARN, "task %d of stage %d of query %s on %s: %s; sent again later",
               job->task, job->stage, job->q->id, executor, err->message);
        job->not_before_ms = fr_mono_ms() + 3 * runner_registry_heartbeat_ms(g) + 100;
        r->be->enqueue(r, job);
    }
    json_decref(b);
    return wait;
}
