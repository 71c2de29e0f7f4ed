/* Tests of the planner's checks of user plan JSON (src/plan/plan_logical.c,
 * plan_source.c, plan_schema.c): contradicting, unknown and missing members
 * are 400 invalid-plan naming the member; a join's empty suffix is refused
 * (it used to loop forever); schemas past FR_MAX_COLUMNS are 422
 * too-many-columns before any per-column work; a task spec's file path
 * cannot climb out of the data dir (plan_spec.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "plan/plan.h"

/* Builds a plan from JSON text; the status, with err filled in. */
static int build(const char *text, struct fr_error *err)
{
    json_error_t jerr;
    json_t *plan = json_loads(text, 0, &jerr);
    if (!plan)
        fail_msg("bad test JSON: %s: %s", jerr.text, text);
    struct cfg cfg;
    cfg_defaults(&cfg);
    struct plan_env env = {.data_dir = FRAMED_SOURCE_DIR "/tests/data"};
    plan_physical *p = NULL;
    fr_error_init(err);
    int rc = plan_build(plan, &cfg, &env, -1, &p, err);
    plan_physical_free(p);
    cfg_cleanup(&cfg);
    json_decref(plan);
    return rc;
}

/* The plan is refused as kind with a message that holds every word. */
static void expect(const char *text, int status, const char *kind, const char *word1,
                   const char *word2)
{
    struct fr_error err;
    int rc = build(text, &err);
    if (rc != status || strcmp(err.kind, kind) != 0)
        fail_msg("%s\n  expected %d %s, got %d %s: %s", text, status, kind, rc, err.kind,
                 err.message);
    if (word1 && !strstr(err.message, word1))
        fail_msg("%s\n  message lacks '%s': %s", text, word1, err.message);
    if (word2 && !strstr(err.message, word2))
        fail_msg("%s\n  message lacks '%s': %s", text, word2, err.message);
}

static void expect_ok(const char *text)
{
    struct fr_error err;
    if (build(text, &err) != FR_OK)
        fail_msg("%s\n  refused: %s", text, err.message);
}

#define ROWS "{\"rows\": [{\"a\": 1, \"b\": \"x\"}]}"

static void test_source_conflicts(void **state)
{
    (void)state;
    expect("{\"source\": {\"dataset\": \"nope\", \"rows\": [{\"a\": 1}]}}", FR_EINVAL,
           "invalid-plan", "dataset", "rows");
    expect("{\"source\": {\"path\": \"x.csv\", \"rows\": [{\"a\": 1}]}}", FR_EINVAL, "invalid-plan",
           "path", "rows");
    expect("{\"source\": {\"dataset\": \"a\", \"path\": \"x.csv\"}}", FR_EINVAL, "invalid-plan",
           "dataset", "path");
    expect("{\"source\": {\"dataframe\": \"df-1\", \"rows\": []}}", FR_EINVAL, "invalid-plan",
           "dataframe", "rows");
    expect("{\"source\": {\"rows\": [{\"a\": 1}], \"format\": \"csv\"}}", FR_EINVAL, "invalid-plan",
           "format", NULL);
    expect("{\"source\": {}}", FR_EINVAL, "invalid-plan", "dataset", "rows");
    expect_ok("{\"source\": " ROWS "}");
}

static void test_groupby_needs_agg(void **state)
{
    (void)state;
    expect("{\"source\": " ROWS ", \"ops\": [{\"groupby\": [\"a\"]}]}", FR_EINVAL, "invalid-plan",
           "groupby", "agg");
    expect("{\"source\": " ROWS ", \"ops\": [{\"groupby\": [], \"agg\": [\"count(*)\"]}]}",
           FR_EINVAL, "invalid-plan", "groupby", NULL);
    expect_ok("{\"source\": " ROWS ", \"ops\": [{\"groupby\": [\"a\"], \"agg\": [\"count(*)\"]}]}");
    expect_ok("{\"source\": " ROWS ", \"ops\": [{\"agg\": [\"count(*)\"]}]}");
}

