/* Tests of Parquet scans in the planner (src/plan/plan_parquet.c and its
 * callers in plan_source.c, plan_spec.c, plan_read.c) on the reader's
 * fixture tests/data/parquet/row_groups.parquet (3 row groups: 2048, 2048
 * and 404 rows): tasks are row groups merged up to the max, the filters
 * right after the scan skip groups by statistics (named in a decision),
 * type hints are refused, and a task spec from the network is checked:
 * row groups and columns outside the file are refused, never read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "plan/plan.h"

#define DATA FRAMED_SOURCE_DIR "/tests/data"
#define FILE_ROWS (2048 + 2048 + 404)

static plan_physical *build(const char *text, int64_t max_bytes, struct fr_error *err)
{
    json_error_t jerr;
    json_t *plan = json_loads(text, 0, &jerr);
    if (!plan)
        fail_msg("bad test JSON: %s", jerr.text);
    struct cfg cfg;
    cfg_defaults(&cfg);
    cfg.scan_tasks_max_size_bytes = max_bytes;
    cfg.scan_tasks_min_size_bytes = 1;
    struct plan_env env = {.data_dir = DATA};
    plan_physical *p = NULL;
    fr_error_init(err);
    plan_build(plan, &cfg, &env, -1, &p, err);
    cfg_cleanup(&cfg);
    json_decref(plan);
    return p;
}

static int scan_tasks(const plan_physical *p)
{
    struct plan_stage_view v;
    plan_stage_view(p, 0, &v);
    return v.ntasks;
}

/* The decisions joined by newlines: new. */
static char *decisions(const plan_physical *p)
{
    json_t *ex = plan_physical_explain(p);
    json_t *ds = json_object_get(ex, "decisions");
    size_t i;
    json_t *d;
    char buf[8192] = "";
    json_array_foreach(ds, i, d)
    {
        strncat(buf, json_string_value(json_object_get(d, "decision")),
                sizeof(buf) - strlen(buf) - 2);
        strcat(buf, "\n");
    }
    json_decref(ex);
    return strdup(buf);
}

static void test_tasks_by_row_group(void **state)
{
    (void)state;
    struct fr_error err;
    plan_physical *p = build("{\"source\": {\"path\": \"parquet/row_groups.parquet\"}}", 1, &err);
    assert_non_null(p);
    assert_int_equal(scan_tasks(p), 3);
    char *d = decisions(p);
    assert_non_null(
        strstr(d, "is larger than scan_tasks_max_size_bytes 1 B: a row group is never"));
    free(d);
    json_t *spec = plan_task_spec(p, 0, 1, NULL);
    json_t *in = json_object_get(spec, "input");
    assert_string_equal(json_string_value(json_object_get(in, "format")), "parquet");
    json_t *rgs = json_object_get(in, "row_groups");
    assert_int_equal(json_integer_value(json_array_get(rgs, 0)), 1);
    assert_int_equal(json_integer_value(json_array_get(rgs, 1)), 1);
    json_t *range = json_object_get(in, "range");
    assert_true(json_integer_value(json_array_get(range, 0)) > 0);
    assert_true(json_integer_value(json_array_get(range, 1)) >
                json_integer_value(json_array_get(range, 0)));
    assert_int_equal(json_integer_value(json_array_get(range, 2)), 0);
    assert_int_equal(plan_task_check(spec, &err), FR_OK);
    json_decref(spec);
    plan_physical_free(p);

    p = build("{\"source\": {\"path\": \"parquet/row_groups.parquet\"}}", 1 << 30, &err);
    assert_non_null(p);
    assert_int_equal(scan_tasks(p), 1);
    plan_physical_free(p);
}

/* Runs task `task` of p's scan stage; the rows it gave or -1 on an error. */
static int64_t run_task(json_t *spec, struct fr_error *err)
{
    struct df_options opts;
    memset(&opts, 0, sizeof(opts));
    opts.morsel_size_rows = 1024;
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct df_table **outs = NULL;
    int nouts = 0;
    fr_error_init(err);
    int rc = plan_task_execute(spec, DATA, NULL, NULL, &ex, &outs, &nouts, err);
    int64_t rows = rc == FR_OK ? outs[0]->nrows : -1;
    for (int i = 0; i < nouts; i++)
        df_table_free(outs[i]);
    free(outs);
    return rows;
}

