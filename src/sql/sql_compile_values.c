/* sql_compile_values: VALUES (..), (..) as one inline rows source (one
 * task however many rows): literal values go into the rows as JSON, any
 * other value is computed by the select after it, on its row's index. At
 * most SQL_VALUES_MAX_ROWS rows. */
#include "sql_compile_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SQL_VALUES_MAX_ROWS 10000

/* Each value's text and each column's type (the type its rows share). */
static int values_types(struct sc_ctx *c, const struct sql_select *s, char **texts, df_type *types)
{
    int w = s->values_width, rc = FR_OK;
    struct sc_rel empty;
    sc__rel_init(&empty);
    struct sc_scope scope = {&empty, NULL, NULL, 0, false};
    struct sc_ex x = {0};
    x.c = c;
    x.scope = &scope;
    x.leaf_names = -1;
    x.clause = "VALUES";
    for (int i = 0; rc == FR_OK && i < s->nvalues; i++) {
        for (int k = 0; rc == FR_OK && k < w; k++) {
            const struct sql_expr *e = s->values[i][k];
            df_type t = DF_TYPE_NULL;
            rc = sc__expr_text(&x, e, &texts[i * w + k]);
            if (rc == FR_OK && e->kind != SQL_E_NULL) /* NULL fits any column's type */
                rc = sc__expr_type(c, &empty, texts[i * w + k], e->pos, &t);
            if (rc == FR_OK && !sc__unify(i ? types[k] : t, t, &types[k]))
                rc = sc__invalid(c, e->pos, "VALUES column %d mixes %s and %s", k + 1,
                                 df_type_name(types[k]), df_type_name(t));
        }
    }
    sc__ex_cleanup(&x);
    return rc;
}

/* The JSON of a literal value of a column of type t (new), or NULL when e
 * is not one (an expression, a value JSON cannot hold). */
static json_t *literal_json(const struct sql_expr *e, df_type t)
{
    bool neg = e->kind == SQL_E_UNARY && e->op == '-';
    const struct sql_expr *v = neg ? e->args[0] : e;
    if (v->kind == SQL_E_NULL && !neg)
        return json_null();
    if (v->kind == SQL_E_INT && t == DF_TYPE_INT64 && !(neg && v->ival == INT64_MIN))
        return json_integer(neg ? -v->ival : v->ival);
    if ((v->kind == SQL_E_INT || v->kind == SQL_E_FLOAT) && t == DF_TYPE_FLOAT64) {
        double d = v->kind == SQL_E_INT ? (double)v->ival : v->fval;
        return isfinite(d) ? json_real(neg ? -d : d) : NULL;
    }
    if (neg)
        return NULL;
    if (v->kind == SQL_E_STRING && t == DF_TYPE_STRING && v->text)
        return json_string(v->text); /* NULL for a NUL or bad UTF-8: computed */
    if (v->kind == SQL_E_BOOL && t == DF_TYPE_BOOL)
        return json_boolean(v->ival);
    return NULL;
}

/* The type the rows hold column k in: its own, or string (all NULL) for a
 * date or timestamp column, whose values are computed. */
static const char *raw_type(df_type t)
{
    return t == DF_TYPE_INT64 || t == DF_TYPE_FLOAT64 || t == DF_TYPE_BOOL ? df_type_name(t)
                                                                           : "string";
}

/* The select item of column k: its raw value, or a case on the row index
 * for the rows whose value is computed; cast to the column's type. */
static json_t *column_item(const char *raw, const char *name, const char *index, df_type t,
                           char **computed, int nrows, int w, int k)
{
    struct fr_buf b;
    fr_buf_init(&b);
    char *qr = sc__quote(raw), *qn = sc__quote(name), *qi = sc__quote(index);
    const char *tn = df_type_name(t);
    bool any = false;
    for (int i = 0; i < nrows; i++) {
        if (!computed[i * w + k])
            continue;
        fr_buf_printf(&b, "%s when %s = %d then cast(%s as %s)", any ? "" : "case", qi, i,
                      computed[i * w + k], tn);
        any = true;
    }
    if (any)
        fr_buf_printf(&b, " else cast(%s as %s) end", qr, tn);
    else
        fr_buf_printf(&b, "cast(%s as %s)", qr, tn);
    json_t *item = json_sprintf("%s as %s", b.data, qn);
    free(qr);
    free(qn);
    free(qi);
    fr_buf_cleanup(&b);
    return item;
}

