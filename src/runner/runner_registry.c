/* runner_registry: the workers a coordinator knows, their health from
 * heartbeats (active, then suspect after 3 missed beats, gone after 10,
 * forgotten after 60) and
 * the remote runner's bookkeeping of tasks in flight on each, used to pick
 * a worker by free slots and data locality. */
#include "runner_int.h"
#include "../store/store.h"

#include <stdlib.h>
#include <string.h>

/* Bounds of an announce, and of the registry: announces come from the
 * network, so each member and the number of workers kept are bounded. */
#define REG_MAX_WORKERS 256
#define REG_MAX_THREADS 4096 /* framed worker --threads allows as many */
#define REG_MAX_CONFIG_IDS 64
#define REG_MAX_ID_LEN 64
#define REG_MAX_URL_LEN 512
/* An announced worker gone this many heartbeats is forgotten (60 s at the
 * default 1 s); it is "gone" after 10. */
#define REG_FORGET_BEATS 60
/* Forgotten workers that still owe a drop, remembered (oldest first out) so
 * that their drop is sent when they announce again. */
#define REG_MAX_OWING 256
/* Configs one worker may owe drops of (a worker hung through that many
 * runner resets); past it the oldest debt is forgotten, logged. */
#define REG_MAX_OWED 8
/* "sha256:" and 64 hex digits, and the NUL */
#define REG_CONFIG_ID_SIZE 72
/* Heartbeat answers that name an owed config at most (an answer can be lost
 * on its way); told once, it is settled as soon as the worker's heartbeat no
 * longer reports holding it. */
#define REG_MAX_TELLS 3

/* Files whose scans a worker ran, remembered per worker (oldest out
 * first): a key (runner__scan_key) with bit 0 set when it read its own copy. */
#define REG_SCAN_FILES 64

/* The configs a worker must drop (with their partitions) once it is back:
 * the runners that made them lost it while its heartbeats lapsed. */
struct debt {
    struct {
        char id[REG_CONFIG_ID_SIZE];
        int told; /* heartbeat answers that named it so far */
    } c[REG_MAX_OWED];
    int n;
};

struct wentry {
    char *id;
    char *url;
    int threads;
    uint64_t files[REG_SCAN_FILES]; /* 0 = free */
    int files_next;
    int64_t reported_running;
    int inflight;         /* tasks this coordinator has on it now */
    int64_t last_done_ms; /* fr_mono_ms of its last task answered 200 (0: none) */
    /* Liveness counts on the monotonic clock (fr_mono_ms): a step of the wall
     * clock (NTP, an operator) neither makes every worker gone nor keeps a dead
     * one active. The wall time of the last beat is only shown. */
    int64_t last_beat_ms;    /* 0: never beat */
    int64_t beat_wall_ms;    /* the wall clock at that beat, for last_heartbeat */
    int64_t failed_until_ms; /* a failed call makes a static worker suspect until then */
    int64_t last_failure_ms; /* an announced one stays suspect until it beats again */
    json_t *config_ids;
    bool is_static;
    struct debt owed; /* it hung on a call: once back and idle it must drop these configs */
    int beats_owed;   /* heartbeats since: the first one after a hang can race the late
                       * requests the worker reads when it wakes, so two are awaited */
};

/* A forgotten worker that owes drops: its ID and URL (new), and the configs. */
struct owing {
    char *id;
    char *url;
    struct debt owed;
};

struct runner_registry {
    pthread_mutex_t lock; /* "registry lock": everything below */
    struct wentry *w;
    int n;
    struct owing owing[REG_MAX_OWING]; /* forgotten ones owing a drop */
    int nowing;
    int64_t heartbeat_ms;
    unsigned rotation; /* where the next pick starts, so ties spread over workers */
    /* The config of the live remote runner ("" none): its debts are settled
     * by the runner (runner__registry_take_returned), the others by the
     * registry in its answer to a heartbeat. */
    char live[REG_CONFIG_ID_SIZE];
};

/* Adds config_id to d (once: owed again, it is told afresh); past
 * REG_MAX_OWED the oldest goes. */
