/* sql_compile_select: one SELECT block in SQL's logical order: FROM and
 * WHERE, GROUP BY with its aggregates, HAVING, window functions, QUALIFY,
 * the select list, DISTINCT, ORDER BY (output names, positions or hidden
 * expressions computed and dropped after the sort), LIMIT and OFFSET. */
#include "sql_compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sc__add_computed(struct sc_ctx *c, struct sc_rel *r, const char *text, const char *name,
                             int64_t pos)
{
    df_type t;
    if (sc__expr_type(c, r, text, pos, &t) != FR_OK)
        return NULL;
    char *internal = sc__new_internal(c, name);
    sc__rel_op(r, json_pack("{s{ss ss}}", "with_column", "name", internal, "expr", text));
    struct sc_col *col = sc__rel_add(r, name, true, NULL, internal, t);
    col->hidden = true;
    free(internal);
    return col->internal;
}

int sc__limit_value(struct sc_ctx *c, const struct sql_expr *e, const char *what, int64_t *out)
{
    if (e->kind == SQL_E_UNARY && e->op == '-' && e->args[0]->kind == SQL_E_INT)
        return sc__invalid(c, e->pos, "%s must not be negative", what);
    if (e->kind != SQL_E_INT)
        return sc__unsupported(c, e->pos, "%s takes a whole number literal", what);
    if (e->ival < 0)
        return sc__invalid(c, e->pos, "%s must not be negative", what);
    *out = e->ival;
    return FR_OK;
}

char *sc__order_key(const char *internal, const struct sql_order_item *it)
{
    char *q = sc__quote(internal);
    char *s = fr_xasprintf("%s%s%s", q, it->desc ? " desc" : "",
                           it->nulls == 1 ? " nulls first" : " nulls last");
    free(q);
    return s;
}

int sc__order_limit(struct sc_ctx *c, const struct sql_query *q, struct sc_rel *r,
                    char **order_keys, int nkeys)
{
    int64_t limit = -1, offset = 0;
    int rc = FR_OK;
    if (q && q->limit && (rc = sc__limit_value(c, q->limit, "LIMIT", &limit)) != FR_OK)
        return rc;
    if (q && q->offset && (rc = sc__limit_value(c, q->offset, "OFFSET", &offset)) != FR_OK)
        return rc;
    json_t *keys = json_array();
    for (int i = 0; i < nkeys; i++)
        json_array_append_new(keys, json_string(order_keys[i]));
    /* top_k keeps limit + offset rows; past INT64_MAX it is a plain sort. */
    if (nkeys > 0 && limit >= 0 && limit <= INT64_MAX - offset) {
        sc__rel_op(
            r, json_pack("{s{so sI}}", "top_k", "sort", keys, "k", (json_int_t)(limit + offset)));
        keys = NULL;
    } else if (nkeys > 0) {
        sc__rel_op(r, json_pack("{so}", "sort", keys));
        keys = NULL;
    }
    json_decref(keys);
    if (offset > 0)
        sc__rel_op(r, json_pack("{sI}", "offset", (json_int_t)offset));
    if (limit >= 0 && !(nkeys > 0 && offset == 0 && limit <= INT64_MAX - offset))
        sc__rel_op(r, json_pack("{sI}", "limit", (json_int_t)limit));
    return FR_OK;
}

/* The block's output: items as (internal, name) before the projection. */
struct proj {
    json_t *items; /* the select op's strings */
    struct sc_rel out;
    json_t *used; /* internal names already output */
    char **texts; /* each output's expression text, for ORDER BY matches */
    int ntexts;
    json_t *hidden; /* ORDER BY columns dropped after the sort */
};

static void proj_add(struct sc_ctx *c, struct proj *p, const char *text, const char *name,
                     df_type t, const char *plain)
{
    char *internal =
        plain && !json_object_get(p->used, plain) ? fr_xstrdup(plain) : sc__new_internal(c, name);
    char *q = sc__quote(internal);
    json_array_append_new(p->items, json_sprintf("%s as %s", text, q));
    free(q);
    json_object_set_new(p->used, internal, json_true());
    sc__rel_add(&p->out, name, true, NULL, internal, t);
    p->texts = fr_xrealloc(p->texts, sizeof(char *) * (size_t)(p->ntexts + 1));
    p->texts[p->ntexts++] = fr_xstrdup(text);
    free(internal);
}

