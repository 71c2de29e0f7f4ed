/* http_request: what handlers use to read a request (headers, query and path
 * parameters, the JSON body) and to set its reply, plus the request ID and the
 * one JSON access-log line per request. The log never carries headers, so the
 * Authorization header and tokens cannot leak into it. */
#include "http_int.h"

#include <microhttpd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

const char *http__header(struct http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

struct joined_header {
    const char *name;
    struct fr_buf out;
    size_t max;
    bool any, too_long;
};

static enum MHD_Result join_header_value(void *cls, enum MHD_ValueKind kind, const char *key,
                                         const char *value)
{
    (void)kind;
    struct joined_header *j = cls;
    if (!key || !value || strcasecmp(key, j->name) != 0)
        return MHD_YES;
    size_t n = strlen(value);
    if (j->out.len + n + 2 > j->max) {
        j->too_long = true;
        return MHD_NO;
    }
    if (j->any)
        fr_buf_puts(&j->out, ", ");
    fr_buf_append(&j->out, value, n);
    j->any = true;
    return MHD_YES;
}

char *http__header_joined(struct http_request *req, const char *name, size_t max, bool *too_long)
{
    struct joined_header j = {.name = name, .max = max};
    fr_buf_init(&j.out);
    MHD_get_connection_values(req->conn, MHD_HEADER_KIND, join_header_value, &j);
    *too_long = j.too_long;
    if (!j.any || j.too_long) {
        fr_buf_cleanup(&j.out);
        return NULL;
    }
    return fr_buf_steal(&j.out, NULL);
}

const char *http__query(struct http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *http__param(struct http_request *req, const char *name)
{
    for (int i = 0; i < req->nparams; i++) {
        if (strcmp(req->param_names[i], name) == 0)
            return req->param_values[i];
    }
    return NULL;
}

/* Decimal digits only: no sign, no space, no hex, no exponent. */
static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
    }
    return true;
}

/* A query parameter's value: false when absent; a bare "?name" gives "". */
static bool query_value(struct http_request *req, const char *name, const char **value)
{
    const char *v = NULL;
    size_t n = 0;
    if (MHD_lookup_connection_value_n(req->conn, MHD_GET_ARGUMENT_KIND, name, strlen(name), &v,
                                      &n) != MHD_YES)
        return false;
    *value = v ? v : "";
    return true;
}

/* The one reader of numbers in query strings: decimal digits, with a
 * fraction when allowed ("0.5"); no sign, space, hex, exponent, NaN or inf;
 * at most 18 digits before the point (no overflow) and 32 bytes in all;
 * from 0 to max. */
static bool parse_query_number(const char *v, bool fraction, double max, double *out)
{
    size_t n = strlen(v), whole = strcspn(v, ".");
    if (n > 32 || whole > 18 || !all_digits(v, whole))
        return false;
    if (whole < n && (!fraction || !all_digits(v + whole + 1, n - whole - 1)))
        return false;
    double d = strtod(v, NULL);
    if (!(d >= 0 && d <= max))
        return false;
    *out = d;
    return true;
}

int64_t http__query_int(struct http_request *req, const char *name, int64_t def, int64_t max)
{
    const char *v = NULL;
    if (!query_value(req, name, &v))
        return def;
    double d = 0;
    if (!parse_query_number(v, false, (double)max, &d))
        return -1;
    int64_t i = (int64_t)strtoll(v, NULL, 10); /* exact: d may round */
    return i <= max ? i : -1;
}

int http__query_decimal(struct http_request *req, const char *name, double max, double *out)
{
    const char *v = NULL;
    if (!query_value(req, name, &v))
        return 0;
    return parse_query_number(v, true, max, out) ? 1 : -1;
}