static void test_pruning(void **state)
{
    (void)state;
    struct fr_error err;
    /* no row is null and not null: every group skipped */
    plan_physical *p = build("{\"source\": {\"path\": \"parquet/row_groups.parquet\"}, \"ops\": "
                             "[{\"where\": \"i64 is null and i64 is not null\"}]}",
                             1, &err);
    assert_non_null(p);
    char *d = decisions(p);
    assert_non_null(strstr(d, "row groups skipped by statistics (i64 is null and i64 is not "
                              "null)"));
    free(d);
    plan_physical_free(p);
    /* a filter that no statistics can judge keeps every group */
    p = build("{\"source\": {\"path\": \"parquet/row_groups.parquet\"}, \"ops\": "
              "[{\"where\": \"i64 + 1 > 0\"}]}",
              1, &err);
    assert_non_null(p);
    d = decisions(p);
    assert_non_null(strstr(d, "0 of 3 row groups skipped by statistics"));
    free(d);
    assert_int_equal(scan_tasks(p), 3);
    plan_physical_free(p);
    /* every group ruled out: one task, an empty result of the schema */
    p = build("{\"source\": {\"path\": \"parquet/row_groups.parquet\"}, \"ops\": "
              "[{\"where\": \"i64 = null\"}]}",
              1, &err);
    assert_non_null(p);
    assert_int_equal(scan_tasks(p), 1);
    json_t *spec = plan_task_spec(p, 0, 0, NULL);
    assert_int_equal(json_integer_value(json_array_get(
                         json_object_get(json_object_get(spec, "input"), "row_groups"), 1)),
                     0);
    assert_int_equal(run_task(spec, &err), 0);
    json_decref(spec);
    plan_physical_free(p);
}

static void test_hints_refused(void **state)
{
    (void)state;
    struct fr_error err;
    plan_physical *p = build("{\"source\": {\"path\": \"parquet/row_groups.parquet\", "
                             "\"schema\": {\"i64\": \"string\"}}}",
                             1, &err);
    assert_null(p);
    assert_string_equal(err.kind, "invalid-plan");
    assert_non_null(strstr(err.message, "footer"));
    p = build("{\"source\": {\"path\": \"parquet/row_groups.parquet\", \"options\": "
              "{\"delimiter\": \";\"}}}",
              1, &err);
    assert_null(p);
    assert_string_equal(err.kind, "invalid-plan");
}

/* A spec from the network: bounds checked before anything is read, then
 * against the file's footer. */
static void test_hostile_specs(void **state)
{
    (void)state;
    struct fr_error err;
    plan_physical *p = build("{\"source\": {\"path\": \"parquet/row_groups.parquet\"}}", 1, &err);
    assert_non_null(p);
    json_t *good = plan_task_spec(p, 0, 2, NULL);
    assert_int_equal(run_task(good, &err), 404);
    static const char *const bad_groups[] = {"[-1, 1]", "[0, 99999999]", "[0]",
                                             "\"x\"",   "[1.5, 1]",      "null"};
    for (size_t i = 0; i < sizeof(bad_groups) / sizeof(bad_groups[0]); i++) {
        json_t *spec = json_deep_copy(good);
        json_object_set_new(json_object_get(spec, "input"), "row_groups",
                            json_loads(bad_groups[i], JSON_DECODE_ANY, NULL));
        fr_error_init(&err);
        if (plan_task_check(spec, &err) != FR_EINVAL || strcmp(err.kind, "invalid-task") != 0)
            fail_msg("row_groups %s: expected invalid-task, got %s", bad_groups[i], err.kind);
        json_decref(spec);
    }
    /* within the bounds but outside the file, or a column it lacks */
    json_t *spec = json_deep_copy(good);
    json_object_set_new(json_object_get(spec, "input"), "row_groups", json_pack("[ii]", 2, 5));
    assert_int_equal(run_task(spec, &err), -1);
    assert_string_equal(err.kind, "invalid-task");
    json_decref(spec);
    spec = json_deep_copy(good);
    json_object_set_new(json_object_get(spec, "input"), "columns", json_pack("[i]", 9));
    assert_int_equal(run_task(spec, &err), -1);
    assert_string_equal(err.kind, "invalid-task");
    json_decref(spec);
    /* a schema other than the file's: the file changed since the plan */
    spec = json_deep_copy(good);
    json_object_set_new(json_object_get(spec, "input"), "schema",
                        json_pack("[[ss]]", "i64", "string"));
    assert_int_equal(run_task(spec, &err), -1);
    assert_string_equal(err.kind, "dataset-changed");
    json_decref(spec);
    /* another file at the path (renamed into place since the plan): its
     * size or mtime is not the planned one's, so the read is refused */
    static const char *const ids[] = {"size", "mtime_ns"};
    for (size_t i = 0; i < 2; i++) {
        spec = json_deep_copy(good);
        json_t *in = json_object_get(spec, "input");
        json_object_set_new(in, ids[i],
                            json_integer(json_integer_value(json_object_get(in, ids[i])) + 1));
        assert_int_equal(run_task(spec, &err), -1);
        assert_string_equal(err.kind, "dataset-changed");
        assert_int_equal(err.status, FR_ECONFLICT);
        json_decref(spec);
    }
    /* every row group, one task */
    spec = json_deep_copy(good);
    json_object_set_new(json_object_get(spec, "input"), "row_groups", json_pack("[ii]", 0, 3));
    assert_int_equal(run_task(spec, &err), FILE_ROWS);
    json_decref(spec);
    json_decref(good);
    plan_physical_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tasks_by_row_group),
        cmocka_unit_test(test_pruning),
        cmocka_unit_test(test_hints_refused),
        cmocka_unit_test(test_hostile_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
