/* sql_parse_expr: expression operators with PostgreSQL's precedence, lowest
 * first: OR, AND, NOT, then IS / comparison / BETWEEN / IN / LIKE / ILIKE
 * (one left-associative level), ||, + -, * / %, unary - +, :: and the
 * primaries (sql_parse_primary.c). Each recursion and each link of a short
 * chain is one nesting level; a long chain of one associative operator is
 * a balanced tree (log2 levels): the tree stays shallow (SQL_MAX_NESTING). */
#include "sql_parse_int.h"

#include <stdlib.h>

struct sql_expr *sql__primary(struct sql_parser *p);

static void finish(struct sql_parser *p, struct sql_expr *e)
{
    e->end = p->toks[p->i > 0 ? p->i - 1 : 0].end;
}

static struct sql_expr *with_args(enum sql_ekind kind, int64_t pos, struct sql_expr *first)
{
    struct sql_expr *e = sql__expr_new(kind, pos);
    e->args = sql__grow(NULL, 0, sizeof *e->args);
    e->args[e->nargs++] = first;
    return e;
}

static void push_arg(struct sql_expr *e, struct sql_expr *a)
{
    e->args = sql__grow(e->args, e->nargs, sizeof *e->args);
    e->args[e->nargs++] = a;
}

/* A chain of one level's operators: operands[0] op[0] operands[1] ... */
struct chain {
    struct sql_expr **args;
    int *ops;
    const struct sql_token **toks; /* each operator's token */
    int n;                         /* operands */
};

static void chain_push(struct chain *c, struct sql_expr *e, int op, const struct sql_token *t)
{
    c->args = sql__grow(c->args, c->n, sizeof *c->args);
    c->ops = sql__grow(c->ops, c->n, sizeof *c->ops);
    c->toks = sql__grow(c->toks, c->n, sizeof *c->toks);
    c->args[c->n] = e;
    c->ops[c->n] = op;
    c->toks[c->n] = t;
    c->n++;
}

static void chain_free(struct chain *c, bool exprs)
{
    for (int i = 0; exprs && i < c->n; i++)
        sql__expr_free(c->args[i]);
    free(c->args);
    free(c->ops);
    free(c->toks);
}

static struct sql_expr *binary(int op, struct sql_expr *l, struct sql_expr *r)
{
    struct sql_expr *e = with_args(SQL_E_BINARY, l->pos, l);
    e->op = op;
    push_arg(e, r);
    e->end = r->end;
    return e;
}

/* args[lo, hi) as a balanced tree of op: log2 levels (recursion as deep). */
static struct sql_expr *balanced(struct chain *c, int lo, int hi, int op)
{
    if (hi - lo == 1)
        return c->args[lo];
    int mid = lo + (hi - lo + 1) / 2;
    return binary(op, balanced(c, lo, mid, op), balanced(c, mid, hi, op));
}

/* Chains up to this many operands stay left-deep, as written (DuckDB's
 * names, evaluation order); a longer one of one associative operator (AND,
 * OR, ||, +, *; + and - as a sum of negated terms) is balanced, so
 * thousands of links nest a few levels. */
#define CHAIN_LEFT_DEEP 16

static bool associative(int op)
{
    return op == SQL_OP_AND || op == SQL_OP_OR || op == SQL_OP_CONCAT || op == SQL_OP_ADD ||
           op == SQL_OP_MUL;
}

/* The chain's tree: left-deep, each link one nesting level, or balanced,
 * ceil(log2(n)) levels; NULL (and an error) past SQL_MAX_NESTING. */
