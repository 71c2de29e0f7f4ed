/* http_accept: proactive content negotiation on the Accept header (RFC 9110
 * section 12.5.1): media ranges (type/subtype, type/ *, * / *) with their
 * parameters and a q weight (at most three decimals, q=0 = not acceptable),
 * the most specific range deciding each offer's weight. A parser of client
 * bytes: it allocates nothing, reads the header a bounded number of times and
 * refuses a malformed header as a whole. */
#include "http_int.h"

#include <string.h>
#include <strings.h>

/* One media range as it lies in the header; the slices point into it. */
struct media_range {
    const char *type, *subtype;
    size_t type_len, subtype_len;
    const char *params; /* where the parameters start: ";a=b;c=\"d\";q=1" */
    int nmatch;         /* parameters before the weight: the ones that match */
    int nparams;
    int q; /* weight in thousandths: 0 to 1000 */
};

static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static size_t token_len(const char *p)
{
    size_t n = 0;
    while (is_tchar(p[n]))
        n++;
    return n;
}

/* A quoted-string at p (the opening quote): its length with both quotes, 0
 * when unterminated or holding a control byte. */
static size_t quoted_len(const char *p)
{
    size_t n = 1;
    for (; p[n] && p[n] != '"'; n++) {
        if (p[n] == '\\' && p[n + 1])
            n++;
        else if ((unsigned char)p[n] < 0x20 && p[n] != '\t')
            return 0;
    }
    return p[n] == '"' ? n + 1 : 0;
}

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ): thousandths,
 * or -1. n is the value's length. */
static int parse_qvalue(const char *v, size_t n)
{
    if (n == 0 || n > 5 || (v[0] != '0' && v[0] != '1') || (n > 1 && v[1] != '.'))
        return -1;
    int q = (v[0] - '0') * 1000, scale = 100;
    for (size_t i = 2; i < n; i++, scale /= 10) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        q += (v[i] - '0') * scale;
    }
    return q <= 1000 ? q : -1;
}

/* Parses one parameter at p (after its ';' and OWS): name and value slices,
 * the end; NULL when malformed. */
static const char *parse_param(const char *p, const char **name, size_t *name_len,
                               const char **value, size_t *value_len)
{
    *name = p;
    *name_len = token_len(p);
    if (*name_len == 0 || p[*name_len] != '=')
        return NULL;
    p += *name_len + 1;
    *value = p;
    *value_len = *p == '"' ? quoted_len(p) : token_len(p);
    return *value_len ? p + *value_len : NULL;
}

/* Parses the media range at p into r; returns the end of the element (at ','
 * or the NUL), NULL when malformed. */
static const char *parse_range(const char *p, struct media_range *r)
{
    *r = (struct media_range){.q = 1000};
    r->type = p;
    r->type_len = token_len(p);
    if (r->type_len == 0 || p[r->type_len] != '/')
        return NULL;
    r->subtype = p + r->type_len + 1;
    r->subtype_len = token_len(r->subtype);
    if (r->subtype_len == 0)
        return NULL;
    bool any_type = r->type_len == 1 && r->type[0] == '*';
    if (any_type && !(r->subtype_len == 1 && r->subtype[0] == '*'))
        return NULL; /* "* /json" names no range */
    p = r->subtype + r->subtype_len;
    r->params = p;
    bool weighted = false; /* parameters after the weight are RFC 7231's
                              accept-ext: allowed, not matched */
    for (;;) {
        p = skip_ows(p);
        if (*p != ';')
            break;
        p = skip_ows(p + 1);
        const char *name, *value;
        size_t nl, vl;
        const char *end = parse_param(p, &name, &nl, &value, &vl);
        if (!end || ++r->nparams > HTTP__ACCEPT_MAX_PARAMS)
            return NULL;
        if (!weighted && nl == 1 && (name[0] == 'q' || name[0] == 'Q')) {
            weighted = true;
            if ((r->q = parse_qvalue(value, vl)) < 0)
                return NULL;
        } else if (!weighted) {
            r->nmatch++;
        }
        p = end;
    }
    return (*p == ',' || *p == '\0') ? p : NULL;
}

/* The next media range of the list at *cursor: 1 with r set, 0 at the end,
 * -1 when malformed. Empty list elements (",,") are skipped (RFC 9110 5.6.1). */
