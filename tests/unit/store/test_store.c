/* Tests of src/store/store_embedded.c: reference counts, persistence across
 * close and reopen, the tamper hook, corrupt files on open, and exact counts
 * under concurrent put/release. Persisted stores live in a fresh directory
 * under the current one, removed after each test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

static const char CONFIG_A[] = "{\"shuffle_partitions\":8}";
static const char CONFIG_B[] = "{\"shuffle_partitions\":9}";

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup_dir(void **state)
{
    char *dir = strdup("framed-test-store-XXXXXX");
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

static store *open_store(const char *dir)
{
    store *s = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(store_embedded_open(dir, &s, &err), FR_OK);
    assert_non_null(s);
    return s;
}

static int64_t count_of(store *s, const char *id)
{
    int64_t n = -1;
    assert_int_equal(store_refcount(s, id, &n, NULL), FR_OK);
    return n;
}

static void expect_bytes(store *s, const char *id, const char *want)
{
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(store_get(s, id, &bytes, &len, NULL), FR_OK);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(bytes, want, len);
    free(bytes);
}

/* Put twice, release twice: the entry lives exactly as long as its holders. */
static void check_lifecycle(store *s)
{
    char id1[80], id2[80], want[80];
    struct fr_error err;
    fr_error_init(&err);
    fr_sha256_id(CONFIG_A, strlen(CONFIG_A), want, sizeof(want));
    assert_int_equal(store_put(s, CONFIG_A, strlen(CONFIG_A), id1, sizeof(id1), &err), FR_OK);
    assert_int_equal(store_put(s, CONFIG_A, strlen(CONFIG_A), id2, sizeof(id2), &err), FR_OK);
    assert_string_equal(id1, want);
    assert_string_equal(id1, id2);
    assert_int_equal(count_of(s, id1), 2);
    assert_int_equal(store_release(s, id1, &err), FR_OK);
    assert_int_equal(count_of(s, id1), 1);
    expect_bytes(s, id1, CONFIG_A);
    assert_int_equal(store_release(s, id1, &err), FR_OK);
    assert_int_equal(count_of(s, id1), 0);
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(store_get(s, id1, &bytes, &len, &err), FR_ENOTFOUND);
    assert_non_null(strstr(err.message, id1));
    assert_int_equal(store_release(s, id1, &err), FR_ENOTFOUND);
}

static void test_lifecycle_memory(void **state)
{
    (void)state;
    store *s = open_store(NULL);
    assert_string_equal(s->vt->name, "embedded");
    check_lifecycle(s);
    store_free(s);
    store_free(NULL);
}

static void test_lifecycle_persisted(void **state)
{
    store *s = open_store(*state);
    check_lifecycle(s);
    store_free(s);
    /* Nothing left behind once released. */
    s = open_store(*state);
    char id[80];
    fr_sha256_id(CONFIG_A, strlen(CONFIG_A), id, sizeof(id));
    assert_int_equal(count_of(s, id), 0);
    store_free(s);
}

static void test_counts_survive_reopen(void **state)
{
    char ida[80], idb[80];
    store *s = open_store(*state);
    for (int i = 0; i < 3; i++)
        assert_int_equal(store_put(s, CONFIG_A, strlen(CONFIG_A), ida, sizeof(ida), NULL), FR_OK);
    assert_int_equal(store_put(s, CONFIG_B, strlen(CONFIG_B), idb, sizeof(idb), NULL), FR_OK);
    assert_int_equal(store_release(s, ida, NULL), FR_OK);
    store_free(s);

    s = open_store(*state);
    assert_int_equal(count_of(s, ida), 2);
    assert_int_equal(count_of(s, idb), 1);
    expect_bytes(s, ida, CONFIG_A);
    expect_bytes(s, idb, CONFIG_B);
    assert_int_equal(store_release(s, idb, NULL), FR_OK);
    store_free(s);

    s = open_store(*state);
    assert_int_equal(count_of(s, ida), 2);
    assert_int_equal(count_of(s, idb), 0);
    store_free(s);
}

