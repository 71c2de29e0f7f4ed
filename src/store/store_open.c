/* store_open: picks the config store backend from a URL, so callers (the
 * serve and worker commands) name a store the way a user writes it on the
 * command line: embedded, redis://host:port[/db] or http(s)://coordinator. */
#include "store.h"

#include <string.h>

int store_open_url(const char *url, const char *dir, const char *secret, const char *sender,
                   store **out, struct fr_error *err)
{
    *out = NULL;
    if (!url || strcmp(url, "embedded") == 0)
        return store_embedded_open(dir, out, err);
    if (strncmp(url, "redis://", 8) == 0)
        return store_redis_open(url, out, err);
    if (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0)
        return store_http_open(url, secret, sender, out, err);
    return fr_error_set(err, FR_EINVAL,
                        "unknown store '%.200s': expected embedded, redis://host:port[/db] or "
                        "http(s)://coordinator:port",
                        url);
}
