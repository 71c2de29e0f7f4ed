/* sql: the SQL front end. A statement's text is parsed (src/sql/sql_parse*.c
 * into the tree of sql_ast.h) and compiled (sql_compile*.c) into the JSON
 * plan that POST /v1/queries takes as "plan": the same planner, explain and
 * engine run it. Config statements (SET, RESET, SHOW) are compiled into a
 * description the caller (the context) carries out under the config lock.
 *
 * Ownership: a sql_statement's members are new; sql_statement_cleanup frees
 * them. The catalog's strings are borrowed for the call. */
#ifndef FRAMED_SQL_H
#define FRAMED_SQL_H

#include "../common/common.h"
#include "../engine/engine.h"

#include <jansson.h>
#include <stdbool.h>

/* Bounds of what is parsed (longer or deeper text is refused with 400
 * invalid-sql naming the bound). */
#define SQL_MAX_TEXT_BYTES (256 * 1024)
#define SQL_MAX_TOKENS 65536
#define SQL_MAX_NESTING 64 /* expressions and subqueries, each level counts */

/* Where the compiler finds tables. lookup fills *source with a new JSON
 * plan source ({"dataset": name} or {"dataframe": id}) and *schema (the
 * caller cleans it up) for the table `name` (case-insensitive unless quoted,
 * as SQL names are): FR_ENOTFOUND if no such table (the compiler then asks
 * names() for a suggestion), another error as is. names fills a new array of
 * new strings (the known table names, for "did you mean"); may be NULL. */
struct sql_catalog {
    int (*lookup)(void *arg, const char *name, bool quoted, json_t **source,
                  struct df_schema *schema, struct fr_error *err);
    int (*names)(void *arg, char ***names, int *n);
    void *arg;
};

enum sql_stmt_kind {
    SQL_STMT_QUERY,   /* SELECT / WITH / VALUES / set operations: plan */
    SQL_STMT_EXPLAIN, /* EXPLAIN <query>: plan is the query's plan */
    SQL_STMT_SET,     /* SET field = value: field, value */
    SQL_STMT_RESET,   /* RESET field | RESET ALL (field NULL) */
    SQL_STMT_SHOW     /* SHOW field | SHOW CONFIG / SHOW ALL (field NULL) */
};

struct sql_statement {
    enum sql_stmt_kind kind;
    json_t *plan;      /* QUERY, EXPLAIN: the JSON plan (new) */
    char *field;       /* SET, RESET, SHOW: the config field as written, lower-cased (new) */
    json_t *value;     /* SET: the value as JSON (a number, string, true/false or null) (new) */
    int64_t field_pos; /* SET, RESET, SHOW: the field's byte offset in the text, else -1 */
};
void sql_statement_cleanup(struct sql_statement *s);

/* Compiles one statement (an optional trailing ';'). Errors (err's kind and
 * members, as the HTTP edge turns them into problems):
 *  - 400 invalid-sql: syntax, unknown column, ambiguous name, bad arity or
 *    type found while compiling; err->line / err->column (1-based) point at
 *    the token, err->position is its byte offset, err->message says what was
 *    found and expected ("expected FROM or ',' at line 2, column 8, found
 *    'WHER'"), and a "did you mean" when a name is near a known one;
 *  - 404 dataset-not-found: an unknown table, with line, column and the
 *    nearest table name;
 *  - 422 unsupported-sql: a feature that parses but is not supported ("window
 *    frame ROWS BETWEEN is not supported"), with line and column.
 * sql_error_excerpt makes the caret excerpt of such an error. */
int sql_compile(const char *text, const struct sql_catalog *cat, struct sql_statement *out,
                struct fr_error *err);

/* new: the line of `text` holding byte offset pos, then a line with a caret
 * under the column ("  ^"), at most 160 columns around it (tabs kept), or
 * NULL when pos is out of range. */
char *sql_error_excerpt(const char *text, int64_t pos);

/* Sets err (kind, status, position, line, column) at byte offset pos of text
 * with a printf message; the message gets " at line L, column C" appended
 * (columns count UTF-8 characters, from 1; a tab is one).
 * Returns status. Shared by the parser, the compiler and the
 * context (a config field SHOW does not know). */
int sql_error_at(struct fr_error *err, int status, const char *kind, const char *text, int64_t pos,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#endif
