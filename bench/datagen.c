/* datagen: writes the db-benchmark tables as CSV, deterministically (seeded).
 *
 *   datagen N OUTDIR          (N such as 1e7)
 *
 * writes into OUTDIR:
 *   G1_<n>_1e2_0_0.csv   groupby table, K = 100, no NAs, unsorted
 *   J1_<n>_NA_0_0.csv    join "x"      (N rows:      id1..id3 int, id4..id6 "id<k>", v1)
 *   J1_<n>_<s>_0_0.csv   join "small"  (N/1e6 rows:  id1, id4, v2)
 *   J1_<n>_<m>_0_0.csv   join "medium" (N/1e3 rows:  id1, id2, id4, id5, v2)
 *   J1_<n>_<n>_0_0.csv   join "big"    (N rows:      id1..id6, v2)
 * where <n> is N written as 1eX (s = N/1e6, m = N/1e3).
 *
 * It follows duckdblabs/db-benchmark's groupby-datagen.R and join-datagen.R:
 *   groupby: id1,id2 = sample("id001".."id100"), id3 = sample("id0000000001"..N/K),
 *            id4,id5 = sample(1..K), id6 = sample(1..N/K), v1 = 1..5, v2 = 1..15,
 *            v3 = round(runif(0,100), 6) printed with trailing zeros dropped.
 *   join:    for each key family (sizes N/1e6, N/1e3, N) a permutation of 1..1.1n is split into
 *            x (first 0.9n), l (next 0.1n) and r (last 0.1n); the left table x samples
 *            x+l keys, the right tables sample x+r keys ("sample_all": every key at least
 *            once, the rest drawn with replacement, then shuffled), so 90% of keys match.
 *            v1/v2 = round(runif(0,100), 6). With n < 10 (N < 1e7 for "small") each part
 *            gets at least one key.
 * The random numbers differ from R's, so values differ from the published files; the shape
 * (cardinalities, match rates, types) is the same. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rs[4];

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void seed(uint64_t s)
{
    for (int i = 0; i < 4; i++)
        rs[i] = splitmix(&s);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** */
static inline uint64_t next(void)
{
    uint64_t r = rotl(rs[1] * 5, 7) * 9, t = rs[1] << 17;
    rs[2] ^= rs[0];
    rs[3] ^= rs[1];
    rs[1] ^= rs[2];
    rs[0] ^= rs[3];
    rs[2] ^= t;
    rs[3] = rotl(rs[3], 45);
    return r;
}

/* uniform in [0, n) (multiply-shift; the bias is far below anything measurable here) */
static inline uint64_t below(uint64_t n)
{
    return (uint64_t)(((unsigned __int128)next() * n) >> 64);
}

/* ---- output buffer ---- */

static char *buf;
static size_t blen;
static FILE *out;
#define BUFSZ (1 << 22)

static void flush_if(size_t need)
{
    if (blen + need > BUFSZ) {
        fwrite(buf, 1, blen, out);
        blen = 0;
    }
}

static inline void put_s(const char *s, size_t n)
{
    memcpy(buf + blen, s, n);
    blen += n;
}

static inline void put_c(char c)
{
    buf[blen++] = c;
}

static inline void put_u(uint64_t v)
{
    char t[24];
    int i = 24;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put_s(t + i, (size_t)(24 - i));
}

/* zero-padded to width w */
static inline void put_uw(uint64_t v, int w)
{
    char t[24];
    int i = 24;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v || 24 - i < w);
    put_s(t + i, (size_t)(24 - i));
}

/* round(runif(0,100), 6): an integer count of millionths in [0, 1e8], written without
 * trailing zeros (like R's fwrite) */
static inline void put_v(void)
{
    uint64_t m = below(100000001);
    put_u(m / 1000000);
    uint64_t f = m % 1000000;
    if (f) {
        char t[7];
        for (int i = 5; i >= 0; i--) {
            t[i] = (char)('0' + f % 10);
            f /= 10;
        }
        int n = 6;
        while (t[n - 1] == '0')
            n--;
        put_c('.');
        put_s(t, (size_t)n);
    }
}

static void open_out(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.csv", dir, name);
    out = fopen(path, "w");
    if (!out) {
        perror(path);
        exit(1);
    }
    blen = 0;
}

