/* fuzz_parquet_page: a Parquet page's bytes through the codecs and the page
 * decoders (engine_parquet_codec.c, engine_parquet_decode.c,
 * engine_parquet_delta.c). The first 10 bytes choose how the rest is read:
 *   0 encoding, 1 physical type, 2 type_length, 3-4 value count (LE, at
 *   most 8192), 5 codec (bit 7: also round-trip the page through the
 *   writer's compressor), 6 bit width, 7-8 decompressed size (LE), 9 the
 *   dictionary's size.
 * The page is decompressed to exactly that size (a buffer of that size, so
 * ASan sees any write past it), then decoded as values, as hybrid levels
 * and as dictionary indices, raw and decompressed. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_parquet_int.h"
#include "fuzz_util.h"

#define HDR 10
#define MAX_COUNT 8192

static void check_values(const struct df__pq_values *v, int64_t count)
{
    FUZZ_CHECK(v->count == count);
    if (v->type != DF__PQ_BYTE_ARRAY)
        return;
    FUZZ_CHECK(v->offsets[0] == 0);
    for (int64_t i = 0; i < count; i++)
        FUZZ_CHECK(v->offsets[i] <= v->offsets[i + 1]);
    FUZZ_CHECK((size_t)v->offsets[count] == v->data_len);
}

static void decode_all(const uint8_t *hdr, const uint8_t *p, size_t n, struct df__pq_values *v)
{
    const int64_t count = (hdr[3] | hdr[4] << 8) % (MAX_COUNT + 1);
    struct fr_error err;
    fr_error_init(&err);
    int rc = df__pq_decode_values(hdr[0] % 11, p, n, count, v, &err);
    if (rc == FR_OK)
        check_values(v, count);
    else
        FUZZ_CHECK(err.message[0] != '\0');
    uint32_t *idx = malloc((size_t)(count ? count : 1) * sizeof(*idx));
    FUZZ_CHECK(idx != NULL);
    size_t used = 0;
    rc = df__pq_rle_decode(p, n, hdr[6] % 34, idx, count, &used, &err);
    FUZZ_CHECK(used <= n);
    if (rc == FR_OK && hdr[6] % 34 < 32)
        for (int64_t i = 0; i < count; i++)
            FUZZ_CHECK(idx[i] >> (hdr[6] % 34) == 0);
    const int64_t dict_count = hdr[9];
    if (df__pq_decode_dict_indices(p, n, count, dict_count, idx, &err) == FR_OK)
        for (int64_t i = 0; i < count; i++)
            FUZZ_CHECK((int64_t)idx[i] < dict_count);
    free(idx);
}

/* The writer's compressors must give back what they were given. */
static void round_trip(int codec, const uint8_t *p, size_t n)
{
    struct fr_buf c;
    fr_buf_init(&c);
    if (df__pq_compress(codec, p, n, &c, NULL) == FR_OK) {
        uint8_t *back = malloc(n ? n : 1);
        FUZZ_CHECK(back != NULL);
        FUZZ_CHECK(df__pq_decompress(codec, (const uint8_t *)c.data, c.len, back, n, NULL) ==
                   FR_OK);
        FUZZ_CHECK(n == 0 || memcmp(back, p, n) == 0);
        free(back);
    }
    fr_buf_cleanup(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HDR)
        return 0;
    const uint8_t *hdr = data, *page = data + HDR;
    const size_t n = size - HDR, out_n = (size_t)(hdr[7] | hdr[8] << 8);
    const int codec = hdr[5] & 0x7f;
    struct df__pq_values v;
    df__pq_values_init(&v, hdr[1] % 9, hdr[2] % 17);
    /* the page exactly sized, so a read past its end is seen */
    uint8_t *raw = malloc(n ? n : 1);
    FUZZ_CHECK(raw != NULL);
    memcpy(raw, page, n);
    decode_all(hdr, raw, n, &v);
    uint8_t *out = malloc(out_n ? out_n : 1);
    FUZZ_CHECK(out != NULL);
    struct fr_error err;
    fr_error_init(&err);
    int rc = df__pq_decompress(codec, raw, n, out, out_n, &err);
    if (rc == FR_OK)
        decode_all(hdr, out, out_n, &v); /* v is reused, as the reader does */
    else
        FUZZ_CHECK(err.message[0] != '\0' && (rc == FR_EDATA || rc == FR_EVALIDATION));
    if (hdr[5] & 0x80)
        round_trip(codec % 2 ? DF__PQ_SNAPPY : DF__PQ_ZSTD, raw, n);
    free(out);
    free(raw);
    df__pq_values_cleanup(&v);
    return 0;
}
