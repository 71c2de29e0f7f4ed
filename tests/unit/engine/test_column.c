/* Tests of src/engine/engine_column.c and engine_table.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

static void test_append_and_nulls(void **state)
{
    (void)state;
    struct df_column *c = df_column_new(DF_TYPE_INT64, 0);
    for (int i = 0; i < 100; i++) {
        if (i % 7 == 0)
            df_column_append_null(c);
        else
            df_column_append_int64(c, i);
    }
    assert_true(df_column_ok(c));
    assert_int_equal(c->length, 100);
    assert_int_equal(c->null_count, 15);
    assert_false(df_column_is_valid(c, 0));
    assert_true(df_column_is_valid(c, 1));
    assert_int_equal(df_column_int64(c, 99), 99);
    assert_false(df_column_is_valid(c, 98));
    df_column_unref(c);
}

static void test_strings_take(void **state)
{
    (void)state;
    struct df_column *c = df_column_new(DF_TYPE_STRING, 1);
    df_column_append_string(c, "alpha", 5);
    df_column_append_null(c);
    df_column_append_string(c, "", 0);
    df_column_append_string(c, "héllo", 6);
    int64_t sel[] = {3, 0, -1, 1, 2};
    struct df_column *t = df_column_take(c, sel, 5);
    assert_int_equal(t->length, 5);
    int64_t n;
    const char *s = df_column_string(t, 0, &n);
    assert_int_equal(n, 6);
    assert_memory_equal(s, "héllo", 6);
    s = df_column_string(t, 1, &n);
    assert_memory_equal(s, "alpha", 5);
    assert_false(df_column_is_valid(t, 2));
    assert_false(df_column_is_valid(t, 3));
    assert_true(df_column_is_valid(t, 4));
    df_column_string(t, 4, &n);
    assert_int_equal(n, 0);
    assert_int_equal(t->null_count, 2);
    df_column_unref(t);
    df_column_unref(c);
}

static void test_concat_checks_types(void **state)
{
    (void)state;
    struct df_table *a = df_table_new(), *b = df_table_new();
    struct df_column *x = df_column_new(DF_TYPE_INT64, 0), *y = df_column_new(DF_TYPE_FLOAT64, 0);
    df_column_append_int64(x, 1);
    df_column_append_float64(y, 1.5);
    df_table_add(a, "v", x);
    df_table_add(b, "v", y);
    struct df_table *out = NULL;
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *both[] = {a, b};
    assert_int_equal(df_table_concat(both, 2, &out, &err), FR_EINVAL);
    assert_null(out);
    struct df_table *same[] = {a, a, a};
    assert_int_equal(df_table_concat(same, 3, &out, &err), FR_OK);
    assert_int_equal(out->nrows, 3);
    assert_int_equal(df_column_int64(out->cols[0], 2), 1);
    df_table_free(out);
    df_table_free(a);
    df_table_free(b);
}

/* Bulk concat must rebase string offsets, keep nulls where they were and
 * accept empty inputs (a NULL source buffer). */
static void test_concat_strings_and_nulls(void **state)
{
    (void)state;
    struct df_table *a = df_table_new(), *b = df_table_new(), *e = df_table_new();
    struct df_column *x = df_column_new(DF_TYPE_STRING, 0), *y = df_column_new(DF_TYPE_STRING, 0);
    df_column_append_string(x, "ab", 2);
    df_column_append_string(x, "c", 1);
    df_column_append_null(y);
    df_column_append_string(y, "def", 3);
    df_table_add(a, "s", x);
    df_table_add(b, "s", y);
    df_table_add(e, "s", df_column_new(DF_TYPE_STRING, 0));
    struct df_table *parts[] = {a, e, b, a}, *out = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_table_concat(parts, 4, &out, &err), FR_OK);
    assert_int_equal(out->nrows, 6);
    const char *want[] = {"ab", "c", NULL, "def", "ab", "c"};
    for (int i = 0; i < 6; i++) {
        int64_t n;
        if (!want[i]) {
            assert_false(df_column_is_valid(out->cols[0], i));
            continue;
        }
        assert_true(df_column_is_valid(out->cols[0], i));
        const char *s = df_column_string(out->cols[0], i, &n);
        assert_int_equal(n, (int64_t)strlen(want[i]));
        assert_memory_equal(s, want[i], (size_t)n);
    }
    assert_int_equal(out->cols[0]->null_count, 1);
    df_table_free(out);
    df_table_free(a);
    df_table_free(b);
    df_table_free(e);
}

/* A column always has its buffers, even holding only empty strings (or no
 * rows): readers compute data + offset and values + start, and NULL + 0 is
 * undefined (clang UBSan flagged it in casts, comparisons, arithmetic on
 * an empty filter result and serde). */
