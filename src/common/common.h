/* common: the small pieces every framed module stands on: allocation, a growable
 * byte buffer, the error struct a fallible call fills in, logging and clocks.
 * Ownership words follow jansson: "new" (caller frees), "borrowed" (valid until
 * the owner changes), "steals" (the callee takes ownership). */
#ifndef FRAMED_COMMON_H
#define FRAMED_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <time.h>

#define FRAMED_VERSION "0.1.0"

/* The most columns a table may have: a CSV header, an NDJSON record, an inline
 * row, a plan's schema or a partition past it is refused (422 too-many-columns)
 * before any work that grows with the column count. */
#define FR_MAX_COLUMNS 10000

/* ---- allocation ---------------------------------------------------------
 * x* variants abort on OOM: bookkeeping only. try variants return NULL: use
 * them for anything sized by user data and turn NULL into FR_ETOOLARGE. */
void *fr_xmalloc(size_t n);
void *fr_xcalloc(size_t count, size_t size);
void *fr_xrealloc(void *p, size_t n);
char *fr_xstrdup(const char *s);
char *fr_xstrndup(const char *s, size_t n);
char *fr_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *fr_try_malloc(size_t n);
void *fr_try_realloc(void *p, size_t n);
/* try variant for big buffers written end to end (columns, partition
 * bodies): past 4 MiB aligned to 2 MiB, rounded up to it and advised onto
 * huge pages (on a VM the first touch of a 4 KiB page is dear); *cap (when
 * given) gets the bytes allocated (a kept block's whole size when one is
 * reused: see fr_free_big). Freed with free() or fr_free_big(). */
void *fr_try_malloc_big(size_t n, size_t *cap);
/* free() for a block that may be big: one of 32 MiB or more that
 * fr_try_malloc_big made is kept for a later fr_try_malloc_big instead,
 * within a bound (common_mem.c). Thread-safe; NULL is fine. */
void fr_free_big(void *p);
/* Frees every kept block (at the points that trim the heap when idle). */
void fr_big_release(void);
/* Frees the blocks kept for FR_BIG_KEEP_MS without being reused (called
 * by periodic threads). */
#define FR_BIG_KEEP_MS 10000
void fr_big_expire(void);
/* The kept blocks hold at most bytes in all, and never more than the
 * default (an eighth of the machine's memory, at most 4 GiB); 0 = keep none. */
void fr_big_keep_limit(size_t bytes);
size_t fr_big_kept_bytes(void);

/* ---- errors -------------------------------------------------------------
 * Status codes are negative; 0 is success. The HTTP edge maps each one to a
 * status code and an RFC 9457 problem type (one table, in http). */
enum fr_status {
    FR_OK = 0,
    FR_EINVAL = -1,       /* bad request: malformed or invalid input (400) */
    FR_ENOTFOUND = -2,    /* no such thing (404) */
    FR_ECONFLICT = -3,    /* state forbids it (409) */
    FR_EVALIDATION = -4,  /* well-formed but fails validation rules (422) */
    FR_ETOOLARGE = -5,    /* over a size limit (413) */
    FR_ENOSPACE = -6,     /* over a memory budget (507) */
    FR_EDATA = -7,        /* the data itself is malformed (a query fails) */
    FR_EUNAVAILABLE = -8, /* temporarily refused: draining, not ready (503) */
    FR_ECANCELLED = -9,   /* cancelled by a user */
    FR_EIO = -10,         /* an I/O error on our side (500) */
    FR_EINTERNAL = -11,   /* a bug or an unexpected state (500) */
    FR_EMEMLIMIT = -12,   /* a task went over task_memory_limit_bytes */
    FR_ETIMEOUT = -13,    /* a task or request ran out of time */
};

/* A caller-owned error: the status, a message a user can act on, and where
 * the problem is (a field, a position in an expression, a file line/col). */
struct fr_error {
    int status;
    char message[512];
    char field[128];   /* config field or column name, "" if none */
    int64_t position;  /* offset in an expression, -1 if none */
    int64_t line;      /* 1-based line of a data file, -1 if none */
    int64_t column;    /* 1-based column of a data file, -1 if none */
    char file[256];    /* data file, "" if none */
    char kind[48];     /* problem type slug ("config-locked"); "" = derived from status */
    int64_t row_group; /* 0-based row group of a Parquet file, -1 if none */
};

void fr_error_init(struct fr_error *err);
/* Sets status and a formatted message; returns status so callers can
 * `return fr_error_set(err, FR_EINVAL, "...")`. err may be NULL. */
