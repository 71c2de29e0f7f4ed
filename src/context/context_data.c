/* context_data: datasets are files name.csv / name.ndjson / name.parquet in
 * the data dir. Uploads stream into a hidden temp file and are renamed into
 * place only after the whole body arrived and was checked (a Parquet file:
 * every page decoded), so a failed or cut upload leaves nothing behind. */
#include "context_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* A listing shows at most this many datasets (and says it was truncated). */
#define CTX_MAX_LISTED_DATASETS 10000

/* A dataset has one of these formats; an upload of one replaces the others. */
static const char *const formats[] = {"csv", "ndjson", "parquet"};
#define NFORMATS 3

struct ctx_upload {
    ctx *c;
    char *name;
    const char *format;
    char *tmp_dir; /* a hidden directory of its own, so the file has its final name */
    char *tmp_path;
    int fd;
    int64_t bytes;
};

/* The inference depends on the file and on the config's CSV null values: the
 * cache key holds both. new. */
static char *schema_key(const char *path, const struct df_options *opts)
{
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, path);
    for (int i = 0; i < opts->n_csv_null_values; i++) {
        fr_buf_putc(&b, '\x1f');
        fr_buf_puts(&b, opts->csv_null_values[i]);
    }
    return fr_buf_steal(&b, NULL);
}

/* The schema and counts of a Parquet file's footer (out caller-initialized). */
static int parquet_footer(const char *path, struct df_schema *out, int64_t *rows, int *row_groups,
                          struct fr_error *err)
{
    struct df_file_source fs;
    df_parquet *pq = NULL;
    int rc = df_file_source_open(&fs, path, err);
    if (rc != FR_OK)
        return rc;
    rc = df_parquet_open(&fs.base, &pq, err);
    if (rc == FR_OK) {
        df_schema_copy(out, df_parquet_schema(pq));
        *rows = df_parquet_num_rows(pq);
        *row_groups = df_parquet_num_row_groups(pq);
    }
    df_parquet_free(pq);
    df_file_source_close(&fs);
    return rc;
}

/* Infers the schema of the file at path (from the cache when the file's size,
 * mtime and inode did not change): *schema new, or *error new. */
static void infer(ctx *c, const char *path, const char *format, bool use_cache, json_t **schema,
                  char **error)
{
    struct cfg cfg;
    ctx__effective_config(c, &cfg);
    struct df_options opts;
    plan_options_from_cfg(&cfg, &opts);
    char *key = schema_key(path, &opts);
    struct stat before, after;
    bool cacheable = use_cache && stat(path, &before) == 0;
    *schema = NULL;
    *error = NULL;
    if (cacheable && ctx__schema_cache_get(c, key, &before, schema, error))
        goto out;
    struct df_csv_options o;
    df_csv_options_init(&o);
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    int64_t rows = -1;
    int row_groups = -1;
    int rc = strcmp(format, "csv") == 0      ? df_csv_infer_schema(path, &o, &opts, &s, &err)
             : strcmp(format, "ndjson") == 0 ? df_ndjson_infer_schema(path, &o, &s, &err)
                                             : parquet_footer(path, &s, &rows, &row_groups, &err);
    if (rc == FR_OK) {
        *schema = json_array();
        for (int i = 0; i < s.nfields; i++)
            json_array_append_new(*schema, json_pack("{ss ss}", "name", s.fields[i].name, "type",
                                                     df_type_name(s.fields[i].type)));
        if (rows >= 0) /* parquet: the footer's counts travel with the schema */
            *schema = json_pack("{so sI si}", "schema", *schema, "rows", (json_int_t)rows,
                                "row_groups", row_groups);
    } else {
        *error = fr_xstrdup(err.message);
    }
    df_schema_cleanup(&s);
    /* a file that changed while it was read is not remembered */
    if (cacheable && stat(path, &after) == 0 && after.st_size == before.st_size &&
        after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
        after.st_mtim.tv_nsec == before.st_mtim.tv_nsec && after.st_ino == before.st_ino)
        ctx__schema_cache_put(c, key, &before, *schema, *error);
out:
    free(key);
    cfg_cleanup(&cfg);
}

