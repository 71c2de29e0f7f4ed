/* context_runner: the config lifecycle. Setup (pending config changes),
 * the freeze (the first dataframe request creates the runner exactly once:
 * the snapshot under the context lock, the store hold outside it while the
 * context is "freezing", so a config change either lands before the snapshot
 * or gets 409, and a hung store stalls no other request), and the reset
 * (drain, destroy, release, unlock). */
#include "context_int.h"

#include <stdlib.h>
#include <string.h>
#include <malloc.h>

/* The config as GET /v1/config shows it: locked from the snapshot of a
 * freeze on (its values are the pending ones until the runner exists). */
static json_t *config_json_locked(ctx *c)
{
    bool locked = c->runner || c->freezing;
    char at[40] = "";
    if (locked)
        fr_iso8601_ms(c->frozen_at_ms, at, sizeof(at));
    const struct cfg *values = c->runner ? &runner_config(c->runner)->values : &c->pending;
    return json_pack("{sb so? so? so? so}", "locked", locked, "config_id",
                     locked ? json_string(c->config_id) : NULL, "frozen_at",
                     locked ? json_string(at) : NULL, "frozen_by",
                     locked ? json_string(c->frozen_by) : NULL, "values", cfg_to_json(values));
}

json_t *ctx_config_get(ctx *c)
{
    pthread_mutex_lock(&c->lock);
    json_t *j = config_json_locked(c);
    pthread_mutex_unlock(&c->lock);
    return j;
}

static int locked_error(ctx *c, struct ctx_error *err)
{
    char at[40];
    fr_iso8601_ms(c->frozen_at_ms, at, sizeof(at));
    err->ext = json_pack("{ss ss ss ss}", "config_id", c->config_id, "frozen_at", at, "frozen_by",
                         c->frozen_by, "unlock",
                         "DELETE /v1/runner drains the runner and unlocks the config");
    if (c->freezing)
        return ctx__fail(err, FR_ECONFLICT, "config-locked",
                         "the config is being frozen as %s (since %s, by request %s): a change "
                         "now would miss the snapshot; DELETE /v1/runner unlocks it once frozen",
                         c->config_id, at, c->frozen_by);
    return ctx__fail(err, FR_ECONFLICT, "config-locked",
                     "the config is frozen into the running runner as %s (since %s, by request "
                     "%s); DELETE /v1/runner to unlock it",
                     c->config_id, at, c->frozen_by);
}

int ctx_config_update(ctx *c, json_t *patch, json_t **out, struct ctx_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&c->lock);
    int rc;
    if (c->runner || c->freezing) { /* I2: after the snapshot, no change lands */
        rc = locked_error(c, err);
        goto out;
    }
    struct cfg next;
    json_t *errors = NULL;
    rc = cfg_apply_json(&c->pending, patch, &next, &errors);
    if (rc != FR_OK) {
        err->ext = json_pack("{so}", "errors", errors ? errors : json_array());
        rc = rc == FR_EVALIDATION
                 ? ctx__fail(err, rc, "validation-failed",
                             "the config change was rejected: %d "
                             "problem(s), nothing was changed",
                             (int)json_array_size(json_object_get(err->ext, "errors")))
                 : ctx__fail(err, FR_EINVAL, "invalid-json",
                             "a config change must be a JSON object of fields");
        goto out;
    }
    json_decref(errors);
    struct fr_error ferr;
    fr_error_init(&ferr);
    rc = cfg_save(c->state_path, &next, &ferr);
    if (rc != FR_OK) {
        cfg_cleanup(&next);
        rc = ctx__fail(err, FR_EIO, "internal", "could not persist the config: %s", ferr.message);
        goto out;
    }
    cfg_cleanup(&c->pending);
    c->pending = next;
    *out = config_json_locked(c);
