/* cli_flags: the one table-driven parser of both roles: a flag's value comes
 * from --name or its FRAMED_NAME variable (the flag wins), is parsed by its
 * type, listed in --help with its variable, logged at debug; FRAMED_* names
 * no role knows are reported at start. */
#include "cli.h"

#include "common/common.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int parse_int(const char *s, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < 0)
        return FR_EINVAL;
    *out = v;
    return 0;
}

/* "1048576", "64K", "512M", "16G", "1T" (also "16GiB", "16GB"): powers of 1024. */
static int parse_bytes(const char *s, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v < 0)
        return FR_EINVAL;
    static const char units[] = "KMGT";
    const char *unit = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    if (*end && !unit)
        return FR_EINVAL;
    int shift = unit ? 10 * (int)(unit - units + 1) : 0;
    if (shift) {
        end++;
        if (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0 || *end == '\0')
            end += strlen(end);
    }
    if (*end || v > (INT64_MAX >> shift))
        return FR_EINVAL;
    *out = (int64_t)v << shift;
    return 0;
}

static void env_name(const char *flag, char *out, size_t outsz)
{
    size_t n = (size_t)snprintf(out, outsz, "FRAMED_");
    for (const char *p = flag; *p && n + 1 < outsz; p++)
        out[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    out[n] = '\0';
}

static int flag_set(const struct cli_flag *f, void *opts, const char *value, const char *source)
{
    char *slot = (char *)opts + f->offset;
    int rc = 0;
    if (f->type == CLI_STR)
        *(const char **)slot = value;
    else if (f->type == CLI_BOOL) { /* the flag itself (value NULL), or FRAMED_X=1/0 */
        bool on = !value || strcmp(value, "1") == 0 || strcasecmp(value, "true") == 0;
        rc = on || strcmp(value, "0") == 0 || strcasecmp(value, "false") == 0 ? 0 : FR_EINVAL;
        *(int64_t *)slot = on;
    } else if (f->type == CLI_INT)
        rc = parse_int(value, (int64_t *)slot);
    else
        rc = parse_bytes(value, (int64_t *)slot);
    if (rc != 0)
        fprintf(stderr, "framed: invalid value '%s' for %s (expected %s)\n", value, source,
                f->type == CLI_INT    ? "a non-negative integer"
                : f->type == CLI_BOOL ? "1, 0, true or false"
                                      : "bytes, e.g. 512M");
    return rc;
}

/* The plain variable of a secret whose file flag is f, or NULL. */
static const char *secret_env(const struct cli_flag *f)
{
    for (int i = 0; i < CLI_NSECRETS; i++)
        if (strcmp(cli__secrets[i].flag, f->name) == 0)
            return cli__secrets[i].env;
    return NULL;
}

void cli__print_help(FILE *out, const struct cli_role *role)
{
    fputs(role->usage, out);
    for (int i = 0; i < role->nflags; i++) {
        const struct cli_flag *f = &role->flags[i];
        char left[64], env[64];
        snprintf(left, sizeof(left), "--%s%s%s", f->name, f->metavar[0] ? " " : "", f->metavar);
        env_name(f->name, env, sizeof(env));
        const char *plain = secret_env(f);
        fprintf(out, "  %-28s %s [%s%s%s]\n", left, f->help, env,
                plain ? ", or the secret in " : "", plain ? plain : "");
    }
    fprintf(out, "\nFlags win over their variables. A secret comes from its file flag, its "
                 "*_FILE variable or its plain variable; setting both variables is an error.\n"
                 "FRAMED_CONFIG_<FIELD> variables set pending config values (serve).\n");
}

static struct option *long_options(const struct cli_role *role)
{
    struct option *longopts = fr_xcalloc((size_t)role->nflags + 2, sizeof(*longopts));
    for (int i = 0; i < role->nflags; i++)
        longopts[i] = (struct option){
            role->flags[i].name, role->flags[i].type == CLI_BOOL ? no_argument : required_argument,
            NULL, 1000 + i};
    longopts[role->nflags] = (struct option){"help", no_argument, NULL, 'h'};
    return longopts;
}

int cli__parse(int argc, char **argv, const struct cli_role *role, void *opts,
               struct cli_parsed *parsed)
{
    memset(parsed, 0, sizeof(*parsed));
    for (int i = 0; i < role->nflags && i < CLI_MAX_FLAGS; i++) {
        char env[64];
        env_name(role->flags[i].name, env, sizeof(env));
        const char *v = getenv(env);
        if (v && *v && flag_set(&role->flags[i], opts, v, env) != 0)
            return CLI_EXIT_USAGE;
        parsed->from_env[i] = v && *v;
    }
    struct option *longopts = long_options(role);
    int rc = 0, c, n = role->nflags;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            cli__print_help(stdout, role);
            rc = 1;
        } else if (c >= 1000 && c < 1000 + n) {
            char source[64];
            snprintf(source, sizeof(source), "--%s", role->flags[c - 1000].name);
            rc = flag_set(&role->flags[c - 1000], opts, optarg, source) ? CLI_EXIT_USAGE : 0;
            parsed->from_cli[c - 1000] = true;
        } else {
            fprintf(stderr, "framed %s --help lists the flags\n", role->name);
            rc = CLI_EXIT_USAGE;
        }
    }
    if (rc == 0 && optind < argc) {
        fprintf(stderr, "framed: unexpected argument '%s'\n", argv[optind]);
        rc = CLI_EXIT_USAGE;
    }
    free(longopts);
    return rc;
}