static void debt_add(struct debt *d, const char *url, const char *config_id)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->c[i].id, config_id) == 0) {
            d->c[i].told = 0;
            return;
        }
    if (d->n == REG_MAX_OWED) {
        FR_LOG(FR_LOG_WARN,
               "worker %s owes drops of %d configs: the oldest, %s, is forgotten (it stays "
               "there until the worker restarts)",
               url, REG_MAX_OWED, d->c[0].id);
        memmove(&d->c[0], &d->c[1], sizeof(d->c[0]) * (REG_MAX_OWED - 1));
        d->n--;
    }
    snprintf(d->c[d->n].id, REG_CONFIG_ID_SIZE, "%s", config_id);
    d->c[d->n++].told = 0;
}

/* Moves every debt of from into to (from is left empty). */
static void debt_merge(struct debt *to, struct debt *from, const char *url)
{
    for (int i = 0; i < from->n; i++)
        debt_add(to, url, from->c[i].id);
    from->n = 0;
}

/* Takes the debt of config_id out of d; true when there was one. */
static bool debt_take(struct debt *d, const char *config_id)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->c[i].id, config_id) == 0) {
            memmove(&d->c[i], &d->c[i + 1], sizeof(d->c[0]) * (size_t)(d->n - i - 1));
            d->n--;
            return true;
        }
    return false;
}

static bool listed(json_t *ids, const char *id)
{
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v)
    {
        if (strcmp(json_string_value(v), id) == 0)
            return true;
    }
    return false;
}

/* The heartbeat answer's part of worker e's debts (registry lock held):
 * every owed config but the live runner's (that runner tells its own) is
 * named in out, once more; one named before that e's heartbeat no longer
 * reports holding (config_ids), or named REG_MAX_TELLS times, is settled. */
static void debt_tell(struct wentry *e, const char *live, json_t *out)
{
    struct debt *d = &e->owed;
    int k = 0;
    for (int i = 0; i < d->n; i++) {
        bool other = strcmp(d->c[i].id, live) != 0;
        bool held = listed(e->config_ids, d->c[i].id);
        if (other && d->c[i].told > 0 && (d->c[i].told >= REG_MAX_TELLS || !held)) {
            if (held)
                FR_LOG(FR_LOG_WARN,
                       "worker %s at %s still holds config %s after %d heartbeat answers told "
                       "it to drop it: given up (it stays there until the worker restarts)",
                       e->id, e->url, d->c[i].id, d->c[i].told);
            continue; /* settled */
        }
        if (other) {
            if (d->c[i].told++ == 0)
                FR_LOG(FR_LOG_INFO,
                       "worker %s at %s is back after hanging: it drops config %s, released "
                       "while it was away, and its partitions",
                       e->id, e->url, d->c[i].id);
            json_array_append_new(out, json_string(d->c[i].id));
        }
        d->c[k++] = d->c[i];
    }
    d->n = k;
}

static struct wentry *add_entry(runner_registry *g, const char *id, const char *url)
{
    g->w = fr_xrealloc(g->w, sizeof(*g->w) * (size_t)(g->n + 1));
    struct wentry *e = &g->w[g->n++];
    memset(e, 0, sizeof(*e));
    e->id = fr_xstrdup(id);
    e->url = fr_xstrdup(url);
    e->threads = 1;
    e->config_ids = json_array();
    return e;
}

runner_registry *runner_registry_new(const char *static_urls, int64_t heartbeat_ms)
{
    runner_registry *g = fr_xcalloc(1, sizeof(*g));
    pthread_mutex_init(&g->lock, NULL);
    g->heartbeat_ms = heartbeat_ms > 0 ? heartbeat_ms : 1000;
    if (static_urls && static_urls[0]) {
        char *list = fr_xstrdup(static_urls), *save = NULL;
        for (char *u = strtok_r(list, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
            size_t len = strlen(u);
            while (len && u[len - 1] == '/')
                u[--len] = '\0';
            if (len) {
                struct wentry *e = add_entry(g, u, u);
                e->is_static = true;
                e->threads = 2;
            }
        }
        free(list);
    }
    return g;
}

void runner_registry_free(runner_registry *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n; i++) {
        free(g->w[i].id);
        free(g->w[i].url);
        json_decref(g->w[i].config_ids);
    }
    free(g->w);
    for (int i = 0; i < g->nowing; i++) {
        free(g->owing[i].id);
        free(g->owing[i].url);
    }
    pthread_mutex_destroy(&g->lock);
    free(g);
}

int64_t runner_registry_heartbeat_ms(const runner_registry *g)
{
    return g->heartbeat_ms;
}

