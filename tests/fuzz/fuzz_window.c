/* fuzz_window: the window function parser (engine_window_parse.c) as plans
 * and task specs use it, and the operator (engine_window.c) over what it
 * accepts. The first byte picks the partition and order keys; the rest is
 * up to four function texts separated by newlines, parsed against a table
 * with a column of every type and nulls, then run: the output keeps every
 * row and adds one column per function of the parsed type. */
#include "engine/engine.h"
#include "fuzz_util.h"

static struct df_table *table;
static struct df_schema schema;

static struct df_table *make_table(void)
{
    struct df_table *t = df_table_new();
    struct df_column *i = df_column_new(DF_TYPE_INT64, 6), *f = df_column_new(DF_TYPE_FLOAT64, 6);
    struct df_column *s = df_column_new(DF_TYPE_STRING, 6), *b = df_column_new(DF_TYPE_BOOL, 6);
    struct df_column *d = df_column_new(DF_TYPE_DATE, 6), *ts = df_column_new(DF_TYPE_TIMESTAMP, 6);
    const int64_t iv[] = {1, -7, INT64_MAX, 1, INT64_MAX, 0};
    const double fv[] = {0.5, -2.25, 1e308, 0.5, -0.0, 0};
    const char *sv[] = {"abc", "", "x", "abc", "Z", ""};
    for (int r = 0; r < 6; r++) {
        if (r == 5) { /* the last row is all nulls */
            df_column_append_null(i), df_column_append_null(f), df_column_append_null(s);
            df_column_append_null(b), df_column_append_null(d), df_column_append_null(ts);
            continue;
        }
        df_column_append_int64(i, iv[r]);
        df_column_append_float64(f, fv[r]);
        df_column_append_string(s, sv[r], (int64_t)strlen(sv[r]));
        df_column_append_bool(b, r % 2 == 0);
        df_column_append_int32(d, 19000 + r % 3);
        df_column_append_int64(ts, 1700000000000000LL + r);
    }
    df_table_add(t, "i", i);
    df_table_add(t, "f", f);
    df_table_add(t, "s", s);
    df_table_add(t, "b", b);
    df_table_add(t, "d", d);
    df_table_add(t, "ts", ts);
    return t;
}

static void run(uint8_t keys, struct df_window_call *calls, int n)
{
    int part[2] = {keys % 6, (keys >> 3) % 6};
    struct df_sort_key order[2] = {{(keys >> 1) % 6, keys & 16, keys & 32},
                                   {(keys >> 2) % 6, keys & 64, false}};
    struct df_options opts = {.nulls_first = keys & 128, .task_memory_limit_bytes = 64 << 20};
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *out = NULL;
    int rc =
        df_window(table, part, (keys >> 4) % 3, order, (keys >> 6) % 3, calls, n, &ex, &out, &err);
    /* i holds INT64_MAX twice: a sum over it may leave int64, which fails (never wraps) */
    FUZZ_CHECK(rc == FR_OK || strcmp(err.kind, "arithmetic-overflow") == 0);
    if (rc != FR_OK) {
        FUZZ_CHECK(out == NULL && ex.mem_used == 0); /* a failure keeps no memory charged */
        return;
    }
    FUZZ_CHECK(out->nrows == table->nrows && out->ncols == table->ncols + n);
    for (int k = 0; k < n; k++)
        FUZZ_CHECK(out->cols[table->ncols + k]->type == calls[k].type &&
                   out->cols[table->ncols + k]->length == table->nrows);
    FUZZ_CHECK(ex.mem_used == 0);
    df_table_free(out);
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
    struct df_window_call calls[4];
    int n = 0;
    bool runnable = true;
    for (char *line = text, *next; line && n < 4; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        struct fr_error err;
        fr_error_init(&err);
        if (df_window_call_parse(line, &schema, &calls[n], &err) != FR_OK) {
            FUZZ_CHECK(err.status == FR_EINVAL && err.kind[0]);
            df_window_call_cleanup(&calls[n]);
            continue;
        }
        FUZZ_CHECK(calls[n].name != NULL);
        FUZZ_CHECK(calls[n].offset >= 0 && calls[n].offset <= DF_WINDOW_MAX_OFFSET);
        FUZZ_CHECK(!calls[n].dflt || calls[n].dflt->type == calls[n].arg_type);
        runnable = runnable && (!calls[n].arg_text || calls[n].arg >= 0);
        n++;
    }
    if (runnable && n > 0)
        run(data[0], calls, n);
    for (int k = 0; k < n; k++)
        df_window_call_cleanup(&calls[k]);
    free(text);
    return 0;
}
