/* sql_compile_expr: a SQL expression into the text of the expression
 * language (src/engine/engine_expr_parse.c), every column by its internal
 * quoted name, every operator parenthesized. SQL forms the language lacks
 * are rewritten (CASE x WHEN, ILIKE, IS TRUE, NULLIF, EXTRACT); aggregates,
 * window functions and subqueries are columns computed before (sc_subst). */
#include "sql_compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int expr_rec(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b);

static const char *const agg_names[] = {"sum",       "avg",       "mean",        "min",    "max",
                                        "count",     "stddev",    "stddev_samp", "median", "first",
                                        "any_value", "arbitrary", "corr",        NULL};

bool sc__is_agg_name(const char *name)
{
    for (int i = 0; agg_names[i]; i++)
        if (strcasecmp(name, agg_names[i]) == 0)
            return true;
    return false;
}

bool sc__has_agg(const struct sql_expr *e)
{
    if (!e)
        return false;
    if (e->kind == SQL_E_FUNC && !e->window && sc__is_agg_name(e->name.text))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (sc__has_agg(e->args[i]))
            return true;
    return sc__has_agg(e->operand) || sc__has_agg(e->else_);
}

bool sc__has_window(const struct sql_expr *e)
{
    if (!e)
        return false;
    if (e->kind == SQL_E_FUNC && e->window)
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (sc__has_window(e->args[i]))
            return true;
    return sc__has_window(e->operand) || sc__has_window(e->else_);
}

bool sc__has_subquery(const struct sql_expr *e)
{
    if (!e)
        return false;
    if (e->query)
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (sc__has_subquery(e->args[i]))
            return true;
    return sc__has_subquery(e->operand) || sc__has_subquery(e->else_);
}

const char *sc__type_name(const char *t)
{
    static const struct {
        const char *sql, *engine;
    } map[] = {
        {"int", "int64"},
        {"integer", "int64"},
        {"bigint", "int64"},
        {"smallint", "int64"},
        {"tinyint", "int64"},
        {"int64", "int64"},
        {"int8", "int64"},
        {"int4", "int64"},
        {"int2", "int64"},
        {"hugeint", "int64"},
        {"double", "float64"},
        {"float", "float64"},
        {"real", "float64"},
        {"decimal", "float64"},
        {"numeric", "float64"},
        {"float64", "float64"},
        {"float8", "float64"},
        {"float4", "float64"},
        {"double precision", "float64"},
        {"varchar", "string"},
        {"text", "string"},
        {"string", "string"},
        {"char", "string"},
        {"bpchar", "string"},
        {"boolean", "bool"},
        {"bool", "bool"},
        {"date", "date"},
        {"timestamp", "timestamp"},
        {"datetime", "timestamp"},
    };
    if (!t)
        return NULL;
    size_t n = strcspn(t, "("); /* decimal(15,2), varchar(25) */
    while (n > 0 && t[n - 1] == ' ')
        n--;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strlen(map[i].sql) == n && strncasecmp(t, map[i].sql, n) == 0)
            return map[i].engine;
    return NULL;
}

void sc__ex_subst(struct sc_ex *x, const struct sql_expr *node, char *internal)
{
    x->subst = fr_xrealloc(x->subst, sizeof(*x->subst) * (size_t)(x->nsubst + 1));
    x->subst[x->nsubst].node = node;
    x->subst[x->nsubst].internal = internal;
    x->nsubst++;
}

void sc__ex_cleanup(struct sc_ex *x)
{
    free(x->subst);
    x->subst = NULL;
    x->nsubst = 0;
}

static void put_quoted(struct fr_buf *b, const char *name)
{
    char *q = sc__quote(name);
    fr_buf_puts(b, q);
    free(q);
}