static struct sql_expr *chain_tree(struct sql_parser *p, struct chain *c)
{
    bool sums = c->n > CHAIN_LEFT_DEEP; /* a long + - chain: a + (-b) + ... */
    for (int i = 1; sums && i < c->n; i++)
        sums = c->ops[i] == SQL_OP_ADD || c->ops[i] == SQL_OP_SUB;
    for (int i = 1; sums && i < c->n; i++) {
        if (c->ops[i] == SQL_OP_SUB) {
            struct sql_expr *neg = with_args(SQL_E_UNARY, c->toks[i]->pos, c->args[i]);
            neg->op = '-';
            neg->end = c->args[i]->end;
            c->args[i] = neg;
            c->ops[i] = SQL_OP_ADD;
        }
    }
    bool same = c->n > CHAIN_LEFT_DEEP && associative(c->ops[1]);
    for (int i = 2; same && i < c->n; i++)
        same = c->ops[i] == c->ops[1];
    int levels = 0;
    if (same)
        while ((1 << levels) < c->n)
            levels++;
    else
        levels = c->n - 1;
    if (p->depth + levels > SQL_MAX_NESTING) {
        int at = SQL_MAX_NESTING - p->depth + 1; /* the link past the bound */
        p->depth += levels;
        sql__enter(p, c->toks[at < 1 ? 1 : at >= c->n ? c->n - 1 : at]);
        p->depth -= levels + 1;
        chain_free(c, true);
        return NULL;
    }
    struct sql_expr *e = c->args[0];
    if (same)
        e = balanced(c, 0, c->n, c->ops[1]);
    else
        for (int i = 1; i < c->n; i++)
            e = binary(c->ops[i], e, c->args[i]);
    chain_free(c, false);
    return e;
}

/* Which level a binary operator token belongs to: 0 none. */
static int binop(const struct sql_token *t, int level, int *op)
{
    static const struct {
        int tok, level, op;
    } ops[] = {{'=', 1, SQL_OP_EQ},
               {SQL_TOP_NE, 1, SQL_OP_NE},
               {'<', 1, SQL_OP_LT},
               {SQL_TOP_LE, 1, SQL_OP_LE},
               {'>', 1, SQL_OP_GT},
               {SQL_TOP_GE, 1, SQL_OP_GE},
               {SQL_TOP_CONCAT, 2, SQL_OP_CONCAT},
               {'+', 3, SQL_OP_ADD},
               {'-', 3, SQL_OP_SUB},
               {'*', 4, SQL_OP_MUL},
               {'/', 4, SQL_OP_DIV},
               {'%', 4, SQL_OP_MOD}};
    if (t->kind != SQL_T_OP)
        return 0;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        if (ops[k].tok == t->op && ops[k].level == level) {
            *op = ops[k].op;
            return 1;
        }
    }
    return 0;
}

static struct sql_expr *unary(struct sql_parser *p);

/* Levels 2 (||), 3 (+ -), 4 (* / %): chains (chain_tree). */
static struct sql_expr *arith(struct sql_parser *p, int level)
{
    struct sql_expr *left = level == 4 ? unary(p) : arith(p, level + 1);
    struct chain c = {0};
    int entered = 0;
    int op = 0;
    if (!left)
        return NULL;
    chain_push(&c, left, 0, NULL);
    while (binop(sql__peek(p, 0), level, &op)) {
        const struct sql_token *t = sql__next(p);
        if (c.n <= CHAIN_LEFT_DEEP && !sql__enter(p, t)) { /* the links so far count */
            p->depth -= entered;
            chain_free(&c, true);
            return NULL;
        }
        entered += c.n <= CHAIN_LEFT_DEEP;
        struct sql_expr *right = level == 4 ? unary(p) : arith(p, level + 1);
        if (!right) {
            p->depth -= entered;
            chain_free(&c, true);
            return NULL;
        }
        chain_push(&c, right, op, t);
    }
    p->depth -= entered;
    return chain_tree(p, &c);
}

static struct sql_expr *postfix(struct sql_parser *p)
{
    struct sql_expr *e = sql__primary(p);
    int links = 0;
    while (e && sql__is_op(sql__peek(p, 0), SQL_TOP_DOUBLECOLON)) {
        const struct sql_token *t = sql__next(p);
        links++;
        if (!sql__enter(p, t)) {
            sql__expr_free(e);
            e = NULL;
            break;
        }
        struct sql_expr *c = with_args(SQL_E_CAST, e->pos, e);
        e = c;
        if (!(c->type_name = sql__type_name(p))) {
            sql__expr_free(c);
            e = NULL;
            break;
        }
        finish(p, c);
    }
    p->depth -= links;
    return e;
}

static struct sql_expr *unary(struct sql_parser *p)
{
    const struct sql_token *t = sql__peek(p, 0);
    if (!sql__is_op(t, '-') && !sql__is_op(t, '+'))
        return postfix(p);
    sql__next(p);
    if (!sql__enter(p, t))
        return NULL;
    struct sql_expr *arg = unary(p);
    sql__leave(p);
    if (!arg)
        return NULL;
    struct sql_expr *e = with_args(SQL_E_UNARY, t->pos, arg);
    e->op = t->op;
    finish(p, e);
    return e;
}

