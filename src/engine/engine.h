/* engine: columnar tables in the Arrow memory layout, the readers that fill them
 * (CSV, NDJSON), the expression language and the vectorized operators.
 * The engine knows nothing of HTTP, threads or the config store: everything
 * it needs (options, inputs, a cancel flag) arrives as arguments.
 *
 * Ownership: functions named *_new return a new object the caller frees with
 * the matching *_free; a pointer returned by a getter is borrowed and valid as
 * long as its parent is; a parameter marked "steals" is owned by the callee. */
#ifndef FRAMED_ENGINE_H
#define FRAMED_ENGINE_H

#include "../common/common.h"

#include <stdatomic.h>

/* ======================================================================
 * core: types, columns, tables (engine_column.c, engine_table.c)
 * ====================================================================== */

typedef enum df_type {
    DF_TYPE_NULL = 0, /* the type of a bare NULL literal; columns are never this */
    DF_TYPE_BOOL,
    DF_TYPE_INT64,
    DF_TYPE_FLOAT64,
    DF_TYPE_STRING,    /* utf8 */
    DF_TYPE_DATE,      /* int32 days since 1970-01-01 */
    DF_TYPE_TIMESTAMP, /* int64 microseconds since 1970-01-01T00:00:00Z */
} df_type;

const char *df_type_name(df_type t); /* "int64", "float64", "bool", "string", "date", ... */
int df_type_parse(const char *s,
                  df_type *out); /* accepts SQL aliases: bigint, double, varchar... */

/* A column in the Arrow layout. Values of fixed width live in `values`:
 * bool as one uint8_t (0/1) per value (packed to bits only on Arrow IPC
 * output), int64/timestamp as int64_t, float64 as double, date as int32_t.
 * Strings: `offsets` has length+1 int64 entries into `data` (Arrow
 * LargeUtf8). `validity` is an Arrow bitmap (bit i set = row i is valid),
 * NULL when the column has no nulls. A null slot's value bytes are zero.
 *
 * Columns are reference counted (atomically) so that tables can share them
 * without copying; a column shared by two tables must not be appended to.
 * Appends grow with checked allocations: on failure the column sets `oom`
 * and further appends are ignored; check df_column_ok() after building. */
struct df_column {
    atomic_int refcount;
    df_type type;
    bool oom;
    int64_t length;
    int64_t capacity;
    int64_t null_count;
    uint8_t *validity;
    void *values;
    int64_t *offsets;
    char *data;
    int64_t data_len;
    int64_t data_cap;
};

/* The bytes a gathered or sliced string column's data keeps past its
 * data_len, so short strings move as two 8-byte words. */
#define DF_STRING_PAD 16

/* new: refcount 1, length 0, room for `capacity` values (a hint). */
struct df_column *df_column_new(df_type type, int64_t capacity);
struct df_column *df_column_ref(struct df_column *c); /* returns c */
void df_column_unref(struct df_column *c);            /* accepts NULL */
bool df_column_ok(const struct df_column *c);
/* Ensures room for n more values (and data_bytes more string bytes). */
int df_column_reserve(struct df_column *c, int64_t n, int64_t data_bytes);
void df_column_append_null(struct df_column *c);
void df_column_append_bool(struct df_column *c, bool v);
void df_column_append_int64(struct df_column *c, int64_t v); /* int64, timestamp */
void df_column_append_int32(struct df_column *c, int32_t v); /* date */
void df_column_append_float64(struct df_column *c, double v);
void df_column_append_string(struct df_column *c, const char *s, int64_t n);
/* Appends row `row` of src (same type) to dst. */
void df_column_append_from(struct df_column *dst, const struct df_column *src, int64_t row);

static inline bool df_column_is_valid(const struct df_column *c, int64_t i)
{
    return !c->validity || (c->validity[i >> 3] >> (i & 7)) & 1;
}
static inline int64_t df_column_int64(const struct df_column *c, int64_t i)
{
    return ((const int64_t *)c->values)[i];
}
static inline int32_t df_column_int32(const struct df_column *c, int64_t i)
{
    return ((const int32_t *)c->values)[i];
}
static inline double df_column_float64(const struct df_column *c, int64_t i)
{
    return ((const double *)c->values)[i];
}
static inline bool df_column_bool(const struct df_column *c, int64_t i)
{
    return ((const uint8_t *)c->values)[i] != 0;
}
/* Borrowed pointer to the bytes of string row i (not NUL-terminated). */
static inline const char *df_column_string(const struct df_column *c, int64_t i, int64_t *len)
{
    *len = c->offsets[i + 1] - c->offsets[i];
    return c->data + c->offsets[i];
}
/* Sets validity bit i to 0 (allocating the bitmap if needed) and updates null_count. */
void df_column_set_null(struct df_column *c, int64_t i);
size_t df_type_width(df_type t);                    /* bytes per value; 0 for string */
int64_t df_column_bytes(const struct df_column *c); /* memory held, for budgets */
/* new: the rows listed in sel (absolute indices, any order, repeats allowed);
 * a row index of -1 yields a null. */
struct df_column *df_column_take(const struct df_column *c, const int64_t *sel, int64_t n);
struct df_column *df_column_slice(const struct df_column *c, int64_t start, int64_t n);
/* new: a column of n nulls of the given type. */
struct df_column *df_column_new_nulls(df_type type, int64_t n);

