/* config_table: the field table generated from CFG_FIELDS, and the plain
 * value operations on struct cfg (defaults, copy, cleanup, equality) that
 * walk it generically through each field's offset. */
#include "config_int.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A row's default goes to def_int or def_list depending on its kind. */
#define CFG_DEFINT_CFG_INT(d) (d)
#define CFG_DEFINT_CFG_BOOL(d) (d)
#define CFG_DEFINT_CFG_STRLIST(d) 0
#define CFG_DEFLIST_CFG_INT(d) NULL
#define CFG_DEFLIST_CFG_BOOL(d) NULL
#define CFG_DEFLIST_CFG_STRLIST(d) (d)

#define CFG_X_ROW(name, kind, def, lo, hi, scope, doc)                                             \
    {#name, kind, CFG_DEFINT_##kind(def),    CFG_DEFLIST_##kind(def), (lo), (hi),                  \
     scope, doc,  offsetof(struct cfg, name)},

const struct cfg_field cfg_fields[] = {CFG_FIELDS(CFG_X_ROW)};
const int cfg_nfields = (int)(sizeof(cfg_fields) / sizeof(cfg_fields[0]));

int cfg__field_index(const char *name)
{
    for (int i = 0; i < cfg_nfields; i++)
        if (strcmp(cfg_fields[i].name, name) == 0)
            return i;
    return -1;
}

int cfg__suggest(const char *name)
{
    int best = -1, best_d = 0;
    for (int i = 0; i < cfg_nfields; i++) {
        int d = fr_edit_distance(name, cfg_fields[i].name);
        if (d < 0)
            continue;
        size_t longer =
            strlen(name) > strlen(cfg_fields[i].name) ? strlen(name) : strlen(cfg_fields[i].name);
        /* Close means a couple of typos, or a third of the name at most. */
        if (d > 2 && (size_t)d * 3 > longer)
            continue;
        if (best < 0 || d < best_d) {
            best = i;
            best_d = d;
        }
    }
    return best;
}

int64_t *cfg__int_slot(struct cfg *c, const struct cfg_field *f)
{
    return (int64_t *)((char *)c + f->offset);
}

bool *cfg__bool_slot(struct cfg *c, const struct cfg_field *f)
{
    return (bool *)((char *)c + f->offset);
}

struct cfg_strlist *cfg__list_slot(struct cfg *c, const struct cfg_field *f)
{
    return (struct cfg_strlist *)((char *)c + f->offset);
}

const int64_t *cfg__int_cslot(const struct cfg *c, const struct cfg_field *f)
{
    return (const int64_t *)((const char *)c + f->offset);
}

const bool *cfg__bool_cslot(const struct cfg *c, const struct cfg_field *f)
{
    return (const bool *)((const char *)c + f->offset);
}

const struct cfg_strlist *cfg__list_cslot(const struct cfg *c, const struct cfg_field *f)
{
    return (const struct cfg_strlist *)((const char *)c + f->offset);
}

void cfg__strlist_cleanup(struct cfg_strlist *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

void cfg__strlist_copy(struct cfg_strlist *dst, const struct cfg_strlist *src)
{
    dst->n = src->n;
    dst->items = NULL;
    if (src->n == 0)
        return;
    dst->items = fr_xcalloc((size_t)src->n, sizeof(char *));
    for (int i = 0; i < src->n; i++)
        dst->items[i] = fr_xstrdup(src->items[i]);
}

void cfg__strlist_from_csv(struct cfg_strlist *dst, const char *csv)
{
    dst->n = 0;
    dst->items = NULL;
    if (!csv || csv[0] == '\0')
        return;
    int n = 1;
    for (const char *p = csv; *p; p++)
        n += *p == ',';
    dst->items = fr_xcalloc((size_t)n, sizeof(char *));
    const char *start = csv;
    for (;;) {
        const char *comma = strchr(start, ',');
        size_t len = comma ? (size_t)(comma - start) : strlen(start);
        dst->items[dst->n++] = fr_xstrndup(start, len);
        if (!comma)
            break;
        start = comma + 1;
    }
}

void cfg_defaults(struct cfg *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < cfg_nfields; i++) {
        const struct cfg_field *f = &cfg_fields[i];
        switch (f->kind) {
        case CFG_INT:
            *cfg__int_slot(out, f) = f->def_int;
            break;
        case CFG_BOOL:
            *cfg__bool_slot(out, f) = f->def_int != 0;
            break;
        case CFG_STRLIST:
            cfg__strlist_from_csv(cfg__list_slot(out, f), f->def_list);
            break;
        }
    }
}

/* dst is overwritten: whatever it owned before is not freed. */
void cfg_copy(struct cfg *dst, const struct cfg *src)
{
    memcpy(dst, src, sizeof(*dst));
    for (int i = 0; i < cfg_nfields; i++) {
        const struct cfg_field *f = &cfg_fields[i];
        if (f->kind == CFG_STRLIST)
            cfg__strlist_copy(cfg__list_slot(dst, f), cfg__list_cslot(src, f));
    }
}

/* Leaves c zeroed, so a second cleanup is harmless. */
void cfg_cleanup(struct cfg *c)
{
    if (!c)
        return;
    for (int i = 0; i < cfg_nfields; i++) {
        const struct cfg_field *f = &cfg_fields[i];
        if (f->kind == CFG_STRLIST)
            cfg__strlist_cleanup(cfg__list_slot(c, f));
    }
    memset(c, 0, sizeof(*c));
}

static bool strlist_equal(const struct cfg_strlist *a, const struct cfg_strlist *b)
{
    if (a->n != b->n)
        return false;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->items[i], b->items[i]) != 0)
            return false;
    return true;
}

bool cfg_equal(const struct cfg *a, const struct cfg *b)
{
    for (int i = 0; i < cfg_nfields; i++) {
        const struct cfg_field *f = &cfg_fields[i];
        bool same = true;
        switch (f->kind) {
        case CFG_INT:
            same = *cfg__int_cslot(a, f) == *cfg__int_cslot(b, f);
            break;
        case CFG_BOOL:
            same = *cfg__bool_cslot(a, f) == *cfg__bool_cslot(b, f);
            break;
        case CFG_STRLIST:
            same = strlist_equal(cfg__list_cslot(a, f), cfg__list_cslot(b, f));
            break;
        }
        if (!same)
            return false;
    }
    return true;
}

const char *cfg_codecs_accept(const struct cfg *c, char *buf, size_t n)
{
    size_t at = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; i < c->partition_codecs.n && at < n; i++) {
        int w = snprintf(buf + at, n - at, "%s%s", i ? ", " : "", c->partition_codecs.items[i]);
        at += w > 0 ? (size_t)w : 0;
    }
    return at && at < n ? buf : NULL;
}
