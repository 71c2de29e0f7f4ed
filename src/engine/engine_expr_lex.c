/* engine_expr_lex: the tokenizer of the expression language. It turns the
 * text into an array of tokens with byte positions, decoding 'strings' and
 * "names" (doubled quotes escape) and numbers (an integer that overflows
 * int64 becomes a float64). */
#include "engine_expr_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *df__tok_desc(enum df__tok k)
{
    switch (k) {
    case DF__T_EOF:
        return "end of input";
    case DF__T_IDENT:
        return "a name";
    case DF__T_QIDENT:
        return "a quoted name";
    case DF__T_INT:
    case DF__T_FLOAT:
        return "a number";
    case DF__T_STRING:
        return "a string";
    case DF__T_LPAREN:
        return "'('";
    case DF__T_RPAREN:
        return "')'";
    case DF__T_COMMA:
        return "','";
    case DF__T_PLUS:
        return "'+'";
    case DF__T_MINUS:
        return "'-'";
    case DF__T_STAR:
        return "'*'";
    case DF__T_SLASH:
        return "'/'";
    case DF__T_PERCENT:
        return "'%'";
    case DF__T_EQ:
        return "'='";
    case DF__T_NE:
        return "'!='";
    case DF__T_LT:
        return "'<'";
    case DF__T_LE:
        return "'<='";
    case DF__T_GT:
        return "'>'";
    case DF__T_GE:
        return "'>='";
    }
    return "a token";
}

void df__tokens_free(struct df__token *toks, int ntoks)
{
    if (!toks)
        return;
    for (int i = 0; i < ntoks; i++)
        free(toks[i].text);
    free(toks);
}

/* Decodes a quoted run starting at text[i] (the opening quote q); a doubled
 * quote is one quote. Sets *end past the closing quote; -1 if unterminated. */
static int lex_quoted(const char *text, int64_t i, char q, struct df__token *t, int64_t *end)
{
    struct fr_buf b;
    fr_buf_init(&b);
    int64_t j = i + 1;
    for (;;) {
        if (text[j] == '\0') {
            fr_buf_cleanup(&b);
            return -1;
        }
        if (text[j] == q) {
            if (text[j + 1] != q)
                break;
            j++;
        }
        fr_buf_putc(&b, text[j]);
        j++;
    }
    size_t len = 0;
    t->text = fr_buf_steal(&b, &len);
    t->slen = (int64_t)len;
    *end = j + 1;
    return 0;
}

static void lex_number(const char *text, int64_t i, struct df__token *t, int64_t *end)
{
    int64_t j = i;
    bool is_float = false;
    while (isdigit((unsigned char)text[j]))
        j++;
    if (text[j] == '.') {
        is_float = true;
        j++;
        while (isdigit((unsigned char)text[j]))
            j++;
    }
    if ((text[j] == 'e' || text[j] == 'E') &&
        (isdigit((unsigned char)text[j + 1]) ||
         ((text[j + 1] == '+' || text[j + 1] == '-') && isdigit((unsigned char)text[j + 2])))) {
        is_float = true;
        j += 2;
        while (isdigit((unsigned char)text[j]))
            j++;
    }
    char *tmp = fr_xstrndup(text + i, (size_t)(j - i));
    if (!is_float) {
        errno = 0;
        long long v = strtoll(tmp, NULL, 10);
        if (errno == ERANGE) {
            is_float = true;
        } else {
            t->kind = DF__T_INT;
            t->ival = v;
        }
    }
    if (is_float) {
        t->kind = DF__T_FLOAT;
        t->fval = strtod(tmp, NULL);
    }
    free(tmp);
    *end = j;
}

/* Operators and punctuation; returns the length matched, 0 if none. */
static int lex_punct(const char *p, enum df__tok *kind)
{
    static const struct {
        const char *s;
        enum df__tok k;
    } ops[] = {
        {"<=", DF__T_LE},    {">=", DF__T_GE},    {"<>", DF__T_NE},   {"!=", DF__T_NE},
        {"==", DF__T_EQ},    {"=", DF__T_EQ},     {"<", DF__T_LT},    {">", DF__T_GT},
        {"(", DF__T_LPAREN}, {")", DF__T_RPAREN}, {",", DF__T_COMMA}, {"+", DF__T_PLUS},
        {"-", DF__T_MINUS},  {"*", DF__T_STAR},   {"/", DF__T_SLASH}, {"%", DF__T_PERCENT},
    };
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        size_t n = strlen(ops[k].s);
        if (strncmp(p, ops[k].s, n) == 0) {
            *kind = ops[k].k;
            return (int)n;
        }
    }
    return 0;
}

static int lex_one(const char *text, int64_t i, struct df__token *t, int64_t *end,
                   struct fr_error *err)
{
    char ch = text[i];
    t->pos = i;
    if (ch == '\'' || ch == '"') {
        t->kind = ch == '\'' ? DF__T_STRING : DF__T_QIDENT;
        if (lex_quoted(text, i, ch, t, end) != 0) {
            err->position = i;
            return fr_error_set(err, FR_EINVAL, "unterminated %s starting at position %lld",
                                ch == '\'' ? "string" : "quoted name", (long long)i);
        }
        return FR_OK;
    }
    if (isdigit((unsigned char)ch) || (ch == '.' && isdigit((unsigned char)text[i + 1]))) {
        lex_number(text, i, t, end);
        return FR_OK;
    }
    if (isalpha((unsigned char)ch) || ch == '_') {
        int64_t j = i;
        while (isalnum((unsigned char)text[j]) || text[j] == '_')
            j++;
        t->kind = DF__T_IDENT;
        t->text = fr_xstrndup(text + i, (size_t)(j - i));
        t->slen = j - i;
        *end = j;
        return FR_OK;
    }
    int n = lex_punct(text + i, &t->kind);
    if (n == 0) {
        err->position = i;
        if ((unsigned char)ch >= 0x80 || !isprint((unsigned char)ch))
            return fr_error_set(err, FR_EINVAL, "unexpected byte 0x%02x at position %lld",
                                (unsigned char)ch, (long long)i);
        return fr_error_set(err, FR_EINVAL, "unexpected character '%c' at position %lld", ch,
                            (long long)i);
    }
    *end = i + n;
    return FR_OK;
}

int df__lex(const char *text, struct df__token **toks, int *ntoks, struct fr_error *err)
{
    int result = FR_EINVAL;
    int n = 0, cap = 16;
    struct df__token *v = fr_xcalloc((size_t)cap, sizeof(*v));
    int64_t i = 0;
    for (;;) {
        while (isspace((unsigned char)text[i]))
            i++;
        if (n + 1 >= cap) {
            v = fr_xrealloc(v, sizeof(*v) * (size_t)cap * 2);
            memset(v + cap, 0, sizeof(*v) * (size_t)cap);
            cap *= 2;
        }
        if (text[i] == '\0') {
            v[n].kind = DF__T_EOF;
            v[n].pos = i;
            n++;
            break;
        }
        int64_t end = i;
        if (lex_one(text, i, &v[n], &end, err) != FR_OK) {
            n++;
            goto out;
        }
        v[n].len = end - i;
        n++;
        i = end;
    }
    *toks = v;
    *ntoks = n;
    v = NULL;
    result = FR_OK;
out:
    df__tokens_free(v, n);
    return result;
}
