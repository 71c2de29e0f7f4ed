/* engine_table: tables of named, equally long columns, schemas, and the
 * name map that keeps per-column checks linear in the column count. */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

struct df_table *df_table_new(void)
{
    return fr_xcalloc(1, sizeof(struct df_table));
}

void df_table_free(struct df_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->ncols; i++) {
        free(t->names[i]);
        df_column_unref(t->cols[i]);
    }
    free(t->names);
    free(t->cols);
    free(t);
}

void df_table_add(struct df_table *t, const char *name, struct df_column *col)
{
    t->names = fr_xrealloc(t->names, sizeof(char *) * (size_t)(t->ncols + 1));
    t->cols = fr_xrealloc(t->cols, sizeof(struct df_column *) * (size_t)(t->ncols + 1));
    t->names[t->ncols] = fr_xstrdup(name);
    t->cols[t->ncols] = col;
    if (t->ncols == 0)
        t->nrows = col->length;
    t->ncols++;
}

int df_table_find(const struct df_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->names[i], name) == 0)
            return i;
    return -1;
}

int64_t df_table_bytes(const struct df_table *t)
{
    int64_t b = 0;
    for (int i = 0; i < t->ncols; i++)
        b += df_column_bytes(t->cols[i]);
    return b;
}

struct df_table *df_table_take(const struct df_table *t, const int64_t *sel, int64_t n)
{
    struct df_table *out = df_table_new();
    for (int i = 0; i < t->ncols; i++)
        df_table_add(out, t->names[i], df_column_take(t->cols[i], sel, n));
    out->nrows = n;
    return out;
}

/* Whether a copy of every row would be as large as the table (memory budgets
 * charge a table's capacity): no room for more rows or string bytes than a
 * slice leaves (16 bytes), and no validity bits without a null. */
static bool holds_no_slack(const struct df_table *t)
{
    for (int i = 0; i < t->ncols; i++) {
        const struct df_column *c = t->cols[i];
        if (c->capacity != c->length || (c->validity && c->null_count == 0) ||
            (c->type == DF_TYPE_STRING && c->data_cap > c->data_len + DF_STRING_PAD))
            return false;
    }
    return true;
}

struct df_table *df_table_slice(const struct df_table *t, int64_t start, int64_t n)
{
    if (start < 0)
        start = 0;
    if (start > t->nrows)
        start = t->nrows;
    if (n < 0 || n > t->nrows - start) /* no start + n: it could overflow */
        n = t->nrows - start;
    if (start == 0 && n == t->nrows && holds_no_slack(t))
        return df_table_share(t); /* the copy would be the same bytes */
    struct df_table *out = df_table_new();
    for (int i = 0; i < t->ncols; i++)
        df_table_add(out, t->names[i], df_column_slice(t->cols[i], start, n));
    out->nrows = n;
    return out;
}

struct df_table *df_table_project(const struct df_table *t, const int *cols, int n)
{
    struct df_table *out = df_table_new();
    for (int i = 0; i < n; i++)
        df_table_add(out, t->names[cols[i]], df_column_ref(t->cols[cols[i]]));
    out->nrows = t->nrows;
    return out;
}

struct df_table *df_table_share(const struct df_table *t)
{
    struct df_table *out = df_table_new();
    for (int i = 0; i < t->ncols; i++)
        df_table_add(out, t->names[i], df_column_ref(t->cols[i]));
    out->nrows = t->nrows;
    return out;
}

struct df_table *df_table_empty_like(const struct df_table *t)
{
    struct df_table *out = df_table_new();
    for (int i = 0; i < t->ncols; i++)
        df_table_add(out, t->names[i], df_column_new(t->cols[i]->type, 0));
    return out;
}

/* Appends all of src to dst in bulk: values, offsets (rebased) and bytes are
 * copied with memcpy; the validity bitmap bit by bit only when nulls exist. */
static void append_column(struct df_column *dst, const struct df_column *src)
{
    int64_t n = src->length;
    if (n == 0)
        return;
    if (df_column_reserve(dst, n, src->type == DF_TYPE_STRING ? src->data_len : 0) != FR_OK)
        return;
    int64_t base = dst->length;
    if (src->type == DF_TYPE_STRING) {
        int64_t shift = dst->data_len - src->offsets[0];
        for (int64_t i = 1; i <= n; i++)
            dst->offsets[base + i] = src->offsets[i] + shift;
        int64_t bytes = src->offsets[n] - src->offsets[0];
        if (bytes > 0)
            memcpy(dst->data + dst->data_len, src->data + src->offsets[0], (size_t)bytes);
        dst->data_len += bytes;
    } else {
        size_t w = df_type_width(src->type);
        memcpy((char *)dst->values + (size_t)base * w, src->values, (size_t)n * w);
    }
    dst->length += n;
    if (dst->validity) { /* rows appended as valid unless src says otherwise */
        for (int64_t i = base; i < base + n; i++)
            dst->validity[i >> 3] |= (uint8_t)(1u << (i & 7));
    }
    if (src->validity) {
        for (int64_t i = 0; i < n; i++)
            if (!df_column_is_valid(src, i))
                df_column_set_null(dst, base + i);
    }
}

