/* plan_exec: the parts of a task around its pipeline: reading the input,
 * the core op over earlier outputs (concat, union, final aggregation, join,
 * sorted merge) and the sink that shapes the outputs (partial aggregation,
 * hash or range partitioning, sort with samples). */
#include "plan_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A spec whose op needs inputs that the task was not given: the sender's
 * mistake (400 invalid-task), not ours. */
static int no_inputs(struct fr_error *err, const char *what)
{
    fr_error_setk(err, FR_EINVAL, "invalid-task", "%s", what);
    return FR_EINVAL;
}

static int concat_slot(struct df_table *const *tables, int n, struct df_table **out,
                       struct fr_error *err)
{
    if (n <= 0)
        return no_inputs(err, "a task has no input tables");
    return df_table_concat(tables, n, out, err);
}

static int read_input(json_t *in, struct plan_io *io, struct df_table **const *inputs,
                      const int *ninputs, struct df_exec *ex, struct df_table **out,
                      struct fr_error *err)
{
    const char *kind = json_string_value(json_object_get(in, "kind"));
    if (!kind)
        return fr_error_set(err, FR_EINVAL, "malformed task spec: no input kind");
    if (strcmp(kind, "file") == 0)
        return plan__read_file(in, io, ex, out, err);
    if (strcmp(kind, "rows") == 0) {
        struct df_schema hints;
        plan__schema_from_json(json_object_get(in, "hints"), &hints, err);
        int rc = df_rows_read(json_object_get(in, "rows"), hints.nfields ? &hints : NULL, out, err);
        df_schema_cleanup(&hints);
        return rc;
    }
    if (strcmp(kind, "stored") == 0)
        return concat_slot(inputs[0], ninputs[0], out, err);
    return FR_OK; /* slots: the core reads them */
}

/* The aggregation items of a spec parsed against a schema, and the flat
 * list of their calls as engine specs over [keys..., args...]. */
struct agg_plan {
    int nkeys, nitems, nspecs;
    struct df_agg_item *items;
    struct df_agg_spec *specs;
    df_type *arg_types;
    char **names;
};

static void agg_plan_cleanup(struct agg_plan *a)
{
    for (int i = 0; i < a->nitems; i++)
        df_agg_item_cleanup(&a->items[i]);
    for (int i = 0; i < a->nspecs; i++)
        free(a->names[i]);
    free(a->items);
    free(a->specs);
    free(a->arg_types);
    free(a->names);
}

static int agg_plan_init(json_t *aggs, int nkeys, const struct df_schema *s, struct agg_plan *a,
                         struct fr_error *err)
{
    memset(a, 0, sizeof(*a));
    a->nkeys = nkeys;
    a->nitems = (int)json_array_size(aggs);
    a->items = fr_xcalloc((size_t)a->nitems + 1, sizeof(*a->items));
    int ncalls = 0;
    for (int i = 0; i < a->nitems; i++) {
        int rc = df_agg_item_parse(json_string_value(json_array_get(aggs, (size_t)i)), s,
                                   &a->items[i], err);
        if (rc != FR_OK)
            return rc;
        ncalls += a->items[i].ncalls;
    }
    a->specs = fr_xcalloc((size_t)ncalls + 1, sizeof(*a->specs));
    a->arg_types = fr_xcalloc((size_t)ncalls + 1, sizeof(df_type));
    a->names = fr_xcalloc((size_t)ncalls + 1, sizeof(char *));
    int col = nkeys;
    for (int i = 0; i < a->nitems; i++) {
        for (int c = 0; c < a->items[i].ncalls; c++) {
            struct df_agg_call *call = &a->items[i].calls[c];
            struct df_agg_spec *sp = &a->specs[a->nspecs];
            sp->func = call->func;
            sp->arg = call->arg ? col++ : -1;
            sp->arg2 = call->arg2 ? col++ : -1;
            a->arg_types[a->nspecs] = call->arg ? df_expr_type(call->arg) : DF_TYPE_INT64;
            a->names[a->nspecs] = fr_xasprintf("__s%d", a->nspecs);
            a->nspecs++;
        }
    }
    return FR_OK;
}

static int eval_into(const char *text, const df_expr *bound, const struct df_table *t,
                     struct df_exec *ex, struct df_table *dst, const char *name,
                     struct fr_error *err)
{
    struct df_column *c = NULL;
    df_expr *e = NULL;
    int rc = FR_OK;
    if (!bound) {
        struct df_schema s;
        df_schema_of_table(&s, t);
        rc = df_expr_parse(text, &s, &e, err);
        df_schema_cleanup(&s);
        bound = e;
    }
    if (rc == FR_OK) {
        struct df_table one = *t;
        (void)one;
        int idx = df_expr_column_index(bound);
        if (idx >= 0)
            c = df_column_ref(t->cols[idx]);
        else
            rc = df_expr_eval(bound, t, 0, t->nrows, ex, &c, err);
    }
    if (rc == FR_OK)
        df_table_add(dst, name ? name : df_expr_name(bound), c);
    df_expr_free(e);
    return rc;
}