static void test_op_members(void **state)
{
    (void)state;
    const char *pre = "{\"source\": " ROWS ", \"ops\": [";
    static const struct {
        const char *op, *word1, *word2;
    } cases[] = {
        {"{\"with_column\": {\"name\": \"c\", \"expr\": \"a\", \"x\": 1}}", "with_column", "x"},
        {"{\"with_column\": {\"name\": \"c\"}}", "with_column", "expr"},
        {"{\"top_k\": {\"k\": 1, \"sort\": [\"a\"], \"bogus\": 1}}", "top_k", "bogus"},
        {"{\"top_k\": {\"sort\": [\"a\"]}}", "top_k", "k"},
        {"{\"join\": {\"right\": {\"source\": " ROWS "}, \"on\": [\"a\"], \"sufix\": \"_r\"}}",
         "join", "sufix"},
        {"{\"join\": {\"right\": {\"source\": " ROWS "}, \"on\": [\"a\"], \"left_on\": [\"a\"], "
         "\"right_on\": [\"a\"]}}",
         "on", "left_on"},
        {"{\"join\": {\"right\": {\"source\": " ROWS "}, \"left_on\": [\"a\"]}}", "right_on", NULL},
        {"{\"join\": {\"right\": {\"source\": " ROWS "}, \"on\": [\"a\"], \"how\": 5}}", "how",
         NULL},
        {"{\"join\": {\"right\": {\"source\": " ROWS "}, \"on\": [\"a\"], \"suffix\": 5}}",
         "suffix", NULL},
        {"{\"distinct\": \"a\"}", "distinct", NULL},
        {"{\"where\": \"a > 0\", \"select\": [\"a\"]}", "where", "select"},
        {"{\"agg\": [\"count(*)\"], \"sort\": [\"a\"]}", "agg", "sort"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *text = fr_xasprintf("%s%s]}", pre, cases[i].op);
        expect(text, FR_EINVAL, "invalid-plan", cases[i].word1, cases[i].word2);
        free(text);
    }
}

/* "suffix": "" used to loop forever once a right column clashed. */
/* A sort key that is not a string is refused by the sort, also after an
 * expression key (the expansion used to stop there and sort by the keys
 * before it only). */
static void test_sort_non_string_key(void **state)
{
    (void)state;
    expect("{\"source\": " ROWS ", \"ops\": [{\"sort\": [\"length(b)\", 5]}]}", FR_EINVAL,
           "invalid-plan", "sort", NULL);
    expect("{\"source\": " ROWS ", \"ops\": [{\"sort\": [\"a\", \"length(b) desc\", null]}]}",
           FR_EINVAL, "invalid-plan", "sort", NULL);
    expect_ok("{\"source\": " ROWS ", \"ops\": [{\"sort\": [\"length(b)\", \"a\"]}]}");
}

static void test_join_empty_suffix(void **state)
{
    (void)state;
    expect("{\"source\": " ROWS ", \"ops\": [{\"join\": {\"right\": {\"source\": " ROWS
           "}, \"on\": [\"a\"], \"suffix\": \"\"}}]}",
           FR_EINVAL, "invalid-plan", "suffix", NULL);
    expect_ok("{\"source\": " ROWS ", \"ops\": [{\"join\": {\"right\": {\"source\": " ROWS
              "}, \"on\": [\"a\"], \"suffix\": \"_r\"}}]}");
}

/* A left side with b, b_r, b_r_r, ... (n names) and a right side with b:
 * the dedup ends, either with a name or with a 400, and never past limits. */
static void test_join_suffix_chain(void **state)
{
    (void)state;
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "{\"source\": {\"rows\": [{\"a\": 1");
    for (int i = 0, len = 0; i < 200; i++, len += 2) {
        fr_buf_printf(&b, ", \"b");
        for (int k = 0; k < i; k++)
            fr_buf_puts(&b, "_r");
        fr_buf_puts(&b, "\": 1");
        (void)len;
    }
    fr_buf_puts(&b, "}]}, \"ops\": [{\"join\": {\"right\": {\"source\": " ROWS
                    "}, \"on\": [\"a\"], \"suffix\": \"_r\"}}]}");
    expect(b.data, FR_EINVAL, "invalid-plan", "suffix", NULL);
    fr_buf_cleanup(&b);
}

