/* store_embedded: the in-process config store: entries {id, bytes, holders}
 * behind one mutex, persisted as <hex>.json (bytes) and <hex>.holds (a holder
 * a line). One server uses a state dir, so every hold found at open is a dead
 * incarnation's: open drops it and the entry (logged), keeping I4 after kill -9,
 * and removes the temp files of writes a crash cut short. */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STORE_ID_LEN 71 /* "sha256:" + 64 hex */
#define STORE_PREFIX "sha256:"

struct embedded_entry {
    char id[STORE_ID_LEN + 1];
    char *bytes;
    size_t len;
    char **holders; /* owned strings */
    int nholders;
};

struct embedded_store {
    struct store base;    /* first: a store * is an embedded_store * */
    pthread_mutex_t lock; /* guards entries, n, cap and the files under dir */
    char *dir;            /* NULL: memory only */
    struct embedded_entry *entries;
    size_t n, cap;
};

bool store_id_valid(const char *id)
{
    return fr_config_id_valid(id); /* the one check, common's */
}

static struct embedded_store *emb(store *s)
{
    return (struct embedded_store *)s;
}

static struct embedded_entry *find_entry(struct embedded_store *es, const char *id)
{
    for (size_t i = 0; i < es->n; i++)
        if (strcmp(es->entries[i].id, id) == 0)
            return &es->entries[i];
    return NULL;
}

static int find_holder(const struct embedded_entry *e, const char *holder)
{
    for (int i = 0; i < e->nholders; i++)
        if (strcmp(e->holders[i], holder) == 0)
            return i;
    return -1;
}

/* new: <dir>/<hex>.<ext> */
static char *entry_path(const struct embedded_store *es, const char *id, const char *ext)
{
    return fr_xasprintf("%s/%s.%s", es->dir, id + 7, ext);
}

static int write_holds(struct embedded_store *es, const struct embedded_entry *e,
                       struct fr_error *err)
{
    if (!es->dir)
        return FR_OK;
    struct fr_buf b;
    fr_buf_init(&b);
    for (int i = 0; i < e->nholders; i++)
        fr_buf_printf(&b, "%s\n", e->holders[i]);
    char *path = entry_path(es, e->id, "holds");
    int rc = fr_file_write_atomic(path, b.data ? b.data : "", b.len, err);
    free(path);
    fr_buf_cleanup(&b);
    return rc;
}

static int write_bytes(struct embedded_store *es, const struct embedded_entry *e,
                       struct fr_error *err)
{
    if (!es->dir)
        return FR_OK;
    char *path = entry_path(es, e->id, "json");
    int rc = fr_file_write_atomic(path, e->bytes, e->len, err);
    free(path);
    return rc;
}

/* The holds file goes first: a crash in between leaves bytes without holds,
 * which the next open removes, rather than holds without bytes. */
static int remove_files(struct embedded_store *es, const char *id, struct fr_error *err)
{
    if (!es->dir)
        return FR_OK;
    int result = FR_OK;
    char *holds = entry_path(es, id, "holds");
    char *json = entry_path(es, id, "json");
    if (unlink(holds) != 0 && errno != ENOENT) {
        result = fr_error_set(err, FR_EIO, "cannot remove %s: %s", holds, strerror(errno));
        goto out;
    }
    if (unlink(json) != 0 && errno != ENOENT)
        FR_LOG(FR_LOG_WARN, "store: cannot remove %s: %s (the next start removes it)", json,
               strerror(errno));
out:
    free(holds);
    free(json);
    return result;
}

/* Appends an entry that steals bytes, with no holder yet. */
static struct embedded_entry *add_entry(struct embedded_store *es, const char *id, char *bytes,
                                        size_t len)
{
    if (es->n == es->cap) {
        es->cap = es->cap ? es->cap * 2 : 8;
        es->entries = fr_xrealloc(es->entries, es->cap * sizeof(*es->entries));
    }
    struct embedded_entry *e = &es->entries[es->n++];
    memset(e, 0, sizeof(*e));
    snprintf(e->id, sizeof(e->id), "%.*s", (int)sizeof(e->id) - 1, id);
    e->bytes = bytes;
    e->len = len;
    return e;
}