/* A table: named columns of equal length. A task's input and output and a
 * materialized partition are all tables. */
struct df_table {
    int ncols;
    int64_t nrows;
    char **names;            /* owned */
    struct df_column **cols; /* one reference each */
};

struct df_table *df_table_new(void);
void df_table_free(struct df_table *t); /* accepts NULL */
/* Adds a column; steals the reference `col`; name is copied. The first
 * column sets nrows; later ones must have the same length. */
void df_table_add(struct df_table *t, const char *name, struct df_column *col);
int df_table_find(const struct df_table *t, const char *name); /* index or -1 */
int64_t df_table_bytes(const struct df_table *t);
/* new: rows in sel (see df_column_take). */
struct df_table *df_table_take(const struct df_table *t, const int64_t *sel, int64_t n);
struct df_table *df_table_slice(const struct df_table *t, int64_t start, int64_t n);
/* new: the columns listed (shared, not copied). */
struct df_table *df_table_project(const struct df_table *t, const int *cols, int n);
/* new: a table holding the same columns as t (shared, not copied). */
struct df_table *df_table_share(const struct df_table *t);
/* new: tables with the same column names and types, one after another.
 * FR_EINVAL if their schemas differ. n may be 0 with a template schema. */
int df_table_concat(struct df_table *const *tables, int n, struct df_table **out,
                    struct fr_error *err);
/* new: an empty table with t's column names and types. */
struct df_table *df_table_empty_like(const struct df_table *t);

/* A schema: names and types, without data. */
struct df_field {
    char *name;
    df_type type;
};
struct df_schema {
    int nfields;
    struct df_field *fields;
};
void df_schema_init(struct df_schema *s);
void df_schema_cleanup(struct df_schema *s);
void df_schema_add(struct df_schema *s, const char *name, df_type type);
void df_schema_copy(struct df_schema *dst, const struct df_schema *src);
void df_schema_of_table(struct df_schema *dst, const struct df_table *t);
int df_schema_find(const struct df_schema *s, const char *name);
/* A table with no rows and this schema. */
struct df_table *df_table_from_schema(const struct df_schema *s);

/* A hash map from column names to ints, so that duplicate checks and name
 * lookups stay linear in the number of columns. Keys are copied. */
typedef struct df_name_map df_name_map;
df_name_map *df_name_map_new(void);    /* new: df_name_map_free */
void df_name_map_free(df_name_map *m); /* accepts NULL */
/* The value stored for name, or -1 when it is absent. */
int df_name_map_get(const df_name_map *m, const char *name);
/* Stores value (>= 0) for name, replacing an older one. */
void df_name_map_put(df_name_map *m, const char *name, int value);
/* new: a map of s's names to their indices (the first of a repeated name);
 * NULL when s is NULL. */
df_name_map *df_schema_index(const struct df_schema *s);

/* What one task may use, handed down by the runner from the frozen config. */
struct df_options {
    int64_t morsel_size_rows;
    bool maintain_order;
    bool nulls_first;
    const char *const *csv_null_values; /* borrowed */
    int n_csv_null_values;
    int64_t task_memory_limit_bytes; /* 0 = unlimited */
    const char *config_id; /* borrowed: the frozen config's ID (current_config_id()); may be NULL */
};

/* The execution context of one task: its options, a memory account and a
 * cancel flag. Operators charge what they allocate; going over the task's
 * limit fails the task with FR_EMEMLIMIT instead of the process dying. */
struct df_exec {
    const struct df_options *opts; /* borrowed */
    int64_t mem_used;
    int64_t mem_peak;
    const atomic_bool *cancel; /* may be NULL */
    int64_t null_errors;       /* values turned into nulls by on_error=null */
    int64_t deadline_us;       /* fr_mono_us() after which the task times out; 0 = none */
    /* The process's account, which every charge also goes to (the server's
     * --memory-limit, shared by its running tasks), or NULL: shared_add(
     * shared_arg, bytes, &budget) adds bytes (negative to give back) and
     * returns by how much the process is now over its budget (0: within it),
     * the budget in *budget. The owner gives back what is left charged
     * (mem_used) when the task ends. */
    int64_t (*shared_add)(void *arg, int64_t bytes, int64_t *budget);
    void *shared_arg;
};
void df_exec_init(struct df_exec *ex, const struct df_options *opts, const atomic_bool *cancel);
/* Adds bytes (may be negative) to the account; FR_EMEMLIMIT with a message
 * naming the limit when over it; FR_ENOSPACE memory-budget-exceeded when a
 * positive charge takes the process's account over its budget;
 * FR_ECANCELLED when the cancel flag is set; FR_ETIMEOUT past the deadline. */
int df_exec_charge(struct df_exec *ex, int64_t bytes, struct fr_error *err);
/* Gives bytes back to the account (and the process's), checking nothing. */
void df_exec_release(struct df_exec *ex, int64_t bytes);
int df_exec_check_cancel(const struct df_exec *ex, struct fr_error *err);

/* Date and timestamp text: YYYY-MM-DD and ISO 8601 (T or space, optional
 * fraction, optional Z or +hh:mm). 0 on success. */