static int column(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    struct sc_col *col = NULL;
    int level = 0;
    const struct sql_expr *alias = sc__alias(x->c, x->scope, e);
    if (alias) {
        x->c->alias_busy++;
        int rc = expr_rec(x, alias, b);
        x->c->alias_busy--;
        return rc;
    }
    int rc = sc__resolve(x->c, x->scope, e, &col, &level);
    if (rc != FR_OK)
        return rc;
    if (level > 0) /* only WHERE's inner = outer equalities are pulled out */
        return sc__unsupported(x->c, e->pos,
                               "a correlated reference to '%s%s%s' is supported only in an "
                               "equality inner = outer of the subquery's WHERE",
                               e->qual.text ? e->qual.text : "", e->qual.text ? "." : "",
                               e->name.text);
    if (x->leaf_names >= 0 && col->leaf == x->leaf_names && col->orig) {
        put_quoted(b, col->orig);
        return FR_OK;
    }
    if (x->grouped) {
        bool key = false;
        for (int i = 0; i < x->nkeys && !key; i++)
            key = strcmp(x->keys[i], col->internal) == 0;
        if (!key)
            return sc__invalid(x->c, e->pos,
                               "column '%s' must appear in the GROUP BY clause or be used in an "
                               "aggregate function",
                               e->name.text);
    }
    sc__leaf_use(x->c, col);
    put_quoted(b, col->internal);
    return FR_OK;
}

static int literal(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    char *q;
    switch (e->kind) {
    case SQL_E_INT:
        fr_buf_printf(b, "%lld", (long long)e->ival);
        return FR_OK;
    case SQL_E_FLOAT:
        if (e->text)
            fr_buf_puts(b, e->text);
        else
            fr_buf_printf(b, "%.17g", e->fval);
        return FR_OK;
    case SQL_E_STRING:
        q = sc__quote_string(e->text ? e->text : "");
        fr_buf_puts(b, q);
        free(q);
        return FR_OK;
    case SQL_E_BOOL:
        fr_buf_puts(b, e->ival ? "true" : "false");
        return FR_OK;
    case SQL_E_NULL:
        fr_buf_puts(b, "null");
        return FR_OK;
    default:
        break;
    }
    const char *t = sc__type_name(e->type_name);
    if (!t)
        return sc__unsupported(x->c, e->pos, "the type %s is not supported",
                               e->type_name ? e->type_name : "?");
    int32_t d;
    int64_t us;
    const char *s = e->text ? e->text : "";
    if ((strcmp(t, "date") == 0 && df_parse_date(s, strlen(s), &d) != 0) ||
        (strcmp(t, "timestamp") == 0 && df_parse_timestamp(s, strlen(s), &us) != 0))
        return sc__invalid(x->c, e->pos, "invalid %s literal '%s'", t, s);
    q = sc__quote_string(s);
    if (strcmp(t, "date") == 0 || strcmp(t, "timestamp") == 0)
        fr_buf_printf(b, "%s %s", t, q);
    else
        fr_buf_printf(b, "cast(%s as %s)", q, t);
    free(q);
    return FR_OK;
}

/* args joined by sep, each compiled. */
static int list(struct sc_ex *x, struct sql_expr *const *args, int n, const char *sep,
                struct fr_buf *b)
{
    for (int i = 0; i < n; i++) {
        if (i)
            fr_buf_puts(b, sep);
        int rc = expr_rec(x, args[i], b);
        if (rc != FR_OK)
            return rc;
    }
    return FR_OK;
}

static int wrap(struct sc_ex *x, const char *pre, const struct sql_expr *a, const char *post,
                struct fr_buf *b)
{
    fr_buf_puts(b, pre);
    int rc = expr_rec(x, a, b);
    fr_buf_puts(b, post);
    return rc;
}

static int is_bool(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    /* IS TRUE: coalesce(a, false); IS NOT TRUE: not coalesce(a, false);
     * IS FALSE: coalesce(not a, false); IS NOT FALSE: coalesce(a, true) */
    bool t = e->ival != 0;
    if (t)
        return wrap(x, e->negated ? "(not coalesce(" : "coalesce(", e->args[0],
                    e->negated ? ", false))" : ", false)", b);
    return wrap(x, e->negated ? "coalesce(" : "coalesce((not ", e->args[0],
                e->negated ? ", true)" : "), false)", b);
}

