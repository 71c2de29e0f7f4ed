/* Unit tests of sql_compile: the plans' shapes for the key cases (join keys
 * extracted, filters below the joins, semi and anti joins, the window op,
 * hidden ORDER BY columns, the columns a scan reads) and the rows compiled
 * plans give on the golden inputs (expectations computed by DuckDB over the
 * same files). With an argument it is a tool: it prints the plan and rows
 * of that SQL. */
#include "sql_compile_test_util.h"

static void expect_rows(const char *sql, const char *want)
{
    char *got = run_sql(sql, NULL);
    if (strcmp(got, want) != 0)
        fail_msg("%s\n  expected %s\n  got      %s", sql, want, got);
    free(got);
}

/* The first op named `name` in plan's ops (borrowed), or NULL. */
static json_t *find_op(json_t *plan, const char *name)
{
    size_t i;
    json_t *op;
    json_array_foreach(json_object_get(plan, "ops"), i, op)
    {
        if (json_object_get(op, name))
            return json_object_get(op, name);
    }
    return NULL;
}

static int count_ops(json_t *plan, const char *name)
{
    int n = 0;
    size_t i;
    json_t *op;
    json_array_foreach(json_object_get(plan, "ops"), i, op)
    {
        n += json_object_get(op, name) != NULL;
        json_t *j = json_object_get(op, "join");
        if (j)
            n += count_ops(json_object_get(j, "right"), name);
    }
    return n;
}

static void test_single_table(void **state)
{
    (void)state;
    expect_rows("select g, x + 1 as x1 from groups where x > 3 order by x1 desc, g",
                "[[null,8],[\"c\",6],[\"c\",6],[\"d\",5],[\"e\",5]]");
    expect_rows("select g, count(*) as n, sum(x) as sx from groups group by g having count(*) > 1 "
                "order by g",
                "[[\"a\",3,6],[\"b\",2,null],[\"c\",2,10],[\"e\",4,10]]");
    /* || is NULL when a side is; concat() skips NULLs and takes any type */
    expect_rows("select g || x as gx, concat(g, '-', x, y) as c from groups where x > 4 "
                "order by 2",
                "[[null,\"-73.0\"],[\"c5\",\"c-510.0\"],[\"c5\",\"c-510.0\"]]");
    /* select aliases in WHERE, GROUP BY and HAVING (DuckDB) */
    expect_rows("select g, x * 2 as x2 from groups where x2 > 8 order by x2, g",
                "[[\"c\",10],[\"c\",10],[null,14]]");
    expect_rows("select g as grp, count(*) as n from groups group by grp having n > 2 order by 1",
                "[[\"a\",3],[\"e\",4]]");
    expect_rows("select g, sum(x) * 2 + max(y) as v from groups group by 1 order by v desc "
                "limit 2",
                "[[\"c\",30.0],[\"e\",25.0]]");
}

/* The scan reads the columns the query uses; a one-table condition runs
 * before the renaming select, in the source's names. */
static void test_scan_columns_and_filter(void **state)
{
    (void)state;
    json_t *plan = compile_ok("select g from groups where x > 3");
    json_t *ops = json_object_get(plan, "ops");
    assert_string_equal(json_string_value(json_object_get(json_array_get(ops, 0), "where")),
                        "(\"x\" > 3)");
    json_t *sel = json_object_get(json_array_get(ops, 1), "select");
    assert_int_equal(json_array_size(sel), 1);
    /* a name no other column of the query has keeps the source's: no copy */
    assert_string_equal(json_string_value(json_array_get(sel, 0)), "\"g\" as \"g\"");
    json_decref(plan);
    /* a self-join: both tables' g stay apart under internal names */
    plan = compile_ok("select a.g, b.g from groups a join groups b on a.x = b.y");
    sel = json_object_get(json_array_get(json_object_get(plan, "ops"), 0), "select");
    char *dump = json_dumps(sel, JSON_COMPACT);
    assert_non_null(strstr(dump, "\\\"g\\\" as \\\"g#"));
    assert_non_null(strstr(dump, "\\\"x\\\" as \\\"x\\\"")); /* b reads y: x is one */
    free(dump);
    json_decref(plan);
}

