/* context_sql: SQL statements. The catalog the compiler resolves tables in
 * (dataframes by ID or by their name, then datasets by name), the caret
 * excerpt of an SQL error, and the statements that are not queries:
 * EXPLAIN (planned, never frozen or run), SET/RESET (ctx_config_update's
 * one path, so the lock and the validation are POST /v1/config's) and SHOW. */
#include "context_int.h"

#include "../sql/sql.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CATALOG_MAX_NAMES 10000

struct ctx_sql {
    struct sql_statement st;
    char *text;
};

/* The frame named (or with the ID) name, context lock held. An unquoted
 * name matches case-insensitively, as SQL names do. */
static struct ctx_frame *frame_by_name(ctx *c, const char *name, bool quoted)
{
    for (int i = 0; i < c->nframes; i++) {
        struct ctx_frame *f = c->frames[i];
        if (strcmp(f->id, name) == 0 || (f->name[0] && strcmp(f->name, name) == 0))
            return f;
    }
    for (int i = 0; !quoted && i < c->nframes; i++) {
        struct ctx_frame *f = c->frames[i];
        if (strcasecmp(f->id, name) == 0 || (f->name[0] && strcasecmp(f->name, name) == 0))
            return f;
    }
    return NULL;
}

bool ctx__frame_name_taken(ctx *c, const char *name)
{
    for (int i = 0; i < c->nframes; i++)
        if (c->frames[i]->name[0] && strcasecmp(c->frames[i]->name, name) == 0)
            return true;
    for (int i = 0; i < c->nname_holds; i++) /* a create in flight holds it */
        if (strcasecmp(c->name_holds[i], name) == 0)
            return true;
    return false;
}

/* A dataset's name as it is on disk for an unquoted name written in
 * another case (new), or NULL when none or several match. */
static char *dataset_case_match(ctx *c, const char *name)
{
    DIR *d = opendir(c->opts.data_dir);
    if (!d)
        return NULL;
    char *found = NULL;
    bool several = false;
    struct dirent *e;
    size_t n = strlen(name);
    for (int seen = 0; (e = readdir(d)) && seen < CATALOG_MAX_NAMES; seen++) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || (size_t)(dot - e->d_name) != n || strncasecmp(e->d_name, name, n) != 0)
            continue;
        if (found && strncmp(found, e->d_name, n) != 0)
            several = true;
        if (!found)
            found = fr_xstrndup(e->d_name, n);
    }
    closedir(d);
    if (several) {
        free(found);
        return NULL;
    }
    return found;
}

/* The schema of dataset name as the planner sees it: its scan's logical
 * plan under the config the query would run with. */
static int dataset_schema(ctx *c, const char *name, struct df_schema *schema, struct fr_error *err)
{
    json_t *plan = json_pack("{s{ss}}", "source", "dataset", name);
    struct cfg snap;
    ctx__effective_config(c, &snap);
    struct plan_env env;
    ctx__plan_env(c, &env);
    struct df_schema s;
    int rc = plan_schema(plan, &snap, &env, &s, err); /* no split of the file into tasks */
    if (rc == FR_OK)
        df_schema_copy(schema, &s);
    df_schema_cleanup(&s);
    cfg_cleanup(&snap);
    json_decref(plan);
    return rc;
}

