/* common_codec: compression of partition transfers between processes
 * (config field partition_codecs). A fetch names the codecs it accepts in
 * Accept-Encoding, most preferred first; the owner picks the first it
 * knows and says so in Content-Encoding. The bytes are an LZ4 frame
 * (liblz4's frame format) or a zstd frame (libzstd), made as the partition
 * is sent. The fetcher decodes the whole answer with a bound on what it may
 * grow to: a peer's bytes are checked, not trusted. */
#include "common.h"

#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_d_windowLogMax is stable since 1.4.0 */
#include <zstd.h>

/* zstd's fastest standard level: a shuffle is sent once, read once. */
#define CODEC_ZSTD_LEVEL 1
/* The largest zstd window a fetch decodes (16 MiB): level 1 uses far less;
 * a frame asking for more is refused rather than given the memory. */
#define CODEC_ZSTD_WINDOW_LOG_MAX 24
/* Decoded output grows in steps of at most this when the frame does not
 * say its size (ours always do). */
#define CODEC_GROW_STEP ((size_t)4 << 20)
/* The most a declared size reserves before any of it is decoded (1 GiB). */
#define CODEC_FIRST_MAX ((size_t)1 << 30)

static const char *const codec_names[] = {"identity", "lz4", "zstd"};

const char *fr_codec_name(enum fr_codec c)
{
    return c >= FR_CODEC_NONE && c <= FR_CODEC_ZSTD ? codec_names[c] : "unknown";
}

int fr_codec_parse(const char *s, size_t n)
{
    for (int c = FR_CODEC_NONE; c <= FR_CODEC_ZSTD; c++)
        if (strlen(codec_names[c]) == n && strncasecmp(s, codec_names[c], n) == 0)
            return c;
    return -1;
}

/* The next coding of an Accept-Encoding list at *p (advanced past it):
 * its codec, or -1 when unknown; *off when its weight is q=0. false at the
 * end of the list. */
static bool next_coding(const char **p, int *codec, bool *off)
{
    if (!*p || !**p)
        return false;
    const char *tok = *p, *e = tok + strcspn(tok, ",");
    *p = *e ? e + 1 : e;
    while (tok < e && (*tok == ' ' || *tok == '\t'))
        tok++;
    size_t tn = strcspn(tok, ";, \t");
    if (tok + tn > e)
        tn = (size_t)(e - tok);
    *codec = fr_codec_parse(tok, tn);
    *off = false;
    const char *q = memchr(tok, ';', (size_t)(e - tok));
    if (q) {
        q++;
        while (q < e && (*q == ' ' || *q == '\t'))
            q++;
        if (e - q >= 3 && (q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
            *off = true; /* "q=0", "q=0.0", ...: off; any other weight keeps the order */
            for (const char *d = q + 2; d < e && *d != ' ' && *d != '\t'; d++)
                if (*d != '0' && *d != '.')
                    *off = false;
        }
    }
    return true;
}

enum fr_codec fr_codec_pick(const char *accept)
{
    int c;
    bool off;
    while (next_coding(&accept, &c, &off))
        if (c > FR_CODEC_NONE && !off)
            return (enum fr_codec)c;
    return FR_CODEC_NONE;
}

bool fr_codec_accepts(const char *accept, enum fr_codec codec)
{
    int c;
    bool off;
    while (next_coding(&accept, &c, &off))
        if (c == (int)codec && !off)
            return true;
    return false;
}

/* ---- encoding ------------------------------------------------------------ */

struct fr_encoder {
    enum fr_codec codec;
    LZ4F_cctx *lz4;
    ZSTD_CCtx *zstd;
    bool begun;
    int64_t size; /* the input's whole size when known, else -1 */
};

struct fr_encoder *fr_encoder_new(enum fr_codec codec, int64_t size)
{
    if (codec != FR_CODEC_LZ4 && codec != FR_CODEC_ZSTD)
        return NULL;
    struct fr_encoder *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->codec = codec;
    e->size = size;
    if (codec == FR_CODEC_LZ4) {
        if (LZ4F_isError(LZ4F_createCompressionContext(&e->lz4, LZ4F_VERSION))) {
            free(e);
            return NULL;
        }
    } else {
        e->zstd = ZSTD_createCCtx();
        if (!e->zstd ||
            ZSTD_isError(
                ZSTD_CCtx_setParameter(e->zstd, ZSTD_c_compressionLevel, CODEC_ZSTD_LEVEL)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(e->zstd, ZSTD_c_checksumFlag, 1)) ||
            (size >= 0 && ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(e->zstd, (uint64_t)size)))) {
            ZSTD_freeCCtx(e->zstd);
            free(e);
            return NULL;
        }
    }
    return e;
}

void fr_encoder_free(struct fr_encoder *e)
{
    if (!e)
        return;
    if (e->lz4)
        LZ4F_freeCompressionContext(e->lz4);
    ZSTD_freeCCtx(e->zstd);
    free(e);
}