static const char *state_of(const runner_registry *g, const struct wentry *e, int64_t now)
{
    if (e->is_static && !e->last_beat_ms)
        return now < e->failed_until_ms ? "suspect" : "active";
    int64_t age = now - e->last_beat_ms;
    if (age > 10 * g->heartbeat_ms)
        return "gone";
    /* a worker that failed a call is trusted again only after a newer heartbeat */
    if (age > 3 * g->heartbeat_ms || e->last_failure_ms >= e->last_beat_ms)
        return "suspect";
    return "active";
}

/* 1-64 of [A-Za-z0-9_.-]: a worker ID is logged and listed as it is. */
static bool id_ok(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > REG_MAX_ID_LEN)
        return false;
    return strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* http(s)://host[:port] with at most a trailing '/', at most REG_MAX_URL_LEN:
 * the coordinator appends /v1/... to it, so a path (or "..", a query, a
 * user) would make those calls go elsewhere. */
bool runner_worker_url_ok(const char *url)
{
    size_t n = url ? strlen(url) : 0;
    if (n == 0 || n > REG_MAX_URL_LEN ||
        (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
        return false;
    const char *host = url + (url[4] == 's' ? 8 : 7);
    size_t h = strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]");
    return h > 0 && (host[h] == '\0' || (host[h] == '/' && host[h + 1] == '\0'));
}

static bool int_member_ok(json_t *body, const char *key, json_int_t lo, json_int_t hi)
{
    json_t *v = json_object_get(body, key);
    return !v || (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi);
}

static bool config_ids_ok(json_t *ids)
{
    return !ids || fr_config_id_list_ok(ids, REG_MAX_CONFIG_IDS);
}

/* Every member's type and bound; a message naming the one that is wrong. */
static int announce_check(json_t *body, struct fr_error *err)
{
    if (!json_is_object(body) || !id_ok(json_string_value(json_object_get(body, "id"))) ||
        !runner_worker_url_ok(json_string_value(json_object_get(body, "url"))))
        return fr_error_set(err, FR_EINVAL,
                            "an announce needs {\"id\": 1-64 of [A-Za-z0-9_.-], \"url\": "
                            "\"http://...\" (at most 512 bytes), \"threads\", ...}");
    if (!int_member_ok(body, "threads", 1, REG_MAX_THREADS))
        return fr_error_set(err, FR_EINVAL, "threads must be an integer from 1 to %d",
                            REG_MAX_THREADS);
    if (!int_member_ok(body, "running_tasks", 0, REG_MAX_THREADS * 16))
        return fr_error_set(err, FR_EINVAL, "running_tasks must be an integer from 0 to %d",
                            REG_MAX_THREADS * 16);
    if (!config_ids_ok(json_object_get(body, "config_ids")))
        return fr_error_set(err, FR_EINVAL,
                            "config_ids must be an array of at most %d config IDs sha256:<64 hex>",
                            REG_MAX_CONFIG_IDS);
    return FR_OK;
}

/* Remembers a forgotten worker that owes drops (steals id and url; takes the
 * debts); the oldest record goes when REG_MAX_OWING are kept. Registry lock
 * held. */
static void owing_add_locked(runner_registry *g, char *id, char *url, struct debt *owed)
{
    if (g->nowing == REG_MAX_OWING) {
        free(g->owing[0].id);
        free(g->owing[0].url);
        memmove(&g->owing[0], &g->owing[1], sizeof(g->owing[0]) * (REG_MAX_OWING - 1));
        g->nowing--;
    }
    g->owing[g->nowing] = (struct owing){.id = id, .url = url};
    debt_merge(&g->owing[g->nowing++].owed, owed, url);
}

/* True (and the record gone, its debts moved to e) when a worker with e's ID
 * or URL was forgotten while it owed drops. Registry lock held. */
static bool owing_take_locked(runner_registry *g, struct wentry *e)
{
    bool found = false;
    int k = 0;
    for (int i = 0; i < g->nowing; i++) {
        if (strcmp(g->owing[i].id, e->id) == 0 || strcmp(g->owing[i].url, e->url) == 0) {
            found = true;
            debt_merge(&e->owed, &g->owing[i].owed, e->url);
            free(g->owing[i].id);
            free(g->owing[i].url);
            continue;
        }
        g->owing[k++] = g->owing[i];
    }
    g->nowing = k;
    return found;
}

/* Forgets announced workers whose heartbeats stopped REG_FORGET_BEATS beats
 * ago (static ones stay: they are configuration); one that owes a drop is
 * remembered as owing it. Registry lock held. */
static void prune_locked(runner_registry *g, int64_t now)
{
    int k = 0;
    for (int i = 0; i < g->n; i++) {
        struct wentry *e = &g->w[i];
        if (!e->is_static && e->inflight == 0 &&
            now - e->last_beat_ms > REG_FORGET_BEATS * g->heartbeat_ms) {
            FR_LOG(FR_LOG_INFO, "worker %s at %s forgotten: no heartbeat for %lld ms", e->id,
                   e->url, (long long)(now - e->last_beat_ms));
            if (e->owed.n)
                owing_add_locked(g, e->id, e->url, &e->owed); /* steals both */
            else {
                free(e->id);
                free(e->url);
            }
            json_decref(e->config_ids);
            continue;
        }
        g->w[k++] = *e;
    }
    g->n = k;
}

/* A returned worker may be told its debts now: two heartbeats since the
 * last debt, no task running, active (static workers do not beat). Registry
 * lock held. */
static bool settles_now(const runner_registry *g, const struct wentry *e, int64_t now)
{
    return e->owed.n && e->beats_owed >= 2 && e->reported_running == 0 && !e->is_static &&
           strcmp(state_of(g, e, now), "active") == 0;
}

int runner_registry_announce(runner_registry *g, json_t *body, json_t *release,
                             struct fr_error *err)
{
    int rc = announce_check(body, err);
    if (rc != FR_OK)
        return rc;
    const char *id = json_string_value(json_object_get(body, "id"));
    /* stored without its trailing '/', as static URLs are: calls append /v1/... */
    char *url = fr_xstrdup(json_string_value(json_object_get(body, "url")));
    for (size_t len = strlen(url); len && url[len - 1] == '/';)
        url[--len] = '\0';
    json_t *threads = json_object_get(body, "threads");
    pthread_mutex_lock(&g->lock);
    prune_locked(g, fr_mono_ms());
    struct wentry *e = NULL;
    for (int i = 0; i < g->n && !e; i++)
        if (strcmp(g->w[i].id, id) == 0 || strcmp(g->w[i].url, url) == 0)
            e = &g->w[i];
    if (!e && g->n >= REG_MAX_WORKERS) {
        pthread_mutex_unlock(&g->lock);
        free(url);
        return fr_error_set(err, FR_EINVAL,
                            "the coordinator knows %d workers already, its limit; gone workers "
                            "are forgotten after %d missed heartbeats",
                            REG_MAX_WORKERS, REG_FORGET_BEATS);
    }
    if (!e) {
        e = add_entry(g, id, url);
        FR_LOG(FR_LOG_INFO, "worker %s joined at %s", id, url);
        if (owing_take_locked(g, e)) { /* forgotten while it owed a drop */
            FR_LOG(FR_LOG_INFO, "worker %s at %s was forgotten owing a drop: it will be told", id,
                   url);
        }
    } else if (strcmp(e->id, id) != 0) { /* a restarted worker at the same URL */
        free(e->id);
        e->id = fr_xstrdup(id);
    }
    e->threads = threads ? (int)json_integer_value(threads) : e->threads;
    e->reported_running = json_integer_value(json_object_get(body, "running_tasks"));
    e->last_beat_ms = fr_mono_ms();
    e->beat_wall_ms = fr_now_ms();
    if (e->owed.n)
        e->beats_owed++;
    json_t *ids = json_object_get(body, "config_ids");
    json_decref(e->config_ids);
    e->config_ids = json_is_array(ids) ? json_deep_copy(ids) : json_array();
    if (release && settles_now(g, e, fr_mono_ms()))
        debt_tell(e, g->live, release);
    pthread_mutex_unlock(&g->lock);
    free(url);
    return FR_OK;
}

json_t *runner_registry_list(runner_registry *g)
{
    json_t *list = json_array();
    int64_t now = fr_mono_ms();
    pthread_mutex_lock(&g->lock);
    prune_locked(g, now);
    for (int i = 0; i < g->n; i++) {
        const struct wentry *e = &g->w[i];
        char at[40] = "";
        if (e->last_beat_ms)
            fr_iso8601_ms(e->beat_wall_ms, at, sizeof(at));
        json_array_append_new(
            list, json_pack("{ss ss ss so? sI si si sO sb}", "id", e->id, "url", e->url, "state",
                            state_of(g, e, now), "last_heartbeat",
                            e->last_beat_ms ? json_string(at) : NULL, "running_tasks",
                            (json_int_t)e->reported_running, "inflight", e->inflight, "threads",
                            e->threads, "config_ids", e->config_ids, "static", e->is_static));
    }
    pthread_mutex_unlock(&g->lock);
    return list;
}

/* 2: e read its own copy of file (a scan key) last time, 0: it read the
 * coordinator's by range, 1: not known (or no file). */
static int locality(const struct wentry *e, uint64_t file)
{
    for (int i = 0; file && i < REG_SCAN_FILES; i++)
        if (e->files[i] && (e->files[i] | 1) == (file | 1))
            return e->files[i] & 1 ? 2 : 0;
    return 1;
}

void runner__registry_note_scan(runner_registry *g, const char *url, uint64_t file, bool local)
{
    if (!file)
        return;
    uint64_t key = local ? file | 1 : file & ~(uint64_t)1;
    pthread_mutex_lock(&g->lock);
    for (int k = 0; k < g->n; k++) {
        struct wentry *e = &g->w[k];
        if (strcmp(e->url, url) != 0)
            continue;
        int slot = -1;
        for (int i = 0; i < REG_SCAN_FILES && slot < 0; i++)
            if (e->files[i] && (e->files[i] | 1) == (file | 1))
                slot = i;
        if (slot < 0) {
            slot = e->files_next;
            e->files_next = (e->files_next + 1) % REG_SCAN_FILES;
        }
        e->files[slot] = key;
    }
    pthread_mutex_unlock(&g->lock);
}

/* Picks an active worker with a free slot, never `avoid`: `prefer` (where
 * the inputs live) if it has one; else for a scan of `file` (a scan key, 0 =
 * none) one that read its own copy of it last time; else the least loaded.
 * While `prefer` or such a local worker is active but busy, *local_busy is set, and
 * with wait_local no other worker is given the job (NULL: it waits for the
 * local one, up to the caller's locality wait). Returns a
 * new copy of its URL (counted in flight) or NULL when none is free.
 * *any_alive tells whether some worker is active at all. */
char *runner__registry_pick(runner_registry *g, const char *prefer, const char *avoid,
                            uint64_t file, int64_t wait_since, bool *held, bool *any_alive)
{
    int64_t now = fr_mono_ms();
    struct wentry *best = NULL;
    int best_loc = -1;
    bool local_wait = false; /* a busy worker with the inputs or file is worth waiting for */
    bool may_wait =
        wait_since == 0 || (wait_since > 0 && now - wait_since < RUNNER_LOCALITY_WAIT_MAX_MS);
    *any_alive = false;
    *held = false;
    pthread_mutex_lock(&g->lock);
    /* The worker a job failed on is avoided only while another one is active:
     * a lone survivor is better than no worker at all. */
    bool other_active = false;
    for (int k = 0; avoid && k < g->n && !other_active; k++)
        other_active =
            strcmp(g->w[k].url, avoid) != 0 && strcmp(state_of(g, &g->w[k], now), "active") == 0;
    unsigned first = g->n ? g->rotation++ % (unsigned)g->n : 0;
    for (int k = 0; k < g->n; k++) {
        struct wentry *e = &g->w[(first + (unsigned)k) % (unsigned)g->n];
        if (strcmp(state_of(g, e, now), "active") != 0)
            continue;
        if (avoid && other_active && strcmp(e->url, avoid) == 0)
            continue;
        *any_alive = true;
        int loc = locality(e, file);
        if (e->inflight >= e->threads) {
            if (may_wait && (loc == 2 || (prefer && strcmp(e->url, prefer) == 0))) {
                int64_t from = wait_since ? wait_since : now;
                if (e->last_done_ms > from)
                    from = e->last_done_ms;
                local_wait |= now - from < RUNNER_LOCALITY_WAIT_MS;
            }
            continue;
        }
        if (prefer && strcmp(e->url, prefer) == 0) {
            best = e;
            best_loc = 3;
            break;
        }
        if (!best || loc > best_loc ||
            (loc == best_loc && e->inflight * best->threads < best->inflight * e->threads)) {
            best = e;
            best_loc = loc;
        }
    }
    if (best && best_loc < 2 && local_wait) {
        best = NULL; /* the worker with the inputs or the file is busy: wait for it a while */
        *held = true;
    }
    char *url = NULL;
    if (best) {
        best->inflight++;
        url = fr_xstrdup(best->url);
    }
    pthread_mutex_unlock(&g->lock);
    return url;
}

void runner__registry_done(runner_registry *g, const char *url, bool failed)
{
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++) {
        if (strcmp(g->w[i].url, url) != 0)
            continue;
        if (g->w[i].inflight > 0)
            g->w[i].inflight--;
        if (failed) {
            g->w[i].failed_until_ms = fr_mono_ms() + 3 * g->heartbeat_ms;
            g->w[i].last_failure_ms = fr_mono_ms();
        }
    }
    pthread_mutex_unlock(&g->lock);
}

