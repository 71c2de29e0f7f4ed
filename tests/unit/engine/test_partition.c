/* Tests of src/engine/engine_partition.c: sampling, boundaries and range
 * partitioning (sorted parts concatenated are globally sorted), and hash
 * partitioning (equal keys together, int64 and float64 alike). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

static struct df_options OPTS = {.morsel_size_rows = 1024};

/* k: int64 with many duplicates and nulls, s: strings, id: the input row. */
static struct df_table *random_table(int64_t n, unsigned seed)
{
    srand(seed);
    struct df_column *k = df_column_new(DF_TYPE_INT64, n), *s = df_column_new(DF_TYPE_STRING, n);
    struct df_column *id = df_column_new(DF_TYPE_INT64, n);
    for (int64_t r = 0; r < n; r++) {
        char buf[16];
        if (rand() % 15 == 0)
            df_column_append_null(k);
        else
            df_column_append_int64(k, rand() % 20);
        int len = snprintf(buf, sizeof(buf), "w%d", rand() % 6);
        df_column_append_string(s, buf, len);
        df_column_append_int64(id, r);
    }
    struct df_table *t = df_table_new();
    df_table_add(t, "k", k);
    df_table_add(t, "s", s);
    df_table_add(t, "id", id);
    return t;
}

static void test_range_partition_concatenates_sorted(void **state)
{
    (void)state;
    struct df_table *in = random_table(4000, 11);
    struct df_sort_key keys[] = {{1, true, false}, {0, false, true}};
    struct df_exec ex;
    df_exec_init(&ex, &OPTS, NULL);
    struct fr_error err;
    fr_error_init(&err);
    enum { PIECES = 3, NPARTS = 5 };
    int64_t cuts[] = {0, 1000, 2500, 4000};
    struct df_table *pieces[PIECES], *samples[PIECES], *all_samples = NULL, *bounds = NULL;
    for (int i = 0; i < PIECES; i++) {
        pieces[i] = df_table_slice(in, cuts[i], cuts[i + 1] - cuts[i]);
        samples[i] = df_sort_sample(pieces[i], keys, 2, 50);
        assert_int_equal(samples[i]->nrows, 50);
        assert_int_equal(samples[i]->ncols, 2);
    }
    assert_int_equal(df_table_concat(samples, PIECES, &all_samples, &err), FR_OK);
    assert_int_equal(df_sort_boundaries(all_samples, keys, 2, NPARTS, &ex, &bounds, &err), FR_OK);
    assert_int_equal(bounds->nrows, NPARTS - 1);
    /* each piece split by range; part p of every piece gathered and sorted */
    struct df_table *parts[PIECES][NPARTS], *sorted_parts[NPARTS];
    for (int i = 0; i < PIECES; i++)
        assert_int_equal(df_range_partition(pieces[i], keys, 2, bounds, NPARTS, parts[i], &err),
                         FR_OK);
    int nonempty = 0;
    for (int p = 0; p < NPARTS; p++) {
        struct df_table *gather[PIECES], *cat = NULL;
        for (int i = 0; i < PIECES; i++)
            gather[i] = parts[i][p];
        assert_int_equal(df_table_concat(gather, PIECES, &cat, &err), FR_OK);
        assert_int_equal(df_sort(cat, keys, 2, &ex, &sorted_parts[p], &err), FR_OK);
        nonempty += cat->nrows > 0;
        df_table_free(cat);
    }
    assert_true(nonempty >= 3);
    struct df_table *global = NULL, *whole = NULL;
    assert_int_equal(df_table_concat(sorted_parts, NPARTS, &global, &err), FR_OK);
    assert_int_equal(df_sort(in, keys, 2, &ex, &whole, &err), FR_OK);
    /* identical to one stable sort of everything, row ids included */
    assert_int_equal(global->nrows, whole->nrows);
    for (int64_t r = 0; r < whole->nrows; r++)
        assert_int_equal(df_column_int64(global->cols[2], r), df_column_int64(whole->cols[2], r));
    df_table_free(global);
    df_table_free(whole);
    for (int p = 0; p < NPARTS; p++) {
        df_table_free(sorted_parts[p]);
        for (int i = 0; i < PIECES; i++)
            df_table_free(parts[i][p]);
    }
    for (int i = 0; i < PIECES; i++) {
        df_table_free(pieces[i]);
        df_table_free(samples[i]);
    }
    df_table_free(all_samples);
    df_table_free(bounds);
    df_table_free(in);
}