/* Makes room for n more bytes in b; false when there is no memory. */
static bool buf_room(struct fr_buf *b, size_t n)
{
    if (b->cap - b->len > n)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->len <= n)
        cap *= 2;
    char *p = fr_try_realloc(b->data, cap);
    if (!p)
        return false;
    b->data = p;
    b->cap = cap;
    return true;
}

static const LZ4F_preferences_t *lz4_prefs(const struct fr_encoder *e, LZ4F_preferences_t *p)
{
    memset(p, 0, sizeof(*p));
    p->frameInfo.blockSizeID = LZ4F_max256KB;
    p->frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    p->frameInfo.contentSize = e->size >= 0 ? (unsigned long long)e->size : 0;
    return p;
}

static int encode(struct fr_encoder *e, const void *in, size_t n, bool end, struct fr_buf *out)
{
    if (e->codec == FR_CODEC_LZ4) {
        LZ4F_preferences_t prefs;
        size_t r;
        if (!e->begun) {
            if (!buf_room(out, LZ4F_HEADER_SIZE_MAX))
                return FR_ETOOLARGE;
            r = LZ4F_compressBegin(e->lz4, out->data + out->len, out->cap - out->len,
                                   lz4_prefs(e, &prefs));
            if (LZ4F_isError(r))
                return FR_EINTERNAL;
            out->len += r;
            e->begun = true;
        }
        size_t bound = LZ4F_compressBound(n, lz4_prefs(e, &prefs));
        if (!buf_room(out, bound))
            return FR_ETOOLARGE;
        r = end ? LZ4F_compressEnd(e->lz4, out->data + out->len, out->cap - out->len, NULL)
            : n ? LZ4F_compressUpdate(e->lz4, out->data + out->len, out->cap - out->len, in, n,
                                      NULL)
                : 0;
        if (LZ4F_isError(r))
            return FR_EINTERNAL;
        out->len += r;
        out->data[out->len] = '\0';
        return FR_OK;
    }
    ZSTD_inBuffer ib = {in, n, 0};
    for (;;) {
        if (!buf_room(out, ZSTD_CStreamOutSize()))
            return FR_ETOOLARGE;
        ZSTD_outBuffer ob = {out->data, out->cap - 1, out->len};
        size_t left = ZSTD_compressStream2(e->zstd, &ob, &ib, end ? ZSTD_e_end : ZSTD_e_continue);
        if (ZSTD_isError(left))
            return FR_EINTERNAL;
        out->len = ob.pos;
        out->data[out->len] = '\0';
        if (end ? left == 0 : ib.pos == ib.size)
            return FR_OK;
    }
}

int fr_encoder_write(struct fr_encoder *e, const void *in, size_t n, struct fr_buf *out)
{
    return encode(e, in, n, false, out);
}

int fr_encoder_finish(struct fr_encoder *e, struct fr_buf *out)
{
    return encode(e, NULL, 0, true, out);
}

/* ---- decoding ------------------------------------------------------------ */

/* Room for at least one more byte (and the NUL fr_buf keeps): to the
 * frame's declared size at first when it has one, else growing by steps.
 * The buffer never passes max_out + 2 bytes, so a decoder that writes one
 * byte past the bound shows it; FR_ENOSPACE when it would have to. */
static int out_room(struct fr_buf *out, uint64_t declared, int64_t max_out, struct fr_error *err)
{
    size_t limit = (size_t)max_out + 2;
    if (out->len + 1 < out->cap)
        return FR_OK;
    if (out->cap >= limit)
        return fr_error_set(err, FR_ENOSPACE,
                            "a compressed partition decodes to more than %lld bytes",
                            (long long)max_out);
    size_t step = out->cap < CODEC_GROW_STEP ? (out->cap ? out->cap : 4096) : CODEC_GROW_STEP;
    /* a declared size is a peer's word: reserved up to CODEC_FIRST_MAX, grown past it */
    size_t want = !out->cap && declared ? (size_t)declared + 2 : out->cap + step;
    if (!out->cap && want > CODEC_FIRST_MAX)
        want = CODEC_FIRST_MAX;
    if (want > limit)
        want = limit;
    char *p = fr_try_realloc(out->data, want);
    if (!p) /* as a body too large for memory is (the fetch's FR_ENOSPACE) */
        return fr_error_set(err, FR_ENOSPACE, "out of memory decoding a partition of %zu bytes",
                            want);
    out->data = p;
    out->cap = want;
    return FR_OK;
}

static int too_long(int64_t max_out, struct fr_error *err)
{
    return fr_error_set(err, FR_ENOSPACE, "a compressed partition decodes to more than %lld bytes",
                        (long long)max_out);
}