static json_t *describe(ctx *c, const char *name, const char *path, const char *format,
                        int64_t bytes, bool use_cache)
{
    json_t *schema = NULL;
    char *error = NULL;
    infer(c, path, format, use_cache, &schema, &error);
    json_t *counts = json_is_object(schema) ? schema : NULL;
    if (counts) { /* parquet: {"schema", "rows", "row_groups"} */
        schema = json_incref(json_object_get(counts, "schema"));
        json_object_del(counts, "schema");
    }
    json_t *j = json_pack("{ss ss sI so}", "name", name, "format", format, "bytes",
                          (json_int_t)bytes, "schema", schema ? schema : json_array());
    if (counts)
        json_object_update(j, counts);
    json_decref(counts);
    if (error)
        json_object_set_new(j, "schema_error", json_string(error));
    free(error);
    return j;
}

/* The dataset an entry of the data dir stands for, or NULL when it is none (a
 * hidden file, another suffix, a bad name, a file that is refused, or the
 * older of a csv/ndjson pair). new. */
static json_t *list_entry(ctx *c, const char *entry)
{
    const char *dot = strrchr(entry, '.');
    if (entry[0] == '.' || !dot ||
        (strcmp(dot, ".csv") != 0 && strcmp(dot, ".ndjson") != 0 && strcmp(dot, ".parquet") != 0))
        return NULL;
    char *name = fr_xstrndup(entry, (size_t)(dot - entry));
    char *path = NULL;
    const char *format = NULL;
    json_t *j = NULL;
    struct fr_error err;
    fr_error_init(&err);
    struct stat st;
    if (plan_dataset_resolve(c->opts.data_dir, name, &path, &format, &err) == FR_OK &&
        strcmp(format, dot + 1) == 0 && stat(path, &st) == 0)
        j = describe(c, name, path, format, st.st_size, true);
    free(path);
    free(name);
    return j;
}

int ctx_dataset_list(ctx *c, json_t **out, struct ctx_error *err)
{
    DIR *d = opendir(c->opts.data_dir);
    if (!d)
        return ctx__fail(err, FR_EIO, "internal", "cannot read the data dir: %s", strerror(errno));
    json_t *list = json_array();
    bool truncated = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        json_t *j = list_entry(c, e->d_name);
        if (j && json_array_size(list) >= CTX_MAX_LISTED_DATASETS) {
            truncated = true; /* a bounded reply: the rest are still there, by name */
            json_decref(j);
            break;
        }
        if (j)
            json_array_append_new(list, j);
    }
    closedir(d);
    *out = json_pack("{so}", "datasets", list);
    if (truncated)
        json_object_set_new(*out, "truncated", json_true());
    return FR_OK;
}

static bool name_ok(const char *name);

static int bad_name(struct ctx_error *err, const char *name)
{
    err->ext = json_pack("{ss}", "parameter", "name");
    return ctx__fail(err, FR_EINVAL, "invalid-parameter",
                     "'%s' is not a valid dataset name: 1 to 128 of letters, digits, _ - . not "
                     "starting with '.'",
                     name);
}

/* The file of a dataset named in a URL; *path is new. */
static int resolve(ctx *c, const char *name, char **path, const char **format,
                   struct ctx_error *err)
{
    if (!name_ok(name))
        return bad_name(err, name);
    struct fr_error ferr;
    fr_error_init(&ferr);
    if (plan_dataset_resolve(c->opts.data_dir, name, path, format, &ferr) != FR_OK)
        return ctx__from_fr(err, &ferr);
    return FR_OK;
}

int ctx_dataset_get(ctx *c, const char *name, json_t **out, struct ctx_error *err)
{
    char *path = NULL;
    const char *format = NULL;
    int rc = resolve(c, name, &path, &format, err);
    if (rc != FR_OK)
        return rc;
    struct stat st;
    int64_t bytes = stat(path, &st) == 0 ? st.st_size : 0;
    *out = describe(c, name, path, format, bytes, true);
    free(path);
    return FR_OK;
}

