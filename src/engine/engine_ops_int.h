/* engine_ops_int: internal helpers shared by the operator files (aggregation,
 * join, sort, partitioning): key hashing, key equality, a grouping hash table
 * and the sort order of values. Not part of the engine's face: only
 * src/engine/engine_*.c include it. Names carry the internal df__ prefix. */
#ifndef FRAMED_ENGINE_OPS_INT_H
#define FRAMED_ENGINE_OPS_INT_H

#include "engine.h"

#include <string.h>

/* Default rows per morsel when the options give none. */
#define DF__MORSEL_DEFAULT 65536

int64_t df__morsel_rows(const struct df_exec *ex);
/* new (free()): a large scratch buffer backed by huge pages where the
 * kernel allows (first touch of 4 KiB pages is slow); NULL on failure. */
void *df__alloc_big(size_t bytes);
/* Aggregation partials (engine_agg.c): whether grouping n rows whose first
 * m hold ngroups distinct keys shrinks them too little to pay (the rows pass
 * through as their own groups); whether a partial's rows passed through
 * (may repeat a group), and marking one so. */
bool df__agg_pass_pays(int64_t ngroups, int64_t m, int64_t n);
bool df__agg_passed(const struct df_table *part, int nkeys);
void df__agg_mark_passed(struct df_table *part, int nkeys);
/* df_agg_partial_split (engine_agg_radix.c) with the split taken from
 * min_groups expected groups (tests split smaller inputs than the
 * default's); and the parts per bucket its rows are split into before
 * grouping, or 0 when one table groups them (fewer groups, few rows, rows
 * that pass through ungrouped, maintain_order). */
int df__agg_partial_split_at(const struct df_table *in, const int *keys, int nkeys,
                             const struct df_agg_spec *specs, int nspecs, struct df_exec *ex,
                             int nbuckets, double min_groups, struct df_table **outs,
                             struct fr_error *err);
int df__agg_radix_parts(const struct df_table *in, const int *keys, int nkeys, int nbuckets,
                        double min_groups, struct df_exec *ex);
/* new: an empty column of type t with room for exactly len rows (and bytes
 * of string data plus DF_STRING_PAD; a zeroed validity when asked), its
 * buffers from df__alloc_big; NULL when out of memory. */
struct df_column *df__column_sized(df_type t, int64_t len, int64_t bytes, bool validity);
/* Resizes *p from old_n to new_n elements of elem bytes, moving large
 * arrays to huge pages (a realloc would grow them in 4 KiB pages); with
 * zero, the new elements are zeroed. FR_ETOOLARGE (and *p untouched) when
 * out of memory. */
int df__grow_big(void **p, size_t elem, int64_t old_n, int64_t new_n, bool zero);

