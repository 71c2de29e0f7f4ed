/* plan_parquet: Parquet as a scan source. Its schema comes from the footer,
 * read once at planning; its scan tasks are runs of row groups, merged by
 * the scan size settings and never split, with the groups that the filters
 * right after the scan rule out by their statistics left out; and the task's
 * read of its row groups, from this process's copy or by range. */
#include "plan_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A task names at most this many row groups (a bound on hostile specs). */
#define PLAN_MAX_ROW_GROUPS (1 << 24)

int plan__parquet_source(struct lsource *s, struct fr_error *err)
{
    int rc = df_file_source_open(&s->pq_file, s->path, err);
    if (rc != FR_OK)
        return rc;
    struct stat st; /* the planned file is the one opened, not the one stat'ed before */
    if (fstat(s->pq_file.fd, &st) == 0) {
        s->bytes = st.st_size;
        s->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
    rc = df_parquet_open(&s->pq_file.base, &s->pq, err);
    if (rc != FR_OK) {
        s->pq = NULL;
        df_file_source_close(&s->pq_file);
        plan__kind_default(err, rc == FR_EVALIDATION ? "unsupported-parquet" : "malformed-data");
        return rc;
    }
    df_schema_copy(&s->schema, df_parquet_schema(s->pq));
    return FR_OK;
}

void plan__parquet_close(struct lsource *s)
{
    if (!s->pq)
        return;
    df_parquet_free(s->pq);
    s->pq = NULL;
    df_file_source_close(&s->pq_file);
}

static const char *fmt_size(int64_t b, char *buf, size_t n)
{
    if (b >= CFG_MiB)
        snprintf(buf, n, "%.1f MiB", (double)b / (double)CFG_MiB);
    else if (b >= 1024)
        snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, n, "%lld B", (long long)b);
    return buf;
}

/* The filters that run right after the scan (push_predicates moved them
 * there), bound to the file's schema; *text is new ("a and b"). */
static int scan_filters(const struct lplan *lp, df_expr **filters, char **text)
{
    struct fr_buf b;
    fr_buf_init(&b);
    int n = 0;
    for (int i = 0; i < lp->nops && lp->ops[i].kind == LOP_FILTER && n < 64; i++) {
        struct fr_error err;
        fr_error_init(&err);
        if (df_expr_parse(lp->ops[i].expr, &lp->src.schema, &filters[n], &err) != FR_OK)
            continue;
        fr_buf_puts(&b, n ? " and " : "");
        fr_buf_puts(&b, lp->ops[i].expr);
        n++;
    }
    *text = fr_buf_steal(&b, NULL);
    return n;
}

/* keep[rg]: no filter rules row group rg out. Returns the groups skipped
 * and describes them in a decision. */
static int prune(struct plan_physical *p, const struct lplan *lp, bool *keep, int nrg)
{
    df_expr *filters[64];
    char *text = NULL;
    int nf = scan_filters(lp, filters, &text), skipped = 0;
    struct fr_buf list;
    fr_buf_init(&list);
    for (int rg = 0; rg < nrg; rg++) {
        keep[rg] = true;
        for (int f = 0; f < nf && keep[rg]; f++)
            keep[rg] = df_parquet_row_group_may_match(lp->src.pq, rg, filters[f]);
        if (keep[rg])
            continue;
        if (skipped < 100)
            fr_buf_printf(&list, "%s%d", skipped ? ", " : "", rg);
        else if (skipped == 100)
            fr_buf_puts(&list, ", ...");
        skipped++;
    }
    if (nf > 0)
        plan__decide(p, NULL, skipped,
                     "scan of %s: %d of %d row groups skipped by statistics (%.200s)%s%.300s",
                     lp->src.display, skipped, nrg, text, skipped ? ": " : "",
                     list.data ? list.data : "");
    for (int f = 0; f < nf; f++)
        df_expr_free(filters[f]);
    free(text);
    fr_buf_cleanup(&list);
    return skipped;
}

static void add_task(struct pstage *s, const struct lsource *src, int first, int n, int64_t decoded)
{
    const df_parquet *pq = src->pq;
    s->rg_tasks = fr_xrealloc(s->rg_tasks, sizeof(*s->rg_tasks) * (size_t)(s->ntasks + 1));
    struct plan_rg_task *t = &s->rg_tasks[s->ntasks++];
    t->first = first;
    t->n = n;
    t->decoded = decoded;
    t->bytes = 0;
    for (int i = 0; i < n; i++)
        t->bytes += df_parquet_row_group_bytes(pq, first + i, src->columns, src->ncolumns);
    t->start = t->end = 0;
    for (int i = 0; i < n; i++) {
        struct df_parquet_row_group info;
        df_parquet_row_group_info(pq, first + i, &info);
        if (i == 0 || info.start < t->start)
            t->start = info.start;
        if (i == 0 || info.end > t->end)
            t->end = info.end;
    }
}

/* The decoded size of each kept row group (0 for the others) and their
 * total; the size the tasks aim at: the total cut into as few tasks as the
 * max allows, evenly (as split_file cuts a CSV file). new[nrg]. */