/* date +/- INTERVAL folds: a timestamp as a value (DuckDB's type), a date in
 * a comparison with a date (no cast per row); decimal literals fold exactly;
 * restored names never reach into string literals. */
static void test_folding(void **state)
{
    (void)state;
    json_t *plan = compile_ok("select count(*) from events where day <= date '2024-03-01' - "
                              "interval '1' day and id > 0.06 - 0.01");
    const char *w = json_string_value(
        json_object_get(json_array_get(json_object_get(plan, "ops"), 0), "where"));
    assert_string_equal(w, "(\"day\" <= date '2024-02-29')");
    w = json_string_value(
        json_object_get(json_array_get(json_object_get(plan, "ops"), 1), "where"));
    assert_string_equal(w, "(\"id\" > 0.05)");
    json_decref(plan);
    expect_rows("select date '2024-01-31' + interval '1' month as t",
                "[[\"2024-02-29T00:00:00Z\"]]");
    expect_rows("select g from groups where s <> '\"g#1\"' and s = 'p' order by g",
                "[[\"a\"],[\"a\"]]");
}

/* FROM a, b WHERE a.k = b.k: a hash join on the keys, the other conditions
 * below it on their own tables. */
static void test_comma_join_keys(void **state)
{
    (void)state;
    json_t *plan = compile_ok("select a.name, b.rv from \"left\" a, \"right\" b "
                              "where a.k = b.k and b.rv > 200 and a.lv < 50");
    json_t *j = find_op(plan, "join");
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "how")), "inner");
    /* equal types: the keys merge into one column (the plan's "on") */
    assert_int_equal(json_array_size(json_object_get(j, "on")), 1);
    json_t *rops = json_object_get(json_object_get(j, "right"), "ops");
    assert_string_equal(json_string_value(json_object_get(json_array_get(rops, 0), "where")),
                        "(\"rv\" > 200)");
    json_t *ops = json_object_get(plan, "ops"); /* the left's condition: on its scan */
    assert_string_equal(json_string_value(json_object_get(json_array_get(ops, 0), "where")),
                        "(\"lv\" < 50)");
    for (size_t i = 1; i < json_array_size(ops); i++) /* none after the join */
        assert_null(json_object_get(json_array_get(ops, i), "where"));
    json_decref(plan);
    /* keys of two types (int64, float64) stay two columns */
    plan = compile_ok("select a.name from \"left\" a join \"right\" b on a.kf = b.k");
    assert_int_equal(json_array_size(json_object_get(find_op(plan, "join"), "left_on")), 1);
    json_decref(plan);
    expect_rows("select a.k, b.k, a.name, b.name, b.rv from \"left\" a, \"right\" b where a.k = "
                "b.k and b.rv < 201 order by 3, 4",
                "[[1,1,\"a\",\"V\",100],[2,2,\"b\",\"X\",200],[2,2,\"b2\",\"X\",200]]");
    expect_rows("select a.name, b.name, b.rv from \"left\" a, \"right\" b where a.k = b.k and "
                "b.rv > 200 order by 1, 2",
                "[[\"b\",\"Y\",201],[\"b2\",\"Y\",201],[\"c\",\"Z\",300]]");
}

/* An OR of ANDs sharing the join equality (TPC-H 19) is a join, not a cross
 * product, and each table gets the OR of its own conditions. */
static void test_or_factor(void **state)
{
    (void)state;
    const char *sql = "select count(*) as n from \"left\" a, \"right\" b where (a.k = b.k and "
                      "a.lv >= 20 and b.rv < 250) or (a.k = b.k and a.lv > 25 and b.rv >= 300)";
    json_t *plan = compile_ok(sql);
    json_t *j = find_op(plan, "join");
    assert_non_null(j);
    json_t *lk = json_object_get(j, "on");
    assert_int_equal(json_array_size(lk), 1);
    assert_string_equal(json_string_value(json_array_get(lk, 0)), "k"); /* one k: merged */
    json_t *rops = json_object_get(json_object_get(j, "right"), "ops");
    assert_non_null(json_object_get(json_array_get(rops, 0), "where"));
    json_decref(plan);
    expect_rows(sql, "[[5]]");
}

