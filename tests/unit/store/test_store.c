/* Tests of src/store/store_embedded.c: holds by holder, the holds a dead
 * incarnation left reclaimed at open (I4 through a kill -9), the tamper hook
 * and the repair of a tampered entry, and exact counts under concurrent
 * hold/unhold. Persisted stores live in a fresh directory
 * under the current one, removed after each test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static void hold_ok(store *s, const char *holder, const char *bytes, char *id)
{
    struct fr_error err;
    fr_error_init(&err);
    if (store_hold(s, holder, bytes, strlen(bytes), id, 80, &err) != FR_OK)
        fail_msg("hold: %s", err.message);
}

/* Two holders (one holding twice), two releases: the entry lives exactly
 * as long as its holders. */
static void check_lifecycle(store *s)
{
    char id1[80], id2[80], want[80];
    struct fr_error err;
    fr_error_init(&err);
    fr_sha256_id(CONFIG_A, strlen(CONFIG_A), want, sizeof(want));
    hold_ok(s, "runner-1", CONFIG_A, id1);
    hold_ok(s, "runner-2", CONFIG_A, id2);
    hold_ok(s, "runner-2", CONFIG_A, id2); /* a holder holds once */
    assert_string_equal(id1, want);
    assert_string_equal(id1, id2);
    assert_int_equal(count_of(s, id1), 2);
    assert_int_equal(store_unhold(s, id1, "runner-3", &err), FR_ENOTFOUND);
    assert_int_equal(store_unhold(s, id1, "runner-1", &err), FR_OK);
    assert_int_equal(store_unhold(s, id1, "runner-1", &err), FR_ENOTFOUND);
    assert_int_equal(count_of(s, id1), 1);
    expect_bytes(s, id1, CONFIG_A);
    assert_int_equal(store_unhold(s, id1, "runner-2", &err), FR_OK);
    assert_int_equal(count_of(s, id1), 0);
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(store_get(s, id1, &bytes, &len, &err), FR_ENOTFOUND);
    assert_non_null(strstr(err.message, id1));
    assert_int_equal(store_unhold(s, id1, "runner-2", &err), FR_ENOTFOUND);
    assert_int_equal(store_hold(s, "bad holder", CONFIG_A, strlen(CONFIG_A), id1, 80, &err),
                     FR_EINVAL);
}

static void test_lifecycle_memory(void **state)
{
    (void)state;
    store *s = open_store(NULL);
    assert_string_equal(s->vt->name, "embedded");
    assert_int_equal(store_lease_ms(s), 0); /* holds do not expire here */
    check_lifecycle(s);
    store_free(s);
    store_free(NULL);
}

static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_lifecycle_persisted(void **state)
{
    store *s = open_store(*state);
    check_lifecycle(s);
    assert_int_equal(files_in(*state), 0); /* nothing left behind once released */
    char id[80];
    hold_ok(s, "runner-1", CONFIG_A, id);
    assert_int_equal(files_in(*state), 2); /* <hex>.json and <hex>.holds */
    store_free(s);
}

/* A server killed with holds (the store was never released): the next
 * start drops them and removes the entries, including the count files of
 * older versions. */
static void test_dead_holds_reclaimed(void **state)
{
    char ida[80], idb[80];
    store *s = open_store(*state);
    hold_ok(s, "runner-a", CONFIG_A, ida);
    hold_ok(s, "runner-b", CONFIG_A, ida);
    hold_ok(s, "runner-a", CONFIG_B, idb);
    store_free(s); /* as a kill -9 leaves it: files on disk */
    char *old = fr_xasprintf("%s/%064x.count", (char *)*state, 7);
    assert_int_equal(fr_file_write_atomic(old, "3\n", 2, NULL), FR_OK);
    free(old);
    assert_int_equal(files_in(*state), 5);

    s = open_store(*state);
    assert_int_equal(count_of(s, ida), 0);
    assert_int_equal(count_of(s, idb), 0);
    assert_int_equal(files_in(*state), 0);
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(store_get(s, ida, &bytes, &len, NULL), FR_ENOTFOUND);
    /* A new freeze and reset goes 1 -> 0. */
    hold_ok(s, "runner-c", CONFIG_A, ida);
    assert_int_equal(count_of(s, ida), 1);
    assert_int_equal(store_unhold(s, ida, "runner-c", NULL), FR_OK);
    assert_int_equal(count_of(s, ida), 0);
    store_free(s);
}

/* A crash in the middle of an atomic write leaves its temp file: the next
 * open removes it (and only such files: another name is left alone). */