void runner__registry_progress(runner_registry *g, const char *url)
{
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->w[i].url, url) == 0)
            g->w[i].last_done_ms = fr_mono_ms();
    pthread_mutex_unlock(&g->lock);
}

void runner__registry_suspect(runner_registry *g, const char *url)
{
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->w[i].url, url) == 0) {
            g->w[i].failed_until_ms = fr_mono_ms() + 3 * g->heartbeat_ms;
            g->w[i].last_failure_ms = fr_mono_ms();
        }
    pthread_mutex_unlock(&g->lock);
}

bool runner__registry_gone(runner_registry *g, const char *url)
{
    bool gone = false;
    int64_t now = fr_mono_ms();
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->w[i].url, url) == 0)
            gone = strcmp(state_of(g, &g->w[i], now), "gone") == 0;
    pthread_mutex_unlock(&g->lock);
    return gone;
}

void runner__registry_id_of(runner_registry *g, const char *url, char *out, size_t outsz)
{
    out[0] = '\0';
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->w[i].url, url) == 0)
            snprintf(out, outsz, "%s", g->w[i].id);
    pthread_mutex_unlock(&g->lock);
}

/* new: the URLs of every worker not gone, NULL-terminated. */
char **runner__registry_urls(runner_registry *g)
{
    int64_t now = fr_mono_ms();
    pthread_mutex_lock(&g->lock);
    char **urls = fr_xcalloc((size_t)g->n + 1, sizeof(char *));
    int k = 0;
    for (int i = 0; i < g->n; i++)
        if (strcmp(state_of(g, &g->w[i], now), "gone") != 0)
            urls[k++] = fr_xstrdup(g->w[i].url);
    pthread_mutex_unlock(&g->lock);
    return urls;
}