/* ---- misspelt variables ---- */

/* Whether var is known; else the closest known name (within 3 edits) into near. */
static bool env_known(const char *var, char *near, size_t nearsz)
{
    const struct cli_role *roles[] = {&cli__serve_role, &cli__worker_role};
    int best = 4;
    near[0] = '\0';
    for (int i = 0; i < CLI_NSECRETS + 2 * CLI_MAX_FLAGS; i++) {
        char name[64];
        if (i < CLI_NSECRETS) {
            snprintf(name, sizeof(name), "%s", cli__secrets[i].env);
        } else {
            int r = (i - CLI_NSECRETS) / CLI_MAX_FLAGS, k = (i - CLI_NSECRETS) % CLI_MAX_FLAGS;
            if (k >= roles[r]->nflags)
                continue;
            env_name(roles[r]->flags[k].name, name, sizeof(name));
        }
        if (strcmp(name, var) == 0)
            return true;
        int d = fr_edit_distance(var, name);
        if (d >= 0 && d < best) {
            best = d;
            snprintf(near, nearsz, "%s", name);
        }
    }
    return false;
}

void cli__check_env(char *const *envp)
{
    for (char *const *e = envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
        if (strncmp(*e, "FRAMED_", 7) != 0 || strncmp(*e, "FRAMED_CONFIG_", 14) == 0 || n >= 128)
            continue;
        char var[128], near[64];
        memcpy(var, *e, n);
        var[n] = '\0';
        if (env_known(var, near, sizeof(near)))
            continue;
        /* the name only: the value may be a secret */
        FR_LOG(FR_LOG_WARN, "unknown variable %s is ignored%s%s%s", var,
               near[0] ? "; did you mean " : "", near, near[0] ? "?" : "");
    }
}

void cli__log_options(const struct cli_role *role, const void *opts)
{
    if (FR_LOG_DEBUG < fr_log_threshold)
        return;
    struct fr_buf b;
    fr_buf_init(&b);
    for (int i = 0; i < role->nflags; i++) {
        const struct cli_flag *f = &role->flags[i];
        const char *slot = (const char *)opts + f->offset;
        if (f->type == CLI_STR) {
            const char *v = *(const char *const *)slot;
            fr_buf_printf(&b, "%s--%s=%s", i ? " " : "", f->name, v ? v : "(none)");
        } else {
            fr_buf_printf(&b, "%s--%s=%lld", i ? " " : "", f->name,
                          (long long)*(const int64_t *)slot);
        }
    }
    FR_LOG(FR_LOG_DEBUG, "%s options: %s", role->name, b.data ? b.data : "");
    fr_buf_cleanup(&b);
}
