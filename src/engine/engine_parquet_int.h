/* engine_parquet_int: the pieces of the Parquet reader and writer shared
 * inside the engine: the format's enums, the codecs, and the page decoders
 * (levels and values) that turn a page's bytes into values. The footer,
 * page headers and the column-chunk loop (engine_parquet_meta.c,
 * engine_parquet_read.c) call these; engine_parquet_codec.c and
 * engine_parquet_decode.c implement them. Every decoder treats its input as
 * hostile: it never reads outside [p, p + n) nor writes past what it was
 * given, and a short or inconsistent input is FR_EDATA with a message that
 * says what was wrong (the caller prefixes file, row group and column). */
#ifndef FRAMED_ENGINE_PARQUET_INT_H
#define FRAMED_ENGINE_PARQUET_INT_H

#include "engine.h"

/* parquet.thrift's Type */
enum df__pq_type {
    DF__PQ_BOOLEAN = 0,
    DF__PQ_INT32 = 1,
    DF__PQ_INT64 = 2,
    DF__PQ_INT96 = 3,
    DF__PQ_FLOAT = 4,
    DF__PQ_DOUBLE = 5,
    DF__PQ_BYTE_ARRAY = 6,
    DF__PQ_FIXED_LEN_BYTE_ARRAY = 7,
};

/* CompressionCodec */
enum df__pq_codec {
    DF__PQ_UNCOMPRESSED = 0,
    DF__PQ_SNAPPY = 1,
    DF__PQ_GZIP = 2,
    DF__PQ_LZO = 3,
    DF__PQ_BROTLI = 4,
    DF__PQ_LZ4 = 5, /* deprecated: Hadoop framing, else raw (as Arrow reads it) */
    DF__PQ_ZSTD = 6,
    DF__PQ_LZ4_RAW = 7,
};

/* Encoding */
enum df__pq_encoding {
    DF__PQ_PLAIN = 0,
    DF__PQ_PLAIN_DICTIONARY = 2,
    DF__PQ_RLE = 3,
    DF__PQ_BIT_PACKED = 4,
    DF__PQ_DELTA_BINARY_PACKED = 5,
    DF__PQ_DELTA_LENGTH_BYTE_ARRAY = 6,
    DF__PQ_DELTA_BYTE_ARRAY = 7,
    DF__PQ_RLE_DICTIONARY = 8,
    DF__PQ_BYTE_STREAM_SPLIT = 9,
};

/* PageType */
enum df__pq_page_type {
    DF__PQ_DATA_PAGE = 0,
    DF__PQ_INDEX_PAGE = 1,
    DF__PQ_DICTIONARY_PAGE = 2,
    DF__PQ_DATA_PAGE_V2 = 3,
};

/* Thrift compact protocol element types (as they appear in field headers),
 * shared by the footer's reader (engine_parquet_thrift.c) and writer
 * (engine_parquet_thrift_write.c). */
enum df__tc_type {
    DF__TC_STOP = 0,
    DF__TC_TRUE = 1,
    DF__TC_FALSE = 2,
    DF__TC_BYTE = 3,
    DF__TC_I16 = 4,
    DF__TC_I32 = 5,
    DF__TC_I64 = 6,
    DF__TC_DOUBLE = 7,
    DF__TC_BINARY = 8,
    DF__TC_LIST = 9,
    DF__TC_SET = 10,
    DF__TC_MAP = 11,
    DF__TC_STRUCT = 12,
};

/* The largest page (compressed or not) the reader accepts: a page header
 * claiming more is malformed rather than an allocation. */
#define DF__PQ_MAX_PAGE_BYTES ((int64_t)1 << 30)

/* True when the reader has a decompressor for codec. */
bool df__pq_codec_supported(int codec);
const char *df__pq_codec_name(int codec); /* "SNAPPY", ...; "codec 9" style for unknown ones */
/* Decompresses exactly out_n bytes from in[0, n) into out (caller-owned,
 * out_n bytes). FR_EDATA when the input is corrupt or does not decompress
 * to exactly out_n bytes; FR_EVALIDATION (kind unsupported-parquet) for a
 * codec without a decompressor. UNCOMPRESSED copies (n must equal out_n). */
