/* engine_io_int: pieces shared by the engine's readers and writers (the
 * CSV record tokenizer, value parsers, type inference state, the streaming
 * splitter, number formatting). Internal to the engine module: names carry
 * a double underscore (df__) and nothing outside src/engine includes this. */
#ifndef FRAMED_ENGINE_IO_INT_H
#define FRAMED_ENGINE_IO_INT_H

#include "engine.h"

#include <stdlib.h>
#include <string.h>

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

/* The tokenizer is inline: it is the CSV reader's innermost loop. */
static inline int64_t df__count_lf(const char *p, const char *e)
{
    int64_t n = 0;
    while ((p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
        n++;
        p++;
    }
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
