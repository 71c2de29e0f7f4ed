/* Unit tests of sql_compile: the plans' shapes for the key cases and the
 * rows they give on the golden inputs. With an argument it is a tool: it
 * prints the plan and the rows of that SQL. */
#include "sql_compile_test_util.h"

static void expect_rows(const char *sql, const char *want)
{
    char *got = run_sql(sql, NULL);
    if (strcmp(got, want) != 0)
        fail_msg("%s\n  expected %s\n  got      %s", sql, want, got);
    free(got);
}

static void test_single_table(void **state)
{
    (void)state;
    expect_rows("select g, x + 1 as x1 from groups where x > 3 order by x1 desc, g",
                "[{\"g\":null,\"x1\":8},{\"g\":\"c\",\"x1\":6},{\"g\":\"c\",\"x1\":6},"
                "{\"g\":\"d\",\"x1\":5},{\"g\":\"e\",\"x1\":5}]");
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
