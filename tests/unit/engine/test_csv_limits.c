/* Tests of the CSV reader's bounds (src/engine/engine_csv*.c): records longer
 * than the 1 MiB read buffer (one huge field, quoted fields full of line
 * feeds) read whole and cut into tiny ranges; duplicate header names in time
 * linear in the column count; the column limit (FR_MAX_COLUMNS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"

/* Writes n bytes to a new temporary file; returns its path (new). */
static char *temp_file(const char *text, size_t n)
{
    const char *dir = getenv("TMPDIR");
    char *path = fr_xasprintf("%s/framed_test_csvlim_XXXXXX", dir && *dir ? dir : P_tmpdir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

/* Infers, splits into ranges of target bytes and reads every range; the
 * concatenated table (new) or NULL with err set. */
static struct df_table *read_all(const char *path, int64_t target, struct df_schema *schema,
                                 struct fr_error *err)
{
    struct df_options eo;
    memset(&eo, 0, sizeof(eo));
    eo.morsel_size_rows = 2;
    struct df_csv_options o;
    df_csv_options_init(&o);
    struct df_exec ex;
    df_exec_init(&ex, &eo, NULL);
    struct df_byte_range *ranges = NULL;
    int n = 0;
    struct df_table *all = NULL;
    if (df_csv_infer_schema(path, &o, &eo, schema, err) != FR_OK ||
        df_csv_split(path, &o, target, &ranges, &n, err) != FR_OK)
        return NULL;
    struct df_table **parts = calloc((size_t)n + 1, sizeof(*parts));
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok = df_csv_read(path, &ranges[i], &o, schema, NULL, -1, &ex, &parts[i], err) == FR_OK;
    if (ok)
        assert_int_equal(df_table_concat(parts, n, &all, err), FR_OK);
    for (int i = 0; i < n; i++)
        df_table_free(parts[i]);
    free(parts);
    free(ranges);
    return all;
}

/* "id,text\n" and rows i,<field i>; field i is `len` bytes of a letter, or
 * with line feeds every 7 bytes (then quoted). */
static char *long_records(int rows, size_t len, bool newlines, size_t *n)
{
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "id,text\n");
    char *field = malloc(len + 1);
    for (int i = 0; i < rows; i++) {
        for (size_t k = 0; k < len; k++)
            field[k] = newlines && k % 7 == 6 ? '\n' : (char)('a' + (i + (int)k) % 26);
        fr_buf_printf(&b, "%d,%s", i, newlines ? "\"" : "");
        fr_buf_append(&b, field, len);
        fr_buf_puts(&b, newlines ? "\"\n" : "\n");
    }
    free(field);
    return fr_buf_steal(&b, n);
}

static void check_long_records(int rows, size_t len, bool newlines, int64_t target)
{
    size_t n;
    char *text = long_records(rows, len, newlines, &n);
    char *path = temp_file(text, n);
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *t = read_all(path, target, &s, &err);
    if (!t)
        fail_msg("reading %d records of %zu bytes: %s", rows, len, err.message);
    assert_int_equal(t->nrows, rows);
    assert_int_equal(t->ncols, 2);
    char *want = malloc(len + 1);
    for (int i = 0; i < rows; i++) {
        for (size_t k = 0; k < len; k++)
            want[k] = newlines && k % 7 == 6 ? '\n' : (char)('a' + (i + (int)k) % 26);
        assert_int_equal(df_column_int64(t->cols[0], i), i);
        int64_t got_len;
        const char *got = df_column_string(t->cols[1], i, &got_len);
        assert_int_equal(got_len, (int64_t)len);
        assert_memory_equal(got, want, len);
    }
    free(want);
    df_table_free(t);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
    free(text);
}

static void test_field_longer_than_buffer(void **state)
{
    (void)state;
    check_long_records(3, 2u << 20, false, 1 << 30);  /* 2 MB fields, one range */
    check_long_records(3, 2u << 20, false, 1000);     /* ranges cut inside records */
    check_long_records(1, 50u << 20, false, 1 << 30); /* one 50 MB field */
}

static void test_quoted_newlines_longer_than_buffer(void **state)
{
    (void)state;
    check_long_records(2, 3u << 20, true, 1 << 30);
    check_long_records(2, 3u << 20, true, 4096);
}

/* The header "a,a,...,a" (n copies) and one row of 1..n. */
static char *duplicate_header(int n, size_t *len)
{
    struct fr_buf b;
    fr_buf_init(&b);
    for (int i = 0; i < n; i++)
        fr_buf_puts(&b, i ? ",a" : "a");
    fr_buf_putc(&b, '\n');
    for (int i = 0; i < n; i++)
        fr_buf_printf(&b, i ? ",%d" : "%d", i + 1);
    fr_buf_putc(&b, '\n');
    return fr_buf_steal(&b, len);
}

/* FR_MAX_COLUMNS copies of one name: the old dedup was cubic (hours at this
 * size); it must finish within the test timeout and name them a, a_2, ... */
static void test_duplicate_header_names(void **state)
{
    (void)state;
    size_t n;
    char *text = duplicate_header(FR_MAX_COLUMNS, &n);
    char *path = temp_file(text, n);
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    struct df_table *t = read_all(path, 1 << 30, &s, &err);
    if (!t)
        fail_msg("%s", err.message);
    assert_int_equal(s.nfields, FR_MAX_COLUMNS);
    assert_string_equal(s.fields[0].name, "a");
    assert_string_equal(s.fields[1].name, "a_2");
    assert_string_equal(s.fields[FR_MAX_COLUMNS - 1].name, "a_10000");
    assert_int_equal(df_column_int64(t->cols[FR_MAX_COLUMNS - 1], 0), FR_MAX_COLUMNS);
    df_table_free(t);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
    free(text);
}

/* A generated name that clashes with a given one takes the next number. */
static void test_duplicate_names_skip_taken(void **state)
{
    (void)state;
    const char *text = "a,a_2,a,b,a,,\n1,2,3,4,5,6,7\n";
    char *path = temp_file(text, strlen(text));
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    struct df_csv_options o;
    df_csv_options_init(&o);
    assert_int_equal(df_csv_infer_schema(path, &o, NULL, &s, &err), FR_OK);
    const char *want[] = {"a", "a_2", "a_3", "b", "a_4", "column5", "column6"};
    assert_int_equal(s.nfields, 7);
    for (int i = 0; i < 7; i++)
        assert_string_equal(s.fields[i].name, want[i]);
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
}

static void expect_too_many(const char *text, size_t n)
{
    char *path = temp_file(text, n);
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    struct df_csv_options o;
    df_csv_options_init(&o);
    assert_int_not_equal(df_csv_infer_schema(path, &o, NULL, &s, &err), FR_OK);
    assert_int_equal(err.status, FR_EVALIDATION);
    assert_string_equal(err.kind, "too-many-columns");
    assert_non_null(strstr(err.message, "10000"));
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
}

/* 1e5 columns (unique, and all alike): refused before any per-column work. */
static void test_column_limit(void **state)
{
    (void)state;
    struct fr_buf b;
    fr_buf_init(&b);
    for (int i = 0; i < 100000; i++)
        fr_buf_printf(&b, i ? ",c%d" : "c%d", i);
    fr_buf_puts(&b, "\n");
    expect_too_many(b.data, b.len);
    fr_buf_cleanup(&b);
    size_t n;
    char *dup = duplicate_header(100000, &n);
    expect_too_many(dup, n);
    free(dup);
    char *one_more = duplicate_header(FR_MAX_COLUMNS + 1, &n);
    expect_too_many(one_more, n);
    free(one_more);
}

/* A data line of 50000 delimiters: an error that says "more than 10000",
 * after storing no more than FR_MAX_COLUMNS + 1 fields. */
static void test_wide_data_record(void **state)
{
    (void)state;
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "a,b\n1,2\n");
    for (int i = 0; i < 50000; i++)
        fr_buf_putc(&b, ',');
    fr_buf_puts(&b, "\n");
    char *path = temp_file(b.data, b.len);
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    assert_null(read_all(path, 1 << 30, &s, &err));
    assert_int_equal(err.status, FR_EDATA);
    assert_non_null(strstr(err.message, "line 3: expected 2 fields, found more than 10000"));
    df_schema_cleanup(&s);
    unlink(path);
    free(path);
    fr_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_field_longer_than_buffer),
        cmocka_unit_test(test_quoted_newlines_longer_than_buffer),
        cmocka_unit_test(test_duplicate_header_names),
        cmocka_unit_test(test_duplicate_names_skip_taken),
        cmocka_unit_test(test_column_limit),
        cmocka_unit_test(test_wide_data_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
