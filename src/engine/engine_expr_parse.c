/* engine_expr_parse: the recursive-descent parser of the expression language,
 * one function per precedence level (or < and < not < comparison < + - <
 * * / % < unary minus < primary). It builds an unbound syntax tree whose
 * nodes remember their byte span for messages and names. */
#include "engine_expr_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const reserved[] = {"and",     "or",   "not",   "is",   "null", "in",
                                       "between", "like", "case",  "when", "then", "else",
                                       "end",     "true", "false", "as",   "cast"};

/* Limits that keep every later recursion over the tree (bind, fold,
 * evaluate, free) shallow, whatever a request sends: the tokens, the
 * nesting of parentheses, calls and unary operators, and the tree's depth
 * (a chain of + - * / % or comparisons is one level per link; AND and OR
 * chains are balanced trees, log2 levels). */
#define MAX_EXPR_TOKENS 65536
#define MAX_EXPR_NESTING 128
#define MAX_EXPR_DEPTH 1024

struct parser {
    const char *text;
    struct df__token *toks;
    int i;
    bool agg_mode;
    int agg_depth;
    struct fr_error *err;
    int nesting; /* parentheses, calls, unary operators and nots open now */
};

static const struct df__token *peek(const struct parser *p)
{
    return &p->toks[p->i];
}

static bool is_kw(const struct df__token *t, const char *kw)
{
    return t->kind == DF__T_IDENT && strcasecmp(t->text, kw) == 0;
}

static int too_deep(struct parser *p)
{
    fr_error_set(p->err, FR_EINVAL, "the expression nests deeper than %d levels at position %lld",
                 MAX_EXPR_NESTING, (long long)peek(p)->pos);
    p->err->position = peek(p)->pos;
    return FR_EINVAL;
}

/* FR_OK, or an error when the tree under n is deeper than MAX_EXPR_DEPTH. */
static int depth_ok(struct parser *p, const struct df__node *n)
{
    if (n->depth <= MAX_EXPR_DEPTH)
        return FR_OK;
    fr_error_set(p->err, FR_EINVAL,
                 "the expression is too long: a chain of more than %d operators (a tree that "
                 "deep) at position %lld",
                 MAX_EXPR_DEPTH, (long long)peek(p)->pos);
    p->err->position = peek(p)->pos;
    return FR_EINVAL;
}

static bool accept_kw(struct parser *p, const char *kw)
{
    if (!is_kw(peek(p), kw))
        return false;
    p->i++;
    return true;
}

static bool accept(struct parser *p, enum df__tok k)
{
    if (peek(p)->kind != k)
        return false;
    p->i++;
    return true;
}

static int64_t prev_end(const struct parser *p)
{
    const struct df__token *t = &p->toks[p->i - 1];
    return t->pos + t->len;
}

static int expected(struct parser *p, const char *what)
{
    const struct df__token *t = peek(p);
    p->err->position = t->pos;
    if (t->kind == DF__T_IDENT)
        return fr_error_set(p->err, FR_EINVAL, "expected %s at position %lld, found '%s'", what,
                            (long long)t->pos, t->text);
    return fr_error_set(p->err, FR_EINVAL, "expected %s at position %lld, found %s", what,
                        (long long)t->pos, df__tok_desc(t->kind));
}

static int expect(struct parser *p, enum df__tok k)
{
    return accept(p, k) ? FR_OK : expected(p, df__tok_desc(k));
}

static int expect_kw(struct parser *p, const char *kw)
{
    char what[32];
    snprintf(what, sizeof(what), "'%s'", kw);
    return accept_kw(p, kw) ? FR_OK : expected(p, what);
}

static int parse_or(struct parser *p, struct df__node **out);
static int parse_add(struct parser *p, struct df__node **out);
static int parse_unary(struct parser *p, struct df__node **out);

static struct df__node *binary(enum df__kind kind, int op, struct df__node *l, struct df__node *r)
{
    struct df__node *n = df__node_new(kind, l->pos);
    n->op = op;
    n->end = r->end;
    df__node_add(n, l);
    df__node_add(n, r);
    return n;
}