static int star(struct sc_ex *x, const struct sql_expr *e, struct proj *p)
{
    const struct sc_rel *src = x->scope->rel;
    int n = 0;
    for (int i = 0; src && i < src->ncols; i++) {
        const struct sc_col *col = &src->cols[i];
        if ((col->hidden && !(e->qual.text && col->merged)) ||
            (e->qual.text && (!col->qual || !sc__name_eq(col->qual, e->qual.text, e->qual.quoted))))
            continue;
        bool key = !x->grouped;
        for (int k = 0; k < x->nkeys && !key; k++)
            key = strcmp(x->keys[k], col->internal) == 0;
        if (!key)
            return sc__invalid(x->c, e->pos,
                               "column '%s' must appear in the GROUP BY clause or be used in an "
                               "aggregate function",
                               col->name);
        sc__leaf_use(x->c, col);
        char *q = sc__quote(col->internal);
        proj_add(x->c, p, q, col->name, col->type, col->internal);
        free(q);
        n++;
    }
    if (n == 0 && e->qual.text)
        return sc__invalid(x->c, e->pos, "no table '%s' in FROM for '%s.*'", e->qual.text,
                           e->qual.text);
    if (n == 0)
        return sc__invalid(x->c, e->pos, "SELECT * needs a FROM with columns");
    return FR_OK;
}

static int item(struct sc_ex *x, struct sc_rel *r, const struct sql_select_item *it, struct proj *p)
{
    if (it->expr->kind == SQL_E_STAR)
        return star(x, it->expr, p);
    char *text = NULL;
    int rc = sc__expr_text(x, it->expr, &text);
    df_type t = DF_TYPE_NULL;
    if (rc == FR_OK && it->expr->kind != SQL_E_NULL) /* NULL: a column of any type */
        rc = sc__expr_type(x->c, r, text, it->expr->pos, &t);
    if (rc == FR_OK) {
        char *name = it->alias.text                   ? fr_xstrdup(it->alias.text)
                     : it->expr->kind == SQL_E_COLUMN ? fr_xstrdup(it->expr->name.text)
                                                      : sc__display_name(x->c, it->expr);
        /* a plain column keeps its internal name (the text is "name") */
        char *plain = NULL;
        if (text[0] == '"' && strchr(text + 1, '"') == text + strlen(text) - 1)
            plain = fr_xstrndup(text + 1, strlen(text) - 2);
        proj_add(x->c, p, text, name, t, plain);
        free(plain);
        free(name);
    }
    free(text);
    return rc;
}

/* An ORDER BY item: the output column it names or a hidden column. */
static int order_item(struct sc_ex *x, struct sc_rel *r, const struct sql_order_item *it,
                      const struct sql_select *s, struct proj *p, char **key)
{
    const struct sql_expr *e = it->expr;
    if (e->kind == SQL_E_INT) {
        if (e->ival < 1 || e->ival > p->out.ncols)
            return sc__invalid(x->c, e->pos,
                               "ORDER BY position %lld is not in the select list "
                               "(1 to %d)",
                               (long long)e->ival, p->out.ncols);
        *key = sc__order_key(p->out.cols[e->ival - 1].internal, it);
        return FR_OK;
    }
    if (e->kind == SQL_E_COLUMN && !e->qual.text) {
        for (int i = 0; i < p->out.ncols; i++) {
            if (sc__name_eq(p->out.cols[i].name, e->name.text, e->name.quoted)) {
                *key = sc__order_key(p->out.cols[i].internal, it);
                return FR_OK;
            }
        }
    }
    char *text = NULL;
    int rc = sc__expr_text(x, e, &text);
    for (int i = 0; rc == FR_OK && i < p->ntexts; i++) {
        if (strcmp(p->texts[i], text) == 0) {
            *key = sc__order_key(p->out.cols[i].internal, it);
            free(text);
            return FR_OK;
        }
    }
    df_type t = DF_TYPE_NULL;
    if (rc == FR_OK && s->distinct)
        rc = sc__invalid(x->c, e->pos,
                         "for SELECT DISTINCT, ORDER BY expressions must appear in the select "
                         "list");
    if (rc == FR_OK)
        rc = sc__expr_type(x->c, r, text, e->pos, &t);
    if (rc == FR_OK) {
        char *internal = sc__new_internal(x->c, "order");
        char *q = sc__quote(internal);
        json_array_append_new(p->items, json_sprintf("%s as %s", text, q));
        free(q);
        *key = sc__order_key(internal, it);
        json_array_append_new(p->hidden, json_string(internal));
        free(internal);
    }
    free(text);
    return rc;
}

static void proj_cleanup(struct proj *p)
{
    json_decref(p->items);
    json_decref(p->used);
    json_decref(p->hidden);
    for (int i = 0; i < p->ntexts; i++)
        free(p->texts[i]);
    free(p->texts);
    sc__rel_cleanup(&p->out);
}

