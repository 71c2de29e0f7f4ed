/* engine_window_parse: the text of one window function ("lag(x, 2, 0) as p")
 * split into its name, arguments and alias, checked and bound against the
 * input's schema. Arguments are expressions of the expression language; the
 * offset and default of lag/lead are literals. */
#include "engine_expr_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const func_names[] = {
    "row_number", "rank", "dense_rank", "lag", "lead", "sum", "avg", "min", "max", "count", "count",
};

const char *df_window_func_name(enum df_window_func f)
{
    return (unsigned)f < sizeof(func_names) / sizeof(func_names[0]) ? func_names[f] : "?";
}

void df_window_call_cleanup(struct df_window_call *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->arg_text);
    free(c->default_text);
    df_column_unref(c->dflt);
    memset(c, 0, sizeof(*c));
    c->arg = -1;
}

static int syntax(struct fr_error *err, const char *text, const char *why)
{
    fr_error_setk(err, FR_EINVAL, "invalid-expression",
                  "window function '%s': %s (like \"rank() as r\" or \"lag(x, 1, 0) as prev\")",
                  text, why);
    snprintf(err->field, sizeof(err->field), "%s", text);
    return FR_EINVAL;
}

/* The end of the argument list that opens at text[open] ('('): the index of
 * its ')', skipping 'strings' and "identifiers"; commas at depth 1 go into
 * commas (the first cap of them) and are counted in *ncommas. -1 when
 * unbalanced. */
static int64_t close_paren(const char *text, int64_t open, int64_t *commas, int *ncommas, int cap)
{
    int depth = 0;
    for (int64_t i = open; text[i]; i++) {
        char c = text[i];
        if (c == '\'' || c == '"') {
            for (i++; text[i] && !(text[i] == c && text[i + 1] != c); i++)
                if (text[i] == c)
                    i++; /* a doubled quote */
            if (!text[i])
                return -1;
        } else if (c == '(') {
            depth++;
        } else if (c == ')' && --depth == 0) {
            return i;
        } else if (c == ',' && depth == 1) {
            if (*ncommas < cap)
                commas[*ncommas] = i;
            (*ncommas)++; /* past cap: counted (an argument count error), not kept */
        }
    }
    return -1;
}

/* new: text[a, b) trimmed. */
static char *trimmed(const char *text, int64_t a, int64_t b)
{
    while (a < b && isspace((unsigned char)text[a]))
        a++;
    while (b > a && isspace((unsigned char)text[b - 1]))
        b--;
    return fr_xstrndup(text + a, (size_t)(b - a));
}

/* The alias after the closing parenthesis: nothing, or "as" then a word or a
 * "quoted" name. *alias is new, NULL when there is none. */
static int parse_alias(const char *text, const char *rest, char **alias, struct fr_error *err)
{
    *alias = NULL;
    while (isspace((unsigned char)*rest))
        rest++;
    if (!*rest)
        return FR_OK;
    if (strncasecmp(rest, "as", 2) != 0 || !isspace((unsigned char)rest[2]))
        return syntax(err, text, "only 'as alias' may follow the call");
    rest += 3;
    while (isspace((unsigned char)*rest))
        rest++;
    struct fr_buf b;
    fr_buf_init(&b);
    if (*rest == '"') {
        for (rest++; *rest && !(*rest == '"' && rest[1] != '"'); rest++) {
            if (*rest == '"')
                rest++;
            fr_buf_putc(&b, *rest);
        }
        if (*rest == '"')
            rest++;
        else
            b.len = 0;
    } else {
        for (; isalnum((unsigned char)*rest) || *rest == '_'; rest++)
            fr_buf_putc(&b, *rest);
    }
    while (isspace((unsigned char)*rest))
        rest++;
    if (b.len == 0 || *rest) {
        fr_buf_cleanup(&b);
        return syntax(err, text, "the alias must be a word or a \"quoted\" name");
    }
    *alias = fr_buf_steal(&b, NULL);
    return FR_OK;
}

static int unknown_function(const char *text, const char *name, struct fr_error *err)
{
    static const char *const cands[] = {"row_number", "rank", "dense_rank", "lag", "lead", "sum",
                                        "avg",        "mean", "min",        "max", "count"};
    const char *sug = df__suggest(name, cands, (int)(sizeof(cands) / sizeof(cands[0])));
    fr_error_setk(err, FR_EINVAL, "invalid-expression",
                  "unknown window function '%s' in '%s'%s%s%s (row_number, rank, dense_rank, "
                  "lag, lead, sum, avg, min, max, count)",
                  name, text, sug ? "; did you mean '" : "", sug ? sug : "", sug ? "'?" : "");
    snprintf(err->field, sizeof(err->field), "%s", name);
    return FR_EINVAL;
}

