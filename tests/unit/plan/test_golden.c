/* Golden tests of the planner, the runner and the engine together: every
 * tests/data/golden/<case>.json holds a plan over files in
 * tests/data/golden/inputs/, an optional config, and the expected result
 * (or error). Each case runs under several configs that change how work is
 * cut (many tiny scan tasks, 1 or 5 shuffle partitions, maintain_order off,
 * tiny morsels); every variant must give the expected rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "runner/runner.h"

static const char *golden_dir(void)
{
    static char dir[4096];
    const char *base = getenv("FRAMED_TEST_DATA");
    snprintf(dir, sizeof(dir), "%s/golden", base ? base : FRAMED_SOURCE_DIR "/tests/data");
    return dir;
}

/* Config variants: each changes how the plan is cut, never the answer. */
static const char *const variants[] = {
    "{}",
    "{\"scan_tasks_max_size_bytes\": 64, \"scan_tasks_min_size_bytes\": 1, "
    "\"shuffle_partitions\": 5, \"maintain_order\": false}",
    "{\"scan_tasks_max_size_bytes\": 200, \"scan_tasks_min_size_bytes\": 1, "
    "\"shuffle_partitions\": 1, \"morsel_size_rows\": 3, \"broadcast_join_size_bytes_threshold\": "
    "0}",
    "{\"scan_tasks_max_size_bytes\": 100, \"scan_tasks_min_size_bytes\": 1, "
    "\"shuffle_partitions\": 3, \"sample_size_for_sort\": 1, \"maintain_order\": false, "
    "\"morsel_size_rows\": 2}",
};

static bool values_equal(json_t *a, json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return x == y || fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y));
    }
    return json_equal(a, b);
}

static bool rows_equal(json_t *a, json_t *b)
{
    if (json_array_size(a) != json_array_size(b))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!values_equal(json_array_get(a, i), json_array_get(b, i)))
            return false;
    return true;
}

static int cmp_rows(const void *x, const void *y)
{
    char *a = json_dumps(*(json_t *const *)x, JSON_COMPACT | JSON_REAL_PRECISION(12));
    char *b = json_dumps(*(json_t *const *)y, JSON_COMPACT | JSON_REAL_PRECISION(12));
    int c = strcmp(a, b);
    free(a);
    free(b);
    return c;
}

static json_t *sorted_rows(json_t *rows)
{
    size_t n = json_array_size(rows);
    json_t **v = calloc(n + 1, sizeof(json_t *));
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(rows, i);
    qsort(v, n, sizeof(json_t *), cmp_rows);
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append(out, v[i]);
    free(v);
    return out;
}

static void compare(const char *name, const char *variant, json_t *expect, json_t *got_rows,
                    const struct df_schema *schema)
{
    json_t *cols = json_object_get(expect, "columns");
    for (size_t i = 0; i < json_array_size(cols); i++) {
        json_t *c = json_array_get(cols, i);
        if ((int)i >= schema->nfields ||
            strcmp(schema->fields[i].name, json_string_value(json_object_get(c, "name"))) ||
            strcmp(df_type_name(schema->fields[i].type),
                   json_string_value(json_object_get(c, "type"))))
            fail_msg("%s [%s]: column %zu is %s %s, expected %s", name, variant, i,
                     (int)i < schema->nfields ? schema->fields[i].name : "(none)",
                     (int)i < schema->nfields ? df_type_name(schema->fields[i].type) : "",
                     json_dumps(c, JSON_COMPACT));
    }
    assert_int_equal(schema->nfields, (int)json_array_size(cols));
    json_t *want = json_object_get(expect, "rows");
    bool ordered = json_is_true(json_object_get(expect, "ordered"));
    json_t *a = ordered ? json_incref(want) : sorted_rows(want);
    json_t *b = ordered ? json_incref(got_rows) : sorted_rows(got_rows);
    bool ok = json_array_size(a) == json_array_size(b);
    for (size_t i = 0; ok && i < json_array_size(a); i++)
        ok = rows_equal(json_array_get(a, i), json_array_get(b, i));
    if (!ok) {
        char *w = json_dumps(a, JSON_COMPACT), *g = json_dumps(b, JSON_COMPACT);
        fail_msg("%s [%s]:\n  expected %s\n  got      %s", name, variant, w, g);
    }
    json_decref(a);
    json_decref(b);
}

