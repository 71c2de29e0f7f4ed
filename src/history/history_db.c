/* history_db: the history's SQLite file: open (moving a corrupt file aside,
 * never a busy or unreadable one), the schema and its migrations by PRAGMA
 * user_version, the recovery of what a previous process left running, and
 * the retention. */
#include "history_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Version 1. Times are ms since the epoch; configs hold each distinct
 * config's canonical bytes once. */
static const char *const schema_v1 =
    "CREATE TABLE configs (id TEXT PRIMARY KEY, bytes BLOB NOT NULL);"
    "CREATE TABLE runners (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
    " kind TEXT NOT NULL, config_id TEXT NOT NULL REFERENCES configs(id),"
    " frozen_at INTEGER NOT NULL, frozen_by TEXT, reset_at INTEGER, reset_by TEXT,"
    " ended_at INTEGER);"
    "CREATE TABLE queries (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
    " runner_id TEXT NOT NULL REFERENCES runners(id) ON DELETE CASCADE, config_id TEXT,"
    " dataframe TEXT, plan TEXT, state TEXT NOT NULL, created_at INTEGER NOT NULL,"
    " started_at INTEGER, finished_at INTEGER, rows INTEGER, tasks_total INTEGER NOT NULL"
    " DEFAULT 0, tasks_done INTEGER NOT NULL DEFAULT 0, retries INTEGER NOT NULL DEFAULT 0,"
    " error TEXT, task_config_ids TEXT, stages TEXT);"
    "CREATE INDEX queries_created ON queries(created_at);"
    "CREATE INDEX queries_runner ON queries(runner_id, seq);"
    "CREATE INDEX queries_state ON queries(state, seq);"
    "CREATE INDEX queries_config ON queries(config_id, seq);"
    "CREATE INDEX runners_config ON runners(config_id);";

int history__fail(history *h, const char *what, struct fr_error *err)
{
    atomic_fetch_add(&h->errors, 1);
    const char *msg = h->db ? sqlite3_errmsg(h->db) : "no database";
    FR_LOG(FR_LOG_ERROR, "history %s: %s failed: %s", h->path, what, msg);
    return fr_error_setk(err, FR_EIO, "internal", "history: %s failed: %s", what, msg);
}

