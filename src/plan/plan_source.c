/* plan_source: a plan's "source": a dataset of the data dir, a path inside
 * it, inline rows or a materialized dataframe; resolved, its schema inferred
 * and checked at planning time so bad input fails before any runner exists. */
#include "plan_int.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void plan_source_info_cleanup(struct plan_source_info *info)
{
    df_schema_cleanup(&info->schema);
    for (int i = 0; i < info->nparts; i++)
        free(info->part_ids[i]);
    free(info->part_ids);
    free(info->part_rows);
    memset(info, 0, sizeof(*info));
}

static bool name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 128 || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

/* One candidate file of a dataset: FR_OK with its canonical path and its
 * ctime, FR_ENOTFOUND (no such entry), or a refusal (it resolves outside the
 * data dir, or is not a regular file) as FR_ENOTFOUND with the reason in err
 * and *refused set: such a file is not a dataset, and is never opened. */
static int dataset_candidate(const char *data_dir, const char *name, const char *format,
                             char **path, struct timespec *ctime_out, bool *refused,
                             struct fr_error *err)
{
    int result = FR_ENOTFOUND;
    char *entry = fr_xasprintf("%s/%s.%s", data_dir, name, format);
    char *full = NULL;
    struct stat st;
    if (lstat(entry, &st) != 0)
        goto out;
    *refused = true;
    struct fr_error rerr;
    fr_error_init(&rerr);
    if (fr_path_resolve_inside(data_dir, entry, &full, &rerr) != FR_OK) {
        fr_error_setk(err, FR_ENOTFOUND, "dataset-not-found", "%s.%s is not a dataset: %s", name,
                      format, rerr.message);
    } else if (stat(full, &st) != 0 || !S_ISREG(st.st_mode)) {
        fr_error_setk(err, FR_ENOTFOUND, "dataset-not-found",
                      "%s.%s is not a dataset: not a regular file", name, format);
    } else {
        *refused = false;
        *path = full;
        full = NULL;
        *ctime_out = st.st_ctim;
        result = FR_OK;
    }
    if (*refused)
        FR_LOG(FR_LOG_WARN, "data dir: %s", err->message);
out:
    free(entry);
    free(full);
    return result;
}

