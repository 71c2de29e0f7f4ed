/* common_client: the HTTP client of the coordinator-worker protocol (libcurl
 * easy, one handle per call, run here or by a caller's multi handle; a
 * thread's fr_client_call calls share one, and its connections): it sends
 * the config ID, the tracing IDs and, with a cluster secret, the signing
 * headers (path and query parsed from the URL), and captures status, body, the
 * Framed-Config-Id echo and the content type. src/proto builds on it. */
#include "common.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#define CLIENT_DEFAULT_TIMEOUT_MS 30000
#define CLIENT_CONNECT_TIMEOUT_MS 2000

/* The one piece of process state: curl_global_init is not thread-safe and
 * must run once before any easy handle exists. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    /* A failure here shows up as curl_easy_init() returning NULL. */
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

bool fr_config_id_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    return n == 7 + 64 && strncmp(id, "sha256:", 7) == 0 &&
           strspn(id + 7, "0123456789abcdef") == 64;
}

bool fr_config_id_list_ok(const json_t *ids, size_t max)
{
    if (!json_is_array(ids) || json_array_size(ids) > max)
        return false;
    for (size_t i = 0; i < json_array_size(ids); i++) {
        const json_t *v = json_array_get(ids, i);
        const char *id = json_string_value(v);
        if (!id || strlen(id) != json_string_length(v) || !fr_config_id_valid(id))
            return false;
    }
    return true;
}

/* What the callbacks write into; part of a struct fr_client_xfer. */
struct call_state {
    struct fr_client_resp *resp;
    bool out_of_memory;
    int64_t max_body; /* 0 = unbounded */
    bool too_large;
};

/* The body is sized by the peer, so it grows with a checked allocation. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct call_state *st = userdata;
    struct fr_buf *b = &st->resp->body;
    size_t n = size * nmemb;
    size_t need = b->len + n + 1;
    if (need < b->len) {
        st->out_of_memory = true;
        return 0;
    }
    if (st->max_body > 0 && b->len + n > (uint64_t)st->max_body) { /* before allocating */
        st->too_large = true;
        return 0;
    }
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        char *grown = fr_try_realloc(b->data, cap);
        if (!grown) {
            st->out_of_memory = true;
            return 0;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

/* A body of declared length (a partition: hundreds of MB) is given its room
 * once, not grown by doublings that copy it and touch fresh pages each time;
 * only up to max_body (a longer one fails anyway) and 1 GiB without one (a
 * peer's word: past that the body grows as it arrives). */
static void reserve_declared(struct call_state *st, const char *v)
{
    char *end = NULL;
    errno = 0;
    unsigned long long declared = strtoull(v, &end, 10);
    struct fr_buf *b = &st->resp->body;
    uint64_t bound = st->max_body > 0 ? (uint64_t)st->max_body : (uint64_t)1 << 30;
    if (errno || end == v || declared == 0 || declared > bound || b->len > 0 ||
        declared + 1 <= b->cap)
        return;
    size_t cap = 0;
    char *room = fr_try_malloc_big((size_t)declared + 1, &cap);
    if (room) {
        free(b->data); /* empty: room given by the caller (req.body_room) and too small */
        b->data = room;
        b->cap = cap;
    }
}

/* The value of header line (n bytes) when its name is name, trimmed, into
 * out (cut to outsz - 1); false for another header. */
static bool header_is(const char *line, size_t n, const char *name, char *out, size_t outsz)
{
    size_t k = strlen(name);
    if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0)
        return false;
    const char *v = line + k + 1, *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
        e--;
    size_t vn = (size_t)(e - v) < outsz ? (size_t)(e - v) : outsz - 1;
    memcpy(out, v, vn);
    out[vn] = '\0';
    return true;
}

/* Picks up Framed-Config-Id; a new status line (after a 100 Continue)
 * forgets what an earlier response said. */
