/* common_lock: one process per directory. An exclusive flock on DIR/framed.lock,
 * held as long as the fd is open (the kernel drops it when the process dies,
 * even by kill -9); the holder's PID is written inside so a refused start can
 * name it. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* The PID the holder wrote, or 0 when none is readable yet. */
static long holder_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

int fr_dir_lock(const char *dir, int *fd_out, struct fr_error *err)
{
    *fd_out = -1;
    char *path = fr_xasprintf("%s/%s", dir, FR_DIR_LOCK_NAME);
    int result = FR_EIO;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        fr_error_set(err, FR_EIO, "cannot open the lock file %s: %s", path, strerror(errno));
        goto out;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            long pid = holder_pid(fd);
            char who[48] = "a process whose PID is not written yet";
            if (pid > 0)
                snprintf(who, sizeof(who), "PID %ld", pid);
            result = fr_error_set(err, FR_ECONFLICT,
                                  "%s is in use by another framed server (%s, lock file %s): "
                                  "one server per state dir",
                                  dir, who, path);
        } else {
            fr_error_set(err, FR_EIO, "cannot lock %s: %s", path, strerror(errno));
        }
        goto out;
    }
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        fr_error_set(err, FR_EIO, "cannot write the lock file %s: %s", path, strerror(errno));
        goto out;
    }
    *fd_out = fd;
    fd = -1;
    result = FR_OK;
out:
    if (fd >= 0)
        close(fd);
    free(path);
    return result;
}

void fr_dir_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* the PID stays: the next holder overwrites it */
}
