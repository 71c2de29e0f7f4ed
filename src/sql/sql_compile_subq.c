/* sql_compile_subq: subqueries in expressions as joins. A scalar subquery
 * is a one-row relation left-joined on a constant key (correlated by
 * equalities: grouped by its inner keys and left-joined on them); IN is a
 * semi join, NOT IN an anti join with SQL's NULL rules (a NULL in the
 * subquery empties it, a NULL on the left never qualifies); EXISTS and NOT
 * EXISTS correlated by equalities are semi and anti joins. */
#include "sql_compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The subquery q compiled with the outer scope `scope` visible: its inner =
 * outer equalities are pulled out into h (its output ends with their inner
 * keys). */
static int compile_sub(struct sc_ctx *c, const struct sql_query *q, struct sc_scope *scope,
                       struct sc_scope *h, struct sc_rel *out)
{
    *h = *scope;
    h->corr = NULL;
    h->ncorr = 0;
    h->correlated_ok = true;
    int rc = sc__query(c, q, h, out);
    if (rc == FR_OK && h->ncorr > 0 && (q->limit || q->offset || !q->select))
        rc = sc__unsupported(c, q->pos,
                             "a correlated subquery with LIMIT, OFFSET or a set operation is not "
                             "supported");
    return rc;
}

static int value_columns(struct sc_ctx *c, const struct sql_query *q, const struct sc_rel *r,
                         int ncorr)
{
    if (r->ncols - ncorr != 1)
        return sc__invalid(c, q->pos, "the subquery must return one column, not %d",
                           r->ncols - ncorr);
    return FR_OK;
}

/* The outer side's key column for expression e. */
static int outer_key(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e, char **out)
{
    char *text = NULL;
    int rc = sc__expr_text(x, e, &text);
    if (rc != FR_OK)
        return rc;
    size_t n = strlen(text);
    if (text[0] == '"' && strchr(text + 1, '"') == text + n - 1) {
        *out = fr_xstrndup(text + 1, n - 2);
        free(text);
        return FR_OK;
    }
    const char *col = sc__add_computed(x->c, r, text, "key", e->pos);
    free(text);
    if (!col)
        return FR_EINVAL;
    *out = fr_xstrdup(col);
    return FR_OK;
}

/* Keys: the outer expressions of h against r, the sub's trailing columns. */
static int corr_keys(struct sc_ex *x, struct sc_rel *r, struct sc_scope *h,
                     const struct sc_rel *sub, json_t *lk, json_t *rk)
{
    for (int i = 0; i < h->ncorr; i++) {
        char *k = NULL;
        int rc = outer_key(x, r, h->corr[i].outer, &k);
        const char *sk = sub->cols[sub->ncols - h->ncorr + i].internal;
        if (rc == FR_OK)
            rc = sc__key_types(x->c, r, k, sub, sk, h->corr[i].outer->pos);
        if (rc != FR_OK) {
            free(k);
            return rc;
        }
        json_array_append_new(lk, json_string(k));
        json_array_append_new(rk, json_string(sk));
        free(k);
    }
    return FR_OK;
}

static bool global_agg(const struct sql_query *q)
{
    const struct sql_select *s = q->select;
    if (!s || s->ngroup || s->group_by_all || s->values)
        return false;
    for (int i = 0; i < s->nitems; i++)
        if (sc__has_agg(s->items[i].expr))
            return true;
    return false;
}

/* The subquery's one item is count(...). */
static bool counts(const struct sql_query *q)
{
    const struct sql_expr *e =
        q->select && q->select->nitems == 1 ? q->select->items[0].expr : NULL;
    return e && e->kind == SQL_E_FUNC && !e->window && e->name.text &&
           strcasecmp(e->name.text, "count") == 0;
}

/* At most one row, as DuckDB: the first value and the count of rows; more
 * than one fails the query at run time (cardinality-violation, located). */