static void test_stale_temp_files_removed(void **state)
{
    const char *dir = *state;
    for (int i = 0; i < 2; i++) {
        char *p = i ? fr_xasprintf("%s/%064x.holds.tmp.17", dir, 5)
                    : fr_xasprintf("%s/%064x.json.tmp.4242", dir, 5);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs("{\"half", f);
        fclose(f);
        free(p);
    }
    char *other = fr_xasprintf("%s/notes.json.tmp.1", dir);
    FILE *f = fopen(other, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(files_in(dir), 3);
    store *s = open_store(dir);
    assert_int_equal(files_in(dir), 1);
    struct stat st;
    assert_int_equal(stat(other, &st), 0);
    char id[80];
    hold_ok(s, "runner-1", CONFIG_A, id); /* the store works as before */
    assert_int_equal(count_of(s, id), 1);
    store_free(s);
    unlink(other);
    free(other);
}

static void test_tamper_and_repair(void **state)
{
    char id[80], other[80];
    store *s = open_store(*state);
    hold_ok(s, "runner-1", CONFIG_A, id);
    hold_ok(s, "runner-1", CONFIG_B, other);
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
    /* Another holder's put is refused; the holder of the right bytes repairs. */
    struct fr_error err;
    fr_error_init(&err);
    char dup[80];
    assert_int_equal(store_hold(s, "runner-2", CONFIG_A, strlen(CONFIG_A), dup, 80, &err),
                     FR_ECONFLICT);
    enum store_restored what = STORE_INTACT;
    assert_int_equal(store_restore(s, "runner-1", CONFIG_A, strlen(CONFIG_A), &what, &err), FR_OK);
    assert_int_equal(what, STORE_REPAIRED);
    expect_bytes(s, id, CONFIG_A);
    struct store_health h;
    store_health_get(s, &h);
    assert_int_equal(h.corruptions, 1);
    assert_non_null(strstr(h.last_corruption, id));
    assert_int_equal(store_restore(s, "runner-1", CONFIG_A, strlen(CONFIG_A), &what, &err), FR_OK);
    assert_int_equal(what, STORE_INTACT);
    assert_int_equal(count_of(s, id), 1);
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
    assert_int_equal(store_set_lease_ms(s, 1, &err), FR_EINVAL);
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

/* Each thread holds CONFIG_A under two holders per round and gives one
 * back, and holds and releases a config of its own, so entries are created
 * and removed while others use the store. */
static void *worker(void *p)
{
    struct worker_arg *a = p;
    char own[64], id[80], own_id[80], h1[32], h2[32];
    snprintf(own, sizeof(own), "{\"thread\":%d}", a->index);
    for (int r = 0; r < a->rounds; r++) {
        snprintf(h1, sizeof(h1), "t%d-r%d-a", a->index, r);
        snprintf(h2, sizeof(h2), "t%d-r%d-b", a->index, r);
        a->failures += store_hold(a->s, h1, CONFIG_A, strlen(CONFIG_A), id, 80, NULL) != FR_OK;
        a->failures += store_hold(a->s, h2, CONFIG_A, strlen(CONFIG_A), id, 80, NULL) != FR_OK;
        a->failures += store_hold(a->s, h1, own, strlen(own), own_id, 80, NULL) != FR_OK;
        a->failures += store_unhold(a->s, id, h2, NULL) != FR_OK;
        a->failures += store_unhold(a->s, own_id, h1, NULL) != FR_OK;
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

/* The same with files (fewer rounds: every change is fsynced); the holds
 * written last are the ones on disk. */
static void test_concurrent_counts_persisted(void **state)
{
    store *s = open_store(*state);
    run_concurrent(s, 10);
    store_free(s);
    char id[80], *text = NULL;
    size_t len = 0;
    fr_sha256_id(CONFIG_A, strlen(CONFIG_A), id, sizeof(id));
    char *path = fr_xasprintf("%s/%s.holds", (char *)*state, id + 7);
    assert_int_equal(fr_file_read_all(path, &text, &len, NULL), FR_OK);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    assert_int_equal(lines, THREADS * 10);
    free(text);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifecycle_memory),
        cmocka_unit_test_setup_teardown(test_lifecycle_persisted, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_dead_holds_reclaimed, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_stale_temp_files_removed, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_tamper_and_repair, setup_dir, teardown_dir),
        cmocka_unit_test(test_bad_ids),
        cmocka_unit_test(test_concurrent_counts_exact),
        cmocka_unit_test_setup_teardown(test_concurrent_counts_persisted, setup_dir, teardown_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
