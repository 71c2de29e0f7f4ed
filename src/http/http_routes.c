/* http_routes: the route table. Each area registers its routes (method, path
 * pattern with {param} segments, handler, admin flag, body kind) through its
 * *_register function; a request is matched segment by segment, and a path
 * that matches with another method yields 405 with the Allow list. A
 * catch-all route's last {param} takes the rest of the path when it names a
 * file (the dashboard's files): it is tried after every other route and
 * never makes a 405. */
#include "http_int.h"
#include "http_spec_int.h"

#include <stdlib.h>
#include <string.h>

/* What the router adds to a registered row (the area tables stay as they are). */
struct route_extra {
    bool signed_only; /* a cluster call needing the signature */
    int64_t max_body; /* 0 = the server's limit */
    http__handler head_check;
    bool catch_all; /* the last {param} takes the rest of the path */
};

struct http__router {
    struct http__route *routes; /* copies of the registered rows; patterns are static */
    struct route_extra *extra;  /* per route */
    int n, cap;
};

static void router_add(struct http__router *r, const struct http__route *route,
                       struct route_extra extra)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 32;
        r->routes = fr_xrealloc(r->routes, (size_t)r->cap * sizeof(*r->routes));
        r->extra = fr_xrealloc(r->extra, (size_t)r->cap * sizeof(*r->extra));
    }
    r->extra[r->n] = extra;
    r->routes[r->n++] = *route;
}

void http__router_add(struct http__router *r, const struct http__route *route)
{
    router_add(r, route, (struct route_extra){.signed_only = false});
}

void http__router_add_signed(struct http__router *r, const struct http__route *route)
{
    router_add(r, route, (struct route_extra){.signed_only = true});
}

void http__router_add_signed_limited(struct http__router *r, const struct http__route *route,
                                     int64_t max_body, http__handler head_check)
{
    router_add(
        r, route,
        (struct route_extra){.signed_only = true, .max_body = max_body, .head_check = head_check});
}

void http__router_add_catch_all(struct http__router *r, const struct http__route *route)
{
    router_add(r, route, (struct route_extra){.catch_all = true});
}

struct http__router *http__router_new(void)
{
    struct http__router *r = fr_xcalloc(1, sizeof(*r));
    http__routes_ops_register(r);
    http__routes_history_register(r); /* before config: /v1/configs/diff is not an {id} */
    http__routes_config_register(r);
    http__routes_runner_register(r);
    http__routes_data_register(r);
    http__routes_dataframes_register(r);
    http__routes_queries_register(r);
    http__routes_cluster_register(r);
    http__routes_internal_register(r);
    http__routes_events_register(r);
    http__routes_spec_register(r);
    return r;
}

struct http__router *http__router_new_worker(void)
{
    struct http__router *r = fr_xcalloc(1, sizeof(*r));
    http__routes_worker_register(r);
    http__routes_spec_register(r);
    return r;
}

void http__router_free(struct http__router *r)
{
    if (!r)
        return;
    free(r->routes);
    free(r->extra);
    free(r);
}

/* By path, so each area's table stays as it is: what is data is a property
 * of where it lives in the API. */
enum http__access http__route_access(const struct http__route *route, bool signed_route)
{
    static const char *const open_paths[] = {"/livez", "/readyz", "/", "/{file}"};
    /* /v1/events: its query events carry what /v1/queries guards */
    static const char *const data_prefixes[] = {"/v1/datasets", "/v1/dataframes", "/v1/queries",
                                                "/v1/events"};
    if (route->needs_admin)
        return HTTP_ACCESS_ADMIN;
    if (signed_route)
        return HTTP_ACCESS_OPEN; /* the cluster secret guards these */
    for (size_t i = 0; i < sizeof(open_paths) / sizeof(open_paths[0]); i++) {
        if (strcmp(route->pattern, open_paths[i]) == 0)
            return HTTP_ACCESS_OPEN;
    }
    for (size_t i = 0; i < sizeof(data_prefixes) / sizeof(data_prefixes[0]); i++) {
        size_t n = strlen(data_prefixes[i]);
        if (strncmp(route->pattern, data_prefixes[i], n) == 0 &&
            (route->pattern[n] == '\0' || route->pattern[n] == '/'))
            return HTTP_ACCESS_DATA;
    }
    return HTTP_ACCESS_READ;
}

int http__router_count(const struct http__router *r)
{
    return r->n;
}

