/* engine_csv_read: reads the records of one byte range of a CSV file into a
 * table: read from a byte source (a file: pread) in 1 MiB chunks, tokenize each record, convert
 * only the projected fields, append to columns that were sized up front from a sample of the first
 * chunk (large arrays on huge pages). */
#include "engine_io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_BUF (1 << 20)
/* Reads beyond the range only finish its last record: they start small and
 * double with the pending record, so a long record is not rescanned once per
 * small read. */
#define PAST_END_READ (64 << 10)

struct csv_read {
    const char *name; /* the file's base name, for messages */
    const struct df_csv_options *o;
    const struct df_schema *schema;
    struct df_exec *ex;
    struct fr_error *err;
    int nf;                  /* fields each record must have */
    int nout;                /* materialized columns */
    const int *src;          /* per output column: its schema field */
    struct df_column **cols; /* owned, nout */
    struct df__csv_tok tok;
    struct fr_buf scratch;
    int64_t line;     /* line where the current record starts */
    int64_t charged;  /* bytes charged to ex for the columns */
    bool null_values; /* the options name CSV null values */
};

static inline void mark_valid(struct df_column *c)
{
    if (c->validity)
        c->validity[c->length >> 3] |= (uint8_t)(1u << (c->length & 7));
}

static inline void put_fixed(struct df_column *c, const void *v, size_t w)
{
    if (c->length == c->capacity && df_column_reserve(c, 1, 0) != FR_OK)
        return;
    memcpy((char *)c->values + (size_t)c->length * w, v, w);
    mark_valid(c);
    c->length++;
}

static inline void put_string(struct df_column *c, const char *s, size_t n)
{
    if ((c->length == c->capacity || c->data_len + (int64_t)n > c->data_cap) &&
        df_column_reserve(c, 1, (int64_t)n) != FR_OK)
        return;
    memcpy(c->data + c->data_len, s, n);
    c->data_len += (int64_t)n;
    mark_valid(c);
    c->offsets[++c->length] = c->data_len;
}

/* A value that does not fit: FR_EDATA naming the place, or a counted null. */
static int bad_value(struct csv_read *r, struct df_column *c, int k, const char *why, const char *s,
                     size_t n)
{
    if (r->o->on_error_null) {
        r->ex->null_errors++;
        df_column_append_null(c);
        return FR_OK;
    }
    const char *field = r->schema->fields[k].name;
    int rc = fr_error_set(r->err, FR_EDATA, "%s line %lld, column %d ('%s'): '%.*s'%s%s", r->name,
                          (long long)r->line, k + 1, field, n > 40 ? 40 : (int)n, s,
                          n > 40 ? "..." : "", why);
    r->err->line = r->line;
    r->err->column = k + 1;
    snprintf(r->err->field, sizeof(r->err->field), "%s", field);
    return rc;
}

