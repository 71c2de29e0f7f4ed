/* Tests of the expression language's parts SQL needs (src/engine/engine_expr_*.c):
 * round_even (SQL's CAST of a double to an integer, ties to even), fail_if (a
 * scalar subquery's run-time check: cardinality-violation), and the bounds of
 * long chains: AND/OR of thousands of terms parse (balanced), a chain of more
 * than 1024 arithmetic links is "too long", the tokens are bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "expr_fixture.h"

/* new: the column e gives over the fixture, rendered; NULL and *err set on failure. */
static char *eval_text(const char *text, struct fr_error *err)
{
    struct df_table *t = fixture_table();
    struct df_schema s;
    df_schema_of_table(&s, t);
    df_expr *e = NULL;
    char *out = NULL;
    fr_error_init(err);
    if (df_expr_parse(text, &s, &e, err) == FR_OK) {
        struct df_exec ex;
        df_exec_init(&ex, NULL, NULL);
        struct df_column *col = NULL;
        if (df_expr_eval(e, t, 0, FIX_ROWS, &ex, &col, err) == FR_OK)
            out = fixture_render(col);
        df_column_unref(col);
    }
    df_expr_free(e);
    df_schema_cleanup(&s);
    df_table_free(t);
    return out;
}

static void expect(const char *text, const char *want)
{
    struct fr_error err;
    char *got = eval_text(text, &err);
    if (!got)
        fail_msg("'%s': %s", text, err.message);
    if (strcmp(got, want) != 0)
        fail_msg("'%s':\n  got  %s\n  want %s", text, got, want);
    free(got);
}

static void test_round_even(void **state)
{
    (void)state;
    /* f: 1.5, -2.5, 0, null, 2, 1e300 */
    expect("round_even(f)", "2|-2|0|null|2|1e+300");
    expect("cast(round_even(f) as int64)", "2|-2|0|null|2|null");
    expect("round_even(f + 1)", "2|-2|1|null|3|1e+300");
    expect("round(f)", "2|-3|0|null|2|1e+300");                    /* round: half away from zero */
    expect("round_even(v)", "10|-3|null|0|7|9223372036854775807"); /* other types unchanged */
    expect("cast(round_even(num) as int64)", "12|3|null|null|null|-7");
    /* the functions beside it still check their argument */
    static const char *const bad[] = {"floor(b)", "ceil(s)", "abs(d)", "round(b)"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        struct fr_error err;
        assert_null(eval_text(bad[k], &err));
        assert_non_null(strstr(err.message, "expects a number"));
    }
}

static void test_fail_if(void **state)
{
    (void)state;
    expect("fail_if(id > 100, 'never')", "false|false|false|false|false|false");
    expect("fail_if(b and false, 'never')", "false|false|false|false|false|false");
    struct fr_error err;
    char *got = eval_text("fail_if(id = 4, 'a scalar subquery returned more than one row')", &err);
    assert_null(got);
    assert_string_equal(err.kind, "cardinality-violation");
    assert_string_equal(err.message, "a scalar subquery returned more than one row");
    got = eval_text("fail_if(id = 4, s)", &err); /* the message is a literal */
    assert_null(got);
    assert_non_null(strstr(err.message, "string literal"));
    got = eval_text("fail_if(1, 'x')", &err); /* a bool condition */
    assert_null(got);
}

static char *chain(const char *unit, int n, const char *last)
{
    size_t len = strlen(unit) * (size_t)n + strlen(last) + 1;
    char *s = malloc(len), *p = s;
    for (int k = 0; k < n; k++)
        p += sprintf(p, "%s", unit);
    sprintf(p, "%s", last);
    return s;
}

static void test_long_chains(void **state)
{
    (void)state;
    char *s = chain("id > 0 and ", 5000, "id > 0"); /* 20000 tokens, balanced */
    expect(s, "true|true|true|true|true|true");
    free(s);
    s = chain("id = 99 or ", 5000, "id = 3");
    expect(s, "false|false|true|false|false|false");
    free(s);
    s = chain("id + ", 1000, "id"); /* 1000 links: within the depth bound */
    expect(s, "1001|2002|3003|4004|5005|6006");
    free(s);
    struct fr_error err;
    s = chain("id + ", 3000, "id");
    assert_null(eval_text(s, &err));
    assert_non_null(strstr(err.message, "too long"));
    free(s);
    s = chain("(", 200, "1"); /* real nesting keeps its bound */
    assert_null(eval_text(s, &err));
    assert_non_null(strstr(err.message, "nests deeper than 128"));
    free(s);
    s = chain("1, ", 40000, "1"); /* past the tokens */
    char *call = malloc(strlen(s) + 16);
    sprintf(call, "coalesce(%s)", s);
    assert_null(eval_text(call, &err));
    assert_non_null(strstr(err.message, "too long"));
    free(call);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_even),
        cmocka_unit_test(test_fail_if),
        cmocka_unit_test(test_long_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