static int catalog_lookup(void *arg, const char *name, bool quoted, json_t **source,
                          struct df_schema *schema, struct fr_error *err)
{
    ctx *c = arg;
    pthread_mutex_lock(&c->lock);
    struct ctx_frame *f = frame_by_name(c, name, quoted); /* a dataframe's name wins */
    if (f) {
        *source = json_pack("{ss}", "dataframe", f->id);
        df_schema_copy(schema, &f->schema);
    }
    pthread_mutex_unlock(&c->lock);
    if (f)
        return FR_OK;
    char *path = NULL, *real = NULL;
    const char *format = NULL;
    int rc = plan_dataset_resolve(c->opts.data_dir, name, &path, &format, err);
    free(path);
    if (rc == FR_EINVAL) /* not a dataset name at all: no such table, said where it is */
    {
        char shown[204];
        snprintf(shown, sizeof(shown), "%.200s", name);
        fr_utf8_cut_tail(shown); /* never half a character */
        rc = fr_error_setk(err, FR_ENOTFOUND, "dataset-not-found", "no table '%s'", shown);
    }
    if (rc == FR_ENOTFOUND && !quoted && (real = dataset_case_match(c, name)) != NULL)
        name = real;
    else if (rc != FR_OK)
        goto out;
    fr_error_init(err);
    if ((rc = dataset_schema(c, name, schema, err)) == FR_OK)
        *source = json_pack("{ss}", "dataset", name);
out:
    free(real);
    return rc;
}

static void names_add(char ***names, int *n, const char *name)
{
    *names = fr_xrealloc(*names, sizeof(**names) * (size_t)(*n + 1));
    (*names)[(*n)++] = fr_xstrdup(name);
}

static int catalog_names(void *arg, char ***names, int *n)
{
    ctx *c = arg;
    *names = NULL;
    *n = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->nframes; i++)
        if (c->frames[i]->name[0])
            names_add(names, n, c->frames[i]->name);
    pthread_mutex_unlock(&c->lock);
    DIR *d = opendir(c->opts.data_dir);
    struct dirent *e;
    while (d && *n < CATALOG_MAX_NAMES && (e = readdir(d))) {
        const char *dot = strrchr(e->d_name, '.');
        if (e->d_name[0] == '.' || !dot ||
            (strcmp(dot, ".csv") != 0 && strcmp(dot, ".ndjson") != 0 &&
             strcmp(dot, ".parquet") != 0))
            continue;
        char *base = fr_xstrndup(e->d_name, (size_t)(dot - e->d_name));
        names_add(names, n, base);
        free(base);
    }
    if (d)
        closedir(d);
    return FR_OK;
}

/* An error of the compiler with where it is in the text: line, column,
 * position and the caret excerpt as members of its problem. Another kind
 * (a table whose file does not parse) keeps its own location members. */
static int sql_error(struct ctx_error *err, const char *text, const struct fr_error *f)
{
    bool located = !f->kind[0] || strcmp(f->kind, "invalid-sql") == 0 ||
                   strcmp(f->kind, "unsupported-sql") == 0 ||
                   strcmp(f->kind, "dataset-not-found") == 0;
    if (!located) /* a table's own trouble (a malformed file): its location is the file's */
        return ctx__from_fr(err, f);
    err->base = *f;
    json_t *ext = err->ext ? err->ext : json_object();
    if (f->line >= 0)
        json_object_set_new(ext, "line", json_integer(f->line));
    if (f->column >= 0)
        json_object_set_new(ext, "column", json_integer(f->column));
    if (f->position >= 0) {
        json_object_set_new(ext, "position", json_integer(f->position));
        char *excerpt = sql_error_excerpt(text, f->position);
        if (excerpt)
            json_object_set_new(ext, "excerpt", json_string(excerpt));
        free(excerpt);
    }
    err->ext = ext;
    if (!f->kind[0] && f->status == FR_EINVAL)
        snprintf(err->base.kind, sizeof(err->base.kind), "invalid-sql");
    return f->status ? f->status : FR_EINTERNAL;
}

int ctx__sql_plan_error(const ctx_sql *s, struct ctx_error *err)
{
    const char *k = err->base.kind;
    if (!s || (strcmp(k, "invalid-plan") != 0 && strcmp(k, "invalid-expression") != 0))
        return err->base.status;
    char msg[400]; /* its members locate a plan, not the text: dropped */
    size_t n = strnlen(err->base.message, sizeof(msg) - 1);
    memcpy(msg, err->base.message, n);
    msg[n] = '\0';
    fr_utf8_cut_tail(msg);
    json_decref(err->ext);
    err->ext = NULL;
    int64_t pos = 0;
    while (s->text[pos] == ' ' || s->text[pos] == '\t' || s->text[pos] == '\n' ||
           s->text[pos] == '\r')
        pos++;
    struct fr_error f;
    fr_error_init(&f);
    sql_error_at(&f, FR_EINVAL, "invalid-sql", s->text, s->text[pos] ? pos : 0,
                 "the statement compiles to a plan the planner refuses: %s", msg);
    return sql_error(err, s->text, &f);
}

