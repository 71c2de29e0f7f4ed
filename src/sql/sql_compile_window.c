/* sql_compile_window: window functions (f(...) OVER (PARTITION BY ..
 * ORDER BY ..)) into the plan's window op: their inputs become columns
 * first, calls with the same PARTITION BY and ORDER BY share one op, and
 * each result is a column the rest of the block reads. Frames are refused. */
#include "sql_compile_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_WINDOW_CHAIN 64

struct wspec {
    json_t *partition, *order, *functions;
    char *key; /* the partition and order texts, to share an op */
};

struct wfound {
    const struct sql_expr **v;
    int n;
};

static void wwalk(const struct sql_expr *e, struct wfound *f)
{
    if (!e)
        return;
    if (e->kind == SQL_E_FUNC && e->window) {
        f->v = fr_xrealloc(f->v, sizeof(*f->v) * (size_t)(f->n + 1));
        f->v[f->n++] = e;
        return;
    }
    for (int i = 0; i < e->nargs; i++)
        wwalk(e->args[i], f);
    wwalk(e->operand, f);
    wwalk(e->else_, f);
}

/* The column holding e's value: a column of r as it is, else computed. */
static int as_column(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e, char **out)
{
    char *text = NULL;
    int rc = sc__expr_text(x, e, &text);
    if (rc != FR_OK)
        return rc;
    size_t n = strlen(text);
    if (text[0] == '"' && strchr(text + 1, '"') == text + n - 1) {
        *out = text;
        return FR_OK;
    }
    char *name = sc__display_name(x->c, e);
    const char *col = sc__add_computed(x->c, r, text, name, e->pos);
    free(name);
    free(text);
    if (!col)
        return FR_EINVAL;
    *out = sc__quote(col);
    return FR_OK;
}

/* The window w means once its named base (w's ref) is merged in, as
 * PostgreSQL does: PARTITION BY comes from the base (a local one with a base
 * is an error), ORDER BY from whichever of the two has one (both: an error),
 * the frame from w or else the base. A base may itself name a base (WINDOW
 * w2 AS (w ORDER BY ..)); a cycle is an error. out borrows w's and the bases'
 * parts. */
static int resolve(struct sc_ctx *c, const struct sql_select *s, const struct sql_window *w,
                   int depth, struct sql_window *out)
{
    *out = *w;
    if (!w->ref.text)
        return FR_OK;
    const char *nm = w->ref.text;
    if (depth > s->nwindows)
        return sc__invalid(c, w->ref.pos, "window '%s' is defined in terms of itself", nm);
    if (depth > MAX_WINDOW_CHAIN) /* the recursion's depth stays bounded */
        return sc__invalid(c, w->ref.pos, "named windows refer to each other more than %d deep",
                           MAX_WINDOW_CHAIN);
    const struct sql_window *b = NULL;
    for (int i = 0; !b && i < s->nwindows; i++)
        if (sc__name_eq(s->window_names[i].text, nm, w->ref.quoted))
            b = s->windows[i];
    if (!b)
        return sc__invalid(c, w->ref.pos, "no window named '%s'", nm);
    struct sql_window base;
    int rc = resolve(c, s, b, depth + 1, &base);
    if (rc != FR_OK)
        return rc;
    if (w->npartition)
        return sc__invalid(c, w->partition_by[0]->pos,
                           "cannot override PARTITION BY clause of window '%s'", nm);
    if (w->norder && base.norder)
        return sc__invalid(c, w->order_by[0].expr->pos,
                           "Cannot override ORDER BY clause of window '%s'", nm);
    out->partition_by = base.partition_by;
    out->npartition = base.npartition;
    if (!w->norder) {
        out->order_by = base.order_by;
        out->norder = base.norder;
    }
    if (!w->has_frame && base.has_frame) {
        out->has_frame = true;
        out->frame_pos = base.frame_pos;
        out->frame_text = base.frame_text;
    }
    out->ref = (struct sql_name){0};
    return FR_OK;
}

static int spec_of(struct sc_ex *x, struct sc_rel *r, const struct sql_window *w, struct wspec *sp)
{
    int rc = FR_OK;
    struct fr_buf key;
    fr_buf_init(&key);
    sp->partition = json_array();
    sp->order = json_array();
    for (int i = 0; rc == FR_OK && i < w->npartition; i++) {
        char *col = NULL;
        if ((rc = as_column(x, r, w->partition_by[i], &col)) == FR_OK) {
            json_array_append_new(sp->partition, json_string(col));
            fr_buf_printf(&key, "p%s,", col);
        }
        free(col);
    }
    for (int i = 0; rc == FR_OK && i < w->norder; i++) {
        const struct sql_order_item *it = &w->order_by[i];
        char *col = NULL;
        if ((rc = as_column(x, r, it->expr, &col)) == FR_OK) {
            char *k = fr_xasprintf("%s%s%s", col, it->desc ? " desc" : "",
                                   it->nulls == 1 ? " nulls first" : " nulls last");
            json_array_append_new(sp->order, json_string(k));
            fr_buf_printf(&key, "o%s,", k);
            free(k);
        }
        free(col);
    }
    sp->key = fr_buf_steal(&key, NULL);
    if (!sp->key)
        sp->key = fr_xstrdup("");
    return rc;
}

