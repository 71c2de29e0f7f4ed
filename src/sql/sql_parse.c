/* sql_parse: one SQL statement into the tree of sql_ast.h. This file holds
 * the token helpers, names and type names, and the statements (a query,
 * EXPLAIN, SET, RESET, SHOW); queries are in sql_parse_query.c, FROM in
 * sql_parse_from.c and expressions in sql_parse_expr*.c. */
#include "sql_parse_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct sql_token *sql__peek(const struct sql_parser *p, int ahead)
{
    int k = p->i + ahead;
    return &p->toks[k < p->ntoks ? k : p->ntoks - 1];
}

const struct sql_token *sql__next(struct sql_parser *p)
{
    const struct sql_token *t = sql__peek(p, 0);
    if (p->i < p->ntoks - 1)
        p->i++;
    return t;
}

bool sql__is_kw(const struct sql_token *t, const char *kw)
{
    return t->kind == SQL_T_WORD && strcasecmp(t->text, kw) == 0;
}

bool sql__accept_kw(struct sql_parser *p, const char *kw)
{
    if (!sql__is_kw(sql__peek(p, 0), kw))
        return false;
    sql__next(p);
    return true;
}

bool sql__is_op(const struct sql_token *t, int op)
{
    return t->kind == SQL_T_OP && t->op == op;
}

bool sql__accept_op(struct sql_parser *p, int op)
{
    if (!sql__is_op(sql__peek(p, 0), op))
        return false;
    sql__next(p);
    return true;
}

static const char *const reserved[] = {
    "all",      "and",  "any",      "as",    "asc",    "between", "by",      "case",   "cast",
    "cross",    "desc", "distinct", "else",  "end",    "except",  "exists",  "false",  "fetch",
    "filter",   "from", "full",     "group", "having", "ilike",   "in",      "inner",  "intersect",
    "interval", "is",   "join",     "left",  "like",   "limit",   "natural", "not",    "null",
    "offset",   "on",   "or",       "order", "outer",  "over",    "qualify", "right",  "select",
    "then",     "true", "union",    "using", "values", "when",    "where",   "window", "with"};

bool sql__reserved(const struct sql_token *t)
{
    if (t->kind != SQL_T_WORD)
        return false;
    for (size_t k = 0; k < sizeof reserved / sizeof reserved[0]; k++)
        if (strcasecmp(t->text, reserved[k]) == 0)
            return true;
    return false;
}

bool sql__enter(struct sql_parser *p, const struct sql_token *at)
{
    if (++p->depth <= SQL_MAX_NESTING)
        return true;
    return sql__syntax(p, at,
                       "the statement nests deeper than %d levels (SQL_MAX_NESTING: parentheses, "
                       "subqueries, expressions, CASE and function calls each count)",
                       SQL_MAX_NESTING);
}

void sql__leave(struct sql_parser *p)
{
    p->depth--;
}

bool sql__name(struct sql_parser *p, struct sql_name *out)
{
    const struct sql_token *t = sql__peek(p, 0);
    if (t->kind == SQL_T_QIDENT || (t->kind == SQL_T_WORD && !sql__reserved(t))) {
        sql__next(p);
        out->text = fr_xstrdup(t->text);
        out->quoted = t->kind == SQL_T_QIDENT;
        out->pos = t->pos;
        return true;
    }
    return false;
}

bool sql__name_list(struct sql_parser *p, struct sql_name **names, int *n)
{
    const struct sql_token *open = sql__peek(p, 0);
    if (!sql__accept_op(p, '('))
        return sql__expected(p, open, "'('");
    do {
        struct sql_name nm = {0};
        if (!sql__name(p, &nm))
            return sql__expected(p, sql__peek(p, 0), "a column name");
        *names = sql__grow(*names, *n, sizeof **names);
        (*names)[(*n)++] = nm;
    } while (sql__accept_op(p, ','));
    return sql__close_paren(p, open);
}

/* Two-word type names. */
static const char *const second_words[][2] = {{"double", "precision"}, {"character", "varying"}};