/* Comma-separated expressions up to ')' appended to n (the '(' is consumed). */
static int parse_list(struct parser *p, struct df__node *n)
{
    do {
        struct df__node *a = NULL;
        int rc = parse_or(p, &a);
        if (rc != FR_OK)
            return rc;
        df__node_add(n, a);
    } while (accept(p, DF__T_COMMA));
    return expect(p, DF__T_RPAREN);
}

static int parse_cast(struct parser *p, struct df__node *n)
{
    struct df__node *a = NULL;
    int rc = parse_or(p, &a);
    if (rc != FR_OK)
        return rc;
    df__node_add(n, a);
    if ((rc = expect_kw(p, "as")) != FR_OK)
        return rc;
    const struct df__token *t = peek(p);
    if (t->kind != DF__T_IDENT)
        return expected(p, "a type name");
    if (df_type_parse(t->text, &n->type) != FR_OK) {
        p->err->position = t->pos;
        return fr_error_set(p->err, FR_EINVAL,
                            "unknown type '%s' at position %lld; expected int64, float64, "
                            "string, bool, date or timestamp",
                            t->text, (long long)t->pos);
    }
    p->i++;
    return expect(p, DF__T_RPAREN);
}

static int parse_agg(struct parser *p, struct df__node *n, const struct df__token *name)
{
    if (!p->agg_mode || p->agg_depth > 0) {
        p->err->position = name->pos;
        return fr_error_set(p->err, FR_EINVAL,
                            p->agg_mode ? "aggregate '%s' at position %lld is nested inside "
                                          "another aggregate"
                                        : "aggregate '%s' at position %lld is not allowed in a "
                                          "row expression",
                            name->text, (long long)name->pos);
    }
    if (n->op == DF_AGG_COUNT && accept(p, DF__T_STAR)) {
        n->star = true;
        n->op = DF_AGG_COUNT_STAR;
        return expect(p, DF__T_RPAREN);
    }
    if (n->op == DF_AGG_COUNT && accept_kw(p, "distinct"))
        n->op = DF_AGG_COUNT_DISTINCT;
    p->agg_depth++;
    int rc = parse_list(p, n);
    p->agg_depth--;
    if (rc != FR_OK)
        return rc;
    int want = n->op == DF_AGG_CORR ? 2 : 1;
    if (n->nargs != want) {
        p->err->position = name->pos;
        return fr_error_set(p->err, FR_EINVAL, "%s at position %lld takes %d argument%s, got %d",
                            name->text, (long long)name->pos, want, want == 1 ? "" : "s", n->nargs);
    }
    return FR_OK;
}

static int unknown_function(struct parser *p, const struct df__token *name)
{
    const char *cands[DF__F_COUNT_ + 32];
    int nc = 0;
    for (int k = 0; k < DF__F_COUNT_; k++)
        cands[nc++] = df__func_names[k];
    cands[nc++] = "cast";
    for (int k = 0; p->agg_mode && df__agg_name_at(k); k++)
        cands[nc++] = df__agg_name_at(k);
    const char *s = df__suggest(name->text, cands, nc);
    p->err->position = name->pos;
    return fr_error_set(p->err, FR_EINVAL, "unknown function '%s' at position %lld%s%s%s",
                        name->text, (long long)name->pos, s ? "; did you mean '" : "", s ? s : "",
                        s ? "'?" : "");
}

