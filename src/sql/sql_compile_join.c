/* sql_compile_join: a join that is not flattened into the FROM list: LEFT,
 * RIGHT and FULL joins, and joins with USING or NATURAL. ON is split into
 * equalities between the sides (the keys) and conditions on the side whose
 * rows may be dropped (filtered before the join); a condition that would
 * change meaning elsewhere is refused by name. USING merges its columns. */
#include "sql_compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *how_name(enum sql_join_kind k)
{
    switch (k) {
    case SQL_JOIN_LEFT:
        return "left";
    case SQL_JOIN_RIGHT:
        return "right";
    case SQL_JOIN_FULL:
        return "outer";
    default:
        return "inner";
    }
}

struct jside {
    json_t *lk, *rk;
    struct sql_expr **after; /* inner join conditions left for after it */
    int nafter;
};

static int using_col(struct sc_ctx *c, struct sc_rel *r, const struct sql_name *n,
                     struct sc_col **out)
{
    struct sql_expr e;
    memset(&e, 0, sizeof(e));
    e.kind = SQL_E_COLUMN;
    e.pos = n->pos;
    e.name = *n;
    struct sc_scope s = {r, NULL, NULL, 0, false};
    int level = 0;
    return sc__resolve(c, &s, &e, out, &level);
}

/* USING (a, b) or NATURAL: keys by name; the duplicates are hidden. */
static int using_keys(struct sc_ctx *c, const struct sql_from *f, struct sc_rel *l,
                      struct sc_rel *r, struct jside *j, struct sql_name *names, int n)
{
    for (int i = 0; i < n; i++) {
        struct sc_col *a = NULL, *b = NULL;
        int rc = using_col(c, l, &names[i], &a);
        if (rc == FR_OK)
            rc = using_col(c, r, &names[i], &b);
        if (rc == FR_OK)
            rc = sc__key_types(c, l, a->internal, r, b->internal, names[i].pos);
        if (rc != FR_OK)
            return rc;
        sc__leaf_use(c, a);
        sc__leaf_use(c, b);
        json_array_append_new(j->lk, json_string(a->internal));
        json_array_append_new(j->rk, json_string(b->internal));
        b->hidden = b->merged = true;
        if (f->join == SQL_JOIN_FULL || f->join == SQL_JOIN_RIGHT)
            a->hidden = a->merged = true;
    }
    return FR_OK;
}

/* NATURAL: the names both sides have. */
static int natural_names(const struct sc_rel *l, const struct sc_rel *r, struct sql_name **out)
{
    int n = 0;
    *out = fr_xcalloc((size_t)l->ncols + 1, sizeof(**out));
    for (int i = 0; i < l->ncols; i++) {
        if (l->cols[i].hidden)
            continue;
        for (int k = 0; k < r->ncols; k++) {
            if (!r->cols[k].hidden && sc__name_eq(l->cols[i].name, r->cols[k].name, false)) {
                (*out)[n].text = l->cols[i].name;
                (*out)[n].quoted = true;
                n++;
                break;
            }
        }
    }
    return n;
}

/* One conjunct of ON: a key, a filter on one side before the join, or
 * (inner joins) a filter after it. */
