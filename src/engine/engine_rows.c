/* engine_rows: inline rows, a JSON array of objects from a request body,
 * into a table: columns in order of first appearance, types inferred over
 * all rows (ints and reals mixed give float64); dates only via hints. */
#include "engine_io_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Columns in order of first appearance, found through a name map so that
 * the work is linear in the keys; FR_EVALIDATION past FR_MAX_COLUMNS. */
static int infer(const json_t *rows, const struct df_schema *hints, struct df_schema *schema,
                 struct fr_error *err)
{
    int result = FR_EINVAL;
    struct df__json_infer *st = NULL;
    df_name_map *names = df_name_map_new(), *hint_index = NULL;
    int cap = 0;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        if (!json_is_object(row)) {
            result = fr_error_set(err, FR_EINVAL, "rows[%zu] is not a JSON object", i);
            goto out;
        }
        const char *key;
        json_t *v;
        json_object_foreach(row, key, v)
        {
            int k = df_name_map_get(names, key);
            if (k < 0 && schema->nfields == FR_MAX_COLUMNS) {
                char what[64];
                snprintf(what, sizeof(what), "source.rows (by rows[%zu])", i);
                result = df__too_many_columns(err, what, schema->nfields, true);
                goto out;
            }
            if (k < 0) {
                k = schema->nfields;
                df_name_map_put(names, key, k);
                df_schema_add(schema, key, DF_TYPE_STRING);
                if (k >= cap) {
                    cap = cap ? cap * 2 : 16;
                    st = fr_xrealloc(st, sizeof(*st) * (size_t)cap);
                }
                df__json_infer_init(&st[k]);
            }
            df__json_infer_add(&st[k], v);
        }
    }
    hint_index = df_schema_index(hints);
    for (int k = 0; k < schema->nfields; k++) {
        int h = hint_index ? df_name_map_get(hint_index, schema->fields[k].name) : -1;
        schema->fields[k].type =
            h >= 0 ? hints->fields[h].type : df__json_infer_result(&st[k], false);
    }
    result = FR_OK;
out:
    free(st);
    df_name_map_free(names);
    df_name_map_free(hint_index);
    return result;
}

int df_rows_read(const void *json_rows, const struct df_schema *hints, struct df_table **out,
                 struct fr_error *err)
{
    int result = FR_EINVAL;
    const json_t *rows = json_rows;
    struct df_schema schema;
    struct df_table *t = NULL;
    df_schema_init(&schema);
    *out = NULL;
    if (!json_is_array(rows)) {
        result = fr_error_set(err, FR_EINVAL, "rows must be a JSON array of objects");
        goto out;
    }
    if ((result = infer(rows, hints, &schema, err)) != FR_OK)
        goto out;
    size_t n = json_array_size(rows);
    t = df_table_new();
    for (int k = 0; k < schema.nfields; k++)
        df_table_add(t, schema.fields[k].name, df_column_new(schema.fields[k].type, (int64_t)n));
    for (size_t i = 0; i < n; i++) {
        const json_t *row = json_array_get(rows, i);
        for (int k = 0; k < schema.nfields; k++) {
            const json_t *v = json_object_get(row, schema.fields[k].name);
            if (df__json_append(t->cols[k], v) == 0)
                continue;
            char *text = fr_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            result = fr_error_set(err, FR_EINVAL, "rows[%zu].%s: %.40s is not a%s %s", i,
                                  schema.fields[k].name, text ? text : "?",
                                  schema.fields[k].type == DF_TYPE_INT64 ? "n" : "",
                                  df_type_name(schema.fields[k].type));
            free(text);
            snprintf(err->field, sizeof(err->field), "%s", schema.fields[k].name);
            err->line = (int64_t)i + 1;
            goto out;
        }
    }
    for (int k = 0; k < schema.nfields; k++) {
        if (!df_column_ok(t->cols[k])) {
            result = fr_error_set(err, FR_ETOOLARGE, "out of memory building %zu rows", n);
            goto out;
        }
    }
    t->nrows = (int64_t)n;
    *out = t;
    t = NULL;
    result = FR_OK;
out:
    df_table_free(t);
    df_schema_cleanup(&schema);
    return result;
}
