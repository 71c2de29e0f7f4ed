/* common_sign: HMAC-SHA256 signatures of internal requests (the cluster
 * secret scheme of api/internal-protocol.md): signing on the caller's side,
 * verification in constant time with a clock-skew limit and a bounded cache
 * of seen signatures (no replays) on the receiver's, and loading the secret
 * from a file. */
#include "common.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIGN_PREFIX "v1="
#define SIGN_LEN (3 + 64) /* "v1=" + 64 hex */

static void hex_encode(const unsigned char *in, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[in[i] >> 4];
        out[2 * i + 1] = hex[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Writes "v1=<hex>" (SIGN_LEN + 1 bytes) into sig. */
static void compute_signature(const char *secret, const char *method, const char *path,
                              const void *body, size_t len, const char *sender, int64_t timestamp,
                              const char *nonce, char sig[SIGN_LEN + 1])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char body_hex[2 * 32 + 1];
    static const char empty[1] = "";
    EVP_Digest(len ? body : empty, len, md, &mdlen, EVP_sha256(), NULL);
    hex_encode(md, mdlen, body_hex);

    struct fr_buf msg;
    fr_buf_init(&msg);
    fr_buf_printf(&msg, "%s\n%s\n%s\n%" PRId64 "\n%s", method, path, body_hex, timestamp, sender);
    if (nonce) /* Framed-Nonce: two equal requests in one second sign differently */
        fr_buf_printf(&msg, "\n%s", nonce);
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)msg.data, msg.len, md,
         &mdlen);
    fr_buf_cleanup(&msg);

    memcpy(sig, SIGN_PREFIX, 3);
    hex_encode(md, mdlen, sig + 3);
}

void fr_sign_result_token(const char *secret, const char *part_id, const char *config_id,
                          int64_t offset, int64_t limit, int64_t expires, char *out, size_t outsz)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    struct fr_buf msg;
    fr_buf_init(&msg);
    fr_buf_printf(&msg, "framed-result\n%s\n%s\n%" PRId64 "\n%" PRId64 "\n%" PRId64, part_id,
                  config_id, offset, limit, expires);
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)msg.data, msg.len, md,
         &mdlen);
    fr_buf_cleanup(&msg);
    hex_encode(md, mdlen, hex);
    snprintf(out, outsz, "%s", hex);
}

bool fr_verify_result_token(const char *secret, const char *part_id, const char *config_id,
                            int64_t offset, int64_t limit, int64_t expires, const char *token)
{
    if (!token || strlen(token) != FR_RESULT_TOKEN_LEN)
        return false;
    char want[FR_RESULT_TOKEN_LEN + 1];
    fr_sign_result_token(secret, part_id, config_id, offset, limit, expires, want, sizeof(want));
    return CRYPTO_memcmp(want, token, FR_RESULT_TOKEN_LEN) == 0;
}

void fr_sign_request(const char *secret, const char *method, const char *path, const void *body,
                     size_t len, const char *sender, int64_t timestamp, char *out, size_t outsz)
{
    fr_sign_request_nonce(secret, method, path, body, len, sender, timestamp, NULL, out, outsz);
}

void fr_sign_request_nonce(const char *secret, const char *method, const char *path,
                           const void *body, size_t len, const char *sender, int64_t timestamp,
                           const char *nonce, char *out, size_t outsz)
{
    char sig[SIGN_LEN + 1];
    compute_signature(secret, method, path, body, len, sender, timestamp, nonce, sig);
    snprintf(out, outsz, "%s", sig);
}

void fr_sign_nonce(char *out, size_t outsz)
{
    unsigned char raw[FR_SIGN_NONCE_BYTES];
    if (RAND_bytes(raw, (int)sizeof(raw)) != 1) { /* never seen; still unique enough per process */
        static atomic_ullong counter;
        unsigned long long c = atomic_fetch_add(&counter, 1) ^ (unsigned long long)fr_mono_us();
        memset(raw, 0, sizeof(raw));
        memcpy(raw, &c, sizeof(c));
    }
    char hex[2 * FR_SIGN_NONCE_BYTES + 1];
    hex_encode(raw, sizeof(raw), hex);
    snprintf(out, outsz, "%s", hex);
}

