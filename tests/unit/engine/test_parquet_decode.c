/* Tests of src/engine/engine_parquet_decode.c: the RLE/bit-packed hybrid
 * (the spec's example, widths 0 to 32, cut runs, hostile headers),
 * dictionary indices, PLAIN for every type, RLE booleans,
 * BYTE_STREAM_SPLIT and the dispatch's refusals; every encoding is also cut
 * at each length and corrupted at each byte (run under ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "pq_fixture.h"

#define U(p) ((const uint8_t *)(p))

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The numbers 0 to 7 at width 3: Encodings.md's three bytes. */
static void test_rle_spec_example(void **state)
{
    (void)state;
    const uint8_t enc[] = {0x03, 0x88, 0xc6, 0xfa}; /* 1 group of 8, bit-packed */
    uint32_t out[8];
    size_t used = 0;
    assert_int_equal(df__pq_rle_decode(enc, sizeof(enc), 3, out, 8, &used, NULL), FR_OK);
    for (uint32_t i = 0; i < 8; i++)
        assert_int_equal(out[i], i);
    assert_int_equal(used, 4);
    /* five values: the run is cut, its bytes still consumed */
    memset(out, 0xff, sizeof(out));
    assert_int_equal(df__pq_rle_decode(enc, sizeof(enc), 3, out, 5, &used, NULL), FR_OK);
    assert_int_equal(out[4], 4);
    assert_int_equal(out[5], 0xffffffffu);
    /* the first two bytes hold the first five values (15 bits): a writer
     * that cut the run there is read too */
    assert_int_equal(df__pq_rle_decode(enc, 3, 3, out, 5, &used, NULL), FR_OK);
    assert_int_equal(out[4], 4);
    assert_int_equal(df__pq_rle_decode(enc, 3, 3, out, 6, &used, NULL), FR_EDATA);
}

/* A mix of runs at one width: RLE runs, bit-packed groups, a last run
 * longer than needed. */
static void rle_round_trip(int bw)
{
    const uint64_t mask = bw == 32 ? 0xffffffffu : (((uint64_t)1 << bw) - 1);
    uint32_t want[300], packed[64], out[300];
    struct fr_buf b;
    fr_buf_init(&b);
    int64_t n = 0;
    for (int round = 0; round < 5; round++) {
        uint32_t value = (uint32_t)(rnd() & mask);
        pq_hyb_rle(&b, value, 10 + (uint64_t)round, bw);
        for (int i = 0; i < 10 + round; i++)
            want[n++] = value;
        for (int i = 0; i < 24; i++)
            packed[i] = (uint32_t)(rnd() & mask);
        pq_hyb_packed(&b, packed, 3, bw);
        memcpy(want + n, packed, 24 * sizeof(uint32_t));
        n += 24;
    }
    for (int i = 0; i < 16; i++)
        packed[i] = (uint32_t)(rnd() & mask);
    pq_hyb_packed(&b, packed, 2, bw); /* 16 values, 11 needed */
    memcpy(want + n, packed, 11 * sizeof(uint32_t));
    n += 11;
    size_t used = 0;
    assert_int_equal(df__pq_rle_decode((const uint8_t *)b.data, b.len, bw, out, n, &used, NULL),
                     FR_OK);
    if (bw > 0) {
        assert_memory_equal(out, want, (size_t)n * sizeof(uint32_t));
        assert_int_equal(used, b.len);
    } else {
        for (int64_t i = 0; i < n; i++)
            assert_int_equal(out[i], 0);
    }
    /* every cut fails cleanly or (past the last value's bits) decodes the same */
    for (size_t cut = 0; cut < b.len && bw > 0; cut++) {
        uint8_t *q = pq_exact(b.data, cut);
        struct fr_error err;
        fr_error_init(&err);
        int rc = df__pq_rle_decode(q, cut, bw, out, n, NULL, &err);
        if (rc == FR_OK)
            assert_memory_equal(out, want, (size_t)n * sizeof(uint32_t));
        else {
            assert_int_equal(rc, FR_EDATA);
            assert_true(err.message[0] != '\0');
        }
        free(q);
    }
    fr_buf_cleanup(&b);
}

static void test_rle_widths(void **state)
{
    (void)state;
    for (int bw = 0; bw <= 32; bw++) /* 1 to 16 have a loop each, the rest one */
        rle_round_trip(bw);
}