int df_parse_date(const char *s, size_t n, int32_t *days);
int df_parse_timestamp(const char *s, size_t n, int64_t *micros);
void df_format_date(int32_t days, char *out, size_t outsz);
void df_format_timestamp(int64_t micros, char *out, size_t outsz);
void df_days_to_ymd(int32_t days, int *y, int *m, int *d);
int32_t df_ymd_to_days(int y, int m, int d);

/* ======================================================================
 * io: readers (engine_csv.c, engine_ndjson.c) and writers (engine_write.c)
 * ====================================================================== */
/* CSV options: from the source's "options" object plus the config. */
struct df_csv_options {
    char delimiter; /* default ',' */
    char quote;     /* default '"'; a quote inside a quoted field is doubled ("") */
    bool header;    /* default true */
    bool
        on_error_null; /* "on_error": "null": bad values become nulls, counted in ex->null_errors */
    const struct df_schema *hints; /* borrowed, may be NULL: types forced by name */
    int64_t sample_rows;           /* rows sampled for type inference (default 1000) */
};
void df_csv_options_init(struct df_csv_options *o);

/* A record-aligned piece of a data file, as cut by the planner. `line` is the
 * 1-based line number of the first byte of `start` (for error messages). */
struct df_byte_range {
    int64_t start;
    int64_t end; /* exclusive; records that START before end belong to this range */
    int64_t line;
};

/* A byte source the readers take a data file's bytes from: a file (pread,
 * df_file_source_open) or whatever a caller provides (a worker's HTTP range
 * reads), so the engine reads without knowing where the bytes live. */
struct df_source {
    /* Reads up to len bytes at off into buf; *got == 0 only at the end of the
     * source. A failure (I/O, a short or changed source) is an error in err. */
    int (*read)(struct df_source *s, int64_t off, char *buf, size_t len, size_t *got,
                struct fr_error *err);
    int64_t size;     /* bytes; -1 when unknown */
    const char *name; /* borrowed: the file's name in messages */
};
/* The file-backed source: fs is caller-owned; FR_ENOTFOUND or FR_EIO with
 * "cannot open <name>" when path is not a readable regular file. */
struct df_file_source {
    struct df_source base;
    int fd;
};
int df_file_source_open(struct df_file_source *fs, const char *path, struct fr_error *err);
void df_file_source_close(struct df_file_source *fs); /* accepts a closed one */

/* Infers the schema of a CSV file from its header and a sample of rows
 * (int64, float64, bool, date, timestamp, else string; hints win; a column
 * of only nulls is string). out is caller-initialized and filled. */
int df_csv_infer_schema(const char *path, const struct df_csv_options *o,
                        const struct df_options *eo, struct df_schema *out, struct fr_error *err);
/* Cuts a file into record-aligned ranges of about target_bytes each
 * (quote-aware for CSV: a quoted field may hold a newline), streaming the
 * file rather than loading it. The header line is excluded from the first
 * range. *ranges is new (free()). */
int df_csv_split(const char *path, const struct df_csv_options *o, int64_t target_bytes,
                 struct df_byte_range **ranges, int *nranges, struct fr_error *err);
/* df_csv_split that stops reading once max_ranges (> 0) whole ranges are
 * cut: the file's first records only (a preview). *truncated says whether
 * records were left after them. */
int df_csv_split_prefix(const char *path, const struct df_csv_options *o, int64_t target_bytes,
                        int max_ranges, struct df_byte_range **ranges, int *nranges,
                        bool *truncated, struct fr_error *err);
/* Reads the records of one range into a table with the given schema.
 * Malformed data (too many/few fields, an unterminated quote, a value that
 * does not fit its type) fails with FR_EDATA naming file, line and column,
 * unless o->on_error_null. Values matching opts->csv_null_values are null.
 * If `columns` is non-NULL only those schema fields are materialized (in
 * that order) - projection push-down. */
int df_csv_read(const char *path, const struct df_byte_range *range, const struct df_csv_options *o,
                const struct df_schema *schema, const int *columns, int ncolumns,
                struct df_exec *ex, struct df_table **out, struct fr_error *err);

/* df_csv_read over a byte source (borrowed; its name names the file). */
int df_csv_read_source(struct df_source *src, const struct df_byte_range *range,
                       const struct df_csv_options *o, const struct df_schema *schema,
                       const int *columns, int ncolumns, struct df_exec *ex, struct df_table **out,
                       struct fr_error *err);

/* NDJSON: one JSON object per line. Same contracts as the CSV functions. */
int df_ndjson_infer_schema(const char *path, const struct df_csv_options *o, struct df_schema *out,
                           struct fr_error *err);
int df_ndjson_split(const char *path, int64_t target_bytes, struct df_byte_range **ranges,
                    int *nranges, struct fr_error *err);
int df_ndjson_split_prefix(const char *path, int64_t target_bytes, int max_ranges,
                           struct df_byte_range **ranges, int *nranges, bool *truncated,
                           struct fr_error *err);
int df_ndjson_read(const char *path, const struct df_byte_range *range,
                   const struct df_csv_options *o, const struct df_schema *schema,
                   const int *columns, int ncolumns, struct df_exec *ex, struct df_table **out,
                   struct fr_error *err);

