/* sql_compile_scope: relations (a plan and its columns), the tables they
 * start from (a CTE, inlined at each reference, or the catalog's table read
 * through a renaming select that lists only the columns the query uses),
 * and the resolution of column names in nested scopes. */
#include "sql_compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void sc__rel_init(struct sc_rel *r)
{
    memset(r, 0, sizeof(*r));
}

static void col_cleanup(struct sc_col *col)
{
    free(col->name);
    free(col->qual);
    free(col->internal);
    free(col->orig);
}

void sc__rel_cleanup(struct sc_rel *r)
{
    if (!r)
        return;
    json_decref(r->plan);
    for (int i = 0; i < r->ncols; i++)
        col_cleanup(&r->cols[i]);
    free(r->cols);
    memset(r, 0, sizeof(*r));
}

void sc__rel_truncate(struct sc_rel *r, int n)
{
    for (int i = n; i < r->ncols; i++)
        col_cleanup(&r->cols[i]);
    if (n < r->ncols)
        r->ncols = n;
}

void sc__rel_op(struct sc_rel *r, json_t *op)
{
    json_array_append_new(json_object_get(r->plan, "ops"), op);
}

static char *dup_or_null(const char *s)
{
    return s ? fr_xstrdup(s) : NULL;
}

struct sc_col *sc__rel_add(struct sc_rel *r, const char *name, bool quoted, const char *qual,
                           const char *internal, df_type type)
{
    r->cols = fr_xrealloc(r->cols, sizeof(*r->cols) * (size_t)(r->ncols + 1));
    struct sc_col *col = &r->cols[r->ncols++];
    memset(col, 0, sizeof(*col));
    col->name = fr_xstrdup(name);
    col->quoted = quoted;
    col->qual = dup_or_null(qual);
    col->internal = fr_xstrdup(internal);
    col->type = type;
    col->leaf = -1;
    return col;
}

void sc__col_copy(struct sc_col *dst, const struct sc_col *src)
{
    *dst = *src;
    dst->name = fr_xstrdup(src->name);
    dst->qual = dup_or_null(src->qual);
    dst->internal = fr_xstrdup(src->internal);
    dst->orig = dup_or_null(src->orig);
}

void sc__rel_schema(const struct sc_rel *r, struct df_schema *out)
{
    df_schema_init(out);
    for (int i = 0; i < r->ncols; i++)
        df_schema_add(out, r->cols[i].internal, r->cols[i].type);
}

bool sc__name_eq(const char *stored, const char *name, bool quoted)
{
    return quoted ? strcmp(stored, name) == 0 : strcasecmp(stored, name) == 0;
}

/* The FROM item's name and column aliases on a relation. */
static int apply_alias(struct sc_ctx *c, const struct sql_from *f, const char *dflt,
                       struct sc_rel *r)
{
    const char *qual = f->alias.text ? f->alias.text : dflt;
    if (f->ncol_aliases > r->ncols)
        return sc__invalid(c, f->col_aliases[0].pos,
                           "'%s' has %d columns but %d column aliases were given", qual, r->ncols,
                           f->ncol_aliases);
    for (int i = 0; i < r->ncols; i++) {
        free(r->cols[i].qual);
        r->cols[i].qual = dup_or_null(qual);
        if (i < f->ncol_aliases) {
            free(r->cols[i].name);
            r->cols[i].name = fr_xstrdup(f->col_aliases[i].text);
            r->cols[i].quoted = f->col_aliases[i].quoted;
        }
    }
    return FR_OK;
}

static int cte_table(struct sc_ctx *c, struct sc_cte *cte, const struct sql_from *f,
                     struct sc_rel *out)
{
    struct sc_cte *saved = c->ctes;
    c->ctes = cte->next; /* a CTE sees the ones defined before it, not itself */
    int rc = sc__query(c, cte->def->query, NULL, out);
    c->ctes = saved;
    if (rc != FR_OK)
        return rc;
    c->cte_bytes += json_dumpb(out->plan, NULL, 0, JSON_COMPACT);
    if (c->cte_bytes > SC_MAX_CTE_BYTES)
        return sc__unsupported(c, f->table.pos,
                               "the WITH queries' references expand to a plan of more than %zu "
                               "MB (each reference compiles its query again)",
                               SC_MAX_CTE_BYTES >> 20);
    const struct sql_cte *d = cte->def;
    if (d->ncols > out->ncols)
        return sc__invalid(c, d->name.pos, "WITH %s names %d columns but its query gives %d",
                           d->name.text, d->ncols, out->ncols);
    for (int i = 0; i < d->ncols; i++) {
        free(out->cols[i].name);
        out->cols[i].name = fr_xstrdup(d->cols[i].text);
        out->cols[i].quoted = d->cols[i].quoted;
    }
    return apply_alias(c, f, d->name.text, out);
}

