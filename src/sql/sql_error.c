/* sql_error: where an SQL error is (byte offset -> line and column, counted
 * in UTF-8 characters), the messages of syntax errors ("syntax error at line
 * L, column C: expected X but found 'Y'", with "did you mean"), and the caret
 * excerpt the HTTP edge shows under a message. */
#include "sql_parse_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sql__line_col(const char *text, int64_t pos, int64_t *line, int64_t *col)
{
    int64_t l = 1, c = 1;
    for (int64_t k = 0; k < pos && text[k]; k++) {
        unsigned char ch = (unsigned char)text[k];
        if (ch == '\n') {
            l++, c = 1;
        } else if ((ch & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static void set_where(struct fr_error *err, const char *text, int64_t pos)
{
    if (!err)
        return;
    err->position = pos;
    sql__line_col(text, pos, &err->line, &err->column);
}

int sql_error_at(struct fr_error *err, int status, const char *kind, const char *text, int64_t pos,
                 const char *fmt, ...)
{
    if (!err)
        return status;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fr_utf8_cut_tail(msg);
    set_where(err, text, pos);
    fr_error_setk(err, status, kind, "%s at line %lld, column %lld", msg, (long long)err->line,
                  (long long)err->column);
    return status;
}

/* The keywords a misspelling is compared with. */
static const char *const keywords[] = {
    "SELECT",  "FROM",   "WHERE",    "GROUP",  "ORDER",  "HAVING",    "LIMIT",   "OFFSET",
    "UNION",   "JOIN",   "INNER",    "LEFT",   "RIGHT",  "OUTER",     "FULL",    "CROSS",
    "USING",   "WITH",   "DISTINCT", "VALUES", "EXCEPT", "INTERSECT", "QUALIFY", "WINDOW",
    "BETWEEN", "LIKE",   "ILIKE",    "CASE",   "WHEN",   "THEN",      "ELSE",    "END",
    "CAST",    "EXISTS", "NULL",     "NOT",    "AND",    "PARTITION", "EXPLAIN", "RESET",
    "SHOW",    "ASC",    "DESC",     "NULLS",  "FIRST",  "LAST",      "OVER",    "FILTER"};

const char *sql__near_keyword(const char *word)
{
    size_t wl = strlen(word);
    if (wl < 3)
        return NULL;
    const char *best = NULL;
    int bestd = 3;
    for (size_t k = 0; k < sizeof keywords / sizeof keywords[0]; k++) {
        int d = fr_edit_distance(word, keywords[k]);
        int allow = wl <= 4 ? 1 : 2;
        /* a tie goes to the keyword with the same first letter (DSC: DESC, not ASC) */
        bool tie_wins = d == bestd && best && toupper((unsigned char)word[0]) == keywords[k][0] &&
                        toupper((unsigned char)word[0]) != best[0];
        if (d > 0 && d <= allow && (d < bestd || tie_wins))
            best = keywords[k], bestd = d;
    }
    return best;
}

/* "'text'" (at most 40 bytes of it), "the string 'x'", "\"Name\"" or "the end
 * of the statement". */
static void describe(const struct sql_parser *p, const struct sql_token *t, char *out, size_t n)
{
    if (t->kind == SQL_T_EOF) {
        snprintf(out, n, "the end of the statement");
        return;
    }
    int64_t len = t->end - t->pos;
    const char *more = "";
    if (len > 40) { /* whole characters */
        len = 40, more = "...";
        while (len > 0 && ((unsigned char)p->text[t->pos + len] & 0xC0) == 0x80)
            len--;
    }
    if (t->kind == SQL_T_STRING || t->kind == SQL_T_QIDENT) /* the span has its quotes */
        snprintf(out, n, "%s%.*s%s", t->kind == SQL_T_STRING ? "the string " : "", (int)len,
                 p->text + t->pos, more);
    else
        snprintf(out, n, "'%.*s%s'", (int)len, p->text + t->pos, more);
}

static bool vsyntax(struct sql_parser *p, const struct sql_token *t, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static bool vsyntax(struct sql_parser *p, const struct sql_token *t, const char *fmt, va_list ap)
{
    if (p->failed)
        return false;
    p->failed = true;
    p->status = FR_EINVAL;
    char msg[400];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fr_utf8_cut_tail(msg);
    set_where(p->err, p->text, t->pos);
    if (p->err)
        fr_error_setk(p->err, FR_EINVAL, "invalid-sql",
                      "syntax error at line %lld, column %lld: %s", (long long)p->err->line,
                      (long long)p->err->column, msg);
    return false;
}

bool sql__syntax(struct sql_parser *p, const struct sql_token *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsyntax(p, t, fmt, ap);
    va_end(ap);
    return false;
}

bool sql__expected(struct sql_parser *p, const struct sql_token *t, const char *what)
{
    /* "FROM t WHER x": WHER was taken as t's alias; the error is at WHER. */
    if (p->alias_tok >= 0 && p->alias_tok + 1 < p->ntoks && t == &p->toks[p->alias_tok + 1]) {
        const struct sql_token *a = &p->toks[p->alias_tok];
        const char *kw = a->kind == SQL_T_WORD ? sql__near_keyword(a->text) : NULL;
        if (kw) {
            char found[64];
            describe(p, a, found, sizeof found);
            return sql__syntax(p, a, "expected %s but found %s; did you mean %s?", what, found, kw);
        }
    }
    char found[64];
    describe(p, t, found, sizeof found);
    const char *kw = t->kind == SQL_T_WORD ? sql__near_keyword(t->text) : NULL;
    if (kw)
        return sql__syntax(p, t, "expected %s but found %s; did you mean %s?", what, found, kw);
    return sql__syntax(p, t, "expected %s but found %s", what, found);
}

bool sql__unsupported(struct sql_parser *p, int64_t pos, const char *fmt, ...)
{
    if (p->failed)
        return false;
    p->failed = true;
    p->status = FR_EVALIDATION;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sql_error_at(p->err, FR_EVALIDATION, "unsupported-sql", p->text, pos, "%s", msg);
    return false;
}

bool sql__close_paren(struct sql_parser *p, const struct sql_token *open)
{
    if (sql__accept_op(p, ')'))
        return true;
    int64_t line, col;
    sql__line_col(p->text, open->pos, &line, &col);
    char what[96];
    snprintf(what, sizeof what, "')' to close the '(' at line %lld, column %lld", (long long)line,
             (long long)col);
    return sql__expected(p, sql__peek(p, 0), what);
}

char *sql_error_excerpt(const char *text, int64_t pos)
{
    if (!text || pos < 0 || pos > (int64_t)strlen(text))
        return NULL;
    int64_t start = pos, end = pos;
    while (start > 0 && text[start - 1] != '\n')
        start--;
    while (text[end] && text[end] != '\n' && text[end] != '\r')
        end++;
    /* Keep at most 160 columns: cut the line around pos at character starts. */
    int64_t from = start;
    while (pos - from > 120) {
        from++;
        while (from < pos && ((unsigned char)text[from] & 0xC0) == 0x80)
            from++;
    }
    int64_t to = from, cols = 0;
    while (to < end && cols < 160) {
        to++;
        while (to < end && ((unsigned char)text[to] & 0xC0) == 0x80)
            to++;
        cols++;
    }
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_append(&b, text + from, (size_t)(to - from));
    fr_buf_putc(&b, '\n');
    for (int64_t k = from; k < pos; k++) {
        unsigned char ch = (unsigned char)text[k];
        if (ch == '\t')
            fr_buf_putc(&b, '\t');
        else if ((ch & 0xC0) != 0x80)
            fr_buf_putc(&b, ' ');
    }
    fr_buf_putc(&b, '^');
    return fr_buf_steal(&b, NULL);
}
