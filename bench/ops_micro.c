/* ops_micro: a micro benchmark of the ops (aggregation, sort + group head,
 * join) on db-benchmark shaped tables built in memory, single-threaded, with
 * the operator chain each question runs in a task: df_agg_partial then
 * df_agg_final (one partition), top_k (plan__run_pipeline: df_top_k),
 * df_join. Build against a Release build of framed_core:
 *   cc -O2 -march=native -std=c11 -D_GNU_SOURCE -Isrc bench/ops_micro.c \
 *      build-rel/libframed_core.a $(pkg-config --libs jansson libmicrohttpd libcurl \
 *      libcrypto hiredis libxxhash) -lpthread -lm -o build-rel/ops_micro
 * Usage: ops_micro [rows [only [reps [nas]]]]: rows default 1e6; only: a
 * comma-separated list of questions (q1,q2,q3,q4,q5,q6,q7,q8,q9,q10,j1,j2,j3,
 * j4,j5, or "all"); reps: runs per question, the best is reported (default
 * 3); nas: percent of nulls in every groupby column (default 0); parts: with
 * 2 or more, the aggregations run as the server plans them with
 * maintain_order false on that many in-memory partitions (see
 * run_agg_parts; the checksum is then order-insensitive).
 * With OPS_MICRO_PHASES set in the environment, the parts mode prints the
 * CPU time of its partial, shuffle and final phases and the partials' rows
 * to stderr.
 * Each line shows the result's rows and an order-sensitive checksum of its
 * values, so a change of results shows up next to the timing. */
