/* plan_spec: a task's self-contained JSON spec (what the runner ships to a
 * thread or a worker), and small typed tables carried inside specs (sort
 * boundaries) as JSON. */
#include "plan_int.h"

#include <stdlib.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static json_t *schema_pairs(const struct df_schema *s, const int *cols, int ncols)
{
    json_t *a = json_array();
    int n = ncols >= 0 ? ncols : s->nfields;
    for (int i = 0; i < n; i++) {
        const struct df_field *f = &s->fields[ncols >= 0 ? cols[i] : i];
        json_array_append_new(a, json_pack("[ss]", f->name, df_type_name(f->type)));
    }
    return a;
}

void plan__data_dir_set(struct plan_physical *p, const char *data_dir)
{
    char real[PATH_MAX];
    p->data_dir = fr_xstrdup(data_dir ? data_dir : ".");
    p->data_dir_real = realpath(p->data_dir, real) ? fr_xstrdup(real) : NULL;
}

const char *plan_physical_data_dir(const plan_physical *p)
{
    return p->data_dir ? p->data_dir : ".";
}

/* The part of path after dir and '/', or NULL when path is not under dir. */
static const char *under(const char *path, const char *dir)
{
    size_t n = dir ? strlen(dir) : 0;
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 0 || strncmp(path, dir, n) != 0 || path[n] != '/')
        return NULL;
    return path + n + 1;
}

/* A file input names its file relative to the data dir: a worker resolves
 * it inside its own data dir, never as a path of the coordinator's machine.
 * Sources resolve to data_dir/name.ext (datasets) or to a realpath (paths). */
static const char *relative_path(const struct plan_physical *p, const char *path)
{
    const char *rel = under(path, p->data_dir);
    if (!rel)
        rel = under(path, p->data_dir_real);
    return rel ? rel : path; /* cannot happen: sources are checked to be inside */
}

static json_t *file_input(const struct plan_physical *p, const struct pstage *s, int task)
{
    const struct lsource *src = s->src;
    json_t *cols = json_null();
    if (src->ncolumns >= 0) {
        cols = json_array();
        for (int i = 0; i < src->ncolumns; i++)
            json_array_append_new(cols, json_integer(src->columns[i]));
    }
    char delim[2] = {src->delimiter, '\0'}, quote[2] = {src->quote, '\0'};
    bool parquet = strcmp(src->format, "parquet") == 0;
    /* parquet: the range is the byte span of the task's row groups, line 0
     * (reads at offsets), and row_groups says which */
    struct df_byte_range r0 = {0, 0, 0};
    const struct df_byte_range *r = parquet ? &r0 : &s->ranges[task];
    if (parquet) {
        r0.start = s->rg_tasks[task].start;
        r0.end = s->rg_tasks[task].end;
    }
    json_t *in = json_pack(
        "{ss ss ss ss s{ss ss sb sb so} so so s[III] sI}", "kind", "file", "path",
        relative_path(p, src->path), "format", src->format, "display", src->display, "options",
        "delimiter", delim, "quote", quote, "header", src->header, "on_error_null",
        src->on_error_null, "hints", schema_pairs(&src->hints, NULL, -1), "schema",
        schema_pairs(&src->schema, NULL, -1), "columns", cols, "range", (json_int_t)r->start,
        (json_int_t)r->end, (json_int_t)r->line, "max_rows", (json_int_t)s->max_rows);
    /* The file as it was planned (its ranges were cut from this size): a
     * worker reads its own copy only when it has this size and mtime, else
     * the bytes by range from the coordinator, whose ETag must match too, so
     * a file rewritten since the plan fails the task instead of reading other
     * rows (api/internal-protocol.md). */
    if (in && parquet) {
        json_t *groups = plan__parquet_input(s, task);
        json_object_update(in, groups);
        json_decref(groups);
    }
    if (in) {
        json_object_set_new(in, "size", json_integer((json_int_t)src->bytes));
        json_object_set_new(in, "mtime_ns", json_integer((json_int_t)src->mtime_ns));
    }
    return in;
}

