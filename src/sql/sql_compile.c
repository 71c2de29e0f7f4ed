/* sql_compile: a parsed statement into what the caller runs: a query into
 * the JSON plan of POST /v1/queries (its columns under the SQL output names:
 * the alias, else the column's name, else DuckDB's name for the expression;
 * a name already taken gets _1, _2, as the plan wants unique names), a config
 * statement (SET, RESET, SHOW) into its field and value. Also the compiler's
 * shared helpers: errors at a position, internal names, quoting. */
#include "sql_compile_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sc__err(struct sc_ctx *c, int64_t pos, int status, const char *kind, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fr_utf8_cut_tail(msg);
    return sql_error_at(c->err, status, kind, c->text, pos, "%s", msg);
}

void sc__utf8_cut(char *s, size_t max)
{
    if (strlen(s) <= max)
        return;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80) /* not inside a character */
        max--;
    s[max] = '\0';
}

char *sc__new_internal(struct sc_ctx *c, const char *base)
{
    char b[48];
    snprintf(b, sizeof(b), "%s", base && base[0] ? base : "col");
    if (base && strlen(base) >= sizeof(b)) {
        memcpy(b, base, sizeof(b) - 1);
        b[sizeof(b) - 1] = '\0';
        sc__utf8_cut(b, 40);
    }
    return fr_xasprintf("%s#%d", b, ++c->next_id);
}

static char *quote_with(const char *s, char q)
{
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_putc(&b, q);
    for (const char *p = s; *p; p++) {
        if (*p == q)
            fr_buf_putc(&b, q);
        fr_buf_putc(&b, *p);
    }
    fr_buf_putc(&b, q);
    return fr_buf_steal(&b, NULL);
}

char *sc__quote(const char *name)
{
    return quote_with(name, '"');
}

char *sc__quote_string(const char *s)
{
    return quote_with(s, '\'');
}

/* new: a name made unique among the output names so far ("a", "a_1"). */
static char *unique_name(json_t *seen, const char *name)
{
    char *out = fr_xstrdup(name);
    for (int k = 1; json_object_get(seen, out); k++) {
        free(out);
        out = fr_xasprintf("%s_%d", name, k);
    }
    json_object_set_new(seen, out, json_true());
    return out;
}

/* The query's last op: its columns under their SQL names. */
static void final_select(struct sc_rel *r)
{
    json_t *items = json_array(), *seen = json_object();
    for (int i = 0; i < r->ncols; i++) {
        if (r->cols[i].hidden)
            continue;
        char *name = unique_name(seen, r->cols[i].name);
        char *qi = sc__quote(r->cols[i].internal), *qn = sc__quote(name);
        json_array_append_new(items, json_sprintf("%s as %s", qi, qn));
        free(qi);
        free(qn);
        free(name);
    }
    json_decref(seen);
    sc__rel_op(r, json_pack("{so}", "select", items));
}

/* ---- the tables' own names back where they are unique ----
 * A table column the query reads keeps the source's name in the plan when
 * no other read column has that name (no '#', so no internal name either):
 * its renaming select item is then "k" as "k", which the planner passes by
 * reference instead of copying, and so is a final "k" as "k". */

struct rename {
    const char *from, *to; /* borrowed */
};

/* new: text with every "from" identifier (double-quoted, outside 'strings')
 * and a whole string equal to from replaced by to; NULL when unchanged. */
static char *rename_text(const char *text, const struct rename *r, int n)
{
    for (int k = 0; k < n; k++)
        if (strcmp(text, r[k].from) == 0)
            return fr_xstrdup(r[k].to);
    if (!strchr(text, '"'))
        return NULL;
    struct fr_buf b;
    fr_buf_init(&b);
    bool changed = false;
    for (const char *p = text; *p;) {
        if (*p == '\'' || *p == '"') {
            char q = *p;
            const char *e = p + 1;
            while (*e && !(*e == q && e[1] != q))
                e += *e == q ? 2 : 1;
            size_t len = (size_t)(e - p) + (*e ? 1 : 0);
            const char *to = NULL;
            for (int k = 0; q == '"' && k < n && !to; k++)
                if (strlen(r[k].from) == len - 2 && strncmp(p + 1, r[k].from, len - 2) == 0)
                    to = r[k].to;
            if (to) {
                char *qt = sc__quote(to);
                fr_buf_puts(&b, qt);
                free(qt);
                changed = true;
            } else {
                fr_buf_append(&b, p, len);
            }
            p += len;
            continue;
        }
        fr_buf_putc(&b, *p++);
    }
    char *out = fr_buf_steal(&b, NULL);
    if (!changed) {
        free(out);
        return NULL;
    }
    return out;
}

static void rename_json(json_t *v, const struct rename *r, int n)
{
    if (json_is_object(v)) {
        const char *key;
        json_t *val;
        json_object_foreach(v, key, val)
        {
            if (strcmp(key, "source") == 0) /* a table's name is no column */
                continue;
            if (!json_is_string(val)) {
                rename_json(val, r, n);
                continue;
            }
            char *t = rename_text(json_string_value(val), r, n);
            if (t)
                json_object_set_new(v, key, json_string(t));
            free(t);
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *val = json_array_get(v, i);
            char *t = json_is_string(val) ? rename_text(json_string_value(val), r, n) : NULL;
            if (t)
                json_array_set_new(v, i, json_string(t));
            else if (!json_is_string(val))
                rename_json(val, r, n);
            free(t);
        }
    }
}

