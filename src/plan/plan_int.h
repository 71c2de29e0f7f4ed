/* plan_int: structures shared by the plan module's files (not a face: no
 * other module includes it). Internal non-static names use plan__. */
#ifndef FRAMED_PLAN_INT_H
#define FRAMED_PLAN_INT_H

#include "plan.h"

enum lsrc_kind { LSRC_FILE, LSRC_ROWS, LSRC_STORED };

struct lsource {
    enum lsrc_kind kind;
    char *path;         /* LSRC_FILE: absolute */
    char *display;      /* the name users gave (dataset or relative path) */
    const char *format; /* "csv" | "ndjson" | "parquet" */
    json_t *options;    /* the source's options object (new ref) or NULL */
    char delimiter;
    char quote;
    int64_t sample_rows;
    bool header;
    bool on_error_null;
    struct df_schema hints;
    json_t *rows;                   /* LSRC_ROWS (new ref) */
    struct plan_source_info stored; /* LSRC_STORED */
    char *dataframe_id;
    struct df_schema schema; /* full schema of the source */
    int64_t bytes;           /* size estimate; LSRC_FILE: the file's size when planned */
    int64_t mtime_ns;        /* LSRC_FILE: the file's mtime when planned */
    int *columns;            /* projection push-down: source columns read */
    int ncolumns;            /* -1 = all */
    /* parquet: the footer, read at planning and kept until the scan is cut
     * into row groups (plan_parquet.c) */
    df_parquet *pq;
    struct df_file_source pq_file;
};

enum lop_kind {
    LOP_FILTER,
    LOP_PROJECT,
    LOP_AGG,
    LOP_JOIN,
    LOP_SORT,
    LOP_SLICE,
    LOP_UNION,
    LOP_TOPK,
    LOP_WINDOW
};

struct lproj_item {
    char *expr; /* NULL for a pass-through column */
    char *col;  /* pass-through: the input column's name */
    char *name;
};

struct lop {
    enum lop_kind kind;
    json_t *orig; /* the op as written (for explain), new ref */
    char *expr;   /* FILTER */
    int nitems;   /* PROJECT */
    struct lproj_item *items;
    int nkeys; /* AGG keys / SORT keys (TOPK, WINDOW: the sort keys) */
    char **keys;
    int nby; /* TOPK: the group columns; WINDOW: the partition columns */
    char **by;
    int naggs; /* AGG items; WINDOW: the functions */
    char **aggs;
    bool *desc;                 /* SORT */
    signed char *nulls_first;   /* -1: the config's nulls_first decides */
    int64_t offset, limit;      /* SLICE (limit -1 = none); TOPK: limit = k */
    struct lplan *right;        /* JOIN right, UNION other */
    char **left_on, **right_on; /* JOIN, nkeys of each */
    enum df_join_how how;
    bool merge_keys;
    char *suffix;
    struct df_schema schema; /* the schema after this op */
};

struct lplan {
    struct lsource src;
    int nops;
    struct lop *ops;
};

struct plan_decision {
    char *decision;
    char *reason;
    const char *field;
    int64_t value;
    /* the stage it is about: the one being cut when it was taken, or for an
     * optimizer decision (taken before any stage) the scan of src */
    int stage;
    const struct lsource *src; /* the optimizer's: the source it concerns, else NULL */
};

enum pin_kind { PIN_FILE, PIN_ROWS, PIN_STORED, PIN_SLOTS };

struct pstage {
    char *label;
    enum pin_kind input;
    const struct lsource *src; /* PIN_FILE/ROWS/STORED: borrowed from the logical plan */
    struct df_byte_range *ranges;
    int nranges;
    struct plan_rg_task *rg_tasks; /* parquet: ntasks entries */
    int nslots;
    struct plan_slot slots[2];
    json_t *core;     /* NULL or object */
    json_t *pipeline; /* array */
    json_t *sink;     /* NULL or object */
    int ntasks;
    int nbuckets;
    int64_t limit_rows;
    int64_t max_rows; /* scan may stop after this many rows (-1 = no) */
    bool needs_boundaries;
    bool closed;
    struct df_schema schema;
};