static int case_expr(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    int rc = FR_OK;
    fr_buf_puts(b, "case");
    for (int i = 0; rc == FR_OK && i + 1 < e->nargs; i += 2) {
        fr_buf_puts(b, " when ");
        if (e->operand) {
            rc = wrap(x, "(", e->operand, " = ", b);
            rc = rc == FR_OK ? wrap(x, "", e->args[i], ")", b) : rc;
        } else {
            rc = expr_rec(x, e->args[i], b);
        }
        if (rc == FR_OK)
            rc = wrap(x, " then ", e->args[i + 1], "", b);
    }
    if (rc == FR_OK && e->else_)
        rc = wrap(x, " else ", e->else_, "", b);
    fr_buf_puts(b, " end");
    return rc;
}

static int cast_expr(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    const char *t = sc__type_name(e->type_name);
    if (!t)
        return sc__unsupported(x->c, e->pos, "the type %s is not supported",
                               e->type_name ? e->type_name : "?");
    /* To an integer DuckDB rounds: a DECIMAL literal half away from zero, a
     * double to even (the engine's own cast truncates). */
    const struct sql_expr *a = e->args[0];
    bool lit = a->kind == SQL_E_FLOAT ||
               (a->kind == SQL_E_UNARY && a->op == '-' && a->args[0]->kind == SQL_E_FLOAT);
    const char *round = strcmp(t, "int64") != 0 ? "" : lit ? "round(" : "round_even(";
    fr_buf_printf(b, "cast(%s", round);
    int rc = expr_rec(x, a, b);
    fr_buf_printf(b, "%s as %s)", *round ? ")" : "", t);
    return rc;
}

static int like(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    const char *op = e->negated ? " not like " : " like ";
    if (!e->ival) {
        int rc = wrap(x, "(", e->args[0], op, b);
        return rc == FR_OK ? wrap(x, "", e->args[1], ")", b) : rc;
    }
    int rc = wrap(x, "(lower(", e->args[0], ")", b);
    fr_buf_puts(b, op);
    return rc == FR_OK ? wrap(x, "lower(", e->args[1], "))", b) : rc;
}

static int in_list(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    int rc = wrap(x, "(", e->args[0], e->negated ? " not in (" : " in (", b);
    if (rc == FR_OK)
        rc = list(x, e->args + 1, e->nargs - 1, ", ", b);
    fr_buf_puts(b, "))");
    return rc;
}

static int between(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    int rc = wrap(x, "(", e->args[0], e->negated ? " not between (" : " between (", b);
    if (rc == FR_OK)
        rc = sc__expr_operand(x, e->args[1], b);
    fr_buf_puts(b, ") and (");
    if (rc == FR_OK)
        rc = sc__expr_operand(x, e->args[2], b);
    fr_buf_puts(b, "))");
    return rc;
}

static int kind_rec(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    switch (e->kind) {
    case SQL_E_COLUMN:
        return column(x, e, b);
    case SQL_E_STAR:
        return sc__invalid(x->c, e->pos, "'*' is not allowed here");
    case SQL_E_INT:
    case SQL_E_FLOAT:
    case SQL_E_STRING:
    case SQL_E_BOOL:
    case SQL_E_NULL:
    case SQL_E_TYPED:
        return literal(x, e, b);
    case SQL_E_INTERVAL:
        return sc__unsupported(x->c, e->pos,
                               "INTERVAL is supported only added to or subtracted from a DATE "
                               "literal");
    case SQL_E_UNARY:
        if (e->op == '+')
            return expr_rec(x, e->args[0], b);
        return wrap(x, e->op == '-' ? "(-" : "(not ", e->args[0], ")", b);
    case SQL_E_BINARY:
        return sc__expr_binary(x, e, b);
    case SQL_E_IS_NULL:
        return wrap(x, "(", e->args[0], e->negated ? " is not null)" : " is null)", b);
    case SQL_E_IS_BOOL:
        return is_bool(x, e, b);
    case SQL_E_BETWEEN:
        return between(x, e, b);
    case SQL_E_IN_LIST:
        return in_list(x, e, b);
    case SQL_E_LIKE:
        return like(x, e, b);
    case SQL_E_CASE:
        return case_expr(x, e, b);
    case SQL_E_CAST:
        return cast_expr(x, e, b);
    case SQL_E_FUNC:
        return sc__expr_func(x, e, b);
    case SQL_E_IN_QUERY:
    case SQL_E_EXISTS:
        return sc__unsupported(x->c, e->pos,
                               "%s (subquery) is supported only as a WHERE condition (alone or "
                               "joined by AND)",
                               e->kind == SQL_E_EXISTS ? "EXISTS" : "IN");
    case SQL_E_SUBQUERY:
        return sc__unsupported(x->c, e->pos, "a scalar subquery is not supported here");
    }
    return sc__invalid(x->c, e->pos, "unknown expression");
}