/* name '(' ... ')': cast, an aggregate or a scalar function. */
static int parse_call_body(struct parser *p, struct df__node **out)
{
    const struct df__token *name = peek(p);
    p->i += 2;
    struct df__node *n = df__node_new(DF__FUNC, name->pos);
    int rc = FR_EINVAL;
    if (strcasecmp(name->text, "cast") == 0) {
        n->kind = DF__CAST;
        rc = parse_cast(p, n);
        goto out;
    }
    int func, min_args, max_args;
    if (df__agg_lookup(name->text, &func)) {
        n->kind = DF__AGG;
        n->op = func;
        rc = parse_agg(p, n, name);
        goto out;
    }
    if (df__func_lookup(name->text, &func, &min_args, &max_args)) {
        n->op = func;
        rc = max_args == 0 ? expect(p, DF__T_RPAREN) : parse_list(p, n);
        if (rc != FR_OK)
            goto out;
        if (n->nargs < min_args || n->nargs > max_args) {
            p->err->position = name->pos;
            rc = fr_error_set(p->err, FR_EINVAL,
                              "%s at position %lld takes %d to %d arguments, got %d", name->text,
                              (long long)name->pos, min_args, max_args, n->nargs);
        }
        goto out;
    }
    rc = unknown_function(p, name);
out:
    if (rc != FR_OK) {
        df__node_free(n);
        return rc;
    }
    n->end = prev_end(p);
    *out = n;
    return FR_OK;
}

static int parse_case_body(struct parser *p, struct df__node **out)
{
    struct df__node *n = df__node_new(DF__CASE, peek(p)->pos);
    int rc = FR_OK;
    p->i++;
    if (!is_kw(peek(p), "when")) {
        rc = expected(p, "'when'");
        goto out;
    }
    while (rc == FR_OK && accept_kw(p, "when")) {
        struct df__node *c = NULL, *r = NULL;
        if ((rc = parse_or(p, &c)) != FR_OK)
            break;
        df__node_add(n, c);
        if ((rc = expect_kw(p, "then")) != FR_OK || (rc = parse_or(p, &r)) != FR_OK)
            break;
        df__node_add(n, r);
    }
    if (rc == FR_OK && accept_kw(p, "else")) {
        struct df__node *e = NULL;
        if ((rc = parse_or(p, &e)) == FR_OK) {
            df__node_add(n, e);
            n->has_else = true;
        }
    }
    if (rc == FR_OK)
        rc = expect_kw(p, "end");
out:
    if (rc != FR_OK) {
        df__node_free(n);
        return rc;
    }
    n->end = prev_end(p);
    *out = n;
    return FR_OK;
}

static struct df__node *literal(const struct df__token *t, df_type type)
{
    struct df__node *n = df__node_new(DF__LIT, t->pos);
    n->end = t->pos + t->len;
    n->lit.type = type;
    n->type = type;
    return n;
}

/* date '...' / timestamp '...': t is the keyword, the string follows. */
/* Calls and case expressions nest: both count against MAX_EXPR_NESTING. */
static int parse_call(struct parser *p, struct df__node **out)
{
    if (p->nesting >= MAX_EXPR_NESTING)
        return too_deep(p);
    p->nesting++;
    int rc = parse_call_body(p, out);
    p->nesting--;
    return rc;
}

static int parse_case(struct parser *p, struct df__node **out)
{
    if (p->nesting >= MAX_EXPR_NESTING)
        return too_deep(p);
    p->nesting++;
    int rc = parse_case_body(p, out);
    p->nesting--;
    return rc;
}

static int parse_typed_literal(struct parser *p, bool is_date, struct df__node **out)
{
    const struct df__token *kw = peek(p), *s = &p->toks[p->i + 1];
    struct df__node *n = literal(kw, is_date ? DF_TYPE_DATE : DF_TYPE_TIMESTAMP);
    n->end = s->pos + s->len;
    int bad = is_date ? df_parse_date(s->text, (size_t)s->slen, &n->lit.d)
                      : df_parse_timestamp(s->text, (size_t)s->slen, &n->lit.i);
    if (bad) {
        df__node_free(n);
        p->err->position = s->pos;
        return fr_error_set(p->err, FR_EINVAL, "invalid %s literal '%s' at position %lld%s",
                            is_date ? "date" : "timestamp", s->text, (long long)s->pos,
                            is_date ? "; expected YYYY-MM-DD" : "");
    }
    p->i += 2;
    *out = n;
    return FR_OK;
}

