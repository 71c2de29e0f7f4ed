/* context_frames: dataframes. A request is planned under the config it
 * would run with before anything is created, so an invalid plan is a 400
 * that leaves the service unfrozen; then the runner is acquired (the
 * freeze) and the preview runs as a real query on it. */
#include "context_int.h"

#include <stdlib.h>
#include <string.h>

static void collect_formats(ctx *c, json_t *v, json_t *out, int depth);

static int lookup_frame(void *arg, const char *id, struct plan_source_info *info,
                        struct fr_error *err)
{
    ctx *c = arg;
    int rc = FR_OK;
    pthread_mutex_lock(&c->lock);
    struct ctx_frame *f = NULL;
    for (int i = 0; i < c->nframes && !f; i++)
        if (strcmp(c->frames[i]->id, id) == 0)
            f = c->frames[i];
    if (!f) {
        rc = fr_error_setk(err, FR_ENOTFOUND, "dataframe-not-found", "no dataframe '%s'", id);
    } else if (f->nparts == 0) {
        rc = fr_error_setk(err, FR_ECONFLICT, "dataframe-not-materialized",
                           "dataframe %s is not materialized yet: run it first with POST "
                           "/v1/queries {\"dataframe\": \"%s\"}",
                           id, id);
    } else {
        memset(info, 0, sizeof(*info));
        df_schema_copy(&info->schema, &f->schema);
        info->nparts = f->nparts;
        info->part_ids = fr_xcalloc((size_t)f->nparts + 1, sizeof(char *));
        info->part_rows = fr_xcalloc((size_t)f->nparts + 1, sizeof(int64_t));
        for (int i = 0; i < f->nparts; i++)
            info->part_ids[i] = fr_xstrdup(f->part_ids[i]);
        info->bytes = f->bytes;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void ctx__plan_env(ctx *c, struct plan_env *env)
{
    env->data_dir = c->opts.data_dir;
    env->remote_workers = strcmp(ctx__runner_kind(c), "remote") == 0;
    env->preview_scan_rows = 0;
    env->lookup_dataframe = lookup_frame;
    env->arg = c;
}

static int build(ctx *c, const struct cfg *cfg, json_t *plan, int64_t limit, plan_physical **out,
                 struct ctx_error *err)
{
    struct plan_env env;
    ctx__plan_env(c, &env);
    if (limit >= 0) /* a preview: over the first rows of each source only */
        env.preview_scan_rows = limit > CTX_PREVIEW_SCAN_ROWS ? limit : CTX_PREVIEW_SCAN_ROWS;
    struct fr_error ferr;
    fr_error_init(&ferr);
    int rc = plan_build(plan, cfg, &env, limit, out, &ferr);
    if (rc != FR_OK)
        ctx__from_fr(err, &ferr);
    return rc;
}

int ctx__plan_frozen(ctx *c, json_t *plan, const char *request_id, int64_t limit, runner **r,
                     plan_physical **out, struct ctx_error *err)
{
    struct cfg snap;
    ctx__effective_config(c, &snap);
    plan_physical *p = NULL;
    int rc = build(c, &snap, plan, limit, &p, err);
    if (rc == FR_OK)
        rc = ctx__runner_acquire(c, request_id, r, err);
    if (rc == FR_OK && !cfg_equal(&snap, &runner_config(*r)->values)) {
        plan_physical_free(p); /* the config changed before the freeze: plan again */
        p = NULL;
        rc = build(c, &runner_config(*r)->values, plan, limit, &p, err);
        if (rc != FR_OK)
            ctx__runner_release(c);
    }
    cfg_cleanup(&snap);
    struct fr_error aerr; /* no worker at all: say so now (503 no-workers), not as a failed query */
    fr_error_init(&aerr);
    if (rc == FR_OK && (rc = runner_admit(*r, &aerr)) != FR_OK) {
        ctx__from_fr(err, &aerr);
        ctx__runner_release(c);
    }
    if (rc != FR_OK) {
        plan_physical_free(p);
        return rc;
    }
    *out = p;
    return FR_OK;
}

json_t *ctx__rows_json(const struct df_table *t, int64_t start, int64_t n)
{
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_putc(&b, '[');
    df_write_json_rows(t, start, n, &b);
    fr_buf_putc(&b, ']');
    /* JSON_ALLOW_NUL: a string value with a NUL byte (written as \u0000) must
     * not make the whole document unreadable */
    json_t *rows = json_loadb(b.data, b.len, JSON_ALLOW_NUL, NULL);
    fr_buf_cleanup(&b);
    return rows ? rows : json_array();
}

json_t *ctx__schema_json(const struct df_schema *s)
{
    json_t *a = json_array();
    for (int i = 0; i < s->nfields; i++)
        json_array_append_new(a, json_pack("{ss ss}", "name", s->fields[i].name, "type",
                                           df_type_name(s->fields[i].type)));
    return a;
}

/* Runs the preview query (recorded in the history as a query of the new
 * dataframe, rec) and returns its rows (new) or fails with its error. */
static int run_preview(ctx *c, runner *r, plan_physical *p, const struct ctx_qrec *rec,
                       json_t *plan, json_t **rows, struct ctx_error *err)
{
    runner_query *q = runner_query_new(rec->id, p);
    runner_query_bind_config(q, r);
    runner_query_collect_result(q); /* the rows are needed here, now */
    ctx__history_query_accepted(c, r, rec, plan);
    struct fr_error ferr;
    fr_error_init(&ferr);
    int rc = runner_submit(r, q, &ferr);
    bool submitted = rc == FR_OK;
    if (rc != FR_OK)
        ctx__from_fr(err, &ferr);
    if (rc == FR_OK) {
        ctx__history_query_started(c, rec->id);
        runner_query_wait(q, -1);
        struct df_table *const *parts;
        int n;
        if (runner_query_result(q, &parts, &n) != FR_OK) {
            rc = ctx__from_fr(err, runner_query_error(q));
            if (rc == FR_OK)
                rc = ctx__fail(err, FR_ECANCELLED, "query-cancelled", "the preview was cancelled");
        } else {
            *rows = json_array();
            for (int i = 0; i < n; i++) {
                json_t *part = ctx__rows_json(parts[i], 0, parts[i]->nrows);
                json_array_extend(*rows, part);
                json_decref(part);
            }
        }
    }
    ctx__history_query_finished(c, q, rec->id, runner_id(r), submitted);
    runner_query_release_result(q); /* the workers' copies of the preview go now */
    runner_query_unref(q);
    return rc;
}

static json_t *frame_json(const struct ctx_frame *f)
{
    char at[40];
    fr_iso8601_ms(f->created_ms, at, sizeof(at));
    json_t *j =
        json_pack("{ss so ss ss sb so? sO sO}", "id", f->id, "schema", ctx__schema_json(&f->schema),
                  "config_id", f->config_id, "created_at", at, "materialized", f->nparts > 0,
                  "rows", f->nparts > 0 ? json_integer(f->part_rows) : NULL, "plan", f->plan,
                  "preview", f->preview ? f->preview : json_array());
    json_object_set_new(j, "preview_exact", json_boolean(f->preview_exact));
    if (f->name[0])
        json_object_set_new(j, "name", json_string(f->name));
    if (f->sql)
        json_object_set_new(j, "sql", json_string(f->sql));
    return j;
}

/* A dataframe's SQL name: 1-64 of [A-Za-z0-9_]. */
static bool frame_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n >= 1 && n <= 64 &&
           strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

static int name_taken(struct ctx_error *err, const char *name)
{
    err->ext = json_pack("{ss}", "name", name);
    return ctx__fail(err, FR_ECONFLICT, "conflict",
                     "a dataframe is named '%s' already (names are unique ignoring case): "
                     "choose another or DELETE that dataframe",
                     name);
}

static int frame_create(ctx *c, json_t *plan, const ctx_sql *s, const char *name,
                        const char *request_id, json_t **out, struct ctx_error *err);

int ctx_dataframe_create(ctx *c, json_t *plan, const char *request_id, json_t **out,
                         struct ctx_error *err)
{
    return frame_create(c, plan, NULL, NULL, request_id, out, err);
}

/* Holds name for a create in flight, context lock held: a racing create
 * of the same name is refused before it plans or runs anything. */
static void name_hold(ctx *c, const char *name)
{
    c->name_holds =
        fr_xrealloc(c->name_holds, sizeof(*c->name_holds) * (size_t)(c->nname_holds + 1));
    c->name_holds[c->nname_holds++] = fr_xstrdup(name);
}

/* Drops the hold on name, context lock held. */
static void name_release(ctx *c, const char *name)
{
    for (int i = 0; name && i < c->nname_holds; i++) {
        if (strcmp(c->name_holds[i], name) == 0) {
            free(c->name_holds[i]);
            c->name_holds[i] = c->name_holds[--c->nname_holds];
            return;
        }
    }
}

int ctx_dataframe_create_sql(ctx *c, const ctx_sql *s, const char *name, const char *request_id,
                             json_t **out, struct ctx_error *err)
{
    *out = NULL;
    if (ctx_sql_kind(s) != CTX_SQL_QUERY)
        return ctx__fail(err, FR_EINVAL, "invalid-sql",
                         "a dataframe is made from a query (SELECT, WITH, VALUES); EXPLAIN, SET, "
                         "RESET and SHOW go to POST /v1/queries");
    if (name && !frame_name_ok(name)) {
        err->ext = json_pack("{ss}", "parameter", "name");
        return ctx__fail(err, FR_EINVAL, "invalid-parameter",
                         "name: a dataframe's name is 1 to 64 of A-Z, a-z, 0-9 and _");
    }
    pthread_mutex_lock(&c->lock);
    bool taken = name && ctx__frame_name_taken(c, name);
    if (name && !taken)
        name_hold(c, name);
    pthread_mutex_unlock(&c->lock);
    if (taken) /* before the freeze: a refused name freezes nothing, runs nothing */
        return name_taken(err, name);
    int rc = frame_create(c, ctx_sql_plan(s), s, name, request_id, out, err);
    if (rc != FR_OK && name) {
        pthread_mutex_lock(&c->lock);
        name_release(c, name);
        pthread_mutex_unlock(&c->lock);
    }
    return rc;
}

static void frame_discard(struct ctx_frame *f)
{
    json_decref(f->plan);
    json_decref(f->formats);
    df_schema_cleanup(&f->schema);
    free(f->sql);
    free(f);
}

static int frame_create(ctx *c, json_t *plan, const ctx_sql *s, const char *name,
                        const char *request_id, json_t **out, struct ctx_error *err)
{
    *out = NULL;
    struct cfg snap;
    ctx__effective_config(c, &snap);
    int64_t limit = snap.num_preview_rows;
    cfg_cleanup(&snap);
    runner *r = NULL;
    plan_physical *p = NULL;
    int rc = ctx__plan_frozen(c, plan, request_id, limit, &r, &p, err);
    if (rc != FR_OK)
        return s ? ctx__sql_plan_error(s, err) : rc;
    const char *sql = s ? ctx_sql_text(s) : NULL;
    struct ctx_frame *f = fr_xcalloc(1, sizeof(*f));
    ctx__random_id("df", f->id, sizeof(f->id));
    f->plan = json_deep_copy(plan);
    f->formats = json_object();
    collect_formats(c, plan, f->formats, 0);
    df_schema_copy(&f->schema, plan_physical_schema(p));
    snprintf(f->config_id, sizeof(f->config_id), "%s", runner_config(r)->id);
    f->created_ms = fr_now_ms();
    json_t *preview = NULL;
    f->sql = sql ? fr_xstrdup(sql) : NULL;
    snprintf(f->name, sizeof(f->name), "%s", name ? name : "");
    struct ctx_qrec rec = {.created_ms = f->created_ms};
    ctx__random_id("q", rec.id, sizeof(rec.id));
    snprintf(rec.frame_id, sizeof(rec.frame_id), "%s", f->id);
    rec.sql = sql ? json_pack("{ss}", "sql", sql) : NULL;
    int64_t needs = plan_physical_preview_needs(p, limit);
    rc = run_preview(c, r, p, &rec, plan, &preview, err); /* the query owns p now */
    if (rc == FR_OK)
        f->preview_exact = needs == 0 || (needs > 0 && (int64_t)json_array_size(preview) >= needs);
    json_decref(rec.sql);
    ctx__runner_release(c);
    if (rc != FR_OK) {
        frame_discard(f);
        return rc;
    }
    pthread_mutex_lock(&c->lock);
    name_release(c, name); /* held since the check: no racing create took it */
    c->frames = fr_xrealloc(c->frames, sizeof(*c->frames) * (size_t)(c->nframes + 1));
    c->frames[c->nframes++] = f;
    f->preview = preview;
    *out =
        json_pack("{ss so ss sO sb}", "id", f->id, "schema", ctx__schema_json(&f->schema),
                  "config_id", f->config_id, "preview", preview, "preview_exact", f->preview_exact);
    if (f->name[0])
        json_object_set_new(*out, "name", json_string(f->name));
    if (f->sql) {
        json_object_set_new(*out, "sql", json_string(f->sql));
        json_object_set(*out, "plan", f->plan);
    }
    pthread_mutex_unlock(&c->lock);
    return FR_OK;
}

static struct ctx_frame *find_frame(ctx *c, const char *id, int *index)
{
    for (int i = 0; i < c->nframes; i++) {
        if (strcmp(c->frames[i]->id, id) == 0) {
            if (index)
                *index = i;
            return c->frames[i];
        }
    }
    return NULL;
}

bool ctx__frame_holds(ctx *c, const char *frame_id, const char *qid)
{
    const struct ctx_frame *f = find_frame(c, frame_id, NULL);
    return f && strcmp(f->run_qid, qid) == 0;
}

/* Adds {dataset: format} to out for every dataset source in the plan
 * (joins' right sides too); a dataset that no longer resolves is left out
 * (the plan's build says so). */
static void collect_formats(ctx *c, json_t *v, json_t *out, int depth)
{
    if (depth > 64)
        return;
    json_t *src = json_object_get(v, "source");
    const char *name = json_string_value(json_object_get(src, "dataset"));
    if (name && !json_object_get(out, name)) {
        char *path = NULL;
        const char *format = NULL;
        struct fr_error ferr;
        fr_error_init(&ferr);
        if (plan_dataset_resolve(c->opts.data_dir, name, &path, &format, &ferr) == FR_OK)
            json_object_set_new(out, name, json_string(format));
        free(path);
    }
    const char *key;
    size_t i;
    json_t *m;
    if (json_is_object(v))
        json_object_foreach(v, key, m) collect_formats(c, m, out, depth + 1);
    else if (json_is_array(v))
        json_array_foreach(v, i, m) collect_formats(c, m, out, depth + 1);
}

static bool same_schema(const struct df_schema *a, const struct df_schema *b)
{
    bool same = a->nfields == b->nfields;
    for (int i = 0; same && i < a->nfields; i++)
        same = a->fields[i].type == b->fields[i].type &&
               strcmp(a->fields[i].name, b->fields[i].name) == 0;
    return same;
}

int ctx__frame_check(ctx *c, const char *frame_id, const plan_physical *p, struct ctx_error *err)
{
    pthread_mutex_lock(&c->lock);
    struct ctx_frame *f = find_frame(c, frame_id, NULL);
    json_t *plan = f ? json_incref(f->plan) : NULL, *then = f ? json_incref(f->formats) : NULL;
    bool same = !f || !p || same_schema(&f->schema, plan_physical_schema(p));
    int nthen = f ? f->schema.nfields : 0;
    pthread_mutex_unlock(&c->lock);
    if (!f)
        return FR_OK; /* deleted since: the run goes on with the plan it took */
    json_t *now = json_object();
    collect_formats(c, plan, now, 0);
    const char *name;
    json_t *fmt;
    int rc = FR_OK;
    json_object_foreach(then, name, fmt)
    {
        const char *was = json_string_value(fmt),
                   *is = json_string_value(json_object_get(now, name));
        if (rc == FR_OK && is && strcmp(was, is) != 0)
            rc = ctx__fail(err, FR_ECONFLICT, "dataset-changed",
                           "dataframe %s was created from dataset '%s' as %s; it is %s now: "
                           "create the dataframe again",
                           frame_id, name, was, is);
    }
    if (rc == FR_OK && !same) {
        struct fr_buf names;
        fr_buf_init(&names);
        json_object_foreach(then, name, fmt)
        {
            if (names.len < 300)
                fr_buf_printf(&names, "%s'%.100s'", names.len ? ", " : "", name);
        }
        rc = ctx__fail(err, FR_ECONFLICT, "dataset-changed",
                       "dataframe %s has %d columns, but its plan on its dataset%s %s as they are "
                       "now gives %d or other names or types (replaced since): create the "
                       "dataframe again",
                       frame_id, nthen, json_object_size(then) == 1 ? "" : "s",
                       names.data ? names.data : "(none)", plan_physical_schema(p)->nfields);
        fr_buf_cleanup(&names);
    }
    json_decref(now);
    json_decref(then);
    json_decref(plan);
    return rc;
}

static int frame_missing(struct ctx_error *err, const char *id)
{
    return ctx__fail(err, FR_ENOTFOUND, "dataframe-not-found",
                     "no dataframe '%s' (it was deleted, or dropped by a runner reset)", id);
}

int ctx_dataframe_get(ctx *c, const char *id, json_t **out, struct ctx_error *err)
{
    pthread_mutex_lock(&c->lock);
    struct ctx_frame *f = find_frame(c, id, NULL);
    if (f)
        *out = frame_json(f);
    pthread_mutex_unlock(&c->lock);
    return f ? FR_OK : frame_missing(err, id);
}

static void frame_free(ctx *c, struct ctx_frame *f)
{
    if (c->runner && f->nparts)
        runner_drop_kept(c->runner, f->id);
    ctx__frame_data_release(c, f->run_qid, f->bytes);
    for (int i = 0; i < f->nparts; i++)
        free(f->part_ids[i]);
    free(f->part_ids);
    runner_query_unref(f->last_run);
    json_decref(f->preview);
    json_decref(f->plan);
    json_decref(f->formats);
    df_schema_cleanup(&f->schema);
    free(f->sql);
    free(f);
}

int ctx_dataframe_delete(ctx *c, const char *id, struct ctx_error *err)
{
    pthread_mutex_lock(&c->lock);
    int idx;
    struct ctx_frame *f = find_frame(c, id, &idx);
    if (f) {
        frame_free(c, f);
        c->frames[idx] = c->frames[--c->nframes];
    }
    pthread_mutex_unlock(&c->lock);
    return f ? FR_OK : frame_missing(err, id);
}

void ctx__frames_clear(ctx *c)
{
    for (int i = 0; i < c->nframes; i++)
        frame_free(c, c->frames[i]);
    c->nframes = 0;
}

int ctx_dataframe_explain(ctx *c, const char *id, json_t **out, struct ctx_error *err)
{
    pthread_mutex_lock(&c->lock);
    struct ctx_frame *f = find_frame(c, id, NULL);
    json_t *plan = f ? json_incref(f->plan) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (!plan)
        return frame_missing(err, id);
    runner *r = NULL;
    plan_physical *p = NULL;
    int rc = ctx__plan_frozen(c, plan, NULL, -1, &r, &p, err);
    json_decref(plan);
    if (rc != FR_OK)
        return rc;
    *out = plan_physical_explain(p);
    json_object_set_new(*out, "config_id", json_string(runner_config(r)->id));
    plan_physical_free(p);
    ctx__runner_release(c);
    return FR_OK;
}

/* Called when a dataframe's run (rec, charged) succeeded: keep its
 * partitions in the runner; the frame takes the run's charge over and
 * releases the previous run's data (one owner per charge). */
void ctx__frame_materialize(ctx *c, struct ctx_qrec *rec)
{
    runner_query *q = rec->q;
    struct ctx_frame *f = find_frame(c, rec->frame_id, NULL);
    if (!f || !c->runner || runner_query_state(q) != RQ_SUCCEEDED)
        return;
    if (f->nparts)
        runner_drop_kept(c->runner, f->id);
    for (int i = 0; i < f->nparts; i++)
        free(f->part_ids[i]);
    free(f->part_ids);
    f->part_ids = NULL;
    f->nparts = 0;
    ctx__frame_data_release(c, f->run_qid, f->bytes);
    f->bytes = 0;
    f->run_qid[0] = '\0';
    if (runner_keep_result(c->runner, q, f->id, &f->part_ids, &f->nparts) == FR_OK) {
        f->part_rows = runner_query_rows(q);
        f->bytes = rec->charge->bytes;
        rec->charge->bytes = 0;
        snprintf(f->run_qid, sizeof(f->run_qid), "%s", rec->id);
    }
    runner_query_unref(f->last_run);
    f->last_run = runner_query_ref(q);
}

/* Newest first: by created_ms, then id (both descending). */
static int frame_newer(const void *a, const void *b)
{
    const struct ctx_frame *x = *(struct ctx_frame *const *)a, *y = *(struct ctx_frame *const *)b;
    if (x->created_ms != y->created_ms)
        return x->created_ms > y->created_ms ? -1 : 1;
    return -strcmp(x->id, y->id);
}

/* A list cursor, "<created_ms>_<id>" of the last frame of a page: it stays
 * a position when that frame is deleted. FR_OK or FR_EINVAL. */
static int frame_cursor_parse(const char *cursor, int64_t *ms, char *id, size_t idsz)
{
    const char *sep = strchr(cursor, '_');
    size_t digits = sep ? (size_t)(sep - cursor) : 0, idn = sep ? strlen(sep + 1) : 0;
    if (digits < 1 || digits > 15 || idn < 4 || idn >= idsz || strncmp(sep + 1, "df-", 3) != 0)
        return FR_EINVAL;
    *ms = 0;
    for (size_t i = 0; i < digits; i++) {
        if (cursor[i] < '0' || cursor[i] > '9')
            return FR_EINVAL;
        *ms = *ms * 10 + (cursor[i] - '0');
    }
    for (size_t i = 3; i < idn; i++)
        if (!strchr("0123456789abcdef", sep[1 + i]))
            return FR_EINVAL;
    snprintf(id, idsz, "%s", sep + 1);
    return FR_OK;
}

int ctx_dataframes_list(ctx *c, int limit, const char *cursor, json_t **out, struct ctx_error *err)
{
    *out = NULL;
    int64_t after_ms = INT64_MAX;
    char after_id[40] = "";
    if (cursor && frame_cursor_parse(cursor, &after_ms, after_id, sizeof(after_id)) != FR_OK) {
        err->ext = json_pack("{ss}", "parameter", "cursor");
        return ctx__fail(err, FR_EINVAL, "invalid-parameter",
                         "cursor: not a cursor this server handed out (pass next_cursor as it "
                         "came)");
    }
    json_t *list = json_array(), *next = json_null();
    pthread_mutex_lock(&c->lock);
    struct ctx_frame **sorted = fr_xcalloc((size_t)c->nframes + 1, sizeof(*sorted));
    if (c->nframes > 0) { /* c->frames is NULL before the first one */
        memcpy(sorted, c->frames, sizeof(*sorted) * (size_t)c->nframes);
        qsort(sorted, (size_t)c->nframes, sizeof(*sorted), frame_newer);
    }
    int n = 0;
    for (int i = 0; i < c->nframes; i++) {
        struct ctx_frame *f = sorted[i];
        if (cursor && (f->created_ms > after_ms ||
                       (f->created_ms == after_ms && strcmp(f->id, after_id) >= 0)))
            continue; /* at or before the cursor */
        if (n == limit) {
            char buf[80];
            snprintf(buf, sizeof(buf), "%lld_%s", (long long)sorted[i - 1]->created_ms,
                     sorted[i - 1]->id);
            json_decref(next);
            next = json_string(buf);
            break;
        }
        json_array_append_new(list, frame_json(f));
        n++;
    }
    pthread_mutex_unlock(&c->lock);
    free(sorted);
    *out = json_pack("{so so}", "dataframes", list, "next_cursor", next);
    return FR_OK;
}