static int convert_field(struct csv_read *r, struct df_column *c, int k,
                         const struct df__csv_field *f)
{
    char why[48];
    size_t n;
    if (f->flags == 0 && f->len && !r->null_values) { /* a plain field */
        union {
            int64_t i;
            double d;
        } fv;
        if (c->type == DF_TYPE_STRING) {
            put_string(c, f->p, f->len);
            return FR_OK;
        }
        if (c->type == DF_TYPE_INT64 && df__fast_int64(f->p, f->len, &fv.i)) {
            put_fixed(c, &fv.i, 8);
            return FR_OK;
        }
        if (c->type == DF_TYPE_FLOAT64 && df__fast_float64(f->p, f->len, &fv.d)) {
            put_fixed(c, &fv.d, 8);
            return FR_OK;
        }
    }
    if (f->flags & DF__F_UNTERMINATED)
        return bad_value(r, c, k, " has an unterminated quote", f->p, f->len);
    if (f->flags & DF__F_JUNK)
        return bad_value(r, c, k, " has characters after its closing quote", f->p, f->len);
    if (f->len == 0 && (!(f->flags & DF__F_QUOTED) || c->type != DF_TYPE_STRING)) {
        df_column_append_null(c);
        return FR_OK;
    }
    if (!(f->flags & DF__F_QUOTED) && r->null_values &&
        df__csv_is_null_value(r->ex->opts, f->p, f->len)) {
        df_column_append_null(c);
        return FR_OK;
    }
    const char *s = df__csv_field_text(f, r->o->quote, &r->scratch, &n);
    union {
        int64_t i;
        double d;
        int32_t i32;
        bool b;
    } v;
    switch (c->type) {
    case DF_TYPE_INT64:
        if (df__parse_int64(s, n, &v.i) != 0)
            break;
        put_fixed(c, &v.i, 8);
        return FR_OK;
    case DF_TYPE_FLOAT64:
        if (df__parse_float64(s, n, &v.d) != 0)
            break;
        put_fixed(c, &v.d, 8);
        return FR_OK;
    case DF_TYPE_BOOL:
        if (df__parse_bool(s, n, &v.b) != 0)
            break;
        df_column_append_bool(c, v.b);
        return FR_OK;
    case DF_TYPE_DATE:
        if (df_parse_date(s, n, &v.i32) != 0)
            break;
        put_fixed(c, &v.i32, 4);
        return FR_OK;
    case DF_TYPE_TIMESTAMP:
        if (df_parse_timestamp(s, n, &v.i) != 0)
            break;
        put_fixed(c, &v.i, 8);
        return FR_OK;
    default:
        put_string(c, s, n);
        return FR_OK;
    }
    snprintf(why, sizeof(why), " is not a%s %s", c->type == DF_TYPE_INT64 ? "n" : "",
             df_type_name(c->type));
    return bad_value(r, c, k, why, s, n);
}

static int field_count_error(struct csv_read *r)
{
    int found = r->tok.nfields;
    if (r->o->on_error_null) { /* extra fields are dropped, missing ones null */
        r->ex->null_errors++;
        return FR_OK;
    }
    int rc =
        fr_error_set(r->err, FR_EDATA, "%s line %lld: expected %d fields, found %s%d%s", r->name,
                     (long long)r->line, r->nf, found == DF__MAX_FIELDS ? "more than " : "",
                     found == DF__MAX_FIELDS ? FR_MAX_COLUMNS : found,
                     found > r->nf ? " (an unquoted delimiter in a value?)" : "");
    r->err->line = r->line;
    r->err->column = (found > r->nf ? r->nf : found) + 1;
    return rc;
}

static int convert_record(struct csv_read *r)
{
    const struct df__csv_tok *t = &r->tok;
    int rc;
    if (t->nfields != r->nf && !(t->f[t->nfields - 1].flags & DF__F_UNTERMINATED) &&
        (rc = field_count_error(r)) != FR_OK)
        return rc;
    for (int j = 0; j < r->nout; j++) {
        int k = r->src[j];
        if (k >= t->nfields)
            df_column_append_null(r->cols[j]);
        else if ((rc = convert_field(r, r->cols[j], k, &t->f[k])) != FR_OK)
            return rc;
    }
    return FR_OK;
}

/* Sizes the columns for the whole range from the records of the first chunk,
 * so that the hot loop never reallocates. */
static void presize(struct csv_read *r, const char *buf, size_t len, bool eof, int64_t range_bytes)
{
    int64_t *bytes = fr_xcalloc((size_t)r->nout + 1, sizeof(int64_t));
    const char *p = buf, *e = buf + len, *next;
    int64_t recs = 0;
    while (p < e && recs < 20000) {
        int rc = df__csv_tokenize(&r->tok, p, e, eof, &next);
        if (rc == DF__TOK_MORE)
            break;
        for (int j = 0; rc == DF__TOK_RECORD && j < r->nout; j++)
            if (r->src[j] < r->tok.nfields)
                bytes[j] += r->tok.f[r->src[j]].len;
        recs += rc == DF__TOK_RECORD;
        p = next;
    }
    int64_t rows = recs && p > buf ? range_bytes / (p - buf) * recs : 0;
    rows += rows / 32 + recs + 64;
    for (int j = 0; j < r->nout; j++) {
        struct df_column *c = r->cols[j];
        size_t w = df_type_width(c->type);
        void *v = w ? df__alloc_large((size_t)rows * w) : df__alloc_large((size_t)(rows + 1) * 8);
        int64_t dcap = recs ? bytes[j] / recs * (rows + rows / 16) + 64 : 64;
        char *d = w ? NULL : df__alloc_large((size_t)dcap);
        if (!v || (!w && !d)) {
            free(v);
            free(d);
            continue; /* appends grow the column and report running out */
        }
        if (w) {
            free(c->values);
            c->values = v;
        } else {
            free(c->offsets);
            c->offsets = v;
            c->offsets[0] = 0;
            free(c->data);
            c->data = d;
            c->data_cap = dcap;
        }
        c->capacity = rows;
    }
    free(bytes);
}

