/* sql_parse_query: queries. WITH, set operations with SQL precedence
 * (INTERSECT binds tighter than UNION and EXCEPT, all left-associative),
 * parenthesized queries, the SELECT block and VALUES, and the ORDER BY,
 * LIMIT and OFFSET that close a query. */
#include "sql_parse_int.h"

#include <stdlib.h>
#include <string.h>

static struct sql_query *set_expr(struct sql_parser *p);

static bool expr_list(struct sql_parser *p, struct sql_expr ***list, int *n)
{
    do {
        struct sql_expr *e = sql__expr(p);
        if (!e)
            return false;
        *list = sql__grow(*list, *n, sizeof **list);
        (*list)[(*n)++] = e;
    } while (sql__accept_op(p, ','));
    return true;
}

static bool select_item(struct sql_parser *p, struct sql_select *s)
{
    const struct sql_token *t = sql__peek(p, 0);
    struct sql_select_item it = {0};
    if (sql__accept_op(p, '*')) {
        it.expr = sql__expr_new(SQL_E_STAR, t->pos);
        it.expr->end = t->end;
    } else {
        it.expr = sql__expr(p);
        if (!it.expr)
            return false;
    }
    s->items = sql__grow(s->items, s->nitems, sizeof *s->items);
    s->items[s->nitems++] = it;
    struct sql_name *alias = &s->items[s->nitems - 1].alias;
    if (it.expr->kind == SQL_E_STAR) { /* * and t.* take no alias; DuckDB's modifiers are refused */
        const struct sql_token *m = sql__peek(p, 0);
        if (sql__is_kw(m, "exclude") || sql__is_kw(m, "replace") || sql__is_kw(m, "rename"))
            return sql__unsupported(p, m->pos, "SELECT * %s is not supported",
                                    sql__is_kw(m, "exclude")   ? "EXCLUDE"
                                    : sql__is_kw(m, "replace") ? "REPLACE"
                                                               : "RENAME");
        return true;
    }
    if (sql__accept_kw(p, "as")) {
        const struct sql_token *a = sql__peek(p, 0);
        if (a->kind != SQL_T_WORD && a->kind != SQL_T_QIDENT)
            return sql__expected(p, a, "a column alias after AS");
        sql__next(p);
        alias->text = fr_xstrdup(a->text);
        alias->quoted = a->kind == SQL_T_QIDENT;
        alias->pos = a->pos;
    } else {
        int at = p->i;
        if (sql__name(p, alias))
            p->alias_tok = at;
    }
    return true;
}

static bool group_by(struct sql_parser *p, struct sql_select *s)
{
    if (!sql__accept_kw(p, "by"))
        return sql__expected(p, sql__peek(p, 0), "BY after GROUP");
    p->stage = SQL_STAGE_GROUP;
    if (sql__accept_kw(p, "all")) {
        s->group_by_all = true;
        return true;
    }
    return expr_list(p, &s->group_by, &s->ngroup);
}

static bool window_clause(struct sql_parser *p, struct sql_select *s)
{
    do {
        struct sql_name nm = {0};
        if (!sql__name(p, &nm))
            return sql__expected(p, sql__peek(p, 0), "a window name");
        s->window_names = sql__grow(s->window_names, s->nwindows, sizeof *s->window_names);
        s->windows = sql__grow(s->windows, s->nwindows, sizeof *s->windows);
        s->window_names[s->nwindows] = nm;
        s->windows[s->nwindows++] = NULL;
        if (!sql__accept_kw(p, "as"))
            return sql__expected(p, sql__peek(p, 0), "AS after the window name");
        const struct sql_token *open = sql__peek(p, 0);
        if (!sql__accept_op(p, '('))
            return sql__expected(p, open, "'(' and a window specification");
        s->windows[s->nwindows - 1] = sql__window_spec(p, open);
        if (!s->windows[s->nwindows - 1])
            return false;
    } while (sql__accept_op(p, ','));
    return true;
}

