/* engine_parquet_decode: turns a page's (decompressed) bytes into values:
 * the RLE/bit-packed hybrid (levels, dictionary indices, booleans), PLAIN
 * for every physical type, BYTE_STREAM_SPLIT, and the dispatch to the
 * DELTA_* decoders of engine_parquet_delta.c. The input is hostile: every
 * size is checked against the bytes before anything is allocated by it.
 * INT96 is decoded (PLAIN only) as 12 raw bytes per value in `fixed`. */
#include "engine/engine_parquet_decode_int.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the Parquet decoders copy little-endian values as they are");

static const char *encoding_name(int e)
{
    static const char *names[] = {
        "PLAIN",          "encoding 1",          "PLAIN_DICTIONARY",        "RLE",
        "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
        "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return e >= 0 && e < (int)(sizeof(names) / sizeof(names[0])) ? names[e] : "an unknown encoding";
}

static const char *type_name(int t)
{
    static const char *names[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                  "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return t >= 0 && t < (int)(sizeof(names) / sizeof(names[0])) ? names[t] : "unknown";
}

/* ---- buffers ------------------------------------------------------------ */

void df__pq_values_init(struct df__pq_values *v, int type, int type_length)
{
    memset(v, 0, sizeof(*v));
    v->type = type;
    v->type_length = type_length;
}

void df__pq_values_cleanup(struct df__pq_values *v)
{
    free(v->fixed);
    free(v->offsets);
    free(v->data);
    df__pq_values_init(v, v->type, v->type_length);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem, struct fr_error *err)
{
    if (need <= *cap)
        return FR_OK;
    if (need > SIZE_MAX / elem / 2)
        return fr_error_set(err, FR_ENOSPACE, "a page needs %zu values: too many", need);
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = fr_try_realloc(*p, n * elem);
    if (!q)
        return fr_error_set(err, FR_ENOSPACE, "out of memory decoding a page (%zu bytes)",
                            n * elem);
    *p = q;
    *cap = n;
    return FR_OK;
}

int df__pq_grow_fixed(struct df__pq_values *v, size_t bytes, struct fr_error *err)
{
    return grow(&v->fixed, &v->fixed_cap, bytes, 1, err);
}

int df__pq_grow_offsets(struct df__pq_values *v, size_t entries, struct fr_error *err)
{
    return grow((void **)&v->offsets, &v->offsets_cap, entries, sizeof(int64_t), err);
}

int df__pq_grow_data(struct df__pq_values *v, size_t bytes, struct fr_error *err)
{
    return grow((void **)&v->data, &v->data_cap, bytes, 1, err);
}

/* ---- varints and bits --------------------------------------------------- */

int df__pq_uvarint(const uint8_t *p, size_t n, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= n)
            return FR_EDATA;
        uint8_t b = p[(*pos)++];
        if (shift == 63 && b > 1)
            return FR_EDATA;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return FR_OK;
        }
    }
    return FR_EDATA;
}

/* Up to 8 little-endian bytes at p, of which avail (>= 1) exist; the
 * common case is one fixed-size load. */
static inline uint64_t load_le64(const uint8_t *p, size_t avail)
{
    uint64_t v = 0;
    if (avail >= 8)
        memcpy(&v, p, 8);
    else
        memcpy(&v, p, avail);
    return v;
}

void df__pq_unpack64(const uint8_t *p, size_t nbytes, int w, uint64_t *out, int64_t k)
{
    if (w == 0) {
        memset(out, 0, (size_t)k * sizeof(*out));
        return;
    }
    const uint64_t mask = w == 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1;
    uint64_t bit = 0;
    for (int64_t i = 0; i < k; i++, bit += (uint64_t)w) {
        size_t byte = (size_t)(bit >> 3);
        unsigned shift = (unsigned)(bit & 7);
        uint64_t x = load_le64(p + byte, nbytes - byte) >> shift;
        if (shift + (unsigned)w > 64) /* the value's last bits are in the 9th byte */
            x |= (uint64_t)p[byte + 8] << (64 - shift);
        out[i] = x & mask;
    }
}

/* Eight values of w bits (a constant where it is inlined) from the w
 * bytes at p, of which at least w + 8 can be loaded. */
