/* sql_compile_test_util: the helpers of the compiler's unit tests: a catalog
 * over the golden inputs (tests/data/golden/inputs, each file a table by its
 * name), compiling a statement, and running its plan on the local runner. */
#ifndef FRAMED_SQL_COMPILE_TEST_UTIL_H
#define FRAMED_SQL_COMPILE_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "plan/plan.h"
#include "runner/runner.h"
#include "sql/sql.h"

static const char *inputs_dir(void)
{
    static char dir[4096];
    const char *base = getenv("FRAMED_TEST_DATA");
    snprintf(dir, sizeof(dir), "%s/golden/inputs", base ? base : FRAMED_SOURCE_DIR "/tests/data");
    return dir;
}

static const char *const test_tables[] = {"groups", "left",  "right",   "nums",   "na",
                                          "events", "trips", "vendors", "sortme", NULL};

static int test_lookup(void *arg, const char *name, bool quoted, json_t **source,
                       struct df_schema *schema, struct fr_error *err)
{
    (void)arg;
    for (int i = 0; test_tables[i]; i++) {
        if (quoted ? strcmp(name, test_tables[i]) != 0 : strcasecmp(name, test_tables[i]) != 0)
            continue;
        json_t *plan = json_pack("{s{ss}}", "source", "dataset", test_tables[i]);
        struct cfg cfg;
        cfg_defaults(&cfg);
        struct plan_env env = {.data_dir = inputs_dir()};
        plan_physical *p = NULL;
        int rc = plan_build(plan, &cfg, &env, -1, &p, err);
        json_decref(plan);
        if (rc == FR_OK) {
            df_schema_copy(schema, plan_physical_schema(p));
            *source = json_pack("{ss}", "dataset", test_tables[i]);
        }
        plan_physical_free(p);
        cfg_cleanup(&cfg);
        return rc;
    }
    return fr_error_set(err, FR_ENOTFOUND, "no table '%s'", name);
}

static int test_names(void *arg, char ***names, int *n)
{
    (void)arg;
    int k = 0;
    while (test_tables[k])
        k++;
    *names = calloc((size_t)k + 1, sizeof(char *));
    for (int i = 0; i < k; i++)
        (*names)[i] = strdup(test_tables[i]);
    *n = k;
    return FR_OK;
}

static const struct sql_catalog test_catalog = {test_lookup, test_names, NULL};

/* new: the plan of sql (fails the test on an error). */
static inline json_t *compile_ok(const char *sql)
{
    struct sql_statement st;
    struct fr_error err;
    fr_error_init(&err);
    int rc = sql_compile(sql, &test_catalog, &st, &err);
    if (rc != FR_OK)
        fail_msg("%s: %s %s", sql, err.kind, err.message);
    json_t *plan = json_incref(st.plan);
    sql_statement_cleanup(&st);
    return plan;
}

/* The error of sql (fails the test if it compiles). */
static inline struct fr_error compile_err(const char *sql)
{
    struct sql_statement st;
    struct fr_error err;
    fr_error_init(&err);
    int rc = sql_compile(sql, &test_catalog, &st, &err);
    if (rc == FR_OK) {
        char *p = json_dumps(st.plan, JSON_COMPACT);
        fail_msg("%s: compiled, expected an error: %s", sql, p);
    }
    return err;
}

static json_t *table_rows(struct df_table *const *parts, int n)
{
    json_t *rows = json_array();
    for (int i = 0; i < n; i++) {
        struct fr_buf b;
        fr_buf_init(&b);
        fr_buf_putc(&b, '[');
        df_write_json_rows(parts[i], 0, parts[i]->nrows, &b);
        fr_buf_putc(&b, ']');
        json_t *r = json_loadb(b.data, b.len, 0, NULL);
        json_array_extend(rows, r);
        json_decref(r);
        fr_buf_cleanup(&b);
    }
    return rows;
}

/* new: the rows (objects) of plan run under config `variant` (JSON). */
static json_t *run_plan(json_t *plan, const char *variant, struct fr_error *err)
{
    struct cfg base, cfg;
    cfg_defaults(&base);
    json_t *errors = NULL, *v = json_loads(variant ? variant : "{}", 0, NULL);
    assert_int_equal(cfg_apply_json(&base, v, &cfg, &errors), FR_OK);
    json_decref(v);
    struct plan_env env = {.data_dir = inputs_dir()};
    plan_physical *p = NULL;
    json_t *rows = NULL;
    int rc = plan_build(plan, &cfg, &env, -1, &p, err);
    if (rc == FR_OK) {
        runner *r = NULL;
        assert_int_equal(runner_local_new(cfg_freeze(&cfg), NULL, 2, &r, err), FR_OK);
        runner_query *q = runner_query_new("sql", p);
        assert_int_equal(runner_submit(r, q, err), FR_OK);
        runner_query_wait(q, -1);
        struct df_table *const *parts;
        int n;
        if (runner_query_state(q) == RQ_SUCCEEDED && runner_query_result(q, &parts, &n) == FR_OK)
            rows = table_rows(parts, n);
        else
            *err = *runner_query_error(q);
        runner_query_unref(q);
        runner_free(r, NULL);
    }
    cfg_cleanup(&cfg);
    cfg_cleanup(&base);
    return rows;
}

/* new: the rows of sql as compact JSON text (objects, keys in the result's
 * column order), fails the test on an error. */
static inline char *run_sql(const char *sql, const char *variant)
{
    json_t *plan = compile_ok(sql);
    struct fr_error err;
    fr_error_init(&err);
    json_t *rows = run_plan(plan, variant, &err);
    if (!rows) {
        char *p = json_dumps(plan, JSON_COMPACT);
        fail_msg("%s: run failed: %s %s\nplan: %s", sql, err.kind, err.message, p);
    }
    char *s = json_dumps(rows, JSON_COMPACT | JSON_REAL_PRECISION(10));
    json_decref(rows);
    json_decref(plan);
    return s;
}

#endif