/* df_ndjson_read over a byte source (borrowed). */
int df_ndjson_read_source(struct df_source *src, const struct df_byte_range *range,
                          const struct df_csv_options *o, const struct df_schema *schema,
                          const int *columns, int ncolumns, struct df_exec *ex,
                          struct df_table **out, struct fr_error *err);

/* Inline rows: a JSON array of objects (jansson json_t*, borrowed), types
 * inferred across all rows (int64 widened to float64 when mixed). */
int df_rows_read(const void *json_rows, const struct df_schema *hints, struct df_table **out,
                 struct fr_error *err);

/* Writers. Each appends to an fr_buf rows [start, start+n) of t so results
 * can be streamed in chunks. JSON: one array per row ("[1,\"x\",null]")
 * joined by commas; dates and timestamps as ISO 8601 strings; non-finite
 * floats as null. CSV: RFC 4180 quoting, empty field for null. NDJSON: one
 * object per line. */
void df_write_json_rows(const struct df_table *t, int64_t start, int64_t n, struct fr_buf *b);
void df_write_csv_header(const struct df_table *t, struct fr_buf *b);
void df_write_csv_rows(const struct df_table *t, int64_t start, int64_t n, struct fr_buf *b);
void df_write_ndjson_rows(const struct df_table *t, int64_t start, int64_t n, struct fr_buf *b);

/* ---- Parquet (engine_parquet_*.c): our own reader and writer --------------
 * Reader: the footer's Thrift compact FileMetaData (unknown fields skipped),
 * a flat schema of required/optional columns, physical types INT32, INT64,
 * FLOAT, DOUBLE, BOOLEAN, BYTE_ARRAY (UTF8/STRING) and the logical types
 * DATE, TIMESTAMP (milli/micro/nano; read as microseconds), DECIMAL (read
 * as float64), INT(8|16|32) (widened to int64); FLOAT widens to float64.
 * Data pages v1 and v2, every encoding of the format that these types use,
 * codecs UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW.
 * Errors: a malformed or truncated file is FR_EDATA (kind malformed-data)
 * whose message names the file, the row group and the column
 * ("trips.parquet: row group 3, column 'fare': page header truncated"), with
 * err->file the file's name and err->field the column. A column the reader
 * cannot represent (nested, a repeated field, INT96, an unknown codec) is
 * FR_EVALIDATION (kind unsupported-parquet) naming the column. */
typedef struct df_parquet df_parquet;

/* Reads and checks the footer of src (borrowed: it must outlive *out; the
 * reads of df_parquet_read go through it). *out is new (df_parquet_free).
 * Every offset and size in the footer is checked against src->size. */
int df_parquet_open(struct df_source *src, df_parquet **out, struct fr_error *err);
void df_parquet_free(df_parquet *pq); /* accepts NULL */
/* Borrowed (valid as long as pq): the columns as engine types. */
const struct df_schema *df_parquet_schema(const df_parquet *pq);
int64_t df_parquet_num_rows(const df_parquet *pq);
int df_parquet_num_row_groups(const df_parquet *pq);

struct df_parquet_row_group {
    int64_t num_rows;
    int64_t start, end;       /* byte span of its column chunks in the file */
    int64_t compressed_bytes; /* sum of its column chunks' compressed sizes */
};
/* rg in [0, df_parquet_num_row_groups). */
void df_parquet_row_group_info(const df_parquet *pq, int rg, struct df_parquet_row_group *out);
/* Bytes of the column chunks of `columns` (schema indices; ncolumns < 0 =
 * all) in row group rg: what a projected scan reads. */
int64_t df_parquet_row_group_bytes(const df_parquet *pq, int rg, const int *columns, int ncolumns);
/* An estimate of the bytes the columns of `columns` (as above) of row group
 * rg take once decoded into the engine's columns, what a scan task holds:
 * rows x the value width for a fixed-width column, rows x 8 (offsets) plus
 * the chunk's uncompressed size for a string column, or rows x the mean
 * length of its min and max statistics when more (a dictionary-encoded
 * chunk; the footer does not tell a dictionary's size), plus a validity bit
 * per row. Saturates at
 * INT64_MAX / 4 for a hostile footer. */
int64_t df_parquet_row_group_decoded_bytes(const df_parquet *pq, int rg, const int *columns,
                                           int ncolumns);

/* A column chunk's statistics, in the engine's type of the column (int64
 * for ints, dates as days in i, timestamps as microseconds in i, float64
 * in f, bool in b, strings borrowed from pq). has_min_max is false when the
 * file has none or has only the deprecated min/max of a type whose order
 * they do not define (strings, decimals). null_count -1 = unknown. */
struct df_parquet_value {
    int64_t i;
    double f;
    bool b;
    const char *s; /* borrowed; not NUL-terminated */
    int64_t len;
};
struct df_parquet_stats {
    bool has_min_max;
    struct df_parquet_value min, max;
    int64_t null_count;
};
void df_parquet_column_stats(const df_parquet *pq, int rg, int col, struct df_parquet_stats *out);

/* Reads row groups [rg_first, rg_first + n_rg) into one new table: only
 * `columns` (schema indices, in that order; ncolumns < 0 = all), so only
 * those column chunks are read. Memory is charged to ex; the cancel flag is
 * checked between pages. */
