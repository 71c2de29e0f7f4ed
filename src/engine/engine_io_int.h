/* engine_io_int: pieces shared by the engine's readers and writers (the
 * CSV record tokenizer, value parsers, type inference state, the streaming
 * splitter, number formatting). Internal to the engine module: names carry
 * a double underscore (df__) and nothing outside src/engine includes this. */
#ifndef FRAMED_ENGINE_IO_INT_H
#define FRAMED_ENGINE_IO_INT_H

#include "engine.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- CSV record tokenizer ------------------------------------------------
 * A quote opens a quoted field only at the start of a field; inside it ""
 * is a literal quote and a lone quote closes the field. A quote inside an
 * unquoted field is a literal character. Records end at LF; a CR before it
 * is dropped (outside quotes). The splitter follows the same rules. */
enum {
    DF__F_QUOTED = 1,       /* the field was quoted */
    DF__F_ESCAPED = 2,      /* it holds "" pairs to collapse (see df__csv_field_text) */
    DF__F_UNTERMINATED = 4, /* a quote that never closes before the end of the data */
    DF__F_JUNK = 8,         /* characters between a closing quote and the delimiter */
};

struct df__csv_field {
    const char *p; /* borrowed: points into the caller's buffer */
    size_t len;    /* an upload may hold one field of gigabytes */
    uint32_t flags;
};

/* The fields a record keeps: past FR_MAX_COLUMNS a record is refused anyway,
 * so a line of a billion delimiters must not allocate a billion fields. */
#define DF__MAX_FIELDS (FR_MAX_COLUMNS + 1)

struct df__csv_tok {
    char delim;
    char quote;  /* '\0' disables quoting */
    int nfields; /* at most DF__MAX_FIELDS: more means "too many" */
    int cap;
    struct df__csv_field *f; /* owned; grows to the widest record seen */
    int64_t nlines;          /* line feeds consumed by the last record or blank line */
};

enum { DF__TOK_RECORD, DF__TOK_BLANK, DF__TOK_MORE };

void df__csv_tok_init(struct df__csv_tok *t, char delim, char quote);
void df__csv_tok_cleanup(struct df__csv_tok *t);
/* The text of a field with "" collapsed; borrowed from the field or from
 * scratch (valid until scratch changes). */
const char *df__csv_field_text(const struct df__csv_field *f, char quote, struct fr_buf *scratch,
                               size_t *n);
/* True when an unquoted field equals one of opts->csv_null_values. */
bool df__csv_is_null_value(const struct df_options *eo, const char *s, size_t n);

/* The tokenizer is inline: it is the CSV reader's innermost loop.
 *
 * Line feeds in [p, e): 16 bytes per compare where SSE2 is there, else 8 at
 * a time (a byte of w ^ "\n\n..." is zero where a line feed was;
 * ((b & 0x7f) + 0x7f) | b has its high bit set exactly for the nonzero
 * bytes, and no carry crosses a byte). */
static inline int64_t df__count_lf(const char *p, const char *e)
{
    int64_t n = 0;
#if defined(__SSE2__)
    const __m128i lf = _mm_set1_epi8('\n');
    for (; e - p >= 16; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        n += __builtin_popcount((unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, lf)));
    }
#endif
    const uint64_t lo7 = 0x7f7f7f7f7f7f7f7fULL, hi = 0x8080808080808080ULL;
    const uint64_t lfs = 0x0a0a0a0a0a0a0a0aULL;
    for (; e - p >= 8; p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= lfs;
        uint64_t nonzero = (((w & lo7) + lo7) | w) & hi;
        n += 8 - __builtin_popcountll(nonzero);
    }
    for (; p < e; p++)
        n += *p == '\n';
    return n;
}

/* Scans the quoted field whose opening quote is at q. Returns the position
 * after the closing quote, or NULL when more data is needed. */
static inline const char *df__scan_quoted(struct df__csv_tok *t, const char *q, const char *end,
                                          bool eof, struct df__csv_field *f)
{
    const char *r = q + 1;
    f->p = r;
    f->flags = DF__F_QUOTED;
    for (;;) {
        const char *z = memchr(r, t->quote, (size_t)(end - r));
        if (!z) {
            if (!eof)
                return NULL;
            f->flags |= DF__F_UNTERMINATED;
            f->len = (size_t)(end - f->p);
            t->nlines += df__count_lf(f->p, end);
            return end;
        }
        if (z + 1 == end && !eof)
            return NULL; /* the next byte decides between "" and a close */
        if (z + 1 < end && z[1] == t->quote) {
            f->flags |= DF__F_ESCAPED;
            r = z + 2;
            continue;
        }
        f->len = (size_t)(z - f->p);
        t->nlines += df__count_lf(f->p, z);
        return z + 1;
    }
}