static bool newer(struct timespec a, struct timespec b)
{
    return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

int plan_dataset_resolve(const char *data_dir, const char *name, char **path, const char **format,
                         struct fr_error *err)
{
    static const char *const formats[] = {"csv", "ndjson", "parquet"};
    enum { NFORMATS = 3 };
    if (!name_ok(name)) {
        fr_error_setk(err, FR_EINVAL, "invalid-plan",
                      "'%s' is not a valid dataset name (letters, digits, _ - .)", name);
        return FR_EINVAL;
    }
    char *found[NFORMATS] = {NULL, NULL, NULL};
    struct timespec when[NFORMATS];
    bool refused = false;
    int pick = -1;
    for (int i = 0; i < NFORMATS; i++) {
        dataset_candidate(data_dir, name, formats[i], &found[i], &when[i], &refused, err);
        /* Two exist only for a moment while an upload replaces one format by
         * another (or after a crash in that moment): the newer one is the
         * dataset. */
        if (found[i] && (pick < 0 || newer(when[i], when[pick])))
            pick = i;
    }
    for (int i = 0; i < NFORMATS; i++)
        if (i != pick)
            free(found[i]);
    if (pick >= 0) {
        *path = found[pick];
        *format = formats[pick];
        err->status = FR_OK;
        err->message[0] = '\0';
        return FR_OK;
    }
    if (!refused)
        return fr_error_setk(err, FR_ENOTFOUND, "dataset-not-found",
                             "no dataset named '%s' (no %s.csv, %s.ndjson or %s.parquet in the "
                             "data dir)",
                             name, name, name, name);
    return FR_ENOTFOUND; /* dataset_candidate said why it refused the entry */
}

int plan_path_resolve(const char *data_dir, const char *rel, char **path, struct fr_error *err)
{
    int result = FR_EINVAL;
    char root[PATH_MAX], full[PATH_MAX];
    char *joined = NULL;
    if (rel[0] == '/' || strstr(rel, "..")) {
        fr_error_setk(err, FR_EINVAL, "invalid-plan",
                      "path '%s' leaves the data dir: give a path relative to it", rel);
        goto out;
    }
    if (!realpath(data_dir, root)) {
        fr_error_setk(err, FR_EIO, "invalid-plan", "the data dir is not readable: %s",
                      strerror(errno));
        goto out;
    }
    joined = fr_xasprintf("%s/%s", root, rel);
    if (!realpath(joined, full)) {
        result = fr_error_setk(err, FR_ENOTFOUND, "dataset-not-found",
                               "no file '%s' in the data dir", rel);
        goto out;
    }
    size_t rl = strlen(root);
    if (strncmp(full, root, rl) != 0 || full[rl] != '/') {
        fr_error_setk(err, FR_EINVAL, "invalid-plan", "path '%s' leaves the data dir", rel);
        goto out;
    }
    /* Only a regular file is data: opening a FIFO would block the reader and
     * a device could be read forever. stat never opens it. */
    struct stat st;
    if (stat(full, &st) != 0 || !S_ISREG(st.st_mode)) {
        result = fr_error_setk(err, FR_ENOTFOUND, "dataset-not-found",
                               "no file '%s' in the data dir (not a regular file)", rel);
        goto out;
    }
    *path = fr_xstrdup(full);
    result = FR_OK;
out:
    free(joined);
    return result;
}

static int plan_error(struct fr_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int plan_error(struct fr_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fr_error_vsetk(err, FR_EINVAL, "invalid-plan", fmt, ap);
    va_end(ap);
    return FR_EINVAL;
}

static int parse_options(json_t *opts, struct lsource *s, struct fr_error *err)
{
    s->delimiter = ',';
    s->quote = '"';
    s->sample_rows = 0;
    s->header = true;
    df_schema_init(&s->hints);
    if (!opts)
        return FR_OK;
    if (!json_is_object(opts))
        return plan_error(err, "source options must be an object%s", "");
    const char *key;
    json_t *v;
    json_object_foreach(opts, key, v)
    {
        if (strcmp(key, "delimiter") == 0) {
            const char *d = json_string_value(v);
            if (!d || strlen(d) != 1)
                return plan_error(err, "options.delimiter must be a one-character string%s", "");
            s->delimiter = d[0];
        } else if (strcmp(key, "quote") == 0) {
            const char *q = json_string_value(v);
            if (!q || strlen(q) > 1)
                return plan_error(err,
                                  "options.quote must be a one-character string (or \"\" "
                                  "for none)%s",
                                  "");
            s->quote = q[0];
        } else if (strcmp(key, "sample_rows") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 1000000)
                return plan_error(err,
                                  "options.sample_rows must be an integer from 1 to "
                                  "1000000%s",
                                  "");
            s->sample_rows = json_integer_value(v);
        } else if (strcmp(key, "header") == 0) {
            if (!json_is_boolean(v))
                return plan_error(err, "options.header must be true or false%s", "");
            s->header = json_is_true(v);
        } else if (strcmp(key, "on_error") == 0) {
            const char *m = json_string_value(v);
            if (!m || (strcmp(m, "null") != 0 && strcmp(m, "fail") != 0))
                return plan_error(err, "options.on_error must be \"fail\" or \"null\"%s", "");
            s->on_error_null = strcmp(m, "null") == 0;
        } else if (strcmp(key, "schema") == 0) {
            if (!json_is_object(v))
                return plan_error(err, "options.schema must map column names to types%s", "");
            int rc = plan__check_columns((int64_t)json_object_size(v), "the schema hints", err);
            if (rc != FR_OK)
                return rc;
            const char *col;
            json_t *t;
            json_object_foreach(v, col, t)
            {
                df_type ty;
                if (!json_is_string(t) || df_type_parse(json_string_value(t), &ty) != FR_OK)
                    return plan_error(err,
                                      "options.schema: '%s' has an unknown type (int64, "
                                      "float64, bool, string, date, timestamp)",
                                      col);
                df_schema_add(&s->hints, col, ty);
            }
        } else {
            return plan_error(err,
                              "unknown source option '%s' (delimiter, quote, header, "
                              "on_error, schema, sample_rows)",
                              key);
        }
    }
    return FR_OK;
}

void plan__csv_options(const struct lsource *s, struct df_csv_options *o)
{
    df_csv_options_init(o);
    o->delimiter = s->delimiter;
    o->quote = s->quote;
    if (s->sample_rows > 0)
        o->sample_rows = s->sample_rows;
    o->header = s->header;
    o->on_error_null = s->on_error_null;
    o->hints = s->hints.nfields ? &s->hints : NULL;
}

static int file_source(struct lsource *s, const struct df_options *opts, struct fr_error *err)
{
    struct stat st;
    if (stat(s->path, &st) != 0)
        return fr_error_set(err, FR_EIO, "cannot stat '%s'", s->display);
    s->bytes = st.st_size; /* the ranges are cut from this size, and tasks name it */
    s->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (strcmp(s->format, "parquet") == 0)
        return plan__parquet_source(s, err);
    struct df_csv_options o;
    plan__csv_options(s, &o);
    int rc = strcmp(s->format, "csv") == 0 ? df_csv_infer_schema(s->path, &o, opts, &s->schema, err)
                                           : df_ndjson_infer_schema(s->path, &o, &s->schema, err);
    if (rc != FR_OK)
        plan__kind_default(err, "malformed-data");
    return rc;
}

/* The format a path's extension names (csv when it names none). */
static const char *path_format(const char *path)
{
    size_t n = strlen(path);
    if (n > 8 && strcmp(path + n - 8, ".parquet") == 0)
        return "parquet";
    return strstr(path, ".ndjson") || strstr(path, ".jsonl") ? "ndjson" : "csv";
}

static int rows_source(json_t *rows, struct lsource *s, struct fr_error *err)
{
    if (!json_is_array(rows))
        return plan_error(err, "source.rows must be an array of objects%s", "");
    s->kind = LSRC_ROWS;
    s->rows = json_incref(rows);
    s->display = fr_xstrdup("rows");
    struct df_table *t = NULL;
    int rc = df_rows_read(rows, s->hints.nfields ? &s->hints : NULL, &t, err);
    if (rc != FR_OK) {
        plan__kind_default(err, "invalid-plan");
        return rc;
    }
    df_schema_of_table(&s->schema, t);
    s->bytes = df_table_bytes(t);
    df_table_free(t);
    return FR_OK;
}

static int stored_source(const char *id, const struct plan_env *env, struct lsource *s,
                         struct fr_error *err)
{
    s->kind = LSRC_STORED;
    s->dataframe_id = fr_xstrdup(id);
    s->display = fr_xasprintf("dataframe %s", id);
    if (!env->lookup_dataframe)
        return fr_error_set(err, FR_ENOTFOUND, "no dataframe '%s'", id);
    int rc = env->lookup_dataframe(env->arg, id, &s->stored, err);
    if (rc != FR_OK)
        return rc;
    df_schema_copy(&s->schema, &s->stored.schema);
    s->bytes = s->stored.bytes;
    return FR_OK;
}

/* Exactly one of dataset, path, rows and dataframe; format only with path;
 * at most FR_MAX_COLUMNS schema hints. */
static int source_kind(json_t *src, const struct lsource *s, struct fr_error *err)
{
    static const char *const kinds[] = {"dataset", "path", "rows", "dataframe"};
    const char *first = NULL;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        if (!json_object_get(src, kinds[k]))
            continue;
        if (first) {
            fr_error_setk(err, FR_EINVAL, "invalid-plan",
                          "the source has both %s and %s: give one of dataset, path, rows or "
                          "dataframe",
                          first, kinds[k]);
            snprintf(err->field, sizeof(err->field), "%s", kinds[k]);
            return FR_EINVAL;
        }
        first = kinds[k];
    }
    if (json_object_get(src, "format") && !json_object_get(src, "path"))
        return plan__check_error(err, "format",
                                 "source.format goes only with source.path (a dataset has "
                                 "its format%s)",
                                 "");
    return plan__check_columns(s->hints.nfields, "the source's schema hints", err);
}