int http__query_bool(struct http_request *req, const char *name)
{
    const char *v = NULL;
    if (!query_value(req, name, &v))
        return 0;
    if (strcmp(v, "true") == 0)
        return 1;
    if (strcmp(v, "false") == 0)
        return 0;
    return -1; /* a bare ?force, "1", "yes": not a boolean */
}

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Where s[0..n) holds an encoded NUL ("%00"), or n. */
static size_t encoded_nul_at(const char *s, size_t n)
{
    for (size_t i = 0; i + 2 < n; i++) {
        if (s[i] == '%' && hex_digit(s[i + 1]) == 0 && hex_digit(s[i + 2]) == 0)
            return i;
    }
    return n;
}

/* The name of route's {param} whose segment of the raw path holds byte
 * offset at: new, or NULL when that segment is literal (or no route). */
static char *path_parameter_at(const struct http__route *route, const char *raw, size_t at)
{
    if (!route)
        return NULL;
    int segment = 0;
    for (size_t i = 0; i < at; i++)
        segment += raw[i] == '/';
    const char *p = route->pattern;
    for (int seen = 0; *p && seen < segment; p++)
        seen += *p == '/';
    size_t n = strcspn(p, "/");
    if (n < 3 || p[0] != '{' || p[n - 1] != '}')
        return NULL;
    return fr_xstrndup(p + 1, n - 2);
}

/* A new copy of the query-string name s[0..n), decoded as MHD decodes it
 * ('+' is a space, %XX a byte). */
static char *query_name_decode(const char *s, size_t n)
{
    char *out = fr_xmalloc(n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            *o++ = ' ';
        } else if (s[i] == '%' && i + 2 < n && hex_digit(s[i + 1]) >= 0 &&
                   hex_digit(s[i + 2]) >= 0) {
            *o++ = (char)(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
            i += 2;
        } else {
            *o++ = s[i];
        }
    }
    *o = '\0';
    return out;
}

static int name_cmp(const void *a, const void *b)
{
    return strcasecmp(*(char *const *)a, *(char *const *)b);
}

/* The first parameter name that the query string q repeats, new, or NULL.
 * Caseless, as libmicrohttpd's lookups are: ?limit=1&LIMIT=5 repeats limit. */
static char *query_repeated_name(const char *q)
{
    size_t cap = 1;
    for (const char *p = q; *p; p++)
        cap += *p == '&';
    char **names = fr_xcalloc(cap, sizeof(*names));
    size_t n = 0;
    for (const char *p = q; *p;) {
        size_t len = strcspn(p, "&");
        if (len > 0)
            names[n++] = query_name_decode(p, strcspn(p, "=&"));
        p += len + (p[len] == '&');
    }
    qsort(names, n, sizeof(*names), name_cmp);
    char *repeated = NULL;
    for (size_t i = 1; i < n && !repeated; i++) {
        if (strcasecmp(names[i - 1], names[i]) == 0)
            repeated = fr_xstrdup(names[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return repeated;
}

bool http__check_target(struct http_request *req)
{
    const char *raw = req->raw_uri ? req->raw_uri : "";
    size_t path_len = strcspn(raw, "?#");
    const char *query = raw[path_len] == '?' ? raw + path_len + 1 : "";
    size_t query_len = strcspn(query, "#");
    size_t nul = encoded_nul_at(raw, path_len);
    if (nul < path_len) {
        char *name = path_parameter_at(req->route, raw, nul);
        http__reply_bad_parameter(req, name ? name : "path",
                                  "the path holds an encoded NUL byte (%%00)");
        free(name);
        return false;
    }
    if (encoded_nul_at(query, query_len) < query_len) {
        http__reply_bad_parameter(req, "query",
                                  "the query string holds an encoded NUL byte (%%00)");
        return false;
    }
    char *query_copy = fr_xstrndup(query, query_len);
    char *repeated = query_repeated_name(query_copy);
    free(query_copy);
    if (repeated) {
        /* The name goes into the reply only when it is plainly printable. */
        bool plain = strlen(repeated) <= 64;
        for (const char *p = repeated; plain && *p; p++)
            plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
        const char *name = plain ? repeated : "query";
        http__reply_bad_parameter(req, name, "the query parameter %s is given more than once",
                                  plain ? repeated : "(a name)");
        free(repeated);
        return false;
    }
    return true;
}

/* A client's ID is kept when it is short and made of safe characters, so it
 * can go into headers and logs as it is. */
static bool request_id_sane(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > FR_TRACE_ID_MAX)
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
        if (!ok)
            return false;
    }
    return true;
}

void http__request_id(struct http_request *req)
{
    const char *given = http__header(req, "X-Request-Id");
    if (given && request_id_sane(given)) {
        snprintf(req->request_id, sizeof(req->request_id), "%s", given);
        return;
    }
    uint8_t rnd[12];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        /* No entropy to spare: time and the request's address are unique enough. */
        uint64_t a = (uint64_t)fr_mono_us(), b = (uint64_t)(uintptr_t)req;
        memcpy(rnd, &a, 8);
        memcpy(rnd + 8, &b, 4);
    }
    char *p = req->request_id;
    for (size_t i = 0; i < sizeof(rnd); i++)
        p += sprintf(p, "%02x", rnd[i]);
}

