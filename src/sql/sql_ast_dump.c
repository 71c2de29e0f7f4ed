/* sql_ast_dump: the tree as an S-expression, so tests assert shapes as text.
 * Statements Q (a query) (explain Q) (set f V) (reset f|all) (show f|all);
 * queries (select [distinct] (items ..) (from F) (where E) ...), (values
 * (row ..) ..), (union [all] L R), (paren Q), wrapped in (query (with ..) B
 * (order ..) (limit E) (offset E)) when those are given; expressions are
 * names, literals and (op args..). */
#include "sql_parse_int.h"

#include <stdlib.h>

static void query(struct fr_buf *b, const struct sql_query *q);
static void expr(struct fr_buf *b, const struct sql_expr *e);

static void name(struct fr_buf *b, const struct sql_name *n)
{
    if (n->quoted)
        fr_buf_printf(b, "\"%s\"", n->text);
    else
        fr_buf_puts(b, n->text);
}

static void names(struct fr_buf *b, const struct sql_name *n, int count)
{
    fr_buf_putc(b, '(');
    for (int k = 0; k < count; k++) {
        if (k)
            fr_buf_putc(b, ' ');
        name(b, &n[k]);
    }
    fr_buf_putc(b, ')');
}

static void exprs(struct fr_buf *b, const char *head, struct sql_expr *const *es, int n)
{
    fr_buf_printf(b, "(%s", head);
    for (int k = 0; k < n; k++) {
        fr_buf_putc(b, ' ');
        expr(b, es[k]);
    }
    fr_buf_putc(b, ')');
}

static void order(struct fr_buf *b, const struct sql_order_item *items, int n)
{
    fr_buf_puts(b, "(order");
    for (int k = 0; k < n; k++) {
        fr_buf_putc(b, ' ');
        if (!items[k].desc && !items[k].nulls) {
            expr(b, items[k].expr);
            continue;
        }
        fr_buf_putc(b, '(');
        expr(b, items[k].expr);
        fr_buf_printf(b, "%s%s)", items[k].desc ? " desc" : "",
                      items[k].nulls == 1   ? " nulls-first"
                      : items[k].nulls == 2 ? " nulls-last"
                                            : "");
    }
    fr_buf_putc(b, ')');
}

static void window(struct fr_buf *b, const struct sql_window *w)
{
    fr_buf_puts(b, "(over");
    if (w->ref.text) {
        fr_buf_putc(b, ' ');
        name(b, &w->ref);
    }
    if (w->npartition) {
        fr_buf_putc(b, ' ');
        exprs(b, "partition", w->partition_by, w->npartition);
    }
    if (w->norder) {
        fr_buf_putc(b, ' ');
        order(b, w->order_by, w->norder);
    }
    if (w->has_frame)
        fr_buf_printf(b, " (frame \"%s\")", w->frame_text);
    fr_buf_putc(b, ')');
}

static const char *binop_name(int op)
{
    static const char *const n[] = {"+",  "-", "*",  "/", "%",  "||",  "=",
                                    "<>", "<", "<=", ">", ">=", "and", "or"};
    return op >= 0 && op <= SQL_OP_OR ? n[op] : "?";
}

static void func(struct fr_buf *b, const struct sql_expr *e)
{
    fr_buf_printf(b, "(%s%s", e->name.text, e->distinct ? " distinct" : "");
    if (e->star)
        fr_buf_puts(b, " *");
    for (int k = 0; k < e->nargs; k++) {
        fr_buf_putc(b, ' ');
        expr(b, e->args[k]);
    }
    if (e->filter) {
        fr_buf_puts(b, " (filter ");
        expr(b, e->filter);
        fr_buf_putc(b, ')');
    }
    if (e->window) {
        fr_buf_putc(b, ' ');
        window(b, e->window);
    }
    fr_buf_putc(b, ')');
}

static void case_expr(struct fr_buf *b, const struct sql_expr *e)
{
    fr_buf_puts(b, "(case");
    if (e->operand) {
        fr_buf_putc(b, ' ');
        expr(b, e->operand);
    }
    for (int k = 0; k + 1 < e->nargs; k += 2) {
        fr_buf_puts(b, " (when ");
        expr(b, e->args[k]);
        fr_buf_putc(b, ' ');
        expr(b, e->args[k + 1]);
        fr_buf_putc(b, ')');
    }
    if (e->else_) {
        fr_buf_puts(b, " (else ");
        expr(b, e->else_);
        fr_buf_putc(b, ')');
    }
    fr_buf_putc(b, ')');
}

