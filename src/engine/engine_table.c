/* engine_table: tables of named, equally long columns, schemas, and the
 * name map that keeps per-column checks linear in the column count. */
#include "engine.h"
#include "engine_ops_int.h"

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
/* Column i of the n tables one after another, sized exactly
 * and written once: no zero-fill of the values before they are copied (a
 * join's or a sort's inputs are hundreds of MB of fresh pages). NULL when
 * out of memory. */
static struct df_column *concat_column(struct df_table *const *tables, int n, int i)
{
    df_type type = tables[0]->cols[i]->type;
    bool str = type == DF_TYPE_STRING;
    int64_t bytes = 0, nulls = 0, rows = 0; /* rows: the columns' own lengths, = total */
    for (int k = 0; k < n; k++) {
        const struct df_column *c = tables[k]->cols[i];
        rows += c->length;
        if (str && c->length > 0)
            bytes += c->offsets[c->length] - c->offsets[0];
        if (c->validity && c->null_count > 0)
            nulls += c->null_count;
    }
    struct df_column *out = df__column_sized(type, rows, bytes, nulls > 0);
    if (!out)
        return NULL;
    size_t w = df_type_width(type);
    int64_t at = 0, data = 0;
    for (int k = 0; k < n; k++) {
        const struct df_column *c = tables[k]->cols[i];
        int64_t len = c->length;
        if (len == 0)
            continue;
        if (str) {
            int64_t shift = data - c->offsets[0], b = c->offsets[len] - c->offsets[0];
            for (int64_t j = 1; j <= len; j++)
                out->offsets[at + j] = c->offsets[j] + shift;
            if (b > 0)
                memcpy(out->data + data, c->data + c->offsets[0], (size_t)b);
            data += b;
        } else {
            memcpy((char *)out->values + (size_t)at * w, c->values, (size_t)len * w);
        }
        if (nulls > 0) { /* out's bitmap starts all null: set the valid rows */
            bool some_null = c->validity && c->null_count > 0;
            for (int64_t j = 0; j < len; j++)
                if (!some_null || df_column_is_valid(c, j))
                    out->validity[(at + j) >> 3] |= (uint8_t)(1u << ((at + j) & 7));
        }
        at += len;
    }
    out->length = at; /* = total: every column of a table has its rows */
    out->data_len = data;
    out->null_count = nulls;
    return out;
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
        struct df_column *c = concat_column(tables, n, i);
        if (!c) {
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
    /* room by doubling (8, 16, ...: full when nfields is 8 or a power of two
     * above): a field at a time was quadratic, 800 MB of copies for a
     * 10,000-column schema where realloc cannot grow in place (ASan's) */
    int n = s->nfields;
    if (n == 0 || (n >= 8 && (n & (n - 1)) == 0))
        s->fields = fr_xrealloc(s->fields, sizeof(struct df_field) * (size_t)(n ? 2 * n : 8));
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