/* In a grouped block an expression equal to a GROUP BY expression is that
 * key's column. */
static bool match_key(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    if (!x->grouped || x->nexpr_keys == 0 || e->kind == SQL_E_COLUMN || sc__has_agg(e) ||
        sc__has_window(e) || sc__has_subquery(e))
        return false;
    struct sc_ex plain = *x;
    plain.grouped = false;
    plain.nexpr_keys = 0;
    struct fr_error scratch, *saved = x->c->err;
    fr_error_init(&scratch);
    x->c->err = &scratch;
    struct fr_buf t;
    fr_buf_init(&t);
    int rc = expr_rec(&plain, e, &t);
    x->c->err = saved;
    bool hit = false;
    for (int k = 0; rc == FR_OK && k < x->nexpr_keys && !hit; k++) {
        if (strcmp(t.data ? t.data : "", x->key_texts[k]) == 0) {
            put_quoted(b, x->key_cols[k]);
            hit = true;
        }
    }
    fr_buf_cleanup(&t);
    return hit;
}

static int expr_rec(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    for (int i = 0; i < x->nsubst; i++) {
        if (x->subst[i].node == e) {
            if (x->subst[i].internal)
                put_quoted(b, x->subst[i].internal);
            else /* a value that is always NULL (a subquery of a bare NULL) */
                fr_buf_puts(b, "null");
            return FR_OK;
        }
    }
    if (match_key(x, e, b))
        return FR_OK;
    if (x->c->depth >= 4 * SQL_MAX_NESTING)
        return sc__invalid(x->c, e->pos, "the expression nests too deeply");
    x->c->depth++;
    int rc = kind_rec(x, e, b);
    x->c->depth--;
    return rc;
}

int sc__expr(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *out)
{
    return expr_rec(x, e, out);
}

int sc__expr_text(struct sc_ex *x, const struct sql_expr *e, char **out)
{
    struct fr_buf b;
    fr_buf_init(&b);
    int rc = expr_rec(x, e, &b);
    if (rc != FR_OK) {
        fr_buf_cleanup(&b);
        *out = NULL;
        return rc;
    }
    *out = fr_buf_steal(&b, NULL);
    if (!*out)
        *out = fr_xstrdup("");
    return FR_OK;
}

/* The engine's message without its " at position N" (a position in the
 * generated text, not in the SQL). */
static void strip_positions(char *msg)
{
    char *p;
    while ((p = strstr(msg, " at position "))) {
        char *q = p + strlen(" at position ");
        while (*q >= '0' && *q <= '9')
            q++;
        memmove(p, q, strlen(q) + 1);
    }
}

int sc__expr_type(struct sc_ctx *c, const struct sc_rel *r, const char *text, int64_t pos,
                  df_type *out)
{
    struct df_schema s;
    sc__rel_schema(r, &s);
    df_expr *e = NULL;
    struct fr_error err;
    fr_error_init(&err);
    int rc = df_expr_parse(text, &s, &e, &err);
    df_schema_cleanup(&s);
    if (rc != FR_OK) {
        strip_positions(err.message);
        return sc__invalid(c, pos, "%s", err.message);
    }
    *out = df_expr_type(e);
    df_expr_free(e);
    return FR_OK;
}
