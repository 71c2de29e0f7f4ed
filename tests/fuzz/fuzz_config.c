/* fuzz_config: the config body of POST /v1/config (parsed as the HTTP edge
 * parses it, then validated and applied as a whole by cfg_apply_json) and the
 * canonical bytes a worker reads back from the store (cfg_from_bytes,
 * cfg_frozen_from_bytes). A patch that validates must encode canonically and
 * read back to equal values with the same ID. */
#include "config/config.h"
#include "fuzz_util.h"

#include <jansson.h>

static void check_accepted(const struct cfg *c)
{
    char *bytes = NULL;
    size_t len = 0;
    cfg_canonical(c, &bytes, &len);
    struct cfg back;
    struct fr_error err;
    fr_error_init(&err);
    FUZZ_CHECK(cfg_from_bytes(bytes, len, false, &back, &err) == FR_OK);
    FUZZ_CHECK(cfg_equal(c, &back));
    char id[80], id_back[80];
    cfg_id(c, id, sizeof(id));
    cfg_id(&back, id_back, sizeof(id_back));
    FUZZ_CHECK(strcmp(id, id_back) == 0);
    struct cfg_frozen *f = NULL;
    FUZZ_CHECK(cfg_frozen_from_bytes(bytes, len, id, &f, &err) == FR_OK);
    FUZZ_CHECK(cfg_equal(&f->values, c));
    cfg_frozen_unref(f);
    cfg_cleanup(&back);
    free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cfg base;
    cfg_defaults(&base);
    json_error_t jerr;
    /* The same flags as http__body_json. */
    json_t *patch = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (patch) {
        struct cfg out;
        json_t *errors = NULL;
        int rc = cfg_apply_json(&base, patch, &out, &errors);
        if (rc == FR_OK) {
            FUZZ_CHECK(errors == NULL);
            check_accepted(&out);
            cfg_cleanup(&out);
        } else {
            /* Rejected as a whole: every problem listed. */
            FUZZ_CHECK(json_is_array(errors) && json_array_size(errors) > 0);
        }
        json_decref(errors);
        json_decref(patch);
    }
    /* The same bytes as a store entry: canonical or not, never a crash. */
    struct cfg stored;
    struct fr_error err;
    fr_error_init(&err);
    if (cfg_from_bytes((const char *)data, size, true, &stored, &err) == FR_OK)
        cfg_cleanup(&stored);
    struct cfg_frozen *f = NULL;
    char id[80];
    cfg_id(&base, id, sizeof(id));
    if (cfg_frozen_from_bytes((const char *)data, size, id, &f, &err) == FR_OK)
        cfg_frozen_unref(f);
    cfg_cleanup(&base);
    return 0;
}
