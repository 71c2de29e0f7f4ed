/* Tests of the tokenizer, parser and binder (src/engine/engine_expr_lex.c,
 * engine_expr_parse.c, engine_expr_bind.c): a golden table of errors with
 * their position and message, names, aliases and the columns an expression
 * reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "expr_fixture.h"

struct bad {
    const char *expr;
    int64_t position;
    const char *message; /* a substring of err.message */
    const char *field;   /* err.field, NULL when it must be empty */
};

static const struct bad bad_cases[] = {
    {"fair + 1", 0, "unknown column 'fair' at position 0; did you mean 'fare'?", "fair"},
    {"1 + zzz", 4, "unknown column 'zzz' at position 4", "zzz"},
    {"FARE > 1", 0, "did you mean 'fare'?", "FARE"},
    {"id + ida", 5, "unknown column 'ida' at position 5; did you mean 'id'?", "ida"},
    {"uper(s)", 0, "unknown function 'uper' at position 0; did you mean 'upper'?", NULL},
    {"foo(s)", 0, "unknown function 'foo' at position 0", NULL},
    {"(v + 1", 6, "expected ')' at position 6", NULL},
    {"abs(v", 5, "expected ')' at position 5", NULL},
    {"v +", 3, "expected an expression at position 3", NULL},
    {"", 0, "expected an expression at position 0", NULL},
    {"v + * 2", 4, "expected an expression at position 4", NULL},
    {"s + s", 2, "'+' cannot combine string and string (string concatenation is not supported)",
     NULL},
    {"v + s", 2, "'+' cannot combine int64 and string at position 2", NULL},
    {"v * b", 2, "'*' cannot combine int64 and bool", NULL},
    /* '%' is the operator's text: it must not be read as a format directive. */
    {"s % 'B'", 2, "'%' cannot combine string and string at position 2", NULL},
    {"b % v", 2, "'%' cannot combine bool and int64 at position 2", NULL},
    {"'abc", 0, "unterminated string starting at position 0", NULL},
    {"\"abc", 0, "unterminated quoted name", NULL},
    {"v # 1", 2, "unexpected character '#' at position 2", NULL},
    {"cast(v as blob)", 10, "unknown type 'blob' at position 10", NULL},
    {"cast(d as int64)", 0, "cannot cast date to int64", NULL},
    {"cast(v as)", 9, "expected a type name at position 9", NULL},
    {"d = 'notadate'", 4, "'notadate' is not a valid date at position 4", NULL},
    {"v = 'x'", 2, "'=' cannot combine int64 and string at position 2", NULL},
    {"v in (1, 'a')", 2, "'in' cannot combine int64 and string", NULL},
    {"v between 1 and 'z'", 2, "'between' cannot combine", NULL},
    {"not v", 4, "not expects a bool, got int64 at position 4", NULL},
    {"v and b", 0, "and expects a bool, got int64", NULL},
    {"sum(v)", 0, "aggregate 'sum' at position 0 is not allowed in a row expression", NULL},
    {"v + 1 extra", 6, "expected an operator or the end of the expression at position 6", NULL},
    {"substr(s)", 0, "substr at position 0 takes 2 to 3 arguments, got 1", NULL},
    {"case v when 1 then 2 end", 5, "expected 'when' at position 5", NULL},
    {"case when b then 1", 18, "expected 'end' at position 18", NULL},
    {"date '2024-13-01'", 5, "invalid date literal '2024-13-01' at position 5", NULL},
    {"timestamp 'x'", 10, "invalid timestamp literal", NULL},
    {"length(v)", 7, "length expects a string, got int64 at position 7", NULL},
    {"year(s)", 5, "year expects a date or timestamp, got string", NULL},
    {"round(f, 1.5)", 9, "round expects an integer, got float64", NULL},
    {"case when 1 then 2 end", 10, "case when expects a bool, got int64", NULL},
    {"case when b then 1 else 'x' end", 24, "case results mix int64 and string", NULL},
    {"coalesce(v, s)", 0, "coalesce cannot combine int64 and string", NULL},
    {"v like 'a'", 0, "like expects a string, got int64", NULL},
    {"-s", 0, "unary '-' needs a number, got string", NULL},
    {"v + 1 as", 8, "expected an alias at position 8", NULL},
    {"v is 1", 5, "expected 'null' at position 5", NULL},
    {"v not 1", 6, "expected 'in', 'between' or 'like' at position 6", NULL},
    {"v in ()", 6, "expected an expression at position 6", NULL},
    {"and", 0, "expected an expression at position 0, found 'and'", NULL},
    {"abs(v, 1)", 0, "abs at position 0 takes 1 to 1 arguments, got 2", NULL},
    {"v \xc3\xa9", 2, "unexpected byte 0xc3 at position 2", NULL},
};

