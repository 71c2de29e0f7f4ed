/* plan_optimize: rewrites of the logical plan: predicates move below
 * projections and sorts (so they run right after the scan), and a file scan
 * reads only the columns the plan uses (projection push-down). */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>

/* The names of the columns a filter reads, as bound against s. */
static int filter_columns(const char *text, const struct df_schema *s, int *cols, int cap)
{
    df_expr *e = NULL;
    struct fr_error err;
    fr_error_init(&err);
    if (df_expr_parse(text, s, &e, &err) != FR_OK)
        return -1;
    int n = 0;
    df_expr_columns(e, cols, &n, cap);
    df_expr_free(e);
    return n;
}

static bool passes_through(const struct lop *proj, const char *name)
{
    for (int i = 0; i < proj->nitems; i++)
        if (proj->items[i].col && strcmp(proj->items[i].col, name) == 0 &&
            strcmp(proj->items[i].name, name) == 0)
            return true;
    return false;
}

/* A filter passes a window only when it reads partition keys alone: it then
 * keeps or drops whole partitions, which changes no function's value. */
static bool only_partition_keys(const struct lop *f, const struct lop *w)
{
    int cols[256];
    int n = filter_columns(f->expr, &w->schema, cols, 256);
    if (n < 0 || n >= 256)
        return false;
    for (int i = 0; i < n; i++) {
        bool key = false;
        for (int k = 0; k < w->nby && !key; k++)
            key = strcmp(w->schema.fields[cols[i]].name, w->by[k]) == 0;
        if (!key)
            return false;
    }
    return true;
}

static bool can_push_below(const struct lop *f, const struct lop *below)
{
    if (below->kind == LOP_SORT)
        return true;
    if (below->kind == LOP_WINDOW)
        return below->nby > 0 && only_partition_keys(f, below);
    if (below->kind != LOP_PROJECT)
        return false;
    int cols[256];
    int n = filter_columns(f->expr, &below->schema, cols, 256);
    if (n < 0 || n >= 256)
        return false;
    for (int i = 0; i < n; i++)
        if (!passes_through(below, below->schema.fields[cols[i]].name))
            return false;
    return true;
}

static void push_predicates(struct lplan *lp, struct plan_physical *p)
{
    bool moved = true;
    while (moved) {
        moved = false;
        for (int i = 1; i < lp->nops; i++) {
            struct lop *f = &lp->ops[i], *below = &lp->ops[i - 1];
            if (f->kind != LOP_FILTER || !can_push_below(f, below))
                continue;
            const struct df_schema *in = i >= 2 ? &lp->ops[i - 2].schema : &lp->src.schema;
            plan__decide(p, NULL, 0, "predicate '%s' moved below the %s so it runs first", f->expr,
                         below->kind == LOP_SORT     ? "sort"
                         : below->kind == LOP_WINDOW ? "window (it reads only partition keys)"
                                                     : "projection");
            struct lop tmp = *f;
            *f = *below;
            *below = tmp;
            df_schema_cleanup(&below->schema);
            df_schema_copy(&below->schema, in);
            moved = true;
        }
    }
}

static void mark_expr(const char *text, const struct df_schema *s, const int *map, bool *need)
{
    int cols[512];
    int n = filter_columns(text, s, cols, 512);
    for (int i = 0; i < n && i < 512; i++)
        if (map[cols[i]] >= 0)
            need[map[cols[i]]] = true;
}

/* A bare column name (a select's col, a sort key) is quoted first: a name
 * with a space or a quote is not an expression by itself. */
static void mark_name(const char *name, const struct df_schema *s, const int *map, bool *need)
{
    char *q = plan__quote_ident(name);
    mark_expr(q, s, map, need);
    free(q);
}

static void mark_all(int ncur, const int *map, bool *need)
{
    for (int i = 0; i < ncur; i++)
        if (map[i] >= 0)
            need[map[i]] = true;
}

/* A window reads its keys and arguments and passes its input through, so
 * the walk goes on past it; its function columns map to no source column. */
static int *mark_window(const struct lop *op, const struct df_schema *in, int *map, bool *need)
{
    for (int k = 0; k < op->nby + op->nkeys; k++) {
        mark_name(k < op->nby ? op->by[k] : op->keys[k - op->nby], in, map, need);
    }
    for (int k = 0; k < op->naggs; k++) {
        struct df_window_call c;
        struct fr_error err;
        fr_error_init(&err);
        if (df_window_call_parse(op->aggs[k], in, &c, &err) == FR_OK && c.arg >= 0 &&
            map[c.arg] >= 0)
            need[map[c.arg]] = true;
        df_window_call_cleanup(&c);
    }
    map = fr_xrealloc(map, sizeof(int) * (size_t)(op->schema.nfields + 1));
    for (int i = in->nfields; i < op->schema.nfields; i++)
        map[i] = -1;
    return map;
}