/* Evaluates keys and call arguments into [keys..., args...]. */
static int agg_inputs(json_t *keys, const struct agg_plan *a, const struct df_table *t,
                      struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    struct df_table *in = df_table_new();
    int rc = FR_OK;
    for (int i = 0; i < a->nkeys && rc == FR_OK; i++)
        rc = eval_into(json_string_value(json_array_get(keys, (size_t)i)), NULL, t, ex, in, NULL,
                       err);
    int n = 0;
    for (int i = 0; i < a->nitems && rc == FR_OK; i++) {
        for (int c = 0; c < a->items[i].ncalls && rc == FR_OK; c++) {
            const struct df_agg_call *call = &a->items[i].calls[c];
            char name[32];
            if (call->arg) {
                snprintf(name, sizeof(name), "__a%d", n++);
                rc = eval_into(NULL, call->arg, t, ex, in, name, err);
            }
            if (call->arg2 && rc == FR_OK) {
                snprintf(name, sizeof(name), "__a%d", n++);
                rc = eval_into(NULL, call->arg2, t, ex, in, name, err);
            }
        }
    }
    in->nrows = t->nrows;
    if (rc != FR_OK) {
        df_table_free(in);
        return rc;
    }
    *out = in;
    return FR_OK;
}

static int sink_partial_agg(json_t *sink, struct df_table *t, struct df_exec *ex,
                            struct df_table ***outs, int *nouts, struct fr_error *err)
{
    json_t *keys = json_object_get(sink, "keys");
    int nkeys = (int)json_array_size(keys),
        buckets = (int)json_integer_value(json_object_get(sink, "buckets"));
    struct df_schema s;
    df_schema_of_table(&s, t);
    struct agg_plan a;
    struct df_table *in = NULL;
    int rc = agg_plan_init(json_object_get(sink, "aggs"), nkeys, &s, &a, err);
    if (rc == FR_OK)
        rc = agg_inputs(keys, &a, t, ex, &in, err);
    int *kidx = fr_xcalloc((size_t)nkeys + 1, sizeof(int));
    for (int i = 0; i < nkeys; i++)
        kidx[i] = i;
    if (buckets < 1)
        buckets = 1;
    if (rc == FR_OK) {
        *outs = fr_xcalloc((size_t)buckets, sizeof(struct df_table *));
        *nouts = buckets;
        rc = df_agg_partial_split(in, kidx, nkeys, a.specs, a.nspecs, ex, buckets, *outs, err);
    }
    free(kidx);
    df_table_free(in);
    agg_plan_cleanup(&a);
    df_schema_cleanup(&s);
    return rc;
}

/* The engine names an overflowing sum by its state name (__s<k>): the
 * message names the aggregate as the plan wrote it instead. */
static void name_overflow(json_t *aggs, const struct agg_plan *a, struct fr_error *err)
{
    int k = 0;
    for (int i = 0; i < a->nitems; i++) {
        for (int c = 0; c < a->items[i].ncalls; c++, k++) {
            char quoted[40];
            snprintf(quoted, sizeof(quoted), "'%s'", a->names[k]);
            if (!strstr(err->message, quoted))
                continue;
            fr_error_setk(err, FR_EDATA, "arithmetic-overflow",
                          "the aggregate '%s' sums an int64 column past int64's range; cast to "
                          "double to sum past int64",
                          json_string_value(json_array_get(aggs, (size_t)i)));
            return;
        }
    }
}

