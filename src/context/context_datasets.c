/* context_datasets: what requests on dataset files share: a bounded cache of
 * inferred schemas (so a listing reads a file once per change, not once per
 * request), the locks by name that make an upload's commit and a delete
 * atomic, and the start-up sweep of what a killed server left behind. */
#include "context_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCHEMA_SLOTS 256 /* files whose schema is remembered; the least recently used goes */
#define NAME_LOCKS 64    /* names hash onto these: one name always takes the same lock */

struct schema_slot {
    char *key; /* NULL = free; the path and what else the inference depends on */
    int64_t size;
    struct timespec mtime;
    dev_t dev;
    ino_t ino;
    json_t *schema; /* the schema array, or NULL when inference failed */
    char *error;    /* why it failed, or NULL */
    uint64_t used;  /* tick of the last hit */
};

struct ctx__datasets {
    pthread_mutex_t lock; /* "schema cache lock": slots and tick */
    struct schema_slot slots[SCHEMA_SLOTS];
    uint64_t tick;
    pthread_mutex_t names[NAME_LOCKS];
};

static bool same_file(const struct schema_slot *s, const struct stat *st)
{
    return s->size == st->st_size && s->mtime.tv_sec == st->st_mtim.tv_sec &&
           s->mtime.tv_nsec == st->st_mtim.tv_nsec && s->dev == st->st_dev && s->ino == st->st_ino;
}

static void slot_clear(struct schema_slot *s)
{
    free(s->key);
    free(s->error);
    json_decref(s->schema);
    memset(s, 0, sizeof(*s));
}

bool ctx__schema_cache_get(ctx *c, const char *key, const struct stat *st, json_t **schema,
                           char **error)
{
    struct ctx__datasets *d = c->datasets;
    bool hit = false;
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < SCHEMA_SLOTS && !hit; i++) {
        struct schema_slot *s = &d->slots[i];
        if (!s->key || strcmp(s->key, key) != 0 || !same_file(s, st))
            continue;
        /* copies: a json_t is not shared between request threads */
        *schema = s->schema ? json_deep_copy(s->schema) : NULL;
        *error = s->error ? fr_xstrdup(s->error) : NULL;
        s->used = ++d->tick;
        hit = true;
    }
    pthread_mutex_unlock(&d->lock);
    return hit;
}

void ctx__schema_cache_put(ctx *c, const char *key, const struct stat *st, const json_t *schema,
                           const char *error)
{
    struct ctx__datasets *d = c->datasets;
    pthread_mutex_lock(&d->lock);
    struct schema_slot *victim = &d->slots[0];
    for (int i = 0; i < SCHEMA_SLOTS; i++) {
        struct schema_slot *s = &d->slots[i];
        if (s->key && strcmp(s->key, key) == 0) { /* an older version of the file */
            victim = s;
            break;
        }
        if (!s->key || (victim->key && s->used < victim->used))
            victim = s;
    }
    slot_clear(victim);
    victim->key = fr_xstrdup(key);
    victim->size = st->st_size;
    victim->mtime = st->st_mtim;
    victim->dev = st->st_dev;
    victim->ino = st->st_ino;
    victim->schema = schema ? json_deep_copy(schema) : NULL;
    victim->error = error ? fr_xstrdup(error) : NULL;
    victim->used = ++d->tick;
    pthread_mutex_unlock(&d->lock);
}

int ctx__schema_cache_count(ctx *c)
{
    int n = 0;
    pthread_mutex_lock(&c->datasets->lock);
    for (int i = 0; i < SCHEMA_SLOTS; i++)
        n += c->datasets->slots[i].key != NULL;
    pthread_mutex_unlock(&c->datasets->lock);
    return n;
}

pthread_mutex_t *ctx__dataset_lock(ctx *c, const char *name)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *p = name; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return &c->datasets->names[h % NAME_LOCKS];
}

/* Removes one .upload-* directory (the file inside and the directory, never
 * following a link) and logs it. */
