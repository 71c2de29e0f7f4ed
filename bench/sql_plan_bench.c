/* sql_plan_bench: what parsing and planning cost per TPC-H query, in process
 * (no HTTP): sql_compile (SQL text -> JSON plan, over a catalog of the TPC-H
 * schemas) and plan_build (JSON plan -> bound, optimized, physical stages,
 * over a data dir holding the TPC-H CSV files: its dataset lookups infer each
 * file's schema from its first lines, as every plan does). Prints JSON: the
 * median of REPS runs of each, in microseconds, per query.
 * Usage: sql_plan_bench <dir of q<n>.sql> <data dir> [reps]   (bench/sql.mjs) */
#include "config/config.h"
#include "plan/plan.h"
#include "sql/sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct bench_table {
    const char *name;
    const char *cols; /* "name:type name:type ..." */
};

static const struct bench_table tpch_tables[] = {
    {"region", "r_regionkey:int64 r_name:string r_comment:string"},
    {"nation", "n_nationkey:int64 n_name:string n_regionkey:int64 n_comment:string"},
    {"supplier", "s_suppkey:int64 s_name:string s_address:string s_nationkey:int64 "
                 "s_phone:string s_acctbal:float64 s_comment:string"},
    {"customer", "c_custkey:int64 c_name:string c_address:string c_nationkey:int64 "
                 "c_phone:string c_acctbal:float64 c_mktsegment:string c_comment:string"},
    {"part", "p_partkey:int64 p_name:string p_mfgr:string p_brand:string p_type:string "
             "p_size:int64 p_container:string p_retailprice:float64 p_comment:string"},
    {"partsupp", "ps_partkey:int64 ps_suppkey:int64 ps_availqty:int64 ps_supplycost:float64 "
                 "ps_comment:string"},
    {"orders", "o_orderkey:int64 o_custkey:int64 o_orderstatus:string o_totalprice:float64 "
               "o_orderdate:date o_orderpriority:string o_clerk:string o_shippriority:int64 "
               "o_comment:string"},
    {"lineitem", "l_orderkey:int64 l_partkey:int64 l_suppkey:int64 l_linenumber:int64 "
                 "l_quantity:int64 l_extendedprice:float64 l_discount:float64 l_tax:float64 "
                 "l_returnflag:string l_linestatus:string l_shipdate:date l_commitdate:date "
                 "l_receiptdate:date l_shipinstruct:string l_shipmode:string l_comment:string"},
};
#define NTABLES ((int)(sizeof(tpch_tables) / sizeof(tpch_tables[0])))

static const char *const queries[] = {"q1", "q3", "q5", "q6", "q10", "q12", "q14", "q19"};
#define NQUERIES ((int)(sizeof(queries) / sizeof(queries[0])))

/* Fills schema from "name:type ..." (the column list of one table). */
static void schema_parse(const char *cols, struct df_schema *schema)
{
    char *copy = strdup(cols);
    char *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *colon = strchr(tok, ':');
        df_type t = DF_TYPE_STRING;
        *colon = '\0';
        df_type_parse(colon + 1, &t);
        df_schema_add(schema, tok, t);
    }
    free(copy);
}

static int catalog_lookup(void *arg, const char *name, bool quoted, json_t **source,
                          struct df_schema *schema, struct fr_error *err)
{
    (void)arg;
    for (int i = 0; i < NTABLES; i++) {
        bool same = quoted ? strcmp(name, tpch_tables[i].name) == 0
                           : strcasecmp(name, tpch_tables[i].name) == 0;
        if (same) {
            *source = json_pack("{s:s}", "dataset", tpch_tables[i].name);
            schema_parse(tpch_tables[i].cols, schema);
            return 0;
        }
    }
    return fr_error_setk(err, FR_ENOTFOUND, "dataset-not-found", "no table '%s'", name);
}

static int catalog_names(void *arg, char ***names, int *n)
{
    (void)arg;
    *names = calloc(NTABLES, sizeof(char *));
    for (int i = 0; i < NTABLES; i++)
        (*names)[i] = strdup(tpch_tables[i].name);
    *n = NTABLES;
    return 0;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *xs, int n)
{
    qsort(xs, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

/* Times sql_compile and plan_build of one query; prints its JSON object.
 * Returns 0, or -1 when the query did not compile or plan (the error is
 * printed in the object). */
static int bench_query(const char *qdir, const char *q, const char *data_dir, int reps,
                       double *times)
{
    char path[4096];
    char *text = NULL;
    size_t len = 0;
    struct fr_error err;
    struct sql_catalog cat = {catalog_lookup, catalog_names, NULL};
    struct cfg cfg;
    struct plan_env env = {.data_dir = data_dir};
    int result = -1;
    double compile_us = 0, plan_us = 0;

    fr_error_init(&err);
    cfg_defaults(&cfg);
    snprintf(path, sizeof(path), "%s/%s.sql", qdir, q);
    if (fr_file_read_all(path, &text, &len, &err) != 0)
        goto out;
    for (int r = 0; r <= reps; r++) { /* r = 0 warms up, untimed */
        struct sql_statement st = {0};
        double t0 = now_us();
        if (sql_compile(text, &cat, &st, &err) != 0)
            goto out;
        if (r > 0)
            times[r - 1] = now_us() - t0;
        sql_statement_cleanup(&st);
    }
    compile_us = median(times, reps);
    for (int r = 0; r <= reps; r++) {
        struct sql_statement st = {0};
        plan_physical *p = NULL;
        if (sql_compile(text, &cat, &st, &err) != 0)
            goto out;
        double t0 = now_us();
        int rc = plan_build(st.plan, &cfg, &env, -1, &p, &err);
        if (r > 0)
            times[r - 1] = now_us() - t0;
        plan_physical_free(p);
        sql_statement_cleanup(&st);
        if (rc != 0)
            goto out;
    }
    plan_us = median(times, reps);
    result = 0;
out:
    if (result == 0) {
        printf("{\"query\": \"%s\", \"compile_us\": %.2f, \"plan_us\": %.2f}", q, compile_us,
               plan_us);
    } else {
        json_t *e = json_pack("{s:s, s:s}", "query", q, "error", err.message);
        char *s = json_dumps(e, 0);
        printf("%s", s);
        free(s);
        json_decref(e);
    }
    cfg_cleanup(&cfg);
    free(text);
    return result;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s <dir of q<n>.sql> <data dir> [reps]\n", argv[0]);
        return 2;
    }
    int reps = argc > 3 ? atoi(argv[3]) : 201;
    if (reps < 1)
        reps = 1;
    double *times = calloc((size_t)reps, sizeof(double));
    int failed = 0;
    printf("{\"reps\": %d, \"queries\": [", reps);
    for (int i = 0; i < NQUERIES; i++) {
        if (i)
            printf(", ");
        if (bench_query(argv[1], queries[i], argv[2], reps, times) != 0)
            failed++;
    }
    printf("]}\n");
    free(times);
    return failed ? 1 : 0;
}
