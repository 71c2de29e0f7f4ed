/* Tests of the parser's flat chains (src/sql/sql_parse_expr.c, sql_parse_query.c,
 * sql_parse_from.c): thousands of AND, OR, ||, +, -, * links and UNION [ALL]
 * parts parse into trees a few levels deep (balanced); short chains keep their
 * left-deep shape; joins are bounded by their count; SET x = DEFAULT is RESET. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql_ast.h"

static char *repeat(const char *head, const char *unit, int n, const char *last)
{
    size_t len = strlen(head) + strlen(unit) * (size_t)n + strlen(last);
    char *s = malloc(len + 1), *p = s;
    p += sprintf(p, "%s", head);
    for (int k = 0; k < n; k++)
        p += sprintf(p, "%s", unit);
    sprintf(p, "%s", last);
    return s;
}

static int expr_depth(const struct sql_expr *e)
{
    int d = 0;
    for (int i = 0; e && i < e->nargs; i++) {
        int k = expr_depth(e->args[i]);
        if (k > d)
            d = k;
    }
    return e ? d + 1 : 0;
}

static int query_depth(const struct sql_query *q)
{
    if (!q)
        return 0;
    int l = query_depth(q->left), r = query_depth(q->right);
    return 1 + (l > r ? l : r);
}

static struct sql_stmt *parses(const char *s)
{
    struct sql_stmt *st = NULL;
    struct fr_error err;
    fr_error_init(&err);
    if (sql_parse(s, &st, &err) != FR_OK)
        fail_msg("must parse: %s (%.80s)", err.message, s);
    return st;
}

static void test_expression_chains(void **state)
{
    (void)state;
    static const char *const units[][2] = {
        {"1 + ", "1"},        {"1 - ", "1"},      {"2 * ", "2"},    {"true and ", "true"},
        {"true or ", "true"}, {"'a' || ", "'a'"}, {"1 - 1 + ", "1"}};
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
        char *s = repeat("select ", units[k][0], 5000, units[k][1]);
        struct sql_stmt *st = parses(s);
        int d = expr_depth(st->query->select->items[0].expr);
        if (d > 20)
            fail_msg("%s x 5000: depth %d", units[k][0], d);
        sql_stmt_free(st);
        free(s);
    }
    /* WHERE with a thousand conditions (the review's 63 failed) */
    char *w = repeat("select a from t where ", "v = 1 and ", 999, "v = 1");
    struct sql_stmt *st = parses(w);
    assert_true(expr_depth(st->query->select->where) <= 20);
    sql_stmt_free(st);
    free(w);
}

static void test_short_chains_keep_their_shape(void **state)
{
    (void)state;
    struct sql_stmt *st = parses("select a + b + c, a - b - c, x and y and z");
    char *dump = sql_ast_dump(st);
    assert_non_null(strstr(dump, "(+ (+ a b) c)"));
    assert_non_null(strstr(dump, "(- (- a b) c)"));
    assert_non_null(strstr(dump, "(and (and x y) z)"));
    free(dump);
    sql_stmt_free(st);
}

static void test_set_chains(void **state)
{
    (void)state;
    for (int all = 0; all < 2; all++) {
        char *s = repeat("select 1", all ? " union all select 1" : " union select 1", 3000, "");
        struct sql_stmt *st = parses(s);
        assert_true(query_depth(st->query) <= 20);
        sql_stmt_free(st);
        free(s);
    }
    /* mixed UNION and UNION ALL are not associative: left-deep, bounded */
    char *m = repeat("select 1", " union select 1 union all select 1", 100, "");
    struct sql_stmt *st = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_not_equal(sql_parse(m, &st, &err), FR_OK);
    assert_non_null(strstr(err.message, "nests deeper than 64 levels"));
    free(m);
}

static void test_join_chains(void **state)
{
    (void)state;
    char *s = repeat("select * from t", " left join t using (a)", 200, "");
    struct sql_stmt *st = parses(s);
    sql_stmt_free(st);
    free(s);
    s = repeat("select * from t", ", t", 200, "");
    st = parses(s);
    sql_stmt_free(st);
    free(s);
    s = repeat("select * from t", " join t using (a)", 300, "");
    struct fr_error err;
    fr_error_init(&err);
    st = NULL;
    assert_int_not_equal(sql_parse(s, &st, &err), FR_OK);
    assert_string_equal(err.kind, "invalid-sql");
    assert_non_null(strstr(err.message, "more than 256 tables"));
    free(s);
}

static void test_set_default_is_reset(void **state)
{
    (void)state;
    static const char *const resets[] = {"SET csv_null_values = DEFAULT", "set x to default",
                                         "SET x = Default;"};
    for (size_t k = 0; k < sizeof resets / sizeof resets[0]; k++) {
        struct sql_stmt *st = parses(resets[k]);
        assert_int_equal(st->kind, SQL_AST_RESET);
        assert_non_null(st->field.text);
        assert_null(st->value);
        sql_stmt_free(st);
    }
    struct sql_stmt *st = parses("SET x = 'DEFAULT'"); /* a string, as PostgreSQL */
    assert_int_equal(st->kind, SQL_AST_SET);
    assert_string_equal(st->value->text, "DEFAULT");
    sql_stmt_free(st);
    st = parses("SET x TO word"); /* a bare word stays a string */
    assert_int_equal(st->kind, SQL_AST_SET);
    assert_string_equal(st->value->text, "word");
    sql_stmt_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expression_chains),
        cmocka_unit_test(test_short_chains_keep_their_shape),
        cmocka_unit_test(test_set_chains),
        cmocka_unit_test(test_join_chains),
        cmocka_unit_test(test_set_default_is_reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