char *sql__type_name(struct sql_parser *p)
{
    const struct sql_token *t = sql__peek(p, 0);
    if (t->kind != SQL_T_WORD && t->kind != SQL_T_QIDENT) {
        sql__expected(p, t, "a type name");
        return NULL;
    }
    sql__next(p);
    char *name = sql__lower(t->text);
    for (size_t k = 0; k < sizeof second_words / sizeof second_words[0]; k++) {
        if (strcmp(name, second_words[k][0]) == 0 && sql__accept_kw(p, second_words[k][1])) {
            char *two = fr_xasprintf("%s %s", name, second_words[k][1]);
            free(name);
            name = two;
        }
    }
    const struct sql_token *open = sql__peek(p, 0);
    if (sql__accept_op(p, '(')) { /* (p[, s]): checked, dropped */
        int n = 0;
        do {
            if (sql__peek(p, 0)->kind != SQL_T_INT || ++n > 2) {
                sql__expected(p, sql__peek(p, 0), "an integer type parameter");
                free(name);
                return NULL;
            }
            sql__next(p);
        } while (sql__accept_op(p, ','));
        if (!sql__close_paren(p, open)) {
            free(name);
            return NULL;
        }
    }
    return name;
}

/* SET value: a number, -number, 'string', TRUE/FALSE, NULL, or a bare word
 * (a string, as PostgreSQL's SET x TO word; the bare word DEFAULT is RESET). */
static struct sql_expr *set_value(struct sql_parser *p)
{
    const struct sql_token *t = sql__peek(p, 0);
    bool neg = sql__is_op(t, '-');
    const struct sql_token *v = sql__peek(p, neg ? 1 : 0);
    if (neg && v->kind != SQL_T_INT && v->kind != SQL_T_FLOAT) {
        sql__expected(p, v, "a number after '-'");
        return NULL;
    }
    struct sql_expr *e = NULL;
    if (v->kind == SQL_T_INT || v->kind == SQL_T_FLOAT) {
        e = sql__expr_new(v->kind == SQL_T_INT ? SQL_E_INT : SQL_E_FLOAT, v->pos);
        e->ival = v->ival;
        e->fval = v->fval;
        e->text = fr_xstrdup(v->text);
    } else if (sql__is_kw(v, "true") || sql__is_kw(v, "false")) {
        e = sql__expr_new(SQL_E_BOOL, v->pos);
        e->ival = sql__is_kw(v, "true");
    } else if (sql__is_kw(v, "null")) {
        e = sql__expr_new(SQL_E_NULL, v->pos);
    } else if (v->kind == SQL_T_STRING || v->kind == SQL_T_WORD || v->kind == SQL_T_QIDENT) {
        e = sql__expr_new(SQL_E_STRING, v->pos);
        e->text = fr_xstrdup(v->text);
    } else {
        sql__expected(p, v, "a value (a number, a 'string', TRUE, FALSE, NULL or a word)");
        return NULL;
    }
    e->end = v->end;
    p->i += neg ? 2 : 1;
    if (!neg)
        return e;
    struct sql_expr *u = sql__expr_new(SQL_E_UNARY, t->pos);
    u->op = '-';
    u->end = e->end;
    u->args = fr_xmalloc(sizeof *u->args);
    u->args[u->nargs++] = e;
    return u;
}

static bool config_field(struct sql_parser *p, struct sql_stmt *s, const char *after)
{
    if (sql__name(p, &s->field))
        return true;
    const struct sql_token *t = sql__peek(p, 0);
    if (t->kind == SQL_T_WORD) { /* a config field may be spelled like a keyword */
        sql__next(p);
        s->field.text = fr_xstrdup(t->text);
        s->field.pos = t->pos;
        return true;
    }
    char what[64];
    snprintf(what, sizeof what, "a config field after %s", after);
    return sql__expected(p, t, what);
}

static bool stmt_set(struct sql_parser *p, struct sql_stmt *s)
{
    s->kind = SQL_AST_SET;
    const struct sql_token *t = sql__peek(p, 0);
    if (sql__is_kw(t, "session") || sql__is_kw(t, "local") || sql__is_kw(t, "global"))
        return sql__unsupported(p, t->pos,
                                "SET %s is not supported: SET changes the pending config", t->text);
    if (!config_field(p, s, "SET"))
        return false;
    if (!sql__accept_op(p, '=') && !sql__accept_kw(p, "to"))
        return sql__expected(p, sql__peek(p, 0), "'=' or TO");
    const struct sql_token *v = sql__peek(p, 0);
    if (v->kind == SQL_T_WORD && sql__is_kw(v, "default")) { /* as PostgreSQL: RESET */
        sql__next(p);
        s->kind = SQL_AST_RESET;
        return true;
    }
    s->value = set_value(p);
    return s->value != NULL;
}