static void test_strings_never_null_data(void **state)
{
    (void)state;
    struct df_column *c = df_column_new(DF_TYPE_STRING, 0);
    assert_non_null(c->data);
    df_column_append_string(c, "", 0);
    df_column_append_null(c);
    assert_non_null(c->data);
    int64_t len = -1;
    assert_non_null(df_column_string(c, 0, &len));
    assert_int_equal(len, 0);
    struct df_column *i = df_column_new(DF_TYPE_INT64, 0);
    assert_non_null(i->values);
    df_column_unref(i);
    const int64_t sel[] = {1, 0};
    struct df_column *t = df_column_take(c, sel, 2);
    assert_non_null(t->data);
    df_column_unref(t);
    struct df_column *e = df_column_take(c, sel, 0);
    assert_non_null(e->data);
    df_column_unref(e);
    df_column_unref(c);
}

static void test_dates(void **state)
{
    (void)state;
    int32_t d;
    assert_int_equal(df_parse_date("1970-01-01", 10, &d), 0);
    assert_int_equal(d, 0);
    assert_int_equal(df_parse_date("2024-02-29", 10, &d), 0);
    char buf[40];
    df_format_date(d, buf, sizeof(buf));
    assert_string_equal(buf, "2024-02-29");
    assert_int_not_equal(df_parse_date("2023-02-29", 10, &d), 0);
    assert_int_not_equal(df_parse_date("2023-13-01", 10, &d), 0);
    int64_t us;
    assert_int_equal(df_parse_timestamp("2024-01-31T12:30:05.5Z", 22, &us), 0);
    df_format_timestamp(us, buf, sizeof(buf));
    assert_string_equal(buf, "2024-01-31T12:30:05.500000Z");
    assert_int_equal(df_parse_timestamp("1969-12-31 23:59:59", 19, &us), 0);
    assert_int_equal(us, -1000000);
    df_format_timestamp(us, buf, sizeof(buf));
    assert_string_equal(buf, "1969-12-31T23:59:59Z");
    df_format_date(INT32_MAX, buf, sizeof(buf)); /* no overflow at the extremes */
    assert_string_equal(buf, "2147483647");
    int y, m, dd;
    df_days_to_ymd(INT32_MIN, &y, &m, &dd);
    df_format_timestamp(INT64_MIN, buf, sizeof(buf));
    assert_string_equal(buf, "-9223372036854775808");
}

/* Slices equal a take of the same rows (values, string bytes, validity and
 * null counts) for every start and length, aligned or not, with and
 * without nulls, clamped past the end; a slice of every row shares a
 * table only when the copy would take as much memory. */
static void check_same_column(const struct df_column *a, const struct df_column *b)
{
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->length, b->length);
    assert_int_equal(a->null_count, b->null_count);
    for (int64_t i = 0; i < a->length; i++) {
        assert_int_equal(df_column_is_valid(a, i), df_column_is_valid(b, i));
        if (!df_column_is_valid(a, i))
            continue;
        if (a->type == DF_TYPE_STRING) {
            int64_t la = a->offsets[i + 1] - a->offsets[i], lb = b->offsets[i + 1] - b->offsets[i];
            assert_int_equal(la, lb);
            assert_memory_equal(a->data + a->offsets[i], b->data + b->offsets[i], (size_t)la);
        } else {
            size_t w = df_type_width(a->type);
            assert_memory_equal((const char *)a->values + (size_t)i * w,
                                (const char *)b->values + (size_t)i * w, w);
        }
    }
}

static void test_slice_matches_take(void **state)
{
    (void)state;
    const df_type types[] = {DF_TYPE_INT64, DF_TYPE_FLOAT64, DF_TYPE_BOOL, DF_TYPE_DATE,
                             DF_TYPE_STRING};
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
        for (int with_nulls = 0; with_nulls < 2; with_nulls++) {
            struct df_column *c = df_column_new(types[ti], 0);
            const int64_t len = 77;
            for (int64_t i = 0; i < len; i++) {
                if (with_nulls && i % 5 == 3) {
                    df_column_append_null(c);
                    continue;
                }
                switch (types[ti]) {
                case DF_TYPE_INT64:
                    df_column_append_int64(c, i * 1000003 - 7);
                    break;
                case DF_TYPE_FLOAT64:
                    df_column_append_float64(c, (double)i / 3);
                    break;
                case DF_TYPE_BOOL:
                    df_column_append_bool(c, i % 3 == 0);
                    break;
                case DF_TYPE_DATE:
                    df_column_append_int32(c, (int32_t)(i * 37));
                    break;
                default: {
                    char text[32];
                    int n = snprintf(text, sizeof(text), "%.*s", (int)(i % 20),
                                     "abcdefghijklmnopqrstu");
                    df_column_append_string(c, text, n);
                }
                }
            }
            int64_t sel[128];
            for (int64_t start = 0; start <= len + 2; start++) {
                for (int64_t n = 0; n <= len + 3; n += (n < 20 ? 1 : 7)) {
                    struct df_column *s = df_column_slice(c, start, n);
                    int64_t a = start < len ? start : len, m = n < len - a ? n : len - a;
                    for (int64_t i = 0; i < m; i++)
                        sel[i] = a + i;
                    struct df_column *want = df_column_take(c, sel, m);
                    assert_true(df_column_ok(s));
                    check_same_column(s, want);
                    df_column_unref(s);
                    df_column_unref(want);
                }
            }
            struct df_table *t = df_table_new();
            df_table_add(t, "c", c);
            t->nrows = len;
            /* appended columns keep room to grow: a slice of all their rows
             * copies (a budget would charge the room); a slice's copy has
             * none, so all of its rows are shared */
            struct df_table *all = df_table_slice(t, 0, len + 5);
            assert_int_equal(all->nrows, len);
            check_same_column(all->cols[0], c);
            assert_true(c->capacity > c->length);
            assert_ptr_not_equal(all->cols[0], c);
            struct df_table *again = df_table_slice(all, 0, len);
            assert_ptr_equal(again->cols[0], all->cols[0]);
            df_table_free(again);
            struct df_table *part = df_table_slice(t, 1, len);
            assert_int_equal(part->nrows, len - 1);
            assert_ptr_not_equal(part->cols[0], c);
            df_table_free(all);
            df_table_free(part);
            df_table_free(t);
        }
    }
}

