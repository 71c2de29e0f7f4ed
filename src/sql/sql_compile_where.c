/* sql_compile_where: a FROM list with its inner joins flattened into items,
 * and the ON and WHERE conjunctions split over them: a condition on one
 * table runs before the joins (on the scan, in the source's names), the
 * equalities between tables become hash-join keys in an order where each
 * table joins one it shares a key with, the rest filter as soon as their
 * tables are joined. A common factor of an OR (TPC-H 19) is pulled out. */
#include "sql_compile_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sc__add_conj(struct sc_fromset *fs, const struct sql_expr *e)
{
    if (e->kind == SQL_E_BINARY && e->op == SQL_OP_AND) {
        sc__add_conj(fs, e->args[0]);
        sc__add_conj(fs, e->args[1]);
        return;
    }
    fs->conjs = fr_xrealloc(fs->conjs, sizeof(*fs->conjs) * (size_t)(fs->nconj + 1));
    memset(&fs->conjs[fs->nconj], 0, sizeof(*fs->conjs));
    fs->conjs[fs->nconj++].e = e;
}

static int flatten(struct sc_ctx *c, const struct sql_from *f, struct sc_fromset *fs)
{
    if (f->kind == SQL_FROM_JOIN && !f->natural && f->nusing == 0 &&
        (f->join == SQL_JOIN_INNER || f->join == SQL_JOIN_CROSS || f->join == SQL_JOIN_COMMA)) {
        int rc = flatten(c, f->left, fs);
        if (rc == FR_OK)
            rc = flatten(c, f->right, fs);
        if (rc == FR_OK && f->on)
            sc__add_conj(fs, f->on);
        return rc;
    }
    if (fs->n == MAX_ITEMS)
        return sc__unsupported(c, f->pos, "more than %d tables in one FROM are not supported",
                               MAX_ITEMS);
    struct sc_item *it = &fs->items[fs->n];
    sc__rel_init(&it->rel);
    int before = c->nleaves;
    int rc = sc__from_unit(c, f, fs->outer, &it->rel);
    it->leaf = -1;
    if (rc == FR_OK && f->kind == SQL_FROM_TABLE && c->nleaves == before + 1 && it->rel.ncols > 0 &&
        it->rel.cols[0].leaf == before &&
        json_array_size(json_object_get(it->rel.plan, "ops")) == 1)
        it->leaf = before;
    fs->n++;
    return rc;
}

void sc__build_all(struct sc_fromset *fs)
{
    int total = 0;
    for (int i = 0; i < fs->n; i++)
        total += fs->items[i].rel.ncols;
    fs->all.cols = fr_xcalloc((size_t)total + 1, sizeof(struct sc_col));
    fs->item_of = fr_xcalloc((size_t)total + 1, sizeof(int));
    for (int i = 0; i < fs->n; i++) {
        for (int k = 0; k < fs->items[i].rel.ncols; k++) {
            sc__col_copy(&fs->all.cols[fs->all.ncols], &fs->items[i].rel.cols[k]);
            fs->item_of[fs->all.ncols++] = i;
        }
    }
}

/* The items e reads (*mask) and whether it reads an outer scope. */
int sc__refs(struct sc_ctx *c, struct sc_fromset *fs, const struct sql_expr *e, uint64_t *mask,
             bool *outer)
{
    if (!e)
        return FR_OK;
    if (e->kind == SQL_E_COLUMN) {
        struct sc_scope s = {&fs->all, fs->outer, NULL, 0, false};
        struct sc_col *col = NULL;
        int level = 0;
        const struct sql_expr *alias = sc__alias(c, &s, e);
        if (alias) {
            c->alias_busy++;
            int rc = sc__refs(c, fs, alias, mask, outer);
            c->alias_busy--;
            return rc;
        }
        int rc = sc__resolve(c, &s, e, &col, &level);
        if (rc != FR_OK)
            return rc;
        if (level > 0)
            *outer = true;
        else
            *mask |= (uint64_t)1 << fs->item_of[col - fs->all.cols];
        return FR_OK;
    }
    if (e->kind == SQL_E_FUNC && e->window)
        return sc__invalid(c, e->pos, "window functions are not allowed in WHERE");
    int rc = FR_OK;
    for (int i = 0; rc == FR_OK && i < e->nargs; i++)
        rc = sc__refs(c, fs, e->args[i], mask, outer);
    if (rc == FR_OK)
        rc = sc__refs(c, fs, e->operand, mask, outer);
    if (rc == FR_OK)
        rc = sc__refs(c, fs, e->else_, mask, outer);
    return rc;
}

