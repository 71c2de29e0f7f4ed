/* partition_codec: what compressing a partition transfer would cost and save. Reads one range
 * of a CSV file (about target_bytes) as a task would, serializes the table as a partition
 * transfer does (df_table_serialize, the bytes GET /v1/partitions/{id} sends), then times LZ4
 * (the fast default) and zstd levels 1 and 3 on those bytes, one thread, best of 5, and prints the ratio, MB/s of compression and decompression, and the time
 * to move the partition over a 10 Gbit/s link raw and compressed (compress + send + decompress,
 * serial on one core each side, as one transfer would run). Not a test.
 * Usage: partition_codec file.csv [target_bytes]
 * (cmake --build build-rel --target partition_codec) */
#include "engine/engine.h"

#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define LINK_BYTES_PER_S (10e9 / 8)

static double best(double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

static void report(const char *name, size_t raw, size_t packed, double ct, double dt)
{
    double link_raw = (double)raw / LINK_BYTES_PER_S;
    double link_packed = ct + (double)packed / LINK_BYTES_PER_S + dt;
    printf("| %s | %.2f | %.0f | %.0f | %.1f | %.1f | %.2f |\n", name, (double)raw / (double)packed,
           (double)raw / ct / 1e6, (double)raw / dt / 1e6, link_raw * 1e3, link_packed * 1e3,
           link_packed / link_raw);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s file.csv [target_bytes]\n", argv[0]);
        return 2;
    }
    int64_t target = argc > 2 ? atoll(argv[2]) : (64 << 20);
    struct df_options eo = {.morsel_size_rows = 65536};
    struct df_csv_options o;
    struct df_exec ex;
    struct fr_error err;
    struct df_schema schema;
    struct df_byte_range *ranges = NULL;
    int nranges = 0;
    bool cut = false;
    df_csv_options_init(&o);
    df_exec_init(&ex, &eo, NULL);
    fr_error_init(&err);
    df_schema_init(&schema);
    struct df_table *t = NULL;
    if (df_csv_infer_schema(argv[1], &o, &eo, &schema, &err) != FR_OK ||
        df_csv_split_prefix(argv[1], &o, target, 1, &ranges, &nranges, &cut, &err) != FR_OK ||
        df_csv_read(argv[1], &ranges[0], &o, &schema, NULL, 0, &ex, &t, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    char *bytes = NULL;
    size_t len = 0;
    if (df_table_serialize(t, &bytes, &len, &err) != FR_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    printf("partition: %lld rows, %d columns, %zu serialized bytes (from %lld CSV bytes)\n\n",
           (long long)t->nrows, t->ncols, len, (long long)(ranges[0].end - ranges[0].start));
    printf("| codec | ratio | compress MB/s | decompress MB/s | 10 Gbit/s raw ms | "
           "compressed ms (c + send + d) | compressed / raw |\n|---|---:|---:|---:|---:|---:|---:|\n");
    size_t cap = ZSTD_compressBound(len) > (size_t)LZ4_compressBound((int)len)
                     ? ZSTD_compressBound(len)
                     : (size_t)LZ4_compressBound((int)len);
    char *packed = malloc(cap), *back = malloc(len);
    double ct[5], dt[5];
    size_t plen = 0;
    for (int r = 0; r < 5; r++) {
        int64_t a = fr_mono_us();
        plen = (size_t)LZ4_compress_default(bytes, packed, (int)len, (int)cap);
        int64_t b = fr_mono_us();
        LZ4_decompress_safe(packed, back, (int)plen, (int)len);
        int64_t c = fr_mono_us();
        ct[r] = (double)(b - a) / 1e6;
        dt[r] = (double)(c - b) / 1e6;
    }
    if (memcmp(back, bytes, len) != 0)
        return fprintf(stderr, "lz4 round trip differs\n"), 1;
    report("lz4 (default)", len, plen, best(ct, 5), best(dt, 5));
    for (int level = 1; level <= 3; level += 2) {
        for (int r = 0; r < 5; r++) {
            int64_t a = fr_mono_us();
            plen = ZSTD_compress(packed, cap, bytes, len, level);
            int64_t b = fr_mono_us();
            ZSTD_decompress(back, len, packed, plen);
            int64_t c = fr_mono_us();
            ct[r] = (double)(b - a) / 1e6;
            dt[r] = (double)(c - b) / 1e6;
        }
        if (ZSTD_isError(plen) || memcmp(back, bytes, len) != 0)
            return fprintf(stderr, "zstd round trip differs\n"), 1;
        char name[32];
        snprintf(name, sizeof(name), "zstd level %d", level);
        report(name, len, plen, best(ct, 5), best(dt, 5));
    }
    free(packed);
    free(back);
    free(bytes);
    free(ranges);
    df_table_free(t);
    df_schema_cleanup(&schema);
    return 0;
}
