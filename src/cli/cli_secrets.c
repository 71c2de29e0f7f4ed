/* cli_secrets: every secret of every role is taken one way: from its file
 * flag, else its FRAMED_*_FILE variable (a file), else its plain FRAMED_*
 * variable; both variables set is an error, a bad file (not a regular file,
 * over CLI_SECRET_MAX bytes, empty) stops the start naming the file and the
 * secret. Secrets are never logged. */
#include "cli.h"

#include "common/common.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A secret file is small: a longer one is a mistake (a device, a log). */
#define CLI_SECRET_MAX 4096

const struct cli_secret cli__secrets[CLI_NSECRETS] = {
    [CLI_ADMIN_TOKEN] = {"admin token", "admin-token-file", "FRAMED_ADMIN_TOKEN"},
    [CLI_DATA_TOKEN] = {"data token", "data-token-file", "FRAMED_DATA_TOKEN"},
    [CLI_CLUSTER_SECRET] = {"cluster secret", "cluster-secret-file", "FRAMED_CLUSTER_SECRET"},
};

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* At most CLI_SECRET_MAX bytes of the regular file path into buf (len set):
 * opened without blocking (a FIFO never blocks the start), a device, FIFO or
 * directory refused, a longer file refused. 0, or -1 with the reason in err. */
static int read_bounded(const char *path, char *buf, size_t *len, struct fr_error *err)
{
    int fd = fr_file_open_regular(path);
    if (fd < 0) {
        if (errno == EINVAL)
            fr_error_set(err, FR_EINVAL, "it is not a regular file");
        else
            fr_error_set(err, FR_EIO, "%s", strerror(errno));
        return -1;
    }
    int rc = 0;
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, CLI_SECRET_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -1;
            fr_error_set(err, FR_EIO, "cannot read it: %s", strerror(errno));
            break;
        }
        n += (size_t)r;
        if (r == 0 || n > CLI_SECRET_MAX)
            break;
    }
    close(fd);
    if (rc == 0 && n > CLI_SECRET_MAX) {
        rc = -1;
        fr_error_set(err, FR_EINVAL, "it is longer than the limit of %d bytes", CLI_SECRET_MAX);
    }
    *len = n;
    return rc;
}

/* The secret in path (new, surrounding whitespace trimmed) or NULL with the
 * reason in err. */
static char *read_secret(const char *path, struct fr_error *err)
{
    char text[CLI_SECRET_MAX + 1];
    char *secret = NULL;
    size_t len = 0;
    if (read_bounded(path, text, &len, err) != 0) {
        OPENSSL_cleanse(text, sizeof(text));
        return NULL;
    }
    size_t start = 0, end = len;
    while (start < end && is_space(text[start]))
        start++;
    while (end > start && is_space(text[end - 1]))
        end--;
    if (memchr(text, '\0', len))
        fr_error_set(err, FR_EINVAL, "it contains a NUL byte");
    else if (start == end)
        fr_error_set(err, FR_EINVAL, "it is empty");
    else
        secret = fr_xstrndup(text + start, end - start);
    OPENSSL_cleanse(text, sizeof(text));
    return secret;
}

static int flag_index(const struct cli_role *role, const char *name)
{
    for (int i = 0; i < role->nflags; i++)
        if (strcmp(role->flags[i].name, name) == 0)
            return i;
    return -1;
}

/* One secret: 0 (value set or none), 1 (bad file), CLI_EXIT_USAGE (both variables). */
static int load_one(const struct cli_role *role, const void *opts, const struct cli_parsed *p,
                    int k, const struct cli_secret *s, char **value)
{
    const struct cli_flag *f = &role->flags[k];
    const char *file = *(const char *const *)((const char *)opts + f->offset);
    const char *plain = getenv(s->env);
    plain = plain && *plain ? plain : NULL;
    char file_var[64];
    snprintf(file_var, sizeof(file_var), "%s_FILE", s->env);
    if (!p->from_cli[k] && p->from_env[k] && plain) {
        fprintf(stderr, "framed: both %s and %s are set: give the %s one way\n", file_var, s->env,
                s->what);
        return CLI_EXIT_USAGE;
    }
    if (file && *file) {
        struct fr_error err;
        fr_error_init(&err);
        *value = read_secret(file, &err);
        if (!*value) {
            fprintf(stderr, "framed: cannot use the %s file %s (%s%s): %s\n", s->what, file,
                    p->from_cli[k] ? "--" : "", p->from_cli[k] ? f->name : file_var, err.message);
            return 1;
        }
        FR_LOG(FR_LOG_DEBUG, "%s: from the file %s (%s%s)%s", s->what, file,
               p->from_cli[k] ? "--" : "", p->from_cli[k] ? f->name : file_var,
               plain ? "; the flag wins over its variable" : "");
    } else if (plain) {
        *value = fr_xstrdup(plain);
        FR_LOG(FR_LOG_DEBUG, "%s: from %s", s->what, s->env);
    } else {
        FR_LOG(FR_LOG_DEBUG, "%s: none", s->what);
    }
    return 0;
}

/* A secret's variables set for a role that does not take it (the worker has
 * no admin or data token): a warning naming the variables, not their values. */
static void warn_unused(const struct cli_role *role, const struct cli_secret *s)
{
    char file_var[64];
    snprintf(file_var, sizeof(file_var), "%s_FILE", s->env);
    const char *vars[2] = {file_var, s->env};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            FR_LOG(FR_LOG_WARN, "%s is ignored: the %s applies only to serve, not to %s", vars[i],
                   s->what, role->name);
    }
}

int cli__secrets_load(const struct cli_role *role, const void *opts,
                      const struct cli_parsed *parsed, struct cli_secrets *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < CLI_NSECRETS; i++) {
        int k = flag_index(role, cli__secrets[i].flag);
        if (k < 0) { /* the role does not use this secret: say so, never the value */
            warn_unused(role, &cli__secrets[i]);
            continue;
        }
        int rc = load_one(role, opts, parsed, k, &cli__secrets[i], &out->value[i]);
        if (rc != 0) {
            cli__secrets_cleanup(out);
            return rc;
        }
    }
    return 0;
}

void cli__secrets_cleanup(struct cli_secrets *s)
{
    for (int i = 0; i < CLI_NSECRETS; i++) {
        if (s->value[i]) {
            OPENSSL_cleanse(s->value[i], strlen(s->value[i]));
            free(s->value[i]);
        }
        s->value[i] = NULL;
    }
}
