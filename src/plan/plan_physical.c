/* plan_physical: cuts an optimized logical plan into stages of tasks. Narrow
 * ops (filter, project, limit within a partition, sort of one partition)
 * fuse into the current stage's pipeline; wide ops (aggregation, join, sort,
 * global limit, union) close it with a sink and open the next stage. Every
 * choice and the config value behind it is recorded for explain. */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>

void plan__decide(struct plan_physical *p, const char *field, int64_t value, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    p->decisions = fr_xrealloc(p->decisions, sizeof(*p->decisions) * (size_t)(p->ndecisions + 1));
    struct plan_decision *d = &p->decisions[p->ndecisions++];
    d->decision = fr_xstrdup(msg);
    d->reason = NULL;
    d->field = field;
    d->value = value;
    d->stage = p->nstages - 1;
    d->src = p->deciding_src;
}

/* The optimizer's decisions about src (taken before any stage): src's scan
 * stage idx is the one they concern. */
static void attribute_optimizer(struct plan_physical *p, const struct lsource *src, int idx)
{
    for (int i = 0; i < p->ndecisions; i++)
        if (p->decisions[i].src == src && p->decisions[i].stage < 0)
            p->decisions[i].stage = idx;
}

static int new_stage(struct plan_physical *p, const char *label)
{
    p->stages = fr_xrealloc(p->stages, sizeof(struct pstage) * (size_t)(p->nstages + 1));
    struct pstage *s = &p->stages[p->nstages];
    memset(s, 0, sizeof(*s));
    s->label = fr_xstrdup(label);
    s->pipeline = json_array();
    s->nbuckets = 1;
    s->ntasks = 1;
    s->limit_rows = -1;
    s->max_rows = -1;
    s->input = PIN_SLOTS;
    df_schema_init(&s->schema);
    return p->nstages++;
}

static void close_stage(struct plan_physical *p, int idx)
{
    p->stages[idx].closed = true;
}

static void add_slot(struct plan_physical *p, int idx, int from, enum plan_slot_mode mode)
{
    struct pstage *s = &p->stages[idx];
    s->slots[s->nslots].stage = from;
    s->slots[s->nslots].mode = mode;
    s->slots[s->nslots].bucket = 0;
    s->nslots++;
}

static const char *fmt_bytes(int64_t b, char *buf, size_t n)
{
    if (b >= CFG_GiB)
        snprintf(buf, n, "%.1f GiB", (double)b / (double)CFG_GiB);
    else if (b >= CFG_MiB)
        snprintf(buf, n, "%.1f MiB", (double)b / (double)CFG_MiB);
    else if (b >= 1024)
        snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, n, "%lld B", (long long)b);
    return buf;
}

