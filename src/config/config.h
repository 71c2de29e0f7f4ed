/* config: the execution config. One table (CFG_FIELDS below) is the single
 * source of every field's name, type, default, bounds, doc and scope; the
 * struct, validation, JSON, the schema endpoint, environment variables and
 * the canonical encoding are all generated from it.
 *
 * Ownership: cfg_* functions that return json_t* return a new reference;
 * strings returned through out-parameters are new (free()). A struct cfg
 * owns its string list; copy with cfg_copy, release with cfg_cleanup. */
#ifndef FRAMED_CONFIG_H
#define FRAMED_CONFIG_H

#include "../common/common.h"

#include <jansson.h>
#include <stdatomic.h>

enum cfg_kind { CFG_INT, CFG_BOOL, CFG_STRLIST };
enum cfg_scope { CFG_PLANNER, CFG_EXECUTION };

#define CFG_MiB (1024LL * 1024)
#define CFG_GiB (1024LL * CFG_MiB)

/* X(name, kind, default, min, max, scope, doc). For CFG_STRLIST, default
 * is a comma-separated list and min/max bound the number of entries. */
#define CFG_FIELDS(X)                                                                              \
    X(scan_tasks_min_size_bytes, CFG_INT, 96 * CFG_MiB, 1, 1024 * CFG_GiB, CFG_PLANNER,            \
      "Scan tasks smaller than this are merged with neighbours (bytes)")                           \
    X(scan_tasks_max_size_bytes, CFG_INT, 384 * CFG_MiB, 1, 1024 * CFG_GiB, CFG_PLANNER,           \
      "Files larger than this are split into several scan tasks (bytes)")                          \
    X(broadcast_join_size_bytes_threshold, CFG_INT, 10 * CFG_MiB, 0, 1024 * CFG_GiB, CFG_PLANNER,  \
      "A join side smaller than this is broadcast instead of shuffled (bytes)")                    \
    X(shuffle_partitions, CFG_INT, 8, 1, 4096, CFG_PLANNER,                                        \
      "Number of hash partitions of a shuffle (joins, large aggregations)")                        \
    X(shuffle_coalesce_bytes, CFG_INT, 16 * CFG_MiB, 0, 1024 * CFG_GiB, CFG_PLANNER,               \
      "Adjacent shuffle partitions this small together are read by one task (bytes; 0 = never)")   \
    X(sample_size_for_sort, CFG_INT, 20, 1, 1000000, CFG_PLANNER,                                  \
      "Keys sampled per partition to choose a sort's range boundaries")                            \
    X(num_preview_rows, CFG_INT, 8, 0, 10000, CFG_PLANNER, "Rows shown in a dataframe's preview")  \
    X(task_max_retries, CFG_INT, 3, 0, 100, CFG_PLANNER,                                           \
      "How many times a failed or lost task is retried before its query fails")                    \
    X(task_timeout_ms, CFG_INT, 600000, 100, 86400000, CFG_PLANNER,                                \
      "A task running longer than this is failed (milliseconds)")                                  \
    X(morsel_size_rows, CFG_INT, 122880, 1, 100000000, CFG_EXECUTION,                              \
      "Rows per morsel in vectorized operators")                                                   \
    X(maintain_order, CFG_BOOL, 1, 0, 1, CFG_EXECUTION,                                            \
      "Keep input order where the query does not set one (groups by first appearance)")            \
    X(nulls_first, CFG_BOOL, 0, 0, 1, CFG_EXECUTION,                                               \
      "Sort nulls before other values unless a sort key says otherwise")                           \
    X(csv_null_values, CFG_STRLIST, "", 0, 64, CFG_EXECUTION,                                      \
      "CSV field values read as null (an empty field is always null)")                             \
    X(task_memory_limit_bytes, CFG_INT, 4 * CFG_GiB, 0, 1024 * CFG_GiB, CFG_EXECUTION,             \
      "Memory one task may use; a task over it fails its query (0 = unlimited)")                   \
    X(partition_codecs, CFG_STRLIST, "", 0, 2, CFG_EXECUTION,                                      \
      "Codecs a partition sent between processes may be compressed with, most preferred first "    \
      "(lz4, zstd; none = sent as is)")

struct cfg_strlist {
    int n;
    char **items;
};

#define CFG_MEMBER_CFG_INT int64_t
#define CFG_MEMBER_CFG_BOOL bool
#define CFG_MEMBER_CFG_STRLIST struct cfg_strlist
#define CFG_X_MEMBER(name, kind, def, lo, hi, scope, doc) CFG_MEMBER_##kind name;

/* Plain values of every field. */
struct cfg {
    CFG_FIELDS(CFG_X_MEMBER)
};

