/* sql_ast: making and freeing the nodes of the SQL syntax tree. Every
 * pointer in a node is owned by it, so freeing the statement frees all;
 * the free functions accept NULL. Frees recurse as deep as the tree, which
 * the parser bounds by SQL_MAX_NESTING. */
#include "sql_parse_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void *sql__grow(void *arr, int n, size_t el)
{
    if (n == 0)
        return fr_xrealloc(arr, el);
    if ((n & (n - 1)) != 0)
        return arr;
    return fr_xrealloc(arr, (size_t)n * 2 * el);
}

char *sql__lower(const char *s)
{
    char *r = fr_xstrdup(s);
    for (char *c = r; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    return r;
}

struct sql_expr *sql__expr_new(enum sql_ekind kind, int64_t pos)
{
    struct sql_expr *e = fr_xcalloc(1, sizeof *e);
    e->kind = kind;
    e->pos = pos;
    e->end = pos;
    e->qual.pos = e->name.pos = pos;
    return e;
}

struct sql_query *sql__query_new(int64_t pos)
{
    struct sql_query *q = fr_xcalloc(1, sizeof *q);
    q->pos = pos;
    return q;
}

struct sql_select *sql__select_new(int64_t pos)
{
    struct sql_select *s = fr_xcalloc(1, sizeof *s);
    s->pos = pos;
    return s;
}

struct sql_from *sql__from_new(enum sql_from_kind kind, int64_t pos)
{
    struct sql_from *f = fr_xcalloc(1, sizeof *f);
    f->kind = kind;
    f->pos = pos;
    return f;
}

struct sql_window *sql__window_new(int64_t pos)
{
    struct sql_window *w = fr_xcalloc(1, sizeof *w);
    w->pos = pos;
    w->frame_pos = -1;
    return w;
}

void sql__name_cleanup(struct sql_name *n)
{
    free(n->text);
    n->text = NULL;
}

static void names_free(struct sql_name *names, int n)
{
    for (int k = 0; k < n; k++)
        sql__name_cleanup(&names[k]);
    free(names);
}

static void exprs_free(struct sql_expr **es, int n)
{
    for (int k = 0; k < n; k++)
        sql__expr_free(es[k]);
    free(es);
}

static void order_free(struct sql_order_item *items, int n)
{
    for (int k = 0; k < n; k++)
        sql__expr_free(items[k].expr);
    free(items);
}

void sql__window_free(struct sql_window *w)
{
    if (!w)
        return;
    sql__name_cleanup(&w->ref);
    exprs_free(w->partition_by, w->npartition);
    order_free(w->order_by, w->norder);
    free(w->frame_text);
    free(w);
}

void sql__expr_free(struct sql_expr *e)
{
    if (!e)
        return;
    free(e->text);
    free(e->type_name);
    free(e->unit);
    sql__name_cleanup(&e->qual);
    sql__name_cleanup(&e->name);
    exprs_free(e->args, e->nargs);
    sql__expr_free(e->operand);
    sql__expr_free(e->else_);
    sql__expr_free(e->filter);
    sql__query_free(e->query);
    sql__window_free(e->window);
    free(e);
}

void sql__from_free(struct sql_from *f)
{
    if (!f)
        return;
    sql__name_cleanup(&f->table);
    sql__query_free(f->query);
    sql__name_cleanup(&f->alias);
    names_free(f->col_aliases, f->ncol_aliases);
    sql__from_free(f->left);
    sql__from_free(f->right);
    sql__expr_free(f->on);
    names_free(f->using_cols, f->nusing);
    free(f);
}

static void select_free(struct sql_select *s)
{
    if (!s)
        return;
    exprs_free(s->distinct_on, s->ndistinct_on);
    for (int k = 0; k < s->nitems; k++) {
        sql__expr_free(s->items[k].expr);
        sql__name_cleanup(&s->items[k].alias);
    }
    free(s->items);
    sql__from_free(s->from);
    sql__expr_free(s->where);
    exprs_free(s->group_by, s->ngroup);
    sql__expr_free(s->having);
    names_free(s->window_names, s->nwindows);
    for (int k = 0; k < s->nwindows; k++)
        sql__window_free(s->windows[k]);
    free(s->windows);
    sql__expr_free(s->qualify);
    for (int r = 0; r < s->nvalues; r++)
        exprs_free(s->values[r], s->values_width);
    free(s->values);
    free(s);
}

void sql__query_free(struct sql_query *q)
{
    if (!q)
        return;
    for (int k = 0; k < q->nctes; k++) {
        sql__name_cleanup(&q->ctes[k].name);
        names_free(q->ctes[k].cols, q->ctes[k].ncols);
        sql__query_free(q->ctes[k].query);
    }
    free(q->ctes);
    select_free(q->select);
    sql__query_free(q->left);
    sql__query_free(q->right);
    order_free(q->order_by, q->norder);
    sql__expr_free(q->limit);
    sql__expr_free(q->offset);
    free(q);
}

void sql_stmt_free(struct sql_stmt *s)
{
    if (!s)
        return;
    sql__query_free(s->query);
    sql__name_cleanup(&s->field);
    sql__expr_free(s->value);
    free(s);
}

void sql_statement_cleanup(struct sql_statement *s)
{
    if (!s)
        return;
    json_decref(s->plan);
    free(s->field);
    json_decref(s->value);
    s->plan = NULL;
    s->field = NULL;
    s->value = NULL;
}
