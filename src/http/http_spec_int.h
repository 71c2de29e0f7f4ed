/* http_spec_int.h: the HTTP contract embedded at build time (the generated
 * http_spec_files.c, cmake/embed_spec.cmake) and the routes that serve it
 * (http_routes_spec.c). */
#ifndef FRAMED_HTTP_SPEC_INT_H
#define FRAMED_HTTP_SPEC_INT_H

#include <stddef.h>

/* One embedded file: its URL path ("/openapi.yaml", "/api/schemas/x.json"),
 * its bytes (followed by a NUL not counted in len) and a strong ETag
 * (quoted, a SHA-256 prefix of the bytes). All static, never freed. */
struct http__spec_file {
    const char *path;
    const unsigned char *bytes;
    size_t len;
    const char *etag;
};
extern const struct http__spec_file http__spec_files[];
extern const int http__spec_nfiles;

struct http__router;
/* GET /openapi.yaml and GET /api/schemas/{file}, on the coordinator and the worker. */
void http__routes_spec_register(struct http__router *r);

#endif
