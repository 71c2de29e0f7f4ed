/* config_env: pending config values from FRAMED_CONFIG_<FIELD> environment
 * variables (containers set config this way). Values are parsed strictly,
 * then applied through the same validation as the HTTP API, as a whole. */
#include "config_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CFG_ENV_PREFIX "FRAMED_CONFIG_"

/* The variable name of a field ("shuffle_partitions" -> FRAMED_CONFIG_SHUFFLE_PARTITIONS). */
static void env_name(const char *field, char *out, size_t outsz)
{
    size_t n = (size_t)snprintf(out, outsz, "%s%s", CFG_ENV_PREFIX, field);
    for (size_t i = strlen(CFG_ENV_PREFIX); i < n && i < outsz; i++)
        out[i] = (char)toupper((unsigned char)out[i]);
}

/* Strict decimal: optional '-', digits only, no spaces, no overflow. */
static bool parse_int(const char *s, int64_t *out)
{
    const char *p = s[0] == '-' ? s + 1 : s;
    if (*p == '\0')
        return false;
    for (; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return false;
    *out = (int64_t)v;
    return true;
}

static json_t *list_value(const char *s)
{
    struct cfg_strlist l;
    cfg__strlist_from_csv(&l, s);
    json_t *a = json_array();
    for (int i = 0; i < l.n && a; i++) {
        json_t *item = json_string(l.items[i]);
        if (!item) { /* not UTF-8 */
            json_decref(a);
            a = NULL;
        } else {
            json_array_append_new(a, item);
        }
    }
    cfg__strlist_cleanup(&l);
    return a;
}

/* Parses one variable's value into JSON; NULL (with a problem in msg) if bad. */
static json_t *env_value(const struct cfg_field *f, const char *s, char *msg, size_t msgsz)
{
    int64_t x;
    json_t *v = NULL;
    switch (f->kind) {
    case CFG_INT:
        if (parse_int(s, &x))
            v = json_integer((json_int_t)x);
        else
            snprintf(msg, msgsz, "'%.64s' is not an integer (plain decimal digits expected)", s);
        break;
    case CFG_BOOL:
        if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
            v = json_true();
        else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
            v = json_false();
        else
            snprintf(msg, msgsz, "'%.64s' is not a boolean (true, false, 1 or 0 expected)", s);
        break;
    case CFG_STRLIST:
        v = list_value(s);
        if (!v)
            snprintf(msg, msgsz, "the value is not valid UTF-8");
        break;
    }
    return v;
}

static void add_problem(struct fr_buf *msg, int *count, const char *var, const char *problem)
{
    fr_buf_printf(msg, "%s%s: %s", *count ? "; " : "", var, problem);
    (*count)++;
}

/* Collects FRAMED_CONFIG_* variables into a JSON patch; problems go to msg. */
static json_t *env_patch(char *const *envp, struct fr_buf *msg, int *count, char *first_field,
                         size_t ffsz)
{
    json_t *patch = json_object();
    size_t plen = strlen(CFG_ENV_PREFIX);
    for (char *const *e = envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, CFG_ENV_PREFIX, plen) != 0 || !eq)
            continue;
        char *var = fr_xstrndup(*e, (size_t)(eq - *e));
        char *field = fr_xstrdup(var + plen);
        for (char *p = field; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        char problem[256] = "";
        int idx = cfg__field_index(field);
        if (idx < 0) {
            int near = cfg__suggest(field);
            char suggestion[160] = "";
            if (near >= 0)
                env_name(cfg_fields[near].name, suggestion, sizeof(suggestion));
            snprintf(problem, sizeof(problem), "unknown config variable%s%s%s",
                     near >= 0 ? "; did you mean " : "", suggestion, near >= 0 ? "?" : "");
        } else {
            json_t *v = env_value(&cfg_fields[idx], eq + 1, problem, sizeof(problem));
            if (v)
                json_object_set_new(patch, field, v);
        }
        if (problem[0]) {
            if (*count == 0)
                snprintf(first_field, ffsz, "%s", field);
            add_problem(msg, count, var, problem);
        }
        free(field);
        free(var);
    }
    return patch;
}

int cfg_apply_env(struct cfg *c, char *const *envp, struct fr_error *err)
{
    int result = FR_EINVAL;
    struct fr_buf msg;
    int count = 0;
    char first_field[128] = "";
    json_t *problems = NULL;
    struct cfg next;
    fr_buf_init(&msg);
    json_t *patch = env_patch(envp, &msg, &count, first_field, sizeof(first_field));
    if (count > 0)
        goto out;
    if (cfg_apply_json(c, patch, &next, &problems) != FR_OK) {
        for (size_t i = 0; i < json_array_size(problems); i++) {
            json_t *p = json_array_get(problems, i);
            const char *field = json_string_value(json_object_get(p, "field"));
            char var[160];
            env_name(field, var, sizeof(var));
            if (count == 0)
                snprintf(first_field, sizeof(first_field), "%s", field);
            add_problem(&msg, &count, var, json_string_value(json_object_get(p, "message")));
        }
        goto out;
    }
    cfg_cleanup(c);
    *c = next; /* c takes over next's lists */
    result = FR_OK;
out:
    if (result != FR_OK) {
        fr_error_set(err, result, "%s", msg.data ? msg.data : "invalid environment");
        if (err)
            snprintf(err->field, sizeof(err->field), "%s", first_field);
    }
    json_decref(problems);
    json_decref(patch);
    fr_buf_cleanup(&msg);
    return result;
}