/* The clauses after the select list. */
static bool select_tail(struct sql_parser *p, struct sql_select *s)
{
    if (sql__accept_kw(p, "from")) {
        p->stage = SQL_STAGE_FROM;
        if (!(s->from = sql__from(p)))
            return false;
    }
    if (sql__accept_kw(p, "where")) {
        p->stage = SQL_STAGE_WHERE;
        if (!(s->where = sql__expr(p)))
            return false;
    }
    if (sql__accept_kw(p, "group") && !group_by(p, s))
        return false;
    if (sql__accept_kw(p, "having")) {
        p->stage = SQL_STAGE_HAVING;
        if (!(s->having = sql__expr(p)))
            return false;
    }
    if (sql__accept_kw(p, "window") && !window_clause(p, s))
        return false;
    if (sql__accept_kw(p, "qualify")) {
        p->stage = SQL_STAGE_HAVING;
        if (!(s->qualify = sql__expr(p)))
            return false;
    }
    return true;
}

static bool select_block(struct sql_parser *p, struct sql_select *s)
{
    if (sql__accept_kw(p, "distinct")) {
        s->distinct = true;
        const struct sql_token *open = sql__peek(p, 1);
        if (sql__accept_kw(p, "on")) {
            if (!sql__accept_op(p, '('))
                return sql__expected(p, sql__peek(p, 0), "'(' after DISTINCT ON");
            if (!expr_list(p, &s->distinct_on, &s->ndistinct_on) || !sql__close_paren(p, open))
                return false;
        }
    } else {
        sql__accept_kw(p, "all");
    }
    const struct sql_token *t = sql__peek(p, 0);
    if (t->kind == SQL_T_EOF || sql__is_kw(t, "from"))
        return sql__expected(p, t, "a select list");
    do {
        if (!select_item(p, s))
            return false;
    } while (sql__accept_op(p, ','));
    p->stage = SQL_STAGE_ITEMS;
    return select_tail(p, s);
}

static bool values_rows(struct sql_parser *p, struct sql_select *s)
{
    do {
        const struct sql_token *open = sql__peek(p, 0);
        if (!sql__accept_op(p, '('))
            return sql__expected(p, open, "'(' and a row of values");
        struct sql_expr **row = NULL;
        int n = 0;
        bool ok = expr_list(p, &row, &n) && sql__close_paren(p, open);
        if (ok && s->nvalues > 0 && n != s->values_width)
            ok = sql__syntax(p, open, "a VALUES row has %d values, the first row has %d", n,
                             s->values_width);
        if (!ok) {
            for (int k = 0; k < n; k++)
                sql__expr_free(row[k]);
            free(row);
            return false;
        }
        s->values_width = n;
        s->values = sql__grow(s->values, s->nvalues, sizeof *s->values);
        s->values[s->nvalues++] = row;
    } while (sql__accept_op(p, ','));
    p->stage = SQL_STAGE_NONE;
    return true;
}

/* A SELECT block, VALUES, or ( query ). */
static struct sql_query *set_primary(struct sql_parser *p)
{
    const struct sql_token *t = sql__peek(p, 0);
    struct sql_query *q = sql__query_new(t->pos);
    if (sql__accept_op(p, '(')) {
        if (!(q->left = sql__query(p)) || !sql__close_paren(p, t))
            goto fail;
        p->stage = SQL_STAGE_NONE;
        return q;
    }
    bool values = sql__is_kw(t, "values");
    if (!values && !sql__is_kw(t, "select")) {
        sql__expected(p, t, "SELECT, VALUES or '('");
        goto fail;
    }
    sql__next(p);
    q->select = sql__select_new(t->pos);
    if (values ? values_rows(p, q->select) : select_block(p, q->select))
        return q;
fail:
    sql__query_free(q);
    return NULL;
}

static int set_op(const struct sql_token *t, bool intersect_level)
{
    if (intersect_level)
        return sql__is_kw(t, "intersect") ? SQL_SET_INTERSECT : SQL_SET_NONE;
    if (sql__is_kw(t, "union"))
        return SQL_SET_UNION;
    return sql__is_kw(t, "except") ? SQL_SET_EXCEPT : SQL_SET_NONE;
}

