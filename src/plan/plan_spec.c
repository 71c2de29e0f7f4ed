/* plan_spec: a task's self-contained JSON spec (what the runner ships to a
 * thread or a worker), and small typed tables carried inside specs (sort
 * boundaries) as JSON. */
#include "plan_int.h"

#include <stdlib.h>
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

static json_t *file_input(const struct pstage *s, int task)
{
    const struct lsource *src = s->src;
    json_t *cols = json_null();
    if (src->ncolumns >= 0) {
        cols = json_array();
        for (int i = 0; i < src->ncolumns; i++)
            json_array_append_new(cols, json_integer(src->columns[i]));
    }
    char delim[2] = {src->delimiter, '\0'}, quote[2] = {src->quote, '\0'};
    const struct df_byte_range *r = &s->ranges[task];
    return json_pack("{ss ss ss ss s{ss ss sb sb so} so so s[III] sI}", "kind", "file", "path",
                     src->path, "format", src->format, "display", src->display, "options",
                     "delimiter", delim, "quote", quote, "header", src->header, "on_error_null",
                     src->on_error_null, "hints", schema_pairs(&src->hints, NULL, -1), "schema",
                     schema_pairs(&src->schema, NULL, -1), "columns", cols, "range",
                     (json_int_t)r->start, (json_int_t)r->end, (json_int_t)r->line, "max_rows",
                     (json_int_t)s->max_rows);
}

json_t *plan_task_spec(const plan_physical *p, int stage, int task,
                       const struct df_table *boundaries)
{
    const struct pstage *s = &p->stages[stage];
    json_t *input;
    switch (s->input) {
    case PIN_FILE:
        input = file_input(s, task);
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
