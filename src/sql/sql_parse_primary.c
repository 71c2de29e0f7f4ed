/* sql_parse_primary: the primaries of an expression. Literals (numbers,
 * strings, TRUE/FALSE/NULL, DATE/TIMESTAMP '..', INTERVAL), column
 * references, function calls with DISTINCT, count(*), FILTER and OVER,
 * CASE, CAST / TRY_CAST, EXTRACT, EXISTS and (query), and window specs. */
#include "sql_parse_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sql_expr *sql__primary(struct sql_parser *p);

static void finish(struct sql_parser *p, struct sql_expr *e)
{
    e->end = p->toks[p->i > 0 ? p->i - 1 : 0].end;
}

static void push_arg(struct sql_expr *e, struct sql_expr *a)
{
    e->args = sql__grow(e->args, e->nargs, sizeof *e->args);
    e->args[e->nargs++] = a;
}

static bool starts_query(const struct sql_token *t)
{
    return sql__is_kw(t, "select") || sql__is_kw(t, "with") || sql__is_kw(t, "values");
}

/* The frame clause up to the window's ')': recorded as written. */
static bool window_frame(struct sql_parser *p, struct sql_window *w)
{
    const struct sql_token *first = sql__peek(p, 0);
    int parens = 0;
    for (;;) {
        const struct sql_token *t = sql__peek(p, 0);
        if (t->kind == SQL_T_EOF)
            return sql__expected(p, t, "')' after the window frame");
        if (sql__is_op(t, ')') && parens == 0)
            break;
        parens += sql__is_op(t, '(') ? 1 : sql__is_op(t, ')') ? -1 : 0;
        sql__next(p);
    }
    w->has_frame = true;
    w->frame_pos = first->pos;
    int64_t end = p->toks[p->i - 1].end;
    w->frame_text = fr_xstrndup(p->text + first->pos, (size_t)(end - first->pos));
    return true;
}

struct sql_window *sql__window_spec(struct sql_parser *p, const struct sql_token *open)
{
    struct sql_window *w = sql__window_new(open->pos);
    const struct sql_token *t = sql__peek(p, 0);
    bool ok = true;
    if (t->kind == SQL_T_WORD && !sql__is_kw(t, "partition") && !sql__is_kw(t, "order") &&
        !sql__is_kw(t, "rows") && !sql__is_kw(t, "range") && !sql__is_kw(t, "groups"))
        ok = sql__name(p, &w->ref) || sql__expected(p, t, "PARTITION BY, ORDER BY or ')'");
    if (ok && sql__accept_kw(p, "partition")) {
        ok = sql__accept_kw(p, "by") || sql__expected(p, sql__peek(p, 0), "BY after PARTITION");
        while (ok) {
            struct sql_expr *e = sql__expr(p);
            if (!(ok = e != NULL))
                break;
            w->partition_by = sql__grow(w->partition_by, w->npartition, sizeof *w->partition_by);
            w->partition_by[w->npartition++] = e;
            if (!sql__accept_op(p, ','))
                break;
        }
    }
    if (ok && sql__accept_kw(p, "order")) {
        ok = sql__accept_kw(p, "by") || sql__expected(p, sql__peek(p, 0), "BY after ORDER");
        ok = ok && sql__order_list(p, &w->order_by, &w->norder) == FR_OK;
    }
    t = sql__peek(p, 0);
    if (ok && (sql__is_kw(t, "rows") || sql__is_kw(t, "range") || sql__is_kw(t, "groups")))
        ok = window_frame(p, w);
    if (ok && !sql__accept_op(p, ')'))
        ok = sql__expected(p, sql__peek(p, 0), "PARTITION BY, ORDER BY, a frame or ')'");
    if (!ok) {
        sql__window_free(w);
        return NULL;
    }
    return w;
}

/* After f(...): FILTER (WHERE e) and OVER (spec) | OVER name. */
static bool func_tail(struct sql_parser *p, struct sql_expr *e)
{
    if (sql__is_kw(sql__peek(p, 0), "filter")) {
        sql__next(p);
        const struct sql_token *open = sql__peek(p, 0);
        if (!sql__accept_op(p, '(') || !sql__accept_kw(p, "where"))
            return sql__expected(p, sql__peek(p, 0), "(WHERE after FILTER");
        if (!(e->filter = sql__expr(p)) || !sql__close_paren(p, open))
            return false;
    }
    if (!sql__accept_kw(p, "over"))
        return true;
    const struct sql_token *t = sql__peek(p, 0);
    if (sql__accept_op(p, '('))
        return (e->window = sql__window_spec(p, t)) != NULL;
    e->window = sql__window_new(t->pos);
    return sql__name(p, &e->window->ref) || sql__expected(p, t, "'(' or a window name after OVER");
}

/* substring(x FROM start [FOR length]) is substring(x, start[, length]). */
static bool substring_rest(struct sql_parser *p, struct sql_expr *e)
{
    const char *const words[] = {"from", "for"};
    for (int k = 0; k < 2; k++) {
        if (!sql__accept_kw(p, words[k]))
            return true;
        struct sql_expr *a = sql__expr(p);
        if (!a)
            return false;
        push_arg(e, a);
    }
    return true;
}

