/* Tests of src/common/common_sign.c: known answers computed independently
 * with `openssl dgst -sha256 -hmac`, refusal of every changed, stale or
 * missing part with a message that says which, and loading a secret file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"

#define NOW 1700000000
static const char BODY[] = "{\"a\":1}";

/* BH=$(printf '%s' '{"a":1}' | openssl dgst -sha256 -r | cut -d' ' -f1)
 * printf 'POST\n/v1/tasks?x=1\n%s\n1700000000\nw-1' "$BH" | openssl dgst -sha256 -hmac secret */
static const char KNOWN_POST[] =
    "v1=852a2f47cc63d18a1c2d0125875b80b4787e8160a891478cb178569d6ee8bf95";
/* The same for an empty body: GET /v1/configs/abc, sender "coordinator". */
static const char KNOWN_GET[] =
    "v1=6b6a5da1fcdf8aed29bc3f1d7713539115a3379b413f7be01cf7cc5610624984";

static void test_known_answers(void **state)
{
    (void)state;
    char sig[80];
    fr_sign_request("secret", "POST", "/v1/tasks?x=1", BODY, strlen(BODY), "w-1", NOW, sig,
                    sizeof(sig));
    assert_string_equal(sig, KNOWN_POST);
    fr_sign_request("secret", "GET", "/v1/configs/abc", NULL, 0, "coordinator", NOW, sig,
                    sizeof(sig));
    assert_string_equal(sig, KNOWN_GET);
}

static int verify(const char *secret, const char *method, const char *path, const char *body,
                  const char *sender, const char *timestamp, const char *signature, int64_t now,
                  struct fr_error *err)
{
    fr_error_init(err);
    return fr_verify_request(secret, method, path, body, body ? strlen(body) : 0, sender, timestamp,
                             signature, now, err);
}

static void test_verify_accepts_within_skew(void **state)
{
    (void)state;
    struct fr_error err;
    assert_int_equal(
        verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", "1700000000", KNOWN_POST, NOW, &err),
        FR_OK);
    assert_int_equal(verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", "1700000000",
                            KNOWN_POST, NOW + FR_SIGN_MAX_SKEW_S, &err),
                     FR_OK);
    assert_int_equal(verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", "1700000000",
                            KNOWN_POST, NOW - FR_SIGN_MAX_SKEW_S, &err),
                     FR_OK);
    assert_int_equal(verify("secret", "GET", "/v1/configs/abc", NULL, "coordinator", "1700000000",
                            KNOWN_GET, NOW, &err),
                     FR_OK);
}

/* Each change must be refused with FR_EINVAL and a message containing want. */
static void check_refused(int rc, const struct fr_error *err, const char *want)
{
    assert_int_equal(rc, FR_EINVAL);
    assert_int_equal(err->status, FR_EINVAL);
    if (!strstr(err->message, want))
        fail_msg("message '%s' does not mention '%s'", err->message, want);
}
/* call fills the test's local `err`. */
#define expect_refused(call, want) check_refused((call), &err, (want))

static void test_verify_refuses_changes(void **state)
{
    (void)state;
    struct fr_error err;
    const char *ts = "1700000000";
    expect_refused(
        verify("Secret", "POST", "/v1/tasks?x=1", BODY, "w-1", ts, KNOWN_POST, NOW, &err),
        "Signature is wrong");
    expect_refused(
        verify("secret", "POST", "/v1/tasks?x=1", "{\"a\":2}", "w-1", ts, KNOWN_POST, NOW, &err),
        "Signature is wrong");
    expect_refused(
        verify("secret", "POST", "/v1/tasks?x=2", BODY, "w-1", ts, KNOWN_POST, NOW, &err),
        "Signature is wrong");
    expect_refused(verify("secret", "PUT", "/v1/tasks?x=1", BODY, "w-1", ts, KNOWN_POST, NOW, &err),
                   "Signature is wrong");
    expect_refused(
        verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-2", ts, KNOWN_POST, NOW, &err),
        "Signature is wrong");
    /* A timestamp moved by one second within the window changes the MAC. */
    expect_refused(
        verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", "1700000001", KNOWN_POST, NOW, &err),
        "Signature is wrong");
    /* A truncated or extended signature, an unknown version. */
    char shorter[80];
    snprintf(shorter, sizeof(shorter), "%.*s", (int)strlen(KNOWN_POST) - 1, KNOWN_POST);
    expect_refused(verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", ts, shorter, NOW, &err),
                   "Signature is wrong");
    char longer[90];
    snprintf(longer, sizeof(longer), "%s0", KNOWN_POST);
    expect_refused(verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", ts, longer, NOW, &err),
                   "Signature is wrong");
    expect_refused(
        verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", ts, KNOWN_POST + 1, NOW, &err),
        "v1=<hex>");
}

static void test_verify_refuses_stale_and_future(void **state)
{
    (void)state;
    struct fr_error err;
    const char *ts = "1700000000";
    expect_refused(verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", ts, KNOWN_POST,
                          NOW + FR_SIGN_MAX_SKEW_S + 1, &err),
                   "behind");
    expect_refused(verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", ts, KNOWN_POST,
                          NOW - FR_SIGN_MAX_SKEW_S - 1, &err),
                   "ahead of");
    expect_refused(
        verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", "17e8", KNOWN_POST, NOW, &err),
        "unix seconds");
    expect_refused(verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", "99999999999999999999",
                          KNOWN_POST, NOW, &err),
                   "unix seconds");
}

