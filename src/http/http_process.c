/* http_process: the process's own metrics on /metrics, named as the
 * Prometheus client libraries name them (process_resident_memory_bytes,
 * process_cpu_seconds_total, process_open_fds, process_max_fds,
 * process_start_time_seconds), read from /proc/self, plus framed_build_info. */
#include "http_int.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void write_gauge(struct fr_buf *out, const char *name, const char *type, const char *help,
                        double value)
{
    fr_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %.15g\n", name, help, name, type, name,
                  value);
}

/* Resident set size in bytes, from /proc/self/statm; -1 when unreadable. */
static double resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    unsigned long long size = 0, resident = 0;
    int n = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    return n == 2 ? (double)resident * (double)sysconf(_SC_PAGESIZE) : -1;
}

/* Open file descriptors (the directory's own descriptor not counted). */
static double open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        if (e->d_name[0] != '.')
            n++;
    }
    closedir(d);
    return (double)(n - 1);
}

/* Seconds since the boot at which the process started: field 22 of
 * /proc/self/stat (in clock ticks), counted after the command name, which
 * may hold spaces and parentheses. */
static double start_ticks_s(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* after ") " come field 3 (state) onwards: starttime is the 20th */
    p++;
    for (int field = 3; field <= 22 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    if (!p)
        return -1;
    unsigned long long ticks = strtoull(p, NULL, 10);
    return (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

/* The boot time in Unix seconds (btime of /proc/stat). */
static double boot_time_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    char line[256];
    double t = -1;
    while (t < 0 && fgets(line, sizeof(line), f)) {
        unsigned long long v = 0;
        if (sscanf(line, "btime %llu", &v) == 1)
            t = (double)v;
    }
    fclose(f);
    return t;
}

void http__metrics_write_process(struct fr_buf *out, const char *role)
{
    fr_buf_printf(out,
                  "# HELP framed_build_info The running build (always 1).\n"
                  "# TYPE framed_build_info gauge\n"
                  "framed_build_info{version=\"%s\",role=\"%s\"} 1\n",
                  FRAMED_VERSION, role);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        write_gauge(out, "process_cpu_seconds_total", "counter",
                    "Total user and system CPU time spent in seconds.", cpu);
    }
    double rss = resident_bytes();
    if (rss >= 0)
        write_gauge(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
                    rss);
    double fds = open_fds();
    if (fds >= 0)
        write_gauge(out, "process_open_fds", "gauge", "Number of open file descriptors.", fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        write_gauge(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
                    (double)rl.rlim_cur);
    double start = start_ticks_s(), boot = boot_time_s();
    if (start >= 0 && boot >= 0)
        write_gauge(out, "process_start_time_seconds", "gauge",
                    "Start time of the process since unix epoch in seconds.", boot + start);
}
