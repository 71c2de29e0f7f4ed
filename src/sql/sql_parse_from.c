/* sql_parse_from: the FROM clause. Tables and (query) with an optional
 * alias and column aliases, joins (INNER, LEFT/RIGHT/FULL [OUTER], CROSS,
 * NATURAL) with ON or USING, parenthesized joins, and comma lists; joins
 * and commas build left-deep trees, each link one nesting level. */
#include "sql_parse_int.h"

#include <stdlib.h>

/* DuckDB's join words that would otherwise be read as an alias. */
static const char *join_word(const struct sql_token *t)
{
    static const char *const words[] = {"SEMI", "ANTI", "ASOF", "POSITIONAL", "LATERAL"};
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if (sql__is_kw(t, words[k]))
            return words[k];
    return NULL;
}

static bool refuse_join_word(struct sql_parser *p, const struct sql_token *t)
{
    const char *w = join_word(t);
    if (sql__is_kw(t, "lateral"))
        return sql__unsupported(p, t->pos, "LATERAL is not supported");
    return sql__unsupported(p, t->pos, "%s JOIN is not supported%s", w,
                            sql__is_kw(t, "semi") || sql__is_kw(t, "anti")
                                ? ": use WHERE ... IN (subquery) or EXISTS"
                                : "");
}

/* [AS] alias [(cols)] */
static bool alias(struct sql_parser *p, struct sql_from *f)
{
    const struct sql_token *w = sql__peek(p, 0);
    if (join_word(w) && (sql__is_kw(sql__peek(p, 1), "join") || sql__is_kw(w, "lateral")))
        return refuse_join_word(p, w);
    if (sql__accept_kw(p, "as")) {
        if (!sql__name(p, &f->alias))
            return sql__expected(p, sql__peek(p, 0), "a table alias after AS");
    } else {
        int at = p->i;
        if (!sql__name(p, &f->alias))
            return true;
        p->alias_tok = at;
    }
    if (sql__is_op(sql__peek(p, 0), '('))
        return sql__name_list(p, &f->col_aliases, &f->ncol_aliases);
    return true;
}

/* Whether '(' at the cursor opens a query rather than a join. */
static bool opens_query(const struct sql_parser *p)
{
    int k = 0;
    while (sql__is_op(sql__peek(p, k), '(') && k < SQL_MAX_NESTING + 1)
        k++;
    const struct sql_token *t = sql__peek(p, k);
    return sql__is_kw(t, "select") || sql__is_kw(t, "with") || sql__is_kw(t, "values");
}

static struct sql_from *table_primary(struct sql_parser *p)
{
    const struct sql_token *t = sql__peek(p, 0);
    struct sql_from *f = NULL;
    if (sql__is_kw(t, "lateral")) {
        refuse_join_word(p, t);
        return NULL;
    }
    if (sql__is_op(t, '(')) {
        if (!sql__enter(p, t))
            return NULL;
        if (opens_query(p)) {
            sql__next(p);
            f = sql__from_new(SQL_FROM_SUBQUERY, t->pos);
            if (!(f->query = sql__query(p)) || !sql__close_paren(p, t) || !alias(p, f)) {
                sql__from_free(f);
                f = NULL;
            }
        } else {
            sql__next(p);
            f = sql__from(p);
            if (f && !sql__close_paren(p, t)) {
                sql__from_free(f);
                f = NULL;
            }
        }
        sql__leave(p);
        return f;
    }
    f = sql__from_new(SQL_FROM_TABLE, t->pos);
    if (!sql__name(p, &f->table)) {
        sql__expected(p, t, "a table name or '('");
        sql__from_free(f);
        return NULL;
    }
    if (sql__is_op(sql__peek(p, 0), '.') || sql__is_op(sql__peek(p, 0), '(')) {
        sql__unsupported(p, sql__peek(p, 0)->pos,
                         "%s after a table name is not supported (no schemas or table functions)",
                         sql__is_op(sql__peek(p, 0), '.') ? "'.'" : "'('");
        sql__from_free(f);
        return NULL;
    }
    if (!alias(p, f)) {
        sql__from_free(f);
        return NULL;
    }
    return f;
}

