/* Tests of the CSV reader (src/engine/engine_csv*.c): golden files read whole
 * and cut into tiny ranges, malformed data, projection, the float fast path
 * against strtod, memory limits and cancellation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/engine_io_int.h"

static const char *data_dir(void)
{
    const char *d = getenv("FRAMED_TEST_DATA");
    return d && *d ? d : FRAMED_SOURCE_DIR "/tests/data";
}

/* Writes text to a new temporary file; returns its path (new). */
static char *temp_csv(const char *text)
{
    const char *dir = getenv("TMPDIR");
    char *path = fr_xasprintf("%s/framed_test_csv_XXXXXX", dir && *dir ? dir : P_tmpdir);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

struct read_setup {
    struct df_options eo;
    struct df_csv_options o;
    struct df_exec ex;
    struct fr_error err;
    struct df_schema schema;
};

static void setup_init(struct read_setup *s)
{
    memset(&s->eo, 0, sizeof(s->eo));
    s->eo.morsel_size_rows = 3;
    df_csv_options_init(&s->o);
    df_exec_init(&s->ex, &s->eo, NULL);
    fr_error_init(&s->err);
    df_schema_init(&s->schema);
}

/* Infers, splits into ranges of target bytes, reads every range and
 * concatenates: the whole table (new) or NULL with s->err set. */
static struct df_table *read_all(const char *path, struct read_setup *s, int64_t target,
                                 const int *cols, int ncols)
{
    struct df_byte_range *ranges = NULL;
    int nranges = 0;
    struct df_table *all = NULL;
    if (s->schema.nfields == 0 && df_csv_infer_schema(path, &s->o, &s->eo, &s->schema, &s->err))
        return NULL;
    if (df_csv_split(path, &s->o, target, &ranges, &nranges, &s->err))
        return NULL;
    struct df_table **parts = calloc((size_t)nranges, sizeof(*parts));
    int ok = 1;
    for (int i = 0; i < nranges && ok; i++)
        ok = df_csv_read(path, &ranges[i], &s->o, &s->schema, cols, ncols, &s->ex, &parts[i],
                         &s->err) == FR_OK;
    if (ok)
        assert_int_equal(df_table_concat(parts, nranges, &all, &s->err), FR_OK);
    for (int i = 0; i < nranges; i++)
        df_table_free(parts[i]);
    free(parts);
    free(ranges);
    return all;
}

static char *render(const struct df_table *t, const struct df_schema *s)
{
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "# schema: ");
    for (int i = 0; i < s->nfields; i++)
        fr_buf_printf(&b, "%s%s:%s", i ? "," : "", s->fields[i].name,
                      df_type_name(s->fields[i].type));
    fr_buf_putc(&b, '\n');
    df_write_ndjson_rows(t, 0, t->nrows, &b);
    return fr_buf_steal(&b, NULL);
}