/* A parquet scan task: row groups [first, first + n) (n 0: none left after
 * pruning, an empty result of the schema), the byte span of their column
 * chunks (a hint for range reads) and the bytes of the projected chunks. */
struct plan_rg_task {
    int first, n;
    int64_t start, end;
    int64_t bytes;   /* compressed bytes of the projected column chunks: what it reads */
    int64_t decoded; /* the estimate of their decoded bytes: what it holds, what sizes it */
};

struct plan_physical {
    struct lplan *logical;
    json_t *logical_json;
    struct pstage *stages;
    int nstages;
    struct plan_decision *decisions;
    int ndecisions;
    struct df_schema schema;
    struct cfg cfg;
    char *data_dir;         /* env's, copied: file inputs are named relative to it */
    char *data_dir_real;    /* its realpath, NULL if it has none */
    bool remote_workers;    /* env's */
    int64_t preview_rows;   /* env's preview_scan_rows */
    bool preview_shape;     /* preview: only projections and limits (no limit after the scans) */
    int64_t preview_cap;    /* preview: the smallest limit of the plan's own */
    bool preview_truncated; /* preview: a file scan stopped before the file's end */
    /* plan__optimize: the source of the plan being optimized, for its decisions */
    const struct lsource *deciding_src;
};

/* plan_preview.c: limits after every source (nested plans too) and the
 * preview's exactness (p->preview_shape, preview_cap) */
void plan__preview_heads(struct lplan *lp, int64_t n, int depth);
void plan__preview_shape(struct plan_physical *p, const struct lplan *lp);
/* plan_logical.c */
int plan__parse(json_t *plan, const struct plan_env *env, const struct df_options *opts, int depth,
                struct lplan **out, struct fr_error *err);
void plan__lplan_free(struct lplan *lp);
const struct df_schema *plan__lplan_schema(const struct lplan *lp);
json_t *plan__lplan_json(const struct lplan *lp);
/* plan_source.c */
int plan__source_parse(json_t *src, const struct plan_env *env, const struct df_options *opts,
                       struct lsource *out, struct fr_error *err);
void plan__source_cleanup(struct lsource *s);
void plan__csv_options(const struct lsource *s, struct df_csv_options *o);
/* plan_parquet.c: a parquet source, its scan tasks and its reads */
int plan__parquet_source(struct lsource *s, struct fr_error *err);
void plan__parquet_close(struct lsource *s);
void plan__parquet_close_all(struct lplan *lp); /* once the scans are cut */
/* Cuts the scan of lp's parquet source into row-group tasks of s, skipping
 * the groups the filters right after the scan rule out by statistics. */
int plan__parquet_split(struct plan_physical *p, struct pstage *s, const struct lplan *lp,
                        struct fr_error *err);
json_t *plan__parquet_input(const struct pstage *s, int task); /* new: row_groups, span, bytes */
int plan__parquet_check(json_t *in, struct fr_error *err);
/* Reads a parquet task input from path (local) or through src (remote). */
int plan__parquet_read(json_t *in, struct plan_io *io, const char *path, bool remote,
                       const struct df_schema *schema, const int *colv, int ncols,
                       struct df_exec *ex, struct df_table **out, struct fr_error *err);