static size_t on_header(char *line, size_t size, size_t nmemb, void *userdata)
{
    struct call_state *st = userdata;
    size_t n = size * nmemb;
    static const char name[] = FR_CONFIG_ID_HEADER ":";
    size_t name_len = sizeof(name) - 1;
    if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        st->resp->config_id[0] = '\0';
        st->resp->content_encoding[0] = '\0';
        st->resp->answer_sig[0] = '\0';
        return n;
    }
    if (header_is(line, n, "Content-Encoding", st->resp->content_encoding,
                  sizeof(st->resp->content_encoding)) ||
        header_is(line, n, FR_ANSWER_SIGNATURE_HEADER, st->resp->answer_sig,
                  sizeof(st->resp->answer_sig)))
        return n;
    static const char length[] = "Content-Length:";
    if (n > sizeof(length) - 1 && strncasecmp(line, length, sizeof(length) - 1) == 0) {
        reserve_declared(st, line + sizeof(length) - 1);
        return n;
    }
    if (n <= name_len || strncasecmp(line, name, name_len) != 0)
        return n;
    const char *v = line + name_len;
    size_t vlen = n - name_len;
    while (vlen > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        vlen--;
    }
    while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' ' ||
                        v[vlen - 1] == '\t'))
        vlen--;
    if (vlen < sizeof(st->resp->config_id)) {
        memcpy(st->resp->config_id, v, vlen);
        st->resp->config_id[vlen] = '\0';
    }
    return n;
}

static bool header_value_ok(const char *v)
{
    return v == NULL || strpbrk(v, "\r\n") == NULL;
}

/* The path and query of url as curl will send them ("/" when empty); new. */
static int url_path_query(const char *url, char **out, struct fr_error *err)
{
    int result = FR_EINVAL;
    char *path = NULL, *query = NULL;
    CURLU *u = curl_url();
    if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        fr_error_set(err, FR_EINVAL, "'%.200s' is not an absolute URL", url);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
        fr_error_set(err, FR_EINVAL, "'%.200s' has no path", url);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_OK)
        query = NULL;
    *out = fr_xasprintf("%s%s%s", path[0] ? path : "/", query ? "?" : "", query ? query : "");
    result = FR_OK;
out:
    curl_free(path);
    curl_free(query);
    curl_url_cleanup(u);
    return result;
}

/* Appends "name: value" to *list. */
static void add_header(struct curl_slist **list, const char *name, const char *value)
{
    char *line = fr_xasprintf("%s: %s", name, value);
    *list = curl_slist_append(*list, line);
    free(line);
}

/* Appends the signing headers of a request to path (api/internal-protocol.md). */
static void add_signature(const struct fr_client_req *req, const char *path,
                          struct curl_slist **list, char nonce[2 * FR_SIGN_NONCE_BYTES + 1])
{
    int64_t now = fr_now_ms() / 1000;
    char sig[80], stamp[24];
    fr_sign_nonce(nonce, 2 * FR_SIGN_NONCE_BYTES + 1);
    fr_sign_request_nonce(req->secret, req->method, path, req->body, req->body_len, req->sender,
                          now, nonce, sig, sizeof(sig));
    snprintf(stamp, sizeof(stamp), "%lld", (long long)now);
    add_header(list, "Framed-Nonce", nonce);
    add_header(list, "Framed-Sender", req->sender);
    add_header(list, "Framed-Timestamp", stamp);
    add_header(list, "Framed-Signature", sig);
}

/* Appends the Framed-* and Content-Type headers to *list (new); the nonce
 * of a signed request into resp. */
static int build_headers(const struct fr_client_req *req, struct curl_slist **list,
                         struct fr_client_resp *resp, struct fr_error *err)
{
    int result = FR_EINVAL;
    char *path = NULL;
    if (!header_value_ok(req->config_id) || !header_value_ok(req->content_type) ||
        !header_value_ok(req->sender) || !header_value_ok(req->request_id) ||
        !header_value_ok(req->query_id) || !header_value_ok(req->accept_encoding))
        return fr_error_set(err, FR_EINVAL, "a request header value contains a line break");
    /* curl would add "Expect: 100-continue" to larger bodies and wait for it. */
    *list = curl_slist_append(*list, "Expect:");
    if (req->config_id)
        add_header(list, FR_CONFIG_ID_HEADER, req->config_id);
    if (req->request_id)
        add_header(list, FR_REQUEST_ID_HEADER, req->request_id);
    if (req->query_id)
        add_header(list, FR_QUERY_ID_HEADER, req->query_id);
    if (req->accept_encoding)
        add_header(list, "Accept-Encoding", req->accept_encoding);
    if (req->body_len > 0 || req->content_type)
        add_header(list, "Content-Type",
                   req->content_type ? req->content_type : "application/octet-stream");
    if (req->secret) {
        if (!req->sender || !req->sender[0]) {
            fr_error_set(err, FR_EINVAL, "a signed request needs a sender ID");
            goto out;
        }
        result = url_path_query(req->url, &path, err);
        if (result != FR_OK)
            goto out;
        add_signature(req, path, list, resp->nonce);
    }
    result = FR_OK;
out:
    free(path);
    return result;
}