static void fsync_data_dir(ctx *c)
{
    int fd = open(c->opts.data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* Removes name's entries of the formats other than format. */
static void unlink_others(ctx *c, const char *name, const char *format)
{
    for (int i = 0; i < NFORMATS; i++) {
        if (strcmp(formats[i], format) == 0)
            continue;
        char *other = fr_xasprintf("%s/%s.%s", c->opts.data_dir, name, formats[i]);
        unlink(other);
        free(other);
    }
}

/* Removes the directory entries of the dataset (every format, in case a crash
 * left two), not what a link among them points to. Under the name's lock, so
 * it cannot interleave with an upload's commit. */
int ctx_dataset_delete(ctx *c, const char *name, struct ctx_error *err)
{
    pthread_mutex_t *lock = ctx__dataset_lock(c, name);
    pthread_mutex_lock(lock);
    char *path = NULL;
    const char *format = NULL;
    int rc = resolve(c, name, &path, &format, err);
    if (rc == FR_OK) {
        char *entry = fr_xasprintf("%s/%s.%s", c->opts.data_dir, name, format);
        if (unlink(entry) != 0)
            rc = ctx__fail(err, FR_EIO, "internal", "cannot delete %s: %s", name, strerror(errno));
        else
            unlink_others(c, name, format);
        fsync_data_dir(c);
        free(entry);
    }
    pthread_mutex_unlock(lock);
    free(path);
    return rc;
}

static bool name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 128 || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.'))
            return false;
    }
    return true;
}

/* Whether a Content-Type names the media type want (RFC 9110 8.3.1): the
 * type/subtype compared exactly but case-insensitively, optional whitespace
 * around it, and any parameters (charset=utf-8) after a ';'. */
static bool media_type_is(const char *ct, const char *want)
{
    if (!ct)
        return false;
    ct += strspn(ct, " \t");
    size_t n = strcspn(ct, "; \t");
    if (n != strlen(want) || strncasecmp(ct, want, n) != 0)
        return false;
    ct += n;
    ct += strspn(ct, " \t");
    return *ct == '\0' || *ct == ';';
}

/* A write, fsync or create that failed: a full disk (ENOSPC), quota (EDQUOT)
 * or file-size limit (EFBIG, RLIMIT_FSIZE with SIGXFSZ ignored) is 507
 * insufficient-storage, anything else 500. */
static int storage_fail(struct ctx_error *err, int errnum, const char *what)
{
    bool full = errnum == ENOSPC || errnum == EDQUOT || errnum == EFBIG;
    if (full)
        FR_LOG(FR_LOG_WARN, "data dir: %s: %s", what, strerror(errnum));
    return ctx__fail(err, full ? FR_ENOSPACE : FR_EIO, full ? "insufficient-storage" : "internal",
                     "%s: %s%s", what, strerror(errnum),
                     full ? "; nothing was stored, the previous dataset is unchanged" : "");
}

int ctx_upload_begin(ctx *c, const char *name, const char *content_type, ctx_upload **out,
                     struct ctx_error *err)
{
    *out = NULL;
    if (!name_ok(name))
        return bad_name(err, name);
    const char *format = NULL;
    if (media_type_is(content_type, "text/csv"))
        format = "csv";
    else if (media_type_is(content_type, "application/x-ndjson") ||
             media_type_is(content_type, "application/ndjson"))
        format = "ndjson";
    else if (media_type_is(content_type, "application/vnd.apache.parquet"))
        format = "parquet";
    else
        return ctx__fail(err, FR_EINVAL, "unsupported-media-type",
                         "upload a dataset as text/csv, application/x-ndjson or "
                         "application/vnd.apache.parquet, not %s",
                         content_type ? content_type : "(none)");
    ctx_upload *u = fr_xcalloc(1, sizeof(*u));
    u->c = c;
    u->name = fr_xstrdup(name);
    u->format = format;
    char rnd[40];
    ctx__random_id("upload", rnd, sizeof(rnd));
    u->tmp_dir = fr_xasprintf("%s/.%s", c->opts.data_dir, rnd);
    u->tmp_path = fr_xasprintf("%s/%s.%s", u->tmp_dir, name, format);
    u->fd = mkdir(u->tmp_dir, 0755) == 0
                ? open(u->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)
                : -1;
    if (u->fd < 0) {
        int rc = storage_fail(err, errno, "cannot create the upload file");
        ctx_upload_abort(u);
        return rc;
    }
    *out = u;
    return FR_OK;
}

