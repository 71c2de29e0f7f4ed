/* context: creation and teardown of the one stateful object, errors with
 * problem extensions, and the operations views (info, metrics, readiness). */
#include "context_int.h"

#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

void ctx_error_init(struct ctx_error *e)
{
    fr_error_init(&e->base);
    e->ext = NULL;
}

void ctx_error_cleanup(struct ctx_error *e)
{
    json_decref(e->ext);
    e->ext = NULL;
}

int ctx__fail(struct ctx_error *e, int status, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fr_error_vsetk(&e->base, status, kind, fmt, ap);
    va_end(ap);
    return status;
}

int ctx__from_fr(struct ctx_error *e, const struct fr_error *f)
{
    e->base = *f;
    if (f->position >= 0 || f->field[0] || f->line >= 0 || f->file[0]) {
        json_t *ext = e->ext ? e->ext : json_object();
        if (f->position >= 0)
            json_object_set_new(ext, "position", json_integer(f->position));
        if (f->field[0])
            json_object_set_new(ext, "column", json_string(f->field));
        if (f->file[0])
            json_object_set_new(ext, "file", json_string(f->file));
        if (f->line >= 0)
            json_object_set_new(ext, "line", json_integer(f->line));
        if (f->column >= 0)
            json_object_set_new(ext, "field_index", json_integer(f->column));
        e->ext = ext;
    }
    return f->status;
}

void ctx__random_id(const char *prefix, char *out, size_t outsz)
{
    unsigned char b[8];
    if (RAND_bytes(b, sizeof(b)) != 1)
        memset(b, 0, sizeof(b));
    snprintf(out, outsz, "%s-%02x%02x%02x%02x%02x%02x%02x%02x", prefix, b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7]);
}

static int open_store(ctx *c, struct fr_error *err)
{
    const char *url = c->opts.store_url;
    if (url && strncmp(url, "http", 4) == 0)
        return fr_error_set(err, FR_EINVAL,
                            "--store %s: a coordinator keeps its own store "
                            "(embedded or redis://)",
                            url);
    char *dir = fr_xasprintf("%s/store", c->opts.state_dir);
    int rc = store_open_url(url, dir, c->opts.cluster_secret, c->sender, &c->store, err);
    free(dir);
    if (rc == FR_OK && c->opts.store_lease_ms > 0)
        rc = store_set_lease_ms(c->store, c->opts.store_lease_ms, err);
    return rc;
}

static char *dup_or_null(const char *s)
{
    return s ? fr_xstrdup(s) : NULL;
}

static int load_pending(ctx *c, char *const *envp, struct fr_error *err)
{
    cfg_defaults(&c->pending);
    c->state_path = fr_xasprintf("%s/config.json", c->opts.state_dir);
    int rc = cfg_load(c->state_path, &c->pending, err);
    if (rc == FR_ENOTFOUND) {
        fr_error_init(err);
        rc = FR_OK;
    }
    if (rc != FR_OK)
        return rc;
    if (envp && (rc = cfg_apply_env(&c->pending, envp, err)) != FR_OK)
        return rc;
    return cfg_save(c->state_path, &c->pending, err);
}

