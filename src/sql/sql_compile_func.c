/* sql_compile_func: SQL function calls and binary operators in the
 * expression language: the scalar functions it has (some under SQL's other
 * names), EXTRACT, NULLIF, and date literal +/- INTERVAL folded here. */
#include "sql_compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* SQL names of the expression language's scalar functions. */
static const struct {
    const char *sql, *engine;
    int min_args, max_args;
} scalars[] = {
    {"coalesce", "coalesce", 1, 64},
    {"ifnull", "coalesce", 2, 2},
    {"abs", "abs", 1, 1},
    {"round", "round", 1, 2},
    {"floor", "floor", 1, 1},
    {"ceil", "ceil", 1, 1},
    {"ceiling", "ceil", 1, 1},
    {"lower", "lower", 1, 1},
    {"lcase", "lower", 1, 1},
    {"upper", "upper", 1, 1},
    {"ucase", "upper", 1, 1},
    {"length", "length", 1, 1},
    {"char_length", "length", 1, 1},
    {"character_length", "length", 1, 1},
    {"strlen", "length", 1, 1},
    {"substr", "substr", 2, 3},
    {"substring", "substr", 2, 3},
    {"contains", "contains", 2, 2},
    {"starts_with", "starts_with", 2, 2},
    {"prefix", "starts_with", 2, 2},
    {"ends_with", "ends_with", 2, 2},
    {"suffix", "ends_with", 2, 2},
    {"year", "year", 1, 1},
    {"month", "month", 1, 1},
    {"day", "day", 1, 1},
    {"current_config_id", "current_config_id", 0, 0},
    {"concat", "concat", 1, 64},
};
#define NSCALARS ((int)(sizeof(scalars) / sizeof(scalars[0])))

/* Functions of DuckDB and PostgreSQL that framed does not have: refused by
 * name (422), where another name is a 400 with the nearest one. */
static const char *const elsewhere[] = {
    "trim",
    "ltrim",
    "rtrim",
    "replace",
    "concat_ws",
    "split_part",
    "regexp_matches",
    "regexp_replace",
    "regexp_extract",
    "strftime",
    "strptime",
    "date_trunc",
    "date_diff",
    "datediff",
    "date_add",
    "date_sub",
    "now",
    "current_date",
    "current_timestamp",
    "to_char",
    "to_date",
    "to_timestamp",
    "position",
    "strpos",
    "instr",
    "left",
    "right",
    "lpad",
    "rpad",
    "repeat",
    "reverse",
    "md5",
    "sha256",
    "hash",
    "sqrt",
    "cbrt",
    "power",
    "pow",
    "exp",
    "ln",
    "log",
    "log10",
    "log2",
    "sin",
    "cos",
    "tan",
    "atan",
    "sign",
    "random",
    "trunc",
    "string_agg",
    "array_agg",
    "list",
    "group_concat",
    "listagg",
    "var_samp",
    "var_pop",
    "variance",
    "stddev_pop",
    "bool_and",
    "bool_or",
    "every",
    "product",
    "mode",
    "quantile",
    "quantile_cont",
    "quantile_disc",
    "percentile_cont",
    "percentile_disc",
    "approx_count_distinct",
    "arg_max",
    "arg_min",
    "max_by",
    "min_by",
    "ntile",
    "percent_rank",
    "cume_dist",
    "first_value",
    "last_value",
    "nth_value",
    "dayofweek",
    "dayofyear",
    "week",
    "quarter",
    "hour",
    "minute",
    "second",
    "epoch",
    "age",
    "make_date",
    "regexp_like",
    "ascii",
    "chr",
    "initcap",
    "translate",
    "octet_length",
    "bit_length",
    "uuid",
    "gen_random_uuid",
    "typeof",
    "if",
    "iif",
    "nvl",
    "decode",
    "array_length",
};

