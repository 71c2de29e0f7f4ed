/* main: the framed command line's entry: `framed serve` (the coordinator),
 * `framed worker` (a cluster worker), --help and --version. The roles live
 * in src/cli/ (one table of flags each, one parser for both). */
#include "cli/cli.h"
#include "common/common.h"

#include <malloc.h>
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

/* Memory a query frees is kept for the next one: glibc would hand blocks
 * over 128 KiB straight back to the system (and trim the heap's top past
 * 128 KiB), and on these machines the first touch of a page costs 5-12 us,
 * so each query, preview and shuffle paid again for pages the last one
 * freed. Blocks up to 32 MiB now come from the heaps, and a heap keeps up
 * to 256 MiB free at its top. What is kept goes back to the system when the
 * server's thread pool or a worker's tasks have been idle for a moment
 * (runner_local.c, worker_heartbeat.c) and at DELETE /v1/runner. An
 * operator's own malloc settings (GLIBC_TUNABLES, MALLOC_*_) win. */
static void keep_freed_memory(void)
{
    const char *t = getenv("GLIBC_TUNABLES");
    if ((t && strstr(t, "glibc.malloc.")) || getenv("MALLOC_MMAP_THRESHOLD_") ||
        getenv("MALLOC_TRIM_THRESHOLD_"))
        return;
    /* no check: under ASan and valgrind these are no-ops that answer 0 */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
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
        keep_freed_memory();
        return commands[i].run(argc - 1, argv + 1, envp);
    }
    fprintf(stderr, "framed: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