static inline __attribute__((always_inline)) void unpack8(const uint8_t *p, const int w,
                                                          uint32_t *out)
{
    const uint64_t mask = ((uint64_t)1 << w) - 1;
    for (int i = 0; i < 8; i++) {
        uint64_t x;
        memcpy(&x, p + ((unsigned)(i * w) >> 3), 8);
        out[i] = (uint32_t)((x >> ((unsigned)(i * w) & 7)) & mask);
    }
}

/* The whole groups of 8 that have 8 bytes of slack after them; advances
 * *i (values) and *g (bytes). */
static inline __attribute__((always_inline)) void unpack_run(const uint8_t *p, size_t nbytes,
                                                             const int w, uint32_t *out, int64_t k,
                                                             int64_t *i, size_t *g)
{
    for (; *i + 8 <= k && *g + (size_t)w + 8 <= nbytes; *i += 8, *g += (size_t)w)
        unpack8(p + *g, w, out + *i);
}

/* unpack_run with the width a constant (shifts and masks too) for the
 * widths of levels and of most dictionaries' indices. */
static void unpack_groups(const uint8_t *p, size_t nbytes, int w, uint32_t *out, int64_t k,
                          int64_t *i, size_t *g)
{
    switch (w) {
    case 1:
        unpack_run(p, nbytes, 1, out, k, i, g);
        break;
    case 2:
        unpack_run(p, nbytes, 2, out, k, i, g);
        break;
    case 3:
        unpack_run(p, nbytes, 3, out, k, i, g);
        break;
    case 4:
        unpack_run(p, nbytes, 4, out, k, i, g);
        break;
    case 5:
        unpack_run(p, nbytes, 5, out, k, i, g);
        break;
    case 6:
        unpack_run(p, nbytes, 6, out, k, i, g);
        break;
    case 7:
        unpack_run(p, nbytes, 7, out, k, i, g);
        break;
    case 8:
        unpack_run(p, nbytes, 8, out, k, i, g);
        break;
    case 9:
        unpack_run(p, nbytes, 9, out, k, i, g);
        break;
    case 10:
        unpack_run(p, nbytes, 10, out, k, i, g);
        break;
    case 11:
        unpack_run(p, nbytes, 11, out, k, i, g);
        break;
    case 12:
        unpack_run(p, nbytes, 12, out, k, i, g);
        break;
    case 13:
        unpack_run(p, nbytes, 13, out, k, i, g);
        break;
    case 14:
        unpack_run(p, nbytes, 14, out, k, i, g);
        break;
    case 15:
        unpack_run(p, nbytes, 15, out, k, i, g);
        break;
    case 16:
        unpack_run(p, nbytes, 16, out, k, i, g);
        break;
    default:
        unpack_run(p, nbytes, w, out, k, i, g);
        break;
    }
}

/* w <= 32: one 64-bit load always holds the value (shift + w <= 39). */
static void unpack32(const uint8_t *p, size_t nbytes, int w, uint32_t *out, int64_t k)
{
    if (w == 0) {
        memset(out, 0, (size_t)k * sizeof(*out));
        return;
    }
    int64_t done = 0;
    size_t g = 0;
    unpack_groups(p, nbytes, w, out, k, &done, &g);
    p += g;
    nbytes -= g;
    out += done;
    k -= done;
    const uint64_t mask = ((uint64_t)1 << w) - 1;
    uint64_t bit = 0;
    for (int64_t i = 0; i < k; i++, bit += (uint64_t)w) {
        size_t byte = (size_t)(bit >> 3);
        out[i] = (uint32_t)((load_le64(p + byte, nbytes - byte) >> (bit & 7)) & mask);
    }
}

static void unpack_bools(const uint8_t *p, uint8_t *out, int64_t k)
{
    for (int64_t i = 0; i < k; i++)
        out[i] = (uint8_t)((p[i >> 3] >> (i & 7)) & 1);
}

/* ---- the RLE/bit-packed hybrid ------------------------------------------ */

/* Decodes count values into o32, or (bit width 1) into o8, or with both
 * NULL only checks that the bytes hold them. */
