/* store_redis: the config store shared by a cluster, in Redis (hiredis, one
 * connection behind a mutex). Holds are leases: a ZSET of holders scored by
 * expiry in the server's clock (TIME in the Lua scripts), and both keys expire
 * with the latest lease, so a dead holder's entry goes by itself. */
#include "store.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REDIS_CONNECT_TIMEOUT_S 2
#define REDIS_COMMAND_TIMEOUT_S 5
#define REDIS_KEY_PREFIX "framed:config:"
#define REDIS_COLLISION "framed: ID collision"

/* Shared by the scripts: KEYS[1] the bytes, KEYS[2] the holders. now() is
 * the server's clock in ms; expire() drops lapsed leases; settle() sets both
 * keys to expire with the latest lease, or deletes both when none is left,
 * and returns the live holds. */
#define LUA_COMMON                                                                                 \
    "local function now()\n"                                                                       \
    "  local t = redis.call('TIME')\n"                                                             \
    "  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"                         \
    "end\n"                                                                                        \
    "local function expire(t) redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', t) end\n"            \
    "local function settle(t)\n"                                                                   \
    "  local n = redis.call('ZCARD', KEYS[2])\n"                                                   \
    "  if n == 0 then redis.call('DEL', KEYS[1], KEYS[2]) return 0 end\n"                          \
    "  local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')\n"                          \
    "  local ttl = math.max(1, math.floor(tonumber(top[2]) - t))\n"                                \
    "  redis.call('PEXPIRE', KEYS[1], ttl)\n"                                                      \
    "  redis.call('PEXPIRE', KEYS[2], ttl)\n"                                                      \
    "  return n\n"                                                                                 \
    "end\n"

/* ARGV[1] the bytes, ARGV[2] the holder, ARGV[3] the lease (ms). Returns the
 * live holds. Bytes without a live hold are stale: replaced. */
static const char PUT_SCRIPT[] =
    LUA_COMMON "local t = now()\n"
               "expire(t)\n"
               "local cur = redis.call('GET', KEYS[1])\n"
               "if cur == false or redis.call('ZCARD', KEYS[2]) == 0 then\n"
               "  redis.call('SET', KEYS[1], ARGV[1])\n"
               "elseif cur ~= ARGV[1] then\n"
               "  return redis.error_reply('" REDIS_COLLISION "')\n"
               "end\n"
               "redis.call('ZADD', KEYS[2], t + tonumber(ARGV[3]), ARGV[2])\n"
               "return settle(t)\n";

/* ARGV[1] the bytes, ARGV[2] the holder, ARGV[3] the lease. Returns 0 when
 * intact, 1 when the bytes were missing, 2 when other bytes were there. */
static const char RESTORE_SCRIPT[] =
    LUA_COMMON "local t = now()\n"
               "expire(t)\n"
               "local cur = redis.call('GET', KEYS[1])\n"
               "local what = 0\n"
               "if cur == false then what = 1\n"
               "elseif cur ~= ARGV[1] then what = 2 end\n"
               "if what ~= 0 then redis.call('SET', KEYS[1], ARGV[1]) end\n"
               "redis.call('ZADD', KEYS[2], t + tonumber(ARGV[3]), ARGV[2])\n"
               "settle(t)\n"
               "return what\n";

/* ARGV[1] the holder. Returns the live holds left, -1 when it held none. */
static const char RELEASE_SCRIPT[] =
    LUA_COMMON "local t = now()\n"
               "expire(t)\n"
               "local gone = redis.call('ZREM', KEYS[2], ARGV[1])\n"
               "local n = settle(t)\n"
               "if gone == 0 then return -1 end\n"
               "return n\n";

/* The live holds (read only). */
static const char COUNT_SCRIPT[] =
    LUA_COMMON "return redis.call('ZCOUNT', KEYS[2], '(' .. now(), '+inf')\n";