static int unknown_table(struct sc_ctx *c, const struct sql_name *name)
{
    char **names = NULL;
    int n = 0;
    if (c->cat->names)
        c->cat->names(c->cat->arg, &names, &n);
    const char *best = NULL;
    int best_d = 3;
    for (struct sc_cte *t = c->ctes; t; t = t->next) {
        int d = fr_edit_distance(name->text, t->def->name.text);
        if (d >= 0 && d < best_d)
            best = t->def->name.text, best_d = d;
    }
    for (int i = 0; i < n; i++) {
        int d = fr_edit_distance(name->text, names[i]);
        if (d >= 0 && d < best_d)
            best = names[i], best_d = d;
    }
    int rc =
        sc__err(c, name->pos, FR_ENOTFOUND, "dataset-not-found", "no table '%s'%s%s%s", name->text,
                best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

static void add_leaf(struct sc_ctx *c, struct sc_rel *r, json_t *select)
{
    c->leaves = fr_xrealloc(c->leaves, sizeof(*c->leaves) * (size_t)(c->nleaves + 1));
    struct sc_leaf *l = &c->leaves[c->nleaves];
    memset(l, 0, sizeof(*l));
    l->ops = json_object_get(r->plan, "ops");
    l->select = select;
    l->ncols = r->ncols;
    l->used = fr_xcalloc((size_t)r->ncols + 1, sizeof(bool));
    l->internal = fr_xcalloc((size_t)r->ncols + 1, sizeof(char *));
    l->orig = fr_xcalloc((size_t)r->ncols + 1, sizeof(char *));
    for (int i = 0; i < r->ncols; i++) {
        r->cols[i].leaf = c->nleaves;
        l->internal[i] = fr_xstrdup(r->cols[i].internal);
        l->orig[i] = fr_xstrdup(r->cols[i].orig);
    }
    c->nleaves++;
}

static int catalog_table(struct sc_ctx *c, const struct sql_from *f, struct sc_rel *out)
{
    json_t *source = NULL;
    struct df_schema schema;
    df_schema_init(&schema);
    int rc = c->cat->lookup(c->cat->arg, f->table.text, f->table.quoted, &source, &schema, c->err);
    if (rc == FR_ENOTFOUND) {
        json_decref(source);
        df_schema_cleanup(&schema);
        return unknown_table(c, &f->table);
    }
    if (rc != FR_OK) {
        json_decref(source);
        df_schema_cleanup(&schema);
        return rc;
    }
    json_t *select = json_array();
    out->plan = json_pack("{so s[{sO}]}", "source", source, "ops", "select", select);
    for (int i = 0; i < schema.nfields; i++) {
        char *internal = sc__new_internal(c, schema.fields[i].name);
        struct sc_col *col =
            sc__rel_add(out, schema.fields[i].name, true, NULL, internal, schema.fields[i].type);
        col->orig = fr_xstrdup(schema.fields[i].name);
        free(internal);
    }
    add_leaf(c, out, select);
    json_decref(select);
    df_schema_cleanup(&schema);
    return apply_alias(c, f, f->table.text, out);
}

int sc__table(struct sc_ctx *c, const struct sql_from *f, struct sc_rel *out)
{
    if (++c->nrefs > SC_MAX_TABLE_REFS)
        return sc__unsupported(c, f->table.pos,
                               "the query reads more than %d tables (each reference to a WITH "
                               "query compiles it again)",
                               SC_MAX_TABLE_REFS);
    for (struct sc_cte *t = c->ctes; t; t = t->next)
        if (sc__name_eq(t->def->name.text, f->table.text, f->table.quoted))
            return cte_table(c, t, f, out);
    return catalog_table(c, f, out);
}

void sc__leaf_use(struct sc_ctx *c, const struct sc_col *col)
{
    if (col->leaf < 0 || col->leaf >= c->nleaves || !col->orig)
        return;
    struct sc_leaf *l = &c->leaves[col->leaf];
    for (int k = 0; k < l->ncols; k++) {
        if (l->used[k] || strcmp(l->internal[k], col->internal) != 0)
            continue;
        l->used[k] = true;
        char *qo = sc__quote(l->orig[k]), *qi = sc__quote(l->internal[k]);
        json_array_append_new(l->select, json_sprintf("%s as %s", qo, qi));
        free(qo);
        free(qi);
        return;
    }
}

/* A table none of whose columns the query reads (count(*)) still needs a
 * select that is not empty: its first column. */
void sc__leaves_finish(struct sc_ctx *c)
{
    for (int i = 0; i < c->nleaves; i++) {
        struct sc_leaf *l = &c->leaves[i];
        if (json_array_size(l->select) == 0 && l->ncols > 0) {
            char *qo = sc__quote(l->orig[0]), *qi = sc__quote(l->internal[0]);
            json_array_append_new(l->select, json_sprintf("%s as %s", qo, qi));
            free(qo);
            free(qi);
        }
    }
}

static bool col_matches(const struct sc_col *col, const struct sql_expr *e)
{
    if (e->qual.text) {
        if (!col->qual || !sc__name_eq(col->qual, e->qual.text, e->qual.quoted))
            return false;
    } else if (col->hidden) {
        return false;
    }
    return sc__name_eq(col->name, e->name.text, e->name.quoted);
}

static int ambiguous(struct sc_ctx *c, const struct sc_rel *r, const struct sql_expr *e)
{
    struct fr_buf b;
    fr_buf_init(&b);
    int n = 0;
    for (int i = 0; i < r->ncols; i++) {
        if (!col_matches(&r->cols[i], e))
            continue;
        fr_buf_printf(&b, "%s%s.%s", n++ ? ", " : "", r->cols[i].qual ? r->cols[i].qual : "?",
                      r->cols[i].name);
    }
    int rc = sc__invalid(c, e->pos, "column reference '%s' is ambiguous (%s)", e->name.text,
                         b.data ? b.data : "");
    fr_buf_cleanup(&b);
    return rc;
}

static int unknown_column(struct sc_ctx *c, struct sc_scope *s, const struct sql_expr *e)
{
    const char *best = NULL;
    int best_d = 3;
    bool qual_known = !e->qual.text;
    for (; s; s = s->outer) {
        for (int i = 0; s->rel && i < s->rel->ncols; i++) {
            const struct sc_col *col = &s->rel->cols[i];
            bool q =
                e->qual.text && col->qual && sc__name_eq(col->qual, e->qual.text, e->qual.quoted);
            qual_known = qual_known || q;
            if (e->qual.text && !q)
                continue;
            int d = fr_edit_distance(e->name.text, col->name);
            if (d >= 0 && d < best_d)
                best = col->name, best_d = d;
        }
    }
    if (!qual_known)
        return sc__invalid(c, e->qual.pos, "no table '%s' in FROM for the column '%s.%s'",
                           e->qual.text, e->qual.text, e->name.text);
    return sc__invalid(c, e->pos, "unknown column '%s%s%s'%s%s%s", e->qual.text ? e->qual.text : "",
                       e->qual.text ? "." : "", e->name.text, best ? "; did you mean '" : "",
                       best ? best : "", best ? "'?" : "");
}

int sc__resolve(struct sc_ctx *c, struct sc_scope *s, const struct sql_expr *e,
                struct sc_col **found, int *level)
{
    int lv = 0;
    for (struct sc_scope *sc = s; sc; sc = sc->outer, lv++) {
        struct sc_col *hit = NULL;
        int n = 0;
        for (int i = 0; sc->rel && i < sc->rel->ncols; i++) {
            if (col_matches(&sc->rel->cols[i], e)) {
                hit = hit ? hit : &sc->rel->cols[i];
                n++;
            }
        }
        if (n > 1)
            return ambiguous(c, sc->rel, e);
        if (n == 1) {
            *found = hit;
            *level = lv;
            return FR_OK;
        }
    }
    return unknown_column(c, s, e);
}

const struct sql_expr *sc__alias(struct sc_ctx *c, struct sc_scope *s, const struct sql_expr *e)
{
    const struct sql_select *sel = c->alias_sel;
    if (!sel || c->alias_busy || e->kind != SQL_E_COLUMN || e->qual.text)
        return NULL;
    struct fr_error scratch, *saved = c->err;
    fr_error_init(&scratch);
    c->err = &scratch;
    struct sc_col *col = NULL;
    int level = 0;
    int rc = sc__resolve(c, s, e, &col, &level);
    c->err = saved;
    if (rc == FR_OK || strstr(scratch.message, "ambiguous"))
        return NULL;
    for (int i = 0; i < sel->nitems; i++)
        if (sel->items[i].alias.text &&
            sc__name_eq(sel->items[i].alias.text, e->name.text, e->name.quoted))
            return sel->items[i].expr;
    return NULL;
}
