/* engine_agg_mkey: grouping by two or three keys of few values each (q2's
 * id1, id2; q9's id2, id4): each key gets its own small table of dense ids
 * (the single-key fast paths, in cache), the ids are packed into one int64
 * per row, and the groups are those of the packed keys. The packed key is a
 * bijection of the key tuple and group ids come in order of first sight,
 * so the groups, their ids and their representative rows are exactly those
 * of one table over all the keys, which encodes and compares a record of
 * every key per row. A key that outgrows its ids hands the groups so far
 * to such a table, in order, and the grouping goes on there. */
#include "engine_ops_int.h"

#include <stdlib.h>
#include <string.h>

bool df__mkey_suits(int nkeys, int64_t nrows)
{
    return nkeys >= 2 && nkeys <= DF__MKEY_MAX && nrows > 0;
}

int df__mkey_init(struct df__mkey *mk, const struct df_column *const *kcols, int nkeys,
                  int64_t morsel, struct df_exec *ex, struct fr_error *err)
{
    memset(mk, 0, sizeof(*mk));
    mk->nkeys = nkeys;
    mk->ex = ex;
    for (int j = 0; j < nkeys; j++) {
        df_type t = kcols[j]->type;
        mk->kcols[j] = kcols[j];
        df__gtab_init(&mk->col[j], &t, 1, true, ex);
        df__gtab_add_source(&mk->col[j], &mk->kcols[j]);
    }
    df_type i64 = DF_TYPE_INT64;
    df__gtab_init(&mk->packed, &i64, 1, true, ex);
    /* a morsel's packed keys, rows [0, m): the int64 table keeps each
     * group's key (kv), so it never reads an earlier morsel's again */
    mk->pcol = df_column_new(DF_TYPE_INT64, 0);
    mk->psrc[0] = mk->pcol;
    df__gtab_add_source(&mk->packed, mk->psrc);
    mk->ids = fr_try_malloc(sizeof(int64_t) * (size_t)morsel);
    mk->h = fr_try_malloc(sizeof(uint64_t) * (size_t)morsel);
    mk->miss = fr_try_malloc(sizeof(int64_t) * (size_t)morsel);
    void *pv = fr_try_malloc(sizeof(int64_t) * (size_t)morsel);
    if (pv) {
        free(mk->pcol->values);
        mk->pcol->values = pv;
        mk->pcol->length = mk->pcol->capacity = morsel;
    }
    mk->charged = morsel * 32;
    int rc = ex ? df_exec_charge(ex, mk->charged, err) : FR_OK;
    if (rc == FR_OK && (!pv || !mk->ids || !mk->h || !mk->miss))
        rc = fr_error_set(err, FR_ETOOLARGE, "out of memory for a morsel of %lld rows",
                          (long long)morsel);
    return rc;
}

void df__mkey_cleanup(struct df__mkey *mk)
{
    for (int j = 0; j < mk->nkeys; j++)
        df__gtab_cleanup(&mk->col[j]);
    df__gtab_cleanup(&mk->packed);
    df_column_unref(mk->pcol);
    free(mk->ids);
    free(mk->h);
    free(mk->miss);
    free(mk->dense);
    if (mk->ex && mk->charged)
        df_exec_charge(mk->ex, -mk->charged, NULL);
    memset(mk, 0, sizeof(*mk));
}

/* The direct map's index of packed key p: key j's id in dbits[j] bits. */
static inline size_t dense_at(const struct df__mkey *mk, int64_t p)
{
    size_t x = (size_t)(p & (DF__MKEY_IDS - 1));
    int sh = mk->dbits[0];
    for (int j = 1; j < mk->nkeys; j++) {
        x |= (size_t)((p >> (DF__MKEY_BITS * j)) & (DF__MKEY_IDS - 1)) << sh;
        sh += mk->dbits[j];
    }
    return x;
}

/* Makes the direct map hold every key's ids so far (rebuilt wider from the
 * packed table's groups when one outgrew its bits), or drops it for good
 * when they would need more than DF__MKEY_DENSE_BITS bits in all. */
static int dense_fit(struct df__mkey *mk, struct fr_error *err)
{
    bool fits = mk->dense != NULL;
    for (int j = 0; j < mk->nkeys; j++)
        fits &= mk->col[j].ngroups <= ((int64_t)1 << mk->dbits[j]);
    if (fits || mk->dense_off)
        return FR_OK;
    int bits[DF__MKEY_MAX], total = 0;
    for (int j = 0; j < mk->nkeys; j++) {
        bits[j] = 4;
        while (((int64_t)1 << bits[j]) < mk->col[j].ngroups)
            bits[j]++;
        total += bits[j];
    }
    int64_t old = mk->dense
                      ? (int64_t)sizeof(int32_t)
                            << (mk->dbits[0] + mk->dbits[1] + (mk->nkeys > 2 ? mk->dbits[2] : 0))
                      : 0;
    free(mk->dense);
    mk->dense = NULL;
    if (old && mk->ex)
        df_exec_charge(mk->ex, -old, NULL);
    mk->charged -= old;
    if (total > DF__MKEY_DENSE_BITS) {
        mk->dense_off = true;
        return FR_OK;
    }
    int64_t bytes = (int64_t)sizeof(int32_t) << total;
    int rc = mk->ex ? df_exec_charge(mk->ex, bytes, err) : FR_OK;
    if (rc != FR_OK)
        return rc;
    mk->charged += bytes;
    mk->dense = fr_try_malloc((size_t)bytes);
    if (!mk->dense)
        return fr_error_set(err, FR_ETOOLARGE, "out of memory for a map of %lld bytes",
                            (long long)bytes);
    memset(mk->dense, 0, (size_t)bytes);
    memcpy(mk->dbits, bits, sizeof(bits));
    for (int64_t g = 0; g < mk->packed.ngroups; g++)
        mk->dense[dense_at(mk, mk->packed.kv[g])] = (int32_t)(g + 1);
    return FR_OK;
}