/* The used leaf columns whose source name no other used column has. */
static void restore_names(struct sc_ctx *c, json_t *plan)
{
    int cap = 0, n = 0;
    struct rename *r = NULL;
    for (int i = 0; i < c->nleaves; i++) {
        const struct sc_leaf *l = &c->leaves[i];
        for (int k = 0; k < l->ncols; k++) {
            if (!l->used[k] && !(k == 0 && json_array_size(l->select) == 1))
                continue;
            bool dup = false;
            for (int j = 0; j < n && !dup; j++)
                dup = strcmp(r[j].from, l->internal[k]) == 0;
            if (dup)
                continue;
            if (n == cap)
                r = fr_xrealloc(r, sizeof(*r) * (size_t)(cap = cap ? cap * 2 : 16));
            r[n].from = l->internal[k];
            r[n++].to = l->orig[k];
        }
    }
    int m = 0;
    for (int j = 0; j < n; j++) {
        bool unique = !strchr(r[j].to, '#') && strcmp(r[j].to, "") != 0;
        for (int k = 0; k < n && unique; k++)
            unique = k == j || strcmp(r[k].to, r[j].to) != 0;
        if (unique)
            r[m++] = r[j];
    }
    if (m > 0)
        rename_json(plan, r, m);
    free(r);
}

static int compile_query_stmt(struct sc_ctx *c, const struct sql_query *q, json_t **plan)
{
    struct sc_rel r;
    sc__rel_init(&r);
    int rc = sc__query(c, q, NULL, &r);
    if (rc == FR_OK) {
        final_select(&r);
        sc__leaves_finish(c);
        restore_names(c, r.plan);
        *plan = json_incref(r.plan);
    }
    sc__rel_cleanup(&r);
    return rc;
}

static char *lower_dup(const char *s)
{
    char *out = fr_xstrdup(s);
    for (char *p = out; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return out;
}

/* SET's value: a literal, a negated number or a bare word. */
static int set_value(struct sc_ctx *c, const struct sql_expr *v, json_t **out)
{
    bool neg = false;
    if (v && v->kind == SQL_E_UNARY && v->op == '-' && v->nargs == 1) {
        neg = true;
        v = v->args[0];
    }
    if (!v)
        return sc__invalid(c, 0, "SET needs a value");
    switch (v->kind) {
    case SQL_E_INT:
        *out = json_integer(neg ? -v->ival : v->ival);
        return FR_OK;
    case SQL_E_FLOAT:
        *out = json_real(neg ? -v->fval : v->fval);
        return FR_OK;
    case SQL_E_STRING:
        if (!neg) {
            *out = json_string(v->text ? v->text : "");
            return FR_OK;
        }
        break;
    case SQL_E_BOOL:
        if (!neg) {
            *out = json_boolean(v->ival);
            return FR_OK;
        }
        break;
    case SQL_E_NULL:
        if (!neg) {
            *out = json_null();
            return FR_OK;
        }
        break;
    default:
        break;
    }
    return sc__invalid(c, v->pos, "SET takes a number, a string, true, false or null");
}

static int compile_stmt(struct sc_ctx *c, const struct sql_stmt *st, struct sql_statement *out)
{
    out->field_pos = st->field.text ? st->field.pos : -1;
    switch (st->kind) {
    case SQL_AST_QUERY:
    case SQL_AST_EXPLAIN:
        out->kind = st->kind == SQL_AST_QUERY ? SQL_STMT_QUERY : SQL_STMT_EXPLAIN;
        return compile_query_stmt(c, st->query, &out->plan);
    case SQL_AST_SET:
        out->kind = SQL_STMT_SET;
        out->field = lower_dup(st->field.text ? st->field.text : "");
        return set_value(c, st->value, &out->value);
    case SQL_AST_RESET:
        out->kind = SQL_STMT_RESET;
        out->field = st->field.text ? lower_dup(st->field.text) : NULL;
        return FR_OK;
    case SQL_AST_SHOW:
        out->kind = SQL_STMT_SHOW;
        out->field = st->field.text ? lower_dup(st->field.text) : NULL;
        return FR_OK;
    }
    return sc__invalid(c, st->pos, "unknown statement");
}

int sql_compile(const char *text, const struct sql_catalog *cat, struct sql_statement *out,
                struct fr_error *err)
{
    memset(out, 0, sizeof(*out));
    struct sql_stmt *st = NULL;
    int rc = sql_parse(text, &st, err);
    if (rc != FR_OK)
        return rc;
    struct sc_ctx c = {0};
    c.text = text;
    c.cat = cat;
    c.err = err;
    rc = compile_stmt(&c, st, out);
    for (int i = 0; i < c.nleaves; i++) {
        free(c.leaves[i].used);
        for (int k = 0; k < c.leaves[i].ncols; k++) {
            free(c.leaves[i].internal[k]);
            free(c.leaves[i].orig[k]);
        }
        free(c.leaves[i].internal);
        free(c.leaves[i].orig);
    }
    free(c.leaves);
    sql_stmt_free(st);
    if (rc != FR_OK)
        sql_statement_cleanup(out);
    return rc;
}