static int charge_columns(struct csv_read *r)
{
    int64_t total = 0;
    for (int j = 0; j < r->nout; j++)
        total += df_column_bytes(r->cols[j]);
    int64_t delta = total - r->charged;
    r->charged = total;
    return df_exec_charge(r->ex, delta, r->err);
}

/* Reads at the end of buf; *eof when the source has no more bytes. */
static int fill(struct csv_read *r, struct df_source *src, char *buf, size_t *len, size_t cap,
                int64_t base, int64_t range_end, bool *eof)
{
    int64_t pos = base + (int64_t)*len;
    size_t want = cap - *len;
    size_t past = *len > PAST_END_READ ? *len : PAST_END_READ;
    if (pos >= range_end && want > past)
        want = past;
    else if (pos < range_end && (int64_t)want > range_end - pos)
        want = (size_t)(range_end - pos);
    size_t got = 0;
    int rc = src->read(src, pos, buf + *len, want, &got, r->err);
    if (rc != FR_OK)
        return rc;
    *eof = got == 0;
    *len += got;
    buf[*len] = '\n';
    memset(buf + *len + 1, 0, DF__READ_PAD); /* the number parsers read up to here */
    return FR_OK;
}

/* One record longer than the buffer: twice the room, or FR_ETOOLARGE. */
static int grow_buffer(struct csv_read *r, char **buf, size_t *cap)
{
    char *bigger = *cap <= SIZE_MAX / 4 ? fr_try_realloc(*buf, *cap * 2 + 1 + DF__READ_PAD) : NULL;
    if (!bigger)
        return fr_error_set(r->err, FR_ETOOLARGE,
                            "%s line %lld: a record of more than %zu bytes does not fit in memory",
                            r->name, (long long)r->line, *cap);
    *buf = bigger;
    *cap *= 2;
    return FR_OK;
}

static int read_range(struct csv_read *r, struct df_source *src, const struct df_byte_range *range,
                      int64_t *rows)
{
    int result = FR_EIO;
    size_t cap = READ_BUF, len = 0;
    char *buf = fr_xmalloc(cap + 1 + DF__READ_PAD);
    int64_t base = range->start;
    bool eof = false, sized = false;
    int64_t morsel =
        r->ex->opts && r->ex->opts->morsel_size_rows > 0 ? r->ex->opts->morsel_size_rows : 65536;
    int64_t until_check = morsel;
    for (;;) {
        if ((result = fill(r, src, buf, &len, cap, base, range->end, &eof)) != FR_OK)
            goto out;
        if (!sized) {
            presize(r, buf, len, eof, range->end - range->start);
            sized = true;
            if ((result = charge_columns(r)) != FR_OK)
                goto out;
        }
        const char *p = buf, *e = buf + len, *next;
        while (p < e && base + (p - buf) < range->end) {
            int rc = df__csv_plain_record(&r->tok, p, e, &next)
                         ? DF__TOK_RECORD
                         : df__csv_tokenize(&r->tok, p, e, eof, &next);
            if (rc == DF__TOK_MORE)
                break;
            if (rc == DF__TOK_RECORD) {
                if ((result = convert_record(r)) != FR_OK)
                    goto out;
                ++*rows;
            }
            r->line += r->tok.nlines;
            p = next;
            if (--until_check == 0) {
                until_check = morsel;
                if ((result = charge_columns(r)) != FR_OK)
                    goto out;
            }
        }
        if (base + (p - buf) >= range->end || (eof && p == e))
            break;
        /* keep the unfinished record; p points into buf, so move it
         * before buf may move */
        size_t used = (size_t)(p - buf);
        memmove(buf, p, len - used);
        len -= used;
        base += (int64_t)used;
        if (len == cap && (result = grow_buffer(r, &buf, &cap)) != FR_OK)
            goto out;
    }
    result = FR_OK;
out:
    free(buf);
    return result;
}