static void golden_one(const char *line)
{
    char input[128], expected[128], opt[2][128] = {"", ""};
    int n = sscanf(line, "%127s %127s %127s %127s", input, expected, opt[0], opt[1]);
    assert_true(n >= 2);
    const char *nulls[8];
    char nullbuf[128] = "";
    struct read_setup s;
    setup_init(&s);
    for (int k = 0; k < 2; k++) {
        if (strncmp(opt[k], "nulls=", 6) == 0) {
            snprintf(nullbuf, sizeof(nullbuf), "%s", opt[k] + 6);
            char *save = NULL;
            for (char *tok = strtok_r(nullbuf, "|", &save); tok && s.eo.n_csv_null_values < 8;
                 tok = strtok_r(NULL, "|", &save))
                nulls[s.eo.n_csv_null_values++] = tok;
            s.eo.csv_null_values = nulls;
        } else if (strncmp(opt[k], "delim=", 6) == 0) {
            s.o.delimiter = opt[k][6];
        }
    }
    char *in_path = fr_xasprintf("%s/csv/%s", data_dir(), input);
    char *exp_path = fr_xasprintf("%s/csv/%s", data_dir(), expected);
    struct df_table *whole = read_all(in_path, &s, (int64_t)1 << 40, NULL, 0);
    if (!whole)
        fail_msg("%s: %s", input, s.err.message);
    char *got = render(whole, &s.schema);
    if (getenv("FRAMED_UPDATE_GOLDEN"))
        fr_file_write_atomic(exp_path, got, strlen(got), NULL);
    char *want = NULL;
    size_t wlen = 0;
    assert_int_equal(fr_file_read_all(exp_path, &want, &wlen, NULL), FR_OK);
    if (strcmp(got, want) != 0)
        fail_msg("%s differs from %s:\n%s", input, expected, got);
    for (int64_t target = 1; target <= 13; target += 6) {
        struct df_table *pieces = read_all(in_path, &s, target, NULL, 0);
        assert_non_null(pieces);
        char *again = render(pieces, &s.schema);
        if (strcmp(again, got) != 0)
            fail_msg("%s read in %lld-byte ranges:\n%s", input, (long long)target, again);
        free(again);
        df_table_free(pieces);
    }
    free(want);
    free(got);
    df_table_free(whole);
    df_schema_cleanup(&s.schema);
    free(in_path);
    free(exp_path);
}

static void test_golden(void **state)
{
    (void)state;
    char *path = fr_xasprintf("%s/csv/golden.txt", data_dir());
    char *text = NULL;
    size_t len;
    assert_int_equal(fr_file_read_all(path, &text, &len, NULL), FR_OK);
    int cases = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (line[0] != '#' && line[0] != '\0') {
            golden_one(line);
            cases++;
        }
        line = nl ? nl + 1 : NULL;
    }
    assert_true(cases >= 8);
    free(text);
    free(path);
}

/* Reads text as a whole file; returns the status and fills *out / s->err. */
static int read_text(const char *text, struct read_setup *s, struct df_table **out)
{
    char *path = temp_csv(text);
    *out = read_all(path, s, (int64_t)1 << 40, NULL, 0);
    unlink(path);
    free(path);
    return *out ? FR_OK : s->err.status;
}

static void expect_error(const char *text, int64_t line, int64_t column, const char *msg_part)
{
    struct read_setup s;
    setup_init(&s);
    struct df_schema hints;
    df_schema_init(&hints);
    df_schema_add(&hints, "fare", DF_TYPE_FLOAT64);
    s.o.hints = &hints;
    struct df_table *t = NULL;
    assert_int_equal(read_text(text, &s, &t), FR_EDATA);
    assert_null(t);
    if (!strstr(s.err.message, msg_part))
        fail_msg("message '%s' lacks '%s'", s.err.message, msg_part);
    assert_int_equal(s.err.line, line);
    assert_int_equal(s.err.column, column);
    assert_int_equal(s.ex.mem_used, 0);
    df_schema_cleanup(&s.schema);
    df_schema_cleanup(&hints);
}

static void test_errors(void **state)
{
    (void)state;
    const char *head = "id,name,fare\n";
    char text[256];
    snprintf(text, sizeof(text), "%s1,a,2.5\n2,\"b\nb\",3\n3,c,abc\n", head);
    expect_error(text, 5, 3, "line 5, column 3 ('fare'): 'abc' is not a float64");
    snprintf(text, sizeof(text), "%s1,a,2.5\n2,b,3,4\n", head);
    expect_error(text, 3, 4, "line 3: expected 3 fields, found 4");
    snprintf(text, sizeof(text), "%s1,a,2.5\n\n2,b\n", head);
    expect_error(text, 4, 3, "line 4: expected 3 fields, found 2");
    snprintf(text, sizeof(text), "%s1,a,2.5\n2,\"b,3\n4,c,5\n", head);
    expect_error(text, 3, 2, "unterminated quote");
    snprintf(text, sizeof(text), "%s1,\"a\"x,2.5\n", head);
    expect_error(text, 2, 2, "after its closing quote");
    /* an int column (inferred from the sample) meets a float later on */
    struct read_setup s;
    setup_init(&s);
    s.o.sample_rows = 2;
    struct df_table *t = NULL;
    assert_int_equal(read_text("n\n1\n2\n3.5\n", &s, &t), FR_EDATA);
    assert_non_null(strstr(s.err.message, "'3.5' is not an int64"));
    assert_int_equal(s.err.line, 4);
    assert_string_equal(s.err.field, "n");
    df_schema_cleanup(&s.schema);
}

