/* sql_compile_agg: GROUP BY and aggregates, and window functions. Every
 * aggregate call of the block (select list, HAVING, ORDER BY, QUALIFY,
 * window arguments) becomes one item of the plan's groupby/agg op, every
 * window function one function of a window op (one op per distinct
 * PARTITION BY / ORDER BY); later expressions read them as columns. */
#include "sql_compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef void (*visit_fn)(const struct sql_expr *e, void *arg);

/* Calls fn on every aggregate (agg true) or window call (agg false) in e,
 * outside subqueries; an aggregate's argument is not searched further. */
static void walk(const struct sql_expr *e, bool agg, visit_fn fn, void *arg)
{
    if (!e)
        return;
    if (e->kind == SQL_E_FUNC) {
        bool is_window = e->window != NULL;
        bool is_agg = !is_window && sc__is_agg_name(e->name.text);
        if ((agg && is_agg) || (!agg && is_window)) {
            fn(e, arg);
            if (agg || !is_window)
                return;
        }
        if (agg && is_window) {
            for (int i = 0; i < e->window->npartition; i++)
                walk(e->window->partition_by[i], agg, fn, arg);
            for (int i = 0; i < e->window->norder; i++)
                walk(e->window->order_by[i].expr, agg, fn, arg);
        }
        if (!agg && is_window)
            return;
    }
    for (int i = 0; i < e->nargs; i++)
        walk(e->args[i], agg, fn, arg);
    walk(e->operand, agg, fn, arg);
    walk(e->else_, agg, fn, arg);
}

static void walk_block(const struct sql_query *q, const struct sql_select *s, bool agg, visit_fn fn,
                       void *arg)
{
    for (int i = 0; i < s->nitems; i++)
        walk(s->items[i].expr, agg, fn, arg);
    if (agg)
        walk(s->having, agg, fn, arg);
    walk(s->qualify, agg, fn, arg);
    for (int i = 0; q && q->select == s && i < q->norder; i++)
        walk(q->order_by[i].expr, agg, fn, arg);
}

struct found {
    const struct sql_expr **v;
    int n;
};

static void collect(const struct sql_expr *e, void *arg)
{
    struct found *f = arg;
    f->v = fr_xrealloc(f->v, sizeof(*f->v) * (size_t)(f->n + 1));
    f->v[f->n++] = e;
}

bool sc__grouped(const struct sql_query *q, const struct sql_select *s)
{
    if (s->ngroup > 0 || s->group_by_all || s->having)
        return true;
    struct found f = {NULL, 0};
    walk_block(q, s, true, collect, &f);
    free(f.v);
    return f.n > 0;
}

static const char *agg_engine_name(const char *n)
{
    if (strcasecmp(n, "mean") == 0 || strcasecmp(n, "avg") == 0)
        return "avg";
    if (strcasecmp(n, "stddev_samp") == 0 || strcasecmp(n, "stddev") == 0)
        return "stddev";
    if (strcasecmp(n, "any_value") == 0 || strcasecmp(n, "arbitrary") == 0 ||
        strcasecmp(n, "first") == 0)
        return "first";
    static const char *const same[] = {"sum", "min", "max", "count", "median", "corr"};
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
        if (strcasecmp(n, same[i]) == 0)
            return same[i];
    return NULL;
}

/* One argument, under FILTER (WHERE cond) a case that is null elsewhere. */
static int agg_arg(struct sc_ex *plain, const struct sql_expr *e, const struct sql_expr *a,
                   struct fr_buf *b)
{
    if (!e->filter)
        return sc__expr(plain, a, b);
    fr_buf_puts(b, "case when ");
    int rc = sc__expr(plain, e->filter, b);
    fr_buf_puts(b, " then ");
    if (rc == FR_OK)
        rc = a ? sc__expr(plain, a, b) : FR_OK;
    if (!a)
        fr_buf_puts(b, "1");
    fr_buf_puts(b, " end");
    return rc;
}

static int agg_call(struct sc_ex *plain, const struct sql_expr *e, char **out)
{
    const char *fn = agg_engine_name(e->name.text);
    struct sc_ctx *c = plain->c;
    int want = fn && strcmp(fn, "corr") == 0 ? 2 : 1;
    if (!fn)
        return sc__unsupported(c, e->pos, "the aggregate %s is not supported", e->name.text);
    if (e->distinct && strcmp(fn, "count") != 0)
        return sc__unsupported(c, e->pos, "%s(DISTINCT ...) is not supported", e->name.text);
    if (!e->star && e->nargs != want)
        return sc__invalid(c, e->pos, "%s takes %d argument%s, got %d", e->name.text, want,
                           want == 1 ? "" : "s", e->nargs);
    struct fr_buf b;
    fr_buf_init(&b);
    int rc = FR_OK;
    plain->clause = "an aggregate's argument";
    if (e->star && !e->filter) {
        fr_buf_puts(&b, "count(*)");
    } else {
        fr_buf_printf(&b, "%s(%s", e->star ? "count" : fn, e->distinct ? "distinct " : "");
        rc = agg_arg(plain, e, e->star ? NULL : e->args[0], &b);
        if (rc == FR_OK && want == 2) {
            fr_buf_puts(&b, ", ");
            rc = agg_arg(plain, e, e->args[1], &b);
        }
        fr_buf_puts(&b, ")");
    }
    *out = fr_buf_steal(&b, NULL);
    return rc;
}

