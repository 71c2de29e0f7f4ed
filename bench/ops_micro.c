/* ops_micro: a micro benchmark of the ops (aggregation, sort, join) on
 * db-benchmark shaped data, single-threaded. Build by hand against a
 * Release build of framed_core, e.g.
 *   cc -O2 -I src bench/ops_micro.c build-rel/libframed_core.a -lxxhash -lm -o ops_micro
 * Usage: ops_micro [rows [only]] (default 1e7 rows; only: q1, q3, sort or join). */
#include "engine/engine.h"

#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

/* Thread CPU time in microseconds: steadier than wall time on a shared box. */
static int64_t cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static struct df_column *id_strings(int64_t n, int64_t k, const char *fmt)
{
    struct df_column *c = df_column_new(DF_TYPE_STRING, n);
    char buf[32];
    for (int64_t i = 0; i < n; i++) {
        int len = snprintf(buf, sizeof(buf), fmt, (long long)(rnd() % (uint64_t)k + 1));
        df_column_append_string(c, buf, len);
    }
    return c;
}

static double time_agg(const struct df_table *t, int key, const struct df_agg_spec *specs,
                       int nspecs, int64_t *ngroups)
{
    struct df_options o = {.morsel_size_rows = 16384};
    struct df_exec ex;
    struct fr_error err;
    df_exec_init(&ex, &o, NULL);
    fr_error_init(&err);
    df_type types[4];
    for (int k = 0; k < nspecs; k++)
        types[k] = t->cols[specs[k].arg]->type;
    const char *names[] = {"a", "b", "c", "d"};
    int64_t t0 = cpu_us();
    struct df_table *p = NULL, *r = NULL;
    if (df_agg_partial(t, &key, 1, specs, nspecs, &ex, &p, &err) != FR_OK ||
        df_agg_final(&p, 1, 1, specs, nspecs, types, names, &ex, &r, &err) != FR_OK) {
        fprintf(stderr, "agg failed: %s\n", err.message);
        exit(1);
    }
    double ms = (double)(cpu_us() - t0) / 1000.0;
    *ngroups = r->nrows;
    df_table_free(p);
    df_table_free(r);
    return ms;
}

static double time_sort(const struct df_table *t, int col, int64_t *check)
{
    struct df_options o = {.morsel_size_rows = 16384};
    struct df_exec ex;
    struct fr_error err;
    df_exec_init(&ex, &o, NULL);
    fr_error_init(&err);
    struct df_sort_key key = {col, false, false};
    int64_t t0 = cpu_us();
    struct df_table *r = NULL;
    if (df_sort(t, &key, 1, &ex, &r, &err) != FR_OK) {
        fprintf(stderr, "sort failed: %s\n", err.message);
        exit(1);
    }
    double ms = (double)(cpu_us() - t0) / 1000.0;
    *check = r->nrows;
    df_table_free(r);
    return ms;
}

static double time_join(const struct df_table *x, const struct df_table *y, int64_t *rows)
{
    struct df_options o = {.morsel_size_rows = 16384};
    struct df_exec ex;
    struct fr_error err;
    df_exec_init(&ex, &o, NULL);
    fr_error_init(&err);
    int lk = 0, rk = 0;
    int64_t t0 = cpu_us();
    struct df_table *r = NULL;
    if (df_join(x, y, &lk, &rk, 1, DF_JOIN_INNER, true, "_right", &ex, &r, &err) != FR_OK) {
        fprintf(stderr, "join failed: %s\n", err.message);
        exit(1);
    }
    double ms = (double)(cpu_us() - t0) / 1000.0;
    *rows = r->nrows;
    df_table_free(r);
    return ms;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 10000000;
    const char *only = argc > 2 ? argv[2] : "";
#define RUN(what) (!*only || strcmp(only, what) == 0)
    struct df_table *t = df_table_new();
    df_table_add(t, "id1", id_strings(n, 100, "id%03lld"));
    df_table_add(t, "id3", id_strings(n, n / 100, "id%010lld"));
    struct df_column *v1 = df_column_new(DF_TYPE_INT64, n), *v3 = df_column_new(DF_TYPE_FLOAT64, n);
    struct df_column *r64 = df_column_new(DF_TYPE_INT64, n);
    for (int64_t i = 0; i < n; i++) {
        df_column_append_int64(v1, (int64_t)(rnd() % 5 + 1));
        df_column_append_float64(v3, (double)(rnd() % 100000000) / 1e6);
        df_column_append_int64(r64, (int64_t)(rnd() >> 1));
    }
    df_table_add(t, "v1", v1);
    df_table_add(t, "v3", v3);
    df_table_add(t, "r64", r64);
    int64_t g;
    struct df_agg_spec q1[] = {{DF_AGG_SUM, 2, -1}};
    struct df_agg_spec q3[] = {{DF_AGG_SUM, 2, -1}, {DF_AGG_MEAN, 3, -1}};
    for (int rep = 0; rep < 2; rep++) {
        double ms;
        if (RUN("q1")) {
            ms = time_agg(t, 0, q1, 1, &g);
            printf("q1 sum(v1) by id1 (%lld groups): %.1f ms\n", (long long)g, ms);
        }
        if (RUN("q3")) {
            ms = time_agg(t, 1, q3, 2, &g);
            printf("q3 sum(v1), mean(v3) by id3 (%lld groups): %.1f ms\n", (long long)g, ms);
        }
    }
    double ms;
    if (RUN("sort")) {
        int cols[] = {4, 2}; /* r64 and v1 */
        struct df_table *st = df_table_project(t, cols, 2);
        ms = time_sort(st, 0, &g);
        printf("sort %lld rows (random int64 key, int64 payload): %.1f ms\n", (long long)g, ms);
        df_table_free(st);
    }
    if (!RUN("join")) {
        df_table_free(t);
        return 0;
    }
    /* join: x (n rows, key in 1..1.1n) with a medium table of n/1000 rows */
    struct df_table *x = df_table_new(), *y = df_table_new();
    struct df_column *xk = df_column_new(DF_TYPE_INT64, n), *yk = df_column_new(DF_TYPE_INT64, n);
    for (int64_t i = 0; i < n; i++)
        df_column_append_int64(xk, (int64_t)(rnd() % (uint64_t)(n / 1000 * 11 / 10 + 1)));
    for (int64_t i = 0; i < n / 1000; i++)
        df_column_append_int64(yk, i);
    df_table_add(x, "id", xk);
    df_table_add(x, "v1", df_column_ref(v1));
    df_table_add(y, "id", yk);
    ms = time_join(x, y, &g);
    printf("join %lld x %lld rows on int64 -> %lld rows: %.1f ms\n", (long long)n,
           (long long)(n / 1000), (long long)g, ms);
    df_table_free(x);
    df_table_free(y);
    df_table_free(t);
    return 0;
}