static int lookup_function(const char *text, const char *name, enum df_window_func *f,
                           struct fr_error *err)
{
    for (int i = 0; i <= DF_WIN_COUNT; i++) {
        if (strcasecmp(name, func_names[i]) == 0) {
            *f = (enum df_window_func)i;
            return FR_OK;
        }
    }
    if (strcasecmp(name, "mean") == 0) {
        *f = DF_WIN_AVG;
        return FR_OK;
    }
    return unknown_function(text, name, err);
}

static int plan_error(struct fr_error *err, const char *member, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int plan_error(struct fr_error *err, const char *member, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fr_error_vsetk(err, FR_EINVAL, "invalid-plan", fmt, ap);
    va_end(ap);
    snprintf(err->field, sizeof(err->field), "%s", member);
    return FR_EINVAL;
}

static int parse_offset(struct df_window_call *c, const char *s, struct fr_error *err)
{
    const char *fn = df_window_func_name(c->func);
    int64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9' && v <= DF_WINDOW_MAX_OFFSET; p++)
        v = v * 10 + (*p - '0');
    if (p == s || *p || v > DF_WINDOW_MAX_OFFSET)
        return plan_error(err, "offset", "%s offset '%s' must be an integer literal from 0 to %d",
                          fn, s, DF_WINDOW_MAX_OFFSET);
    c->offset = v;
    return FR_OK;
}

/* The default of lag/lead: a literal, evaluated once, of the argument's
 * type (an integer default of a float64 argument is widened). */
static int parse_default(struct df_window_call *c, const char *s, struct fr_error *err)
{
    const char *fn = df_window_func_name(c->func);
    struct df_schema none;
    df_schema_init(&none);
    df_expr *e = NULL;
    struct fr_error perr;
    fr_error_init(&perr);
    if (df_expr_parse(s, &none, &e, &perr) != FR_OK)
        return plan_error(err, "default", "%s default '%s' must be a literal (%s)", fn, s,
                          perr.message);
    df_type t = strcasecmp(s, "null") == 0 ? DF_TYPE_NULL : df_expr_type(e); /* typed bool */
    bool widen = t == DF_TYPE_INT64 && c->arg_type == DF_TYPE_FLOAT64;
    int rc = FR_OK;
    if (t != DF_TYPE_NULL && t != c->arg_type && !widen) {
        rc = fr_error_setk(err, FR_EINVAL, "invalid-plan",
                           "%s default '%s' is %s, but its argument is %s; give a literal of "
                           "type %s",
                           fn, s, df_type_name(t), df_type_name(c->arg_type),
                           df_type_name(c->arg_type));
        snprintf(err->field, sizeof(err->field), "default");
    } else if (t != DF_TYPE_NULL) {
        struct df_options o;
        memset(&o, 0, sizeof(o));
        struct df_exec ex;
        df_exec_init(&ex, &o, NULL);
        struct df_table *one = df_table_new();
        one->nrows = 1;
        struct df_column *v = NULL;
        rc = df_expr_eval(e, one, 0, 1, &ex, &v, err);
        df_table_free(one);
        if (rc == FR_OK && df_column_is_valid(v, 0)) {
            c->dflt = df_column_new(c->arg_type, 1);
            if (widen)
                df_column_append_float64(c->dflt, (double)df_column_int64(v, 0));
            else
                df_column_append_from(c->dflt, v, 0);
        }
        df_column_unref(v);
    }
    df_expr_free(e);
    if (rc == FR_OK)
        c->default_text = fr_xstrdup(s);
    return rc;
}

/* The argument: bound against schema; its type decides the result's. */
static int bind_arg(struct df_window_call *c, const char *text, const char *s,
                    const struct df_schema *schema, struct fr_error *err)
{
    df_expr *e = NULL;
    int rc = df_expr_parse(s, schema, &e, err);
    if (rc != FR_OK) {
        if (!err->kind[0])
            snprintf(err->kind, sizeof(err->kind), "invalid-expression");
        return rc;
    }
    c->arg_text = fr_xstrdup(s);
    c->arg = df_expr_column_index(e);
    c->arg_type = strcasecmp(s, "null") == 0 ? DF_TYPE_NULL : df_expr_type(e); /* typed bool */
    df_expr_free(e);
    bool numeric = c->arg_type == DF_TYPE_INT64 || c->arg_type == DF_TYPE_FLOAT64;
    if ((c->func == DF_WIN_SUM || c->func == DF_WIN_AVG) && !numeric) {
        fr_error_setk(err, FR_EINVAL, "invalid-expression",
                      "window function '%s': %s needs a numeric argument, not %s", text,
                      df_window_func_name(c->func), df_type_name(c->arg_type));
        return FR_EINVAL;
    }
    if (c->arg_type == DF_TYPE_NULL) {
        fr_error_setk(err, FR_EINVAL, "invalid-expression",
                      "window function '%s': the argument is a bare null; cast it to a type", text);
        return FR_EINVAL;
    }
    return FR_OK;
}

static df_type result_type(const struct df_window_call *c)
{
    switch (c->func) {
    case DF_WIN_AVG:
        return DF_TYPE_FLOAT64;
    case DF_WIN_SUM:
    case DF_WIN_MIN:
    case DF_WIN_MAX:
    case DF_WIN_LAG:
    case DF_WIN_LEAD:
        return c->arg_type;
    default:
        return DF_TYPE_INT64;
    }
}

/* Checks the argument count of c->func and binds args[0..nargs). */
static int parse_args(struct df_window_call *c, const char *text, char **args, int nargs,
                      const struct df_schema *schema, struct fr_error *err)
{
    enum df_window_func f = c->func;
    const char *fn = df_window_func_name(f);
    int lo = 1, hi = 1;
    if (f == DF_WIN_ROW_NUMBER || f == DF_WIN_RANK || f == DF_WIN_DENSE_RANK)
        lo = hi = 0;
    else if (f == DF_WIN_LAG || f == DF_WIN_LEAD)
        hi = 3;
    if (f == DF_WIN_COUNT && nargs == 1 && strcmp(args[0], "*") == 0) {
        c->func = DF_WIN_COUNT_STAR;
        return FR_OK;
    }
    if (nargs < lo || nargs > hi) {
        char why[160];
        snprintf(why, sizeof(why), "%s takes %s", fn,
                 hi == 0   ? "no arguments"
                 : hi == 1 ? (f == DF_WIN_COUNT ? "one argument or *" : "one argument")
                           : "an expression, then optionally an offset and a default");
        return syntax(err, text, why);
    }
    c->offset = 1;
    int rc = nargs ? bind_arg(c, text, args[0], schema, err) : FR_OK;
    if (rc == FR_OK && nargs > 1)
        rc = parse_offset(c, args[1], err);
    if (rc == FR_OK && nargs > 2)
        rc = parse_default(c, args[2], err);
    return rc;
}

int df_window_call_parse(const char *text, const struct df_schema *schema,
                         struct df_window_call *out, struct fr_error *err)
{
    memset(out, 0, sizeof(*out));
    out->arg = -1;
    int64_t i = 0, commas[4];
    int ncommas = 0;
    while (isspace((unsigned char)text[i]))
        i++;
    int64_t name_at = i;
    while (isalnum((unsigned char)text[i]) || text[i] == '_')
        i++;
    char *fname = fr_xstrndup(text + name_at, (size_t)(i - name_at));
    while (isspace((unsigned char)text[i]))
        i++;
    int64_t close = text[i] == '(' ? close_paren(text, i, commas, &ncommas, 4) : -1;
    char *alias = NULL, *args[4] = {NULL, NULL, NULL, NULL};
    int rc, nargs = 0;
    if (!fname[0] || close < 0)
        rc =
            syntax(err, text, "a window function is a call name(args), then optionally 'as alias'");
    else
        rc = lookup_function(text, fname, &out->func, err);
    if (rc == FR_OK)
        rc = parse_alias(text, text + close + 1, &alias, err);
    if (rc == FR_OK) {
        int64_t from = i + 1;
        for (int k = 0; k <= ncommas && k < 4; k++) {
            int64_t to = k < ncommas ? commas[k] : close;
            args[nargs++] = trimmed(text, from, to);
            from = to + 1;
        }
        if (nargs == 1 && !args[0][0])
            nargs = 0;
        if (ncommas >= 4)
            nargs = ncommas + 1; /* too many: parse_args reports the count */
        rc = parse_args(out, text, args, nargs, schema, err);
    }
    if (rc == FR_OK) {
        out->type = result_type(out);
        out->name = alias ? alias : trimmed(text, 0, (int64_t)strlen(text));
        alias = NULL;
    }
    for (int k = 0; k < 4; k++)
        free(args[k]);
    free(alias);
    free(fname);
    return rc;
}
