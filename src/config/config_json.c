/* config_json: a config as JSON (the API's view, the schema endpoint) and
 * its canonical encoding, whose SHA-256 is the content-addressed config ID.
 * Only integers, booleans and strings are ever emitted: no float can creep
 * into the canonical bytes and make equal values hash differently. */
#include "config_int.h"

#include <stdlib.h>
#include <string.h>

static json_t *strlist_json(const struct cfg_strlist *l)
{
    json_t *a = json_array();
    for (int i = 0; i < l->n; i++)
        json_array_append_new(a, json_string(l->items[i]));
    return a;
}

json_t *cfg_to_json(const struct cfg *c)
{
    json_t *o = json_object();
    for (int i = 0; i < cfg_nfields; i++) {
        const struct cfg_field *f = &cfg_fields[i];
        json_t *v = NULL;
        switch (f->kind) {
        case CFG_INT:
            v = json_integer((json_int_t)*cfg__int_cslot(c, f));
            break;
        case CFG_BOOL:
            v = json_boolean(*cfg__bool_cslot(c, f));
            break;
        case CFG_STRLIST:
            v = strlist_json(cfg__list_cslot(c, f));
            break;
        }
        json_object_set_new(o, f->name, v);
    }
    return o;
}

static const char *kind_name(enum cfg_kind k)
{
    switch (k) {
    case CFG_INT:
        return "integer";
    case CFG_BOOL:
        return "boolean";
    case CFG_STRLIST:
        return "array";
    }
    return "unknown";
}

/* Booleans get no minimum/maximum: 0 and 1 would only mislead. For lists the
 * bounds are on the number of entries. */
static json_t *field_schema(const struct cfg_field *f)
{
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s}", "name", f->name, "type", kind_name(f->kind), "scope",
                  f->scope == CFG_PLANNER ? "planner" : "execution", "doc", f->doc);
    json_t *def = NULL;
    struct cfg_strlist l;
    switch (f->kind) {
    case CFG_INT:
        def = json_integer((json_int_t)f->def_int);
        break;
    case CFG_BOOL:
        def = json_boolean(f->def_int);
        break;
    case CFG_STRLIST:
        cfg__strlist_from_csv(&l, f->def_list);
        def = strlist_json(&l);
        cfg__strlist_cleanup(&l);
        break;
    }
    json_object_set_new(o, "default", def);
    if (f->kind != CFG_BOOL) {
        json_object_set_new(o, "minimum", json_integer((json_int_t)f->min));
        json_object_set_new(o, "maximum", json_integer((json_int_t)f->max));
    }
    return o;
}

json_t *cfg_schema_json(void)
{
    json_t *a = json_array();
    for (int i = 0; i < cfg_nfields; i++)
        json_array_append_new(a, field_schema(&cfg_fields[i]));
    return a;
}

void cfg_canonical(const struct cfg *c, char **out, size_t *len)
{
    json_t *o = cfg_to_json(c);
    char *s = fr_json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(o);
    if (!s)
        abort(); /* only fails on out of memory: the config is small */
    /* json_dumps' memory comes from jansson's allocator: hand out our own. */
    *len = strlen(s);
    *out = fr_xstrndup(s, *len);
    free(s);
}

void cfg_id(const struct cfg *c, char *out, size_t outsz)
{
    char *bytes;
    size_t len;
    cfg_canonical(c, &bytes, &len);
    fr_sha256_id(bytes, len, out, outsz);
    free(bytes);
}

/* Lists every field missing from obj into a message; 0 if none. */
static int check_complete(json_t *obj, struct fr_error *err)
{
    struct fr_buf missing;
    fr_buf_init(&missing);
    for (int i = 0; i < cfg_nfields; i++) {
        if (json_object_get(obj, cfg_fields[i].name))
            continue;
        fr_buf_printf(&missing, "%s%s", missing.len ? ", " : "", cfg_fields[i].name);
    }
    int result = FR_OK;
    if (missing.len)
        result = fr_error_set(err, FR_EDATA, "config is missing fields: %s", missing.data);
    fr_buf_cleanup(&missing);
    return result;
}

/* Joins the problems of cfg_apply_json into err's message. */
static int problems_to_error(json_t *problems, struct fr_error *err)
{
    struct fr_buf msg;
    fr_buf_init(&msg);
    for (size_t i = 0; i < json_array_size(problems); i++) {
        json_t *p = json_array_get(problems, i);
        fr_buf_printf(&msg, "%s%s: %s", i ? "; " : "",
                      json_string_value(json_object_get(p, "field")),
                      json_string_value(json_object_get(p, "message")));
    }
    int result = fr_error_set(err, FR_EDATA, "invalid config: %s", msg.data ? msg.data : "");
    if (err && json_array_size(problems) > 0)
        snprintf(err->field, sizeof(err->field), "%s",
                 json_string_value(json_object_get(json_array_get(problems, 0), "field")));
    fr_buf_cleanup(&msg);
    return result;
}

int cfg_from_bytes(const char *data, size_t len, bool allow_missing, struct cfg *out,
                   struct fr_error *err)
{
    int result = FR_EDATA;
    struct cfg defaults;
    json_t *problems = NULL;
    json_error_t jerr;
    cfg_defaults(&defaults);
    memset(out, 0, sizeof(*out));
    json_t *obj = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj) {
        fr_error_set(err, FR_EDATA, "config is not valid JSON (line %d, column %d): %s", jerr.line,
                     jerr.column, jerr.text);
        goto out;
    }
    if (!json_is_object(obj)) {
        fr_error_set(err, FR_EDATA, "config must be a JSON object");
        goto out;
    }
    if (!allow_missing && check_complete(obj, err) != FR_OK)
        goto out;
    if (cfg_apply_json(&defaults, obj, out, &problems) != FR_OK) {
        problems_to_error(problems, err);
        goto out;
    }
    result = FR_OK;
out:
    json_decref(problems);
    json_decref(obj);
    cfg_cleanup(&defaults);
    return result;
}