int sc__classify(struct sc_ctx *c, struct sc_fromset *fs)
{
    for (int i = 0; i < fs->nconj; i++) {
        struct sc_conj *k = &fs->conjs[i];
        k->subq = sc__has_subquery(k->e);
        int rc = sc__refs(c, fs, k->e, &k->mask, &k->outer);
        if (rc != FR_OK)
            return rc;
    }
    return FR_OK;
}

/* A filter on one item: a table's runs on the scan in its own names. */
static int item_filter(struct sc_ctx *c, struct sc_fromset *fs, int j, const struct sql_expr *e)
{
    struct sc_item *it = &fs->items[j];
    struct sc_scope s = {&it->rel, fs->outer, NULL, 0, false};
    if (it->leaf < 0)
        return sc__filter(c, &s, &it->rel, e, "WHERE");
    struct sc_ex x = {0};
    x.c = c;
    x.scope = &s;
    x.leaf_names = it->leaf;
    x.clause = "WHERE";
    char *text = NULL;
    int rc = sc__expr_text(&x, e, &text);
    sc__ex_cleanup(&x);
    if (rc != FR_OK)
        return rc;
    /* typed against the source's own names */
    struct sc_rel src;
    sc__rel_init(&src);
    for (int i = 0; i < it->rel.ncols; i++)
        if (it->rel.cols[i].orig)
            sc__rel_add(&src, it->rel.cols[i].orig, true, NULL, it->rel.cols[i].orig,
                        it->rel.cols[i].type);
    df_type t = DF_TYPE_NULL;
    rc = sc__expr_type(c, &src, text, e->pos, &t);
    sc__rel_cleanup(&src);
    if (rc == FR_OK && t != DF_TYPE_BOOL && t != DF_TYPE_NULL)
        rc = sc__invalid(c, e->pos, "WHERE needs a condition (a boolean), got %s", df_type_name(t));
    if (rc == FR_OK) {
        struct sc_leaf *l = &c->leaves[it->leaf];
        json_array_insert_new(l->ops, (size_t)l->nfilters++, json_pack("{ss}", "where", text));
    }
    free(text);
    return rc;
}

/* ---- OR of ANDs: common factors and per-table implied filters ---- */

struct parts {
    const struct sql_expr **v;
    int n;
};

static void split(const struct sql_expr *e, int op, struct parts *p)
{
    if (e->kind == SQL_E_BINARY && e->op == op) {
        split(e->args[0], op, p);
        split(e->args[1], op, p);
        return;
    }
    p->v = fr_xrealloc(p->v, sizeof(*p->v) * (size_t)(p->n + 1));
    p->v[p->n++] = e;
}

/* new: e's text against every item's columns, NULL if it does not compile. */
static char *scratch_text(struct sc_ctx *c, struct sc_fromset *fs, const struct sql_expr *e)
{
    struct sc_scope s = {&fs->all, fs->outer, NULL, 0, false};
    struct sc_ex x = {0};
    x.c = c;
    x.scope = &s;
    x.leaf_names = -1;
    struct fr_error scratch, *saved = c->err;
    fr_error_init(&scratch);
    c->err = &scratch;
    char *text = NULL;
    if (sc__has_subquery(e) || sc__expr_text(&x, e, &text) != FR_OK) {
        free(text);
        text = NULL;
    }
    c->err = saved;
    sc__ex_cleanup(&x);
    return text;
}

static bool in_all(struct sc_ctx *c, struct sc_fromset *fs, struct parts *d, int nd,
                   const char *text)
{
    for (int i = 1; i < nd; i++) {
        bool hit = false;
        for (int k = 0; k < d[i].n && !hit; k++) {
            char *t = scratch_text(c, fs, d[i].v[k]);
            hit = t && strcmp(t, text) == 0;
            free(t);
        }
        if (!hit)
            return false;
    }
    return true;
}