static struct df_schema test_schema(void)
{
    struct df_table *t = fixture_table();
    struct df_schema s;
    df_schema_of_table(&s, t);
    df_table_free(t);
    df_schema_add(&s, "fare", DF_TYPE_FLOAT64);
    return s;
}

/* A spec or plan item that is not a string reaches the parser as NULL
 * (json_string_value): an error, not a read through NULL (found by
 * fuzz_task). */
static void test_null_text(void **state)
{
    (void)state;
    struct df_schema s = test_schema();
    struct fr_error err;
    fr_error_init(&err);
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse(NULL, &s, &e, &err), FR_EINVAL);
    assert_null(e);
    assert_non_null(strstr(err.message, "an expression must be a string"));
    struct df_agg_item it;
    fr_error_init(&err);
    assert_int_equal(df_agg_item_parse(NULL, &s, &it, &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "an expression must be a string"));
    df_agg_item_cleanup(&it);
    df_schema_cleanup(&s);
}

static void test_errors(void **state)
{
    (void)state;
    struct df_schema s = test_schema();
    for (size_t k = 0; k < sizeof(bad_cases) / sizeof(bad_cases[0]); k++) {
        const struct bad *b = &bad_cases[k];
        struct fr_error err;
        fr_error_init(&err);
        df_expr *e = NULL;
        int rc = df_expr_parse(b->expr, &s, &e, &err);
        if (rc != FR_EINVAL)
            fail_msg("'%s': status %d, want FR_EINVAL", b->expr, rc);
        assert_null(e);
        if (!strstr(err.message, b->message))
            fail_msg("'%s':\n  got  %s\n  want %s", b->expr, err.message, b->message);
        if (err.position != b->position)
            fail_msg("'%s': position %lld, want %lld (%s)", b->expr, (long long)err.position,
                     (long long)b->position, err.message);
        assert_string_equal(err.field, b->field ? b->field : "");
    }
    df_schema_cleanup(&s);
}

static void test_no_suggestion_when_far(void **state)
{
    (void)state;
    struct df_schema s = test_schema();
    struct fr_error err;
    fr_error_init(&err);
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse("zzzz", &s, &e, &err), FR_EINVAL);
    assert_string_equal(err.message, "unknown column 'zzzz' at position 0");
    fr_error_init(&err);
    assert_int_equal(df_expr_parse("x", &s, &e, &err), FR_EINVAL);
    assert_null(strstr(err.message, "did you mean"));
    df_schema_cleanup(&s);
}

struct named {
    const char *expr;
    const char *name;
    int column_index;
};

static void test_names_and_aliases(void **state)
{
    (void)state;
    static const struct named cases[] = {
        {"v", "v", 1},
        {"  v + 1  ", "v + 1", -1},
        {"v + 1 as w1", "w1", -1},
        {"v AS \"my col\"", "my col", 1},
        {"(v)", "v", 1},
        {"\"we\"\"ird\"", "we\"ird", 8},
        {"s as \"a\"\"b\"", "a\"b", 3},
        {"upper(s)", "upper(s)", -1},
        {"\"and\"", "and", -1},
    };
    struct df_schema s = test_schema();
    df_schema_add(&s, "and", DF_TYPE_INT64);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct fr_error err;
        fr_error_init(&err);
        df_expr *e = NULL;
        if (df_expr_parse(cases[k].expr, &s, &e, &err) != FR_OK)
            fail_msg("'%s': %s", cases[k].expr, err.message);
        assert_string_equal(df_expr_name(e), cases[k].name);
        if (strcmp(cases[k].expr, "\"and\"") == 0)
            assert_int_equal(df_expr_column_index(e), s.nfields - 1);
        else
            assert_int_equal(df_expr_column_index(e), cases[k].column_index);
        df_expr_free(e);
    }
    df_schema_cleanup(&s);
}

