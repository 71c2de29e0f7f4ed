/* Tests of src/worker/worker_source.c (with src/proto/proto_range.c and the
 * range client of common_client.c) against a fake coordinator: a file read
 * through the remote source in blocks (prefetched) is the file, byte for
 * byte; a short answer, a file that changed (entity tag, size), an answer
 * for another config, a 416 inside the file, bytes without an ETag, a whole
 * file of unknown size fail the read clearly; a 503 is retried; reads at
 * offsets (Parquet) fetch the footer in one tail read and chunks whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../common/mhd_fixture.h"
#include "proto/proto.h"
#include "worker/worker_int.h"

static const char CFG[] = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
#define FILE_BYTES ((20 << 20) + 12345)

enum mode {
    OK,
    SHORT,
    ETAG_CHANGES,
    SIZE_DIFFERS,
    FAIL_ONCE,
    OTHER_CONFIG,
    BAD_416,
    NO_ETAG,
    WHOLE
};

struct fake {
    struct mhd_fixture f;
    char *file;
    enum mode mode;
    int requests;
    pthread_mutex_t lock;
};

static enum MHD_Result serve(void *cls, struct mhd_request *rq)
{
    struct fake *k = cls;
    pthread_mutex_lock(&k->lock);
    int n = ++k->requests;
    pthread_mutex_unlock(&k->lock);
    assert_non_null(strstr(rq->uri, "/v1/internal/datasets?path=sub%2Fdata.csv"));
    const char *cfg = mhd_fixture_header(rq, "Framed-Config-Id");
    assert_non_null(cfg);
    assert_string_equal(cfg, CFG);
    if (k->mode == FAIL_ONCE && n == 1)
        return mhd_fixture_reply(rq->conn, 503, "application/problem+json", "{}", 2, NULL);
    if (k->mode == BAD_416) { /* unsatisfiable, though the file is longer */
        struct MHD_Response *r = MHD_create_response_from_buffer(2, "{}", MHD_RESPMEM_PERSISTENT);
        char cr[48];
        snprintf(cr, sizeof(cr), "bytes */%d", FILE_BYTES);
        MHD_add_response_header(r, "Content-Range", cr);
        MHD_add_response_header(r, "Framed-Config-Id", CFG);
        enum MHD_Result rc = MHD_queue_response(rq->conn, 416, r);
        MHD_destroy_response(r);
        return rc;
    }
    long long a = 0, b = 0;
    const char *range = mhd_fixture_header(rq, "Range");
    assert_non_null(range);
    assert_int_equal(sscanf(range, "bytes=%lld-%lld", &a, &b), 2);
    long long total = k->mode == SIZE_DIFFERS ? FILE_BYTES + 1 : FILE_BYTES;
    if (b >= FILE_BYTES)
        b = FILE_BYTES - 1;
    if (k->mode == SHORT)
        b = a + (b - a) / 2;
    char cr[96], etag[FR_ETAG_MAX];
    snprintf(cr, sizeof(cr), "bytes %lld-%lld/%lld", a, b, total);
    fr_etag_of(FILE_BYTES, k->mode == ETAG_CHANGES && n > 1 ? 2 : 1, etag);
    struct MHD_Response *r =
        MHD_create_response_from_buffer((size_t)(b - a + 1), k->file + a, MHD_RESPMEM_PERSISTENT);
    if (k->mode != WHOLE)
        MHD_add_response_header(r, "Content-Range", cr);
    if (k->mode != NO_ETAG)
        MHD_add_response_header(r, "ETag", etag);
    MHD_add_response_header(r, "Framed-Config-Id",
                            k->mode == OTHER_CONFIG
                                ? "sha256:"
                                  "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
                                : CFG);
    enum MHD_Result rc = MHD_queue_response(rq->conn, k->mode == WHOLE ? 200 : 206, r);
    MHD_destroy_response(r);
    return rc;
}

struct env {
    struct fake k;
    worker *w;
};

