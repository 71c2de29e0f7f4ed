/* fuzz_codec: the decoder of compressed partitions (common_codec.c) that
 * every partition fetch runs on a peer's answer under partition_codecs. The
 * first byte picks the codec (even: LZ4, odd: zstd) and whether the rest
 * is decoded as sent or first encoded (so the fuzzer reaches deep into
 * valid frames, then past them with its own bytes); the next two bytes set
 * the bound. Invariants: a decode that succeeds fits the bound and, for a
 * frame we made, gives back exactly what was encoded; one that fails leaves
 * nothing. The Accept-Encoding picker runs on the same bytes as text. */
#include "common/common.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    enum fr_codec codec = data[0] & 1 ? FR_CODEC_ZSTD : FR_CODEC_LZ4;
    bool encode_first = (data[0] & 2) != 0, tamper = (data[0] & 4) != 0;
    int64_t bound = 1 + ((int64_t)data[1] << 8 | data[2]) * 16; /* 1 B .. 1 MiB */
    const uint8_t *in = data + 3;
    size_t n = size - 3;
    struct fr_buf frame, out;
    struct fr_error err;
    fr_buf_init(&frame);
    fr_buf_init(&out);
    fr_error_init(&err);
    if (encode_first) {
        struct fr_encoder *e = fr_encoder_new(codec, data[0] & 8 ? (int64_t)n : -1);
        FUZZ_CHECK(e != NULL);
        size_t piece = 1 + (data[0] >> 4) * 97;
        for (size_t pos = 0; pos < n; pos += piece)
            FUZZ_CHECK(fr_encoder_write(e, in + pos, n - pos < piece ? n - pos : piece, &frame) ==
                       FR_OK);
        FUZZ_CHECK(fr_encoder_finish(e, &frame) == FR_OK);
        fr_encoder_free(e);
        if (tamper && frame.len > 0) /* one byte changed, somewhere the input says */
            frame.data[(n ? in[0] : 0) % frame.len] ^= 0x20;
    } else {
        fr_buf_append(&frame, in, n);
    }
    int rc = fr_decode(codec, frame.data, frame.len, bound, &out, &err);
    if (rc == FR_OK) {
        FUZZ_CHECK((int64_t)out.len <= bound);
        if (encode_first && !tamper) {
            FUZZ_CHECK(out.len == n);
            FUZZ_CHECK(n == 0 || memcmp(out.data, in, n) == 0);
        }
    } else {
        FUZZ_CHECK(out.len == 0 && out.data == NULL);
        FUZZ_CHECK(rc == FR_EDATA || rc == FR_ENOSPACE);
        /* a frame we made fails only on the bound, or when tampered with */
        if (encode_first && !tamper && n == 0)
            FUZZ_CHECK(rc == FR_EDATA); /* an empty frame */
        else if (encode_first && !tamper)
            FUZZ_CHECK(rc == FR_ENOSPACE && (int64_t)n > bound);
    }
    /* the same bytes as an Accept-Encoding value */
    char *text = malloc(n + 1);
    memcpy(text, in, n);
    text[n] = '\0';
    enum fr_codec c = fr_codec_pick(text);
    FUZZ_CHECK(c == FR_CODEC_NONE || fr_codec_accepts(text, c));
    free(text);
    fr_buf_cleanup(&frame);
    fr_buf_cleanup(&out);
    return 0;
}