static int unknown_function(struct sc_ex *x, const struct sql_expr *e)
{
    for (size_t i = 0; i < sizeof(elsewhere) / sizeof(elsewhere[0]); i++)
        if (strcasecmp(e->name.text, elsewhere[i]) == 0)
            return sc__unsupported(x->c, e->pos, "the function %s is not supported", e->name.text);
    const char *best = NULL;
    int best_d = 3;
    for (int i = 0; i < NSCALARS; i++) {
        int d = fr_edit_distance(e->name.text, scalars[i].sql);
        if (d >= 0 && d < best_d)
            best = scalars[i].sql, best_d = d;
    }
    return sc__invalid(x->c, e->pos, "unknown function '%s'%s%s%s", e->name.text,
                       best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
}

static int call(struct sc_ex *x, const char *name, const struct sql_expr *e, struct fr_buf *b)
{
    fr_buf_printf(b, "%s(", name);
    for (int i = 0; i < e->nargs; i++) {
        if (i)
            fr_buf_puts(b, ", ");
        int rc = sc__expr(x, e->args[i], b);
        if (rc != FR_OK)
            return rc;
    }
    fr_buf_puts(b, ")");
    return FR_OK;
}

static int extract(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    if (e->nargs != 2 || e->args[0]->kind != SQL_E_STRING)
        return sc__invalid(x->c, e->pos, "%s needs a field and a value", e->name.text);
    const char *f = e->args[0]->text ? e->args[0]->text : "";
    const char *fn = strcasecmp(f, "year") == 0    ? "year"
                     : strcasecmp(f, "month") == 0 ? "month"
                     : strcasecmp(f, "day") == 0   ? "day"
                                                   : NULL;
    if (!fn)
        return sc__unsupported(x->c, e->args[0]->pos,
                               "%s(%s ...) is not supported (year, month or day)", e->name.text, f);
    fr_buf_printf(b, "%s(", fn);
    int rc = sc__expr(x, e->args[1], b);
    fr_buf_puts(b, ")");
    return rc;
}

/* nullif(a, b), greatest/least(a, b): case expressions. */
static int rewrite(struct sc_ex *x, const struct sql_expr *e, const char *fmt_op, struct fr_buf *b)
{
    if (e->nargs != 2)
        return sc__invalid(x->c, e->pos, "%s takes 2 arguments, got %d", e->name.text, e->nargs);
    struct fr_buf t;
    fr_buf_init(&t);
    char *a = NULL, *c = NULL;
    int rc = sc__expr_text(x, e->args[0], &a);
    if (rc == FR_OK)
        rc = sc__expr_text(x, e->args[1], &c);
    if (rc == FR_OK && strcmp(fmt_op, "nullif") == 0)
        fr_buf_printf(b, "case when (%s = %s) then null else %s end", a, c, a);
    else if (rc == FR_OK)
        fr_buf_printf(b,
                      "case when %s is null then %s when %s is null then %s when (%s %s %s) "
                      "then %s else %s end",
                      a, c, c, a, a, fmt_op, c, a, c);
    free(a);
    free(c);
    fr_buf_cleanup(&t);
    return rc;
}

int sc__expr_func(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    const char *name = e->name.text ? e->name.text : "";
    if (e->window)
        return sc__invalid(x->c, e->pos, "window functions are not allowed in %s",
                           x->clause ? x->clause : "this place");
    if (sc__is_agg_name(name))
        return sc__invalid(x->c, e->pos, "aggregate functions are not allowed in %s",
                           x->clause ? x->clause : "this place");
    if (e->distinct || e->filter || e->star)
        return sc__invalid(x->c, e->pos, "%s is not an aggregate function", name);
    if (strcasecmp(name, "extract") == 0 || strcasecmp(name, "date_part") == 0 ||
        strcasecmp(name, "datepart") == 0)
        return extract(x, e, b);
    if (strcasecmp(name, "nullif") == 0)
        return rewrite(x, e, "nullif", b);
    if (strcasecmp(name, "greatest") == 0)
        return rewrite(x, e, ">=", b);
    if (strcasecmp(name, "least") == 0)
        return rewrite(x, e, "<=", b);
    for (int i = 0; i < NSCALARS; i++) {
        if (strcasecmp(name, scalars[i].sql) != 0)
            continue;
        if (e->nargs < scalars[i].min_args || e->nargs > scalars[i].max_args)
            return sc__invalid(x->c, e->pos, "%s takes %d to %d arguments, got %d", name,
                               scalars[i].min_args, scalars[i].max_args, e->nargs);
        return call(x, scalars[i].engine, e, b);
    }
    return unknown_function(x, e);
}

/* ---- date literal +/- INTERVAL ---- */

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int days_in_month(int y, int m)
{
    static const int n[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : n[m - 1];
}

static const struct sql_expr *date_literal(const struct sql_expr *e)
{
    if (e->kind == SQL_E_TYPED && e->type_name && strcasecmp(e->type_name, "date") == 0)
        return e;
    if (e->kind == SQL_E_CAST && !e->ival && e->type_name &&
        strcasecmp(e->type_name, "date") == 0 && e->args[0]->kind == SQL_E_STRING)
        return e->args[0];
    return NULL;
}

static int fold_interval(struct sc_ex *x, const struct sql_expr *date, const struct sql_expr *iv,
                         int sign, bool as_date, struct fr_buf *b)
{
    int32_t days;
    const char *s = date->text ? date->text : "";
    if (df_parse_date(s, strlen(s), &days) != 0)
        return sc__invalid(x->c, date->pos, "invalid date literal '%s'", s);
    char *end = NULL;
    long long n = strtoll(iv->text ? iv->text : "", &end, 10);
    const char *unit = iv->unit ? iv->unit : "day";
    if (!end || end == iv->text || (*end && *end != ' '))
        return sc__unsupported(x->c, iv->pos, "INTERVAL '%s' is not supported (a whole number)",
                               iv->text ? iv->text : "");
    if (n > 1000000 || n < -1000000)
        return sc__invalid(x->c, iv->pos, "INTERVAL '%s' is out of range", iv->text);
    n *= sign;
    int y, m, d;
    if (strcasecmp(unit, "day") == 0 || strcasecmp(unit, "week") == 0) {
        civil_from_days((int64_t)days + n * (strcasecmp(unit, "week") == 0 ? 7 : 1), &y, &m, &d);
    } else if (strcasecmp(unit, "month") == 0 || strcasecmp(unit, "year") == 0) {
        civil_from_days(days, &y, &m, &d);
        long long months = (long long)y * 12 + (m - 1) + n * (strcasecmp(unit, "year") ? 1 : 12);
        y = (int)(months / 12);
        m = (int)(months % 12) + 1;
        if (d > days_in_month(y, m))
            d = days_in_month(y, m);
    } else {
        return sc__unsupported(x->c, iv->pos, "INTERVAL in %ss added to a DATE is not supported",
                               unit);
    }
    /* DuckDB: date + interval is a timestamp; compared with a date, midnight
     * of a day is that day, and a date literal spares a cast per row */
    if (as_date)
        fr_buf_printf(b, "date '%04d-%02d-%02d'", y, m, d);
    else
        fr_buf_printf(b, "timestamp '%04d-%02d-%02d 00:00:00'", y, m, d);
    return FR_OK;
}

static const char *op_text(int op)
{
    static const char *const t[] = {"+",  "-", "*",  "/", "%",  "||",  "=",
                                    "!=", "<", "<=", ">", ">=", "and", "or"};
    return op >= 0 && op <= SQL_OP_OR ? t[op] : "?";
}

/* ---- decimal literals: 0.06 - 0.01 is 0.05 exactly, as SQL's DECIMAL ---- */

#define DEC_LIMIT 100000000000000000LL /* 1e17: mantissas stay well inside int64 */

static bool dec_scale_up(int64_t *m, int *scale, int to)
{
    while (*scale < to) {
        if (*m > DEC_LIMIT / 10 || *m < -DEC_LIMIT / 10)
            return false;
        *m *= 10;
        (*scale)++;
    }
    return true;
}

/* e as mantissa * 10^-scale when it is a literal or +, -, * of literals;
 * *has_frac when some literal had a fraction. */
static bool dec_value(const struct sql_expr *e, int64_t *m, int *scale, bool *has_frac)
{
    if (e->kind == SQL_E_INT) {
        *m = e->ival;
        *scale = 0;
        return e->ival < DEC_LIMIT && e->ival > -DEC_LIMIT;
    }
    if (e->kind == SQL_E_FLOAT && e->text) {
        const char *t = e->text;
        int64_t v = 0;
        int sc = 0, digits = 0;
        bool frac = false;
        for (; *t; t++) {
            if (*t == '.' && !frac) {
                frac = true;
                continue;
            }
            if (*t < '0' || *t > '9' || ++digits > 17)
                return false;
            v = v * 10 + (*t - '0');
            sc += frac;
        }
        *m = v;
        *scale = sc;
        *has_frac = *has_frac || sc > 0;
        return digits > 0;
    }
    if (e->kind == SQL_E_UNARY && e->op == '-' && dec_value(e->args[0], m, scale, has_frac)) {
        *m = -*m;
        return true;
    }
    if (e->kind != SQL_E_BINARY ||
        (e->op != SQL_OP_ADD && e->op != SQL_OP_SUB && e->op != SQL_OP_MUL))
        return false;
    int64_t a, c;
    int sa, sb;
    if (!dec_value(e->args[0], &a, &sa, has_frac) || !dec_value(e->args[1], &c, &sb, has_frac))
        return false;
    if (e->op == SQL_OP_MUL) {
        if (sa + sb > 17 ||
            (a != 0 && (c > DEC_LIMIT / (a < 0 ? -a : a) || c < -DEC_LIMIT / (a < 0 ? -a : a))))
            return false;
        *m = a * c;
        *scale = sa + sb;
        return true;
    }
    int to = sa > sb ? sa : sb;
    if (!dec_scale_up(&a, &sa, to) || !dec_scale_up(&c, &sb, to))
        return false;
    *m = e->op == SQL_OP_ADD ? a + c : a - c;
    *scale = to;
    return *m<DEC_LIMIT && * m> - DEC_LIMIT;
}

static bool dec_fold(const struct sql_expr *e, struct fr_buf *b)
{
    int64_t m;
    int scale;
    bool frac = false;
    if (!dec_value(e, &m, &scale, &frac) || !frac || scale == 0)
        return false;
    uint64_t u = m < 0 ? (uint64_t)(-m) : (uint64_t)m, p = 1;
    for (int i = 0; i < scale; i++)
        p *= 10;
    fr_buf_printf(b, "%s%llu.%0*llu", m < 0 ? "-" : "", (unsigned long long)(u / p), scale,
                  (unsigned long long)(u % p));
    return true;
}

/* date literal +/- INTERVAL folded into b (as a date when as_date); false
 * when e is not that. */
static bool date_fold(struct sc_ex *x, const struct sql_expr *e, bool as_date, struct fr_buf *b,
                      int *rc)
{
    if (e->kind != SQL_E_BINARY || (e->op != SQL_OP_ADD && e->op != SQL_OP_SUB))
        return false;
    const struct sql_expr *l = e->args[0], *r = e->args[1];
    const struct sql_expr *dl = date_literal(l), *dr = date_literal(r);
    if (dl && r->kind == SQL_E_INTERVAL)
        *rc = fold_interval(x, dl, r, e->op == SQL_OP_ADD ? 1 : -1, as_date, b);
    else if (dr && l->kind == SQL_E_INTERVAL && e->op == SQL_OP_ADD)
        *rc = fold_interval(x, dr, l, 1, as_date, b);
    else
        return false;
    return true;
}

int sc__expr_operand(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    int rc = FR_OK;
    return date_fold(x, e, true, b, &rc) ? rc : sc__expr(x, e, b);
}

/* The operands of a || chain, in order (recursion as deep as the tree). */
static void concat_operands(const struct sql_expr *e, const struct sql_expr ***v, int *n)
{
    if (e->kind == SQL_E_BINARY && e->op == SQL_OP_CONCAT) {
        concat_operands(e->args[0], v, n);
        concat_operands(e->args[1], v, n);
        return;
    }
    *v = fr_xrealloc(*v, sizeof(**v) * (size_t)(*n + 1));
    (*v)[(*n)++] = e;
}

/* concat() of texts[lo, hi), in calls of at most 64 arguments. */
static void concat_group(char **texts, int lo, int hi, struct fr_buf *b)
{
    int size = hi - lo <= 64 ? 1 : (hi - lo + 63) / 64;
    fr_buf_puts(b, "concat(");
    for (int i = lo; i < hi; i += size) {
        if (i > lo)
            fr_buf_puts(b, ", ");
        if (size == 1)
            fr_buf_puts(b, texts[i]);
        else
            concat_group(texts, i, i + size < hi ? i + size : hi, b);
    }
    fr_buf_puts(b, ")");
}

/* a || b || ...: NULL if any operand is (unlike concat()); each operand's
 * text twice, however long the chain. */
static int concat_chain(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    const struct sql_expr **v = NULL;
    int n = 0, rc = FR_OK;
    concat_operands(e, &v, &n);
    char **texts = fr_xcalloc((size_t)n, sizeof(*texts));
    for (int i = 0; rc == FR_OK && i < n; i++)
        rc = sc__expr_text(x, v[i], &texts[i]);
    if (rc == FR_OK) {
        fr_buf_puts(b, "case when ");
        for (int i = 0; i < n; i++)
            fr_buf_printf(b, "%s%s is null", i ? " or " : "", texts[i]);
        fr_buf_puts(b, " then null else ");
        concat_group(texts, 0, n, b);
        fr_buf_puts(b, " end");
    }
    for (int i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    free(v);
    return rc;
}

int sc__expr_binary(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b)
{
    if (dec_fold(e, b))
        return FR_OK;
    const struct sql_expr *l = e->args[0], *r = e->args[1];
    int frc = FR_OK;
    if (date_fold(x, e, false, b, &frc))
        return frc;
    if (e->op == SQL_OP_ADD || e->op == SQL_OP_SUB) {
        if (l->kind == SQL_E_INTERVAL || r->kind == SQL_E_INTERVAL)
            return sc__unsupported(x->c, e->pos,
                                   "INTERVAL arithmetic is supported only on a DATE literal "
                                   "(date '...' + INTERVAL ...)");
    }
    if (e->op == SQL_OP_CONCAT)
        return concat_chain(x, e, b);
    bool cmp = e->op >= SQL_OP_EQ && e->op <= SQL_OP_GE;
    fr_buf_puts(b, "(");
    int rc = cmp ? sc__expr_operand(x, l, b) : sc__expr(x, l, b);
    fr_buf_printf(b, " %s ", op_text(e->op));
    if (rc == FR_OK)
        rc = cmp ? sc__expr_operand(x, r, b) : sc__expr(x, r, b);
    fr_buf_puts(b, ")");
    return rc;
}

/* ---- DuckDB's names for expressions in the select list ---- */

static void display(struct sc_ctx *c, const struct sql_expr *e, struct fr_buf *b);

static void display_list(struct sc_ctx *c, struct sql_expr *const *v, int n, struct fr_buf *b)
{
    for (int i = 0; i < n; i++) {
        if (i)
            fr_buf_puts(b, ", ");
        display(c, v[i], b);
    }
}

static void display_func(struct sc_ctx *c, const struct sql_expr *e, struct fr_buf *b)
{
    if (e->star && !e->window && !e->filter) {
        fr_buf_puts(b, "count_star()");
        return;
    }
    fr_buf_printf(b, "%s(%s", e->name.text, e->distinct ? "DISTINCT " : "");
    if (e->star)
        fr_buf_puts(b, "*");
    display_list(c, e->args, e->nargs, b);
    fr_buf_puts(b, ")");
    if (!e->window)
        return;
    const struct sql_window *w = e->window;
    fr_buf_puts(b, " OVER (");
    if (w->npartition) {
        fr_buf_puts(b, "PARTITION BY ");
        display_list(c, w->partition_by, w->npartition, b);
    }
    for (int i = 0; i < w->norder; i++) {
        fr_buf_puts(b, i ? ", " : w->npartition ? " ORDER BY " : "ORDER BY ");
        display(c, w->order_by[i].expr, b);
        if (w->order_by[i].desc)
            fr_buf_puts(b, " DESC");
    }
    fr_buf_puts(b, ")");
}

static void display(struct sc_ctx *c, const struct sql_expr *e, struct fr_buf *b)
{
    switch (e->kind) {
    case SQL_E_COLUMN:
        fr_buf_puts(b, e->name.text);
        return;
    case SQL_E_INT:
        fr_buf_printf(b, "%lld", (long long)e->ival);
        return;
    case SQL_E_STRING:
        fr_buf_printf(b, "'%s'", e->text ? e->text : "");
        return;
    case SQL_E_NULL:
        fr_buf_puts(b, "NULL");
        return;
    case SQL_E_FUNC:
        display_func(c, e, b);
        return;
    case SQL_E_BINARY:
        fr_buf_puts(b, "(");
        display(c, e->args[0], b);
        fr_buf_printf(b, " %s ",
                      e->op == SQL_OP_AND  ? "AND"
                      : e->op == SQL_OP_OR ? "OR"
                                           : op_text(e->op));
        display(c, e->args[1], b);
        fr_buf_puts(b, ")");
        return;
    case SQL_E_UNARY:
        if (e->op == '-') {
            fr_buf_puts(b, "-(");
            display(c, e->args[0], b);
            fr_buf_puts(b, ")");
            return;
        }
        break;
    default:
        break;
    }
    int64_t end = e->end > e->pos ? e->end : e->pos;
    fr_buf_append(b, c->text + e->pos, (size_t)(end - e->pos));
}

char *sc__display_name(struct sc_ctx *c, const struct sql_expr *e)
{
    struct fr_buf b;
    fr_buf_init(&b);
    display(c, e, &b);
    char *s = fr_buf_steal(&b, NULL);
    if (!s || !s[0]) {
        free(s);
        s = fr_xstrdup("col");
    }
    sc__utf8_cut(s, 200);
    return s;
}
