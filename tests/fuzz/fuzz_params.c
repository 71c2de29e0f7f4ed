/* fuzz_params: the small parsers of query parameters that the history and
 * the event stream take from users: RFC 3339 times (?since=, ?until=,
 * fr_rfc3339_parse_ms), list cursors (?cursor=, history_cursor_parse) and
 * event types (?types=, ctx_events_parse_types). The first byte picks the
 * parser; the rest is the value (cut at a NUL, as a query string hands it
 * over). Findings: a crash (ASan/UBSan), a time that does not survive a
 * round trip through framed's own ISO 8601 form, a cursor that does not
 * read back as the number it names, a type mask outside the known types or
 * an accepted empty one. */
#include "fuzz_util.h"
#include "context/context.h"
#include "history/history.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_time(const char *s)
{
    int64_t ms = fr_rfc3339_parse_ms(s);
    FUZZ_CHECK(ms >= -1);
    if (ms < 0 || ms >= 253402300800000LL) /* 10000-01-01: beyond the 4-digit form */
        return;
    char text[40];
    fr_iso8601_ms(ms, text, sizeof(text));
    FUZZ_CHECK(fr_rfc3339_parse_ms(text) == ms);
}

static void check_cursor(const char *s)
{
    struct fr_error err;
    fr_error_init(&err);
    int64_t seq = -1;
    if (history_cursor_parse(s, &seq, &err) != FR_OK) {
        FUZZ_CHECK(strcmp(err.kind, "invalid-parameter") == 0);
        return;
    }
    FUZZ_CHECK(seq > 0);
    char again[32];
    snprintf(again, sizeof(again), "c%lld", (long long)seq);
    int64_t seq2 = -1;
    FUZZ_CHECK(history_cursor_parse(again, &seq2, &err) == FR_OK && seq2 == seq);
}

static void check_types(const char *s)
{
    struct fr_error err;
    fr_error_init(&err);
    unsigned mask = 0;
    if (ctx_events_parse_types(s, &mask, &err) != FR_OK) {
        FUZZ_CHECK(strcmp(err.kind, "invalid-parameter") == 0);
        return;
    }
    FUZZ_CHECK(mask != 0 && (mask & ~CTX_EVENT_ALL) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *value = malloc(size);
    memcpy(value, data + 1, size - 1);
    value[size - 1] = '\0';
    switch (data[0] % 3) {
    case 0:
        check_time(value);
        break;
    case 1:
        check_cursor(value);
        break;
    default:
        check_types(value);
        break;
    }
    free(value);
    return 0;
}
