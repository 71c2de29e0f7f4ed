/* An LD_PRELOAD library for the clock-step tests (faults_clock.test.mjs):
 * the process's CLOCK_REALTIME reads are moved by the signed number of
 * seconds held, as text, in the file FRAMED_TEST_CLOCK_SHIFT names; the
 * test rewrites that file to step the wall clock of one process while it
 * runs, as NTP or an operator would step a machine's. CLOCK_MONOTONIC, and
 * the kernel's own timed waits, are left as they are, as after a real step.
 * Test-only: never linked into framed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long shift_seconds(void)
{
    const char *path = getenv("FRAMED_TEST_CLOCK_SHIFT");
    if (!path)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real)
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
        ts->tv_sec += (time_t)shift_seconds();
    return rc;
}
