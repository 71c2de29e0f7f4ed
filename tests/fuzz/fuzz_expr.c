/* fuzz_expr: the expression language (engine_expr_lex/parse/bind) as plans
 * and task specs use it: scalar expressions and aggregate items, parsed and
 * bound against a schema with a column of every type, then evaluated over a
 * small table with nulls (so binding and evaluation agree on types and
 * bounds). The first byte picks scalar or aggregate; the rest is the text. */
#include "engine/engine.h"
#include "fuzz_util.h"

static struct df_table *table;
static struct df_schema schema;

static struct df_table *make_table(void)
{
    struct df_table *t = df_table_new();
    struct df_column *i = df_column_new(DF_TYPE_INT64, 4), *f = df_column_new(DF_TYPE_FLOAT64, 4);
    struct df_column *s = df_column_new(DF_TYPE_STRING, 4), *b = df_column_new(DF_TYPE_BOOL, 4);
    struct df_column *d = df_column_new(DF_TYPE_DATE, 4), *ts = df_column_new(DF_TYPE_TIMESTAMP, 4);
    struct df_column *q = df_column_new(DF_TYPE_STRING, 4);
    const int64_t iv[] = {1, -7, INT64_MAX, 0};
    const double fv[] = {0.5, -2.25, 1e308, 0};
    const char *sv[] = {"abc", "", "x%_y", "Z"};
    for (int r = 0; r < 4; r++) {
        if (r == 3) { /* the last row is all nulls */
            df_column_append_null(i), df_column_append_null(f), df_column_append_null(s);
            df_column_append_null(b), df_column_append_null(d), df_column_append_null(ts);
            df_column_append_null(q);
            continue;
        }
        df_column_append_int64(i, iv[r]);
        df_column_append_float64(f, fv[r]);
        df_column_append_string(s, sv[r], (int64_t)strlen(sv[r]));
        df_column_append_bool(b, r == 0);
        df_column_append_int32(d, 19000 + r);
        df_column_append_int64(ts, 1700000000000000LL + r);
        df_column_append_string(q, "q", 1);
    }
    df_table_add(t, "i", i);
    df_table_add(t, "f", f);
    df_table_add(t, "s", s);
    df_table_add(t, "b", b);
    df_table_add(t, "d", d);
    df_table_add(t, "ts", ts);
    df_table_add(t, "a b", q);
    return t;
}

static void eval_scalar(const char *text, struct df_exec *ex)
{
    df_expr *e = NULL;
    struct fr_error err;
    fr_error_init(&err);
    if (df_expr_parse(text, &schema, &e, &err) != FR_OK) {
        FUZZ_CHECK(e == NULL && err.status != FR_OK);
        return;
    }
    FUZZ_CHECK(df_expr_name(e) != NULL);
    int cols[64], ncols = 0;
    df_expr_columns(e, cols, &ncols, 64);
    for (int k = 0; k < ncols; k++)
        FUZZ_CHECK(cols[k] >= 0 && cols[k] < schema.nfields);
    struct df_column *out = NULL;
    if (df_expr_eval(e, table, 0, table->nrows, ex, &out, &err) == FR_OK) {
        FUZZ_CHECK(out->length == table->nrows);
        df_column_unref(out);
    }
    if (df_expr_type(e) == DF_TYPE_BOOL) {
        int64_t sel[4], nsel = 0;
        if (df_expr_filter(e, table, 0, table->nrows, ex, sel, &nsel, &err) == FR_OK)
            FUZZ_CHECK(nsel >= 0 && nsel <= table->nrows);
    }
    df_expr_free(e);
}

static void parse_agg(const char *text)
{
    struct df_agg_item it;
    struct fr_error err;
    fr_error_init(&err);
    if (df_agg_item_parse(text, &schema, &it, &err) != FR_OK)
        return;
    FUZZ_CHECK(it.ncalls > 0 && it.post != NULL);
    for (int k = 0; k < it.ncalls; k++)
        FUZZ_CHECK(it.calls[k].func == DF_AGG_COUNT_STAR || it.calls[k].arg != NULL);
    df_agg_item_cleanup(&it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!table) {
        table = make_table();
        df_schema_init(&schema);
        df_schema_of_table(&schema, table);
    }
    if (size < 1)
        return 0;
    char *text = fuzz_strndup(data + 1, size - 1);
    struct df_options opts = {.morsel_size_rows = 2, .task_memory_limit_bytes = 64 << 20};
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    if (data[0] & 1)
        parse_agg(text);
    else
        eval_scalar(text, &ex);
    free(text);
    return 0;
}
