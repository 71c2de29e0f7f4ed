/* context_data: datasets are files name.csv / name.ndjson in the data dir.
 * Uploads stream into a hidden temp file and are renamed into place only
 * after the whole body arrived and its schema could be read, so a failed or
 * cut upload leaves nothing behind. */
#include "context_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ctx_upload {
    ctx *c;
    char *name;
    const char *format;
    char *tmp_dir; /* a hidden directory of its own, so the file has its final name */
    char *tmp_path;
    int fd;
    int64_t bytes;
};

static json_t *describe(ctx *c, const char *name, const char *path, const char *format,
                        int64_t bytes)
{
    struct cfg cfg;
    ctx__effective_config(c, &cfg);
    struct df_options opts;
    plan_options_from_cfg(&cfg, &opts);
    struct df_csv_options o;
    df_csv_options_init(&o);
    struct df_schema s;
    df_schema_init(&s);
    struct fr_error err;
    fr_error_init(&err);
    int rc = strcmp(format, "csv") == 0 ? df_csv_infer_schema(path, &o, &opts, &s, &err)
                                        : df_ndjson_infer_schema(path, &o, &s, &err);
    json_t *schema = json_array();
    for (int i = 0; rc == FR_OK && i < s.nfields; i++)
        json_array_append_new(schema, json_pack("{ss ss}", "name", s.fields[i].name, "type",
                                                df_type_name(s.fields[i].type)));
    json_t *j = json_pack("{ss ss sI so}", "name", name, "format", format, "bytes",
                          (json_int_t)bytes, "schema", schema);
    if (rc != FR_OK)
        json_object_set_new(j, "schema_error", json_string(err.message));
    df_schema_cleanup(&s);
    cfg_cleanup(&cfg);
    return j;
}

int ctx_dataset_list(ctx *c, json_t **out, struct ctx_error *err)
{
    DIR *d = opendir(c->opts.data_dir);
    if (!d)
        return ctx__fail(err, FR_EIO, "internal", "cannot read the data dir: %s", strerror(errno));
    json_t *list = json_array();
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *dot = strrchr(e->d_name, '.');
        if (!dot || (strcmp(dot, ".csv") != 0 && strcmp(dot, ".ndjson") != 0))
            continue;
        char *path = fr_xasprintf("%s/%s", c->opts.data_dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            char *name = fr_xstrndup(e->d_name, (size_t)(dot - e->d_name));
            json_array_append_new(list, describe(c, name, path, dot + 1, st.st_size));
            free(name);
        }
        free(path);
    }
    closedir(d);
    *out = json_pack("{so}", "datasets", list);
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
    *out = describe(c, name, path, format, bytes);
    free(path);
    return FR_OK;
}

