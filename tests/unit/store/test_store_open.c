/* Tests of src/store/store_open.c: each kind of URL opens its backend, an
 * unreachable Redis is FR_EIO naming host:port, and anything else is
 * refused with the URL in the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../common/mhd_fixture.h"
#include "store/store.h"

static void expect_backend(const char *url, const char *name)
{
    store *s = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(store_open_url(url, NULL, "secret", "w-1", &s, &err), FR_OK);
    assert_non_null(s);
    assert_string_equal(s->vt->name, name);
    store_free(s);
}

static void test_dispatch(void **state)
{
    (void)state;
    expect_backend(NULL, "embedded");
    expect_backend("embedded", "embedded");
    expect_backend("http://127.0.0.1:9100", "http");
    expect_backend("https://coordinator.example:8443/", "http");
}

static void test_redis_down(void **state)
{
    (void)state;
    uint16_t port = mhd_fixture_closed_port();
    char *url = fr_xasprintf("redis://127.0.0.1:%u/2", (unsigned)port);
    char *where = fr_xasprintf("127.0.0.1:%u", (unsigned)port);
    store *s = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(store_open_url(url, NULL, NULL, NULL, &s, &err), FR_EIO);
    assert_null(s);
    assert_non_null(strstr(err.message, where));
    free(url);
    free(where);
}

static void test_refuses_unknown(void **state)
{
    (void)state;
    const char *bad[] = {"", "file:///tmp/store", "Redis://h:1", "embedded:x", "memcached://h:1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        store *s = NULL;
        struct fr_error err;
        fr_error_init(&err);
        assert_int_equal(store_open_url(bad[i], NULL, NULL, NULL, &s, &err), FR_EINVAL);
        assert_null(s);
        if (bad[i][0] && !strstr(err.message, bad[i]))
            fail_msg("message '%s' does not name '%s'", err.message, bad[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_redis_down),
        cmocka_unit_test(test_refuses_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