static void test_verify_refuses_missing_parts(void **state)
{
    (void)state;
    struct fr_error err;
    const char *ts = "1700000000";
    expect_refused(verify("secret", "POST", "/v1/tasks?x=1", BODY, NULL, ts, KNOWN_POST, NOW, &err),
                   "Framed-Sender header is missing");
    expect_refused(verify("secret", "POST", "/v1/tasks?x=1", BODY, "", ts, KNOWN_POST, NOW, &err),
                   "Framed-Sender header is missing");
    expect_refused(
        verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", NULL, KNOWN_POST, NOW, &err),
        "Framed-Timestamp header is missing");
    expect_refused(verify("secret", "POST", "/v1/tasks?x=1", BODY, "w-1", ts, NULL, NOW, &err),
                   "Framed-Signature header is missing");
    expect_refused(verify(NULL, "POST", "/v1/tasks?x=1", BODY, "w-1", ts, KNOWN_POST, NOW, &err),
                   "no cluster secret");
}

/* new: a file under the current directory holding text. */
static char *write_temp(const char *text)
{
    char *path = strdup("framed-test-secret-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_secret_load(void **state)
{
    (void)state;
    struct fr_error err;
    char *secret = NULL;
    char *path = write_temp("  s3cret value\n\n");
    fr_error_init(&err);
    assert_int_equal(fr_secret_load(path, &secret, &err), FR_OK);
    assert_string_equal(secret, "s3cret value");
    free(secret);
    unlink(path);
    free(path);

    path = write_temp(" \n\t\n");
    fr_error_init(&err);
    assert_int_not_equal(fr_secret_load(path, &secret, &err), FR_OK);
    assert_null(secret);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, "empty"));
    unlink(path);

    /* Now missing. */
    fr_error_init(&err);
    assert_int_not_equal(fr_secret_load(path, &secret, &err), FR_OK);
    assert_null(secret);
    assert_int_not_equal(err.status, FR_OK);
    assert_non_null(strstr(err.message, path));
    free(path);
}

/* A valid signed request is accepted once; the same bytes again are a
 * replay. A new nonce makes an equal request sign differently. */
static void test_replay_refused(void **state)
{
    (void)state;
    fr_replay *seen = fr_replay_new(8);
    struct fr_error err;
    char n1[64], n2[64], s1[80], s2[80];
    fr_sign_nonce(n1, sizeof(n1));
    fr_sign_nonce(n2, sizeof(n2));
    assert_int_equal(strlen(n1), 2 * FR_SIGN_NONCE_BYTES);
    assert_string_not_equal(n1, n2);
    fr_sign_request_nonce("secret", "GET", "/v1/info", NULL, 0, "w-1", NOW, n1, s1, sizeof(s1));
    fr_sign_request_nonce("secret", "GET", "/v1/info", NULL, 0, "w-1", NOW, n2, s2, sizeof(s2));
    assert_string_not_equal(s1, s2);
    fr_error_init(&err);
    assert_int_equal(fr_verify_request_nonce("secret", "GET", "/v1/info", NULL, 0, "w-1",
                                             "1700000000", n1, s1, NOW, seen, &err),
                     FR_OK);
    fr_error_init(&err);
    assert_int_equal(fr_verify_request_nonce("secret", "GET", "/v1/info", NULL, 0, "w-1",
                                             "1700000000", n1, s1, NOW + 1, seen, &err),
                     FR_EINVAL);
    assert_non_null(strstr(err.message, "replay"));
    fr_error_init(&err);
    assert_int_equal(fr_verify_request_nonce("secret", "GET", "/v1/info", NULL, 0, "w-1",
                                             "1700000000", n2, s2, NOW, seen, &err),
                     FR_OK);
    /* the nonce is signed: another one under the same signature is wrong */
    fr_error_init(&err);
    assert_int_equal(fr_verify_request_nonce("secret", "GET", "/v1/info", NULL, 0, "w-1",
                                             "1700000000", n2, s1, NOW, seen, &err),
                     FR_EINVAL);
    fr_error_init(&err);
    assert_int_equal(fr_verify_request_nonce("secret", "GET", "/v1/info", NULL, 0, "w-1",
                                             "1700000000", "short", s1, NOW, seen, &err),
                     FR_EINVAL);
    fr_replay_free(seen);
}

/* A full cache forgets its oldest entry but then refuses anything stamped
 * at or before it, so a forgotten signature cannot be replayed either. */
static void test_replay_cache_bounded(void **state)
{
    (void)state;
    fr_replay *seen = fr_replay_new(4);
    struct fr_error err;
    char sig[80], first[80], nonce[64];
    for (int i = 0; i < 6; i++) {
        fr_sign_nonce(nonce, sizeof(nonce));
        fr_sign_request_nonce("secret", "GET", "/v1/info", NULL, 0, "w-1", NOW + i, nonce, sig,
                              sizeof(sig));
        if (i == 0)
            memcpy(first, sig, sizeof(sig));
        fr_error_init(&err);
        assert_int_equal(fr_replay_check(seen, sig, NOW + i, NOW + i, &err), FR_OK);
    }
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, first, NOW, NOW + 6, &err), FR_EINVAL);
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, sig, NOW + 5, NOW + 6, &err), FR_EINVAL);
    fr_sign_nonce(nonce, sizeof(nonce));
    fr_sign_request_nonce("secret", "GET", "/v1/info", NULL, 0, "w-1", NOW + 6, nonce, sig,
                          sizeof(sig));
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, sig, NOW + 6, NOW + 6, &err), FR_OK);
    fr_replay_free(seen);
    fr_replay_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_verify_accepts_within_skew),
        cmocka_unit_test(test_verify_refuses_changes),
        cmocka_unit_test(test_verify_refuses_stale_and_future),
        cmocka_unit_test(test_verify_refuses_missing_parts),
        cmocka_unit_test(test_secret_load),
        cmocka_unit_test(test_replay_refused),
        cmocka_unit_test(test_replay_cache_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
