/* Tests of src/engine/engine_parquet_codec.c: round trips through our
 * compressors and the libraries' own, the exact-size contract, and
 * truncated or corrupt inputs answered with FR_EDATA (run under ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "engine/engine_parquet_int.h"

#define SAMPLE_N 20000

/* Compressible but not trivial: repeated words with a counter. */
static uint8_t *sample(size_t *n)
{
    uint8_t *p = malloc(SAMPLE_N);
    for (size_t i = 0; i < SAMPLE_N; i++)
        p[i] = (uint8_t)("parquet page "[i % 13] + (i / 977) % 7);
    *n = SAMPLE_N;
    return p;
}

static int decompress(int codec, const void *in, size_t n, uint8_t *out, size_t out_n)
{
    struct fr_error err;
    fr_error_init(&err);
    int rc = df__pq_decompress(codec, in, n, out, out_n, &err);
    if (rc != FR_OK)
        assert_true(err.message[0] != '\0');
    return rc;
}

/* Decompressing a cut of every length and a byte flip at every place must
 * never crash, and never succeed with different bytes. */
static void check_hostile(int codec, const uint8_t *comp, size_t clen, const uint8_t *raw, size_t n)
{
    uint8_t *out = malloc(n);
    uint8_t *copy = malloc(clen);
    for (size_t cut = 0; cut < clen; cut++) {
        uint8_t *t = malloc(cut ? cut : 1);
        memcpy(t, comp, cut);
        int rc = decompress(codec, t, cut, out, n);
        if (rc == FR_OK) /* LZ4 (raw fallback) may accept a prefix by luck */
            assert_memory_equal(out, raw, n);
        free(t);
    }
    size_t step = clen > 400 ? clen / 400 : 1;
    for (size_t i = 0; i < clen; i += step) {
        memcpy(copy, comp, clen);
        copy[i] ^= 0x5a;
        (void)decompress(codec, copy, clen, out, n);
    }
    free(copy);
    free(out);
}

static void round_trip(int codec)
{
    size_t n;
    uint8_t *raw = sample(&n);
    struct fr_buf comp;
    fr_buf_init(&comp);
    fr_buf_append(&comp, "hdr", 3); /* compress appends */
    assert_int_equal(df__pq_compress(codec, raw, n, &comp, NULL), FR_OK);
    assert_memory_equal(comp.data, "hdr", 3);
    const uint8_t *c = (const uint8_t *)comp.data + 3;
    size_t clen = comp.len - 3;
    if (codec != DF__PQ_UNCOMPRESSED)
        assert_true(clen < n / 2);
    uint8_t *out = malloc(n + 1);
    assert_int_equal(decompress(codec, c, clen, out, n), FR_OK);
    assert_memory_equal(out, raw, n);
    /* a header that promises one byte more or less is corrupt */
    assert_int_equal(decompress(codec, c, clen, out, n - 1), FR_EDATA);
    assert_int_equal(decompress(codec, c, clen, out, n + 1), FR_EDATA);
    check_hostile(codec, c, clen, raw, n);
    /* empty pages */
    fr_buf_cleanup(&comp);
    assert_int_equal(df__pq_compress(codec, raw, 0, &comp, NULL), FR_OK);
    assert_int_equal(decompress(codec, comp.data, comp.len, NULL, 0), FR_OK);
    free(out);
    free(raw);
    fr_buf_cleanup(&comp);
}

static void test_uncompressed(void **state)
{
    (void)state;
    round_trip(DF__PQ_UNCOMPRESSED);
}

static void test_snappy(void **state)
{
    (void)state;
    round_trip(DF__PQ_SNAPPY);
}

static void test_zstd(void **state)
{
    (void)state;
    round_trip(DF__PQ_ZSTD);
}

