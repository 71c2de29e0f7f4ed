/* plan_read: a task's file input: its path resolved inside the data dir
 * (never out of it), the choice between this process's copy and a byte
 * source of the caller's (a worker reading by range from the coordinator),
 * and the CSV or NDJSON read of the task's range (Parquet's row groups:
 * plan_parquet.c). */
#include "plan_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int path_error(struct fr_error *err, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int path_error(struct fr_error *err, int status, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fr_error_vsetk(err, status, kind, fmt, ap);
    va_end(ap);
    /* a missing file that the coordinator serves instead is no warning */
    FR_LOG(status == FR_EINVAL ? FR_LOG_WARN : FR_LOG_DEBUG, "task file input refused: %s",
           err->message);
    return status;
}

/* Resolves a file input's path (relative, no NUL) inside data_dir: the
 * realpath must stay under the data dir's realpath and be a regular file,
 * so neither "..", an absolute path nor a symlink reaches outside, and a
 * FIFO is never opened. full gets the resolved path. */
static int resolve_file(const char *data_dir, json_t *jpath, char full[PATH_MAX], struct stat *fst,
                        struct fr_error *err)
{
    const char *rel = json_string_value(jpath);
    char root[PATH_MAX];
    struct stat st;
    if (!rel || !rel[0] || strlen(rel) != json_string_length(jpath) || strlen(rel) >= PATH_MAX / 2)
        return path_error(err, FR_EINVAL, "invalid-task",
                          "a file input needs a path relative to the data dir%s", "");
    if (rel[0] == '/')
        return path_error(err, FR_EINVAL, "invalid-task",
                          "file input '%.200s' is absolute: name it relative to the data dir", rel);
    if (!data_dir || !realpath(data_dir, root))
        return path_error(err, FR_EIO, "internal", "the data dir is not readable%s", "");
    char *joined = fr_xasprintf("%s/%s", root, rel);
    bool found = realpath(joined, full) != NULL;
    free(joined);
    if (!found)
        return path_error(err, FR_ENOTFOUND, "dataset-not-found",
                          "no file '%.200s' in the data dir", rel);
    size_t rl = strlen(root);
    if (strncmp(full, root, rl) != 0 || full[rl] != '/')
        return path_error(err, FR_EINVAL, "invalid-task",
                          "file input '%.200s' resolves outside the data dir", rel);
    if (stat(full, &st) != 0 || !S_ISREG(st.st_mode))
        return path_error(err, FR_ENOTFOUND, "dataset-not-found",
                          "file input '%.200s' is not a regular file", rel);
    *fst = st;
    return FR_OK;
}

