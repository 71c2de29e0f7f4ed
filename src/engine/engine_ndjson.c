/* engine_ndjson: newline-delimited JSON: schema inference over the first
 * lines, splitting at line feeds, and reading a range line by line with
 * jansson. Also the JSON value inference and conversion that inline rows
 * (engine_rows.c) share. */
#include "engine_io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_BUF (1 << 20)

void df__json_infer_init(struct df__json_infer *st)
{
    memset(st, 0, sizeof(*st));
    st->all_date = st->all_ts = true;
}

void df__json_infer_add(struct df__json_infer *st, const void *json)
{
    const json_t *v = json;
    int32_t d;
    int64_t ts;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        st->seen_int = true;
        break;
    case JSON_REAL:
        st->seen_real = true;
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        st->seen_bool = true;
        break;
    case JSON_STRING:
        st->seen_string = true;
        if (st->all_date)
            st->all_date = df_parse_date(json_string_value(v), json_string_length(v), &d) == 0;
        if (st->all_ts)
            st->all_ts = df_parse_timestamp(json_string_value(v), json_string_length(v), &ts) == 0;
        break;
    case JSON_OBJECT:
    case JSON_ARRAY:
        st->seen_nested = true;
        break;
    case JSON_NULL:
        break;
    }
}

df_type df__json_infer_result(const struct df__json_infer *st, bool detect_dates)
{
    int kinds = (st->seen_int || st->seen_real) + st->seen_bool + st->seen_string + st->seen_nested;
    if (kinds != 1 || st->seen_nested)
        return DF_TYPE_STRING;
    if (st->seen_bool)
        return DF_TYPE_BOOL;
    if (st->seen_real)
        return DF_TYPE_FLOAT64;
    if (st->seen_int)
        return DF_TYPE_INT64;
    if (detect_dates && st->all_date)
        return DF_TYPE_DATE;
    if (detect_dates && st->all_ts)
        return DF_TYPE_TIMESTAMP;
    return DF_TYPE_STRING;
}

static void append_json_text(struct df_column *c, const json_t *v)
{
    char *text = fr_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) {
        c->oom = true;
        return;
    }
    df_column_append_string(c, text, (int64_t)strlen(text));
    free(text);
}

int df__json_append(struct df_column *c, const void *json)
{
    const json_t *v = json;
    if (!v || json_is_null(v)) {
        df_column_append_null(c);
        return 0;
    }
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    size_t n = s ? json_string_length(v) : 0;
    int32_t d;
    int64_t ts;
    switch (c->type) {
    case DF_TYPE_INT64:
        if (!json_is_integer(v))
            return -1;
        df_column_append_int64(c, (int64_t)json_integer_value(v));
        return 0;
    case DF_TYPE_FLOAT64:
        if (!json_is_number(v))
            return -1;
        df_column_append_float64(c, json_number_value(v));
        return 0;
    case DF_TYPE_BOOL:
        if (!json_is_boolean(v))
            return -1;
        df_column_append_bool(c, json_is_true(v));
        return 0;
    case DF_TYPE_DATE:
        if (!s || df_parse_date(s, n, &d) != 0)
            return -1;
        df_column_append_int32(c, d);
        return 0;
    case DF_TYPE_TIMESTAMP:
        if (!s || df_parse_timestamp(s, n, &ts) != 0)
            return -1;
        df_column_append_int64(c, ts);
        return 0;
    default:
        if (s)
            df_column_append_string(c, s, (int64_t)n);
        else
            append_json_text(c, v);
        return 0;
    }
}

/* Lines of a byte source between two offsets, read in chunks. */
struct line_reader {
    struct df_source *src;      /* borrowed, or &file.base */
    struct df_file_source file; /* when line_open opened a file */
    char *buf;                  /* owned */
    size_t cap, len, pos;
    int64_t base; /* file offset of buf[0] */
    int64_t end;  /* lines that start at or after end are not ours */
    bool eof;
    const char *name;
};

