/* engine_parquet_prune: row-group pruning. Decides from a row group's column
 * statistics (min, max, null count) whether any of its rows can make a
 * filter true, so a scan skips the groups that cannot; "cannot" must be
 * proven, anything not understood may match. */
#include "engine_expr_int.h"

#include <math.h>
#include <string.h>

/* A value comparable across the engine's ordered types: numbers, dates and
 * timestamps as a long double (exact for every int64 on x86-64 and
 * aarch64's 128-bit format), strings as bytes. */
struct key {
    bool str;
    long double n;
    const char *s;
    int64_t len;
};

struct prune {
    df_parquet_stats_fn stats;
    void *arg;
    int64_t num_rows;
};

static bool ordered(df_type t)
{
    return t == DF_TYPE_INT64 || t == DF_TYPE_FLOAT64 || t == DF_TYPE_DATE ||
           t == DF_TYPE_TIMESTAMP || t == DF_TYPE_STRING;
}

/* The column a side of a comparison reads, seen through casts that keep
 * order (int64 to float64, date to timestamp); -1 otherwise. *as is the type
 * the comparison sees, *from the column's own. */
static int column_of(const struct df__node *n, df_type *as, df_type *from)
{
    if (n->kind == DF__COL && ordered(n->type)) {
        *as = *from = n->type;
        return n->col;
    }
    if (n->kind != DF__CAST || n->nargs != 1 || n->args[0]->kind != DF__COL)
        return -1;
    df_type f = n->args[0]->type, t = n->type;
    if ((f == DF_TYPE_INT64 && t == DF_TYPE_FLOAT64) ||
        (f == DF_TYPE_DATE && t == DF_TYPE_TIMESTAMP)) {
        *as = t;
        *from = f;
        return n->args[0]->col;
    }
    return -1;
}

/* A literal as a key of type as; false when it is not one (or is NaN). */
static bool literal_key(const struct df__node *n, df_type as, struct key *k, bool *null)
{
    *null = false;
    if (n->kind != DF__LIT)
        return false;
    if (n->lit.null || n->lit.type == DF_TYPE_NULL) {
        *null = true;
        return true;
    }
    memset(k, 0, sizeof(*k));
    switch (n->lit.type) {
    case DF_TYPE_INT64:
    case DF_TYPE_TIMESTAMP:
        k->n = (long double)n->lit.i;
        break;
    case DF_TYPE_FLOAT64:
        if (isnan(n->lit.f))
            return false;
        k->n = (long double)n->lit.f;
        break;
    case DF_TYPE_DATE:
        k->n = as == DF_TYPE_TIMESTAMP ? (long double)n->lit.d * 86400000000.0L
                                       : (long double)n->lit.d;
        break;
    case DF_TYPE_STRING:
        k->str = true;
        k->s = n->lit.s;
        k->len = n->lit.slen;
        break;
    default:
        return false;
    }
    return k->str == (as == DF_TYPE_STRING);
}

static void stat_key(const struct df_parquet_value *v, df_type from, df_type as, struct key *k)
{
    memset(k, 0, sizeof(*k));
    if (from == DF_TYPE_STRING) {
        k->str = true;
        k->s = v->s;
        k->len = v->len;
    } else if (from == DF_TYPE_FLOAT64) {
        k->n = (long double)v->f;
    } else if (from == DF_TYPE_DATE && as == DF_TYPE_TIMESTAMP) {
        k->n = (long double)v->i * 86400000000.0L;
    } else {
        k->n = (long double)v->i;
    }
}