static void test_rle_hostile(void **state)
{
    (void)state;
    uint32_t out[16];
    struct fr_error err;
    fr_error_init(&err);
    /* a header varint that never ends, or overflows 32 bits */
    const uint8_t endless[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(df__pq_rle_decode(endless, sizeof(endless), 8, out, 4, NULL, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "varint"));
    const uint8_t big[] = {0xfe, 0xff, 0xff, 0xff, 0x7f, 0x01};
    assert_int_equal(df__pq_rle_decode(big, sizeof(big), 8, out, 4, NULL, NULL), FR_EDATA);
    /* the longest legal RLE run (2^31 - 1 values) is cut to the count */
    const uint8_t huge_run[] = {0xfe, 0xff, 0xff, 0xff, 0x0f, 0x2a};
    assert_int_equal(df__pq_rle_decode(huge_run, sizeof(huge_run), 8, out, 16, NULL, NULL), FR_OK);
    for (int i = 0; i < 16; i++)
        assert_int_equal(out[i], 42);
    /* a bit-packed run of 2^31 groups with one byte after it */
    const uint8_t huge_packed[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x2a};
    assert_int_equal(df__pq_rle_decode(huge_packed, sizeof(huge_packed), 8, out, 16, NULL, &err),
                     FR_EDATA);
    assert_non_null(strstr(err.message, "bit-packed"));
    /* a repeated value wider than the bit width */
    const uint8_t wide[] = {0x08, 0x09};
    assert_int_equal(df__pq_rle_decode(wide, sizeof(wide), 3, out, 4, NULL, NULL), FR_EDATA);
    /* the value bytes of a run missing */
    const uint8_t cut[] = {0x08, 0x01};
    assert_int_equal(df__pq_rle_decode(cut, sizeof(cut), 17, out, 4, NULL, NULL), FR_EDATA);
    /* widths over 32, negative counts, empty input */
    assert_int_equal(df__pq_rle_decode(wide, sizeof(wide), 33, out, 4, NULL, NULL), FR_EDATA);
    assert_int_equal(df__pq_rle_decode(wide, sizeof(wide), 3, out, -1, NULL, NULL), FR_EDATA);
    assert_int_equal(df__pq_rle_decode(NULL, 0, 3, out, 1, NULL, NULL), FR_EDATA);
    assert_int_equal(df__pq_rle_decode(NULL, 0, 3, out, 0, NULL, NULL), FR_OK);
    /* zero-length runs make no values but do not loop */
    const uint8_t zeros[] = {0x00, 0x01, 0x01, 0x04, 0x05};
    assert_int_equal(df__pq_rle_decode(zeros, sizeof(zeros), 3, out, 2, NULL, NULL), FR_OK);
    assert_int_equal(out[1], 5);
}

static void test_dict_indices(void **state)
{
    (void)state;
    struct fr_buf b;
    fr_buf_init(&b);
    pq_put_byte(&b, 2);
    pq_hyb_rle(&b, 3, 5, 2);
    const uint32_t vals[8] = {0, 1, 2, 3, 3, 2, 1, 0};
    pq_hyb_packed(&b, vals, 1, 2);
    uint32_t out[13];
    const uint8_t *p = (const uint8_t *)b.data;
    assert_int_equal(df__pq_decode_dict_indices(p, b.len, 13, 4, out, NULL), FR_OK);
    assert_int_equal(out[4], 3);
    assert_int_equal(out[7], 2);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df__pq_decode_dict_indices(p, b.len, 13, 3, out, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "index 3"));
    assert_int_equal(df__pq_decode_dict_indices(p, b.len, 13, 0, out, NULL), FR_EDATA);
    assert_int_equal(df__pq_decode_dict_indices(p, b.len, 14, 4, out, NULL), FR_EDATA);
    assert_int_equal(df__pq_decode_dict_indices(p, 0, 1, 4, out, NULL), FR_EDATA);
    assert_int_equal(df__pq_decode_dict_indices(p, 0, 0, 4, out, NULL), FR_OK);
    /* width 0: a one-entry dictionary */
    const uint8_t zero[] = {0x00, 0x1a};
    assert_int_equal(df__pq_decode_dict_indices(zero, sizeof(zero), 13, 1, out, NULL), FR_OK);
    assert_int_equal(out[12], 0);
    const uint8_t w33[] = {33, 0x02, 0, 0, 0, 0, 0};
    assert_int_equal(df__pq_decode_dict_indices(w33, sizeof(w33), 1, 4, out, NULL), FR_EDATA);
    fr_buf_cleanup(&b);
}

static void decode_ok(int encoding, struct df__pq_values *v, const void *p, size_t n, int64_t count)
{
    struct fr_error err;
    fr_error_init(&err);
    int rc = df__pq_decode_values(encoding, p, n, count, v, &err);
    if (rc != FR_OK)
        fail_msg("decode: %s", err.message);
    assert_int_equal(v->count, count);
}