static void sweep_upload(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    int files = 0;
    long long bytes = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
            unlinkat(fd, e->d_name, 0) == 0) {
            files++;
            bytes += S_ISREG(st.st_mode) ? st.st_size : 0;
        }
    }
    closedir(d);
    bool gone = unlinkat(dfd, name, AT_REMOVEDIR) == 0;
    FR_LOG(FR_LOG_WARN, "data dir: %s the interrupted upload %s (%d file(s), %lld bytes)",
           gone ? "removed" : "could not fully remove", name, files, bytes);
}

/* Two formats of one name (name.csv, name.ndjson, name.parquet) exist only
 * when a server died between moving an upload into place and removing the
 * other formats: the newest is the dataset, the older ones are removed. */
static void sweep_twins(int dfd, const char *entry)
{
    static const char *const exts[] = {".csv", ".ndjson", ".parquet"};
    const char *dot = strrchr(entry, '.');
    char *files[3];
    struct stat st[3];
    int newest = -1;
    for (int i = 0; i < 3; i++) {
        files[i] = fr_xasprintf("%.*s%s", (int)(dot - entry), entry, exts[i]);
        bool is =
            fstatat(dfd, files[i], &st[i], AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st[i].st_mode);
        if (!is) {
            free(files[i]);
            files[i] = NULL;
        } else if (newest < 0 || st[i].st_ctim.tv_sec > st[newest].st_ctim.tv_sec ||
                   (st[i].st_ctim.tv_sec == st[newest].st_ctim.tv_sec &&
                    st[i].st_ctim.tv_nsec > st[newest].st_ctim.tv_nsec)) {
            newest = i;
        }
    }
    for (int i = 0; i < 3; i++) {
        if (files[i] && i != newest && unlinkat(dfd, files[i], 0) == 0)
            FR_LOG(FR_LOG_WARN, "data dir: removed %s, replaced by an upload cut short", files[i]);
        free(files[i]);
    }
}

static bool dataset_entry(const char *name)
{
    const char *dot = strrchr(name, '.');
    return name[0] != '.' && dot && dot != name &&
           (strcmp(dot, ".csv") == 0 || strcmp(dot, ".ndjson") == 0 ||
            strcmp(dot, ".parquet") == 0);
}

static void sweep(const char *data_dir)
{
    DIR *d = opendir(data_dir);
    if (!d)
        return;
    int dfd = dirfd(d);
    struct dirent *e;
    /* Collect first: removing entries while reading a directory may skip some. */
    char **names = NULL;
    size_t n = 0, cap = 0;
    while ((e = readdir(d))) {
        bool upload = strncmp(e->d_name, ".upload-", 8) == 0;
        if (!upload && !dataset_entry(e->d_name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            names = fr_xrealloc(names, cap * sizeof(*names));
        }
        names[n++] = fr_xstrdup(e->d_name);
    }
    for (size_t i = 0; i < n; i++) {
        if (names[i][0] == '.')
            sweep_upload(dfd, names[i]);
        else
            sweep_twins(dfd, names[i]);
        free(names[i]);
    }
    free(names);
    closedir(d);
}

struct ctx__datasets *ctx__datasets_new(const char *data_dir)
{
    struct ctx__datasets *d = fr_xcalloc(1, sizeof(*d));
    pthread_mutex_init(&d->lock, NULL);
    for (int i = 0; i < NAME_LOCKS; i++)
        pthread_mutex_init(&d->names[i], NULL);
    if (data_dir)
        sweep(data_dir);
    return d;
}

void ctx__datasets_free(struct ctx__datasets *d)
{
    if (!d)
        return;
    for (int i = 0; i < SCHEMA_SLOTS; i++)
        slot_clear(&d->slots[i]);
    for (int i = 0; i < NAME_LOCKS; i++)
        pthread_mutex_destroy(&d->names[i]);
    pthread_mutex_destroy(&d->lock);
    free(d);
}