/* A set operation chain: parts[0] op[1] parts[1] ... */
struct set_links {
    struct sql_query **parts;
    int *ops;
    bool *all;
    const struct sql_token **toks;
    int n;
};

static void links_push(struct set_links *l, struct sql_query *q, int op, bool all,
                       const struct sql_token *t)
{
    l->parts = sql__grow(l->parts, l->n, sizeof *l->parts);
    l->ops = sql__grow(l->ops, l->n, sizeof *l->ops);
    l->all = sql__grow(l->all, l->n, sizeof *l->all);
    l->toks = sql__grow(l->toks, l->n, sizeof *l->toks);
    l->parts[l->n] = q;
    l->ops[l->n] = op;
    l->all[l->n] = all;
    l->toks[l->n] = t;
    l->n++;
}

static void links_free(struct set_links *l, bool parts)
{
    for (int i = 0; parts && i < l->n; i++)
        sql__query_free(l->parts[i]);
    free(l->parts);
    free(l->ops);
    free(l->all);
    free(l->toks);
}

static struct sql_query *set_node(int op, bool all, struct sql_query *l, struct sql_query *r)
{
    struct sql_query *q = sql__query_new(l->pos);
    q->setop = op;
    q->all = all;
    q->left = l;
    q->right = r;
    return q;
}

/* parts[lo, hi) as a balanced tree of one UNION [ALL] (associative). */
static struct sql_query *set_balanced(struct set_links *l, int lo, int hi)
{
    if (hi - lo == 1)
        return l->parts[lo];
    int mid = lo + (hi - lo + 1) / 2;
    return set_node(l->ops[1], l->all[1], set_balanced(l, lo, mid), set_balanced(l, mid, hi));
}

/* Chains up to this many parts stay left-deep, each link one nesting level;
 * a longer chain of one UNION or one UNION ALL is balanced (log2 levels). */
#define SET_LEFT_DEEP 16

static struct sql_query *set_tree(struct sql_parser *p, struct set_links *l)
{
    bool same = l->n > SET_LEFT_DEEP && l->ops[1] == SQL_SET_UNION;
    for (int i = 2; same && i < l->n; i++)
        same = l->ops[i] == l->ops[1] && l->all[i] == l->all[1];
    int levels = 0;
    if (same)
        while ((1 << levels) < l->n)
            levels++;
    else
        levels = l->n - 1;
    if (p->depth + levels > SQL_MAX_NESTING) {
        int at = SQL_MAX_NESTING - p->depth + 1;
        p->depth += levels;
        sql__enter(p, l->toks[at < 1 ? 1 : at >= l->n ? l->n - 1 : at]);
        p->depth -= levels + 1;
        links_free(l, true);
        return NULL;
    }
    struct sql_query *q = l->parts[0];
    if (same)
        q = set_balanced(l, 0, l->n);
    else
        for (int i = 1; i < l->n; i++)
            q = set_node(l->ops[i], l->all[i], q, l->parts[i]);
    links_free(l, false);
    return q;
}

/* left { op [ALL|DISTINCT] right } (set_tree). */
static struct sql_query *set_chain(struct sql_parser *p, bool intersect_level)
{
    struct sql_query *left = intersect_level ? set_primary(p) : set_chain(p, true);
    struct set_links l = {0};
    int entered = 0;
    if (!left)
        return NULL;
    links_push(&l, left, SQL_SET_NONE, false, NULL);
    for (;;) {
        const struct sql_token *t = sql__peek(p, 0);
        int op = set_op(t, intersect_level);
        if (op == SQL_SET_NONE)
            break;
        if (l.n <= SET_LEFT_DEEP && !sql__enter(p, t)) { /* the links so far count */
            p->depth -= entered;
            links_free(&l, true);
            return NULL;
        }
        entered += l.n <= SET_LEFT_DEEP;
        sql__next(p);
        bool all = sql__accept_kw(p, "all");
        if (!all)
            sql__accept_kw(p, "distinct");
        struct sql_query *right = intersect_level ? set_primary(p) : set_chain(p, true);
        if (!right) {
            p->depth -= entered;
            links_free(&l, true);
            return NULL;
        }
        links_push(&l, right, op, all, t);
    }
    p->depth -= entered;
    return set_tree(p, &l);
}

