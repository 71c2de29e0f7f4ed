/* fuzz_plan: the plan JSON of POST /v1/dataframes and /v1/queries: parse,
 * bind (schemas, expressions), optimize and cut into stages (plan_build),
 * then explain it and make every task's spec, as the runner would ship it.
 * Plans are not executed here (fuzz_task runs task specs). The data dir is
 * the golden tests' inputs; dataframe "df-1" is materialized in two
 * partitions, "df-2" is not yet. */
#include "fuzz_util.h"
#include "plan/plan.h"

#include <jansson.h>

static char data_dir[512];

static int lookup(void *arg, const char *id, struct plan_source_info *info, struct fr_error *err)
{
    (void)arg;
    if (strcmp(id, "df-2") == 0)
        return fr_error_set(err, FR_ECONFLICT, "dataframe %s is not materialized yet", id);
    if (strcmp(id, "df-1") != 0)
        return fr_error_set(err, FR_ENOTFOUND, "no dataframe '%s'", id);
    memset(info, 0, sizeof(*info));
    df_schema_init(&info->schema);
    df_schema_add(&info->schema, "k", DF_TYPE_INT64);
    df_schema_add(&info->schema, "name", DF_TYPE_STRING);
    df_schema_add(&info->schema, "when", DF_TYPE_TIMESTAMP);
    info->nparts = 2;
    info->part_ids = fr_xcalloc(3, sizeof(char *));
    info->part_rows = fr_xcalloc(3, sizeof(int64_t));
    info->part_ids[0] = fr_xstrdup("part-a");
    info->part_ids[1] = fr_xstrdup("part-b");
    info->part_rows[0] = 3;
    info->part_rows[1] = 5;
    info->bytes = 400;
    return FR_OK;
}

static void setup(void)
{
    /* Only read (schemas are inferred), never written. */
    snprintf(data_dir, sizeof(data_dir), "%s/tests/data/golden/inputs", FRAMED_SOURCE_DIR);
}

/* Every stage's view and every task's spec, bounded like the runner. */
static void walk_stages(const plan_physical *p)
{
    int nstages = plan_physical_nstages(p);
    FUZZ_CHECK(nstages > 0);
    for (int s = 0; s < nstages; s++) {
        struct plan_stage_view v;
        plan_stage_view(p, s, &v);
        FUZZ_CHECK(v.ntasks >= 0 && v.nbuckets >= 1 && v.nslots >= 0);
        for (int k = 0; k < v.nslots; k++)
            FUZZ_CHECK(v.slots[k].stage >= 0 && v.slots[k].stage < s);
        for (int t = 0; t < v.ntasks && t < 64; t++) {
            json_t *spec = plan_task_spec(p, s, t, NULL);
            FUZZ_CHECK(json_is_object(spec));
            char *text = json_dumps(spec, JSON_COMPACT);
            FUZZ_CHECK(text != NULL);
            free(text);
            json_decref(spec);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!data_dir[0])
        setup();
    json_error_t jerr;
    json_t *plan = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!plan)
        return 0;
    struct cfg cfg;
    cfg_defaults(&cfg);
    /* Small enough that the example files are split and joins shuffle. */
    cfg.scan_tasks_min_size_bytes = 64;
    cfg.scan_tasks_max_size_bytes = 128;
    cfg.broadcast_join_size_bytes_threshold = (size & 1) ? 0 : 10 * CFG_MiB;
    cfg.shuffle_partitions = 3;
    const struct plan_env env = {.data_dir = data_dir, .lookup_dataframe = lookup, .arg = NULL};
    plan_physical *p = NULL;
    struct fr_error err;
    fr_error_init(&err);
    int64_t limit = (size & 2) ? 8 : -1; /* a preview, or a query */
    if (plan_build(plan, &cfg, &env, limit, &p, &err) == FR_OK) {
        FUZZ_CHECK(plan_physical_schema(p)->nfields <= FR_MAX_COLUMNS);
        json_t *ex = plan_physical_explain(p);
        FUZZ_CHECK(json_is_object(ex));
        json_decref(ex);
        walk_stages(p);
        plan_physical_free(p);
    } else {
        FUZZ_CHECK(p == NULL && err.status != FR_OK && err.message[0]);
    }
    cfg_cleanup(&cfg);
    json_decref(plan);
    return 0;
}