int ctx_upload_write(ctx_upload *u, const char *data, size_t n, struct ctx_error *err)
{
    while (n > 0) {
        ssize_t w = write(u->fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return storage_fail(err, w < 0 ? errno : ENOSPC, "cannot write the upload");
        data += w;
        n -= (size_t)w;
        u->bytes += w;
    }
    return FR_OK;
}

void ctx_upload_abort(ctx_upload *u)
{
    if (!u)
        return;
    if (u->fd >= 0)
        close(u->fd);
    unlink(u->tmp_path);
    rmdir(u->tmp_dir);
    free(u->tmp_path);
    free(u->tmp_dir);
    free(u->name);
    free(u);
}

/* df_exec's shared_add for an upload's check: what it holds is counted in
 * c->checking (framed_memory_checking_bytes) and, under --memory-limit,
 * against the budget with the kept results, the other checks and the
 * runner's (held stage outputs, running tasks); the runner's tasks count
 * it in turn. */
static int64_t checking_add(void *arg, int64_t bytes, int64_t *budget)
{
    ctx *c = arg;
    int64_t now = atomic_fetch_add(&c->checking, bytes) + bytes;
    *budget = c->opts.memory_limit;
    if (bytes <= 0 || *budget <= 0)
        return 0;
    pthread_mutex_lock(&c->lock); /* c->runner stays while it is held */
    int64_t total =
        now + atomic_load(&c->mem_used) + (c->runner ? runner_memory_in_use(c->runner) : 0);
    pthread_mutex_unlock(&c->lock);
    return total > *budget ? total - *budget : 0;
}

/* An upload check's df_exec: in the checks' account (checked against the
 * budget when there is one). */
static void check_exec_init(ctx *c, struct df_exec *ex, const struct df_options *opts)
{
    df_exec_init(ex, opts, NULL);
    ex->shared_add = checking_add;
    ex->shared_arg = c;
}

/* The memory an upload's check may hold (a page of each column decoded,
 * the chunk read): no more than this, nor than the server's budget. */
#define VALIDATE_MEMORY_BYTES (256 * CFG_MiB)

/* The most one check may hold: VALIDATE_MEMORY_BYTES or the budget. */
static int64_t check_limit(const ctx *c)
{
    int64_t limit = VALIDATE_MEMORY_BYTES;
    if (c->opts.memory_limit > 0 && c->opts.memory_limit < limit)
        limit = c->opts.memory_limit;
    return limit;
}

/* Reads the whole upload once with every column as a string: an
 * unterminated quote or a record with the wrong number of fields (or a line
 * that is not JSON) refuses the upload. Types are left to the queries (a plan
 * may give schema hints or ask for on_error null). */
static int validate_structure(ctx *c, const char *path, const char *format, struct fr_error *err)
{
    struct df_csv_options o;
    df_csv_options_init(&o);
    /* Under a budget a check holds at most the budget, and reads ranges of
     * a sixteenth of it (4 KiB to 32 MiB: a range of empty fields holds
     * about 9 times its bytes as strings), so a file far larger than the
     * budget is checked a range at a time, and only a record that does not
     * fit (it is read whole, however long) or a budget of a few tens of kB
     * refuses it. */
    int64_t budget = c->opts.memory_limit, range = 32 * CFG_MiB;
    if (budget > 0 && budget / 16 < range)
        range = budget / 16 > 4096 ? budget / 16 : 4096;
    struct df_options opts = {.morsel_size_rows = 65536,
                              .task_memory_limit_bytes = budget > 0 ? budget : 0};
    struct df_schema inferred, all_strings;
    df_schema_init(&inferred);
    df_schema_init(&all_strings);
    bool csv = strcmp(format, "csv") == 0;
    int rc = csv ? df_csv_infer_schema(path, &o, &opts, &inferred, err)
                 : df_ndjson_infer_schema(path, &o, &inferred, err);
    for (int i = 0; rc == FR_OK && i < inferred.nfields; i++)
        df_schema_add(&all_strings, inferred.fields[i].name, DF_TYPE_STRING);
    struct df_byte_range *ranges = NULL;
    int n = 0;
    if (rc == FR_OK)
        rc = csv ? df_csv_split(path, &o, range, &ranges, &n, err)
                 : df_ndjson_split(path, range, &ranges, &n, err);
    for (int i = 0; rc == FR_OK && i < n; i++) {
        struct df_exec ex;
        check_exec_init(c, &ex, &opts);
        struct df_table *t = NULL;
        rc = csv ? df_csv_read(path, &ranges[i], &o, &all_strings, NULL, -1, &ex, &t, err)
                 : df_ndjson_read(path, &ranges[i], &o, &all_strings, NULL, -1, &ex, &t, err);
        df_table_free(t);
        df_exec_release(&ex, ex.mem_used);
    }
    free(ranges);
    df_schema_cleanup(&inferred);
    df_schema_cleanup(&all_strings);
    return rc;
}

/* Decodes every page of an uploaded Parquet file, page by page, dropping
 * each once checked: memory is bounded by VALIDATE_MEMORY_BYTES, the work
 * by the engine's budget (DF_PARQUET_VALIDATE_MIN_WORK, _RATIO). */
static int validate_parquet(const ctx_upload *u, struct fr_error *err)
{
    int64_t limit = check_limit(u->c);
    struct df_options opts = {.morsel_size_rows = 65536, .task_memory_limit_bytes = limit};
    struct df_exec ex;
    check_exec_init(u->c, &ex, &opts);
    int rc = df_parquet_file_validate(u->tmp_path, &ex, err);
    df_exec_release(&ex, ex.mem_used);
    if (rc == FR_EMEMLIMIT)
        rc = fr_error_setk(err, FR_ETOOLARGE, "payload-too-large",
                           "checking it needs more than %lld bytes of memory (a page decodes to "
                           "more than that)",
                           (long long)limit);
    return rc;
}

/* 507 memory-budget-exceeded: the check would take the server over its
 * --memory-limit with what it holds now (a later try may fit); 413
 * payload-too-large: the check alone needs more than the budget (none will). */
static int check_over_budget(ctx_upload *u, const struct fr_error *ferr, struct ctx_error *err)
{
    bool never = ferr->status == FR_EMEMLIMIT;
    int rc = never ? ctx__fail(err, FR_ETOOLARGE, "payload-too-large",
                               "checking the uploaded %s.%s needs more memory than the server's "
                               "whole budget (--memory-limit %lld bytes); nothing was stored",
                               u->name, u->format, (long long)u->c->opts.memory_limit)
                   : ctx__fail(err, FR_ENOSPACE, "memory-budget-exceeded",
                               "checking the uploaded %s.%s needs more memory than the server's "
                               "budget has left now; nothing was stored: retry when queries "
                               "have ended, or delete dataframes or query results",
                               u->name, u->format);
    err->ext = json_pack("{ss}", "file", "");
    json_object_set_new(err->ext, "file", json_sprintf("%s.%s", u->name, u->format));
    return rc;
}

/* 422: malformed-data, or unsupported-parquet for a column the reader cannot
 * represent (nested, INT96, ...), naming the file, row group and column;
 * 413 payload-too-large for a file over the check's memory or work budget. */
static int parquet_refused(ctx_upload *u, const struct fr_error *ferr, struct ctx_error *err)
{
    if (ferr->status == FR_ENOSPACE)
        return check_over_budget(u, ferr, err);
    if (ferr->status == FR_ETOOLARGE) {
        int rc = ctx__fail(err, FR_ETOOLARGE, "payload-too-large",
                           "the uploaded %s.parquet is too large to check: %s; nothing was stored",
                           u->name, ferr->message);
        err->ext = json_pack("{ss}", "file", "");
        json_object_set_new(err->ext, "file", json_sprintf("%s.parquet", u->name));
        return rc;
    }
    bool unsupported = ferr->status == FR_EVALIDATION ||
                       strcmp(ferr->kind, "unsupported-parquet") == 0 ||
                       strcmp(ferr->kind, "too-many-columns") == 0;
    const char *kind =
        unsupported ? (ferr->kind[0] ? ferr->kind : "unsupported-parquet") : "malformed-data";
    int rc = ctx__fail(err, unsupported ? FR_EVALIDATION : FR_EDATA, kind,
                       "the uploaded %s.parquet %s: %s; nothing was stored", u->name,
                       unsupported ? "cannot be read" : "is malformed", ferr->message);
    err->ext = json_pack("{ss}", "file", "");
    json_object_set_new(err->ext, "file", json_sprintf("%s.parquet", u->name));
    if (ferr->field[0])
        json_object_set_new(err->ext, "column", json_string(ferr->field));
    if (ferr->row_group >= 0)
        json_object_set_new(err->ext, "row_group", json_integer(ferr->row_group));
    return rc;
}

/* Checks the whole upload; FR_OK with its description (new) in *out. */
static int commit_check(ctx_upload *u, json_t **out, struct ctx_error *err)
{
    struct fr_error ferr;
    fr_error_init(&ferr);
    if (fsync(u->fd) != 0)
        return storage_fail(err, errno, "cannot fsync the upload");
    if (u->bytes == 0)
        return ctx__fail(err, FR_EDATA, "malformed-data", "the upload of %s is empty", u->name);
    if (strcmp(u->format, "parquet") == 0 && validate_parquet(u, &ferr) != FR_OK)
        return parquet_refused(u, &ferr, err);
    if (strcmp(u->format, "parquet") != 0 &&
        validate_structure(u->c, u->tmp_path, u->format, &ferr) != FR_OK) {
        if (ferr.status == FR_ENOSPACE || ferr.status == FR_EMEMLIMIT)
            return check_over_budget(u, &ferr, err);
        bool wide = strcmp(ferr.kind, "too-many-columns") == 0; /* 422 with its own kind */
        int rc = ctx__fail(err, wide ? ferr.status : FR_EDATA, wide ? ferr.kind : "malformed-data",
                           "the uploaded %s.%s is malformed: %s", u->name, u->format, ferr.message);
        err->ext = json_pack("{ss}", "file", "");
        json_object_set_new(err->ext, "file", json_sprintf("%s.%s", u->name, u->format));
        if (ferr.line >= 0)
            json_object_set_new(err->ext, "line", json_integer(ferr.line));
        if (ferr.column >= 0)
            json_object_set_new(err->ext, "field_index", json_integer(ferr.column));
        return rc;
    }
    json_t *d = describe(u->c, u->name, u->tmp_path, u->format, u->bytes, false);
    json_t *schema_error = json_object_get(d, "schema_error");
    int rc = FR_OK;
    if (schema_error)
        rc = ctx__fail(err, FR_EDATA, "malformed-data", "the uploaded %s cannot be read: %s",
                       u->format, json_string_value(schema_error));
    else if (json_array_size(json_object_get(d, "schema")) == 0)
        rc = ctx__fail(err, FR_EDATA, "malformed-data",
                       "the uploaded %s.%s has no records: a dataset needs at least one column",
                       u->name, u->format);
    if (rc != FR_OK)
        json_decref(d);
    else
        *out = d;
    return rc;
}

/* Moves the checked upload into place and removes the other format, under the
 * name's lock: two racing uploads of one name commit one after the other, so
 * the last one's file remains, never both and never neither. */
static int commit_move(ctx_upload *u, bool *created, struct ctx_error *err)
{
    ctx *c = u->c;
    int rc = FR_OK;
    char *final_path = fr_xasprintf("%s/%s.%s", c->opts.data_dir, u->name, u->format);
    pthread_mutex_t *lock = ctx__dataset_lock(c, u->name);
    pthread_mutex_lock(lock);
    *created = true;
    for (int i = 0; i < NFORMATS; i++) {
        struct stat st;
        char *entry = fr_xasprintf("%s/%s.%s", c->opts.data_dir, u->name, formats[i]);
        if (lstat(entry, &st) == 0)
            *created = false;
        free(entry);
    }
    if (rename(u->tmp_path, final_path) != 0) {
        rc = storage_fail(err, errno, "cannot move the upload into place");
    } else {
        /* a dataset has one format: the new one replaces the old; readers that
         * see two for a moment take the newer */
        unlink_others(c, u->name, u->format);
        fsync_data_dir(c);
    }
    pthread_mutex_unlock(lock);
    free(final_path);
    return rc;
}

int ctx_upload_commit(ctx_upload *u, json_t **out, bool *created, struct ctx_error *err)
{
    json_t *d = NULL;
    int rc = commit_check(u, &d, err);
    if (rc == FR_OK)
        rc = commit_move(u, created, err);
    if (rc == FR_OK) {
        *out = d;
        d = NULL;
    }
    json_decref(d);
    ctx_upload_abort(u); /* closes; the temp file is gone if renamed */
    return rc;
}