static int line_fill(struct line_reader *lr, struct fr_error *err)
{
    memmove(lr->buf, lr->buf + lr->pos, lr->len - lr->pos);
    lr->base += (int64_t)lr->pos;
    lr->len -= lr->pos;
    lr->pos = 0;
    if (lr->len == lr->cap) { /* one line longer than the buffer */
        char *bigger = lr->cap <= SIZE_MAX / 4 ? fr_try_realloc(lr->buf, lr->cap * 2) : NULL;
        if (!bigger)
            return fr_error_set(err, FR_ETOOLARGE,
                                "%s: a line of more than %zu bytes does not fit in memory",
                                lr->name, lr->cap);
        lr->buf = bigger;
        lr->cap *= 2;
    }
    int64_t at = lr->base + (int64_t)lr->len;
    size_t want = lr->cap - lr->len;
    if (at < lr->end && (int64_t)want > lr->end - at)
        want = (size_t)(lr->end - at);
    size_t got = 0;
    int rc = lr->src->read(lr->src, at, lr->buf + lr->len, want, &got, err);
    if (rc != FR_OK)
        return rc;
    lr->eof = got == 0;
    lr->len += got;
    return FR_OK;
}

/* 1 with the next line (without its line feed) in *s, *n; 0 at the end. */
static int next_line(struct line_reader *lr, const char **s, size_t *n, struct fr_error *err)
{
    for (;;) {
        if (lr->base + (int64_t)lr->pos >= lr->end)
            return 0;
        char *p = lr->buf + lr->pos;
        char *nl = memchr(p, '\n', lr->len - lr->pos);
        if (nl || (lr->eof && lr->pos < lr->len)) {
            char *e = nl ? nl : lr->buf + lr->len;
            lr->pos = (size_t)(e - lr->buf) + (nl != NULL);
            *s = p;
            *n = (size_t)(e - p) - (e > p && e[-1] == '\r');
            return 1;
        }
        if (lr->eof)
            return 0;
        int rc = line_fill(lr, err);
        if (rc != FR_OK)
            return rc;
    }
}

/* Reads src (borrowed) between start and end. */
static void line_init(struct line_reader *lr, struct df_source *src, int64_t start, int64_t end)
{
    memset(lr, 0, sizeof(*lr));
    lr->file.fd = -1;
    lr->src = src;
    lr->name = src->name;
    lr->cap = LINE_BUF;
    lr->buf = fr_xmalloc(lr->cap);
    lr->base = start;
    lr->end = end;
}

static int line_open(struct line_reader *lr, const char *path, int64_t start, int64_t end,
                     struct fr_error *err)
{
    struct df_file_source fs;
    int rc = df_file_source_open(&fs, path, err);
    line_init(lr, &lr->file.base, start, end);
    lr->file = fs;
    lr->name = fs.base.name;
    return rc;
}

static void line_close(struct line_reader *lr)
{
    df_file_source_close(&lr->file);
    free(lr->buf);
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/* Parses one line into an object (new reference) or fails with FR_EDATA. */
static int parse_line(const char *name, int64_t line, const char *s, size_t n, json_t **out,
                      struct fr_error *err)
{
    json_error_t jerr;
    if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) { /* a byte order mark */
        s += 3;
        n -= 3;
    }
    /* \u0000 is kept: strings are lengths plus bytes everywhere */
    json_t *v = json_loadb(s, n, JSON_ALLOW_NUL, &jerr);
    if (v && json_is_object(v)) {
        *out = v;
        return FR_OK;
    }
    *out = NULL;
    int rc = fr_error_set(err, FR_EDATA, "%s line %lld: %s", name, (long long)line,
                          v ? "not a JSON object" : jerr.text);
    err->line = line;
    if (!v && jerr.column > 0)
        err->column = jerr.column;
    json_decref(v);
    return rc;
}

