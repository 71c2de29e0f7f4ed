/* main: the framed command line's entry: `framed serve` (the coordinator),
 * `framed worker` (a cluster worker), --help and --version. The roles live
 * in src/cli/ (one table of flags each, one parser for both). */
#include "cli/cli.h"
#include "common/common.h"

#include <stdio.h>
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
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1, envp);
    }
    fprintf(stderr, "framed: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
