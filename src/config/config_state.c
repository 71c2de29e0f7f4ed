/* config_state: the pending config's state file, so setup survives a restart.
 * Written atomically; a file that cannot be read back is an error that names
 * it, never a silent reset to defaults (that would lose a user's settings). */
#include "config_int.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cfg_load(const char *path, struct cfg *out, struct fr_error *err)
{
    int result = FR_EDATA;
    char *data = NULL;
    size_t len = 0;
    struct cfg loaded;
    struct fr_error inner;
    fr_error_init(&inner);
    int rc = fr_file_read_all(path, &data, &len, err);
    if (rc != FR_OK) {
        result = rc; /* FR_ENOTFOUND: the caller keeps its defaults */
        goto out;
    }
    /* Missing fields take defaults: a state file from an older version that
     * lacked a newer field is still good. Unknown or invalid ones are not. */
    if (cfg_from_bytes(data, len, true, &loaded, &inner) != FR_OK) {
        fr_error_set(err, FR_EDATA,
                     "config state file %s is corrupt: %s (fix or remove the file; it was left "
                     "as it is)",
                     path, inner.message);
        if (err) {
            snprintf(err->file, sizeof(err->file), "%s", path);
            snprintf(err->field, sizeof(err->field), "%s", inner.field);
        }
        goto out;
    }
    *out = loaded; /* only now: on any error out keeps what the caller put there */
    result = FR_OK;
out:
    free(data);
    return result;
}

int cfg_save(const char *path, const struct cfg *c, struct fr_error *err)
{
    int result = FR_EIO;
    char *dir = fr_xstrdup(path);
    json_t *o = cfg_to_json(c);
    /* Indented for a human who opens it; sorted so diffs stay small. */
    char *text = fr_json_dumps(o, JSON_SORT_KEYS | JSON_INDENT(2));
    if (!text) {
        fr_error_set(err, FR_EINTERNAL, "cannot encode the config for %s", path);
        result = FR_EINTERNAL;
        goto out;
    }
    result = fr_mkdir_p(dirname(dir), err);
    if (result != FR_OK)
        goto out;
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, text);
    fr_buf_putc(&b, '\n');
    result = fr_file_write_atomic(path, b.data, b.len, err);
    fr_buf_cleanup(&b);
out:
    free(text);
    json_decref(o);
    free(dir);
    return result;
}