struct redis_store {
    struct store base;    /* first: a store * is a redis_store * */
    pthread_mutex_t lock; /* guards ctx: a hiredis context is not thread-safe */
    redisContext *ctx;    /* owned; NULL while disconnected */
    char *host;           /* owned */
    int port;
    int db;
    char where[300]; /* "host:port", for messages */
};

static struct redis_store *rst(store *s)
{
    return (struct redis_store *)s;
}

/* ---- URL ----------------------------------------------------------------- */

/* Reads 1 to maxdigits decimal digits into *out, advancing *p. */
static bool parse_digits(const char **p, int maxdigits, long *out)
{
    const char *s = *p;
    long v = 0;
    int n = 0;
    while (*s >= '0' && *s <= '9' && n < maxdigits) {
        v = v * 10 + (*s - '0');
        s++;
        n++;
    }
    if (n == 0 || (*s >= '0' && *s <= '9'))
        return false;
    *p = s;
    *out = v;
    return true;
}

static bool is_host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

/* redis://host:port[/db], host a name, an IPv4 address or [IPv6]. */
static int parse_url(const char *url, struct redis_store *rs, struct fr_error *err)
{
    const char *why = "it does not start with redis://";
    const char *p, *host, *host_end;
    long port = 0, db = 0;
    if (strncmp(url, "redis://", 8) != 0)
        goto bad;
    p = host = url + 8;
    why = "the host is missing or has characters other than letters, digits, '.', '-', '_'";
    if (*p == '[') {
        host = ++p;
        p += strspn(p, "0123456789abcdefABCDEF:.");
        if (*p != ']' || p == host)
            goto bad;
        host_end = p++;
    } else {
        while (is_host_char(*p))
            p++;
        host_end = p;
        if (host_end == host)
            goto bad;
    }
    why = "the port is missing";
    if (*p++ != ':')
        goto bad;
    why = "the port is not a number from 1 to 65535";
    if (!parse_digits(&p, 5, &port) || port < 1 || port > 65535)
        goto bad;
    if (*p == '/') {
        p++;
        why = "the database is not a number from 0 to 999999";
        if (!parse_digits(&p, 6, &db))
            goto bad;
    }
    why = "it has something after host:port[/db] (credentials and options are not supported)";
    if (*p != '\0')
        goto bad;
    rs->host = fr_xstrndup(host, (size_t)(host_end - host));
    rs->port = (int)port;
    rs->db = (int)db;
    snprintf(rs->where, sizeof(rs->where), strchr(rs->host, ':') ? "[%s]:%d" : "%s:%d", rs->host,
             rs->port);
    return FR_OK;
bad:
    return fr_error_set(err, FR_EINVAL,
                        "'%.200s' is not a Redis URL: %s; expected redis://host:port[/db]", url,
                        why);
}

/* ---- connection ---------------------------------------------------------- */

/* hiredis writes with write(2): a server that went away raises SIGPIPE,
 * which kills a process that does not ignore it. It is blocked in this
 * thread around a call, and one that became pending is dropped. */
struct sigpipe_guard {
    sigset_t old;
    bool was_pending;
};