out:
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* An ID the runner does not hold: from the store, verified. */
static int stored_bytes(ctx *c, const char *id, char **bytes, size_t *len, struct ctx_error *err)
{
    struct fr_error ferr;
    fr_error_init(&ferr);
    int rc = store_get(c->store, id, bytes, len, &ferr);
    if (rc == FR_ENOTFOUND)
        return ctx__fail(err, rc, "config-not-found",
                         "no config %s in the store (never frozen, or released by a runner "
                         "reset)",
                         id);
    if (rc == FR_EIO)
        return ctx__fail(err, FR_EUNAVAILABLE, "store-unavailable",
                         "the config store cannot be reached: %s", ferr.message);
    if (rc != FR_OK)
        return ctx__from_fr(err, &ferr);
    char actual[80];
    fr_sha256_id(*bytes, *len, actual, sizeof(actual));
    if (strcmp(actual, id) == 0)
        return FR_OK;
    free(*bytes);
    *bytes = NULL;
    store_note_corruption(c->store, id, "refused by GET /v1/configs/{id}: no runner here holds it");
    return ctx__fail(err, FR_EINTERNAL, "config-integrity",
                     "the store's bytes for %s hash to %s: they are corrupt and not served", id,
                     actual);
}

int ctx_config_bytes(ctx *c, const char *id, char **bytes, size_t *len, struct ctx_error *err)
{
    *bytes = NULL;
    if (!store_id_valid(id))
        return ctx__fail(err, FR_ENOTFOUND, "config-not-found",
                         "'%s' is not a config ID (sha256:<64 hex digits>)", id);
    pthread_mutex_lock(&c->lock);
    runner *r = c->runner && strcmp(c->config_id, id) == 0 ? c->runner : NULL;
    if (r)
        c->inflight++; /* a reset waits for this reader before freeing r */
    pthread_mutex_unlock(&c->lock);
    if (!r)
        return stored_bytes(c, id, bytes, len, err);
    runner_config_serve(r, bytes, len);
    ctx__runner_release(c);
    return FR_OK;
}

/* The runner's queries end on its threads: a reset waiting for an idle
 * runner is woken here. */
