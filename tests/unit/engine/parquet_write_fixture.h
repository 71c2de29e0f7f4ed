/* parquet_write_fixture: what the writer's tests read its files with: a
 * test-only Thrift compact reader (a struct becomes a jansson object keyed
 * by field id), the page walk of a column chunk, and the read back of a
 * whole file by our reader (df_parquet_open/read) compared value for value. */
#ifndef FRAMED_TEST_PARQUET_WRITE_FIXTURE_H
#define FRAMED_TEST_PARQUET_WRITE_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_parquet_write_int.h"

/* ---- a test-only Thrift compact reader, into jansson values ------------- */

struct rd {
    const uint8_t *p;
    size_t n, at;
};

static uint64_t rd_varint(struct rd *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        assert_true(r->at < r->n);
        uint8_t b = r->p[r->at++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            return v;
    }
    fail_msg("varint too long");
    return 0;
}

static int64_t rd_zigzag(struct rd *r)
{
    uint64_t v = rd_varint(r);
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static json_t *rd_struct(struct rd *r);

static json_t *rd_value(struct rd *r, int type)
{
    switch (type) {
    case DF__TC_TRUE:
    case DF__TC_FALSE:
        return json_boolean(type == DF__TC_TRUE);
    case DF__TC_BYTE:
        assert_true(r->at < r->n);
        return json_integer((int8_t)r->p[r->at++]);
    case DF__TC_I16:
    case DF__TC_I32:
    case DF__TC_I64:
        return json_integer(rd_zigzag(r));
    case DF__TC_BINARY: {
        uint64_t len = rd_varint(r);
        assert_true(len <= r->n - r->at);
        json_t *s = json_stringn_nocheck((const char *)r->p + r->at, len);
        r->at += len;
        return s;
    }
    case DF__TC_LIST: {
        assert_true(r->at < r->n);
        uint8_t h = r->p[r->at++];
        uint64_t count = h >> 4;
        if (count == 15)
            count = rd_varint(r);
        json_t *a = json_array();
        for (uint64_t i = 0; i < count; i++) {
            int et = h & 15;
            /* booleans in a list are one byte each */
            json_array_append_new(a, et == DF__TC_TRUE ? json_boolean(r->p[r->at++] == 1)
                                                       : rd_value(r, et));
        }
        return a;
    }
    case DF__TC_STRUCT:
        return rd_struct(r);
    default:
        fail_msg("unexpected compact type %d", type);
        return NULL;
    }
}

/* A struct as an object keyed by field id ("1", "2", ...). */
static json_t *rd_struct(struct rd *r)
{
    json_t *o = json_object();
    int16_t last = 0;
    for (;;) {
        assert_true(r->at < r->n);
        uint8_t h = r->p[r->at++];
        if (h == 0)
            return o;
        int16_t id = (h >> 4) ? (int16_t)(last + (h >> 4)) : (int16_t)rd_zigzag(r);
        last = id;
        char key[8];
        snprintf(key, sizeof key, "%d", id);
        json_object_set_new(o, key, rd_value(r, h & 15));
    }
}

static json_t *get(json_t *v, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "/"); tok && v; tok = strtok(NULL, "/"))
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(tok)) : json_object_get(v, tok);
    return v;
}

static int64_t geti(json_t *v, const char *path)
{
    json_t *x = get(v, path);
    if (!json_is_integer(x))
        fail_msg("no integer at %s", path);
    return json_integer_value(x);
}

/* The footer of a whole file (checks magic and length); new. */
static json_t *footer_of(const struct fr_buf *f)
{
    assert_true(f->len >= 12);
    assert_memory_equal(f->data, "PAR1", 4);
    assert_memory_equal(f->data + f->len - 4, "PAR1", 4);
    uint32_t len;
    memcpy(&len, f->data + f->len - 8, 4);
    assert_true(len <= f->len - 12);
    struct rd r = {(const uint8_t *)f->data + f->len - 8 - len, len, 0};
    json_t *meta = rd_struct(&r);
    assert_int_equal(r.at, len); /* the footer is exactly one struct */
    return meta;
}

/* The page headers of a column chunk: walks every page (header, body) from
 * the chunk's first page to its end; returns them (new). */
static json_t *pages_of(const struct fr_buf *f, json_t *md)
{
    int64_t at = json_object_get(md, "11") ? geti(md, "11") : geti(md, "9");
    int64_t end = at + geti(md, "7");
    assert_true(end <= (int64_t)f->len);
    json_t *pages = json_array();
    while (at < end) {
        struct rd r = {(const uint8_t *)f->data + at, (size_t)(end - at), 0};
        json_t *h = rd_struct(&r);
        at += (int64_t)r.at + geti(h, "3");
        json_array_append_new(pages, h);
    }
    assert_int_equal(at, end);
    return pages;
}