static int64_t *group_sizes(const struct lsource *src, const bool *keep, int nrg, int64_t hi,
                            int64_t *target)
{
    int64_t *size = fr_xcalloc((size_t)(nrg > 0 ? nrg : 1), sizeof(int64_t)), total = 0;
    for (int rg = 0; rg < nrg; rg++) {
        if (keep[rg])
            size[rg] = df_parquet_row_group_decoded_bytes(src->pq, rg, src->columns, src->ncolumns);
        total = size[rg] > INT64_MAX / 4 - total ? INT64_MAX / 4 : total + size[rg];
    }
    int64_t n = total > hi ? total / hi + (total % hi != 0) : 1;
    *target = total / n + (total % n != 0);
    return size;
}

/* Runs of kept row groups, each cut into tasks: a group joins the task
 * while the task is under the target and stays within the max, or while
 * the task is under the min (the min wins, as for CSV ranges); a group is
 * never split. A group's size is the estimate of its projected columns
 * decoded, what the task holds (the analogue of a CSV range's bytes), not
 * its compressed bytes: a dictionary-encoded file is several times smaller
 * than its columns. */
static void cut_tasks(struct plan_physical *p, struct pstage *s, const struct lsource *src,
                      const bool *keep, int nrg)
{
    int64_t lo = p->cfg.scan_tasks_min_size_bytes, hi = p->cfg.scan_tasks_max_size_bytes;
    int64_t target = hi;
    int64_t *size = group_sizes(src, keep, nrg, hi, &target);
    int first = -1, n = 0, big = -1;
    int64_t cur = 0, bigb = 0;
    for (int rg = 0; rg <= nrg; rg++) {
        int64_t b = rg < nrg ? size[rg] : 0;
        bool joins = rg < nrg && keep[rg] && n > 0 && ((cur < target && cur + b <= hi) || cur < lo);
        if (n > 0 && !joins) {
            add_task(s, src, first, n, cur);
            n = 0;
        }
        if (rg == nrg || !keep[rg])
            continue;
        if (n == 0) {
            first = rg;
            cur = 0;
        }
        n++;
        cur += b;
        if (b > hi && big < 0) {
            big = rg;
            bigb = b;
        }
    }
    free(size);
    char a[32], c[32];
    if (big >= 0)
        plan__decide(p, "scan_tasks_max_size_bytes", hi,
                     "scan of %s: row group %d (about %s decoded) is larger than "
                     "scan_tasks_max_size_bytes %s: a row group is never split, it is one task",
                     src->display, big, fmt_size(bigb, a, sizeof(a)), fmt_size(hi, c, sizeof(c)));
}

int plan__parquet_split(struct plan_physical *p, struct pstage *s, const struct lplan *lp,
                        struct fr_error *err)
{
    (void)err;
    const struct lsource *src = &lp->src;
    int nrg = df_parquet_num_row_groups(src->pq);
    bool *keep = fr_xcalloc((size_t)(nrg > 0 ? nrg : 1), sizeof(bool));
    int skipped = prune(p, lp, keep, nrg);
    s->ntasks = 0;
    cut_tasks(p, s, src, keep, nrg);
    free(keep);
    if (s->ntasks == 0) /* nothing to read: one task gives the empty result its schema */
        add_task(s, src, 0, 0, 0);
    char a[32], b[32];
    int64_t total = 0, decoded = 0;
    for (int i = 0; i < s->ntasks; i++) {
        total += s->rg_tasks[i].bytes;
        decoded += s->rg_tasks[i].decoded;
    }
    plan__decide(p, "scan_tasks_max_size_bytes", p->cfg.scan_tasks_max_size_bytes,
                 "scan of %s: %d of %d row groups (%s of column chunks to read, about %s "
                 "decoded) in %d task%s: consecutive row groups merged into tasks of even "
                 "decoded size within scan_tasks_max_size_bytes (rows x value width, strings "
                 "with their offsets)",
                 src->display, nrg - skipped, nrg, fmt_size(total, a, sizeof(a)),
                 fmt_size(decoded, b, sizeof(b)), s->ntasks, s->ntasks == 1 ? "" : "s");
    if (p->remote_workers)
        plan__decide(p, NULL, 0,
                     "scan of %s on the workers: each reads its own copy when it has the "
                     "coordinator's size and mtime, else the footer and the column chunks by "
                     "range from the coordinator (GET /v1/internal/datasets); each task answer "
                     "says which",
                     src->display);
    return FR_OK;
}

json_t *plan__parquet_input(const struct pstage *s, int task)
{
    const struct plan_rg_task *t = &s->rg_tasks[task];
    return json_pack("{s[ii] sI}", "row_groups", t->first, t->n, "read_bytes",
                     (json_int_t)t->bytes);
}

int plan__parquet_check(json_t *in, struct fr_error *err)
{
    json_t *rgs = json_object_get(in, "row_groups");
    json_t *first = json_array_get(rgs, 0), *n = json_array_get(rgs, 1);
    if (!json_is_array(rgs) || json_array_size(rgs) != 2 || !json_is_integer(first) ||
        !json_is_integer(n) || json_integer_value(first) < 0 ||
        json_integer_value(first) > PLAN_MAX_ROW_GROUPS || json_integer_value(n) < 0 ||
        json_integer_value(n) > PLAN_MAX_ROW_GROUPS)
        return fr_error_setk(err, FR_EINVAL, "invalid-task",
                             "a parquet input needs row_groups [first, count] of integers from "
                             "0 to %d",
                             PLAN_MAX_ROW_GROUPS);
    return FR_OK;
}

