/* Tests of src/engine/engine_parquet_delta.c: DELTA_BINARY_PACKED (the
 * spec's examples built by hand, widths 0 to 64, wrapping deltas, INT32
 * truncation, hostile headers), DELTA_LENGTH_BYTE_ARRAY and
 * DELTA_BYTE_ARRAY (the spec's examples, bad lengths and prefixes, a
 * decompression bomb); every encoding cut at each length (run under ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "pq_fixture.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int decode(int encoding, struct df__pq_values *v, const void *p, size_t n, int64_t count,
                  struct fr_error *err)
{
    fr_error_init(err);
    return df__pq_decode_values(encoding, p, n, count, v, err);
}

static void expect_int64(const void *enc, size_t n, const int64_t *want, int64_t count)
{
    struct df__pq_values v;
    struct fr_error err;
    df__pq_values_init(&v, DF__PQ_INT64, 0);
    if (decode(DF__PQ_DELTA_BINARY_PACKED, &v, enc, n, count, &err) != FR_OK)
        fail_msg("decode: %s", err.message);
    assert_int_equal(v.count, count);
    if (count)
        assert_memory_equal(v.fixed, want, (size_t)count * sizeof(int64_t));
    df__pq_values_cleanup(&v);
}

/* Encodings.md's examples, with a legal block (128 values, 4 miniblocks of
 * 32) instead of the examples' illustrative block of 8. */