static void set_method_and_body(CURL *h, const struct fr_client_req *req)
{
    const char *method = req->method;
    bool has_body = req->body_len > 0 || strcmp(method, "POST") == 0 ||
                    strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0;
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        return;
    }
    if (has_body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body_len ? (const char *)req->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    }
    if (strcmp(method, "GET") == 0 && !has_body)
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    else if (strcmp(method, "POST") != 0)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
}

#define CLIENT_RECV_BUFFER (512L * 1024)

static void set_options(CURL *h, const struct fr_client_req *req, struct curl_slist *headers,
                        struct call_state *st, char *errbuf)
{
    long timeout_ms = req->timeout_ms > 0 ? (long)req->timeout_ms : CLIENT_DEFAULT_TIMEOUT_MS;
    curl_easy_setopt(h, CURLOPT_URL, req->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)CLIENT_CONNECT_TIMEOUT_MS);
    /* partitions are hundreds of MB: fewer, larger reads (libcurl's default is 16 KiB) */
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, CLIENT_RECV_BUFFER);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, st);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, st);
    set_method_and_body(h, req);
}

static void resp_init(struct fr_client_resp *resp)
{
    resp->status = 0;
    fr_buf_init(&resp->body);
    resp->config_id[0] = '\0';
    resp->content_type[0] = '\0';
    resp->content_encoding[0] = '\0';
    resp->nonce[0] = '\0';
    resp->answer_sig[0] = '\0';
}

struct fr_client_xfer {
    CURL *h;
    struct curl_slist *headers;
    struct call_state st;
    char *method, *url; /* new copies, for the messages */
    char errbuf[CURL_ERROR_SIZE];
};

/* Turns a failed transfer into FR_EIO or FR_ETIMEOUT naming the call. */
static int transfer_error(const struct fr_client_xfer *x, CURLcode rc, struct fr_error *err)
{
    const char *why = x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc);
    if (x->st.out_of_memory)
        return fr_error_set(err, FR_ENOSPACE, "%s %.200s: no memory for the response body",
                            x->method, x->url);
    if (x->st.too_large)
        return fr_error_set(err, FR_ENOSPACE,
                            "%s %.200s: the response body is larger than the %lld bytes allowed",
                            x->method, x->url, (long long)x->st.max_body);
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return fr_error_set(err, FR_ETIMEOUT, "%s %.200s timed out: %s", x->method, x->url, why);
    return fr_error_set(err, FR_EIO, "%s %.200s failed: %s", x->method, x->url, why);
}

void fr_client_xfer_free(struct fr_client_xfer *x)
{
    if (!x)
        return;
    curl_easy_cleanup(x->h);
    curl_slist_free_all(x->headers);
    free(x->method);
    free(x->url);
    free(x);
}

/* fr_client_xfer_new on reuse (a handle of an earlier call, reset here; the
 * xfer owns it from now on) or a new handle when reuse is NULL. */