static int hybrid(const uint8_t *p, size_t n, int bw, int64_t count, uint32_t *o32, uint8_t *o8,
                  size_t *used, struct fr_error *err)
{
    const size_t vbytes = ((size_t)bw + 7) / 8;
    size_t pos = 0;
    int64_t got = 0;
    while (got < count) {
        uint64_t h;
        if (pos >= n)
            return fr_error_set(err, FR_EDATA, "RLE/bit-packed data ends after %lld of %lld values",
                                (long long)got, (long long)count);
        if (df__pq_uvarint(p, n, &pos, &h) != FR_OK || h > UINT32_MAX)
            return fr_error_set(err, FR_EDATA, "RLE/bit-packed run header is not a valid varint");
        int64_t left = count - got, k;
        if (h & 1) { /* (h >> 1) groups of 8 values, bw bytes per group */
            uint64_t vals = (h >> 1) * 8, bytes = (h >> 1) * (uint64_t)bw;
            k = (uint64_t)left < vals ? left : (int64_t)vals;
            size_t need = (size_t)(((uint64_t)k * (uint64_t)bw + 7) / 8), have = n - pos;
            if (need > have)
                return fr_error_set(err, FR_EDATA,
                                    "bit-packed run of %llu values at width %d needs %zu bytes, "
                                    "%zu are left",
                                    (unsigned long long)vals, bw, need, have);
            size_t run = bytes < have ? (size_t)bytes : have;
            if (o32) /* the bytes after the run may be loaded, never used */
                unpack32(p + pos, have, bw, o32 + got, k);
            else if (o8)
                unpack_bools(p + pos, o8 + got, k);
            pos += run;
        } else {
            if (vbytes > n - pos)
                return fr_error_set(err, FR_EDATA, "RLE run value is cut off");
            uint32_t value = 0;
            for (size_t b = 0; b < vbytes; b++)
                value |= (uint32_t)p[pos + b] << (8 * b);
            pos += vbytes;
            if (bw < 32 && (value >> bw) != 0)
                return fr_error_set(err, FR_EDATA, "RLE run value %u does not fit in %d bits",
                                    value, bw);
            k = (uint64_t)left < (h >> 1) ? left : (int64_t)(h >> 1);
            if (o32)
                for (int64_t i = 0; i < k; i++)
                    o32[got + i] = value;
            else if (o8)
                memset(o8 + got, (int)value, (size_t)k);
        }
        got += k;
    }
    if (used)
        *used = pos;
    return FR_OK;
}

int df__pq_rle_decode(const uint8_t *p, size_t n, int bit_width, uint32_t *out, int64_t count,
                      size_t *used, struct fr_error *err)
{
    if (used)
        *used = 0;
    if (bit_width < 0 || bit_width > 32)
        return fr_error_set(err, FR_EDATA, "RLE/bit-packed bit width %d is over 32", bit_width);
    if (count < 0)
        return fr_error_set(err, FR_EDATA, "negative value count %lld", (long long)count);
    if (bit_width == 0) {
        memset(out, 0, (size_t)count * sizeof(*out));
        return FR_OK;
    }
    return hybrid(p, n, bit_width, count, out, NULL, used, err);
}

int df__pq_decode_dict_indices(const uint8_t *p, size_t n, int64_t count, int64_t dict_count,
                               uint32_t *out, struct fr_error *err)
{
    if (count <= 0)
        return count == 0
                   ? FR_OK
                   : fr_error_set(err, FR_EDATA, "negative value count %lld", (long long)count);
    if (n < 1)
        return fr_error_set(err, FR_EDATA, "dictionary indices: the bit width byte is missing");
    if (dict_count <= 0)
        return fr_error_set(err, FR_EDATA, "dictionary indices without a dictionary");
    int rc = df__pq_rle_decode(p + 1, n - 1, p[0], out, count, NULL, err);
    if (rc != FR_OK)
        return rc;
    uint32_t max = 0;
    for (int64_t i = 0; i < count; i++)
        max = out[i] > max ? out[i] : max;
    if ((int64_t)max < dict_count)
        return FR_OK;
    int64_t at = 0;
    while ((int64_t)out[at] < dict_count)
        at++;
    return fr_error_set(err, FR_EDATA,
                        "dictionary index %u (value %lld) is past the dictionary's %lld entries",
                        out[at], (long long)at, (long long)dict_count);
}

/* ---- PLAIN, RLE booleans, BYTE_STREAM_SPLIT ----------------------------- */