json_t *http__body_json(struct http_request *req)
{
    if (req->body.len == 0) {
        http__reply_problem(req, FR_EINVAL, "invalid-json", "the request needs a JSON body");
        return NULL;
    }
    json_error_t jerr;
    json_t *v = json_loadb(req->body.data, req->body.len, JSON_REJECT_DUPLICATES, &jerr);
    if (!v) {
        struct ctx_error e;
        ctx_error_init(&e);
        fr_error_setk(&e.base, FR_EINVAL, "invalid-json",
                      "malformed JSON at line %d, column %d: %s", jerr.line, jerr.column,
                      jerr.text);
        e.base.line = jerr.line;
        e.base.column = jerr.column;
        http__reply_error(req, &e);
        ctx_error_cleanup(&e);
    }
    return v;
}

void http__reply_response(struct http_request *req, unsigned status, struct MHD_Response *r,
                          int64_t bytes)
{
    if (req->response)
        MHD_destroy_response(req->response);
    req->response = r;
    req->status = status;
    req->bytes = bytes;
}

void http__reply_bytes(struct http_request *req, unsigned status, const char *content_type,
                       char *data, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, data, free);
    if (content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    http__reply_response(req, status, r, (int64_t)len);
}

void http__reply_json(struct http_request *req, unsigned status, json_t *body)
{
    http__reply_json_signed(req, status, body, NULL);
}

void http__reply_json_signed(struct http_request *req, unsigned status, json_t *body,
                             const char *secret)
{
    char *text = fr_json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(body);
    if (!text) {
        http__reply_problem(req, FR_EINTERNAL, "internal", "cannot encode the reply");
        return;
    }
    size_t len = strlen(text);
    const char *nonce = http__header(req, "Framed-Nonce");
    char sig[80] = ""; /* over the exact bytes sent */
    if (secret && secret[0] && nonce && nonce[0])
        fr_sign_answer(secret, nonce, text, len, sig, sizeof(sig));
    http__reply_bytes(req, status, "application/json", text, len);
    if (sig[0])
        http__add_header(req, FR_ANSWER_SIGNATURE_HEADER, sig);
}

void http__reply_empty(struct http_request *req, unsigned status)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    http__reply_response(req, status, r, 0);
}

void http__add_header(struct http_request *req, const char *name, const char *value)
{
    if (req->response)
        MHD_add_response_header(req->response, name, value);
}