/* (a and b) or (a and c): a is a conjunct of its own (it may be a join key). */
static void or_factor(struct sc_ctx *c, struct sc_fromset *fs)
{
    int n = fs->nconj;
    for (int i = 0; i < n; i++) {
        const struct sql_expr *e = fs->conjs[i].e;
        if (fs->conjs[i].outer || fs->conjs[i].subq || e->kind != SQL_E_BINARY ||
            e->op != SQL_OP_OR)
            continue;
        struct parts ors = {NULL, 0};
        split(e, SQL_OP_OR, &ors);
        struct parts *d = fr_xcalloc((size_t)ors.n, sizeof(*d));
        for (int k = 0; k < ors.n; k++)
            split(ors.v[k], SQL_OP_AND, &d[k]);
        for (int k = 0; k < d[0].n; k++) {
            char *t = scratch_text(c, fs, d[0].v[k]);
            if (t && in_all(c, fs, d, ors.n, t)) {
                sc__add_conj(fs, d[0].v[k]);
                struct sc_conj *nk = &fs->conjs[fs->nconj - 1];
                sc__refs(c, fs, nk->e, &nk->mask, &nk->outer);
            }
            free(t);
        }
        for (int k = 0; k < ors.n; k++)
            free(d[k].v);
        free(d);
        free(ors.v);
    }
}

static struct sql_expr *synth(int op, const struct sql_expr *a, const struct sql_expr *b)
{
    struct sql_expr *e = fr_xcalloc(1, sizeof(*e));
    e->kind = SQL_E_BINARY;
    e->op = op;
    e->pos = a->pos;
    e->end = b->end;
    e->nargs = 2;
    e->args = fr_xcalloc(2, sizeof(*e->args));
    e->args[0] = (struct sql_expr *)a;
    e->args[1] = (struct sql_expr *)b;
    return e;
}

struct synths {
    struct sql_expr **v;
    int n;
};

static const struct sql_expr *combine(struct synths *made, int op, const struct sql_expr *acc,
                                      const struct sql_expr *e)
{
    if (!acc)
        return e;
    struct sql_expr *s = synth(op, acc, e);
    made->v = fr_xrealloc(made->v, sizeof(*made->v) * (size_t)(made->n + 1));
    made->v[made->n++] = s;
    return s;
}

/* The part of disjunct d that reads item j alone, NULL if none. */
static const struct sql_expr *own_part(struct sc_ctx *c, struct sc_fromset *fs,
                                       const struct sql_expr *d, int j, struct synths *made)
{
    struct parts p = {NULL, 0};
    split(d, SQL_OP_AND, &p);
    const struct sql_expr *acc = NULL;
    for (int k = 0; k < p.n; k++) {
        uint64_t m = 0;
        bool o = false;
        if (sc__has_subquery(p.v[k]) || sc__refs(c, fs, p.v[k], &m, &o) != FR_OK || o ||
            m != ((uint64_t)1 << j))
            continue;
        acc = combine(made, SQL_OP_AND, acc, p.v[k]);
    }
    free(p.v);
    return acc;
}

/* An OR over several tables implies, on table j, the OR of each disjunct's
 * conditions on j alone (when every disjunct has some): filtered early. */
static int or_pushdown(struct sc_ctx *c, struct sc_fromset *fs, int j)
{
    int rc = FR_OK;
    for (int i = 0; rc == FR_OK && i < fs->nconj; i++) {
        const struct sc_conj *k = &fs->conjs[i];
        uint64_t bit = (uint64_t)1 << j;
        if (k->done || k->outer || k->subq || !(k->mask & bit) || k->mask == bit ||
            k->e->kind != SQL_E_BINARY || k->e->op != SQL_OP_OR)
            continue;
        struct parts ors = {NULL, 0};
        split(k->e, SQL_OP_OR, &ors);
        struct synths made = {NULL, 0};
        const struct sql_expr *acc = NULL;
        bool all = true;
        for (int d = 0; d < ors.n && all; d++) {
            const struct sql_expr *own = own_part(c, fs, ors.v[d], j, &made);
            all = own != NULL;
            if (own)
                acc = combine(&made, SQL_OP_OR, acc, own);
        }
        if (all && acc)
            rc = item_filter(c, fs, j, acc);
        for (int m = 0; m < made.n; m++) {
            free(made.v[m]->args);
            free(made.v[m]);
        }
        free(made.v);
        free(ors.v);
    }
    return rc;
}

