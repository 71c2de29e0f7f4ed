/* main: the framed command line's entry: `framed serve` (the coordinator),
 * `framed worker` (a cluster worker), --help and --version. The roles live
 * in src/cli/ (one table of flags each, one parser for both). */
#include "cli/cli.h"
#include "common/common.h"

#include <limits.h>
#include <malloc.h>
#include <sys/auxv.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct command {
    const char *name;
    int (*run)(int argc, char **argv, char **envp);
    const char *summary;
};

static const struct command commands[] = {
    {"serve", cli_serve, "run the coordinator (HTTP API, config store, runner)"},
    {"worker", cli_worker, "run a worker of a remote runner"},
};
#define NCOMMANDS ((int)(sizeof(commands) / sizeof(commands[0])))

static void usage(FILE *out)
{
    fprintf(out, "usage: framed <command> [flags]\n       framed --help | --version\n\n"
                 "commands:\n");
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`framed <command> --help` lists a command's flags.\n");
}

/* Freed memory kept, and huge pages (below): an address sanitizer's
 * allocator takes no tunables, and an exec under valgrind would leave it. */
#if defined(__SANITIZE_ADDRESS__)
#define FRAMED_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FRAMED_ASAN 1
#endif
#endif

/* The roles start again at once (the same process, execv of itself) with
 * FR_MALLOC_TUNABLES in GLIBC_TUNABLES, which glibc reads only at start:
 * its heaps then grow 64 MiB at a time on huge pages. On a VM the first
 * touch of a 4 KiB page is dear: the first q3 of 1e8 rows in a process took
 * 458k page faults and 6.3 s, with the tunables 1.1k faults and 4.1 s
 * (bench/RESULTS.md). Not when the operator set malloc tunables or MALLOC_*_
 * variables (theirs win), under valgrind or ASan, in secure execution
 * (setuid or file capabilities: glibc drops tunables there), when started
 * through the dynamic loader, or when the exec fails (then
 * keep_freed_memory below does what mallopt can). */
#define RESTART_MARK "_FRAMED_MALLOC_RESTARTED"

static void restart_with_malloc_tunables(char **argv)
{
#ifndef FRAMED_ASAN
    /* once: the marker says this is the restarted process, whatever glibc
     * made of GLIBC_TUNABLES (a secure-execution process may lose it) */
    if (getenv(RESTART_MARK)) {
        unsetenv(RESTART_MARK);
        return;
    }
    const char *t = getenv("GLIBC_TUNABLES"), *pre = getenv("LD_PRELOAD");
    char value[4096];
    if (getauxval(AT_SECURE) || getenv("MALLOC_MMAP_THRESHOLD_") ||
        getenv("MALLOC_TRIM_THRESHOLD_") || getenv("MALLOC_TOP_PAD_") ||
        getenv("MALLOC_ARENA_MAX") || (pre && strstr(pre, "vgpreload")) ||
        !fr_malloc_tunables(t, strcmp(argv[1], "worker") == 0, value, sizeof(value)))
        return;
    /* started through the dynamic loader (ld-linux-*.so framed ...): the
     * exe is the loader, which would take argv[0] for its program */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return; /* no /proc: no way to exec this binary again */
    self[n] = '\0';
    const char *base = strrchr(self, '/');
    base = base ? base + 1 : self;
    if (strncmp(base, "ld-", 3) == 0 || strncmp(base, "ld.so", 5) == 0)
        return;
    char *was = t ? fr_xstrdup(t) : NULL;
    if (setenv("GLIBC_TUNABLES", value, 1) == 0 && setenv(RESTART_MARK, "1", 1) == 0)
        execv("/proc/self/exe", argv);
    unsetenv(RESTART_MARK); /* no exec: as it was */
    if (was)
        setenv("GLIBC_TUNABLES", was, 1);
    else
        unsetenv("GLIBC_TUNABLES");
    free(was);
#else
    (void)argv;
#endif
}

/* Memory a query frees is kept for the next one: glibc would hand blocks
 * over 128 KiB straight back to the system (and trim the heap's top past
 * 128 KiB), and on these machines the first touch of a page costs 5-12 us,
 * so each query, preview and shuffle paid again for pages the last one
 * freed. Blocks up to 32 MiB now come from the heaps, and a heap keeps what
 * is free at its top (FR_MALLOC_TUNABLES: up to 4 GiB; mallopt takes an int,
 * so 2 GiB here); a worker allocates from one arena. What is kept goes back
 * to the system when the server's thread pool or a worker's tasks have been
 * idle for a moment (runner_local.c, worker_heartbeat.c) and at DELETE
 * /v1/runner. An operator's own malloc settings (GLIBC_TUNABLES,
 * MALLOC_*_) win. */
static void keep_freed_memory(const char *role)
{
    const char *t = getenv("GLIBC_TUNABLES");
    if ((t && strstr(t, "glibc.malloc.")) || getenv("MALLOC_MMAP_THRESHOLD_") ||
        getenv("MALLOC_TRIM_THRESHOLD_") || getenv("MALLOC_TOP_PAD_") || getenv("MALLOC_ARENA_MAX"))
        return;
    /* no check: under ASan and valgrind these are no-ops that answer 0 */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
    if (strcmp(role, "worker") == 0)
        mallopt(M_ARENA_MAX, 1);
}

int main(int argc, char **argv, char **envp)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("framed %s\n", FRAMED_VERSION);
        return 0;
    }
    for (int i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) != 0)
            continue;
        restart_with_malloc_tunables(argv);
        keep_freed_memory(argv[1]);
        return commands[i].run(argc - 1, argv + 1, envp);
    }
    fprintf(stderr, "framed: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