/* name ( [DISTINCT|ALL] [* | args] ) tail, the name already read. */
static bool func_call(struct sql_parser *p, struct sql_expr *e, const struct sql_token *open)
{
    e->kind = SQL_E_FUNC;
    if (!e->name.quoted) {
        char *l = sql__lower(e->name.text);
        free(e->name.text);
        e->name.text = l;
    }
    if (sql__accept_kw(p, "distinct"))
        e->distinct = true;
    else
        sql__accept_kw(p, "all");
    if (sql__is_op(sql__peek(p, 0), '*') && !e->distinct) {
        sql__next(p);
        e->star = true;
    } else if (!sql__is_op(sql__peek(p, 0), ')') || e->distinct) {
        do {
            struct sql_expr *a = sql__expr(p);
            if (!a)
                return false;
            push_arg(e, a);
        } while (sql__accept_op(p, ','));
        if (strcmp(e->name.text, "substring") == 0 && e->nargs == 1 && !substring_rest(p, e))
            return false;
    }
    if (sql__is_kw(sql__peek(p, 0), "order"))
        return sql__unsupported(p, sql__peek(p, 0)->pos,
                                "ORDER BY inside a function call is not supported");
    return sql__close_paren(p, open) && func_tail(p, e);
}

/* A column, t.col, t.*, or a function call. */
static struct sql_expr *name_ref(struct sql_parser *p, const struct sql_token *t)
{
    struct sql_expr *e = sql__expr_new(SQL_E_COLUMN, t->pos);
    sql__next(p);
    e->name.text = fr_xstrdup(t->text);
    e->name.quoted = t->kind == SQL_T_QIDENT;
    e->name.pos = t->pos;
    const struct sql_token *open = sql__peek(p, 0);
    bool ok = true;
    if (sql__accept_op(p, '(')) {
        ok = func_call(p, e, open);
    } else if (sql__accept_op(p, '.')) {
        e->qual = e->name;
        memset(&e->name, 0, sizeof e->name);
        const struct sql_token *c = sql__peek(p, 0);
        if (sql__accept_op(p, '*')) {
            e->kind = SQL_E_STAR;
        } else if (c->kind == SQL_T_WORD || c->kind == SQL_T_QIDENT) {
            sql__next(p);
            e->name.text = fr_xstrdup(c->text);
            e->name.quoted = c->kind == SQL_T_QIDENT;
            e->name.pos = c->pos;
            if (sql__is_op(sql__peek(p, 0), '.') || sql__is_op(sql__peek(p, 0), '('))
                ok = sql__unsupported(p, sql__peek(p, 0)->pos,
                                      "names of more than two parts are not supported");
        } else {
            ok = sql__expected(p, c, "a column name or '*' after '.'");
        }
    }
    if (!ok) {
        sql__expr_free(e);
        return NULL;
    }
    finish(p, e);
    return e;
}

struct sql_expr *sql__keyword_primary(struct sql_parser *p, const struct sql_token *t,
                                      bool *handled);

/* ( expr ) or ( query ). */
static struct sql_expr *paren(struct sql_parser *p, const struct sql_token *t)
{
    sql__next(p);
    struct sql_expr *e = NULL;
    if (starts_query(sql__peek(p, 0))) {
        e = sql__expr_new(SQL_E_SUBQUERY, t->pos);
        if (!(e->query = sql__query(p)) || !sql__close_paren(p, t)) {
            sql__expr_free(e);
            return NULL;
        }
        finish(p, e);
        return e;
    }
    if (!(e = sql__expr(p)))
        return NULL;
    if (!sql__close_paren(p, t)) {
        sql__expr_free(e);
        return NULL;
    }
    e->pos = t->pos; /* the span takes the parentheses (a column keeps name.pos) */
    finish(p, e);
    return e;
}

static struct sql_expr *literal(struct sql_parser *p, const struct sql_token *t)
{
    static const enum sql_ekind kinds[] = {
        [SQL_T_INT] = SQL_E_INT, [SQL_T_FLOAT] = SQL_E_FLOAT, [SQL_T_STRING] = SQL_E_STRING};
    struct sql_expr *e = sql__expr_new(kinds[t->kind], t->pos);
    e->ival = t->ival;
    e->fval = t->fval;
    e->text = fr_xstrdup(t->text);
    e->end = t->end;
    sql__next(p);
    return e;
}

struct sql_expr *sql__primary(struct sql_parser *p)
{
    const struct sql_token *t = sql__peek(p, 0);
    switch (t->kind) {
    case SQL_T_INT:
    case SQL_T_FLOAT:
    case SQL_T_STRING:
        return literal(p, t);
    case SQL_T_QIDENT:
        return name_ref(p, t);
    case SQL_T_WORD: {
        bool handled = false;
        struct sql_expr *e = sql__keyword_primary(p, t, &handled);
        if (handled)
            return e;
        if (!sql__reserved(t) ||
            ((sql__is_kw(t, "left") || sql__is_kw(t, "right")) && sql__is_op(sql__peek(p, 1), '(')))
            return name_ref(p, t);
        break;
    }
    case SQL_T_OP:
        if (t->op == '(') /* its expression or query is the nesting level */
            return paren(p, t);
        break;
    default:
        break;
    }
    sql__expected(p, t, "an expression");
    return NULL;
}