static void one_row_check(struct sc_ctx *c, struct sc_rel *sub, int64_t pos)
{
    char *q = sc__quote(sub->cols[0].internal);
    char *rows = sc__new_internal(c, "rows");
    char *qr = sc__quote(rows);
    struct fr_error where;
    fr_error_init(&where);
    sql_error_at(&where, FR_EDATA, "cardinality-violation", c->text, pos,
                 "a scalar subquery returned more than one row");
    for (char *p = where.message; *p; p++) /* the message is a string literal */
        if (*p == '\'')
            *p = '"';
    sc__rel_op(sub, json_pack("{s[oo]}", "agg", json_sprintf("first(%s) as %s", q, q),
                              json_sprintf("count(*) as %s", qr)));
    sc__rel_op(sub, json_pack("{so}", "where",
                              json_sprintf("not fail_if(%s > 1, '%s')", qr, where.message)));
    sc__rel_op(sub, json_pack("{s[s]}", "drop", rows));
    free(q);
    free(qr);
    free(rows);
}

/* The subquery's value column in r after the join; its matched and pass
 * columns (sql_compile_corr.c) are hidden. */
static struct sc_col *joined_value(struct sc_rel *r, const char *value, const char *matched,
                                   const char *pass)
{
    struct sc_col *col = NULL;
    for (int i = 0; i < r->ncols; i++) {
        if (strcmp(r->cols[i].internal, value) == 0)
            col = &r->cols[i];
        else if ((matched && strcmp(r->cols[i].internal, matched) == 0) ||
                 (pass && strcmp(r->cols[i].internal, pass) == 0))
            r->cols[i].hidden = true;
    }
    return col;
}

static int one_scalar(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e)
{
    struct sc_rel sub;
    struct sc_scope h;
    sc__rel_init(&sub);
    struct sc_corr_aug aug;
    int rc = compile_sub(x->c, sc__corr_augment(e->query, &aug), x->scope, &h, &sub);
    if (rc == FR_OK)
        rc = value_columns(x->c, e->query, &sub, h.ncorr + aug.nextra);
    if (rc == FR_OK && h.ncorr > 0 && !global_agg(e->query))
        rc = sc__unsupported(x->c, e->pos,
                             "a correlated scalar subquery is supported only as an aggregate "
                             "without GROUP BY");
    if (rc == FR_OK && h.ncorr == 0 && !global_agg(e->query))
        one_row_check(x->c, &sub, e->pos);
    if (rc == FR_OK) {
        char *value = fr_xstrdup(sub.cols[0].internal);
        char *matched = aug.nextra ? fr_xstrdup(sub.cols[1].internal) : NULL;
        char *pass = aug.nextra > 1 ? fr_xstrdup(sub.cols[2].internal) : NULL;
        df_type t = sub.cols[0].type;
        if (h.ncorr == 0) {
            sc__cross(x->c, r, &sub, "left");
        } else {
            json_t *lk = json_array(), *rk = json_array();
            rc = corr_keys(x, r, &h, &sub, lk, rk);
            if (rc == FR_OK)
                sc__join(x->c, r, &sub, "left", lk, rk);
            else
                json_decref(lk), json_decref(rk);
        }
        struct sc_col *col = rc == FR_OK ? joined_value(r, value, matched, pass) : NULL;
        if (col) {
            col->hidden = true;
            col->type = t;
            const char *v = col->internal;
            if (aug.nextra) { /* the item over the empty group when none matches */
                v = sc__corr_value(x, r, &aug, value, matched, pass, h.ncorr > 0, t, e->pos);
            } else if (h.ncorr > 0 && counts(e->query)) { /* no group: 0, not NULL */
                char *q = sc__quote(v), *text = fr_xasprintf("coalesce(%s, 0)", q);
                v = sc__add_computed(x->c, r, text, "count", e->pos);
                free(q);
                free(text);
            }
            if (v && t == DF_TYPE_NULL) /* no column has the NULL type: a bare NULL */
                sc__ex_subst(x, e, NULL);
            else if (v)
                sc__ex_subst(x, e, (char *)v);
            else
                rc = FR_EINVAL;
        }
        free(value);
        free(matched);
        free(pass);
    }
    free(h.corr);
    sc__rel_cleanup(&sub);
    return rc;
}

static int mark_in(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e);
static int mark_exists(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e);

