/* plan_schema: binding expressions at planning time and the output schema of
 * a join, named exactly as the engine's df_join names its columns. */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>

char *plan__quote_ident(const char *name)
{
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_putc(&b, '"');
    for (const char *p = name; *p; p++) {
        if (*p == '"')
            fr_buf_putc(&b, '"');
        fr_buf_putc(&b, *p);
    }
    fr_buf_putc(&b, '"');
    return fr_buf_steal(&b, NULL);
}

int plan__bind_expr(const char *text, const struct df_schema *s, df_expr **out,
                    struct fr_error *err)
{
    int rc = df_expr_parse(text, s, out, err);
    if (rc != FR_OK && !err->kind[0])
        snprintf(err->kind, sizeof(err->kind), "invalid-expression");
    return rc;
}

static int key_error(struct fr_error *err, const char *side, const char *name)
{
    fr_error_set(err, FR_EINVAL, "join: the %s side has no column '%s'", side, name);
    snprintf(err->kind, sizeof(err->kind), "invalid-plan");
    snprintf(err->field, sizeof(err->field), "%s", name);
    return FR_EINVAL;
}

static bool numeric(df_type t)
{
    return t == DF_TYPE_INT64 || t == DF_TYPE_FLOAT64;
}

int plan__join_schema(const struct df_schema *l, const struct df_schema *r, char **left_on,
                      char **right_on, int nkeys, enum df_join_how how, bool merge_keys,
                      const char *suffix, struct df_schema *out, struct fr_error *err)
{
    df_schema_init(out);
    int *rkey = fr_xcalloc((size_t)r->nfields + 1, sizeof(int));
    int result = FR_EINVAL;
    for (int k = 0; k < nkeys; k++) {
        int li = df_schema_find(l, left_on[k]), ri = df_schema_find(r, right_on[k]);
        if (li < 0) {
            key_error(err, "left", left_on[k]);
            goto out;
        }
        if (ri < 0) {
            key_error(err, "right", right_on[k]);
            goto out;
        }
        df_type lt = l->fields[li].type, rt = r->fields[ri].type;
        if (lt != rt && !(numeric(lt) && numeric(rt))) {
            fr_error_set(err, FR_EINVAL, "join key '%s' is %s on the left and %s on the right",
                         left_on[k], df_type_name(lt), df_type_name(rt));
            snprintf(err->kind, sizeof(err->kind), "invalid-plan");
            goto out;
        }
        rkey[ri] = 1;
    }
    for (int i = 0; i < l->nfields; i++) {
        df_type t = l->fields[i].type;
        /* a merged int64/float64 key of a right or outer join holds right-side
         * values too: the engine widens it to float64 */
        for (int k = 0; merge_keys && k < nkeys; k++) {
            int ri = df_schema_find(r, right_on[k]);
            if (strcmp(left_on[k], l->fields[i].name) == 0 && r->fields[ri].type != t &&
                (how == DF_JOIN_RIGHT || how == DF_JOIN_OUTER))
                t = DF_TYPE_FLOAT64;
        }
        df_schema_add(out, l->fields[i].name, t);
    }
    if (how != DF_JOIN_SEMI && how != DF_JOIN_ANTI) {
        for (int i = 0; i < r->nfields; i++) {
            if (merge_keys && rkey[i])
                continue;
            char *name = fr_xstrdup(r->fields[i].name);
            while (df_schema_find(out, name) >= 0) {
                char *longer = fr_xasprintf("%s%s", name, suffix);
                free(name);
                name = longer;
            }
            df_schema_add(out, name, r->fields[i].type);
            free(name);
        }
    }
    result = FR_OK;
out:
    free(rkey);
    if (result != FR_OK)
        df_schema_cleanup(out);
    return result;
}