static void test_range_partition_empty_samples(void **state)
{
    (void)state;
    struct df_table *in = random_table(100, 3);
    struct df_sort_key keys[] = {{0, false, false}};
    struct df_table *empty = df_table_slice(in, 0, 0);
    struct df_table *samples = df_sort_sample(empty, keys, 1, 10), *bounds = NULL;
    struct df_exec ex;
    df_exec_init(&ex, &OPTS, NULL);
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_sort_boundaries(samples, keys, 1, 4, &ex, &bounds, &err), FR_OK);
    assert_int_equal(bounds->nrows, 0);
    struct df_table *parts[4];
    assert_int_equal(df_range_partition(in, keys, 1, bounds, 4, parts, &err), FR_OK);
    assert_int_equal(parts[0]->nrows, 100);
    for (int p = 0; p < 4; p++)
        df_table_free(parts[p]);
    df_table_free(bounds);
    df_table_free(samples);
    df_table_free(empty);
    df_table_free(in);
}

static void test_hash_partition_consistency(void **state)
{
    (void)state;
    enum { N = 3000, NPARTS = 7 };
    struct df_column *ik = df_column_new(DF_TYPE_INT64, N), *fk = df_column_new(DF_TYPE_FLOAT64, N);
    srand(5);
    for (int r = 0; r < N; r++) {
        int v = rand() % 200 - 100;
        if (v == 0) {
            df_column_append_null(ik);
            df_column_append_null(fk);
        } else {
            df_column_append_int64(ik, v);
            df_column_append_float64(fk, (double)v);
        }
    }
    struct df_table *ti = df_table_new(), *tf = df_table_new();
    df_table_add(ti, "k", ik);
    df_table_add(tf, "k", fk);
    int key = 0;
    uint64_t hi[N], hf[N];
    df_hash_rows(ti, &key, 1, hi);
    df_hash_rows(tf, &key, 1, hf);
    for (int r = 0; r < N; r++)
        assert_true(hi[r] == hf[r]);
    struct df_table *pi[NPARTS], *pf[NPARTS];
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_hash_partition(ti, &key, 1, NPARTS, pi, &err), FR_OK);
    assert_int_equal(df_hash_partition(tf, &key, 1, NPARTS, pf, &err), FR_OK);
    int where[201];
    memset(where, -1, sizeof(where));
    int64_t total = 0, used = 0;
    for (int p = 0; p < NPARTS; p++) {
        assert_int_equal(pi[p]->nrows, pf[p]->nrows);
        total += pi[p]->nrows;
        used += pi[p]->nrows > 0;
        for (int64_t r = 0; r < pi[p]->nrows; r++) {
            int v =
                df_column_is_valid(pi[p]->cols[0], r) ? (int)df_column_int64(pi[p]->cols[0], r) : 0;
            assert_true(where[v + 100] == -1 || where[v + 100] == p);
            where[v + 100] = p;
            if (v)
                assert_true(df_column_float64(pf[p]->cols[0], r) == (double)v);
        }
    }
    assert_int_equal(total, N);
    assert_true(used > NPARTS / 2);
    /* a non-integral float does not collide with its truncation */
    struct df_column *f2 = df_column_new(DF_TYPE_FLOAT64, 2);
    df_column_append_float64(f2, 2.5);
    df_column_append_float64(f2, 2.0);
    struct df_table *t2 = df_table_new();
    df_table_add(t2, "k", f2);
    uint64_t h2[2];
    df_hash_rows(t2, &key, 1, h2);
    assert_true(h2[0] != h2[1]);
    df_table_free(t2);
    for (int p = 0; p < NPARTS; p++) {
        df_table_free(pi[p]);
        df_table_free(pf[p]);
    }
    df_table_free(ti);
    df_table_free(tf);
}