/* zlib's own compressor, in both framings Parquet writers use. */
static void test_gzip(void **state)
{
    (void)state;
    size_t n;
    uint8_t *raw = sample(&n);
    for (int wbits = 15; wbits <= 31; wbits += 16) { /* zlib, then gzip */
        z_stream z;
        memset(&z, 0, sizeof(z));
        assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY), Z_OK);
        size_t cap = deflateBound(&z, n);
        uint8_t *c = malloc(cap);
        z.next_in = raw;
        z.avail_in = (uInt)n;
        z.next_out = c;
        z.avail_out = (uInt)cap;
        assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
        size_t clen = z.total_out;
        deflateEnd(&z);
        uint8_t *out = malloc(n + 1);
        assert_int_equal(decompress(DF__PQ_GZIP, c, clen, out, n), FR_OK);
        assert_memory_equal(out, raw, n);
        assert_int_equal(decompress(DF__PQ_GZIP, c, clen, out, n - 1), FR_EDATA);
        assert_int_equal(decompress(DF__PQ_GZIP, c, clen, out, n + 1), FR_EDATA);
        check_hostile(DF__PQ_GZIP, c, clen, raw, n);
        free(out);
        free(c);
    }
    free(raw);
}

/* Two gzip members one after the other decompress as their concatenation. */
static void test_gzip_members(void **state)
{
    (void)state;
    const char *a = "first member ", *b = "second member";
    uint8_t comp[256];
    size_t clen = 0;
    for (int m = 0; m < 2; m++) {
        const char *s = m ? b : a;
        z_stream z;
        memset(&z, 0, sizeof(z));
        assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
        z.next_in = (Bytef *)s;
        z.avail_in = (uInt)strlen(s);
        z.next_out = comp + clen;
        z.avail_out = (uInt)(sizeof(comp) - clen);
        assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
        clen += z.total_out;
        deflateEnd(&z);
    }
    uint8_t out[26];
    assert_int_equal(decompress(DF__PQ_GZIP, comp, clen, out, 26), FR_OK);
    assert_memory_equal(out, "first member second member", 26);
}

static size_t lz4_block(const uint8_t *raw, size_t n, uint8_t *dst, size_t cap)
{
    int c = LZ4_compress_default((const char *)raw, (char *)dst, (int)n, (int)cap);
    assert_true(c > 0);
    return (size_t)c;
}

static void test_lz4_raw(void **state)
{
    (void)state;
    size_t n;
    uint8_t *raw = sample(&n);
    size_t cap = (size_t)LZ4_compressBound((int)n);
    uint8_t *c = malloc(cap);
    size_t clen = lz4_block(raw, n, c, cap);
    uint8_t *out = malloc(n + 1);
    assert_int_equal(decompress(DF__PQ_LZ4_RAW, c, clen, out, n), FR_OK);
    assert_memory_equal(out, raw, n);
    assert_int_equal(decompress(DF__PQ_LZ4_RAW, c, clen, out, n - 1), FR_EDATA);
    assert_int_equal(decompress(DF__PQ_LZ4_RAW, c, clen, out, n + 1), FR_EDATA);
    check_hostile(DF__PQ_LZ4_RAW, c, clen, raw, n);
    /* codec 5 falls back to a raw block when the Hadoop framing does not fit */
    assert_int_equal(decompress(DF__PQ_LZ4, c, clen, out, n), FR_OK);
    assert_memory_equal(out, raw, n);
    free(out);
    free(c);
    free(raw);
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Hadoop framing: two blocks, the second made of two chunks. */
static void test_lz4_hadoop(void **state)
{
    (void)state;
    size_t n;
    uint8_t *raw = sample(&n);
    size_t cap = 2 * (size_t)LZ4_compressBound((int)n) + 64;
    uint8_t *c = malloc(cap);
    size_t pos = 0, half = n / 2, quarter = n / 4;
    put_be32(c + pos, (uint32_t)half);
    size_t k = lz4_block(raw, half, c + pos + 8, cap - pos - 8);
    put_be32(c + pos + 4, (uint32_t)k);
    pos += 8 + k;
    put_be32(c + pos, (uint32_t)(n - half));
    pos += 4;
    const size_t parts[2][2] = {{half, quarter}, {half + quarter, n - half - quarter}};
    for (int i = 0; i < 2; i++) {
        k = lz4_block(raw + parts[i][0], parts[i][1], c + pos + 4, cap - pos - 4);
        put_be32(c + pos, (uint32_t)k);
        pos += 4 + k;
    }
    uint8_t *out = malloc(n + 1);
    assert_int_equal(decompress(DF__PQ_LZ4, c, pos, out, n), FR_OK);
    assert_memory_equal(out, raw, n);
    assert_int_equal(decompress(DF__PQ_LZ4, c, pos, out, n + 1), FR_EDATA);
    assert_int_equal(decompress(DF__PQ_LZ4, c, pos, out, n - 1), FR_EDATA);
    check_hostile(DF__PQ_LZ4, c, pos, raw, n);
    free(out);
    free(c);
    free(raw);
}

/* A zstd frame whose header claims a huge size is refused before any work,
 * and the size in the frame never drives an allocation. */
static void test_zstd_frame_size_checked(void **state)
{
    (void)state;
    const char *s = "zstd frame content";
    size_t cap = ZSTD_compressBound(strlen(s));
    uint8_t *c = malloc(cap);
    size_t clen = ZSTD_compress(c, cap, s, strlen(s), 3);
    assert_false(ZSTD_isError(clen));
    uint8_t out[64];
    assert_int_equal(decompress(DF__PQ_ZSTD, c, clen, out, strlen(s)), FR_OK);
    assert_memory_equal(out, s, strlen(s));
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df__pq_decompress(DF__PQ_ZSTD, c, clen, out, 5, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "ZSTD"));
    assert_int_equal(decompress(DF__PQ_ZSTD, "not zstd", 8, out, 8), FR_EDATA);
    free(c);
}

