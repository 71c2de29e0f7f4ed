/* engine_sort: stable multi-key sorting and the k-way merge of sorted runs.
 * A sort computes a permutation: the first key is turned into an
 * order-preserving 64-bit code and LSD-radix sorted (stable), then runs of
 * equal codes are finished by a stable merge sort on the full comparator;
 * the rows are gathered once at the end with df_table_take. */
#include "engine_ops_int.h"

#include <stdlib.h>
#include <string.h>

int df__value_cmp(const struct df_column *a, int64_t ra, const struct df_column *b, int64_t rb)
{
    switch (a->type) {
    case DF_TYPE_STRING: {
        int64_t na, nb;
        const char *pa = df_column_string(a, ra, &na), *pb = df_column_string(b, rb, &nb);
        int64_t n = na < nb ? na : nb;
        int c = n ? memcmp(pa, pb, (size_t)n) : 0;
        if (c)
            return c < 0 ? -1 : 1;
        return (na > nb) - (na < nb);
    }
    case DF_TYPE_FLOAT64: {
        uint64_t x = df__double_key(df_column_float64(a, ra));
        uint64_t y = df__double_key(df_column_float64(b, rb));
        return (x > y) - (x < y);
    }
    case DF_TYPE_BOOL:
        return (int)df_column_bool(a, ra) - (int)df_column_bool(b, rb);
    case DF_TYPE_DATE: {
        int32_t x = df_column_int32(a, ra), y = df_column_int32(b, rb);
        return (x > y) - (x < y);
    }
    default: {
        int64_t x = df_column_int64(a, ra), y = df_column_int64(b, rb);
        return (x > y) - (x < y);
    }
    }
}

int df__row_cmp(const struct df_column *const *acols, int64_t ra,
                const struct df_column *const *bcols, int64_t rb, const struct df_sort_key *keys,
                int nkeys)
{
    for (int k = 0; k < nkeys; k++) {
        bool va = df_column_is_valid(acols[k], ra), vb = df_column_is_valid(bcols[k], rb);
        if (!va || !vb) {
            if (va == vb)
                continue;
            return (!va == keys[k].nulls_first) ? -1 : 1;
        }
        int c = df__value_cmp(acols[k], ra, bcols[k], rb);
        if (c)
            return keys[k].desc ? -c : c;
    }
    return 0;
}

/* ---- merge sort of row indices on the comparator ------------------------ */

struct sorter {
    const struct df_column *const *cols; /* key k's column */
    const struct df_sort_key *keys;
    int nkeys;
};

static inline int cmp_rows(const struct sorter *s, int64_t a, int64_t b)
{
    return df__row_cmp(s->cols, a, s->cols, b, s->keys, s->nkeys);
}