static int parse_name(struct parser *p, struct df__node **out)
{
    const struct df__token *t = peek(p);
    if (t->kind == DF__T_IDENT) {
        if (strcasecmp(t->text, "true") == 0 || strcasecmp(t->text, "false") == 0) {
            *out = literal(t, DF_TYPE_BOOL);
            (*out)->lit.b = strcasecmp(t->text, "true") == 0;
            p->i++;
            return FR_OK;
        }
        if (strcasecmp(t->text, "null") == 0) {
            *out = literal(t, DF_TYPE_NULL);
            (*out)->lit.null = true;
            p->i++;
            return FR_OK;
        }
        bool d = strcasecmp(t->text, "date") == 0;
        if ((d || strcasecmp(t->text, "timestamp") == 0) && p->toks[p->i + 1].kind == DF__T_STRING)
            return parse_typed_literal(p, d, out);
        if (strcasecmp(t->text, "case") == 0)
            return parse_case(p, out);
        if (p->toks[p->i + 1].kind == DF__T_LPAREN)
            return parse_call(p, out);
        for (size_t k = 0; k < sizeof(reserved) / sizeof(reserved[0]); k++)
            if (strcasecmp(t->text, reserved[k]) == 0)
                return expected(p, "an expression");
    }
    struct df__node *n = df__node_new(DF__COL, t->pos);
    n->end = t->pos + t->len;
    n->name = fr_xstrdup(t->text);
    p->i++;
    *out = n;
    return FR_OK;
}

static int parse_primary(struct parser *p, struct df__node **out)
{
    const struct df__token *t = peek(p);
    switch (t->kind) {
    case DF__T_INT:
        *out = literal(t, DF_TYPE_INT64);
        (*out)->lit.i = t->ival;
        p->i++;
        return FR_OK;
    case DF__T_FLOAT:
        *out = literal(t, DF_TYPE_FLOAT64);
        (*out)->lit.f = t->fval;
        p->i++;
        return FR_OK;
    case DF__T_STRING:
        *out = literal(t, DF_TYPE_STRING);
        df__value_set_string(&(*out)->lit, t->text, t->slen);
        p->i++;
        return FR_OK;
    case DF__T_LPAREN: {
        if (p->nesting >= MAX_EXPR_NESTING)
            return too_deep(p);
        p->i++;
        p->nesting++;
        int rc = parse_or(p, out);
        p->nesting--;
        if (rc == FR_OK && (rc = expect(p, DF__T_RPAREN)) != FR_OK) {
            df__node_free(*out);
            *out = NULL;
        }
        return rc;
    }
    case DF__T_IDENT:
    case DF__T_QIDENT:
        return parse_name(p, out);
    default:
        return expected(p, "an expression");
    }
}

static int parse_unary(struct parser *p, struct df__node **out)
{
    const struct df__token *t = peek(p);
    if (t->kind != DF__T_MINUS && t->kind != DF__T_PLUS)
        return parse_primary(p, out);
    if (p->nesting >= MAX_EXPR_NESTING)
        return too_deep(p);
    p->i++;
    struct df__node *a = NULL;
    p->nesting++;
    int rc = parse_unary(p, &a);
    p->nesting--;
    if (rc != FR_OK)
        return rc;
    if (t->kind == DF__T_PLUS) {
        *out = a;
        return FR_OK;
    }
    struct df__node *n = df__node_new(DF__NEG, t->pos);
    n->end = a->end;
    df__node_add(n, a);
    *out = n;
    return FR_OK;
}

static int parse_mul(struct parser *p, struct df__node **out)
{
    struct df__node *l = NULL, *r = NULL;
    int rc = parse_unary(p, &l);
    while (rc == FR_OK) {
        enum df__tok k = peek(p)->kind;
        int op = k == DF__T_STAR      ? DF__MUL
                 : k == DF__T_SLASH   ? DF__DIV
                 : k == DF__T_PERCENT ? DF__MOD
                                      : -1;
        if (op < 0)
            break;
        int64_t pos = peek(p)->pos;
        p->i++;
        if ((rc = parse_unary(p, &r)) == FR_OK) {
            l = binary(DF__ARITH, op, l, r);
            l->op_pos = pos;
            rc = depth_ok(p, l);
        }
    }
    if (rc != FR_OK)
        df__node_free(l);
    else
        *out = l;
    return rc;
}

