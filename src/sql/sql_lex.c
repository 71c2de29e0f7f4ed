/* sql_lex: SQL text into tokens. Words keep their text as written (the
 * parser and compiler compare keywords and names case-insensitively);
 * "quoted" identifiers and 'strings' are unescaped ("" and ''); comments
 * (-- and nested slash-star) are skipped. Every token keeps its byte span. */
#include "sql_parse_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct lexer {
    const char *text;
    size_t len;
    size_t i;
    struct sql_lexed *out;
    struct fr_error *err;
};

static int lex_error(struct lexer *lx, size_t pos, const char *what)
{
    int64_t line, col;
    sql__line_col(lx->text, (int64_t)pos, &line, &col);
    fr_error_setk(lx->err, FR_EINVAL, "invalid-sql", "syntax error at line %lld, column %lld: %s",
                  (long long)line, (long long)col, what);
    if (lx->err) {
        lx->err->position = (int64_t)pos;
        lx->err->line = line;
        lx->err->column = col;
    }
    return FR_EINVAL;
}

static bool is_word_start(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool is_word_char(unsigned char c)
{
    return is_word_start(c) || (c >= '0' && c <= '9') || c == '$';
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Skips blanks and comments; an error for an unterminated block comment. */
static int skip_space(struct lexer *lx)
{
    for (;;) {
        while (lx->i < lx->len && strchr(" \t\n\r\f\v", lx->text[lx->i]))
            lx->i++;
        if (lx->i + 1 < lx->len && lx->text[lx->i] == '-' && lx->text[lx->i + 1] == '-') {
            while (lx->i < lx->len && lx->text[lx->i] != '\n')
                lx->i++;
            continue;
        }
        if (lx->i + 1 < lx->len && lx->text[lx->i] == '/' && lx->text[lx->i + 1] == '*') {
            size_t start = lx->i;
            int depth = 0;
            do {
                if (lx->i + 1 < lx->len && lx->text[lx->i] == '/' && lx->text[lx->i + 1] == '*')
                    depth++, lx->i += 2;
                else if (lx->i + 1 < lx->len && lx->text[lx->i] == '*' &&
                         lx->text[lx->i + 1] == '/')
                    depth--, lx->i += 2;
                else if (lx->i < lx->len)
                    lx->i++;
                else
                    return lex_error(lx, start, "unterminated comment: '/*' has no '*/'");
            } while (depth > 0);
            continue;
        }
        return FR_OK;
    }
}

/* A quoted run ('..' or ".."): the doubled quote is one quote. */
static int lex_quoted(struct lexer *lx, struct sql_token *t, char q)
{
    struct fr_buf b;
    fr_buf_init(&b);
    size_t start = lx->i++;
    for (;;) {
        if (lx->i >= lx->len) {
            fr_buf_cleanup(&b);
            return lex_error(lx, start,
                             q == '\'' ? "unterminated string: the quote ' is not closed"
                                       : "unterminated identifier: the quote \" is not closed");
        }
        char c = lx->text[lx->i++];
        if (c == q) {
            if (lx->i < lx->len && lx->text[lx->i] == q) {
                lx->i++;
            } else {
                break;
            }
        }
        fr_buf_putc(&b, c);
    }
    if (q == '"' && b.len == 0) {
        fr_buf_cleanup(&b);
        return lex_error(lx, start, "a quoted identifier may not be empty (\"\")");
    }
    t->kind = q == '\'' ? SQL_T_STRING : SQL_T_QIDENT;
    t->text = b.data ? fr_buf_steal(&b, NULL) : fr_xstrdup("");
    return FR_OK;
}

/* digits [. digits] [e [+-] digits], or . digits. An int over int64 is a float. */
static int lex_number(struct lexer *lx, struct sql_token *t)
{
    size_t s = lx->i;
    bool flt = false;
    while (lx->i < lx->len && is_digit((unsigned char)lx->text[lx->i]))
        lx->i++;
    if (lx->i < lx->len && lx->text[lx->i] == '.') {
        flt = true;
        lx->i++;
        while (lx->i < lx->len && is_digit((unsigned char)lx->text[lx->i]))
            lx->i++;
    }
    if (lx->i < lx->len && (lx->text[lx->i] == 'e' || lx->text[lx->i] == 'E')) {
        size_t k = lx->i + 1;
        if (k < lx->len && (lx->text[k] == '+' || lx->text[k] == '-'))
            k++;
        if (k < lx->len && is_digit((unsigned char)lx->text[k])) {
            flt = true;
            while (k < lx->len && is_digit((unsigned char)lx->text[k]))
                k++;
            lx->i = k;
        }
    }
    t->text = fr_xstrndup(lx->text + s, lx->i - s);
    if (!flt) {
        errno = 0;
        char *end = NULL;
        long long v = strtoll(t->text, &end, 10);
        if (errno == 0 && end && *end == '\0') {
            t->kind = SQL_T_INT;
            t->ival = v;
            t->fval = (double)v;
            return FR_OK;
        }
    }
    t->kind = SQL_T_FLOAT;
    t->fval = strtod(t->text, NULL);
    return FR_OK;
}

static int lex_op(struct lexer *lx, struct sql_token *t)
{
    static const struct {
        const char *s;
        int op;
    } two[] = {{"<>", SQL_TOP_NE}, {"!=", SQL_TOP_NE},     {"<=", SQL_TOP_LE},
               {">=", SQL_TOP_GE}, {"||", SQL_TOP_CONCAT}, {"::", SQL_TOP_DOUBLECOLON}};
    t->kind = SQL_T_OP;
    if (lx->i + 1 < lx->len) {
        for (size_t k = 0; k < sizeof two / sizeof two[0]; k++) {
            if (lx->text[lx->i] == two[k].s[0] && lx->text[lx->i + 1] == two[k].s[1]) {
                t->op = two[k].op;
                lx->i += 2;
                return FR_OK;
            }
        }
    }
    unsigned char c = (unsigned char)lx->text[lx->i];
    if (c && strchr("=<>+-*/%(),.;", c)) {
        t->op = c;
        lx->i++;
        return FR_OK;
    }
    char msg[96];
    if (c >= 0x20 && c < 0x7f)
        snprintf(msg, sizeof msg, "unexpected character '%c'", c);
    else
        snprintf(msg, sizeof msg, "unexpected byte 0x%02x", c);
    return lex_error(lx, lx->i, msg);
}

static int lex_one(struct lexer *lx, struct sql_token *t)
{
    unsigned char c = (unsigned char)lx->text[lx->i];
    if (is_word_start(c)) {
        size_t s = lx->i;
        while (lx->i < lx->len && is_word_char((unsigned char)lx->text[lx->i]))
            lx->i++;
        t->kind = SQL_T_WORD;
        t->text = fr_xstrndup(lx->text + s, lx->i - s);
        return FR_OK;
    }
    if (c == '\'' || c == '"')
        return lex_quoted(lx, t, (char)c);
    if (is_digit(c) ||
        (c == '.' && lx->i + 1 < lx->len && is_digit((unsigned char)lx->text[lx->i + 1])))
        return lex_number(lx, t);
    return lex_op(lx, t);
}

static int lex_bounds(struct lexer *lx)
{
    if (lx->len > SQL_MAX_TEXT_BYTES)
        return fr_error_setk(lx->err, FR_EINVAL, "invalid-sql",
                             "the SQL text is %zu bytes, over the bound of %d bytes "
                             "(SQL_MAX_TEXT_BYTES)",
                             lx->len, SQL_MAX_TEXT_BYTES);
    const char *nul = memchr(lx->text, '\0', lx->len);
    if (nul)
        return lex_error(lx, (size_t)(nul - lx->text), "the SQL text contains a NUL byte");
    return FR_OK;
}

int sql__lex(const char *text, size_t len, struct sql_lexed *out, struct fr_error *err)
{
    struct lexer lx = {.text = text, .len = len, .out = out, .err = err};
    memset(out, 0, sizeof *out);
    int rc = lex_bounds(&lx);
    while (rc == FR_OK) {
        rc = skip_space(&lx);
        if (rc != FR_OK)
            break;
        if (out->ntoks >= SQL_MAX_TOKENS && lx.i < len) { /* the end token is not counted */
            rc = lex_error(&lx, lx.i,
                           "the statement has more tokens than the bound of 65536 "
                           "(SQL_MAX_TOKENS)");
            break;
        }
        out->toks = sql__grow(out->toks, out->ntoks, sizeof *out->toks);
        struct sql_token *t = &out->toks[out->ntoks++];
        memset(t, 0, sizeof *t);
        t->pos = (int64_t)lx.i;
        if (lx.i >= len) {
            t->kind = SQL_T_EOF;
            t->end = t->pos;
            return FR_OK;
        }
        rc = lex_one(&lx, t);
        t->end = (int64_t)lx.i;
    }
    sql__lexed_cleanup(out);
    return rc;
}

void sql__lexed_cleanup(struct sql_lexed *lx)
{
    for (int k = 0; k < lx->ntoks; k++)
        free(lx->toks[k].text);
    free(lx->toks);
    lx->toks = NULL;
    lx->ntoks = 0;
}
