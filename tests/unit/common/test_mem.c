/* test_mem: the big-buffer allocation shared by the engine's columns, the
 * client's partition bodies and the worker's range-read blocks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"

#define MiB ((size_t)1 << 20)

static void test_small_is_plain(void **state)
{
    (void)state;
    size_t cap = 0;
    char *p = fr_try_malloc_big(100, &cap);
    assert_non_null(p);
    assert_int_equal(cap, 100);
    memset(p, 1, 100);
    free(p);
    p = fr_try_malloc_big(4 * MiB - 1, &cap); /* under 4 MiB: as asked */
    assert_non_null(p);
    assert_int_equal(cap, 4 * MiB - 1);
    free(p);
    p = fr_try_malloc_big(0, &cap); /* nothing asked: still a pointer free() takes */
    assert_non_null(p);
    assert_int_equal(cap, 0);
    free(p);
}

static void test_big_is_aligned_and_rounded(void **state)
{
    (void)state;
    size_t cap = 0;
    char *p = fr_try_malloc_big(5 * MiB + 1, &cap);
    assert_non_null(p);
    assert_int_equal(cap, 6 * MiB); /* rounded up to 2 MiB: all of it usable */
    assert_int_equal((uintptr_t)p % (2 * MiB), 0);
    memset(p, 7, cap);
    assert_int_equal(p[cap - 1], 7);
    free(p);
    p = fr_try_malloc_big(8 * MiB, NULL); /* a whole multiple stays as it is; cap optional */
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % (2 * MiB), 0);
    free(p);
}

static void test_overflow_is_refused(void **state)
{
    (void)state;
    size_t cap = 1;
    /* rounding up would wrap past SIZE_MAX: NULL, not a small buffer */
    assert_null(fr_try_malloc_big(SIZE_MAX - 100, &cap));
    assert_null(fr_try_malloc_big(SIZE_MAX, NULL));
}

/* A big block (32 MiB and over: glibc's mmap threshold) freed through
 * fr_free_big is kept, and handed to the next big allocation it fits with
 * little to spare (a quarter of the size asked and 2 MiB), its pages
 * already touched; fr_big_expire keeps what was kept less than
 * FR_BIG_KEEP_MS ago, fr_big_release frees all of it. */
static void test_freed_big_block_is_reused(void **state)
{
    (void)state;
    fr_big_release();
    size_t cap = 0;
    char *p = fr_try_malloc_big(40 * MiB, &cap);
    assert_non_null(p);
    memset(p, 5, cap);
    fr_free_big(p);
    assert_true(fr_big_kept_bytes() >= 40 * MiB);
    char *big = fr_try_malloc_big(100 * MiB, NULL); /* the kept one is too small: fresh */
    assert_ptr_not_equal(big, p);
    assert_true(fr_big_kept_bytes() >= 40 * MiB); /* still kept */
    free(big);
    char *q = fr_try_malloc_big(36 * MiB, &cap); /* fits with little to spare: the same block */
    assert_ptr_equal(q, p);
    assert_true(cap >= 40 * MiB); /* its whole size is usable */
    assert_int_equal(fr_big_kept_bytes(), 0);
    fr_free_big(q);
    char *r = fr_try_malloc_big(20 * MiB, &cap); /* 40 MiB would waste 20 on it */
    assert_ptr_not_equal(r, q);
    fr_free_big(r); /* under 32 MiB: back to the heap, not kept */
    assert_true(fr_big_kept_bytes() >= 40 * MiB && fr_big_kept_bytes() < 60 * MiB);
    fr_big_release();
    q = fr_try_malloc_big(100 * MiB, NULL);
    fr_free_big(q);
    r = fr_try_malloc_big(40 * MiB, NULL); /* 100 MiB would waste 60 on it: not handed out */
    assert_ptr_not_equal(r, q);
    fr_free_big(r);
    size_t before = fr_big_kept_bytes();
    assert_true(before >= 140 * MiB);
    fr_big_expire(); /* kept just now: stays */
    assert_int_equal(fr_big_kept_bytes(), before);
    fr_big_release();
    assert_int_equal(fr_big_kept_bytes(), 0);
}

/* Freeing a kept block again aborts, as glibc would, instead of handing
 * one block to two owners later (in a child process). */
static void test_double_free_aborts(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *p = fr_try_malloc_big(40 * MiB, NULL);
        fr_free_big(p);
        fr_free_big(p);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

/* Only fr_try_malloc_big's blocks (2 MiB aligned) are kept, within the
 * limit; a small or foreign block is just freed. */
static void test_kept_within_bounds(void **state)
{
    (void)state;
    fr_big_release();
    char *plain = malloc(40 * MiB + 16); /* glibc's own: not 2 MiB aligned */
    assert_non_null(plain);
    if ((uintptr_t)plain % (2 * MiB) != 0) {
        fr_free_big(plain);
        assert_int_equal(fr_big_kept_bytes(), 0);
    } else {
        free(plain);
    }
    fr_free_big(NULL);
    fr_free_big(malloc(100));
    assert_int_equal(fr_big_kept_bytes(), 0);
    fr_big_keep_limit(50 * MiB);
    char *a = fr_try_malloc_big(40 * MiB, NULL), *b = fr_try_malloc_big(40 * MiB, NULL);
    fr_free_big(a);
    fr_free_big(b); /* over the 50 MiB limit: freed */
    assert_true(fr_big_kept_bytes() >= 40 * MiB && fr_big_kept_bytes() <= 50 * MiB);
    fr_big_keep_limit(0); /* keep none (and what was kept goes) */
    assert_int_equal(fr_big_kept_bytes(), 0);
    a = fr_try_malloc_big(40 * MiB, NULL);
    fr_free_big(a);
    assert_int_equal(fr_big_kept_bytes(), 0);
    fr_big_keep_limit((size_t)4 << 30);
}

/* Threads taking and giving back blocks at once never share one: each
 * writes its mark over its block and finds it whole before it frees it. */
static void *churn(void *arg)
{
    uintptr_t mark = (uintptr_t)arg;
    for (int i = 0; i < 25; i++) {
        size_t n = (32 + 2 * (size_t)((i * 7 + mark) % 5)) * MiB;
        unsigned char *p = fr_try_malloc_big(n, NULL);
        if (!p)
            return (void *)1;
        memset(p, (int)mark, n);
        for (size_t k = 0; k < n; k += 4096)
            if (p[k] != (unsigned char)mark)
                return (void *)1;
        fr_free_big(p);
    }
    return NULL;
}

static void test_kept_blocks_across_threads(void **state)
{
    (void)state;
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, churn, (void *)(i + 1)), 0);
    for (int i = 0; i < 4; i++) {
        void *bad = (void *)1;
        pthread_join(t[i], &bad);
        assert_null(bad);
    }
    fr_big_release();
    assert_int_equal(fr_big_kept_bytes(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_is_plain),
        cmocka_unit_test(test_big_is_aligned_and_rounded),
        cmocka_unit_test(test_overflow_is_refused),
        cmocka_unit_test(test_freed_big_block_is_reused),
        cmocka_unit_test(test_kept_within_bounds),
        cmocka_unit_test(test_kept_blocks_across_threads),
        cmocka_unit_test(test_double_free_aborts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