/* Stable: sorts v[0..n) using tmp[0..n). */
static void merge_sort(const struct sorter *s, int64_t *v, int64_t *tmp, int64_t n)
{
    if (n <= 16) {
        for (int64_t i = 1; i < n; i++) {
            int64_t x = v[i], j = i;
            for (; j > 0 && cmp_rows(s, v[j - 1], x) > 0; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    int64_t h = n / 2;
    merge_sort(s, v, tmp, h);
    merge_sort(s, v + h, tmp, n - h);
    if (cmp_rows(s, v[h - 1], v[h]) <= 0)
        return; /* already in order */
    memcpy(tmp, v, sizeof(int64_t) * (size_t)h);
    int64_t i = 0, j = h, o = 0;
    while (i < h && j < n)
        v[o++] = cmp_rows(s, v[j], tmp[i]) < 0 ? v[j++] : tmp[i++];
    while (i < h)
        v[o++] = tmp[i++];
}

/* ---- normalized first key and radix sort -------------------------------- */

struct kv {
    uint64_t key;
    int64_t row;
};

/* The order code of a non-null value of c at row r (ascending). For strings
 * only the first 8 bytes: equal codes are then compared in full. */
static inline uint64_t order_code(const struct df_column *c, int64_t r)
{
    switch (c->type) {
    case DF_TYPE_STRING: {
        int64_t n;
        const char *p = df_column_string(c, r, &n);
        uint64_t k = 0;
        if (n >= 8) {
            __builtin_memcpy(&k, p, 8);
            return __builtin_bswap64(k);
        }
        for (int64_t i = 0; i < 8; i++)
            k = (k << 8) | (i < n ? (uint8_t)p[i] : 0);
        return k;
    }
    case DF_TYPE_FLOAT64:
        return df__double_key(df_column_float64(c, r));
    case DF_TYPE_BOOL:
        return df_column_bool(c, r);
    case DF_TYPE_DATE:
        return (uint64_t)(int64_t)df_column_int32(c, r) ^ (1ull << 63);
    default:
        return (uint64_t)df_column_int64(c, r) ^ (1ull << 63);
    }
}

/* Stable LSD radix sort by key, 8 bits a pass, skipping passes where every
 * element has the same byte. a and b hold n elements; the result is in *a. */
static void radix_sort(struct kv **a, struct kv **b, int64_t n)
{
    int64_t(*hist)[256] = fr_xcalloc(8, sizeof(*hist));
    for (int64_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++)
            hist[d][((*a)[i].key >> (8 * d)) & 0xff]++;
    for (int d = 0; d < 8; d++) {
        int64_t pos = 0;
        bool trivial = false;
        for (int v = 0; v < 256; v++) {
            int64_t c = hist[d][v];
            trivial |= c == n;
            hist[d][v] = pos;
            pos += c;
        }
        if (trivial)
            continue;
        const struct kv *src = *a;
        struct kv *dst = *b;
        for (int64_t i = 0; i < n; i++)
            dst[hist[d][(src[i].key >> (8 * d)) & 0xff]++] = src[i];
        *b = *a;
        *a = dst;
    }
    free(hist);
}

static inline bool kv_less(struct kv x, struct kv y)
{
    return x.key < y.key || (x.key == y.key && x.row < y.row);
}

/* Sorts v[0..n) by (key, row); rows are distinct, so the order is total and
 * an unstable algorithm gives the stable result. */
static void kv_sort_small(struct kv *v, int64_t n)
{
    while (n > 24) {
        struct kv x = v[0], y = v[n / 2], z = v[n - 1], pivot;
        if (kv_less(x, y))
            pivot = kv_less(y, z) ? y : kv_less(x, z) ? z : x;
        else
            pivot = kv_less(x, z) ? x : kv_less(y, z) ? z : y;
        int64_t i = 0, j = n - 1;
        for (;;) {
            while (kv_less(v[i], pivot))
                i++;
            while (kv_less(pivot, v[j]))
                j--;
            if (i >= j)
                break;
            struct kv t = v[i];
            v[i++] = v[j];
            v[j--] = t;
        }
        /* [0, j] <= pivot <= [j+1, n): recurse on the smaller side */
        if (j + 1 < n - j - 1) {
            kv_sort_small(v, j + 1);
            v += j + 1;
            n -= j + 1;
        } else {
            kv_sort_small(v + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    for (int64_t i = 1; i < n; i++) {
        struct kv x = v[i];
        int64_t j = i;
        for (; j > 0 && kv_less(x, v[j - 1]); j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* Scratch of a sort: two kv arrays, each position's code of the key being
 * refined, and row indices (nulls, merge sort temporary); all of n rows. */
struct sort_scratch {
    struct kv *a, *b;
    uint64_t *codes;
    int64_t *tmp;
};

/* Codes of key k's non-null rows of perm[0..n) into a (in perm order),
 * the null rows into nulls; returns how many are non-null. */
static int64_t gather_codes(const struct df_column *c, bool desc, const int64_t *perm, int64_t n,
                            struct kv *a, int64_t *nulls, int64_t *nnulls)
{
    uint64_t flip = desc ? ~0ull : 0;
    int64_t nn = 0, nl = 0;
    if (!c->validity && (c->type == DF_TYPE_INT64 || c->type == DF_TYPE_TIMESTAMP)) {
        const int64_t *v = c->values;
        for (int64_t i = 0; i < n; i++) {
            if (i + 16 < n)
                __builtin_prefetch(&v[perm[i + 16]]);
            a[i] = (struct kv){((uint64_t)v[perm[i]] ^ (1ull << 63)) ^ flip, perm[i]};
        }
        nn = n;
    } else if (!c->validity && c->type == DF_TYPE_FLOAT64) {
        const double *v = c->values;
        for (int64_t i = 0; i < n; i++) {
            if (i + 16 < n)
                __builtin_prefetch(&v[perm[i + 16]]);
            a[i] = (struct kv){df__double_key(v[perm[i]]) ^ flip, perm[i]};
        }
        nn = n;
    } else {
        for (int64_t i = 0; i < n; i++) {
            int64_t r = perm[i];
            if (df_column_is_valid(c, r))
                a[nn++] = (struct kv){order_code(c, r) ^ flip, r};
            else
                nulls[nl++] = r;
        }
    }
    *nnulls = nl;
    return nn;
}

/* Sorts perm[0..n) by keys k.. of s. On entry the rows of perm are in
 * ascending order (they tie on the keys before k and a stable sort keeps
 * ties in input order), so ordering by (code, row) is the stable order. */
static void sort_segment(const struct sorter *s, int k, int64_t *perm, uint64_t *codes, int64_t n,
                         struct sort_scratch *sc)
{
    const struct df_column *c = s->cols[k];
    struct kv *a = sc->a;
    int64_t nulls = 0;
    int64_t nn = gather_codes(c, s->keys[k].desc, perm, n, a, sc->tmp, &nulls);
    if (nn > 2048) {
        struct kv *x = sc->a, *y = sc->b;
        radix_sort(&x, &y, nn);
        a = x;
    } else {
        kv_sort_small(a, nn);
    }
    /* nulls of this key keep input order, in front or behind */
    int64_t base = s->keys[k].nulls_first ? nulls : 0, nbase = s->keys[k].nulls_first ? 0 : nn;
    if (nulls)
        memmove(perm + nbase, sc->tmp, sizeof(int64_t) * (size_t)nulls);
    for (int64_t i = 0; i < nn; i++) {
        perm[base + i] = a[i].row;
        codes[base + i] = a[i].key;
    }
    bool exact = c->type != DF_TYPE_STRING;
    bool more = k + 1 < s->nkeys;
    if (nulls > 1 && more)
        sort_segment(s, k + 1, perm + nbase, codes + nbase, nulls, sc);
    if (!more && exact)
        return;
    /* runs of equal codes: the next key, or (strings) the full comparison */
    struct sorter rest = {s->cols + k, s->keys + k, s->nkeys - k};
    for (int64_t i = base; i < base + nn;) {
        int64_t j = i + 1;
        while (j < base + nn && codes[j] == codes[i])
            j++;
        if (j - i > 1) {
            if (exact)
                sort_segment(s, k + 1, perm + i, codes + i, j - i, sc);
            else
                merge_sort(&rest, perm + i, sc->tmp, j - i);
        }
        i = j;
    }
}

/* The sorted permutation of in's rows into perm[0..nrows). */
static int sort_perm(const struct df_table *in, const struct sorter *s, int64_t *perm,
                     struct fr_error *err)
{
    int64_t n = in->nrows;
    size_t sz = (size_t)(n ? n : 1);
    struct sort_scratch sc = {
        df__alloc_big(sizeof(struct kv) * sz), df__alloc_big(sizeof(struct kv) * sz),
        df__alloc_big(sizeof(uint64_t) * sz), df__alloc_big(sizeof(int64_t) * sz)};
    int rc = FR_ETOOLARGE;
    if (!sc.a || !sc.b || !sc.codes || !sc.tmp) {
        fr_error_set(err, rc, "out of memory sorting %lld rows", (long long)n);
        goto out;
    }
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    sort_segment(s, 0, perm, sc.codes, n, &sc);
    rc = FR_OK;
out:
    fr_free_big(sc.a); /* kept for the next sort (common_mem.c) */
    fr_free_big(sc.b);
    fr_free_big(sc.codes);
    fr_free_big(sc.tmp);
    return rc;
}

static int check_keys(const struct df_table *in, const struct df_sort_key *keys, int nkeys,
                      struct fr_error *err)
{
    for (int k = 0; k < nkeys; k++)
        if (keys[k].col < 0 || keys[k].col >= in->ncols)
            return fr_error_set(err, FR_EINVAL, "sort key %d is not a column", k + 1);
    return FR_OK;
}

static int take_rows(const struct df_table *in, const int64_t *perm, struct df_table **out,
                     struct fr_error *err)
{
    struct df_table *res = df_table_take(in, perm, in->nrows);
    for (int i = 0; i < res->ncols; i++) {
        if (!df_column_ok(res->cols[i])) {
            df_table_free(res);
            return fr_error_set(err, FR_ETOOLARGE, "out of memory gathering %lld sorted rows",
                                (long long)in->nrows);
        }
    }
    *out = res;
    return FR_OK;
}

int df_sort(const struct df_table *in, const struct df_sort_key *keys, int nkeys,
            struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    int64_t n = in->nrows, charged = 0;
    const struct df_column **cols = fr_xcalloc((size_t)(nkeys + 1), sizeof(*cols));
    int64_t *perm = NULL;
    *out = NULL;
    int rc = check_keys(in, keys, nkeys, err);
    if (rc != FR_OK)
        goto out;
    charged = n * 56 + df_table_bytes(in);
    rc = ex ? df_exec_charge(ex, charged, err) : FR_OK;
    if (rc != FR_OK)
        goto out;
    perm = df__alloc_big(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!perm) {
        rc = fr_error_set(err, FR_ETOOLARGE, "out of memory sorting %lld rows", (long long)n);
        goto out;
    }
    for (int k = 0; k < nkeys; k++)
        cols[k] = in->cols[keys[k].col];
    struct sorter s = {cols, keys, nkeys};
    if (nkeys == 0) {
        for (int64_t i = 0; i < n; i++)
            perm[i] = i;
    } else {
        rc = sort_perm(in, &s, perm, err);
    }
    if (rc == FR_OK)
        rc = take_rows(in, perm, out, err);
out:
    if (ex && charged)
        df_exec_charge(ex, -charged, NULL);
    fr_free_big(perm);
    free((void *)cols);
    return rc;
}

/* ---- k-way merge ------------------------------------------------------------ */

struct merger {
    struct sorter s;
    const int64_t *pos; /* per run: current row in the concatenation */
    const int64_t *end; /* per run: end of its rows */
};

/* Heap order: smaller row first, ties by run index (stability). */
static bool heap_less(const struct merger *m, int x, int y)
{
    int c = cmp_rows(&m->s, m->pos[x], m->pos[y]);
    return c < 0 || (c == 0 && x < y);
}

static void sift_down(const struct merger *m, int *heap, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, best = i;
        if (l < n && heap_less(m, heap[l], heap[best]))
            best = l;
        if (r < n && heap_less(m, heap[r], heap[best]))
            best = r;
        if (best == i)
            return;
        int t = heap[i];
        heap[i] = heap[best];
        heap[best] = t;
        i = best;
    }
}

static void merge_runs(struct merger *m, int64_t *pos, int n, int64_t *perm)
{
    int *heap = fr_xmalloc(sizeof(int) * (size_t)(n + 1));
    int hn = 0;
    for (int i = 0; i < n; i++)
        if (pos[i] < m->end[i])
            heap[hn++] = i;
    for (int i = hn / 2 - 1; i >= 0; i--)
        sift_down(m, heap, hn, i);
    int64_t o = 0;
    while (hn > 0) {
        int run = heap[0];
        perm[o++] = pos[run]++;
        if (pos[run] >= m->end[run])
            heap[0] = heap[--hn];
        sift_down(m, heap, hn, 0);
    }
    free(heap);
}

int df_sort_merge(struct df_table *const *sorted, int n, const struct df_sort_key *keys, int nkeys,
                  struct df_exec *ex, struct df_table **out, struct fr_error *err)
{
    struct df_table *all = NULL;
    int64_t *pos = fr_xcalloc((size_t)n + 1, sizeof(int64_t));
    int64_t *end = fr_xcalloc((size_t)n + 1, sizeof(int64_t));
    const struct df_column **cols = fr_xcalloc((size_t)(nkeys + 1), sizeof(*cols));
    int64_t *perm = NULL, charged = 0;
    *out = NULL;
    int rc = df_table_concat(sorted, n, &all, err);
    if (rc == FR_OK)
        rc = check_keys(all, keys, nkeys, err);
    if (rc != FR_OK)
        goto out;
    charged = all->nrows * 8;
    rc = ex ? df_exec_charge(ex, charged, err) : FR_OK;
    perm = fr_try_malloc(sizeof(int64_t) * (size_t)(all->nrows + 1));
    if (rc == FR_OK && !perm)
        rc = fr_error_set(err, FR_ETOOLARGE, "out of memory merging %lld rows",
                          (long long)all->nrows);
    if (rc != FR_OK)
        goto out;
    for (int i = 0; i < n; i++) {
        pos[i] = i ? end[i - 1] : 0;
        end[i] = pos[i] + sorted[i]->nrows;
    }
    for (int k = 0; k < nkeys; k++)
        cols[k] = all->cols[keys[k].col];
    struct merger m = {{cols, keys, nkeys}, pos, end};
    merge_runs(&m, pos, n, perm);
    rc = take_rows(all, perm, out, err);
out:
    if (ex && charged)
        df_exec_charge(ex, -charged, NULL);
    df_table_free(all);
    free(pos);
    free(end);
    free(perm);
    free((void *)cols);
    return rc;
}