/* 16 to 64 of [0-9A-Za-z_-]. */
static bool nonce_ok(const char *nonce)
{
    size_t n = strlen(nonce);
    return n >= 16 && n <= 64 &&
           strspn(nonce, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-") == n;
}

/* Unix seconds: an optional '-' then 1 to 18 digits, nothing else. */
static bool parse_timestamp(const char *text, int64_t *out)
{
    const char *p = text[0] == '-' ? text + 1 : text;
    size_t n = strlen(p);
    if (n == 0 || n > 18 || strspn(p, "0123456789") != n)
        return false;
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno == ERANGE)
        return false;
    *out = (int64_t)v;
    return true;
}

int fr_verify_request(const char *secret, const char *method, const char *path, const void *body,
                      size_t len, const char *sender, const char *timestamp, const char *signature,
                      int64_t now, struct fr_error *err)
{
    return fr_verify_request_nonce(secret, method, path, body, len, sender, timestamp, NULL,
                                   signature, now, NULL, err);
}

int fr_verify_request_headers(const char *sender, const char *timestamp, const char *nonce,
                              const char *signature, int64_t now, struct fr_error *err)
{
    int64_t ts = 0;
    if (!sender || !sender[0])
        return fr_error_set(err, FR_EINVAL, "the Framed-Sender header is missing");
    if (!timestamp || !timestamp[0])
        return fr_error_set(err, FR_EINVAL, "the Framed-Timestamp header is missing");
    if (!signature || !signature[0])
        return fr_error_set(err, FR_EINVAL, "the Framed-Signature header is missing");
    if (!parse_timestamp(timestamp, &ts))
        return fr_error_set(err, FR_EINVAL,
                            "the Framed-Timestamp header '%.40s' is not a time in unix seconds",
                            timestamp);
    if (ts < now - FR_SIGN_MAX_SKEW_S || ts > now + FR_SIGN_MAX_SKEW_S)
        return fr_error_set(err, FR_EINVAL,
                            "clock skew: the Framed-Timestamp %" PRId64 " is %" PRId64
                            " s %s this clock (%" PRId64 "); at most %d s of skew are allowed: "
                            "the request is stale or a clock is wrong (sync the clocks, NTP)",
                            ts, ts < now ? now - ts : ts - now, ts < now ? "behind" : "ahead of",
                            now, FR_SIGN_MAX_SKEW_S);
    if (strncmp(signature, SIGN_PREFIX, 3) != 0)
        return fr_error_set(err, FR_EINVAL,
                            "the Framed-Signature header is not of the form v1=<hex>");
    if (nonce && !nonce_ok(nonce))
        return fr_error_set(err, FR_EINVAL,
                            "the Framed-Nonce header is not 16-64 of [0-9A-Za-z_-]");
    return FR_OK;
}

int fr_verify_request_nonce(const char *secret, const char *method, const char *path,
                            const void *body, size_t len, const char *sender, const char *timestamp,
                            const char *nonce, const char *signature, int64_t now, fr_replay *seen,
                            struct fr_error *err)
{
    int64_t ts = 0;
    if (!secret || !secret[0])
        return fr_error_set(err, FR_EINVAL, "no cluster secret is set to verify the request");
    if (!method || !path)
        return fr_error_set(err, FR_EINVAL, "the request has no method or path to verify");
    int rc = fr_verify_request_headers(sender, timestamp, nonce, signature, now, err);
    if (rc != FR_OK)
        return rc;
    parse_timestamp(timestamp, &ts);
    char want[SIGN_LEN + 1];
    compute_signature(secret, method, path, body, len, sender, ts, nonce, want);
    /* The length is public (always SIGN_LEN); only the bytes need constant time. */
    if (strlen(signature) != SIGN_LEN || CRYPTO_memcmp(signature, want, SIGN_LEN) != 0)
        return fr_error_set(err, FR_EINVAL,
                            "the Framed-Signature is wrong: the secrets differ, or the method, "
                            "path, body, timestamp, sender or nonce changed on the way");
    /* Only a valid signature is remembered: forged ones cannot fill the cache. */
    if (seen)
        return fr_replay_check(seen, want, ts, now, err);
    return FR_OK;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* At most FR_SECRET_MAX bytes of the regular file path into buf (*len set):
 * opened without blocking (a FIFO never blocks a start), a device, FIFO or
 * directory refused, a longer file refused. FR_OK or the reason in err. */
static int read_bounded(const char *path, char *buf, size_t *len, struct fr_error *err)
{
    int fd = fr_file_open_regular(path);
    if (fd < 0)
        return errno == EINVAL ? fr_error_set(err, FR_EINVAL, "%s: it is not a regular file", path)
                               : fr_error_set(err, FR_EIO, "%s: %s", path, strerror(errno));
    int rc = FR_OK;
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, FR_SECRET_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = fr_error_set(err, FR_EIO, "%s: cannot read it: %s", path, strerror(errno));
            break;
        }
        n += (size_t)r;
        if (r == 0 || n > FR_SECRET_MAX)
            break;
    }
    close(fd);
    if (rc == FR_OK && n > FR_SECRET_MAX)
        rc = fr_error_set(err, FR_EINVAL, "%s: it is longer than the limit of %d bytes", path,
                          FR_SECRET_MAX);
    *len = n;
    return rc;
}

