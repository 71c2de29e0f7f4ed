/* fuzz_task: a task spec as a worker receives it in POST /v1/tasks (the
 * "spec" member), validated and run by plan_task_execute on small input
 * tables: every slot holds two tables of the same schema (k int64, v
 * float64, s string, d date) with a null row. The memory account and a
 * deadline bound what a spec can ask for. File inputs are read relative to
 * the scratch dir, which holds a copy of the golden tests' inputs and of a
 * Parquet file of three row groups. */
#include "fuzz_util.h"
#include "plan/plan.h"

#include <jansson.h>

#define SLOTS 8

static struct df_table *tables[SLOTS][2];
static struct df_table **slots[SLOTS];
static int counts[SLOTS];

static struct df_table *make_table(int64_t base, int rows)
{
    struct df_table *t = df_table_new();
    struct df_column *k = df_column_new(DF_TYPE_INT64, rows),
                     *v = df_column_new(DF_TYPE_FLOAT64, rows);
    struct df_column *s = df_column_new(DF_TYPE_STRING, rows),
                     *d = df_column_new(DF_TYPE_DATE, rows);
    for (int r = 0; r < rows; r++) {
        if (r == 1) {
            df_column_append_null(k), df_column_append_null(v);
            df_column_append_null(s), df_column_append_null(d);
            continue;
        }
        char text[32];
        int n = snprintf(text, sizeof(text), "s%lld", (long long)(base + r % 3));
        df_column_append_int64(k, base + r % 3);
        df_column_append_float64(v, (double)r / 4);
        df_column_append_string(s, text, n);
        df_column_append_int32(d, 19000 + r);
    }
    df_table_add(t, "k", k);
    df_table_add(t, "v", v);
    df_table_add(t, "s", s);
    df_table_add(t, "d", d);
    return t;
}

static void setup(void)
{
    for (int i = 0; i < SLOTS; i++) {
        tables[i][0] = make_table(i, 5);
        tables[i][1] = make_table(i + 1, 3);
        slots[i] = tables[i];
        counts[i] = 2;
    }
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "cp '%s/tests/data/golden/inputs/'* '%s'", FRAMED_SOURCE_DIR,
             fuzz_dir());
    FUZZ_CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof(cmd), "cp '%s/tests/data/parquet/row_groups.parquet' '%s'",
             FRAMED_SOURCE_DIR, fuzz_dir()); /* parquet inputs: row groups and columns */
    FUZZ_CHECK(system(cmd) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!slots[0])
        setup();
    json_error_t jerr;
    json_t *spec = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(spec)) { /* the worker refuses anything else before this point */
        json_decref(spec);
        return 0;
    }
    struct cfg cfg;
    cfg_defaults(&cfg);
    cfg.task_memory_limit_bytes = 256 * CFG_MiB;
    cfg.morsel_size_rows = 3;
    struct df_options opts;
    plan_options_from_cfg(&cfg, &opts);
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    ex.deadline_us = fr_mono_us() + 5 * 1000 * 1000;
    struct df_table **outs = NULL;
    int nouts = 0;
    struct fr_error err;
    fr_error_init(&err);
    int rc = plan_task_execute(spec, fuzz_dir(), (struct df_table * *const *)slots, counts, &ex,
                               &outs, &nouts, &err);
    if (rc == FR_OK) {
        FUZZ_CHECK(nouts >= 1);
        for (int b = 0; b < nouts; b++) {
            if (!outs[b])
                continue;
            for (int c = 0; c < outs[b]->ncols; c++)
                FUZZ_CHECK(outs[b]->cols[c]->length == outs[b]->nrows);
            df_table_free(outs[b]);
        }
    } else {
        FUZZ_CHECK(nouts == 0 && outs == NULL);
    }
    free(outs);
    cfg_cleanup(&cfg);
    json_decref(spec);
    return 0;
}