static void drop_entry(struct embedded_store *es, struct embedded_entry *e)
{
    free(e->bytes);
    for (int i = 0; i < e->nholders; i++)
        free(e->holders[i]);
    free(e->holders);
    *e = es->entries[--es->n];
}

static void add_holder(struct embedded_entry *e, const char *holder)
{
    e->holders = fr_xrealloc(e->holders, sizeof(char *) * (size_t)(e->nholders + 1));
    e->holders[e->nholders++] = fr_xstrdup(holder);
}

static void remove_holder(struct embedded_entry *e, int i)
{
    free(e->holders[i]);
    e->holders[i] = e->holders[--e->nholders];
}

/* Called with the lock held: a new entry for bytes with holder's hold. */
static int create_locked(struct embedded_store *es, const char *id, const char *holder,
                         const char *bytes, size_t len, struct fr_error *err)
{
    char *copy = fr_try_malloc(len ? len : 1);
    if (!copy)
        return fr_error_set(err, FR_ETOOLARGE, "config of %zu bytes is too large to store", len);
    if (len)
        memcpy(copy, bytes, len);
    struct embedded_entry *e = add_entry(es, id, copy, len);
    add_holder(e, holder);
    int rc = write_bytes(es, e, err);
    if (rc == FR_OK)
        rc = write_holds(es, e, err);
    if (rc != FR_OK) {
        remove_files(es, id, NULL);
        drop_entry(es, e);
    }
    return rc;
}

/* Called with the lock held: holder holds e (once). */
static int hold_locked(struct embedded_store *es, struct embedded_entry *e, const char *holder,
                       struct fr_error *err)
{
    if (find_holder(e, holder) >= 0)
        return FR_OK;
    add_holder(e, holder);
    int rc = write_holds(es, e, err);
    if (rc != FR_OK)
        remove_holder(e, e->nholders - 1);
    return rc;
}

static int check_args(const char *holder, char *id_out, size_t id_outsz, struct fr_error *err)
{
    if (!id_out || id_outsz < STORE_ID_LEN + 1)
        return fr_error_set(err, FR_EINTERNAL, "store_put: the ID buffer is too small");
    if (!store_holder_valid(holder))
        return fr_error_set(err, FR_EINVAL, "'%.100s' is not a store holder ([A-Za-z0-9._-]{1,64})",
                            holder ? holder : "");
    return FR_OK;
}

static int embedded_put(store *s, const char *holder, const char *bytes, size_t len, char *id_out,
                        size_t id_outsz, struct fr_error *err)
{
    struct embedded_store *es = emb(s);
    char id[80];
    int rc = check_args(holder, id_out, id_outsz, err);
    if (rc != FR_OK)
        return rc;
    fr_sha256_id(bytes, len, id, sizeof(id));
    pthread_mutex_lock(&es->lock);
    struct embedded_entry *e = find_entry(es, id);
    if (!e)
        rc = create_locked(es, id, holder, bytes, len, err);
    else if (e->len != len || memcmp(e->bytes, bytes, len) != 0)
        rc = fr_error_set(err, FR_ECONFLICT,
                          "the store holds other bytes under %s (a corrupted entry); the config "
                          "was not stored",
                          id);
    else
        rc = hold_locked(es, e, holder, err);
    pthread_mutex_unlock(&es->lock);
    if (rc == FR_OK)
        snprintf(id_out, id_outsz, "%s", id);
    return rc;
}

static int embedded_restore(store *s, const char *holder, const char *bytes, size_t len,
                            enum store_restored *what, struct fr_error *err)
{
    struct embedded_store *es = emb(s);
    char id[80];
    int rc = check_args(holder, id, sizeof(id), err);
    if (rc != FR_OK)
        return rc;
    fr_sha256_id(bytes, len, id, sizeof(id));
    *what = STORE_INTACT;
    pthread_mutex_lock(&es->lock);
    struct embedded_entry *e = find_entry(es, id);
    if (!e) {
        *what = STORE_RESTORED;
        rc = create_locked(es, id, holder, bytes, len, err);
        goto out;
    }
    if (e->len != len || memcmp(e->bytes, bytes, len) != 0) {
        char *copy = fr_try_malloc(len ? len : 1);
        if (!copy) {
            rc = fr_error_set(err, FR_ENOSPACE, "no memory to repair config %s", id);
            goto out;
        }
        if (len)
            memcpy(copy, bytes, len);
        free(e->bytes);
        e->bytes = copy;
        e->len = len;
        *what = STORE_REPAIRED;
        if ((rc = write_bytes(es, e, err)) != FR_OK)
            goto out;
    }
    rc = hold_locked(es, e, holder, err);
out:
    pthread_mutex_unlock(&es->lock);
    return rc;
}