static int on_conj(struct sc_ctx *c, const struct sql_from *f, struct sc_fromset *fs,
                   struct sc_scope *outer, struct sc_conj *k, struct jside *j)
{
    const struct sql_expr *e = k->e;
    bool inner = f->join != SQL_JOIN_LEFT && f->join != SQL_JOIN_RIGHT && f->join != SQL_JOIN_FULL;
    if (e->kind == SQL_E_BINARY && e->op == SQL_OP_EQ && !k->subq && !k->outer) {
        uint64_t m0 = 0, m1 = 0;
        bool o0 = false, o1 = false;
        sc__refs(c, fs, e->args[0], &m0, &o0);
        sc__refs(c, fs, e->args[1], &m1, &o1);
        if ((m0 == 1 && m1 == 2) || (m0 == 2 && m1 == 1)) {
            const struct sql_expr *le = m0 == 1 ? e->args[0] : e->args[1];
            const struct sql_expr *re = m0 == 1 ? e->args[1] : e->args[0];
            char *a = NULL, *b = NULL;
            int rc = sc__key_column(c, outer, &fs->items[0].rel, le, &a);
            if (rc == FR_OK)
                rc = sc__key_column(c, outer, &fs->items[1].rel, re, &b);
            if (rc == FR_OK)
                rc = sc__key_types(c, &fs->items[0].rel, a, &fs->items[1].rel, b, e->pos);
            if (rc == FR_OK) {
                json_array_append_new(j->lk, json_string(a));
                json_array_append_new(j->rk, json_string(b));
            }
            free(a);
            free(b);
            return rc;
        }
    }
    if (!k->subq && !k->outer && (k->mask == 2 || k->mask == 0) &&
        (inner || f->join == SQL_JOIN_LEFT)) {
        struct sc_scope s = {&fs->items[1].rel, outer, NULL, 0, false};
        return sc__filter(c, &s, &fs->items[1].rel, e, "ON");
    }
    if (!k->subq && !k->outer && k->mask == 1 && (inner || f->join == SQL_JOIN_RIGHT)) {
        struct sc_scope s = {&fs->items[0].rel, outer, NULL, 0, false};
        return sc__filter(c, &s, &fs->items[0].rel, e, "ON");
    }
    if (inner) {
        j->after = fr_xrealloc(j->after, sizeof(*j->after) * (size_t)(j->nafter + 1));
        j->after[j->nafter++] = (struct sql_expr *)e;
        return FR_OK;
    }
    return sc__unsupported(c, e->pos,
                           "this condition in the ON of a %s JOIN is not supported (equalities "
                           "between the two sides, and conditions on the %s side alone, are)",
                           f->join == SQL_JOIN_LEFT    ? "LEFT"
                           : f->join == SQL_JOIN_RIGHT ? "RIGHT"
                                                       : "FULL",
                           f->join == SQL_JOIN_LEFT    ? "right"
                           : f->join == SQL_JOIN_RIGHT ? "left"
                                                       : "neither");
}

/* FULL JOIN USING: the merged column is the coalesce of the two; RIGHT JOIN
 * USING: a copy of the right key, so that the right side's own key keeps its
 * place for a t.* of the right table. */
static int merge_full(struct sc_ctx *c, const struct sql_from *f, struct sc_rel *out,
                      struct jside *j)
{
    bool merged = f->nusing > 0 || f->natural; /* FULL JOIN ... ON keeps both sides */
    bool full = f->join == SQL_JOIN_FULL;
    for (size_t i = 0; merged && (full || f->join == SQL_JOIN_RIGHT) && i < json_array_size(j->lk);
         i++) {
        char *a = sc__quote(json_string_value(json_array_get(j->lk, i)));
        char *b = sc__quote(json_string_value(json_array_get(j->rk, i)));
        char *text = full ? fr_xasprintf("coalesce(%s, %s)", a, b) : fr_xasprintf("%s", b);
        const char *name = NULL;
        for (int k = 0; k < out->ncols; k++)
            if (strcmp(out->cols[k].internal, json_string_value(json_array_get(j->lk, i))) == 0)
                name = out->cols[k].name;
        char *nm = fr_xstrdup(name ? name : "key");
        const char *col = sc__add_computed(c, out, text, nm, f->pos);
        free(text);
        free(a);
        free(b);
        free(nm);
        if (!col)
            return FR_EINVAL;
        out->cols[out->ncols - 1].hidden = false;
    }
    return FR_OK;
}

/* The visible column of USING key i: the coalesce for FULL and the right
 * key's copy for RIGHT (merge_full adds them last, in key order), else the
 * left's. */
static int using_index(const struct sql_from *f, const struct sc_rel *out, const struct jside *j,
                       size_t i)
{
    size_t nk = json_array_size(j->lk);
    if (f->join == SQL_JOIN_FULL || f->join == SQL_JOIN_RIGHT)
        return out->ncols - (int)nk + (int)i;
    const char *want = json_string_value(json_array_get(j->lk, i));
    for (int k = 0; k < out->ncols; k++)
        if (!out->cols[k].hidden && strcmp(out->cols[k].internal, want) == 0)
            return k;
    return -1;
}

/* USING and NATURAL: each key where the left side has it (DuckDB), read as
 * the right side's for RIGHT and the coalesce for FULL; the left's hidden
 * key follows it (a t.* lists it in place). The first nleft columns are the
 * left side's. */