static int xfer_new_on(const struct fr_client_req *req, struct fr_client_resp *resp, CURL *reuse,
                       struct fr_client_xfer **out, struct fr_error *err)
{
    int result = FR_EINVAL;
    struct fr_client_xfer *x = NULL;
    *out = NULL;
    resp_init(resp);
    if (req->body_room) { /* taken, so no early return below may leak it */
        resp->body = *req->body_room;
        resp->body.len = 0;
        if (resp->body.cap)
            resp->body.data[0] = '\0';
        fr_buf_init(req->body_room);
    }
    if (!req->method || !req->url) {
        fr_error_set(err, FR_EINVAL, "fr_client_call: a method and a URL are required");
        goto out;
    }
    pthread_once(&curl_once, curl_init_once);
    x = fr_xcalloc(1, sizeof(*x));
    x->st = (struct call_state){.resp = resp, .max_body = req->max_body_bytes};
    x->method = fr_xstrdup(req->method);
    x->url = fr_xstrdup(req->url);
    x->h = reuse;
    reuse = NULL;
    if (x->h)
        curl_easy_reset(x->h);
    result = build_headers(req, &x->headers, resp, err);
    if (result != FR_OK)
        goto out;
    if (!x->h)
        x->h = curl_easy_init();
    if (!x->h) {
        result = fr_error_set(err, FR_EIO, "cannot initialize libcurl");
        goto out;
    }
    set_options(x->h, req, x->headers, &x->st, x->errbuf);
    *out = x;
    x = NULL;
    result = FR_OK;
out:
    curl_easy_cleanup(reuse);
    fr_client_xfer_free(x);
    return result;
}

int fr_client_xfer_new(const struct fr_client_req *req, struct fr_client_resp *resp,
                       struct fr_client_xfer **out, struct fr_error *err)
{
    return xfer_new_on(req, resp, NULL, out, err);
}

void *fr_client_xfer_easy(struct fr_client_xfer *x)
{
    return x->h;
}

int fr_client_xfer_finish(struct fr_client_xfer *x, int curl_code, struct fr_error *err)
{
    struct fr_client_resp *resp = x->st.resp;
    int result = FR_OK;
    char *ctype = NULL;
    if (curl_code != CURLE_OK) {
        result = transfer_error(x, (CURLcode)curl_code, err);
        fr_client_resp_cleanup(resp); /* a half-read body must not look like an answer */
        return result;
    }
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &resp->status);
    if (curl_easy_getinfo(x->h, CURLINFO_CONTENT_TYPE, &ctype) == CURLE_OK && ctype)
        snprintf(resp->content_type, sizeof(resp->content_type), "%s", ctype);
    return result;
}

/* A thread's calls reuse one easy handle, and so its connections (HTTP
 * keep-alive): a task's input fetches from one worker, or a coordinator's
 * result pieces, skip a TCP connect and the peer's accept each. The handle
 * is reset (every option, the callbacks' pointers with them) before each
 * call; at most CLIENT_KEPT_CONNECTIONS idle connections stay open per
 * thread, closed with the handle when the thread ends (fr_client_thread_done
 * for a thread that never does, such as main). */
#define CLIENT_KEPT_CONNECTIONS 4L
#define CLIENT_KEPT_MAX_AGE_S 20L
static pthread_key_t handle_key;
static pthread_once_t handle_once = PTHREAD_ONCE_INIT;

static void handle_free(void *h)
{
    curl_easy_cleanup(h);
}

static void handle_key_init(void)
{
    if (pthread_key_create(&handle_key, handle_free) != 0)
        abort(); /* no key: nothing in this process could keep going right */
}

void fr_client_thread_done(void)
{
    pthread_once(&handle_once, handle_key_init);
    CURL *h = pthread_getspecific(handle_key);
    pthread_setspecific(handle_key, NULL);
    curl_easy_cleanup(h);
}

