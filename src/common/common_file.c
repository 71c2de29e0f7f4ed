/* common_file: atomic small-file writes (temp, fsync, rename, dir fsync),
 * whole-file reads for state files, and the checks every reader of a data
 * file makes: regular files only, opened without blocking, inside a root. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fsync_dir_of(const char *path)
{
    char *copy = fr_xstrdup(path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    free(copy);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int fr_file_write_atomic(const char *path, const void *data, size_t len, struct fr_error *err)
{
    int result = FR_EIO;
    char *tmp = fr_xasprintf("%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fr_error_set(err, FR_EIO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fr_error_set(err, FR_EIO, "cannot write %s: %s", tmp, strerror(errno));
            goto out;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0) {
        fr_error_set(err, FR_EIO, "cannot fsync %s: %s", tmp, strerror(errno));
        goto out;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, path) != 0) {
        fr_error_set(err, FR_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        goto out;
    }
    fsync_dir_of(path);
    result = FR_OK;
out:
    if (fd >= 0)
        close(fd);
    if (result != FR_OK)
        unlink(tmp);
    free(tmp);
    return result;
}

int fr_file_read_all(const char *path, char **out, size_t *len, struct fr_error *err)
{
    int result = FR_EIO;
    struct fr_buf b;
    fr_buf_init(&b);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return fr_error_set(err, FR_ENOTFOUND, "%s does not exist", path);
        return fr_error_set(err, FR_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        fr_buf_append(&b, chunk, n);
    if (ferror(f)) {
        fr_error_set(err, FR_EIO, "cannot read %s", path);
        goto out;
    }
    *out = fr_buf_steal(&b, len);
    result = FR_OK;
out:
    fclose(f);
    fr_buf_cleanup(&b);
    return result;
}

int fr_mkdir_p(const char *path, struct fr_error *err)
{
    char *copy = fr_xstrdup(path);
    int result = FR_OK;
    for (char *p = copy + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(copy, 0755) != 0 && errno != EEXIST) {
                result = fr_error_set(err, FR_EIO, "cannot create directory %s: %s", copy,
                                      strerror(errno));
                break;
            }
            *p = saved;
            if (saved == '\0')
                break;
        }
    }
    free(copy);
    return result;
}

int fr_file_open_regular(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -1;
    struct stat st;
    int saved = 0;
    int flags = -1;
    if (fstat(fd, &st) != 0)
        saved = errno;
    else if (!S_ISREG(st.st_mode))
        saved = EINVAL;
    else if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
        saved = errno;
    if (saved != 0) {
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int fr_path_resolve_inside(const char *dir, const char *path, char **out, struct fr_error *err)
{
    int result = FR_EIO;
    char *root = realpath(dir, NULL);
    char *full = NULL;
    if (!root) {
        fr_error_set(err, FR_EIO, "the data dir cannot be resolved: %s", strerror(errno));
        goto out;
    }
    full = realpath(path, NULL);
    if (!full) {
        result = fr_error_set(err, FR_ENOTFOUND, "%s does not resolve to a file: %s",
                              strrchr(path, '/') ? strrchr(path, '/') + 1 : path, strerror(errno));
        goto out;
    }
    size_t rl = strlen(root);
    /* the root itself or a sibling sharing its prefix ("data2") is outside */
    if (strncmp(full, root, rl) != 0 || (full[rl] != '/' && root[rl - 1] != '/') ||
        full[rl] == '\0') {
        result = fr_error_set(err, FR_EINVAL, "%s resolves outside the data dir",
                              strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
        goto out;
    }
    *out = full;
    full = NULL;
    result = FR_OK;
out:
    free(root);
    free(full);
    return result;
}
