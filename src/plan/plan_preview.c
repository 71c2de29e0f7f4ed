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
 * projections, and limits that end within the rows a preview reads. */
void plan__preview_shape(struct plan_physical *p, const struct lplan *lp)
{
    p->preview_shape = true;
    p->preview_cap = INT64_MAX;
    for (int i = 0; i < lp->nops; i++) {
        const struct lop *op = &lp->ops[i];
        if (op->kind == LOP_PROJECT)
            continue;
        if (op->kind == LOP_SLICE && op->limit >= 0 && op->offset >= 0 &&
            op->offset <= p->preview_rows - op->limit) {
            p->preview_offset |= op->offset > 0;
            if (op->limit < p->preview_cap)
                p->preview_cap = op->limit;
            continue;
        }
        p->preview_shape = false;
    }
}

int64_t plan_physical_preview_needs(const plan_physical *p, int64_t want)
{
    if (!p->preview_shape || (p->preview_truncated && p->preview_offset))
        return -1;
    if (!p->preview_truncated)
        return 0; /* every source was read whole, or its first rows were enough */
    /* a file scan stopped early: its rows were enough if the preview is full */
    return want < p->preview_cap ? want : p->preview_cap;
}