static void test_semi_anti(void **state)
{
    (void)state;
    json_t *plan = compile_ok("select name from \"left\" where k in (select k from \"right\" "
                              "where rv > 250)");
    assert_string_equal(json_string_value(json_object_get(find_op(plan, "join"), "how")), "semi");
    json_decref(plan);
    plan = compile_ok("select name from \"left\" l where not exists (select 1 from \"right\" r "
                      "where r.k = l.k)");
    assert_string_equal(json_string_value(json_object_get(find_op(plan, "join"), "how")), "anti");
    json_decref(plan);
    expect_rows("select name from \"left\" where k in (select k from \"right\" where rv > 250) "
                "order by 1",
                "[[\"c\"]]");
    expect_rows("select name from \"left\" l where exists (select 1 from \"right\" r where r.k = "
                "l.k) order by 1",
                "[[\"a\"],[\"b\"],[\"b2\"],[\"c\"]]");
    expect_rows("select name from \"left\" l where not exists (select 1 from \"right\" r where "
                "r.k = l.k) order by 1",
                "[[\"e\"],[\"n\"]]");
    /* NOT IN: a NULL in the subquery empties it; a NULL on the left never qualifies */
    expect_rows("select name from \"left\" where k not in (select k from \"right\")", "[]");
    expect_rows("select name from \"left\" where k not in (select k from \"right\" where k is not "
                "null)",
                "[[\"e\"]]");
}

static void test_scalar_subqueries(void **state)
{
    (void)state;
    /* IN and EXISTS as values: mark joins, NULL where SQL says unknown */
    expect_rows("select k, k in (select k from \"right\") as i, k not in (select k from "
                "\"right\") as ni, exists (select 1 from groups where x = k) as e from \"left\" "
                "order by 1 nulls first",
                "[[null,null,null,false],[1,true,false,true],[2,true,false,true],[2,true,false,"
                "true],[3,true,false,true],[5,null,null,true]]");
    expect_rows("select g from groups where x in (select k from \"left\") or x = 7 order by 1 "
                "nulls first limit 4",
                "[[null],[\"a\"],[\"a\"],[\"a\"]]");
    expect_rows("select name, lv - (select min(rv) from \"right\") as d from \"left\" where k = 1",
                "[[\"a\",-90]]");
    expect_rows("select g, (select count(*) from sortme s where s.grp = groups.g) as n from "
                "groups where x > 3 order by 1 nulls last",
                "[[\"c\",1],[\"c\",1],[\"d\",0],[\"e\",0],[null,0]]");
    expect_rows("select l.name, (select max(rv) from \"right\" r where r.k = l.k) as m from "
                "\"left\" l order by 1",
                "[[\"a\",100],[\"b\",201],[\"b2\",201],[\"c\",300],[\"e\",null],[\"n\",null]]");
}

