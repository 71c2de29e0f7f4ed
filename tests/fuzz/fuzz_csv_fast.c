/* fuzz_csv_fast: the CSV reader's fast paths (engine_io_int.h) against the
 * definitions they shortcut, on arbitrary bytes. The first byte picks the
 * delimiter and the quote (LF and the delimiter among them); the rest is a
 * buffer of records. Invariants: wherever
 * df__csv_plain_record answers, df__csv_tokenize gives the same fields, end
 * and line count; wherever df__fast_int64 or df__fast_float64 answer for a
 * field, df__parse_int64 or df__parse_float64 accept it with the same value,
 * whatever bytes follow the field. */
#include "engine/engine_io_int.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_numbers(const char *s, size_t n)
{
    char buf[16 + 1 + DF__READ_PAD];
    if (n == 0 || n > 16)
        return;
    memcpy(buf, s, n);
    memset(buf + n, '5', sizeof(buf) - n); /* digits past the field must not count */
    int64_t fi, gi;
    if (df__fast_int64(buf, n, &fi))
        FUZZ_CHECK(df__parse_int64(s, n, &gi) == 0 && fi == gi);
    double fd, gd;
    if (df__fast_float64(buf, n, &fd))
        FUZZ_CHECK(df__parse_float64(s, n, &gd) == 0 && memcmp(&fd, &gd, sizeof(fd)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char delims[] = {',', ';', '\t', '|'};
    static const char quotes[] = {'"', '"', '\'', '\0', '\n', ','};
    char delim = delims[data[0] % 4], quote = quotes[(data[0] >> 2) % 6];
    size_t n = size - 1;
    char *buf = malloc(n + 1);
    memcpy(buf, data + 1, n);
    buf[n] = '\n';
    struct df__csv_tok slow, fast;
    df__csv_tok_init(&slow, delim, quote);
    df__csv_tok_init(&fast, delim, quote);
    const char *p = buf, *end = buf + n;
    while (p < end) {
        const char *next_slow = NULL, *next_fast = NULL;
        int rc = df__csv_tokenize(&slow, p, end, true, &next_slow);
        FUZZ_CHECK(rc != DF__TOK_MORE && next_slow > p && next_slow <= end + 1);
        if (df__csv_plain_record(&fast, p, end, &next_fast)) {
            FUZZ_CHECK(rc == DF__TOK_RECORD && next_fast == next_slow);
            FUZZ_CHECK(fast.nlines == slow.nlines && fast.nfields == slow.nfields);
            for (int f = 0; f < slow.nfields; f++)
                FUZZ_CHECK(fast.f[f].p == slow.f[f].p && fast.f[f].len == slow.f[f].len &&
                           fast.f[f].flags == slow.f[f].flags);
        }
        for (int f = 0; rc == DF__TOK_RECORD && f < slow.nfields; f++)
            if (!slow.f[f].flags)
                check_numbers(slow.f[f].p, slow.f[f].len);
        p = next_slow;
    }
    df__csv_tok_cleanup(&slow);
    df__csv_tok_cleanup(&fast);
    free(buf);
    return 0;
}