static int split_file(struct plan_physical *p, struct pstage *s, const struct lsource *src,
                      struct fr_error *err)
{
    int64_t lo = p->cfg.scan_tasks_min_size_bytes, hi = p->cfg.scan_tasks_max_size_bytes;
    int64_t size = src->bytes;
    int64_t n = size > hi ? (size + hi - 1) / hi : 1;
    int64_t target = (size + n - 1) / (n ? n : 1);
    char a[32], b[32];
    if (n > 1 && target < lo) {
        n = size / lo > 0 ? size / lo : 1;
        target = (size + n - 1) / n;
    }
    int rc;
    if (target <= 0)
        target = 1;
    bool preview = p->preview_rows > 0, cut = false;
    if (preview && target > PLAN_PREVIEW_SCAN_BYTES)
        target = PLAN_PREVIEW_SCAN_BYTES;
    if (strcmp(src->format, "csv") == 0) {
        struct df_csv_options o;
        plan__csv_options(src, &o);
        rc = preview ? df_csv_split_prefix(src->path, &o, target, PLAN_PREVIEW_SCAN_TASKS,
                                           &s->ranges, &s->nranges, &cut, err)
                     : df_csv_split(src->path, &o, target, &s->ranges, &s->nranges, err);
    } else {
        rc = preview ? df_ndjson_split_prefix(src->path, target, PLAN_PREVIEW_SCAN_TASKS,
                                              &s->ranges, &s->nranges, &cut, err)
                     : df_ndjson_split(src->path, target, &s->ranges, &s->nranges, err);
    }
    if (rc != FR_OK) {
        plan__kind_default(err, "malformed-data");
        return rc;
    }
    if (s->nranges == 0) { /* an empty file still yields one (empty) task */
        s->ranges = fr_xcalloc(1, sizeof(*s->ranges));
        s->ranges[0].line = 1;
        s->nranges = 1;
    }
    s->ntasks = s->nranges;
    p->preview_truncated |= cut;
    if (preview) /* cut to its start, in tasks skipped once enough rows are found */
        plan__decide(p, NULL, 0, "preview: scan of %s (%s) reads %s in %d tasks", src->display,
                     fmt_bytes(size, a, sizeof(a)), cut ? "its first bytes only" : "the whole file",
                     s->ntasks);
    else if (size > hi)
        plan__decide(p, "scan_tasks_max_size_bytes", hi,
                     "scan of %s (%s) split into %d tasks: larger than "
                     "scan_tasks_max_size_bytes %s",
                     src->display, fmt_bytes(size, a, sizeof(a)), s->ntasks,
                     fmt_bytes(hi, b, sizeof(b)));
    else
        plan__decide(p, "scan_tasks_max_size_bytes", hi,
                     "scan of %s (%s) in one task: within scan_tasks_max_size_bytes %s",
                     src->display, fmt_bytes(size, a, sizeof(a)), fmt_bytes(hi, b, sizeof(b)));
    if (p->remote_workers)
        plan__decide(p, NULL, 0,
                     "scan of %s on the workers: each reads its own copy when it has the "
                     "coordinator's size and mtime, else by range from the coordinator "
                     "(GET /v1/internal/datasets; worker --data-source); each task answer "
                     "says which",
                     src->display);
    return FR_OK;
}

static int source_stage(struct plan_physical *p, const struct lplan *lp, int *out,
                        struct fr_error *err)
{
    const struct lsource *src = &lp->src;
    int idx = new_stage(p, "scan");
    attribute_optimizer(p, src, idx);
    struct pstage *s = &p->stages[idx];
    s->src = src;
    df_schema_copy(&s->schema, &src->schema);
    *out = idx;
    switch (src->kind) {
    case LSRC_ROWS:
        s->input = PIN_ROWS;
        return FR_OK;
    case LSRC_STORED:
        s->input = PIN_STORED;
        s->ntasks = src->stored.nparts;
        plan__decide(p, NULL, 0, "reuse of dataframe %s: %d materialized partitions, no file read",
                     src->dataframe_id, s->ntasks);
        if (src->ncolumns >= 0) { /* projection push-down: the used columns (no copy) */
            json_t *items = json_array();
            for (int i = 0; i < src->ncolumns; i++) {
                const char *name = src->schema.fields[src->columns[i]].name;
                json_array_append_new(items, json_pack("{ss ss}", "col", name, "name", name));
            }
            json_array_append_new(s->pipeline, json_pack("{so}", "project", items));
        }
        return FR_OK;
    case LSRC_FILE:
        s->input = PIN_FILE;
        return strcmp(src->format, "parquet") == 0 ? plan__parquet_split(p, s, lp, err)
                                                   : split_file(p, s, src, err);
    }
    return FR_OK;
}