static int scalar_walk(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e)
{
    if (!e)
        return FR_OK;
    if (e->kind == SQL_E_SUBQUERY || e->kind == SQL_E_IN_QUERY || e->kind == SQL_E_EXISTS) {
        for (int i = 0; i < x->nsubst; i++)
            if (x->subst[i].node == e)
                return FR_OK;
        int rc = e->kind == SQL_E_IN_QUERY ? scalar_walk(x, r, e->args[0]) : FR_OK;
        if (rc != FR_OK)
            return rc;
        return e->kind == SQL_E_SUBQUERY ? one_scalar(x, r, e)
               : e->kind == SQL_E_EXISTS ? mark_exists(x, r, e)
                                         : mark_in(x, r, e);
    }
    int rc = FR_OK;
    for (int i = 0; rc == FR_OK && i < e->nargs; i++)
        rc = scalar_walk(x, r, e->args[i]);
    if (rc == FR_OK)
        rc = scalar_walk(x, r, e->operand);
    if (rc == FR_OK)
        rc = scalar_walk(x, r, e->else_);
    return rc;
}

int sc__scalar_subqueries(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e)
{
    if (!sc__has_subquery(e))
        return FR_OK;
    return scalar_walk(x, r, e);
}

/* ---- [NOT] IN (query), [NOT] EXISTS (query) as WHERE conjuncts ---- */

static const struct sql_expr *unwrap_not(const struct sql_expr *e, bool *neg)
{
    *neg = false;
    while (e->kind == SQL_E_UNARY && e->op == 'N') {
        *neg = !*neg;
        e = e->args[0];
    }
    if (e->kind == SQL_E_IN_QUERY || e->kind == SQL_E_EXISTS)
        *neg = *neg != e->negated;
    return e;
}

bool sc__is_subquery_conjunct(const struct sql_expr *e)
{
    bool neg;
    e = unwrap_not(e, &neg);
    return e->kind == SQL_E_IN_QUERY || e->kind == SQL_E_EXISTS;
}

/* One row of counts over the subquery's value: n rows, nv non-null. */
static int null_stats(struct sc_ctx *c, const struct sql_query *q, struct sc_scope *scope,
                      struct sc_rel *r, char **n, char **nv)
{
    struct sc_rel sub;
    struct sc_scope h;
    sc__rel_init(&sub);
    int rc = compile_sub(c, q, scope, &h, &sub);
    free(h.corr);
    if (rc != FR_OK) {
        sc__rel_cleanup(&sub);
        return rc;
    }
    *n = sc__new_internal(c, "rows");
    *nv = sc__new_internal(c, "values");
    char *qv = sc__quote(sub.cols[0].internal), *qn = sc__quote(*n), *qnv = sc__quote(*nv);
    sc__rel_op(&sub, json_pack("{s[oo]}", "agg", json_sprintf("count(*) as %s", qn),
                               json_sprintf("count(%s) as %s", qv, qnv)));
    free(qv);
    free(qn);
    free(qnv);
    sc__rel_truncate(&sub, 0);
    sc__rel_add(&sub, "rows", true, NULL, *n, DF_TYPE_INT64)->hidden = true;
    sc__rel_add(&sub, "values", true, NULL, *nv, DF_TYPE_INT64)->hidden = true;
    sc__cross(c, r, &sub, "inner");
    sc__rel_cleanup(&sub);
    return FR_OK;
}

static int in_query(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e, bool neg)
{
    struct sc_rel sub;
    struct sc_scope h;
    sc__rel_init(&sub);
    char *n = NULL, *nv = NULL, *k = NULL;
    int rc = compile_sub(x->c, e->query, x->scope, &h, &sub);
    if (rc == FR_OK)
        rc = value_columns(x->c, e->query, &sub, h.ncorr);
    if (rc == FR_OK && neg && h.ncorr > 0)
        rc = sc__unsupported(x->c, e->pos, "a correlated NOT IN (subquery) is not supported");
    if (rc == FR_OK && neg)
        rc = null_stats(x->c, e->query, x->scope, r, &n, &nv);
    if (rc == FR_OK)
        rc = outer_key(x, r, e->args[0], &k);
    if (rc == FR_OK)
        rc = sc__key_types(x->c, r, k, &sub, sub.cols[0].internal, e->pos);
    json_t *lk = json_array(), *rk = json_array();
    if (rc == FR_OK) {
        json_array_append_new(lk, json_string(k));
        json_array_append_new(rk, json_string(sub.cols[0].internal));
        rc = corr_keys(x, r, &h, &sub, lk, rk);
    }
    if (rc == FR_OK) {
        sc__join(x->c, r, &sub, neg ? "anti" : "semi", lk, rk);
        lk = rk = NULL;
    }
    if (rc == FR_OK && neg) {
        char *qn = sc__quote(n), *qnv = sc__quote(nv), *qk = sc__quote(k);
        sc__rel_op(r, json_pack("{so}", "where",
                                json_sprintf("(%s = 0) or (%s = %s and %s is not null)", qn, qnv,
                                             qn, qk)));
        free(qn);
        free(qnv);
        free(qk);
    }
    json_decref(lk);
    json_decref(rk);
    free(n);
    free(nv);
    free(k);
    free(h.corr);
    sc__rel_cleanup(&sub);
    return rc;
}