/* The bearer token of the request, or NULL. Borrowed from MHD. */
static const char *bearer_token(struct http_request *req)
{
    const char *auth = http__header(req, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return NULL;
    const char *given = auth + 7;
    while (*given == ' ')
        given++;
    return given;
}

static bool token_is(const char *given, const char *token)
{
    return given && token && fr_consttime_eq(given, token);
}

const char *http__auth_missing(struct http_request *req, const char *admin_token,
                               const char *data_token)
{
    admin_token = admin_token && *admin_token ? admin_token : NULL;
    data_token = data_token && *data_token ? data_token : NULL;
    const char *given = bearer_token(req);
    bool admin = token_is(given, admin_token), data = token_is(given, data_token);
    switch (http__route_access(req->route, req->route_signed)) {
    case HTTP_ACCESS_ADMIN:
        if (admin_token)
            return admin ? NULL : "this request changes state and needs the admin token";
        return (!data_token || data) ? NULL : "this request needs the data token";
    case HTTP_ACCESS_DATA:
        return (!data_token || admin || data) ? NULL : "this request needs the data or admin token";
    case HTTP_ACCESS_READ:
        return (!admin_token || !data_token || admin || data)
                   ? NULL
                   : "this request needs the data or admin token";
    default:
        return NULL;
    }
}

bool http__check_signature_head(struct http_request *req)
{
    struct fr_error err;
    fr_error_init(&err);
    int rc = fr_verify_request_headers(
        http__header(req, "Framed-Sender"), http__header(req, "Framed-Timestamp"),
        http__header(req, "Framed-Nonce"), http__header(req, "Framed-Signature"),
        fr_now_ms() / 1000, &err);
    if (rc != FR_OK)
        http__reply_problem(req, FR_EINVAL, "unauthorized",
                            "this cluster call needs a valid signature: %s", err.message);
    return rc == FR_OK;
}

void http__check_signature(struct http_request *req, const char *secret, fr_replay *seen)
{
    struct fr_error err;
    fr_error_init(&err);
    int rc = fr_verify_request_nonce(
        secret, req->method, req->raw_uri ? req->raw_uri : req->path, req->body.data, req->body.len,
        http__header(req, "Framed-Sender"), http__header(req, "Framed-Timestamp"),
        http__header(req, "Framed-Nonce"), http__header(req, "Framed-Signature"),
        fr_now_ms() / 1000, seen, &err);
    if (rc == FR_EUNAVAILABLE) /* the replay cache is full: a valid request, not now */
        http__reply_problem(req, FR_EUNAVAILABLE, "unavailable", "%s", err.message);
    else if (rc != FR_OK)
        http__reply_problem(req, FR_EINVAL, "unauthorized",
                            "this cluster call needs a valid signature: %s", err.message);
}

bool http__is_probe(const char *path)
{
    return path && (strcmp(path, "/livez") == 0 || strcmp(path, "/readyz") == 0 ||
                    strcmp(path, "/metrics") == 0);
}

void http__log_request(struct http_request *req)
{
    /* Probes and scrapes come every few seconds from platforms, heartbeats
     * every second from workers: their lines are debug, so an info log shows
     * the requests people make. */
    bool quiet = req->log_debug || http__is_probe(req->path);
    if ((quiet ? FR_LOG_DEBUG : FR_LOG_INFO) < fr_log_threshold)
        return;
    char ts[40];
    fr_iso8601_ms(fr_now_ms(), ts, sizeof(ts));
    double ms = (double)(fr_mono_us() - req->start_us) / 1000.0;
    json_t *path = json_string(req->path);
    if (!path)
        path = json_string("(not utf-8)");
    json_t *line =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:i, s:I, s:f}", "ts", ts, "level",
                  quiet ? "debug" : "info", "msg", "request", "request_id", req->request_id,
                  "method", req->method, "path", path, "status", (int)req->status, "bytes",
                  (json_int_t)req->bytes, "duration_ms", (double)(int64_t)(ms * 1000) / 1000);
    if (!line)
        return;
    char *text = fr_json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    if (text)
        fr_log_json_line(text);
    free(text);
    json_decref(line);
}