/* Past DF__MAX_FIELDS the last slot takes each further field, so the count
 * stays capped and the last field's flags stay right. */
static inline void df__push_field(struct df__csv_tok *t, const struct df__csv_field *f)
{
    if (t->nfields == DF__MAX_FIELDS) {
        t->f[t->nfields - 1] = *f;
        return;
    }
    if (t->nfields == t->cap) {
        t->cap *= 2;
        t->f = fr_xrealloc(t->f, sizeof(*t->f) * (size_t)t->cap);
    }
    t->f[t->nfields++] = *f;
}

/* Tokenizes the record starting at p (p < end). end[0] must be readable and
 * hold '\n' (a sentinel). eof says no data follows end. Returns
 * DF__TOK_RECORD (fields in t->f), DF__TOK_BLANK (an empty line) or
 * DF__TOK_MORE (the record continues past end); *next is where the next
 * record starts. */
static inline int df__csv_tokenize(struct df__csv_tok *t, const char *p, const char *end, bool eof,
                                   const char **next)
{
    const char delim = t->delim, quote = t->quote;
    const char *q = p;
    t->nfields = 0;
    t->nlines = 0;
    if (*q == '\n' || (*q == '\r' && q + 1 < end && q[1] == '\n')) {
        t->nlines = 1;
        *next = q + (*q == '\r' ? 2 : 1);
        return DF__TOK_BLANK;
    }
    for (;;) {
        struct df__csv_field f;
        if (quote && *q == quote && q < end) {
            q = df__scan_quoted(t, q, end, eof, &f);
            if (!q)
                return DF__TOK_MORE;
            /* q == end only at eof: scan_quoted waits for the byte after a quote */
            if (q < end && *q == '\r') {
                if (q + 1 == end && !eof)
                    return DF__TOK_MORE;
                if (q + 1 < end && q[1] == '\n')
                    q++;
            }
            if (q < end && *q != delim && *q != '\n') {
                f.flags |= DF__F_JUNK;
                while (*q != delim && *q != '\n')
                    q++;
                if (q == end && !eof)
                    return DF__TOK_MORE;
            }
        } else {
            f.p = q;
            f.flags = 0;
            while (*q != delim && *q != '\n')
                q++;
            if (q == end && !eof)
                return DF__TOK_MORE;
            f.len = (size_t)(q - f.p);
            if (f.len && q[-1] == '\r' && *q == '\n')
                f.len--;
        }
        df__push_field(t, &f);
        if (q == end) {
            *next = end;
            return DF__TOK_RECORD;
        }
        if (*q == '\n') {
            t->nlines++;
            *next = q + 1;
            return DF__TOK_RECORD;
        }
        q++; /* the delimiter */
    }
}

/* ---- the fast path for plain records ----------------------------------------
 * Most records hold no quote and no CR: their fields end at the next
 * delimiter or line feed, which 64-byte blocks find as bit masks (16 bytes
 * per compare), so a field costs a count of trailing zeros instead of a
 * byte loop that mispredicts at its end. A record with a quote or a CR
 * anywhere, a blank line, or one that reaches the last 64 bytes of the
 * buffer goes to df__csv_tokenize, which defines the rules. */
#define DF__BLOCK 64

/* Bits of the block at p: *ends for the delimiter and LF, *special for the
 * quote and CR (a zero quote, no quoting, flags NUL bytes: they only take
 * the slow path). */
static inline void df__block_masks(const char *p, char delim, char quote, uint64_t *ends,
                                   uint64_t *special)
{
#if defined(__SSE2__)
    const __m128i d = _mm_set1_epi8(delim), lf = _mm_set1_epi8('\n');
    const __m128i q = _mm_set1_epi8(quote), cr = _mm_set1_epi8('\r');
    uint64_t e = 0, s = 0;
    for (int i = 0; i < DF__BLOCK / 16; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        uint32_t me =
            (uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, d), _mm_cmpeq_epi8(v, lf)));
        uint32_t ms =
            (uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, cr)));
        e |= (uint64_t)me << (16 * i);
        s |= (uint64_t)ms << (16 * i);
    }
    *ends = e;
    *special = s;
