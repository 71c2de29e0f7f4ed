/* bench_csv_load: times the CSV reader on one file, single-threaded: schema
 * inference, splitting, and reading either one range or every range of
 * about target_bytes followed by a concat. Not a test: prints seconds.
 * Usage: bench_csv_load file.csv [target_bytes]   (build: bench/build.sh) */
#include "engine/engine.h"

#include <stdio.h>
#include <stdlib.h>

static double secs(int64_t us)
{
    return (double)us / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s file.csv [target_bytes]\n", argv[0]);
        return 2;
    }
    int64_t target = argc > 2 ? atoll(argv[2]) : ((int64_t)1 << 40);
    struct df_options eo = {.morsel_size_rows = 65536};
    struct df_csv_options o;
    struct df_exec ex;
    struct fr_error err;
    struct df_schema schema;
    struct df_byte_range *ranges = NULL;
    int nranges = 0;
    df_csv_options_init(&o);
    df_exec_init(&ex, &eo, NULL);
    fr_error_init(&err);
    df_schema_init(&schema);
    int64_t t0 = fr_mono_us();
    if (df_csv_infer_schema(argv[1], &o, &eo, &schema, &err) != FR_OK ||
        df_csv_split(argv[1], &o, target, &ranges, &nranges, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int64_t t1 = fr_mono_us();
    struct df_table **parts = calloc((size_t)nranges, sizeof(*parts));
    for (int i = 0; i < nranges; i++) {
        if (df_csv_read(argv[1], &ranges[i], &o, &schema, NULL, 0, &ex, &parts[i], &err) != FR_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
    }
    int64_t t2 = fr_mono_us();
    struct df_table *all = NULL;
    if (df_table_concat(parts, nranges, &all, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int64_t t3 = fr_mono_us();
    printf("rows %lld cols %d ranges %d\n", (long long)all->nrows, all->ncols, nranges);
    for (int i = 0; i < schema.nfields; i++)
        printf("  %s %s\n", schema.fields[i].name, df_type_name(schema.fields[i].type));
    printf("infer+split %.3f s, read %.3f s, concat %.3f s, total %.3f s, peak %lld MB\n",
           secs(t1 - t0), secs(t2 - t1), secs(t3 - t2), secs(t3 - t0),
           (long long)(ex.mem_peak >> 20));
    struct fr_buf b; /* first and last rows, to compare with head/tail of the file */
    fr_buf_init(&b);
    df_write_csv_rows(all, 0, 1, &b);
    df_write_csv_rows(all, all->nrows - 1, 1, &b);
    fputs(b.data, stdout);
    fr_buf_cleanup(&b);
    for (int i = 0; i < nranges; i++)
        df_table_free(parts[i]);
    free(parts);
    df_table_free(all);
    free(ranges);
    df_schema_cleanup(&schema);
    return 0;
}