static json_t *strings_json(char **v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *schema_json(const struct df_schema *s)
{
    json_t *a = json_array();
    for (int i = 0; i < s->nfields; i++)
        json_array_append_new(
            a, json_pack("[ss]", s->fields[i].name, df_type_name(s->fields[i].type)));
    return a;
}

static void pipe(struct plan_physical *p, int idx, json_t *op /* steals */)
{
    json_array_append_new(p->stages[idx].pipeline, op);
}

static json_t *project_json(const struct lop *op)
{
    json_t *items = json_array();
    for (int i = 0; i < op->nitems; i++) {
        const struct lproj_item *it = &op->items[i];
        if (it->col)
            json_array_append_new(items, json_pack("{ss ss}", "col", it->col, "name", it->name));
        else
            json_array_append_new(items, json_pack("{ss ss}", "expr", it->expr, "name", it->name));
    }
    return json_pack("{so}", "project", items);
}

static json_t *sort_keys_json(const struct lop *op)
{
    json_t *keys = json_array();
    for (int i = 0; i < op->nkeys; i++)
        json_array_append_new(keys, json_pack("{ss sb si}", "col", op->keys[i], "desc", op->desc[i],
                                              "nulls_first", op->nulls_first[i]));
    return keys;
}

static bool only_projects(const struct pstage *s)
{
    size_t i;
    json_t *op;
    json_array_foreach(s->pipeline, i, op) if (!json_object_get(op, "project")) return false;
    return true;
}

static void plan_slice(struct plan_physical *p, int *cur, const struct lop *op)
{
    struct pstage *s = &p->stages[*cur];
    json_t *slice = json_pack("{s{sI sI}}", "slice", "offset", (json_int_t)op->offset, "limit",
                              (json_int_t)op->limit);
    int64_t need = -1; /* rows each task must keep; saturates instead of overflowing */
    if (op->limit >= 0)
        need = op->offset > INT64_MAX - op->limit ? INT64_MAX : op->offset + op->limit;
    if (s->input == PIN_FILE && s->ntasks == 1 && need >= 0 && only_projects(s))
        s->max_rows = need;
    if (s->ntasks == 1) {
        pipe(p, *cur, slice);
        return;
    }
    if (need >= 0) {
        pipe(p, *cur,
             json_pack("{s{sI sI}}", "slice", "offset", (json_int_t)0, "limit", (json_int_t)need));
        s->limit_rows = need;
        if (s->input == PIN_FILE && only_projects(s))
            s->max_rows = need;
        plan__decide(p, NULL, 0,
                     "limit %lld pushed into each of %d tasks; later tasks are "
                     "skipped once enough rows are found",
                     (long long)need, s->ntasks);
    }
    close_stage(p, *cur);
    int g = new_stage(p, "gather");
    add_slot(p, g, *cur, PLAN_SLOT_ALL);
    p->stages[g].core = json_pack("{ss}", "op", "concat");
    pipe(p, g, slice);
    *cur = g;
}

static void plan_sort(struct plan_physical *p, int *cur, const struct lop *op)
{
    if (p->stages[*cur].ntasks == 1) {
        pipe(p, *cur, json_pack("{so}", "sort", sort_keys_json(op)));
        return;
    }
    int nparts = (int)p->cfg.shuffle_partitions;
    struct pstage *a = &p->stages[*cur];
    a->sink = json_pack("{ss so sI}", "op", "sort_sample", "keys", sort_keys_json(op), "sample",
                        (json_int_t)p->cfg.sample_size_for_sort);
    a->nbuckets = 2;
    int ntasks = a->ntasks; /* new_stage may move the stages array */
    close_stage(p, *cur);
    int b = new_stage(p, "range_partition");
    p->stages[b].ntasks = ntasks;
    add_slot(p, b, *cur, PLAN_SLOT_ONE);
    p->stages[b].needs_boundaries = true;
    p->stages[b].sink = json_pack("{ss so si}", "op", "range_partition", "keys", sort_keys_json(op),
                                  "buckets", nparts);
    p->stages[b].nbuckets = nparts;
    close_stage(p, b);
    int c = new_stage(p, "sort_merge");
    p->stages[c].ntasks = nparts;
    add_slot(p, c, b, PLAN_SLOT_BUCKET);
    p->stages[c].core = json_pack("{ss so}", "op", "merge", "keys", sort_keys_json(op));
    plan__decide(p, "sample_size_for_sort", p->cfg.sample_size_for_sort,
                 "sort: each of %d partitions sorted, %lld keys sampled per partition "
                 "(sample_size_for_sort) to cut %d ranges (shuffle_partitions), then merged",
                 ntasks, (long long)p->cfg.sample_size_for_sort, nparts);
    *cur = c;
}

static void plan_agg(struct plan_physical *p, int *cur, const struct lop *op,
                     const struct df_schema *in)
{
    /* a preview groups a few rows: one final partition, no split of the
     * partials into shuffle_partitions parts */
    int nparts = 1;
    if (op->nkeys > 0 && !p->cfg.maintain_order && p->preview_rows <= 0)
        nparts = (int)p->cfg.shuffle_partitions;
    struct pstage *s = &p->stages[*cur];
    s->sink =
        json_pack("{ss so so si}", "op", "partial_agg", "keys", strings_json(op->keys, op->nkeys),
                  "aggs", strings_json(op->aggs, op->naggs), "buckets", nparts);
    s->nbuckets = nparts;
    close_stage(p, *cur);
    int f = new_stage(p, "final_agg"); /* the decisions are about its partitions */
    if (op->nkeys > 0 && p->cfg.maintain_order)
        plan__decide(p, "maintain_order", 1,
                     "aggregation: final phase in 1 partition to keep groups in order of first "
                     "appearance (maintain_order true)");
    else if (op->nkeys > 0 && nparts == 1)
        plan__decide(p, NULL, 0, "preview: aggregation in 1 final partition");
    else if (op->nkeys > 0)
        plan__decide(p, "shuffle_partitions", nparts,
                     "aggregation: partial per task, then hash-repartitioned into %d partitions "
                     "(shuffle_partitions) for the final phase",
                     nparts);
    p->stages[f].ntasks = nparts;
    add_slot(p, f, *cur, nparts > 1 ? PLAN_SLOT_BUCKET : PLAN_SLOT_ALL);
    p->stages[f].core =
        json_pack("{ss so so so}", "op", "agg_final", "keys", strings_json(op->keys, op->nkeys),
                  "aggs", strings_json(op->aggs, op->naggs), "input_schema", schema_json(in));
    if (op->nitems) /* distinct: back to the input's column order */
        pipe(p, f, project_json(op));
    *cur = f;
}

static int build_chain(struct plan_physical *p, const struct lplan *lp, int *cur,
                       struct fr_error *err);

/* top_k: sort by (by..., sort...) and keep k rows per group; first within
 * each task (so little crosses the shuffle), then again after hash
 * partitioning on `by`, then once more in one task over the partitions'
 * (small) outputs, which puts the groups in `by` order across partitions
 * (each group lives in one partition, so its rows keep their order). */
static void plan_topk(struct plan_physical *p, int *cur, const struct lop *op)
{
    json_t *keys = sort_keys_json(op);
    json_t *step = json_pack("[{s{so sO sI}}]", "top_k", "by", strings_json(op->by, op->nby),
                             "sort", keys, "k", (json_int_t)op->limit);
    /* a top_k whose output a later one groups again need not order its
     * groups (a sort of up to all its rows) */
    json_t *partial = json_deep_copy(step);
    json_object_set_new(json_object_get(json_array_get(partial, 0), "top_k"), "order_groups",
                        json_false());
    bool more = p->stages[*cur].ntasks > 1;
    json_array_extend(p->stages[*cur].pipeline, more ? partial : step);
    if (more && op->nby > 0) {
        int nparts = (int)p->cfg.shuffle_partitions;
        p->stages[*cur].sink = json_pack("{ss so si}", "op", "hash_partition", "keys",
                                         strings_json(op->by, op->nby), "buckets", nparts);
        p->stages[*cur].nbuckets = nparts;
        close_stage(p, *cur);
        int f = new_stage(p, "top_k");
        p->stages[f].ntasks = nparts;
        add_slot(p, f, *cur, PLAN_SLOT_BUCKET);
        json_array_extend(p->stages[f].pipeline, nparts > 1 ? partial : step);
        plan__decide(p, "shuffle_partitions", nparts,
                     "top_k: %lld rows per group kept in each task, then hash-repartitioned "
                     "into %d partitions (shuffle_partitions) by the group columns, then "
                     "gathered in one task that orders the groups",
                     (long long)op->limit, nparts);
        *cur = f;
        if (nparts > 1) {
            close_stage(p, f);
            int g = new_stage(p, "top_k");
            add_slot(p, g, f, PLAN_SLOT_ALL);
            json_array_extend(p->stages[g].pipeline, step);
            *cur = g;
        }
    } else if (more) {
        close_stage(p, *cur);
        int g = new_stage(p, "top_k");
        add_slot(p, g, *cur, PLAN_SLOT_ALL);
        json_array_extend(p->stages[g].pipeline, step);
        *cur = g;
    }
    json_decref(keys);
    json_decref(step);
    json_decref(partial);
}

/* window: the rows of one partition must meet in one task: hash-partitioned
 * by the partition keys into shuffle_partitions tasks, or gathered into one
 * task when there are none; each task sorts and computes (df_window). */
static void plan_window(struct plan_physical *p, int *cur, const struct lop *op)
{
    json_t *step = plan__window_step(op);
    if (p->stages[*cur].ntasks == 1) {
        pipe(p, *cur, step);
        return;
    }
    int nparts = op->nby > 0 ? (int)p->cfg.shuffle_partitions : 1, ntasks = p->stages[*cur].ntasks;
    if (op->nby > 0) {
        p->stages[*cur].sink = json_pack("{ss so si}", "op", "hash_partition", "keys",
                                         strings_json(op->by, op->nby), "buckets", nparts);
        p->stages[*cur].nbuckets = nparts;
    }
    close_stage(p, *cur);
    int w = new_stage(p, "window");
    p->stages[w].ntasks = nparts;
    add_slot(p, w, *cur, op->nby > 0 ? PLAN_SLOT_BUCKET : PLAN_SLOT_ALL);
    if (op->nby == 0)
        p->stages[w].core = json_pack("{ss}", "op", "concat");
    pipe(p, w, step);
    if (op->nby > 0)
        plan__decide(p, "shuffle_partitions", nparts,
                     "window: the %d tasks' rows hash-repartitioned by the partition keys into "
                     "%d partitions (shuffle_partitions), each sorted and computed in one task",
                     ntasks, nparts);
    else
        plan__decide(p, NULL, 0,
                     "window without partition_by: the %d tasks' rows gathered into one task "
                     "(one partition)",
                     ntasks);
    *cur = w;
}

static int plan_join(struct plan_physical *p, int *cur, const struct lop *op, struct fr_error *err)
{
    int r;
    int rc = build_chain(p, op->right, &r, err);
    if (rc != FR_OK)
        return rc;
    int64_t rbytes = op->right->src.bytes, limit = p->cfg.broadcast_join_size_bytes_threshold;
    bool can = op->how == DF_JOIN_INNER || op->how == DF_JOIN_LEFT || op->how == DF_JOIN_SEMI ||
               op->how == DF_JOIN_ANTI;
    char a[32], b[32];
    const char *how = json_string_value(json_object_get(json_object_get(op->orig, "join"), "how"));
    json_t *core = json_pack("{ss so so ss sb ss}", "op", "join", "left_on",
                             strings_json(op->left_on, op->nkeys), "right_on",
                             strings_json(op->right_on, op->nkeys), "how", how ? how : "inner",
                             "merge_keys", op->merge_keys, "suffix", op->suffix);
    int j = new_stage(p, "join");
    if (can && rbytes < limit) {
        plan__decide(p, "broadcast_join_size_bytes_threshold", limit,
                     "broadcast join: right side %s < broadcast_join_size_bytes_threshold %s",
                     fmt_bytes(rbytes, a, sizeof(a)), fmt_bytes(limit, b, sizeof(b)));
        close_stage(p, *cur);
        close_stage(p, r);
        p->stages[j].ntasks = p->stages[*cur].ntasks;
        add_slot(p, j, *cur, PLAN_SLOT_ONE);
        add_slot(p, j, r, PLAN_SLOT_ALL);
    } else {
        int nparts = (int)p->cfg.shuffle_partitions;
        plan__decide(p, "shuffle_partitions", nparts,
                     "shuffle hash join into %d partitions (shuffle_partitions): %s", nparts,
                     can ? "right side not under broadcast_join_size_bytes_threshold"
                         : "a right/outer join keeps unmatched right rows, so it cannot broadcast");
        p->stages[*cur].sink = json_pack("{ss so si}", "op", "hash_partition", "keys",
                                         strings_json(op->left_on, op->nkeys), "buckets", nparts);
        p->stages[r].sink = json_pack("{ss so si}", "op", "hash_partition", "keys",
                                      strings_json(op->right_on, op->nkeys), "buckets", nparts);
        p->stages[*cur].nbuckets = p->stages[r].nbuckets = nparts;
        close_stage(p, *cur);
        close_stage(p, r);
        p->stages[j].ntasks = nparts;
        add_slot(p, j, *cur, PLAN_SLOT_BUCKET);
        add_slot(p, j, r, PLAN_SLOT_BUCKET);
    }
    p->stages[j].core = core;
    *cur = j;
    return FR_OK;
}

static int plan_union(struct plan_physical *p, int *cur, const struct lop *op, struct fr_error *err)
{
    int o;
    int rc = build_chain(p, op->right, &o, err);
    if (rc != FR_OK)
        return rc;
    close_stage(p, *cur);
    close_stage(p, o);
    int u = new_stage(p, "union");
    add_slot(p, u, *cur, PLAN_SLOT_ALL);
    add_slot(p, u, o, PLAN_SLOT_ALL);
    p->stages[u].core = json_pack("{ss}", "op", "union");
    *cur = u;
    return FR_OK;
}

static int build_chain(struct plan_physical *p, const struct lplan *lp, int *cur,
                       struct fr_error *err)
{
    int rc = source_stage(p, lp, cur, err);
    for (int i = 0; i < lp->nops && rc == FR_OK; i++) {
        const struct lop *op = &lp->ops[i];
        const struct df_schema *in = i ? &lp->ops[i - 1].schema : &lp->src.schema;
        switch (op->kind) {
        case LOP_FILTER:
            pipe(p, *cur, json_pack("{ss}", "filter", op->expr));
            break;
        case LOP_PROJECT:
            pipe(p, *cur, project_json(op));
            break;
        case LOP_SLICE:
            plan_slice(p, cur, op);
            break;
        case LOP_SORT:
            plan_sort(p, cur, op);
            break;
        case LOP_AGG:
            plan_agg(p, cur, op, in);
            break;
        case LOP_JOIN:
            rc = plan_join(p, cur, op, err);
            break;
        case LOP_UNION:
            rc = plan_union(p, cur, op, err);
            break;
        case LOP_TOPK:
            plan_topk(p, cur, op);
            break;
        case LOP_WINDOW:
            plan_window(p, cur, op);
            break;
        }
        if (rc == FR_OK) {
            df_schema_cleanup(&p->stages[*cur].schema);
            df_schema_copy(&p->stages[*cur].schema, &op->schema);
        }
    }
    return rc;
}

void plan_options_from_cfg(const struct cfg *c, struct df_options *out)
{
    memset(out, 0, sizeof(*out));
    out->morsel_size_rows = c->morsel_size_rows;
    out->maintain_order = c->maintain_order;
    out->nulls_first = c->nulls_first;
    out->csv_null_values = (const char *const *)c->csv_null_values.items;
    out->n_csv_null_values = c->csv_null_values.n;
    out->task_memory_limit_bytes = c->task_memory_limit_bytes;
}

int plan_build(json_t *plan, const struct cfg *cfg, const struct plan_env *env, int64_t limit_rows,
               plan_physical **out, struct fr_error *err)
{
    *out = NULL;
    struct plan_physical *p = fr_xcalloc(1, sizeof(*p));
    cfg_copy(&p->cfg, cfg);
    plan__data_dir_set(p, env->data_dir);
    p->remote_workers = env->remote_workers;
    df_schema_init(&p->schema);
    struct df_options opts;
    plan_options_from_cfg(&p->cfg, &opts);
    int rc = plan__parse(plan, env, &opts, 0, &p->logical, err);
    if (rc != FR_OK)
        goto out;
    p->logical_json = plan__lplan_json(p->logical);
    p->preview_rows = env->preview_scan_rows;
    if (p->preview_rows > 0) {
        plan__preview_shape(p, p->logical);
        if (!p->preview_shape)
            plan__preview_heads(p->logical, p->preview_rows, 0);
    }
    if (limit_rows >= 0) {
        struct lplan *lp = p->logical;
        lp->ops = fr_xrealloc(lp->ops, sizeof(struct lop) * (size_t)(lp->nops + 1));
        struct lop *op = &lp->ops[lp->nops];
        memset(op, 0, sizeof(*op));
        op->kind = LOP_SLICE;
        op->limit = limit_rows;
        op->orig = json_pack("{sI}", "limit", (json_int_t)limit_rows);
        df_schema_copy(&op->schema, plan__lplan_schema(lp));
        lp->nops++;
    }
    plan__optimize(p->logical, p);
    int cur;
    rc = build_chain(p, p->logical, &cur, err);
    plan__parquet_close_all(p->logical); /* the tasks name what they read */
    if (rc == FR_OK)
        df_schema_copy(&p->schema, plan__lplan_schema(p->logical));
out:
    if (rc != FR_OK)
        plan_physical_free(p);
    else
        *out = p;
    return rc;
}

int plan_schema(json_t *plan, const struct cfg *cfg, const struct plan_env *env,
                struct df_schema *out, struct fr_error *err)
{
    df_schema_init(out);
    struct df_options opts;
    plan_options_from_cfg(cfg, &opts);
    struct lplan *lp = NULL;
    int rc = plan__parse(plan, env, &opts, 0, &lp, err);
    if (rc == FR_OK)
        df_schema_copy(out, plan__lplan_schema(lp));
    if (lp) {
        plan__parquet_close_all(lp);
        plan__lplan_free(lp);
    }
    return rc;
}

void plan_physical_free(plan_physical *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nstages; i++) {
        struct pstage *s = &p->stages[i];
        free(s->label);
        free(s->ranges);
        free(s->rg_tasks);
        json_decref(s->core);
        json_decref(s->pipeline);
        json_decref(s->sink);
        df_schema_cleanup(&s->schema);
    }
    free(p->stages);
    for (int i = 0; i < p->ndecisions; i++) {
        free(p->decisions[i].decision);
        free(p->decisions[i].reason);
    }
    free(p->decisions);
    plan__lplan_free(p->logical);
    json_decref(p->logical_json);
    free(p->data_dir);
    free(p->data_dir_real);
    df_schema_cleanup(&p->schema);
    cfg_cleanup(&p->cfg);
    free(p);
}

const struct df_schema *plan_physical_schema(const plan_physical *p)
{
    return &p->schema;
}

int plan_physical_nstages(const plan_physical *p)
{
    return p->nstages;
}

void plan_stage_view(const plan_physical *p, int stage, struct plan_stage_view *out)
{
    const struct pstage *s = &p->stages[stage];
    out->ntasks = s->ntasks;
    out->nbuckets = s->nbuckets;
    out->nslots = s->nslots;
    out->slots = s->slots;
    out->limit_rows = s->limit_rows;
    out->needs_boundaries = s->needs_boundaries;
    out->stored_parts =
        s->input == PIN_STORED ? (const char *const *)s->src->stored.part_ids : NULL;
}