int df_parquet_read(df_parquet *pq, int rg_first, int n_rg, const int *columns, int ncolumns,
                    struct df_exec *ex, struct df_table **out, struct fr_error *err);
/* Path conveniences (for the data dir's listing and an upload's check):
 * the schema (out caller-initialized), and a full read of every row group,
 * one at a time, decoding every page and discarding it as it goes (memory
 * holds one page of each column; ex's task_memory_limit_bytes bounds it).
 * The decoded bytes are a work budget: more than the larger of
 * DF_PARQUET_VALIDATE_MIN_WORK and DF_PARQUET_VALIDATE_RATIO times the
 * file's size is FR_ETOOLARGE (kind payload-too-large), so a small file
 * that decodes to gigabytes is refused in bounded time. */
#define DF_PARQUET_VALIDATE_MIN_WORK ((int64_t)1 << 30)
#define DF_PARQUET_VALIDATE_RATIO 32
int df_parquet_file_schema(const char *path, struct df_schema *out, int64_t *num_rows,
                           struct fr_error *err);
int df_parquet_file_validate(const char *path, struct df_exec *ex, struct fr_error *err);

/* Writer: a Parquet file as a stream of bytes, one row group per call, so
 * a result leaves without being encoded whole. Columns are written
 * dictionary-encoded (RLE_DICTIONARY with a PLAIN dictionary page) while the
 * dictionary stays small, else PLAIN; data pages v1; optional columns with
 * definition levels; statistics (min, max, null_count) per chunk. Types:
 * bool, int64, float64, string (UTF8), date (DATE), timestamp (TIMESTAMP
 * micros, UTC-adjusted). */
enum df_parquet_codec { DF_PARQUET_UNCOMPRESSED, DF_PARQUET_SNAPPY, DF_PARQUET_ZSTD };
typedef struct df_parquet_writer df_parquet_writer;
/* new (df_parquet_writer_free); schema is copied. */
df_parquet_writer *df_parquet_writer_new(const struct df_schema *schema,
                                         enum df_parquet_codec codec);
void df_parquet_writer_free(df_parquet_writer *w); /* accepts NULL */
/* Appends to out the bytes of one row group holding rows [start, start+n)
 * of t (t's columns match the schema by position; n may be 0 only when no
 * row group was written yet, to give an empty file one), preceded by the
 * "PAR1" magic on the first call. */
int df_parquet_writer_write(df_parquet_writer *w, const struct df_table *t, int64_t start,
                            int64_t n, struct fr_buf *out, struct fr_error *err);
/* Appends the footer (FileMetaData, its length, "PAR1"); the magic too if
 * nothing was written. The writer takes no more rows after it. */
int df_parquet_writer_finish(df_parquet_writer *w, struct fr_buf *out, struct fr_error *err);

/* Row-group pruning (engine_parquet_prune.c): whether any row of a row
 * group can make the bool predicate e true, judged from column statistics;
 * false only when the statistics prove none can. stats(arg, col, out) fills
 * the statistics of column col (an index of the schema e is bound to; out
 * arrives zeroed with null_count -1), num_rows is the group's row count.
 * Understood: and, or, column op literal (= < <= > >=, either side),
 * between, in (...), is [not] null, on int, float, date, timestamp and
 * string columns (through order-keeping casts); anything else may match. */
struct df_expr;
typedef void (*df_parquet_stats_fn)(void *arg, int col, struct df_parquet_stats *out);
bool df_expr_may_match(const struct df_expr *e, df_parquet_stats_fn stats, void *arg,
                       int64_t num_rows);
/* The same over row group rg of pq, e bound to df_parquet_schema(pq). */
bool df_parquet_row_group_may_match(const df_parquet *pq, int rg, const struct df_expr *e);

/* ---- Arrow IPC stream (engine_arrow.c) ---------------------------------------
 * The encapsulated message format (0xFFFFFFFF continuation, int32 metadata
 * length, a flatbuffer Message padded to 8 bytes, then the body): a schema
 * message, record batches, the end-of-stream marker (0xFFFFFFFF 00000000).
 * Types: bool, int64, float64, string as large_utf8 (our layout), date as
 * date32[day], timestamp as timestamp[us, tz=UTC]; validity bitmaps when a
 * column has nulls; buffers 8-byte aligned. */
void df_arrow_write_schema(const struct df_table *t, struct fr_buf *out);
/* One record batch of rows [start, start+n) of t (n may be 0). */
void df_arrow_write_batch(const struct df_table *t, int64_t start, int64_t n, struct fr_buf *out);
void df_arrow_write_eos(struct fr_buf *out);

/* Binary columnar encoding of a table (the partition wire and spill format):
 * a documented layout of our own (see engine_serde.c). *out is new. */
int df_table_serialize(const struct df_table *t, char **out, size_t *len, struct fr_error *err);
int df_table_deserialize(const char *data, size_t len, struct df_table **out, struct fr_error *err);
/* The bytes df_table_serialize makes, read piece by piece straight from the
 * table's buffers (a worker sends a partition of hundreds of MB without a
 * copy of it): new, holding a share of t; NULL when the memory for a
 * slice's rebased string offsets cannot be had. */
