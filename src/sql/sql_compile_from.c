/* sql_compile_from: FROM items into relations: tables, subqueries, and
 * joins with ON or USING (outer joins keep their meaning: equalities between
 * the sides become hash-join keys, a condition on the preserved side alone
 * is refused by name), the join op itself and cross joins (a constant key). */
#include "sql_compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void move_cols(struct sc_rel *dst, struct sc_rel *src)
{
    dst->cols = fr_xrealloc(dst->cols, sizeof(*dst->cols) * (size_t)(dst->ncols + src->ncols + 1));
    memcpy(dst->cols + dst->ncols, src->cols, sizeof(*src->cols) * (size_t)src->ncols);
    dst->ncols += src->ncols;
    free(src->cols);
    src->cols = NULL;
    src->ncols = 0;
}

static struct sc_col *col_named(struct sc_rel *r, const char *internal)
{
    for (int i = 0; i < r->ncols; i++)
        if (strcmp(r->cols[i].internal, internal) == 0)
            return &r->cols[i];
    return NULL;
}

/* The leaf r reads directly (a table with its filters and renaming select
 * and nothing after), or NULL. */
static struct sc_leaf *direct_leaf(struct sc_ctx *c, const struct sc_rel *r)
{
    if (r->ncols == 0 || r->cols[0].leaf < 0 || r->cols[0].leaf >= c->nleaves)
        return NULL;
    struct sc_leaf *l = &c->leaves[r->cols[0].leaf];
    json_t *ops = json_object_get(r->plan, "ops");
    if (ops != l->ops || json_array_size(ops) != (size_t)l->nfilters + 1)
        return NULL;
    for (int i = 0; i < r->ncols; i++)
        if (r->cols[i].leaf != r->cols[0].leaf || !r->cols[i].orig)
            return NULL;
    return l;
}

/* Renames the leaf column `from` to `to` (in its select if it is read). */
static void leaf_rename(struct sc_leaf *l, struct sc_col *col, const char *to)
{
    for (int k = 0; k < l->ncols; k++) {
        if (strcmp(l->internal[k], col->internal) != 0)
            continue;
        char *qf = sc__quote(l->internal[k]), *qo = sc__quote(l->orig[k]);
        char *was = fr_xasprintf("%s as %s", qo, qf);
        for (size_t i = 0; l->used[k] && i < json_array_size(l->select); i++) {
            if (strcmp(json_string_value(json_array_get(l->select, i)), was) == 0) {
                char *qt = sc__quote(to);
                json_array_set_new(l->select, i, json_sprintf("%s as %s", qo, qt));
                free(qt);
            }
        }
        free(was);
        free(qf);
        free(qo);
        free(l->internal[k]);
        l->internal[k] = fr_xstrdup(to);
    }
    free(col->internal);
    col->internal = fr_xstrdup(to);
}

/* An inner join of a table read directly, on keys of one type: each right
 * key is renamed in the table's select to its left key and the two merge
 * into one column (the plan's "on"; the right's SQL names read it, equal on
 * every row an inner join keeps), so the join does not copy both. */
static bool merge_keys(struct sc_ctx *c, struct sc_rel *left, struct sc_rel *right, const char *how,
                       json_t *lk, json_t *rk)
{
    struct sc_leaf *l = strcmp(how, "inner") == 0 ? direct_leaf(c, right) : NULL;
    if (!l)
        return false;
    for (size_t k = 0; k < json_array_size(lk); k++) {
        struct sc_col *a = col_named(left, json_string_value(json_array_get(lk, k)));
        struct sc_col *b = col_named(right, json_string_value(json_array_get(rk, k)));
        if (!a || !b || a->type != b->type || col_named(right, a->internal))
            return false;
        for (size_t j = 0; j < k; j++) /* one column for two keys: no */
            if (strcmp(json_string_value(json_array_get(rk, j)), b->internal) == 0 ||
                strcmp(json_string_value(json_array_get(lk, j)), a->internal) == 0)
                return false;
    }
    for (size_t k = 0; k < json_array_size(lk); k++)
        leaf_rename(l, col_named(right, json_string_value(json_array_get(rk, k))),
                    json_string_value(json_array_get(lk, k)));
    return true;
}

int sc__join(struct sc_ctx *c, struct sc_rel *left, struct sc_rel *right, const char *how,
             json_t *lkeys, json_t *rkeys)
{
    if (merge_keys(c, left, right, how, lkeys, rkeys)) {
        sc__rel_op(left,
                   json_pack("{s{sososs}}", "join", "right", right->plan, "on", lkeys, "how", how));
        json_decref(rkeys);
    } else {
        sc__rel_op(left, json_pack("{s{sosososs}}", "join", "right", right->plan, "left_on", lkeys,
                                   "right_on", rkeys, "how", how));
    }
    right->plan = NULL;
    if (strcmp(how, "semi") != 0 && strcmp(how, "anti") != 0)
        move_cols(left, right);
    return FR_OK;
}