static void sigpipe_block(struct sigpipe_guard *g)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void sigpipe_restore(struct sigpipe_guard *g)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigpending(&pending);
    if (!g->was_pending && sigismember(&pending, SIGPIPE) == 1) {
        struct timespec zero = {0, 0};
        sigtimedwait(&set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

static void disconnect_locked(struct redis_store *rs)
{
    redisFree(rs->ctx);
    rs->ctx = NULL;
}

/* Called with the lock held: connects, sets the timeout, selects the db. */
static int connect_locked(struct redis_store *rs, struct fr_error *err)
{
    int result = FR_EIO;
    redisReply *reply = NULL;
    struct timeval connect_tv = {REDIS_CONNECT_TIMEOUT_S, 0};
    struct timeval command_tv = {REDIS_COMMAND_TIMEOUT_S, 0};
    rs->ctx = redisConnectWithTimeout(rs->host, rs->port, connect_tv);
    if (!rs->ctx || rs->ctx->err) {
        fr_error_set(err, FR_EIO, "cannot connect to Redis at %s: %s", rs->where,
                     rs->ctx ? rs->ctx->errstr : "out of memory");
        goto out;
    }
    if (redisSetTimeout(rs->ctx, command_tv) != REDIS_OK) {
        fr_error_set(err, FR_EIO, "cannot set a timeout on the Redis connection to %s: %s",
                     rs->where, rs->ctx->errstr);
        goto out;
    }
    if (rs->db != 0) {
        reply = redisCommand(rs->ctx, "SELECT %d", rs->db);
        if (!reply || reply->type == REDIS_REPLY_ERROR) {
            fr_error_set(err, FR_EIO, "Redis at %s refused SELECT %d: %s", rs->where, rs->db,
                         reply ? reply->str : rs->ctx->errstr);
            goto out;
        }
    }
    result = FR_OK;
out:
    freeReplyObject(reply);
    if (result != FR_OK)
        disconnect_locked(rs);
    return result;
}

/* A link the server closed (idle timeout, restart, CLIENT KILL) never ran
 * the command, so it is safe to send again; after a timeout the command may
 * have run, and repeating a put would count it twice. */
static bool worth_retrying(const redisContext *ctx, int saved_errno)
{
    return ctx->err == REDIS_ERR_EOF ||
           (ctx->err == REDIS_ERR_IO && (saved_errno == EPIPE || saved_errno == ECONNRESET));
}

/* Runs one command; *reply is new (never an error reply's absence: the
 * caller checks its type). Reconnects once on a broken link. */
static int command(struct redis_store *rs, int argc, const char **argv, const size_t *argvlen,
                   redisReply **reply, struct fr_error *err)
{
    int result = FR_EIO;
    struct sigpipe_guard guard;
    *reply = NULL;
    pthread_mutex_lock(&rs->lock);
    sigpipe_block(&guard);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!rs->ctx) {
            result = connect_locked(rs, err);
            if (result != FR_OK)
                goto out;
        }
        errno = 0;
        *reply = redisCommandArgv(rs->ctx, argc, argv, argvlen);
        if (*reply) {
            result = FR_OK;
            goto out;
        }
        int saved_errno = errno;
        bool retry = attempt == 0 && worth_retrying(rs->ctx, saved_errno);
        result = fr_error_set(err, FR_EIO, "Redis at %s: %s %s", rs->where, argv[0],
                              rs->ctx->errstr[0] ? rs->ctx->errstr : "failed");
        disconnect_locked(rs);
        if (!retry)
            goto out;
        FR_LOG(FR_LOG_INFO, "store: the Redis link to %s broke (%s); reconnecting", rs->where,
               err ? err->message : "");
    }
out:
    sigpipe_restore(&guard);
    pthread_mutex_unlock(&rs->lock);
    store__note_reachable(&rs->base, result == FR_OK, err ? err->message : "");
    return result;
}

/* ---- operations ---------------------------------------------------------- */

struct redis_keys {
    char bytes[128];
    char holds[128];
};

static void make_keys(const char *id, struct redis_keys *k)
{
    snprintf(k->bytes, sizeof(k->bytes), REDIS_KEY_PREFIX "%s", id);
    snprintf(k->holds, sizeof(k->holds), REDIS_KEY_PREFIX "%s:holds", id);
}

static int check_id(const char *id, struct fr_error *err)
{
    if (store_id_valid(id))
        return FR_OK;
    return fr_error_set(err, FR_EINVAL, "'%.100s' is not a config ID (sha256:<64 hex>)",
                        id ? id : "");
}

static int check_holder(const char *holder, struct fr_error *err)
{
    if (store_holder_valid(holder))
        return FR_OK;
    return fr_error_set(err, FR_EINVAL, "'%.100s' is not a store holder ([A-Za-z0-9._-]{1,64})",
                        holder ? holder : "");
}

