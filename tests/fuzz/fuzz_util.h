/* fuzz_util: what the fuzz targets share: a private scratch directory made
 * once per process (removed at exit), a file in it rewritten with each input,
 * and a check that aborts (so libFuzzer records the input) when an invariant
 * of a parser does not hold. Header-only: each target is one executable. */
#ifndef FRAMED_FUZZ_UTIL_H
#define FRAMED_FUZZ_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Aborts with a message: a broken invariant is a finding like a crash. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static char fuzz__dir[256];

static void fuzz__rm_dir(void)
{
    if (!fuzz__dir[0])
        return;
    char cmd[320];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz__dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: cannot remove %s\n", fuzz__dir);
}

/* Borrowed: the scratch directory, made on the first call. */
static inline const char *fuzz_dir(void)
{
    if (fuzz__dir[0])
        return fuzz__dir;
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz__dir, sizeof(fuzz__dir), "%s/framed-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fuzz__dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(fuzz__rm_dir);
    return fuzz__dir;
}

/* Writes bytes to <scratch>/<name> (replacing it); *path is static storage. */
static inline const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    FUZZ_CHECK(fd >= 0);
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        FUZZ_CHECK(w > 0);
        off += (size_t)w;
    }
    close(fd);
    return path;
}

/* new: the input as a NUL-terminated string (embedded NULs are kept). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    FUZZ_CHECK(s != NULL);
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
