/* Tests of src/config/config_state.c: the pending config's state file. Each
 * test works in a fresh directory made under the current one (the build
 * directory when run by ctest) and removes it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup_dir(void **state)
{
    char *dir = strdup("framed-test-config-state-XXXXXX");
    if (!mkdtemp(dir)) {
        free(dir);
        return -1;
    }
    *state = dir;
    return 0;
}

static int teardown_dir(void **state)
{
    nftw(*state, remove_one, 8, FTW_DEPTH | FTW_PHYS);
    free(*state);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_save_load_round_trip(void **state)
{
    char *path = fr_xasprintf("%s/sub/config.json", (char *)*state);
    struct cfg c, back;
    struct fr_error err;
    fr_error_init(&err);
    cfg_defaults(&c);
    c.shuffle_partitions = 64;
    c.nulls_first = true;
    c.csv_null_values.n = 2;
    c.csv_null_values.items = fr_xcalloc(2, sizeof(char *));
    c.csv_null_values.items[0] = fr_xstrdup("NA");
    c.csv_null_values.items[1] = fr_xstrdup("-");
    assert_int_equal(cfg_save(path, &c, &err), FR_OK); /* creates sub/ */
    assert_int_equal(cfg_load(path, &back, &err), FR_OK);
    assert_true(cfg_equal(&c, &back));
    cfg_cleanup(&back);
    /* Saving again replaces the file. */
    c.shuffle_partitions = 65;
    assert_int_equal(cfg_save(path, &c, &err), FR_OK);
    assert_int_equal(cfg_load(path, &back, &err), FR_OK);
    assert_int_equal(back.shuffle_partitions, 65);
    cfg_cleanup(&back);
    cfg_cleanup(&c);
    free(path);
}

static void test_missing_file(void **state)
{
    char *path = fr_xasprintf("%s/config.json", (char *)*state);
    struct cfg back;
    struct fr_error err;
    fr_error_init(&err);
    cfg_defaults(&back);
    back.shuffle_partitions = 5;
    assert_int_equal(cfg_load(path, &back, &err), FR_ENOTFOUND);
    assert_int_equal(back.shuffle_partitions, 5); /* the caller's values are kept */
    cfg_cleanup(&back);
    free(path);
}

/* A state file that cannot be used is FR_EDATA naming the file and the
 * problem, and the file is left untouched. */
static void expect_corrupt(const char *dir, const char *content, const char *needle)
{
    char *path = fr_xasprintf("%s/config.json", dir);
    struct cfg back;
    struct fr_error err;
    char *after = NULL;
    size_t len = 0;
    fr_error_init(&err);
    write_file(path, content);
    cfg_defaults(&back);
    assert_int_equal(cfg_load(path, &back, &err), FR_EDATA);
    assert_int_equal(back.shuffle_partitions, 8); /* not reset, not half-loaded */
    cfg_cleanup(&back);
    if (!strstr(err.message, path) || !strstr(err.message, needle)) {
        print_error("got '%s'\n", err.message);
        fail();
    }
    assert_string_equal(err.file, path);
    assert_int_equal(fr_file_read_all(path, &after, &len, &err), FR_OK);
    assert_string_equal(after, content);
    free(after);
    free(path);
}

static void test_corrupt_file(void **state)
{
    const char *dir = *state;
    expect_corrupt(dir, "{\"shuffle_partitions\": 8", "not valid JSON");
    expect_corrupt(dir, "", "not valid JSON");
    expect_corrupt(dir, "[]", "must be a JSON object");
    expect_corrupt(dir, "{\"shuffle_partitions\": 0}", "between 1 and 4096");
    expect_corrupt(dir, "{\"shuffle_partitons\": 8}", "unknown field");
    expect_corrupt(dir, "{\"scan_tasks_min_size_bytes\": 9, \"scan_tasks_max_size_bytes\": 8}",
                   "must not be greater");
}

/* A file from an older version, without a newer field, keeps its values. */
static void test_missing_fields_take_defaults(void **state)
{
    char *path = fr_xasprintf("%s/config.json", (char *)*state);
    struct cfg back;
    struct fr_error err;
    fr_error_init(&err);
    write_file(path, "{\"num_preview_rows\": 20}\n");
    assert_int_equal(cfg_load(path, &back, &err), FR_OK);
    assert_int_equal(back.num_preview_rows, 20);
    assert_int_equal(back.shuffle_partitions, 8);
    cfg_cleanup(&back);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_save_load_round_trip, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_missing_file, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_corrupt_file, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_missing_fields_take_defaults, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
