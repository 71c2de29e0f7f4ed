/* config_int: helpers shared by the config module's files and nobody
 * else (libuv's double-underscore convention). Not part of the module's face:
 * other modules include config.h only. */
#ifndef FRAMED_CONFIG_INT_H
#define FRAMED_CONFIG_INT_H

#include "config.h"

/* Index of the field called name in cfg_fields, -1 if none. */
int cfg__field_index(const char *name);
/* Index of the field whose name is close to name (a likely typo), -1 if none
 * is close enough to be worth suggesting. */
int cfg__suggest(const char *name);

/* Borrowed pointers to the value of field f inside c (the field's kind must
 * match the accessor). */
int64_t *cfg__int_slot(struct cfg *c, const struct cfg_field *f);
bool *cfg__bool_slot(struct cfg *c, const struct cfg_field *f);
struct cfg_strlist *cfg__list_slot(struct cfg *c, const struct cfg_field *f);
const int64_t *cfg__int_cslot(const struct cfg *c, const struct cfg_field *f);
const bool *cfg__bool_cslot(const struct cfg *c, const struct cfg_field *f);
const struct cfg_strlist *cfg__list_cslot(const struct cfg *c, const struct cfg_field *f);

/* Frees the list's items and leaves it empty. */
void cfg__strlist_cleanup(struct cfg_strlist *l);
/* dst (uninitialized) becomes a deep copy of src. */
void cfg__strlist_copy(struct cfg_strlist *dst, const struct cfg_strlist *src);
/* dst (uninitialized) gets the entries of a comma-separated list; "" is the
 * empty list. Entries are taken as they are (no trimming). */
void cfg__strlist_from_csv(struct cfg_strlist *dst, const char *csv);

#endif