static bool is_literal(const struct sql_expr *e)
{
    return e->kind == SQL_E_INT || e->kind == SQL_E_FLOAT || e->kind == SQL_E_STRING ||
           e->kind == SQL_E_BOOL || e->kind == SQL_E_NULL || e->kind == SQL_E_TYPED ||
           (e->kind == SQL_E_UNARY && e->op == '-' && e->args[0]->kind != SQL_E_UNARY &&
            is_literal(e->args[0]));
}

/* lag/lead's default, ", <literal>", onto b: of the argument's type t (an
 * integer for a float64 is widened; a string for a date or timestamp is cast
 * to it), else an error at the default. */
static int shift_default(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e, df_type t,
                         struct fr_buf *b)
{
    const struct sql_expr *d = e->args[2];
    struct fr_buf lit;
    fr_buf_init(&lit);
    int rc = sc__expr(x, d, &lit);
    char *text = fr_buf_steal(&lit, NULL);
    df_type dt = DF_TYPE_NULL;
    if (rc == FR_OK && d->kind != SQL_E_NULL)
        rc = sc__expr_type(x->c, r, text, d->pos, &dt);
    bool temporal = t == DF_TYPE_DATE || t == DF_TYPE_TIMESTAMP;
    if (rc == FR_OK && dt == DF_TYPE_STRING && temporal && d->kind == SQL_E_STRING) {
        fr_buf_printf(b, ", cast(%s as %s)", text, df_type_name(t));
    } else if (rc == FR_OK && dt != DF_TYPE_NULL && dt != t &&
               !(dt == DF_TYPE_INT64 && t == DF_TYPE_FLOAT64)) {
        rc = sc__invalid(x->c, d->pos, "%s's default is %s, but its argument is %s", e->name.text,
                         df_type_name(dt), df_type_name(t));
    } else if (rc == FR_OK) {
        fr_buf_printf(b, ", %s", text);
    }
    free(text);
    return rc;
}

/* The function's text (without the alias) and its result type. */
static int function(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e, char **out,
                    df_type *t)
{
    const char *n = e->name.text;
    struct sc_ctx *c = x->c;
    bool ranking = strcasecmp(n, "row_number") == 0 || strcasecmp(n, "rank") == 0 ||
                   strcasecmp(n, "dense_rank") == 0;
    bool shift = strcasecmp(n, "lag") == 0 || strcasecmp(n, "lead") == 0;
    const char *agg = strcasecmp(n, "sum") == 0                                 ? "sum"
                      : strcasecmp(n, "avg") == 0 || strcasecmp(n, "mean") == 0 ? "avg"
                      : strcasecmp(n, "min") == 0                               ? "min"
                      : strcasecmp(n, "max") == 0                               ? "max"
                      : strcasecmp(n, "count") == 0                             ? "count"
                                                                                : NULL;
    if (!ranking && !shift && !agg)
        return sc__unsupported(c, e->pos, "the window function %s is not supported", n);
    if (e->distinct || e->filter)
        return sc__unsupported(c, e->pos, "%s in a window function is not supported",
                               e->distinct ? "DISTINCT" : "FILTER");
    if (ranking) {
        if (e->nargs != 0)
            return sc__invalid(c, e->pos, "%s takes no arguments", n);
        *out = fr_xasprintf("%s()", n);
        *t = DF_TYPE_INT64;
        return FR_OK;
    }
    if (e->star && agg && strcmp(agg, "count") == 0) {
        *out = fr_xstrdup("count(*)");
        *t = DF_TYPE_INT64;
        return FR_OK;
    }
    if (e->nargs < 1 || e->nargs > (shift ? 3 : 1))
        return sc__invalid(c, e->pos, "%s takes %s, got %d arguments", n,
                           shift ? "1 to 3 arguments" : "1 argument", e->nargs);
    if (shift && e->nargs >= 2 && (e->args[1]->kind != SQL_E_INT || e->args[1]->ival < 0))
        return sc__unsupported(c, e->args[1]->pos,
                               "%s's offset must be a whole number literal of 0 or more", n);
    if (shift && e->nargs >= 2 && e->args[1]->ival > DF_WINDOW_MAX_OFFSET)
        return sc__invalid(c, e->args[1]->pos, "%s's offset %lld is past the largest, %d", n,
                           (long long)e->args[1]->ival, DF_WINDOW_MAX_OFFSET);
    if (shift && e->nargs == 3 && !is_literal(e->args[2]))
        return sc__unsupported(c, e->args[2]->pos, "%s's default must be a literal", n);
    char *col = NULL;
    int rc = as_column(x, r, e->args[0], &col);
    if (rc != FR_OK)
        return rc;
    rc = sc__expr_type(c, r, col, e->pos, t);
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_printf(&b, "%s(%s", shift ? n : agg, col);
    if (rc == FR_OK && e->nargs >= 2)
        fr_buf_printf(&b, ", %lld", (long long)e->args[1]->ival);
    if (rc == FR_OK && e->nargs == 3)
        rc = shift_default(x, r, e, *t, &b);
    fr_buf_puts(&b, ")");
    free(col);
    *out = fr_buf_steal(&b, NULL);
    if (agg && strcmp(agg, "count") == 0)
        *t = DF_TYPE_INT64;
    else if (agg && strcmp(agg, "avg") == 0)
        *t = DF_TYPE_FLOAT64;
    return rc;
}