static void test_plan_column_limit(void **state)
{
    (void)state;
    /* one inline row with 1e5 keys: the old inference took 44 s */
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "{\"source\": {\"rows\": [{");
    for (int i = 0; i < 100000; i++)
        fr_buf_printf(&b, i ? ",\"k%d\":%d" : "\"k%d\":%d", i, i);
    fr_buf_puts(&b, "}]}}");
    expect(b.data, FR_EVALIDATION, "too-many-columns", "10000", NULL);
    fr_buf_cleanup(&b);

    /* 6000 + 6000 columns joined: over the limit only after the join */
    fr_buf_init(&b);
    fr_buf_puts(&b, "{\"source\": {\"rows\": [{\"a\": 1");
    for (int i = 0; i < 6000; i++)
        fr_buf_printf(&b, ",\"l%d\":1", i);
    fr_buf_puts(&b, "}]}, \"ops\": [{\"join\": {\"on\": [\"a\"], \"right\": {\"source\": "
                    "{\"rows\": [{\"a\": 1");
    for (int i = 0; i < 6000; i++)
        fr_buf_printf(&b, ",\"r%d\":1", i);
    fr_buf_puts(&b, "}]}}}}]}");
    expect(b.data, FR_EVALIDATION, "too-many-columns", "10000", NULL);
    fr_buf_cleanup(&b);

    /* a select of 20000 expressions */
    fr_buf_init(&b);
    fr_buf_puts(&b, "{\"source\": " ROWS ", \"ops\": [{\"select\": [\"a\"");
    for (int i = 0; i < 20000; i++)
        fr_buf_printf(&b, ",\"a + %d as c%d\"", i, i);
    fr_buf_puts(&b, "]}]}");
    expect(b.data, FR_EVALIDATION, "too-many-columns", "10000", NULL);
    fr_buf_cleanup(&b);

    /* schema hints count too */
    fr_buf_init(&b);
    fr_buf_puts(&b, "{\"source\": {\"rows\": [{\"a\": 1}], \"schema\": {\"a\": \"int64\"");
    for (int i = 0; i < 20000; i++)
        fr_buf_printf(&b, ",\"h%d\":\"int64\"", i);
    fr_buf_puts(&b, "}}}");
    expect(b.data, FR_EVALIDATION, "too-many-columns", "10000", NULL);
    fr_buf_cleanup(&b);
}

/* A task spec's file path stays inside the data dir by its text alone:
 * a ".." above it, an absolute path or an empty one is 400 invalid-task
 * before any file is looked at (plan_spec.c). */
static void test_task_file_path(void **state)
{
    (void)state;
    const char *paths[] = {"../etc/passwd", "sub/../../x.csv", "/etc/passwd", "",
                           "./..",          "a//../.."};
    const char *inside[] = {"a.csv", "./a.csv", "sub/../a.csv", "sub/./b/../../a.csv", "a..b.csv"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) + sizeof(inside) / sizeof(inside[0]);
         i++) {
        bool bad = i < sizeof(paths) / sizeof(paths[0]);
        json_t *spec = json_pack("{s{ss ss ss s[iii]}}", "input", "kind", "file", "path",
                                 bad ? paths[i] : inside[i - sizeof(paths) / sizeof(paths[0])],
                                 "format", "csv", "range", 0, 10, 1);
        struct fr_error err;
        fr_error_init(&err);
        int rc = plan_task_check(spec, &err);
        if (bad && (rc != FR_EINVAL || strcmp(err.kind, "invalid-task") != 0))
            fail_msg("path %s: expected invalid-task, got %d %s", paths[i], rc, err.kind);
        if (!bad && rc != FR_OK)
            fail_msg("an inside path refused: %s", err.message);
        json_decref(spec);
    }
}

/* A scan task names the file as it was planned (the size its ranges were cut
 * from), not as it is when the task is dispatched: a file rewritten between
 * the two then fails the worker's size/ETag check instead of being read with
 * ranges cut from another file. */