static int reply_error(struct redis_store *rs, const redisReply *reply, struct fr_error *err)
{
    return fr_error_set(err, FR_EIO, "Redis at %s answered: %.300s", rs->where,
                        reply->type == REDIS_REPLY_ERROR ? reply->str : "an unexpected reply");
}

/* Runs script over id's keys with the bytes, holder and lease as ARGV (NULL
 * bytes: holder only, or nothing with holder NULL); *reply is new. */
static int run_script(struct redis_store *rs, const char *script, const char *id, const char *bytes,
                      size_t len, const char *holder, redisReply **reply, struct fr_error *err)
{
    struct redis_keys k;
    char lease[32];
    make_keys(id, &k);
    snprintf(lease, sizeof(lease), "%lld", (long long)rs->base.lease_ms);
    const char *argv[8] = {"EVAL", script, "2", k.bytes, k.holds};
    size_t argvlen[8] = {4, strlen(script), 1, strlen(k.bytes), strlen(k.holds)};
    int argc = 5;
    if (bytes) {
        argv[argc] = len ? bytes : "";
        argvlen[argc++] = len;
    }
    if (holder) {
        argv[argc] = holder;
        argvlen[argc++] = strlen(holder);
    }
    if (bytes) {
        argv[argc] = lease;
        argvlen[argc++] = strlen(lease);
    }
    int rc = command(rs, argc, argv, argvlen, reply, err);
    if (rc == FR_OK && (*reply)->type == REDIS_REPLY_ERROR &&
        !strstr((*reply)->str, REDIS_COLLISION))
        rc = reply_error(rs, *reply, err);
    else if (rc == FR_OK && (*reply)->type != REDIS_REPLY_INTEGER &&
             (*reply)->type != REDIS_REPLY_ERROR)
        rc = reply_error(rs, *reply, err);
    return rc;
}

static int redis_put(store *s, const char *holder, const char *bytes, size_t len, char *id_out,
                     size_t id_outsz, struct fr_error *err)
{
    struct redis_store *rs = rst(s);
    redisReply *reply = NULL;
    char id[80];
    if (!id_out || id_outsz < 72)
        return fr_error_set(err, FR_EINTERNAL, "store_put: the ID buffer is too small");
    int result = check_holder(holder, err);
    if (result != FR_OK)
        return result;
    fr_sha256_id(bytes, len, id, sizeof(id));
    result = run_script(rs, PUT_SCRIPT, id, bytes, len, holder, &reply, err);
    if (result != FR_OK)
        goto out;
    if (reply->type == REDIS_REPLY_ERROR) {
        result = fr_error_set(err, FR_ECONFLICT,
                              "Redis at %s holds other bytes under %s (an ID collision or a "
                              "corrupted entry); the config was not stored",
                              rs->where, id);
        goto out;
    }
    snprintf(id_out, id_outsz, "%s", id);
out:
    freeReplyObject(reply);
    return result;
}

static int redis_restore(store *s, const char *holder, const char *bytes, size_t len,
                         enum store_restored *what, struct fr_error *err)
{
    struct redis_store *rs = rst(s);
    redisReply *reply = NULL;
    char id[80];
    *what = STORE_INTACT;
    int result = check_holder(holder, err);
    if (result != FR_OK)
        return result;
    fr_sha256_id(bytes, len, id, sizeof(id));
    result = run_script(rs, RESTORE_SCRIPT, id, bytes, len, holder, &reply, err);
    if (result == FR_OK && reply->type != REDIS_REPLY_INTEGER)
        result = reply_error(rs, reply, err);
    if (result == FR_OK)
        *what = reply->integer == 2   ? STORE_REPAIRED
                : reply->integer == 1 ? STORE_RESTORED
                                      : STORE_INTACT;
    freeReplyObject(reply);
    return result;
}

