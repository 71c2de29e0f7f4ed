/* sql_parse_keyword: the primaries that start with a keyword: TRUE, FALSE,
 * NULL, CASE, CAST / TRY_CAST, EXISTS, EXTRACT, INTERVAL and the typed
 * literals DATE '..' and TIMESTAMP '..'. */
#include "sql_parse_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sql_expr *sql__keyword_primary(struct sql_parser *p, const struct sql_token *t,
                                      bool *handled);

static void finish(struct sql_parser *p, struct sql_expr *e)
{
    e->end = p->toks[p->i > 0 ? p->i - 1 : 0].end;
}

static void push_arg(struct sql_expr *e, struct sql_expr *a)
{
    e->args = sql__grow(e->args, e->nargs, sizeof *e->args);
    e->args[e->nargs++] = a;
}

static bool case_rest(struct sql_parser *p, struct sql_expr *e)
{
    if (!sql__is_kw(sql__peek(p, 0), "when") && !(e->operand = sql__expr(p)))
        return false;
    if (!sql__is_kw(sql__peek(p, 0), "when"))
        return sql__expected(p, sql__peek(p, 0), "WHEN in CASE");
    while (sql__accept_kw(p, "when")) {
        struct sql_expr *w = sql__expr(p);
        if (!w)
            return false;
        push_arg(e, w);
        if (!sql__accept_kw(p, "then"))
            return sql__expected(p, sql__peek(p, 0), "THEN after the WHEN condition");
        struct sql_expr *th = sql__expr(p);
        if (!th)
            return false;
        push_arg(e, th);
    }
    if (sql__accept_kw(p, "else") && !(e->else_ = sql__expr(p)))
        return false;
    if (!sql__accept_kw(p, "end"))
        return sql__expected(p, sql__peek(p, 0), "WHEN, ELSE or END in CASE");
    return true;
}

static bool cast_rest(struct sql_parser *p, struct sql_expr *e)
{
    const struct sql_token *open = sql__peek(p, 0);
    if (!sql__accept_op(p, '('))
        return sql__expected(p, open, "'(' after CAST");
    struct sql_expr *a = sql__expr(p);
    if (!a)
        return false;
    push_arg(e, a);
    if (!sql__accept_kw(p, "as"))
        return sql__expected(p, sql__peek(p, 0), "AS and a type in CAST");
    if (!(e->type_name = sql__type_name(p)))
        return false;
    return sql__close_paren(p, open);
}

static bool exists_rest(struct sql_parser *p, struct sql_expr *e)
{
    const struct sql_token *open = sql__peek(p, 0);
    if (!sql__accept_op(p, '('))
        return sql__expected(p, open, "'(' and a query after EXISTS");
    const struct sql_token *t = sql__peek(p, 0);
    if (!sql__is_kw(t, "select") && !sql__is_kw(t, "with") && !sql__is_kw(t, "values"))
        return sql__expected(p, t, "a query (SELECT, WITH or VALUES) in EXISTS");
    return (e->query = sql__query(p)) && sql__close_paren(p, open);
}

static bool extract_rest(struct sql_parser *p, struct sql_expr *e)
{
    const struct sql_token *open = sql__peek(p, 0);
    e->name.text = fr_xstrdup("extract");
    if (!sql__accept_op(p, '('))
        return sql__expected(p, open, "'(' after EXTRACT");
    const struct sql_token *f = sql__peek(p, 0);
    if (f->kind != SQL_T_WORD && f->kind != SQL_T_STRING)
        return sql__expected(p, f, "a field (YEAR, MONTH, DAY, ...) in EXTRACT");
    sql__next(p);
    struct sql_expr *fe = sql__expr_new(SQL_E_STRING, f->pos);
    fe->text = sql__lower(f->text);
    fe->end = f->end;
    push_arg(e, fe);
    if (!sql__accept_kw(p, "from"))
        return sql__expected(p, sql__peek(p, 0), "FROM in EXTRACT");
    struct sql_expr *x = sql__expr(p);
    if (!x)
        return false;
    push_arg(e, x);
    return sql__close_paren(p, open);
}

/* The unit word's singular lower-case name, or NULL. */
static const char *interval_unit(const char *w, size_t n)
{
    static const char *const units[] = {"year", "month", "day", "hour", "minute", "second"};
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
        size_t ul = strlen(units[k]);
        if ((n == ul || (n == ul + 1 && tolower((unsigned char)w[ul]) == 's')) &&
            strncasecmp(w, units[k], ul) == 0)
            return units[k];
    }
    return NULL;
}