/* Walks the ops while columns still map to source columns, marking those
 * used; stops at the first op that replaces the schema. Returns false when
 * every column is needed anyway. */
static bool needed_columns(const struct lplan *lp, bool *need)
{
    const struct df_schema *src = &lp->src.schema;
    int *map = fr_xmalloc(sizeof(int) * (size_t)(src->nfields + 1));
    for (int i = 0; i < src->nfields; i++)
        map[i] = i;
    bool cut = false;
    for (int i = 0; i < lp->nops && !cut; i++) {
        const struct lop *op = &lp->ops[i];
        const struct df_schema *in = i ? &lp->ops[i - 1].schema : src;
        switch (op->kind) {
        case LOP_FILTER:
            mark_expr(op->expr, in, map, need);
            break;
        case LOP_SORT:
            for (int k = 0; k < op->nkeys; k++)
                mark_name(op->keys[k], in, map, need);
            break;
        case LOP_SLICE:
            break;
        case LOP_TOPK: /* reads its keys and passes its input's columns through */
            for (int k = 0; k < op->nby; k++)
                mark_name(op->by[k], in, map, need);
            for (int k = 0; k < op->nkeys; k++)
                mark_name(op->keys[k], in, map, need);
            break;
        case LOP_WINDOW:
            map = mark_window(op, in, map, need);
            break;
        case LOP_PROJECT:
            for (int k = 0; k < op->nitems; k++) {
                if (op->items[k].col)
                    mark_name(op->items[k].col, in, map, need);
                else
                    mark_expr(op->items[k].expr, in, map, need);
            }
            cut = true;
            break;
        case LOP_AGG: {
            for (int k = 0; k < op->nkeys; k++)
                mark_expr(op->keys[k], in, map, need);
            for (int k = 0; k < op->naggs; k++) {
                struct df_agg_item it;
                struct fr_error err;
                memset(&it, 0, sizeof(it));
                fr_error_init(&err);
                if (df_agg_item_parse(op->aggs[k], in, &it, &err) == FR_OK) {
                    for (int c = 0; c < it.ncalls; c++) {
                        int cols[256], n = 0;
                        if (it.calls[c].arg)
                            df_expr_columns(it.calls[c].arg, cols, &n, 128);
                        if (it.calls[c].arg2)
                            df_expr_columns(it.calls[c].arg2, cols, &n, 256);
                        for (int j = 0; j < n; j++)
                            if (map[cols[j]] >= 0)
                                need[map[cols[j]]] = true;
                    }
                }
                df_agg_item_cleanup(&it);
            }
            cut = true;
            break;
        }
        default:
            mark_all(in->nfields, map, need);
            cut = true;
            break;
        }
    }
    if (!cut)
        mark_all(plan__lplan_schema(lp)->nfields, map, need);
    free(map);
    return cut;
}

static void push_projection(struct lplan *lp, struct plan_physical *p)
{
    struct lsource *s = &lp->src;
    if ((s->kind != LSRC_FILE && s->kind != LSRC_STORED) || s->schema.nfields == 0)
        return;
    bool *need = fr_xcalloc((size_t)s->schema.nfields, sizeof(bool));
    if (needed_columns(lp, need)) {
        s->columns = fr_xmalloc(sizeof(int) * (size_t)s->schema.nfields);
        s->ncolumns = 0;
        for (int i = 0; i < s->schema.nfields; i++)
            if (need[i])
                s->columns[s->ncolumns++] = i;
        if (s->ncolumns == 0) /* count(*) alone: read one column to count rows */
            s->columns[s->ncolumns++] = 0;
        if (s->ncolumns == s->schema.nfields) {
            free(s->columns);
            s->columns = NULL;
            s->ncolumns = -1;
        } else {
            plan__decide(p, NULL, 0,
                         s->kind == LSRC_STORED
                             ? "%s: %d of its %d columns go on past the scan (projection "
                               "push-down; the rest are never copied)"
                             : "scan of %s reads %d of %d columns (projection push-down)",
                         s->display, s->ncolumns, s->schema.nfields);
        }
    }
    free(need);
}

void plan__optimize(struct lplan *lp, struct plan_physical *p)
{
    p->deciding_src = &lp->src; /* its decisions go to the stage that scans it */
    push_predicates(lp, p);
    push_projection(lp, p);
    p->deciding_src = NULL;
    for (int i = 0; i < lp->nops; i++)
        if (lp->ops[i].right)
            plan__optimize(lp->ops[i].right, p);
}