static int core_agg_final(json_t *core, struct df_table *const *in, int n, struct df_exec *ex,
                          struct df_table **out, struct fr_error *err)
{
    json_t *keys = json_object_get(core, "keys");
    int nkeys = (int)json_array_size(keys);
    struct df_schema s;
    int rc = plan__schema_from_json(json_object_get(core, "input_schema"), &s, err);
    if (rc != FR_OK)
        return rc;
    struct agg_plan a;
    struct df_table *merged = NULL, *res = NULL;
    rc = agg_plan_init(json_object_get(core, "aggs"), nkeys, &s, &a, err);
    if (rc == FR_OK)
        rc = df_agg_final(in, n, nkeys, a.specs, a.nspecs, a.arg_types,
                          (const char *const *)a.names, ex, &merged, err);
    if (rc != FR_OK && strcmp(err->kind, "arithmetic-overflow") == 0)
        name_overflow(json_object_get(core, "aggs"), &a, err);
    if (rc == FR_OK) {
        res = df_table_new();
        for (int i = 0; i < nkeys; i++)
            df_table_add(res, merged->names[i], df_column_ref(merged->cols[i]));
        int spec = nkeys;
        for (int i = 0; i < a.nitems && rc == FR_OK; i++) {
            struct df_table *calls = df_table_new();
            for (int c = 0; c < a.items[i].ncalls; c++) {
                char name[32];
                snprintf(name, sizeof(name), "__agg%d", c);
                df_table_add(calls, name, df_column_ref(merged->cols[spec++]));
            }
            calls->nrows = merged->nrows;
            rc = eval_into(NULL, a.items[i].post, calls, ex, res, a.items[i].name, err);
            df_table_free(calls);
        }
        res->nrows = merged->nrows;
    }
    if (rc == FR_OK)
        *out = res;
    else
        df_table_free(res);
    df_table_free(merged);
    agg_plan_cleanup(&a);
    df_schema_cleanup(&s);
    return rc;
}

static int key_indices(json_t *names, const struct df_table *t, int *out, struct fr_error *err)
{
    for (size_t i = 0; i < json_array_size(names); i++) {
        const char *name = json_string_value(json_array_get(names, i));
        out[i] = name ? df_table_find(t, name) : -1;
        if (out[i] < 0)
            return fr_error_set(err, FR_EINVAL, "no key column '%s'", name ? name : "?");
    }
    return FR_OK;
}

static int core_join(json_t *core, struct df_table *const *const *in, const int *n,
                     struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    struct df_table *l = NULL, *r = NULL;
    json_t *lon = json_object_get(core, "left_on"), *ron = json_object_get(core, "right_on");
    int nkeys = (int)json_array_size(lon);
    if (!json_is_array(lon) || json_array_size(ron) != (size_t)nkeys)
        return fr_error_set(err, FR_EINVAL, "malformed task spec: join keys of unequal length");
    int *lk = fr_xcalloc((size_t)nkeys + 1, sizeof(int)),
        *rk = fr_xcalloc((size_t)nkeys + 1, sizeof(int));
    enum df_join_how how;
    int rc = df_join_how_parse(json_string_value(json_object_get(core, "how")), &how);
    if (rc != FR_OK)
        rc = fr_error_set(err, FR_EINVAL, "malformed task spec: join how");
    /* The key arrays are sized by left_on: right_on must match it. */
    if (rc == FR_OK && (!json_is_array(lon) || !json_is_array(ron) || nkeys == 0 ||
                        nkeys > FR_MAX_COLUMNS || json_array_size(ron) != (size_t)nkeys))
        rc = fr_error_set(err, FR_EINVAL,
                          "malformed task spec: join keys (left_on and right_on: arrays of one "
                          "name per key, as many on each side)");
    if (rc == FR_OK)
        rc = concat_slot(in[0], n[0], &l, err);
    if (rc == FR_OK)
        rc = concat_slot(in[1], n[1], &r, err);
    if (rc == FR_OK)
        rc = key_indices(lon, l, lk, err);
    if (rc == FR_OK)
        rc = key_indices(ron, r, rk, err);
    if (rc == FR_OK)
        rc = df_join(l, r, lk, rk, nkeys, how, json_is_true(json_object_get(core, "merge_keys")),
                     json_string_value(json_object_get(core, "suffix")), ex, out, err);
    free(lk);
    free(rk);
    df_table_free(l);
    df_table_free(r);
    return rc;
}

/* new: an int64 column as float64 (union widening). */
static struct df_column *to_float64(const struct df_column *c)
{
    struct df_column *f = df_column_new(DF_TYPE_FLOAT64, c->length);
    for (int64_t i = 0; i < c->length; i++) {
        if (df_column_is_valid(c, i))
            df_column_append_float64(f, (double)df_column_int64(c, i));
        else
            df_column_append_null(f);
    }
    return f;
}

static void widen(struct df_table *t, int col)
{
    if (t->cols[col]->type != DF_TYPE_INT64)
        return;
    struct df_column *f = to_float64(t->cols[col]);
    df_column_unref(t->cols[col]);
    t->cols[col] = f;
}