static int64_t spec_int(json_t *in, const char *key)
{
    json_t *v = json_object_get(in, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* The worker's choice for this task (struct plan_io): FR_OK with *remote,
 * or the local resolution's error when no remote source can stand in. */
static int choose_source(json_t *in, struct plan_io *io, char path[PATH_MAX], bool *remote,
                         struct fr_error *err)
{
    struct stat st = {0};
    *remote = io->open_remote && io->mode == PLAN_DATA_REMOTE;
    if (*remote)
        return FR_OK;
    int rc = resolve_file(io->data_dir, json_object_get(in, "path"), path, &st, err);
    if (!io->open_remote || io->mode == PLAN_DATA_LOCAL || rc == FR_EINVAL)
        return rc; /* a path out of the data dir is refused wherever it is read */
    int64_t size = spec_int(in, "size"), mtime = spec_int(in, "mtime_ns");
    bool same =
        rc == FR_OK && (size < 0 || size == (int64_t)st.st_size) &&
        (mtime < 0 || mtime == (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
    *remote = !same;
    fr_error_init(err);
    return FR_OK;
}

const char *plan_read_source_name(enum plan_read_source s)
{
    return s == PLAN_READ_LOCAL ? "local" : s == PLAN_READ_REMOTE ? "remote" : "none";
}

int plan__open_planned(json_t *in, const struct plan_io *io, const char *path,
                       struct df_file_source *fs, struct fr_error *err)
{
    int rc = df_file_source_open(fs, path, err);
    if (rc != FR_OK || (io->open_remote && io->mode == PLAN_DATA_LOCAL))
        return rc; /* a worker's --data-source local: its copy, whatever its version */
    struct stat st;
    int64_t size = spec_int(in, "size"), mtime = spec_int(in, "mtime_ns");
    if (fstat(fs->fd, &st) != 0)
        rc = fr_error_setk(err, FR_EIO, "internal", "cannot stat a dataset file");
    else if ((size >= 0 && size != (int64_t)st.st_size) ||
             (mtime >= 0 && mtime != (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec))
        rc = fr_error_setk(err, FR_ECONFLICT, "dataset-changed",
                           "the file %.200s changed while the query ran (its size or mtime is "
                           "not the planned one's): run the query again",
                           json_string_value(json_object_get(in, "path")));
    if (rc != FR_OK)
        df_file_source_close(fs);
    return rc;
}

/* Reads the range through the source the worker chose. */
static int read_chosen(json_t *in, struct plan_io *io, const char *format, const char *path,
                       bool remote, const struct df_byte_range *r, const struct df_csv_options *o,
                       const struct df_schema *schema, const int *colv, int ncols,
                       struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    bool csv = strcmp(format, "csv") == 0;
    io->used = remote ? PLAN_READ_REMOTE : PLAN_READ_LOCAL;
    io->scan_bytes = r->end - r->start;
    if (!remote) {
        struct df_file_source fs;
        int rc = plan__open_planned(in, io, path, &fs, err);
        if (rc != FR_OK)
            return rc;
        rc = csv ? df_csv_read_source(&fs.base, r, o, schema, colv, ncols, ex, out, err)
                 : df_ndjson_read_source(&fs.base, r, o, schema, colv, ncols, ex, out, err);
        df_file_source_close(&fs);
        return rc;
    }
    struct df_source *src = NULL;
    int rc = io->open_remote(io->ctx, json_string_value(json_object_get(in, "path")),
                             spec_int(in, "size"), spec_int(in, "mtime_ns"), r, &src, err);
    if (rc == FR_OK)
        rc = csv ? df_csv_read_source(src, r, o, schema, colv, ncols, ex, out, err)
                 : df_ndjson_read_source(src, r, o, schema, colv, ncols, ex, out, err);
    if (io->close_remote)
        io->close_remote(io->ctx, src);
    return rc;
}

int plan__read_file(json_t *in, struct plan_io *io, struct df_exec *ex, struct df_table **out,
                    struct fr_error *err)
{
    char path[PATH_MAX] = "";
    bool remote = false;
    int rc = choose_source(in, io, path, &remote, err);
    if (rc != FR_OK)
        return rc;
    const char *format = json_string_value(json_object_get(in, "format"));
    json_t *opts = json_object_get(in, "options"), *cols = json_object_get(in, "columns");
    json_t *range = json_object_get(in, "range");
    if (!format || !json_is_array(range))
        return fr_error_set(err, FR_EINVAL, "malformed task spec: file input");
    struct df_schema schema, hints;
    rc = plan__schema_from_json(json_object_get(in, "schema"), &schema, err);
    if (rc != FR_OK)
        return rc;
    plan__schema_from_json(json_object_get(opts, "hints"), &hints, err);
    struct df_csv_options o;
    df_csv_options_init(&o);
    const char *delim = json_string_value(json_object_get(opts, "delimiter"));
    o.delimiter = delim && delim[0] ? delim[0] : ',';
    const char *quote = json_string_value(json_object_get(opts, "quote"));
    if (quote)
        o.quote = quote[0];
    o.header = json_is_true(json_object_get(opts, "header"));
    o.on_error_null = json_is_true(json_object_get(opts, "on_error_null"));
    o.hints = hints.nfields ? &hints : NULL;
    struct df_byte_range r = {json_integer_value(json_array_get(range, 0)),
                              json_integer_value(json_array_get(range, 1)),
                              json_integer_value(json_array_get(range, 2))};
    int ncols = json_is_array(cols) ? (int)json_array_size(cols) : 0;
    int *colv = ncols ? fr_xmalloc(sizeof(int) * (size_t)ncols) : NULL;
    for (int i = 0; i < ncols; i++)
        colv[i] = (int)json_integer_value(json_array_get(cols, (size_t)i));
    if (strcmp(format, "parquet") == 0)
        rc = plan__parquet_read(in, io, path, remote, &schema, colv, ncols ? ncols : -1, ex, out,
                                err);
    else
        rc = read_chosen(in, io, format, path, remote, &r, &o, &schema, colv, ncols ? ncols : -1,
                         ex, out, err);
    if (rc == FR_EDATA)
        plan__kind_default(err, "malformed-data");
    if (rc == FR_EDATA && !err->file[0]) { /* the file's name, not where the data dir is */
        const char *name = remote ? json_string_value(json_object_get(in, "path")) : path;
        const char *base = strrchr(name, '/');
        snprintf(err->file, sizeof(err->file), "%.200s", base ? base + 1 : name);
    }
    free(colv);
    df_schema_cleanup(&schema);
    df_schema_cleanup(&hints);
    return rc;
}
