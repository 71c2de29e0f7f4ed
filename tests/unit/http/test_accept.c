/* Tests of src/http/http_accept.c: the negotiation table of RFC 9110 section
 * 12.5.1 on the result formats' offers (q-values, media ranges, specificity,
 * parameters, q=0) and the refusal of malformed headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_int.h"

/* The offers of GET /v1/queries/{id}/result, in the server's order. */
static const struct http__offer offers[] = {
    {"application/json", NULL},
    {"text/csv", "charset=utf-8"},
    {"application/x-ndjson", NULL},
    {"application/ndjson", NULL},
};
enum { JSON, CSV, XNDJSON, NDJSON, NONE = HTTP__ACCEPT_NONE, BAD = HTTP__ACCEPT_MALFORMED };

static const struct {
    const char *accept;
    int want;
} table[] = {
    /* no preference: the server's first offer */
    {NULL, JSON},
    {"", JSON},
    {"  ", JSON},
    {"*/*", JSON},
    {"application/*", JSON},
    /* the two cases */
    {"application/json;q=0, text/csv", CSV},
    {"text/*", CSV},
    /* q-values decide; ties go to the server's order */
    {"text/csv;q=0.5, application/x-ndjson;q=0.6", XNDJSON},
    {"text/csv;q=0.5, application/json;q=0.5", JSON},
    {"text/csv, application/json", JSON},
    {"application/ndjson", NDJSON},
    {"text/csv;q=0.001", CSV},
    {"text/csv;Q=1.000", CSV},
    {"text/csv;q=1.", CSV},
    {"TEXT/CSV", CSV},
    /* specificity: the most specific range sets an offer's weight */
    {"*/*;q=0.1, text/csv", CSV},
    {"text/*;q=0.9, */*;q=0.1", CSV},
    {"application/*;q=0.1, */*;q=0.2", CSV},
    {"*/*, application/json;q=0", CSV},
    {"application/*, application/json;q=0", XNDJSON},
    {"text/csv;charset=utf-8;q=0, text/csv", NONE},
    {"text/csv;q=0, text/csv;charset=utf-8", CSV},
    /* parameters must be the offer's */
    {"text/csv;charset=UTF-8", CSV},
    {"text/csv;charset=\"utf-8\"", CSV},
    {"text/csv;charset=latin1", NONE},
    {"text/csv;header=present", NONE},
    {"application/json;charset=utf-8", NONE},
    {"text/csv;q=0.4;ext=1", CSV}, /* accept-ext after the weight: allowed, not matched */
    /* not acceptable */
    {"image/png", NONE},
    {"*/*;q=0", NONE},
    {"text/csv;q=0.000", NONE},
    {"text/html, image/*", NONE},
    /* list syntax: empty elements and whitespace */
    {" , text/csv ;q=0.7 ,, application/json ; q=0.3 ,", CSV},
    /* malformed */
    {"text/csv;q=1.5", BAD},
    {"text/csv;q=0.0001", BAD},
    {"text/csv;q=-1", BAD},
    {"text/csv;q=", BAD},
    {"text/csv;q=1.001", BAD},
    {"text/csv;q", BAD},
    {"text", BAD},
    {"text/", BAD},
    {"/csv", BAD},
    {"*/csv", BAD},
    {"text/csv extra", BAD},
    {"text/csv;charset=\"utf-8", BAD},
    {"text/csv;=x", BAD},
    {"text/csv;a=b;c=d;e=f;g=h;i=j;k=l;m=n;o=p;q=1", BAD},
    {"te\x01xt/csv", BAD},
};

static void test_negotiation_table(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        int got = http__accept_pick(table[i].accept, offers, 4);
        if (got != table[i].want) {
            fprintf(stderr, "Accept: %s: got %d, want %d\n",
                    table[i].accept ? table[i].accept : "(none)", got, table[i].want);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void test_limits(void **state)
{
    (void)state;
    char many[HTTP__ACCEPT_MAX_BYTES + 64];
    size_t n = 0;
    for (int i = 0; i < HTTP__ACCEPT_MAX_RANGES; i++)
        n += (size_t)snprintf(many + n, sizeof(many) - n, "%stext/csv", i ? "," : "");
    assert_int_equal(http__accept_check(many), HTTP__ACCEPT_MAX_RANGES);
    snprintf(many + n, sizeof(many) - n, ",text/csv");
    assert_int_equal(http__accept_check(many), -1);
    memset(many, ' ', sizeof(many) - 1);
    many[sizeof(many) - 1] = '\0';
    memcpy(many, "text/csv", 8);
    assert_int_equal(http__accept_check(many), -1); /* over HTTP__ACCEPT_MAX_BYTES */
    assert_int_equal(http__accept_pick("text/csv", offers, 0), HTTP__ACCEPT_NONE);
    assert_int_equal(http__accept_pick(NULL, offers, 0), HTTP__ACCEPT_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_negotiation_table),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
