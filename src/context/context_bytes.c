/* context_bytes: the dataset files served to the runner's workers by range
 * (GET /v1/internal/datasets): a worker without the data reads the bytes of
 * its scan tasks from here. Only under the runner's frozen config, only
 * regular files inside the data dir, never the coordinator's own entries. */
#include "context_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

/* Opens canon (the resolved path of a file inside the data dir: no symlink
 * in it when it was resolved) read-only, following no symlink, so a file
 * swapped for one after the resolution is not opened: openat2 beneath the
 * data dir without symlinks where the kernel has it, else O_NOFOLLOW (the
 * last segment) and the opened file's device and inode checked against
 * what the path named. -1 when it is not that regular file. */
static int open_resolved(const char *data_dir, const char *canon)
{
    char *root = realpath(data_dir, NULL);
    size_t n = root ? strlen(root) : 0;
    int fd = -1;
    if (!root || strncmp(canon, root, n) != 0 || canon[n] != '/')
        goto out;
#ifdef SYS_openat2
    int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
                               .resolve =
                                   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
        fd = (int)syscall(SYS_openat2, dir, canon + n + 1, &how, sizeof(how));
        int saved = errno;
        close(dir);
        if (fd < 0 && saved != ENOSYS && saved != EPERM)
            goto out; /* refused (a symlink now, or gone): not the file resolved */
    }
#endif
    struct stat named;
    if (fd < 0 && lstat(canon, &named) == 0 && S_ISREG(named.st_mode)) {
        fd = open(canon, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
        struct stat got;
        if (fd >= 0 &&
            (fstat(fd, &got) != 0 || got.st_dev != named.st_dev || got.st_ino != named.st_ino)) {
            close(fd);
            fd = -1;
        }
    }
    struct stat st;
    int flags = -1;
    if (fd >= 0 &&
        (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (flags = fcntl(fd, F_GETFL)) < 0 ||
         fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)) {
        close(fd);
        fd = -1;
    }
out:
    free(root);
    return fd;
}

/* A path as task specs name files: relative, at most 1024 bytes, no
 * segment starting with '.' (no "..", no hidden entries such as an
 * .upload-* directory) and not the data dir's lock file. */
static bool rel_ok(const char *rel)
{
    size_t n = strlen(rel);
    if (n == 0 || n > 1024 || rel[0] == '/' || strcmp(rel, FR_DIR_LOCK_NAME) == 0)
        return false;
    for (const char *seg = rel; *seg;) {
        size_t k = strcspn(seg, "/");
        if (k == 0 || seg[0] == '.')
            return false;
        seg += k;
        if (*seg == '/')
            seg++;
    }
    return true;
}

/* Under the lock: the runner's frozen config must be the one named. */
static int check_config(ctx *c, const char *config_id, struct ctx_error *err)
{
    pthread_mutex_lock(&c->lock);
    bool active = c->runner != NULL;
    bool same = active && config_id && strcmp(c->config_id, config_id) == 0;
    pthread_mutex_unlock(&c->lock);
    if (same)
        return FR_OK;
    return ctx__fail(err, FR_ECONFLICT, "config-mismatch",
                     active ? "dataset bytes are served under the runner's frozen config, not "
                              "'%.80s'"
                            : "no runner is active, so no config '%.80s' to serve bytes under",
                     config_id ? config_id : "");
}

int ctx_dataset_bytes_open(ctx *c, const char *config_id, const char *rel, int *fd, int64_t *size,
                           int64_t *mtime_ns, struct ctx_error *err)
{
    char *joined = NULL, *full = NULL;
    *fd = -1;
    int result = check_config(c, config_id, err);
    if (result != FR_OK)
        return result;
    if (!rel_ok(rel))
        return ctx__fail(err, FR_EINVAL, "invalid-parameter",
                         "path must name a file inside the data dir by a relative path "
                         "without '.' segments");
    joined = fr_xasprintf("%s/%s", c->opts.data_dir, rel);
    result = fr_path_resolve_inside(c->opts.data_dir, joined, &full, &err->base);
    if (result == FR_ENOTFOUND) {
        result = ctx__fail(err, FR_ENOTFOUND, "dataset-not-found",
                           "no file '%.200s' in the data dir", rel);
        goto out;
    }
    if (result != FR_OK) {
        result = result == FR_EINVAL ? ctx__fail(err, FR_EINVAL, "invalid-parameter",
                                                 "'%.200s' resolves outside the data dir", rel)
                                     : ctx__fail(err, result, "internal",
                                                 "cannot resolve '%.200s' in the data dir", rel);
        goto out;
    }
    struct stat st;
    *fd = open_resolved(c->opts.data_dir, full);
    if (*fd < 0 || fstat(*fd, &st) != 0) {
        result = ctx__fail(err, FR_ENOTFOUND, "dataset-not-found",
                           "no regular file '%.200s' in the data dir", rel);
        goto out;
    }
    *size = (int64_t)st.st_size;
    *mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    result = FR_OK;
out:
    if (result != FR_OK && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    free(joined);
    free(full);
    return result;
}
