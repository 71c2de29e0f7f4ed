/* engine_parquet_delta: the DELTA_* encodings of Parquet's Encodings.md:
 * DELTA_BINARY_PACKED (INT32, INT64, and the lengths of the other two),
 * DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY. A stream is first walked
 * (headers and bit widths only) to check that its bytes hold the values,
 * then decoded; arithmetic wraps in uint64 as the spec's does. */
#include "engine/engine_parquet_decode_int.h"

#include <stdlib.h>
#include <string.h>

/* Generous bounds on a block: writers use 128 to a few thousand values. */
#define DBP_MAX_BLOCK ((uint64_t)1 << 20)

struct dbp {
    uint64_t block_size, miniblocks, total;
    uint64_t first; /* the first value, as bits */
    size_t vpm;     /* values per miniblock */
    size_t start;   /* the first block's offset */
    size_t end;     /* the offset just past the stream (dbp_scan) */
};

static uint64_t unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

static int dbp_header(const uint8_t *p, size_t n, struct dbp *d, struct fr_error *err)
{
    size_t pos = 0;
    uint64_t z;
    memset(d, 0, sizeof(*d));
    if (df__pq_uvarint(p, n, &pos, &d->block_size) != FR_OK ||
        df__pq_uvarint(p, n, &pos, &d->miniblocks) != FR_OK ||
        df__pq_uvarint(p, n, &pos, &d->total) != FR_OK || df__pq_uvarint(p, n, &pos, &z) != FR_OK)
        return fr_error_set(err, FR_EDATA, "DELTA_BINARY_PACKED header is cut off or corrupt");
    if (d->block_size == 0 || d->block_size % 128 != 0 || d->block_size > DBP_MAX_BLOCK)
        return fr_error_set(err, FR_EDATA,
                            "DELTA_BINARY_PACKED block size %llu is not a multiple of 128 "
                            "(at most %llu)",
                            (unsigned long long)d->block_size, (unsigned long long)DBP_MAX_BLOCK);
    if (d->miniblocks == 0 || d->block_size % d->miniblocks != 0 ||
        (d->block_size / d->miniblocks) % 32 != 0)
        return fr_error_set(err, FR_EDATA,
                            "DELTA_BINARY_PACKED: %llu miniblocks do not split a block of %llu "
                            "into multiples of 32 values",
                            (unsigned long long)d->miniblocks, (unsigned long long)d->block_size);
    d->vpm = (size_t)(d->block_size / d->miniblocks);
    d->first = unzigzag(z);
    d->start = pos;
    return FR_OK;
}

/* Walks the blocks of d->total values; sets d->end. Each block takes at
 * least one byte and one value, so this ends within n steps. */
static int dbp_scan(const uint8_t *p, size_t n, struct dbp *d, struct fr_error *err)
{
    size_t pos = d->start;
    uint64_t left = d->total ? d->total - 1 : 0, z;
    while (left > 0) {
        if (df__pq_uvarint(p, n, &pos, &z) != FR_OK)
            return fr_error_set(err, FR_EDATA,
                                "DELTA_BINARY_PACKED block header is cut off or corrupt "
                                "(%llu values missing)",
                                (unsigned long long)left);
        if (d->miniblocks > n - pos)
            return fr_error_set(err, FR_EDATA, "DELTA_BINARY_PACKED bit widths are cut off");
        const uint8_t *widths = p + pos;
        pos += (size_t)d->miniblocks;
        for (size_t m = 0; m < d->miniblocks && left > 0; m++) {
            if (widths[m] > 64)
                return fr_error_set(err, FR_EDATA,
                                    "DELTA_BINARY_PACKED miniblock bit width %d is over 64",
                                    widths[m]);
            size_t bytes = d->vpm * widths[m] / 8;
            if (bytes > n - pos)
                return fr_error_set(err, FR_EDATA,
                                    "DELTA_BINARY_PACKED miniblock of %zu bytes is cut off", bytes);
            pos += bytes;
            left -= left < d->vpm ? left : d->vpm;
        }
    }
    d->end = pos;
    return FR_OK;
}

/* Header and walk, and the count checked against the header's total. */
static int dbp_open(const uint8_t *p, size_t n, int64_t count, struct dbp *d, struct fr_error *err)
{
    int rc = dbp_header(p, n, d, err);
    if (rc != FR_OK)
        return rc;
    if (d->total < (uint64_t)count)
        return fr_error_set(err, FR_EDATA,
                            "DELTA_BINARY_PACKED holds %llu values, the page needs %lld",
                            (unsigned long long)d->total, (long long)count);
    return dbp_scan(p, n, d, err);
}