static int key_cmp(const struct key *a, const struct key *b)
{
    if (!a->str)
        return a->n < b->n ? -1 : a->n > b->n ? 1 : 0;
    int64_t n = a->len < b->len ? a->len : b->len;
    int c = n > 0 ? memcmp(a->s, b->s, (size_t)n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

/* The column's range: 1 with min/max, 0 when nothing is known (may match),
 * -1 when every row is null (no comparison can be true). */
static int column_range(const struct prune *p, int col, df_type from, df_type as, struct key *lo,
                        struct key *hi)
{
    struct df_parquet_stats st;
    memset(&st, 0, sizeof(st));
    st.null_count = -1;
    p->stats(p->arg, col, &st);
    if (p->num_rows > 0 && st.null_count == p->num_rows)
        return -1;
    if (!st.has_min_max || (from == DF_TYPE_FLOAT64 && (isnan(st.min.f) || isnan(st.max.f))))
        return 0;
    stat_key(&st.min, from, as, lo);
    stat_key(&st.max, from, as, hi);
    return 1;
}

static bool may_cmp(const struct prune *p, const struct df__node *n)
{
    const struct df__node *a = n->args[0], *b = n->args[1];
    int op = n->op;
    df_type as, from;
    int col = column_of(a, &as, &from);
    if (col < 0) { /* literal op column: flip the operator */
        const struct df__node *t = a;
        a = b;
        b = t;
        col = column_of(a, &as, &from);
        op = op == DF__LT   ? DF__GT
             : op == DF__GT ? DF__LT
             : op == DF__LE ? DF__GE
             : op == DF__GE ? DF__LE
                            : op;
    }
    struct key v, lo, hi;
    bool null;
    if (col < 0 || !literal_key(b, as, &v, &null))
        return true;
    if (null)
        return false; /* a comparison with null is never true */
    int r = column_range(p, col, from, as, &lo, &hi);
    if (r <= 0)
        return r == 0;
    switch (op) {
    case DF__EQ:
        return key_cmp(&lo, &v) <= 0 && key_cmp(&v, &hi) <= 0;
    case DF__LT:
        return key_cmp(&lo, &v) < 0;
    case DF__LE:
        return key_cmp(&lo, &v) <= 0;
    case DF__GT:
        return key_cmp(&hi, &v) > 0;
    case DF__GE:
        return key_cmp(&hi, &v) >= 0;
    default:
        return true;
    }
}

static bool may_between(const struct prune *p, const struct df__node *n)
{
    df_type as, from;
    int col = column_of(n->args[0], &as, &from);
    struct key a, b, lo, hi;
    bool na, nb;
    if (n->negated || col < 0 || !literal_key(n->args[1], as, &a, &na) ||
        !literal_key(n->args[2], as, &b, &nb))
        return true;
    if (na || nb)
        return false;
    int r = column_range(p, col, from, as, &lo, &hi);
    if (r <= 0)
        return r == 0;
    return key_cmp(&hi, &a) >= 0 && key_cmp(&lo, &b) <= 0;
}

static bool may_in(const struct prune *p, const struct df__node *n)
{
    df_type as, from;
    int col = column_of(n->args[0], &as, &from);
    if (n->negated || col < 0)
        return true;
    struct key lo, hi;
    int r = column_range(p, col, from, as, &lo, &hi);
    for (int i = 1; i < n->nargs; i++) {
        struct key v;
        bool null;
        if (!literal_key(n->args[i], as, &v, &null))
            return true;
        if (!null && (r == 0 || (r > 0 && key_cmp(&lo, &v) <= 0 && key_cmp(&v, &hi) <= 0)))
            return true;
    }
    return false;
}

/* A cast that never turns a value into null (a failing cast does: cast('x'
 * as int64) is null), so IS NULL through it sees the column's nulls. */
static bool cast_keeps_values(const struct df__node *c)
{
    df_type f = c->args[0]->type, t = c->type;
    return f == t || t == DF_TYPE_STRING || (f == DF_TYPE_INT64 && t == DF_TYPE_FLOAT64) ||
           (f == DF_TYPE_DATE && t == DF_TYPE_TIMESTAMP);
}

static bool may_null(const struct prune *p, const struct df__node *n)
{
    const struct df__node *c = n->args[0];
    if (c->kind == DF__CAST && c->nargs == 1) {
        /* IS NOT NULL stays safe through any cast: a null stays null */
        if (!n->negated && !cast_keeps_values(c))
            return true;
        c = c->args[0];
    }
    if (c->kind != DF__COL)
        return true;
    struct df_parquet_stats st;
    memset(&st, 0, sizeof(st));
    st.null_count = -1;
    p->stats(p->arg, c->col, &st);
    if (st.null_count < 0)
        return true;
    return n->negated ? st.null_count < p->num_rows : st.null_count > 0;
}

static bool may(const struct prune *p, const struct df__node *n)
{
    switch (n->kind) {
    case DF__AND:
        for (int i = 0; i < n->nargs; i++)
            if (!may(p, n->args[i]))
                return false;
        return true;
    case DF__OR:
        for (int i = 0; i < n->nargs; i++)
            if (may(p, n->args[i]))
                return true;
        return n->nargs == 0;
    case DF__CMP:
        return n->nargs != 2 || may_cmp(p, n);
    case DF__BETWEEN:
        return n->nargs != 3 || may_between(p, n);
    case DF__IN:
        return n->nargs < 2 || may_in(p, n);
    case DF__ISNULL:
        return n->nargs != 1 || may_null(p, n);
    case DF__LIT:
        return n->lit.type != DF_TYPE_BOOL || n->lit.null ? !n->lit.null : n->lit.b;
    default:
        return true;
    }
}

bool df_expr_may_match(const df_expr *e, df_parquet_stats_fn stats, void *arg, int64_t num_rows)
{
    if (!e || !e->root || !stats)
        return true;
    struct prune p = {stats, arg, num_rows};
    return may(&p, e->root);
}

struct rg_arg {
    const df_parquet *pq;
    int rg;
};

static void rg_stats(void *arg, int col, struct df_parquet_stats *out)
{
    const struct rg_arg *a = arg;
    df_parquet_column_stats(a->pq, a->rg, col, out);
}

bool df_parquet_row_group_may_match(const df_parquet *pq, int rg, const df_expr *e)
{
    struct df_parquet_row_group info;
    df_parquet_row_group_info(pq, rg, &info);
    struct rg_arg a = {pq, rg};
    return df_expr_may_match(e, rg_stats, &a, info.num_rows);
}