/* plan_optimize.c */
void plan__optimize(struct lplan *lp, struct plan_physical *p);
/* plan_physical.c */
void plan__decide(struct plan_physical *p, const char *field, int64_t value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* plan_schema.c: output schemas of ops, checked at planning time */
int plan__bind_expr(const char *text, const struct df_schema *s, df_expr **out,
                    struct fr_error *err);
int plan__join_schema(const struct df_schema *l, const struct df_schema *r, char **left_on,
                      char **right_on, int nkeys, enum df_join_how how, bool merge_keys,
                      const char *suffix, struct df_schema *out, struct fr_error *err);
char *plan__quote_ident(const char *name); /* new: "name" with "" escapes */
/* new: a sort on expressions ("length(name) desc") rewritten as with_column
 * ops, the sort on the hidden columns and a drop; NULL when no rewrite. */
json_t *plan__expand_sort(json_t *jop, const struct df_schema *in);
/* Checks of user plan JSON (plan_schema.c). FR_EINVAL kind invalid-plan with
 * err->field = member; FR_EVALIDATION kind too-many-columns past
 * FR_MAX_COLUMNS; FR_EINVAL when obj has a member not in allowed (NULL-ended). */
/* Names the problem kind of an error a callee set without one (the engine
 * knows no HTTP kinds); a kind already set stays. */
void plan__kind_default(struct fr_error *err, const char *kind);
int plan__check_error(struct fr_error *err, const char *member, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int plan__check_columns(int64_t n, const char *what, struct fr_error *err);
int plan__check_members(json_t *obj, const char *what, const char *const *allowed,
                        struct fr_error *err);
/* An op object: one key (groupby may come with agg), lists within FR_MAX_COLUMNS. */
int plan__check_op_shape(json_t *jop, int index, struct fr_error *err);
/* plan_window.c: the window op. expand_window: new, the op with expression
 * keys or arguments rewritten as with_column ops computing hidden columns,
 * the window on them and a drop; NULL when no rewrite. */
json_t *plan__expand_window(json_t *jop, const struct df_schema *in);
int plan__parse_window(json_t *spec, const struct df_schema *in, int index, struct lop *op,
                       struct fr_error *err);
json_t *plan__window_step(const struct lop *op); /* new: the pipeline op */
int plan__run_window(json_t *spec, struct df_table **t, struct df_exec *ex, struct fr_error *err);
int plan__check_window(json_t *spec, struct fr_error *err); /* a task spec's window op */
/* plan_logical.c: a sort key list parsed into op's keys, desc and nulls_first
 * (each key a column); sets op->kind LOP_SORT and op->schema to in. */
int plan__parse_sort_list(json_t *list, const struct df_schema *in, int index, struct lop *op,
                          struct fr_error *err);
/* plan_schema.c: the length of a sort key without its asc/desc/nulls suffixes. */
size_t plan__sort_key_expr_len(const char *key);
/* plan_spec.c */
json_t *plan__table_json(const struct df_table *t);
/* Copies data_dir (may be NULL) and its realpath into p (plan_spec.c). */
void plan__data_dir_set(struct plan_physical *p, const char *data_dir);
int plan__table_from_json(json_t *j, struct df_table **out, struct fr_error *err);
int plan__schema_from_json(json_t *pairs, struct df_schema *out, struct fr_error *err);
/* plan_task.c helpers */
int plan__run_pipeline(json_t *pipeline, struct df_table **t, struct df_exec *ex,
                       struct fr_error *err);
int plan__run_sink(json_t *sink, struct df_table *t, struct df_exec *ex, struct df_table ***outputs,
                   int *noutputs, struct fr_error *err);
int plan__sort_keys_json(json_t *keys, const struct df_table *t, bool default_nulls_first,
                         struct df_sort_key **out, int *n, struct fr_error *err);

/* plan_read.c: reads a task's file input (kind "file") through io into *out
 * (new); the path errors of plan_task_execute. */
/* Opens path for a task's local read and checks, on the opened descriptor,
 * that it is the file planned (the spec's size and mtime_ns when it names
 * them): else 409 dataset-changed, fs closed. Not checked on a worker told
 * to read its own copy (PLAN_DATA_LOCAL with open_remote). */
int plan__open_planned(json_t *in, const struct plan_io *io, const char *path,
                       struct df_file_source *fs, struct fr_error *err);
int plan__read_file(json_t *in, struct plan_io *io, struct df_exec *ex, struct df_table **out,
                    struct fr_error *err);

#endif