/* The rows source: each row's literal values by raw name (null where
 * computed), its index when some value is computed, and the hints. */
static json_t *rows_source(const struct sql_select *s, char **raws, const df_type *types,
                           json_t **lits, bool indexed, const char *index)
{
    int w = s->values_width;
    json_t *rows = json_array(), *hints = json_object();
    for (int i = 0; i < s->nvalues; i++) {
        json_t *row = json_object();
        if (indexed)
            json_object_set_new(row, index, json_integer(i));
        for (int k = 0; k < w; k++) {
            json_t *v = lits[i * w + k];
            json_object_set_new(row, raws[k], v ? v : json_null());
            lits[i * w + k] = NULL;
        }
        json_array_append_new(rows, row);
    }
    if (indexed)
        json_object_set_new(hints, index, json_string("int64"));
    for (int k = 0; k < w; k++)
        json_object_set_new(hints, raws[k], json_string(raw_type(types[k])));
    return json_pack("{s{soso} s[]}", "source", "rows", rows, "schema", hints, "ops");
}

/* The select after the rows: each column cast to its type, computed values
 * by their row's index. */
static json_t *values_select(const struct sql_select *s, char **raws, char **names,
                             const df_type *types, char **computed, const char *index)
{
    json_t *items = json_array();
    for (int k = 0; k < s->values_width; k++)
        json_array_append_new(items, column_item(raws[k], names[k], index, types[k], computed,
                                                 s->nvalues, s->values_width, k));
    return json_pack("{so}", "select", items);
}

/* VALUES (..), (..): columns col0, col1, ... (DuckDB's names), each of the
 * type its rows share (a column of NULLs only is a string). */
int sc__values(struct sc_ctx *c, const struct sql_select *s, struct sc_rel *out)
{
    int w = s->values_width;
    if (s->nvalues > SQL_VALUES_MAX_ROWS)
        return sc__invalid(c, s->values[SQL_VALUES_MAX_ROWS][0]->pos,
                           "VALUES has %d rows; the most a VALUES list may have is %d (a larger "
                           "table is a dataset)",
                           s->nvalues, SQL_VALUES_MAX_ROWS);
    size_t cells = (size_t)(s->nvalues * w) + 1;
    char **texts = fr_xcalloc(cells, sizeof(char *));
    json_t **lits = fr_xcalloc(cells, sizeof(json_t *));
    char **computed = fr_xcalloc(cells, sizeof(char *)); /* borrowed from texts */
    df_type *types = fr_xcalloc((size_t)w + 1, sizeof(df_type));
    char **names = fr_xcalloc((size_t)w + 1, sizeof(char *));
    char **raws = fr_xcalloc((size_t)w + 1, sizeof(char *));
    int rc = values_types(c, s, texts, types);
    bool indexed = false;
    for (int k = 0; rc == FR_OK && k < w; k++) {
        char colname[32];
        snprintf(colname, sizeof(colname), "col%d", k);
        if (types[k] == DF_TYPE_NULL)
            types[k] = DF_TYPE_STRING;
        names[k] = sc__new_internal(c, colname);
        raws[k] = sc__new_internal(c, "raw");
        sc__rel_add(out, colname, true, NULL, names[k], types[k]);
        for (int i = 0; i < s->nvalues; i++) {
            lits[i * w + k] = literal_json(s->values[i][k], types[k]);
            if (!lits[i * w + k])
                computed[i * w + k] = texts[i * w + k], indexed = true;
        }
    }
    if (rc == FR_OK) {
        char *index = sc__new_internal(c, "row");
        out->plan = rows_source(s, raws, types, lits, indexed, index);
        sc__rel_op(out, values_select(s, raws, names, types, computed, index));
        free(index);
    }
    for (size_t i = 0; i < cells; i++) {
        free(texts[i]);
        json_decref(lits[i]);
    }
    for (int k = 0; k < w; k++)
        free(names[k]), free(raws[k]);
    free(texts);
    free(lits);
    free(computed);
    free(names);
    free(raws);
    free(types);
    return rc;
}