/* Rows [0, m) of the morsel's packed keys through the direct map: the
 * groups seen already in one load each; the others (new groups, or a key
 * seen before the map held it) through the packed table, then into the
 * map. */
static int dense_group(struct df__mkey *mk, int64_t start, int64_t m, uint64_t *hashes,
                       int64_t *gids, struct fr_error *err)
{
    const int64_t *packed = (const int64_t *)mk->pcol->values;
    const int32_t *dense = mk->dense;
    int64_t nmiss = 0;
    for (int64_t i = 0; i < m; i++) {
        int32_t g = dense[dense_at(mk, packed[i])];
        gids[i] = (int64_t)g - 1;
        mk->miss[nmiss] = i;
        nmiss += g == 0;
    }
    if (nmiss == 0)
        return FR_OK;
    df__hash_columns(mk->psrc, 1, 0, m, hashes);
    for (int64_t k = 0; k < nmiss; k++)
        mk->h[k] = hashes[mk->miss[k]];
    int64_t before = mk->packed.ngroups;
    int rc = df__gtab_insert(&mk->packed, 0, mk->miss, 0, nmiss, mk->h, mk->ids, err);
    if (rc != FR_OK)
        return rc;
    if (mk->packed.ngroups >= INT32_MAX)
        return fr_error_set(err, FR_EINTERNAL, "a direct map of %lld groups",
                            (long long)mk->packed.ngroups);
    for (int64_t k = 0; k < nmiss; k++) {
        gids[mk->miss[k]] = mk->ids[k];
        mk->dense[dense_at(mk, packed[mk->miss[k]])] = (int32_t)(mk->ids[k] + 1);
    }
    for (int64_t g = before; g < mk->packed.ngroups; g++)
        mk->packed.rep_row[g] += start; /* a row of the morsel -> of the input */
    return FR_OK;
}

int df__mkey_group(struct df__mkey *mk, int64_t start, int64_t m, uint64_t *hashes, int64_t *gids,
                   bool *outgrown, struct fr_error *err)
{
    int64_t *packed = (int64_t *)mk->pcol->values;
    *outgrown = false;
    if (m > mk->pcol->length)
        return fr_error_set(err, FR_EINTERNAL, "a morsel of %lld rows past its %lld", (long long)m,
                            (long long)mk->pcol->length);
    for (int j = 0; j < mk->nkeys; j++) {
        df__hash_columns(&mk->kcols[j], 1, start, m, mk->h);
        int rc = df__gtab_insert(&mk->col[j], 0, NULL, start, m, mk->h, mk->ids, err);
        if (rc != FR_OK)
            return rc;
        if (mk->col[j].ngroups > DF__MKEY_IDS) {
            *outgrown = true; /* the caller goes on with one table over every key */
            return FR_OK;
        }
        const int shift = DF__MKEY_BITS * j;
        if (j == 0)
            for (int64_t i = 0; i < m; i++)
                packed[i] = mk->ids[i];
        else
            for (int64_t i = 0; i < m; i++)
                packed[i] |= mk->ids[i] << shift;
    }
    int rc = dense_fit(mk, err);
    if (rc != FR_OK)
        return rc;
    if (mk->dense)
        return dense_group(mk, start, m, hashes, gids, err);
    df__hash_columns(mk->psrc, 1, 0, m, hashes);
    int64_t before = mk->packed.ngroups;
    rc = df__gtab_insert(&mk->packed, 0, NULL, 0, m, hashes, gids, err);
    for (int64_t g = before; rc == FR_OK && g < mk->packed.ngroups; g++)
        mk->packed.rep_row[g] += start; /* a row of the morsel -> of the input */
    return rc;
}

int df__mkey_to_table(struct df__mkey *mk, struct df__gtab *gt, struct fr_error *err)
{
    const struct df__gtab *p = &mk->packed;
    int64_t n = p->ngroups;
    struct df_column *keys[DF__MKEY_MAX] = {NULL};
    uint64_t *h = fr_try_malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    int64_t *ids = fr_try_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    int rc = h && ids ? FR_OK
                      : fr_error_set(err, FR_ETOOLARGE, "out of memory regrouping %lld groups",
                                     (long long)n);
    for (int j = 0; rc == FR_OK && j < mk->nkeys; j++)
        keys[j] = df_column_take(mk->kcols[j], p->rep_row, n);
    if (rc == FR_OK) {
        /* the hash of a key is that of its values, wherever they are */
        df__hash_columns((const struct df_column *const *)keys, mk->nkeys, 0, n, h);
        rc = df__gtab_insert(gt, 0, p->rep_row, 0, n, h, ids, err);
    }
    if (rc == FR_OK && gt->ngroups != n)
        rc = fr_error_set(err, FR_EINTERNAL, "regrouping gave %lld groups for %lld",
                          (long long)gt->ngroups, (long long)n);
    for (int64_t g = 0; rc == FR_OK && g < n; g++)
        if (ids[g] != g)
            rc = fr_error_set(err, FR_EINTERNAL, "regrouping gave group %lld for %lld",
                              (long long)ids[g], (long long)g);
    for (int j = 0; j < mk->nkeys; j++)
        df_column_unref(keys[j]);
    free(h);
    free(ids);
    return rc;
}