void sc__cross(struct sc_ctx *c, struct sc_rel *left, struct sc_rel *right, const char *how)
{
    const char *lk = sc__add_computed(c, left, "1", "cross", 0);
    const char *rk = sc__add_computed(c, right, "1", "cross", 0);
    sc__join(c, left, right, how, json_pack("[s]", lk), json_pack("[s]", rk));
}

int sc__filter_ex(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *cond)
{
    char *text = NULL;
    int rc = sc__expr_text(x, cond, &text);
    df_type t = DF_TYPE_NULL;
    if (rc == FR_OK)
        rc = sc__expr_type(x->c, r, text, cond->pos, &t);
    if (rc == FR_OK && t != DF_TYPE_BOOL && t != DF_TYPE_NULL)
        rc = sc__invalid(x->c, cond->pos, "%s needs a condition (a boolean), got %s",
                         x->clause ? x->clause : "WHERE", df_type_name(t));
    if (rc == FR_OK)
        sc__rel_op(r, json_pack("{ss}", "where", text));
    free(text);
    return rc;
}

int sc__filter(struct sc_ctx *c, struct sc_scope *scope, struct sc_rel *r,
               const struct sql_expr *cond, const char *clause)
{
    struct sc_ex x = {0};
    x.c = c;
    x.scope = scope;
    x.leaf_names = -1;
    x.clause = clause;
    int rc = sc__scalar_subqueries(&x, r, cond);
    if (rc == FR_OK)
        rc = sc__filter_ex(&x, r, cond);
    sc__ex_cleanup(&x);
    return rc;
}

static int subquery_item(struct sc_ctx *c, const struct sql_from *f, struct sc_rel *out)
{
    int rc = sc__query(c, f->query, NULL, out);
    if (rc != FR_OK)
        return rc;
    if (f->ncol_aliases > out->ncols)
        return sc__invalid(c, f->pos, "the subquery has %d columns but %d column aliases",
                           out->ncols, f->ncol_aliases);
    for (int i = 0; i < out->ncols; i++) {
        free(out->cols[i].qual);
        out->cols[i].qual = f->alias.text ? fr_xstrdup(f->alias.text) : NULL;
        if (i < f->ncol_aliases) {
            free(out->cols[i].name);
            out->cols[i].name = fr_xstrdup(f->col_aliases[i].text);
        }
    }
    return FR_OK;
}

/* The key column of side r for the expression e (a column, else computed). */
int sc__key_column(struct sc_ctx *c, struct sc_scope *outer, struct sc_rel *r,
                   const struct sql_expr *e, char **out)
{
    struct sc_scope s = {r, outer, NULL, 0, false};
    struct sc_ex x = {0};
    x.c = c;
    x.scope = &s;
    x.leaf_names = -1;
    x.clause = "a join condition";
    char *text = NULL;
    int rc = sc__expr_text(&x, e, &text);
    sc__ex_cleanup(&x);
    if (rc != FR_OK)
        return rc;
    size_t n = strlen(text);
    if (text[0] == '"' && strchr(text + 1, '"') == text + n - 1) {
        *out = fr_xstrndup(text + 1, n - 2);
        free(text);
        return FR_OK;
    }
    const char *col = sc__add_computed(c, r, text, "key", e->pos);
    free(text);
    if (!col)
        return FR_EINVAL;
    *out = fr_xstrdup(col);
    return FR_OK;
}

static const struct sc_col *find_col(const struct sc_rel *r, const char *internal)
{
    for (int i = 0; i < r->ncols; i++)
        if (strcmp(r->cols[i].internal, internal) == 0)
            return &r->cols[i];
    return NULL;
}

/* Checks that the key columns can be compared (numbers with numbers). */
int sc__key_types(struct sc_ctx *c, const struct sc_rel *l, const char *lk, const struct sc_rel *r,
                  const char *rk, int64_t pos)
{
    const struct sc_col *a = find_col(l, lk), *b = find_col(r, rk);
    if (!a || !b)
        return FR_OK;
    bool na = a->type == DF_TYPE_INT64 || a->type == DF_TYPE_FLOAT64;
    bool nb = b->type == DF_TYPE_INT64 || b->type == DF_TYPE_FLOAT64;
    if (a->type != b->type && !(na && nb))
        return sc__invalid(c, pos, "cannot compare %s with %s in a join condition",
                           df_type_name(a->type), df_type_name(b->type));
    return FR_OK;
}

/* One FROM item that is not flattened into the join ordering. */
int sc__from_unit(struct sc_ctx *c, const struct sql_from *f, struct sc_scope *outer,
                  struct sc_rel *out)
{
    if (f->kind == SQL_FROM_TABLE)
        return sc__table(c, f, out);
    if (f->kind == SQL_FROM_SUBQUERY)
        return subquery_item(c, f, out);
    return sc__outer_join(c, f, outer, out);
}