static void test_task_names_the_planned_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/framed-test-plan-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/t.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("a\n1\n2\n", f);
    fclose(f);
    json_t *plan = json_pack("{s{ss}}", "source", "dataset", "t");
    struct cfg cfg;
    cfg_defaults(&cfg);
    struct plan_env env = {.data_dir = dir};
    plan_physical *p = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(plan_build(plan, &cfg, &env, -1, &p, &err), FR_OK);
    f = fopen(path, "a"); /* rewritten after the plan, before the dispatch */
    assert_non_null(f);
    fputs("3\n4\n", f);
    fclose(f);
    json_t *spec = plan_task_spec(p, 0, 0, NULL);
    json_t *in = json_object_get(spec, "input");
    assert_string_equal(json_string_value(json_object_get(in, "kind")), "file");
    assert_int_equal(json_integer_value(json_object_get(in, "size")), 6);
    assert_true(json_integer_value(json_object_get(in, "mtime_ns")) > 0);
    /* run here (the local runner), the task refuses the rewritten file */
    struct df_options opts;
    memset(&opts, 0, sizeof(opts));
    opts.morsel_size_rows = 1024;
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct df_table **outs = NULL;
    int nouts = 0;
    fr_error_init(&err);
    assert_int_equal(plan_task_execute(spec, dir, NULL, NULL, &ex, &outs, &nouts, &err),
                     FR_ECONFLICT);
    assert_string_equal(err.kind, "dataset-changed");
    assert_non_null(strstr(err.message, "t.csv"));
    json_decref(spec);
    plan_physical_free(p);
    cfg_cleanup(&cfg);
    json_decref(plan);
    unlink(path);
    rmdir(dir);
}

/* A window op whose keys are expressions expands into with_column, window
 * and drop: the hidden columns avoid the functions' aliases, and an error
 * names the op as the user wrote it (the index before the expansion). */
static void test_window_expansion(void **state)
{
    (void)state;
    const char *src = "{\"source\":{\"rows\":[{\"k\":\"a\",\"t\":1}]},\"ops\":[";
    char *p = fr_xasprintf("%s{\"window\":{\"partition_by\":[\"upper(k)\"],\"order_by\":"
                           "[\"t + 1\"],\"functions\":[\"rank() as __win0\",\"count(*) as "
                           "__win1\"]}}]}",
                           src);
    expect_ok(p);
    free(p);
    p = fr_xasprintf("%s{\"where\":\"t > 0\"},{\"window\":{\"partition_by\":[\"upper(k)\"],"
                     "\"functions\":[\"rank() as k\"]}}]}",
                     src);
    expect(p, FR_EINVAL, "invalid-plan", "ops[1]: window", "'k'");
    free(p);
    p = fr_xasprintf("%s{\"window\":{\"partition_by\":[\"upper(k)\"],\"functions\":"
                     "[\"rank() as r\"]}},{\"sort\":[\"t + 1\"]},{\"limit\":-1}]}",
                     src);
    expect(p, FR_EINVAL, "invalid-plan", "ops[2]", NULL);
    free(p);
}

/* A renamed column ("a as x", "\"b c\" as y") is passed by reference in the task's project
 * step, as a column item, never re-evaluated as an expression (a copy per morsel); the
 * optimizer's column pruning still reads a name that needs quotes. */
static void test_rename_by_reference(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *plan =
        json_loads("{\"source\": {\"rows\": [{\"a\": 1, \"b c\": 2, \"d\": 3}]},"
                   " \"ops\": [{\"select\": [\"a as x\", \"\\\"b c\\\" as y\", \"a\"]}]}",
                   0, &jerr);
    assert_non_null(plan);
    struct cfg cfg;
    cfg_defaults(&cfg);
    struct plan_env env = {.data_dir = "."};
    plan_physical *p = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(plan_build(plan, &cfg, &env, -1, &p, &err), FR_OK);
    json_t *spec = plan_task_spec(p, 0, 0, NULL);
    char *text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(strstr(text, "{\"col\":\"a\",\"name\":\"x\"}"));
    assert_non_null(strstr(text, "{\"col\":\"b c\",\"name\":\"y\"}"));
    assert_null(strstr(text, "\"expr\":\"a as x\""));
    free(text);
    struct df_options opts;
    memset(&opts, 0, sizeof(opts));
    opts.morsel_size_rows = 1024;
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct df_table **outs = NULL;
    int nouts = 0;
    assert_int_equal(plan_task_execute(spec, ".", NULL, NULL, &ex, &outs, &nouts, &err), FR_OK);
    assert_int_equal(nouts, 1);
    assert_int_equal(outs[0]->ncols, 3);
    assert_string_equal(outs[0]->names[1], "y");
    assert_int_equal(outs[0]->nrows, 1);
    for (int i = 0; i < nouts; i++)
        df_table_free(outs[i]);
    free(outs);
    json_decref(spec);
    plan_physical_free(p);
    cfg_cleanup(&cfg);
    json_decref(plan);
}