static int redis_get(store *s, const char *id, char **bytes, size_t *len, struct fr_error *err)
{
    struct redis_store *rs = rst(s);
    redisReply *reply = NULL;
    struct redis_keys k;
    int result = check_id(id, err);
    if (result != FR_OK)
        return result;
    make_keys(id, &k);
    const char *argv[] = {"GET", k.bytes};
    size_t argvlen[] = {3, strlen(k.bytes)};
    result = command(rs, 2, argv, argvlen, &reply, err);
    if (result != FR_OK)
        goto out;
    if (reply->type == REDIS_REPLY_NIL) {
        result = fr_error_set(err, FR_ENOTFOUND, "config %s is not in the Redis store at %s", id,
                              rs->where);
        goto out;
    }
    if (reply->type != REDIS_REPLY_STRING) {
        result = reply_error(rs, reply, err);
        goto out;
    }
    char *copy = fr_try_malloc(reply->len + 1);
    if (!copy) {
        result = fr_error_set(err, FR_ENOSPACE, "no memory to copy config %s", id);
        goto out;
    }
    memcpy(copy, reply->str, reply->len);
    copy[reply->len] = '\0'; /* a convenience: the bytes are JSON text */
    *bytes = copy;
    *len = reply->len;
out:
    freeReplyObject(reply);
    return result;
}

static int redis_release(store *s, const char *id, const char *holder, struct fr_error *err)
{
    struct redis_store *rs = rst(s);
    redisReply *reply = NULL;
    int result = check_id(id, err);
    if (result == FR_OK)
        result = check_holder(holder, err);
    if (result != FR_OK)
        return result;
    result = run_script(rs, RELEASE_SCRIPT, id, NULL, 0, holder, &reply, err);
    if (result == FR_OK && reply->type != REDIS_REPLY_INTEGER)
        result = reply_error(rs, reply, err);
    if (result == FR_OK && reply->integer < 0)
        result = fr_error_set(err, FR_ENOTFOUND,
                              "config %s is not held by %s in the Redis store at %s (its lease "
                              "may have lapsed)",
                              id, holder, rs->where);
    freeReplyObject(reply);
    return result;
}

static int redis_refcount(store *s, const char *id, int64_t *count, struct fr_error *err)
{
    struct redis_store *rs = rst(s);
    redisReply *reply = NULL;
    *count = 0;
    int result = check_id(id, err);
    if (result != FR_OK)
        return result;
    result = run_script(rs, COUNT_SCRIPT, id, NULL, 0, NULL, &reply, err);
    if (result == FR_OK && reply->type != REDIS_REPLY_INTEGER)
        result = reply_error(rs, reply, err);
    if (result == FR_OK)
        *count = reply->integer;
    freeReplyObject(reply);
    return result;
}

static void redis_free(store *s)
{
    struct redis_store *rs = rst(s);
    disconnect_locked(rs);
    free(rs->host);
    pthread_mutex_destroy(&rs->lock);
    store__base_cleanup(s);
    free(rs);
}

static const struct store_vtable redis_vtable = {
    .name = "redis",
    .put = redis_put,
    .get = redis_get,
    .release = redis_release,
    .refcount = redis_refcount,
    .restore = redis_restore,
    .free = redis_free,
};

int store_redis_open(const char *url, store **out, struct fr_error *err)
{
    struct redis_store *rs = fr_xcalloc(1, sizeof(*rs));
    store__base_init(&rs->base, &redis_vtable, STORE_LEASE_DEFAULT_MS);
    pthread_mutex_init(&rs->lock, NULL);
    *out = NULL;
    int result = url ? parse_url(url, rs, err)
                     : fr_error_set(err, FR_EINVAL, "no Redis URL (redis://host:port[/db])");
    if (result != FR_OK)
        goto out;
    /* Connect now, so a wrong address shows at startup rather than at the
     * first config; later breaks are repaired on use. */
    pthread_mutex_lock(&rs->lock);
    result = connect_locked(rs, err);
    pthread_mutex_unlock(&rs->lock);
    if (result != FR_OK)
        goto out;
    *out = &rs->base;
    rs = NULL;
out:
    if (rs)
        redis_free(&rs->base);
    return result;
}