/* Bytes per value in `fixed`; 0 for BYTE_ARRAY, -1 for an unknown type. */
static int fixed_size(const struct df__pq_values *v)
{
    switch (v->type) {
    case DF__PQ_BOOLEAN:
        return 1;
    case DF__PQ_INT32:
    case DF__PQ_FLOAT:
        return 4;
    case DF__PQ_INT64:
    case DF__PQ_DOUBLE:
        return 8;
    case DF__PQ_INT96:
        return 12;
    case DF__PQ_FIXED_LEN_BYTE_ARRAY:
        return v->type_length;
    case DF__PQ_BYTE_ARRAY:
        return 0;
    default:
        return -1;
    }
}

static int too_short(struct fr_error *err, const char *enc, int64_t count, const char *type,
                     size_t n)
{
    return fr_error_set(err, FR_EDATA, "%s: %zu bytes cannot hold %lld %s values", enc, n,
                        (long long)count, type);
}

static int plain_byte_array(const uint8_t *p, size_t n, int64_t count, struct df__pq_values *v,
                            struct fr_error *err)
{
    if ((uint64_t)count > n / 4)
        return too_short(err, "PLAIN", count, "BYTE_ARRAY", n);
    int rc = df__pq_grow_offsets(v, (size_t)count + 1, err);
    if (rc == FR_OK)
        rc = df__pq_grow_data(v, n - 4 * (size_t)count + 1, err);
    if (rc != FR_OK)
        return rc;
    size_t pos = 0, len = 0;
    v->offsets[0] = 0;
    for (int64_t i = 0; i < count; i++) {
        if (n - pos < 4)
            return too_short(err, "PLAIN", count, "BYTE_ARRAY", n);
        uint32_t k;
        memcpy(&k, p + pos, 4);
        pos += 4;
        /* the values after it need their 4-byte lengths: data stays within n - 4 * count */
        if (k > n - pos || n - pos - k < 4 * (size_t)(count - i - 1))
            return fr_error_set(err, FR_EDATA,
                                "PLAIN: value %lld is %u bytes long, only %zu bytes are left",
                                (long long)i, k, n - pos);
        memcpy(v->data + len, p + pos, k);
        pos += k;
        len += k;
        v->offsets[i + 1] = (int64_t)len;
    }
    v->data_len = len;
    return FR_OK;
}

static int plain(const uint8_t *p, size_t n, int64_t count, struct df__pq_values *v,
                 struct fr_error *err)
{
    if (v->type == DF__PQ_BYTE_ARRAY)
        return plain_byte_array(p, n, count, v, err);
    if (v->type == DF__PQ_BOOLEAN) {
        if ((uint64_t)count > (uint64_t)n * 8)
            return too_short(err, "PLAIN", count, "BOOLEAN", n);
        int rc = df__pq_grow_fixed(v, (size_t)count, err);
        if (rc == FR_OK)
            unpack_bools(p, v->fixed, count);
        return rc;
    }
    size_t size = (size_t)fixed_size(v);
    if ((uint64_t)count > n / size)
        return too_short(err, "PLAIN", count, type_name(v->type), n);
    int rc = df__pq_grow_fixed(v, (size_t)count * size, err);
    if (rc == FR_OK && count)
        memcpy(v->fixed, p, (size_t)count * size);
    return rc;
}

/* A 4-byte length, then the hybrid at bit width 1. */
static int rle_booleans(const uint8_t *p, size_t n, int64_t count, struct df__pq_values *v,
                        struct fr_error *err)
{
    uint32_t len;
    if (n < 4)
        return fr_error_set(err, FR_EDATA, "RLE booleans: the 4-byte length is missing");
    memcpy(&len, p, 4);
    if (len > n - 4)
        return fr_error_set(err, FR_EDATA, "RLE booleans: length %u is past the page's end", len);
    /* check that the runs hold count values before allocating for them */
    int rc = hybrid(p + 4, len, 1, count, NULL, NULL, NULL, err);
    if (rc == FR_OK)
        rc = df__pq_grow_fixed(v, (size_t)count, err);
    if (rc == FR_OK)
        rc = hybrid(p + 4, len, 1, count, NULL, v->fixed, NULL, err);
    return rc;
}

/* k byte streams of `stride` bytes each: byte j of value i is at
 * p[j * stride + i]. The stride is the number of values encoded. */