static int parse_add(struct parser *p, struct df__node **out)
{
    struct df__node *l = NULL, *r = NULL;
    int rc = parse_mul(p, &l);
    while (rc == FR_OK) {
        enum df__tok k = peek(p)->kind;
        if (k != DF__T_PLUS && k != DF__T_MINUS)
            break;
        int64_t pos = peek(p)->pos;
        p->i++;
        if ((rc = parse_mul(p, &r)) == FR_OK) {
            l = binary(DF__ARITH, k == DF__T_PLUS ? DF__ADD : DF__SUB, l, r);
            l->op_pos = pos;
            rc = depth_ok(p, l);
        }
    }
    if (rc != FR_OK)
        df__node_free(l);
    else
        *out = l;
    return rc;
}

/* Postfix forms after the left operand of a comparison: [not] in/between/like, is [not] null. */
static int parse_postfix(struct parser *p, struct df__node *l, struct df__node **out)
{
    int64_t pos = peek(p)->pos;
    struct df__node *n = NULL, *a = NULL, *b = NULL;
    int rc = FR_OK;
    if (accept_kw(p, "is")) {
        n = df__node_new(DF__ISNULL, pos);
        n->negated = accept_kw(p, "not");
        df__node_add(n, l);
        rc = expect_kw(p, "null");
        goto out;
    }
    bool neg = accept_kw(p, "not");
    if (accept_kw(p, "in")) {
        n = df__node_new(DF__IN, pos);
        df__node_add(n, l);
        if ((rc = expect(p, DF__T_LPAREN)) == FR_OK)
            rc = parse_list(p, n);
    } else if (accept_kw(p, "between")) {
        n = df__node_new(DF__BETWEEN, pos);
        df__node_add(n, l);
        if ((rc = parse_add(p, &a)) == FR_OK) {
            df__node_add(n, a);
            if ((rc = expect_kw(p, "and")) == FR_OK && (rc = parse_add(p, &b)) == FR_OK)
                df__node_add(n, b);
        }
    } else if (accept_kw(p, "like")) {
        n = df__node_new(DF__LIKE, pos);
        df__node_add(n, l);
        if ((rc = parse_add(p, &a)) == FR_OK)
            df__node_add(n, a);
    } else {
        df__node_free(l);
        return expected(p, "'in', 'between' or 'like'");
    }
    n->negated = neg;
out:
    if (rc != FR_OK) {
        df__node_free(n);
        return rc;
    }
    n->pos = l->pos;
    n->op_pos = pos;
    n->end = prev_end(p);
    *out = n;
    return FR_OK;
}

static int cmp_op(enum df__tok k)
{
    switch (k) {
    case DF__T_EQ:
        return DF__EQ;
    case DF__T_NE:
        return DF__NE;
    case DF__T_LT:
        return DF__LT;
    case DF__T_LE:
        return DF__LE;
    case DF__T_GT:
        return DF__GT;
    case DF__T_GE:
        return DF__GE;
    default:
        return -1;
    }
}

static int parse_cmp(struct parser *p, struct df__node **out)
{
    struct df__node *l = NULL, *r = NULL;
    int rc = parse_add(p, &l);
    while (rc == FR_OK) {
        const struct df__token *t = peek(p);
        int op = cmp_op(t->kind);
        if (op >= 0) {
            p->i++;
            if ((rc = parse_add(p, &r)) == FR_OK) {
                l = binary(DF__CMP, op, l, r);
                l->op_pos = t->pos;
                rc = depth_ok(p, l);
            }
        } else if (is_kw(t, "is") || is_kw(t, "in") || is_kw(t, "between") || is_kw(t, "like") ||
                   is_kw(t, "not")) {
            struct df__node *n = NULL;
            rc = parse_postfix(p, l, &n);
            l = rc == FR_OK ? n : NULL;
            if (rc == FR_OK)
                rc = depth_ok(p, l);
        } else {
            break;
        }
    }
    if (rc != FR_OK)
        df__node_free(l);
    else
        *out = l;
    return rc;
}

