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

/* A fresh signature of GET /v1/info stamped ts into sig (>= 80 bytes). */
static void fresh_sig(int64_t ts, char *sig)
{
    char nonce[64];
    fr_sign_nonce(nonce, sizeof(nonce));
    fr_sign_request_nonce("secret", "GET", "/v1/info", NULL, 0, "w-1", ts, nonce, sig, 80);
}

/* One sender whose clock is ahead, within the allowed skew, sends more
 * signed requests than the old 16384-slot ring held: an in-sync sender's
 * request is still accepted, and every remembered signature is still a
 * replay, also on the receiver's clock long after (until ts + max skew). */
static void test_replay_skewed_sender_locks_nobody_out(void **state)
{
    (void)state;
    fr_replay *seen = fr_replay_new(FR_REPLAY_CAPACITY);
    struct fr_error err;
    char sig[80], first[80], now_sig[80];
    const int64_t ahead = NOW + FR_SIGN_MAX_SKEW_S - 60;
    for (int i = 0; i < 16384 + 2000; i++) {
        fresh_sig(ahead, sig);
        if (i == 0)
            memcpy(first, sig, sizeof(sig));
        fr_error_init(&err);
        assert_int_equal(fr_replay_check(seen, sig, ahead, NOW, &err), FR_OK);
    }
    fresh_sig(NOW, now_sig);
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, now_sig, NOW, NOW, &err), FR_OK);
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, now_sig, NOW, NOW + 1, &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "replay"));
    /* the skewed sender's first one: still within its age 500 s later */
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, first, ahead, NOW + 500, &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "replay"));
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, sig, ahead, ahead + FR_SIGN_MAX_SKEW_S, &err),
                     FR_EINVAL);
    /* and past it the skew check refuses it anyway */
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, sig, ahead, ahead + FR_SIGN_MAX_SKEW_S + 1, &err),
                     FR_EINVAL);
    assert_non_null(strstr(err.message, "clock skew"));
    fr_replay_free(seen);
}

/* A cache holding capacity live signatures refuses a new one with
 * FR_EUNAVAILABLE (retry later), never as a replay; a replay is still
 * refused as one; once the oldest expire on the receiver's clock, new ones
 * are accepted again. */
static void test_replay_cache_bounded(void **state)
{
    (void)state;
    fr_replay *seen = fr_replay_new(4);
    struct fr_error err;
    char sig[80], first[80];
    for (int i = 0; i < 4; i++) {
        fresh_sig(NOW + i, sig);
        if (i == 0)
            memcpy(first, sig, sizeof(sig));
        fr_error_init(&err);
        assert_int_equal(fr_replay_check(seen, sig, NOW + i, NOW + i, &err), FR_OK);
    }
    fresh_sig(NOW + 4, sig);
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, sig, NOW + 4, NOW + 4, &err), FR_EUNAVAILABLE);
    assert_non_null(strstr(err.message, "retry in"));
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, first, NOW, NOW + 4, &err), FR_EINVAL);
    assert_non_null(strstr(err.message, "replay"));
    /* the first expires after NOW + max skew: room for one */
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, sig, NOW + 4, NOW + FR_SIGN_MAX_SKEW_S, &err),
                     FR_EUNAVAILABLE);
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, sig, NOW + 4, NOW + FR_SIGN_MAX_SKEW_S + 1, &err),
                     FR_OK);
    fr_error_init(&err);
    assert_int_equal(fr_replay_check(seen, sig, NOW + 4, NOW + FR_SIGN_MAX_SKEW_S + 1, &err),
                     FR_EINVAL);
    fr_replay_free(seen);
    fr_replay_free(NULL);
}

/* Many entries through a small table: it grows and sweeps, and every live
 * signature stays a replay. */
static void test_replay_cache_grows_and_sweeps(void **state)
{
    (void)state;
    enum { N = 5000 };
    fr_replay *seen = fr_replay_new(N);
    static char sigs[N][80];
    struct fr_error err;
    for (int round = 0; round < 3; round++) {
        int64_t now = NOW + round * (2 * FR_SIGN_MAX_SKEW_S + 1);
        for (int i = 0; i < N; i++) {
            fresh_sig(now, sigs[i]);
            fr_error_init(&err);
            assert_int_equal(fr_replay_check(seen, sigs[i], now, now, &err), FR_OK);
        }
        for (int i = 0; i < N; i++) {
            fr_error_init(&err);
            assert_int_equal(fr_replay_check(seen, sigs[i], now, now + 1, &err), FR_EINVAL);
        }
    }
    fr_replay_free(seen);
}