static int embedded_get(store *s, const char *id, char **bytes, size_t *len, struct fr_error *err)
{
    struct embedded_store *es = emb(s);
    int result = FR_ENOTFOUND;
    if (!store_id_valid(id))
        return fr_error_set(err, FR_EINVAL, "'%.100s' is not a config ID (sha256:<64 hex>)",
                            id ? id : "");
    pthread_mutex_lock(&es->lock);
    struct embedded_entry *e = find_entry(es, id);
    if (!e) {
        fr_error_set(err, FR_ENOTFOUND, "config %s is not in the store", id);
        goto out;
    }
    char *copy = fr_try_malloc(e->len + 1);
    if (!copy) {
        result = fr_error_set(err, FR_ENOSPACE, "no memory to copy config %s", id);
        goto out;
    }
    memcpy(copy, e->bytes, e->len);
    copy[e->len] = '\0'; /* a convenience: the bytes are JSON text */
    *bytes = copy;
    *len = e->len;
    result = FR_OK;
out:
    pthread_mutex_unlock(&es->lock);
    return result;
}

static int embedded_release(store *s, const char *id, const char *holder, struct fr_error *err)
{
    struct embedded_store *es = emb(s);
    int result = FR_ENOTFOUND;
    pthread_mutex_lock(&es->lock);
    struct embedded_entry *e = id ? find_entry(es, id) : NULL;
    int h = e && holder ? find_holder(e, holder) : -1;
    if (h < 0) {
        fr_error_set(err, FR_ENOTFOUND, "config %.100s is not held by %.64s in the store",
                     id ? id : "", holder ? holder : "");
        goto out;
    }
    if (e->nholders > 1) {
        char *gone = e->holders[h];
        e->holders[h] = e->holders[--e->nholders];
        result = write_holds(es, e, err);
        if (result != FR_OK) {
            e->holders[e->nholders++] = gone; /* order does not matter */
            goto out;
        }
        free(gone);
        goto out;
    }
    result = remove_files(es, id, err);
    if (result == FR_OK)
        drop_entry(es, e);
out:
    pthread_mutex_unlock(&es->lock);
    return result;
}

static int embedded_refcount(store *s, const char *id, int64_t *count, struct fr_error *err)
{
    (void)err;
    struct embedded_store *es = emb(s);
    pthread_mutex_lock(&es->lock);
    struct embedded_entry *e = id ? find_entry(es, id) : NULL;
    *count = e ? e->nholders : 0;
    pthread_mutex_unlock(&es->lock);
    return FR_OK;
}

static void embedded_free(store *s)
{
    struct embedded_store *es = emb(s);
    while (es->n > 0)
        drop_entry(es, &es->entries[es->n - 1]);
    free(es->entries);
    free(es->dir);
    pthread_mutex_destroy(&es->lock);
    store__base_cleanup(s);
    free(es);
}

static const struct store_vtable embedded_vtable = {
    .name = "embedded",
    .put = embedded_put,
    .get = embedded_get,
    .release = embedded_release,
    .refcount = embedded_refcount,
    .restore = embedded_restore,
    .free = embedded_free,
};

/* <64 hex>.json, .holds or .count (the count file of older versions). */
static const char *entry_ext(const char *name)
{
    if (strlen(name) < 65 || name[64] != '.' || strspn(name, "0123456789abcdef") != 64)
        return NULL;
    const char *ext = name + 65;
    return strcmp(ext, "json") == 0 || strcmp(ext, "holds") == 0 || strcmp(ext, "count") == 0
               ? ext
               : NULL;
}

/* <64 hex>.json.tmp.<pid> or .holds.tmp.<pid>: what a write cut short by a
 * crash leaves (fr_file_write_atomic's temp file). */
