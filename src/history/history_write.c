/* history_write: the records the context makes: a runner at its freeze, its
 * reset or end, a query at its accept and at its end. Each is one small
 * transaction (WAL, synchronous=NORMAL: an append, no fsync per commit). */
#include "history_int.h"

#include <string.h>

/* A statement that must change exactly one row changed none (the row is
 * missing: its insert was lost): counted and logged like a failure. Lock held. */
static int one_row(history *h, int rc, const char *what, const char *id, struct fr_error *err)
{
    if (rc != FR_OK || sqlite3_changes(h->db) > 0)
        return rc;
    atomic_fetch_add(&h->errors, 1);
    FR_LOG(FR_LOG_ERROR, "history %s: %s: no row for %s (its record was lost)", h->path, what, id);
    return fr_error_setk(err, FR_EIO, "internal", "history: %s: no row for %s", what, id);
}

/* The config's bytes once, then the runner's row (again: a retry of a lost
 * record is ignored when the first made it): one transaction. */
static int runner_insert(history *h, const struct history_runner_rec *r, struct fr_error *err)
{
    sqlite3_stmt *st =
        history__prepare(h, "INSERT OR IGNORE INTO configs (id, bytes) VALUES (?1, ?2)", err);
    if (st) {
        sqlite3_bind_text(st, 1, r->config_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_blob(st, 2, r->config_bytes, (int)r->config_len, SQLITE_TRANSIENT);
    }
    int rc = history__step_done(h, st, "recording a config", err);
    if (rc != FR_OK)
        return rc;
    st = history__prepare(
        h,
        "INSERT OR IGNORE INTO runners (id, kind, config_id, frozen_at, frozen_by) "
        "VALUES (?1, ?2, ?3, ?4, ?5)",
        err);
    if (st) {
        sqlite3_bind_text(st, 1, r->id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, r->kind, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, r->config_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 4, r->frozen_at_ms);
        history__bind_text(st, 5, r->frozen_by && r->frozen_by[0] ? r->frozen_by : NULL);
    }
    return history__step_done(h, st, "recording a runner", err);
}

int history_runner_add(history *h, const struct history_runner_rec *r, struct fr_error *err)
{
    pthread_mutex_lock(&h->lock);
    int rc = sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK
                 ? runner_insert(h, r, err)
                 : history__fail(h, "begin", err);
    if (rc == FR_OK && sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = history__fail(h, "commit", err);
    if (rc != FR_OK)
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    else
        snprintf(h->live_runner, sizeof(h->live_runner), "%s", r->id);
    history__wrote(h);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

static int runner_close(history *h, const char *sql, const char *id, int64_t at_ms, const char *by,
                        struct fr_error *err)
{
    pthread_mutex_lock(&h->lock);
    sqlite3_stmt *st = history__prepare(h, sql, err);
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, at_ms);
        if (sqlite3_bind_parameter_count(st) >= 3)
            history__bind_text(st, 3, by && by[0] ? by : NULL);
    }
    int rc =
        one_row(h, history__step_done(h, st, "closing a runner", err), "closing a runner", id, err);
    if (strcmp(h->live_runner, id) == 0)
        h->live_runner[0] = '\0';
    history__wrote(h);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int history_runner_reset(history *h, const char *id, int64_t at_ms, const char *by,
                         struct fr_error *err)
{
    return runner_close(h,
                        "UPDATE runners SET reset_at = ?2, reset_by = ?3 WHERE id = ?1 AND "
                        "reset_at IS NULL AND ended_at IS NULL",
                        id, at_ms, by, err);
}

int history_runner_end(history *h, const char *id, int64_t at_ms, struct fr_error *err)
{
    return runner_close(h,
                        "UPDATE runners SET ended_at = ?2 WHERE id = ?1 AND reset_at IS NULL AND "
                        "ended_at IS NULL",
                        id, at_ms, NULL, err);
}

int history_query_add(history *h, const struct history_query_rec *q, struct fr_error *err)
{
    pthread_mutex_lock(&h->lock);
    sqlite3_stmt *st = history__prepare(
        h,
        "INSERT INTO queries (id, runner_id, config_id, dataframe, plan, state, created_at, "
        "started_at, tasks_total, tasks_done) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        err);
    if (st) {
        sqlite3_bind_text(st, 1, q->id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, q->runner_id, -1, SQLITE_TRANSIENT);
        history__bind_text(st, 3, q->config_id);
        history__bind_text(st, 4, q->dataframe);
        history__bind_text(st, 5, q->plan_json);
        sqlite3_bind_text(st, 6, q->state ? q->state : "queued", -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 7, q->created_ms);
        history__bind_opt(st, 8, q->started_ms);
        sqlite3_bind_int64(st, 9, q->tasks_total);
        sqlite3_bind_int64(st, 10, q->tasks_done);
    }
    int rc = history__step_done(h, st, "recording a query", err);
    if (rc == FR_OK) /* the count bound is kept at every accept: an indexed delete */
        rc = history__prune_locked(h, fr_now_ms(), false, err);
    history__wrote(h);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int history_query_end(history *h, const struct history_query_rec *q, struct fr_error *err)
{
    pthread_mutex_lock(&h->lock);
    sqlite3_stmt *st = history__prepare(
        h,
        "UPDATE queries SET state = ?2, started_at = COALESCE(started_at, ?3), finished_at = "
        "?4, rows = ?5, tasks_total = ?6, tasks_done = ?7, retries = ?8, error = ?9, "
        "task_config_ids = ?10, config_id = COALESCE(?11, config_id), stages = COALESCE(?12, "
        "stages) WHERE id = ?1",
        err);
    if (st) {
        sqlite3_bind_text(st, 1, q->id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, q->state, -1, SQLITE_TRANSIENT);
        history__bind_opt(st, 3, q->started_ms);
        history__bind_opt(st, 4, q->finished_ms);
        history__bind_opt(st, 5, q->rows);
        sqlite3_bind_int64(st, 6, q->tasks_total);
        sqlite3_bind_int64(st, 7, q->tasks_done);
        sqlite3_bind_int64(st, 8, q->retries);
        history__bind_text(st, 9, q->error_json);
        history__bind_text(st, 10, q->task_config_ids_json);
        history__bind_text(st, 11, q->config_id);
        history__bind_text(st, 12, q->stages_json);
    }
    int rc = one_row(h, history__step_done(h, st, "recording a query's end", err),
                     "recording a query's end", q->id, err);
    history__wrote(h);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int history_query_started(history *h, const char *id, int64_t at_ms, struct fr_error *err)
{
    pthread_mutex_lock(&h->lock);
    sqlite3_stmt *st = history__prepare(
        h, "UPDATE queries SET started_at = COALESCE(started_at, ?2) WHERE id = ?1", err);
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, at_ms);
    }
    int rc = one_row(h, history__step_done(h, st, "recording a query's start", err),
                     "recording a query's start", id, err);
    history__wrote(h);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int history_query_set_stages(history *h, const char *id, const char *stages_json,
                             struct fr_error *err)
{
    pthread_mutex_lock(&h->lock);
    sqlite3_stmt *st = history__prepare(h, "UPDATE queries SET stages = ?2 WHERE id = ?1", err);
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        history__bind_text(st, 2, stages_json);
    }
    int rc = one_row(h, history__step_done(h, st, "recording a query's stages", err),
                     "recording a query's stages", id, err);
    history__wrote(h);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

bool history_runner_recorded(history *h, const char *id)
{
    pthread_mutex_lock(&h->lock);
    bool known = strcmp(h->live_runner, id) == 0;
    pthread_mutex_unlock(&h->lock);
    return known;
}
