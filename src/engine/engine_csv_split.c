/* engine_csv_split: cuts a CSV or NDJSON file into record-aligned byte ranges
 * in one streaming pass (1 MiB reads, never the whole file), following the
 * tokenizer's quote rules so that a quoted newline never becomes a cut.
 * Between two quote characters the state cannot change, so the pass jumps
 * from quote to quote with memchr and only counts line feeds in between. */
#include "engine_io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPLIT_BUF (1 << 20)

enum split_state { S_UNQUOTED, S_QUOTED, S_QUOTE_SEEN };

struct splitter {
    char delim, quote;
    int64_t target;
    bool in_header; /* the header record is not part of any range */
    enum split_state state;
    char prev;           /* the byte before the current chunk */
    int64_t line;        /* 1-based line number at the scan position */
    int64_t range_start; /* absolute offset where the open range starts */
    int64_t range_line;
    struct df_byte_range *ranges; /* owned until handed out */
    int n, cap;
};

static void push_range(struct splitter *s, int64_t end)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->ranges = fr_xrealloc(s->ranges, sizeof(*s->ranges) * (size_t)s->cap);
    }
    s->ranges[s->n].start = s->range_start;
    s->ranges[s->n].end = end;
    s->ranges[s->n].line = s->range_line;
    s->n++;
}

/* A record boundary at absolute offset b (just after a line feed); s->line
 * is already the line number of b. */
static void boundary(struct splitter *s, int64_t b)
{
    if (s->in_header) {
        s->in_header = false;
    } else {
        push_range(s, b);
    }
    s->range_start = b;
    s->range_line = s->line;
}

/* Unquoted bytes [p, z) of the chunk at absolute offset base: every line
 * feed ends a record; cut at the first one at or after the target. */
static void scan_unquoted(struct splitter *s, const char *buf, int64_t base, const char *p,
                          const char *z)
{
    while (p < z) {
        int64_t want = s->in_header ? 0 : s->range_start + s->target - 1;
        const char *from = want - base > p - buf ? buf + (want - base) : p;
        const char *nl = from < z ? memchr(from, '\n', (size_t)(z - from)) : NULL;
        if (!nl) {
            s->line += df__count_lf(p, z);
            return;
        }
        s->line += df__count_lf(p, nl + 1);
        boundary(s, base + (nl + 1 - buf));
        p = nl + 1;
    }
}

static void scan_chunk(struct splitter *s, const char *buf, size_t len, int64_t base)
{
    const char *p = buf, *e = buf + len;
    while (p < e) {
        if (s->state == S_QUOTED) {
            const char *z = memchr(p, s->quote, (size_t)(e - p));
            const char *stop = z ? z : e;
            s->line += df__count_lf(p, stop);
            if (!z)
                break;
            s->state = S_QUOTE_SEEN;
            p = z + 1;
            continue;
        }
        if (s->state == S_QUOTE_SEEN) {
            if (*p == s->quote) {
                s->state = S_QUOTED;
                p++;
                continue;
            }
            s->state = S_UNQUOTED; /* closed; *p is ordinary */
        }
        const char *z = s->quote ? memchr(p, s->quote, (size_t)(e - p)) : NULL;
        const char *stop = z ? z : e;
        scan_unquoted(s, buf, base, p, stop);
        if (!z)
            break;
        char before = z > buf ? z[-1] : s->prev;
        if (before == s->delim || before == '\n')
            s->state = S_QUOTED; /* a quote at the start of a field */
        p = z + 1;
    }
    s->prev = len ? buf[len - 1] : s->prev;
}

int df__split_file(const char *path, char delim, char quote, bool header, int64_t target_bytes,
                   int max_ranges, struct df_byte_range **ranges, int *nranges, bool *truncated,
                   struct fr_error *err)
{
    int result = FR_EIO;
    struct splitter s = {.delim = delim,
                         .quote = quote,
                         .in_header = header,
                         .line = 1,
                         .range_line = 1,
                         .prev = '\n'};
    s.target = target_bytes > 0 ? target_bytes : 1;
    *ranges = NULL;
    *nranges = 0;
    if (truncated)
        *truncated = false;
    bool cut = false; /* stopped at max_ranges before the end of the file */
    char *buf = fr_xmalloc(SPLIT_BUF);
    int fd = fr_file_open_regular(path);
    if (fd < 0) {
        result = fr_error_set(err, errno == ENOENT ? FR_ENOTFOUND : FR_EIO, "cannot open %s: %s",
                              df__basename(path), strerror(errno));
        goto out;
    }
    int64_t base = 0;
    for (;;) {
        ssize_t r = read(fd, buf, SPLIT_BUF);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            result =
                fr_error_set(err, FR_EIO, "reading %s: %s", df__basename(path), strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        size_t skip = 0;
        if (base == 0 && !header && r >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
            s.range_start = skip = 3; /* a UTF-8 byte order mark */
        scan_chunk(&s, buf + skip, (size_t)r - skip, base + (int64_t)skip);
        base += r;
        if (max_ranges > 0 && s.n >= max_ranges) { /* the ranges wanted are whole: stop reading */
            s.n = max_ranges;
            cut = true;
            break;
        }
    }
    if (cut) { /* records may be left after the last range, or the file may end there */
        struct stat st;
        if (truncated)
            *truncated = fstat(fd, &st) != 0 || s.ranges[s.n - 1].end < (int64_t)st.st_size;
    } else if (s.in_header) { /* a header without a line feed: no data */
        s.range_start = base;
        s.in_header = false;
    }
    if (!cut && (s.range_start < base || s.n == 0))
        push_range(&s, base);
    *ranges = s.ranges;
    *nranges = s.n;
    s.ranges = NULL;
    result = FR_OK;
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    free(s.ranges);
    return result;
}

int df_csv_split(const char *path, const struct df_csv_options *o, int64_t target_bytes,
                 struct df_byte_range **ranges, int *nranges, struct fr_error *err)
{
    return df__split_file(path, o->delimiter, o->quote, o->header, target_bytes, 0, ranges, nranges,
                          NULL, err);
}

int df_csv_split_prefix(const char *path, const struct df_csv_options *o, int64_t target_bytes,
                        int max_ranges, struct df_byte_range **ranges, int *nranges,
                        bool *truncated, struct fr_error *err)
{
    return df__split_file(path, o->delimiter, o->quote, o->header, target_bytes, max_ranges, ranges,
                          nranges, truncated, err);
}