static int decode_lz4(const uint8_t *in, size_t n, int64_t max_out, struct fr_buf *out,
                      struct fr_error *err)
{
    LZ4F_dctx *d = NULL;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
        return fr_error_set(err, FR_ENOSPACE, "out of memory decoding a partition");
    int rc = FR_OK;
    LZ4F_frameInfo_t fi;
    size_t pos = n;
    size_t hint = LZ4F_getFrameInfo(d, &fi, in, &pos); /* the header: the content size */
    if (LZ4F_isError(hint))
        rc = fr_error_set(err, FR_EDATA, "a partition's LZ4 frame is corrupt: %s",
                          LZ4F_getErrorName(hint));
    else if (fi.frameType != LZ4F_frame)
        rc = fr_error_set(err, FR_EDATA, "a partition's LZ4 frame is a skippable frame");
    else if (fi.contentSize > (unsigned long long)max_out)
        rc = too_long(max_out, err);
    while (rc == FR_OK && (rc = out_room(out, fi.contentSize, max_out, err)) == FR_OK) {
        size_t room = out->cap - 1 - out->len, used = n - pos;
        hint = LZ4F_decompress(d, out->data + out->len, &room, in + pos, &used, NULL);
        if (LZ4F_isError(hint)) {
            rc = fr_error_set(err, FR_EDATA, "a partition's LZ4 frame is corrupt: %s",
                              LZ4F_getErrorName(hint));
            break;
        }
        pos += used;
        out->len += room;
        if (out->len > (size_t)max_out)
            rc = too_long(max_out, err);
        else if (hint == 0 && pos < n) /* one frame: bytes after it are not ours */
            rc = fr_error_set(err, FR_EDATA, "%zu bytes follow a partition's LZ4 frame", n - pos);
        else if (hint == 0)
            break;
        else if (pos == n && room == 0)
            rc = fr_error_set(err, FR_EDATA, "a partition's LZ4 frame is cut short");
    }
    if (rc == FR_OK && fi.contentSize && out->len != fi.contentSize)
        rc = fr_error_set(err, FR_EDATA, "a partition's LZ4 frame declared %llu bytes, held %zu",
                          fi.contentSize, out->len);
    LZ4F_freeDecompressionContext(d);
    return rc;
}

static int decode_zstd(const uint8_t *in, size_t n, int64_t max_out, struct fr_buf *out,
                       struct fr_error *err)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (!d ||
        ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, CODEC_ZSTD_WINDOW_LOG_MAX))) {
        ZSTD_freeDCtx(d);
        return fr_error_set(err, FR_ENOSPACE, "out of memory decoding a partition");
    }
    unsigned long long fcs = ZSTD_getFrameContentSize(in, n);
    uint64_t declared =
        fcs == ZSTD_CONTENTSIZE_UNKNOWN || fcs == ZSTD_CONTENTSIZE_ERROR ? 0 : (uint64_t)fcs;
    int rc = ZSTD_isSkippableFrame(in, n)
                 ? fr_error_set(err, FR_EDATA, "a partition's zstd frame is a skippable frame")
             : declared > (uint64_t)max_out ? too_long(max_out, err)
                                            : FR_OK;
    ZSTD_inBuffer ib = {in, n, 0};
    while (rc == FR_OK && (rc = out_room(out, declared, max_out, err)) == FR_OK) {
        ZSTD_outBuffer ob = {out->data, out->cap - 1, out->len};
        size_t left = ZSTD_decompressStream(d, &ob, &ib);
        if (ZSTD_isError(left)) {
            rc = fr_error_set(err, FR_EDATA, "a partition's zstd frame is corrupt: %s",
                              ZSTD_getErrorName(left));
            break;
        }
        out->len = ob.pos;
        if (out->len > (size_t)max_out)
            rc = too_long(max_out, err);
        else if (left == 0 && ib.pos < ib.size) /* one frame: bytes after it are not ours */
            rc = fr_error_set(err, FR_EDATA, "%zu bytes follow a partition's zstd frame",
                              ib.size - ib.pos);
        else if (left == 0)
            break;
        else if (ib.pos == ib.size && ob.pos < ob.size) /* it wants input there is not */
            rc = fr_error_set(err, FR_EDATA, "a partition's zstd frame is cut short");
    }
    if (rc == FR_OK && declared && out->len != declared)
        rc = fr_error_set(err, FR_EDATA, "a partition's zstd frame declared %llu bytes, held %zu",
                          (unsigned long long)declared, out->len);
    ZSTD_freeDCtx(d);
    return rc;
}

int fr_decode(enum fr_codec codec, const void *in, size_t n, int64_t max_out, struct fr_buf *out,
              struct fr_error *err)
{
    fr_buf_cleanup(out);
    if (max_out <= 0 || max_out > FR_CODEC_MAX_OUT)
        max_out = FR_CODEC_MAX_OUT;
    int rc;
    if (n == 0)
        rc = fr_error_set(err, FR_EDATA, "an empty answer is no compressed partition");
    else if (codec == FR_CODEC_LZ4)
        rc = decode_lz4(in, n, max_out, out, err);
    else if (codec == FR_CODEC_ZSTD)
        rc = decode_zstd(in, n, max_out, out, err);
    else
        rc = fr_error_set(err, FR_EINVAL, "no codec to decode with");
    if (rc == FR_OK && out->len == 0) /* no partition encodes to nothing */
        rc = fr_error_set(err, FR_EDATA, "a compressed partition decodes to no bytes");
    if (rc != FR_OK)
        fr_buf_cleanup(out);
    else
        out->data[out->len] = '\0';
    return rc;
}
