/* http_routes_spec: the server serves its own contract, the openapi.yaml and
 * the JSON Schemas of api/schemas it was built from (embedded: http_spec_files.c), so a
 * client resolves the served spec's relative $refs against the server. Only
 * names of the embedded table are served: no file system, no traversal. */
#include "http_int.h"
#include "http_spec_int.h"

#include <microhttpd.h>

#include <stdlib.h>
#include <string.h>

#define SPEC_CACHE_CONTROL "public, max-age=300"

/* True when the If-None-Match list names etag (quoted) or is "*". */
static bool spec_etag_listed(const char *list, const char *etag)
{
    size_t en = strlen(etag);
    const char *p = list;
    while (*p) {
        p += strspn(p, " ,\t");
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        size_t n = strcspn(p, ",");
        size_t tn = n;
        while (tn > 0 && (p[tn - 1] == ' ' || p[tn - 1] == '\t'))
            tn--;
        if (tn == en && memcmp(p, etag, en) == 0)
            return true;
        p += n;
    }
    return false;
}

static const struct http__spec_file *spec_find(const char *path)
{
    for (int i = 0; i < http__spec_nfiles; i++) {
        if (strcmp(http__spec_files[i].path, path) == 0)
            return &http__spec_files[i];
    }
    return NULL;
}

/* 200 with the bytes (copied: the reply helpers own what they send), or 304
 * when the client holds them already. */
static void spec_reply(struct http_request *req, const struct http__spec_file *f, const char *type)
{
    const char *inm = http__header(req, MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm && spec_etag_listed(inm, f->etag)) {
        http__reply_empty(req, MHD_HTTP_NOT_MODIFIED);
    } else {
        char *copy = fr_xmalloc(f->len + 1);
        memcpy(copy, f->bytes, f->len + 1);
        http__reply_bytes(req, MHD_HTTP_OK, type, copy, f->len);
    }
    http__add_header(req, MHD_HTTP_HEADER_ETAG, f->etag);
    http__add_header(req, MHD_HTTP_HEADER_CACHE_CONTROL, SPEC_CACHE_CONTROL);
}

static void spec_openapi(struct http_request *req)
{
    const struct http__spec_file *f = spec_find("/openapi.yaml");
    if (f)
        spec_reply(req, f, "application/yaml; charset=utf-8");
    else
        http__reply_problem(req, FR_ENOTFOUND, "not-found", "this build embeds no openapi.yaml");
}

/* The {file} segment is only looked up in the table, never opened. */
static void spec_schema(struct http_request *req)
{
    const char *file = http__param(req, "file");
    const struct http__spec_file *f = NULL;
    if (strlen(file) <= 128 && !strchr(file, '/')) {
        char *path = fr_xasprintf("/api/schemas/%s", file);
        f = spec_find(path);
        free(path);
    }
    if (f)
        spec_reply(req, f, "application/schema+json");
    else
        http__reply_problem(req, FR_ENOTFOUND, "not-found",
                            "no schema named %.128s (the ones openapi.yaml references are "
                            "served under /api/schemas/)",
                            file);
}

void http__routes_spec_register(struct http__router *r)
{
    static const struct http__route routes[] = {
        {"GET", "/openapi.yaml", spec_openapi, false, HTTP_BODY_NONE, NULL},
        {"GET", "/api/schemas/{file}", spec_schema, false, HTTP_BODY_NONE, NULL},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        http__router_add(r, &routes[i]);
}