static int core_union(struct df_table *const *const *in, const int *n, struct df_table **out,
                      struct fr_error *err)
{
    struct df_table *a = NULL, *b = NULL;
    int rc = concat_slot(in[0], n[0], &a, err);
    if (rc == FR_OK)
        rc = concat_slot(in[1], n[1], &b, err);
    if (rc == FR_OK && a->ncols == b->ncols) {
        for (int i = 0; i < b->ncols; i++) { /* union is by position: take the left's names */
            free(b->names[i]);
            b->names[i] = fr_xstrdup(a->names[i]);
            if (a->cols[i]->type != b->cols[i]->type) { /* int64 with float64: float64 */
                widen(a, i);
                widen(b, i);
            }
        }
        struct df_table *both[2] = {a, b};
        rc = df_table_concat(both, 2, out, err);
    } else if (rc == FR_OK) {
        rc = fr_error_set(err, FR_EINVAL, "union of tables with different column counts");
    }
    df_table_free(a);
    df_table_free(b);
    return rc;
}

/* The rows a pipeline that starts with a slice keeps of its input (offset
 * + limit, saturated), or -1 when it may keep them all. */
static int64_t pipeline_need(json_t *pipeline)
{
    json_t *first = json_array_get(pipeline, 0);
    if (json_object_size(first) != 1) /* an op with more keys runs as another op */
        return -1;
    json_t *slice = json_object_get(first, "slice");
    json_t *lim = json_object_get(slice, "limit"), *off = json_object_get(slice, "offset");
    if (!json_is_integer(lim) || !json_is_integer(off) || json_integer_value(lim) < 0 ||
        json_integer_value(off) < 0)
        return -1;
    int64_t l = json_integer_value(lim), o = json_integer_value(off);
    return o > INT64_MAX - l ? INT64_MAX : o + l;
}

static int run_core(json_t *core, json_t *pipeline, struct df_table **const *in, const int *n,
                    struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    const char *op = json_string_value(json_object_get(core, "op"));
    if (!op || strcmp(op, "concat") == 0) {
        /* a gather before a limit: the leading inputs that hold the rows
         * it keeps are enough (the inputs come in task order) */
        int64_t need = pipeline_need(pipeline), have = 0;
        int k = 0;
        while (need >= 0 && k < n[0] && (have < need || k == 0))
            have += in[0][k++]->nrows;
        return concat_slot(in[0], k > 0 ? k : n[0], out, err);
    }
    if (strcmp(op, "agg_final") == 0)
        return core_agg_final(core, in[0], n[0], ex, out, err);
    if (strcmp(op, "join") == 0)
        return core_join(core, (struct df_table *const *const *)in, n, ex, out, err);
    if (strcmp(op, "union") == 0)
        return core_union((struct df_table *const *const *)in, n, out, err);
    if (strcmp(op, "merge") == 0) {
        struct df_sort_key *keys = NULL;
        int nk = 0;
        if (n[0] <= 0)
            return no_inputs(err, "a merge task has no input");
        int rc = plan__sort_keys_json(json_object_get(core, "keys"), in[0][0],
                                      ex->opts->nulls_first, &keys, &nk, err);
        if (rc == FR_OK)
            rc = df_sort_merge(in[0], n[0], keys, nk, ex, out, err);
        free(keys);
        return rc;
    }
    return fr_error_set(err, FR_EINVAL, "malformed task spec: unknown core op '%s'", op);
}

int plan__run_sink(json_t *sink, struct df_table *t, struct df_exec *ex, struct df_table ***outs,
                   int *nouts, struct fr_error *err)
{
    const char *op = json_string_value(json_object_get(sink, "op"));
    *outs = NULL;
    *nouts = 0;
    if (!op) {
        *outs = fr_xcalloc(1, sizeof(struct df_table *));
        (*outs)[0] = t;
        *nouts = 1;
        return FR_OK;
    }
    int rc = FR_OK;
    if (strcmp(op, "partial_agg") == 0) {
        rc = sink_partial_agg(sink, t, ex, outs, nouts, err);
        df_table_free(t);
        return rc;
    }
    int buckets = (int)json_integer_value(json_object_get(sink, "buckets"));
    if (strcmp(op, "hash_partition") == 0) {
        json_t *keys = json_object_get(sink, "keys");
        int *k = fr_xcalloc(json_array_size(keys) + 1, sizeof(int));
        rc = key_indices(keys, t, k, err);
        if (rc == FR_OK) {
            *outs = fr_xcalloc((size_t)buckets, sizeof(struct df_table *));
            *nouts = buckets;
            rc = df_hash_partition(t, k, (int)json_array_size(keys), buckets, *outs, err);
        }
        free(k);
        df_table_free(t);
        return rc;
    }
    struct df_sort_key *keys = NULL;
    int nk = 0;
    rc = plan__sort_keys_json(json_object_get(sink, "keys"), t, ex->opts->nulls_first, &keys, &nk,
                              err);
    if (rc == FR_OK && strcmp(op, "sort_sample") == 0) {
        struct df_table *sorted = NULL;
        rc = df_sort(t, keys, nk, ex, &sorted, err);
        if (rc == FR_OK) {
            *outs = fr_xcalloc(2, sizeof(struct df_table *));
            (*outs)[0] = sorted;
            (*outs)[1] = df_sort_sample(sorted, keys, nk,
                                        json_integer_value(json_object_get(sink, "sample")));
            *nouts = 2;
        }
    } else if (rc == FR_OK && strcmp(op, "range_partition") == 0) {
        struct df_table *bounds = NULL;
        rc = plan__table_from_json(json_object_get(sink, "boundaries"), &bounds, err);
        if (rc == FR_OK) {
            *outs = fr_xcalloc((size_t)buckets, sizeof(struct df_table *));
            *nouts = buckets;
            rc = df_range_partition(t, keys, nk, bounds, buckets, *outs, err);
        }
        df_table_free(bounds);
    } else if (rc == FR_OK) {
        rc = fr_error_set(err, FR_EINVAL, "malformed task spec: unknown sink '%s'", op);
    }
    free(keys);
    df_table_free(t);
    return rc;
}

