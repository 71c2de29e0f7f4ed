/* sql_compile_corr: a scalar aggregate subquery's value when no inner row
 * matches an outer one. The grouped subquery then has no row, but SQL gives
 * the item over the empty group (count 0, other aggregates NULL, then the
 * expression around them, when HAVING passes on it): the subquery also says
 * "true AS matched" (and its HAVING as a column), and the outer side picks. */
#include "sql_compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool is_agg(const struct sql_expr *e)
{
    return e->kind == SQL_E_FUNC && !e->window && e->name.text && sc__is_agg_name(e->name.text);
}

static bool is_count(const struct sql_expr *e)
{
    return is_agg(e) && strcasecmp(e->name.text, "count") == 0;
}

const struct sql_query *sc__corr_augment(const struct sql_query *q, struct sc_corr_aug *a)
{
    memset(a, 0, sizeof(*a));
    const struct sql_select *s = q->select;
    if (!s || s->ngroup || s->group_by_all || s->values || s->nitems != 1 ||
        !sc__has_agg(s->items[0].expr))
        return q;
    /* a bare aggregate without HAVING: NULL (count: 0) over no row is right */
    if (!s->having && is_agg(s->items[0].expr))
        return q;
    a->sel = *s;
    a->items[0] = s->items[0];
    a->t.kind = SQL_E_BOOL;
    a->t.ival = 1;
    a->t.pos = a->t.end = s->pos;
    a->items[1].expr = &a->t;
    a->nextra = 1;
    if (s->having) {
        a->items[2].expr = s->having;
        a->nextra = 2;
        a->sel.having = NULL;
    }
    a->sel.items = a->items;
    a->sel.nitems = 1 + a->nextra;
    a->q = *q;
    a->q.select = &a->sel;
    a->item = s->items[0].expr;
    a->having = s->having;
    return &a->q;
}

/* Each aggregate under e: a column of r with its value over no row. */
static int empty_aggs(struct sc_ex *y, struct sc_rel *r, const struct sql_expr *e, df_type t)
{
    if (!e || e->kind == SQL_E_SUBQUERY || e->kind == SQL_E_IN_QUERY || e->kind == SQL_E_EXISTS)
        return FR_OK;
    if (is_agg(e)) {
        char *text =
            is_count(e) ? fr_xstrdup("0") : fr_xasprintf("cast(null as %s)", df_type_name(t));
        const char *col = sc__add_computed(y->c, r, text, "empty", e->pos);
        free(text);
        if (!col)
            return FR_EINVAL;
        sc__ex_subst(y, e, (char *)col);
        return FR_OK;
    }
    int rc = FR_OK;
    for (int i = 0; rc == FR_OK && i < e->nargs; i++)
        rc = empty_aggs(y, r, e->args[i], t);
    if (rc == FR_OK)
        rc = empty_aggs(y, r, e->operand, t);
    if (rc == FR_OK)
        rc = empty_aggs(y, r, e->else_, t);
    return rc;
}

/* new: the text of e over the empty group, against r in x's scope. */
static int empty_text(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e, df_type t,
                      char **out)
{
    struct sc_ex y = *x;
    y.subst = NULL;
    y.nsubst = 0;
    for (int i = 0; i < x->nsubst; i++)
        sc__ex_subst(&y, x->subst[i].node, x->subst[i].internal);
    int rc = empty_aggs(&y, r, e, t);
    if (rc == FR_OK)
        rc = sc__expr_text(&y, e, out);
    sc__ex_cleanup(&y);
    return rc;
}

const char *sc__corr_value(struct sc_ex *x, struct sc_rel *r, const struct sc_corr_aug *a,
                           const char *value, const char *matched, const char *pass,
                           bool correlated, df_type t, int64_t pos)
{
    char *qv = sc__quote(value), *v = qv;
    if (pass) {
        char *qp = sc__quote(pass);
        v = fr_xasprintf("case when %s then %s end", qp, qv);
        free(qp);
    }
    char *text = NULL;
    if (!correlated) { /* one row always: only HAVING decides */
        text = fr_xstrdup(v);
    } else {
        char *ev = NULL, *eh = NULL;
        int rc = empty_text(x, r, a->item, t, &ev);
        if (rc == FR_OK && a->having)
            rc = empty_text(x, r, a->having, t, &eh);
        if (rc == FR_OK) {
            char *qm = sc__quote(matched);
            if (eh)
                text = fr_xasprintf("case when %s then %s when %s then cast(%s as %s) end", qm, v,
                                    eh, ev, df_type_name(t));
            else
                text = fr_xasprintf("case when %s then %s else cast(%s as %s) end", qm, v, ev,
                                    df_type_name(t));
            free(qm);
        }
        free(ev);
        free(eh);
    }
    if (v != qv)
        free(v);
    free(qv);
    const char *col = text ? sc__add_computed(x->c, r, text, "value", pos) : NULL;
    free(text);
    return col;
}
