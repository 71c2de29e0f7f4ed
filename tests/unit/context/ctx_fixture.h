/* ctx_fixture: a context over a fresh temporary data and state dir, for the
 * cmocka tests of the context (setup and teardown of a struct fixture). */
#ifndef FRAMED_TEST_CTX_FIXTURE_H
#define FRAMED_TEST_CTX_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "context/context_int.h"

struct fixture {
    char *dir;
    ctx *c;
};

/* *state = a new fixture: a context with 2 threads and memory_limit (0 = none). */
static inline int ctx_fixture_setup(void **state, int64_t memory_limit)
{
    struct fixture *f = calloc(1, sizeof(*f));
    char tmpl[] = "/tmp/framed-test-ctx-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    f->dir = strdup(tmpl);
    char *data = fr_xasprintf("%s/data", f->dir), *st = fr_xasprintf("%s/state", f->dir);
    struct ctx_options o = {
        .data_dir = data, .state_dir = st, .threads = 2, .memory_limit = memory_limit};
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(ctx_new(&o, NULL, &f->c, &err), FR_OK);
    free(data);
    free(st);
    *state = f;
    return 0;
}

/* Frees the context and removes its dir. */
static inline int ctx_fixture_teardown(void **state)
{
    struct fixture *f = *state;
    ctx_free(f->c);
    char *cmd = fr_xasprintf("rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(f->dir);
    free(f);
    return 0;
}

#endif