#else
    uint64_t e = 0, s = 0;
    for (int i = 0; i < DF__BLOCK; i++) {
        e |= (uint64_t)(p[i] == delim || p[i] == '\n') << i;
        s |= (uint64_t)(p[i] == quote || p[i] == '\r') << i;
    }
    *ends = e;
    *special = s;
#endif
}

/* Tokenizes the plain record at p into t as df__csv_tokenize would; false
 * (t unspecified) when the record is not plain or not wholly in [p, end). */
static inline bool df__csv_plain_record(struct df__csv_tok *t, const char *p, const char *end,
                                        const char **next)
{
    if (end - p < DF__BLOCK || *p == '\n' || t->quote == '\n')
        return false; /* a quote of LF would open a field where a record ends here */
    const char *blk = p, *start = p;
    uint64_t ends, special;
    df__block_masks(blk, t->delim, t->quote, &ends, &special);
    t->nfields = 0;
    for (;;) {
        while (!ends) {
            if (special)
                return false;
            blk += DF__BLOCK;
            if (end - blk < DF__BLOCK)
                return false;
            df__block_masks(blk, t->delim, t->quote, &ends, &special);
        }
        int k = __builtin_ctzll(ends);
        if (special & ((UINT64_C(1) << k) - 1))
            return false;
        const char *at = blk + k;
        struct df__csv_field f = {.p = start, .len = (size_t)(at - start), .flags = 0};
        df__push_field(t, &f);
        if (*at == '\n') {
            t->nlines = 1;
            *next = at + 1;
            return true;
        }
        start = at + 1;
        ends &= ends - 1;
    }
}

/* ---- fast number parsers -----------------------------------------------------
 * For plain fields (unquoted, pointing into the read buffer, which keeps
 * DF__READ_PAD readable bytes after its sentinel): up to 16 digits are read 8 at a
 * time. They only answer for the forms they know (an optional '-', digits,
 * at most one '.'), where their value equals df__parse_int64's and
 * df__parse_float64's (the same significand and the same one exact division);
 * anything else returns false and the general parsers decide. */
#define DF__READ_PAD 16

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The value of the n (1..8) bytes at s if they are all digits. */
static inline bool df__digits8(const char *s, size_t n, uint64_t *out)
{
    const uint64_t zeros = UINT64_C(0x3030303030303030), high = UINT64_C(0xF0F0F0F0F0F0F0F0);
    uint64_t w;
    memcpy(&w, s, 8);
    if (n < 8) { /* the digits to the top, '0's below them */
        unsigned sh = (unsigned)(8 - n) * 8;
        w = (w << sh) | (zeros >> (64 - sh));
    }
    if ((w & high) != zeros || ((w + UINT64_C(0x0606060606060606)) & high) != zeros)
        return false;
    w -= zeros;
    w = w * 10 + (w >> 8); /* pairs of digits */
    w = (((w & UINT64_C(0x000000FF000000FF)) * (100 + (UINT64_C(1000000) << 32))) +
         (((w >> 16) & UINT64_C(0x000000FF000000FF)) * (1 + (UINT64_C(10000) << 32)))) >>
        32;
    *out = (uint32_t)w;
    return true;
}
#else
static inline bool df__digits8(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}
#endif

/* Up to 16 digits. */
static inline bool df__digits16(const char *s, size_t n, uint64_t *out)
{
    uint64_t hi, lo;
    if (n == 0 || n > 16)
        return false;
    if (n <= 8)
        return df__digits8(s, n, out);
    if (!df__digits8(s, n - 8, &hi) || !df__digits8(s + n - 8, 8, &lo))
        return false;
    *out = hi * 100000000u + lo;
    return true;
}

static inline bool df__fast_int64(const char *s, size_t n, int64_t *out)
{
    size_t i = s[0] == '-';
    uint64_t v;
    if (!df__digits16(s + i, n - i, &v))
        return false;
    *out = i ? -(int64_t)v : (int64_t)v;
    return true;
}

static inline bool df__fast_float64(const char *s, size_t n, double *out)
{
    static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
    static const uint64_t u10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    size_t i = s[0] == '-', m = n - i;
    if (m == 0 || m > 16)
        return false;
    const char *t = s + i;
    size_t dot = m; /* where the '.' is, m for none */
#if defined(__SSE2__)
    unsigned dots = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
                        _mm_loadu_si128((const __m128i *)(const void *)t), _mm_set1_epi8('.'))) &
                    ((1u << m) - 1);
    if (dots)
        dot = (size_t)__builtin_ctz(dots);