static struct wspec *find_spec(struct wspec **specs, int *n, struct wspec *sp)
{
    for (int i = 0; i < *n; i++) {
        /* an op holds at most DF_WINDOW_MAX_FUNCS calls: more start another */
        if (strcmp((*specs)[i].key, sp->key) == 0 &&
            json_array_size((*specs)[i].functions) < DF_WINDOW_MAX_FUNCS) {
            json_decref(sp->partition);
            json_decref(sp->order);
            free(sp->key);
            return &(*specs)[i];
        }
    }
    *specs = fr_xrealloc(*specs, sizeof(**specs) * (size_t)(*n + 1));
    (*specs)[*n] = *sp;
    (*specs)[*n].functions = json_array();
    return &(*specs)[(*n)++];
}

static int one_window(struct sc_ex *x, const struct sql_select *s, struct sc_rel *r,
                      const struct sql_expr *e, struct wspec **specs, int *nspecs,
                      struct sc_rel *adds)
{
    struct sql_window merged;
    int rc = resolve(x->c, s, e->window, 0, &merged);
    if (rc != FR_OK)
        return rc;
    const struct sql_window *w = &merged;
    if (w->has_frame) {
        const char *t = w->frame_text ? w->frame_text : "rows";
        char kw[16];
        size_t n = strcspn(t, " \t\r\n(");
        snprintf(kw, sizeof(kw), "%.*s", (int)(n < 8 ? n : 8), t);
        for (char *p = kw; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        bool between = strncasecmp(t + n + strspn(t + n, " \t\r\n"), "between", 7) == 0;
        return sc__unsupported(x->c, w->frame_pos, "window frame %s%s is not supported (%s)", kw,
                               between ? " BETWEEN" : "", t);
    }
    struct wspec sp = {0};
    char *fn = NULL;
    df_type t = DF_TYPE_NULL;
    if ((rc = spec_of(x, r, w, &sp)) == FR_OK)
        rc = function(x, r, e, &fn, &t);
    if (rc != FR_OK) {
        json_decref(sp.partition);
        json_decref(sp.order);
        free(sp.key);
        free(fn);
        return rc;
    }
    struct wspec *into = find_spec(specs, nspecs, &sp);
    char *name = sc__display_name(x->c, e), *internal = sc__new_internal(x->c, e->name.text);
    char *qi = sc__quote(internal);
    json_array_append_new(into->functions, json_sprintf("%s as %s", fn, qi));
    sc__rel_add(adds, name, true, NULL, internal, t)->hidden = true;
    sc__ex_subst(x, e, adds->cols[adds->ncols - 1].internal);
    free(qi);
    free(internal);
    free(name);
    free(fn);
    return FR_OK;
}

int sc__windows(struct sc_ctx *c, const struct sql_query *q, const struct sql_select *s,
                struct sc_rel *r, struct sc_ex *x)
{
    struct wfound f = {NULL, 0};
    for (int i = 0; i < s->nitems; i++)
        wwalk(s->items[i].expr, &f);
    wwalk(s->qualify, &f);
    for (int i = 0; q && q->select == s && i < q->norder; i++)
        wwalk(q->order_by[i].expr, &f);
    struct wspec *specs = NULL;
    int nspecs = 0, rc = FR_OK;
    struct sc_rel adds;
    sc__rel_init(&adds);
    x->clause = "a window function";
    for (int i = 0; rc == FR_OK && i < f.n; i++)
        rc = one_window(x, s, r, f.v[i], &specs, &nspecs, &adds);
    for (int i = 0; i < nspecs; i++) {
        if (rc == FR_OK)
            sc__rel_op(r, json_pack("{s{sOsOsO}}", "window", "partition_by", specs[i].partition,
                                    "order_by", specs[i].order, "functions", specs[i].functions));
        json_decref(specs[i].partition);
        json_decref(specs[i].order);
        json_decref(specs[i].functions);
        free(specs[i].key);
    }
    /* the results join r's columns after every op's inputs are computed */
    for (int i = 0; rc == FR_OK && i < adds.ncols; i++) {
        r->cols = fr_xrealloc(r->cols, sizeof(*r->cols) * (size_t)(r->ncols + 1));
        sc__col_copy(&r->cols[r->ncols++], &adds.cols[i]);
    }
    /* substitutions point into adds: repoint them at r's copies */
    for (int i = 0; rc == FR_OK && i < x->nsubst; i++)
        for (int k = 0; k < adds.ncols; k++)
            if (x->subst[i].internal == adds.cols[k].internal)
                x->subst[i].internal = r->cols[r->ncols - adds.ncols + k].internal;
    sc__rel_cleanup(&adds);
    free(specs);
    free(f.v);
    (void)c;
    return rc;
}