/* INTERVAL '3' DAY | INTERVAL '3 days' | INTERVAL 3 DAY. */
static bool interval_rest(struct sql_parser *p, struct sql_expr *e)
{
    const struct sql_token *q = sql__peek(p, 0);
    const char *unit_expected = "a unit (YEAR, MONTH, DAY, HOUR, MINUTE or SECOND)";
    if (q->kind != SQL_T_STRING && q->kind != SQL_T_INT && q->kind != SQL_T_FLOAT)
        return sql__expected(p, q, "a quantity ('3 days', '3' or 3) after INTERVAL");
    sql__next(p);
    const char *s = q->text;
    while (*s == ' ')
        s++;
    const char *num = s;
    if (*s == '-' || *s == '+')
        s++;
    while (isdigit((unsigned char)*s) || *s == '.')
        s++;
    size_t nlen = (size_t)(s - num);
    while (*s == ' ')
        s++;
    const char *u = s;
    while (isalpha((unsigned char)*s))
        s++;
    size_t ulen = (size_t)(s - u);
    while (*s == ' ')
        s++;
    if (nlen == 0 || *s != '\0')
        return sql__syntax(p, q, "the interval '%s' is not a number and one unit (as '3 days')",
                           q->text);
    e->text = fr_xstrndup(num, nlen);
    if (ulen > 0) {
        const char *unit = interval_unit(u, ulen);
        if (!unit)
            return sql__expected(p, q, unit_expected);
        e->unit = fr_xstrdup(unit);
        return true;
    }
    const struct sql_token *w = sql__peek(p, 0);
    const char *unit = w->kind == SQL_T_WORD ? interval_unit(w->text, strlen(w->text)) : NULL;
    if (!unit)
        return sql__expected(p, w, unit_expected);
    sql__next(p);
    e->unit = fr_xstrdup(unit);
    return true;
}

static bool keyword_rest(struct sql_parser *p, const struct sql_token *t, struct sql_expr *e)
{
    if (sql__is_kw(t, "case"))
        return case_rest(p, e);
    if (sql__is_kw(t, "cast") || sql__is_kw(t, "try_cast"))
        return cast_rest(p, e);
    if (sql__is_kw(t, "exists"))
        return exists_rest(p, e);
    if (sql__is_kw(t, "extract"))
        return extract_rest(p, e);
    return interval_rest(p, e);
}

struct sql_expr *sql__keyword_primary(struct sql_parser *p, const struct sql_token *t,
                                      bool *handled)
{
    *handled = true;
    struct sql_expr *e = NULL;
    if (sql__is_kw(t, "true") || sql__is_kw(t, "false") || sql__is_kw(t, "null")) {
        e = sql__expr_new(sql__is_kw(t, "null") ? SQL_E_NULL : SQL_E_BOOL, t->pos);
        e->ival = sql__is_kw(t, "true");
        e->end = t->end;
        sql__next(p);
        return e;
    }
    const struct sql_token *n = sql__peek(p, 1);
    if ((sql__is_kw(t, "date") || sql__is_kw(t, "timestamp")) && n->kind == SQL_T_STRING) {
        e = sql__expr_new(SQL_E_TYPED, t->pos);
        e->type_name = sql__lower(t->text);
        e->text = fr_xstrdup(n->text);
        e->end = n->end;
        p->i += 2;
        return e;
    }
    static const struct {
        const char *kw;
        enum sql_ekind kind;
    } kws[] = {{"case", SQL_E_CASE},     {"cast", SQL_E_CAST},    {"try_cast", SQL_E_CAST},
               {"exists", SQL_E_EXISTS}, {"extract", SQL_E_FUNC}, {"interval", SQL_E_INTERVAL}};
    size_t k = 0;
    while (k < sizeof kws / sizeof kws[0] && !sql__is_kw(t, kws[k].kw))
        k++;
    if (k == sizeof kws / sizeof kws[0] || (kws[k].kind == SQL_E_FUNC && !sql__is_op(n, '('))) {
        *handled = false;
        return NULL;
    }
    sql__next(p); /* the nesting levels are those of the parts' expressions */
    e = sql__expr_new(kws[k].kind, t->pos);
    e->ival = sql__is_kw(t, "try_cast");
    bool ok = keyword_rest(p, t, e);
    if (!ok) {
        sql__expr_free(e);
        return NULL;
    }
    finish(p, e);
    return e;
}
