/* engine_expr_bind: resolves column names against a schema, checks and sets
 * the type of every node (SQL/DuckDB rules), makes implicit conversions
 * explicit as cast nodes and folds literal-only subtrees into literals.
 * Messages name the types seen and the position, with "did you mean". */
#include "engine_expr_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bind_node(struct df__node **np, const struct df_schema *s, struct fr_error *err);

static int type_error(struct fr_error *err, int64_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int type_error(struct fr_error *err, int64_t pos, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    err->position = pos;
    return fr_error_set(err, FR_EINVAL, "%s at position %lld", what, (long long)pos);
}

static bool is_numeric(df_type t)
{
    return t == DF_TYPE_INT64 || t == DF_TYPE_FLOAT64;
}

static bool supertype(df_type a, df_type b, df_type *out)
{
    if (a == b || b == DF_TYPE_NULL)
        *out = a;
    else if (a == DF_TYPE_NULL)
        *out = b;
    else if (is_numeric(a) && is_numeric(b))
        *out = DF_TYPE_FLOAT64;
    else if ((a == DF_TYPE_DATE || a == DF_TYPE_TIMESTAMP) &&
             (b == DF_TYPE_DATE || b == DF_TYPE_TIMESTAMP))
        *out = DF_TYPE_TIMESTAMP;
    else
        return false;
    return true;
}

/* Replaces a node whose children are all literals by its value. */
static int fold(struct df__node **np, struct fr_error *err)
{
    struct df__node *n = *np;
    if (n->kind == DF__LIT || n->kind == DF__COL || n->kind == DF__AGG)
        return FR_OK;
    if (n->kind == DF__FUNC && (n->op == DF__F_CURRENT_CONFIG_ID || n->op == DF__F_FAIL_IF))
        return FR_OK; /* known only where the task runs; a check fails only there */
    for (int i = 0; i < n->nargs; i++)
        if (n->args[i]->kind != DF__LIT)
            return FR_OK;
    struct df_table empty = {0};
    empty.nrows = 1;
    struct df_exec ex;
    df_exec_init(&ex, NULL, NULL);
    struct df__ctx c = {&empty, 0, 1, &ex, err};
    struct df__vec v = {0};
    int rc = df__eval(n, &c, &v);
    if (rc != FR_OK)
        return rc;
    struct df__node *lit = df__node_new(DF__LIT, n->pos);
    lit->end = n->end;
    lit->type = lit->lit.type = n->type;
    const struct df_column *col = v.col;
    if (!df_column_is_valid(col, v.off)) {
        lit->lit.null = true;
    } else {
        switch (n->type) {
        case DF_TYPE_BOOL:
            lit->lit.b = df_column_bool(col, v.off);
            break;
        case DF_TYPE_DATE:
            lit->lit.d = df_column_int32(col, v.off);
            break;
        case DF_TYPE_FLOAT64:
            lit->lit.f = df_column_float64(col, v.off);
            break;
        case DF_TYPE_STRING: {
            int64_t len;
            const char *str = df_column_string(col, v.off, &len);
            df__value_set_string(&lit->lit, str, len);
            break;
        }
        default:
            lit->lit.i = df_column_int64(col, v.off);
            break;
        }
    }
    df__vec_release(&c, &v);
    df__node_free(n);
    *np = lit;
    return FR_OK;
}

/* Makes *np of type t: a null literal is retyped, anything else gets a cast. */
static int coerce(struct df__node **np, df_type t, struct fr_error *err)
{
    struct df__node *n = *np;
    if (n->type == t)
        return FR_OK;
    if (n->kind == DF__LIT && n->lit.null) {
        n->type = n->lit.type = t;
        return FR_OK;
    }
    struct df__node *c = df__node_new(DF__CAST, n->pos);
    c->end = n->end;
    c->type = t;
    df__node_add(c, n);
    *np = c;
    return fold(np, err);
}

/* A string literal compared with a date or timestamp becomes one (SQL rule). */
static int string_to_temporal(struct df__node *n, df_type target, struct fr_error *err)
{
    struct df__value *v = &n->lit;
    int32_t d;
    int64_t us;
    if (target == DF_TYPE_DATE && df_parse_date(v->s, (size_t)v->slen, &d) == 0) {
        df__value_cleanup(v);
        v->d = d;
        n->type = v->type = DF_TYPE_DATE;
    } else if (df_parse_timestamp(v->s, (size_t)v->slen, &us) == 0) {
        df__value_cleanup(v);
        v->i = us;
        n->type = v->type = DF_TYPE_TIMESTAMP;
    } else {
        return type_error(err, n->pos, "'%s' is not a valid %s", v->s, df_type_name(target));
    }
    return FR_OK;
}

/* Brings nodes to one comparable type; `what` names the operation. */
static int unify(struct df__node **v, int k, const char *what, int64_t pos, struct fr_error *err)
{
    df_type temporal = DF_TYPE_NULL;
    for (int i = 0; i < k; i++)
        if (v[i]->type == DF_TYPE_DATE || v[i]->type == DF_TYPE_TIMESTAMP)
            temporal = temporal == DF_TYPE_TIMESTAMP ? temporal : v[i]->type;
    int rc;
    for (int i = 0; temporal != DF_TYPE_NULL && i < k; i++)
        if (v[i]->kind == DF__LIT && !v[i]->lit.null && v[i]->type == DF_TYPE_STRING &&
            (rc = string_to_temporal(v[i], temporal, err)) != FR_OK)
            return rc;
    df_type t = DF_TYPE_NULL;
    for (int i = 0; i < k; i++) {
        if (!supertype(t, v[i]->type, &t))
            return type_error(err, pos, "%s cannot combine %s and %s", what,
                              df_type_name(v[0]->type), df_type_name(v[i]->type));
    }
    if (t == DF_TYPE_NULL)
        t = DF_TYPE_BOOL;
    for (int i = 0; i < k; i++)
        if ((rc = coerce(&v[i], t, err)) != FR_OK)
            return rc;
    return FR_OK;
}

static int bind_arith(struct df__node *n, struct fr_error *err)
{
    df_type a = n->args[0]->type, b = n->args[1]->type;
    const char *note = a == DF_TYPE_STRING && b == DF_TYPE_STRING && n->op == DF__ADD
                           ? " (string concatenation is not supported)"
                           : "";
    if ((!is_numeric(a) && a != DF_TYPE_NULL) || (!is_numeric(b) && b != DF_TYPE_NULL))
        return type_error(err, n->op_pos, "'%s' cannot combine %s and %s%s", df__op_text(n->op),
                          df_type_name(a), df_type_name(b), note);
    df_type t = DF_TYPE_INT64;
    if (n->op == DF__DIV || a == DF_TYPE_FLOAT64 || b == DF_TYPE_FLOAT64)
        t = DF_TYPE_FLOAT64;
    if (a == DF_TYPE_NULL && b == DF_TYPE_NULL && n->op != DF__DIV)
        t = DF_TYPE_NULL;
    n->type = t;
    if (t == DF_TYPE_NULL)
        return FR_OK;
    int rc = coerce(&n->args[0], t, err);
    return rc == FR_OK ? coerce(&n->args[1], t, err) : rc;
}

/* Checks argument i of n against a class: 'n' numeric, 's' string, 't' date
 * or timestamp, 'i' int64, 'b' bool; a null argument is retyped. */
static int want(struct df__node *n, int i, char cls, const char *fname, struct fr_error *err)
{
    df_type t = n->args[i]->type;
    static const struct {
        char cls;
        const char *desc;
        df_type null_as;
    } classes[] = {{'n', "a number", DF_TYPE_INT64},
                   {'s', "a string", DF_TYPE_STRING},
                   {'t', "a date or timestamp", DF_TYPE_DATE},
                   {'i', "an integer", DF_TYPE_INT64},
                   {'b', "a bool", DF_TYPE_BOOL}};
    int k = 0;
    while (classes[k].cls != cls)
        k++;
    if (t == DF_TYPE_NULL)
        return coerce(&n->args[i], classes[k].null_as, err);
    bool ok = (cls == 'n' && is_numeric(t)) || (cls == 's' && t == DF_TYPE_STRING) ||
              (cls == 't' && (t == DF_TYPE_DATE || t == DF_TYPE_TIMESTAMP)) ||
              (cls == 'i' && t == DF_TYPE_INT64) || (cls == 'b' && t == DF_TYPE_BOOL);
    if (ok)
        return FR_OK;
    return type_error(err, n->args[i]->pos, "%s expects %s, got %s", fname, classes[k].desc,
                      df_type_name(t));
}

static int bind_func(struct df__node *n, struct fr_error *err)
{
    const char *fname = df__func_name(n->op);
    int rc = FR_OK;
    switch (n->op) {
    case DF__F_COALESCE:
        rc = unify(n->args, n->nargs, "coalesce", n->pos, err);
        n->type = n->args[0]->type;
        return rc;
    case DF__F_ROUND_EVEN: /* any type: only float64 changes (SQL's CAST to an integer) */
        n->type = n->args[0]->type;
        return FR_OK;
    case DF__F_ABS:
    case DF__F_FLOOR:
    case DF__F_CEIL:
    case DF__F_ROUND:
        rc = want(n, 0, 'n', fname, err);
        if (rc == FR_OK && n->nargs > 1)
            rc = want(n, 1, 'i', fname, err);
        n->type = n->args[0]->type;
        return rc;
    case DF__F_LOWER:
    case DF__F_UPPER:
    case DF__F_LENGTH:
        n->type = n->op == DF__F_LENGTH ? DF_TYPE_INT64 : DF_TYPE_STRING;
        return want(n, 0, 's', fname, err);
    case DF__F_SUBSTR:
        n->type = DF_TYPE_STRING;
        for (int i = 0; rc == FR_OK && i < n->nargs; i++)
            rc = want(n, i, i == 0 ? 's' : 'i', fname, err);
        return rc;
    case DF__F_CURRENT_CONFIG_ID:
        n->type = DF_TYPE_STRING;
        return FR_OK;
    case DF__F_FAIL_IF:
        n->type = DF_TYPE_BOOL;
        rc = want(n, 0, 'b', fname, err);
        if (rc == FR_OK && n->args[1]->kind != DF__LIT)
            return fr_error_set(err, FR_EINVAL, "fail_if: the message must be a string literal");
        return rc == FR_OK ? want(n, 1, 's', fname, err) : rc;
    case DF__F_CONCAT: /* any argument, as its text */
        n->type = DF_TYPE_STRING;
        for (int i = 0; rc == FR_OK && i < n->nargs; i++)
            rc = coerce(&n->args[i], DF_TYPE_STRING, err);
        return rc;
    case DF__F_CONTAINS:
    case DF__F_STARTS_WITH:
    case DF__F_ENDS_WITH:
        n->type = DF_TYPE_BOOL;
        rc = want(n, 0, 's', fname, err);
        return rc == FR_OK ? want(n, 1, 's', fname, err) : rc;
    default:
        n->type = DF_TYPE_INT64;
        return want(n, 0, 't', fname, err);
    }
}

static int bind_case(struct df__node *n, struct fr_error *err)
{
    int npairs = (n->nargs - (n->has_else ? 1 : 0)) / 2;
    int rc = FR_OK;
    for (int i = 0; rc == FR_OK && i < npairs; i++)
        rc = want(n, 2 * i, 'b', "case when", err);
    df_type t = DF_TYPE_NULL;
    for (int i = 0; rc == FR_OK && i < n->nargs; i++) {
        if ((i & 1) == 0 && i / 2 < npairs)
            continue;
        if (!supertype(t, n->args[i]->type, &t))
            return type_error(err, n->args[i]->pos, "case results mix %s and %s", df_type_name(t),
                              df_type_name(n->args[i]->type));
    }
    for (int i = 0; rc == FR_OK && i < n->nargs; i++)
        if ((i & 1) || i / 2 >= npairs)
            rc = t == DF_TYPE_NULL ? FR_OK : coerce(&n->args[i], t, err);
    n->type = t;
    return rc;
}

static int bind_column(struct df__node *n, const struct df_schema *s, struct fr_error *err)
{
    n->col = df_schema_find(s, n->name);
    if (n->col >= 0) {
        n->type = s->fields[n->col].type;
        return FR_OK;
    }
    const char **cands = fr_xmalloc(sizeof(char *) * (size_t)(s->nfields + 1));
    for (int i = 0; i < s->nfields; i++)
        cands[i] = s->fields[i].name;
    const char *sug = df__suggest(n->name, cands, s->nfields);
    err->position = n->pos;
    snprintf(err->field, sizeof(err->field), "%s", n->name);
    int rc = fr_error_set(err, FR_EINVAL, "unknown column '%s' at position %lld%s%s%s", n->name,
                          (long long)n->pos, sug ? "; did you mean '" : "", sug ? sug : "",
                          sug ? "'?" : "");
    free(cands);
    return rc;
}

static int bind_compare(struct df__node *n, struct fr_error *err)
{
    char what[32];
    snprintf(what, sizeof(what), "'%s'",
             n->kind == DF__CMP  ? df__op_text(n->op)
             : n->kind == DF__IN ? "in"
                                 : "between");
    n->type = DF_TYPE_BOOL;
    return unify(n->args, n->nargs, what, n->op_pos, err);
}

static int bind_kind(struct df__node *n, const struct df_schema *s, struct fr_error *err)
{
    int rc = FR_OK;
    switch (n->kind) {
    case DF__LIT:
        n->type = n->lit.type;
        return FR_OK;
    case DF__COL:
        return bind_column(n, s, err);
    case DF__NEG:
        n->type = n->args[0]->type;
        if (n->type != DF_TYPE_NULL && !is_numeric(n->type))
            return type_error(err, n->pos, "unary '-' needs a number, got %s%s",
                              df_type_name(n->type), "");
        return FR_OK;
    case DF__NOT:
    case DF__AND:
    case DF__OR:
        n->type = DF_TYPE_BOOL;
        for (int i = 0; rc == FR_OK && i < n->nargs; i++)
            rc = want(n, i, 'b',
                      n->kind == DF__NOT   ? "not"
                      : n->kind == DF__AND ? "and"
                                           : "or",
                      err);
        return rc;
    case DF__ARITH:
        return bind_arith(n, err);
    case DF__CMP:
    case DF__IN:
    case DF__BETWEEN:
        return bind_compare(n, err);
    case DF__ISNULL:
        n->type = DF_TYPE_BOOL;
        return n->args[0]->type == DF_TYPE_NULL ? coerce(&n->args[0], DF_TYPE_BOOL, err) : FR_OK;
    case DF__LIKE:
        n->type = DF_TYPE_BOOL;
        rc = want(n, 0, 's', "like", err);
        return rc == FR_OK ? want(n, 1, 's', "like", err) : rc;
    case DF__CASE:
        return bind_case(n, err);
    case DF__CAST:
        if (!df__cast_ok(n->args[0]->type, n->type))
            return type_error(err, n->pos, "cannot cast %s to %s", df_type_name(n->args[0]->type),
                              df_type_name(n->type));
        return n->args[0]->type == DF_TYPE_NULL ? coerce(&n->args[0], n->type, err) : FR_OK;
    case DF__FUNC:
        return bind_func(n, err);
    case DF__AGG:
        break;
    }
    err->position = n->pos;
    return fr_error_set(err, FR_EINVAL, "aggregate at position %lld is not allowed here",
                        (long long)n->pos);
}

static int bind_node(struct df__node **np, const struct df_schema *s, struct fr_error *err)
{
    struct df__node *n = *np;
    int rc;
    for (int i = 0; i < n->nargs; i++)
        if ((rc = bind_node(&n->args[i], s, err)) != FR_OK)
            return rc;
    if ((rc = bind_kind(n, s, err)) != FR_OK)
        return rc;
    if (n->type == DF_TYPE_NULL && n->kind != DF__LIT) {
        /* an expression of the null type is always null */
        struct df__node *lit = df__node_new(DF__LIT, n->pos);
        lit->end = n->end;
        lit->lit.null = true;
        df__node_free(n);
        *np = lit;
        return FR_OK;
    }
    return fold(np, err);
}

int df__bind(struct df__node **np, const struct df_schema *s, struct fr_error *err)
{
    return bind_node(np, s, err);
}

int df__bind_root(struct df__node **np, const struct df_schema *s, struct fr_error *err)
{
    int rc = bind_node(np, s, err);
    if (rc == FR_OK && (*np)->type == DF_TYPE_NULL)
        rc = coerce(np, DF_TYPE_BOOL, err);
    return rc;
}

const char *df__suggest(const char *name, const char *const *cands, int n)
{
    const char *best = NULL;
    int best_d = 3;
    int len = (int)strlen(name);
    for (int i = 0; i < n; i++) {
        int d = fr_edit_distance(name, cands[i]);
        if (d >= 0 && d < best_d && (d == 0 || d < len)) {
            best = cands[i];
            best_d = d;
        }
    }
    return best;
}

df_expr *df__expr_wrap(struct df__node *root, const char *text, int64_t pos, int64_t end,
                       const char *alias)
{
    df_expr *e = fr_xcalloc(1, sizeof(*e));
    e->root = root;
    if (alias) {
        e->name = fr_xstrdup(alias);
    } else if (root->kind == DF__COL) {
        e->name = fr_xstrdup(root->name);
    } else {
        while (pos < end && isspace((unsigned char)text[pos]))
            pos++;
        while (end > pos && isspace((unsigned char)text[end - 1]))
            end--;
        e->name = fr_xstrndup(text + pos, (size_t)(end - pos));
    }
    return e;
}

int df__value_set_string(struct df__value *v, const char *s, int64_t n)
{
    free(v->s);
    v->s = fr_xstrndup(s, (size_t)n);
    v->slen = n;
    return FR_OK;
}

void df__value_cleanup(struct df__value *v)
{
    free(v->s);
    v->s = NULL;
    v->slen = 0;
}