/* The file the task reads must be the one planned: its schema as the spec
 * names it, the row groups and columns within it. */
static int check_against_file(const df_parquet *pq, const struct df_schema *planned, int first,
                              int n, const int *colv, int ncols, const char *name,
                              struct fr_error *err)
{
    const struct df_schema *fs = df_parquet_schema(pq);
    int nrg = df_parquet_num_row_groups(pq);
    if (first + n > nrg || (n == 0 && first > nrg))
        return fr_error_setk(err, FR_EINVAL, "invalid-task",
                             "row groups %d to %d are not in %.200s, which has %d", first,
                             first + n - 1, name, nrg);
    bool same = planned->nfields == fs->nfields;
    for (int i = 0; same && i < fs->nfields; i++)
        same = planned->fields[i].type == fs->fields[i].type &&
               strcmp(planned->fields[i].name, fs->fields[i].name) == 0;
    if (!same)
        return fr_error_setk(err, FR_ECONFLICT, "dataset-changed",
                             "%.200s does not have the schema the task was planned with", name);
    for (int i = 0; i < ncols; i++)
        if (colv[i] < 0 || colv[i] >= fs->nfields)
            return fr_error_setk(err, FR_EINVAL, "invalid-task",
                                 "column %d is not in %.200s, which has %d", colv[i], name,
                                 fs->nfields);
    return FR_OK;
}

/* A table of no rows with the projected columns of schema. new. */
static struct df_table *empty_table(const struct df_schema *schema, const int *colv, int ncols)
{
    struct df_table *t = df_table_new();
    int n = ncols >= 0 ? ncols : schema->nfields;
    for (int i = 0; i < n; i++) {
        const struct df_field *f = &schema->fields[ncols >= 0 ? colv[i] : i];
        df_table_add(t, f->name, df_column_new(f->type, 0));
    }
    t->nrows = 0;
    return t;
}

static int read_groups(struct df_source *src, const struct df_schema *schema, int first, int n,
                       const int *colv, int ncols, struct plan_io *io, struct df_exec *ex,
                       struct df_table **out, struct fr_error *err)
{
    df_parquet *pq = NULL;
    int rc = df_parquet_open(src, &pq, err);
    if (rc == FR_OK)
        rc = check_against_file(pq, schema, first, n, colv, ncols > 0 ? ncols : 0, src->name, err);
    if (rc == FR_OK) {
        io->scan_bytes = 0;
        for (int i = 0; i < n; i++)
            io->scan_bytes += df_parquet_row_group_bytes(pq, first + i, colv, ncols);
        rc = n == 0 ? (*out = empty_table(schema, colv, ncols), FR_OK)
                    : df_parquet_read(pq, first, n, colv, ncols, ex, out, err);
    }
    df_parquet_free(pq);
    return rc;
}

int plan__parquet_read(json_t *in, struct plan_io *io, const char *path, bool remote,
                       const struct df_schema *schema, const int *colv, int ncols,
                       struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    json_t *rgs = json_object_get(in, "row_groups"), *range = json_object_get(in, "range");
    int first = (int)json_integer_value(json_array_get(rgs, 0));
    int n = (int)json_integer_value(json_array_get(rgs, 1));
    io->used = remote ? PLAN_READ_REMOTE : PLAN_READ_LOCAL;
    if (!remote) {
        struct df_file_source fs;
        int rc = plan__open_planned(in, io, path, &fs, err);
        if (rc != FR_OK)
            return rc;
        rc = read_groups(&fs.base, schema, first, n, colv, ncols, io, ex, out, err);
        df_file_source_close(&fs);
        return rc;
    }
    /* line 0: the reads are at offsets (the footer, then column chunks),
     * not forward from the range's start (struct plan_io) */
    struct df_byte_range span = {json_integer_value(json_array_get(range, 0)),
                                 json_integer_value(json_array_get(range, 1)), 0};
    json_t *size = json_object_get(in, "size"), *mtime = json_object_get(in, "mtime_ns");
    struct df_source *src = NULL;
    int rc =
        io->open_remote(io->ctx, json_string_value(json_object_get(in, "path")),
                        json_is_integer(size) ? json_integer_value(size) : -1,
                        json_is_integer(mtime) ? json_integer_value(mtime) : -1, &span, &src, err);
    if (rc == FR_OK)
        rc = read_groups(src, schema, first, n, colv, ncols, io, ex, out, err);
    if (io->close_remote)
        io->close_remote(io->ctx, src);
    return rc;
}

void plan__parquet_close_all(struct lplan *lp)
{
    plan__parquet_close(&lp->src);
    for (int i = 0; i < lp->nops; i++)
        if (lp->ops[i].right)
            plan__parquet_close_all(lp->ops[i].right);
}
