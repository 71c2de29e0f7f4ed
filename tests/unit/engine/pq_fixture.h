/* pq_fixture: small Parquet encoders written from Encodings.md for the
 * page decoder tests (varints, LSB-first bit packing, the RLE/bit-packed
 * hybrid, DELTA_*), bit by bit and independent of the decoders' code, and
 * a check that runs a decoder on every cut of an encoding. */
#ifndef FRAMED_TEST_PQ_FIXTURE_H
#define FRAMED_TEST_PQ_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "engine/engine_parquet_int.h"

static inline void pq_put_byte(struct fr_buf *b, uint8_t x)
{
    fr_buf_append(b, &x, 1);
}

static inline void pq_put_uvarint(struct fr_buf *b, uint64_t v)
{
    while (v >= 0x80) {
        pq_put_byte(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    pq_put_byte(b, (uint8_t)v);
}

static inline void pq_put_zigzag(struct fr_buf *b, int64_t v)
{
    uint64_t u = (uint64_t)v;
    pq_put_uvarint(b, (u << 1) ^ (0 - (u >> 63)));
}

static inline void pq_put_u32(struct fr_buf *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        pq_put_byte(b, (uint8_t)(v >> (8 * i)));
}

/* k values of w bits, LSB first, in ceil(k * w / 8) bytes. */
static inline void pq_pack_bits(struct fr_buf *b, const uint64_t *vals, size_t k, int w)
{
    size_t nbytes = (k * (size_t)w + 7) / 8;
    uint8_t *out = calloc(nbytes ? nbytes : 1, 1);
    for (size_t i = 0; i < k; i++)
        for (int j = 0; j < w; j++)
            if ((vals[i] >> j) & 1) {
                size_t bit = i * (size_t)w + (size_t)j;
                out[bit / 8] |= (uint8_t)(1u << (bit % 8));
            }
    fr_buf_append(b, out, nbytes);
    free(out);
}

static inline void pq_hyb_rle(struct fr_buf *b, uint32_t value, uint64_t run, int bw)
{
    pq_put_uvarint(b, run << 1);
    for (int i = 0; i < (bw + 7) / 8; i++)
        pq_put_byte(b, (uint8_t)(value >> (8 * i)));
}

/* groups * 8 values from vals. */
static inline void pq_hyb_packed(struct fr_buf *b, const uint32_t *vals, size_t groups, int bw)
{
    pq_put_uvarint(b, groups << 1 | 1);
    uint64_t *v = malloc(groups * 8 * sizeof(*v) + 1);
    for (size_t i = 0; i < groups * 8; i++)
        v[i] = vals[i];
    pq_pack_bits(b, v, groups * 8, bw);
    free(v);
}

static inline int pq_bits_of(uint64_t x)
{
    int w = 0;
    while (w < 64 && (x >> w) != 0)
        w++;
    return w;
}

/* DELTA_BINARY_PACKED of count values; i32 computes deltas in 32 bits as
 * INT32 writers do. Widths of unused miniblocks are `unused_width` (the
 * spec says readers accept anything there). */
static inline void pq_dbp_encode(struct fr_buf *b, const int64_t *vals, size_t count, size_t block,
                                 size_t mb, int i32, uint8_t unused_width)
{
    size_t vpm = block / mb;
    pq_put_uvarint(b, block);
    pq_put_uvarint(b, mb);
    pq_put_uvarint(b, count);
    pq_put_zigzag(b, count ? vals[0] : 0);
    uint64_t *rel = malloc(block * sizeof(*rel));
    for (size_t i = 1; i < count;) {
        size_t k = count - i < block ? count - i : block;
        int64_t min = INT64_MAX;
        for (size_t j = 0; j < k; j++) {
            uint64_t d = (uint64_t)vals[i + j] - (uint64_t)vals[i + j - 1];
            int64_t sd = i32 ? (int64_t)(int32_t)(uint32_t)d : (int64_t)d;
            rel[j] = (uint64_t)sd;
            min = sd < min ? sd : min;
        }
        for (size_t j = 0; j < block; j++)
            rel[j] = j < k ? rel[j] - (uint64_t)min : 0;
        if (i32)
            for (size_t j = 0; j < k; j++)
                rel[j] = (uint32_t)rel[j];
        pq_put_zigzag(b, min);
        uint8_t widths[64];
        for (size_t m = 0; m < mb; m++) {
            uint64_t max = 0;
            for (size_t j = m * vpm; j < (m + 1) * vpm && j < k; j++)
                max = rel[j] > max ? rel[j] : max;
            widths[m] = m * vpm < k ? (uint8_t)pq_bits_of(max) : unused_width;
            pq_put_byte(b, widths[m]);
        }
        for (size_t m = 0; m < mb && m * vpm < k; m++)
            pq_pack_bits(b, rel + m * vpm, vpm, widths[m]);
        i += k;
    }
    free(rel);
}

static inline void pq_dlba_encode(struct fr_buf *b, const char *const *strs, size_t count)
{
    int64_t *lens = malloc((count + 1) * sizeof(*lens));
    for (size_t i = 0; i < count; i++)
        lens[i] = (int64_t)strlen(strs[i]);
    pq_dbp_encode(b, lens, count, 128, 4, 1, 0);
    for (size_t i = 0; i < count; i++)
        fr_buf_puts(b, strs[i]);
    free(lens);
}

static inline void pq_dba_encode(struct fr_buf *b, const char *const *strs, size_t count)
{
    int64_t *pre = malloc((count + 1) * sizeof(*pre));
    const char **suf = malloc((count + 1) * sizeof(*suf));
    for (size_t i = 0; i < count; i++) {
        size_t p = 0;
        while (i && strs[i][p] && strs[i][p] == strs[i - 1][p])
            p++;
        pre[i] = (int64_t)p;
        suf[i] = strs[i] + p;
    }
    pq_dbp_encode(b, pre, count, 128, 4, 1, 0);
    pq_dlba_encode(b, suf, count);
    free(suf);
    free(pre);
}

/* new: a copy of p[0, n) in a block of exactly n bytes, so ASan sees any
 * read past the end. */
static inline uint8_t *pq_exact(const void *p, size_t n)
{
    uint8_t *q = malloc(n ? n : 1);
    memcpy(q, p, n);
    return q;
}

/* The bytes of v's value i (fixed or byte array), for comparisons. */
static inline const char *pq_value(const struct df__pq_values *v, int64_t i, size_t *len)
{
    if (v->type == DF__PQ_BYTE_ARRAY) {
        *len = (size_t)(v->offsets[i + 1] - v->offsets[i]);
        return v->data + v->offsets[i];
    }
    size_t size = v->type == DF__PQ_BOOLEAN                             ? 1
                  : v->type == DF__PQ_INT32 || v->type == DF__PQ_FLOAT  ? 4
                  : v->type == DF__PQ_INT64 || v->type == DF__PQ_DOUBLE ? 8
                  : v->type == DF__PQ_INT96                             ? 12
                                                                        : (size_t)v->type_length;
    *len = size;
    return (const char *)v->fixed + (size_t)i * size;
}

static inline int pq_values_equal(const struct df__pq_values *a, const struct df__pq_values *b)
{
    if (a->count != b->count)
        return 0;
    for (int64_t i = 0; i < a->count; i++) {
        size_t la, lb;
        const char *pa = pq_value(a, i, &la), *pb = pq_value(b, i, &lb);
        if (la != lb || (la && memcmp(pa, pb, la) != 0))
            return 0;
    }
    return 1;
}

/* Decodes every cut p[0, cut) (cut < n) and every single-byte corruption
 * of the full encoding: each must fail with FR_EDATA (or FR_ENOSPACE) and a
 * message, or succeed; a cut that succeeds gives the full decode's values.
 * The values struct is reused across calls, as the reader reuses it.
 * Returns how many cuts failed. */
static inline int pq_check_hostile(int encoding, int type, int type_length, const uint8_t *p,
                                   size_t n, int64_t count)
{
    struct df__pq_values full, v;
    df__pq_values_init(&full, type, type_length);
    df__pq_values_init(&v, type, type_length);
    struct fr_error err;
    fr_error_init(&err);
    int failed = 0;
    if (df__pq_decode_values(encoding, p, n, count, &full, &err) != FR_OK)
        abort();
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t *q = pq_exact(p, cut);
        fr_error_init(&err);
        int rc = df__pq_decode_values(encoding, q, cut, count, &v, &err);
        if (rc == FR_OK) {
            if (!pq_values_equal(&full, &v))
                abort();
        } else {
            if ((rc != FR_EDATA && rc != FR_ENOSPACE) || !err.message[0])
                abort();
            failed++;
        }
        free(q);
    }
    uint8_t *q = pq_exact(p, n);
    for (size_t i = 0; i < n; i++) {
        for (int flip = 1; flip < 256; flip <<= 1) {
            q[i] ^= (uint8_t)flip;
            int rc = df__pq_decode_values(encoding, q, n, count, &v, &err);
            if (rc != FR_OK && rc != FR_EDATA && rc != FR_ENOSPACE)
                abort();
            q[i] ^= (uint8_t)flip;
        }
    }
    free(q);
    df__pq_values_cleanup(&v);
    df__pq_values_cleanup(&full);
    return failed;
}

#endif