static void test_dbp_spec_examples(void **state)
{
    (void)state;
    /* 1 2 3 4 5: first value 1, min delta 1, every width 0, no data */
    const uint8_t ex1[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
    const int64_t want1[] = {1, 2, 3, 4, 5};
    expect_int64(ex1, sizeof(ex1), want1, 5);
    /* 7 5 3 1 2 3 4 5: min delta -2, relative 0 0 0 3 3 3 3 at width 2; the
     * unused miniblocks' widths are arbitrary (readers must accept that) */
    const uint8_t ex2[] = {0x80, 0x01, 0x04, 0x08, 0x0e, 0x03, 0x02, 0x99, 0xff,
                           0x41, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    const int64_t want2[] = {7, 5, 3, 1, 2, 3, 4, 5};
    expect_int64(ex2, sizeof(ex2), want2, 8);
    /* the same as INT32 */
    struct df__pq_values v;
    struct fr_error err;
    df__pq_values_init(&v, DF__PQ_INT32, 0);
    assert_int_equal(decode(DF__PQ_DELTA_BINARY_PACKED, &v, ex2, sizeof(ex2), 8, &err), FR_OK);
    const int32_t want32[] = {7, 5, 3, 1, 2, 3, 4, 5};
    assert_memory_equal(v.fixed, want32, sizeof(want32));
    /* fewer values than the header holds are read; more are an error */
    assert_int_equal(decode(DF__PQ_DELTA_BINARY_PACKED, &v, ex2, sizeof(ex2), 3, &err), FR_OK);
    assert_int_equal(decode(DF__PQ_DELTA_BINARY_PACKED, &v, ex2, sizeof(ex2), 9, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "holds 8 values"));
    /* every cut of the spec's examples fails: the padding is part of it */
    assert_int_equal(
        pq_check_hostile(DF__PQ_DELTA_BINARY_PACKED, DF__PQ_INT64, 0, ex2, sizeof(ex2), 8),
        sizeof(ex2));
    pq_check_hostile(DF__PQ_DELTA_BINARY_PACKED, DF__PQ_INT32, 0, ex1, sizeof(ex1), 5);
    /* a single value is just the header; no values at all too */
    const uint8_t one[] = {0x80, 0x01, 0x04, 0x01, 0x7f};
    const int64_t want_one[] = {-64};
    expect_int64(one, sizeof(one), want_one, 1);
    const uint8_t none[] = {0x80, 0x01, 0x04, 0x00, 0x00};
    expect_int64(none, sizeof(none), want_one, 0);
    df__pq_values_cleanup(&v);
}

/* Random sequences whose deltas need each width from 0 to 64, across
 * several blocks and miniblock layouts. */
static void test_dbp_round_trip_widths(void **state)
{
    (void)state;
    const size_t layouts[][2] = {{128, 4}, {128, 1}, {256, 8}, {1024, 8}};
    int64_t vals[700];
    for (int w = 0; w <= 64; w++) {
        const size_t *lay = layouts[w % 4];
        size_t count = 1 + (size_t)(rnd() % 690);
        uint64_t mask = w == 64 ? UINT64_MAX : w == 0 ? 0 : ((uint64_t)1 << w) - 1;
        vals[0] = (int64_t)rnd();
        for (size_t i = 1; i < count; i++)
            vals[i] = (int64_t)((uint64_t)vals[i - 1] + 12345 + (rnd() & mask));
        struct fr_buf b;
        fr_buf_init(&b);
        pq_dbp_encode(&b, vals, count, lay[0], lay[1], 0, (uint8_t)(w * 3));
        expect_int64(b.data, b.len, vals, (int64_t)count);
        if (w % 8 == 0 || w == 1 || w == 7 || w == 31 || w == 63)
            pq_check_hostile(DF__PQ_DELTA_BINARY_PACKED, DF__PQ_INT64, 0, (const uint8_t *)b.data,
                             b.len, (int64_t)count);
        fr_buf_cleanup(&b);
    }
}

/* Hostile deltas wrap in two's complement, never as signed overflow. */
static void test_dbp_wrapping(void **state)
{
    (void)state;
    const int64_t vals[] = {INT64_MIN, INT64_MAX, 0, -1, INT64_MIN, 1, INT64_MAX, INT64_MIN};
    struct fr_buf b;
    fr_buf_init(&b);
    pq_dbp_encode(&b, vals, 8, 128, 4, 0, 0);
    expect_int64(b.data, b.len, vals, 8);
    fr_buf_cleanup(&b);
    /* INT32 columns: deltas computed in 32 bits, values truncated to 32 */
    const int64_t v32[] = {INT32_MIN, INT32_MAX, 0, -1, INT32_MIN, 7, INT32_MAX};
    fr_buf_init(&b);
    pq_dbp_encode(&b, v32, 7, 128, 4, 1, 0);
    struct df__pq_values v;
    struct fr_error err;
    df__pq_values_init(&v, DF__PQ_INT32, 0);
    assert_int_equal(decode(DF__PQ_DELTA_BINARY_PACKED, &v, b.data, b.len, 7, &err), FR_OK);
    for (int i = 0; i < 7; i++)
        assert_int_equal(((int32_t *)v.fixed)[i], (int32_t)v32[i]);
    fr_buf_cleanup(&b);
    /* a min delta of INT64_MIN and width-64 deltas of all ones */
    fr_buf_init(&b);
    const uint8_t hdr[] = {0x80, 0x01, 0x01, 0x03, 0x00};
    fr_buf_append(&b, hdr, sizeof(hdr));
    pq_put_zigzag(&b, INT64_MIN);
    pq_put_byte(&b, 64);
    uint64_t rel[128];
    for (int i = 0; i < 128; i++)
        rel[i] = UINT64_MAX;
    pq_pack_bits(&b, rel, 128, 64);
    assert_int_equal(decode(DF__PQ_DELTA_BINARY_PACKED, &v, b.data, b.len, 3, &err), FR_OK);
    const int32_t *out = v.fixed; /* 0, INT64_MAX, -2, truncated to 32 bits */
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], -1);
    assert_int_equal(out[2], -2);
    fr_buf_cleanup(&b);
    df__pq_values_cleanup(&v);
}

static void expect_dbp_error(const uint8_t *enc, size_t n, int64_t count, const char *what)
{
    struct df__pq_values v;
    struct fr_error err;
    df__pq_values_init(&v, DF__PQ_INT64, 0);
    assert_int_equal(decode(DF__PQ_DELTA_BINARY_PACKED, &v, enc, n, count, &err), FR_EDATA);
    if (!strstr(err.message, what))
        fail_msg("'%s' does not say '%s'", err.message, what);
    df__pq_values_cleanup(&v);
}

