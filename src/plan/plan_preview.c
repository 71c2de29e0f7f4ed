/* plan_preview: a dataframe's preview plan (plan_env.preview_scan_rows):
 * a limit after every source, and whether the preview's rows are the first
 * rows of the whole answer. */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>

/* A preview reads the first n rows of every source: a limit right after
 * each scan, in nested plans (join right sides, union inputs) too. */
void plan__preview_heads(struct lplan *lp, int64_t n, int depth)
{
    if (depth > 256)
        return;
    for (int i = 0; i < lp->nops; i++)
        if (lp->ops[i].right)
            plan__preview_heads(lp->ops[i].right, n, depth + 1);
    lp->ops = fr_xrealloc(lp->ops, sizeof(struct lop) * (size_t)(lp->nops + 1));
    memmove(&lp->ops[1], &lp->ops[0], sizeof(struct lop) * (size_t)lp->nops);
    struct lop *op = &lp->ops[0];
    memset(op, 0, sizeof(*op));
    op->kind = LOP_SLICE;
    op->limit = n;
    op->orig = json_pack("{sI}", "limit", (json_int_t)n);
    df_schema_copy(&op->schema, &lp->src.schema);
    lp->nops++;
}

/* Whether the preview's rows are a prefix of the whole answer's: only
 * projections and limits. Such a plan gets no limit after its sources: the
 * preview's own limit is pushed into its scan tasks, and later tasks are
 * skipped once enough rows are found. */
void plan__preview_shape(struct plan_physical *p, const struct lplan *lp)
{
    p->preview_shape = true;
    p->preview_cap = INT64_MAX;
    for (int i = 0; i < lp->nops; i++) {
        const struct lop *op = &lp->ops[i];
        if (op->kind == LOP_PROJECT)
            continue;
        if (op->kind == LOP_SLICE) {
            if (op->limit >= 0 && op->limit < p->preview_cap)
                p->preview_cap = op->limit;
            continue;
        }
        p->preview_shape = false;
    }
}

int64_t plan_physical_preview_needs(const plan_physical *p, int64_t want)
{
    if (!p->preview_shape)
        return -1;
    if (!p->preview_truncated)
        return 0; /* every source was read whole */
    /* a file scan stopped before the file's end: the preview is the file's
     * first rows if it is full (the rows it skipped and showed were there) */
    return want < p->preview_cap ? want : p->preview_cap;
}