static void with_query(struct fr_buf *b, const char *head, const struct sql_expr *e)
{
    fr_buf_printf(b, "(%s%s", e->negated ? "not-" : "", head);
    for (int k = 0; k < e->nargs; k++) {
        fr_buf_putc(b, ' ');
        expr(b, e->args[k]);
    }
    if (e->query) {
        fr_buf_putc(b, ' ');
        query(b, e->query);
    }
    fr_buf_putc(b, ')');
}

static void leaf(struct fr_buf *b, const struct sql_expr *e)
{
    switch (e->kind) {
    case SQL_E_COLUMN:
    case SQL_E_STAR:
        if (e->qual.text) {
            name(b, &e->qual);
            fr_buf_putc(b, '.');
        }
        if (e->kind == SQL_E_STAR)
            fr_buf_putc(b, '*');
        else
            name(b, &e->name);
        break;
    case SQL_E_INT:
        fr_buf_printf(b, "%lld", (long long)e->ival);
        break;
    case SQL_E_FLOAT:
        fr_buf_printf(b, "%s", e->text);
        break;
    case SQL_E_STRING:
        fr_buf_printf(b, "'%s'", e->text);
        break;
    case SQL_E_BOOL:
        fr_buf_puts(b, e->ival ? "true" : "false");
        break;
    case SQL_E_NULL:
        fr_buf_puts(b, "null");
        break;
    case SQL_E_TYPED:
        fr_buf_printf(b, "(%s '%s')", e->type_name, e->text);
        break;
    case SQL_E_INTERVAL:
        fr_buf_printf(b, "(interval '%s' %s)", e->text, e->unit);
        break;
    default:
        break;
    }
}

static void expr(struct fr_buf *b, const struct sql_expr *e)
{
    switch (e->kind) {
    case SQL_E_UNARY:
        fr_buf_printf(b, "(%s ", e->op == 'N' ? "not" : e->op == '-' ? "-" : "+");
        expr(b, e->args[0]);
        fr_buf_putc(b, ')');
        return;
    case SQL_E_BINARY:
        exprs(b, binop_name(e->op), e->args, e->nargs);
        return;
    case SQL_E_IS_NULL:
        exprs(b, e->negated ? "is-not-null" : "is-null", e->args, e->nargs);
        return;
    case SQL_E_IS_BOOL:
        exprs(b,
              e->negated ? (e->ival ? "is-not-true" : "is-not-false")
                         : (e->ival ? "is-true" : "is-false"),
              e->args, e->nargs);
        return;
    case SQL_E_BETWEEN:
        return with_query(b, "between", e);
    case SQL_E_IN_LIST:
    case SQL_E_IN_QUERY:
        return with_query(b, "in", e);
    case SQL_E_EXISTS:
        return with_query(b, "exists", e);
    case SQL_E_SUBQUERY:
        return with_query(b, "subquery", e);
    case SQL_E_LIKE:
        return with_query(b, e->ival ? "ilike" : "like", e);
    case SQL_E_CASE:
        return case_expr(b, e);
    case SQL_E_CAST:
        fr_buf_puts(b, e->ival ? "(try-cast " : "(cast ");
        expr(b, e->args[0]);
        fr_buf_printf(b, " %s)", e->type_name);
        return;
    case SQL_E_FUNC:
        return func(b, e);
    default:
        return leaf(b, e);
    }
}

static void from(struct fr_buf *b, const struct sql_from *f)
{
    static const char *const joins[] = {"inner", "left", "right", "full", "cross", "comma"};
    if (f->kind == SQL_FROM_JOIN) {
        fr_buf_printf(b, "(join %s%s ", f->natural ? "natural-" : "", joins[f->join]);
        from(b, f->left);
        fr_buf_putc(b, ' ');
        from(b, f->right);
        if (f->on) {
            fr_buf_puts(b, " (on ");
            expr(b, f->on);
            fr_buf_putc(b, ')');
        }
        if (f->nusing) {
            fr_buf_puts(b, " (using ");
            names(b, f->using_cols, f->nusing);
            fr_buf_putc(b, ')');
        }
        fr_buf_putc(b, ')');
        return;
    }
    bool wrap = f->kind == SQL_FROM_SUBQUERY || f->alias.text;
    if (wrap)
        fr_buf_puts(b, f->kind == SQL_FROM_SUBQUERY ? "(sub " : "(");
    if (f->kind == SQL_FROM_SUBQUERY)
        query(b, f->query);
    else
        name(b, &f->table);
    if (f->alias.text) {
        fr_buf_puts(b, " as ");
        name(b, &f->alias);
    }
    if (f->ncol_aliases) {
        fr_buf_putc(b, ' ');
        names(b, f->col_aliases, f->ncol_aliases);
    }
    if (wrap)
        fr_buf_putc(b, ')');
}

