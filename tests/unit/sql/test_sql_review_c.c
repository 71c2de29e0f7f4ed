/* Unit tests of the compiler's fixes from a review: CTE references bounded
 * (each one compiles its query again), correlated aggregate subqueries over
 * no inner row, NULL in set operations against dates, FULL JOIN ON and
 * qualified stars with USING. */
#include "sql_compile_test_util.h"

/* WITH a0 AS (...), a1 AS (a0 joined with itself), ..., aN: 2^N reads. */
static char *doubling_ctes(int n)
{
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "with a0 as (select k from \"left\")");
    for (int i = 1; i <= n; i++)
        fr_buf_printf(&b, ", a%d as (select x.k from a%d x join a%d y on x.k = y.k)", i, i - 1,
                      i - 1);
    fr_buf_printf(&b, " select count(*) from a%d", n);
    fr_buf_putc(&b, '\0');
    return b.data;
}

static void test_cte_expansion_bounded(void **state)
{
    (void)state;
    for (int n = 12; n <= 25; n += 13) {
        char *sql = doubling_ctes(n);
        struct fr_error err = compile_err(sql);
        assert_int_equal(err.status, FR_EVALIDATION);
        assert_string_equal(err.kind, "unsupported-sql");
        if (!strstr(err.message, "WITH"))
            fail_msg("%s", err.message);
        free(sql);
    }
    /* a few levels still compile and give the join's count */
    char *sql = doubling_ctes(3);
    char *rows = run_sql(sql, NULL);
    assert_string_equal(rows, "[[259]]");
    free(rows);
    free(sql);
}

static void expect_rows(const char *sql, const char *want)
{
    char *rows = run_sql(sql, NULL);
    if (strcmp(rows, want) != 0)
        fail_msg("%s:\n  got  %s\n  want %s", sql, rows, want);
    free(rows);
}

static void test_correlated_empty_group(void **state)
{
    (void)state;
    expect_rows("select name, (select count(rv) + 1 from \"right\" r where r.k = l.k) "
                "from \"left\" l order by name",
                "[[\"a\",2],[\"b\",3],[\"b2\",3],[\"c\",2],[\"e\",1],[\"n\",1]]");
    expect_rows("select name, (select coalesce(max(rv), -5) from \"right\" r where r.k = l.k) "
                "from \"left\" l order by name",
                "[[\"a\",100],[\"b\",201],[\"b2\",201],[\"c\",300],[\"e\",-5],[\"n\",-5]]");
    expect_rows("select name from \"left\" l where "
                "(select count(*) + 0 from \"right\" r where r.k = l.k) = 0 order by name",
                "[[\"e\"],[\"n\"]]");
    expect_rows("select name, (select count(*) from \"right\" r where r.k = l.k "
                "having count(*) > 1) from \"left\" l order by name",
                "[[\"a\",null],[\"b\",2],[\"b2\",2],[\"c\",null],[\"e\",null],[\"n\",null]]");
    expect_rows("select name, (select count(*) from \"right\" r where r.k = l.k "
                "having count(*) = 0) from \"left\" l order by name",
                "[[\"a\",null],[\"b\",null],[\"b2\",null],[\"c\",null],[\"e\",0],[\"n\",0]]");
}

static void test_setop_null_date(void **state)
{
    (void)state;
    expect_rows(
        "select day from events where id < 3 union all select null order by day nulls first",
        "[[null],[\"2024-01-31\"],[\"2024-02-29\"]]");
    expect_rows("select null as d union select day from events where id = 1 order by d nulls last",
                "[[\"2024-01-31\"],[null]]");
}

/* The result's column names of sql, comma-separated. */
static void expect_columns(const char *sql, const char *want)
{
    json_t *plan = compile_ok(sql);
    struct fr_error err;
    fr_error_init(&err);
    struct cfg cfg;
    cfg_defaults(&cfg);
    struct plan_env env = {.data_dir = inputs_dir()};
    plan_physical *p = NULL;
    assert_int_equal(plan_build(plan, &cfg, &env, -1, &p, &err), FR_OK);
    const struct df_schema *s = plan_physical_schema(p);
    char got[512] = "";
    for (int i = 0; i < s->nfields; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "," : "",
                 s->fields[i].name);
    if (strcmp(got, want) != 0)
        fail_msg("%s:\n  got  %s\n  want %s", sql, got, want);
    plan_physical_free(p);
    cfg_cleanup(&cfg);
    json_decref(plan);
}

static void test_stars_and_joins(void **state)
{
    (void)state;
    expect_columns("select * from \"left\" full join \"left\" t on \"left\".k = t.k",
                   "k,kf,name,lv,k_1,kf_1,name_1,lv_1");
    expect_columns("select r.* from \"left\" l join \"right\" r using (k)", "k,kf,name,rv");
    expect_columns("select r.* from \"left\" l left join \"right\" r using (k)", "k,kf,name,rv");
    expect_columns("select l.* from \"left\" l right join \"right\" r using (k)", "k,kf,name,lv");
    expect_columns("select l.*, r.* from \"left\" l full join \"right\" r using (k)",
                   "k,kf,name,lv,k_1,kf_1,name_1,rv");
    expect_columns("select v.* from trips t natural join vendors v", "vendor,name,rating");
    expect_columns("select * from \"left\" l join \"right\" r using (k)",
                   "k,kf,name,lv,kf_1,name_1,rv");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cte_expansion_bounded),
        cmocka_unit_test(test_correlated_empty_group),
        cmocka_unit_test(test_setop_null_date),
        cmocka_unit_test(test_stars_and_joins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
