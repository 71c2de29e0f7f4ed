/* fuzz_accept: the Accept header parser of content negotiation
 * (http__accept_check and http__accept_pick, src/http/http_accept.c) on the
 * result formats' offers. The input is the header's value (cut at a NUL, as
 * libmicrohttpd hands headers over). Findings: a crash (ASan/UBSan), a pick
 * out of range, a malformed verdict that check and pick disagree on, a
 * different answer for the same bytes, or a well-formed header whose pick
 * changes when * / *;q=0 is appended (a later range of no more specificity
 * must not override an earlier or more specific one). */
#include "fuzz_util.h"
#include "http/http_int.h"

static const struct http__offer offers[] = {
    {"application/json", NULL},
    {"text/csv", "charset=utf-8"},
    {"application/x-ndjson", NULL},
    {"application/ndjson", NULL},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *accept = malloc(size + 16);
    memcpy(accept, data, size);
    accept[size] = '\0';
    int n = http__accept_check(accept);
    int pick = http__accept_pick(accept, offers, 4);
    FUZZ_CHECK(pick >= HTTP__ACCEPT_MALFORMED && pick < 4);
    FUZZ_CHECK((n < 0) == (pick == HTTP__ACCEPT_MALFORMED));
    FUZZ_CHECK(http__accept_pick(accept, offers, 4) == pick);
    if (n > 0 && n < HTTP__ACCEPT_MAX_RANGES && strlen(accept) + 16 <= HTTP__ACCEPT_MAX_BYTES &&
        strlen(accept) == size) {
        memcpy(accept + size, ",*/*;q=0", 9);
        FUZZ_CHECK(http__accept_pick(accept, offers, 4) == pick);
    }
    free(accept);
    return 0;
}