typedef struct df_serde_reader df_serde_reader;
df_serde_reader *df_serde_reader_new(const struct df_table *t);
/* The encoding of rows [start, start + n) of t alone (a table of n rows: its
 * own validity bits and null counts, string offsets from 0); NULL as above,
 * or when the range is not within t's rows. */
df_serde_reader *df_serde_reader_new_range(const struct df_table *t, int64_t start, int64_t n);
size_t df_serde_reader_size(const df_serde_reader *r);
/* Copies the next up to max bytes into buf; the count, 0 at the end. */
size_t df_serde_reader_read(df_serde_reader *r, char *buf, size_t max);
void df_serde_reader_free(df_serde_reader *r); /* accepts NULL */

/* ======================================================================
 * expr: expressions (engine_expr_*.c)
 * ====================================================================== */
typedef struct df_expr df_expr;

/* Parses and binds a scalar expression against a schema, checking types.
 * Grammar (SQL-like, case-insensitive keywords): column names (bare or
 * "double quoted"), literals (integers, floats, 'strings' with '' escape,
 * true/false/null, date '2024-01-31', timestamp '...'), + - * / %, unary -,
 * = == != <> < <= > >=, and/or/not, is [not] null, [not] in (...),
 * [not] between a and b, [not] like 'pat' (% and _), case when .. then ..
 * [else ..] end, cast(x as type), functions coalesce, abs, round(x[, n]),
 * floor, ceil, lower, upper, length, substr(s, start[, len]) (1-based),
 * contains, starts_with, ends_with, year, month, day; an optional trailing
 * "as alias". Type rules follow SQL/DuckDB: int op int -> int64 except '/'
 * which gives float64; int op float -> float64; comparisons between numeric
 * types compare numerically; null propagates; integer overflow and division
 * by zero yield null.
 * Errors: FR_EINVAL with err->position (0-based byte offset) and a message
 * like "unknown column 'fair' at position 0; did you mean 'fare'?"
 * (suggested by edit distance), err->field = the column name. */
int df_expr_parse(const char *text, const struct df_schema *schema, df_expr **out,
                  struct fr_error *err);
void df_expr_free(df_expr *e); /* accepts NULL */
df_type df_expr_type(const df_expr *e);
/* Borrowed: the alias, else the column name for a bare column, else the
 * expression text as written (trimmed). */
const char *df_expr_name(const df_expr *e);
/* Appends to out the distinct schema indices of the columns the expression
 * reads (for projection push-down). */
void df_expr_columns(const df_expr *e, int *out, int *nout, int cap);
/* If the expression is a bare column reference, its index, else -1. */
int df_expr_column_index(const df_expr *e);

/* Evaluates rows [start, start+n) of t (whose columns match the bound
 * schema by position), vectorized, into a new column of n values.
 * Temporaries are charged to ex while they live and released; the result is
 * handed over uncharged (the caller charges what it keeps). FR_EMEMLIMIT or
 * FR_ECANCELLED from the account; FR_EINTERNAL if the range is outside t.
 * A bare null expression is typed bool. */
int df_expr_eval(const df_expr *e, const struct df_table *t, int64_t start, int64_t n,
                 struct df_exec *ex, struct df_column **out, struct fr_error *err);
/* For a bool predicate: 1 when t's metadata alone shows it true on every
 * row (v IS NOT NULL over a column without nulls, say), 0 when on none, -1
 * when only evaluating it tells. A filter can then skip the rows' work. */
int df_expr_filter_constant(const df_expr *e, const struct df_table *t);
/* For a bool predicate: appends to sel the absolute indices in
 * [start, start+n) where it is true (null counts as false); *nsel grows.
 * sel must have room for n entries after *nsel. FR_EINVAL if not bool. */
int df_expr_filter(const df_expr *e, const struct df_table *t, int64_t start, int64_t n,
                   struct df_exec *ex, int64_t *sel, int64_t *nsel, struct fr_error *err);

/* Aggregate items such as "sum(fare) as total", "count(*)",
 * "max(v1) - min(v2) as range_v", "avg(v3)". An item is an expression over
 * aggregate calls: the parser extracts each call into `calls` (function and
 * an argument expression bound to the input schema), and binds `post` to a
 * schema of the calls' results named "__agg0", "__agg1", ... Functions:
 * count(*), count(x), count_distinct(x) (also count(distinct x)), sum,
 * mean/avg, min, max, stddev (sample), first, median, corr(x, y).
 * FR_EINVAL if an item has no aggregate, nests one, or a column appears
 * outside an aggregate. */
enum df_agg_func {
    DF_AGG_COUNT_STAR,
    DF_AGG_COUNT,
    DF_AGG_COUNT_DISTINCT,
    DF_AGG_SUM,
    DF_AGG_MEAN,
    DF_AGG_MIN,
    DF_AGG_MAX,
    DF_AGG_STDDEV,
    DF_AGG_FIRST,
    DF_AGG_MEDIAN,
    DF_AGG_CORR,
};
struct df_agg_call {
    enum df_agg_func func;
    df_expr *arg;  /* NULL for count(*) */
    df_expr *arg2; /* corr's second argument, else NULL */
};
struct df_agg_item {
    char *name; /* alias or the text as written */
    int ncalls;
    struct df_agg_call *calls;
    df_expr *post; /* bound to the __aggN schema */
};
int df_agg_item_parse(const char *text, const struct df_schema *schema, struct df_agg_item *out,
                      struct fr_error *err);
