/* engine_agg_imap: grouping by one int64 key of a narrow range (q5's id6:
 * 1e5 values between 1 and 1e5). A direct map from the key less the
 * window's low end to its group id + 1 sits in front of the key's table: a
 * row whose group is known is one load, with no hash and no probe. The
 * window is set from the first morsel's smallest and largest keys; keys
 * outside it, and groups not in the map yet, go through the table (which
 * keeps the groups, their ids in order of first sight and representative
 * rows, as without the map), then into the map. A map whose rows keep
 * falling outside it is dropped. */
#include "engine_ops_int.h"

#include <stdlib.h>
#include <string.h>

bool df__imap_suits(const struct df_column *k)
{
    return (k->type == DF_TYPE_INT64 || k->type == DF_TYPE_TIMESTAMP) && !k->validity &&
           k->length > 0;
}

static void release(struct df__imap *im)
{
    free(im->map);
    free(im->miss);
    free(im->ids);
    if (im->ex && im->charged)
        df_exec_charge(im->ex, -im->charged, NULL);
    im->map = NULL;
    im->miss = im->ids = NULL;
    im->charged = 0;
}

int df__imap_init(struct df__imap *im, const struct df_column *k, int64_t start, int64_t m,
                  int64_t morsel, struct df_exec *ex, struct fr_error *err)
{
    memset(im, 0, sizeof(*im));
    im->ex = ex;
    if (m <= 0 || morsel <= 0)
        return FR_OK;
    const int64_t *v = (const int64_t *)k->values + start;
    int64_t lo = v[0], hi = v[0];
    for (int64_t i = 1; i < m; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    uint64_t range = (uint64_t)hi - (uint64_t)lo + 1, size = 1024;
    if (range == 0 || range > ((uint64_t)1 << (DF__IMAP_BITS - 1)))
        return FR_OK; /* too wide (or the whole int64 range): the table alone */
    while (size < 2 * range)
        size *= 2;
    /* centred: room for keys a little under the first morsel's and over */
    im->lo = (int64_t)((uint64_t)lo - (size - range) / 2);
    im->size = size;
    int64_t bytes = (int64_t)(size * sizeof(int32_t)) + morsel * 16;
    int rc = ex ? df_exec_charge(ex, bytes, err) : FR_OK;
    if (rc != FR_OK)
        return rc;
    im->charged = bytes;
    im->map = fr_try_malloc(size * sizeof(int32_t));
    im->miss = fr_try_malloc(sizeof(int64_t) * (size_t)morsel);
    im->ids = fr_try_malloc(sizeof(int64_t) * (size_t)morsel);
    if (!im->map || !im->miss || !im->ids) {
        release(im); /* no memory for the map: the table alone */
        return FR_OK;
    }
    memset(im->map, 0, size * sizeof(int32_t));
    return FR_OK;
}

void df__imap_cleanup(struct df__imap *im)
{
    release(im);
    memset(im, 0, sizeof(*im));
}

int df__imap_group(struct df__imap *im, struct df__gtab *gt, const struct df_column *k,
                   int64_t start, int64_t m, uint64_t *hashes, int64_t *gids, struct fr_error *err)
{
    const int64_t *v = (const int64_t *)k->values + start;
    const int32_t *map = im->map;
    const uint64_t lo = (uint64_t)im->lo, size = im->size;
    int64_t nmiss = 0, outside = 0;
    for (int64_t i = 0; i < m; i++) {
        uint64_t d = (uint64_t)v[i] - lo;
        int32_t g = d < size ? map[d] : 0;
        gids[i] = (int64_t)g - 1;
        im->miss[nmiss] = start + i;
        nmiss += g == 0;
        outside += d >= size;
    }
    if (nmiss == 0)
        return FR_OK;
    df__hash_columns(&k, 1, start, m, hashes);
    for (int64_t j = 0; j < nmiss; j++) /* in place: miss[j] - start >= j */
        hashes[j] = hashes[im->miss[j] - start];
    int rc = df__gtab_insert(gt, 0, im->miss, 0, nmiss, hashes, im->ids, err);
    if (rc != FR_OK)
        return rc;
    if (gt->ngroups >= INT32_MAX)
        return fr_error_set(err, FR_EINTERNAL, "a direct map of %lld groups",
                            (long long)gt->ngroups);
    for (int64_t j = 0; j < nmiss; j++) {
        int64_t i = im->miss[j] - start;
        uint64_t d = (uint64_t)v[i] - lo;
        gids[i] = im->ids[j];
        if (d < size)
            im->map[d] = (int32_t)(im->ids[j] + 1);
    }
    if (outside * 4 > m) /* the keys left the window: the table alone from here on */
        release(im);
    return FR_OK;
}