static void using_in_place(const struct sql_from *f, struct sc_rel *out, const struct jside *j,
                           int nleft)
{
    size_t nk = json_array_size(j->lk);
    if ((f->nusing == 0 && !f->natural) || nk == 0 || out->ncols == 0 ||
        (f->join != SQL_JOIN_RIGHT && f->join != SQL_JOIN_FULL))
        return;
    int *slot = fr_xcalloc((size_t)out->ncols, sizeof(*slot)); /* -1, or the key's column */
    bool *moved = fr_xcalloc((size_t)out->ncols, sizeof(*moved));
    for (int k = 0; k < out->ncols; k++)
        slot[k] = -1;
    for (size_t i = 0; i < nk; i++) {
        const char *lk = json_string_value(json_array_get(j->lk, i));
        int v = using_index(f, out, j, i);
        for (int k = 0; v >= 0 && k < nleft; k++)
            if (slot[k] < 0 && !moved[v] && strcmp(out->cols[k].internal, lk) == 0) {
                slot[k] = v;
                moved[v] = true;
            }
    }
    struct sc_col *cols = fr_xcalloc((size_t)out->ncols, sizeof(*cols));
    int n = 0;
    for (int k = 0; k < out->ncols; k++) {
        if (slot[k] >= 0) { /* the visible key, then the hidden left key (for t.*) */
            cols[n++] = out->cols[slot[k]];
            cols[n++] = out->cols[k];
        } else if (!moved[k]) {
            cols[n++] = out->cols[k];
        }
    }
    memcpy(out->cols, cols, sizeof(*cols) * (size_t)out->ncols);
    free(cols);
    free(slot);
    free(moved);
}

static int join_sides(struct sc_ctx *c, const struct sql_from *f, struct sc_fromset *fs,
                      struct sc_scope *outer, struct jside *j)
{
    int rc = FR_OK;
    if (f->nusing > 0 || f->natural) {
        struct sql_name *names = f->using_cols;
        int n = f->nusing;
        if (f->natural)
            n = natural_names(&fs->items[0].rel, &fs->items[1].rel, &names);
        rc = using_keys(c, f, &fs->items[0].rel, &fs->items[1].rel, j, names, n);
        if (f->natural)
            free(names);
    }
    if (rc == FR_OK && f->on) {
        sc__add_conj(fs, f->on);
        sc__build_all(fs);
        rc = sc__classify(c, fs);
        for (int i = 0; rc == FR_OK && i < fs->nconj; i++)
            rc = on_conj(c, f, fs, outer, &fs->conjs[i], j);
    }
    return rc;
}

int sc__outer_join(struct sc_ctx *c, const struct sql_from *f, struct sc_scope *outer,
                   struct sc_rel *out)
{
    struct sc_fromset *fs = fr_xcalloc(1, sizeof(*fs));
    fs->outer = outer;
    fs->n = 2;
    sc__rel_init(&fs->items[0].rel);
    sc__rel_init(&fs->items[1].rel);
    fs->items[0].leaf = fs->items[1].leaf = -1;
    struct jside j = {json_array(), json_array(), NULL, 0};
    int rc = sc__from_tree(c, f->left, outer, &fs->items[0].rel);
    if (rc == FR_OK)
        rc = sc__from_tree(c, f->right, outer, &fs->items[1].rel);
    if (rc == FR_OK)
        rc = join_sides(c, f, fs, outer, &j);
    bool inner = strcmp(how_name(f->join), "inner") == 0;
    if (rc == FR_OK && json_array_size(j.lk) == 0 && !inner)
        rc = sc__unsupported(c, f->pos,
                             "an outer join needs an equality between its two sides in ON");
    if (rc == FR_OK) {
        *out = fs->items[0].rel;
        int nleft = out->ncols;
        sc__rel_init(&fs->items[0].rel);
        if (json_array_size(j.lk) > 0) {
            sc__join(c, out, &fs->items[1].rel, how_name(f->join), json_incref(j.lk),
                     json_incref(j.rk));
        } else {
            sc__cross(c, out, &fs->items[1].rel, "inner");
        }
        rc = merge_full(c, f, out, &j);
        if (rc == FR_OK)
            using_in_place(f, out, &j, nleft);
        struct sc_scope s = {out, outer, NULL, 0, false};
        for (int i = 0; rc == FR_OK && i < j.nafter; i++)
            rc = sc__filter(c, &s, out, j.after[i], "ON");
    }
    json_decref(j.lk);
    json_decref(j.rk);
    free(j.after);
    sc__fromset_cleanup(fs);
    free(fs);
    return rc;
}