void df_agg_item_cleanup(struct df_agg_item *it);
/* The result type of an aggregate over an argument type (count -> int64,
 * sum of int -> int64, mean/stddev/median/corr -> float64, min/max/first -> arg). */
df_type df_agg_result_type(enum df_agg_func f, df_type arg);
const char *df_agg_func_name(enum df_agg_func f);

/* ======================================================================
 * ops: aggregation, join, sort, partitioning (engine_agg.c, engine_join.c,
 * engine_sort.c, engine_partition.c)
 * ====================================================================== */
/* One aggregate over already evaluated input columns. */
struct df_agg_spec {
    enum df_agg_func func;
    int arg;  /* input column index, -1 for count(*) */
    int arg2; /* corr: second input column, else -1 */
};

/* Hash aggregation in two phases. df_agg_partial groups rows of `in` by the
 * key columns and emits a partial-state table: the keys (same names) then
 * state columns of the operator's own design (serializable as a table;
 * median and count_distinct may carry values rather than a fixed state).
 * df_agg_final merges any number of partial tables made with the same
 * keys/specs (in any split of the input; each holds one row per group, as
 * df_agg_partial makes it or any subset of its rows, so a single partial is
 * merged without regrouping) and emits keys then one column per
 * spec named names[i], typed by df_agg_result_type. With nkeys == 0 there
 * is exactly one output row (count 0, other aggregates null on no input).
 * Null keys form their own group. Output order: by first appearance when
 * ex->opts->maintain_order, else unspecified. Memory is charged to ex.
 * arg_types[i] is the type of specs[i]'s (first) argument in the input. */
int df_agg_partial(const struct df_table *in, const int *keys, int nkeys,
                   const struct df_agg_spec *specs, int nspecs, struct df_exec *ex,
                   struct df_table **out, struct fr_error *err);
/* df_agg_partial's partial split by the keys' hash into nbuckets tables
 * (outs, the caller's array), as df_hash_partition would split it. Rows
 * over many groups are split first and grouped part by part (the output's
 * groups then come in no order of appearance: not with maintain_order). */
int df_agg_partial_split(const struct df_table *in, const int *keys, int nkeys,
                         const struct df_agg_spec *specs, int nspecs, struct df_exec *ex,
                         int nbuckets, struct df_table **outs, struct fr_error *err);
int df_agg_final(struct df_table *const *partials, int nparts, int nkeys,
                 const struct df_agg_spec *specs, int nspecs, const df_type *arg_types,
                 const char *const *names, struct df_exec *ex, struct df_table **out,
                 struct fr_error *err);

/* Hash join. how: inner, left, right, outer, semi, anti. Builds the hash
 * table on the smaller input (for every `how`). Keys compare by value (int64
 * vs float64 numerically; null never matches). Output: semi/anti: the left
 * columns only; otherwise the left columns then the right's. With
 * merge_keys (the "on" form), the right key columns are left out and the
 * left key columns hold the coalesced key (so outer/right joins show keys of
 * right-only rows). A right column whose name clashes with a left one gets
 * `suffix` appended ("_right"). Duplicate keys give every pair. */
enum df_join_how {
    DF_JOIN_INNER,
    DF_JOIN_LEFT,
    DF_JOIN_RIGHT,
    DF_JOIN_OUTER,
    DF_JOIN_SEMI,
    DF_JOIN_ANTI
};
int df_join_how_parse(const char *s, enum df_join_how *out);
int df_join(const struct df_table *left, const struct df_table *right, const int *left_keys,
            const int *right_keys, int nkeys, enum df_join_how how, bool merge_keys,
            const char *suffix, struct df_exec *ex, struct df_table **out, struct fr_error *err);

/* Sorting. A stable sort (so maintain_order keeps input order among ties);
 * nulls go first or last per key. */
struct df_sort_key {
    int col;
    bool desc;
    bool nulls_first;
};
int df_sort(const struct df_table *in, const struct df_sort_key *keys, int nkeys,
            struct df_exec *ex, struct df_table **out, struct fr_error *err);
/* k-way merge of tables each already sorted by keys, stable by input order. */
int df_sort_merge(struct df_table *const *sorted, int n, const struct df_sort_key *keys, int nkeys,
                  struct df_exec *ex, struct df_table **out, struct fr_error *err);
/* Up to k evenly spaced sampled rows of the key columns (a table of those columns). */
struct df_table *df_sort_sample(const struct df_table *in, const struct df_sort_key *keys,
                                int nkeys, int64_t k);
/* Picks nparts-1 boundary rows from the concatenated samples (sorted). */
int df_sort_boundaries(const struct df_table *samples, const struct df_sort_key *keys, int nkeys,
                       int nparts, struct df_exec *ex, struct df_table **out, struct fr_error *err);
/* Splits `in` into nparts tables by range against the boundaries (sample
 * columns 0..nkeys-1 correspond to keys[0..nkeys-1]); a row equal to a
 * boundary goes to the part after it. parts is the caller's array of nparts
 * slots, each set to a new table (all NULL on failure). */