json_t *plan_task_spec(const plan_physical *p, int stage, int task,
                       const struct df_table *boundaries)
{
    const struct pstage *s = &p->stages[stage];
    json_t *input;
    switch (s->input) {
    case PIN_FILE:
        input = file_input(p, s, task);
        break;
    case PIN_ROWS:
        input = json_pack("{ss sO so}", "kind", "rows", "rows", s->src->rows, "hints",
                          schema_pairs(&s->src->hints, NULL, -1));
        break;
    case PIN_STORED:
        input = json_pack("{ss}", "kind", "stored");
        break;
    default:
        input = json_pack("{ss si}", "kind", "slots", "nslots", s->nslots);
        break;
    }
    json_t *sink = s->sink ? json_deep_copy(s->sink) : json_null();
    if (s->needs_boundaries && boundaries)
        json_object_set_new(sink, "boundaries", plan__table_json(boundaries));
    return json_pack("{si si so sO sO so si}", "stage", stage, "task", task, "input", input, "core",
                     s->core ? s->core : json_null(), "pipeline", s->pipeline, "sink", sink,
                     "nbuckets", s->nbuckets);
}

json_t *plan__table_json(const struct df_table *t)
{
    json_t *cols = json_array();
    for (int i = 0; i < t->ncols; i++)
        json_array_append_new(cols, json_pack("[ss]", t->names[i], df_type_name(t->cols[i]->type)));
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_putc(&b, '[');
    df_write_json_rows(t, 0, t->nrows, &b);
    fr_buf_putc(&b, ']');
    json_t *rows = json_loadb(b.data, b.len, 0, NULL);
    fr_buf_cleanup(&b);
    return json_pack("{so so}", "columns", cols, "rows", rows ? rows : json_array());
}

static void append_json_value(struct df_column *c, json_t *v)
{
    if (json_is_null(v) || !v) {
        df_column_append_null(c);
        return;
    }
    switch (c->type) {
    case DF_TYPE_BOOL:
        df_column_append_bool(c, json_is_true(v));
        break;
    case DF_TYPE_INT64:
        df_column_append_int64(c, json_integer_value(v));
        break;
    case DF_TYPE_FLOAT64:
        df_column_append_float64(c, json_number_value(v));
        break;
    case DF_TYPE_STRING:
        df_column_append_string(c, json_string_value(v), (int64_t)json_string_length(v));
        break;
    case DF_TYPE_DATE: {
        int32_t d = 0;
        const char *s = json_string_value(v);
        if (s && df_parse_date(s, strlen(s), &d) == 0)
            df_column_append_int32(c, d);
        else
            df_column_append_null(c);
        break;
    }
    default: {
        int64_t us = 0;
        const char *s = json_string_value(v);
        if (s && df_parse_timestamp(s, strlen(s), &us) == 0)
            df_column_append_int64(c, us);
        else
            df_column_append_null(c);
        break;
    }
    }
}

int plan__table_from_json(json_t *j, struct df_table **out, struct fr_error *err)
{
    json_t *cols = json_object_get(j, "columns"), *rows = json_object_get(j, "rows");
    if (!json_is_array(cols) || !json_is_array(rows))
        return fr_error_set(err, FR_EINVAL, "a table in a task spec needs columns and rows");
    struct df_table *t = df_table_new();
    size_t i, r;
    json_t *c, *row;
    json_array_foreach(cols, i, c)
    {
        df_type ty;
        const char *name = json_string_value(json_array_get(c, 0));
        const char *tn = json_string_value(json_array_get(c, 1));
        if (!name || !tn || df_type_parse(tn, &ty) != FR_OK) {
            df_table_free(t);
            return fr_error_set(err, FR_EINVAL, "a table in a task spec has a bad column");
        }
        struct df_column *col = df_column_new(ty, (int64_t)json_array_size(rows));
        json_array_foreach(rows, r, row) append_json_value(col, json_array_get(row, i));
        df_table_add(t, name, col);
    }
    t->nrows = (int64_t)json_array_size(rows);
    *out = t;
    return FR_OK;
}

