/* engine_expr_node: the syntax tree's nodes (new/add/free) and the tables of
 * scalar and aggregate function names that the parser looks names up in and
 * that "did you mean" suggestions are drawn from. */
#include "engine_expr_int.h"

#include <stdlib.h>
#include <strings.h>

const char *const df__func_names[DF__F_COUNT_] = {
    "coalesce", "abs",        "round",       "floor",
    "ceil",     "lower",      "upper",       "length",
    "substr",   "contains",   "starts_with", "ends_with",
    "year",     "month",      "day",         "current_config_id",
    "concat",   "round_even", "fail_if",
};

static const struct {
    const char *name;
    int func, min_args, max_args;
} funcs[] = {
    {"coalesce", DF__F_COALESCE, 1, 64},
    {"abs", DF__F_ABS, 1, 1},
    {"round", DF__F_ROUND, 1, 2},
    {"floor", DF__F_FLOOR, 1, 1},
    {"ceil", DF__F_CEIL, 1, 1},
    {"ceiling", DF__F_CEIL, 1, 1},
    {"lower", DF__F_LOWER, 1, 1},
    {"upper", DF__F_UPPER, 1, 1},
    {"length", DF__F_LENGTH, 1, 1},
    {"substr", DF__F_SUBSTR, 2, 3},
    {"substring", DF__F_SUBSTR, 2, 3},
    {"contains", DF__F_CONTAINS, 2, 2},
    {"starts_with", DF__F_STARTS_WITH, 2, 2},
    {"ends_with", DF__F_ENDS_WITH, 2, 2},
    {"year", DF__F_YEAR, 1, 1},
    {"month", DF__F_MONTH, 1, 1},
    {"day", DF__F_DAY, 1, 1},
    {"current_config_id", DF__F_CURRENT_CONFIG_ID, 0, 0},
    {"concat", DF__F_CONCAT, 1, 64},
    {"round_even", DF__F_ROUND_EVEN, 1, 1},
    {"fail_if", DF__F_FAIL_IF, 2, 2},
};

static const struct {
    const char *name;
    enum df_agg_func func;
} aggs[] = {
    {"count", DF_AGG_COUNT}, {"count_distinct", DF_AGG_COUNT_DISTINCT},
    {"sum", DF_AGG_SUM},     {"mean", DF_AGG_MEAN},
    {"avg", DF_AGG_MEAN},    {"min", DF_AGG_MIN},
    {"max", DF_AGG_MAX},     {"stddev", DF_AGG_STDDEV},
    {"first", DF_AGG_FIRST}, {"median", DF_AGG_MEDIAN},
    {"corr", DF_AGG_CORR},
};
#define NAGGS ((int)(sizeof(aggs) / sizeof(aggs[0])))

const char *df__func_name(int f)
{
    return f >= 0 && f < DF__F_COUNT_ ? df__func_names[f] : "?";
}

const char *df__op_text(int op)
{
    static const char *const t[] = {"+", "-", "*", "/", "%", "=", "!=", "<", "<=", ">", ">="};
    return op >= 0 && op <= DF__GE ? t[op] : "?";
}

struct df__node *df__node_new(enum df__kind kind, int64_t pos)
{
    struct df__node *n = fr_xcalloc(1, sizeof(*n));
    n->kind = kind;
    n->pos = pos;
    n->end = pos;
    n->col = -1;
    return n;
}

void df__node_add(struct df__node *n, struct df__node *arg)
{
    n->args = fr_xrealloc(n->args, sizeof(*n->args) * (size_t)(n->nargs + 1));
    n->args[n->nargs++] = arg;
    if (arg && arg->depth + 1 > n->depth)
        n->depth = arg->depth + 1;
}

void df__node_free(struct df__node *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->nargs; i++)
        df__node_free(n->args[i]);
    free(n->args);
    free(n->name);
    df__value_cleanup(&n->lit);
    free(n);
}

bool df__func_lookup(const char *name, int *func, int *min_args, int *max_args)
{
    for (size_t k = 0; k < sizeof(funcs) / sizeof(funcs[0]); k++) {
        if (strcasecmp(name, funcs[k].name) == 0) {
            *func = funcs[k].func;
            *min_args = funcs[k].min_args;
            *max_args = funcs[k].max_args;
            return true;
        }
    }
    return false;
}

bool df__agg_lookup(const char *name, int *func)
{
    for (int k = 0; k < NAGGS; k++) {
        if (strcasecmp(name, aggs[k].name) == 0) {
            *func = (int)aggs[k].func;
            return true;
        }
    }
    return false;
}

const char *df__agg_name_at(int k)
{
    return k >= 0 && k < NAGGS ? aggs[k].name : NULL;
}