static void test_hash_partition_multi_key(void **state)
{
    (void)state;
    struct df_table *in = random_table(2000, 8);
    int keys[] = {1, 0};
    struct df_table *parts[4];
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_hash_partition(in, keys, 2, 4, parts, &err), FR_OK);
    /* every (s, k) pair in exactly one part; order inside a part is input order */
    int64_t total = 0;
    for (int p = 0; p < 4; p++) {
        total += parts[p]->nrows;
        for (int64_t r = 1; r < parts[p]->nrows; r++)
            assert_true(df_column_int64(parts[p]->cols[2], r - 1) <
                        df_column_int64(parts[p]->cols[2], r));
        for (int q = p + 1; q < 4; q++)
            for (int64_t r = 0; r < parts[p]->nrows; r += 37)
                for (int64_t x = 0; x < parts[q]->nrows; x++) {
                    int64_t n1, n2;
                    const char *a = df_column_string(parts[p]->cols[1], r, &n1);
                    const char *b = df_column_string(parts[q]->cols[1], x, &n2);
                    bool same_s = n1 == n2 && memcmp(a, b, (size_t)n1) == 0;
                    bool v1 = df_column_is_valid(parts[p]->cols[0], r);
                    bool v2 = df_column_is_valid(parts[q]->cols[0], x);
                    bool same_k = v1 == v2 && (!v1 || df_column_int64(parts[p]->cols[0], r) ==
                                                          df_column_int64(parts[q]->cols[0], x));
                    assert_false(same_s && same_k);
                }
    }
    assert_int_equal(total, 2000);
    for (int p = 0; p < 4; p++)
        df_table_free(parts[p]);
    df_table_free(in);
}

/* Every column type, with and without nulls, strings short (moved as two
 * words) and long: each part holds exactly its rows of the input, in input
 * order, as a take of those rows would (the split scatters each column in
 * one pass); a part without nulls has no validity, and no part keeps room
 * past its rows. */
static void assert_same_cell(const struct df_column *a, int64_t i, const struct df_column *b,
                             int64_t j)
{
    assert_int_equal(a->type, b->type);
    bool va = df_column_is_valid(a, i), vb = df_column_is_valid(b, j);
    assert_int_equal(va, vb);
    if (!va)
        return;
    switch (a->type) {
    case DF_TYPE_STRING: {
        int64_t n1, n2;
        const char *x = df_column_string(a, i, &n1), *y = df_column_string(b, j, &n2);
        assert_int_equal(n1, n2);
        assert_memory_equal(x, y, (size_t)n1);
        break;
    }
    case DF_TYPE_BOOL:
        assert_int_equal(df_column_bool(a, i), df_column_bool(b, j));
        break;
    case DF_TYPE_DATE:
        assert_int_equal(df_column_int32(a, i), df_column_int32(b, j));
        break;
    default:
        assert_int_equal(df_column_int64(a, i), df_column_int64(b, j)); /* float64's bits too */
        break;
    }
}