static void test_on_error_null(void **state)
{
    (void)state;
    struct read_setup s;
    setup_init(&s);
    s.o.on_error_null = true;
    s.o.sample_rows = 1;
    struct df_table *t = NULL;
    assert_int_equal(read_text("a,b\n1,2\nx,3\n4\n5,6,7\n8,9\n", &s, &t), FR_OK);
    assert_int_equal(t->nrows, 5);
    assert_int_equal(s.ex.null_errors, 3);
    assert_false(df_column_is_valid(t->cols[0], 1));     /* 'x' */
    assert_false(df_column_is_valid(t->cols[1], 2));     /* missing */
    assert_int_equal(df_column_int64(t->cols[1], 3), 6); /* 7 dropped */
    assert_int_equal(df_column_int64(t->cols[0], 4), 8);
    df_table_free(t);
    df_schema_cleanup(&s.schema);
}

/* A source over a memory buffer that hands out at most `chunk` bytes per
 * read (as a slow network would) and can fail from an offset on. */
struct mem_source {
    struct df_source base;
    const char *data;
    size_t len, chunk;
    int64_t fail_at; /* -1: never */
    int reads;
};

static int mem_read(struct df_source *base, int64_t off, char *buf, size_t len, size_t *got,
                    struct fr_error *err)
{
    struct mem_source *m = (struct mem_source *)base;
    m->reads++;
    if (m->fail_at >= 0 && off + (int64_t)len > m->fail_at)
        return fr_error_set(err, FR_EIO, "a short read of %s at %lld", base->name, (long long)off);
    size_t n = off >= (int64_t)m->len ? 0 : m->len - (size_t)off;
    n = n < len ? n : len;
    n = n < m->chunk ? n : m->chunk;
    memcpy(buf, m->data + off, n);
    *got = n;
    return FR_OK;
}

/* The readers read a caller's source as they read a file: the same table
 * from a source that returns 1..7 bytes at a time, with or without its
 * size; and its error is the read's. */
static void test_byte_source(void **state)
{
    (void)state;
    const char *text = "a,b\n1,\"x,\ny\"\n2,zz\n3,\n";
    struct read_setup s;
    setup_init(&s);
    char *path = temp_csv(text);
    struct df_table *want = read_all(path, &s, 1 << 20, NULL, 0);
    assert_non_null(want);
    char *want_text = render(want, &s.schema);
    struct df_byte_range r = {4, (int64_t)strlen(text), 2}; /* past the header */
    for (size_t chunk = 1; chunk <= 7; chunk += 3) {
        for (int sized = 0; sized < 2; sized++) {
            struct mem_source m = {{mem_read, sized ? (int64_t)strlen(text) : -1, "mem.csv"},
                                   text,
                                   strlen(text),
                                   chunk,
                                   -1,
                                   0};
            struct df_table *t = NULL;
            assert_int_equal(
                df_csv_read_source(&m.base, &r, &s.o, &s.schema, NULL, -1, &s.ex, &t, &s.err),
                FR_OK);
            char *got = render(t, &s.schema);
            assert_string_equal(got, want_text);
            assert_true(m.reads > 1);
            free(got);
            df_table_free(t);
        }
    }
    struct mem_source bad = {{mem_read, -1, "mem.csv"}, text, strlen(text), 4, 9, 0};
    struct df_table *t = NULL;
    assert_int_equal(
        df_csv_read_source(&bad.base, &r, &s.o, &s.schema, NULL, -1, &s.ex, &t, &s.err), FR_EIO);
    assert_null(t);
    assert_non_null(strstr(s.err.message, "short read of mem.csv"));
    free(want_text);
    df_table_free(want);
    df_schema_cleanup(&s.schema);
    unlink(path);
    free(path);
}

