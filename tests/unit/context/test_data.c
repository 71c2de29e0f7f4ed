/* Tests of src/context/context_data.c and context_datasets.c: links out of
 * the data dir and FIFOs are not datasets, media types are parsed, a blank
 * NDJSON upload is refused, racing commits of one name leave exactly one
 * file, a start sweeps what a killed server left, and the schema cache
 * follows file changes and stays bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context/context_int.h"

struct fixture {
    char *root;
    char *data;
    ctx *c;
};

static ctx *open_ctx(struct fixture *f)
{
    struct ctx_options o = {0};
    char *state = fr_xasprintf("%s/state", f->root);
    o.data_dir = f->data;
    o.state_dir = state;
    o.threads = 2;
    ctx *c = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(ctx_new(&o, NULL, &c, &err), FR_OK);
    free(state);
    return c;
}

static int setup(void **state)
{
    struct fixture *f = fr_xcalloc(1, sizeof(*f));
    char tmpl[] = "/tmp/framed-test-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    f->root = fr_xstrdup(tmpl);
    f->data = fr_xasprintf("%s/data", f->root);
    f->c = open_ctx(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ctx_free(f->c);
    char *cmd = fr_xasprintf("rm -rf '%s'", f->root);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(f->data);
    free(f->root);
    free(f);
    return 0;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char *p = fr_xasprintf("%s/%s", dir, name);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    free(p);
}

static bool exists_in(const char *dir, const char *name)
{
    char *p = fr_xasprintf("%s/%s", dir, name);
    struct stat st;
    bool ok = lstat(p, &st) == 0;
    free(p);
    return ok;
}

/* One whole upload; returns its status, err kind into kind. */
static int upload(ctx *c, const char *name, const char *type, const char *body, char *kind)
{
    struct ctx_error err;
    ctx_error_init(&err);
    ctx_upload *u = NULL;
    int rc = ctx_upload_begin(c, name, type, &u, &err);
    if (rc == FR_OK)
        rc = ctx_upload_write(u, body, strlen(body), &err);
    if (rc == FR_OK) {
        json_t *out = NULL;
        bool created = false;
        rc = ctx_upload_commit(u, &out, &created, &err);
        json_decref(out);
    } else {
        ctx_upload_abort(u);
    }
    if (kind)
        snprintf(kind, 48, "%s", err.base.kind);
    ctx_error_cleanup(&err);
    return rc;
}

static bool listed(ctx *c, const char *name)
{
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    assert_int_equal(ctx_dataset_list(c, &out, &err), FR_OK);
    bool found = false;
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(out, "datasets"), i, d)
    {
        found |= strcmp(json_string_value(json_object_get(d, "name")), name) == 0;
    }
    json_decref(out);
    ctx_error_cleanup(&err);
    return found;
}

static int get_status(ctx *c, const char *name, char *kind, char *detail)
{
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    int rc = ctx_dataset_get(c, name, &out, &err);
    snprintf(kind, 48, "%s", err.base.kind);
    if (detail)
        snprintf(detail, 512, "%s", err.base.message);
    json_decref(out);
    ctx_error_cleanup(&err);
    return rc;
}

static void test_link_out_is_not_a_dataset(void **state)
{
    struct fixture *f = *state;
    write_file(f->root, "secret.csv", "secret\n1\n");
    char *target = fr_xasprintf("%s/secret.csv", f->root);
    char *link = fr_xasprintf("%s/leak.csv", f->data);
    assert_int_equal(symlink(target, link), 0);
    write_file(f->data, "real.csv", "a\n1\n");
    char *inside = fr_xasprintf("%s/alias.csv", f->data);
    assert_int_equal(symlink("real.csv", inside), 0);
    char kind[48], detail[512];
    assert_int_equal(get_status(f->c, "leak", kind, detail), FR_ENOTFOUND);
    assert_string_equal(kind, "dataset-not-found");
    assert_non_null(strstr(detail, "outside the data dir"));
    assert_false(listed(f->c, "leak"));
    assert_int_equal(get_status(f->c, "alias", kind, NULL), FR_OK);
    assert_true(listed(f->c, "alias"));
    free(target);
    free(link);
    free(inside);
}

static void test_fifo_is_not_a_dataset(void **state)
{
    struct fixture *f = *state;
    char *fifo = fr_xasprintf("%s/pipe.ndjson", f->data);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    char kind[48], detail[512];
    assert_int_equal(get_status(f->c, "pipe", kind, detail), FR_ENOTFOUND);
    assert_non_null(strstr(detail, "not a regular file"));
    assert_false(listed(f->c, "pipe"));
    /* the readers refuse it themselves, without blocking, for callers that
     * reach them with a path */
    assert_int_equal(fr_file_open_regular(fifo), -1);
    struct df_csv_options o;
    df_csv_options_init(&o);
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_not_equal(df_ndjson_infer_schema(fifo, &o, &s, &err), FR_OK);
    df_schema_cleanup(&s);
    assert_int_equal(fr_file_open_regular(f->data), -1); /* a directory */
    free(fifo);
}