static void free_outputs(struct df_table **outs, int n)
{
    for (int i = 0; outs && i < n; i++)
        df_table_free(outs[i]);
    free(outs);
}

int plan_task_execute(json_t *spec, const char *data_dir, struct df_table **const *inputs,
                      const int *ninputs, struct df_exec *ex, struct df_table ***outputs,
                      int *noutputs, struct fr_error *err)
{
    struct plan_io io = {.data_dir = data_dir, .mode = PLAN_DATA_LOCAL};
    return plan_task_execute_io(spec, &io, inputs, ninputs, ex, outputs, noutputs, err);
}

int plan_task_execute_io(json_t *spec, struct plan_io *io, struct df_table **const *inputs,
                         const int *ninputs, struct df_exec *ex, struct df_table ***outputs,
                         int *noutputs, struct fr_error *err)
{
    struct df_table *t = NULL;
    *outputs = NULL;
    *noutputs = 0;
    json_t *core = json_object_get(spec, "core"), *sink = json_object_get(spec, "sink");
    int rc = plan_task_check(spec, err);
    if (rc != FR_OK)
        return rc;
    io->rows_read = -1;
    rc = read_input(json_object_get(spec, "input"), io, inputs, ninputs, ex, &t, err);
    if (rc == FR_OK && t)
        io->rows_read = t->nrows;
    if (rc == FR_OK && !t)
        rc = run_core(core, json_object_get(spec, "pipeline"), inputs, ninputs, ex, &t, err);
    if (rc == FR_OK) {
        int64_t max_rows =
            json_integer_value(json_object_get(json_object_get(spec, "input"), "max_rows"));
        if (max_rows > 0 && t->nrows > max_rows) {
            struct df_table *s = df_table_slice(t, 0, max_rows);
            df_table_free(t);
            t = s;
        }
        rc = plan__run_pipeline(json_object_get(spec, "pipeline"), &t, ex, err);
    }
    if (rc != FR_OK) {
        df_table_free(t);
        return rc;
    }
    struct df_table **outs = NULL;
    int nouts = 0;
    rc = plan__run_sink(json_is_object(sink) ? sink : NULL, t, ex, &outs, &nouts, err);
    if (rc != FR_OK) {
        free_outputs(outs, nouts);
        return rc;
    }
    *outputs = outs;
    *noutputs = nouts;
    return FR_OK;
}

int plan_sort_boundaries(const plan_physical *p, int stage, struct df_table *const *samples,
                         int nsamples, const struct df_options *opts, struct df_table **out,
                         struct fr_error *err)
{
    json_t *sink = p->stages[stage].sink;
    struct df_table *all = NULL;
    struct df_sort_key *keys = NULL;
    int nk = 0;
    int rc = concat_slot(samples, nsamples, &all, err);
    if (rc == FR_OK)
        rc = plan__sort_keys_json(json_object_get(sink, "keys"), all, opts->nulls_first, &keys, &nk,
                                  err);
    if (rc == FR_OK) {
        struct df_exec ex;
        df_exec_init(&ex, opts, NULL);
        rc = df_sort_boundaries(all, keys, nk,
                                (int)json_integer_value(json_object_get(sink, "buckets")), &ex, out,
                                err);
    }
    free(keys);
    df_table_free(all);
    return rc;
}