static int exists(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e, bool neg)
{
    struct sc_rel sub;
    struct sc_scope h;
    sc__rel_init(&sub);
    int rc = compile_sub(x->c, e->query, x->scope, &h, &sub);
    if (rc == FR_OK && h.ncorr == 0) { /* uncorrelated: whether it has a row */
        char *n = sc__new_internal(x->c, "rows"), *qn = sc__quote(n);
        sc__rel_op(&sub, json_pack("{s[o]}", "agg", json_sprintf("count(*) as %s", qn)));
        sc__rel_truncate(&sub, 0);
        sc__rel_add(&sub, "rows", true, NULL, n, DF_TYPE_INT64)->hidden = true;
        sc__cross(x->c, r, &sub, "inner");
        sc__rel_op(r, json_pack("{so}", "where", json_sprintf("%s %s 0", qn, neg ? "=" : ">")));
        free(n);
        free(qn);
    } else if (rc == FR_OK) {
        json_t *lk = json_array(), *rk = json_array();
        rc = corr_keys(x, r, &h, &sub, lk, rk);
        if (rc == FR_OK)
            sc__join(x->c, r, &sub, neg ? "anti" : "semi", lk, rk);
        else
            json_decref(lk), json_decref(rk);
    }
    free(h.corr);
    sc__rel_cleanup(&sub);
    return rc;
}

int sc__subquery_conjunct(struct sc_ctx *c, struct sc_scope *scope, struct sc_rel *r,
                          const struct sql_expr *e)
{
    bool neg;
    const struct sql_expr *s = unwrap_not(e, &neg);
    struct sc_ex x = {0};
    x.c = c;
    x.scope = scope;
    x.leaf_names = -1;
    x.clause = "WHERE";
    int rc = s->kind == SQL_E_EXISTS ? exists(&x, r, s, neg) : in_query(&x, r, s, neg);
    sc__ex_cleanup(&x);
    return rc;
}

/* ---- [NOT] IN (query) and [NOT] EXISTS (query) as values: mark joins ---- */

/* sub keeps its last n columns, distinct, and a marker column true (its
 * internal name borrowed in *mark) that a left join leaves NULL elsewhere. */
static void distinct_marked(struct sc_ctx *c, struct sc_rel *sub, int n, const char **mark)
{
    json_t *items = json_array();
    for (int i = sub->ncols - n; i < sub->ncols; i++) {
        char *q = sc__quote(sub->cols[i].internal);
        json_array_append_new(items, json_string(q));
        free(q);
    }
    sc__rel_op(sub, json_pack("{so}", "select", items));
    sc__rel_op(sub, json_pack("{s[]}", "distinct"));
    int drop = sub->ncols - n;
    for (int i = 0; i < drop; i++) {
        free(sub->cols[i].name);
        free(sub->cols[i].qual);
        free(sub->cols[i].internal);
        free(sub->cols[i].orig);
    }
    memmove(sub->cols, sub->cols + drop, sizeof(*sub->cols) * (size_t)n);
    sub->ncols = n;
    for (int i = 0; i < n; i++) /* joined in, they are no names of the outer query */
        sub->cols[i].hidden = true;
    *mark = sc__add_computed(c, sub, "true", "match", 0);
}

