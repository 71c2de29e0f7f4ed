/* cli_secrets: every secret of every role is taken one way: from its file
 * flag, else its FRAMED_*_FILE variable (a file), else its plain FRAMED_*
 * variable; both variables set is an error, a bad file (not a regular file,
 * over FR_SECRET_MAX bytes, empty: fr_secret_load) stops the start naming the file and the
 * secret. Secrets are never logged. */
#include "cli.h"

#include "common/common.h"

#include <openssl/crypto.h>

#include <stdlib.h>
#include <string.h>

const struct cli_secret cli__secrets[CLI_NSECRETS] = {
    [CLI_ADMIN_TOKEN] = {"admin token", "admin-token-file", "FRAMED_ADMIN_TOKEN"},
    [CLI_DATA_TOKEN] = {"data token", "data-token-file", "FRAMED_DATA_TOKEN"},
    [CLI_CLUSTER_SECRET] = {"cluster secret", "cluster-secret-file", "FRAMED_CLUSTER_SECRET"},
};

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
        if (fr_secret_load(file, value, &err) != FR_OK) {
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