static void test_dbp_hostile(void **state)
{
    (void)state;
    const uint8_t b100[] = {0x64, 0x01, 0x02, 0x00};
    expect_dbp_error(b100, sizeof(b100), 2, "block size 100");
    const uint8_t bhuge[] = {0x80, 0x80, 0x80, 0x80, 0x01, 0x01, 0x02, 0x00};
    expect_dbp_error(bhuge, sizeof(bhuge), 2, "block size");
    const uint8_t mb3[] = {0x80, 0x01, 0x03, 0x02, 0x00};
    expect_dbp_error(mb3, sizeof(mb3), 2, "miniblocks");
    const uint8_t mb0[] = {0x80, 0x01, 0x00, 0x02, 0x00};
    expect_dbp_error(mb0, sizeof(mb0), 2, "miniblocks");
    const uint8_t w65[] = {0x80, 0x01, 0x01, 0x02, 0x00, 0x00, 65};
    expect_dbp_error(w65, sizeof(w65), 2, "over 64");
    const uint8_t cut_widths[] = {0x80, 0x01, 0x04, 0x02, 0x00, 0x00, 0x01};
    expect_dbp_error(cut_widths, sizeof(cut_widths), 2, "bit widths");
    const uint8_t cut_mini[] = {0x80, 0x01, 0x01, 0x02, 0x00, 0x00, 0x08, 0x01};
    expect_dbp_error(cut_mini, sizeof(cut_mini), 2, "miniblock of 128 bytes");
    const uint8_t bad_varint[] = {0x80, 0x01, 0x01, 0x02, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    expect_dbp_error(bad_varint, sizeof(bad_varint), 2, "header");
    /* a total of 2^62 values in 10 bytes: refused before any allocation */
    const uint8_t huge_total[] = {0x80, 0x01, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80,
                                  0x80, 0x80, 0x80, 0x40, 0x00, 0x00, 0x00};
    expect_dbp_error(huge_total, sizeof(huge_total), (int64_t)1 << 40, "cut off");
    /* a page count over the header's total */
    const uint8_t few[] = {0x80, 0x01, 0x04, 0x01, 0x00};
    expect_dbp_error(few, sizeof(few), (int64_t)1 << 40, "holds 1 values");
}

static void expect_strings(const struct df__pq_values *v, const char *const *want, int64_t n)
{
    assert_int_equal(v->count, n);
    for (int64_t i = 0; i < n; i++) {
        size_t len;
        const char *s = pq_value(v, i, &len);
        if (len != strlen(want[i]) || memcmp(s, want[i], len) != 0)
            fail_msg("value %lld is '%.*s', not '%s'", (long long)i, (int)len, s, want[i]);
    }
}

static void test_delta_length(void **state)
{
    (void)state;
    const char *words[] = {"Hello", "World", "Foobar", "ABCDEF"};
    struct fr_buf b;
    fr_buf_init(&b);
    pq_dlba_encode(&b, words, 4);
    assert_memory_equal(b.data + b.len - 22, "HelloWorldFoobarABCDEF", 22);
    struct df__pq_values v;
    struct fr_error err;
    df__pq_values_init(&v, DF__PQ_BYTE_ARRAY, 0);
    assert_int_equal(decode(DF__PQ_DELTA_LENGTH_BYTE_ARRAY, &v, b.data, b.len, 4, &err), FR_OK);
    expect_strings(&v, words, 4);
    assert_int_equal(v.data_len, 22);
    pq_check_hostile(DF__PQ_DELTA_LENGTH_BYTE_ARRAY, DF__PQ_BYTE_ARRAY, 0, (const uint8_t *)b.data,
                     b.len, 4);
    /* the data cut short: the last length points past the end */
    assert_int_equal(decode(DF__PQ_DELTA_LENGTH_BYTE_ARRAY, &v, b.data, b.len - 1, 4, &err),
                     FR_EDATA);
    assert_non_null(strstr(err.message, "value 3 has length 6"));
    fr_buf_cleanup(&b);
    /* a negative length */
    const int64_t lens[] = {3, -1};
    fr_buf_init(&b);
    pq_dbp_encode(&b, lens, 2, 128, 4, 0, 0);
    fr_buf_puts(&b, "abcdef");
    assert_int_equal(decode(DF__PQ_DELTA_LENGTH_BYTE_ARRAY, &v, b.data, b.len, 2, &err), FR_EDATA);
    fr_buf_cleanup(&b);
    /* FIXED_LEN_BYTE_ARRAY: every length must be the column's */
    const char *fixed[] = {"abc", "def"};
    fr_buf_init(&b);
    pq_dlba_encode(&b, fixed, 2);
    v.type = DF__PQ_FIXED_LEN_BYTE_ARRAY;
    v.type_length = 3;
    assert_int_equal(decode(DF__PQ_DELTA_LENGTH_BYTE_ARRAY, &v, b.data, b.len, 2, &err), FR_OK);
    assert_memory_equal(v.fixed, "abcdef", 6);
    v.type_length = 2;
    assert_int_equal(decode(DF__PQ_DELTA_LENGTH_BYTE_ARRAY, &v, b.data, b.len, 2, &err), FR_EDATA);
    fr_buf_cleanup(&b);
    df__pq_values_cleanup(&v);
}

static void test_delta_byte_array(void **state)
{
    (void)state;
    const char *words[] = {"axis", "axle", "babble", "babyhood"};
    struct fr_buf b;
    fr_buf_init(&b);
    pq_dba_encode(&b, words, 4);
    assert_memory_equal(b.data + b.len - 17, "axislebabbleyhood", 17);
    struct df__pq_values v;
    struct fr_error err;
    df__pq_values_init(&v, DF__PQ_BYTE_ARRAY, 0);
    assert_int_equal(decode(DF__PQ_DELTA_BYTE_ARRAY, &v, b.data, b.len, 4, &err), FR_OK);
    expect_strings(&v, words, 4);
    pq_check_hostile(DF__PQ_DELTA_BYTE_ARRAY, DF__PQ_BYTE_ARRAY, 0, (const uint8_t *)b.data, b.len,
                     4);
    fr_buf_cleanup(&b);
    /* a prefix longer than the value before it */
    const int64_t pre[] = {0, 5};
    const char *suf[] = {"abc", "d"};
    fr_buf_init(&b);
    pq_dbp_encode(&b, pre, 2, 128, 4, 0, 0);
    pq_dlba_encode(&b, suf, 2);
    assert_int_equal(decode(DF__PQ_DELTA_BYTE_ARRAY, &v, b.data, b.len, 2, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "prefix length 5"));
    fr_buf_cleanup(&b);
    /* FIXED_LEN_BYTE_ARRAY */
    const char *fixed[] = {"abcd", "abce", "bbbb", "bbbb"};
    fr_buf_init(&b);
    pq_dba_encode(&b, fixed, 4);
    v.type = DF__PQ_FIXED_LEN_BYTE_ARRAY;
    v.type_length = 4;
    assert_int_equal(decode(DF__PQ_DELTA_BYTE_ARRAY, &v, b.data, b.len, 4, &err), FR_OK);
    assert_memory_equal(v.fixed, "abcdabcebbbbbbbb", 16);
    v.type_length = 3;
    assert_int_equal(decode(DF__PQ_DELTA_BYTE_ARRAY, &v, b.data, b.len, 4, &err), FR_EDATA);
    fr_buf_cleanup(&b);
    df__pq_values_cleanup(&v);
}

/* A page of 66 KB that would expand to over 1 GiB (every
 * value repeats the previous 1000 bytes): refused, not allocated. */
static void test_delta_byte_array_bomb(void **state)
{
    (void)state;
    const int64_t count = (int64_t)1 << 21;
    struct fr_buf b;
    fr_buf_init(&b);
    /* prefixes: 0, then 1000 forever (first value 0, one delta of 1000,
     * then deltas of 0 at width 0) */
    pq_put_uvarint(&b, 128);
    pq_put_uvarint(&b, 1);
    pq_put_uvarint(&b, (uint64_t)count);
    pq_put_zigzag(&b, 0);
    for (int64_t left = count - 1, first = 1; left > 0; left -= 128, first = 0) {
        if (first) { /* block 1: deltas 1000, 0, 0, ...: min 0, width 10 */
            uint64_t rel[128] = {1000};
            pq_put_zigzag(&b, 0);
            pq_put_byte(&b, 10);
            pq_pack_bits(&b, rel, 128, 10);
        } else {
            pq_put_zigzag(&b, 0);
            pq_put_byte(&b, 0);
        }
    }
    /* suffix lengths: 1000, then 0 forever */
    pq_put_uvarint(&b, 128);
    pq_put_uvarint(&b, 1);
    pq_put_uvarint(&b, (uint64_t)count);
    pq_put_zigzag(&b, 1000);
    for (int64_t left = count - 1, first = 1; left > 0; left -= 128, first = 0) {
        if (first) { /* deltas -1000, 0, 0, ...: min -1000, width 10 */
            uint64_t rel[128];
            rel[0] = 0;
            for (int i = 1; i < 128; i++)
                rel[i] = 1000;
            pq_put_zigzag(&b, -1000);
            pq_put_byte(&b, 10);
            pq_pack_bits(&b, rel, 128, 10);
        } else {
            pq_put_zigzag(&b, 0);
            pq_put_byte(&b, 0);
        }
    }
    for (int i = 0; i < 1000; i++)
        pq_put_byte(&b, (uint8_t)('a' + i % 26));
    struct df__pq_values v;
    struct fr_error err;
    df__pq_values_init(&v, DF__PQ_BYTE_ARRAY, 0);
    assert_int_equal(decode(DF__PQ_DELTA_BYTE_ARRAY, &v, b.data, b.len, count, &err), FR_ENOSPACE);
    assert_non_null(strstr(err.message, "over"));
    /* the first thousand values are fine */
    assert_int_equal(decode(DF__PQ_DELTA_BYTE_ARRAY, &v, b.data, b.len, 1000, &err), FR_OK);
    size_t len;
    const char *s = pq_value(&v, 999, &len);
    assert_int_equal(len, 1000);
    assert_int_equal(s[26], 'a');
    df__pq_values_cleanup(&v);
    /* 500 MB of values, under the page cap: with the task's account, the
     * prefixes and the values' buffer are charged before they are allocated */
    struct df_options opts = {.task_memory_limit_bytes = 64 << 20};
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    v.ex = &ex;
    assert_int_equal(decode(DF__PQ_DELTA_BYTE_ARRAY, &v, b.data, b.len, 500000, &err),
                     FR_EMEMLIMIT);
    assert_true(ex.mem_peak < (int64_t)600 << 20);
    assert_null(v.data);
    /* what the buffers hold is released with them */
    assert_int_equal(decode(DF__PQ_DELTA_BYTE_ARRAY, &v, b.data, b.len, 1000, &err), FR_OK);
    assert_true(ex.mem_used >= 1000 * 1000);
    df__pq_values_cleanup(&v);
    assert_int_equal(ex.mem_used, 0);
    assert_ptr_equal(v.ex, &ex);
    fr_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dbp_spec_examples),     cmocka_unit_test(test_dbp_round_trip_widths),
        cmocka_unit_test(test_dbp_wrapping),          cmocka_unit_test(test_dbp_hostile),
        cmocka_unit_test(test_delta_length),          cmocka_unit_test(test_delta_byte_array),
        cmocka_unit_test(test_delta_byte_array_bomb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
