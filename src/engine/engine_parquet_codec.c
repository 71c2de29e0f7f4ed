/* engine_parquet_codec: Parquet's page codecs over the system libraries
 * (snappy, zlib, zstd, lz4). Decompression always targets the size the page
 * header promised: the caller allocates out_n bytes, and a stream that makes
 * more or fewer is FR_EDATA. No size read from the compressed bytes is ever
 * trusted for an allocation. */
#include "engine/engine_parquet_int.h"

#include <limits.h>
#include <lz4.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

/* The writer's ZSTD level: 1 is zstd's fastest standard level, so a result
 * download costs little more than snappy while compressing better. */
#define PQ_ZSTD_LEVEL 1

bool df__pq_codec_supported(int codec)
{
    switch (codec) {
    case DF__PQ_UNCOMPRESSED:
    case DF__PQ_SNAPPY:
    case DF__PQ_GZIP:
    case DF__PQ_LZ4:
    case DF__PQ_ZSTD:
    case DF__PQ_LZ4_RAW:
        return true;
    default:
        return false;
    }
}

const char *df__pq_codec_name(int codec)
{
    static const char *names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                  "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
    static _Thread_local char other[32];
    if (codec >= 0 && codec < (int)(sizeof(names) / sizeof(names[0])))
        return names[codec];
    snprintf(other, sizeof(other), "codec %d", codec);
    return other;
}

static int corrupt(struct fr_error *err, int codec, const char *what)
{
    return fr_error_set(err, FR_EDATA, "%s page: %s", df__pq_codec_name(codec), what);
}

static int wrong_size(struct fr_error *err, int codec, unsigned long long got, size_t want)
{
    return fr_error_set(err, FR_EDATA,
                        "%s page decompresses to %llu bytes, the page header says %zu",
                        df__pq_codec_name(codec), got, want);
}

static int too_big(struct fr_error *err, int codec, size_t want)
{
    return fr_error_set(err, FR_EDATA,
                        "%s page decompresses to more than the %zu bytes its header says",
                        df__pq_codec_name(codec), want);
}

static int snappy_dec(const uint8_t *in, size_t n, uint8_t *out, size_t out_n, struct fr_error *err)
{
    size_t len = 0;
    if (snappy_uncompressed_length((const char *)in, n, &len) != SNAPPY_OK)
        return corrupt(err, DF__PQ_SNAPPY, "corrupt length header");
    if (len != out_n)
        return wrong_size(err, DF__PQ_SNAPPY, len, out_n);
    char one;
    size_t got = out_n;
    if (snappy_uncompress((const char *)in, n, out_n ? (char *)out : &one, &got) != SNAPPY_OK)
        return corrupt(err, DF__PQ_SNAPPY, "corrupt input");
    if (got != out_n)
        return wrong_size(err, DF__PQ_SNAPPY, got, out_n);
    return FR_OK;
}

/* zlib or gzip framing (15 + 32: detected from the header); concatenated
 * gzip members are read one after the other, as gunzip does. */
static int gzip_dec(const uint8_t *in, size_t n, uint8_t *out, size_t out_n, struct fr_error *err)
{
    if (n > UINT_MAX || out_n > UINT_MAX)
        return corrupt(err, DF__PQ_GZIP, "page too large");
    uint8_t one;
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 15 + 32) != Z_OK)
        return fr_error_set(err, FR_ENOSPACE, "GZIP: cannot set up the decompressor");
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out_n ? out : &one;
    z.avail_out = (uInt)out_n;
    int rc = FR_EDATA;
    for (;;) {
        int zr = inflate(&z, Z_FINISH);
        if (zr == Z_STREAM_END) {
            /* done, unless another member follows and output is missing */
            if (z.avail_in == 0 || z.avail_out == 0) {
                rc = FR_OK;
                break;
            }
            if (inflateReset(&z) != Z_OK)
                break;
            continue;
        }
        if (zr == Z_BUF_ERROR && z.avail_out == 0 && z.avail_in > 0) {
            inflateEnd(&z); /* more output than the header promised */
            return too_big(err, DF__PQ_GZIP, out_n);
        }
        break;
    }
    size_t produced = out_n - z.avail_out;
    inflateEnd(&z);
    if (rc != FR_OK)
        return corrupt(err, DF__PQ_GZIP, "corrupt or truncated input");
    if (produced != out_n)
        return wrong_size(err, DF__PQ_GZIP, produced, out_n);
    return FR_OK;
}

static int zstd_dec(const uint8_t *in, size_t n, uint8_t *out, size_t out_n, struct fr_error *err)
{
    unsigned long long fcs = ZSTD_getFrameContentSize(in, n);
    if (fcs == ZSTD_CONTENTSIZE_ERROR)
        return corrupt(err, DF__PQ_ZSTD, "not a zstd frame");
    if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs > out_n)
        return wrong_size(err, DF__PQ_ZSTD, fcs, out_n);
    uint8_t one;
    size_t got = ZSTD_decompress(out_n ? out : &one, out_n, in, n);
    if (ZSTD_isError(got)) {
        if (ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall)
            return too_big(err, DF__PQ_ZSTD, out_n);
        return fr_error_set(err, FR_EDATA, "ZSTD page: %s", ZSTD_getErrorName(got));
    }
    if (got != out_n)
        return wrong_size(err, DF__PQ_ZSTD, got, out_n);
    return FR_OK;
}