static void test_media_types(void **state)
{
    struct fixture *f = *state;
    static const char *const bad[] = {
        "text/csvx",           "text/csv-x", "text/cs", "xtext/csv", "application/x-ndjsonp",
        "text/csv,text/plain", "",           NULL};
    static const char *const good[] = {"TEXT/CSV", "text/csv; charset=utf-8",
                                       "Text/Csv;charset=UTF-8", "\ttext/csv "};
    char kind[48];
    for (int i = 0; i < 7; i++) {
        assert_int_equal(upload(f->c, "m", bad[i], "a\n1\n", kind), FR_EINVAL);
        assert_string_equal(kind, "unsupported-media-type");
    }
    assert_int_equal(upload(f->c, "m", NULL, "a\n1\n", kind), FR_EINVAL);
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(upload(f->c, "m", good[i], "a\n1\n", kind), FR_OK);
    assert_int_equal(upload(f->c, "n", "APPLICATION/X-NDJSON; charset=utf-8", "{\"a\":1}\n", kind),
                     FR_OK);
}

static void test_blank_ndjson_is_refused(void **state)
{
    struct fixture *f = *state;
    char kind[48];
    assert_int_equal(upload(f->c, "blank", "application/x-ndjson", "\n\n  \n", kind), FR_EDATA);
    assert_string_equal(kind, "malformed-data");
    assert_false(exists_in(f->data, "blank.ndjson"));
}

struct racer {
    ctx *c;
    pthread_barrier_t *start;
    bool csv;
    int failures;
};

static void *race_one(void *arg)
{
    struct racer *r = arg;
    pthread_barrier_wait(r->start);
    if (upload(r->c, "race", r->csv ? "text/csv" : "application/x-ndjson",
               r->csv ? "a\n1\n" : "{\"a\":1}\n", NULL) != FR_OK)
        r->failures++;
    return NULL;
}

static void test_racing_formats_leave_one_file(void **state)
{
    struct fixture *f = *state;
    for (int round = 0; round < 60; round++) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        struct racer r[2] = {{f->c, &start, true, 0}, {f->c, &start, false, 0}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&t[i], NULL, race_one, &r[i]), 0);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&start);
        assert_int_equal(r[0].failures + r[1].failures, 0);
        int n = exists_in(f->data, "race.csv") + exists_in(f->data, "race.ndjson");
        assert_int_equal(n, 1);
    }
}

static void test_start_sweeps_interrupted_uploads(void **state)
{
    struct fixture *f = *state;
    ctx_free(f->c);
    char *up = fr_xasprintf("%s/.upload-0123456789abcdef", f->data);
    assert_int_equal(mkdir(up, 0755), 0);
    write_file(up, "cut.csv", "a,b\n1,");
    write_file(f->data, "twin.csv", "a\n1\n");
    sleep(1); /* ctime granularity may be coarse: the ndjson is the newer twin */
    write_file(f->data, "twin.ndjson", "{\"a\":1}\n");
    write_file(f->data, "keep.csv", "a\n1\n");
    write_file(f->data, "trio.ndjson", "{\"a\":1}\n");
    write_file(f->data, "trio.csv", "a\n1\n");
    sleep(1); /* of three formats, the newest stays */
    write_file(f->data, "trio.parquet", "PAR1");
    f->c = open_ctx(f);
    assert_false(exists_in(f->data, "trio.csv"));
    assert_false(exists_in(f->data, "trio.ndjson"));
    assert_true(exists_in(f->data, "trio.parquet"));
    assert_false(exists_in(f->data, ".upload-0123456789abcdef"));
    assert_false(exists_in(f->data, "twin.csv"));
    assert_true(exists_in(f->data, "twin.ndjson"));
    assert_true(exists_in(f->data, "keep.csv"));
    free(up);
}

static void test_schema_cache_follows_changes_and_is_bounded(void **state)
{
    struct fixture *f = *state;
    write_file(f->data, "s.csv", "a,b\n1,2\n");
    assert_true(listed(f->c, "s"));
    assert_int_equal(ctx__schema_cache_count(f->c), 1);
    write_file(f->data, "s.csv", "a,b,c\n1,2,3\n");
    json_t *out = NULL;
    struct ctx_error err;
    ctx_error_init(&err);
    assert_int_equal(ctx_dataset_get(f->c, "s", &out, &err), FR_OK);
    assert_int_equal(json_array_size(json_object_get(out, "schema")), 3);
    json_decref(out);
    assert_int_equal(ctx__schema_cache_count(f->c), 1); /* replaced, not added */
    for (int i = 0; i < 300; i++) {
        char name[32];
        snprintf(name, sizeof(name), "f%03d.csv", i);
        write_file(f->data, name, "x\n1\n");
    }
    assert_true(listed(f->c, "f299"));
    int n = ctx__schema_cache_count(f->c);
    assert_true(n > 0 && n <= 256);
    ctx_error_cleanup(&err);
}

static void test_nul_free_names_only(void **state)
{
    struct fixture *f = *state;
    char kind[48];
    assert_int_equal(upload(f->c, "victim%00x", "text/csv", "a\n1\n", kind), FR_EINVAL);
    assert_string_equal(kind, "invalid-parameter");
    assert_int_equal(get_status(f->c, ".hidden", kind, NULL), FR_EINVAL);
    assert_string_equal(kind, "invalid-parameter");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_link_out_is_not_a_dataset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_is_not_a_dataset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_media_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blank_ndjson_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_racing_formats_leave_one_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_sweeps_interrupted_uploads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_cache_follows_changes_and_is_bounded, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_nul_free_names_only, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