int ctx_dataset_delete(ctx *c, const char *name, struct ctx_error *err)
{
    char *path = NULL;
    const char *format = NULL;
    int rc = resolve(c, name, &path, &format, err);
    if (rc != FR_OK)
        return rc;
    if (unlink(path) != 0)
        rc = ctx__fail(err, FR_EIO, "internal", "cannot delete %s: %s", name, strerror(errno));
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

int ctx_upload_begin(ctx *c, const char *name, const char *content_type, ctx_upload **out,
                     struct ctx_error *err)
{
    *out = NULL;
    if (!name_ok(name))
        return bad_name(err, name);
    const char *format = NULL;
    if (content_type && strncmp(content_type, "text/csv", 8) == 0)
        format = "csv";
    else if (content_type && (strncmp(content_type, "application/x-ndjson", 20) == 0 ||
                              strncmp(content_type, "application/ndjson", 18) == 0))
        format = "ndjson";
    else
        return ctx__fail(err, FR_EINVAL, "unsupported-media-type",
                         "upload a dataset as text/csv or application/x-ndjson, not %s",
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
        int rc = ctx__fail(err, FR_EIO, "internal", "cannot create the upload file: %s",
                           strerror(errno));
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
            return ctx__fail(err, errno == ENOSPC ? FR_ENOSPACE : FR_EIO,
                             errno == ENOSPC ? "insufficient-storage" : "internal",
                             "cannot write the upload: %s", strerror(errno));
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

/* Reads the whole upload once with every column as a string: an
 * unterminated quote or a record with the wrong number of fields (or a line
 * that is not JSON) refuses the upload. Types are left to the queries (a plan
 * may give schema hints or ask for on_error null). */
static int validate_structure(const char *path, const char *format, struct fr_error *err)
{
    struct df_csv_options o;
    df_csv_options_init(&o);
    struct df_options opts = {.morsel_size_rows = 65536};
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
        rc = csv ? df_csv_split(path, &o, 32 * CFG_MiB, &ranges, &n, err)
                 : df_ndjson_split(path, 32 * CFG_MiB, &ranges, &n, err);
    for (int i = 0; rc == FR_OK && i < n; i++) {
        struct df_exec ex;
        df_exec_init(&ex, &opts, NULL);
        struct df_table *t = NULL;
        rc = csv ? df_csv_read(path, &ranges[i], &o, &all_strings, NULL, -1, &ex, &t, err)
                 : df_ndjson_read(path, &ranges[i], &o, &all_strings, NULL, -1, &ex, &t, err);
        df_table_free(t);
    }
    free(ranges);
    df_schema_cleanup(&inferred);
    df_schema_cleanup(&all_strings);
    return rc;
}

int ctx_upload_commit(ctx_upload *u, json_t **out, bool *created, struct ctx_error *err)
{
    ctx *c = u->c;
    int rc = FR_EIO;
    char *final_path = fr_xasprintf("%s/%s.%s", c->opts.data_dir, u->name, u->format);
    char *other = fr_xasprintf("%s/%s.%s", c->opts.data_dir, u->name,
                               strcmp(u->format, "csv") == 0 ? "ndjson" : "csv");
    if (fsync(u->fd) != 0) {
        ctx__fail(err, FR_EIO, "internal", "cannot fsync the upload: %s", strerror(errno));
        goto out;
    }
    struct fr_error ferr;
    fr_error_init(&ferr);
    if (u->bytes == 0) {
        rc = ctx__fail(err, FR_EDATA, "malformed-data", "the upload of %s is empty", u->name);
        goto out;
    }
    if (validate_structure(u->tmp_path, u->format, &ferr) != FR_OK) {
        bool wide = strcmp(ferr.kind, "too-many-columns") == 0; /* 422 with its own kind */
        rc = ctx__fail(err, wide ? ferr.status : FR_EDATA, wide ? ferr.kind : "malformed-data",
                       "the uploaded %s.%s is malformed: %s", u->name, u->format, ferr.message);
        err->ext = json_pack("{ss}", "file", "");
        json_object_set_new(err->ext, "file", json_sprintf("%s.%s", u->name, u->format));
        if (ferr.line >= 0)
            json_object_set_new(err->ext, "line", json_integer(ferr.line));
        if (ferr.column >= 0)
            json_object_set_new(err->ext, "field_index", json_integer(ferr.column));
        goto out;
    }
    json_t *d = describe(c, u->name, u->tmp_path, u->format, u->bytes);
    if (json_object_get(d, "schema_error")) {
        rc = ctx__fail(err, FR_EDATA, "malformed-data", "the uploaded %s cannot be read: %s",
                       u->format, json_string_value(json_object_get(d, "schema_error")));
        json_decref(d);
        goto out;
    }
    struct stat st;
    *created = stat(final_path, &st) != 0 && stat(other, &st) != 0;
    if (rename(u->tmp_path, final_path) != 0) {
        json_decref(d);
        ctx__fail(err, FR_EIO, "internal", "cannot move the upload into place: %s",
                  strerror(errno));
        goto out;
    }
    unlink(other); /* a dataset has one format: the new one replaces the old */
    *out = d;
    rc = FR_OK;
out:
    free(final_path);
    free(other);
    ctx_upload_abort(u); /* closes; the temp file is gone if renamed */
    return rc;
}