int plan__source_parse(json_t *src, const struct plan_env *env, const struct df_options *opts,
                       struct lsource *s, struct fr_error *err)
{
    memset(s, 0, sizeof(*s));
    df_schema_init(&s->schema);
    s->ncolumns = -1;
    if (!json_is_object(src))
        return plan_error(err,
                          "the plan needs a \"source\" object: {\"dataset\": name}, "
                          "{\"path\": file}, {\"rows\": [...]} or {\"dataframe\": id}%s",
                          "");
    static const char *const members[] = {"dataset", "path",      "format", "options",
                                          "rows",    "dataframe", "schema"};
    const char *key;
    json_t *val;
    json_object_foreach(src, key, val)
    {
        size_t k = 0;
        while (k < sizeof(members) / sizeof(members[0]) && strcmp(members[k], key) != 0)
            k++;
        if (k == sizeof(members) / sizeof(members[0]))
            return plan_error(err,
                              "unknown source member '%s' (dataset, path, format, options, "
                              "rows, dataframe, schema)",
                              key);
    }
    int rc = parse_options(json_object_get(src, "options"), s, err);
    if (rc != FR_OK)
        return rc;
    json_t *schema = json_object_get(src, "schema"); /* hints may also sit on the source */
    if (schema) {
        json_t *wrapped = json_pack("{sO}", "schema", schema);
        struct lsource tmp;
        memset(&tmp, 0, sizeof(tmp));
        rc = parse_options(wrapped, &tmp, err);
        json_decref(wrapped);
        for (int i = 0; i < tmp.hints.nfields; i++)
            df_schema_add(&s->hints, tmp.hints.fields[i].name, tmp.hints.fields[i].type);
        df_schema_cleanup(&tmp.hints);
        if (rc != FR_OK)
            return rc;
    }
    if ((rc = source_kind(src, s, err)) != FR_OK)
        return rc;
    json_t *v;
    if ((v = json_object_get(src, "rows")))
        return rows_source(v, s, err);
    if ((v = json_object_get(src, "dataframe"))) {
        if (!json_is_string(v))
            return plan_error(err, "source.dataframe must be a dataframe id%s", "");
        return stored_source(json_string_value(v), env, s, err);
    }
    s->kind = LSRC_FILE;
    if ((v = json_object_get(src, "dataset"))) {
        if (!json_is_string(v))
            return plan_error(err, "source.dataset must be a name%s", "");
        s->display = fr_xstrdup(json_string_value(v));
        rc = plan_dataset_resolve(env->data_dir, s->display, &s->path, &s->format, err);
    } else if ((v = json_object_get(src, "path"))) {
        if (!json_is_string(v))
            return plan_error(err, "source.path must be a string%s", "");
        s->display = fr_xstrdup(json_string_value(v));
        const char *fmt = json_string_value(json_object_get(src, "format"));
        if (!fmt)
            fmt = path_format(s->display);
        if (strcmp(fmt, "csv") != 0 && strcmp(fmt, "ndjson") != 0 && strcmp(fmt, "parquet") != 0)
            return plan_error(err, "source.format '%s' is not csv, ndjson or parquet", fmt);
        s->format = strcmp(fmt, "csv") == 0      ? "csv"
                    : strcmp(fmt, "ndjson") == 0 ? "ndjson"
                                                 : "parquet";
        rc = plan_path_resolve(env->data_dir, s->display, &s->path, err);
    } else {
        return plan_error(err, "the source needs one of dataset, path, rows or dataframe%s", "");
    }
    if (rc != FR_OK)
        return rc;
    if (strcmp(s->format, "parquet") == 0 && (json_object_get(src, "options") || schema))
        return plan__check_error(err, json_object_get(src, "options") ? "options" : "schema",
                                 "%s is parquet: its schema and types come from the file's "
                                 "footer, so source options and type hints do not apply",
                                 s->display);
    return file_source(s, opts, err);
}

void plan__source_cleanup(struct lsource *s)
{
    free(s->path);
    free(s->display);
    json_decref(s->options);
    json_decref(s->rows);
    df_schema_cleanup(&s->hints);
    df_schema_cleanup(&s->schema);
    plan_source_info_cleanup(&s->stored);
    free(s->dataframe_id);
    free(s->columns);
    plan__parquet_close(s);
    memset(s, 0, sizeof(*s));
}