/* ---- read back by our reader ---------------------------------------------- */

struct mem_source {
    struct df_source base;
    const struct fr_buf *f;
};

static int mem_read(struct df_source *s, int64_t off, char *buf, size_t len, size_t *got,
                    struct fr_error *err)
{
    (void)err;
    const struct fr_buf *f = ((struct mem_source *)s)->f;
    size_t n = off >= (int64_t)f->len ? 0 : f->len - (size_t)off;
    *got = n < len ? n : len;
    memcpy(buf, f->data + off, *got);
    return 0;
}

static bool same_value(const struct df_column *a, const struct df_column *b, int64_t i)
{
    if (df_column_is_valid(a, i) != df_column_is_valid(b, i))
        return false;
    if (!df_column_is_valid(a, i))
        return true;
    if (a->type == DF_TYPE_STRING) {
        int64_t al, bl;
        const char *as = df_column_string(a, i, &al), *bs = df_column_string(b, i, &bl);
        return al == bl && memcmp(as, bs, (size_t)al) == 0;
    }
    size_t w = df_type_width(a->type);
    return memcmp((const char *)a->values + i * w, (const char *)b->values + i * w, w) == 0;
}

/* The reader's view of each chunk's statistics: null counts, and the
 * exact min/max of the int64 and date columns. */
static void read_back_stats(const df_parquet *pq, const struct df_table *t)
{
    int64_t first = 0;
    for (int rg = 0; rg < df_parquet_num_row_groups(pq); rg++) {
        struct df_parquet_row_group info;
        df_parquet_row_group_info(pq, rg, &info);
        for (int c = 0; c < t->ncols; c++) {
            const struct df_column *col = t->cols[c];
            struct df_parquet_stats st;
            df_parquet_column_stats(pq, rg, c, &st);
            int64_t nulls = 0, mn = INT64_MAX, mx = INT64_MIN;
            for (int64_t i = first; i < first + info.num_rows; i++) {
                if (!df_column_is_valid(col, i)) {
                    nulls++;
                    continue;
                }
                int64_t v = col->type == DF_TYPE_DATE    ? df_column_int32(col, i)
                            : col->type == DF_TYPE_INT64 ? df_column_int64(col, i)
                                                         : 0;
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
            }
            assert_int_equal(st.null_count, nulls);
            if ((col->type == DF_TYPE_INT64 || col->type == DF_TYPE_DATE) &&
                nulls < info.num_rows) {
                assert_true(st.has_min_max);
                assert_int_equal(st.min.i, mn);
                assert_int_equal(st.max.i, mx);
            }
        }
        first += info.num_rows;
    }
    assert_int_equal(first, t->nrows);
}

/* The file, read back whole by df_parquet_open/read, equals t (NaN and -0
 * bit for bit). */
static void read_back(const struct fr_buf *f, const struct df_table *t, int64_t row_groups)
{
    struct mem_source src = {{mem_read, (int64_t)f->len, "written.parquet"}, f};
    struct fr_error err;
    fr_error_init(&err);
    df_parquet *pq = NULL;
    if (df_parquet_open(&src.base, &pq, &err) != 0)
        fail_msg("df_parquet_open: %s", err.message);
    const struct df_schema *s = df_parquet_schema(pq);
    assert_int_equal(s->nfields, t->ncols);
    for (int c = 0; c < t->ncols; c++) {
        assert_string_equal(s->fields[c].name, t->names[c]);
        assert_int_equal(s->fields[c].type, t->cols[c]->type);
    }
    assert_int_equal(df_parquet_num_rows(pq), t->nrows);
    assert_int_equal(df_parquet_num_row_groups(pq), row_groups);
    struct df_options opts = {.morsel_size_rows = 65536};
    struct df_exec ex;
    df_exec_init(&ex, &opts, NULL);
    struct df_table *got = NULL;
    if (df_parquet_read(pq, 0, (int)row_groups, NULL, -1, &ex, &got, &err) != 0)
        fail_msg("df_parquet_read: %s", err.message);
    assert_int_equal(got->nrows, t->nrows);
    assert_int_equal(got->ncols, t->ncols);
    for (int c = 0; c < t->ncols; c++)
        for (int64_t i = 0; i < t->nrows; i++)
            if (!same_value(t->cols[c], got->cols[c], i))
                fail_msg("column %s row %lld differs after a round trip", t->names[c],
                         (long long)i);
    df_table_free(got);
    read_back_stats(pq, t);
    df_parquet_free(pq);
}

#endif
