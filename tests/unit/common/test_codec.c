/* Tests of src/common/common_codec.c: Accept-Encoding picks, LZ4 and zstd
 * frames made in pieces and read back whole, and a peer's bad bytes:
 * corrupt, cut short, followed by more, larger than the bound (told in the
 * header or not), empty, skippable frames. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

static void test_pick(void **state)
{
    (void)state;
    assert_int_equal(fr_codec_pick(NULL), FR_CODEC_NONE);
    assert_int_equal(fr_codec_pick(""), FR_CODEC_NONE);
    assert_int_equal(fr_codec_pick("gzip, br"), FR_CODEC_NONE);
    assert_int_equal(fr_codec_pick("lz4"), FR_CODEC_LZ4);
    assert_int_equal(fr_codec_pick("zstd"), FR_CODEC_ZSTD);
    assert_int_equal(fr_codec_pick("gzip, ZSTD, lz4"), FR_CODEC_ZSTD);
    assert_int_equal(fr_codec_pick(" lz4 ;q=0.5 , zstd"), FR_CODEC_LZ4);
    assert_int_equal(fr_codec_pick("lz4;q=0, zstd"), FR_CODEC_ZSTD);
    assert_int_equal(fr_codec_pick("lz4;q=0.0,zstd;q=0"), FR_CODEC_NONE);
    assert_int_equal(fr_codec_pick("identity, lz4"), FR_CODEC_LZ4);
    assert_int_equal(fr_codec_pick("lz44, zst, lz"), FR_CODEC_NONE);
    assert_true(fr_codec_accepts("gzip, lz4", FR_CODEC_LZ4));
    assert_false(fr_codec_accepts("gzip, lz4;q=0", FR_CODEC_LZ4));
    assert_false(fr_codec_accepts("lz4", FR_CODEC_ZSTD));
    assert_false(fr_codec_accepts(NULL, FR_CODEC_ZSTD));
    assert_int_equal(fr_codec_parse("LZ4", 3), FR_CODEC_LZ4);
    assert_int_equal(fr_codec_parse("identity", 8), FR_CODEC_NONE);
    assert_int_equal(fr_codec_parse("gzip", 4), -1);
    assert_string_equal(fr_codec_name(FR_CODEC_ZSTD), "zstd");
}

/* n bytes that compress: runs of a counter with some noise */
static char *sample(size_t n)
{
    char *p = malloc(n ? n : 1);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (char)((i / 64) % 7 == 0 ? (char)x : (char)('a' + (i / 8) % 20));
    }
    return p;
}

/* in[0..n) compressed in pieces of `piece` bytes; size told or not */
static void encode(enum fr_codec c, const char *in, size_t n, size_t piece, bool tell,
                   struct fr_buf *out)
{
    fr_buf_init(out);
    struct fr_encoder *e = fr_encoder_new(c, tell ? (int64_t)n : -1);
    assert_non_null(e);
    for (size_t pos = 0; pos < n; pos += piece)
        assert_int_equal(fr_encoder_write(e, in + pos, n - pos < piece ? n - pos : piece, out),
                         FR_OK);
    assert_int_equal(fr_encoder_finish(e, out), FR_OK);
    fr_encoder_free(e);
}

static void roundtrip(enum fr_codec c)
{
    const size_t sizes[] = {0, 1, 100, 65536, 1000003, 5u << 20};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        char *in = sample(n);
        for (int tell = 0; tell < 2; tell++) {
            struct fr_buf z, back;
            struct fr_error err;
            fr_error_init(&err);
            fr_buf_init(&back);
            encode(c, in, n, 256 * 1024 - 3, tell, &z);
            assert_true(z.len > 0);
            if (n == 0) { /* no partition encodes to nothing: an empty frame is refused */
                assert_int_equal(fr_decode(c, z.data, z.len, 1, &back, &err), FR_EDATA);
                fr_buf_cleanup(&z);
                continue;
            }
            if (n >= 65536)
                assert_true(z.len < n / 2); /* it does compress */
            assert_int_equal(fr_decode(c, z.data, z.len, (int64_t)n + 1, &back, &err), FR_OK);
            assert_int_equal(back.len, n);
            assert_memory_equal(back.data ? back.data : "", in, n);
            /* exactly n is allowed; one byte less is not */
            assert_int_equal(fr_decode(c, z.data, z.len, n ? (int64_t)n : 1, &back, &err), FR_OK);
            if (n > 1) {
                assert_int_equal(fr_decode(c, z.data, z.len, (int64_t)n - 1, &back, &err),
                                 FR_ENOSPACE);
                assert_int_equal(back.len, 0);
            }
            fr_buf_cleanup(&z);
            fr_buf_cleanup(&back);
        }
        free(in);
    }
}