int df__pq_decompress(int codec, const uint8_t *in, size_t n, uint8_t *out, size_t out_n,
                      struct fr_error *err);
/* Compresses in[0, n) for the writer (SNAPPY or ZSTD; UNCOMPRESSED copies):
 * appends to out. */
int df__pq_compress(int codec, const uint8_t *in, size_t n, struct fr_buf *out,
                    struct fr_error *err);

/* The RLE/bit-packed hybrid (levels, dictionary indices, booleans):
 * decodes exactly `count` values of bit_width bits (0..32) from p[0, n)
 * into out. Bit width 0 yields zeros. Runs longer than needed are cut;
 * input that ends before `count` values is FR_EDATA. *used (may be NULL)
 * gets the bytes consumed. */
int df__pq_rle_decode(const uint8_t *p, size_t n, int bit_width, uint32_t *out, int64_t count,
                      size_t *used, struct fr_error *err);

/* Decoded values of one page (or a dictionary), as the physical type
 * holds them: the non-null values only, in order. Fixed-width values in
 * `fixed` (int32_t for INT32, int64_t for INT64, float for FLOAT, double
 * for DOUBLE, uint8_t 0/1 for BOOLEAN, type_length bytes each for
 * FIXED_LEN_BYTE_ARRAY); byte arrays as offsets (count + 1 entries) into
 * `data`. The buffers are owned by the struct (df__pq_values_cleanup) and
 * reused across pages: decoders grow them, never shrink. When `ex` is set
 * (borrowed, the reading task's account) every growth of a buffer, and any
 * temporary a decoder allocates, is charged to it before the allocation
 * (FR_EMEMLIMIT over the task's limit, the charge not taken); `charged` is
 * what the buffers hold of it, released by df__pq_values_cleanup. */
struct df__pq_values {
    int type; /* enum df__pq_type */
    int type_length;
    int64_t count;
    void *fixed;
    size_t fixed_cap; /* bytes */
    int64_t *offsets;
    size_t offsets_cap; /* entries */
    char *data;
    size_t data_len, data_cap;
    struct df_exec *ex; /* may be NULL: nothing charged */
    int64_t charged;
};
/* Zeroes v (ex NULL); cleanup frees the buffers and releases their charge,
 * keeping type, type_length and ex. */
void df__pq_values_init(struct df__pq_values *v, int type, int type_length);
void df__pq_values_cleanup(struct df__pq_values *v);
/* Charges bytes (may be negative) to v->ex, if any: the decoders'
 * temporaries. */
int df__pq_values_charge(struct df__pq_values *v, int64_t bytes, struct fr_error *err);

/* Decodes `count` non-null values of v->type in `encoding` from p[0, n)
 * into v (replacing what it held). Encodings: PLAIN (every type), RLE
 * (BOOLEAN: a 4-byte length then the hybrid at width 1),
 * DELTA_BINARY_PACKED (INT32, INT64), DELTA_LENGTH_BYTE_ARRAY and
 * DELTA_BYTE_ARRAY (BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY), BYTE_STREAM_SPLIT
 * (FLOAT, DOUBLE, INT32, INT64, FIXED_LEN_BYTE_ARRAY). Dictionary indices
 * are not values: see df__pq_decode_dict_indices. Sizes are bounded by n
 * (a count that the bytes cannot hold is FR_EDATA before any allocation
 * sized by it), and allocations are checked (FR_ENOSPACE on failure).
 * FR_EVALIDATION (kind unsupported-parquet) for an encoding the type does
 * not take. */
int df__pq_decode_values(int encoding, const uint8_t *p, size_t n, int64_t count,
                         struct df__pq_values *v, struct fr_error *err);
/* RLE_DICTIONARY / PLAIN_DICTIONARY data: one byte of bit width (<= 32),
 * then the hybrid: `count` indices into out, each checked < dict_count. */
int df__pq_decode_dict_indices(const uint8_t *p, size_t n, int64_t count, int64_t dict_count,
                               uint32_t *out, struct fr_error *err);

#endif