/* x [NOT] IN (list | query), the IN already read. */
static bool in_rest(struct sql_parser *p, struct sql_expr **ep)
{
    const struct sql_token *open = sql__peek(p, 0);
    if (!sql__accept_op(p, '('))
        return sql__expected(p, open, "'(' after IN");
    const struct sql_token *t = sql__peek(p, 0);
    if (sql__is_kw(t, "select") || sql__is_kw(t, "with") || sql__is_kw(t, "values")) {
        (*ep)->kind = SQL_E_IN_QUERY;
        if (!((*ep)->query = sql__query(p)))
            return false;
    } else {
        do {
            struct sql_expr *a = sql__expr(p);
            if (!a)
                return false;
            push_arg(*ep, a);
        } while (sql__accept_op(p, ','));
    }
    return sql__close_paren(p, open);
}

/* x IS [NOT] NULL | TRUE | FALSE, at IS. */
static bool is_rest(struct sql_parser *p, struct sql_expr **left)
{
    struct sql_expr *e = NULL;
    sql__next(p);
    bool isnot = sql__accept_kw(p, "not");
    const struct sql_token *v = sql__next(p);
    if (sql__is_kw(v, "null")) {
        e = with_args(SQL_E_IS_NULL, (*left)->pos, *left);
    } else if (sql__is_kw(v, "distinct")) {
        return sql__unsupported(p, v->pos, "IS %sDISTINCT FROM is not supported",
                                isnot ? "NOT " : "");
    } else if (sql__is_kw(v, "true") || sql__is_kw(v, "false")) {
        e = with_args(SQL_E_IS_BOOL, (*left)->pos, *left);
        e->ival = sql__is_kw(v, "true");
    } else {
        return sql__expected(
            p, v, isnot ? "NULL, TRUE or FALSE after IS NOT" : "NULL, TRUE, FALSE or NOT after IS");
    }
    e->negated = isnot;
    *left = e;
    return true;
}

/* One postfix predicate on left at the cursor; *done when none is there. */
static bool predicate(struct sql_parser *p, struct sql_expr **left, bool *done)
{
    const struct sql_token *t = sql__peek(p, 0);
    bool neg = sql__is_kw(t, "not");
    const struct sql_token *k = sql__peek(p, neg ? 1 : 0);
    int op = 0;
    struct sql_expr *e = NULL;
    *done = false;
    if (!neg && sql__is_kw(k, "is"))
        return is_rest(p, left);
    if (!neg && binop(k, 1, &op)) {
        sql__next(p);
        e = with_args(SQL_E_BINARY, (*left)->pos, *left);
        e->op = op;
        *left = e;
        const struct sql_token *q = sql__peek(p, 0);
        if ((sql__is_kw(q, "any") || sql__is_kw(q, "all") || sql__is_kw(q, "some")) &&
            sql__is_op(sql__peek(p, 1), '('))
            return sql__unsupported(p, q->pos,
                                    "a comparison with %s (...) is not supported: use IN or EXISTS",
                                    sql__is_kw(q, "some")  ? "SOME"
                                    : sql__is_kw(q, "any") ? "ANY"
                                                           : "ALL");
        struct sql_expr *r = arith(p, 2);
        if (r)
            push_arg(e, r);
        return r != NULL;
    }
    bool between = sql__is_kw(k, "between"), in = sql__is_kw(k, "in");
    bool like = sql__is_kw(k, "like"), ilike = sql__is_kw(k, "ilike");
    if (!between && !in && !like && !ilike) {
        *done = true;
        return true;
    }
    p->i += neg ? 2 : 1;
    e = with_args(between ? SQL_E_BETWEEN : in ? SQL_E_IN_LIST : SQL_E_LIKE, (*left)->pos, *left);
    e->negated = neg;
    e->ival = ilike;
    *left = e;
    if (in)
        return in_rest(p, left);
    struct sql_expr *a = arith(p, 2);
    if (!a)
        return false;
    push_arg(e, a);
    if (sql__is_kw(sql__peek(p, 0), "escape"))
        return sql__unsupported(p, sql__peek(p, 0)->pos, "LIKE ... ESCAPE is not supported");
    if (!between)
        return true;
    if (!sql__accept_kw(p, "and"))
        return sql__expected(p, sql__peek(p, 0), "AND in BETWEEN");
    struct sql_expr *b = arith(p, 2);
    if (b)
        push_arg(e, b);
    return b != NULL;
}