int ctx_sql_compile(ctx *c, const char *text, ctx_sql **out, struct ctx_error *err)
{
    *out = NULL;
    size_t len = strlen(text);
    if (len > SQL_MAX_TEXT_BYTES) {
        err->ext = json_pack("{sI}", "max_bytes", (json_int_t)SQL_MAX_TEXT_BYTES);
        return ctx__fail(err, FR_EINVAL, "invalid-sql",
                         "the SQL text has %zu bytes; the most a statement may have is %d", len,
                         SQL_MAX_TEXT_BYTES);
    }
    struct sql_catalog cat = {catalog_lookup, catalog_names, c};
    ctx_sql *s = fr_xcalloc(1, sizeof(*s));
    struct fr_error ferr;
    fr_error_init(&ferr);
    int rc = sql_compile(text, &cat, &s->st, &ferr);
    if (rc != FR_OK) {
        sql_statement_cleanup(&s->st);
        free(s);
        return sql_error(err, text, &ferr);
    }
    s->text = fr_xstrdup(text);
    *out = s;
    return FR_OK;
}

enum ctx_sql_kind ctx_sql_kind(const ctx_sql *s)
{
    switch (s->st.kind) {
    case SQL_STMT_QUERY:
        return CTX_SQL_QUERY;
    case SQL_STMT_EXPLAIN:
        return CTX_SQL_EXPLAIN;
    case SQL_STMT_SET:
    case SQL_STMT_RESET:
        return CTX_SQL_CONFIG_CHANGE;
    default:
        return CTX_SQL_SHOW;
    }
}

json_t *ctx_sql_plan(const ctx_sql *s)
{
    return s->st.plan;
}

const char *ctx_sql_text(const ctx_sql *s)
{
    return s->text;
}

void ctx_sql_free(ctx_sql *s)
{
    if (!s)
        return;
    sql_statement_cleanup(&s->st);
    free(s->text);
    free(s);
}

/* EXPLAIN: planned under the config the query would run with, like a
 * dataframe's explain, without freezing it or running anything. */
static int sql_explain(ctx *c, const ctx_sql *s, json_t **out, struct ctx_error *err)
{
    struct cfg snap;
    ctx__effective_config(c, &snap);
    struct plan_env env;
    ctx__plan_env(c, &env);
    plan_physical *p = NULL;
    struct fr_error ferr;
    fr_error_init(&ferr);
    int rc = plan_build(s->st.plan, &snap, &env, -1, &p, &ferr);
    if (rc == FR_OK) {
        char id[80]; /* content-addressed: the ID a freeze of it gets (I5) */
        cfg_id(&snap, id, sizeof(id));
        *out = plan_physical_explain(p);
        json_object_set_new(*out, "config_id", json_string(id));
        json_object_set_new(*out, "plan", json_incref(s->st.plan));
    } else {
        ctx__from_fr(err, &ferr);
    }
    plan_physical_free(p);
    cfg_cleanup(&snap);
    return rc;
}

/* A SET value for a list field: 'a,b' is the list ["a", "b"], '' the empty
 * list (new); any other value as it is. */
