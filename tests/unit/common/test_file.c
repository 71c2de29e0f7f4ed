/* Tests of src/common/common_file.c: a reader's open takes regular files only
 * and never blocks (a FIFO fails at once), and a path resolved inside a root
 * stays inside it (links, "..", and a sibling that shares the root's prefix). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"

static char *root;

static int setup(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/framed-test-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    root = fr_xstrdup(tmpl);
    char *cmd = fr_xasprintf("mkdir -p '%s/data/sub' '%s/data2' && echo a > '%s/data/f.csv' && "
                             "echo b > '%s/data2/g.csv' && mkfifo '%s/data/pipe'",
                             root, root, root, root, root);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char *cmd = fr_xasprintf("rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(root);
    return 0;
}

static void test_open_regular(void **state)
{
    (void)state;
    char *f = fr_xasprintf("%s/data/f.csv", root);
    int fd = fr_file_open_regular(f);
    assert_true(fd >= 0);
    assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0); /* cleared for the reads */
    char buf[4];
    assert_int_equal(read(fd, buf, sizeof(buf)), 2);
    close(fd);
    char *pipe = fr_xasprintf("%s/data/pipe", root);
    errno = 0;
    assert_int_equal(fr_file_open_regular(pipe), -1); /* returns at once: no writer needed */
    assert_int_equal(errno, EINVAL);
    char *dir = fr_xasprintf("%s/data", root);
    assert_int_equal(fr_file_open_regular(dir), -1);
    char *missing = fr_xasprintf("%s/data/nope.csv", root);
    errno = 0;
    assert_int_equal(fr_file_open_regular(missing), -1);
    assert_int_equal(errno, ENOENT);
    free(f);
    free(pipe);
    free(dir);
    free(missing);
}

static int inside(const char *rel, char **out)
{
    char *dir = fr_xasprintf("%s/data", root);
    char *p = fr_xasprintf("%s/data/%s", root, rel);
    struct fr_error err;
    fr_error_init(&err);
    *out = NULL;
    int rc = fr_path_resolve_inside(dir, p, out, &err);
    free(dir);
    free(p);
    return rc;
}

static void test_resolve_inside(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(inside("f.csv", &out), FR_OK);
    assert_non_null(strstr(out, "/data/f.csv"));
    free(out);
    assert_int_equal(inside("sub/../f.csv", &out), FR_OK);
    free(out);
    assert_int_equal(inside("../data2/g.csv", &out), FR_EINVAL); /* shares the prefix "data" */
    assert_null(out);
    assert_int_equal(inside("..", &out), FR_EINVAL);
    assert_int_equal(inside(".", &out), FR_EINVAL); /* the root itself is no file in it */
    assert_int_equal(inside("nope.csv", &out), FR_ENOTFOUND);
    char *link = fr_xasprintf("%s/data/out.csv", root);
    char *target = fr_xasprintf("%s/data2/g.csv", root);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(inside("out.csv", &out), FR_EINVAL);
    char *in_link = fr_xasprintf("%s/data/in.csv", root);
    assert_int_equal(symlink("sub/../f.csv", in_link), 0);
    assert_int_equal(inside("in.csv", &out), FR_OK);
    assert_non_null(strstr(out, "/data/f.csv"));
    free(out);
    free(link);
    free(target);
    free(in_link);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_regular),
        cmocka_unit_test(test_resolve_inside),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