static void close_out(void)
{
    fwrite(buf, 1, blen, out);
    blen = 0;
    if (fclose(out) != 0) {
        perror("fclose");
        exit(1);
    }
}

/* "1e7" for 10000000; plain digits when not a power of ten */
static void pretty(int64_t n, char *s, size_t sz)
{
    int e = 0;
    int64_t m = n;
    while (m >= 10 && m % 10 == 0) {
        m /= 10;
        e++;
    }
    if (m == 1)
        snprintf(s, sz, "1e%d", e);
    else
        snprintf(s, sz, "%lld", (long long)n);
}

/* ---- groupby ---- */

static void gen_groupby(int64_t n, const char *dir)
{
    const int64_t k = 100, nk = n / k > 0 ? n / k : 1;
    char nn[32], name[64];
    pretty(n, nn, sizeof(nn));
    snprintf(name, sizeof(name), "G1_%s_1e2_0_0", nn);
    seed(108);
    open_out(dir, name);
    put_s("id1,id2,id3,id4,id5,id6,v1,v2,v3\n", 33);
    for (int64_t i = 0; i < n; i++) {
        flush_if(256);
        put_s("id", 2);
        put_uw(below(k) + 1, 3);
        put_s(",id", 3);
        put_uw(below(k) + 1, 3);
        put_s(",id", 3);
        put_uw(below(nk) + 1, 10);
        put_c(',');
        put_u(below(k) + 1);
        put_c(',');
        put_u(below(k) + 1);
        put_c(',');
        put_u(below(nk) + 1);
        put_c(',');
        put_u(below(5) + 1);
        put_c(',');
        put_u(below(15) + 1);
        put_c(',');
        put_v();
        put_c('\n');
    }
    close_out();
}

/* ---- join ---- */

struct keys {
    int64_t *x, *l, *r;
    int64_t nx, nl, nr;
};

static void shuffle(int64_t *a, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)below((uint64_t)i + 1);
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* split_xlr(n): a permutation of 1..1.1n cut into x (0.9n), l (0.1n), r (0.1n) */
static struct keys split_xlr(int64_t n)
{
    struct keys k;
    k.nx = (int64_t)llround(0.9 * (double)n);
    k.nl = n - k.nx;
    k.nr = k.nl;
    if (k.nx < 1)
        k.nx = 1;
    if (k.nl < 1)
        k.nl = 1;
    if (k.nr < 1)
        k.nr = 1;
    int64_t tot = k.nx + k.nl + k.nr;
    int64_t *p = malloc((size_t)tot * sizeof(*p));
    for (int64_t i = 0; i < tot; i++)
        p[i] = i + 1;
    shuffle(p, tot);
    k.x = p;
    k.l = p + k.nx;
    k.r = p + k.nx + k.nl;
    return k;
}

/* sample_all(c(a, b), size): every value once (when size allows), the rest drawn with
 * replacement, shuffled */
static int64_t *sample_all(const int64_t *a, int64_t na, const int64_t *b, int64_t nb,
                           int64_t size)
{
    int64_t n = na + nb;
    int64_t *y = malloc((size_t)(size > n ? size : n) * sizeof(*y));
    memcpy(y, a, (size_t)na * sizeof(*y));
    memcpy(y + na, b, (size_t)nb * sizeof(*y));
    for (int64_t i = n; i < size; i++)
        y[i] = y[below((uint64_t)n)];
    /* size < n happens only for tiny tables (N < 1e7): keep the matching keys (a) first */
    shuffle(y, size);
    return y; /* the first `size` values are used */
}

static void put_id(int64_t v)
{
    put_s("id", 2);
    put_u((uint64_t)v);
}