int ctx_new(const struct ctx_options *opts, char *const *envp, ctx **out, struct fr_error *err)
{
    *out = NULL;
    ctx *c = fr_xcalloc(1, sizeof(*c));
    c->opts = *opts;
    c->opts.data_dir = fr_xstrdup(opts->data_dir ? opts->data_dir : "data");
    c->opts.state_dir = fr_xstrdup(opts->state_dir ? opts->state_dir : "state");
    c->opts.runner_kind = dup_or_null(opts->runner_kind);
    c->opts.store_url = dup_or_null(opts->store_url);
    c->opts.workers = dup_or_null(opts->workers);
    c->opts.spill_dir = dup_or_null(opts->spill_dir);
    c->opts.cluster_secret = dup_or_null(opts->cluster_secret);
    c->started_ms = fr_mono_ms();
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    int rc = fr_mkdir_p(c->opts.data_dir, err);
    if (rc == FR_OK)
        rc = fr_mkdir_p(c->opts.state_dir, err);
    c->datasets = ctx__datasets_new(rc == FR_OK ? c->opts.data_dir : NULL);
    if (rc == FR_OK && opts->runner_kind && strcmp(opts->runner_kind, "local") != 0 &&
        strcmp(opts->runner_kind, "remote") != 0)
        rc = fr_error_set(err, FR_EINVAL, "--runner %s: use local or remote", opts->runner_kind);
    ctx__random_id("coordinator", c->sender, sizeof(c->sender));
    c->registry = runner_registry_new(opts->workers, 1000);
    if (rc == FR_OK)
        rc = load_pending(c, envp, err);
    if (rc == FR_OK)
        rc = open_store(c, err);
    if (rc == FR_OK)
        ctx__history_open(c); /* never fails the start: a lost history is logged, counted */
    if (rc == FR_OK)
        rc = ctx__live_start(c, err);
    if (rc != FR_OK) {
        ctx_free(c);
        return rc;
    }
    *out = c;
    return FR_OK;
}

void ctx_free(ctx *c)
{
    if (!c)
        return;
    json_t *out = NULL;
    struct ctx_error e;
    ctx_error_init(&e);
    ctx__live_stop(c);
    pthread_mutex_lock(&c->lock);
    while (c->freezing) /* a freeze under way ends (its store call times out) */
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
    if (c->runner)
        ctx_runner_reset(c, true, NULL, &out, &e); /* NULL: the runner ends with the process */
    json_decref(out);
    ctx_error_cleanup(&e);
    pthread_mutex_lock(&c->lock);
    ctx__frames_clear(c);
    ctx__queries_clear(c);
    pthread_mutex_unlock(&c->lock);
    free(c->frames);
    for (int i = 0; i < c->nname_holds; i++)
        free(c->name_holds[i]);
    free(c->name_holds);
    free(c->queries);
    ctx__history_close(c);
    store_free(c->store);
    runner_registry_free(c->registry);
    ctx__datasets_free(c->datasets);
    cfg_cleanup(&c->pending);
    free(c->state_path);
    free((char *)c->opts.data_dir);
    free((char *)c->opts.state_dir);
    free((char *)c->opts.runner_kind);
    free((char *)c->opts.store_url);
    free((char *)c->opts.workers);
    free((char *)c->opts.spill_dir);
    free((char *)c->opts.cluster_secret);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}

void ctx__effective_config(ctx *c, struct cfg *out)
{
    pthread_mutex_lock(&c->lock);
    cfg_copy(out, c->runner ? &runner_config(c->runner)->values : &c->pending);
    pthread_mutex_unlock(&c->lock);
}

const char *ctx__runner_kind(const ctx *c)
{
    return c->opts.runner_kind && strcmp(c->opts.runner_kind, "remote") == 0 ? "remote" : "local";
}

const char *ctx_cluster_secret(const ctx *c)
{
    return c->opts.cluster_secret;
}

int ctx_worker_announce(ctx *c, json_t *body, json_t **out, struct ctx_error *err)
{
    struct fr_error ferr;
    fr_error_init(&ferr);
    json_t *release = json_array();
    if (runner_registry_announce(c->registry, body, release, &ferr) != FR_OK) { /* 422, listed */
        json_decref(release);
        err->ext = json_pack("{s[{ssss}]}", "errors", "field", ferr.field[0] ? ferr.field : "body",
                             "message", ferr.message);
        return ctx__fail(err, FR_EVALIDATION, "validation-failed", "the announce was refused: %s",
                         ferr.message);
    }
    *out = json_pack("{sI}", "heartbeat_ms", (json_int_t)runner_registry_heartbeat_ms(c->registry));
    if (json_array_size(release)) /* a backstop for the DELETE /v1/configs it missed */
        json_object_set(*out, "release_config_ids", release);
    json_decref(release);
    return FR_OK;
}

json_t *ctx_workers_list(ctx *c)
{
    return json_pack("{so}", "workers", runner_registry_list(c->registry));
}
