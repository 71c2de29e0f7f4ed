/* common_sign: HMAC-SHA256 signatures of internal requests (the cluster
 * secret scheme of api/internal-protocol.md): signing on the caller's side,
 * verification in constant time with a clock-skew limit on the receiver's,
 * and loading the secret from a file. */
#include "common.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
                              char sig[SIGN_LEN + 1])
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
    HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)msg.data, msg.len, md,
         &mdlen);
    fr_buf_cleanup(&msg);

    memcpy(sig, SIGN_PREFIX, 3);
    hex_encode(md, mdlen, sig + 3);
}

void fr_sign_request(const char *secret, const char *method, const char *path, const void *body,
                     size_t len, const char *sender, int64_t timestamp, char *out, size_t outsz)
{
    char sig[SIGN_LEN + 1];
    compute_signature(secret, method, path, body, len, sender, timestamp, sig);
    snprintf(out, outsz, "%s", sig);
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
    int64_t ts = 0;
    if (!secret || !secret[0])
        return fr_error_set(err, FR_EINVAL, "no cluster secret is set to verify the request");
    if (!method || !path)
        return fr_error_set(err, FR_EINVAL, "the request has no method or path to verify");
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
                            "the Framed-Timestamp %" PRId64 " is %" PRId64
                            " s %s this clock (%" PRId64 "); at most %d s are allowed: the "
                            "request is stale or a clock is wrong",
                            ts, ts < now ? now - ts : ts - now, ts < now ? "behind" : "ahead of",
                            now, FR_SIGN_MAX_SKEW_S);
    if (strncmp(signature, SIGN_PREFIX, 3) != 0)
        return fr_error_set(err, FR_EINVAL,
                            "the Framed-Signature header is not of the form v1=<hex>");
    char want[SIGN_LEN + 1];
    compute_signature(secret, method, path, body, len, sender, ts, want);
    /* The length is public (always SIGN_LEN); only the bytes need constant time. */
    if (strlen(signature) != SIGN_LEN || CRYPTO_memcmp(signature, want, SIGN_LEN) != 0)
        return fr_error_set(err, FR_EINVAL,
                            "the Framed-Signature is wrong: the secrets differ, or the method, "
                            "path, body, timestamp or sender changed on the way");
    return FR_OK;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int fr_secret_load(const char *path, char **out, struct fr_error *err)
{
    int result = FR_EINVAL;
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    struct fr_error read_err;
    fr_error_init(&read_err);
    result = fr_file_read_all(path, &text, &len, &read_err);
    if (result != FR_OK) {
        fr_error_set(err, result, "cannot read the cluster secret file: %s", read_err.message);
        goto out;
    }
    result = FR_EINVAL;
    if (memchr(text, '\0', len)) {
        fr_error_set(err, result, "the cluster secret file %s contains a NUL byte", path);
        goto out;
    }
    size_t start = 0, end = len;
    while (start < end && is_space(text[start]))
        start++;
    while (end > start && is_space(text[end - 1]))
        end--;
    if (start == end) {
        fr_error_set(err, result, "the cluster secret file %s is empty", path);
        goto out;
    }
    *out = fr_xstrndup(text + start, end - start);
    result = FR_OK;
out:
    if (text) {
        OPENSSL_cleanse(text, len);
        free(text);
    }
    return result;
}