#else
    const char *d = memchr(t, '.', m);
    if (d)
        dot = (size_t)(d - t);
#endif
    uint64_t ip, fp = 0;
    size_t flen = dot < m ? m - dot - 1 : 0;
    if (dot == 0 || dot > 8 || flen > 8 || !df__digits8(t, dot, &ip) ||
        (flen && !df__digits8(t + dot + 1, flen, &fp)) || (dot < m && flen == 0))
        return false;
    /* at most 15 digits (16 bytes with the '.'), so the significand is under
     * 2^53 and exact, as df__parse_float64's fast path requires */
    uint64_t sig = ip * u10[flen] + fp;
    if (sig > (UINT64_C(1) << 53))
        return false;
    double v = (double)sig / p10[flen];
    *out = i ? -v : v;
    return true;
}

/* ---- value parsers ---------------------------------------------------------
 * Whole-text parsers; 0 on success. df__parse_int64 returns 1 for an
 * integer that does not fit int64 (inference widens it to float64). */
int df__parse_int64(const char *s, size_t n, int64_t *out);
int df__parse_float64(const char *s, size_t n, double *out);
int df__parse_bool(const char *s, size_t n, bool *out);

/* Type inference over a sample of text values. */
struct df__infer {
    bool seen;
    bool can_int, can_float, can_bool, can_date, can_ts;
};
void df__infer_init(struct df__infer *st);
void df__infer_add(struct df__infer *st, const char *s, size_t n);
df_type df__infer_result(const struct df__infer *st); /* string when nothing was seen */

/* Type inference over JSON values (the json_t* of jansson, passed as void*
 * to keep jansson out of this header): int64, float64 (ints and reals
 * mixed), bool, string; date/timestamp only with detect_dates and when every
 * string parses; nested values and conflicting kinds give string. */
struct df__json_infer {
    bool seen_int, seen_real, seen_bool, seen_string, seen_nested;
    bool all_date, all_ts;
};
void df__json_infer_init(struct df__json_infer *st);
void df__json_infer_add(struct df__json_infer *st, const void *json);
df_type df__json_infer_result(const struct df__json_infer *st, bool detect_dates);
/* Appends a JSON value to c (JSON null or NULL: a null); a string column
 * takes any value (nested ones as compact JSON text). -1 if it does not fit. */
int df__json_append(struct df_column *c, const void *json);

/* ---- files ----------------------------------------------------------------- */
/* Cuts a file into record-aligned ranges (see df_csv_split); quote '\0'
 * means newline-delimited records (NDJSON). */
int df__split_file(const char *path, char delim, char quote, bool header, int64_t target_bytes,
                   int max_ranges, struct df_byte_range **ranges, int *nranges, bool *truncated,
                   struct fr_error *err);
const char *df__basename(const char *path); /* borrowed: points into path */
/* FR_EVALIDATION, kind too-many-columns: what (a file's header, a record, inline
 * rows) has more than FR_MAX_COLUMNS columns; at_least says n is a lower bound. */
int df__too_many_columns(struct fr_error *err, const char *what, int64_t n, bool at_least);
/* A buffer for large column arrays: malloc plus MADV_HUGEPAGE on its
 * interior so first touches fault 2 MiB at a time. new (free()); NULL on OOM. */
void *df__alloc_large(size_t n);

/* ---- output ---------------------------------------------------------------- */
/* Shortest "%.15g".."%.17g" text that reads back to v, with ".0" added when
 * it would look like an integer. Returns the length; 0 for inf/nan. out
 * holds >= 32 bytes. */
size_t df__format_float64(double v, char *out);
size_t df__format_int64(int64_t v, char *out); /* out >= 21 bytes */
/* Appends s as a JSON string (quotes included); invalid UTF-8 becomes U+FFFD. */
void df__json_escape(struct fr_buf *b, const char *s, size_t n);
/* new: rows [start, start + n) of string column c with each byte of invalid
 * UTF-8 replaced by U+FFFD (row 0 = start), or NULL when they are all valid
 * (nearly always; checked without a copy) or c is not a string column. */
struct df_column *df__utf8_repaired(const struct df_column *c, int64_t start, int64_t n);

#endif