int fr_secret_load(const char *path, char **out, struct fr_error *err)
{
    char text[FR_SECRET_MAX + 1];
    size_t len = 0;
    *out = NULL;
    int result = read_bounded(path, text, &len, err);
    if (result == FR_OK) {
        size_t start = 0, end = len;
        while (start < end && is_space(text[start]))
            start++;
        while (end > start && is_space(text[end - 1]))
            end--;
        if (memchr(text, '\0', len))
            result = fr_error_set(err, FR_EINVAL, "%s: it contains a NUL byte", path);
        else if (start == end)
            result = fr_error_set(err, FR_EINVAL, "%s: it is empty", path);
        else
            *out = fr_xstrndup(text + start, end - start);
    }
    OPENSSL_cleanse(text, sizeof(text));
    return result;
}

/* ---- the replay cache ----
 * Every valid signature is remembered until it can no longer be accepted:
 * until its timestamp plus FR_SIGN_MAX_SKEW_S on this receiver's clock (an
 * older timestamp fails the skew check). So a replay within the allowed age
 * is always refused, and no sender's timestamps (a clock ahead, say) can
 * make the cache refuse another sender's fresh requests. The table is open
 * addressing with linear probing, keyed by the first 16 bytes of the MAC (a
 * replay has the same bytes; two fresh MACs share them with p = 2^-128);
 * it grows from a small size to twice the capacity (memory follows the
 * load), and expired entries are swept when it fills. When `cap` live signatures are remembered, a
 * new one is refused with FR_EUNAVAILABLE (retry later), never taken for a replay. */
#define REPLAY_KEY 16
#define REPLAY_MIN_SLOTS 1024

struct fr_replay_entry {
    unsigned char key[REPLAY_KEY];
    int64_t expires; /* last second (receiver's clock) it can be accepted; 0 = empty slot */
};

struct fr_replay {
    pthread_mutex_t lock; /* everything below */
    struct fr_replay_entry *slots;
    size_t nslots;       /* a power of two */
    size_t used;         /* occupied slots, live or expired */
    size_t cap;          /* most live entries */
    size_t max_slots;    /* the table grows up to this */
    int64_t sweep_after; /* full of live entries until this second: no sweep before */
};

static size_t slots_for(size_t cap)
{
    size_t n = REPLAY_MIN_SLOTS;
    while (n / 2 < cap)
        n *= 2;
    return n;
}

fr_replay *fr_replay_new(size_t capacity)
{
    fr_replay *r = fr_xcalloc(1, sizeof(*r));
    r->cap = capacity ? capacity : 1;
    r->max_slots = slots_for(r->cap);
    r->nslots = REPLAY_MIN_SLOTS;
    r->slots = fr_xcalloc(r->nslots, sizeof(*r->slots));
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void fr_replay_free(fr_replay *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r->slots);
    free(r);
}

static void hex_decode(const char *hex, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = hex[2 * i + k];
            v = v * 16 + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
        }
        out[i] = (unsigned char)v;
    }
}

static size_t slot_of(const fr_replay *r, const unsigned char key[REPLAY_KEY])
{
    uint64_t h;
    memcpy(&h, key, sizeof(h)); /* a MAC's bytes: uniform to anyone without the secret */
    return (size_t)h & (r->nslots - 1);
}

/* Rebuilds the table with nslots slots, keeping the entries live at now. */
static void rehash(fr_replay *r, size_t nslots, int64_t now)
{
    struct fr_replay_entry *old = r->slots;
    size_t oldn = r->nslots;
    r->slots = fr_xcalloc(nslots, sizeof(*r->slots));
    r->nslots = nslots;
    r->used = 0;
    for (size_t i = 0; i < oldn; i++) {
        if (old[i].expires < now) /* empty (0) or expired */
            continue;
        size_t j = slot_of(r, old[i].key);
        while (r->slots[j].expires)
            j = (j + 1) & (r->nslots - 1);
        r->slots[j] = old[i];
        r->used++;
    }
    free(old);
}