/* The select list, ORDER BY, DISTINCT, LIMIT: r's plan moves to out. */
static int project(struct sc_ex *x, const struct sql_query *q, const struct sql_select *s,
                   struct sc_rel *r, struct sc_rel *out)
{
    struct proj p = {json_array(), {0}, json_object(), NULL, 0, json_array()};
    int rc = FR_OK, nkeys = 0;
    for (int i = 0; rc == FR_OK && i < s->nitems; i++)
        rc = sc__scalar_subqueries(x, r, s->items[i].expr);
    for (int i = 0; rc == FR_OK && i < s->nitems; i++)
        rc = item(x, r, &s->items[i], &p);
    /* a correlated subquery also outputs its inner keys (hidden, last) */
    struct sc_scope *h = x->scope->outer;
    for (int i = 0; rc == FR_OK && h && h->correlated_ok && i < h->ncorr; i++) {
        struct sql_select_item ci = {h->corr[i].inner, {NULL, false, 0}};
        if ((rc = item(x, r, &ci, &p)) == FR_OK)
            p.out.cols[p.out.ncols - 1].hidden = true;
    }
    int norder = q ? q->norder : 0;
    char **keys = fr_xcalloc((size_t)norder + 1, sizeof(char *));
    x->clause = "ORDER BY";
    for (int i = 0; rc == FR_OK && i < norder; i++)
        rc = sc__scalar_subqueries(x, r, q->order_by[i].expr);
    for (int i = 0; rc == FR_OK && i < norder; i++, nkeys++)
        rc = order_item(x, r, &q->order_by[i], s, &p, &keys[i]);
    if (rc == FR_OK) {
        sc__rel_op(r, json_pack("{sO}", "select", p.items));
        if (s->distinct)
            sc__rel_op(r, json_pack("{s[]}", "distinct"));
        rc = sc__order_limit(x->c, q, r, keys, nkeys);
    }
    if (rc == FR_OK && json_array_size(p.hidden) > 0)
        sc__rel_op(r, json_pack("{sO}", "drop", p.hidden));
    for (int i = 0; i < norder; i++)
        free(keys[i]);
    free(keys);
    if (rc == FR_OK) {
        out->plan = r->plan;
        r->plan = NULL;
        out->cols = p.out.cols;
        out->ncols = p.out.ncols;
        p.out.cols = NULL;
        p.out.ncols = 0;
    }
    proj_cleanup(&p);
    return rc;
}

int sc__select(struct sc_ctx *c, const struct sql_query *q, const struct sql_select *s,
               struct sc_scope *outer, struct sc_rel *out)
{
    if (s->ndistinct_on > 0)
        return sc__unsupported(c, s->distinct_on[0]->pos, "DISTINCT ON is not supported");
    struct sc_rel r, pre;
    sc__rel_init(&r);
    sc__rel_init(&pre);
    struct sc_scope scope = {&r, outer, NULL, 0, false};
    struct sc_ex x = {0};
    x.c = c;
    x.scope = &scope;
    x.leaf_names = -1;
    int rc = sc__from_where(c, s, &scope, &r);
    if (rc == FR_OK && sc__grouped(q, s)) {
        rc = sc__aggregate(c, q, s, &r, &pre, &x);
        scope.rel = &pre;
    }
    if (rc == FR_OK && s->having) {
        x.clause = "HAVING";
        rc = sc__scalar_subqueries(&x, &r, s->having);
        if (rc == FR_OK)
            rc = sc__filter_ex(&x, &r, s->having);
    }
    if (rc == FR_OK)
        rc = sc__windows(c, q, s, &r, &x);
    if (rc == FR_OK && s->qualify) {
        x.clause = "QUALIFY";
        rc = sc__filter_ex(&x, &r, s->qualify);
    }
    x.clause = "SELECT";
    if (rc == FR_OK)
        rc = project(&x, q, s, &r, out);
    for (int i = 0; i < x.nexpr_keys; i++) {
        free(x.key_texts[i]);
        free(x.key_cols[i]);
    }
    free(x.key_texts);
    free(x.key_cols);
    free(x.keys);
    sc__ex_cleanup(&x);
    sc__rel_cleanup(&r);
    sc__rel_cleanup(&pre);
    return rc;
}

int sc__query(struct sc_ctx *c, const struct sql_query *q, struct sc_scope *outer,
              struct sc_rel *out)
{
    if (++c->depth > 4 * SQL_MAX_NESTING) {
        c->depth--;
        return sc__invalid(c, q->pos, "the query nests too deeply");
    }
    const struct sql_select *saved_sel = c->alias_sel;
    int saved_busy = c->alias_busy;
    c->alias_sel = q->select && !q->select->values ? q->select : NULL;
    c->alias_busy = 0;
    struct sc_cte *saved = c->ctes, *defs = fr_xcalloc((size_t)q->nctes + 1, sizeof(*defs));
    int rc = FR_OK;
    for (int i = 0; i < q->nctes && rc == FR_OK; i++) {
        if (q->ctes[i].recursive)
            rc = sc__unsupported(c, q->ctes[i].name.pos, "WITH RECURSIVE is not supported");
        defs[i].def = &q->ctes[i];
        defs[i].next = c->ctes;
        c->ctes = &defs[i];
    }
    if (rc == FR_OK && q->select && !q->select->values)
        rc = sc__select(c, q, q->select, outer, out);
    else if (rc == FR_OK)
        rc = sc__setop(c, q, outer, out);
    c->ctes = saved;
    c->alias_sel = saved_sel;
    c->alias_busy = saved_busy;
    free(defs);
    c->depth--;
    return rc;
}