#define RESULT_TOKEN_WANT "9854f3210530eabfab45a98fc7bd122aaaa0f1af9dd3e3c0e826ed4565b51db0"

/* A result location's token: the documented HMAC (checked against a value
 * computed by `printf 'framed-result\np-ab\nsha256:00..\n5\n10\n1700000000' |
 * openssl dgst -sha256 -hmac k`), and any change to what it covers fails it. */
static void test_result_token(void **state)
{
    (void)state;
    const char *cfg = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    char tok[FR_RESULT_TOKEN_LEN + 1];
    fr_sign_result_token("k", "p-ab", cfg, 5, 10, 1700000000, tok, sizeof(tok));
    assert_int_equal(strlen(tok), FR_RESULT_TOKEN_LEN);
    assert_string_equal(tok, RESULT_TOKEN_WANT);
    assert_true(fr_verify_result_token("k", "p-ab", cfg, 5, 10, 1700000000, tok));
    assert_false(fr_verify_result_token("k2", "p-ab", cfg, 5, 10, 1700000000, tok));
    assert_false(fr_verify_result_token("k", "p-ac", cfg, 5, 10, 1700000000, tok));
    assert_false(fr_verify_result_token("k", "p-ab", "sha256:1", 5, 10, 1700000000, tok));
    assert_false(fr_verify_result_token("k", "p-ab", cfg, 6, 10, 1700000000, tok));
    assert_false(fr_verify_result_token("k", "p-ab", cfg, 5, 11, 1700000000, tok));
    assert_false(fr_verify_result_token("k", "p-ab", cfg, 5, 10, 1700000001, tok));
    assert_false(fr_verify_result_token("k", "p-ab", cfg, 5, 10, 1700000000, NULL));
    assert_false(fr_verify_result_token("k", "p-ab", cfg, 5, 10, 1700000000, ""));
    char longer[FR_RESULT_TOKEN_LEN + 2];
    snprintf(longer, sizeof(longer), "%s0", tok);
    assert_false(fr_verify_result_token("k", "p-ab", cfg, 5, 10, 1700000000, longer));
    tok[10] = tok[10] == 'a' ? 'b' : 'a';
    assert_false(fr_verify_result_token("k", "p-ab", cfg, 5, 10, 1700000000, tok));
}

/* A heartbeat answer's signature (api/internal-protocol.md), known answer
 * from Python's hmac; bound to the request's nonce and the body's bytes. */
static void test_answer_signature(void **state)
{
    (void)state;
    const char *body = "{\"heartbeat_ms\":1000}", *nonce = "00112233445566778899aabbccddeeff";
    char sig[80];
    fr_sign_answer("k", nonce, body, strlen(body), sig, sizeof(sig));
    assert_string_equal(sig, "v1=ea8f819f88f410153bdcb4cc54a667df596ac4f00cc1eb6e1d6495fd1d8f21c5");
    assert_true(fr_sign_answer_ok("k", nonce, body, strlen(body), sig));
    assert_false(fr_sign_answer_ok("k2", nonce, body, strlen(body), sig));
    assert_false(fr_sign_answer_ok("k", "00112233445566778899aabbccddeefe", body, strlen(body),
                                   sig)); /* another request's answer */
    assert_false(fr_sign_answer_ok("k", nonce, body, strlen(body) - 1, sig));
    assert_false(fr_sign_answer_ok("k", "", body, strlen(body), sig));
    assert_false(fr_sign_answer_ok("k", NULL, body, strlen(body), sig));
    assert_false(fr_sign_answer_ok("", nonce, body, strlen(body), sig));
    assert_false(fr_sign_answer_ok("k", nonce, body, strlen(body), ""));
    assert_false(fr_sign_answer_ok("k", nonce, body, strlen(body), NULL));
    sig[5] = sig[5] == 'a' ? 'b' : 'a';
    assert_false(fr_sign_answer_ok("k", nonce, body, strlen(body), sig));
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
        cmocka_unit_test(test_replay_skewed_sender_locks_nobody_out),
        cmocka_unit_test(test_replay_cache_bounded),
        cmocka_unit_test(test_replay_cache_grows_and_sweeps),
        cmocka_unit_test(test_result_token),
        cmocka_unit_test(test_answer_signature),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