/* The item to join next: one sharing an equality with the joined set. */
static int next_item(struct sc_fromset *fs, uint64_t joined, uint64_t left)
{
    for (int j = 0; j < fs->n; j++) {
        if (!(left & ((uint64_t)1 << j)))
            continue;
        uint64_t bit = (uint64_t)1 << j;
        for (int i = 0; i < fs->nconj; i++) {
            const struct sc_conj *k = &fs->conjs[i];
            if (k->done || k->outer || k->subq || !(k->mask & bit) || (k->mask & ~(joined | bit)))
                continue;
            if (k->e->kind == SQL_E_BINARY && k->e->op == SQL_OP_EQ)
                return j;
        }
    }
    for (int j = 0; j < fs->n; j++)
        if (left & ((uint64_t)1 << j))
            return j;
    return -1;
}

/* Joins item j into r on every equality between r's items and j. */
static int join_item(struct sc_ctx *c, struct sc_fromset *fs, struct sc_rel *r, uint64_t joined,
                     int j)
{
    uint64_t bit = (uint64_t)1 << j;
    json_t *lk = json_array(), *rk = json_array();
    int rc = FR_OK;
    for (int i = 0; rc == FR_OK && i < fs->nconj; i++) {
        struct sc_conj *k = &fs->conjs[i];
        if (k->done || k->outer || k->subq || k->e->kind != SQL_E_BINARY || k->e->op != SQL_OP_EQ)
            continue;
        uint64_t m0 = 0, m1 = 0;
        bool o0 = false, o1 = false;
        sc__refs(c, fs, k->e->args[0], &m0, &o0);
        sc__refs(c, fs, k->e->args[1], &m1, &o1);
        const struct sql_expr *le = NULL, *re = NULL;
        if (m0 && m1 && !(m0 & ~joined) && m1 == bit)
            le = k->e->args[0], re = k->e->args[1];
        else if (m0 && m1 && !(m1 & ~joined) && m0 == bit)
            le = k->e->args[1], re = k->e->args[0];
        if (!le)
            continue;
        char *a = NULL, *b = NULL;
        rc = sc__key_column(c, fs->outer, r, le, &a);
        if (rc == FR_OK)
            rc = sc__key_column(c, fs->outer, &fs->items[j].rel, re, &b);
        if (rc == FR_OK)
            rc = sc__key_types(c, r, a, &fs->items[j].rel, b, k->e->pos);
        if (rc == FR_OK) {
            json_array_append_new(lk, json_string(a));
            json_array_append_new(rk, json_string(b));
            k->done = true;
        }
        free(a);
        free(b);
    }
    if (rc == FR_OK && json_array_size(lk) > 0) {
        sc__join(c, r, &fs->items[j].rel, "inner", lk, rk);
        return FR_OK;
    }
    json_decref(lk);
    json_decref(rk);
    if (rc == FR_OK)
        sc__cross(c, r, &fs->items[j].rel, "inner");
    return rc;
}

/* Filters on r every pending conjunct whose items are all joined. */
static int apply_ready(struct sc_ctx *c, struct sc_fromset *fs, struct sc_scope *scope,
                       struct sc_rel *r, uint64_t joined)
{
    for (int i = 0; i < fs->nconj; i++) {
        struct sc_conj *k = &fs->conjs[i];
        if (k->done || k->outer || k->subq || (k->mask & ~joined))
            continue;
        k->done = true;
        int rc = sc__filter(c, scope, r, k->e, "WHERE");
        if (rc != FR_OK)
            return rc;
    }
    return FR_OK;
}

static int join_all(struct sc_ctx *c, struct sc_fromset *fs, struct sc_scope *scope,
                    struct sc_rel *out)
{
    *out = fs->items[0].rel;
    sc__rel_init(&fs->items[0].rel);
    scope->rel = out;
    uint64_t joined = 1, left = 0;
    for (int j = 1; j < fs->n; j++)
        left |= (uint64_t)1 << j;
    int rc = apply_ready(c, fs, scope, out, joined);
    while (rc == FR_OK && left) {
        int j = next_item(fs, joined, left);
        rc = join_item(c, fs, out, joined, j);
        joined |= (uint64_t)1 << j;
        left &= ~((uint64_t)1 << j);
        if (rc == FR_OK)
            rc = apply_ready(c, fs, scope, out, joined);
    }
    return rc;
}

/* Correlated conjuncts of a subquery: inner = outer equalities are pulled
 * out for the join that the subquery becomes; anything else is refused. */