static int agg_type(struct sc_ctx *c, const struct sc_rel *r, const char *item, int64_t pos,
                    df_type *t)
{
    struct df_schema s;
    sc__rel_schema(r, &s);
    struct df_agg_item it;
    struct fr_error err;
    fr_error_init(&err);
    int rc = df_agg_item_parse(item, &s, &it, &err);
    df_schema_cleanup(&s);
    if (rc != FR_OK)
        return sc__invalid(c, pos, "%s", err.message);
    *t = df_expr_type(it.post);
    df_agg_item_cleanup(&it);
    return FR_OK;
}

/* The GROUP BY expressions (positions and select aliases resolved). */
static int group_exprs(struct sc_ctx *c, const struct sql_select *s, struct sc_scope *scope,
                       struct found *g)
{
    /* a correlated subquery groups by its inner correlation keys too */
    struct sc_scope *h = scope->outer && scope->outer->correlated_ok ? scope->outer : NULL;
    for (int i = 0; h && i < h->ncorr; i++)
        collect(h->corr[i].inner, g);
    for (int i = 0; s->group_by_all && i < s->nitems; i++) {
        const struct sql_expr *e = s->items[i].expr;
        if (e->kind != SQL_E_STAR && !sc__has_agg(e) && !sc__has_window(e))
            collect(e, g);
    }
    for (int i = 0; i < s->ngroup; i++) {
        const struct sql_expr *e = s->group_by[i];
        if (e->kind == SQL_E_FUNC && e->name.text &&
            (strcasecmp(e->name.text, "rollup") == 0 || strcasecmp(e->name.text, "cube") == 0 ||
             strcasecmp(e->name.text, "grouping_sets") == 0))
            return sc__unsupported(c, e->pos, "GROUP BY %s is not supported", e->name.text);
        if (e->kind == SQL_E_INT) {
            if (e->ival < 1 || e->ival > s->nitems ||
                s->items[e->ival - 1].expr->kind == SQL_E_STAR)
                return sc__invalid(c, e->pos, "GROUP BY position %lld is not in the select list",
                                   (long long)e->ival);
            e = s->items[e->ival - 1].expr;
            if (sc__has_agg(e))
                return sc__invalid(c, s->group_by[i]->pos,
                                   "GROUP BY position %lld refers to an aggregate",
                                   (long long)s->group_by[i]->ival);
        } else if (e->kind == SQL_E_COLUMN && !e->qual.text) {
            struct fr_error scratch, *saved = c->err;
            struct sc_col *col;
            int level;
            fr_error_init(&scratch);
            c->err = &scratch;
            int rc = sc__resolve(c, scope, e, &col, &level);
            c->err = saved;
            for (int k = 0; rc != FR_OK && k < s->nitems; k++)
                if (s->items[k].alias.text &&
                    sc__name_eq(s->items[k].alias.text, e->name.text, e->name.quoted))
                    e = s->items[k].expr, rc = FR_OK;
        }
        collect(e, g);
    }
    return FR_OK;
}

static void add_key(struct sc_ex *x, const char *internal)
{
    for (int i = 0; i < x->nkeys; i++)
        if (strcmp(x->keys[i], internal) == 0)
            return;
    x->keys = fr_xrealloc(x->keys, sizeof(char *) * (size_t)(x->nkeys + 1));
    x->keys[x->nkeys++] = (char *)internal;
}

static int group_keys(struct sc_ctx *c, const struct sql_select *s, struct sc_rel *r,
                      struct sc_ex *plain, struct sc_ex *x)
{
    struct found g = {NULL, 0};
    int rc = group_exprs(c, s, plain->scope, &g);
    plain->clause = "GROUP BY";
    for (int i = 0; rc == FR_OK && i < g.n; i++) {
        char *text = NULL;
        if ((rc = sc__expr_text(plain, g.v[i], &text)) != FR_OK)
            break;
        size_t n = strlen(text);
        if (text[0] == '"' && strchr(text + 1, '"') == text + n - 1) {
            for (int k = 0; k < r->ncols; k++)
                if (strlen(r->cols[k].internal) == n - 2 &&
                    strncmp(r->cols[k].internal, text + 1, n - 2) == 0)
                    add_key(x, r->cols[k].internal);
            free(text);
            continue;
        }
        bool dup = false;
        for (int k = 0; k < x->nexpr_keys && !dup; k++)
            dup = strcmp(x->key_texts[k], text) == 0;
        char *name = sc__display_name(c, g.v[i]);
        const char *col = dup ? NULL : sc__add_computed(c, r, text, name, g.v[i]->pos);
        free(name);
        if (!dup && !col) {
            free(text);
            rc = FR_EINVAL;
            break;
        }
        if (dup) {
            free(text);
            continue;
        }
        x->key_texts = fr_xrealloc(x->key_texts, sizeof(char *) * (size_t)(x->nexpr_keys + 1));
        x->key_cols = fr_xrealloc(x->key_cols, sizeof(char *) * (size_t)(x->nexpr_keys + 1));
        x->key_texts[x->nexpr_keys] = text;
        x->key_cols[x->nexpr_keys++] = fr_xstrdup(col);
    }
    free(g.v);
    return rc;
}

