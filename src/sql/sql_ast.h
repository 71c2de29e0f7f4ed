/* sql_ast: the syntax tree the parser (sql_parse*.c) makes and the compiler
 * (sql_compile*.c) reads. Every node carries the byte offset of its first
 * token (pos) for errors; names keep whether they were quoted (an unquoted
 * name is compared case-insensitively, a quoted one exactly). Lists are
 * arrays with counts. Ownership: sql_parse hands out a new tree;
 * sql_stmt_free frees it whole (every pointer below is owned by its node). */
#ifndef FRAMED_SQL_AST_H
#define FRAMED_SQL_AST_H

#include "sql.h"

#include <stdbool.h>
#include <stdint.h>

struct sql_name {
    char *text; /* as written, quotes removed ("" unescaped) */
    bool quoted;
    int64_t pos;
};

enum sql_ekind {
    SQL_E_COLUMN, /* [qualifier.]name: qual.text NULL when unqualified */
    SQL_E_STAR,   /* * or qualifier.* (only in a select list or count(*)) */
    SQL_E_INT,    /* ival */
    SQL_E_FLOAT,  /* fval; text keeps the literal as written */
    SQL_E_STRING, /* text ('' unescaped) */
    SQL_E_BOOL,   /* ival 0/1 */
    SQL_E_NULL,
    SQL_E_TYPED,    /* DATE '...', TIMESTAMP '...': type_name, text */
    SQL_E_INTERVAL, /* INTERVAL '3' DAY / INTERVAL '3 days': text (the quantity), unit
                       ("year", "month", "day", "hour", "minute", "second") */
    SQL_E_UNARY,    /* op '-', '+' or 'N' (NOT): args[0] */
    SQL_E_BINARY,   /* op (enum sql_binop): args[0], args[1] */
    SQL_E_IS_NULL,  /* args[0] IS [NOT] NULL: negated */
    SQL_E_IS_BOOL,  /* args[0] IS [NOT] TRUE/FALSE: ival 1 TRUE / 0 FALSE, negated */
    SQL_E_BETWEEN,  /* args[0] [NOT] BETWEEN args[1] AND args[2] */
    SQL_E_IN_LIST,  /* args[0] [NOT] IN (args[1..]) */
    SQL_E_IN_QUERY, /* args[0] [NOT] IN (query) */
    SQL_E_EXISTS,   /* [NOT] EXISTS (query) */
    SQL_E_SUBQUERY, /* (query) as a scalar */
    SQL_E_LIKE,     /* args[0] [NOT] LIKE|ILIKE args[1]: ival 1 for ILIKE */
    SQL_E_CASE,     /* CASE [operand] WHEN .. THEN .. [ELSE ..] END:
                       operand (may be NULL), args = when0, then0, when1, then1, ...,
                       else_ (may be NULL) */
    SQL_E_CAST,     /* CAST(args[0] AS type_name), args[0]::type_name, TRY_CAST: ival 1 */
    SQL_E_FUNC,     /* name(args) [FILTER (WHERE filter)] [OVER (window)]:
                       distinct for f(DISTINCT x), star for count(*), window may be NULL.
                       EXTRACT(field FROM x) is a FUNC named "extract" with args[0] an
                       SQL_E_STRING of the field (lower-cased) and args[1] x. */
};

enum sql_binop {
    SQL_OP_ADD,
    SQL_OP_SUB,
    SQL_OP_MUL,
    SQL_OP_DIV,
    SQL_OP_MOD,
    SQL_OP_CONCAT, /* || */
    SQL_OP_EQ,
    SQL_OP_NE, /* <> or != */
    SQL_OP_LT,
    SQL_OP_LE,
    SQL_OP_GT,
    SQL_OP_GE,
    SQL_OP_AND,
    SQL_OP_OR
};

struct sql_query;
struct sql_window;

struct sql_expr {
    enum sql_ekind kind;
    int64_t pos;
    int64_t end; /* byte offset past its last token */
    int op;      /* UNARY: '-', '+', 'N'; BINARY: enum sql_binop */
    bool negated;
    bool distinct;
    bool star;
    int64_t ival;
    double fval;
    char *text;           /* literals; INTERVAL quantity */
    char *type_name;      /* CAST, TYPED: lower-cased ("bigint", "double", "varchar", "date") */
    char *unit;           /* INTERVAL */
    struct sql_name qual; /* COLUMN, STAR: the table qualifier (text NULL if none) */
    struct sql_name name; /* COLUMN: the column; FUNC: the function (lower-cased if unquoted) */
    struct sql_expr **args;
    int nargs;
    struct sql_expr *operand;  /* CASE */
    struct sql_expr *else_;    /* CASE */
    struct sql_expr *filter;   /* FUNC: FILTER (WHERE ...) */
    struct sql_query *query;   /* IN_QUERY, EXISTS, SUBQUERY */
    struct sql_window *window; /* FUNC: OVER (...) */
};

struct sql_order_item {
    struct sql_expr *expr; /* an INT literal is a position (ORDER BY 2) */
    bool desc;
    int nulls; /* 0 default, 1 NULLS FIRST, 2 NULLS LAST */
};

