/* history: what ran with which config, kept in SQLite (<state-dir>/history.sqlite3,
 * WAL) so it outlives a runner's reset and the process: runners with their
 * frozen config's canonical bytes, and every query with its plan, state,
 * times, rows and error. Bounded by retention (count and age).
 *
 * Ownership: json_t ** and char ** out-parameters receive new values; every
 * other pointer argument is borrowed for the call. A history handle is safe
 * to use from many threads (one connection, guarded by the "history lock"). */
#ifndef FRAMED_HISTORY_H
#define FRAMED_HISTORY_H

#include "../common/common.h"

#include <jansson.h>

typedef struct history history;

#define HISTORY_FILE "history.sqlite3"
#define HISTORY_DEFAULT_MAX_QUERIES 10000
#define HISTORY_DEFAULT_MAX_AGE_DAYS 30
#define HISTORY_LIST_MAX 500

struct history_options {
    int64_t max_queries;  /* queries kept, newest first; <= 0: the default */
    int64_t max_age_days; /* queries (and reset runners) older go; <= 0: the default */
};

/* new: opens (or creates) dir/history.sqlite3. A file SQLite calls not a
 * database (or damaged: its quick_check, run when a read of the open says
 * SQLITE_CORRUPT) is moved aside to history.sqlite3.corrupt-<time> (logged
 * at error) and a fresh one made; a busy, locked or unreadable one is left
 * as it is (FR_EIO: no history).
 * Runners of a previous process still active are marked ended, and their
 * queued or running queries failed with kind "interrupted". Then pruned.
 * FR_EIO when no history can be made (unwritable dir, a newer schema). */
int history_open(const char *dir, const struct history_options *opts, history **out,
                 struct fr_error *err);
void history_free(history *h); /* accepts NULL */
/* Failed statements since the open (each logged at error). */
int64_t history_errors(const history *h);
/* What the open found of a previous process: runners it ended, queries it
 * marked interrupted, and whether a corrupt file was moved aside. */
void history_recovered(const history *h, int *runners_ended, int *queries_interrupted,
                       bool *moved_aside);

/* ---- writes (each one small transaction) ----
 * An update of a row that is not there (a reset, an end, a query's end or
 * stages whose insert was lost) is FR_EIO, counted and logged. */
struct history_runner_rec {
    const char *id;
    const char *kind; /* "local" | "remote" */
    const char *config_id;
    const char *config_bytes; /* canonical, as frozen */
    size_t config_len;
    int64_t frozen_at_ms;
    const char *frozen_by; /* request ID, may be NULL */
};
/* Records a freeze; the runner is "active" (the live one) until reset/end.
 * Again for the same runner (a retry of a lost record): FR_OK, no change. */
int history_runner_add(history *h, const struct history_runner_rec *r, struct fr_error *err);
/* True when id is the runner this handle recorded (its freeze landed). */
bool history_runner_recorded(history *h, const char *id);
int history_runner_reset(history *h, const char *id, int64_t at_ms, const char *by,
                         struct fr_error *err);
/* The process stops without a reset: the runner is "ended". */
int history_runner_end(history *h, const char *id, int64_t at_ms, struct fr_error *err);

struct history_query_rec {
    const char *id, *runner_id, *config_id;
    const char *dataframe; /* NULL when it ran a plan */
    const char *plan_json; /* the plan it ran (or {"dataframe": id}); accept only */
    const char *state;     /* queued|running|succeeded|failed|cancelled */
    int64_t created_ms, started_ms, finished_ms; /* < 0 = null */
    int64_t rows;                                /* < 0 = null */
    int64_t tasks_total, tasks_done, retries;
    const char *error_json;           /* NULL = null */
    const char *task_config_ids_json; /* NULL = null */
    const char *stages_json;          /* end only: its stages; NULL = kept as they are */
};
/* At accept: inserts the row (state as given), prunes queries past the retention. */
int history_query_add(history *h, const struct history_query_rec *q, struct fr_error *err);
/* Its start (the runner took it), unless one is recorded. */
int history_query_started(history *h, const char *id, int64_t at_ms, struct fr_error *err);
/* At the end: state, times (a recorded start kept), rows, tasks, retries,
 * error, task config IDs. started_ms < 0: it never started. */
int history_query_end(history *h, const struct history_query_rec *q, struct fr_error *err);
/* The stages JSON of a query (a later part fills it); stages_json borrowed. */
int history_query_set_stages(history *h, const char *id, const char *stages_json,
                             struct fr_error *err);
/* Applies the retention as of now_ms (the live runner is never removed). */
int history_prune(history *h, int64_t now_ms, struct fr_error *err);

/* ---- reads ---- */
/* An opaque list cursor: FR_OK with *seq set, FR_EINVAL invalid-parameter. */
int history_cursor_parse(const char *cursor, int64_t *seq, struct fr_error *err);

struct history_query_filter {
    const char *state, *state_alt; /* NULL = any; state_alt: a second state accepted */
    const char *config_id, *runner_id;
    int64_t since_ms, until_ms; /* created_at in [since, until]; < 0 = open */
    int64_t after_seq;          /* from a cursor; 0 = from the newest */
    int limit;                  /* 1..HISTORY_LIST_MAX */
};
/* *out: {"queries": [QuerySummary + "archived": true], "next_cursor": s|null},
 * newest first. */
int history_query_list(history *h, const struct history_query_filter *f, json_t **out,
                       struct fr_error *err);
/* *out: a summary plus "plan", "task_config_ids", "stages"; FR_ENOTFOUND
 * query-not-found. */
int history_query_get(history *h, const char *id, json_t **out, struct fr_error *err);
/* {"runners": [Runner], "next_cursor"} newest first; after_seq 0 = newest. */
int history_runner_list(history *h, int limit, int64_t after_seq, json_t **out,
                        struct fr_error *err);
/* Runner; FR_ENOTFOUND runner-not-found. */
int history_runner_get(history *h, const char *id, json_t **out, struct fr_error *err);
/* The archived canonical bytes of a config: *bytes new, *len of them (a
 * NUL follows, not counted); FR_ENOTFOUND config-not-found. The caller
 * verifies they hash to id. */
int history_config_get(history *h, const char *id, char **bytes, size_t *len, struct fr_error *err);

#endif