int runner__registry_live(runner_registry *g)
{
    int64_t now = fr_mono_ms();
    int live = 0;
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++)
        live += strcmp(state_of(g, &g->w[i], now), "gone") != 0;
    pthread_mutex_unlock(&g->lock);
    return live;
}

int runner__registry_slots(runner_registry *g)
{
    int64_t now = fr_mono_ms(), slots = 0;
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++)
        if (strcmp(state_of(g, &g->w[i], now), "gone") != 0)
            slots += g->w[i].threads > 0 ? g->w[i].threads : 1;
    pthread_mutex_unlock(&g->lock);
    return slots < 1 ? 1 : slots > 65536 ? 65536 : (int)slots;
}

void runner_registry_metrics(runner_registry *g, struct fr_buf *out)
{
    static const char *const states[] = {"active", "suspect", "gone"};
    int count[3] = {0, 0, 0};
    int64_t now = fr_mono_ms();
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++) {
        const char *st = state_of(g, &g->w[i], now);
        for (int k = 0; k < 3; k++)
            count[k] += strcmp(st, states[k]) == 0;
    }
    pthread_mutex_unlock(&g->lock);
    fr_buf_puts(out, "# HELP framed_workers Workers the coordinator knows, by state.\n"
                     "# TYPE framed_workers gauge\n");
    for (int k = 0; k < 3; k++)
        fr_buf_printf(out, "framed_workers{state=\"%s\"} %d\n", states[k], count[k]);
}

