/* Tests of src/store/store_redis.c against a real redis-server started on a
 * free loopback port (found on PATH, or FRAMED_REDIS_SERVER): holds by
 * holder, the removal with the last hold, binary bytes, a tampered entry and
 * its repair, a lost entry put back, leases that lapse (a dead holder) and
 * leases kept by renewal, SELECT, a killed link, exact counts under 8
 * threads, and a stopped server as FR_EIO. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "../common/mhd_fixture.h"
#include "store/store.h"

static const char CONFIG_A[] = "{\"shuffle_partitions\":8}";
static const char CONFIG_B[] = "{\"shuffle_partitions\":9}";

struct redis_server {
    pid_t pid; /* 0 once stopped */
    uint16_t port;
    char url[64]; /* redis://127.0.0.1:<port> */
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The child: exec redis-server; on failure report errno through the pipe. */
static void exec_redis(const char *bin, uint16_t port, int report_fd)
{
    char port_text[16];
    snprintf(port_text, sizeof(port_text), "%u", (unsigned)port);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a crashed test */
#endif
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0)
        dup2(devnull, STDOUT_FILENO);
    execlp(bin, bin, "--port", port_text, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
           "--daemonize", "no", (char *)NULL);
    int e = errno;
    ssize_t w = write(report_fd, &e, sizeof(e));
    (void)w;
    _exit(127);
}

static bool answers_ping(uint16_t port)
{
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    bool ok = false;
    if (c && !c->err) {
        redisReply *r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        freeReplyObject(r);
    }
    redisFree(c);
    return ok;
}

/* 0 when a server answers PING; -1 with a message printed otherwise. */
static int start_once(struct redis_server *srv, const char *bin)
{
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0)
        return -1;
    srv->port = mhd_fixture_closed_port();
    srv->pid = fork();
    if (srv->pid == 0)
        exec_redis(bin, srv->port, report[1]);
    close(report[1]);
    int exec_errno = 0;
    ssize_t got = read(report[0], &exec_errno, sizeof(exec_errno));
    close(report[0]);
    if (srv->pid < 0 || got > 0) {
        print_error("cannot run %s: %s. This test needs a real Redis server: install it "
                    "(apt-get install redis-server) or set FRAMED_REDIS_SERVER to its path\n",
                    bin, strerror(got > 0 ? exec_errno : errno));
        if (srv->pid > 0)
            waitpid(srv->pid, NULL, 0);
        srv->pid = 0;
        return -1;
    }
    for (int i = 0; i < 100; i++) {
        if (answers_ping(srv->port)) {
            snprintf(srv->url, sizeof(srv->url), "redis://127.0.0.1:%u", (unsigned)srv->port);
            return 0;
        }
        if (waitpid(srv->pid, NULL, WNOHANG) == srv->pid)
            break; /* it exited: the port was taken in between, most likely */
        sleep_ms(50);
    }
    kill(srv->pid, SIGKILL);
    waitpid(srv->pid, NULL, 0);
    srv->pid = 0;
    return 1;
}

static void stop_server(struct redis_server *srv)
{
    if (srv->pid <= 0)
        return;
    kill(srv->pid, SIGTERM);
    for (int i = 0; i < 100 && waitpid(srv->pid, NULL, WNOHANG) != srv->pid; i++)
        sleep_ms(50);
    if (kill(srv->pid, 0) == 0) {
        kill(srv->pid, SIGKILL);
        waitpid(srv->pid, NULL, 0);
    }
    srv->pid = 0;
}

static int setup_server(void **state)
{
    const char *bin = getenv("FRAMED_REDIS_SERVER");
    struct redis_server *srv = fr_xcalloc(1, sizeof(*srv));
    int rc = 1;
    for (int attempt = 0; attempt < 3 && rc > 0; attempt++)
        rc = start_once(srv, bin && *bin ? bin : "redis-server");
    if (rc != 0) {
        if (rc > 0)
            print_error("redis-server did not answer PING on a free port after 3 tries\n");
        free(srv);
        return -1;
    }
    *state = srv;
    return 0;
}

