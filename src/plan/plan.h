/* plan: a dataframe's JSON plan -> bound logical plan (schemas checked,
 * expressions parsed) -> optimized (projection and predicate push-down) ->
 * physical stages of serializable tasks. Also the task executor that runs
 * one task's JSON spec on input tables: the same code runs in the local
 * runner's threads and, later, on remote workers.
 *
 * Ownership: plan_physical objects are new from plan_build and freed with
 * plan_physical_free; json_t results are new references; json_t arguments
 * are borrowed. */
#ifndef FRAMED_PLAN_H
#define FRAMED_PLAN_H

#include "../common/common.h"
#include "../config/config.h"
#include "../engine/engine.h"

#include <jansson.h>

/* What the planner may ask of its surroundings. */
struct plan_source_info {
    struct df_schema schema; /* owned by the callee's caller after a lookup */
    int nparts;
    char **part_ids; /* the dataframe's materialized partitions */
    int64_t *part_rows;
    int64_t bytes;
};
struct plan_env {
    const char *data_dir;
    /* Scans run on workers (the remote runner): explain says where they
     * read their files (worker --data-source). */
    bool remote_workers;
    /* > 0: the plan is a dataframe's preview. A plan of projections and
     * limits takes the preview's limit into its scan tasks; any other runs
     * over the first this many rows of each source (a limit after every
     * scan, joins' and unions' too, each task's rows cut to it, later tasks skipped).
     * A CSV/NDJSON file is cut into at most PLAN_PREVIEW_SCAN_TASKS tasks of
     * at most PLAN_PREVIEW_SCAN_BYTES each from its start; the rest of the
     * file is not read. */
    int64_t preview_scan_rows;
    /* Looks up a materialized dataframe by id: FR_ENOTFOUND if unknown,
     * FR_ECONFLICT if it has not been run yet. Fills *info (caller cleans up
     * with plan_source_info_cleanup). */
    int (*lookup_dataframe)(void *arg, const char *id, struct plan_source_info *info,
                            struct fr_error *err);
    void *arg;
};
void plan_source_info_cleanup(struct plan_source_info *info);

/* Data-dir datasets: resolves a dataset name to its file and format
 * (name.csv, name.ndjson or name.parquet; the newest if two exist); *path
 * new, canonical.
 * FR_ENOTFOUND kind dataset-not-found, also for an entry that resolves outside
 * the data dir or is not a regular file (the message says why, a warning is
 * logged). */
int plan_dataset_resolve(const char *data_dir, const char *name, char **path, const char **format,
                         struct fr_error *err);
/* Resolves {"path": ...} relative to data_dir; FR_EINVAL when it leaves it. */
int plan_path_resolve(const char *data_dir, const char *rel, char **path, struct fr_error *err);

typedef struct plan_physical plan_physical;

/* Builds the physical plan of `plan` under config `cfg`. Errors: FR_EINVAL
 * kinds invalid-plan / invalid-expression (with position and column),
 * dataset-not-found, dataframe-not-found. limit_rows >= 0 appends a limit
 * (the preview). */
int plan_build(json_t *plan, const struct cfg *cfg, const struct plan_env *env, int64_t limit_rows,
               plan_physical **out, struct fr_error *err);
void plan_physical_free(plan_physical *p);
#define PLAN_PREVIEW_SCAN_BYTES (1 << 20)
#define PLAN_PREVIEW_SCAN_TASKS 16
/* A preview plan (env->preview_scan_rows > 0): whether its rows are the
 * first rows of the whole dataframe. They are when its ops are projections
 * and limits within the rows read (no filter, aggregation, join, sort...)
 * and every file scan held them. Returns -1: never; 0: always; n > 0: when
 * the preview gave at least n rows (a file scan stopped early; want = the
 * rows the preview asked for). */
int64_t plan_physical_preview_needs(const plan_physical *p, int64_t want);
/* The output schema of `plan` (*out initialized here; the caller cleans it up) as plan_build
 * would give it, from the logical plan alone: no file is split into tasks (what costs a CSV
 * dataset a read of the whole file). The same errors as plan_build. */
int plan_schema(json_t *plan, const struct cfg *cfg, const struct plan_env *env,
                struct df_schema *out, struct fr_error *err);
/* Borrowed: the data dir the plan's file inputs are relative to ("." if none). */
const char *plan_physical_data_dir(const plan_physical *p);
/* Borrowed: the output schema. */
const struct df_schema *plan_physical_schema(const plan_physical *p);
/* new: {"logical", "optimized", "physical": {"stages": [...]}, "decisions": [...]} */
json_t *plan_physical_explain(const plan_physical *p);
/* new: {"label" (its operators, "scan trips.csv | filter | partial_agg"),
 * "inputs" [stage numbers], "exchange" "none|shuffle|broadcast|gather|range"
 * (how its input arrives), "decisions" [{"decision","field","value"}] (those
 * taken while the stage was cut; field and value null when no config field
 * decided)} of stage (0 <= stage < nstages), for the live stage view. */
json_t *plan_stage_describe(const plan_physical *p, int stage);