/* Heartbeats lapsed: an announced worker suspect by missed beats, or gone.
 * A failed call alone (the worker still beats) is not a lapse. */
static bool lapsed(const runner_registry *g, const struct wentry *e, int64_t now)
{
    return !e->is_static && now - e->last_beat_ms > 3 * g->heartbeat_ms;
}

/* Registry lock held. */
static void owe_locked(struct wentry *e, const char *config_id)
{
    debt_add(&e->owed, e->url, config_id);
    e->beats_owed = 0;
}

/* Records the drop of config_id owed by url's worker (only when its
 * heartbeats lapsed, with lapsed_only). Static workers never owe: no
 * heartbeat answer can tell them. True when it is owed. */
static bool owe(runner_registry *g, const char *url, const char *config_id, bool lapsed_only)
{
    bool owed = false;
    int64_t now = fr_mono_ms();
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++) {
        struct wentry *e = &g->w[i];
        if (strcmp(e->url, url) != 0 || e->is_static || (lapsed_only && !lapsed(g, e, now)))
            continue;
        owe_locked(e, config_id);
        owed = true;
    }
    pthread_mutex_unlock(&g->lock);
    return owed;
}

bool runner__registry_owe_drop(runner_registry *g, const char *url, const char *config_id)
{
    return owe(g, url, config_id, true);
}

