/* engine_expr_int: the private face shared by the engine_expr_*.c files:
 * tokens, the syntax tree, the binder and the vectorized evaluator. Nothing
 * outside engine_expr_*.c includes it; names carry the internal df__ prefix. */
#ifndef FRAMED_ENGINE_EXPR_INT_H
#define FRAMED_ENGINE_EXPR_INT_H

#include "engine.h"

/* ---- tokens (engine_expr_lex.c) ---------------------------------------- */
enum df__tok {
    DF__T_EOF,
    DF__T_IDENT,  /* bare word: a keyword, function or column name */
    DF__T_QIDENT, /* "double quoted" name: always a column or alias */
    DF__T_INT,
    DF__T_FLOAT,
    DF__T_STRING,
    DF__T_LPAREN,
    DF__T_RPAREN,
    DF__T_COMMA,
    DF__T_PLUS,
    DF__T_MINUS,
    DF__T_STAR,
    DF__T_SLASH,
    DF__T_PERCENT,
    DF__T_EQ,
    DF__T_NE,
    DF__T_LT,
    DF__T_LE,
    DF__T_GT,
    DF__T_GE,
};

struct df__token {
    enum df__tok kind;
    int64_t pos;  /* byte offset of the first character */
    int64_t len;  /* bytes in the text */
    char *text;   /* new: decoded text of IDENT, QIDENT and STRING, else NULL */
    int64_t slen; /* bytes of text (a string may hold NUL) */
    int64_t ival;
    double fval;
};

/* Tokenizes text into *toks (new, ending with an EOF token; free with
 * df__tokens_free). FR_EINVAL with err->position on a bad character or an
 * unterminated string or name. */
int df__lex(const char *text, struct df__token **toks, int *ntoks, struct fr_error *err);
void df__tokens_free(struct df__token *toks, int ntoks);
const char *df__tok_desc(enum df__tok k); /* "')'", "a number", ... */

/* ---- syntax tree (engine_expr_parse.c) ---------------------------------- */
struct df__value {
    df_type type; /* DF_TYPE_NULL for the null literal */
    bool null;
    bool b;
    int32_t d;
    int64_t i; /* int64 and timestamp */
    double f;
    char *s; /* new */
    int64_t slen;
};

enum df__kind {
    DF__LIT,
    DF__COL,
    DF__NEG,
    DF__NOT,
    DF__ARITH, /* op: df__op */
    DF__CMP,   /* op: df__op */
    DF__AND,
    DF__OR,
    DF__ISNULL,  /* negated: is not null */
    DF__IN,      /* args[0] in (args[1..]) */
    DF__BETWEEN, /* args[0] between args[1] and args[2] */
    DF__LIKE,    /* args[0] like args[1] */
    DF__CASE,    /* when/then pairs, then the else (has_else) */
    DF__CAST,    /* to `type` */
    DF__FUNC,    /* op: df__func */
    DF__AGG,     /* op: df_agg_func; only while parsing aggregate items */
};

enum df__op {
    DF__ADD,
    DF__SUB,
    DF__MUL,
    DF__DIV,
    DF__MOD,
    DF__EQ,
    DF__NE,
    DF__LT,
    DF__LE,
    DF__GT,
    DF__GE
};

enum df__func {
    DF__F_COALESCE,
    DF__F_ABS,
    DF__F_ROUND,
    DF__F_FLOOR,
    DF__F_CEIL,
    DF__F_LOWER,
    DF__F_UPPER,
    DF__F_LENGTH,
    DF__F_SUBSTR,
    DF__F_CONTAINS,
    DF__F_STARTS_WITH,
    DF__F_ENDS_WITH,
    DF__F_YEAR,
    DF__F_MONTH,
    DF__F_DAY,
    DF__F_CURRENT_CONFIG_ID, /* no arguments: the config ID the task runs with */
    DF__F_CONCAT,            /* concat(a, ...): strings joined, NULLs skipped (DuckDB) */
    DF__F_ROUND_EVEN,        /* round_even(x): float64 to the nearest whole, ties to even;
                                other types unchanged */
    DF__F_FAIL_IF,           /* fail_if(cond, 'message'): false, or the task fails with
                                cardinality-violation where cond is true (SQL's checks) */
    DF__F_COUNT_
};

struct df__node {
    enum df__kind kind;
    int op;
    bool negated;
    bool has_else;
    bool star;        /* count(*) */
    int64_t pos, end; /* byte span [pos, end) in the text */
    int64_t op_pos;   /* the operator's position, for type errors */
    df_type type;     /* set by the binder; a CAST's target before binding */
    int col;          /* COL: schema index after binding */
    char *name;       /* COL: the name (new) */
    struct df__value lit;
    int nargs;
    int depth;              /* the levels under it (a leaf 0): the parser bounds it */
    struct df__node **args; /* owned */
};