/* Unaligned loads and short-string equality without a libc call. */
static inline uint64_t df__load64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint32_t df__load32(const char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* Equality of two n-byte strings without a libc call for short keys (the
 * common case in group-by): overlapping loads stay inside both strings. */
static inline bool df__bytes_equal(const char *a, const char *b, int64_t n)
{
    if (n >= 8 && n <= 16)
        return df__load64(a) == df__load64(b) && df__load64(a + n - 8) == df__load64(b + n - 8);
    if (n >= 4 && n < 8)
        return df__load32(a) == df__load32(b) && df__load32(a + n - 4) == df__load32(b + n - 4);
    if (n < 4) {
        for (int64_t i = 0; i < n; i++)
            if (a[i] != b[i])
                return false;
        return true;
    }
    return memcmp(a, b, (size_t)n) == 0;
}

/* ---- hashing and equality (engine_hash.c) ------------------------------ */

/* Hashes rows [start, start+n) of the key columns into out[0..n). The hash
 * of a float64 holding an integral value equals that of the same int64, so
 * numerically equal keys of the two types hash equally; nulls hash to a
 * constant. cols is borrowed. */
void df__hash_columns(const struct df_column *const *cols, int ncols, int64_t start, int64_t n,
                      uint64_t *out);
/* True when row ra of a equals row rb of b on every key; null equals null
 * here (callers that want SQL join semantics drop null keys first); int64
 * and float64 compare numerically; NaN equals NaN. */
bool df__keys_equal(const struct df_column *const *a, int64_t ra, const struct df_column *const *b,
                    int64_t rb, int ncols);
/* True when any key of row r is null. */
bool df__keys_have_null(const struct df_column *const *cols, int ncols, int64_t r);

/* ---- the grouping table (engine_hash.c) ---------------------------------
 * Open addressing on the 64-bit key hash (linear probing, a 32-bit tag and
 * a group id per slot), dense group ids in order of first insertion. Every
 * group remembers a representative row (source, row) so keys are never
 * copied; sources are arrays of key columns borrowed for the table's life.
 * Fast paths for one int64/timestamp key and for one string key. Memory is
 * charged to ex. */
/* A string key as the table keeps it: up to 12 bytes inline (so probes of
 * short keys touch one compact array), else a pointer borrowed from a
 * source in bytes 4..11 of b. */
struct df__skey {
    uint32_t n;
    char b[12];
};

struct df__gtab {
    int nkeys;
    int mode;
    uint64_t *slots;
    uint64_t mask;
    int64_t ngroups;
    int64_t gcap;
    uint64_t *ghash;        /* per group: full hash (for rehash) */
    int32_t *rep_src;       /* per group: source of its representative row */
    int64_t *rep_row;       /* per group: representative row */
    int64_t *kv;            /* int64 mode: the key */
    struct df__skey *skeys; /* string mode: the key, inline when short */
    int64_t null_gid;       /* fast modes: the group of the null key, or -1 */
    /* row mode (several keys, or one of another type): every group keeps
     * its keys as a fixed-width record - a null mask, then 8 bytes per
     * fixed-width key (floats normalized) or a df__skey per string - so a
     * probe compares one compact record instead of reading the sources */
    int recsize;
    bool has_str;
    int32_t *koff; /* byte offset of key k in a record */
    df_type *ktype;
    uint8_t *recs; /* per group */
    uint8_t *rbuf; /* scratch: records of a chunk of probe rows */
    const struct df_column *const **srcs;
    int nsrcs;
    struct df_exec *ex;
    int64_t charged;
};

/* types: the key types of every source (all sources must match for the fast
 * paths; pass allow_fast = false when they may differ, as in joins). */
void df__gtab_init(struct df__gtab *gt, const df_type *types, int nkeys, bool allow_fast,
                   struct df_exec *ex);
void df__gtab_cleanup(struct df__gtab *gt);
/* Makes room for ngroups groups up front (no growth, and no rehash, until
 * then). FR_EMEMLIMIT or FR_ETOOLARGE when that much cannot be had. */
int df__gtab_reserve(struct df__gtab *gt, int64_t ngroups, struct fr_error *err);
/* Registers an array of nkeys borrowed columns; returns its source id. */
int df__gtab_add_source(struct df__gtab *gt, const struct df_column *const *cols);
/* For rows[i] (or start+i when rows is NULL), i < n, whose hashes are
 * hashes[i]: the group id into gids[i], adding new groups. FR_EMEMLIMIT or
 * FR_ETOOLARGE when the table cannot grow. */
int df__gtab_insert(struct df__gtab *gt, int src, const int64_t *rows, int64_t start, int64_t n,
                    const uint64_t *hashes, int64_t *gids, struct fr_error *err);
/* Like insert without adding: gids[i] is -1 for a key not in the table. */
void df__gtab_lookup(const struct df__gtab *gt, int src, const int64_t *rows, int64_t start,
                     int64_t n, const uint64_t *hashes, int64_t *gids);

/* ---- grouping by two or three keys of few values (engine_agg_mkey.c) ----
 * Each key's own table gives it dense ids of DF__MKEY_BITS bits, packed into
 * one int64 per row; `packed` holds the groups (ids, rep_row as one table
 * over every key would). */
#define DF__MKEY_MAX 3
#define DF__MKEY_BITS 16
#define DF__MKEY_IDS ((int64_t)1 << DF__MKEY_BITS)
#define DF__MKEY_DENSE_BITS 18 /* 2^18 int32 entries: 1 MiB, in L2 or near it */
struct df__mkey {
    int nkeys;
    const struct df_column *kcols[DF__MKEY_MAX]; /* borrowed */
    struct df__gtab col[DF__MKEY_MAX];           /* each key's dense ids */
    struct df__gtab packed;                      /* the groups */
    struct df_column *pcol;                      /* a morsel's packed keys */
    const struct df_column *psrc[1];
    int64_t *ids; /* scratch: a morsel's ids of one key */
    uint64_t *h;  /* scratch: a morsel's hashes of one key */
    /* A direct map from the keys' ids to group id + 1 (0: not seen), key j
     * taking dbits[j] bits of the index, while they total at most
     * DF__MKEY_DENSE_BITS: a row's group is one load, no hash or probe.
     * Rebuilt wider as a key gains values; dropped for good past the bound
     * (the packed table alone then). */
    int32_t *dense;
    int dbits[DF__MKEY_MAX];
    bool dense_off;
    int64_t *miss; /* scratch: a morsel's rows not in the map yet */
    struct df_exec *ex;
    int64_t charged;
};
/* Whether these keys may be grouped this way (two or three keys). */
bool df__mkey_suits(int nkeys, int64_t nrows);
/* For morsels of at most `morsel` rows; FR_EMEMLIMIT or FR_ETOOLARGE
 * (clean up either way). */
int df__mkey_init(struct df__mkey *mk, const struct df_column *const *kcols, int nkeys,
                  int64_t morsel, struct df_exec *ex, struct fr_error *err);
void df__mkey_cleanup(struct df__mkey *mk);
/* Group ids of rows [start, start+m) into gids (hashes: scratch of m). Sets
 * *outgrown, assigning nothing, when a key has more than DF__MKEY_IDS
 * values: the caller then hands the groups to one table over every key
 * (df__mkey_to_table) and groups the morsel there. */
int df__mkey_group(struct df__mkey *mk, int64_t start, int64_t m, uint64_t *hashes, int64_t *gids,
                   bool *outgrown, struct fr_error *err);
/* Inserts the groups so far into gt (an empty table over the same keys and
 * source), in order, so they keep their ids and representative rows. */
int df__mkey_to_table(struct df__mkey *mk, struct df__gtab *gt, struct fr_error *err);

/* ---- grouping by one int64 key of a narrow range (engine_agg_imap.c) ----
 * A direct map from key - lo to group id + 1, in front of the key's table
 * (which stays the groups' record). */
#define DF__IMAP_BITS 18 /* at most 2^18 int32 entries: 1 MiB */
struct df__imap {
    int32_t *map; /* NULL: not used (too wide, no memory, or dropped) */
    int64_t lo;
    uint64_t size;
    int64_t *miss; /* scratch: a morsel's rows (absolute) not found in the map */
    int64_t *ids;  /* scratch: their group ids */
    struct df_exec *ex;
    int64_t charged;
};
/* An int64 or timestamp key without nulls. */
bool df__imap_suits(const struct df_column *k);
/* The window from rows [start, start+m) of k, for morsels of at most
 * `morsel` rows; im->map stays NULL when their keys span more than
 * 2^(DF__IMAP_BITS-1) or memory is short. Clean up either way. */
int df__imap_init(struct df__imap *im, const struct df_column *k, int64_t start, int64_t m,
                  int64_t morsel, struct df_exec *ex, struct fr_error *err);
void df__imap_cleanup(struct df__imap *im);
/* Group ids of rows [start, start+m) of k (source 0 of gt, a one-key table)
 * into gids, as df__gtab_insert would give them; hashes: scratch of m. May
 * drop the map (im->map NULL after): the caller goes on with gt alone. */
int df__imap_group(struct df__imap *im, struct df__gtab *gt, const struct df_column *k,
                   int64_t start, int64_t m, uint64_t *hashes, int64_t *gids, struct fr_error *err);

/* ---- value order (engine_sort.c) ---------------------------------------- */

/* Compares row ra of a with row rb of b (same type) in ascending order:
 * strings by bytes then length, floats with NaN above every number, -0.0
 * equal to 0.0. Nulls are not handled here. */
int df__value_cmp(const struct df_column *a, int64_t ra, const struct df_column *b, int64_t rb);
/* Compares rows under sort keys: key k's column is acols[k] for a, bcols[k]
 * for b (keys[k].col is not used); nulls per keys[k].nulls_first. */
int df__row_cmp(const struct df_column *const *acols, int64_t ra,
                const struct df_column *const *bcols, int64_t rb, const struct df_sort_key *keys,
                int nkeys);

/* Order-preserving code of a double: -0.0 as 0.0, every NaN above +inf. */
static inline uint64_t df__double_key(double f)
{
    uint64_t bits;
    if (f != f)
        return UINT64_MAX;
    if (f == 0)
        f = 0.0;
    __builtin_memcpy(&bits, &f, sizeof(bits));
    return (bits >> 63) ? ~bits : bits | (1ull << 63);
}
static inline double df__double_of_key(uint64_t k)
{
    double f;
    uint64_t bits = (k == UINT64_MAX) ? 0x7ff8000000000000ull : (k >> 63) ? k & ~(1ull << 63) : ~k;
    __builtin_memcpy(&f, &bits, sizeof(f));
    return f;
}

/* ---- aggregation state (engine_agg_state.c, engine_agg_emit.c) ----------
 * One accumulator per aggregate, its arrays indexed by group id. */
struct df__vlist { /* (group, value) pairs for median and count_distinct */
    int64_t *g;
    uint64_t *v;     /* a double's order key, or an integer */
    const char **sp; /* string values, borrowed from an input or a partial */
    int64_t *sn;
    int64_t n, cap;
    int64_t compact_at; /* count_distinct: dedupe when n reaches this */
};

struct df__agg_acc {
    enum df_agg_func func;
    df_type type; /* the argument's type */
    int64_t *n;   /* rows (count(*)) or non-null values seen; not for stddev, corr */
    /* sum over morsels without nulls: n is not counted (a sum's n only says
     * whether a group has a value), groups [0, implied) have one; n is set
     * for them before an emit (df__agg_settle), and counted from the first
     * morsel with nulls on (counted) */
    int64_t implied;
    bool counted;
    int64_t *i;      /* min/max/first of an integer-like type */
    __int128 *wide;  /* the exact sum of an integer sum or mean (df_agg_sum_fits) */
    double *d;       /* float sum/min/max/first; mean */
    double *mom;     /* stddev, corr: each group's Welford state together (DF__MOM_*) */
    const char **sp; /* string min/max/first, borrowed */
    int64_t *sn;
    struct df__vlist vl;
    struct df__vlist seg; /* median, final phase: runs of a partial's blob (g, sp, sn values) */
};

/* stddev and corr keep a group's Welford state in one place, df__mom_stride
 * doubles: [0] the count (a double, exact: partials' counts are checked to
 * stay below 2^53), [1 + j] the mean of dimension j, [1 + dims + j] its
 * sum of squared deviations, [5] (corr) the co-moment; corr's 8 doubles are
 * one cache line, so a row's update touches one. */
#define DF__MOM_MAX_N ((int64_t)1 << 53)
static inline int df__mom_stride(enum df_agg_func f)
{
    return f == DF_AGG_CORR ? 8 : 4;
}
static inline double *df__mom_at(const struct df__agg_acc *c, int64_t g)
{
    return c->mom + (size_t)g * (size_t)df__mom_stride(c->func);
}

struct df__agg {
    int nspecs;
    struct df__agg_acc *acc;
    int64_t cap;        /* groups the arrays have room for */
    int64_t *scratch_i; /* a morsel of values converted to int64 */
    double *scratch_d;  /* ... or to double */
    int64_t scratch_cap;
    struct df_exec *ex;
    int64_t charged;
    int64_t rows_hint; /* partial phase: the input's rows (median sizes its list once) */
};

/* types[k] is spec k's argument type (ignored for count(*)). */
void df__agg_init(struct df__agg *a, const struct df_agg_spec *specs, int nspecs,
                  const df_type *types, struct df_exec *ex);
void df__agg_cleanup(struct df__agg *a);
/* Makes room for ngroups groups (new ones zeroed). */
int df__agg_reserve(struct df__agg *a, int64_t ngroups, struct fr_error *err);
/* Partial phase: accumulates rows [start, start+m) of x (and y for corr)
 * into the groups gids[0..m). x is NULL for count(*). */
int df__agg_update(struct df__agg *a, int k, const int64_t *gids, const struct df_column *x,
                   const struct df_column *y, int64_t start, int64_t m, struct fr_error *err);
/* Final phase: merges rows [start, start+m) of spec k's state columns
 * (cols[0..df__agg_state_ncols)) of a partial into the groups gids. */
int df__agg_merge(struct df__agg *a, int k, const int64_t *gids, struct df_column *const *cols,
                  int64_t start, int64_t m, struct fr_error *err);
int df__agg_state_ncols(enum df_agg_func f);
/* Sets n to 1 for the groups of [0, ngroups) a sum has implied values for. */
void df__agg_settle(struct df__agg *a, int64_t ngroups);
/* Appends spec k's state columns (partial) or result column (final) for
 * groups [0, ngroups) to t. */
int df__agg_emit_partial(struct df__agg *a, int64_t ngroups, struct df_table *t,
                         struct fr_error *err);
int df__agg_emit_final(struct df__agg *a, int64_t ngroups, const char *const *names,
                       struct df_table *t, struct fr_error *err);
/* Value lists (engine_agg_values.c). */
int df__vlist_reserve(struct df__agg *a, struct df__vlist *vl, int64_t extra, bool strings,
                      struct fr_error *err);
int df__vlist_push(struct df__agg *a, struct df__vlist *vl, int64_t g, uint64_t v, const char *sp,
                   int64_t sn, bool strings, struct fr_error *err);
int df__vlist_compact(struct df__agg *a, struct df__vlist *vl, bool strings, struct fr_error *err);
/* new: a permutation of the list's entries ordered by group (stable), and
 * offs[0..ngroups] the start of each group's run; NULL out of memory. */
int64_t *df__vlist_order(const struct df__vlist *vl, int64_t ngroups, int64_t *offs);
/* Median: the partial's state column (each group's values packed), the
 * final phase's merge of a partial's states (borrowing its blobs, which
 * must outlive the result) and its results appended to col. */
int df__median_blob(struct df__agg_acc *c, int64_t ngroups, struct df_column **out,
                    struct fr_error *err);
int df__median_merge(struct df__agg *a, struct df__agg_acc *c, const int64_t *gids,
                     const struct df_column *blob, int64_t start, int64_t m, struct fr_error *err);
int df__median_result(struct df__agg *a, struct df__agg_acc *c, int64_t ngroups,
                      struct df_column *col, struct fr_error *err);
int df__agg_charge(struct df__agg *a, int64_t bytes, struct fr_error *err);

#endif