static void test_projection(void **state)
{
    (void)state;
    struct read_setup s;
    setup_init(&s);
    char *path = temp_csv("a,b,c\n1,x,2.5\n2,\"y,\"\"z\",3.5\n");
    int cols[] = {2, 0};
    struct df_table *t = read_all(path, &s, 1 << 20, cols, 2);
    assert_non_null(t);
    assert_int_equal(t->ncols, 2);
    assert_string_equal(t->names[0], "c");
    assert_string_equal(t->names[1], "a");
    assert_true(df_column_float64(t->cols[0], 1) == 3.5);
    assert_int_equal(df_column_int64(t->cols[1], 1), 2);
    df_table_free(t);
    /* the skipped field still counts: a short row fails */
    df_schema_cleanup(&s.schema);
    setup_init(&s);
    unlink(path);
    free(path);
    path = temp_csv("a,b,c\n1,x,2.5\n2,y\n");
    assert_null(read_all(path, &s, 1 << 20, cols, 2));
    assert_int_equal(s.err.status, FR_EDATA);
    /* no columns at all still counts rows */
    df_schema_cleanup(&s.schema);
    setup_init(&s);
    unlink(path);
    free(path);
    path = temp_csv("a\n1\n2\n3\n");
    t = read_all(path, &s, 1 << 20, cols, 0);
    assert_int_equal(t->ncols, 0);
    assert_int_equal(t->nrows, 3);
    df_table_free(t);
    df_schema_cleanup(&s.schema);
    unlink(path);
    free(path);
}

static void test_inference_and_hints(void **state)
{
    (void)state;
    struct read_setup s;
    setup_init(&s);
    struct df_schema hints;
    df_schema_init(&hints);
    df_schema_add(&hints, "code", DF_TYPE_STRING);
    s.o.hints = &hints;
    struct df_table *t = NULL;
    assert_int_equal(read_text("i,f,b,d,ts,code,none,,i\n"
                               "1,1,true,2024-01-01,2024-01-01,007,,x,1\n"
                               "-2,2.5,FALSE,2024-02-29,2024-01-01T10:00:00,010,,y,2\n",
                               &s, &t),
                     FR_OK);
    const df_type want[] = {DF_TYPE_INT64,  DF_TYPE_FLOAT64,   DF_TYPE_BOOL,
                            DF_TYPE_DATE,   DF_TYPE_TIMESTAMP, DF_TYPE_STRING,
                            DF_TYPE_STRING, DF_TYPE_STRING,    DF_TYPE_INT64};
    assert_int_equal(s.schema.nfields, 9);
    for (int i = 0; i < 9; i++)
        assert_int_equal(s.schema.fields[i].type, want[i]);
    assert_string_equal(s.schema.fields[7].name, "column7");
    assert_string_equal(s.schema.fields[8].name, "i_2");
    int64_t n;
    assert_memory_equal(df_column_string(t->cols[5], 0, &n), "007", 3);
    df_table_free(t);
    df_schema_cleanup(&s.schema);
    /* no header: columns are numbered */
    setup_init(&s);
    s.o.header = false;
    assert_int_equal(read_text("1,a\n2,b\n", &s, &t), FR_OK);
    assert_int_equal(t->nrows, 2);
    assert_string_equal(t->names[1], "column1");
    df_table_free(t);
    df_schema_cleanup(&s.schema);
    df_schema_cleanup(&hints);
}