/* plan_schema gives plan_build's output schema (the SQL catalog's lookups use it), and its
 * errors. */
static void test_plan_schema(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *plan =
        json_loads("{\"source\": {\"rows\": [{\"a\": 1, \"b\": \"x\"}]},"
                   " \"ops\": [{\"with_column\": {\"name\": \"c\", \"expr\": \"a * 1.5\"}}]}",
                   0, &jerr);
    struct cfg cfg;
    cfg_defaults(&cfg);
    struct plan_env env = {.data_dir = "."};
    struct fr_error err;
    fr_error_init(&err);
    struct df_schema s;
    assert_int_equal(plan_schema(plan, &cfg, &env, &s, &err), FR_OK);
    plan_physical *p = NULL;
    assert_int_equal(plan_build(plan, &cfg, &env, -1, &p, &err), FR_OK);
    const struct df_schema *b = plan_physical_schema(p);
    assert_int_equal(s.nfields, 3);
    assert_int_equal(s.nfields, b->nfields);
    for (int i = 0; i < s.nfields; i++) {
        assert_string_equal(s.fields[i].name, b->fields[i].name);
        assert_int_equal(s.fields[i].type, b->fields[i].type);
    }
    assert_int_equal(s.fields[2].type, DF_TYPE_FLOAT64);
    df_schema_cleanup(&s);
    plan_physical_free(p);
    json_decref(plan);
    plan = json_pack("{s{ss}}", "source", "dataset", "no_such_dataset");
    assert_int_equal(plan_schema(plan, &cfg, &env, &s, &err), FR_ENOTFOUND);
    df_schema_cleanup(&s);
    json_decref(plan);
    cfg_cleanup(&cfg);
}

/* A preview's aggregation groups its few rows in one final partition: no
 * stage splits its output into shuffle_partitions buckets (q10's preview
 * spent most of its time on that split). The full plan still does. */
static int64_t most_buckets(const char *text, int64_t preview_rows)
{
    json_t *plan = json_loads(text, 0, NULL);
    assert_non_null(plan);
    struct cfg cfg;
    cfg_defaults(&cfg);
    cfg.maintain_order = false; /* else one final partition keeps the groups' order */
    struct plan_env env = {.data_dir = ".", .preview_scan_rows = preview_rows};
    struct fr_error err;
    fr_error_init(&err);
    plan_physical *p = NULL;
    assert_int_equal(plan_build(plan, &cfg, &env, preview_rows > 0 ? preview_rows : -1, &p, &err),
                     FR_OK);
    int64_t most = 0;
    for (int s = 0; s < plan_physical_nstages(p); s++) {
        struct plan_stage_view v;
        plan_stage_view(p, s, &v);
        most = v.nbuckets > most ? v.nbuckets : most;
        most = v.ntasks > most ? v.ntasks : most;
    }
    plan_physical_free(p);
    cfg_cleanup(&cfg);
    json_decref(plan);
    return most;
}

static void test_preview_agg_one_partition(void **state)
{
    (void)state;
    const char *text = "{\"source\": " ROWS ", \"ops\": [{\"groupby\": [\"b\"], "
                       "\"agg\": [\"sum(a) as s\", \"count(*) as n\"]}]}";
    struct cfg cfg;
    cfg_defaults(&cfg);
    assert_true(cfg.shuffle_partitions > 1);
    assert_int_equal(most_buckets(text, -1), cfg.shuffle_partitions);
    assert_int_equal(most_buckets(text, 100), 1);
    cfg_cleanup(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_expansion),
        cmocka_unit_test(test_source_conflicts),
        cmocka_unit_test(test_groupby_needs_agg),
        cmocka_unit_test(test_op_members),
        cmocka_unit_test(test_join_empty_suffix),
        cmocka_unit_test(test_join_suffix_chain),
        cmocka_unit_test(test_plan_column_limit),
        cmocka_unit_test(test_task_file_path),
        cmocka_unit_test(test_sort_non_string_key),
        cmocka_unit_test(test_task_names_the_planned_file),
        cmocka_unit_test(test_rename_by_reference),
        cmocka_unit_test(test_plan_schema),
        cmocka_unit_test(test_preview_agg_one_partition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
