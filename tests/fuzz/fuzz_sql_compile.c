/* fuzz_sql_compile: the SQL compiler (src/sql/sql_compile*.c) behind the
 * parser over arbitrary bytes, against a small catalog of inline-row tables:
 * a statement compiles into a plan that the planner accepts (or refuses with
 * a 4xx, never a crash), or fails with a 4xx SQL error at a position in the
 * text. Leaks on either path are failures. */
#include "config/config.h"
#include "plan/plan.h"
#include "sql/sql.h"
#include "fuzz_util.h"

#include <string.h>
#include <strings.h>

static const char *const tables[] = {"t1", "t2", "t3"};

static json_t *rows_of(int t)
{
    if (t == 0)
        return json_pack("[{si sf ss sb}{si sf ss sb}]", "a", 1, "b", 1.5, "s", "x", "f", 1, "a", 2,
                         "b", 2.5, "s", "y", "f", 0);
    if (t == 1)
        return json_pack("[{si ss sf}{si ss sf}]", "a", 1, "c", "p", "b", 0.5, "a", 3, "c", "q",
                         "b", 4.0);
    return json_pack("[{si si}]", "k", 7, "a", 1);
}

static int lookup(void *arg, const char *name, bool quoted, json_t **source,
                  struct df_schema *schema, struct fr_error *err)
{
    (void)arg;
    for (int t = 0; t < 3; t++) {
        if (quoted ? strcmp(name, tables[t]) != 0 : strcasecmp(name, tables[t]) != 0)
            continue;
        json_t *rows = rows_of(t);
        struct df_table *tab = NULL;
        FUZZ_CHECK(df_rows_read(rows, NULL, &tab, err) == FR_OK);
        df_schema_of_table(schema, tab);
        df_table_free(tab);
        *source = json_pack("{so}", "rows", rows);
        return FR_OK;
    }
    return fr_error_set(err, FR_ENOTFOUND, "no table '%s'", name);
}

static int names(void *arg, char ***out, int *n)
{
    (void)arg;
    *out = calloc(4, sizeof(char *));
    FUZZ_CHECK(*out != NULL);
    for (int t = 0; t < 3; t++)
        (*out)[t] = strdup(tables[t]);
    *n = 3;
    return FR_OK;
}

static void check_plan(json_t *plan)
{
    static struct cfg cfg;
    static bool ready;
    if (!ready) {
        cfg_defaults(&cfg);
        ready = true;
    }
    FUZZ_CHECK(json_is_object(plan) && json_object_get(plan, "source"));
    struct plan_env env = {.data_dir = "."};
    struct fr_error err;
    fr_error_init(&err);
    plan_physical *p = NULL;
    int rc = plan_build(plan, &cfg, &env, -1, &p, &err);
    FUZZ_CHECK(rc == FR_OK || rc == FR_EINVAL || rc == FR_EVALIDATION || rc == FR_ETOOLARGE);
    plan_physical_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FUZZ_CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    if (memchr(data, '\0', size)) { /* sql_compile takes a C string */
        free(text);
        return 0;
    }
    const struct sql_catalog cat = {lookup, names, NULL};
    struct sql_statement st;
    struct fr_error err;
    fr_error_init(&err);
    int rc = sql_compile(text, &cat, &st, &err);
    if (rc == FR_OK) {
        if (st.kind == SQL_STMT_QUERY || st.kind == SQL_STMT_EXPLAIN)
            check_plan(st.plan);
        sql_statement_cleanup(&st);
    } else {
        FUZZ_CHECK(rc == FR_EINVAL || rc == FR_EVALIDATION || rc == FR_ENOTFOUND);
        FUZZ_CHECK(err.message[0] != '\0');
        FUZZ_CHECK(err.position <= (int64_t)size);
    }
    free(text);
    return 0;
}