static void test_columns_read(void **state)
{
    (void)state;
    struct df_schema s = test_schema();
    struct fr_error err;
    fr_error_init(&err);
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse("v + id * v > f and s like 'a%'", &s, &e, &err), FR_OK);
    int cols[8], n = 0;
    df_expr_columns(e, cols, &n, 8);
    assert_int_equal(n, 4);
    assert_int_equal(cols[0], 1); /* v */
    assert_int_equal(cols[1], 0); /* id */
    assert_int_equal(cols[2], 2); /* f */
    assert_int_equal(cols[3], 3); /* s */
    n = 0;
    df_expr_columns(e, cols, &n, 2); /* cap respected */
    assert_int_equal(n, 2);
    df_expr_free(e);
    assert_int_equal(df_expr_parse("1 + 2", &s, &e, &err), FR_OK);
    n = 0;
    df_expr_columns(e, cols, &n, 8);
    assert_int_equal(n, 0);
    df_expr_free(e);
    df_schema_cleanup(&s);
}

static void test_keywords_case_insensitive(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "V is Not Null",
        "NOT b OR b",
        "v BeTwEeN 1 AND 2",
        "s NOT LIKE 'a'",
        "CASE WHEN b THEN 1 ELSE 2 END",
        "CAST(v AS DOUBLE)",
        "v IN (1)",
        "TRUE AND FALSE",
        "NULL IS NULL",
        "DATE '2024-01-01' < d",
        "Upper(s)",
        "COALESCE(v, 1)",
    };
    struct df_schema s = test_schema();
    df_schema_add(&s, "V", DF_TYPE_INT64);
    for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++) {
        struct fr_error err;
        fr_error_init(&err);
        df_expr *e = NULL;
        if (df_expr_parse(ok[k], &s, &e, &err) != FR_OK)
            fail_msg("'%s': %s", ok[k], err.message);
        df_expr_free(e);
    }
    df_schema_cleanup(&s);
}

static void test_literal_types(void **state)
{
    (void)state;
    static const struct {
        const char *expr;
        df_type type;
    } cases[] = {
        {"1", DF_TYPE_INT64},
        {"1.5", DF_TYPE_FLOAT64},
        {"1e3", DF_TYPE_FLOAT64},
        {".5", DF_TYPE_FLOAT64},
        {"99999999999999999999", DF_TYPE_FLOAT64},
        {"'it''s'", DF_TYPE_STRING},
        {"true", DF_TYPE_BOOL},
        {"date '2024-01-31'", DF_TYPE_DATE},
        {"timestamp '2024-01-31 10:00:00'", DF_TYPE_TIMESTAMP},
        {"null", DF_TYPE_BOOL}, /* a bare null is typed bool */
    };
    struct df_schema s = test_schema();
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct fr_error err;
        fr_error_init(&err);
        df_expr *e = NULL;
        if (df_expr_parse(cases[k].expr, &s, &e, &err) != FR_OK)
            fail_msg("'%s': %s", cases[k].expr, err.message);
        if (df_expr_type(e) != cases[k].type)
            fail_msg("'%s': %s", cases[k].expr, df_type_name(df_expr_type(e)));
        df_expr_free(e);
    }
    /* the escape decodes to one quote */
    struct df_table *t = fixture_table();
    struct fr_error err;
    fr_error_init(&err);
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse("'it''s'", &s, &e, &err), FR_OK);
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct df_column *c = NULL;
    assert_int_equal(df_expr_eval(e, t, 0, 1, &ex, &c, &err), FR_OK);
    char *got = fixture_render(c);
    assert_string_equal(got, "it's");
    free(got);
    df_column_unref(c);
    df_expr_free(e);
    df_table_free(t);
    df_schema_cleanup(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_no_suggestion_when_far),
        cmocka_unit_test(test_names_and_aliases),
        cmocka_unit_test(test_columns_read),
        cmocka_unit_test(test_keywords_case_insensitive),
        cmocka_unit_test(test_literal_types),
        cmocka_unit_test(test_null_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