static void test_split_lines(void **state)
{
    (void)state;
    struct df_csv_options o;
    df_csv_options_init(&o);
    char *path = temp_csv("h1,h2\n\"a\nb\",1\nc,2\n\"d\"\"\ne\",3\nf,4");
    struct df_byte_range *r = NULL;
    int n = 0;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_csv_split(path, &o, 1, &r, &n, &err), FR_OK);
    assert_int_equal(n, 4);
    const int64_t starts[] = {6, 14, 18, 28}, lines[] = {2, 4, 5, 7};
    for (int i = 0; i < n; i++) {
        assert_int_equal(r[i].start, starts[i]);
        assert_int_equal(r[i].line, lines[i]);
        assert_int_equal(r[i].end, i + 1 < n ? starts[i + 1] : 31);
    }
    free(r);
    unlink(path);
    free(path);
    assert_int_equal(df_csv_split("no/such/file.csv", &o, 1, &r, &n, &err), FR_ENOTFOUND);
}

/* Each range's line is 1 + the line feeds before its start, counted the
 * slow way, for records of every length around the counter's 8-byte steps,
 * quoted line feeds included; no range starts inside quotes. */
static void test_split_lines_match_a_naive_count(void **state)
{
    (void)state;
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "k,v\n");
    srand(7);
    for (int r = 0; r < 4000; r++) {
        int len = rand() % 40;
        for (int i = 0; i < len; i++)
            fr_buf_putc(&b, (char)('a' + rand() % 24)); /* never y */
        if (rand() % 9 == 0)
            fr_buf_puts(&b, ",\"x\ny\n\"\n");
        else
            fr_buf_puts(&b, ",1\n");
    }
    char *path = temp_csv(b.data);
    struct df_csv_options o;
    df_csv_options_init(&o);
    struct fr_error err;
    fr_error_init(&err);
    const int64_t targets[] = {1, 7, 64, 1000};
    for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
        struct df_byte_range *r = NULL;
        int n = 0;
        assert_int_equal(df_csv_split(path, &o, targets[t], &r, &n, &err), FR_OK);
        assert_true(n > 1);
        int64_t at = 0, line = 1;
        for (int i = 0; i < n; i++) {
            for (; at < r[i].start; at++)
                line += b.data[at] == '\n';
            assert_int_equal(r[i].line, line);
            assert_true(r[i].start == 4 || b.data[r[i].start - 1] == '\n');
            assert_true(b.data[r[i].start] != 'y' && b.data[r[i].start] != '"');
        }
        assert_int_equal(r[n - 1].end, (int64_t)b.len);
        free(r);
    }
    unlink(path);
    free(path);
    fr_buf_cleanup(&b);
}

/* The preview's prefix split: the first ranges of the full split, cut where
 * the full split cuts (never inside quotes), and truncated when records are
 * left after them. */
static void test_split_prefix(void **state)
{
    (void)state;
    struct df_csv_options o;
    df_csv_options_init(&o);
    char *path = temp_csv("h1,h2\n\"a\nb\",1\nc,2\n\"d\"\"\ne\",3\nf,4");
    struct df_byte_range *all = NULL, *r = NULL;
    int nall = 0, n = 0;
    bool cut = true;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(df_csv_split(path, &o, 1, &all, &nall, &err), FR_OK);
    for (int want = 1; want <= nall + 1; want++) {
        assert_int_equal(df_csv_split_prefix(path, &o, 1, want, &r, &n, &cut, &err), FR_OK);
        assert_int_equal(n, want < nall ? want : nall);
        assert_int_equal(cut, want < nall);
        for (int i = 0; i < n; i++) {
            assert_int_equal(r[i].start, all[i].start);
            assert_int_equal(r[i].end, all[i].end);
            assert_int_equal(r[i].line, all[i].line);
        }
        free(r);
    }
    /* a target larger than the file: one range, the whole file, not cut */
    assert_int_equal(df_csv_split_prefix(path, &o, 1 << 20, 1, &r, &n, &cut, &err), FR_OK);
    assert_int_equal(n, 1);
    assert_false(cut);
    assert_int_equal(r[0].start, 6);
    assert_int_equal(r[0].end, 31);
    free(r);
    free(all);
    unlink(path);
    free(path);
    /* a file that ends with its last range is whole, not cut (review: a
     * newline-terminated file without a header was marked truncated) */
    path = temp_csv("{\"a\":1}\n{\"a\":2}\n");
    assert_int_equal(df_ndjson_split_prefix(path, 1 << 20, 1, &r, &n, &cut, &err), FR_OK);
    assert_int_equal(n, 1);
    assert_false(cut);
    free(r);
    assert_int_equal(df_ndjson_split_prefix(path, 1, 1, &r, &n, &cut, &err), FR_OK);
    assert_int_equal(n, 1);
    assert_true(cut);
    assert_int_equal(r[0].end, 8);
    free(r);
    unlink(path);
    free(path);
}