static int setup(void **state)
{
    struct env *e = fr_xcalloc(1, sizeof(*e));
    e->k.file = fr_xmalloc(FILE_BYTES);
    for (size_t i = 0; i < FILE_BYTES; i++)
        e->k.file[i] = (char)('a' + (i * 7 + i / 4096) % 26);
    pthread_mutex_init(&e->k.lock, NULL);
    assert_int_equal(mhd_fixture_start(&e->k.f, serve, &e->k), 0);
    store *st = NULL;
    assert_int_equal(store_embedded_open(NULL, &st, NULL), FR_OK);
    struct worker_options o = {.threads = 1};
    assert_int_equal(worker_new_with_store(&o, st, &e->w, NULL), FR_OK);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    mhd_fixture_stop(&e->k.f);
    worker_free(e->w);
    pthread_mutex_destroy(&e->k.lock);
    free(e->k.file);
    free(e);
    return 0;
}

/* Reads [start, end) through a remote source in 1 MiB reads (as the CSV
 * reader does) into out; returns the status of the first failed read. */
static int read_through(struct env *e, enum mode mode, int64_t start, int64_t end, char *out,
                        struct fr_error *err)
{
    e->k.mode = mode;
    e->k.requests = 0;
    const struct proto_peer peer = {.config_id = CFG};
    struct worker__remote_ctx rc = {.w = e->w, .peer = &peer, .coordinator = e->k.f.base_url};
    struct df_byte_range range = {start, end, 1};
    struct df_source *src = NULL;
    fr_error_init(err);
    bool known = mode != WHOLE; /* WHOLE: a task that does not know the file's size */
    int r = worker__remote_open(&rc, "sub/data.csv", known ? FILE_BYTES : -1, known ? 1 : -1,
                                &range, &src, err);
    assert_int_equal(r, FR_OK);
    int64_t at = start;
    while (r == FR_OK && at < end) {
        size_t want = end - at < (1 << 20) ? (size_t)(end - at) : (1 << 20), got = 0;
        r = src->read(src, at, out + (at - start), want, &got, err);
        if (r == FR_OK && got == 0)
            break;
        at += (int64_t)got;
    }
    worker__remote_close(&rc, src);
    return r;
}

static void test_reads_the_file(void **state)
{
    struct env *e = *state;
    char *out = fr_xmalloc(FILE_BYTES);
    struct fr_error err;
    long long before = atomic_load(&e->w->range_reads);
    assert_int_equal(read_through(e, OK, 0, FILE_BYTES, out, &err), FR_OK);
    assert_memory_equal(out, e->k.file, FILE_BYTES);
    long long reads = atomic_load(&e->w->range_reads) - before;
    assert_int_equal(reads, 3); /* 20 MiB + a bit in 8 MiB blocks */
    /* a range in the middle: the blocks start at it */
    assert_int_equal(read_through(e, OK, 5000000, 5000000 + 100000, out, &err), FR_OK);
    assert_memory_equal(out, e->k.file + 5000000, 100000);
    free(out);
}

/* A Parquet task's reads (its range's line 0): the footer's length and the
 * footer come in one read of the file's tail, a column chunk inside the
 * range in one read of its own size, and nothing else is fetched. */
static void test_reads_at_offsets(void **state)
{
    struct env *e = *state;
    e->k.mode = OK;
    const struct proto_peer peer = {.config_id = CFG};
    struct worker__remote_ctx rc = {.w = e->w, .peer = &peer, .coordinator = e->k.f.base_url};
    struct df_byte_range span = {4, 12 << 20, 0};
    struct df_source *src = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(worker__remote_open(&rc, "sub/data.csv", FILE_BYTES, 1, &span, &src, &err),
                     FR_OK);
    long long reads = atomic_load(&e->w->range_reads), bytes = atomic_load(&e->w->range_bytes);
    char *out = fr_xmalloc(4 << 20);
    size_t got = 0;
    assert_int_equal(src->read(src, FILE_BYTES - 8, out, 8, &got, &err), FR_OK);
    assert_int_equal(got, 8);
    assert_memory_equal(out, e->k.file + FILE_BYTES - 8, 8);
    assert_int_equal(src->read(src, FILE_BYTES - 3008, out, 3000, &got, &err), FR_OK);
    assert_memory_equal(out, e->k.file + FILE_BYTES - 3008, 3000);
    assert_int_equal(atomic_load(&e->w->range_reads) - reads, 1);
    /* a 3 MiB chunk at 5 MB: exactly its bytes, in one read */
    bytes = atomic_load(&e->w->range_bytes);
    assert_int_equal(src->read(src, 5000000, out, 3 << 20, &got, &err), FR_OK);
    assert_int_equal(got, 3 << 20);
    assert_memory_equal(out, e->k.file + 5000000, 3 << 20);
    assert_int_equal(atomic_load(&e->w->range_reads) - reads, 2);
    assert_int_equal(atomic_load(&e->w->range_bytes) - bytes, 3 << 20);
    worker__remote_close(&rc, src);
    free(out);
}

