/* sql_compile_int: the private face shared by the sql_compile*.c files: the
 * relations being built (a JSON plan with its columns under unique internal
 * names), the scopes names resolve in, and the expression compiler's state.
 * Names carry the internal sc__ prefix. */
#ifndef FRAMED_SQL_COMPILE_INT_H
#define FRAMED_SQL_COMPILE_INT_H

#include "sql_ast.h"

#include <stdbool.h>

/* One column of a relation. internal is unique within one compile, so
 * columns of different tables never clash in a join. */
struct sc_col {
    char *name;     /* the SQL name (new) */
    bool quoted;    /* the name came from a quoted identifier or a stored name */
    char *qual;     /* the relation's name (new), NULL when none */
    char *internal; /* the plan's column name (new) */
    df_type type;
    int leaf;    /* the table leaf it comes from (ctx->leaves), -1 if derived */
    char *orig;  /* a table leaf's column: the source's own name (new), else NULL */
    bool hidden; /* not found by unqualified names or * (a USING duplicate) */
    bool merged; /* hidden as a USING/NATURAL key: a qualified t.* still lists it */
};

/* A relation: a plan ({"source": ..., "ops": [...]}) and its columns. */
struct sc_rel {
    json_t *plan; /* new */
    struct sc_col *cols;
    int ncols;
};

/* A table read by the query: its renaming select is filled with the
 * columns the query uses, so the scan reads only those. */
struct sc_leaf {
    json_t *ops;    /* borrowed: the leaf plan's ops */
    json_t *select; /* borrowed: the items of its renaming select */
    int nfilters;   /* filters pushed before the select (source names) */
    int ncols;
    bool *used;
    char **internal; /* borrowed from the rel's columns at creation (copies) */
    char **orig;
};

struct sc_cte {
    const struct sql_cte *def;
    struct sc_cte *next; /* the enclosing definitions */
};

/* A correlated equality inner = outer found in a subquery's WHERE. */
struct sc_corr {
    struct sql_expr *inner, *outer;
};

struct sc_scope {
    struct sc_rel *rel;     /* borrowed: the FROM's columns; NULL without FROM */
    struct sc_scope *outer; /* the enclosing query's scope, NULL at the top */
    struct sc_corr *corr;   /* filled when the subquery's WHERE is correlated */
    int ncorr;
    bool correlated_ok; /* a subquery whose WHERE equalities may be pulled out */
};

struct sc_ctx {
    const char *text;
    const struct sql_catalog *cat;
    struct fr_error *err;
    int next_id;
    struct sc_leaf *leaves;
    int nleaves;
    struct sc_cte *ctes;
    int depth;
    const struct sql_select *alias_sel; /* the block whose select aliases may be named */
    int alias_busy;                     /* expanding one now: no alias inside an alias */
    int nrefs;                          /* table and CTE references compiled so far */
    size_t cte_bytes;                   /* the plans CTE references expanded to, summed */
};

/* Each CTE reference compiles its definition again (the plan language has no
 * shared subplans), so the compiled plan can grow exponentially with the SQL:
 * these bound it, checked as it grows. */
#define SC_MAX_TABLE_REFS 1024
#define SC_MAX_CTE_BYTES ((size_t)4 << 20)

/* A node replaced by a column (an aggregate, a window function, a scalar
 * subquery, a group key). */
struct sc_subst {
    const struct sql_expr *node;
    char *internal; /* borrowed; NULL: the NULL literal */
};

/* How an expression compiles: against a scope, with substitutions; grouped
 * means bare columns must be group keys (keys: their internal names). */
struct sc_ex {
    struct sc_ctx *c;
    struct sc_scope *scope;
    struct sc_subst *subst;
    int nsubst;
    bool grouped;
    char **keys; /* borrowed: internal names of plain-column keys */
    int nkeys;
    char **key_texts; /* pre-aggregation texts of expression keys */
    char **key_cols;  /* and their columns after the aggregation */
    int nexpr_keys;
    const char *clause; /* "WHERE", "GROUP BY", ... for messages */
    int leaf_names;     /* >= 0: that leaf's columns by their source names */
};