static json_t *result_rows(runner_query *q)
{
    struct df_table *const *parts;
    int n;
    json_t *rows = json_array();
    if (runner_query_result(q, &parts, &n) != FR_OK)
        return rows;
    for (int i = 0; i < n; i++) {
        struct fr_buf b;
        fr_buf_init(&b);
        fr_buf_putc(&b, '[');
        df_write_json_rows(parts[i], 0, parts[i]->nrows, &b);
        fr_buf_putc(&b, ']');
        json_error_t jerr;
        json_t *r = json_loadb(b.data, b.len, 0, &jerr);
        if (!r)
            fail_msg("result rows are not JSON: %s: %s", jerr.text, b.data);
        json_array_extend(rows, r);
        json_decref(r);
        fr_buf_cleanup(&b);
    }
    return rows;
}

static void run_case(const char *name, json_t *tc, const char *variant)
{
    struct cfg base, cfg;
    cfg_defaults(&base);
    json_t *errors = NULL, *v = json_loads(variant, 0, NULL);
    json_t *overrides = json_object_get(tc, "config");
    json_t *merged = json_deep_copy(v);
    if (overrides)
        json_object_update(merged, overrides);
    if (cfg_apply_json(&base, merged, &cfg, &errors) != FR_OK)
        fail_msg("%s: bad config %s", name, json_dumps(errors, 0));
    json_decref(merged);
    json_decref(v);
    struct plan_env env = {.data_dir = NULL};
    char inputs[4200];
    snprintf(inputs, sizeof(inputs), "%s/inputs", golden_dir());
    env.data_dir = inputs;
    struct fr_error err;
    fr_error_init(&err);
    plan_physical *p = NULL;
    json_t *expect_error = json_object_get(tc, "expect_error");
    int rc = plan_build(json_object_get(tc, "plan"), &cfg, &env, -1, &p, &err);
    runner *r = NULL;
    runner_query *q = NULL;
    if (rc == FR_OK) {
        assert_int_equal(runner_local_new(cfg_freeze(&cfg), NULL, 2, &r, &err), FR_OK);
        q = runner_query_new("golden", p);
        assert_int_equal(runner_submit(r, q, &err), FR_OK);
        runner_query_wait(q, -1);
        if (runner_query_state(q) != RQ_SUCCEEDED) {
            err = *runner_query_error(q);
            rc = err.status ? err.status : FR_EINTERNAL;
        }
    }
    if (expect_error) {
        const char *kind = json_string_value(json_object_get(expect_error, "kind"));
        const char *contains = json_string_value(json_object_get(expect_error, "contains"));
        if (rc == FR_OK)
            fail_msg("%s [%s]: expected an error %s, got success", name, variant, kind);
        if (kind && strcmp(kind, err.kind) != 0)
            fail_msg("%s [%s]: error kind %s, expected %s (%s)", name, variant, err.kind, kind,
                     err.message);
        if (contains && !strstr(err.message, contains))
            fail_msg("%s [%s]: error '%s' does not contain '%s'", name, variant, err.message,
                     contains);
    } else {
        if (rc != FR_OK)
            fail_msg("%s [%s]: failed: %s %s", name, variant, err.kind, err.message);
        json_t *rows = result_rows(q);
        compare(name, variant, json_object_get(tc, "expect"), rows,
                plan_physical_schema(runner_query_plan(q)));
        json_decref(rows);
    }
    runner_query_unref(q);
    runner_free(r, NULL);
    cfg_cleanup(&cfg);
    cfg_cleanup(&base);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_golden_cases(void **state)
{
    (void)state;
    DIR *d = opendir(golden_dir());
    assert_non_null(d);
    char *names[1024];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 1024) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(char *), cmp_names);
    assert_true(n > 0);
    for (int i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof(path), "%s/%s", golden_dir(), names[i]);
        json_error_t jerr;
        json_t *tc = json_load_file(path, 0, &jerr);
        if (!tc)
            fail_msg("%s: %s (line %d)", names[i], jerr.text, jerr.line);
        bool single = json_is_true(json_object_get(tc, "single_variant"));
        for (size_t k = 0; k < (single ? 1 : sizeof(variants) / sizeof(variants[0])); k++)
            run_case(names[i], tc, variants[k]);
        json_decref(tc);
        free(names[i]);
    }
    printf("[ golden   ] %d cases x %zu config variants\n", n,
           sizeof(variants) / sizeof(variants[0]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