static void test_number_parsers(void **state)
{
    (void)state;
    int64_t v;
    assert_int_equal(df__parse_int64("9223372036854775807", 19, &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(df__parse_int64("-9223372036854775808", 20, &v), 0);
    assert_true(v == INT64_MIN);
    assert_int_equal(df__parse_int64("9223372036854775808", 19, &v), 1);
    assert_int_equal(df__parse_int64("-9223372036854775809", 20, &v), 1);
    assert_int_equal(df__parse_int64("99999999999999999999999", 23, &v), 1);
    assert_int_equal(df__parse_int64("-", 1, &v), -1);
    assert_int_equal(df__parse_int64("1a", 2, &v), -1);
    assert_int_equal(df__parse_int64(" 1", 2, &v), -1);
    double d;
    const char *bad[] = {"", ".", "e5", "1e", "1e+", "--1", "1.2.3", "0x10", " 1", "1 ", "infx"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(df__parse_float64(bad[i], strlen(bad[i]), &d), -1);
    const char *good[] = {"1",
                          "-0",
                          ".5",
                          "5.",
                          "1e308",
                          "1E-5",
                          "inf",
                          "-Inf",
                          "nan",
                          "1e-400",
                          "+3",
                          "0.1",
                          "123456789012345678901234"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_int_equal(df__parse_float64(good[i], strlen(good[i]), &d), 0);
        double want = strtod(good[i], NULL);
        assert_true((d == want) || (d != d && want != want));
    }
}

/* The fast path must give exactly strtod's double for every input. */
static void test_float_fast_path_matches_strtod(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252ull;
    char text[64];
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int kind = (int)(x % 4);
        uint64_t m = (x >> 8) % (kind == 0 ? 1000000000ull : 10000000000000000000ull);
        int decimals = (int)((x >> 3) % 19);
        int exp = (int)((x >> 40) % 60) - 30;
        switch (kind) {
        case 0:
            snprintf(text, sizeof(text), "%llu.%06llu", (unsigned long long)(m % 101),
                     (unsigned long long)(m % 1000000));
            break;
        case 1:
            snprintf(text, sizeof(text), "-%llue%d", (unsigned long long)m, exp);
            break;
        case 2: {
            int len = snprintf(text, sizeof(text), "%llu", (unsigned long long)m);
            if (decimals < len) {
                memmove(text + len - decimals + 1, text + len - decimals, (size_t)decimals + 1);
                text[len - decimals] = '.';
            }
            break;
        }
        default: {
            double r = (double)(x >> 11) / 9007199254740992.0 * 1000;
            snprintf(text, sizeof(text), "%.*g", 1 + (int)(x % 17), r);
        }
        }
        double got, want = strtod(text, NULL);
        assert_int_equal(df__parse_float64(text, strlen(text), &got), 0);
        if (memcmp(&got, &want, sizeof(got)) != 0)
            fail_msg("'%s': %.17g, strtod %.17g", text, got, want);
    }
}

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* The plain-record fast path gives exactly df__csv_tokenize's fields, end
 * and line count wherever it answers: records with quotes, CRs, blank
 * lines, fields of every length, records over one and over two 64-byte
 * blocks, and the last 64 bytes of the buffer. */
static void test_plain_record_matches_the_tokenizer(void **state)
{
    (void)state;
    /* after two ordinary bytes, the special ones weighted: quotes and CRs rare */
    static const char alphabet[] = "a1,,,,,,,,\n\n\n\n\n\n ;\"\r";
    uint64_t x = 0x9E3779B97F4A7C15ull;
    int answered = 0, declined = 0, multi_block = 0;
    struct df__csv_tok slow, fast;
    df__csv_tok_init(&slow, ',', '"');
    df__csv_tok_init(&fast, ',', '"');
    /* the quote as given, no quoting, and odd quotes: LF (a quoted field may
     * open where a record seems to end) and the delimiter itself */
    static const char quotes[] = {'"', '"', '\0', '\n', ','};
    for (int round = 0; round < 3000; round++) {
        slow.quote = fast.quote = quotes[round % 5];
        size_t n = 1 + xorshift(&x) % 2000;
        char *buf = fr_xmalloc(n + 1);
        /* mostly letters and digits, with a rate of each special byte that
         * changes per round, so some rounds have records of hundreds of bytes */
        unsigned rate = 2 + (unsigned)(xorshift(&x) % 200);
        for (size_t i = 0; i < n; i++) {
            uint64_t r = xorshift(&x);
            buf[i] = r % rate == 0 ? alphabet[2 + (r >> 20) % (sizeof(alphabet) - 3)]
                                   : alphabet[(r >> 20) % 2];
        }
        buf[n] = '\n';
        const char *p = buf, *end = buf + n;
        while (p < end) {
            const char *next_slow = NULL, *next_fast = NULL;
            int rc = df__csv_tokenize(&slow, p, end, true, &next_slow);
            if (df__csv_plain_record(&fast, p, end, &next_fast)) {
                answered++;
                multi_block += next_fast - p > DF__BLOCK;
                assert_int_equal(rc, DF__TOK_RECORD);
                assert_ptr_equal(next_fast, next_slow);
                assert_int_equal(fast.nlines, slow.nlines);
                assert_int_equal(fast.nfields, slow.nfields);
                for (int f = 0; f < slow.nfields; f++) {
                    assert_ptr_equal(fast.f[f].p, slow.f[f].p);
                    assert_int_equal(fast.f[f].len, slow.f[f].len);
                    assert_int_equal(fast.f[f].flags, slow.f[f].flags);
                }
            } else {
                declined++;
            }
            assert_true(rc != DF__TOK_MORE);
            p = next_slow;
        }
        free(buf);
    }
    df__csv_tok_cleanup(&slow);
    df__csv_tok_cleanup(&fast);
    assert_true(answered > 10000); /* not vacuous: both paths were taken */
    assert_true(declined > 1000);
    assert_true(multi_block > 100);
}

/* Where the fast number parsers answer, the general ones accept the same
 * text with the same value (bit for bit); the bytes after the field (the
 * read buffer's padding, here junk digits) never change an answer. */
static void check_fast_numbers(const char *text, size_t n, int *ints, int *floats)
{
    char buf[64];
    assert_true(n + DF__READ_PAD <= sizeof(buf));
    memcpy(buf, text, n);
    memset(buf + n, '7', sizeof(buf) - n); /* digits: a parser reading past n would see them */
    int64_t fi, gi;
    if (df__fast_int64(buf, n, &fi)) {
        (*ints)++;
        if (df__parse_int64(text, n, &gi) != 0 || fi != gi)
            fail_msg("int '%.*s': fast %lld", (int)n, text, (long long)fi);
    }
    double fd, gd;
    if (df__fast_float64(buf, n, &fd)) {
        (*floats)++;
        if (df__parse_float64(text, n, &gd) != 0 || memcmp(&fd, &gd, sizeof(fd)) != 0)
            fail_msg("float '%.*s': fast %.17g", (int)n, text, fd);
    }
}

static void test_fast_numbers_match_the_parsers(void **state)
{
    (void)state;
    static const char *edges[] = {"-",
                                  ".",
                                  "-.",
                                  "1.",
                                  ".5",
                                  "-0",
                                  "-0.0",
                                  "0.0",
                                  "00000000",
                                  "000000000",
                                  "9999999999999999",
                                  "-9999999999999999",
                                  "99999999.99999999",
                                  "12345678.1",
                                  "1.12345678",
                                  "+1",
                                  "1e5",
                                  "1.5e3",
                                  "--1",
                                  "1-",
                                  "1..2",
                                  "1.2.3",
                                  " 1",
                                  "1 ",
                                  "0x10",
                                  "/",
                                  ":",
                                  "12345678901234567",
                                  "99999999999999999"};
    int ints = 0, floats = 0;
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
        check_fast_numbers(edges[i], strlen(edges[i]), &ints, &floats);
    static const char alphabet[] = "0123456789-.e+/: ";
    uint64_t x = 0x2545F4914F6CDD1Dull;
    char text[32];
    for (int i = 0; i < 2000000; i++) {
        size_t n = 1 + xorshift(&x) % 20;
        uint64_t r = xorshift(&x);
        bool digits_only = r & 1;
        for (size_t j = 0; j < n; j++) {
            uint64_t c = xorshift(&x);
            text[j] = digits_only ? (char)('0' + c % 10) : alphabet[c % (sizeof(alphabet) - 1)];
        }
        if ((r >> 1) % 4 == 0)
            text[0] = '-';
        if ((r >> 3) % 2 == 0 && n > 2)
            text[1 + (r >> 4) % (n - 1)] = '.';
        check_fast_numbers(text, n, &ints, &floats);
    }
    assert_true(ints > 100000);
    assert_true(floats > 200000);
}

static void test_memory_limit_and_cancel(void **state)
{
    (void)state;
    struct fr_buf b;
    fr_buf_init(&b);
    fr_buf_puts(&b, "a,b\n");
    for (int i = 0; i < 20000; i++)
        fr_buf_printf(&b, "%d,row%d\n", i, i);
    char *path = temp_csv(b.data);
    struct read_setup s;
    setup_init(&s);
    s.eo.task_memory_limit_bytes = 100000;
    assert_null(read_all(path, &s, (int64_t)1 << 40, NULL, 0));
    assert_int_equal(s.err.status, FR_EMEMLIMIT);
    assert_int_equal(s.ex.mem_used, 0);
    df_schema_cleanup(&s.schema);
    setup_init(&s);
    atomic_bool cancel;
    atomic_init(&cancel, true);
    df_exec_init(&s.ex, &s.eo, &cancel);
    assert_null(read_all(path, &s, (int64_t)1 << 40, NULL, 0));
    assert_int_equal(s.err.status, FR_ECANCELLED);
    df_schema_cleanup(&s.schema);
    /* a large file in ranges equals one range */
    setup_init(&s);
    struct df_table *one = read_all(path, &s, (int64_t)1 << 40, NULL, 0);
    struct df_table *many = read_all(path, &s, 1000, NULL, 0);
    assert_int_equal(one->nrows, 20000);
    char *r1 = render(one, &s.schema), *r2 = render(many, &s.schema);
    assert_string_equal(r1, r2);
    free(r1);
    free(r2);
    df_table_free(one);
    df_table_free(many);
    df_schema_cleanup(&s.schema);
    unlink(path);
    free(path);
    fr_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_on_error_null),
        cmocka_unit_test(test_projection),
        cmocka_unit_test(test_inference_and_hints),
        cmocka_unit_test(test_split_lines),
        cmocka_unit_test(test_split_lines_match_a_naive_count),
        cmocka_unit_test(test_split_prefix),
        cmocka_unit_test(test_number_parsers),
        cmocka_unit_test(test_float_fast_path_matches_strtod),
        cmocka_unit_test(test_plain_record_matches_the_tokenizer),
        cmocka_unit_test(test_fast_numbers_match_the_parsers),
        cmocka_unit_test(test_memory_limit_and_cancel),
        cmocka_unit_test(test_byte_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