/* ---- sql_compile.c: errors and ids ---- */
int sc__err(struct sc_ctx *c, int64_t pos, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define sc__invalid(c, pos, ...) sc__err((c), (pos), FR_EINVAL, "invalid-sql", __VA_ARGS__)
#define sc__unsupported(c, pos, ...)                                                               \
    sc__err((c), (pos), FR_EVALIDATION, "unsupported-sql", __VA_ARGS__)
char *sc__new_internal(struct sc_ctx *c, const char *base); /* new: "base#N" */
void sc__utf8_cut(char *s, size_t max); /* at most max bytes, whole characters */
char *sc__quote(const char *name);      /* new: "name" with "" escapes */
char *sc__quote_string(const char *s);  /* new: 'text' with '' escapes */

/* ---- sql_compile_scope.c: relations and names ---- */
void sc__rel_init(struct sc_rel *r);
void sc__rel_cleanup(struct sc_rel *r);
void sc__rel_op(struct sc_rel *r, json_t *op);  /* steals op */
void sc__rel_truncate(struct sc_rel *r, int n); /* keeps the first n columns */
struct sc_col *sc__rel_add(struct sc_rel *r, const char *name, bool quoted, const char *qual,
                           const char *internal, df_type type); /* copies the strings */
void sc__col_copy(struct sc_col *dst, const struct sc_col *src);
void sc__rel_schema(const struct sc_rel *r, struct df_schema *out); /* internal names */
/* The table `name` (CTE or catalog) as a new relation named alias. */
int sc__table(struct sc_ctx *c, const struct sql_from *f, struct sc_rel *out);
void sc__leaf_use(struct sc_ctx *c, const struct sc_col *col);
void sc__leaves_finish(struct sc_ctx *c);
/* Finds the column for e (a SQL_E_COLUMN) in scope and its outer scopes:
 * *found borrowed, *level 0 for the innermost. 400 when ambiguous or unknown. */
int sc__resolve(struct sc_ctx *c, struct sc_scope *s, const struct sql_expr *e,
                struct sc_col **found, int *level);
bool sc__name_eq(const char *stored, const char *name, bool quoted);
/* The expression of the select item aliased by e (an unqualified name that
 * no column has, as DuckDB reads WHERE x2 > 6 for x * 2 AS x2), or NULL. */
const struct sql_expr *sc__alias(struct sc_ctx *c, struct sc_scope *s, const struct sql_expr *e);

/* ---- sql_compile_expr.c: expressions to the expression language ---- */
int sc__expr(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *out);
int sc__expr_text(struct sc_ex *x, const struct sql_expr *e, char **out); /* new */
/* The type of text against the relation (binds it as the engine will). */
int sc__expr_type(struct sc_ctx *c, const struct sc_rel *r, const char *text, int64_t pos,
                  df_type *out);
bool sc__is_agg_name(const char *name);
bool sc__has_agg(const struct sql_expr *e);    /* outside windows and subqueries */
bool sc__has_window(const struct sql_expr *e); /* outside subqueries */
bool sc__has_subquery(const struct sql_expr *e);
const char *sc__type_name(const char *sql_type);                    /* the engine's type or NULL */
char *sc__display_name(struct sc_ctx *c, const struct sql_expr *e); /* new: DuckDB's name */
void sc__ex_subst(struct sc_ex *x, const struct sql_expr *node, char *internal);
void sc__ex_cleanup(struct sc_ex *x);

/* ---- sql_compile_select.c / sql_compile_agg.c ---- */
int sc__query(struct sc_ctx *c, const struct sql_query *q, struct sc_scope *outer,
              struct sc_rel *out);
int sc__select(struct sc_ctx *c, const struct sql_query *q, const struct sql_select *s,
               struct sc_scope *outer, struct sc_rel *out);
/* Adds column `text` as a new column of r: its internal name (borrowed) */
const char *sc__add_computed(struct sc_ctx *c, struct sc_rel *r, const char *text, const char *name,
                             int64_t pos);
int sc__order_limit(struct sc_ctx *c, const struct sql_query *q, struct sc_rel *r,
                    char **order_keys, int nkeys);
int sc__limit_value(struct sc_ctx *c, const struct sql_expr *e, const char *what, int64_t *out);
char *sc__order_key(const char *internal, const struct sql_order_item *it); /* new */
bool sc__grouped(const struct sql_query *q, const struct sql_select *s);
/* The agg op on r: r's columns become keys and aggregates, pre keeps the
 * columns before it (names resolve there); x becomes grouped. */
int sc__aggregate(struct sc_ctx *c, const struct sql_query *q, const struct sql_select *s,
                  struct sc_rel *r, struct sc_rel *pre, struct sc_ex *x);
int sc__windows(struct sc_ctx *c, const struct sql_query *q, const struct sql_select *s,
                struct sc_rel *r, struct sc_ex *x);
int sc__expr_func(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b);
int sc__expr_binary(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b);
/* A comparison's operand: a folded date +/- INTERVAL stays a date there. */
int sc__expr_operand(struct sc_ex *x, const struct sql_expr *e, struct fr_buf *b);

/* ---- sql_compile_from.c: FROM, joins, WHERE ---- */
int sc__from_where(struct sc_ctx *c, const struct sql_select *s, struct sc_scope *scope,
                   struct sc_rel *out);
int sc__join(struct sc_ctx *c, struct sc_rel *left, struct sc_rel *right, const char *how,
             json_t *lkeys, json_t *rkeys); /* steals right's plan and the key arrays */
void sc__cross(struct sc_ctx *c, struct sc_rel *left, struct sc_rel *right, const char *how);
int sc__filter(struct sc_ctx *c, struct sc_scope *scope, struct sc_rel *r,
               const struct sql_expr *cond, const char *clause);

/* ---- sql_compile_where.c: a FROM list flattened into items ---- */
#include <stdint.h>
#define MAX_ITEMS 64

struct sc_item {
    struct sc_rel rel;
    int leaf; /* a table read directly: its leaf, else -1 */
};

struct sc_conj {
    const struct sql_expr *e;
    uint64_t mask; /* the items it reads */
    bool outer;    /* it reads the enclosing query (correlated) */
    bool subq;
    bool done;
};

struct sc_fromset {
    struct sc_item items[MAX_ITEMS];
    int n;
    struct sc_conj *conjs;
    int nconj;
    struct sc_rel all; /* every item's columns, for resolution */
    int *item_of;      /* all.cols[i] belongs to items[item_of[i]] */
    struct sc_scope *outer;
};

void sc__add_conj(struct sc_fromset *fs, const struct sql_expr *e); /* split by AND */
void sc__build_all(struct sc_fromset *fs);
int sc__refs(struct sc_ctx *c, struct sc_fromset *fs, const struct sql_expr *e, uint64_t *mask,
             bool *outer);
int sc__classify(struct sc_ctx *c, struct sc_fromset *fs);
void sc__fromset_cleanup(struct sc_fromset *fs);
int sc__from_tree(struct sc_ctx *c, const struct sql_from *f, struct sc_scope *outer,
                  struct sc_rel *out);
int sc__from_unit(struct sc_ctx *c, const struct sql_from *f, struct sc_scope *outer,
                  struct sc_rel *out);
int sc__outer_join(struct sc_ctx *c, const struct sql_from *f, struct sc_scope *outer,
                   struct sc_rel *out);
int sc__key_column(struct sc_ctx *c, struct sc_scope *outer, struct sc_rel *r,
                   const struct sql_expr *e, char **out);
int sc__key_types(struct sc_ctx *c, const struct sc_rel *l, const char *lk, const struct sc_rel *r,
                  const char *rk, int64_t pos);
int sc__filter_ex(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *cond);

/* ---- sql_compile_subq.c: subqueries in expressions ---- */
/* Joins the scalar subqueries of e into r and records their columns. */
int sc__scalar_subqueries(struct sc_ex *x, struct sc_rel *r, const struct sql_expr *e);
/* A WHERE conjunct that is [NOT] IN (query) or [NOT] EXISTS: semi/anti join. */
bool sc__is_subquery_conjunct(const struct sql_expr *e);
int sc__subquery_conjunct(struct sc_ctx *c, struct sc_scope *scope, struct sc_rel *r,
                          const struct sql_expr *e);

/* ---- sql_compile_corr.c: an aggregate subquery over no inner row ---- */
struct sc_corr_aug {
    struct sql_query q;
    struct sql_select sel;
    struct sql_select_item items[3]; /* the item, true AS matched, HAVING */
    struct sql_expr t;
    int nextra; /* 0: q as given (a bare aggregate, or not one aggregate) */
    const struct sql_expr *item, *having;
};
/* q, or a->q: q's one aggregate item followed by true and its HAVING as
 * columns (HAVING itself dropped). a is filled; borrowed from q and a. */
const struct sql_query *sc__corr_augment(const struct sql_query *q, struct sc_corr_aug *a);
/* Adds to r (after the left join) the subquery's value: value when matched
 * (and pass, HAVING's column, when not NULL), else the item over the empty
 * group; the new column's internal name (borrowed), NULL on an error. */
const char *sc__corr_value(struct sc_ex *x, struct sc_rel *r, const struct sc_corr_aug *a,
                           const char *value, const char *matched, const char *pass,
                           bool correlated, df_type t, int64_t pos);

/* ---- sql_compile_setop.c: set operations, VALUES, no FROM ---- */
int sc__setop(struct sc_ctx *c, const struct sql_query *q, struct sc_scope *outer,
              struct sc_rel *out);
int sc__values(struct sc_ctx *c, const struct sql_select *s, struct sc_rel *out);
/* The type both a and b fit in (NULL fits any; int64 and float64 give
 * float64); false when there is none. */
bool sc__unify(df_type a, df_type b, df_type *out);
void sc__one_row(struct sc_ctx *c, struct sc_rel *out);

#endif
