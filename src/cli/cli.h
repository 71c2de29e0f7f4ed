/* cli: the framed command line behind main.c. Each role (serve, worker) is a
 * table of flags; one parser reads them from the command line and their
 * FRAMED_* variables, one loader takes every secret from a file flag, its
 * FRAMED_*_FILE variable or the plain FRAMED_* variable, the same way. */
#ifndef FRAMED_CLI_H
#define FRAMED_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_EXIT_USAGE 2
#define CLI_MAX_FLAGS 64

enum cli_flag_type {
    CLI_STR,
    CLI_INT,
    CLI_BYTES,
    CLI_BOOL /* no value, an int64_t 0/1 */
};

/* One flag: --name VALUE, or FRAMED_NAME in the environment (the flag wins). */
struct cli_flag {
    const char *name;
    enum cli_flag_type type;
    size_t offset; /* into the role's options struct */
    const char *metavar;
    const char *help;
};

/* A role: its flag table and its usage text (printed before the flags). */
struct cli_role {
    const char *name;
    const struct cli_flag *flags;
    int nflags;
    const char *usage;
};

extern const struct cli_role cli__serve_role;
extern const struct cli_role cli__worker_role;

/* Where each flag's value came from, after cli__parse. */
struct cli_parsed {
    bool from_cli[CLI_MAX_FLAGS];
    bool from_env[CLI_MAX_FLAGS];
};

/* The secrets; a role takes those whose file flag is in its table. */
enum cli_secret_id { CLI_ADMIN_TOKEN, CLI_DATA_TOKEN, CLI_CLUSTER_SECRET, CLI_NSECRETS };
struct cli_secret {
    const char *what; /* "admin token", in messages */
    const char *flag; /* "admin-token-file": its FRAMED_ADMIN_TOKEN_FILE names a file too */
    const char *env;  /* "FRAMED_ADMIN_TOKEN": holds the secret itself */
};
extern const struct cli_secret cli__secrets[CLI_NSECRETS];
struct cli_secrets {
    char *value[CLI_NSECRETS]; /* new, NULL = none */
};

/* The role's usage and every flag with its variable(s). */
void cli__print_help(FILE *out, const struct cli_role *role);
/* Environment first, then the command line, into opts. 0 = go on, 1 = --help
 * shown, CLI_EXIT_USAGE on a bad flag or value (said on stderr). */
int cli__parse(int argc, char **argv, const struct cli_role *role, void *opts,
               struct cli_parsed *parsed);
/* Warns (log) about each FRAMED_* variable of envp that no role knows,
 * naming the closest known one; FRAMED_CONFIG_* is config_env's. */
void cli__check_env(char *const *envp);
/* Logs the effective options at debug (file paths, never a secret). */
void cli__log_options(const struct cli_role *role, const void *opts);

/* Loads the role's secrets into out (cleared first; free with
 * cli__secrets_cleanup). 0; 1 when a file is missing, unreadable or empty
 * (said on stderr, naming the file and the secret); CLI_EXIT_USAGE when a
 * secret's file variable and plain variable are both set. */
int cli__secrets_load(const struct cli_role *role, const void *opts,
                      const struct cli_parsed *parsed, struct cli_secrets *out);
void cli__secrets_cleanup(struct cli_secrets *s);

/* What both roles share (cli_common.c). */
int cli__check_shared(int64_t port, int64_t threads, const char *log_level);
void cli__log_listening(const char *addr, int port);
/* Blocks SIGTERM/SIGINT for sigwait; ignores SIGPIPE and SIGXFSZ (a write
 * past RLIMIT_FSIZE fails with EFBIG instead of killing the process). */
void cli__block_stop_signals(sigset_t *set);
/* 1 when every address addr resolves to is loopback, 0 when one is not, -1
 * (the resolver's reason in *why, static) when it does not resolve. */
int cli__is_loopback_address(const char *addr, const char **why);

int cli_serve(int argc, char **argv, char **envp);
int cli_worker(int argc, char **argv, char **envp);

#endif
