/* Tests of src/common/common_lock.c: a directory lock is exclusive (a second
 * open file description is refused with FR_ECONFLICT naming the holder's PID),
 * is freed by closing it, and a missing directory is an I/O error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"

static void test_lock_exclusive_then_free(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/framed-lock-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    struct fr_error err;
    fr_error_init(&err);
    int a = -1, b = -1;
    assert_int_equal(fr_dir_lock(tmpl, &a, &err), FR_OK);
    assert_true(a >= 0);

    char *path = fr_xasprintf("%s/%s", tmpl, FR_DIR_LOCK_NAME);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(fr_file_read_all(path, &text, &len, &err), FR_OK);
    assert_int_equal(strtol(text, NULL, 10), (long)getpid());
    free(text);

    assert_int_equal(fr_dir_lock(tmpl, &b, &err), FR_ECONFLICT);
    assert_int_equal(b, -1);
    char pid[32];
    snprintf(pid, sizeof(pid), "PID %ld", (long)getpid());
    assert_non_null(strstr(err.message, pid));
    assert_non_null(strstr(err.message, "in use by another framed server"));

    fr_dir_unlock(a);
    fr_error_init(&err);
    assert_int_equal(fr_dir_lock(tmpl, &b, &err), FR_OK);
    fr_dir_unlock(b);
    fr_dir_unlock(-1);
    unlink(path);
    rmdir(tmpl);
    free(path);
}

static void test_lock_missing_dir(void **state)
{
    (void)state;
    struct fr_error err;
    fr_error_init(&err);
    int fd = 0;
    assert_int_equal(fr_dir_lock("/nonexistent/framed-state", &fd, &err), FR_EIO);
    assert_int_equal(fd, -1);
    assert_non_null(strstr(err.message, "/nonexistent/framed-state/framed.lock"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_exclusive_then_free),
        cmocka_unit_test(test_lock_missing_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