sqlite3_stmt *history__prepare(history *h, const char *sql, struct fr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (!h->db || sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
        history__fail(h, "prepare", err);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

void history__bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

void history__bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
    if (v >= 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

int history__step_done(history *h, sqlite3_stmt *st, const char *what, struct fr_error *err)
{
    int rc = st ? sqlite3_step(st) : SQLITE_ERROR;
    int result = rc == SQLITE_DONE ? FR_OK : history__fail(h, what, err);
    sqlite3_finalize(st);
    return result;
}

static int exec_sql(history *h, const char *sql, const char *what, struct fr_error *err)
{
    if (sqlite3_exec(h->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return history__fail(h, what, err);
    return FR_OK;
}

/* One integer from a PRAGMA (or -1). */
static int64_t pragma_int(history *h, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* What a probe of the file found: sound, corrupt (not a database, or SQLite
 * says it is damaged) or an error that says nothing of the file (busy,
 * locked, I/O, memory, cannot open): then the file is left as it is. */
enum db_health { DB_SOUND, DB_CORRUPT, DB_ERROR };

static enum db_health health_of(int rc)
{
    rc &= 0xff; /* the primary code of an extended one */
    return rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT ? DB_CORRUPT : DB_ERROR;
}

/* The probe at every open: the schema read, a cost that does not grow with
 * the file. A full quick_check runs only when the probe or a later step of
 * the open reports SQLITE_CORRUPT (full). */
static enum db_health db_probe(history *h, bool full, struct fr_error *err)
{
    sqlite3_stmt *st = NULL;
    const char *sql = full ? "PRAGMA quick_check" : "SELECT COUNT(*) FROM sqlite_master";
    int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    enum db_health v = DB_SOUND;
    if (rc != SQLITE_ROW)
        v = health_of(rc);
    else if (full && strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0)
        v = DB_CORRUPT; /* a row that names damage */
    if (v == DB_ERROR)  /* before the finalize: the message is the step's */
        history__fail(h, full ? "quick_check" : "reading the schema", err);
    sqlite3_finalize(st);
    return v;
}

/* PRAGMA journal_mode=WAL answers the mode in force: anything but "wal"
 * (a file system without shared memory, a read-only file) is logged at
 * error and counted; the history goes on without the crash-safety claim. */
int history__configure(history *h, struct fr_error *err)
{
    sqlite3_stmt *st = history__prepare(h, "PRAGMA journal_mode=WAL", err);
    if (!st)
        return FR_EIO;
    int rc = sqlite3_step(st);
    const unsigned char *mode = rc == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
    bool wal = mode && strcmp((const char *)mode, "wal") == 0;
    if (!wal && rc == SQLITE_ROW) {
        atomic_fetch_add(&h->errors, 1);
        FR_LOG(FR_LOG_ERROR, "history %s: journal_mode is %s, not wal: a crash may lose it",
               h->path, mode ? (const char *)mode : "unknown");
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return history__fail(h, "journal_mode=WAL", err);
    /* synchronous=NORMAL with WAL: a kill -9 (or a crash) never corrupts
     * the database, since a commit is a WAL append whose frames a reader
     * ignores unless complete; NORMAL only skips the fsync per commit, so a
     * power loss may lose the last transactions, never the file.
     * journal_size_limit: a checkpointed WAL is cut back to 4 MiB. */
    return exec_sql(h,
                    "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA "
                    "journal_size_limit=4194304",
                    "pragmas", err);
}

/* Migrations by PRAGMA user_version: 0 (a new file) -> 1. A newer version
 * than this build knows is left alone (FR_EIO). */
static int migrate(history *h, struct fr_error *err)
{
    int64_t v = pragma_int(h, "PRAGMA user_version");
    if (v < 0)
        return history__fail(h, "reading user_version", err);
    if (v > HISTORY_SCHEMA_VERSION)
        return fr_error_set(err, FR_EIO,
                            "history %s has schema version %lld, newer than this framed's %d",
                            h->path, (long long)v, HISTORY_SCHEMA_VERSION);
    if (v == HISTORY_SCHEMA_VERSION)
        return FR_OK;
    /* incremental auto_vacuum (settable only before the first table): the
     * pages the prune frees go back to the file system (history__wrote) */
    int rc = exec_sql(h, "PRAGMA auto_vacuum=INCREMENTAL", "auto_vacuum", err);
    if (rc == FR_OK)
        rc = exec_sql(h, "BEGIN IMMEDIATE", "begin", err);
    if (rc == FR_OK)
        rc = exec_sql(h, schema_v1, "creating the schema", err);
    if (rc == FR_OK)
        rc = exec_sql(h, "PRAGMA user_version=1; COMMIT", "commit", err);
    if (rc != FR_OK)
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* What a previous process left: its active runner ended, its unfinished
 * queries failed as interrupted: their start kept, their end unknown
 * (finished_at null, so no elapsed time that counts the downtime). */
static int recover(history *h, int64_t now_ms, struct fr_error *err)
{
    static const char *const err_json = "{\"status\":500,\"kind\":\"interrupted\",\"message\":"
                                        "\"the coordinator stopped while it ran\"}";
    sqlite3_stmt *st = history__prepare(
        h, "UPDATE runners SET ended_at = ?1 WHERE reset_at IS NULL AND ended_at IS NULL", err);
    if (st)
        sqlite3_bind_int64(st, 1, now_ms);
    int rc = history__step_done(h, st, "ending runners", err);
    h->recovered_runners = rc == FR_OK ? sqlite3_changes(h->db) : 0;
    if (rc != FR_OK)
        return rc;
    st = history__prepare(h,
                          "UPDATE queries SET state = 'failed', finished_at = NULL, error = ?1 "
                          "WHERE state IN ('queued', 'running')",
                          err);
    if (st)
        sqlite3_bind_text(st, 1, err_json, -1, SQLITE_STATIC);
    rc = history__step_done(h, st, "failing interrupted queries", err);
    h->recovered_queries = rc == FR_OK ? sqlite3_changes(h->db) : 0;
    return rc;
}

/* Moves path (and its -wal, -shm) aside as path.corrupt-<time>. */
static int move_aside(const char *path, struct fr_error *err)
{
    char ts[40];
    fr_iso8601_ms(fr_now_ms(), ts, sizeof(ts));
    char *aside = fr_xasprintf("%s.corrupt-%s", path, ts);
    int rc = FR_OK;
    if (rename(path, aside) != 0)
        rc = fr_error_set(err, FR_EIO, "cannot move the corrupt history %s aside: %s", path,
                          strerror(errno));
    for (int i = 0; rc == FR_OK && i < 2; i++) {
        static const char *const ext[] = {"-wal", "-shm"};
        char *from = fr_xasprintf("%s%s", path, ext[i]), *to = fr_xasprintf("%s%s", aside, ext[i]);
        if (rename(from, to) != 0 && errno != ENOENT)
            unlink(from);
        free(from);
        free(to);
    }
    if (rc == FR_OK)
        FR_LOG(FR_LOG_ERROR, "history %s was corrupt: moved aside to %s, starting a fresh one",
               path, aside);
    free(aside);
    return rc;
}

static int open_file(history *h, struct fr_error *err)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(h->path, &h->db, flags, NULL) != SQLITE_OK)
        return history__fail(h, "open", err);
    sqlite3_extended_result_codes(h->db, 1);
    /* before the first read: a lock another process holds is waited for,
     * and past the wait it is an error, never taken for damage */
    sqlite3_busy_timeout(h->db, HISTORY_BUSY_MS);
    return FR_OK;
}

static void close_db(history *h)
{
    sqlite3_close(h->db);
    h->db = NULL;
}

/* Moves the corrupt file aside (once per open) and opens a fresh one. */
static int start_fresh(history *h, struct fr_error *err)
{
    close_db(h);
    h->moved_aside = true;
    atomic_fetch_add(&h->errors, 1);
    fr_error_init(err);
    int rc = move_aside(h->path, err);
    return rc == FR_OK ? open_file(h, err) : rc;
}

/* Opens the file. It is moved aside only when SQLite says it is not a
 * database or is damaged; any other failure (busy, locked, I/O, cannot
 * open) leaves it untouched and the history unavailable (FR_EIO). */
static int open_sound(history *h, struct fr_error *err)
{
    int rc = open_file(h, err);
    if (rc != FR_OK)
        return rc;
    enum db_health v = db_probe(h, false, err);
    if (v == DB_ERROR)
        return FR_EIO;
    if (v == DB_CORRUPT && (rc = start_fresh(h, err)) != FR_OK)
        return rc;
    return history__configure(h, err);
}

/* The schema, the recovery and the prune: the first reads of the tables. */
static int open_steps(history *h, int64_t now, struct fr_error *err)
{
    int rc = migrate(h, err);
    if (rc == FR_OK)
        rc = recover(h, now, err);
    if (rc == FR_OK)
        rc = history__prune_locked(h, now, true, err);
    return rc;
}

/* A step of the open failed: when SQLite said SQLITE_CORRUPT (and this open
 * has not moved a file aside yet), the full check decides; a file it finds
 * damaged is moved aside and the steps run again on a fresh one. */
static int open_retry_corrupt(history *h, int64_t now, int rc, struct fr_error *err)
{
    if (h->moved_aside || (sqlite3_errcode(h->db) & 0xff) != SQLITE_CORRUPT)
        return rc;
    struct fr_error check;
    fr_error_init(&check);
    if (db_probe(h, true, &check) != DB_CORRUPT)
        return rc;
    if ((rc = start_fresh(h, err)) == FR_OK)
        rc = history__configure(h, err);
    return rc == FR_OK ? open_steps(h, now, err) : rc;
}

int history_open(const char *dir, const struct history_options *opts, history **out,
                 struct fr_error *err)
{
    *out = NULL;
    history *h = fr_xcalloc(1, sizeof(*h));
    pthread_mutex_init(&h->lock, NULL);
    h->path = fr_xasprintf("%s/%s", dir, HISTORY_FILE);
    h->max_queries =
        opts && opts->max_queries > 0 ? opts->max_queries : HISTORY_DEFAULT_MAX_QUERIES;
    int64_t days =
        opts && opts->max_age_days > 0 ? opts->max_age_days : HISTORY_DEFAULT_MAX_AGE_DAYS;
    h->max_age_ms = days * 86400LL * 1000;
    int64_t now = fr_now_ms();
    int rc = open_sound(h, err);
    if (rc == FR_OK && (rc = open_steps(h, now, err)) != FR_OK)
        rc = open_retry_corrupt(h, now, rc, err);
    if (rc != FR_OK) {
        history_free(h);
        return rc;
    }
    *out = h;
    return FR_OK;
}

void history_free(history *h)
{
    if (!h)
        return;
    close_db(h);
    pthread_mutex_destroy(&h->lock);
    free(h->path);
    free(h);
}

int64_t history_errors(const history *h)
{
    return h ? atomic_load(&((history *)h)->errors) : 0;
}

void history_recovered(const history *h, int *runners_ended, int *queries_interrupted,
                       bool *moved_aside)
{
    *runners_ended = h->recovered_runners;
    *queries_interrupted = h->recovered_queries;
    *moved_aside = h->moved_aside;
}

/* Queries past the count or the age (never an unfinished one); with full,
 * also runners with no query left whose reset or end is past the age (never
 * the live one), and configs no runner refers to. */
int history__prune_locked(history *h, int64_t now_ms, bool full, struct fr_error *err)
{
    static const char *const sql[] = {
        "DELETE FROM queries WHERE created_at < ?1 AND state NOT IN ('queued', 'running')",
        /* seq grows by one per query: the newest max_queries are those above this */
        "DELETE FROM queries WHERE seq <= (SELECT MAX(seq) FROM queries) - ?2 AND state NOT IN "
        "('queued', 'running')",
        "DELETE FROM runners WHERE id <> ?3 AND COALESCE(reset_at, ended_at) < ?1 AND NOT "
        "EXISTS (SELECT 1 FROM queries WHERE queries.runner_id = runners.id)",
        "DELETE FROM configs WHERE NOT EXISTS (SELECT 1 FROM runners WHERE runners.config_id "
        "= configs.id)",
    };
    int rc = FR_OK;
    for (int i = 0; rc == FR_OK && i < (full ? 4 : 2); i++) {
        sqlite3_stmt *st = history__prepare(h, sql[i], err);
        if (st) {
            int n = sqlite3_bind_parameter_count(st);
            for (int p = 1; p <= n; p++) {
                const char *name = sqlite3_bind_parameter_name(st, p);
                if (!name) /* a gap in the numbering */
                    continue;
                if (strcmp(name, "?1") == 0)
                    sqlite3_bind_int64(st, p, now_ms - h->max_age_ms);
                else if (strcmp(name, "?2") == 0)
                    sqlite3_bind_int64(st, p, h->max_queries);
                else
                    sqlite3_bind_text(st, p, h->live_runner, -1, SQLITE_STATIC);
            }
        }
        rc = history__step_done(h, st, "pruning", err);
    }
    return rc;
}

int history_prune(history *h, int64_t now_ms, struct fr_error *err)
{
    pthread_mutex_lock(&h->lock);
    int rc = history__prune_locked(h, now_ms, true, err);
    if (rc == FR_OK)
        sqlite3_exec(h->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
    h->writes = 0;
    pthread_mutex_unlock(&h->lock);
    return rc;
}

void history__wrote(history *h)
{
    if (++h->writes < HISTORY_PRUNE_EVERY)
        return;
    h->writes = 0;
    struct fr_error err;
    fr_error_init(&err);
    if (history__prune_locked(h, fr_now_ms(), true, &err) == FR_OK) /* else counted, logged */
        sqlite3_exec(h->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
}
