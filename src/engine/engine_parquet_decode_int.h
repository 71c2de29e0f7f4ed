/* engine_parquet_decode_int: what the page decoders share between
 * engine_parquet_decode.c (PLAIN, the hybrid, BYTE_STREAM_SPLIT, the
 * dispatch) and engine_parquet_delta.c (the DELTA_* encodings): varints,
 * bit unpacking and the checked growth of df__pq_values' buffers. */
#ifndef FRAMED_ENGINE_PARQUET_DECODE_INT_H
#define FRAMED_ENGINE_PARQUET_DECODE_INT_H

#include "engine_parquet_int.h"

/* An unsigned LEB128 varint of at most 64 bits at p[*pos, n); advances
 * *pos. FR_EDATA (no message) when it runs past n or overflows 64 bits. */
int df__pq_uvarint(const uint8_t *p, size_t n, size_t *pos, uint64_t *out);

/* Unpacks k values of w bits (0..64), LSB first, from p (which holds at
 * least ceil(k * w / 8) bytes, nbytes in all) into out. */
void df__pq_unpack64(const uint8_t *p, size_t nbytes, int w, uint64_t *out, int64_t k);

/* Makes room for `bytes` in v->fixed, `entries` in v->offsets, `bytes` in
 * v->data (never shrinking); FR_ENOSPACE with a message on failure. */
int df__pq_grow_fixed(struct df__pq_values *v, size_t bytes, struct fr_error *err);
int df__pq_grow_offsets(struct df__pq_values *v, size_t entries, struct fr_error *err);
int df__pq_grow_data(struct df__pq_values *v, size_t bytes, struct fr_error *err);

/* The DELTA_* decoders (engine_parquet_delta.c), called by
 * df__pq_decode_values with the type already checked. */
int df__pq_decode_delta_binary(const uint8_t *p, size_t n, int64_t count, struct df__pq_values *v,
                               struct fr_error *err);
int df__pq_decode_delta_length(const uint8_t *p, size_t n, int64_t count, struct df__pq_values *v,
                               struct fr_error *err);
int df__pq_decode_delta_byte_array(const uint8_t *p, size_t n, int64_t count,
                                   struct df__pq_values *v, struct fr_error *err);

#endif