static bool stmt_reset_show(struct sql_parser *p, struct sql_stmt *s, bool show)
{
    s->kind = show ? SQL_AST_SHOW : SQL_AST_RESET;
    if (sql__accept_kw(p, "all") || (show && sql__accept_kw(p, "config")))
        return true;
    return config_field(p, s, show ? "SHOW" : "RESET");
}

static bool statement(struct sql_parser *p, struct sql_stmt *s)
{
    const struct sql_token *t = sql__peek(p, 0);
    s->pos = t->pos;
    if (sql__accept_kw(p, "set"))
        return stmt_set(p, s);
    if (sql__accept_kw(p, "reset"))
        return stmt_reset_show(p, s, false);
    if (sql__accept_kw(p, "show"))
        return stmt_reset_show(p, s, true);
    s->kind = SQL_AST_QUERY;
    if (sql__accept_kw(p, "explain")) {
        s->kind = SQL_AST_EXPLAIN;
        const struct sql_token *a = sql__peek(p, 0);
        if (sql__is_kw(a, "analyze") || sql__is_kw(a, "verbose"))
            return sql__unsupported(p, a->pos, "EXPLAIN %s is not supported",
                                    sql__is_kw(a, "analyze") ? "ANALYZE" : "VERBOSE");
        t = sql__peek(p, 0);
    }
    if (!sql__is_kw(t, "select") && !sql__is_kw(t, "with") && !sql__is_kw(t, "values") &&
        !sql__is_op(t, '('))
        return sql__expected(
            p, t,
            s->kind == SQL_AST_EXPLAIN
                ? "a query (SELECT, WITH or VALUES)"
                : "a statement (SELECT, WITH, VALUES, EXPLAIN, SET, RESET or SHOW)");
    s->query = sql__query(p);
    return s->query != NULL;
}

static const char *stage_follow(enum sql_stage st)
{
    switch (st) {
    case SQL_STAGE_ITEMS:
        return "FROM, WHERE, GROUP BY, ORDER BY, LIMIT or ','";
    case SQL_STAGE_FROM:
        return "WHERE, GROUP BY, ORDER BY, LIMIT, JOIN or ','";
    case SQL_STAGE_WHERE:
        return "GROUP BY, ORDER BY, LIMIT or an operator";
    case SQL_STAGE_GROUP:
        return "HAVING, ORDER BY, LIMIT or ','";
    case SQL_STAGE_HAVING:
        return "ORDER BY, LIMIT or an operator";
    case SQL_STAGE_ORDER:
        return "ASC, DESC, NULLS, LIMIT, OFFSET or ','";
    case SQL_STAGE_LIMIT:
        return "OFFSET or the end of the statement";
    default:
        return "the end of the statement";
    }
}

/* After the statement: an optional ';', then nothing. */
static bool statement_end(struct sql_parser *p)
{
    bool semi = sql__accept_op(p, ';');
    const struct sql_token *t = sql__peek(p, 0);
    if (t->kind == SQL_T_EOF)
        return true;
    if (semi)
        return sql__syntax(p, t, "one statement per request: found a second statement after ';'");
    return sql__expected(p, t, stage_follow(p->stage));
}

int sql_parse_n(const char *text, size_t len, struct sql_stmt **out, struct fr_error *err)
{
    *out = NULL;
    struct sql_lexed lx;
    int rc = sql__lex(text, len, &lx, err);
    if (rc != FR_OK)
        return rc;
    struct sql_parser p = {
        .text = text, .toks = lx.toks, .ntoks = lx.ntoks, .err = err, .alias_tok = -1};
    struct sql_stmt *s = fr_xcalloc(1, sizeof *s);
    if (lx.toks[0].kind == SQL_T_EOF) {
        sql__syntax(&p, &lx.toks[0], "the statement is empty");
    } else if (statement(&p, s)) {
        statement_end(&p);
    } else if (!p.failed) {
        sql__syntax(&p, sql__peek(&p, 0), "unexpected token");
    }
    sql__lexed_cleanup(&lx);
    if (p.failed) {
        sql_stmt_free(s);
        return p.status;
    }
    *out = s;
    return FR_OK;
}

int sql_parse(const char *text, struct sql_stmt **out, struct fr_error *err)
{
    return sql_parse_n(text, strlen(text), out, err);
}