static struct sql_query *set_expr(struct sql_parser *p)
{
    return set_chain(p, false);
}

static bool ctes(struct sql_parser *p, struct sql_query *q)
{
    const struct sql_token *r = sql__peek(p, 0);
    if (sql__is_kw(r, "recursive"))
        return sql__unsupported(p, r->pos, "WITH RECURSIVE is not supported");
    bool recursive = false;
    do {
        q->ctes = sql__grow(q->ctes, q->nctes, sizeof *q->ctes);
        struct sql_cte *c = &q->ctes[q->nctes++];
        memset(c, 0, sizeof *c);
        c->recursive = recursive;
        if (!sql__name(p, &c->name))
            return sql__expected(p, sql__peek(p, 0), "a name for the WITH query");
        if (sql__is_op(sql__peek(p, 0), '(') && !sql__name_list(p, &c->cols, &c->ncols))
            return false;
        if (!sql__accept_kw(p, "as"))
            return sql__expected(p, sql__peek(p, 0), "AS after the WITH query's name");
        sql__accept_kw(p, "not"), sql__accept_kw(p, "materialized");
        const struct sql_token *open = sql__peek(p, 0);
        if (!sql__accept_op(p, '('))
            return sql__expected(p, open, "'(' and the WITH query");
        if (!(c->query = sql__query(p)) || !sql__close_paren(p, open))
            return false;
    } while (sql__accept_op(p, ','));
    return true;
}

static bool limit_offset(struct sql_parser *p, struct sql_query *q)
{
    for (;;) {
        const struct sql_token *t = sql__peek(p, 0);
        if (!q->limit && sql__accept_kw(p, "limit")) {
            p->stage = SQL_STAGE_LIMIT;
            if (sql__accept_kw(p, "all"))
                continue;
            if (!(q->limit = sql__expr(p)))
                return false;
        } else if (!q->offset && sql__accept_kw(p, "offset")) {
            p->stage = SQL_STAGE_NONE;
            if (!(q->offset = sql__expr(p)))
                return false;
            if (!sql__accept_kw(p, "rows"))
                sql__accept_kw(p, "row");
        } else if (sql__is_kw(t, "fetch")) {
            return sql__unsupported(p, t->pos, "FETCH FIRST is not supported: use LIMIT");
        } else {
            return true;
        }
    }
}

/* [WITH ...] body [ORDER BY ...] [LIMIT ...] [OFFSET ...] */
static bool query_body(struct sql_parser *p, struct sql_query **qp)
{
    const struct sql_token *t = sql__peek(p, 0);
    struct sql_query *with = NULL;
    if (sql__accept_kw(p, "with")) {
        with = sql__query_new(t->pos);
        if (!ctes(p, with)) {
            sql__query_free(with);
            return false;
        }
    }
    struct sql_query *q = set_expr(p);
    if (!q) {
        sql__query_free(with);
        return false;
    }
    if (with) { /* the WITH list moves onto the body */
        q->ctes = with->ctes, q->nctes = with->nctes, q->pos = with->pos;
        with->ctes = NULL, with->nctes = 0;
        sql__query_free(with);
    }
    *qp = q;
    if (sql__accept_kw(p, "order")) {
        if (!sql__accept_kw(p, "by"))
            return sql__expected(p, sql__peek(p, 0), "BY after ORDER");
        p->stage = SQL_STAGE_ORDER;
        if (sql__order_list(p, &q->order_by, &q->norder) != FR_OK)
            return false;
    }
    return limit_offset(p, q);
}

struct sql_query *sql__query(struct sql_parser *p)
{
    const struct sql_token *t = sql__peek(p, 0);
    enum sql_stage saved = p->stage;
    bool nested = p->depth > 0;
    if (!sql__enter(p, t))
        return NULL;
    struct sql_query *q = NULL;
    if (!query_body(p, &q)) {
        sql__query_free(q);
        q = NULL;
    }
    sql__leave(p);
    if (nested)
        p->stage = saved;
    return q;
}