static int lz4_raw_dec(int codec, const uint8_t *in, size_t n, uint8_t *out, size_t out_n,
                       struct fr_error *err)
{
    if (n > INT_MAX || out_n > INT_MAX)
        return corrupt(err, codec, "page too large");
    char one;
    int got = LZ4_decompress_safe((const char *)in, out_n ? (char *)out : &one, (int)n, (int)out_n);
    if (got < 0)
        return corrupt(err, codec, "corrupt or truncated input");
    if ((size_t)got != out_n)
        return wrong_size(err, codec, (unsigned long long)got, out_n);
    return FR_OK;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Hadoop's BlockCompressorStream framing: blocks of a big-endian u32
 * uncompressed length, then chunks (u32 compressed length, raw LZ4) until
 * that many bytes came out. FR_OK only if the whole input is such blocks
 * and makes exactly out_n bytes; no message (the caller falls back). */
static int lz4_hadoop_dec(const uint8_t *in, size_t n, uint8_t *out, size_t out_n)
{
    size_t pos = 0, done = 0;
    while (pos < n) {
        if (n - pos < 4)
            return FR_EDATA;
        uint32_t block = be32(in + pos);
        pos += 4;
        if (block > out_n - done)
            return FR_EDATA;
        size_t block_end = done + block;
        while (done < block_end) {
            if (n - pos < 4)
                return FR_EDATA;
            uint32_t clen = be32(in + pos);
            pos += 4;
            if (clen > n - pos || clen > INT_MAX)
                return FR_EDATA;
            int got = LZ4_decompress_safe((const char *)in + pos, (char *)out + done, (int)clen,
                                          (int)(block_end - done));
            if (got <= 0)
                return FR_EDATA;
            done += (size_t)got;
            pos += clen;
        }
    }
    return done == out_n && n > 0 ? FR_OK : FR_EDATA;
}

int df__pq_decompress(int codec, const uint8_t *in, size_t n, uint8_t *out, size_t out_n,
                      struct fr_error *err)
{
    if (out_n > (uint64_t)DF__PQ_MAX_PAGE_BYTES || n > (uint64_t)DF__PQ_MAX_PAGE_BYTES)
        return fr_error_set(err, FR_EDATA, "page of %zu bytes is over the limit of %lld",
                            out_n > n ? out_n : n, (long long)DF__PQ_MAX_PAGE_BYTES);
    switch (codec) {
    case DF__PQ_UNCOMPRESSED:
        if (n != out_n)
            return wrong_size(err, codec, n, out_n);
        if (n)
            memcpy(out, in, n);
        return FR_OK;
    case DF__PQ_SNAPPY:
        return snappy_dec(in, n, out, out_n, err);
    case DF__PQ_GZIP:
        return gzip_dec(in, n, out, out_n, err);
    case DF__PQ_ZSTD:
        return zstd_dec(in, n, out, out_n, err);
    case DF__PQ_LZ4_RAW:
        return lz4_raw_dec(codec, in, n, out, out_n, err);
    case DF__PQ_LZ4:
        /* Hadoop framing first (parquet-mr, older Arrow), then a raw block
         * (what some writers put under this codec), as Arrow reads it. */
        if (out_n <= INT_MAX && lz4_hadoop_dec(in, n, out, out_n) == FR_OK)
            return FR_OK;
        return lz4_raw_dec(codec, in, n, out, out_n, err);
    default:
        return fr_error_setk(err, FR_EVALIDATION, "unsupported-parquet",
                             "compression %s is not supported (supported: UNCOMPRESSED, "
                             "SNAPPY, GZIP, ZSTD, LZ4, LZ4_RAW)",
                             df__pq_codec_name(codec));
    }
}

/* Room for `extra` more bytes (plus the NUL fr_buf keeps) without aborting
 * on a size that came from user data. */
static int buf_reserve(struct fr_buf *b, size_t extra, struct fr_error *err)
{
    if (extra > SIZE_MAX / 2 - b->len - 1)
        return fr_error_set(err, FR_ENOSPACE, "compressed page of %zu bytes is too large", extra);
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return FR_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = fr_try_realloc(b->data, cap);
    if (!p)
        return fr_error_set(err, FR_ENOSPACE, "out of memory compressing a page of %zu bytes",
                            extra);
    b->data = p;
    b->cap = cap;
    return FR_OK;
}

int df__pq_compress(int codec, const uint8_t *in, size_t n, struct fr_buf *out,
                    struct fr_error *err)
{
    size_t bound;
    switch (codec) {
    case DF__PQ_UNCOMPRESSED:
        bound = n;
        break;
    case DF__PQ_SNAPPY:
        bound = snappy_max_compressed_length(n);
        break;
    case DF__PQ_ZSTD:
        bound = ZSTD_compressBound(n);
        if (ZSTD_isError(bound))
            return fr_error_set(err, FR_ENOSPACE, "page of %zu bytes is too large", n);
        break;
    default:
        return fr_error_setk(err, FR_EVALIDATION, "unsupported-parquet",
                             "the writer cannot compress with %s", df__pq_codec_name(codec));
    }
    int rc = buf_reserve(out, bound, err);
    if (rc != FR_OK)
        return rc;
    char *dst = out->data + out->len;
    size_t len = bound;
    if (codec == DF__PQ_UNCOMPRESSED) {
        if (n)
            memcpy(dst, in, n);
    } else if (codec == DF__PQ_SNAPPY) {
        if (snappy_compress((const char *)in, n, dst, &len) != SNAPPY_OK)
            return fr_error_set(err, FR_EINTERNAL, "snappy could not compress a page");
    } else {
        len = ZSTD_compress(dst, bound, in, n, PQ_ZSTD_LEVEL);
        if (ZSTD_isError(len))
            return fr_error_set(err, FR_EINTERNAL, "zstd could not compress a page: %s",
                                ZSTD_getErrorName(len));
    }
    out->len += len;
    out->data[out->len] = '\0';
    return FR_OK;
}