static void test_memory_limit(void **state)
{
    (void)state;
    struct df_options o = {.morsel_size_rows = 1024, .task_memory_limit_bytes = 1000};
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_exec_charge(&ex, 800, &err), FR_OK);
    assert_int_equal(df_exec_charge(&ex, 800, &err), FR_EMEMLIMIT);
    assert_non_null(strstr(err.message, "task_memory_limit_bytes"));
}

/* The process's account (df_exec.shared_add) moves with every charge and
 * release, and a positive charge that takes it over its budget fails
 * memory-budget-exceeded, naming the budget, whatever the task's own limit. */
struct shared_account {
    int64_t used, budget;
};

static int64_t shared_add(void *arg, int64_t bytes, int64_t *budget)
{
    struct shared_account *a = arg;
    a->used += bytes;
    *budget = a->budget;
    return a->used > a->budget ? a->used - a->budget : 0;
}

static void test_shared_account(void **state)
{
    (void)state;
    struct df_options o = {.morsel_size_rows = 1024, .task_memory_limit_bytes = 0};
    struct shared_account acct = {.used = 900, .budget = 1000}; /* 900 held elsewhere */
    struct df_exec ex;
    df_exec_init(&ex, &o, NULL);
    ex.shared_add = shared_add;
    ex.shared_arg = &acct;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_exec_charge(&ex, 100, &err), FR_OK);
    assert_int_equal(acct.used, 1000);
    assert_int_equal(df_exec_charge(&ex, 1, &err), FR_ENOSPACE);
    assert_string_equal(err.kind, "memory-budget-exceeded");
    assert_non_null(strstr(err.message, "--memory-limit 1000"));
    assert_int_equal(acct.used, 1001); /* charged all the same: the owner gives mem_used back */
    assert_int_equal(ex.mem_used, 101);
    fr_error_init(&err);
    assert_int_equal(df_exec_charge(&ex, -51, &err), FR_OK); /* giving back never fails */
    df_exec_release(&ex, 50);
    assert_int_equal(ex.mem_used, 0);
    assert_int_equal(acct.used, 900);
    assert_int_equal(df_exec_charge(&ex, 100, &err), FR_OK); /* room again */
}

/* A schema grows a field at a time across every doubling of its room
 * (engine_table.c): each field keeps its name and type, and a copy holds
 * them all (under ASan, a room of one more field each time was 800 MB of
 * copies for 10,000 columns: integration_hostile_hangs timed out on it). */
static void test_schema_grows(void **state)
{
    (void)state;
    struct df_schema s, c;
    df_schema_init(&s);
    char name[32];
    for (int i = 0; i < 10001; i++) {
        snprintf(name, sizeof(name), "c%d", i);
        df_schema_add(&s, name, i % 3 ? DF_TYPE_INT64 : DF_TYPE_STRING);
    }
    assert_int_equal(s.nfields, 10001);
    df_schema_copy(&c, &s);
    for (int i = 0; i < 10001; i++) {
        snprintf(name, sizeof(name), "c%d", i);
        assert_string_equal(s.fields[i].name, name);
        assert_string_equal(c.fields[i].name, name);
        assert_int_equal(c.fields[i].type, i % 3 ? DF_TYPE_INT64 : DF_TYPE_STRING);
    }
    assert_int_equal(df_schema_find(&c, "c9999"), 9999);
    df_schema_cleanup(&s);
    df_schema_cleanup(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_nulls),
        cmocka_unit_test(test_schema_grows),
        cmocka_unit_test(test_strings_take),
        cmocka_unit_test(test_concat_checks_types),
        cmocka_unit_test(test_concat_strings_and_nulls),
        cmocka_unit_test(test_strings_never_null_data),
        cmocka_unit_test(test_dates),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_shared_account),
        cmocka_unit_test(test_slice_matches_take),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