/* The join keywords at the cursor: kind, or -1 when no join starts here. */
static int join_kind(struct sql_parser *p, bool *natural)
{
    *natural = sql__accept_kw(p, "natural");
    const struct sql_token *t = sql__peek(p, 0);
    int kind = -1;
    if (sql__accept_kw(p, "join"))
        return SQL_JOIN_INNER;
    if (sql__accept_kw(p, "inner"))
        kind = SQL_JOIN_INNER;
    else if (sql__accept_kw(p, "left"))
        kind = SQL_JOIN_LEFT;
    else if (sql__accept_kw(p, "right"))
        kind = SQL_JOIN_RIGHT;
    else if (sql__accept_kw(p, "full"))
        kind = SQL_JOIN_FULL;
    else if (sql__accept_kw(p, "cross"))
        kind = SQL_JOIN_CROSS;
    else if (*natural)
        return sql__expected(p, t, "JOIN after NATURAL") ? -1 : -2;
    else
        return -1;
    if (kind != SQL_JOIN_INNER && kind != SQL_JOIN_CROSS)
        sql__accept_kw(p, "outer");
    if (join_word(sql__peek(p, 0))) {
        refuse_join_word(p, sql__peek(p, 0));
        return -2;
    }
    if (!sql__accept_kw(p, "join")) {
        sql__expected(p, sql__peek(p, 0), "JOIN");
        return -2;
    }
    return kind;
}

/* ON expr | USING (cols), as the join kind needs. */
static bool join_condition(struct sql_parser *p, struct sql_from *j)
{
    if (j->join == SQL_JOIN_CROSS || j->natural)
        return true;
    if (sql__accept_kw(p, "on"))
        return (j->on = sql__expr(p)) != NULL;
    if (sql__is_kw(sql__peek(p, 0), "using")) {
        sql__next(p);
        return sql__name_list(p, &j->using_cols, &j->nusing);
    }
    return sql__expected(p, sql__peek(p, 0), "ON or USING after the joined table");
}

/* The first links of a join chain count as nesting levels; the chain is
 * then bounded by its length (SQL_MAX_JOINS), not by SQL_MAX_NESTING, so a
 * FROM of many joins works while the tree's depth stays bounded. */
#define JOIN_LEFT_DEEP 16
#define SQL_MAX_JOINS 256

static bool join_link(struct sql_parser *p, const struct sql_token *t, int n)
{
    if (n < JOIN_LEFT_DEEP)
        return sql__enter(p, t);
    if (n < SQL_MAX_JOINS)
        return true;
    return sql__syntax(p, t, "a FROM joins more than %d tables", SQL_MAX_JOINS);
}

static struct sql_from *join_chain(struct sql_parser *p)
{
    struct sql_from *left = table_primary(p);
    int links = 0, joins = 0;
    while (left) {
        const struct sql_token *t = sql__peek(p, 0);
        bool natural = false;
        int kind = join_kind(p, &natural);
        if (kind == -1 && !p->failed)
            break;
        if (kind < 0 || !join_link(p, t, joins)) {
            sql__from_free(left);
            left = NULL;
            break;
        }
        links += links < JOIN_LEFT_DEEP;
        joins++;
        struct sql_from *j = sql__from_new(SQL_FROM_JOIN, left->pos);
        j->join = (enum sql_join_kind)kind;
        j->natural = natural;
        j->left = left;
        left = j;
        if (!(j->right = table_primary(p)) || !join_condition(p, j)) {
            sql__from_free(j);
            left = NULL;
        }
    }
    p->depth -= links;
    return left;
}

struct sql_from *sql__from(struct sql_parser *p)
{
    struct sql_from *left = join_chain(p);
    int links = 0, joins = 0;
    while (left && sql__is_op(sql__peek(p, 0), ',')) {
        const struct sql_token *t = sql__next(p);
        if (!join_link(p, t, joins)) {
            sql__from_free(left);
            left = NULL;
            break;
        }
        links += links < JOIN_LEFT_DEEP;
        joins++;
        struct sql_from *j = sql__from_new(SQL_FROM_JOIN, left->pos);
        j->join = SQL_JOIN_COMMA;
        j->left = left;
        left = j;
        if (!(j->right = join_chain(p))) {
            sql__from_free(j);
            left = NULL;
        }
    }
    p->depth -= links;
    return left;
}