/* The aggregate items: one per distinct call text, each a column "#a". */
static int agg_items(struct sc_ctx *c, const struct sql_query *q, const struct sql_select *s,
                     struct sc_rel *r, struct sc_ex *plain, struct sc_ex *x, json_t *items,
                     struct sc_rel *post)
{
    struct found f = {NULL, 0};
    walk_block(q, s, true, collect, &f);
    char **texts = fr_xcalloc((size_t)f.n + 1, sizeof(char *));
    int rc = FR_OK, ntexts = 0;
    for (int i = 0; rc == FR_OK && i < f.n; i++) {
        char *text = NULL;
        if ((rc = agg_call(plain, f.v[i], &text)) != FR_OK) {
            free(text);
            break;
        }
        int k = 0;
        while (k < ntexts && strcmp(texts[k], text) != 0)
            k++;
        if (k < ntexts) {
            free(text);
            sc__ex_subst(x, f.v[i], post->cols[post->ncols - ntexts + k].internal);
            continue;
        }
        char *name = sc__display_name(c, f.v[i]),
             *internal = sc__new_internal(c, f.v[i]->name.text);
        char *qi = sc__quote(internal), *it = fr_xasprintf("%s as %s", text, qi);
        df_type t = DF_TYPE_NULL;
        rc = agg_type(c, r, it, f.v[i]->pos, &t);
        if (rc == FR_OK) {
            json_array_append_new(items, json_string(it));
            sc__rel_add(post, name, true, NULL, internal, t)->hidden = true;
            sc__ex_subst(x, f.v[i], post->cols[post->ncols - 1].internal);
            texts[ntexts++] = text;
            text = NULL;
        }
        free(text);
        free(it);
        free(qi);
        free(internal);
        free(name);
    }
    for (int i = 0; i < ntexts; i++)
        free(texts[i]);
    free(texts);
    free(f.v);
    return rc;
}

/* The agg op on r; r's columns become the keys and the aggregates, pre
 * keeps the columns before it (names still resolve against them). */
int sc__aggregate(struct sc_ctx *c, const struct sql_query *q, const struct sql_select *s,
                  struct sc_rel *r, struct sc_rel *pre, struct sc_ex *x)
{
    struct sc_ex plain = *x;
    plain.subst = NULL;
    plain.nsubst = 0;
    int rc = group_keys(c, s, r, &plain, x);
    struct sc_rel post;
    sc__rel_init(&post);
    json_t *keys = json_array(), *items = json_array();
    for (int i = 0; rc == FR_OK && i < r->ncols; i++) {
        bool key = false;
        for (int k = 0; k < x->nkeys && !key; k++)
            key = strcmp(x->keys[k], r->cols[i].internal) == 0;
        for (int k = 0; k < x->nexpr_keys && !key; k++)
            key = strcmp(x->key_cols[k], r->cols[i].internal) == 0;
        for (int k = 0; k < post.ncols && key; k++) /* a merged join key: one column */
            key = strcmp(post.cols[k].internal, r->cols[i].internal) != 0;
        if (!key)
            continue;
        post.cols = fr_xrealloc(post.cols, sizeof(*post.cols) * (size_t)(post.ncols + 1));
        sc__col_copy(&post.cols[post.ncols++], &r->cols[i]);
        char *qk = sc__quote(r->cols[i].internal);
        json_array_append_new(keys, json_string(qk));
        free(qk);
    }
    for (int k = 0; k < x->nexpr_keys; k++)
        add_key(x, x->key_cols[k]);
    int nkeycols = post.ncols;
    if (rc == FR_OK)
        rc = agg_items(c, q, s, r, &plain, x, items, &post);
    sc__ex_cleanup(&plain);
    if (rc == FR_OK) {
        if (nkeycols > 0 && json_array_size(items) > 0) {
            sc__rel_op(r, json_pack("{sOsO}", "groupby", keys, "agg", items));
        } else if (nkeycols > 0) {
            sc__rel_op(r, json_pack("{sO}", "select", keys));
            sc__rel_op(r, json_pack("{s[]}", "distinct"));
        } else {
            if (json_array_size(items) == 0) /* HAVING alone: still one row */
                json_array_append_new(items, json_string("count(*) as \"#rows\""));
            sc__rel_op(r, json_pack("{sO}", "agg", items));
        }
        pre->cols = r->cols;
        pre->ncols = r->ncols;
        r->cols = post.cols;
        r->ncols = post.ncols;
        post.cols = NULL;
        post.ncols = 0;
        x->grouped = true;
    }
    json_decref(keys);
    json_decref(items);
    sc__rel_cleanup(&post);
    return rc;
}