/* Decodes the first count values of a scanned stream (so every read is in
 * bounds) into o64 or o32. */
static void dbp_decode(const uint8_t *p, size_t n, const struct dbp *d, int64_t count, int64_t *o64,
                       int32_t *o32)
{
    if (count == 0)
        return;
    uint64_t last = d->first, deltas[32];
    if (o64)
        o64[0] = (int64_t)last;
    else
        o32[0] = (int32_t)(uint32_t)last;
    int64_t i = 1;
    size_t pos = d->start;
    while (i < count) {
        uint64_t z;
        (void)df__pq_uvarint(p, n, &pos, &z);
        const uint64_t min_delta = unzigzag(z);
        const uint8_t *widths = p + pos;
        pos += (size_t)d->miniblocks;
        for (size_t m = 0; m < d->miniblocks && i < count; m++) {
            const int w = widths[m];
            for (size_t c = 0; c < d->vpm && i < count; c += 32) {
                int64_t k = count - i < 32 ? count - i : 32;
                size_t off = c * (size_t)w / 8;
                /* loads may reach past the miniblock, not past the page */
                df__pq_unpack64(p + pos + off, n - pos - off, w, deltas, k);
                if (o64)
                    for (int64_t j = 0; j < k; j++) {
                        last += min_delta + deltas[j];
                        o64[i + j] = (int64_t)last;
                    }
                else
                    for (int64_t j = 0; j < k; j++) {
                        last += min_delta + deltas[j];
                        o32[i + j] = (int32_t)(uint32_t)last; /* INT32 wraps at 32 bits */
                    }
                i += k;
            }
            pos += d->vpm * (size_t)w / 8;
        }
    }
}

int df__pq_decode_delta_binary(const uint8_t *p, size_t n, int64_t count, struct df__pq_values *v,
                               struct fr_error *err)
{
    struct dbp d;
    int rc = dbp_open(p, n, count, &d, err);
    size_t size = v->type == DF__PQ_INT32 ? 4 : 8;
    if (rc == FR_OK)
        rc = df__pq_grow_fixed(v, (size_t)count * size, err);
    if (rc != FR_OK)
        return rc;
    dbp_decode(p, n, &d, count, size == 8 ? v->fixed : NULL, size == 4 ? v->fixed : NULL);
    return FR_OK;
}

/* DELTA_LENGTH_BYTE_ARRAY's lengths: into v->offsets as count + 1 offsets
 * (from 0), each length checked against the bytes after the lengths.
 * *data gets the offset of the concatenated values in p. */
static int dlba_lengths(const uint8_t *p, size_t n, int64_t count, struct df__pq_values *v,
                        size_t *data, struct fr_error *err)
{
    struct dbp d;
    int rc = dbp_open(p, n, count, &d, err);
    if (rc == FR_OK)
        rc = df__pq_grow_offsets(v, (size_t)count + 1, err);
    if (rc != FR_OK)
        return rc;
    int64_t *off = v->offsets;
    dbp_decode(p, n, &d, count, off + 1, NULL);
    off[0] = 0;
    uint64_t sum = 0, avail = n - d.end;
    for (int64_t i = 1; i <= count; i++) {
        int64_t len = off[i];
        if (len < 0 || (uint64_t)len > avail - sum)
            return fr_error_set(err, FR_EDATA,
                                "DELTA_LENGTH_BYTE_ARRAY: value %lld has length %lld, only "
                                "%llu bytes are left",
                                (long long)i - 1, (long long)len,
                                (unsigned long long)(avail - sum));
        sum += (uint64_t)len;
        off[i] = (int64_t)sum;
    }
    *data = d.end;
    return FR_OK;
}

/* FIXED_LEN_BYTE_ARRAY values decoded as byte arrays: each must have the
 * column's length; they move into v->fixed. */
static int to_fixed(const char *enc, const char *bytes, int64_t count, struct df__pq_values *v,
                    struct fr_error *err)
{
    const int64_t tl = v->type_length;
    for (int64_t i = 0; i < count; i++)
        if (v->offsets[i + 1] - v->offsets[i] != tl)
            return fr_error_set(
                err, FR_EDATA, "%s: value %lld is %lld bytes long, the column's values are %lld",
                enc, (long long)i, (long long)(v->offsets[i + 1] - v->offsets[i]), (long long)tl);
    int rc = df__pq_grow_fixed(v, (size_t)(count * tl), err);
    if (rc == FR_OK && count)
        memcpy(v->fixed, bytes, (size_t)(count * tl));
    v->data_len = 0;
    return rc;
}