static int correlated(struct sc_ctx *c, struct sc_fromset *fs, struct sc_scope *scope,
                      struct sc_conj *k)
{
    const struct sql_expr *e = k->e;
    struct sc_scope *h = scope->outer;
    if (h && h->correlated_ok && e->kind == SQL_E_BINARY && e->op == SQL_OP_EQ && !k->subq) {
        uint64_t m0 = 0, m1 = 0;
        bool o0 = false, o1 = false;
        sc__refs(c, fs, e->args[0], &m0, &o0);
        sc__refs(c, fs, e->args[1], &m1, &o1);
        const struct sql_expr *in = NULL, *out = NULL;
        if (!o0 && o1 && !m1)
            in = e->args[0], out = e->args[1];
        else if (!o1 && o0 && !m0)
            in = e->args[1], out = e->args[0];
        if (in) {
            h->corr = fr_xrealloc(h->corr, sizeof(*h->corr) * (size_t)(h->ncorr + 1));
            h->corr[h->ncorr].inner = (struct sql_expr *)in;
            h->corr[h->ncorr++].outer = (struct sql_expr *)out;
            return FR_OK;
        }
    }
    return sc__unsupported(c, e->pos,
                           "this correlated subquery condition is not supported (only "
                           "inner = outer equalities joined by AND)");
}

static int finish(struct sc_ctx *c, struct sc_fromset *fs, struct sc_scope *scope,
                  struct sc_rel *out)
{
    int rc = FR_OK;
    for (int i = 0; rc == FR_OK && i < fs->nconj; i++) {
        struct sc_conj *k = &fs->conjs[i];
        if (k->done)
            continue;
        k->done = true;
        if (k->outer && !k->subq)
            rc = correlated(c, fs, scope, k);
        else if (sc__is_subquery_conjunct(k->e))
            rc = sc__subquery_conjunct(c, scope, out, k->e);
        else
            rc = sc__filter(c, scope, out, k->e, "WHERE");
    }
    return rc;
}

void sc__fromset_cleanup(struct sc_fromset *fs)
{
    for (int i = 0; i < fs->n; i++)
        sc__rel_cleanup(&fs->items[i].rel);
    free(fs->conjs);
    sc__rel_cleanup(&fs->all);
    free(fs->item_of);
}

static int plan_from(struct sc_ctx *c, struct sc_fromset *fs, struct sc_scope *scope,
                     struct sc_rel *out)
{
    sc__build_all(fs);
    int rc = sc__classify(c, fs);
    if (rc != FR_OK)
        return rc;
    or_factor(c, fs);
    for (int i = 0; rc == FR_OK && i < fs->nconj; i++) {
        struct sc_conj *k = &fs->conjs[i];
        if (k->outer || k->subq || k->mask == 0 || (k->mask & (k->mask - 1)))
            continue;
        int j = __builtin_ctzll(k->mask);
        k->done = true;
        rc = item_filter(c, fs, j, k->e);
    }
    for (int j = 0; rc == FR_OK && j < fs->n && fs->n > 1; j++)
        rc = or_pushdown(c, fs, j);
    if (rc == FR_OK)
        rc = join_all(c, fs, scope, out);
    if (rc == FR_OK)
        rc = finish(c, fs, scope, out);
    return rc;
}

int sc__from_where(struct sc_ctx *c, const struct sql_select *s, struct sc_scope *scope,
                   struct sc_rel *out)
{
    if (!s->from) {
        sc__one_row(c, out);
        return s->where ? sc__filter(c, scope, out, s->where, "WHERE") : FR_OK;
    }
    struct sc_fromset *fs = fr_xcalloc(1, sizeof(*fs));
    fs->outer = scope->outer;
    int rc = flatten(c, s->from, fs);
    if (rc == FR_OK && s->where)
        sc__add_conj(fs, s->where);
    if (rc == FR_OK)
        rc = plan_from(c, fs, scope, out);
    sc__fromset_cleanup(fs);
    free(fs);
    return rc;
}

/* A FROM item on its own (the sides of an outer join). */
int sc__from_tree(struct sc_ctx *c, const struct sql_from *f, struct sc_scope *outer,
                  struct sc_rel *out)
{
    struct sc_fromset *fs = fr_xcalloc(1, sizeof(*fs));
    fs->outer = outer;
    struct sc_scope scope = {out, outer, NULL, 0, false};
    int rc = flatten(c, f, fs);
    if (rc == FR_OK)
        rc = plan_from(c, fs, &scope, out);
    sc__fromset_cleanup(fs);
    free(fs);
    free(scope.corr);
    return rc;
}