static void test_refusals(void **state)
{
    struct env *e = *state;
    char *out = fr_xmalloc(FILE_BYTES);
    struct fr_error err;
    /* a failure is 503 dataset-unavailable (the task is retried), the cause kept */
    assert_int_equal(read_through(e, SHORT, 0, FILE_BYTES, out, &err), FR_EUNAVAILABLE);
    assert_string_equal(err.kind, "dataset-unavailable");
    assert_non_null(strstr(err.message, "a short read of sub/data.csv"));
    /* except a file that changed since the plan: a definite 409 dataset-changed (a retry would
     * read the same new file) */
    assert_int_equal(read_through(e, ETAG_CHANGES, 0, FILE_BYTES, out, &err), FR_ECONFLICT);
    assert_string_equal(err.kind, "dataset-changed");
    assert_non_null(strstr(err.message, "changed on the coordinator"));
    assert_int_equal(read_through(e, SIZE_DIFFERS, 0, FILE_BYTES, out, &err), FR_ECONFLICT);
    assert_string_equal(err.kind, "dataset-changed");
    assert_non_null(strstr(err.message, "bytes on the coordinator, not the"));
    assert_int_equal(read_through(e, OTHER_CONFIG, 0, 100, out, &err), FR_EUNAVAILABLE);
    assert_non_null(strstr(err.message, "for config 'sha256:bbbb"));
    /* a 416 for bytes inside the file is the coordinator's fault, not a 500 */
    assert_int_equal(read_through(e, BAD_416, 0, 100, out, &err), FR_EUNAVAILABLE);
    assert_string_equal(err.kind, "dataset-unavailable");
    assert_non_null(strstr(err.message, "refused bytes from 0 of sub/data.csv (416)"));
    /* the coordinator always sends an ETag: bytes without one are not trusted */
    assert_int_equal(read_through(e, NO_ETAG, 0, 100, out, &err), FR_EUNAVAILABLE);
    assert_non_null(strstr(err.message, "without an ETag"));
    /* a whole file (200) of a size nobody can check */
    assert_int_equal(read_through(e, WHOLE, 0, 100, out, &err), FR_EUNAVAILABLE);
    assert_non_null(strstr(err.message, "its size is not known"));
    free(out);
}

static void test_retry(void **state)
{
    struct env *e = *state;
    char *out = fr_xmalloc(1 << 20);
    struct fr_error err;
    assert_int_equal(read_through(e, FAIL_ONCE, 0, 1 << 20, out, &err), FR_OK);
    assert_memory_equal(out, e->k.file, 1 << 20);
    assert_true(e->k.requests >= 2);
    free(out);
}

static void test_data_source_names(void **state)
{
    (void)state;
    int mode = -1;
    assert_int_equal(worker__data_source_parse(NULL, &mode), FR_OK);
    assert_int_equal(mode, PLAN_DATA_AUTO);
    assert_int_equal(worker__data_source_parse("remote", &mode), FR_OK);
    assert_int_equal(mode, PLAN_DATA_REMOTE);
    assert_int_equal(worker__data_source_parse("local", &mode), FR_OK);
    assert_int_equal(mode, PLAN_DATA_LOCAL);
    assert_int_equal(worker__data_source_parse("nfs", &mode), FR_EINVAL);
    store *st = NULL;
    assert_int_equal(store_embedded_open(NULL, &st, NULL), FR_OK);
    struct worker_options o = {.threads = 1, .data_source = "sometimes"};
    worker *w = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(worker_new_with_store(&o, st, &w, &err), FR_EINVAL);
    assert_null(w);
    assert_non_null(strstr(err.message, "--data-source"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reads_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reads_at_offsets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry, setup, teardown),
        cmocka_unit_test(test_data_source_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