static int teardown_server(void **state)
{
    if (!*state)
        return 0; /* the setup failed and said why */
    stop_server(*state);
    free(*state);
    return 0;
}

/* ---- helpers --------------------------------------------------------------- */

static store *open_redis(const char *url)
{
    store *s = NULL;
    struct fr_error err;
    fr_error_init(&err);
    if (store_redis_open(url, &s, &err) != FR_OK)
        fail_msg("store_redis_open(%s): %s", url, err.message);
    assert_string_equal(s->vt->name, "redis");
    return s;
}

/* A command on a connection of the test's own, in database db; new reply. */
static redisReply *direct(const struct redis_server *srv, int db, const char *fmt, ...)
{
    redisContext *c = redisConnect("127.0.0.1", srv->port);
    assert_true(c && !c->err);
    redisReply *r = redisCommand(c, "SELECT %d", db);
    assert_non_null(r);
    freeReplyObject(r);
    va_list ap;
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    redisFree(c);
    return r;
}

static long long direct_exists(const struct redis_server *srv, int db, const char *key)
{
    redisReply *r = direct(srv, db, "EXISTS %s", key);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

static int64_t count_of(store *s, const char *id)
{
    int64_t n = -1;
    struct fr_error err;
    fr_error_init(&err);
    if (store_refcount(s, id, &n, &err) != FR_OK)
        fail_msg("refcount: %s", err.message);
    return n;
}

static void expect_bytes(store *s, const char *id, const char *want, size_t want_len)
{
    char *bytes = NULL;
    size_t len = 0;
    struct fr_error err;
    fr_error_init(&err);
    if (store_get(s, id, &bytes, &len, &err) != FR_OK)
        fail_msg("get %s: %s", id, err.message);
    assert_int_equal(len, want_len);
    assert_memory_equal(bytes, want, len);
    assert_int_equal(bytes[len], '\0');
    free(bytes);
}

static void hold_ok(store *s, const char *holder, const char *bytes, size_t len, char *id)
{
    struct fr_error err;
    fr_error_init(&err);
    if (store_hold(s, holder, bytes, len, id, 80, &err) != FR_OK)
        fail_msg("put: %s", err.message);
}

static void put_ok(store *s, const char *bytes, size_t len, char *id)
{
    hold_ok(s, STORE_ANON_HOLDER, bytes, len, id);
}

static long long direct_int(const struct redis_server *srv, const char *cmd, const char *key)
{
    redisReply *r = direct(srv, 0, "%s %s", cmd, key);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_lifecycle(void **state)
{
    struct redis_server *srv = *state;
    store *s = open_redis(srv->url);
    char id1[80], id2[80], want[80], key[120];
    struct fr_error err;
    fr_sha256_id(CONFIG_A, strlen(CONFIG_A), want, sizeof(want));
    hold_ok(s, "runner-1", CONFIG_A, strlen(CONFIG_A), id1);
    hold_ok(s, "runner-2", CONFIG_A, strlen(CONFIG_A), id2);
    hold_ok(s, "runner-2", CONFIG_A, strlen(CONFIG_A), id2); /* a holder holds once */
    assert_string_equal(id1, want);
    assert_string_equal(id2, want);
    assert_int_equal(count_of(s, id1), 2);
    snprintf(key, sizeof(key), "framed:config:%s", id1);
    assert_true(direct_int(srv, "PTTL", key) > 0); /* Redis removes it by itself after the lease */

    fr_error_init(&err);
    assert_int_equal(store_unhold(s, id1, "runner-1", &err), FR_OK);
    assert_int_equal(store_unhold(s, id1, "runner-1", &err), FR_ENOTFOUND);
    expect_bytes(s, id1, CONFIG_A, strlen(CONFIG_A));
    assert_int_equal(count_of(s, id1), 1);

    assert_int_equal(store_unhold(s, id1, "runner-2", &err), FR_OK);
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(store_get(s, id1, &bytes, &len, &err), FR_ENOTFOUND);
    assert_non_null(strstr(err.message, id1));
    assert_int_equal(count_of(s, id1), 0);
    assert_int_equal(store_release(s, id1, &err), FR_ENOTFOUND);
    snprintf(key, sizeof(key), "framed:config:%s", id1);
    assert_int_equal(direct_exists(srv, 0, key), 0);
    snprintf(key, sizeof(key), "framed:config:%s:holds", id1);
    assert_int_equal(direct_exists(srv, 0, key), 0);

    /* Bytes are binary-safe, and a bad ID is refused before any command. */
    static const char binary[] = {'{', '\0', '\n', (char)0xff, '}'};
    put_ok(s, binary, sizeof(binary), id1);
    expect_bytes(s, id1, binary, sizeof(binary));
    assert_int_equal(store_release(s, id1, &err), FR_OK);
    assert_int_equal(store_get(s, "sha256:xyz", &bytes, &len, &err), FR_EINVAL);
    store_free(s);
}

static void test_tampered_entry(void **state)
{
    struct redis_server *srv = *state;
    store *s = open_redis(srv->url);
    char id[80], dup[80];
    static const char tampered[] = "{\"shuffle_partitions\":1000}";
    struct fr_error err;
    put_ok(s, CONFIG_B, strlen(CONFIG_B), id);
    freeReplyObject(direct(srv, 0, "SET framed:config:%s %s", id, tampered));
    /* The store hands back what it holds; checking the hash is the caller's job. */
    expect_bytes(s, id, tampered, strlen(tampered));
    fr_error_init(&err);
    assert_int_equal(store_hold(s, "other", CONFIG_B, strlen(CONFIG_B), dup, sizeof(dup), &err),
                     FR_ECONFLICT);
    assert_non_null(strstr(err.message, "collision"));
    assert_int_equal(count_of(s, id), 1);
    /* The holder of the right bytes repairs the entry; the corruption is counted. */
    enum store_restored what = STORE_INTACT;
    assert_int_equal(store_restore(s, "runner-r", CONFIG_B, strlen(CONFIG_B), &what, &err), FR_OK);
    assert_int_equal(what, STORE_REPAIRED);
    expect_bytes(s, id, CONFIG_B, strlen(CONFIG_B));
    struct store_health h;
    store_health_get(s, &h);
    assert_int_equal(h.corruptions, 1);
    assert_non_null(strstr(h.last_corruption, id));
    assert_int_equal(count_of(s, id), 2);
    /* Lost (a Redis restart without persistence): put back, with the holds. */
    freeReplyObject(direct(srv, 0, "DEL framed:config:%s framed:config:%s:holds", id, id));
    assert_int_equal(store_restore(s, "runner-r", CONFIG_B, strlen(CONFIG_B), &what, &err), FR_OK);
    assert_int_equal(what, STORE_RESTORED);
    assert_int_equal(store_restore(s, "runner-r", CONFIG_B, strlen(CONFIG_B), &what, &err), FR_OK);
    assert_int_equal(what, STORE_INTACT);
    expect_bytes(s, id, CONFIG_B, strlen(CONFIG_B));
    assert_int_equal(count_of(s, id), 1);
    store_health_get(s, &h);
    assert_int_equal(h.restores, 1);
    assert_int_equal(store_unhold(s, id, "runner-r", &err), FR_OK);
    assert_int_equal(count_of(s, id), 0);
    store_free(s);
}

/* Polls until id has no live hold and its keys are gone; false at the deadline. */
static bool lapses(const struct redis_server *srv, store *s, const char *id, int64_t deadline_ms)
{
    char key[120];
    snprintf(key, sizeof(key), "framed:config:%s", id);
    while (fr_mono_us() / 1000 < deadline_ms) {
        if (count_of(s, id) == 0 && direct_exists(srv, 0, key) == 0)
            return true;
        sleep_ms(50);
    }
    return false;
}

/* A holder that dies (never renews) loses its hold after the lease; one
 * that renews keeps it. */
static void test_leases(void **state)
{
    struct redis_server *srv = *state;
    store *s = open_redis(srv->url);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(store_lease_ms(s), STORE_LEASE_DEFAULT_MS);
    assert_int_equal(store_set_lease_ms(s, 10, &err), FR_EINVAL);
    assert_int_equal(store_set_lease_ms(s, STORE_LEASE_MIN_MS, &err), FR_OK);
    char id[80], idb[80];
    hold_ok(s, "dead", CONFIG_A, strlen(CONFIG_A), id);
    hold_ok(s, "live", CONFIG_B, strlen(CONFIG_B), idb);
    assert_int_equal(count_of(s, id), 1);
    int64_t start_ms = fr_mono_us() / 1000;
    /* "live" renews every lease/3 while "dead" has stopped. */
    enum store_restored what;
    bool gone = false;
    while (!gone && fr_mono_us() / 1000 < start_ms + 10000) {
        assert_int_equal(store_restore(s, "live", CONFIG_B, strlen(CONFIG_B), &what, &err), FR_OK);
        gone = count_of(s, id) == 0;
        sleep_ms(STORE_LEASE_MIN_MS / 3);
    }
    assert_true(gone);
    assert_true(lapses(srv, s, id, start_ms + 10000));
    assert_int_equal(count_of(s, idb), 1);
    expect_bytes(s, idb, CONFIG_B, strlen(CONFIG_B));
    /* Once "live" stops too, Redis removes its entry by itself. */
    assert_true(lapses(srv, s, idb, fr_mono_us() / 1000 + 10000));
    assert_int_equal(store_unhold(s, idb, "live", &err), FR_ENOTFOUND);
    store_free(s);
}

static void test_select_db(void **state)
{
    struct redis_server *srv = *state;
    char *url = fr_xasprintf("%s/3", srv->url);
    store *s = open_redis(url);
    char id[80], key[120];
    struct fr_error err;
    put_ok(s, CONFIG_A, strlen(CONFIG_A), id);
    snprintf(key, sizeof(key), "framed:config:%s", id);
    assert_int_equal(direct_exists(srv, 3, key), 1);
    assert_int_equal(direct_exists(srv, 0, key), 0);
    fr_error_init(&err);
    assert_int_equal(store_release(s, id, &err), FR_OK);
    assert_int_equal(direct_exists(srv, 3, key), 0);
    store_free(s);
    free(url);
}

/* The server drops the store's connection: the next call reconnects once. */
static void test_reconnects_after_a_killed_link(void **state)
{
    struct redis_server *srv = *state;
    char *url = fr_xasprintf("%s/1", srv->url);
    store *s = open_redis(url);
    char id[80];
    struct fr_error err;
    put_ok(s, CONFIG_A, strlen(CONFIG_A), id);
    redisReply *r = direct(srv, 0, "CLIENT KILL TYPE normal SKIPME yes");
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_true(r->integer >= 1);
    freeReplyObject(r);
    /* Still in database 1 after the reconnect. */
    expect_bytes(s, id, CONFIG_A, strlen(CONFIG_A));
    fr_error_init(&err);
    assert_int_equal(store_release(s, id, &err), FR_OK);
    assert_int_equal(count_of(s, id), 0);
    store_free(s);
    free(url);
}

struct worker_args {
    store *s;
    int index;
    int puts, releases;
    int failures;
};

static void holder_name(char *out, size_t n, int thread, int k)
{
    snprintf(out, n, "t%d-%d", thread, k);
}

/* Holds `puts` times (a holder each), releasing its oldest hold after every
 * other put until `releases` ran. */
static void *hammer(void *arg)
{
    struct worker_args *w = arg;
    int released = 0;
    char holder[32], id[80];
    for (int i = 0; i < w->puts || released < w->releases; i++) {
        holder_name(holder, sizeof(holder), w->index, i);
        if (i < w->puts &&
            store_hold(w->s, holder, CONFIG_B, strlen(CONFIG_B), id, sizeof(id), NULL) != FR_OK)
            w->failures++;
        if ((i % 2 == 1 || i >= w->puts) && released < w->releases) {
            holder_name(holder, sizeof(holder), w->index, released);
            fr_sha256_id(CONFIG_B, strlen(CONFIG_B), id, sizeof(id));
            if (store_unhold(w->s, id, holder, NULL) != FR_OK)
                w->failures++;
            released++;
        }
    }
    return NULL;
}

static void run_threads(store **stores, int puts, int releases)
{
    pthread_t threads[8];
    struct worker_args args[8];
    for (int i = 0; i < 8; i++) {
        args[i] = (struct worker_args){stores[i % 2], i, puts, releases, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, hammer, &args[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(args[i].failures, 0);
    }
}

/* Two store handles (two connections) shared by 8 threads. */
static void test_concurrent_counts(void **state)
{
    struct redis_server *srv = *state;
    store *stores[2] = {open_redis(srv->url), open_redis(srv->url)};
    char id[80];
    fr_sha256_id(CONFIG_B, strlen(CONFIG_B), id, sizeof(id));
    run_threads(stores, 100, 50);
    assert_int_equal(count_of(stores[0], id), 8 * 50);
    assert_int_equal(count_of(stores[1], id), 8 * 50);
    /* the other 50 holds of each thread */
    for (int t = 0; t < 8; t++)
        for (int k = 50; k < 100; k++) {
            char holder[32];
            holder_name(holder, sizeof(holder), t, k);
            assert_int_equal(store_unhold(stores[t % 2], id, holder, NULL), FR_OK);
        }
    assert_int_equal(count_of(stores[0], id), 0);
    char key[120];
    snprintf(key, sizeof(key), "framed:config:%s", id);
    assert_int_equal(direct_exists(srv, 0, key), 0);
    store_free(stores[0]);
    store_free(stores[1]);
}

static void test_bad_urls(void **state)
{
    (void)state;
    const char *bad[] = {"redis://",          "redis://127.0.0.1",  "redis://:6379",
                         "redis://h:0",       "redis://h:65536",    "redis://h:63790000",
                         "redis://h:6379/",   "redis://h:6379/x",   "redis://h:6379/1/2",
                         "redis://h:12ab",    "redis://u:p@h:6379", "redis://h:6379?db=1",
                         "redis://[::1:6379", "rediss://h:6379",    "http://h:6379"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        store *s = NULL;
        struct fr_error err;
        fr_error_init(&err);
        if (store_redis_open(bad[i], &s, &err) != FR_EINVAL)
            fail_msg("'%s' was not refused as a Redis URL", bad[i]);
        assert_null(s);
        if (!strstr(err.message, bad[i]))
            fail_msg("message '%s' does not name '%s'", err.message, bad[i]);
    }
}

/* Runs last: the group's server goes away under an open store. */
static void test_stopped_server(void **state)
{
    struct redis_server *srv = *state;
    store *s = open_redis(srv->url);
    char id[80], where[64];
    put_ok(s, CONFIG_A, strlen(CONFIG_A), id);
    stop_server(srv);
    snprintf(where, sizeof(where), "127.0.0.1:%u", (unsigned)srv->port);

    char *bytes = NULL;
    size_t len = 0;
    int64_t count = -1;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(store_get(s, id, &bytes, &len, &err), FR_EIO);
    assert_non_null(strstr(err.message, where));
    fr_error_init(&err);
    assert_int_equal(store_put(s, CONFIG_A, strlen(CONFIG_A), id, sizeof(id), &err), FR_EIO);
    assert_non_null(strstr(err.message, where));
    assert_int_equal(store_release(s, id, &err), FR_EIO);
    assert_int_equal(store_refcount(s, id, &count, &err), FR_EIO);
    store_free(s);

    store *s2 = NULL;
    fr_error_init(&err);
    assert_int_equal(store_redis_open(srv->url, &s2, &err), FR_EIO);
    assert_null(s2);
    assert_non_null(strstr(err.message, where));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_tampered_entry),
        cmocka_unit_test(test_leases),
        cmocka_unit_test(test_select_db),
        cmocka_unit_test(test_reconnects_after_a_killed_link),
        cmocka_unit_test(test_concurrent_counts),
        cmocka_unit_test(test_bad_urls),
        cmocka_unit_test(test_stopped_server),
    };
    return cmocka_run_group_tests(tests, setup_server, teardown_server);
}