int df_range_partition(const struct df_table *in, const struct df_sort_key *keys, int nkeys,
                       const struct df_table *boundaries, int nparts, struct df_table **parts,
                       struct fr_error *err);

/* Splits `in` into nparts tables by a hash of the key columns; equal keys
 * (int64 and float64 of equal value included) go to the same part; parts
 * as for df_range_partition. */
int df_hash_partition(const struct df_table *in, const int *keys, int nkeys, int nparts,
                      struct df_table **parts, struct fr_error *err);
/* The first k rows of each group of the `by` columns in `keys` order (ties
 * keep input order), like a stable sort by (by, keys) cut to k rows per
 * group, in one hash pass: O(n * k). For small k (<= 64). Output order:
 * groups in ascending order of the by columns (nulls as ex's nulls_first;
 * groups comparing equal, e.g. NaN, by first appearance), then rows in keys
 * order within a group (ties in input order). nby may be 0 (one group).
 * Memory is charged to ex. */
int df_top_k(const struct df_table *in, const int *by, int nby, const struct df_sort_key *keys,
             int nkeys, int64_t k, struct df_exec *ex, struct df_table **out, struct fr_error *err);
/* df_top_k with the groups in order of first appearance when order_groups
 * is false (no sort of the groups: for a partial top_k whose output a later
 * one groups again; rows within a group are as df_top_k puts them). */
int df_top_k_groups(const struct df_table *in, const int *by, int nby,
                    const struct df_sort_key *keys, int nkeys, int64_t k, bool order_groups,
                    struct df_exec *ex, struct df_table **out, struct fr_error *err);

/* 64-bit hashes of the key columns of rows [0, nrows) into out (xxhash). */
void df_hash_rows(const struct df_table *in, const int *keys, int nkeys, uint64_t *out);

/* ======================================================================
 * Window (engine_window.c, engine_window_parse.c)
 * ====================================================================== */
/* Window functions over partitions of rows in an order, as SQL's
 * f(...) OVER (PARTITION BY .. ORDER BY ..) with the default frame:
 * aggregates run over RANGE UNBOUNDED PRECEDING .. CURRENT ROW when there
 * is an order (peers, rows equal on every order key, share a value) and
 * over the whole partition when there is none. */
enum df_window_func {
    DF_WIN_ROW_NUMBER,
    DF_WIN_RANK,
    DF_WIN_DENSE_RANK,
    DF_WIN_LAG,
    DF_WIN_LEAD,
    DF_WIN_SUM,
    DF_WIN_AVG,
    DF_WIN_MIN,
    DF_WIN_MAX,
    DF_WIN_COUNT,
    DF_WIN_COUNT_STAR,
};
#define DF_WINDOW_MAX_FUNCS 256
#define DF_WINDOW_MAX_OFFSET 1000000
/* One function of a window, parsed from text such as "rank() as r",
 * "lag(x, 2, 0) as p2", "sum(x * 2)", "count(*) as c". */
struct df_window_call {
    enum df_window_func func;
    char *name;             /* new: the alias, else the text as written (trimmed) */
    char *arg_text;         /* new: the argument as written; NULL when none (count(*) too) */
    int arg;                /* the argument's column when it is a bare column, else -1 */
    df_type arg_type;       /* the argument's type (DF_TYPE_NULL when none) */
    df_type type;           /* the result's type */
    int64_t offset;         /* lag/lead: rows back or ahead (default 1) */
    char *default_text;     /* new: lag/lead's default literal as written, or NULL */
    struct df_column *dflt; /* its value: one row of arg_type; NULL when the default is null */
};
/* Parses and binds text against schema into out (caller-owned; clean it
 * with df_window_call_cleanup, also after a failure). Functions:
 * row_number(), rank(), dense_rank(), lag/lead(x [, offset [, default]]),
 * sum, avg (mean), min, max, count(x), count(*); an optional "as alias"
 * (a word or "quoted"). Errors FR_EINVAL, kind invalid-expression (syntax,
 * an unknown function with a "did you mean", a wrong argument count or
 * type) or invalid-plan (an offset that is not an integer literal from 0 to
 * DF_WINDOW_MAX_OFFSET, a default that is not a literal of the argument's
 * type), err->field naming the function's text or member. */
int df_window_call_parse(const char *text, const struct df_schema *schema,
                         struct df_window_call *out, struct fr_error *err);
void df_window_call_cleanup(struct df_window_call *c);
const char *df_window_func_name(enum df_window_func f); /* "row_number", "lag", ... */

/* new (*out): in's rows sorted by (part ascending, nulls per
 * ex->opts->nulls_first; then order), stably, so ties keep input order,
 * with one column per call appended after in's columns, named calls[i].name.
 * Every call's arg must be a column of in (bare columns; a caller computes
 * expressions first). Partition keys compare equal when null on both sides.
 * FR_EINVAL for a bad column index or too many calls (DF_WINDOW_MAX_FUNCS);
 * memory is charged to ex while the operator runs. */
int df_window(const struct df_table *in, const int *part, int npart,
              const struct df_sort_key *order, int norder, const struct df_window_call *calls,
              int ncalls, struct df_exec *ex, struct df_table **out, struct fr_error *err);

#endif
