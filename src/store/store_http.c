/* store_http: a read-only client of a coordinator's config store, used by
 * workers to resolve a config ID with GET {base}/v1/configs/{id} (signed
 * when a cluster secret is set). Writing and counting stay with the
 * coordinator, so put, release and refcount are refused. */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HTTP_STORE_TIMEOUT_MS 10000

struct http_store {
    struct store base; /* first: a store * is an http_store * */
    char *base_url;    /* owned, without a trailing '/' */
    char *secret;      /* owned, NULL: unsigned requests */
    char *sender;      /* owned, NULL when there is no secret */
};

static struct http_store *hst(store *s)
{
    return (struct http_store *)s;
}

static int http_put(store *s, const char *holder, const char *bytes, size_t len, char *id_out,
                    size_t id_outsz, struct fr_error *err)
{
    (void)s;
    (void)holder;
    (void)bytes;
    (void)len;
    (void)id_out;
    (void)id_outsz;
    return fr_error_set(err, FR_EINVAL, "the coordinator's store is read-only from here");
}

/* A short, single-line excerpt of an error body for the message. */
static void body_excerpt(const struct fr_buf *body, char *out, size_t outsz)
{
    size_t n = 0;
    for (size_t i = 0; i < body->len && n + 1 < outsz; i++)
        out[n++] = (body->data[i] == '\n' || body->data[i] == '\r') ? ' ' : body->data[i];
    out[n] = '\0';
}

static int http_get(store *s, const char *id, char **bytes, size_t *len, struct fr_error *err)
{
    struct http_store *hs = hst(s);
    int result = FR_EIO;
    struct fr_client_resp resp;
    if (!fr_config_id_valid(id))
        return fr_error_set(err, FR_EINVAL, "'%.100s' is not a config ID (sha256:<64 hex>)",
                            id ? id : "");
    char *url = fr_xasprintf("%s/v1/configs/%s", hs->base_url, id);
    struct fr_client_req req = {
        .method = "GET",
        .url = url,
        .timeout_ms = HTTP_STORE_TIMEOUT_MS,
        .secret = hs->secret,
        .sender = hs->sender,
    };
    result = fr_client_call(&req, &resp, err);
    if (result != FR_OK)
        goto out;
    if (resp.status == 404) {
        result = fr_error_set(err, FR_ENOTFOUND, "config %s is not in the coordinator's store", id);
        goto out;
    }
    if (resp.status != 200) {
        char excerpt[200];
        body_excerpt(&resp.body, excerpt, sizeof(excerpt));
        result = fr_error_set(err, FR_EIO, "GET %s answered %ld: %s", url, resp.status,
                              excerpt[0] ? excerpt : "(no body)");
        goto out;
    }
    *bytes = fr_buf_steal(&resp.body, len);
    result = FR_OK;
out:
    fr_client_resp_cleanup(&resp);
    free(url);
    return result;
}

static int http_release(store *s, const char *id, const char *holder, struct fr_error *err)
{
    (void)s;
    (void)holder;
    (void)id;
    return fr_error_set(err, FR_EINVAL, "the coordinator's store is read-only from here");
}

static int http_refcount(store *s, const char *id, int64_t *count, struct fr_error *err)
{
    (void)s;
    (void)id;
    *count = 0;
    return fr_error_set(err, FR_EINVAL,
                        "reference counts of the coordinator's store are not visible from here");
}

static void http_free(store *s)
{
    struct http_store *hs = hst(s);
    free(hs->base_url);
    if (hs->secret) {
        memset(hs->secret, 0, strlen(hs->secret));
        free(hs->secret);
    }
    free(hs->sender);
    store__base_cleanup(s);
    free(hs);
}

static const struct store_vtable http_vtable = {
    .name = "http",
    .put = http_put,
    .get = http_get,
    .release = http_release,
    .refcount = http_refcount,
    .restore = NULL, /* read-only */
    .free = http_free,
};

int store_http_open(const char *base_url, const char *secret, const char *sender, store **out,
                    struct fr_error *err)
{
    *out = NULL;
    if (!base_url ||
        (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0))
        return fr_error_set(err, FR_EINVAL,
                            "'%.200s' is not a coordinator URL (http://host:port or https://...)",
                            base_url ? base_url : "");
    if (secret && (!sender || !sender[0]))
        return fr_error_set(err, FR_EINVAL,
                            "signed requests to the coordinator's store need a sender ID");
    struct http_store *hs = fr_xcalloc(1, sizeof(*hs));
    store__base_init(&hs->base, &http_vtable, 0);
    size_t n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    hs->base_url = fr_xstrndup(base_url, n);
    if (secret) {
        hs->secret = fr_xstrdup(secret);
        hs->sender = fr_xstrdup(sender);
    }
    *out = &hs->base;
    return FR_OK;
}