bool runner__registry_owe_release(runner_registry *g, const char *url, const char *config_id)
{
    return owe(g, url, config_id, false);
}

char **runner__registry_release_targets(runner_registry *g, const char *config_id, int *gone)
{
    int64_t now = fr_mono_ms(); /* one look: a worker is either called or owes */
    *gone = 0;
    pthread_mutex_lock(&g->lock);
    char **urls = fr_xcalloc((size_t)g->n + 1, sizeof(char *));
    int k = 0;
    for (int i = 0; i < g->n; i++) {
        struct wentry *e = &g->w[i];
        if (strcmp(state_of(g, e, now), "gone") != 0) {
            urls[k++] = fr_xstrdup(e->url);
        } else if (!e->is_static) {
            owe_locked(e, config_id);
            (*gone)++;
        }
    }
    pthread_mutex_unlock(&g->lock);
    return urls;
}

void runner__registry_forgive(runner_registry *g, const char *url, const char *config_id)
{
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->w[i].url, url) == 0)
            debt_take(&g->w[i].owed, config_id);
    pthread_mutex_unlock(&g->lock);
}

void runner__registry_set_live(runner_registry *g, const char *config_id)
{
    pthread_mutex_lock(&g->lock);
    snprintf(g->live, sizeof(g->live), "%s", config_id ? config_id : "");
    /* A drop of this config a heartbeat answer told already took what the
     * worker held then (its mark): settled, so the new runner does not drop
     * its own partitions there with a DELETE. */
    for (int i = 0; config_id && i < g->n; i++) {
        struct debt *d = &g->w[i].owed;
        for (int k = 0; k < d->n; k++)
            if (strcmp(d->c[k].id, config_id) == 0) { /* once a worker */
                if (d->c[k].told > 0)
                    debt_take(d, config_id);
                break;
            }
    }
    pthread_mutex_unlock(&g->lock);
}

bool runner__registry_known(runner_registry *g, const char *url)
{
    bool known = false;
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n && !known; i++)
        known = strcmp(g->w[i].url, url) == 0;
    pthread_mutex_unlock(&g->lock);
    return known;
}

bool runner__registry_lapsed(runner_registry *g, const char *url)
{
    bool known = false, out = false;
    int64_t now = fr_mono_ms();
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->w[i].url, url) == 0) {
            known = true;
            out = lapsed(g, &g->w[i], now);
        }
    pthread_mutex_unlock(&g->lock);
    return out || !known;
}

char **runner__registry_take_returned(runner_registry *g, const char *config_id)
{
    int64_t now = fr_mono_ms();
    pthread_mutex_lock(&g->lock);
    char **urls = NULL;
    int k = 0;
    for (int i = 0; i < g->n; i++) {
        struct wentry *e = &g->w[i];
        if (!settles_now(g, e, now))
            continue;
        if (!debt_take(&e->owed, config_id))
            continue;
        urls = fr_xrealloc(urls, sizeof(char *) * (size_t)(k + 2));
        urls[k++] = fr_xstrdup(e->url);
        urls[k] = NULL;
    }
    pthread_mutex_unlock(&g->lock);
    return urls;
}
