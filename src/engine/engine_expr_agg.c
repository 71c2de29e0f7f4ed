/* engine_expr_agg: aggregate items ("max(v1) - min(v2) as range_v"). The
 * item is parsed once; each aggregate call is cut out of the tree with its
 * argument bound to the input schema and replaced by a reference to a
 * synthetic column "__aggN" holding its result, against which the rest binds. */
#include "engine_expr_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* df_agg_func_name and df_agg_result_type live in engine_agg_types.c. */

void df_agg_item_cleanup(struct df_agg_item *it)
{
    if (!it)
        return;
    for (int i = 0; i < it->ncalls; i++) {
        df_expr_free(it->calls[i].arg);
        df_expr_free(it->calls[i].arg2);
    }
    free(it->calls);
    free(it->name);
    df_expr_free(it->post);
    memset(it, 0, sizeof(*it));
}

struct extractor {
    const char *text;
    const struct df_schema *input;
    struct df_agg_item *item;
    struct df_schema results; /* the __aggN columns */
    struct fr_error *err;
};

static bool needs_number(enum df_agg_func f)
{
    return f == DF_AGG_SUM || f == DF_AGG_MEAN || f == DF_AGG_STDDEV || f == DF_AGG_MEDIAN ||
           f == DF_AGG_CORR;
}

/* Binds argument i of the aggregate call node and wraps it as a df_expr. */
static int bind_arg(struct extractor *x, struct df__node *call, int i, df_expr **out)
{
    struct df__node *a = call->args[i];
    call->args[i] = NULL;
    int rc = df__bind_root(&a, x->input, x->err);
    if (rc != FR_OK) {
        df__node_free(a);
        return rc;
    }
    df_type t = a->type;
    if (needs_number((enum df_agg_func)call->op) && t != DF_TYPE_INT64 && t != DF_TYPE_FLOAT64) {
        x->err->position = a->pos;
        rc = fr_error_set(x->err, FR_EINVAL, "%s needs a numeric argument, got %s at position %lld",
                          df_agg_func_name((enum df_agg_func)call->op), df_type_name(t),
                          (long long)a->pos);
        df__node_free(a);
        return rc;
    }
    *out = df__expr_wrap(a, x->text, a->pos, a->end, NULL);
    return FR_OK;
}

/* Cuts the aggregate call *np out into a new call and leaves an __aggN column. */
static int extract_call(struct extractor *x, struct df__node **np)
{
    struct df__node *n = *np;
    struct df_agg_item *it = x->item;
    it->calls = fr_xrealloc(it->calls, sizeof(*it->calls) * (size_t)(it->ncalls + 1));
    struct df_agg_call *call = &it->calls[it->ncalls++];
    memset(call, 0, sizeof(*call));
    call->func = (enum df_agg_func)n->op;
    int rc = FR_OK;
    if (n->nargs > 0)
        rc = bind_arg(x, n, 0, &call->arg);
    if (rc == FR_OK && n->nargs > 1)
        rc = bind_arg(x, n, 1, &call->arg2);
    if (rc != FR_OK)
        return rc;
    char name[32];
    snprintf(name, sizeof(name), "__agg%d", it->ncalls - 1);
    df_type arg = call->arg ? df_expr_type(call->arg) : DF_TYPE_INT64;
    df_schema_add(&x->results, name, df_agg_result_type(call->func, arg));
    struct df__node *col = df__node_new(DF__COL, n->pos);
    col->end = n->end;
    col->name = fr_xstrdup(name);
    df__node_free(n);
    *np = col;
    return FR_OK;
}

static bool has_agg(const struct df__node *n)
{
    if (n->kind == DF__AGG)
        return true;
    for (int i = 0; i < n->nargs; i++)
        if (has_agg(n->args[i]))
            return true;
    return false;
}

static int extract(struct extractor *x, struct df__node **np)
{
    struct df__node *n = *np;
    if (n->kind == DF__AGG)
        return extract_call(x, np);
    if (n->kind == DF__COL) {
        x->err->position = n->pos;
        snprintf(x->err->field, sizeof(x->err->field), "%s", n->name);
        return fr_error_set(x->err, FR_EINVAL,
                            "column '%s' at position %lld must be inside an aggregate function "
                            "such as first(%s) or max(%s)",
                            n->name, (long long)n->pos, n->name, n->name);
    }
    for (int i = 0; i < n->nargs; i++) {
        int rc = extract(x, &n->args[i]);
        if (rc != FR_OK)
            return rc;
    }
    return FR_OK;
}

int df_agg_item_parse(const char *text, const struct df_schema *schema, struct df_agg_item *out,
                      struct fr_error *err)
{
    struct df__node *root = NULL;
    char *alias = NULL;
    struct extractor x = {text, schema, out, {0, NULL}, err};
    memset(out, 0, sizeof(*out));
    int result = df__parse(text, true, &root, &alias, err);
    if (result != FR_OK)
        goto out;
    if (!has_agg(root)) {
        err->position = 0;
        result = fr_error_set(err, FR_EINVAL,
                              "'%s' has no aggregate function; use one of count, sum, mean, "
                              "min, max, stddev, first, median, corr",
                              text);
        goto out;
    }
    if ((result = extract(&x, &root)) != FR_OK)
        goto out;
    if ((result = df__bind_root(&root, &x.results, err)) != FR_OK)
        goto out;
    out->post = df__expr_wrap(root, text, 0, (int64_t)strlen(text), alias);
    root = NULL;
    if (alias) {
        out->name = fr_xstrdup(alias);
    } else {
        /* the post expression is named after __aggN: name the item by its text */
        size_t a = strspn(text, " \t\r\n"), b = strlen(text);
        while (b > a && strchr(" \t\r\n", text[b - 1]))
            b--;
        out->name = fr_xstrndup(text + a, b - a);
        free(out->post->name);
        out->post->name = fr_xstrdup(out->name);
    }
out:
    if (result != FR_OK)
        df_agg_item_cleanup(out);
    df__node_free(root);
    free(alias);
    df_schema_cleanup(&x.results);
    return result;
}