int fr_error_set(struct fr_error *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets status, the problem kind ("invalid-plan"; NULL or "" = derived from
 * the status at the HTTP edge) and a formatted message in one call; returns
 * status. err may be NULL. */
int fr_error_setk(struct fr_error *err, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* fr_error_setk with a va_list, for the module-local wrappers that add a
 * prefix or a location. */
int fr_error_vsetk(struct fr_error *err, int status, const char *kind, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
const char *fr_status_name(int status);

/* Case-insensitive Levenshtein distance of a and b, the measure behind every
 * "did you mean"; -1 when either is longer than 127 bytes. */
int fr_edit_distance(const char *a, const char *b);
/* glibc's malloc tunables framed's roles run with (main.c): huge pages for
 * the heaps, grown 64 MiB at a time, blocks up to 32 MiB from the heaps, up
 * to 4 GiB kept free at a heap's top until the idle trim (a query's peak is
 * used again by the next one: a page the process gave back may cost the
 * first touch again). A worker adds FR_MALLOC_TUNABLES_WORKER: one arena. Its
 * tasks each run on a thread of their own, and glibc hands a new thread any
 * of up to 8 per core arenas, so each arena grew to a query's peak of its own
 * before the worker ran warm (q10 on 2 workers: 2-5 s runs until then, 0.7 s
 * after). */
#define FR_MALLOC_TUNABLES                                                                         \
    "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864:glibc.malloc.mmap_threshold="            \
    "33554432:glibc.malloc.trim_threshold=4294967296"
#define FR_MALLOC_TUNABLES_WORKER ":glibc.malloc.arena_max=1"
/* The GLIBC_TUNABLES value to run with: current (NULL or "" = none) with
 * FR_MALLOC_TUNABLES after it (and FR_MALLOC_TUNABLES_WORKER for a worker),
 * into out. False, out untouched, when current already sets a glibc.malloc
 * tunable (the operator's own, or ours after the restart) or the value would
 * not fit outsz. */
bool fr_malloc_tunables(const char *current, bool worker, char *out, size_t outsz);
/* Cuts a character split at the end of s (a message cut at a byte bound). */
void fr_utf8_cut_tail(char *s);
/* new: s with each byte that is not in valid UTF-8 as U+FFFD. */
char *fr_utf8_repaired(const char *s);

/* ---- byte buffer --------------------------------------------------------- */
struct fr_buf {
    char *data; /* always NUL-terminated when non-NULL */
    size_t len;
    size_t cap;
};

void fr_buf_init(struct fr_buf *b);
void fr_buf_cleanup(struct fr_buf *b);
void fr_buf_append(struct fr_buf *b, const void *data, size_t n);
void fr_buf_puts(struct fr_buf *b, const char *s);
void fr_buf_putc(struct fr_buf *b, char c);
void fr_buf_printf(struct fr_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the bytes to the caller (new) and leaves the buffer empty. */
char *fr_buf_steal(struct fr_buf *b, size_t *len);

/* ---- partition transfer codecs (common_codec.c) --------------------------
 * HTTP content-codings a partition fetch may ask for (Accept-Encoding) and
 * an owner answer with (Content-Encoding): an LZ4 frame or a zstd frame. */
enum fr_codec { FR_CODEC_NONE = 0, FR_CODEC_LZ4 = 1, FR_CODEC_ZSTD = 2 };
/* What a decode may grow to when the caller sets no bound (64 GiB). */
#define FR_CODEC_MAX_OUT ((int64_t)1 << 36)
const char *fr_codec_name(enum fr_codec c); /* "identity", "lz4", "zstd" */
/* The codec the n bytes at s name (any case), "identity" FR_CODEC_NONE; -1 unknown. */
int fr_codec_parse(const char *s, size_t n);
/* The first codec an Accept-Encoding value lists that we make (q=0 turns one
 * off); FR_CODEC_NONE when none (NULL accepted). */
enum fr_codec fr_codec_pick(const char *accept);
/* Whether an Accept-Encoding value lists codec (not at q=0). */
bool fr_codec_accepts(const char *accept, enum fr_codec codec);
/* Streaming compression into one frame. size: the whole input's length
 * when known (written into the frame so the reader sizes its buffer once),
 * else -1. NULL for FR_CODEC_NONE or when out of memory. */
struct fr_encoder;
struct fr_encoder *fr_encoder_new(enum fr_codec codec, int64_t size);
/* Appends the compressed form of in[0..n) (some of it may stay buffered) to
 * out; finish appends the rest and the frame's end. FR_ETOOLARGE: no memory. */
int fr_encoder_write(struct fr_encoder *e, const void *in, size_t n, struct fr_buf *out);
int fr_encoder_finish(struct fr_encoder *e, struct fr_buf *out);
void fr_encoder_free(struct fr_encoder *e); /* accepts NULL */
/* Decodes one whole frame of codec from in[0..n) into out (replaced). A
 * peer's bytes: FR_EDATA when corrupt, cut short, followed by other bytes,
 * a skippable frame, empty, or not the size their frame declares;
 * FR_ENOSPACE when they would decode to more than max_out bytes (<= 0:
 * FR_CODEC_MAX_OUT) or memory runs out. out is empty on error. */
int fr_decode(enum fr_codec codec, const void *in, size_t n, int64_t max_out, struct fr_buf *out,
              struct fr_error *err);

/* ---- logging ------------------------------------------------------------
 * One line per event on stderr. The level check happens before arguments
 * are formatted (FR_LOG macro). */
enum fr_log_level { FR_LOG_DEBUG = 0, FR_LOG_INFO, FR_LOG_WARN, FR_LOG_ERROR };
extern int fr_log_threshold;
int fr_log_level_parse(const char *s, int *out);
void fr_log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes an already formatted JSON object as one line (used for access logs). */
void fr_log_json_line(const char *json);
#define FR_LOG(level, ...)                                                                         \
    do {                                                                                           \
        if ((level) >= fr_log_threshold)                                                           \
            fr_log_write((level), __VA_ARGS__);                                                    \
    } while (0)

/* ---- clocks -------------------------------------------------------------- */
int64_t fr_now_ms(void);  /* wall clock, ms since the epoch */
int64_t fr_mono_us(void); /* monotonic, microseconds */
/* Monotonic milliseconds: every timeout, deadline and liveness age counts on
 * it, never on fr_now_ms, which a clock step moves. */
int64_t fr_mono_ms(void);
/* A condition variable whose timed waits count on CLOCK_MONOTONIC: a wall
 * clock stepped back an hour does not make a 1 s wait last an hour. */
void fr_cond_init_mono(pthread_cond_t *c);
/* *ts = the CLOCK_MONOTONIC time ms from now, for such a condition's wait. */
void fr_mono_deadline(struct timespec *ts, int64_t ms);
/* Formats ms since the epoch as ISO 8601 UTC with milliseconds into out (>= 32 bytes). */
void fr_iso8601_ms(int64_t ms, char *out, size_t outsz);
/* RFC 3339, strictly (YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), years
 * from 1970) -> ms since the epoch; -1 when malformed or out of range. */
int64_t fr_rfc3339_parse_ms(const char *s);

/* ---- hashing ------------------------------------------------------------- */
/* SHA-256 of bytes as "sha256:<64 hex>" into out (>= 72 bytes). */
void fr_sha256_id(const void *data, size_t len, char *out, size_t outsz);
/* Constant-time comparison of two strings (lengths compared without early exit). */
bool fr_consttime_eq(const char *a, const char *b);

/* ---- peers ------------------------------------------------------------- */
struct sockaddr;
/* Whether a peer address is on this machine: 127.0.0.0/8, ::1, or 127.x
 * mapped into IPv6. NULL and other families are not. */
bool fr_sockaddr_is_loopback(const struct sockaddr *sa);

/* ---- internal request signing (HMAC-SHA256, see api/internal-protocol.md) -- */
#define FR_SIGN_MAX_SKEW_S 300
/* Writes "v1=<64 hex>" for the request into out (>= 72 bytes). path includes
 * the query string; body may be NULL when len is 0. */
void fr_sign_request(const char *secret, const char *method, const char *path, const void *body,
                     size_t len, const char *sender, int64_t timestamp, char *out, size_t outsz);
/* Checks a request's Framed-Sender/-Timestamp/-Signature values (any may be
 * NULL = missing) against the secret at time `now` (unix seconds), in
 * constant time. FR_OK, or FR_EINVAL with a message saying which part is
 * missing, stale or wrong. */
int fr_verify_request(const char *secret, const char *method, const char *path, const void *body,
                      size_t len, const char *sender, const char *timestamp, const char *signature,
                      int64_t now, struct fr_error *err);
/* As fr_sign_request, with a Framed-Nonce (NULL = none) in the signed text. */
void fr_sign_request_nonce(const char *secret, const char *method, const char *path,
                           const void *body, size_t len, const char *sender, int64_t timestamp,
                           const char *nonce, char *out, size_t outsz);
/* Result location tokens: a coordinator hands a client the URL of a result
 * piece on a worker (GET /v1/results/{id}), which the worker serves on the
 * token alone: HMAC-SHA256 over the partition, config, row range and
 * expiry (unix seconds) with the cluster secret, 64 hex into out (>= 65
 * bytes). fr_verify_result_token compares in constant time. */
#define FR_RESULT_TOKEN_LEN 64
void fr_sign_result_token(const char *secret, const char *part_id, const char *config_id,
                          int64_t offset, int64_t limit, int64_t expires, char *out, size_t outsz);
bool fr_verify_result_token(const char *secret, const char *part_id, const char *config_id,
                            int64_t offset, int64_t limit, int64_t expires, const char *token);
/* A fresh random nonce (2 * FR_SIGN_NONCE_BYTES hex) into out. */
#define FR_SIGN_NONCE_BYTES 16
void fr_sign_nonce(char *out, size_t outsz);
/* The signature of an answer to a signed request whose Framed-Nonce was
 * nonce (Framed-Answer-Signature: "v1=<hex HMAC-SHA256(secret,
 * "framed-answer\n" NONCE "\n" sha256hex(body))>"), into out (>= 72
 * bytes): the answer is bound to that one request. _ok compares in
 * constant time; sig NULL or "" is not ok. */
#define FR_ANSWER_SIGNATURE_HEADER "Framed-Answer-Signature"
void fr_sign_answer(const char *secret, const char *nonce, const void *body, size_t len, char *out,
                    size_t outsz);
bool fr_sign_answer_ok(const char *secret, const char *nonce, const void *body, size_t len,
                       const char *sig);
/* The receiver's memory of valid signatures, so a signed request cannot be
 * replayed within its allowed age: each is kept until its timestamp plus
 * FR_SIGN_MAX_SKEW_S on the receiver's clock, so no sender's clock can push
 * another's requests out. Bounded (capacity live signatures: at most
 * 2 * FR_SIGN_MAX_SKEW_S s each, so FR_REPLAY_CAPACITY allows ~430 signed
 * requests a second however skewed; about 12 MiB when full), thread-safe.
 * new / accepts NULL. */
typedef struct fr_replay fr_replay;
#define FR_REPLAY_CAPACITY 262144
fr_replay *fr_replay_new(size_t capacity);
void fr_replay_free(fr_replay *r);
/* FR_OK and remembers it; FR_EINVAL when the signature was seen (a replay)
 * or ts is not within FR_SIGN_MAX_SKEW_S of now; FR_EUNAVAILABLE when
 * capacity signatures are live (retry later; the message says when). */
int fr_replay_check(fr_replay *r, const char *signature, int64_t ts, int64_t now,
                    struct fr_error *err);
/* As fr_verify_request with the Framed-Nonce value (NULL = none) and, when
 * seen is not NULL, the replay check of a valid signature. */
int fr_verify_request_nonce(const char *secret, const char *method, const char *path,
                            const void *body, size_t len, const char *sender, const char *timestamp,
                            const char *nonce, const char *signature, int64_t now, fr_replay *seen,
                            struct fr_error *err);
/* The checks of fr_verify_request_nonce that need no body and no secret:
 * sender, timestamp and signature present, the timestamp within
 * FR_SIGN_MAX_SKEW_S of now, the signature's form, the nonce's (NULL =
 * none). For a receiver that refuses before reading a body. FR_OK or
 * FR_EINVAL with the same messages. */
int fr_verify_request_headers(const char *sender, const char *timestamp, const char *nonce,
                              const char *signature, int64_t now, struct fr_error *err);
/* A secret file is small: a longer one is a mistake (a device, a log). */
#define FR_SECRET_MAX 4096
/* Reads a secret file: a regular file (opened without blocking, so a FIFO
 * never hangs a start) of at most FR_SECRET_MAX bytes, surrounding
 * whitespace trimmed; empty or a NUL byte is an error. *out is new. Errors
 * name the file and the reason. */
int fr_secret_load(const char *path, char **out, struct fr_error *err);

/* ---- a small synchronous HTTP client (libcurl easy) for internal calls ---- */
/* The internal protocol's headers: the config a call runs under (echoed by
 * the answer), and the coordinator's request and query IDs, for tracing. */
#define FR_CONFIG_ID_HEADER "Framed-Config-Id"
/* The longest request ID (X-Request-Id, Framed-Request-Id) and query ID
 * carried between processes: the edge accepts it, the runner keeps it whole,
 * a worker logs it whole. */
#define FR_TRACE_ID_MAX 128
#define FR_REQUEST_ID_HEADER "Framed-Request-Id"
#define FR_QUERY_ID_HEADER "Framed-Query-Id"
/* The one check of a config ID: "sha256:" and 64 lowercase hex digits. */
bool fr_config_id_valid(const char *id);
/* A JSON array of at most max strings, each a valid config ID (no NUL). */
struct json_t;
bool fr_config_id_list_ok(const struct json_t *ids, size_t max);
struct fr_client_req {
    const char *method;       /* "GET", "POST", "DELETE", ... */
    const char *url;          /* absolute */
    const char *config_id;    /* sent as Framed-Config-Id when non-NULL */
    const char *content_type; /* of the body, when there is one */
    const void *body;
    size_t body_len;
    int64_t timeout_ms;          /* whole call; 0 = 30 s */
    const char *secret;          /* sign with it when non-NULL */
    const char *sender;          /* Framed-Sender when signing */
    int64_t max_body_bytes;      /* a longer response body fails the call (FR_ENOSPACE); 0 = none */
    const char *request_id;      /* sent as Framed-Request-Id when non-NULL */
    const char *query_id;        /* sent as Framed-Query-Id when non-NULL */
    const char *accept_encoding; /* sent as Accept-Encoding when non-NULL; the body
                                  * is given as it came (resp.content_encoding) */
    /* range reads only: the call gives up (FR_ECANCELLED) as soon as
     * abort(abort_arg) is true, polled at least once a second; NULL = never */
    bool (*abort)(void *abort_arg);
    void *abort_arg;
    /* when non-NULL, the response body is written into this buffer's memory
     * (its bytes dropped; the buffer is taken and left empty), so a caller
     * that keeps one for its next call writes into pages it already touched */
    struct fr_buf *body_room;
};
struct fr_client_resp {
    long status; /* HTTP status; 0 if no answer */
    struct fr_buf body;
    char config_id[80]; /* the Framed-Config-Id echo, "" if none */
    char content_type[128];
    char content_encoding[32];               /* its Content-Encoding, "" if none */
    char nonce[2 * FR_SIGN_NONCE_BYTES + 1]; /* the request's Framed-Nonce, "" unsigned */
    char answer_sig[80];                     /* its Framed-Answer-Signature, "" if none */
};
/* FR_OK when an HTTP answer arrived (any status), FR_EIO (or FR_ETIMEOUT)
 * when none did; resp is initialized in every case. Thread-safe. */
int fr_client_call(const struct fr_client_req *req, struct fr_client_resp *resp,
                   struct fr_error *err);
/* Closes the calling thread's kept handle and connections (fr_client_call
 * keeps them per thread; a thread that ends frees its own). */
void fr_client_thread_done(void);
void fr_client_resp_cleanup(struct fr_client_resp *resp);
/* The same call for a caller that drives libcurl itself (a multi handle):
 * *out is new, its easy handle set up (headers, signature, callbacks,
 * timeouts) and filling resp (borrowed, initialized here; req's body is
 * borrowed too: both must outlive *out). After the transfer, finish takes
 * the CURLcode and gives fr_client_call's result. */
struct fr_client_xfer;
int fr_client_xfer_new(const struct fr_client_req *req, struct fr_client_resp *resp,
                       struct fr_client_xfer **out, struct fr_error *err);
void *fr_client_xfer_easy(struct fr_client_xfer *x); /* borrowed CURL * */
int fr_client_xfer_finish(struct fr_client_xfer *x, int curl_code, struct fr_error *err);
void fr_client_xfer_free(struct fr_client_xfer *x); /* accepts NULL */

/* ---- byte ranges (RFC 9110 section 14) ---------------------------------- */
/* What a Range header value asks of a representation of size bytes. */
enum fr_range_kind {
    FR_RANGE_NONE,          /* no header, or a unit other than bytes: serve it whole (200) */
    FR_RANGE_ONE,           /* one satisfiable range: [*start, *end) (206) */
    FR_RANGE_UNSATISFIABLE, /* no byte of it lies inside the representation (416) */
    FR_RANGE_INVALID,       /* bytes=... that does not parse (416, not ignored) */
    FR_RANGE_MULTIPLE,      /* more than one range: refused (416) */
};
/* Parses value (NULL = no header; at most 256 bytes are looked at) for a
 * representation of size >= 0 bytes: "bytes=a-b", "bytes=a-", "bytes=-n"
 * with optional whitespace around; b past the end is cut to the end. *start
 * and *end are set only for FR_RANGE_ONE. */
enum fr_range_kind fr_range_parse(const char *value, int64_t size, int64_t *start, int64_t *end);
/* The strong entity tag of a file by size and mtime (nanoseconds):
 * "\"<size hex>-<mtime hex>\"" (quotes included) into out. */
#define FR_ETAG_MAX 40
void fr_etag_of(int64_t size, int64_t mtime_ns, char out[FR_ETAG_MAX]);

/* One range read of the internal protocol: GET req->url with "Range:
 * bytes=off-(off+len-1)" and, when if_match is set, "If-Match: if_match".
 * A 206 or 200 body goes into buf (at most len bytes; more fails the call
 * with FR_EDATA); any other answer's body (at most 64 KiB) into resp->body.
 * FR_OK when an answer arrived (any status; resp says which), FR_EIO or
 * FR_ETIMEOUT when none did. resp is caller-owned (fr_client_resp_cleanup). */
struct fr_range_resp {
    struct fr_client_resp base; /* status, config echo; body only for errors */
    size_t got;                 /* body bytes written into buf */
    char etag[FR_ETAG_MAX + 8]; /* the ETag answered, "" if none or too long */
    int64_t first, last, total; /* Content-Range (206: first-last/total, 416:
                                   total); -1 when absent or malformed */
};
/* handle (may be NULL): a libcurl handle kept between the calls of one
 * thread (keep-alive, warm buffers): *handle NULL at first, a handle after
 * the call; fr_client_handle_free when done (accepts NULL). */
int fr_client_range_get(const struct fr_client_req *req, int64_t off, size_t len,
                        const char *if_match, char *buf, void **handle, struct fr_range_resp *resp,
                        struct fr_error *err);
void fr_client_handle_free(void *handle);

/* ---- files --------------------------------------------------------------- */
/* Writes data to path atomically: temp file, fsync, rename, fsync of the dir. */
int fr_file_write_atomic(const char *path, const void *data, size_t len, struct fr_error *err);
/* Reads a whole (small) file; *out is new. FR_ENOTFOUND if it does not exist. */
int fr_file_read_all(const char *path, char **out, size_t *len, struct fr_error *err);
int fr_mkdir_p(const char *path, struct fr_error *err);
/* Opens path read-only for a reader, only if it is a regular file, and never
 * blocks doing so: a FIFO or a device would hang open() or the reads, so the
 * open is O_NONBLOCK, the type is checked with fstat, and only then is
 * O_NONBLOCK cleared. Returns the fd, or -1 with errno set (EINVAL when the
 * path is not a regular file). */
int fr_file_open_regular(const char *path);
/* Resolves path (symlinks, "..") and checks that it lies inside dir (itself
 * resolved). *out is new, the canonical path. FR_ENOTFOUND when path does not
 * resolve (missing, dangling link), FR_EINVAL when it resolves outside dir,
 * FR_EIO when dir cannot be resolved; the message says which. */
int fr_path_resolve_inside(const char *dir, const char *path, char **out, struct fr_error *err);
/* Locks dir for this process's life (an exclusive, non-blocking flock on
 * dir/FR_DIR_LOCK_NAME, with the PID written in it). *fd_out holds the lock
 * until fr_dir_unlock. FR_ECONFLICT naming the holder's PID when another
 * process has it, FR_EIO otherwise. */
#define FR_DIR_LOCK_NAME "framed.lock"
int fr_dir_lock(const char *dir, int *fd_out, struct fr_error *err);
void fr_dir_unlock(int fd); /* accepts -1 */

/* ---- numbers and JSON text -------------------------------------------------
 * One rule for every float framed prints (results, previews, any JSON it
 * writes): the shortest decimal text that reads back to the same double
 * ("%.15g" to "%.17g", the first that round-trips), with ".0" added when it
 * would look like an integer. */
/* Writes v's text into out (>= 32 bytes); returns its length; 0 (and "")
 * for inf and nan, which JSON cannot hold. */
size_t fr_format_double(double v, char *out);
/* json_dumps with every real printed by fr_format_double (jansson prints
 * "%.17g": 64.904572 would read 64.904572000000002). new (free()); NULL
 * when jansson cannot encode j. */
struct json_t;
char *fr_json_dumps(const struct json_t *j, size_t flags);

#endif