static void test_window_op(void **state)
{
    (void)state;
    json_t *plan = compile_ok("select g, x, row_number() over (partition by g order by x desc) "
                              "as rn from groups");
    json_t *w = find_op(plan, "window");
    assert_non_null(w);
    assert_int_equal(json_array_size(json_object_get(w, "partition_by")), 1);
    const char *order = json_string_value(json_array_get(json_object_get(w, "order_by"), 0));
    assert_non_null(strstr(order, " desc nulls last"));
    const char *fn = json_string_value(json_array_get(json_object_get(w, "functions"), 0));
    assert_true(strncmp(fn, "row_number() as ", 16) == 0);
    json_decref(plan);
    /* two specs, two ops; an expression over a window result */
    plan = compile_ok("select rank() over (order by x) + 1 as r, sum(x) over (partition by g) "
                      "as s from groups");
    assert_int_equal(count_ops(plan, "window"), 2);
    json_decref(plan);
    expect_rows("select g, x, rank() over (partition by g order by x desc) as r from groups "
                "where g in ('a', 'c') order by g, x",
                "[[\"a\",1,3],[\"a\",2,2],[\"a\",3,1],[\"c\",5,1],[\"c\",5,1]]");
    expect_rows("select g, x, sum(x) over w as s, rank() over w as r from groups where g = 'a' "
                "window w as (partition by g order by x desc) order by x",
                "[[\"a\",1,6,3],[\"a\",2,5,2],[\"a\",3,3,1]]");
    expect_rows("select g, x from groups qualify row_number() over (partition by g order by x "
                "desc nulls last) = 1 and g < 'c' order by g",
                "[[\"a\",3],[\"b\",null]]");
}

/* ORDER BY an expression that is not selected: a hidden column, dropped
 * after the sort. */
static void test_hidden_order_by(void **state)
{
    (void)state;
    json_t *plan = compile_ok("select g from groups order by length(s) desc, g limit 2");
    json_t *drop = find_op(plan, "drop");
    assert_non_null(drop);
    assert_int_equal(json_array_size(drop), 1);
    assert_non_null(find_op(plan, "top_k"));
    json_decref(plan);
    expect_rows("select g, s from groups where s is not null order by upper(s) desc limit 2",
                "[[\"e\",\"y\"],[\"e\",\"x\"]]");
    /* an aggregate only in ORDER BY and HAVING */
    expect_rows("select g from groups group by g having max(y) > 3 order by sum(x) desc",
                "[[\"c\"],[\"e\"],[\"a\"]]");
}

static void test_outer_joins_and_sets(void **state)
{
    (void)state;
    expect_rows("select l.name, r.name from \"left\" l left join \"right\" r on l.k = r.k and "
                "r.rv > 200 order by 1, 2",
                "[[\"a\",null],[\"b\",\"Y\"],[\"b2\",\"Y\"],[\"c\",\"Z\"],[\"e\",null],[\"n\","
                "null]]");
    expect_rows("select k, lv, rv from \"left\" full join \"right\" using (k) where k > 3 order by "
                "k",
                "[[4,null,500],[5,50,null]]");
    expect_rows("select k from \"left\" intersect select k from \"right\" order by 1",
                "[[1],[2],[3],[null]]");
    expect_rows("select k from \"right\" except select k from \"left\"", "[[4]]");
    expect_rows("select * from (values (1, 'a'), (2.5, null)) v order by 1",
                "[[1.0,\"a\"],[2.5,null]]");
    expect_rows("with c(a, n) as (select g, count(*) from groups group by g) select a, n from c "
                "where n > 2 order by a",
                "[[\"a\",3],[\"e\",4]]");
    expect_rows("select a.g, a.x from groups a where a.x = (select max(b.x) from groups b where "
                "b.g = a.g) order by 1, 2",
                "[[\"a\",3],[\"c\",5],[\"c\",5],[\"d\",4],[\"e\",4]]");
    expect_rows("with t as (select g, sum(x) as s from groups group by g) select a.g, b.s from "
                "t a join t b on a.g = b.g where a.s > 9 order by 1",
                "[[\"c\",10],[\"e\",10]]");
}