/* The value of e as a new column of r, from text. */
static int value_column(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e,
                        const char *text)
{
    const char *col =
        sc__add_computed(x->c, r, text, e->kind == SQL_E_EXISTS ? "exists" : "in", e->pos);
    if (!col)
        return FR_EINVAL;
    sc__ex_subst(x, e, (char *)col);
    return FR_OK;
}

/* x IN (q): true on a match; else NULL when x is NULL (q not empty) or q
 * holds a NULL; else false. NOT IN is its negation. */
static int mark_in(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e)
{
    struct sc_rel sub;
    struct sc_scope h;
    sc__rel_init(&sub);
    char *n = NULL, *nv = NULL, *k = NULL, *mark = NULL;
    const char *m = NULL;
    int rc = compile_sub(x->c, e->query, x->scope, &h, &sub);
    if (rc == FR_OK)
        rc = value_columns(x->c, e->query, &sub, h.ncorr);
    if (rc == FR_OK && h.ncorr > 0)
        rc = sc__unsupported(x->c, e->pos,
                             "a correlated IN (subquery) is supported only as a WHERE condition");
    if (rc == FR_OK)
        rc = null_stats(x->c, e->query, x->scope, r, &n, &nv);
    if (rc == FR_OK)
        rc = outer_key(x, r, e->args[0], &k);
    if (rc == FR_OK)
        rc = sc__key_types(x->c, r, k, &sub, sub.cols[0].internal, e->pos);
    if (rc == FR_OK) {
        distinct_marked(x->c, &sub, 1, &m);
        mark = fr_xstrdup(m);
        sc__join(x->c, r, &sub, "left", json_pack("[s]", k),
                 json_pack("[s]", sub.cols[0].internal));
        char *qm = sc__quote(mark), *qn = sc__quote(n), *qnv = sc__quote(nv), *qk = sc__quote(k);
        char *text =
            fr_xasprintf("%scase when %s then true when %s = 0 then false when %s is "
                         "null then null when %s < %s then null else false end%s",
                         e->negated ? "(not " : "", qm, qn, qk, qnv, qn, e->negated ? ")" : "");
        rc = value_column(x, r, e, text);
        free(text);
        free(qm);
        free(qn);
        free(qnv);
        free(qk);
    }
    free(mark);
    free(n);
    free(nv);
    free(k);
    free(h.corr);
    sc__rel_cleanup(&sub);
    return rc;
}

static int mark_exists(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e)
{
    struct sc_rel sub;
    struct sc_scope h;
    sc__rel_init(&sub);
    int rc = compile_sub(x->c, e->query, x->scope, &h, &sub);
    char *text = NULL;
    if (rc == FR_OK && h.ncorr == 0) { /* uncorrelated: whether it has a row */
        char *n = sc__new_internal(x->c, "rows"), *qn = sc__quote(n);
        sc__rel_op(&sub, json_pack("{s[o]}", "agg", json_sprintf("count(*) as %s", qn)));
        sc__rel_truncate(&sub, 0);
        sc__rel_add(&sub, "rows", true, NULL, n, DF_TYPE_INT64)->hidden = true;
        sc__cross(x->c, r, &sub, "inner");
        text = fr_xasprintf("(%s %s 0)", qn, e->negated ? "=" : ">");
        free(n);
        free(qn);
    } else if (rc == FR_OK) {
        json_t *lk = json_array(), *rk = json_array();
        const char *m = NULL;
        rc = corr_keys(x, r, &h, &sub, lk, rk); /* the sub's last columns: its keys */
        if (rc == FR_OK)
            distinct_marked(x->c, &sub, h.ncorr, &m);
        char *qm = m ? sc__quote(m) : NULL;
        if (rc == FR_OK) {
            sc__join(x->c, r, &sub, "left", lk, rk);
            text = fr_xasprintf("%scoalesce(%s, false)%s", e->negated ? "(not " : "", qm,
                                e->negated ? ")" : "");
        } else {
            json_decref(lk);
            json_decref(rk);
        }
        free(qm);
    }
    if (rc == FR_OK)
        rc = value_column(x, r, e, text);
    free(text);
    free(h.corr);
    sc__rel_cleanup(&sub);
    return rc;
}