static void test_plain_fixed(void **state)
{
    (void)state;
    const int32_t i32[] = {1, -2, INT32_MAX, INT32_MIN};
    const int64_t i64[] = {INT64_MIN, 0, 7};
    const double dbl[] = {64.904572, -0.0, 1e300};
    const float flt[] = {1.5f, -2.25f};
    struct df__pq_values v;
    df__pq_values_init(&v, DF__PQ_INT32, 0);
    decode_ok(DF__PQ_PLAIN, &v, i32, sizeof(i32), 4);
    assert_memory_equal(v.fixed, i32, sizeof(i32));
    assert_int_equal(
        pq_check_hostile(DF__PQ_PLAIN, DF__PQ_INT32, 0, (const uint8_t *)i32, sizeof(i32), 4),
        sizeof(i32));
    v.type = DF__PQ_INT64; /* the buffers are reused across types and pages */
    decode_ok(DF__PQ_PLAIN, &v, i64, sizeof(i64), 3);
    assert_memory_equal(v.fixed, i64, sizeof(i64));
    v.type = DF__PQ_DOUBLE;
    decode_ok(DF__PQ_PLAIN, &v, dbl, sizeof(dbl), 3);
    assert_memory_equal(v.fixed, dbl, sizeof(dbl));
    v.type = DF__PQ_FLOAT;
    decode_ok(DF__PQ_PLAIN, &v, flt, sizeof(flt), 2);
    assert_memory_equal(v.fixed, flt, sizeof(flt));
    /* trailing bytes are left alone; too few are an error */
    decode_ok(DF__PQ_PLAIN, &v, flt, sizeof(flt), 1);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df__pq_decode_values(DF__PQ_PLAIN, U(flt), sizeof(flt), 3, &v, &err),
                     FR_EDATA);
    assert_int_equal(v.count, 0);
    /* a count no page could hold is refused before any allocation by it */
    assert_int_equal(
        df__pq_decode_values(DF__PQ_PLAIN, U(flt), sizeof(flt), INT64_MAX / 2, &v, &err), FR_EDATA);
    assert_int_equal(df__pq_decode_values(DF__PQ_PLAIN, U(flt), sizeof(flt), -1, &v, &err),
                     FR_EDATA);
    /* INT96: 12 raw bytes each */
    const uint8_t i96[24] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    v.type = DF__PQ_INT96;
    decode_ok(DF__PQ_PLAIN, &v, i96, sizeof(i96), 2);
    assert_memory_equal(v.fixed, i96, sizeof(i96));
    /* FIXED_LEN_BYTE_ARRAY of 3 */
    v.type = DF__PQ_FIXED_LEN_BYTE_ARRAY;
    v.type_length = 3;
    decode_ok(DF__PQ_PLAIN, &v, "abcdefghi", 9, 3);
    assert_memory_equal(v.fixed, "abcdefghi", 9);
    v.type_length = 0;
    assert_int_equal(df__pq_decode_values(DF__PQ_PLAIN, U("abc"), 3, 1, &v, &err), FR_EDATA);
    df__pq_values_cleanup(&v);
}

static void test_plain_boolean(void **state)
{
    (void)state;
    const uint8_t bits[] = {0x4d, 0x01}; /* 1 0 1 1 0 0 1 0 | 1 */
    const uint8_t want[] = {1, 0, 1, 1, 0, 0, 1, 0, 1};
    struct df__pq_values v;
    df__pq_values_init(&v, DF__PQ_BOOLEAN, 0);
    decode_ok(DF__PQ_PLAIN, &v, bits, sizeof(bits), 9);
    assert_memory_equal(v.fixed, want, 9);
    assert_int_equal(df__pq_decode_values(DF__PQ_PLAIN, bits, sizeof(bits), 17, &v, NULL),
                     FR_EDATA);
    pq_check_hostile(DF__PQ_PLAIN, DF__PQ_BOOLEAN, 0, bits, sizeof(bits), 9);
    df__pq_values_cleanup(&v);
}