/* Makes room for one more entry: when cap entries are held or half the
 * slots are taken, the live ones are counted and the table is rebuilt at a
 * size they fill at most a quarter of (so sweeps are amortised). False when
 * cap entries are live; then no sweep runs before the first of them expires. */
static bool make_room(fr_replay *r, int64_t now)
{
    if (r->used < r->cap && r->used + 1 <= r->nslots / 2)
        return true;
    if (now < r->sweep_after)
        return false;
    size_t live = 0;
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < r->nslots; i++) {
        if (r->slots[i].expires >= now) {
            live++;
            if (r->slots[i].expires < first)
                first = r->slots[i].expires;
        }
    }
    size_t n = REPLAY_MIN_SLOTS;
    while (n < r->max_slots && n / 4 < live + 1)
        n *= 2;
    rehash(r, n, now);
    if (r->used < r->cap && r->used + 1 <= r->nslots / 2)
        return true;
    r->sweep_after = first + 1; /* the first second at which an entry has expired */
    return false;
}

int fr_replay_check(fr_replay *r, const char *signature, int64_t ts, int64_t now,
                    struct fr_error *err)
{
    unsigned char key[REPLAY_KEY];
    int result = FR_EINVAL;
    if (strlen(signature) != SIGN_LEN)
        return fr_error_set(err, FR_EINVAL, "the Framed-Signature is not of the form v1=<hex>");
    if (ts < now - FR_SIGN_MAX_SKEW_S || ts > now + FR_SIGN_MAX_SKEW_S)
        return fr_error_set(err, FR_EINVAL,
                            "clock skew: the Framed-Timestamp %" PRId64 " is more than %d s off "
                            "this clock (%" PRId64 ")",
                            ts, FR_SIGN_MAX_SKEW_S, now);
    hex_decode(signature + 3, key, sizeof(key));
    int64_t expires = ts + FR_SIGN_MAX_SKEW_S;
    if (expires == 0) /* 0 marks an empty slot: remembering a second longer is harmless */
        expires = 1;
    pthread_mutex_lock(&r->lock);
    size_t i = slot_of(r, key);
    for (; r->slots[i].expires; i = (i + 1) & (r->nslots - 1)) {
        const struct fr_replay_entry *e = &r->slots[i];
        if (e->expires >= now && memcmp(e->key, key, sizeof(key)) == 0) {
            fr_error_set(err, FR_EINVAL,
                         "this signed request was seen before: a replay is refused (send a new "
                         "Framed-Nonce with every request)");
            goto out;
        }
    }
    if (!make_room(r, now)) {
        int64_t wait_s = r->sweep_after - now;
        result = fr_error_setk(
            err, FR_EUNAVAILABLE, "unavailable",
            "the replay cache holds %zu signatures still within their allowed age, its "
            "limit: more signed requests than it is sized for; retry in %" PRId64 " s",
            r->used, wait_s);
        goto out;
    }
    i = slot_of(r, key); /* the table may have been rebuilt */
    while (r->slots[i].expires)
        i = (i + 1) & (r->nslots - 1);
    memcpy(r->slots[i].key, key, sizeof(key));
    r->slots[i].expires = expires;
    r->used++;
    result = FR_OK;
out:
    pthread_mutex_unlock(&r->lock);
    return result;
}

void fr_sign_answer(const char *secret, const char *nonce, const void *body, size_t len, char *out,
                    size_t outsz)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char body_hex[2 * 32 + 1], sig[SIGN_LEN + 1];
    static const char empty[1] = "";
    EVP_Digest(len ? body : empty, len, md, &mdlen, EVP_sha256(), NULL);
    hex_encode(md, mdlen, body_hex);
    struct fr_buf msg;
    fr_buf_init(&msg);
    fr_buf_printf(&msg, "framed-answer\n%s\n%s", nonce ? nonce : "", body_hex);
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)msg.data, msg.len, md,
         &mdlen);
    fr_buf_cleanup(&msg);
    memcpy(sig, SIGN_PREFIX, 3);
    hex_encode(md, mdlen, sig + 3);
    snprintf(out, outsz, "%s", sig);
}

bool fr_sign_answer_ok(const char *secret, const char *nonce, const void *body, size_t len,
                       const char *sig)
{
    if (!secret || !secret[0] || !nonce || !nonce[0] || !sig || strlen(sig) != SIGN_LEN)
        return false;
    char want[SIGN_LEN + 1];
    fr_sign_answer(secret, nonce, body, len, want, sizeof(want));
    return CRYPTO_memcmp(want, sig, SIGN_LEN) == 0;
}