static int byte_stream_split(const uint8_t *p, size_t n, int64_t count, struct df__pq_values *v,
                             struct fr_error *err)
{
    size_t k = (size_t)fixed_size(v);
    if (n % k != 0)
        return fr_error_set(err, FR_EDATA,
                            "BYTE_STREAM_SPLIT: %zu bytes are not a whole number of %zu-byte "
                            "values",
                            n, k);
    size_t stride = n / k;
    if ((uint64_t)count > stride)
        return too_short(err, "BYTE_STREAM_SPLIT", count, type_name(v->type), n);
    int rc = df__pq_grow_fixed(v, (size_t)count * k, err);
    if (rc != FR_OK || count == 0)
        return rc;
    uint8_t *out = v->fixed;
    for (size_t j = 0; j < k; j++) {
        const uint8_t *s = p + j * stride;
        for (size_t i = 0; i < (size_t)count; i++)
            out[i * k + j] = s[i];
    }
    return FR_OK;
}

/* ---- the dispatch -------------------------------------------------------- */

static bool type_takes(int encoding, int type)
{
    switch (encoding) {
    case DF__PQ_PLAIN:
        return true;
    case DF__PQ_RLE:
        return type == DF__PQ_BOOLEAN;
    case DF__PQ_DELTA_BINARY_PACKED:
        return type == DF__PQ_INT32 || type == DF__PQ_INT64;
    case DF__PQ_DELTA_LENGTH_BYTE_ARRAY:
    case DF__PQ_DELTA_BYTE_ARRAY:
        return type == DF__PQ_BYTE_ARRAY || type == DF__PQ_FIXED_LEN_BYTE_ARRAY;
    case DF__PQ_BYTE_STREAM_SPLIT:
        return type == DF__PQ_FLOAT || type == DF__PQ_DOUBLE || type == DF__PQ_INT32 ||
               type == DF__PQ_INT64 || type == DF__PQ_FIXED_LEN_BYTE_ARRAY;
    default:
        return false;
    }
}

/* Whether v's type can be decoded from `encoding`: FR_OK or the error. */
static int check_request(int encoding, int64_t count, const struct df__pq_values *v,
                         struct fr_error *err)
{
    if (count < 0)
        return fr_error_set(err, FR_EDATA, "negative value count %lld", (long long)count);
    if (fixed_size(v) < 0)
        return fr_error_setk(err, FR_EVALIDATION, "unsupported-parquet",
                             "physical type %d is not supported", v->type);
    if (v->type == DF__PQ_FIXED_LEN_BYTE_ARRAY && v->type_length <= 0)
        return fr_error_set(err, FR_EDATA, "FIXED_LEN_BYTE_ARRAY with type_length %d",
                            v->type_length);
    if (encoding == DF__PQ_RLE_DICTIONARY)
        return fr_error_set(err, FR_EINTERNAL,
                            "dictionary indices go through df__pq_decode_dict_indices");
    if (!type_takes(encoding, v->type))
        return fr_error_setk(err, FR_EVALIDATION, "unsupported-parquet",
                             "encoding %s (%d) is not supported for %s values",
                             encoding_name(encoding), encoding, type_name(v->type));
    return FR_OK;
}

int df__pq_decode_values(int encoding, const uint8_t *p, size_t n, int64_t count,
                         struct df__pq_values *v, struct fr_error *err)
{
    v->count = 0;
    v->data_len = 0;
    /* a dictionary page of a format 1.0 writer says PLAIN_DICTIONARY and
     * holds PLAIN values; a data page's indices are not values */
    if (encoding == DF__PQ_PLAIN_DICTIONARY)
        encoding = DF__PQ_PLAIN;
    int rc = check_request(encoding, count, v, err);
    if (rc != FR_OK)
        return rc;
    switch (encoding) {
    case DF__PQ_PLAIN:
        rc = plain(p, n, count, v, err);
        break;
    case DF__PQ_RLE:
        rc = rle_booleans(p, n, count, v, err);
        break;
    case DF__PQ_DELTA_BINARY_PACKED:
        rc = df__pq_decode_delta_binary(p, n, count, v, err);
        break;
    case DF__PQ_DELTA_LENGTH_BYTE_ARRAY:
        rc = df__pq_decode_delta_length(p, n, count, v, err);
        break;
    case DF__PQ_DELTA_BYTE_ARRAY:
        rc = df__pq_decode_delta_byte_array(p, n, count, v, err);
        break;
    default:
        rc = byte_stream_split(p, n, count, v, err);
        break;
    }
    if (rc == FR_OK)
        v->count = count;
    return rc;
}