static json_t *set_value(const char *field, json_t *value)
{
    for (int i = 0; i < cfg_nfields; i++) {
        if (strcmp(cfg_fields[i].name, field) != 0 || cfg_fields[i].kind != CFG_STRLIST ||
            !json_is_string(value))
            continue;
        json_t *list = json_array();
        const char *v = json_string_value(value);
        while (*v) {
            size_t n = strcspn(v, ",");
            json_array_append_new(list, json_stringn(v, n));
            if (v[n] != ',')
                break;
            v += n + 1;
            if (*v == '\0')
                json_array_append_new(list, json_string(""));
        }
        return list;
    }
    return json_incref(value ? value : json_null());
}

/* SET and RESET as the POST /v1/config patch they are. */
static int sql_config_change(ctx *c, const ctx_sql *s, json_t **out, struct ctx_error *err)
{
    json_t *patch;
    if (s->st.kind == SQL_STMT_SET) {
        patch = json_object();
        json_object_set_new(patch, s->st.field, set_value(s->st.field, s->st.value));
    } else {
        struct cfg defaults;
        cfg_defaults(&defaults);
        json_t *all = cfg_to_json(&defaults);
        cfg_cleanup(&defaults);
        if (!s->st.field) {
            patch = all;
        } else {
            patch = json_object(); /* an unknown field: validation-failed names it */
            json_t *def = json_object_get(all, s->st.field);
            json_object_set(patch, s->st.field, def ? def : json_null());
            json_decref(all);
        }
    }
    int rc = ctx_config_update(c, patch, out, err);
    json_decref(patch);
    return rc;
}

/* SHOW CONFIG / SHOW ALL / SHOW field: the frozen values while a runner
 * exists, else the pending ones; never a freeze. */
static int sql_show(ctx *c, const ctx_sql *s, json_t **out, struct ctx_error *err)
{
    json_t *conf = ctx_config_get(c);
    json_t *values = json_object_get(conf, "values");
    json_t *ans =
        json_pack("{ss sO sO}", "statement", "show", "locked", json_object_get(conf, "locked"),
                  "config_id", json_object_get(conf, "config_id"));
    int rc = FR_OK;
    if (!s->st.field) {
        json_object_set(ans, "values", values);
    } else if (json_object_get(values, s->st.field)) {
        json_object_set_new(ans, "field", json_string(s->st.field));
        json_object_set(ans, "value", json_object_get(values, s->st.field));
    } else {
        const char *cands[256];
        int n = 0;
        for (int i = 0; i < cfg_nfields && n < 256; i++)
            cands[n++] = cfg_fields[i].name;
        const char *near = NULL;
        int best = 3;
        for (int i = 0; i < n; i++) {
            int d = fr_edit_distance(s->st.field, cands[i]);
            if (d >= 0 && d < best) {
                best = d;
                near = cands[i];
            }
        }
        err->ext = json_pack("{ss}", "field", s->st.field);
        char name[132];
        snprintf(name, sizeof(name), "%.128s", s->st.field);
        fr_utf8_cut_tail(name);
        struct fr_error ferr; /* at the field's token */
        fr_error_init(&ferr);
        sql_error_at(&ferr, FR_EINVAL, "invalid-sql", s->text,
                     s->st.field_pos >= 0 ? s->st.field_pos : 0,
                     "SHOW %s: no such config field%s%s%s", name, near ? " (did you mean " : "",
                     near ? near : "", near ? "?)" : "; GET /v1/config/schema lists them");
        rc = sql_error(err, s->text, &ferr);
    }
    json_decref(conf);
    if (rc != FR_OK)
        json_decref(ans);
    else
        *out = ans;
    return rc;
}

int ctx_sql_answer(ctx *c, const ctx_sql *s, json_t **out, struct ctx_error *err)
{
    *out = NULL;
    switch (s->st.kind) {
    case SQL_STMT_EXPLAIN:
        return sql_explain(c, s, out, err);
    case SQL_STMT_SET:
    case SQL_STMT_RESET:
        return sql_config_change(c, s, out, err);
    case SQL_STMT_SHOW:
        return sql_show(c, s, out, err);
    default:
        return ctx__fail(err, FR_EINTERNAL, "internal",
                         "a query has no immediate answer: submit it");
    }
}