struct df__node *df__node_new(enum df__kind kind, int64_t pos);
void df__node_add(struct df__node *n, struct df__node *arg); /* steals arg */
void df__node_free(struct df__node *n);                      /* accepts NULL */
const char *df__func_name(int f);
const char *df__op_text(int op);
/* Candidate names for "did you mean": the scalar functions. */
extern const char *const df__func_names[DF__F_COUNT_];
/* Function tables (case-insensitive names, aliases included). */
bool df__func_lookup(const char *name, int *func, int *min_args, int *max_args);
bool df__agg_lookup(const char *name, int *func);
const char *df__agg_name_at(int k); /* the k-th aggregate name, NULL past the end */

/* Parses text into a tree (new). In agg_mode aggregate calls become DF__AGG
 * nodes (a nested one is an error); otherwise they are rejected. *alias is
 * new or NULL. */
int df__parse(const char *text, bool agg_mode, struct df__node **root, char **alias,
              struct fr_error *err);

/* ---- binding (engine_expr_bind.c) --------------------------------------- */
struct df_expr {
    struct df__node *root;
    char *name; /* new */
};

/* Resolves columns, checks and sets types, inserts implicit casts and folds
 * constants; may replace *np. text is for messages. */
int df__bind(struct df__node **np, const struct df_schema *s, struct fr_error *err);
/* The closest of cands to name (edit distance <= 2 or equal ignoring case), or NULL. */
const char *df__suggest(const char *name, const char *const *cands, int n);
/* new: wraps a bound tree (steals root) named by alias, else a column's
 * name, else text[pos, end) trimmed. */
df_expr *df__expr_wrap(struct df__node *root, const char *text, int64_t pos, int64_t end,
                       const char *alias);
/* new: root as a top-level expression: NULL-typed roots become bool. */
int df__bind_root(struct df__node **np, const struct df_schema *s, struct fr_error *err);
int df__value_set_string(struct df__value *v, const char *s, int64_t n);
void df__value_cleanup(struct df__value *v);

/* ---- evaluation (engine_expr_eval*.c) ------------------------------------ */
/* A vector of n values: rows [off, off+n) of col. `charged` bytes were
 * charged to the exec account for it (0 for a borrowed table column). */
struct df__vec {
    struct df_column *col; /* one reference */
    int64_t off;
    int64_t charged;
};

struct df__ctx {
    const struct df_table *t;
    int64_t start, n;
    struct df_exec *ex;
    struct fr_error *err;
};

int df__eval(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
void df__vec_release(struct df__ctx *c, struct df__vec *v);
/* A new temporary column of n slots of type t, length n, zeroed, with an
 * all-valid bitmap when with_validity (call df__finish). */
int df__col_fixed(struct df__ctx *c, df_type t, bool with_validity, struct df_column **out);
/* Masks the tail, counts nulls, zeroes null slots, drops an all-valid
 * bitmap, checks for OOM and charges the column to ex; steals col into v. */
int df__finish(struct df__ctx *c, struct df_column *col, struct df__vec *v);
/* The validity bits of v aligned to its row 0, or NULL if it has no nulls;
 * *owned is set when the caller must free() the result. */
const uint8_t *df__vec_bits(const struct df__vec *v, int64_t n, uint8_t **owned);
/* dst &= bits (n rows); bits may be NULL (all valid). */
void df__bits_and(uint8_t *dst, const uint8_t *bits, int64_t n);
static inline bool df__bit(const uint8_t *bits, int64_t i)
{
    return !bits || (bits[i >> 3] >> (i & 7)) & 1;
}
static inline void df__bit_clear(uint8_t *bits, int64_t i)
{
    bits[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}
static inline const void *df__vec_values(const struct df__vec *v)
{
    return (const char *)v->col->values + (size_t)v->off * df_type_width(v->col->type);
}

int df__eval_arith(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
int df__eval_cmp(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
int df__eval_logic(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
int df__eval_cast(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
int df__eval_func(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
/* current_config_id(): the ID in the task's options, NULL where none is set. */
int df__eval_config_id(struct df__ctx *c, struct df__vec *out);
int df__eval_string_func(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
int df__eval_concat(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
int df__eval_fail_if(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
int df__eval_special(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
int df__eval_like(const struct df__node *nd, struct df__ctx *c, struct df__vec *out);
/* Kernels over evaluated vectors (a and b are borrowed; *out is new). */
int df__cmp_vecs(struct df__ctx *c, int op, const struct df__vec *a, const struct df__vec *b,
                 struct df__vec *out);
int df__logic_vecs(struct df__ctx *c, bool is_or, const struct df__vec *a, const struct df__vec *b,
                   struct df__vec *out);
int df__not_vec(struct df__ctx *c, const struct df__vec *a, struct df__vec *out);
/* Whether a cast between the two types exists. */
bool df__cast_ok(df_type from, df_type to);
int df__oom(struct df__ctx *c);

#endif