#include "engine/engine.h"
#include "plan/plan_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
static int64_t rint_in(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static int nas_pct;
static bool na(void)
{
    return nas_pct && (int)(rnd() % 100) < nas_pct;
}

/* ---- the groupby table G1_<n>_1e2 -------------------------------------- */

static struct df_table *gen_groupby(int64_t n)
{
    int64_t k = 100, nk = n / 100 > 0 ? n / 100 : 1;
    struct df_column *c[9];
    df_type types[9] = {DF_TYPE_STRING, DF_TYPE_STRING, DF_TYPE_STRING, DF_TYPE_INT64,
                        DF_TYPE_INT64,  DF_TYPE_INT64,  DF_TYPE_INT64,  DF_TYPE_INT64,
                        DF_TYPE_FLOAT64};
    const char *names[9] = {"id1", "id2", "id3", "id4", "id5", "id6", "v1", "v2", "v3"};
    for (int j = 0; j < 9; j++)
        c[j] = df_column_new(types[j], n);
    char buf[32];
    for (int64_t i = 0; i < n; i++) {
        int64_t v[8] = {rint_in(1, k), rint_in(1, k), rint_in(1, nk), rint_in(1, k),
                        rint_in(1, k), rint_in(1, nk), rint_in(1, 5),  rint_in(1, 15)};
        for (int j = 0; j < 3; j++) {
            if (na()) {
                df_column_append_null(c[j]);
                continue;
            }
            int len = snprintf(buf, sizeof(buf), j == 2 ? "id%010lld" : "id%03lld",
                               (long long)v[j]);
            df_column_append_string(c[j], buf, len);
        }
        for (int j = 3; j < 8; j++) {
            if (na())
                df_column_append_null(c[j]);
            else
                df_column_append_int64(c[j], v[j]);
        }
        double v3 = (double)rint_in(0, 100000000) / 1e6;
        if (na())
            df_column_append_null(c[8]);
        else
            df_column_append_float64(c[8], v3);
    }
    struct df_table *t = df_table_new();
    for (int j = 0; j < 9; j++)
        df_table_add(t, names[j], c[j]);
    return t;
}

/* ---- the join tables J1_<n> --------------------------------------------- */

struct keyspace {
    int64_t *x, *l, *r;
    int64_t nx, nl, nr;
};

static void split_xlr(int64_t n, struct keyspace *ks)
{
    int64_t total = n * 11 / 10;
    int64_t *key = malloc(sizeof(int64_t) * (size_t)total);
    for (int64_t i = 0; i < total; i++)
        key[i] = i + 1;
    for (int64_t i = total - 1; i > 0; i--) {
        int64_t j = (int64_t)(rnd() % (uint64_t)(i + 1)), t = key[i];
        key[i] = key[j];
        key[j] = t;
    }
    ks->nx = n * 9 / 10;
    ks->nl = n - ks->nx;
    ks->nr = total - n;
    ks->x = key;
    ks->l = key + ks->nx;
    ks->r = key + n;
}

/* a key of the left (x+l) or right (x+r) side, drawn at random */
static int64_t pick(const struct keyspace *ks, bool left)
{
    int64_t m = ks->nx + (left ? ks->nl : ks->nr), i = (int64_t)(rnd() % (uint64_t)m);
    return i < ks->nx ? ks->x[i] : left ? ks->l[i - ks->nx] : ks->r[i - ks->nx];
}

static void add_int(struct df_table *t, const char *name, const int64_t *v, int64_t n)
{
    struct df_column *c = df_column_new(DF_TYPE_INT64, n);
    for (int64_t i = 0; i < n; i++)
        df_column_append_int64(c, v[i]);
    df_table_add(t, name, c);
}

static void add_sid(struct df_table *t, const char *name, const int64_t *v, int64_t n)
{
    struct df_column *c = df_column_new(DF_TYPE_STRING, n);
    char buf[32];
    for (int64_t i = 0; i < n; i++)
        df_column_append_string(c, buf, snprintf(buf, sizeof(buf), "id%lld", (long long)v[i]));
    df_table_add(t, name, c);
}

static void add_v(struct df_table *t, const char *name, int64_t n)
{
    struct df_column *c = df_column_new(DF_TYPE_FLOAT64, n);
    for (int64_t i = 0; i < n; i++) {
        if (rnd() % 100 < 5)
            df_column_append_null(c);
        else
            df_column_append_float64(c, (double)rint_in(0, 100000000) / 1e6);
    }
    df_table_add(t, name, c);
}

/* a table of keys a, b, c (ints, then as strings) and a value column */
static struct df_table *join_table(const int64_t *a, const int64_t *b, const int64_t *c,
                                   int64_t n, const char *v, bool with_c, bool with_a)
{
    struct df_table *t = df_table_new();
    if (with_a)
        add_int(t, "id1", a, n);
    add_int(t, "id2", b, n);
    if (with_c)
        add_int(t, "id3", c, n);
    if (with_a)
        add_sid(t, "id4", a, n);
    add_sid(t, "id5", b, n);
    if (with_c)
        add_sid(t, "id6", c, n);
    add_v(t, v, n);
    return t;
}

struct jtabs {
    struct df_table *x, *small, *medium, *big;
};

static void gen_join(int64_t n, struct jtabs *jt)
{
    int64_t ns = n / 1000000 > 10 ? n / 1000000 : 10, nm = n / 1000 > 10 ? n / 1000 : 10;
    struct keyspace k1, k2, k3;
    split_xlr(ns, &k1);
    split_xlr(nm, &k2);
    split_xlr(n, &k3);
    int64_t *a = malloc(sizeof(int64_t) * (size_t)n), *b = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *c = malloc(sizeof(int64_t) * (size_t)n);
    /* x: id3 runs through the left keys of k3 in a shuffled order, each once */
    int64_t nl3 = k3.nx + k3.nl;
    int64_t *l3 = malloc(sizeof(int64_t) * (size_t)nl3);
    memcpy(l3, k3.x, sizeof(int64_t) * (size_t)nl3); /* x then l are contiguous */
    for (int64_t i = nl3 - 1; i > 0; i--) {
        int64_t j = (int64_t)(rnd() % (uint64_t)(i + 1)), t = l3[i];
        l3[i] = l3[j];
        l3[j] = t;
    }
    for (int64_t i = 0; i < n; i++) {
        a[i] = pick(&k1, true);
        b[i] = pick(&k2, true);
        c[i] = l3[i % nl3];
    }
    jt->x = join_table(a, b, c, n, "v1", true, true);
    /* small: distinct right keys of k1 */
    int64_t *rk = malloc(sizeof(int64_t) * (size_t)(ns * 2));
    for (int64_t i = 0; i < ns; i++)
        rk[i] = i < k1.nx ? k1.x[i] : k1.r[i - k1.nx];
    struct df_table *s = df_table_new();
    add_int(s, "id1", rk, ns);
    add_sid(s, "id4", rk, ns);
    add_v(s, "v2", ns);
    jt->small = s;
    /* medium: distinct right keys of k2, id1 drawn from k1's right keys */
    for (int64_t i = 0; i < nm; i++) {
        b[i] = i < k2.nx ? k2.x[i] : k2.r[i - k2.nx];
        a[i] = pick(&k1, false);
    }
    jt->medium = join_table(a, b, NULL, nm, "v2", false, true);
    /* big: id3 runs through the right keys of k3 */
    int64_t nr3 = k3.nx + k3.nr;
    int64_t *r3 = malloc(sizeof(int64_t) * (size_t)nr3);
    memcpy(r3, k3.x, sizeof(int64_t) * (size_t)k3.nx);
    memcpy(r3 + k3.nx, k3.r, sizeof(int64_t) * (size_t)k3.nr);
    for (int64_t i = nr3 - 1; i > 0; i--) {
        int64_t j = (int64_t)(rnd() % (uint64_t)(i + 1)), t = r3[i];
        r3[i] = r3[j];
        r3[j] = t;
    }
    for (int64_t i = 0; i < n; i++) {
        a[i] = pick(&k1, false);
        b[i] = pick(&k2, false);
        c[i] = r3[i % nr3];
    }
    jt->big = join_table(a, b, c, n, "v2", true, true);
    free(a);
    free(b);
    free(c);
    free(l3);
    free(r3);
    free(rk);
    free(k1.x);
    free(k2.x);
    free(k3.x);
}

/* ---- checksums -------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* Order-sensitive over rows; floats rounded to float precision so that a
 * different summation order rarely shows as a change. */
static uint64_t checksum(const struct df_table *t)
{
    uint64_t h = (uint64_t)t->nrows;
    for (int j = 0; j < t->ncols; j++) {
        const struct df_column *c = t->cols[j];
        for (int64_t i = 0; i < t->nrows; i++) {
            uint64_t v = 0;
            if (!df_column_is_valid(c, i)) {
                v = 0x5555;
            } else if (c->type == DF_TYPE_STRING) {
                int64_t n;
                const char *p = df_column_string(c, i, &n);
                for (int64_t k = 0; k < n; k++)
                    v = v * 131 + (uint8_t)p[k];
            } else if (c->type == DF_TYPE_FLOAT64) {
                float f = (float)df_column_float64(c, i);
                uint32_t b;
                memcpy(&b, &f, sizeof(b));
                v = b;
            } else if (c->type == DF_TYPE_INT64) {
                v = (uint64_t)df_column_int64(c, i);
            } else {
                v = (uint64_t)df_column_bool(c, i);
            }
            h = mix(h, v);
        }
    }
    return h;
}

/* Order-insensitive: the sum of per-row hashes (for the partitioned mode,
 * whose row order depends on the shuffle). */
static uint64_t checksum_unordered(const struct df_table *t)
{
    uint64_t total = (uint64_t)t->nrows;
    for (int64_t i = 0; i < t->nrows; i++) {
        uint64_t h = 0;
        for (int j = 0; j < t->ncols; j++) {
            const struct df_column *c = t->cols[j];
            uint64_t v = 0;
            if (!df_column_is_valid(c, i)) {
                v = 0x5555;
            } else if (c->type == DF_TYPE_STRING) {
                int64_t n;
                const char *p = df_column_string(c, i, &n);
                for (int64_t k = 0; k < n; k++)
                    v = v * 131 + (uint8_t)p[k];
            } else if (c->type == DF_TYPE_FLOAT64) {
                float f = (float)df_column_float64(c, i);
                uint32_t b;
                memcpy(&b, &f, sizeof(b));
                v = b;
            } else if (c->type == DF_TYPE_INT64) {
                v = (uint64_t)df_column_int64(c, i);
            } else {
                v = (uint64_t)df_column_bool(c, i);
            }
            h = mix(h, v);
        }
        total += h;
    }
    return total;
}

/* ---- the questions --------------------------------------------------------- */

static struct df_options opts = {.morsel_size_rows = 122880, .maintain_order = true};

static void die(const char *what, const struct fr_error *err)
{
    fprintf(stderr, "%s failed: %s\n", what, err->message);
    exit(1);
}

static struct df_table *run_agg(const struct df_table *t, const int *keys, int nkeys,
                                const struct df_agg_spec *specs, int nspecs)
{
    struct df_exec ex;
    struct fr_error err;
    df_exec_init(&ex, &opts, NULL);
    fr_error_init(&err);
    df_type types[8];
    for (int k = 0; k < nspecs; k++)
        types[k] = specs[k].arg >= 0 ? t->cols[specs[k].arg]->type : DF_TYPE_INT64;
    const char *names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    struct df_table *p = NULL, *r = NULL;
    if (df_agg_partial(t, keys, nkeys, specs, nspecs, &ex, &p, &err) != FR_OK ||
        df_agg_final(&p, 1, nkeys, specs, nspecs, types, names, &ex, &r, &err) != FR_OK)
        die("agg", &err);
    df_table_free(p);
    return r;
}

/* The server's plan with maintain_order false on `parts` in-memory
 * partitions: a partial per partition, hash-partitioned into `parts`
 * buckets, a final per bucket, the results concatenated (every step run
 * here one after the other on one thread). */
static int parts;
static struct df_table *run_agg_parts(struct df_table *const *in, const int *keys, int nkeys,
                                      const struct df_agg_spec *specs, int nspecs)
{
    struct df_exec ex;
    struct fr_error err;
    struct df_options po = opts;
    po.maintain_order = false;
    df_exec_init(&ex, &po, NULL);
    fr_error_init(&err);
    df_type types[8];
    for (int k = 0; k < nspecs; k++)
        types[k] = specs[k].arg >= 0 ? in[0]->cols[specs[k].arg]->type : DF_TYPE_INT64;
    const char *names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    struct df_table *buckets[16][16], *res[16];
    int kidx[8];
    for (int j = 0; j < nkeys; j++)
        kidx[j] = j;
    int64_t t0 = cpu_us(), t_part = 0, t_shuf = 0, prow = 0;
    for (int p = 0; p < parts; p++) {
        struct df_table *partial = NULL;
        int64_t a = cpu_us();
        if (df_agg_partial(in[p], keys, nkeys, specs, nspecs, &ex, &partial, &err) != FR_OK)
            die("agg partial", &err);
        int64_t b = cpu_us();
        if (df_hash_partition(partial, kidx, nkeys, parts, buckets[p], &err) != FR_OK)
            die("agg partial", &err);
        t_part += b - a;
        t_shuf += cpu_us() - b;
        prow += partial->nrows;
        df_table_free(partial);
    }
    int64_t t1 = cpu_us();
    for (int b = 0; b < parts; b++) {
        struct df_table *mine[16];
        for (int p = 0; p < parts; p++)
            mine[p] = buckets[p][b];
        if (df_agg_final(mine, parts, nkeys, specs, nspecs, types, names, &ex, &res[b], &err) !=
            FR_OK)
            die("agg final", &err);
        for (int p = 0; p < parts; p++)
            df_table_free(mine[p]);
    }
    if (getenv("OPS_MICRO_PHASES"))
        fprintf(stderr, "  partial %.1f ms (%lld rows out), shuffle %.1f ms, final %.1f ms\n",
                t_part / 1e3, (long long)prow, t_shuf / 1e3, (cpu_us() - t1) / 1e3);
    (void)t0;
    struct df_table *out = NULL;
    if (df_table_concat(res, parts, &out, &err) != FR_OK)
        die("concat", &err);
    for (int b = 0; b < parts; b++)
        df_table_free(res[b]);
    return out;
}

static struct df_table *run_topk(const struct df_table *t)
{
    struct df_exec ex;
    struct fr_error err;
    df_exec_init(&ex, &opts, NULL);
    fr_error_init(&err);
    json_error_t jerr;
    json_t *pipe = json_loads("[{\"top_k\": {\"by\": [\"id6\"], \"k\": 2, \"sort\":"
                              " [{\"col\": \"v3\", \"desc\": true, \"nulls_first\": -1}]}}]",
                              0, &jerr);
    int cols[] = {5, 8}; /* the task reads id6 and v3 only */
    struct df_table *in = df_table_project(t, cols, 2);
    if (plan__run_pipeline(pipe, &in, &ex, &err) != FR_OK)
        die("top_k", &err);
    json_decref(pipe);
    return in;
}

static struct df_table *run_join(const struct df_table *x, const struct df_table *y,
                                 const char *key, enum df_join_how how)
{
    struct df_exec ex;
    struct fr_error err;
    df_exec_init(&ex, &opts, NULL);
    fr_error_init(&err);
    int lk = df_table_find(x, key), rk = df_table_find(y, key);
    struct df_table *r = NULL;
    if (df_join(x, y, &lk, &rk, 1, how, true, "_right", &ex, &r, &err) != FR_OK)
        die("join", &err);
    return r;
}

static bool wanted(const char *only, const char *q)
{
    char want[256], key[32];
    snprintf(want, sizeof(want), ",%s,", only);
    snprintf(key, sizeof(key), ",%s,", q);
    return strcmp(only, "all") == 0 || strstr(want, key) != NULL;
}

enum { ID1, ID2, ID3, ID4, ID5, ID6, V1, V2, V3 };

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? (int64_t)atof(argv[1]) : 1000000;
    const char *only = argc > 2 ? argv[2] : "all";
    int reps = argc > 3 ? atoi(argv[3]) : 3;
    nas_pct = argc > 4 ? atoi(argv[4]) : 0;
    parts = argc > 5 ? atoi(argv[5]) : 1;
    if (parts < 1 || parts > 16)
        parts = 1;
#define RUN(q) wanted(only, q)
    int64_t t0 = cpu_us();
    struct df_table *g = gen_groupby(n);
    struct jtabs jt = {0};
    bool joins = RUN("j1") || RUN("j2") || RUN("j3") || RUN("j4") || RUN("j5");
    if (joins)
        gen_join(n, &jt);
    fprintf(stderr, "generated %lld rows in %.1f s\n", (long long)n,
            (double)(cpu_us() - t0) / 1e6);
    struct df_table *gp[16];
    for (int p = 0; parts > 1 && p < parts; p++)
        gp[p] = df_table_slice(g, n * p / parts, n * (p + 1) / parts - n * p / parts);
    static const struct {
        const char *name;
        int keys[6], nkeys;
        struct df_agg_spec specs[3];
        int nspecs;
    } aggs[] = {
        {"q1", {ID1}, 1, {{DF_AGG_SUM, V1, -1}}, 1},
        {"q2", {ID1, ID2}, 2, {{DF_AGG_SUM, V1, -1}}, 1},
        {"q3", {ID3}, 1, {{DF_AGG_SUM, V1, -1}, {DF_AGG_MEAN, V3, -1}}, 2},
        {"q4", {ID4}, 1, {{DF_AGG_MEAN, V1, -1}, {DF_AGG_MEAN, V2, -1}, {DF_AGG_MEAN, V3, -1}}, 3},
        {"q5", {ID6}, 1, {{DF_AGG_SUM, V1, -1}, {DF_AGG_SUM, V2, -1}, {DF_AGG_SUM, V3, -1}}, 3},
        {"q6", {ID4, ID5}, 2, {{DF_AGG_MEDIAN, V3, -1}, {DF_AGG_STDDEV, V3, -1}}, 2},
        {"q7", {ID3}, 1, {{DF_AGG_MAX, V1, -1}, {DF_AGG_MIN, V2, -1}}, 2},
        {"q9", {ID2, ID4}, 2, {{DF_AGG_CORR, V1, V2}}, 1},
        {"q10", {ID1, ID2, ID3, ID4, ID5, ID6}, 6, {{DF_AGG_SUM, V3, -1}, {DF_AGG_COUNT_STAR, -1, -1}}, 2},
    };
    for (size_t q = 0; q < sizeof(aggs) / sizeof(aggs[0]); q++) {
        if (!RUN(aggs[q].name))
            continue;
        double best = 1e30;
        uint64_t sum = 0;
        int64_t rows = 0;
        for (int r = 0; r < reps; r++) {
            int64_t s = cpu_us();
            struct df_table *res =
                parts > 1 ? run_agg_parts(gp, aggs[q].keys, aggs[q].nkeys, aggs[q].specs,
                                          aggs[q].nspecs)
                          : run_agg(g, aggs[q].keys, aggs[q].nkeys, aggs[q].specs,
                                    aggs[q].nspecs);
            double ms = (double)(cpu_us() - s) / 1000.0;
            best = ms < best ? ms : best;
            rows = res->nrows;
            sum = parts > 1 ? checksum_unordered(res) : checksum(res);
            df_table_free(res);
        }
        printf("%-4s %9.1f ms  rows %-9lld sum %016llx\n", aggs[q].name, best, (long long)rows,
               (unsigned long long)sum);
        fflush(stdout);
    }
    if (RUN("q8")) {
        double best = 1e30;
        uint64_t sum = 0;
        int64_t rows = 0;
        for (int r = 0; r < reps; r++) {
            int64_t s = cpu_us();
            struct df_table *res = run_topk(g);
            double ms = (double)(cpu_us() - s) / 1000.0;
            best = ms < best ? ms : best;
            rows = res->nrows;
            sum = checksum(res);
            df_table_free(res);
        }
        printf("%-4s %9.1f ms  rows %-9lld sum %016llx\n", "q8", best, (long long)rows,
               (unsigned long long)sum);
        fflush(stdout);
    }
    static const struct {
        const char *name, *key;
        int right; /* 0 small, 1 medium, 2 big */
        enum df_join_how how;
    } joinq[] = {
        {"j1", "id1", 0, DF_JOIN_INNER}, {"j2", "id2", 1, DF_JOIN_INNER},
        {"j3", "id2", 1, DF_JOIN_LEFT},  {"j4", "id5", 1, DF_JOIN_INNER},
        {"j5", "id3", 2, DF_JOIN_INNER},
    };
    for (size_t q = 0; joins && q < sizeof(joinq) / sizeof(joinq[0]); q++) {
        if (!RUN(joinq[q].name))
            continue;
        const struct df_table *y = joinq[q].right == 0 ? jt.small
                                   : joinq[q].right == 1 ? jt.medium : jt.big;
        double best = 1e30;
        uint64_t sum = 0;
        int64_t rows = 0;
        for (int r = 0; r < reps; r++) {
            int64_t s = cpu_us();
            struct df_table *res = run_join(jt.x, y, joinq[q].key, joinq[q].how);
            double ms = (double)(cpu_us() - s) / 1000.0;
            best = ms < best ? ms : best;
            rows = res->nrows;
            sum = checksum(res);
            df_table_free(res);
        }
        printf("%-4s %9.1f ms  rows %-9lld sum %016llx\n", joinq[q].name, best,
               (long long)rows, (unsigned long long)sum);
        fflush(stdout);
    }
    df_table_free(g);
    for (int p = 0; parts > 1 && p < parts; p++)
        df_table_free(gp[p]);
    df_table_free(jt.x);
    df_table_free(jt.small);
    df_table_free(jt.medium);
    df_table_free(jt.big);
    return 0;
}