static int parse_not(struct parser *p, struct df__node **out)
{
    int64_t pos = peek(p)->pos;
    if (!accept_kw(p, "not"))
        return parse_cmp(p, out);
    if (p->nesting >= MAX_EXPR_NESTING)
        return too_deep(p);
    struct df__node *a = NULL;
    p->nesting++;
    int rc = parse_not(p, &a);
    p->nesting--;
    if (rc != FR_OK)
        return rc;
    struct df__node *n = df__node_new(DF__NOT, pos);
    n->end = a->end;
    df__node_add(n, a);
    *out = n;
    return FR_OK;
}

/* ops[lo, hi) as a balanced tree of kind (AND and OR are associative). */
static struct df__node *balanced(enum df__kind kind, struct df__node **ops, int lo, int hi)
{
    if (hi - lo == 1)
        return ops[lo];
    int mid = lo + (hi - lo + 1) / 2;
    return binary(kind, 0, balanced(kind, ops, lo, mid), balanced(kind, ops, mid, hi));
}

/* An AND (is_or false) or OR chain, as a balanced tree. */
static int parse_logic(struct parser *p, bool is_or, struct df__node **out)
{
    struct df__node **ops = NULL;
    int n = 0, rc = FR_OK;
    do {
        struct df__node *e = NULL;
        rc = is_or ? parse_logic(p, false, &e) : parse_not(p, &e);
        if (rc != FR_OK)
            break;
        ops = fr_xrealloc(ops, sizeof(*ops) * (size_t)(n + 1));
        ops[n++] = e;
    } while (accept_kw(p, is_or ? "or" : "and"));
    if (rc == FR_OK)
        *out = balanced(is_or ? DF__OR : DF__AND, ops, 0, n);
    for (int i = 0; rc != FR_OK && i < n; i++)
        df__node_free(ops[i]);
    free(ops);
    return rc;
}

static int parse_or(struct parser *p, struct df__node **out)
{
    return parse_logic(p, true, out);
}

int df__parse(const char *text, bool agg_mode, struct df__node **root, char **alias,
              struct fr_error *err)
{
    struct df__token *toks = NULL;
    int ntoks = 0;
    struct df__node *n = NULL;
    *root = NULL;
    *alias = NULL;
    int result = FR_EINVAL;
    if (!text) { /* a JSON item that was not a string (json_string_value) */
        fr_error_set(err, FR_EINVAL, "an expression must be a string");
        goto out;
    }
    result = df__lex(text, &toks, &ntoks, err);
    if (result != FR_OK)
        goto out;
    struct parser p = {text, toks, 0, agg_mode, 0, err, 0};
    if (ntoks > MAX_EXPR_TOKENS) {
        result = fr_error_set(err, FR_EINVAL, "the expression is too long (%d tokens; at most %d)",
                              ntoks, MAX_EXPR_TOKENS);
        goto out;
    }
    if (peek(&p)->kind == DF__T_EOF) {
        result = expected(&p, "an expression");
        goto out;
    }
    if ((result = parse_or(&p, &n)) != FR_OK)
        goto out;
    if (accept_kw(&p, "as")) {
        const struct df__token *t = peek(&p);
        if (t->kind != DF__T_IDENT && t->kind != DF__T_QIDENT) {
            result = expected(&p, "an alias");
            goto out;
        }
        *alias = fr_xstrdup(t->text);
        p.i++;
    }
    if (peek(&p)->kind != DF__T_EOF) {
        free(*alias);
        *alias = NULL;
        result = expected(&p, "an operator or the end of the expression");
        goto out;
    }
    *root = n;
    n = NULL;
out:
    df__node_free(n);
    df__tokens_free(toks, ntoks);
    return result;
}