/* What the header walk of http__check_framing found. */
struct framing_scan {
    int hosts;
    int lengths;
    bool lengths_differ;
    const char *length;
    const char *coding; /* Transfer-Encoding (the last one) */
    int codings;
    const char *bad_name;  /* a header name with whitespace, a control byte or NUL */
    bool bad_value;        /* a value with a NUL, CR, LF or other control byte */
    bool folded;           /* a value continued on the next line (obs-fold) */
    const char *value_end; /* the end of the last value seen, as strlen found it */
    size_t header_bytes;   /* names, values and their separators */
};

static bool header_name_ok(const char *key, size_t n)
{
    if (n == 0 || strlen(key) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c <= ' ' || c == 0x7f || c == ':')
            return false;
    }
    return true;
}

/* The value against its size and its bytes: only tab may stand among the
 * control bytes. (In 0.9.75 value_size is strlen's, so a NUL shows only in
 * value_cut; a libmicrohttpd that keeps the sent length is caught here.) */
static bool header_value_ok(const char *value, size_t n)
{
    if (!value)
        return n == 0;
    if (strlen(value) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < ' ' && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

/* libmicrohttpd 0.9.75 parses a header line in place: the name, a NUL over
 * the colon, blanks, the value. It copies the name elsewhere only to join a
 * folded (obs-fold) continuation line, so a value that does not follow its
 * name came from a folded line, which RFC 9112 says to reject. Later versions
 * handle folding themselves and may not parse in place: there, no check. */
static bool header_folded(const char *key, size_t key_size, const char *value)
{
#if MHD_VERSION <= 0x00097500
    uintptr_t k = (uintptr_t)key, v = (uintptr_t)value;
    uintptr_t after = k + key_size + 1;
    if (!value)
        return false;
    if (v < after || v - after > 1024)
        return true;
    for (const char *p = key + key_size + 1; p < value; p++) {
        if (*p != ' ' && *p != '\t')
            return true;
    }
    return false;
#else
    (void)key;
    (void)key_size;
    (void)value;
    return false;
#endif
}

/* Whether a NUL byte the client sent cut a header value short (value_size
 * is strlen's, not the length sent). libmicrohttpd 0.9.75 parses the header
 * block in place and writes a NUL over each line's CR and LF: from the end of
 * one value (end, as strlen found it) to the next line (next) lie only those
 * NULs (and blanks it trimmed), at most max_nuls of them; anything more is
 * the rest of a cut value. After the last value, next is the end of the
 * block and max_nuls 4 (its line's CR LF and the empty line's). */
static bool value_cut(const char *end, const char *next, int max_nuls)
{
#if MHD_VERSION <= 0x00097500
    uintptr_t e = (uintptr_t)end, k = (uintptr_t)next;
    if (!end || !next || k <= e || k - e > 2 * HTTP__CONNECTION_MEMORY)
        return false; /* not where MHD read it: cannot tell */
    int nuls = 0;
    for (const char *p = end; p < next; p++) {
        if (*p != '\0' && *p != ' ' && *p != '\t')
            return true;
        nuls += *p == '\0';
    }
    return nuls > max_nuls;
#else
    (void)end;
    (void)next;
    (void)max_nuls;
    return false;
#endif
}

static enum MHD_Result framing_visit(void *cls, enum MHD_ValueKind kind, const char *key,
                                     size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct framing_scan *f = cls;
    f->header_bytes += key_size + value_size + 4;
    if (value_cut(f->value_end, key, 2))
        f->bad_value = true;
    f->value_end = value ? value + strlen(value) : NULL;
    if (!header_name_ok(key, key_size)) {
        if (!f->bad_name)
            f->bad_name = key;
    } else if (!header_value_ok(value, value_size)) {
        f->bad_value = true;
    } else if (header_folded(key, key_size, value)) {
        f->folded = true;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) {
        f->hosts++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (f->lengths++ && strcmp(f->length, value ? value : "") != 0)
            f->lengths_differ = true;
        f->length = value ? value : "";
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->codings++;
        f->coding = value ? value : "";
    }
    return MHD_YES;
}

/* libmicrohttpd 0.9.75 hands out the request line as C strings that point
 * into it where it was read: the method at its start, the target after the
 * blanks that follow, the version after the last blank. A NUL byte the client
 * sent cuts the method or the target short: then the method ends before its
 * blanks do, or the target the URI callback saw is shorter than the gap
 * before the version. Strings not in that order (a version MHD made up): no
 * check. */
static bool request_line_cut(const char *method, const char *url, const char *version,
                             const char *raw_target)
{
    uintptr_t m = (uintptr_t)method, u = (uintptr_t)url, v = (uintptr_t)version;
    if (!method || !url || !version || !raw_target || !(m < u && u < v) ||
        v - m > 2 * HTTP__CONNECTION_MEMORY)
        return false;
    size_t mlen = strlen(method);
    if (m + mlen >= u)
        return false;
    for (const char *p = method + mlen + 1; p < url; p++) {
        if (*p != ' ')
            return true;
    }
    return strlen(raw_target) != v - u - 1;
}

bool http__check_framing(struct http_request *req, const char *method, const char *url,
                         const char *version)
{
    struct framing_scan f = {0};
    MHD_get_connection_values_n(req->conn, MHD_HEADER_KIND, framing_visit, &f);
    const union MHD_ConnectionInfo *hs =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (hs && method && value_cut(f.value_end, method + hs->header_size, 4))
        f.bad_value = true;
    bool http11 = version && strcasecmp(version, MHD_HTTP_VERSION_1_1) == 0;
    /* Every answer here ends the connection: where one request ends is unsure.
     * The size limits sit below libmicrohttpd's own (its memory pool), so that
     * an oversized request gets a problem body rather than MHD's HTML. */
    size_t target = strlen(req->raw_uri ? req->raw_uri : "");
    if (target > HTTP__MAX_TARGET_BYTES)
        http__reply_problem(req, FR_EINVAL, "uri-too-long",
                            "the request target has %zu bytes; the limit is %d", target,
                            HTTP__MAX_TARGET_BYTES);
    else if (f.header_bytes > HTTP__MAX_HEADER_BYTES)
        http__reply_problem(req, FR_EINVAL, "headers-too-large",
                            "the headers have %zu bytes; the limit is %d", f.header_bytes,
                            HTTP__MAX_HEADER_BYTES);
    else if (request_line_cut(method, url, version, req->raw_uri))
        http__reply_problem(req, FR_EINVAL, "bad-request", "the request line holds a NUL byte");
    else if (f.bad_name)
        http__reply_problem(req, FR_EINVAL, "bad-request",
                            "a header name holds whitespace or a control character");
    else if (f.bad_value)
        http__reply_problem(req, FR_EINVAL, "bad-request",
                            "a header value holds a NUL byte, a bare CR or another control "
                            "character");
    else if (f.folded)
        http__reply_problem(req, FR_EINVAL, "bad-request",
                            "a header value is folded onto a second line (obs-fold)");
    else if (http11 && f.hosts == 0)
        http__reply_problem(req, FR_EINVAL, "bad-request",
                            "an HTTP/1.1 request needs a Host header");
    else if (f.hosts > 1)
        http__reply_problem(req, FR_EINVAL, "bad-request", "the request has %d Host headers",
                            f.hosts);
    else if (f.lengths_differ)
        http__reply_problem(req, FR_EINVAL, "bad-request",
                            "the request has Content-Length headers that disagree");
    else if (f.codings > 1 || (f.codings && strcasecmp(f.coding, "chunked") != 0))
        http__reply_problem(req, FR_EINVAL, "not-implemented",
                            "the only transfer coding served is chunked");
    else if (f.codings && f.lengths)
        http__reply_problem(req, FR_EINVAL, "bad-request",
                            "the request has both Transfer-Encoding and Content-Length");
    else
        return true;
    http__add_header(req, MHD_HTTP_HEADER_CONNECTION, "close");
    return false;
}