static int next_range(const char **cursor, struct media_range *r)
{
    const char *p = *cursor;
    for (;;) {
        p = skip_ows(p);
        if (*p == '\0')
            return 0;
        if (*p != ',')
            break;
        p++;
    }
    const char *end = parse_range(p, r);
    if (!end)
        return -1;
    *cursor = *end == ',' ? end + 1 : end;
    return 1;
}

/* Whether offer_params ("a=b;c=d", may be NULL) has name=value (value a
 * token or a quoted-string, compared unquoted, case-insensitively). */
static bool offer_has_param(const char *offer_params, const char *name, size_t nl,
                            const char *value, size_t vl)
{
    char unquoted[HTTP__ACCEPT_MAX_VALUE + 1];
    size_t un = 0;
    if (value[0] == '"') {
        for (size_t i = 1; i + 1 < vl; i++) {
            if (value[i] == '\\')
                i++;
            if (un == HTTP__ACCEPT_MAX_VALUE)
                return false;
            unquoted[un++] = value[i];
        }
    } else {
        if (vl > HTTP__ACCEPT_MAX_VALUE)
            return false;
        memcpy(unquoted, value, vl);
        un = vl;
    }
    for (const char *p = offer_params; p && *p;) {
        size_t seg = strcspn(p, ";");
        const char *eq = memchr(p, '=', seg);
        if (eq && (size_t)(eq - p) == nl && strncasecmp(p, name, nl) == 0 && seg - nl - 1 == un &&
            strncasecmp(eq + 1, unquoted, un) == 0)
            return true;
        p += seg + (p[seg] == ';');
    }
    return false;
}

/* How specifically r names offer: -1 not at all, 0 for * / *, 1 type/ *,
 * 2 type/subtype, 2 + n with n parameters (all of them the offer's). */
static int match_specificity(const struct media_range *r, const struct http__offer *offer)
{
    const char *slash = strchr(offer->type, '/');
    size_t tl = (size_t)(slash - offer->type), sl = strlen(slash + 1);
    if (r->type_len == 1 && r->type[0] == '*')
        return r->nmatch == 0 ? 0 : -1;
    if (r->type_len != tl || strncasecmp(r->type, offer->type, tl) != 0)
        return -1;
    if (r->subtype_len == 1 && r->subtype[0] == '*')
        return r->nmatch == 0 ? 1 : -1;
    if (r->subtype_len != sl || strncasecmp(r->subtype, slash + 1, sl) != 0)
        return -1;
    const char *p = r->params;
    for (int i = 0; i < r->nmatch; i++) {
        p = skip_ows(skip_ows(p) + 1); /* past its ';' (parse_range checked the syntax) */
        const char *name, *value;
        size_t nl, vl;
        p = parse_param(p, &name, &nl, &value, &vl);
        if (!offer_has_param(offer->params, name, nl, value, vl))
            return -1;
    }
    return 2 + r->nmatch;
}

/* The weight accept gives offer (thousandths): the most specific matching
 * range's, the first of equals; 0 when none matches. accept is well-formed. */
static int offer_quality(const char *accept, const struct http__offer *offer)
{
    int best = -1, q = 0;
    struct media_range r;
    for (const char *cursor = accept; next_range(&cursor, &r) == 1;) {
        int s = match_specificity(&r, offer);
        if (s > best) {
            best = s;
            q = r.q;
        }
    }
    return q;
}

int http__accept_check(const char *accept)
{
    if (!accept)
        return 0;
    if (strlen(accept) > HTTP__ACCEPT_MAX_BYTES)
        return -1;
    struct media_range r;
    int n = 0, rc;
    for (const char *cursor = accept; (rc = next_range(&cursor, &r)) == 1;) {
        if (++n > HTTP__ACCEPT_MAX_RANGES)
            return -1;
    }
    return rc < 0 ? -1 : n;
}

int http__accept_pick(const char *accept, const struct http__offer *offers, int noffers)
{
    int n = http__accept_check(accept);
    if (n < 0)
        return HTTP__ACCEPT_MALFORMED;
    if (n == 0) /* absent or empty: anything goes */
        return noffers > 0 ? 0 : HTTP__ACCEPT_NONE;
    int pick = HTTP__ACCEPT_NONE, pick_q = 0;
    for (int i = 0; i < noffers; i++) {
        int q = offer_quality(accept, &offers[i]);
        if (q > pick_q) { /* ties: the earlier offer, the server's preference */
            pick = i;
            pick_q = q;
        }
    }
    return pick;
}