int df_ndjson_infer_schema(const char *path, const struct df_csv_options *o, struct df_schema *out,
                           struct fr_error *err)
{
    int result = FR_EIO;
    struct line_reader lr;
    struct df__json_infer *st = NULL;
    df_name_map *names = df_name_map_new(), *hints = NULL;
    int cap = 0;
    const char *s;
    size_t n;
    int64_t line = 0, rows = 0, limit = o->sample_rows > 0 ? o->sample_rows : 1000;
    if ((result = line_open(&lr, path, 0, INT64_MAX, err)) != FR_OK)
        goto out;
    while (rows < limit && (result = next_line(&lr, &s, &n, err)) == 1) {
        line++;
        if (blank(s, n))
            continue;
        json_t *obj, *v;
        const char *key;
        if ((result = parse_line(lr.name, line, s, n, &obj, err)) != FR_OK)
            goto out;
        json_object_foreach(obj, key, v)
        {
            int k = df_name_map_get(names, key);
            if (k < 0 && out->nfields == FR_MAX_COLUMNS) {
                json_decref(obj);
                char what[300];
                snprintf(what, sizeof(what), "the records of %s up to line %lld", lr.name,
                         (long long)line);
                result = df__too_many_columns(err, what, out->nfields, true);
                goto out;
            }
            if (k < 0) {
                df_name_map_put(names, key, out->nfields);
                df_schema_add(out, key, DF_TYPE_STRING);
                k = out->nfields - 1;
                if (k >= cap) {
                    cap = cap ? cap * 2 : 16;
                    st = fr_xrealloc(st, sizeof(*st) * (size_t)cap);
                }
                df__json_infer_init(&st[k]);
            }
            df__json_infer_add(&st[k], v);
        }
        json_decref(obj);
        rows++;
    }
    if (result < 0)
        goto out;
    hints = df_schema_index(o->hints);
    for (int i = 0; i < out->nfields; i++) {
        int h = hints ? df_name_map_get(hints, out->fields[i].name) : -1;
        out->fields[i].type =
            h >= 0 ? o->hints->fields[h].type : df__json_infer_result(&st[i], true);
    }
    result = FR_OK;
out:
    line_close(&lr);
    free(st);
    df_name_map_free(names);
    df_name_map_free(hints);
    return result;
}

int df_ndjson_split_prefix(const char *path, int64_t target_bytes, int max_ranges,
                           struct df_byte_range **ranges, int *nranges, bool *truncated,
                           struct fr_error *err)
{
    return df__split_file(path, '\0', '\0', false, target_bytes, max_ranges, ranges, nranges,
                          truncated, err);
}

int df_ndjson_split(const char *path, int64_t target_bytes, struct df_byte_range **ranges,
                    int *nranges, struct fr_error *err)
{
    return df__split_file(path, '\0', '\0', false, target_bytes, 0, ranges, nranges, NULL, err);
}

struct ndjson_read {
    const char *name;
    const struct df_csv_options *o;
    const struct df_schema *schema;
    const int *src;
    int nout;
    struct df_column **cols; /* owned, nout */
    struct df_exec *ex;
    struct fr_error *err;
    int64_t line;
};

static int convert_object(struct ndjson_read *r, const json_t *obj)
{
    for (int j = 0; j < r->nout; j++) {
        const char *key = r->schema->fields[r->src[j]].name;
        json_t *v = obj ? json_object_get(obj, key) : NULL;
        if (df__json_append(r->cols[j], v) == 0)
            continue;
        if (r->o->on_error_null) {
            r->ex->null_errors++;
            df_column_append_null(r->cols[j]);
            continue;
        }
        char *text = fr_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        int rc = fr_error_set(
            r->err, FR_EDATA, "%s line %lld, column %d ('%s'): %.40s%s is not a%s %s", r->name,
            (long long)r->line, r->src[j] + 1, key, text ? text : "?",
            text && strlen(text) > 40 ? "..." : "", r->cols[j]->type == DF_TYPE_INT64 ? "n" : "",
            df_type_name(r->cols[j]->type));
        free(text);
        r->err->line = r->line;
        r->err->column = r->src[j] + 1;
        snprintf(r->err->field, sizeof(r->err->field), "%s", key);
        return rc;
    }
    return FR_OK;
}