int df__pq_decode_delta_length(const uint8_t *p, size_t n, int64_t count, struct df__pq_values *v,
                               struct fr_error *err)
{
    size_t data = 0; /* set by dlba_lengths; gcc -O3 cannot see it */
    int rc = dlba_lengths(p, n, count, v, &data, err);
    if (rc != FR_OK)
        return rc;
    size_t total = (size_t)v->offsets[count];
    if (v->type == DF__PQ_FIXED_LEN_BYTE_ARRAY)
        return to_fixed("DELTA_LENGTH_BYTE_ARRAY", (const char *)p + data, count, v, err);
    rc = df__pq_grow_data(v, total + 1, err);
    if (rc != FR_OK)
        return rc;
    if (total)
        memcpy(v->data, p + data, total);
    v->data_len = total;
    return FR_OK;
}

/* The total length of the values of DELTA_BYTE_ARRAY, each prefix checked
 * against the value before it; v->offsets holds the suffixes' offsets. */
static int dba_total(const int64_t *prefix, int64_t count, const struct df__pq_values *v,
                     size_t *total, struct fr_error *err)
{
    uint64_t sum = 0, prev = 0;
    for (int64_t i = 0; i < count; i++) {
        if (prefix[i] < 0 || (uint64_t)prefix[i] > prev)
            return fr_error_set(err, FR_EDATA,
                                "DELTA_BYTE_ARRAY: prefix length %lld of value %lld is longer "
                                "than the value before it (%llu bytes)",
                                (long long)prefix[i], (long long)i, (unsigned long long)prev);
        prev = (uint64_t)prefix[i] + (uint64_t)(v->offsets[i + 1] - v->offsets[i]);
        sum += prev;
        if (sum > (uint64_t)DF__PQ_MAX_PAGE_BYTES)
            return fr_error_set(err, FR_ENOSPACE,
                                "DELTA_BYTE_ARRAY: the page's values are over %lld bytes",
                                (long long)DF__PQ_MAX_PAGE_BYTES);
    }
    *total = (size_t)sum;
    return FR_OK;
}

/* Rebuilds the values in v->data and turns v->offsets from the suffixes'
 * offsets into the values' (in place: entry i is read before it is
 * rewritten). */
static void dba_build(const int64_t *prefix, const char *suffixes, int64_t count,
                      struct df__pq_values *v)
{
    int64_t *off = v->offsets, suf_start = 0;
    char *out = v->data;
    for (int64_t i = 0; i < count; i++) {
        int64_t suf_end = off[i + 1], pos = off[i];
        if (prefix[i]) /* i > 0: the first value's prefix is 0 (dba_total) */
            memcpy(out + pos, out + off[i - 1], (size_t)prefix[i]);
        memcpy(out + pos + prefix[i], suffixes + suf_start, (size_t)(suf_end - suf_start));
        off[i + 1] = pos + prefix[i] + (suf_end - suf_start);
        suf_start = suf_end;
    }
    v->data_len = (size_t)off[count];
}

int df__pq_decode_delta_byte_array(const uint8_t *p, size_t n, int64_t count,
                                   struct df__pq_values *v, struct fr_error *err)
{
    struct dbp d;
    size_t data = 0, total = 0;
    int rc = dbp_open(p, n, count, &d, err);
    if (rc != FR_OK)
        return rc;
    int64_t prefix_bytes = (count ? count : 1) * (int64_t)sizeof(int64_t);
    if ((rc = df__pq_values_charge(v, prefix_bytes, err)) != FR_OK)
        return rc;
    int64_t *prefix = fr_try_malloc((size_t)prefix_bytes);
    if (!prefix)
        return fr_error_set(err, FR_ENOSPACE, "out of memory decoding %lld prefix lengths",
                            (long long)count);
    dbp_decode(p, n, &d, count, prefix, NULL);
    const uint8_t *sp = p + d.end;
    rc = dlba_lengths(sp, n - d.end, count, v, &data, err);
    if (rc == FR_OK)
        rc = dba_total(prefix, count, v, &total, err);
    if (rc == FR_OK)
        rc = df__pq_grow_data(v, total + 1, err);
    if (rc == FR_OK) {
        dba_build(prefix, (const char *)sp + data, count, v);
        if (v->type == DF__PQ_FIXED_LEN_BYTE_ARRAY)
            rc = to_fixed("DELTA_BYTE_ARRAY", v->data, count, v, err);
    }
    free(prefix);
    struct fr_error ignored;
    fr_error_init(&ignored);
    df__pq_values_charge(v, -prefix_bytes, &ignored);
    return rc;
}