static void test_tamper_and_corrupt_file(void **state)
{
    char id[80], other[80];
    store *s = open_store(*state);
    assert_int_equal(store_put(s, CONFIG_A, strlen(CONFIG_A), id, sizeof(id), NULL), FR_OK);
    assert_int_equal(store_put(s, CONFIG_B, strlen(CONFIG_B), other, sizeof(other), NULL), FR_OK);
    assert_int_equal(store_embedded_tamper(s, id, CONFIG_B, strlen(CONFIG_B)), FR_OK);
    /* Same ID, other bytes: what an integrity check downstream must catch. */
    expect_bytes(s, id, CONFIG_B);
    char actual[80];
    fr_sha256_id(CONFIG_B, strlen(CONFIG_B), actual, sizeof(actual));
    assert_string_not_equal(actual, id);
    assert_int_equal(count_of(s, id), 1);
    char absent[80];
    fr_sha256_id("x", 1, absent, sizeof(absent));
    assert_int_equal(store_embedded_tamper(s, absent, "y", 1), FR_ENOTFOUND);
    store_free(s);
    /* The tampered file no longer hashes to its name: skipped on open; the
     * other entry still loads. */
    s = open_store(*state);
    assert_int_equal(count_of(s, id), 0);
    assert_int_equal(count_of(s, other), 1);
    store_free(s);
}

static void test_bad_ids(void **state)
{
    (void)state;
    store *s = open_store(NULL);
    struct fr_error err;
    char *bytes = NULL;
    size_t len = 0;
    char small[16];
    fr_error_init(&err);
    assert_int_equal(store_get(s, "sha256:abc", &bytes, &len, &err), FR_EINVAL);
    assert_int_equal(store_put(s, "x", 1, small, sizeof(small), &err), FR_EINTERNAL);
    assert_int_equal(count_of(s, "nonsense"), 0);
    store_free(s);
    char id[80];
    fr_sha256_id("x", 1, id, sizeof(id));
    assert_true(store_id_valid(id));
    assert_false(store_id_valid(NULL));
    assert_false(store_id_valid(""));
    assert_false(store_id_valid(id + 7));
    id[10] = 'A'; /* upper case is not the canonical form */
    assert_false(store_id_valid(id));
    id[10] = 'g';
    assert_false(store_id_valid(id));
    fr_sha256_id("x", 1, id, sizeof(id));
    id[70] = '\0';
    assert_false(store_id_valid(id));
}

enum { THREADS = 8, ROUNDS = 400 };

struct worker_arg {
    store *s;
    int index;
    int rounds;
    int failures;
};

/* Each thread holds CONFIG_A twice per round and gives one back, and puts and
 * fully releases a config of its own, so entries are created and removed
 * while others use the store. */
static void *worker(void *p)
{
    struct worker_arg *a = p;
    char own[64], id[80], own_id[80];
    snprintf(own, sizeof(own), "{\"thread\":%d}", a->index);
    for (int r = 0; r < a->rounds; r++) {
        a->failures += store_put(a->s, CONFIG_A, strlen(CONFIG_A), id, sizeof(id), NULL) != FR_OK;
        a->failures += store_put(a->s, CONFIG_A, strlen(CONFIG_A), id, sizeof(id), NULL) != FR_OK;
        a->failures += store_put(a->s, own, strlen(own), own_id, sizeof(own_id), NULL) != FR_OK;
        a->failures += store_release(a->s, id, NULL) != FR_OK;
        a->failures += store_release(a->s, own_id, NULL) != FR_OK;
    }
    return NULL;
}

static void run_concurrent(store *s, int rounds)
{
    pthread_t threads[THREADS];
    struct worker_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (struct worker_arg){.s = s, .index = i, .rounds = rounds};
        assert_int_equal(pthread_create(&threads[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(args[i].failures, 0);
    }
    char id[80];
    fr_sha256_id(CONFIG_A, strlen(CONFIG_A), id, sizeof(id));
    assert_int_equal(count_of(s, id), THREADS * rounds);
    for (int i = 0; i < THREADS; i++) {
        char own[64];
        snprintf(own, sizeof(own), "{\"thread\":%d}", i);
        fr_sha256_id(own, strlen(own), id, sizeof(id));
        assert_int_equal(count_of(s, id), 0);
    }
}

static void test_concurrent_counts_exact(void **state)
{
    (void)state;
    store *s = open_store(NULL);
    run_concurrent(s, ROUNDS);
    store_free(s);
}

/* The same with files (fewer rounds: every change is fsynced); the counts
 * written last are the ones read back. */
static void test_concurrent_counts_persisted(void **state)
{
    store *s = open_store(*state);
    run_concurrent(s, 10);
    store_free(s);
    s = open_store(*state);
    char id[80];
    fr_sha256_id(CONFIG_A, strlen(CONFIG_A), id, sizeof(id));
    assert_int_equal(count_of(s, id), THREADS * 10);
    store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifecycle_memory),
        cmocka_unit_test_setup_teardown(test_lifecycle_persisted, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_counts_survive_reopen, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_tamper_and_corrupt_file, setup_dir, teardown_dir),
        cmocka_unit_test(test_bad_ids),
        cmocka_unit_test(test_concurrent_counts_exact),
        cmocka_unit_test_setup_teardown(test_concurrent_counts_persisted, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
