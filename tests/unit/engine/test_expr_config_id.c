/* test_expr_config_id: current_config_id() answers the config ID in the
 * task's options where it is evaluated (never folded at parse time), null
 * where none is set, and takes no arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "expr_fixture.h"

/* Evaluates e on t's rows with config_id in the options: the values as
 * fixture_render gives them (new). */
static char *eval_with(const df_expr *e, const struct df_table *t, const char *config_id)
{
    struct df_options opts = {0};
    opts.config_id = config_id;
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct fr_error err;
    fr_error_init(&err);
    struct df_column *out = NULL;
    assert_int_equal(df_expr_eval(e, t, 0, FIX_ROWS, &ex, &out, &err), FR_OK);
    char *text = fixture_render(out);
    df_column_unref(out);
    return text;
}

static void test_value_comes_from_the_options(void **state)
{
    (void)state;
    struct df_table *t = fixture_table();
    struct df_schema s;
    df_schema_of_table(&s, t);
    struct fr_error err;
    fr_error_init(&err);
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse("current_config_id()", &s, &e, &err), FR_OK);
    char *a = eval_with(e, t, "sha256:aa");
    assert_string_equal(a, "sha256:aa|sha256:aa|sha256:aa|sha256:aa|sha256:aa|sha256:aa");
    char *b = eval_with(e, t, "sha256:bb"); /* the same parsed tree, another config */
    assert_string_equal(b, "sha256:bb|sha256:bb|sha256:bb|sha256:bb|sha256:bb|sha256:bb");
    char *none = eval_with(e, t, NULL);
    assert_string_equal(none, "null|null|null|null|null|null");
    free(a);
    free(b);
    free(none);
    df_expr_free(e);
    /* in a comparison with a literal: not folded into a constant either */
    assert_int_equal(df_expr_parse("CURRENT_CONFIG_ID() = 'sha256:aa'", &s, &e, &err), FR_OK);
    char *yes = eval_with(e, t, "sha256:aa"), *no = eval_with(e, t, "sha256:bb");
    assert_string_equal(yes, "true|true|true|true|true|true");
    assert_string_equal(no, "false|false|false|false|false|false");
    free(yes);
    free(no);
    df_expr_free(e);
    df_schema_cleanup(&s);
    df_table_free(t);
}

static void test_takes_no_arguments(void **state)
{
    (void)state;
    struct df_table *t = fixture_table();
    struct df_schema s;
    df_schema_of_table(&s, t);
    struct fr_error err;
    fr_error_init(&err);
    df_expr *e = NULL;
    assert_int_equal(df_expr_parse("current_config_id(1)", &s, &e, &err), FR_EINVAL);
    assert_null(e);
    assert_int_equal(df_expr_parse("current_config_id(", &s, &e, &err), FR_EINVAL);
    assert_int_equal(df_expr_parse("upper(current_config_id())", &s, &e, &err), FR_OK);
    df_expr_free(e);
    df_schema_cleanup(&s);
    df_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_value_comes_from_the_options),
        cmocka_unit_test(test_takes_no_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
