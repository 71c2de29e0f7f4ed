/* engine_source: the file-backed byte source of the readers (pread on a
 * regular file opened without blocking on FIFOs or devices). Other sources
 * (a worker's HTTP range reads) are provided by the engine's callers. */
#include "engine_io_int.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int file_read(struct df_source *s, int64_t off, char *buf, size_t len, size_t *got,
                     struct fr_error *err)
{
    struct df_file_source *fs = (struct df_file_source *)s;
    ssize_t n;
    do {
        n = pread(fs->fd, buf, len, off);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return fr_error_set(err, FR_EIO, "reading %s: %s", s->name, strerror(errno));
    *got = (size_t)n;
    return FR_OK;
}

int df_file_source_open(struct df_file_source *fs, const char *path, struct fr_error *err)
{
    struct stat st;
    fs->base = (struct df_source){.read = file_read, .size = -1, .name = df__basename(path)};
    fs->fd = fr_file_open_regular(path);
    if (fs->fd < 0)
        return fr_error_set(err, errno == ENOENT ? FR_ENOTFOUND : FR_EIO, "cannot open %s: %s",
                            fs->base.name, strerror(errno));
    if (fstat(fs->fd, &st) == 0)
        fs->base.size = (int64_t)st.st_size;
    return FR_OK;
}

void df_file_source_close(struct df_file_source *fs)
{
    if (fs->fd >= 0)
        close(fs->fd);
    fs->fd = -1;
}