static void test_hash_partition_every_type(void **state)
{
    (void)state;
    enum { N = 5000, NPARTS = 13 };
    const df_type types[] = {DF_TYPE_INT64, DF_TYPE_FLOAT64,   DF_TYPE_BOOL,
                             DF_TYPE_DATE,  DF_TYPE_TIMESTAMP, DF_TYPE_STRING};
    enum { NT = sizeof(types) / sizeof(types[0]) };
    struct df_table *in = df_table_new();
    srand(11);
    for (int nulls = 0; nulls < 2; nulls++)
        for (int t = 0; t < NT; t++) {
            struct df_column *c = df_column_new(types[t], N);
            for (int64_t r = 0; r < N; r++) {
                if (nulls && rand() % 7 == 0) {
                    df_column_append_null(c);
                    continue;
                }
                char buf[48];
                int len = rand() % 40;
                for (int i = 0; i < len; i++)
                    buf[i] = (char)('a' + rand() % 26);
                switch (types[t]) {
                case DF_TYPE_STRING:
                    df_column_append_string(c, buf, len);
                    break;
                case DF_TYPE_BOOL:
                    df_column_append_bool(c, rand() % 2);
                    break;
                case DF_TYPE_DATE:
                    df_column_append_int32(c, rand() - RAND_MAX / 2);
                    break;
                case DF_TYPE_FLOAT64:
                    df_column_append_float64(c, rand() / 3.0);
                    break;
                default:
                    df_column_append_int64(c, (int64_t)rand() * rand());
                    break;
                }
            }
            char name[16];
            snprintf(name, sizeof(name), "c%d_%d", nulls, t);
            df_table_add(in, name, c);
        }
    struct df_column *id = df_column_new(DF_TYPE_INT64, N);
    for (int64_t r = 0; r < N; r++)
        df_column_append_int64(id, r);
    df_table_add(in, "id", id);
    in->nrows = N;
    int keys[] = {NT + NT - 1, 2}; /* strings with nulls, and bools */
    struct df_table *parts[NPARTS];
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_hash_partition(in, keys, 2, NPARTS, parts, &err), FR_OK);
    int64_t total = 0, *sel = malloc(sizeof(int64_t) * N);
    for (int p = 0; p < NPARTS; p++) {
        struct df_table *part = parts[p];
        assert_int_equal(part->ncols, in->ncols);
        total += part->nrows;
        for (int64_t r = 0; r < part->nrows; r++) {
            sel[r] = df_column_int64(part->cols[in->ncols - 1], r);
            if (r > 0)
                assert_true(sel[r] > sel[r - 1]);
        }
        struct df_table *want = df_table_take(in, sel, part->nrows);
        for (int i = 0; i < in->ncols; i++) {
            const struct df_column *c = part->cols[i];
            assert_string_equal(part->names[i], in->names[i]);
            assert_int_equal(c->length, part->nrows);
            assert_int_equal(c->capacity, part->nrows);
            assert_int_equal(c->null_count, want->cols[i]->null_count);
            assert_true(c->null_count > 0 || c->validity == NULL);
            if (c->type == DF_TYPE_STRING)
                assert_int_equal(c->data_len, want->cols[i]->data_len);
            for (int64_t r = 0; r < part->nrows; r++)
                assert_same_cell(c, r, want->cols[i], r);
        }
        df_table_free(want);
        df_table_free(part);
    }
    assert_int_equal(total, N);
    free(sel);
    df_table_free(in);
}

/* A hostile partition count is refused before the caller's array is
 * touched (a worker used to allocate for buckets: -1). */
static void test_partition_counts_bounded(void **state)
{
    (void)state;
    struct df_table *t = random_table(10, 7);
    struct df_table *parts[2] = {(struct df_table *)1, (struct df_table *)1};
    int key = 0;
    struct fr_error err;
    const int bad[] = {0, -1, 65537, 1 << 30};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fr_error_init(&err);
        assert_int_equal(df_hash_partition(t, &key, 1, bad[i], parts, &err), FR_EINVAL);
        assert_non_null(strstr(err.message, "partitions"));
        struct df_table *bounds = df_table_new();
        struct df_sort_key k = {.col = 0};
        fr_error_init(&err);
        assert_int_equal(df_range_partition(t, &k, 1, bounds, bad[i], parts, &err), FR_EINVAL);
        df_table_free(bounds);
    }
    df_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_partition_concatenates_sorted),
        cmocka_unit_test(test_range_partition_empty_samples),
        cmocka_unit_test(test_hash_partition_consistency),
        cmocka_unit_test(test_hash_partition_multi_key),
        cmocka_unit_test(test_partition_counts_bounded),
        cmocka_unit_test(test_hash_partition_every_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