static void test_unsupported(void **state)
{
    (void)state;
    uint8_t out[4];
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df__pq_decompress(DF__PQ_BROTLI, (const uint8_t *)"abcd", 4, out, 4, &err),
                     FR_EVALIDATION);
    assert_string_equal(err.kind, "unsupported-parquet");
    assert_non_null(strstr(err.message, "BROTLI"));
    assert_false(df__pq_codec_supported(DF__PQ_LZO));
    assert_false(df__pq_codec_supported(42));
    assert_true(df__pq_codec_supported(DF__PQ_LZ4_RAW));
    assert_string_equal(df__pq_codec_name(DF__PQ_ZSTD), "ZSTD");
    assert_string_equal(df__pq_codec_name(9), "codec 9");
    assert_string_equal(df__pq_codec_name(-1), "codec -1");
    struct fr_buf b;
    fr_buf_init(&b);
    fr_error_init(&err);
    assert_int_equal(df__pq_compress(DF__PQ_GZIP, out, 4, &b, &err), FR_EVALIDATION);
    fr_buf_cleanup(&b);
    /* UNCOMPRESSED insists on equal sizes */
    assert_int_equal(decompress(DF__PQ_UNCOMPRESSED, "abcd", 4, out, 3), FR_EDATA);
    /* a page header over the page limit is refused, not allocated for */
    assert_int_equal(decompress(DF__PQ_SNAPPY, "abcd", 4, out, (size_t)1 << 31), FR_EDATA);
    assert_int_equal(decompress(DF__PQ_ZSTD, "abcd", 4, out, SIZE_MAX), FR_EDATA);
    /* (a size over INT64_MAX must not pass as a negative number and be copied) */
    assert_int_equal(decompress(DF__PQ_UNCOMPRESSED, "abcd", SIZE_MAX, out, SIZE_MAX), FR_EDATA);
}

/* snappy's length header claims more than the page header: refused
 * before decompressing. */
static void test_snappy_length_mismatch(void **state)
{
    (void)state;
    const uint8_t c[] = {0x7f, 0x00, 'a'}; /* length 127, then a literal */
    uint8_t out[8];
    assert_int_equal(decompress(DF__PQ_SNAPPY, c, sizeof(c), out, 1), FR_EDATA);
    const uint8_t ok[] = {0x01, 0x00, 'a'}; /* length 1, literal of 1 */
    assert_int_equal(decompress(DF__PQ_SNAPPY, ok, sizeof(ok), out, 1), FR_OK);
    assert_int_equal(out[0], 'a');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uncompressed), cmocka_unit_test(test_snappy),
        cmocka_unit_test(test_zstd),         cmocka_unit_test(test_gzip),
        cmocka_unit_test(test_gzip_members), cmocka_unit_test(test_lz4_raw),
        cmocka_unit_test(test_lz4_hadoop),   cmocka_unit_test(test_zstd_frame_size_checked),
        cmocka_unit_test(test_unsupported),  cmocka_unit_test(test_snappy_length_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