static int read_lines(struct ndjson_read *r, struct line_reader *lr, int64_t *rows)
{
    int64_t morsel =
        r->ex->opts && r->ex->opts->morsel_size_rows > 0 ? r->ex->opts->morsel_size_rows : 65536;
    int64_t charged = 0;
    const char *s;
    size_t n;
    int rc;
    while ((rc = next_line(lr, &s, &n, r->err)) == 1) {
        r->line++;
        if (blank(s, n))
            continue;
        json_t *obj = NULL;
        if ((rc = parse_line(r->name, r->line, s, n, &obj, r->err)) != FR_OK) {
            if (!r->o->on_error_null)
                goto out;
            r->ex->null_errors++; /* the line becomes a row of nulls */
        }
        rc = convert_object(r, obj);
        json_decref(obj);
        if (rc != FR_OK)
            goto out;
        if (++*rows % morsel == 0) {
            int64_t total = 0;
            for (int j = 0; j < r->nout; j++)
                total += df_column_bytes(r->cols[j]);
            rc = df_exec_charge(r->ex, total - charged, r->err);
            charged = total;
            if (rc != FR_OK)
                goto out;
        }
    }
out:
    /* the caller charges the finished columns as a whole */
    df_exec_release(r->ex, charged);
    return rc;
}

int df_ndjson_read(const char *path, const struct df_byte_range *range,
                   const struct df_csv_options *o, const struct df_schema *schema,
                   const int *columns, int ncolumns, struct df_exec *ex, struct df_table **out,
                   struct fr_error *err)
{
    struct df_file_source fs;
    *out = NULL;
    int rc = df_file_source_open(&fs, path, err);
    if (rc == FR_OK)
        rc = df_ndjson_read_source(&fs.base, range, o, schema, columns, ncolumns, ex, out, err);
    df_file_source_close(&fs);
    return rc;
}

int df_ndjson_read_source(struct df_source *src, const struct df_byte_range *range,
                          const struct df_csv_options *o, const struct df_schema *schema,
                          const int *columns, int ncolumns, struct df_exec *ex,
                          struct df_table **out, struct fr_error *err)
{
    int result = FR_EIO;
    int *identity = NULL;
    int64_t rows = 0;
    struct line_reader lr;
    struct ndjson_read r = {
        .name = src->name, .o = o, .schema = schema, .ex = ex, .err = err, .line = range->line - 1};
    *out = NULL;
    line_init(&lr, src, range->start, range->end);
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
    for (int j = 0; j < ncolumns; j++) {
        if (columns[j] < 0 || columns[j] >= schema->nfields) {
            result = fr_error_set(err, FR_EINTERNAL, "projected column %d of %d", columns[j],
                                  schema->nfields);
            goto out;
        }
        /* capacity 1: concat copies values with memcpy, which must not see NULL */
        r.cols[j] = df_column_new(schema->fields[columns[j]].type, 1);
    }
    if ((result = read_lines(&r, &lr, &rows)) < 0)
        goto out;
    int64_t total = 0;
    for (int j = 0; j < ncolumns; j++) {
        if (!df_column_ok(r.cols[j])) {
            result = fr_error_set(err, FR_ETOOLARGE, "out of memory reading %s", r.name);
            goto out;
        }
        total += df_column_bytes(r.cols[j]);
    }
    if ((result = df_exec_charge(ex, total, err)) != FR_OK) {
        df_exec_release(ex, total);
        goto out;
    }
    struct df_table *t = df_table_new();
    for (int j = 0; j < ncolumns; j++) {
        df_table_add(t, schema->fields[columns[j]].name, r.cols[j]);
        r.cols[j] = NULL; /* the table owns it now */
    }
    t->nrows = rows;
    *out = t;
    result = FR_OK;
out:
    for (int j = 0; r.cols && j < r.nout; j++)
        df_column_unref(r.cols[j]);
    free(r.cols);
    free(identity);
    line_close(&lr);
    return result;
}