static int check_request(const struct df_schema *schema, const int *columns, int ncolumns,
                         struct fr_error *err)
{
    for (int i = 0; i < schema->nfields; i++)
        if (schema->fields[i].type == DF_TYPE_NULL)
            return fr_error_set(err, FR_EINVAL, "column '%s' has no type", schema->fields[i].name);
    for (int j = 0; columns && j < ncolumns; j++)
        if (columns[j] < 0 || columns[j] >= schema->nfields)
            return fr_error_set(err, FR_EINTERNAL, "projected column %d of %d", columns[j],
                                schema->nfields);
    return FR_OK;
}

int df_csv_read(const char *path, const struct df_byte_range *range, const struct df_csv_options *o,
                const struct df_schema *schema, const int *columns, int ncolumns,
                struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    struct df_file_source fs;
    *out = NULL;
    int rc = df_file_source_open(&fs, path, err);
    if (rc == FR_OK)
        rc = df_csv_read_source(&fs.base, range, o, schema, columns, ncolumns, ex, out, err);
    df_file_source_close(&fs);
    return rc;
}

int df_csv_read_source(struct df_source *src, const struct df_byte_range *range,
                       const struct df_csv_options *o, const struct df_schema *schema,
                       const int *columns, int ncolumns, struct df_exec *ex, struct df_table **out,
                       struct fr_error *err)
{
    int result = FR_EIO;
    int *identity = NULL;
    int64_t rows = 0;
    struct csv_read r = {.name = src->name,
                         .o = o,
                         .schema = schema,
                         .ex = ex,
                         .err = err,
                         .nf = schema->nfields,
                         .line = range->line,
                         .null_values = ex->opts && ex->opts->n_csv_null_values > 0};
    *out = NULL;
    df__csv_tok_init(&r.tok, o->delimiter, o->quote);
    fr_buf_init(&r.scratch);
    if ((result = check_request(schema, columns, ncolumns, err)) != FR_OK)
        goto out;
    if (!columns) {
        identity = fr_xmalloc(sizeof(int) * (size_t)(schema->nfields + 1));
        for (int i = 0; i < schema->nfields; i++)
            identity[i] = i;
        columns = identity;
        ncolumns = schema->nfields;
    }
    r.src = columns;
    r.nout = ncolumns;
    r.cols = fr_xcalloc((size_t)ncolumns + 1, sizeof(*r.cols));
    for (int j = 0; j < ncolumns; j++)
        /* capacity 1: concat copies values with memcpy, which must not see NULL */
        r.cols[j] = df_column_new(schema->fields[columns[j]].type, 1);
    /* A range comes from a task spec: past the file's end it would only
     * size the columns for bytes that are not there. */
    struct df_byte_range clamped = *range;
    if (src->size >= 0 && clamped.end > src->size)
        clamped.end = src->size;
    if (clamped.start < clamped.end && (result = read_range(&r, src, &clamped, &rows)) != FR_OK)
        goto out;
    for (int j = 0; j < ncolumns; j++) {
        if (!df_column_ok(r.cols[j])) {
            result = fr_error_set(err, FR_ETOOLARGE, "out of memory reading %s (%lld rows)", r.name,
                                  (long long)rows);
            goto out;
        }
    }
    if ((result = charge_columns(&r)) != FR_OK)
        goto out;
    struct df_table *t = df_table_new();
    for (int j = 0; j < ncolumns; j++) {
        df_table_add(t, schema->fields[columns[j]].name, r.cols[j]);
        r.cols[j] = NULL; /* the table owns it now */
    }
    t->nrows = rows;
    *out = t;
    r.charged = 0; /* the table's memory stays charged to the task */
    result = FR_OK;
out:
    if (result != FR_OK && r.charged) {
        struct fr_error ignored;
        fr_error_init(&ignored);
        df_exec_charge(ex, -r.charged, &ignored);
    }
    for (int j = 0; r.cols && j < r.nout; j++)
        df_column_unref(r.cols[j]);
    free(r.cols);
    free(identity);
    fr_buf_cleanup(&r.scratch);
    df__csv_tok_cleanup(&r.tok);
    return result;
}
