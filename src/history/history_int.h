/* history_int: the history's handle and the helpers its files share (not a face). */
#ifndef FRAMED_HISTORY_INT_H
#define FRAMED_HISTORY_INT_H

#include "history.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>

#define HISTORY_SCHEMA_VERSION 1
#define HISTORY_PRUNE_EVERY 64 /* writes between two full prunes */
#define HISTORY_BUSY_MS 5000   /* how long a statement waits on a lock held elsewhere */

struct history {
    pthread_mutex_t lock; /* "history lock": the connection and every field below */
    sqlite3 *db;
    char *path;
    int64_t max_queries;
    int64_t max_age_ms;
    char live_runner[64]; /* the runner of this process ("" = none): never pruned */
    int writes;           /* since the last full prune */
    atomic_llong errors;
    int recovered_runners, recovered_queries;
    bool moved_aside;
};

/* Counts and logs a failed statement (lock held), sets err (FR_EIO), returns FR_EIO. */
int history__fail(history *h, const char *what, struct fr_error *err);
/* Prepares sql (lock held): NULL after history__fail. */
sqlite3_stmt *history__prepare(history *h, const char *sql, struct fr_error *err);
/* Binds text or NULL. */
void history__bind_text(sqlite3_stmt *st, int i, const char *s);
/* Binds an integer, or NULL when v < 0. */
void history__bind_opt(sqlite3_stmt *st, int i, int64_t v);
/* Runs a statement that returns no rows and finalizes it: FR_OK or FR_EIO. */
int history__step_done(history *h, sqlite3_stmt *st, const char *what, struct fr_error *err);
/* WAL (checked: another mode is logged at error and counted), synchronous,
 * foreign keys; FR_EIO when the pragmas fail. */
int history__configure(history *h, struct fr_error *err);
/* The prune (lock held); full = also runners and configs. */
int history__prune_locked(history *h, int64_t now_ms, bool full, struct fr_error *err);
/* Counts one write and prunes fully every HISTORY_PRUNE_EVERY (lock held). */
void history__wrote(history *h);

#endif