static void runner_idle(void *arg)
{
    ctx *c = arg;
    pthread_mutex_lock(&c->lock);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* The runner of frozen (stolen), outside the context lock: its store hold
 * is I/O that may hang as long as the store's command timeout. */
static int create_runner(ctx *c, struct cfg_frozen *frozen, runner **r, struct fr_error *ferr)
{
    if (strcmp(ctx__runner_kind(c), "remote") == 0)
        return runner_remote_new(frozen, c->store, c->registry, c->opts.cluster_secret, c->sender,
                                 r, ferr);
    return runner_local_new(frozen, c->store, c->opts.threads, r, ferr);
}

/* A failed freeze: the context is back in setup, the error kept for the
 * requests that waited on this freeze. Lock held. */
static int freeze_failed(ctx *c, const char *request_id, int rc, const struct fr_error *ferr,
                         struct ctx_error *err)
{
    c->config_id[0] = '\0';
    c->frozen_by[0] = '\0';
    FR_LOG(FR_LOG_WARN, "freeze by request %s failed: %s", request_id ? request_id : "",
           ferr->message);
    if (rc == FR_EIO)
        ctx__fail(err, FR_EUNAVAILABLE, "store-unavailable",
                  "the config could not be frozen: the config store cannot be reached (%s); "
                  "retry once it is back",
                  ferr->message);
    else
        ctx__fail(err, FR_EINTERNAL, "internal", "the runner could not be created: %s",
                  ferr->message);
    c->freeze_failed_gen = c->freeze_gen;
    c->freeze_fail_status = err->base.status;
    snprintf(c->freeze_fail_kind, sizeof(c->freeze_fail_kind), "%s", err->base.kind);
    snprintf(c->freeze_fail_msg, sizeof(c->freeze_fail_msg), "%s", err->base.message);
    return err->base.status;
}

/* The freeze, lock held on entry and on return (released in between): the
 * snapshot, its ID and who froze it are set under the lock with freezing, so
 * config changes get 409 from here on; the runner is created outside it;
 * then freezing ends, the runner is installed (or the context goes back to
 * setup) and the waiting first requests are woken. */
static int freeze_locked(ctx *c, const char *request_id, struct ctx_error *err)
{
    struct cfg_frozen *frozen = cfg_freeze(&c->pending);
    snprintf(c->config_id, sizeof(c->config_id), "%s", frozen->id);
    snprintf(c->frozen_by, sizeof(c->frozen_by), "%s", request_id ? request_id : "");
    c->frozen_at_ms = fr_now_ms();
    c->freezing = true;
    pthread_mutex_unlock(&c->lock);
    struct fr_error ferr;
    fr_error_init(&ferr);
    runner *r = NULL;
    int rc = create_runner(c, frozen, &r, &ferr); /* the runner took frozen either way */
    if (rc == FR_OK) /* frozen_at/by are this freeze's own until freezing ends */
        ctx__history_freeze(c, r, c->frozen_by, c->frozen_at_ms);
    pthread_mutex_lock(&c->lock);
    c->freezing = false;
    c->freeze_gen++;
    pthread_cond_broadcast(&c->cond);
    if (rc != FR_OK)
        return freeze_failed(c, request_id, rc, &ferr, err);
    runner_set_on_idle(r, runner_idle, c);
    runner_set_memory_budget(r, c->opts.memory_limit);               /* fetched results: bounded */
    runner_set_spill_dir(r, c->opts.spill_dir, c->opts.spill_limit); /* NULL: no spilling */
    runner_set_memory_charged(r, &c->mem_used, &c->checking); /* and what it holds meanwhile */
    runner_set_read_back(r, &c->read_back);                   /* c's: a read may outlive r */
    c->runner = r;
    c->runner_state = CTX_RUNNER_ACTIVE;
    ctx__live_runner(c);
    FR_LOG(FR_LOG_INFO, "runner %s created: config %s frozen by request %s", runner_id(r),
           c->config_id, c->frozen_by);
    return FR_OK;
}

/* Waits (lock held) for the freeze under way to end: FR_OK to look again,
 * or the error of that freeze when it failed. */
static int wait_freeze(ctx *c, struct ctx_error *err)
{
    uint64_t gen = c->freeze_gen;
    while (c->freezing && c->freeze_gen == gen)
        pthread_cond_wait(&c->cond, &c->lock);
    if (!c->runner && c->freeze_failed_gen == gen + 1)
        return ctx__fail(err, c->freeze_fail_status, c->freeze_fail_kind, "%s", c->freeze_fail_msg);
    return FR_OK;
}

int ctx__runner_acquire(ctx *c, const char *request_id, runner **r, struct ctx_error *err)
{
    pthread_mutex_lock(&c->lock);
    int rc = FR_OK;
    for (;;) {
        if (c->runner_state == CTX_RUNNER_DRAINING) {
            err->ext = json_pack("{si}", "retry_after", 5); /* the Retry-After header's value */
            rc = ctx__fail(err, FR_EUNAVAILABLE, "runner-draining",
                           "the runner is being reset; retry in a moment");
        } else if (c->shutting_down) {
            rc = ctx__fail(err, FR_EUNAVAILABLE, "unavailable", "the server is shutting down");
        } else if (c->freezing) { /* another request's freeze: exactly one runner */
            rc = wait_freeze(c, err);
            if (rc == FR_OK)
                continue;
        } else if (!c->runner) {
            rc = freeze_locked(c, request_id, err);
        }
        break;
    }
    if (rc == FR_OK) {
        c->inflight++;
        *r = c->runner;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void ctx__runner_release(ctx *c)
{
    pthread_mutex_lock(&c->lock);
    c->inflight--;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

json_t *ctx_runner_info(ctx *c)
{
    static const char *const names[] = {"none", "active", "draining"};
    pthread_mutex_lock(&c->lock);
    int running = 0, finished = 0;
    for (int i = 0; i < c->nqueries; i++) {
        enum runner_qstate s = runner_query_state(c->queries[i]->q);
        if (s == RQ_QUEUED || s == RQ_RUNNING)
            running++;
        else
            finished++;
    }
    char at[40] = "";
    if (c->runner)
        fr_iso8601_ms(c->frozen_at_ms, at, sizeof(at));
    json_t *j = json_pack(
        "{ss ss so? so? s{si si}}", "state", names[c->runner_state], "kind", ctx__runner_kind(c),
        "config_id", c->runner ? json_string(c->config_id) : NULL, "created_at",
        c->runner ? json_string(at) : NULL, "queries", "running", running, "finished", finished);
    if (c->runner) {
        json_object_set_new(j, "frozen_by", json_string(c->frozen_by));
        json_object_set_new(j, "detail", runner_info(c->runner));
    }
    pthread_mutex_unlock(&c->lock);
    return j;
}

static void cancel_all_locked(ctx *c)
{
    for (int i = 0; i < c->nqueries; i++)
        runner_query_cancel(c->queries[i]->q);
}

void ctx_cancel_all(ctx *c)
{
    pthread_mutex_lock(&c->lock);
    c->shutting_down = true;
    c->cancelling = true;
    cancel_all_locked(c);
    int n = c->nqueries;
    pthread_mutex_unlock(&c->lock);
    FR_LOG(FR_LOG_WARN, "cancelling running work: %d queries known", n);
}

int ctx_runner_reset(ctx *c, bool force, const char *request_id, json_t **out,
                     struct ctx_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&c->lock);
    if (!c->runner || c->runner_state == CTX_RUNNER_DRAINING) {
        bool draining = c->runner_state == CTX_RUNNER_DRAINING;
        pthread_mutex_unlock(&c->lock);
        if (draining)
            return ctx__fail(err, FR_ECONFLICT, "runner-draining",
                             "a reset is already draining the runner");
        return ctx__fail(err, FR_ENOTFOUND, "no-runner",
                         "there is no runner: the config is not frozen");
    }
    c->runner_state = CTX_RUNNER_DRAINING;
    ctx__live_runner(c);
    int64_t started = fr_mono_us();
    if (force)
        cancel_all_locked(c);
    runner *r = c->runner;
    /* inflight: requests, and each query until its finish hook ran (which
     * follows its settle, and so runner_running's drop) */
    while (c->inflight > 0 || runner_running(r) > 0)
        pthread_cond_wait(&c->cond, &c->lock); /* inflight drops and the runner's idle hook */
    int nframes = c->nframes, nqueries = c->nqueries;
    ctx__frames_clear(c);
    ctx__queries_clear(c); /* nothing tied to the released config lingers */
    c->runner = NULL;
    char id[80], rid[64];
    snprintf(id, sizeof(id), "%s", c->config_id);
    snprintf(rid, sizeof(rid), "%s", runner_id(r));
    c->config_id[0] = '\0';
    pthread_mutex_unlock(&c->lock);
    /* recorded at the drain's end, before the release (which may take a
     * timeout per worker): a dropped query's 410 names the reset at once */
    ctx__history_runner_gone(c, rid, request_id);
    struct fr_error ferr;
    fr_error_init(&ferr);
    /* Still draining: the workers' drop of this config (by its ID) must not
     * reach one after a next runner of the same ID put partitions there, so
     * freezes answer runner-draining until the old runner is gone. */
    bool released = runner_free(r, &ferr) == FR_OK; /* the runner releases its store entry */
    pthread_mutex_lock(&c->lock);
    c->runner_state = CTX_RUNNER_NONE;
    ctx__live_runner(c);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    fr_big_release(); /* hand the runner's freed partitions back to the system */
    malloc_trim(0);
    if (released)
        FR_LOG(FR_LOG_INFO, "runner reset: config %s released", id);
    else
        FR_LOG(FR_LOG_ERROR, "runner reset: releasing config %s from the store failed: %s", id,
               ferr.message);
    *out = json_pack("{ss sb si si sb sI}", "released_config_id", id, "config_released", released,
                     "dataframes_dropped", nframes, "queries_dropped", nqueries, "forced", force,
                     "drained_ms", (json_int_t)((fr_mono_us() - started) / 1000));
    return FR_OK;
}