static bool starts_predicate(const struct sql_parser *p)
{
    const struct sql_token *t = sql__peek(p, 0);
    int op = 0;
    if (sql__is_kw(t, "not"))
        t = sql__peek(p, 1);
    return sql__is_kw(t, "is") || binop(t, 1, &op) || sql__is_kw(t, "between") ||
           sql__is_kw(t, "in") || sql__is_kw(t, "like") || sql__is_kw(t, "ilike");
}

static struct sql_expr *comparison(struct sql_parser *p)
{
    struct sql_expr *left = arith(p, 2);
    int links = 0;
    while (left && starts_predicate(p)) {
        const struct sql_token *t = sql__peek(p, 0);
        bool done = false;
        links++;
        if (!sql__enter(p, t)) {
            sql__expr_free(left);
            left = NULL;
            break;
        }
        if (!predicate(p, &left, &done)) {
            sql__expr_free(left);
            left = NULL;
            break;
        }
        if (done)
            break;
        finish(p, left);
    }
    p->depth -= links;
    return left;
}

static struct sql_expr *not_expr(struct sql_parser *p)
{
    const struct sql_token *t = sql__peek(p, 0);
    if (!sql__is_kw(t, "not"))
        return comparison(p);
    sql__next(p);
    if (!sql__enter(p, t))
        return NULL;
    struct sql_expr *arg = not_expr(p);
    sql__leave(p);
    if (!arg)
        return NULL;
    if (arg->kind == SQL_E_EXISTS && !arg->negated &&
        sql__is_kw(&p->toks[t - p->toks + 1], "exists")) {
        arg->negated = true; /* NOT EXISTS (query) */
        arg->pos = t->pos;
        return arg;
    }
    struct sql_expr *e = with_args(SQL_E_UNARY, t->pos, arg);
    e->op = 'N';
    finish(p, e);
    return e;
}

/* AND (and) and OR (or) chains (chain_tree). */
static struct sql_expr *logic(struct sql_parser *p, bool is_or)
{
    struct sql_expr *left = is_or ? logic(p, false) : not_expr(p);
    struct chain c = {0};
    int entered = 0;
    if (!left)
        return NULL;
    chain_push(&c, left, 0, NULL);
    while (sql__is_kw(sql__peek(p, 0), is_or ? "or" : "and")) {
        const struct sql_token *t = sql__next(p);
        if (c.n <= CHAIN_LEFT_DEEP && !sql__enter(p, t)) { /* the links so far count */
            p->depth -= entered;
            chain_free(&c, true);
            return NULL;
        }
        entered += c.n <= CHAIN_LEFT_DEEP;
        struct sql_expr *right = is_or ? logic(p, false) : not_expr(p);
        if (!right) {
            p->depth -= entered;
            chain_free(&c, true);
            return NULL;
        }
        chain_push(&c, right, is_or ? SQL_OP_OR : SQL_OP_AND, t);
    }
    p->depth -= entered;
    return chain_tree(p, &c);
}

struct sql_expr *sql__expr(struct sql_parser *p)
{
    if (!sql__enter(p, sql__peek(p, 0)))
        return NULL;
    struct sql_expr *e = logic(p, true);
    sql__leave(p);
    return e;
}

int sql__order_list(struct sql_parser *p, struct sql_order_item **items, int *n)
{
    do {
        struct sql_expr *e = sql__expr(p);
        if (!e)
            return FR_EINVAL;
        *items = sql__grow(*items, *n, sizeof **items);
        struct sql_order_item *it = &(*items)[(*n)++];
        it->expr = e;
        it->desc = false;
        it->nulls = 0;
        if (sql__accept_kw(p, "desc"))
            it->desc = true;
        else
            sql__accept_kw(p, "asc");
        if (sql__accept_kw(p, "nulls")) {
            if (sql__accept_kw(p, "first"))
                it->nulls = 1;
            else if (sql__accept_kw(p, "last"))
                it->nulls = 2;
            else
                return sql__expected(p, sql__peek(p, 0), "FIRST or LAST after NULLS") ? FR_OK
                                                                                      : FR_EINVAL;
        }
    } while (sql__accept_op(p, ','));
    return FR_OK;
}