static void gen_join(int64_t n, const char *dir)
{
    char nn[32], ns[32], nm[32], name[64];
    int64_t n1 = n / 1000000 > 0 ? n / 1000000 : 1, n2 = n / 1000 > 0 ? n / 1000 : 1;
    pretty(n, nn, sizeof(nn));
    pretty(n1 * 1, ns, sizeof(ns));
    pretty(n2, nm, sizeof(nm));
    seed(108 + 1);
    struct keys k1 = split_xlr(n1), k2 = split_xlr(n2), k3 = split_xlr(n);

    /* x */
    int64_t *a1 = sample_all(k1.x, k1.nx, k1.l, k1.nl, n);
    int64_t *a2 = sample_all(k2.x, k2.nx, k2.l, k2.nl, n);
    int64_t *a3 = sample_all(k3.x, k3.nx, k3.l, k3.nl, n);
    snprintf(name, sizeof(name), "J1_%s_NA_0_0", nn);
    open_out(dir, name);
    put_s("id1,id2,id3,id4,id5,id6,v1\n", 27);
    for (int64_t i = 0; i < n; i++) {
        flush_if(256);
        put_u((uint64_t)a1[i]);
        put_c(',');
        put_u((uint64_t)a2[i]);
        put_c(',');
        put_u((uint64_t)a3[i]);
        put_c(',');
        put_id(a1[i]);
        put_c(',');
        put_id(a2[i]);
        put_c(',');
        put_id(a3[i]);
        put_c(',');
        put_v();
        put_c('\n');
    }
    close_out();
    free(a1);
    free(a2);
    free(a3);

    /* small */
    a1 = sample_all(k1.x, k1.nx, k1.r, k1.nr, n1);
    snprintf(name, sizeof(name), "J1_%s_%s_0_0", nn, ns);
    open_out(dir, name);
    put_s("id1,id4,v2\n", 11);
    for (int64_t i = 0; i < n1; i++) {
        flush_if(256);
        put_u((uint64_t)a1[i]);
        put_c(',');
        put_id(a1[i]);
        put_c(',');
        put_v();
        put_c('\n');
    }
    close_out();
    free(a1);

    /* medium */
    a1 = sample_all(k1.x, k1.nx, k1.r, k1.nr, n2);
    a2 = sample_all(k2.x, k2.nx, k2.r, k2.nr, n2);
    snprintf(name, sizeof(name), "J1_%s_%s_0_0", nn, nm);
    open_out(dir, name);
    put_s("id1,id2,id4,id5,v2\n", 19);
    for (int64_t i = 0; i < n2; i++) {
        flush_if(256);
        put_u((uint64_t)a1[i]);
        put_c(',');
        put_u((uint64_t)a2[i]);
        put_c(',');
        put_id(a1[i]);
        put_c(',');
        put_id(a2[i]);
        put_c(',');
        put_v();
        put_c('\n');
    }
    close_out();
    free(a1);
    free(a2);

    /* big */
    a1 = sample_all(k1.x, k1.nx, k1.r, k1.nr, n);
    a2 = sample_all(k2.x, k2.nx, k2.r, k2.nr, n);
    a3 = sample_all(k3.x, k3.nx, k3.r, k3.nr, n);
    snprintf(name, sizeof(name), "J1_%s_%s_0_0", nn, nn);
    open_out(dir, name);
    put_s("id1,id2,id3,id4,id5,id6,v2\n", 27);
    for (int64_t i = 0; i < n; i++) {
        flush_if(256);
        put_u((uint64_t)a1[i]);
        put_c(',');
        put_u((uint64_t)a2[i]);
        put_c(',');
        put_u((uint64_t)a3[i]);
        put_c(',');
        put_id(a1[i]);
        put_c(',');
        put_id(a2[i]);
        put_c(',');
        put_id(a3[i]);
        put_c(',');
        put_v();
        put_c('\n');
    }
    close_out();
    free(a1);
    free(a2);
    free(a3);
    free(k1.x);
    free(k2.x);
    free(k3.x);
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s N OUTDIR [groupby|join]\n", argv[0]);
        return 2;
    }
    double nd = strtod(argv[1], NULL);
    if (!(nd >= 100 && nd <= 1e10)) {
        fprintf(stderr, "datagen: N must be in 100..1e10\n");
        return 2;
    }
    int64_t n = (int64_t)llround(nd);
    const char *what = argc == 4 ? argv[3] : "all";
    buf = malloc(BUFSZ);
    if (strcmp(what, "join") != 0)
        gen_groupby(n, argv[2]);
    if (strcmp(what, "groupby") != 0)
        gen_join(n, argv[2]);
    return 0;
}