static void clause(struct fr_buf *b, const char *head, const struct sql_expr *e)
{
    if (!e)
        return;
    fr_buf_printf(b, " (%s ", head);
    expr(b, e);
    fr_buf_putc(b, ')');
}

static void items(struct fr_buf *b, const struct sql_select *s)
{
    fr_buf_puts(b, " (items");
    for (int k = 0; k < s->nitems; k++) {
        fr_buf_putc(b, ' ');
        if (s->items[k].alias.text)
            fr_buf_puts(b, "(as ");
        expr(b, s->items[k].expr);
        if (s->items[k].alias.text) {
            fr_buf_putc(b, ' ');
            name(b, &s->items[k].alias);
            fr_buf_putc(b, ')');
        }
    }
    fr_buf_putc(b, ')');
}

static void select_block(struct fr_buf *b, const struct sql_select *s)
{
    if (s->nvalues) {
        fr_buf_puts(b, "(values");
        for (int r = 0; r < s->nvalues; r++) {
            fr_buf_putc(b, ' ');
            exprs(b, "row", s->values[r], s->values_width);
        }
        fr_buf_putc(b, ')');
        return;
    }
    fr_buf_printf(b, "(select%s", s->distinct ? " distinct" : "");
    if (s->ndistinct_on) {
        fr_buf_putc(b, ' ');
        exprs(b, "on", s->distinct_on, s->ndistinct_on);
    }
    items(b, s);
    if (s->from) {
        fr_buf_puts(b, " (from ");
        from(b, s->from);
        fr_buf_putc(b, ')');
    }
    clause(b, "where", s->where);
    if (s->group_by_all)
        fr_buf_puts(b, " (group all)");
    else if (s->ngroup) {
        fr_buf_putc(b, ' ');
        exprs(b, "group", s->group_by, s->ngroup);
    }
    clause(b, "having", s->having);
    for (int k = 0; k < s->nwindows; k++) {
        fr_buf_puts(b, " (window ");
        name(b, &s->window_names[k]);
        fr_buf_putc(b, ' ');
        window(b, s->windows[k]);
        fr_buf_putc(b, ')');
    }
    clause(b, "qualify", s->qualify);
    fr_buf_putc(b, ')');
}

static void body(struct fr_buf *b, const struct sql_query *q)
{
    static const char *const ops[] = {"", "union", "intersect", "except"};
    if (q->select) {
        select_block(b, q->select);
    } else if (q->setop == SQL_SET_NONE) {
        fr_buf_puts(b, "(paren ");
        query(b, q->left);
        fr_buf_putc(b, ')');
    } else {
        fr_buf_printf(b, "(%s%s ", ops[q->setop], q->all ? " all" : "");
        query(b, q->left);
        fr_buf_putc(b, ' ');
        query(b, q->right);
        fr_buf_putc(b, ')');
    }
}

static void query(struct fr_buf *b, const struct sql_query *q)
{
    bool wrap = q->nctes || q->norder || q->limit || q->offset;
    if (wrap)
        fr_buf_puts(b, "(query ");
    for (int k = 0; k < q->nctes; k++) {
        fr_buf_printf(b, "(with%s ", q->ctes[k].recursive ? " recursive" : "");
        name(b, &q->ctes[k].name);
        if (q->ctes[k].ncols) {
            fr_buf_putc(b, ' ');
            names(b, q->ctes[k].cols, q->ctes[k].ncols);
        }
        fr_buf_putc(b, ' ');
        query(b, q->ctes[k].query);
        fr_buf_puts(b, ") ");
    }
    body(b, q);
    if (q->norder) {
        fr_buf_putc(b, ' ');
        order(b, q->order_by, q->norder);
    }
    clause(b, "limit", q->limit);
    clause(b, "offset", q->offset);
    if (wrap)
        fr_buf_putc(b, ')');
}

char *sql_ast_dump(const struct sql_stmt *s)
{
    static const char *const heads[] = {"query", "explain", "set", "reset", "show"};
    struct fr_buf b;
    fr_buf_init(&b);
    if (s->kind == SQL_AST_QUERY) { /* a query is its own dump */
        query(&b, s->query);
        return fr_buf_steal(&b, NULL);
    }
    fr_buf_printf(&b, "(%s ", heads[s->kind]);
    if (s->query)
        query(&b, s->query);
    else if (s->field.text)
        name(&b, &s->field);
    else
        fr_buf_puts(&b, "all");
    if (s->value) {
        fr_buf_putc(&b, ' ');
        expr(&b, s->value);
    }
    fr_buf_putc(&b, ')');
    return fr_buf_steal(&b, NULL);
}