static void test_plain_byte_array(void **state)
{
    (void)state;
    const char *words[] = {"alpha", "", "h\xc3\xa9llo", "x"};
    struct fr_buf b;
    fr_buf_init(&b);
    for (int i = 0; i < 4; i++) {
        pq_put_u32(&b, (uint32_t)strlen(words[i]));
        fr_buf_puts(&b, words[i]);
    }
    struct df__pq_values v;
    df__pq_values_init(&v, DF__PQ_BYTE_ARRAY, 0);
    decode_ok(DF__PQ_PLAIN, &v, b.data, b.len, 4);
    for (int i = 0; i < 4; i++) {
        size_t len;
        const char *s = pq_value(&v, i, &len);
        assert_int_equal(len, strlen(words[i]));
        assert_memory_equal(s, words[i], len);
    }
    assert_int_equal(v.data_len, 12);
    /* every cut fails: the last value ends the input */
    assert_int_equal(
        pq_check_hostile(DF__PQ_PLAIN, DF__PQ_BYTE_ARRAY, 0, (const uint8_t *)b.data, b.len, 4),
        b.len);
    /* a length past the end, and a count more than 4 bytes a value allows */
    const uint8_t bad[] = {0xff, 0xff, 0xff, 0x7f, 'a'};
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df__pq_decode_values(DF__PQ_PLAIN, bad, sizeof(bad), 1, &v, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "left"));
    assert_int_equal(df__pq_decode_values(DF__PQ_PLAIN, bad, sizeof(bad), 2, &v, NULL), FR_EDATA);
    /* one long value and no room left for the next values' lengths: the
     * data buffer is sized by n - 4 * count, so this must fail before
     * copying (found by fuzz_parquet_page) */
    fr_buf_cleanup(&b);
    fr_buf_init(&b);
    pq_put_u32(&b, 196);
    for (int i = 0; i < 196; i++)
        pq_put_byte(&b, 'q');
    df__pq_values_cleanup(&v);
    df__pq_values_init(&v, DF__PQ_BYTE_ARRAY, 0);
    assert_int_equal(df__pq_decode_values(DF__PQ_PLAIN, U(b.data), b.len, 50, &v, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "value 0 is 196 bytes long"));
    /* an empty page */
    decode_ok(DF__PQ_PLAIN, &v, NULL, 0, 0);
    assert_int_equal(v.offsets[0], 0);
    fr_buf_cleanup(&b);
    df__pq_values_cleanup(&v);
}

static void test_rle_booleans(void **state)
{
    (void)state;
    struct fr_buf runs, b;
    fr_buf_init(&runs);
    fr_buf_init(&b);
    pq_hyb_rle(&runs, 1, 100, 1);
    const uint32_t packed[8] = {0, 1, 1, 0, 1, 0, 0, 1};
    pq_hyb_packed(&runs, packed, 1, 1);
    pq_put_u32(&b, (uint32_t)runs.len);
    fr_buf_append(&b, runs.data, runs.len);
    struct df__pq_values v;
    df__pq_values_init(&v, DF__PQ_BOOLEAN, 0);
    decode_ok(DF__PQ_RLE, &v, b.data, b.len, 108);
    const uint8_t *out = v.fixed;
    assert_int_equal(out[0], 1);
    assert_int_equal(out[99], 1);
    assert_memory_equal(out + 100, "\0\1\1\0\1\0\0\1", 8);
    pq_check_hostile(DF__PQ_RLE, DF__PQ_BOOLEAN, 0, (const uint8_t *)b.data, b.len, 108);
    /* more values than the runs hold: refused before the buffer is grown */
    assert_int_equal(df__pq_decode_values(DF__PQ_RLE, U(b.data), b.len, INT64_MAX / 4, &v, NULL),
                     FR_EDATA);
    /* the length prefix past the page */
    b.data[0] = 100;
    assert_int_equal(df__pq_decode_values(DF__PQ_RLE, U(b.data), b.len, 108, &v, NULL), FR_EDATA);
    assert_int_equal(df__pq_decode_values(DF__PQ_RLE, U(b.data), 3, 1, &v, NULL), FR_EDATA);
    fr_buf_cleanup(&runs);
    fr_buf_cleanup(&b);
    df__pq_values_cleanup(&v);
}