/* ---- stages and tasks, as the runner drives them ----
 * A stage's tasks read either a source (files, inline rows, stored
 * partitions) or the outputs of earlier stages through input slots. Every
 * task produces `nbuckets` output tables. Slot modes: ONE (task i reads
 * bucket `bucket` of task i of the slot's stage), ALL (bucket `bucket` of
 * every task, in task order), BUCKET (task i reads bucket i of every task
 * of the slot's stage, in task order). */
enum plan_slot_mode { PLAN_SLOT_ONE, PLAN_SLOT_ALL, PLAN_SLOT_BUCKET };
struct plan_slot {
    int stage;
    enum plan_slot_mode mode;
    int bucket; /* for ONE and ALL */
};
int plan_physical_nstages(const plan_physical *p);
/* Called once per stage, in order, when every earlier stage finished;
 * prev_outputs[s][t][b] are the row counts of earlier outputs, and
 * sample tables are given through fetch_sample when the stage needs them
 * (sort boundaries). Returns the stage's number of tasks. */
struct plan_stage_view {
    int ntasks;
    int nbuckets;
    int nslots;
    const struct plan_slot *slots;
    int64_t limit_rows; /* >= 0: outputs past this many rows (in task order) are not needed */
    const char *const *stored_parts; /* non-NULL: task i reads stored partition i as slot 0 */
    bool needs_boundaries; /* the sort's range boundaries come from the previous stage's bucket 1 */
};
void plan_stage_view(const plan_physical *p, int stage, struct plan_stage_view *out);
/* new: the JSON spec of task t of stage s, self-contained (config values
 * not included: they travel as the frozen config). `boundaries` (may be
 * NULL) is a table of the sort's range boundaries when needs_boundaries. */
json_t *plan_task_spec(const plan_physical *p, int stage, int task,
                       const struct df_table *boundaries);
/* new: the sort boundaries from the samples of every task (the previous
 * stage's bucket 1), or NULL with an error. */
int plan_sort_boundaries(const plan_physical *p, int stage, struct df_table *const *samples,
                         int nsamples, const struct df_options *opts, struct df_table **out,
                         struct fr_error *err);

/* Bounds of a task spec: output buckets (shuffle_partitions' maximum) and
 * input slots. */
#define PLAN_MAX_BUCKETS 4096
#define PLAN_MAX_SLOTS 8
/* Checks the type and bounds of every member of a task spec the executor
 * reads (a worker runs specs from the network): FR_EINVAL kind invalid-task
 * with what is wrong. plan_task_execute calls it first. */
int plan_task_check(json_t *spec, struct fr_error *err);

/* Runs one task: spec from plan_task_spec (possibly shipped over the
 * network), inputs[slot] is an array of ninputs[slot] borrowed tables. A
 * file input's path is relative to data_dir and must resolve (symlinks
 * followed) to a regular file inside it: else FR_EINVAL invalid-task or
 * FR_ENOTFOUND dataset-not-found.
 * *outputs is new[*noutputs] of new tables. */
int plan_task_execute(json_t *spec, const char *data_dir, struct df_table **const *inputs,
                      const int *ninputs, struct df_exec *ex, struct df_table ***outputs,
                      int *noutputs, struct fr_error *err);

/* Where a task's file input is read from. The caller (a worker) decides with
 * mode: PLAN_DATA_LOCAL reads data_dir's file as plan_task_execute does;
 * PLAN_DATA_REMOTE always asks open_remote for a byte source; PLAN_DATA_AUTO
 * reads locally when the file resolves inside data_dir with the size and
 * mtime the spec carries (a spec without them: when it resolves), else
 * remotely. open_remote makes *src (new, given back to close_remote) for the
 * spec's relative path and the size/mtime it names (-1 unknown); range is
 * what the task will read (a hint: the reader goes past its end to finish
 * the last record). A range with line 0 (Parquet) is read at offsets
 * instead: the footer at the file's end, then column chunks inside the
 * range, each read whole. */
enum plan_data_mode { PLAN_DATA_AUTO, PLAN_DATA_LOCAL, PLAN_DATA_REMOTE };
enum plan_read_source { PLAN_READ_NONE, PLAN_READ_LOCAL, PLAN_READ_REMOTE };
struct plan_io {
    const char *data_dir; /* borrowed */
    enum plan_data_mode mode;
    int (*open_remote)(void *ctx, const char *rel, int64_t size, int64_t mtime_ns,
                       const struct df_byte_range *range, struct df_source **src,
                       struct fr_error *err);
    void (*close_remote)(void *ctx, struct df_source *src); /* accepts NULL */
    void *ctx;
    /* OUT: how the task's file input was read and how many bytes its range
     * held (0 without a file input). */
    enum plan_read_source used;
    int64_t scan_bytes;
    int64_t rows_read; /* OUT: rows its source (a file or inline rows) gave, -1 = no source */
};
/* plan_task_execute with file inputs read through io (see struct plan_io). */
int plan_task_execute_io(json_t *spec, struct plan_io *io, struct df_table **const *inputs,
                         const int *ninputs, struct df_exec *ex, struct df_table ***outputs,
                         int *noutputs, struct fr_error *err);
/* "local" or "remote" (or "none"). */
const char *plan_read_source_name(enum plan_read_source s);

/* The engine's options from a config (borrows c's strings). */
void plan_options_from_cfg(const struct cfg *c, struct df_options *out);

#endif