static bool is_stale_temp(const char *name)
{
    if (strlen(name) < 65 || name[64] != '.' || strspn(name, "0123456789abcdef") != 64)
        return false;
    const char *rest = name + 65;
    if (strncmp(rest, "json.tmp.", 9) == 0)
        rest += 9;
    else if (strncmp(rest, "holds.tmp.", 10) == 0)
        rest += 10;
    else
        return false;
    return *rest && strspn(rest, "0123456789") == strlen(rest);
}

/* Logs the holds a dead incarnation left in path (one holder a line; an old
 * count file: a number) and removes the file. */
static void drop_dead_file(const char *dir, const char *name, const char *ext)
{
    char *path = fr_xasprintf("%s/%s", dir, name);
    if (strcmp(ext, "json") != 0) {
        char *text = NULL;
        size_t len = 0;
        if (fr_file_read_all(path, &text, &len, NULL) == FR_OK) {
            for (size_t i = 0; i < len; i++)
                if (text[i] == '\n')
                    text[i] = ' ';
            FR_LOG(FR_LOG_WARN,
                   "store: dropping the hold(s) a dead incarnation left on sha256:%.64s (%s: "
                   "%.300s); the entry is removed",
                   name, strcmp(ext, "holds") == 0 ? "holders" : "old count", text);
        }
        free(text);
    }
    if (unlink(path) != 0 && errno != ENOENT)
        FR_LOG(FR_LOG_WARN, "store: cannot remove %s: %s", path, strerror(errno));
    free(path);
}

/* Every entry left in the directory has no live holder: removes it. */
static int reclaim_dir(struct embedded_store *es, struct fr_error *err)
{
    DIR *d = opendir(es->dir);
    if (!d)
        return fr_error_set(err, FR_EIO, "cannot open store directory %s: %s", es->dir,
                            strerror(errno));
    struct dirent *de;
    int removed = 0;
    while ((de = readdir(d)) != NULL) {
        if (is_stale_temp(de->d_name)) { /* the server is alone here: no write is under way */
            char *path = fr_xasprintf("%s/%s", es->dir, de->d_name);
            FR_LOG(FR_LOG_WARN, "store: removing %s, a write cut short by a crash", path);
            if (unlink(path) != 0 && errno != ENOENT)
                FR_LOG(FR_LOG_WARN, "store: cannot remove %s: %s", path, strerror(errno));
            free(path);
            removed++;
            continue;
        }
        const char *ext = entry_ext(de->d_name);
        if (!ext)
            continue;
        drop_dead_file(es->dir, de->d_name, ext);
        removed++;
    }
    closedir(d);
    if (removed)
        FR_LOG(FR_LOG_INFO, "store: reclaimed what dead incarnations held in %s (%d file(s))",
               es->dir, removed);
    return FR_OK;
}

int store_embedded_open(const char *dir, store **out, struct fr_error *err)
{
    int result = FR_EIO;
    struct embedded_store *es = fr_xcalloc(1, sizeof(*es));
    store__base_init(&es->base, &embedded_vtable, 0);
    pthread_mutex_init(&es->lock, NULL);
    *out = NULL;
    if (dir) {
        es->dir = fr_xstrdup(dir);
        result = fr_mkdir_p(dir, err);
        if (result != FR_OK)
            goto out;
        result = reclaim_dir(es, err);
        if (result != FR_OK)
            goto out;
    }
    *out = &es->base;
    es = NULL;
    result = FR_OK;
out:
    if (es)
        embedded_free(&es->base);
    return result;
}

int store_embedded_tamper(store *s, const char *id, const char *bytes, size_t len)
{
    if (s->vt != &embedded_vtable)
        return FR_EINVAL;
    struct embedded_store *es = emb(s);
    int result = FR_ENOTFOUND;
    pthread_mutex_lock(&es->lock);
    struct embedded_entry *e = id ? find_entry(es, id) : NULL;
    if (!e)
        goto out;
    free(e->bytes);
    e->bytes = fr_xmalloc(len ? len : 1);
    if (len)
        memcpy(e->bytes, bytes, len);
    e->len = len;
    result = write_bytes(es, e, NULL); /* the file too, as a disk that rotted would */
out:
    pthread_mutex_unlock(&es->lock);
    return result;
}
