/* config_frozen: the immutable snapshot a runner is parametrized by, with its
 * canonical bytes and content ID, shared by atomic reference count. Bytes that
 * come back from a store are checked against their ID before anything trusts
 * them (I3). */
#include "config_int.h"

#include <stdlib.h>
#include <string.h>

struct cfg_frozen *cfg_freeze(const struct cfg *c)
{
    struct cfg_frozen *f = fr_xcalloc(1, sizeof(*f));
    atomic_init(&f->refcount, 1);
    cfg_copy(&f->values, c);
    cfg_canonical(&f->values, &f->canonical, &f->canonical_len);
    fr_sha256_id(f->canonical, f->canonical_len, f->id, sizeof(f->id));
    return f;
}

int cfg_frozen_from_bytes(const char *data, size_t len, const char *expected_id,
                          struct cfg_frozen **out, struct fr_error *err)
{
    int result = FR_EDATA;
    struct cfg values;
    struct cfg_frozen *f = NULL;
    struct fr_error inner;
    char actual[80];
    bool have_values = false;
    *out = NULL;
    fr_error_init(&inner);
    fr_sha256_id(data, len, actual, sizeof(actual));
    if (!expected_id || strcmp(actual, expected_id) != 0) {
        fr_error_set(err, FR_EDATA, "config-integrity: the bytes hash to %s, not to %s", actual,
                     expected_id ? expected_id : "(no ID)");
        goto out;
    }
    if (cfg_from_bytes(data, len, false, &values, &inner) != FR_OK) {
        fr_error_set(err, FR_EDATA, "config-integrity: %s has bytes that are not a config: %s",
                     expected_id, inner.message);
        goto out;
    }
    have_values = true;
    f = cfg_freeze(&values);
    /* The ID is only a function of the values (I5) if the bytes were canonical. */
    if (f->canonical_len != len || memcmp(f->canonical, data, len) != 0) {
        fr_error_set(err, FR_EDATA,
                     "config-integrity: the bytes of %s are not in canonical encoding",
                     expected_id);
        goto out;
    }
    *out = f;
    f = NULL;
    result = FR_OK;
out:
    if (have_values)
        cfg_cleanup(&values);
    cfg_frozen_unref(f);
    return result;
}

struct cfg_frozen *cfg_frozen_ref(struct cfg_frozen *f)
{
    atomic_fetch_add_explicit(&f->refcount, 1, memory_order_relaxed);
    return f;
}

void cfg_frozen_unref(struct cfg_frozen *f)
{
    if (!f)
        return;
    /* acq_rel: the last owner must see every other owner's writes before freeing. */
    if (atomic_fetch_sub_explicit(&f->refcount, 1, memory_order_acq_rel) != 1)
        return;
    cfg_cleanup(&f->values);
    free(f->canonical);
    free(f);
}