static void test_config_statements(void **state)
{
    (void)state;
    struct sql_statement st;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(sql_compile("SET Shuffle_Partitions = 4", &test_catalog, &st, &err), FR_OK);
    assert_int_equal(st.kind, SQL_STMT_SET);
    assert_string_equal(st.field, "shuffle_partitions");
    assert_int_equal(json_integer_value(st.value), 4);
    sql_statement_cleanup(&st);
    assert_int_equal(sql_compile("set maintain_order to false;", &test_catalog, &st, &err), FR_OK);
    assert_true(json_is_false(st.value));
    sql_statement_cleanup(&st);
    assert_int_equal(sql_compile("RESET ALL", &test_catalog, &st, &err), FR_OK);
    assert_int_equal(st.kind, SQL_STMT_RESET);
    assert_null(st.field);
    sql_statement_cleanup(&st);
    assert_int_equal(sql_compile("show morsel_size_rows", &test_catalog, &st, &err), FR_OK);
    assert_int_equal(st.kind, SQL_STMT_SHOW);
    assert_string_equal(st.field, "morsel_size_rows");
    sql_statement_cleanup(&st);
    assert_int_equal(sql_compile("explain select g from groups", &test_catalog, &st, &err), FR_OK);
    assert_int_equal(st.kind, SQL_STMT_EXPLAIN);
    assert_non_null(json_object_get(st.plan, "source"));
    sql_statement_cleanup(&st);
}

/* More window calls of one spec than an op holds split into several ops; a
 * string default of a date lag is cast to a date. */
static void test_window_split(void **state)
{
    (void)state;
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "select x");
    for (int i = 0; i < 300; i++)
        fr_buf_printf(&b, ", sum(x) over (partition by g) as s%d", i);
    fr_buf_puts(&b, " from groups where g = 'a' order by x");
    /* a chain of named windows resolves as PostgreSQL does (DuckDB drops the
     * first link's PARTITION BY, so this is not a golden statement) */
    expect_rows("select g, x, sum(x) over w3 as s from groups where g in ('a', 'c') window w1 as "
                "(partition by g), w2 as (w1), w3 as (w2 order by x desc) order by g, x",
                "[[\"a\",1,6],[\"a\",2,5],[\"a\",3,3],[\"c\",5,10],[\"c\",5,10]]");
    char *sql = fr_buf_steal(&b, NULL);
    json_t *plan = compile_ok(sql);
    assert_int_equal(count_ops(plan, "window"), 2);
    json_decref(plan);
    char *got = run_sql(sql, NULL);
    json_t *rows = json_loads(got, 0, NULL);
    assert_int_equal(json_array_size(rows), 3);
    json_t *row = json_array_get(rows, 2);
    assert_int_equal(json_array_size(row), 301);
    assert_int_equal(json_integer_value(json_array_get(row, 300)), 6);
    json_decref(rows);
    free(got);
    free(sql);
    expect_rows("select id, lag(day, 1, '1999-01-01') over (order by id) as p from events "
                "order by id limit 2",
                "[[1,\"1999-01-01\"],[2,\"2024-01-31\"]]");
}

static int debug_main(const char *sql)
{
    struct sql_statement st;
    struct fr_error err;
    fr_error_init(&err);
    if (sql_compile(sql, &test_catalog, &st, &err) != FR_OK) {
        printf("error %d %s: %s (line %lld, column %lld)\n", err.status, err.kind, err.message,
               (long long)err.line, (long long)err.column);
        return 1;
    }
    char *p = json_dumps(st.plan, JSON_INDENT(1) | JSON_COMPACT);
    printf("%s\n", p ? p : "(no plan)");
    free(p);
    if (st.plan) {
        json_t *rows = run_plan(st.plan, NULL, &err);
        char *r = rows ? json_dumps(rows, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
        printf("%s\n", r ? r : err.message);
        free(r);
        json_decref(rows);
    }
    sql_statement_cleanup(&st);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return debug_main(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_table),
        cmocka_unit_test(test_scan_columns_and_filter),
        cmocka_unit_test(test_folding),
        cmocka_unit_test(test_comma_join_keys),
        cmocka_unit_test(test_or_factor),
        cmocka_unit_test(test_semi_anti),
        cmocka_unit_test(test_scalar_subqueries),
        cmocka_unit_test(test_window_op),
        cmocka_unit_test(test_window_split),
        cmocka_unit_test(test_hidden_order_by),
        cmocka_unit_test(test_outer_joins_and_sets),
        cmocka_unit_test(test_config_statements),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
