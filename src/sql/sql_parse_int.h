/* sql_parse_int: the lexer's tokens and the parser's state, shared by
 * sql_lex.c, sql_parse*.c, sql_ast.c and sql_error.c. Internal names carry
 * a double underscore (sql__). */
#ifndef FRAMED_SQL_PARSE_INT_H
#define FRAMED_SQL_PARSE_INT_H

#include "sql_ast.h"

#include <stddef.h>
#include <stdint.h>

enum sql_tok_kind {
    SQL_T_EOF,
    SQL_T_WORD,   /* an unquoted identifier or keyword */
    SQL_T_QIDENT, /* "quoted" */
    SQL_T_STRING, /* 'string' */
    SQL_T_INT,
    SQL_T_FLOAT,
    SQL_T_OP /* punctuation and operators: op holds its code */
};

/* Operator codes: single characters are themselves; two-character ones: */
enum {
    SQL_TOP_NE = 256, /* <> and != */
    SQL_TOP_LE,
    SQL_TOP_GE,
    SQL_TOP_CONCAT,     /* || */
    SQL_TOP_DOUBLECOLON /* :: */
};

struct sql_token {
    enum sql_tok_kind kind;
    int op;
    int64_t pos, end; /* byte offsets of the token's text [pos, end) */
    char *text;       /* WORD, QIDENT, STRING: the value (quotes removed); numbers: as written */
    int64_t ival;
    double fval;
};

struct sql_lexed {
    struct sql_token *toks; /* the last one is SQL_T_EOF */
    int ntoks;
};

/* Lexes text[0, len) into out (new; sql__lexed_cleanup frees it). Errors:
 * 400 invalid-sql (an unterminated string, identifier or comment, a stray
 * character, a NUL byte, over SQL_MAX_TEXT_BYTES or SQL_MAX_TOKENS). */
int sql__lex(const char *text, size_t len, struct sql_lexed *out, struct fr_error *err);
void sql__lexed_cleanup(struct sql_lexed *lx);

/* Where a clause list stands, for what an error says is expected next. */
enum sql_stage {
    SQL_STAGE_NONE,
    SQL_STAGE_ITEMS,
    SQL_STAGE_FROM,
    SQL_STAGE_WHERE,
    SQL_STAGE_GROUP,
    SQL_STAGE_HAVING,
    SQL_STAGE_ORDER,
    SQL_STAGE_LIMIT
};

struct sql_parser {
    const char *text;
    struct sql_token *toks;
    int ntoks;
    int i;     /* the next token */
    int depth; /* nesting now (SQL_MAX_NESTING) */
    enum sql_stage stage;
    int alias_tok; /* the token index of the last implicit alias, -1 if none */
    struct fr_error *err;
    bool failed;
    int status; /* of the error when failed */
};

/* Token access. */
const struct sql_token *sql__peek(const struct sql_parser *p, int ahead);
const struct sql_token *sql__next(struct sql_parser *p);
bool sql__is_kw(const struct sql_token *t, const char *kw);
bool sql__accept_kw(struct sql_parser *p, const char *kw);
bool sql__accept_op(struct sql_parser *p, int op);
bool sql__is_op(const struct sql_token *t, int op);
/* A keyword that cannot be an unquoted name (alias, column). */
bool sql__reserved(const struct sql_token *t);
/* Enters one nesting level (false and an error past SQL_MAX_NESTING). */
bool sql__enter(struct sql_parser *p, const struct sql_token *at);
void sql__leave(struct sql_parser *p);

/* Errors. sql__syntax sets "syntax error at line L, column C: <message>" at
 * token t; sql__expected says "expected <what> but found <t>" (with a "did
 * you mean" when t is a misspelled keyword). All return NULL-friendly false. */
bool sql__syntax(struct sql_parser *p, const struct sql_token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool sql__expected(struct sql_parser *p, const struct sql_token *t, const char *what);
bool sql__unsupported(struct sql_parser *p, int64_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Requires ')' closing the '(' at open; an error naming open otherwise. */
bool sql__close_paren(struct sql_parser *p, const struct sql_token *open);
/* Sets 1-based line and column (UTF-8 characters) of byte offset pos. */
void sql__line_col(const char *text, int64_t pos, int64_t *line, int64_t *col);
/* A keyword near word (edit distance 1-2), or NULL: for "did you mean". */
const char *sql__near_keyword(const char *word);

/* Grammar: each returns a new node (the caller owns it) or NULL with the
 * error set (p->failed). */
struct sql_query *sql__query(struct sql_parser *p);
struct sql_from *sql__from(struct sql_parser *p);
struct sql_expr *sql__expr(struct sql_parser *p);
struct sql_window *sql__window_spec(struct sql_parser *p, const struct sql_token *open);
int sql__order_list(struct sql_parser *p, struct sql_order_item **items, int *n);
/* A name (WORD not reserved, or QIDENT) into out (text new); false if none. */
bool sql__name(struct sql_parser *p, struct sql_name *out);
/* A parenthesized list of names: (a, b, ...). */
bool sql__name_list(struct sql_parser *p, struct sql_name **names, int *n);
/* A type name after CAST .. AS or ::, lower-cased, (p[,s]) dropped (new). */
char *sql__type_name(struct sql_parser *p);

/* Nodes: *_new hand out a new, zeroed node; *_free free one whole (every
 * pointer in it is owned) and accept NULL. */
struct sql_expr *sql__expr_new(enum sql_ekind kind, int64_t pos);
struct sql_query *sql__query_new(int64_t pos);
struct sql_select *sql__select_new(int64_t pos);
struct sql_from *sql__from_new(enum sql_from_kind kind, int64_t pos);
struct sql_window *sql__window_new(int64_t pos);
void sql__expr_free(struct sql_expr *e);
void sql__query_free(struct sql_query *q);
void sql__from_free(struct sql_from *f);
void sql__window_free(struct sql_window *w);
void sql__name_cleanup(struct sql_name *n);
/* Grows an array of n elements of size el so that one more fits: call
 * before every append (doubles at powers of two). */
void *sql__grow(void *arr, int n, size_t el);
/* new: a lower-cased copy. */
char *sql__lower(const char *s);

#endif