int fr_client_call(const struct fr_client_req *req, struct fr_client_resp *resp,
                   struct fr_error *err)
{
    pthread_once(&handle_once, handle_key_init);
    CURL *kept = pthread_getspecific(handle_key);
    pthread_setspecific(handle_key, NULL); /* the xfer owns it now */
    struct fr_client_xfer *x = NULL;
    int result = xfer_new_on(req, resp, kept, &x, err);
    if (result == FR_OK) {
        curl_easy_setopt(x->h, CURLOPT_MAXCONNECTS, CLIENT_KEPT_CONNECTIONS);
        /* a kept connection is not reused once idle for CLIENT_KEPT_MAX_AGE_S (under a
         * server's 30 s idle close, so a request never races that close), and TCP
         * keep-alive probes a peer that went silent while an answer is awaited (a
         * new connection would have failed its 2 s connect instead) */
        curl_easy_setopt(x->h, CURLOPT_MAXAGE_CONN, CLIENT_KEPT_MAX_AGE_S);
        curl_easy_setopt(x->h, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(x->h, CURLOPT_TCP_KEEPIDLE, 2L);
        curl_easy_setopt(x->h, CURLOPT_TCP_KEEPINTVL, 2L);
        result = fr_client_xfer_finish(x, curl_easy_perform(x->h), err);
        if (pthread_setspecific(handle_key, x->h) == 0)
            x->h = NULL; /* kept for the thread's next call */
    }
    fr_client_xfer_free(x);
    return result;
}

void fr_client_resp_cleanup(struct fr_client_resp *resp)
{
    if (!resp)
        return;
    fr_buf_cleanup(&resp->body);
    resp_init(resp);
}

/* ---- range reads ---- */

#define RANGE_ERROR_BODY_MAX (64 * 1024)
#define RANGE_RECV_BUFFER (512L * 1024)
/* A peer that sends less than this many bytes a second for this long (an
 * answer that never comes, or drips) fails the read, whatever its timeout. */
#define RANGE_LOW_SPEED_BYTES 1024L
#define RANGE_LOW_SPEED_SECONDS 5L

struct range_state {
    struct fr_range_resp *resp;
    CURL *h;
    char *buf; /* borrowed: the caller's block */
    size_t len;
    bool overflow;
};

/* A decimal of at most 18 digits at *p (a peer's number is bounded before
 * it is used): >= 0, or -1 when there is none or it is longer. */
static int64_t read_decimal(const char **p)
{
    const char *q = *p;
    int64_t v = 0;
    int n = 0;
    while (*q >= '0' && *q <= '9' && n <= 18) {
        v = v * 10 + (*q++ - '0');
        n++;
    }
    *p = q;
    return n == 0 || n > 18 ? -1 : v;
}

/* "bytes a-b/t" or "bytes * /t" (without the space); -1s when malformed. */
static void parse_content_range(const char *v, struct fr_range_resp *r)
{
    r->first = r->last = r->total = -1;
    if (strncmp(v, "bytes ", 6) != 0)
        return;
    const char *p = v + 6;
    int64_t a = -1, b = -1, t;
    if (*p == '*') {
        p++;
    } else {
        a = read_decimal(&p);
        if (a < 0 || *p++ != '-' || (b = read_decimal(&p)) < a)
            return;
    }
    if (*p++ != '/' || (t = read_decimal(&p)) < 0 || *p != '\0' || (a >= 0 && t <= b))
        return;
    r->first = a;
    r->last = b;
    r->total = t;
}

/* A value that does not fit is left out ("" stays), never cut. */
static void copy_if_fits(char *dst, size_t dstsz, const char *v)
{
    size_t n = strlen(v);
    if (n < dstsz)
        memcpy(dst, v, n + 1);
}

static size_t on_range_header(char *line, size_t size, size_t nmemb, void *userdata)
{
    struct range_state *st = userdata;
    size_t n = size * nmemb;
    char v[128];
    if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) { /* a new answer (after a 100 Continue) */
        st->resp->base.config_id[0] = st->resp->etag[0] = '\0';
        st->resp->first = st->resp->last = st->resp->total = -1;
    } else if (header_is(line, n, FR_CONFIG_ID_HEADER, v, sizeof(v))) {
        copy_if_fits(st->resp->base.config_id, sizeof(st->resp->base.config_id), v);
    } else if (header_is(line, n, "ETag", v, sizeof(v))) {
        copy_if_fits(st->resp->etag, sizeof(st->resp->etag), v);
    } else if (header_is(line, n, "Content-Range", v, sizeof(v))) {
        parse_content_range(v, st->resp);
    }
    return n;
}

/* 2xx bodies go into the caller's block, bounded by it; others are a
 * problem body, bounded by RANGE_ERROR_BODY_MAX. */