int plan__schema_from_json(json_t *pairs, struct df_schema *out, struct fr_error *err)
{
    df_schema_init(out);
    size_t i;
    json_t *f;
    json_array_foreach(pairs, i, f)
    {
        df_type ty;
        const char *name = json_string_value(json_array_get(f, 0));
        const char *tn = json_string_value(json_array_get(f, 1));
        if (!name || !tn || df_type_parse(tn, &ty) != FR_OK) {
            df_schema_cleanup(out);
            return fr_error_set(err, FR_EINVAL, "a task spec has a malformed schema");
        }
        df_schema_add(out, name, ty);
    }
    return FR_OK;
}

/* ---- checking a spec that arrived from the network ----
 * A worker runs specs it did not make, so every member the executor reads
 * is checked for its type and bounds first: a bad spec is a 400, never an
 * allocation sized by a hostile number. */

static int bad_spec(struct fr_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int bad_spec(struct fr_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fr_error_vsetk(err, FR_EINVAL, "invalid-task", fmt, ap);
    va_end(ap);
    return FR_EINVAL;
}

static bool one_of(const char *s, const char *const *names)
{
    for (int i = 0; s && names[i]; i++)
        if (strcmp(s, names[i]) == 0)
            return true;
    return false;
}

/* An optional integer member in [lo, hi]; absent is fine. */
static bool int_in(json_t *obj, const char *key, json_int_t lo, json_int_t hi)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return true;
    return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

/* FR_MAX_COLUMNS is one limit for every reader, plan and partition. */
static int too_many_columns(struct fr_error *err, const char *what)
{
    fr_error_setk(err, FR_EINVAL, "too-many-columns", "%s has more than %d columns", what,
                  FR_MAX_COLUMNS);
    return FR_EINVAL;
}

/* An optional array of [name, type] pairs, at most FR_MAX_COLUMNS. */
static int check_schema(json_t *pairs, const char *what, struct fr_error *err)
{
    if (!pairs || json_is_null(pairs))
        return FR_OK;
    if (!json_is_array(pairs))
        return bad_spec(err, "%s must be an array of [name, type] pairs", what);
    return json_array_size(pairs) > FR_MAX_COLUMNS ? too_many_columns(err, what) : FR_OK;
}

/* A file input's path: relative to the data dir, without a NUL, and no
 * ".." that climbs above the data dir ("sub/../a.csv" stays inside). It is
 * refused before the file system is asked, so a task cannot probe which
 * files exist outside the data dir, nor learn that the worker has none;
 * symlinks are left to the realpath check where the file is opened. */
static bool rel_path_ok(json_t *jpath)
{
    const char *p = json_string_value(jpath);
    if (!p || !p[0] || p[0] == '/' || strlen(p) != json_string_length(jpath))
        return false;
    int64_t depth = 0;
    for (const char *seg = p; *seg;) {
        size_t n = strcspn(seg, "/");
        if (n == 2 && seg[0] == '.' && seg[1] == '.') {
            if (--depth < 0)
                return false;
        } else if (n > 0 && !(n == 1 && seg[0] == '.')) {
            depth++;
        }
        seg += n;
        if (*seg == '/')
            seg++;
    }
    return true;
}

static int check_file_input(json_t *in, struct fr_error *err)
{
    json_t *range = json_object_get(in, "range"), *cols = json_object_get(in, "columns");
    if (!json_is_string(json_object_get(in, "path")) ||
        !one_of(json_string_value(json_object_get(in, "format")),
                (const char *const[]){"csv", "ndjson", "parquet", NULL}))
        return bad_spec(err, "a file input needs a string path and format csv, ndjson or parquet%s",
                        "");
    if (strcmp(json_string_value(json_object_get(in, "format")), "parquet") == 0 &&
        plan__parquet_check(in, err) != FR_OK)
        return FR_EINVAL;
    if (!rel_path_ok(json_object_get(in, "path")))
        return bad_spec(err, "a file input names a file inside the data dir, by a relative path%s",
                        "");
    if (!json_is_array(range) || json_array_size(range) != 3)
        return bad_spec(err, "a file input needs range [start, end, line]%s", "");
    for (size_t i = 0; i < 3; i++) {
        json_t *v = json_array_get(range, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return bad_spec(err, "the range of a file input holds non-negative integers%s", "");
    }
    if (json_integer_value(json_array_get(range, 0)) > json_integer_value(json_array_get(range, 1)))
        return bad_spec(err, "the range of a file input ends before it starts%s", "");
    if (!int_in(in, "size", 0, INT64_MAX) || !int_in(in, "mtime_ns", 0, INT64_MAX))
        return bad_spec(err, "size and mtime_ns of a file input are non-negative integers%s", "");
    if (cols && !json_is_null(cols)) {
        if (!json_is_array(cols))
            return bad_spec(err, "columns of a file input must be an array of indexes%s", "");
        if (json_array_size(cols) > FR_MAX_COLUMNS)
            return too_many_columns(err, "a file input");
        for (size_t i = 0; i < json_array_size(cols); i++) {
            json_t *v = json_array_get(cols, i);
            if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                json_integer_value(v) >= FR_MAX_COLUMNS)
                return bad_spec(err, "a column index of a file input is out of range%s", "");
        }
    }
    int rc = check_schema(json_object_get(in, "schema"), "the schema of a file input", err);
    if (rc == FR_OK)
        rc = check_schema(json_object_get(json_object_get(in, "options"), "hints"),
                          "the hints of a file input", err);
    return rc;
}

static int check_input(json_t *in, struct fr_error *err)
{
    static const char *const kinds[] = {"file", "rows", "stored", "slots", NULL};
    const char *kind = json_string_value(json_object_get(in, "kind"));
    if (!json_is_object(in) || !one_of(kind, kinds))
        return bad_spec(err, "the input kind must be file, rows, stored or slots, not '%s'",
                        kind ? kind : "(none)");
    if (!int_in(in, "max_rows", -1, INT64_MAX)) /* -1 or 0: no limit */
        return bad_spec(err, "max_rows must be an integer of at least -1%s", "");
    if (strcmp(kind, "file") == 0)
        return check_file_input(in, err);
    if (strcmp(kind, "rows") == 0 && !json_is_array(json_object_get(in, "rows")))
        return bad_spec(err, "a rows input needs an array of rows%s", "");
    if (strcmp(kind, "rows") == 0)
        return check_schema(json_object_get(in, "hints"), "the hints of a rows input", err);
    if (strcmp(kind, "slots") == 0 && !int_in(in, "nslots", 0, PLAN_MAX_SLOTS))
        return bad_spec(err, "nslots is out of range%s", "");
    return FR_OK;
}

/* v is absent or an array of at most FR_MAX_COLUMNS strings (objects when
 * objects): the executor reads a missing list as an empty one. */
static bool list_of(json_t *v, bool objects)
{
    if (!v)
        return true;
    if (!json_is_array(v) || json_array_size(v) > FR_MAX_COLUMNS)
        return false;
    size_t i;
    json_t *it;
    json_array_foreach(v, i,
                       it) if (objects ? !json_is_object(it) : !json_is_string(it)) return false;
    return true;
}

static int check_core(json_t *core, struct fr_error *err)
{
    static const char *const cores[] = {"concat", "agg_final", "join", "union", "merge", NULL};
    if (!core || json_is_null(core))
        return FR_OK;
    const char *op = json_string_value(json_object_get(core, "op"));
    if (!json_is_object(core) || !one_of(op, cores))
        return bad_spec(err,
                        "the core must be null or an object with op concat, agg_final, "
                        "join, union or merge, not '%s'",
                        op ? op : "(none)");
    bool ok = true;
    if (strcmp(op, "agg_final") == 0)
        ok = list_of(json_object_get(core, "keys"), false) &&
             list_of(json_object_get(core, "aggs"), false);
    else if (strcmp(op, "join") == 0)
        ok = list_of(json_object_get(core, "left_on"), false) &&
             list_of(json_object_get(core, "right_on"), false) &&
             json_is_string(json_object_get(core, "how"));
    else if (strcmp(op, "merge") == 0)
        ok = list_of(json_object_get(core, "keys"), true);
    if (!ok)
        return bad_spec(err, "the %s core has keys, aggs or how of the wrong type", op);
    return strcmp(op, "agg_final") == 0
               ? check_schema(json_object_get(core, "input_schema"), "the input schema", err)
               : FR_OK;
}

static int check_sink(json_t *sink, struct fr_error *err)
{
    static const char *const ops[] = {"partial_agg", "hash_partition", "sort_sample",
                                      "range_partition", NULL};
    if (!sink || json_is_null(sink))
        return FR_OK;
    const char *op = json_string_value(json_object_get(sink, "op"));
    if (!json_is_object(sink) || !one_of(op, ops))
        return bad_spec(err, "unknown sink '%s'", op ? op : "(none)");
    json_t *b = json_object_get(sink, "buckets");
    bool needs = strcmp(op, "hash_partition") == 0 || strcmp(op, "range_partition") == 0;
    if ((needs && !json_is_integer(b)) || !int_in(sink, "buckets", needs ? 1 : 0, PLAN_MAX_BUCKETS))
        return bad_spec(err, "sink buckets must be an integer from 1 to %s", "4096");
    if (!int_in(sink, "sample", 0, 1000000))
        return bad_spec(err, "the sort sample must be an integer from 0 to %s", "1000000");
    /* hash keys and aggregations are names and texts; sort keys are objects */
    bool sorted = strcmp(op, "sort_sample") == 0 || strcmp(op, "range_partition") == 0;
    if (!list_of(json_object_get(sink, "keys"), sorted) ||
        (strcmp(op, "partial_agg") == 0 && !list_of(json_object_get(sink, "aggs"), false)))
        return bad_spec(err, "the keys or aggs of sink '%s' have the wrong type", op);
    return FR_OK;
}

static int check_pipeline(json_t *pipeline, struct fr_error *err)
{
    if (!pipeline || json_is_null(pipeline))
        return FR_OK;
    if (!json_is_array(pipeline))
        return bad_spec(err, "the pipeline must be an array%s", "");
    size_t i;
    json_t *op;
    json_array_foreach(pipeline, i, op)
    {
        json_t *v;
        if (!json_is_object(op))
            return bad_spec(err, "a pipeline op must be an object%s", "");
        if ((v = json_object_get(op, "filter")) && !json_is_string(v))
            return bad_spec(err, "a filter must be a string%s", "");
        if ((v = json_object_get(op, "project")) && !json_is_array(v))
            return bad_spec(err, "a project must be an array of items%s", "");
        if (v && json_is_array(v) && json_array_size(v) > FR_MAX_COLUMNS)
            return too_many_columns(err, "a project");
        if ((v = json_object_get(op, "sort")) && !json_is_array(v))
            return bad_spec(err, "sort keys must be an array%s", "");
        if ((v = json_object_get(op, "slice")) &&
            (!json_is_object(v) || !int_in(v, "offset", 0, INT64_MAX) ||
             !int_in(v, "limit", -1, INT64_MAX)))
            return bad_spec(err, "a slice needs a non-negative offset and limit%s", "");
        if ((v = json_object_get(op, "top_k")) &&
            (!json_is_object(v) || !int_in(v, "k", 0, INT64_MAX)))
            return bad_spec(err, "top_k needs a non-negative k%s", "");
        if ((v = json_object_get(op, "window")) && plan__check_window(v, err) != FR_OK)
            return err->status;
    }
    return FR_OK;
}

int plan_task_check(json_t *spec, struct fr_error *err)
{
    if (!json_is_object(spec))
        return bad_spec(err, "the task spec must be an object%s", "");
    if (!int_in(spec, "nbuckets", 1, PLAN_MAX_BUCKETS))
        return bad_spec(err, "nbuckets must be an integer from 1 to %s", "4096");
    int rc = check_core(json_object_get(spec, "core"), err);
    if (rc == FR_OK)
        rc = check_input(json_object_get(spec, "input"), err);
    if (rc == FR_OK)
        rc = check_pipeline(json_object_get(spec, "pipeline"), err);
    if (rc == FR_OK)
        rc = check_sink(json_object_get(spec, "sink"), err);
    return rc;
}
