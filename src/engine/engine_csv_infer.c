/* engine_csv_infer: the schema of a CSV file from its header and the first
 * sample_rows records: column names (deduplicated) and the narrowest type
 * every sampled value fits, with type hints winning by name. */
#include "engine_io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INFER_BUF (1 << 20)

/* Records from the start of a file, read in growing chunks. */
struct rec_stream {
    int fd;
    char *buf; /* owned; one byte more than cap for the sentinel */
    size_t len, cap, pos;
    bool eof;
    const char *name; /* the file's base name for messages */
};

enum { REC_END = 3 }; /* beyond the DF__TOK_* values */

static int fill(struct rec_stream *rs, struct fr_error *err)
{
    if (rs->pos > 0) {
        memmove(rs->buf, rs->buf + rs->pos, rs->len - rs->pos);
        rs->len -= rs->pos;
        rs->pos = 0;
    }
    if (rs->len == rs->cap) { /* one record longer than the buffer */
        char *bigger = rs->cap <= SIZE_MAX / 4 ? fr_try_realloc(rs->buf, rs->cap * 2 + 1) : NULL;
        if (!bigger)
            return fr_error_set(err, FR_ETOOLARGE,
                                "%s: a record of more than %zu bytes does not fit in memory",
                                rs->name, rs->cap);
        rs->buf = bigger;
        rs->cap *= 2;
    }
    ssize_t r;
    do {
        r = read(rs->fd, rs->buf + rs->len, rs->cap - rs->len);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return fr_error_set(err, FR_EIO, "reading %s: %s", rs->name, strerror(errno));
    if (r == 0)
        rs->eof = true;
    if (rs->len == 0 && r >= 3 && memcmp(rs->buf, "\xEF\xBB\xBF", 3) == 0 &&
        lseek(rs->fd, 0, SEEK_CUR) == r) {
        memmove(rs->buf, rs->buf + 3, (size_t)r - 3); /* a UTF-8 byte order mark */
        r -= 3;
    }
    rs->len += (size_t)r;
    rs->buf[rs->len] = '\n';
    return FR_OK;
}

/* The next record or blank line (DF__TOK_*), or REC_END; a negative status
 * on a read error. Fields point into rs->buf until the next call. */
static int next_record(struct rec_stream *rs, struct df__csv_tok *t, struct fr_error *err)
{
    for (;;) {
        if (rs->pos == rs->len && rs->eof)
            return REC_END;
        if (rs->pos < rs->len) {
            const char *next;
            int rc = df__csv_tokenize(t, rs->buf + rs->pos, rs->buf + rs->len, rs->eof, &next);
            if (rc != DF__TOK_MORE) {
                rs->pos = (size_t)(next - rs->buf);
                return rc;
            }
        }
        int rc = fill(rs, err);
        if (rc != FR_OK)
            return rc;
    }
}

/* The next free name base_2, base_3, ... (new). next remembers where the
 * search for each base stopped, so n copies of one name cost O(n) lookups
 * (every candidate of a base is tried at most once). */
static char *free_name(df_name_map *used, df_name_map *next, const char *base)
{
    int k = df_name_map_get(next, base);
    for (k = k < 2 ? 2 : k;; k++) {
        char *alt = fr_xasprintf("%s_%d", base, k);
        if (df_name_map_get(used, alt) < 0) {
            df_name_map_put(next, base, k + 1);
            return alt;
        }
        free(alt);
    }
}

/* Column names from the header (or column0, column1, ...), duplicates
 * renamed; FR_EVALIDATION past FR_MAX_COLUMNS. */
static int add_names(const struct df__csv_tok *t, bool from_header, const char *file, char quote,
                     struct df_schema *out, struct fr_error *err)
{
    if (t->nfields > FR_MAX_COLUMNS) {
        char what[300];
        snprintf(what, sizeof(what), "the %s of %s", from_header ? "header" : "first record", file);
        return df__too_many_columns(err, what, t->nfields, t->nfields == DF__MAX_FIELDS);
    }
    struct fr_buf scratch;
    fr_buf_init(&scratch);
    df_name_map *used = df_name_map_new(), *next = df_name_map_new();
    for (int i = 0; i < t->nfields; i++) {
        char *name;
        size_t n;
        const char *s = df__csv_field_text(&t->f[i], quote, &scratch, &n);
        if (from_header && n > 0)
            name = fr_xstrndup(s, n);
        else
            name = fr_xasprintf("column%d", i); /* DuckDB's names: column0, column1, ... */
        if (df_name_map_get(used, name) >= 0) {
            char *alt = free_name(used, next, name);
            free(name);
            name = alt;
        }
        df_name_map_put(used, name, i);
        df_schema_add(out, name, DF_TYPE_STRING);
        free(name);
    }
    df_name_map_free(used);
    df_name_map_free(next);
    fr_buf_cleanup(&scratch);
    return FR_OK;
}

static void sample_record(const struct df__csv_tok *t, const struct df_options *eo, char quote,
                          struct df__infer *st, int nf, struct fr_buf *scratch)
{
    for (int i = 0; i < t->nfields && i < nf; i++) {
        const struct df__csv_field *f = &t->f[i];
        if (f->len == 0 || f->flags & (DF__F_UNTERMINATED | DF__F_JUNK))
            continue;
        if (!(f->flags & DF__F_QUOTED) && df__csv_is_null_value(eo, f->p, f->len))
            continue;
        size_t n;
        const char *s = df__csv_field_text(f, quote, scratch, &n);
        df__infer_add(&st[i], s, n);
    }
}

int df_csv_infer_schema(const char *path, const struct df_csv_options *o,
                        const struct df_options *eo, struct df_schema *out, struct fr_error *err)
{
    int result = FR_EIO;
    struct df__csv_tok tok;
    struct df__infer *st = NULL;
    df_name_map *hints = NULL;
    struct fr_buf scratch;
    struct rec_stream rs = {.cap = INFER_BUF, .name = df__basename(path)};
    df__csv_tok_init(&tok, o->delimiter, o->quote);
    fr_buf_init(&scratch);
    rs.buf = fr_xmalloc(rs.cap + 1);
    rs.fd = fr_file_open_regular(path);
    if (rs.fd < 0) {
        result = fr_error_set(err, errno == ENOENT ? FR_ENOTFOUND : FR_EIO, "cannot open %s: %s",
                              rs.name, strerror(errno));
        goto out;
    }
    int rc;
    while ((rc = next_record(&rs, &tok, err)) == DF__TOK_BLANK)
        ;
    if (rc < 0) {
        result = rc;
        goto out;
    }
    if (rc == REC_END) { /* an empty file: no columns */
        result = FR_OK;
        goto out;
    }
    if ((result = add_names(&tok, o->header, rs.name, o->quote, out, err)) != FR_OK)
        goto out;
    int nf = out->nfields;
    st = fr_xcalloc((size_t)nf, sizeof(*st));
    for (int i = 0; i < nf; i++)
        df__infer_init(&st[i]);
    if (!o->header)
        sample_record(&tok, eo, o->quote, st, nf, &scratch);
    int64_t limit = o->sample_rows > 0 ? o->sample_rows : 1000;
    for (int64_t rows = o->header ? 0 : 1; rows < limit; rows++) {
        while ((rc = next_record(&rs, &tok, err)) == DF__TOK_BLANK)
            ;
        if (rc == REC_END)
            break;
        if (rc < 0) {
            result = rc;
            goto out;
        }
        sample_record(&tok, eo, o->quote, st, nf, &scratch);
    }
    hints = df_schema_index(o->hints);
    for (int i = 0; i < nf; i++) {
        int h = hints ? df_name_map_get(hints, out->fields[i].name) : -1;
        out->fields[i].type = h >= 0 ? o->hints->fields[h].type : df__infer_result(&st[i]);
    }
    result = FR_OK;
out:
    if (rs.fd >= 0)
        close(rs.fd);
    free(rs.buf);
    free(st);
    df_name_map_free(hints);
    fr_buf_cleanup(&scratch);
    df__csv_tok_cleanup(&tok);
    return result;
}