int df_table_concat(struct df_table *const *tables, int n, struct df_table **out,
                    struct fr_error *err)
{
    *out = NULL;
    if (n == 0)
        return fr_error_set(err, FR_EINTERNAL, "concat of no tables");
    const struct df_table *first = tables[0];
    for (int k = 1; k < n; k++) {
        const struct df_table *t = tables[k];
        if (t->ncols != first->ncols)
            return fr_error_set(err, FR_EINVAL, "tables to combine have %d and %d columns",
                                first->ncols, t->ncols);
        for (int i = 0; i < t->ncols; i++) {
            if (t->cols[i]->type != first->cols[i]->type)
                return fr_error_set(err, FR_EINVAL,
                                    "column %d ('%s') is %s in one input and %s in another", i + 1,
                                    first->names[i], df_type_name(first->cols[i]->type),
                                    df_type_name(t->cols[i]->type));
        }
    }
    if (n == 1) {
        *out = df_table_share(first);
        return FR_OK;
    }
    int64_t total = 0;
    for (int k = 0; k < n; k++)
        total += tables[k]->nrows;
    struct df_table *res = df_table_new();
    for (int i = 0; i < first->ncols; i++) {
        int64_t bytes = 0;
        for (int k = 0; k < n; k++)
            if (tables[k]->cols[i]->type == DF_TYPE_STRING)
                bytes += tables[k]->cols[i]->data_len;
        struct df_column *c = df_column_new(first->cols[i]->type, 0);
        df_column_reserve(c, total, bytes);
        for (int k = 0; k < n; k++)
            append_column(c, tables[k]->cols[i]);
        if (!df_column_ok(c)) {
            df_column_unref(c);
            df_table_free(res);
            return fr_error_set(err, FR_ETOOLARGE, "out of memory combining %lld rows",
                                (long long)total);
        }
        df_table_add(res, first->names[i], c);
    }
    res->nrows = total;
    *out = res;
    return FR_OK;
}

void df_schema_init(struct df_schema *s)
{
    s->nfields = 0;
    s->fields = NULL;
}

void df_schema_cleanup(struct df_schema *s)
{
    for (int i = 0; i < s->nfields; i++)
        free(s->fields[i].name);
    free(s->fields);
    df_schema_init(s);
}

void df_schema_add(struct df_schema *s, const char *name, df_type type)
{
    s->fields = fr_xrealloc(s->fields, sizeof(struct df_field) * (size_t)(s->nfields + 1));
    s->fields[s->nfields].name = fr_xstrdup(name);
    s->fields[s->nfields].type = type;
    s->nfields++;
}

void df_schema_copy(struct df_schema *dst, const struct df_schema *src)
{
    df_schema_init(dst);
    for (int i = 0; i < src->nfields; i++)
        df_schema_add(dst, src->fields[i].name, src->fields[i].type);
}

void df_schema_of_table(struct df_schema *dst, const struct df_table *t)
{
    df_schema_init(dst);
    for (int i = 0; i < t->ncols; i++)
        df_schema_add(dst, t->names[i], t->cols[i]->type);
}

int df_schema_find(const struct df_schema *s, const char *name)
{
    for (int i = 0; i < s->nfields; i++)
        if (strcmp(s->fields[i].name, name) == 0)
            return i;
    return -1;
}

struct df_table *df_table_from_schema(const struct df_schema *s)
{
    struct df_table *t = df_table_new();
    for (int i = 0; i < s->nfields; i++)
        df_table_add(t, s->fields[i].name, df_column_new(s->fields[i].type, 0));
    return t;
}

/* Open addressing with linear probing, at most half full. */
struct df_name_map {
    char **keys; /* owned; NULL = empty slot */
    int *values;
    size_t cap, n; /* cap is a power of two */
};

df_name_map *df_name_map_new(void)
{
    df_name_map *m = fr_xcalloc(1, sizeof(*m));
    m->cap = 16;
    m->keys = fr_xcalloc(m->cap, sizeof(char *));
    m->values = fr_xcalloc(m->cap, sizeof(int));
    return m;
}

void df_name_map_free(df_name_map *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->values);
    free(m);
}

/* The slot of name, or the empty slot where it would go. */
static size_t name_slot(char *const *keys, size_t cap, const char *name)
{
    size_t i = (size_t)XXH3_64bits(name, strlen(name)) & (cap - 1);
    while (keys[i] && strcmp(keys[i], name) != 0)
        i = (i + 1) & (cap - 1);
    return i;
}

int df_name_map_get(const df_name_map *m, const char *name)
{
    size_t i = name_slot(m->keys, m->cap, name);
    return m->keys[i] ? m->values[i] : -1;
}

static void name_map_grow(df_name_map *m)
{
    size_t cap = m->cap * 2;
    char **keys = fr_xcalloc(cap, sizeof(char *));
    int *values = fr_xcalloc(cap, sizeof(int));
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = name_slot(keys, cap, m->keys[i]);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = cap;
}

void df_name_map_put(df_name_map *m, const char *name, int value)
{
    if (2 * (m->n + 1) > m->cap)
        name_map_grow(m);
    size_t i = name_slot(m->keys, m->cap, name);
    if (!m->keys[i]) {
        m->keys[i] = fr_xstrdup(name);
        m->n++;
    }
    m->values[i] = value;
}

df_name_map *df_schema_index(const struct df_schema *s)
{
    if (!s)
        return NULL;
    df_name_map *m = df_name_map_new();
    for (int i = s->nfields - 1; i >= 0; i--) /* backwards: the first one wins */
        df_name_map_put(m, s->fields[i].name, i);
    return m;
}