const char *http__router_pattern(const struct http__router *r, int index)
{
    return (index >= 0 && index < r->n) ? r->routes[index].pattern : "unmatched";
}

/* Length of the segment starting at s (up to '/' or the end). */
static size_t seg_len(const char *s)
{
    return strcspn(s, "/");
}

/* A catch-all takes only a path that names a file: its last segment has an
 * extension ("vendor/preact/preact.mjs"), so "/v1/nope" stays unmatched. */
static bool names_file(const char *rest)
{
    const char *last = strrchr(rest, '/');
    const char *dot = strrchr(last ? last + 1 : rest, '.');
    return dot && dot[1] != '\0';
}

/* Matches path against pattern; on success, fills the request's params when
 * req is not NULL. With rest, a {param} ending the pattern takes the rest of
 * the path, slashes included. */
static bool match_pattern(const char *pattern, const char *path, bool rest,
                          struct http_request *req)
{
    const char *p = pattern, *u = path;
    int nparams = 0;
    char *names[HTTP__MAX_PARAMS], *values[HTTP__MAX_PARAMS];
    bool ok = true;
    while (ok && *p == '/' && *u == '/') {
        p++;
        u++;
        size_t pn = seg_len(p), un = seg_len(u);
        if (rest && p[pn] == '\0' && pn >= 2 && p[0] == '{' && p[pn - 1] == '}') {
            un = strlen(u);
            ok = names_file(u); /* else the path stays unmatched: a plain 404 */
        }
        if (pn >= 2 && p[0] == '{' && p[pn - 1] == '}') {
            if (un == 0 || nparams == HTTP__MAX_PARAMS) {
                ok = false;
            } else if (req) {
                names[nparams] = fr_xstrndup(p + 1, pn - 2);
                values[nparams] = fr_xstrndup(u, un);
                nparams++;
            }
        } else if (pn != un || memcmp(p, u, pn) != 0) {
            ok = false;
        }
        p += pn;
        u += un;
    }
    ok = ok && *p == '\0' && *u == '\0';
    for (int i = 0; i < nparams; i++) {
        if (ok) {
            req->param_names[i] = names[i];
            req->param_values[i] = values[i];
        } else {
            free(names[i]);
            free(values[i]);
        }
    }
    if (ok && req)
        req->nparams = nparams;
    return ok;
}

static bool method_matches(const char *route_method, const char *method)
{
    return strcmp(route_method, method) == 0 ||
           (strcmp(method, "HEAD") == 0 && strcmp(route_method, "GET") == 0);
}

static void allow_add(struct fr_buf *allow, const char *method)
{
    if (allow->len)
        fr_buf_puts(allow, ", ");
    fr_buf_puts(allow, method);
    if (strcmp(method, "GET") == 0)
        fr_buf_puts(allow, ", HEAD");
}

static void route_take(const struct http__router *r, int i, struct http_request *req)
{
    match_pattern(r->routes[i].pattern, req->path, r->extra[i].catch_all, req);
    req->route = &r->routes[i];
    req->route_index = i;
    req->route_signed = r->extra[i].signed_only;
    req->route_max_body = r->extra[i].max_body;
    req->route_head_check = r->extra[i].head_check;
}

int http__router_match(const struct http__router *r, struct http_request *req, char **allow)
{
    struct fr_buf methods;
    fr_buf_init(&methods);
    int result = FR_ENOTFOUND;
    int catch_all = -1; /* the first catch-all taking this method and path */
    req->route = NULL;
    req->route_index = r->n; /* "unmatched" */
    for (int i = 0; i < r->n; i++) {
        const struct http__route *route = &r->routes[i];
        if (!match_pattern(route->pattern, req->path, r->extra[i].catch_all, NULL))
            continue;
        bool method_ok = method_matches(route->method, req->method);
        if (r->extra[i].catch_all) {
            if (method_ok && catch_all < 0)
                catch_all = i;
            continue;
        }
        if (method_ok) {
            route_take(r, i, req);
            result = 0;
            goto out;
        }
        allow_add(&methods, route->method);
        result = FR_ECONFLICT;
    }
    if (result == FR_ECONFLICT)
        *allow = fr_buf_steal(&methods, NULL);
    else if (catch_all >= 0) {
        route_take(r, catch_all, req);
        result = 0;
    }
out:
    fr_buf_cleanup(&methods);
    return result;
}
