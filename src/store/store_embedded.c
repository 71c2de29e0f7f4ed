/* store_embedded: the in-process config store. Entries {id, bytes, count}
 * live in an array behind one mutex and, with a directory, as two files per
 * entry (<hex>.json: the bytes, <hex>.count: the count) written atomically,
 * so counts survive a restart. Files whose bytes do not hash to their name
 * are skipped when loading, never trusted. */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
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
    int64_t count;
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

/* new: <dir>/<hex>.<ext> */
static char *entry_path(const struct embedded_store *es, const char *id, const char *ext)
{
    return fr_xasprintf("%s/%s.%s", es->dir, id + 7, ext);
}

static int write_count(struct embedded_store *es, const struct embedded_entry *e,
                       struct fr_error *err)
{
    if (!es->dir)
        return FR_OK;
    char text[32];
    int n = snprintf(text, sizeof(text), "%" PRId64 "\n", e->count);
    char *path = entry_path(es, e->id, "count");
    int rc = fr_file_write_atomic(path, text, (size_t)n, err);
    free(path);
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

/* The count file goes first: a crash in between leaves bytes without a
 * count, which loading skips, rather than a count without bytes. */
static int remove_files(struct embedded_store *es, const char *id, struct fr_error *err)
{
    if (!es->dir)
        return FR_OK;
    int result = FR_OK;
    char *count = entry_path(es, id, "count");
    char *json = entry_path(es, id, "json");
    if (unlink(count) != 0 && errno != ENOENT) {
        result = fr_error_set(err, FR_EIO, "cannot remove %s: %s", count, strerror(errno));
        goto out;
    }
    if (unlink(json) != 0 && errno != ENOENT)
        FR_LOG(FR_LOG_WARN, "store: cannot remove %s: %s (it will be skipped)", json,
               strerror(errno));
out:
    free(count);
    free(json);
    return result;
}

/* Appends an entry that steals bytes. */
static struct embedded_entry *add_entry(struct embedded_store *es, const char *id, char *bytes,
                                        size_t len, int64_t count)
{
    if (es->n == es->cap) {
        es->cap = es->cap ? es->cap * 2 : 8;
        es->entries = fr_xrealloc(es->entries, es->cap * sizeof(*es->entries));
    }
    struct embedded_entry *e = &es->entries[es->n++];
    snprintf(e->id, sizeof(e->id), "%.*s", (int)sizeof(e->id) - 1, id);
    e->bytes = bytes;
    e->len = len;
    e->count = count;
    return e;
}

static void drop_entry(struct embedded_store *es, struct embedded_entry *e)
{
    free(e->bytes);
    *e = es->entries[--es->n];
}

/* Called with the lock held. */
static int put_locked(struct embedded_store *es, const char *id, const char *bytes, size_t len,
                      struct fr_error *err)
{
    struct embedded_entry *e = find_entry(es, id);
    if (e) {
        e->count++;
        int rc = write_count(es, e, err);
        if (rc != FR_OK)
            e->count--;
        return rc;
    }
    char *copy = fr_try_malloc(len ? len : 1);
    if (!copy)
        return fr_error_set(err, FR_ETOOLARGE, "config of %zu bytes is too large to store", len);
    if (len)
        memcpy(copy, bytes, len);
    e = add_entry(es, id, copy, len, 1);
    int rc = write_bytes(es, e, err);
    if (rc == FR_OK)
        rc = write_count(es, e, err);
    if (rc != FR_OK) {
        remove_files(es, id, NULL);
        drop_entry(es, e);
    }
    return rc;
}

static int embedded_put(store *s, const char *bytes, size_t len, char *id_out, size_t id_outsz,
                        struct fr_error *err)
{
    struct embedded_store *es = emb(s);
    char id[80];
    if (!id_out || id_outsz < STORE_ID_LEN + 1)
        return fr_error_set(err, FR_EINTERNAL, "store_put: the ID buffer is too small");
    fr_sha256_id(bytes, len, id, sizeof(id));
    pthread_mutex_lock(&es->lock);
    int rc = put_locked(es, id, bytes, len, err);
    pthread_mutex_unlock(&es->lock);
    if (rc == FR_OK)
        snprintf(id_out, id_outsz, "%s", id);
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

static int embedded_release(store *s, const char *id, struct fr_error *err)
{
    struct embedded_store *es = emb(s);
    int result = FR_ENOTFOUND;
    pthread_mutex_lock(&es->lock);
    struct embedded_entry *e = id ? find_entry(es, id) : NULL;
    if (!e) {
        fr_error_set(err, FR_ENOTFOUND, "config %.100s is not in the store", id ? id : "");
        goto out;
    }
    if (e->count > 1) {
        e->count--;
        result = write_count(es, e, err);
        if (result != FR_OK)
            e->count++;
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
    *count = e ? e->count : 0;
    pthread_mutex_unlock(&es->lock);
    return FR_OK;
}

static void embedded_free(store *s)
{
    struct embedded_store *es = emb(s);
    for (size_t i = 0; i < es->n; i++)
        free(es->entries[i].bytes);
    free(es->entries);
    free(es->dir);
    pthread_mutex_destroy(&es->lock);
    free(es);
}

static const struct store_vtable embedded_vtable = {
    .name = "embedded",
    .put = embedded_put,
    .get = embedded_get,
    .release = embedded_release,
    .refcount = embedded_refcount,
    .free = embedded_free,
};

/* A strictly positive decimal count followed by an optional newline. */
static bool parse_count(const char *text, int64_t *out)
{
    char *end = NULL;
    if (text[0] < '0' || text[0] > '9')
        return false;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno == ERANGE || v <= 0 || (strcmp(end, "\n") != 0 && *end != '\0'))
        return false;
    *out = (int64_t)v;
    return true;
}

/* Loads <hex>.json and <hex>.count; a bad pair is logged and skipped. */
static void load_entry(struct embedded_store *es, const char *hex)
{
    char id[80], actual[80];
    char *bytes = NULL, *count_text = NULL;
    size_t len = 0, count_len = 0;
    int64_t count = 0;
    snprintf(id, sizeof(id), STORE_PREFIX "%s", hex);
    char *json_path = entry_path(es, id, "json");
    char *count_path = entry_path(es, id, "count");
    struct fr_error err;
    fr_error_init(&err);
    if (fr_file_read_all(json_path, &bytes, &len, &err) != FR_OK ||
        fr_file_read_all(count_path, &count_text, &count_len, &err) != FR_OK) {
        FR_LOG(FR_LOG_WARN, "store: skipping %s: %s", json_path, err.message);
        goto out;
    }
    fr_sha256_id(bytes, len, actual, sizeof(actual));
    if (strcmp(actual, id) != 0) {
        FR_LOG(FR_LOG_WARN, "store: skipping %s: its bytes hash to %s (corrupt)", json_path,
               actual);
        goto out;
    }
    if (!parse_count(count_text, &count)) {
        FR_LOG(FR_LOG_WARN, "store: skipping %s: %s does not hold a positive count", json_path,
               count_path);
        goto out;
    }
    add_entry(es, id, bytes, len, count);
    bytes = NULL;
out:
    free(bytes);
    free(count_text);
    free(json_path);
    free(count_path);
}

static bool is_entry_name(const char *name)
{
    size_t n = strlen(name);
    if (n != 64 + 5 || strcmp(name + 64, ".json") != 0)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    return true;
}

static int load_dir(struct embedded_store *es, struct fr_error *err)
{
    DIR *d = opendir(es->dir);
    if (!d)
        return fr_error_set(err, FR_EIO, "cannot open store directory %s: %s", es->dir,
                            strerror(errno));
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!is_entry_name(de->d_name))
            continue;
        char hex[65];
        memcpy(hex, de->d_name, 64);
        hex[64] = '\0';
        load_entry(es, hex);
    }
    closedir(d);
    return FR_OK;
}

int store_embedded_open(const char *dir, store **out, struct fr_error *err)
{
    int result = FR_EIO;
    struct embedded_store *es = fr_xcalloc(1, sizeof(*es));
    es->base.vt = &embedded_vtable;
    pthread_mutex_init(&es->lock, NULL);
    *out = NULL;
    if (dir) {
        es->dir = fr_xstrdup(dir);
        result = fr_mkdir_p(dir, err);
        if (result != FR_OK)
            goto out;
        result = load_dir(es, err);
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
    /* The file too, as a disk that rotted would: reopening must notice. */
    result = write_bytes(es, e, NULL);
out:
    pthread_mutex_unlock(&es->lock);
    return result;
}