/* One row of the field table, for generic code and the schema endpoint. */
struct cfg_field {
    const char *name;
    enum cfg_kind kind;
    int64_t def_int;      /* CFG_INT, CFG_BOOL */
    const char *def_list; /* CFG_STRLIST */
    int64_t min, max;
    enum cfg_scope scope;
    const char *doc;
    size_t offset; /* offsetof(struct cfg, name): lets generic code reach the value */
};
extern const struct cfg_field cfg_fields[];
extern const int cfg_nfields;

void cfg_defaults(struct cfg *out); /* out is uninitialized; fills defaults */
/* dst is overwritten (what it owned is not freed) with a deep copy of src. */
void cfg_copy(struct cfg *dst, const struct cfg *src);
/* Frees c's lists and zeroes it, so cleaning up twice is harmless. */
void cfg_cleanup(struct cfg *c);
/* partition_codecs as an Accept-Encoding value ("lz4, zstd") in buf (n
 * bytes); NULL when it names none. */
const char *cfg_codecs_accept(const struct cfg *c, char *buf, size_t n);
bool cfg_equal(const struct cfg *a, const struct cfg *b);

/* Applies a JSON object of fields on top of `base` into `out` (initialized
 * by this call) as a whole: on any problem, returns FR_EVALIDATION, *errors
 * gets a new array of {"field", "message"} listing every problem (unknown
 * field, wrong type, out of bounds, cross-field rules such as
 * scan_tasks_min_size_bytes <= scan_tasks_max_size_bytes), and out is left
 * cleaned up. FR_EINVAL if patch is not an object (*errors then holds one
 * problem with field ""). On success *errors is NULL. errors may be NULL. */
int cfg_apply_json(const struct cfg *base, json_t *patch, struct cfg *out, json_t **errors);
/* new: {"field": value, ...} of every field. */
json_t *cfg_to_json(const struct cfg *c);
/* new: the table as JSON: [{"name","type","default","minimum","maximum","scope","doc"}].
 * Booleans have no minimum/maximum; for lists they bound the number of entries. */
json_t *cfg_schema_json(void);

/* Canonical encoding: compact JSON, keys sorted, integers in plain decimal,
 * every field present. Equal values give equal bytes everywhere. *out new. */
void cfg_canonical(const struct cfg *c, char **out, size_t *len);
/* The content-addressed ID: "sha256:" + hex digest of the canonical bytes. */
void cfg_id(const struct cfg *c, char *out, size_t outsz);
/* Parses canonical (or any complete) JSON bytes into out (initialized by
 * this call). Missing fields take defaults only if allow_missing. Any problem
 * (not JSON, unknown field, invalid value) is FR_EDATA with every problem in
 * the message and the first one's field in err->field. */
int cfg_from_bytes(const char *data, size_t len, bool allow_missing, struct cfg *out,
                   struct fr_error *err);

/* Sets pending values from FRAMED_CONFIG_<FIELD> variables in envp (NULL =
 * none), validated like cfg_apply_json and applied as a whole. Ints are plain
 * decimal, bools true/false/1/0, lists comma-separated ("" = empty). Any bad
 * or unknown variable is FR_EINVAL, c unchanged, with a message that names
 * every bad variable. */
int cfg_apply_env(struct cfg *c, char *const *envp, struct fr_error *err);

/* The pending config's state file: <state_dir>/config.json, written
 * atomically (cfg_save creates the directory). cfg_load: FR_ENOTFOUND when
 * absent (caller keeps defaults); FR_EDATA naming the file (also in
 * err->file) when it is corrupt, the file left as it is. out is written only
 * on success, as if uninitialized before; on error it keeps what it held, so
 * a caller may fill it with defaults first. Fields missing from the file
 * take defaults (a file from an older version); unknown ones are errors. */
int cfg_load(const char *path, struct cfg *out, struct fr_error *err);
int cfg_save(const char *path, const struct cfg *c, struct fr_error *err);

/* A frozen config: immutable values, their canonical bytes and ID, shared by
 * reference count (atomic). */
struct cfg_frozen {
    atomic_int refcount;
    struct cfg values;
    char id[80];
    char *canonical;
    size_t canonical_len;
};
/* new (refcount 1): a snapshot of c. */
struct cfg_frozen *cfg_freeze(const struct cfg *c);
/* new: from canonical bytes; checks the bytes hash to expected_id (FR_EDATA
 * "config-integrity" otherwise) before parsing, and that they are canonical
 * (also "config-integrity": otherwise equal values could have two IDs). */
int cfg_frozen_from_bytes(const char *data, size_t len, const char *expected_id,
                          struct cfg_frozen **out, struct fr_error *err);
struct cfg_frozen *cfg_frozen_ref(struct cfg_frozen *f);
void cfg_frozen_unref(struct cfg_frozen *f); /* accepts NULL */

#endif