struct sql_window {
    int64_t pos;
    struct sql_name ref; /* OVER w (a named window, WINDOW clause): text NULL if inline */
    struct sql_expr **partition_by;
    int npartition;
    struct sql_order_item *order_by;
    int norder;
    bool has_frame;    /* ROWS/RANGE/GROUPS ... was written: the compiler refuses it */
    int64_t frame_pos; /* where the frame clause starts */
    char *frame_text;  /* the frame as written, for the error ("ROWS BETWEEN") */
};

struct sql_select_item {
    struct sql_expr *expr; /* SQL_E_STAR for * and t.* */
    struct sql_name alias; /* text NULL if none */
};

enum sql_join_kind {
    SQL_JOIN_INNER,
    SQL_JOIN_LEFT,
    SQL_JOIN_RIGHT,
    SQL_JOIN_FULL,
    SQL_JOIN_CROSS,
    SQL_JOIN_COMMA /* FROM a, b: a cross join whose conditions are in WHERE */
};

enum sql_from_kind { SQL_FROM_TABLE, SQL_FROM_SUBQUERY, SQL_FROM_JOIN };

struct sql_from {
    enum sql_from_kind kind;
    int64_t pos;
    struct sql_name table;        /* TABLE */
    struct sql_query *query;      /* SUBQUERY */
    struct sql_name alias;        /* TABLE, SUBQUERY: text NULL if none */
    struct sql_name *col_aliases; /* AS t(a, b, ...) */
    int ncol_aliases;
    /* JOIN: left JOIN right [ON on | USING (using)] */
    enum sql_join_kind join;
    bool natural;
    struct sql_from *left, *right;
    struct sql_expr *on;
    struct sql_name *using_cols;
    int nusing;
};

/* One SELECT block. */
struct sql_select {
    int64_t pos;
    bool distinct;
    struct sql_expr **distinct_on; /* DISTINCT ON (...): refused as unsupported if given */
    int ndistinct_on;
    struct sql_select_item *items;
    int nitems;
    struct sql_from *from; /* NULL: SELECT without FROM (one row) */
    struct sql_expr *where;
    struct sql_expr **group_by; /* INT literals are positions */
    int ngroup;
    bool group_by_all; /* GROUP BY ALL */
    struct sql_expr *having;
    struct sql_name *window_names; /* WINDOW w AS (...) */
    struct sql_window **windows;
    int nwindows;
    struct sql_expr *qualify; /* QUALIFY (DuckDB): may be NULL */
    /* VALUES (..), (..) is a select with values rows instead of items: */
    struct sql_expr ***values;
    int nvalues; /* rows */
    int values_width;
};

enum sql_setop { SQL_SET_NONE, SQL_SET_UNION, SQL_SET_INTERSECT, SQL_SET_EXCEPT };

struct sql_cte {
    struct sql_name name;
    struct sql_name *cols; /* WITH t(a, b) AS (...) */
    int ncols;
    struct sql_query *query;
    bool recursive; /* WITH RECURSIVE: refused as unsupported */
};

/* A query: [WITH ctes] body [ORDER BY] [LIMIT] [OFFSET]. The body is a
 * select, or a set operation of two queries (left op right), or a
 * parenthesized query (select NULL, op NONE, left set). */
struct sql_query {
    int64_t pos;
    struct sql_cte *ctes;
    int nctes;
    struct sql_select *select; /* a plain block */
    enum sql_setop setop;
    bool all; /* UNION ALL etc. */
    struct sql_query *left, *right;
    struct sql_order_item *order_by;
    int norder;
    struct sql_expr *limit;  /* may be NULL; LIMIT ALL is NULL */
    struct sql_expr *offset; /* may be NULL */
};

enum sql_stmt_ast_kind {
    SQL_AST_QUERY,
    SQL_AST_EXPLAIN, /* EXPLAIN [ANALYZE refused] query */
    SQL_AST_SET,     /* SET [SESSION|LOCAL refused?] name (= | TO) value */
    SQL_AST_RESET,   /* RESET name | RESET ALL */
    SQL_AST_SHOW     /* SHOW name | SHOW CONFIG | SHOW ALL */
};

struct sql_stmt {
    enum sql_stmt_ast_kind kind;
    int64_t pos;
    struct sql_query *query; /* QUERY, EXPLAIN */
    struct sql_name field;   /* SET, RESET, SHOW: text NULL for ALL / CONFIG */
    struct sql_expr *value;  /* SET: a literal (INT, FLOAT, STRING, BOOL, NULL, or a bare word as
                                STRING), or -literal */
};

/* Parses one statement (a trailing ';' allowed, nothing after it). Errors:
 * 400 invalid-sql with err->position (byte offset), err->line and
 * err->column (1-based) of the offending token and a message naming what was
 * found and what was expected; the bounds of sql.h are checked here.
 * 422 unsupported-sql for syntax that is recognized but not supported
 * (WITH RECURSIVE, ...), where the parser knows it. *out is new. */
int sql_parse(const char *text, struct sql_stmt **out, struct fr_error *err);
void sql_stmt_free(struct sql_stmt *s);
/* As sql_parse, of text[0, len): a NUL byte inside is 400 invalid-sql (the
 * caller of sql_parse cannot pass one; a JSON string can hold one). */
int sql_parse_n(const char *text, size_t len, struct sql_stmt **out, struct fr_error *err);
/* new: the tree as an S-expression ("(select (items a (as b x)) (from t))"),
 * for tests and debugging; its grammar is at the top of sql_ast_dump.c. */
char *sql_ast_dump(const struct sql_stmt *s);

#endif