static void test_byte_stream_split(void **state)
{
    (void)state;
    /* Encodings.md's example: three FLOATs */
    const uint8_t enc[] = {0xaa, 0x00, 0xa3, 0xbb, 0x11, 0xb4, 0xcc, 0x22, 0xc5, 0xdd, 0x33, 0xd6};
    const uint8_t want[] = {0xaa, 0xbb, 0xcc, 0xdd, 0x00, 0x11, 0x22, 0x33, 0xa3, 0xb4, 0xc5, 0xd6};
    const int types[] = {DF__PQ_FLOAT, DF__PQ_INT32, DF__PQ_FIXED_LEN_BYTE_ARRAY};
    for (int t = 0; t < 3; t++) {
        struct df__pq_values v;
        df__pq_values_init(&v, types[t], 4);
        decode_ok(DF__PQ_BYTE_STREAM_SPLIT, &v, enc, sizeof(enc), 3);
        assert_memory_equal(v.fixed, want, sizeof(want));
        pq_check_hostile(DF__PQ_BYTE_STREAM_SPLIT, types[t], 4, enc, sizeof(enc), 3);
        df__pq_values_cleanup(&v);
    }
    /* DOUBLE and INT64: 8 streams */
    double d[5] = {1.0, -2.5, 64.904572, 0.0, 1e-300}, back[5];
    uint8_t split[40];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 8; j++)
            split[j * 5 + i] = ((const uint8_t *)&d[i])[j];
    struct df__pq_values v;
    df__pq_values_init(&v, DF__PQ_DOUBLE, 0);
    decode_ok(DF__PQ_BYTE_STREAM_SPLIT, &v, split, sizeof(split), 5);
    memcpy(back, v.fixed, sizeof(back));
    assert_memory_equal(back, d, sizeof(d));
    v.type = DF__PQ_INT64;
    decode_ok(DF__PQ_BYTE_STREAM_SPLIT, &v, split, sizeof(split), 5);
    assert_memory_equal(v.fixed, d, sizeof(d));
    /* not whole values, or fewer than the page needs */
    assert_int_equal(df__pq_decode_values(DF__PQ_BYTE_STREAM_SPLIT, split, 39, 4, &v, NULL),
                     FR_EDATA);
    assert_int_equal(df__pq_decode_values(DF__PQ_BYTE_STREAM_SPLIT, split, 40, 6, &v, NULL),
                     FR_EDATA);
    /* FIXED_LEN_BYTE_ARRAY of 3 */
    v.type = DF__PQ_FIXED_LEN_BYTE_ARRAY;
    v.type_length = 3;
    decode_ok(DF__PQ_BYTE_STREAM_SPLIT, &v, "adbecf", 6, 2);
    assert_memory_equal(v.fixed, "abcdef", 6);
    df__pq_values_cleanup(&v);
}

static void expect_unsupported(int encoding, int type)
{
    struct df__pq_values v;
    df__pq_values_init(&v, type, 4);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df__pq_decode_values(encoding, U("abcdabcd"), 8, 1, &v, &err), FR_EVALIDATION);
    assert_string_equal(err.kind, "unsupported-parquet");
    df__pq_values_cleanup(&v);
}

static void test_unsupported(void **state)
{
    (void)state;
    expect_unsupported(DF__PQ_RLE, DF__PQ_INT32);
    expect_unsupported(DF__PQ_DELTA_BINARY_PACKED, DF__PQ_BYTE_ARRAY);
    expect_unsupported(DF__PQ_DELTA_BINARY_PACKED, DF__PQ_INT96);
    expect_unsupported(DF__PQ_DELTA_LENGTH_BYTE_ARRAY, DF__PQ_INT64);
    expect_unsupported(DF__PQ_BYTE_STREAM_SPLIT, DF__PQ_BOOLEAN);
    expect_unsupported(DF__PQ_BYTE_STREAM_SPLIT, DF__PQ_BYTE_ARRAY);
    expect_unsupported(DF__PQ_BIT_PACKED, DF__PQ_INT32);
    expect_unsupported(10, DF__PQ_DOUBLE); /* ALP */
    expect_unsupported(-3, DF__PQ_DOUBLE);
    expect_unsupported(DF__PQ_PLAIN, 8);
    /* dictionary indices are not values; a PLAIN_DICTIONARY dictionary page is */
    struct df__pq_values v;
    df__pq_values_init(&v, DF__PQ_INT32, 0);
    assert_int_equal(df__pq_decode_values(DF__PQ_RLE_DICTIONARY, U("abcd"), 4, 1, &v, NULL),
                     FR_EINTERNAL);
    decode_ok(DF__PQ_PLAIN_DICTIONARY, &v, "abcd", 4, 1);
    assert_memory_equal(v.fixed, "abcd", 4);
    df__pq_values_cleanup(&v);
    df__pq_values_cleanup(&v); /* cleanup twice is harmless */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rle_spec_example),  cmocka_unit_test(test_rle_widths),
        cmocka_unit_test(test_rle_hostile),       cmocka_unit_test(test_dict_indices),
        cmocka_unit_test(test_plain_fixed),       cmocka_unit_test(test_plain_boolean),
        cmocka_unit_test(test_plain_byte_array),  cmocka_unit_test(test_rle_booleans),
        cmocka_unit_test(test_byte_stream_split), cmocka_unit_test(test_unsupported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