static void test_roundtrip_lz4(void **state)
{
    (void)state;
    roundtrip(FR_CODEC_LZ4);
}

static void test_roundtrip_zstd(void **state)
{
    (void)state;
    roundtrip(FR_CODEC_ZSTD);
}

static void hostile(enum fr_codec c)
{
    size_t n = 300000;
    char *in = sample(n);
    struct fr_buf z, back;
    struct fr_error err;
    fr_error_init(&err);
    fr_buf_init(&back);
    encode(c, in, n, 4096, true, &z);
    /* cut short anywhere: refused, never a partial answer */
    const size_t cuts[] = {1, 4, 7, 11, z.len / 2, z.len - 4, z.len - 1};
    for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
        assert_int_equal(fr_decode(c, z.data, cuts[k], 0, &back, &err), FR_EDATA);
        assert_int_equal(back.len, 0);
    }
    assert_int_equal(fr_decode(c, z.data, 0, 0, &back, &err), FR_EDATA);
    /* followed by more bytes */
    struct fr_buf more;
    fr_buf_init(&more);
    fr_buf_append(&more, z.data, z.len);
    fr_buf_append(&more, "xyz", 3);
    assert_int_equal(fr_decode(c, more.data, more.len, 0, &back, &err), FR_EDATA);
    /* a flipped byte in the body: the checksum or the format catches it */
    for (size_t at = 20; at < z.len; at += z.len / 13) {
        z.data[at] ^= 0x55;
        int rc = fr_decode(c, z.data, z.len, 0, &back, &err);
        assert_int_equal(rc, FR_EDATA);
        z.data[at] ^= 0x55;
    }
    /* a skippable frame (both formats' magic 0x184D2A5x, a length, data) */
    const unsigned char skip[] = {0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 'a', 'b', 'c', 'd'};
    assert_int_equal(fr_decode(c, skip, sizeof(skip), 0, &back, &err), FR_EDATA);
    /* not a frame at all */
    assert_int_equal(fr_decode(c, in, 1000, 0, &back, &err), FR_EDATA);
    /* the wrong codec */
    assert_int_equal(
        fr_decode(c == FR_CODEC_LZ4 ? FR_CODEC_ZSTD : FR_CODEC_LZ4, z.data, z.len, 0, &back, &err),
        FR_EDATA);
    assert_int_equal(fr_decode(FR_CODEC_NONE, z.data, z.len, 0, &back, &err), FR_EINVAL);
    /* a bomb: 64 MiB of zeros is a small frame, refused at a 1 MiB bound
     * (by its header when it tells its size, else as it grows past it) */
    size_t big = 64u << 20;
    char *zeros = calloc(1, big);
    struct fr_buf bomb;
    for (int tell = 0; tell < 2; tell++) {
        encode(c, zeros, big, big, tell, &bomb);
        assert_true(bomb.len < big / 100);
        assert_int_equal(fr_decode(c, bomb.data, bomb.len, 1 << 20, &back, &err), FR_ENOSPACE);
        assert_int_equal(back.len, 0);
        fr_buf_cleanup(&bomb);
    }
    free(zeros);
    fr_buf_cleanup(&more);
    fr_buf_cleanup(&z);
    fr_buf_cleanup(&back);
    free(in);
}

static void test_hostile_lz4(void **state)
{
    (void)state;
    hostile(FR_CODEC_LZ4);
}

static void test_hostile_zstd(void **state)
{
    (void)state;
    hostile(FR_CODEC_ZSTD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick),           cmocka_unit_test(test_roundtrip_lz4),
        cmocka_unit_test(test_roundtrip_zstd), cmocka_unit_test(test_hostile_lz4),
        cmocka_unit_test(test_hostile_zstd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