static size_t on_range_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct range_state *st = userdata;
    size_t n = size * nmemb;
    long code = 0;
    curl_easy_getinfo(st->h, CURLINFO_RESPONSE_CODE, &code);
    if (code == 200 || code == 206) {
        if (n > st->len - st->resp->got) {
            st->overflow = true;
            return 0;
        }
        memcpy(st->buf + st->resp->got, data, n);
        st->resp->got += n;
        return n;
    }
    struct fr_buf *b = &st->resp->base.body;
    if (b->len + n > RANGE_ERROR_BODY_MAX)
        return n; /* the rest of a long problem is dropped, not an error */
    fr_buf_append(b, data, n);
    return n;
}

/* libcurl's progress callback: non-zero aborts the transfer. */
static int on_range_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                             curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    const struct fr_client_req *req = userdata;
    return req->abort(req->abort_arg) ? 1 : 0;
}

void fr_client_handle_free(void *handle)
{
    curl_easy_cleanup(handle);
}

int fr_client_range_get(const struct fr_client_req *req, int64_t off, size_t len,
                        const char *if_match, char *buf, void **handle, struct fr_range_resp *resp,
                        struct fr_error *err)
{
    struct fr_client_xfer *x = NULL;
    struct range_state st = {.resp = resp, .buf = buf, .len = len};
    resp->got = 0;
    resp->etag[0] = '\0';
    resp->first = resp->last = resp->total = -1;
    if (len == 0 || off < 0 || (uint64_t)len > (uint64_t)(INT64_MAX - off)) {
        resp_init(&resp->base);
        return fr_error_set(err, FR_EINVAL, "a range read needs a length and an offset >= 0");
    }
    if (!header_value_ok(if_match)) {
        resp_init(&resp->base);
        return fr_error_set(err, FR_EINVAL, "If-Match contains a line break");
    }
    int result = xfer_new_on(req, &resp->base, handle ? *handle : NULL, &x, err);
    if (handle)
        *handle = NULL; /* the xfer has it now */
    if (result != FR_OK)
        goto out;
    char line[96];
    snprintf(line, sizeof(line), "Range: bytes=%lld-%lld", (long long)off,
             (long long)(off + (int64_t)len - 1));
    x->headers = curl_slist_append(x->headers, line);
    if (if_match)
        add_header(&x->headers, "If-Match", if_match);
    curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, x->headers);
    st.h = x->h;
    curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_range_body);
    curl_easy_setopt(x->h, CURLOPT_WRITEDATA, &st);
    curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_range_header);
    curl_easy_setopt(x->h, CURLOPT_HEADERDATA, &st);
    /* blocks are megabytes: fewer, larger receives (libcurl caps it at its maximum) */
    curl_easy_setopt(x->h, CURLOPT_BUFFERSIZE, RANGE_RECV_BUFFER);
    curl_easy_setopt(x->h, CURLOPT_LOW_SPEED_LIMIT, RANGE_LOW_SPEED_BYTES);
    curl_easy_setopt(x->h, CURLOPT_LOW_SPEED_TIME, RANGE_LOW_SPEED_SECONDS);
    if (req->abort) {
        curl_easy_setopt(x->h, CURLOPT_XFERINFOFUNCTION, on_range_progress);
        curl_easy_setopt(x->h, CURLOPT_XFERINFODATA, (void *)req);
        curl_easy_setopt(x->h, CURLOPT_NOPROGRESS, 0L);
    }
    CURLcode rc = curl_easy_perform(x->h);
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        result = fr_error_set(err, FR_ECANCELLED,
                              "GET %.200s: given up (its task ran out of "
                              "time, or the worker is stopping)",
                              req->url);
        fr_client_resp_cleanup(&resp->base);
        goto out;
    }
    if (rc == CURLE_WRITE_ERROR && st.overflow) {
        result = fr_error_set(err, FR_EDATA,
                              "GET %.200s: the answer holds more than the %zu bytes asked for",
                              req->url, len);
        fr_client_resp_cleanup(&resp->base);
        goto out;
    }
    result = fr_client_xfer_finish(x, (int)rc, err);
    if (handle && x) { /* kept for the next call: its connection and buffers stay warm */
        *handle = x->h;
        x->h = NULL;
    }
out:
    fr_client_xfer_free(x);
    return result;
}
