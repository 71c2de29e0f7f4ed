/* Tests of src/config: the field table, validation (config_validate.c), JSON
 * and canonical ID (config_json.c), environment variables (config_env.c) and
 * frozen snapshots (config_frozen.c). State files: test_config_state.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

/* The canonical bytes of the defaults, written by hand from the table, and
 * their ID from `printf '%s' '<bytes>' | sha256sum`: a change to the encoding
 * or to a default must change this test on purpose. */
static const char DEFAULTS_CANONICAL[] =
    "{\"broadcast_join_size_bytes_threshold\":10485760,\"csv_null_values\":[],"
    "\"maintain_order\":true,\"morsel_size_rows\":122880,\"nulls_first\":false,"
    "\"num_preview_rows\":8,\"partition_codecs\":[],\"sample_size_for_sort\":20,"
    "\"scan_tasks_max_size_bytes\":402653184,"
    "\"scan_tasks_min_size_bytes\":100663296,\"shuffle_coalesce_bytes\":16777216,"
    "\"shuffle_partitions\":8,\"task_max_retries\":3,"
    "\"task_memory_limit_bytes\":4294967296,\"task_timeout_ms\":600000}";
static const char DEFAULTS_ID[] =
    "sha256:3f36d3362bd12ac7203bfec92481aab30da9c4eb084d94064509b39cba1ab0de";

/* Applies patch (JSON text) on the defaults; returns the status, *errors new. */
static int apply_text(const char *patch_text, struct cfg *out, json_t **errors)
{
    struct cfg base;
    cfg_defaults(&base);
    json_error_t jerr;
    json_t *patch = json_loads(patch_text, 0, &jerr);
    assert_non_null(patch);
    int rc = cfg_apply_json(&base, patch, out, errors);
    json_decref(patch);
    cfg_cleanup(&base);
    return rc;
}

/* True if errors holds a problem for field whose message contains needle. */
static bool has_problem(json_t *errors, const char *field, const char *needle)
{
    for (size_t i = 0; i < json_array_size(errors); i++) {
        json_t *p = json_array_get(errors, i);
        const char *f = json_string_value(json_object_get(p, "field"));
        const char *m = json_string_value(json_object_get(p, "message"));
        if (f && m && strcmp(f, field) == 0 && strstr(m, needle))
            return true;
    }
    return false;
}

/* Expects patch to fail with exactly one problem on field mentioning needle. */
static void expect_one_problem(const char *patch, const char *field, const char *needle)
{
    struct cfg out;
    json_t *errors = NULL;
    assert_int_equal(apply_text(patch, &out, &errors), FR_EVALIDATION);
    assert_non_null(errors);
    if (!has_problem(errors, field, needle) || json_array_size(errors) != 1) {
        char *dump = json_dumps(errors, 0);
        print_error("patch %s gave %s\n", patch, dump);
        free(dump);
        fail();
    }
    json_decref(errors);
}

static void test_defaults_match_table(void **state)
{
    (void)state;
    struct cfg c;
    cfg_defaults(&c);
    assert_int_equal(c.scan_tasks_min_size_bytes, 96 * CFG_MiB);
    assert_int_equal(c.task_memory_limit_bytes, 4 * CFG_GiB);
    assert_true(c.maintain_order);
    assert_false(c.nulls_first);
    assert_int_equal(c.csv_null_values.n, 0);
    assert_int_equal(c.shuffle_coalesce_bytes, 16 * CFG_MiB);
    assert_int_equal(c.partition_codecs.n, 0);
    assert_int_equal(cfg_nfields, 15);
    assert_string_equal(cfg_fields[3].name, "shuffle_partitions");
    cfg_cleanup(&c);
}

static void test_unknown_field_suggests(void **state)
{
    (void)state;
    expect_one_problem("{\"shuffle_partition\": 4}", "shuffle_partition",
                       "did you mean 'shuffle_partitions'");
    expect_one_problem("{\"MORSEL_SIZE_ROWS\": 4}", "MORSEL_SIZE_ROWS",
                       "did you mean 'morsel_size_rows'");
    struct cfg out;
    json_t *errors = NULL;
    assert_int_equal(apply_text("{\"colour\": 4}", &out, &errors), FR_EVALIDATION);
    assert_true(has_problem(errors, "colour", "unknown field"));
    assert_false(has_problem(errors, "colour", "did you mean"));
    json_decref(errors);
}

static void test_wrong_types(void **state)
{
    (void)state;
    expect_one_problem("{\"shuffle_partitions\": \"8\"}", "shuffle_partitions",
                       "must be an integer, got a string");
    expect_one_problem("{\"shuffle_partitions\": 1.5}", "shuffle_partitions", "must be an integer");
    expect_one_problem("{\"shuffle_partitions\": 8.0}", "shuffle_partitions", "must be an integer");
    expect_one_problem("{\"shuffle_partitions\": true}", "shuffle_partitions",
                       "must be an integer, got a boolean");
    expect_one_problem("{\"shuffle_partitions\": null}", "shuffle_partitions",
                       "must be an integer, got null");
    expect_one_problem("{\"maintain_order\": 1}", "maintain_order",
                       "must be true or false, got an integer");
    expect_one_problem("{\"nulls_first\": \"true\"}", "nulls_first", "must be true or false");
    expect_one_problem("{\"csv_null_values\": \"NA\"}", "csv_null_values",
                       "must be an array of strings, got a string");
    expect_one_problem("{\"csv_null_values\": [\"NA\", 7]}", "csv_null_values",
                       "entry 1 must be a string, got an integer");
}

static void test_bounds(void **state)
{
    (void)state;
    expect_one_problem("{\"shuffle_partitions\": 0}", "shuffle_partitions",
                       "must be between 1 and 4096, got 0");
    expect_one_problem("{\"shuffle_partitions\": 4097}", "shuffle_partitions",
                       "must be between 1 and 4096, got 4097");
    expect_one_problem("{\"task_timeout_ms\": -5}", "task_timeout_ms",
                       "must be between 100 and 86400000");
    /* The edges themselves are allowed. */
    struct cfg out;
    json_t *errors = NULL;
    assert_int_equal(
        apply_text("{\"shuffle_partitions\": 4096, \"num_preview_rows\": 0}", &out, &errors),
        FR_OK);
    assert_null(errors);
    assert_int_equal(out.shuffle_partitions, 4096);
    cfg_cleanup(&out);
}

static void test_list_too_long(void **state)
{
    (void)state;
    json_t *list = json_array();
    for (int i = 0; i < 65; i++)
        json_array_append_new(list, json_sprintf("n%d", i));
    json_t *patch = json_pack("{s:o}", "csv_null_values", list);
    char *text = json_dumps(patch, 0);
    expect_one_problem(text, "csv_null_values", "between 0 and 64 entries, got 65");
    free(text);
    /* 64 is fine. */
    json_array_remove(list, 0);
    struct cfg base, out;
    json_t *errors = NULL;
    cfg_defaults(&base);
    assert_int_equal(cfg_apply_json(&base, patch, &out, &errors), FR_OK);
    assert_int_equal(out.csv_null_values.n, 64);
    assert_string_equal(out.csv_null_values.items[0], "n1");
    cfg_cleanup(&out);
    cfg_cleanup(&base);
    json_decref(patch);
}

/* partition_codecs: entries from lz4 and zstd, each once, at most two. */
static void test_codec_choices(void **state)
{
    (void)state;
    expect_one_problem("{\"partition_codecs\":[\"gzip\"]}", "partition_codecs",
                       "entry 0 must be one of lz4, zstd, got 'gzip'");
    expect_one_problem("{\"partition_codecs\":[\"lz4\",\"lz4\"]}", "partition_codecs",
                       "entry 1 repeats 'lz4'");
    struct cfg bad;
    json_t *errs = NULL;
    assert_int_equal(apply_text("{\"partition_codecs\":[\"lz4\",\"zstd\",\"lz4\"]}", &bad, &errs),
                     FR_EVALIDATION);
    assert_true(has_problem(errs, "partition_codecs", "between 0 and 2 entries, got 3"));
    assert_true(has_problem(errs, "partition_codecs", "entry 2 repeats 'lz4'"));
    json_decref(errs);
    expect_one_problem("{\"partition_codecs\":[\"LZ4\"]}", "partition_codecs",
                       "must be one of lz4, zstd");
    struct cfg out;
    json_t *errors = NULL;
    assert_int_equal(apply_text("{\"partition_codecs\":[\"zstd\",\"lz4\"]}", &out, &errors), FR_OK);
    char buf[32];
    assert_string_equal(cfg_codecs_accept(&out, buf, sizeof(buf)), "zstd, lz4");
    cfg_cleanup(&out);
    cfg_defaults(&out);
    assert_null(cfg_codecs_accept(&out, buf, sizeof(buf)));
    cfg_cleanup(&out);
}

static void test_min_max_cross_rule(void **state)
{
    (void)state;
    /* Both in the patch. */
    expect_one_problem("{\"scan_tasks_min_size_bytes\": 2000, \"scan_tasks_max_size_bytes\": 1000}",
                       "scan_tasks_min_size_bytes", "must not be greater than");
    /* Only the minimum: above the default maximum (384 MiB). */
    expect_one_problem(
        "{\"scan_tasks_min_size_bytes\": 500000000}", "scan_tasks_min_size_bytes",
        "(500000000) must not be greater than scan_tasks_max_size_bytes (402653184)");
    /* Only the maximum: below the default minimum (96 MiB); blamed on it. */
    expect_one_problem("{\"scan_tasks_max_size_bytes\": 1000}", "scan_tasks_max_size_bytes",
                       "scan_tasks_min_size_bytes (100663296) must not be greater than");
    /* Equal is allowed, and a patch can move both past each other at once. */
    struct cfg out;
    json_t *errors = NULL;
    assert_int_equal(apply_text("{\"scan_tasks_min_size_bytes\": 1000000000,"
                                " \"scan_tasks_max_size_bytes\": 1000000000}",
                                &out, &errors),
                     FR_OK);
    assert_int_equal(out.scan_tasks_min_size_bytes, 1000000000);
    cfg_cleanup(&out);
}

static void test_every_problem_listed(void **state)
{
    (void)state;
    struct cfg out;
    json_t *errors = NULL;
    assert_int_equal(apply_text("{\"shuffle_partitions\": 0, \"nulls_first\": 3,"
                                " \"bogus\": 1, \"csv_null_values\": [1],"
                                " \"scan_tasks_max_size_bytes\": 5, \"num_preview_rows\": 3}",
                                &out, &errors),
                     FR_EVALIDATION);
    assert_int_equal(json_array_size(errors), 5);
    assert_true(has_problem(errors, "shuffle_partitions", "between"));
    assert_true(has_problem(errors, "nulls_first", "true or false"));
    assert_true(has_problem(errors, "bogus", "unknown field"));
    assert_true(has_problem(errors, "csv_null_values", "entry 0"));
    assert_true(has_problem(errors, "scan_tasks_max_size_bytes", "must not be greater"));
    json_decref(errors);
}

static void test_nothing_changed_on_failure(void **state)
{
    (void)state;
    struct cfg base, saved, out;
    json_t *errors = NULL;
    assert_int_equal(
        apply_text("{\"csv_null_values\": [\"x\"], \"num_preview_rows\": 5}", &base, &errors),
        FR_OK);
    cfg_copy(&saved, &base);
    json_t *patch = json_loads("{\"num_preview_rows\": 50, \"csv_null_values\": [\"NA\"],"
                               " \"task_max_retries\": 1000}",
                               0, NULL);
    assert_int_equal(cfg_apply_json(&base, patch, &out, &errors), FR_EVALIDATION);
    assert_true(cfg_equal(&base, &saved));
    assert_string_equal(base.csv_null_values.items[0], "x");
    assert_int_equal(base.num_preview_rows, 5);
    /* out is left cleaned up: no list to leak, safe to clean again. */
    assert_null(out.csv_null_values.items);
    cfg_cleanup(&out);
    json_decref(errors);
    json_decref(patch);
    cfg_cleanup(&saved);
    cfg_cleanup(&base);
}

static void test_valid_patch_changes_only_named(void **state)
{
    (void)state;
    struct cfg base, out;
    json_t *errors = NULL;
    cfg_defaults(&base);
    assert_int_equal(apply_text("{\"shuffle_partitions\": 16, \"nulls_first\": true,"
                                " \"csv_null_values\": [\"NA\", \"\", \"null\"]}",
                                &out, &errors),
                     FR_OK);
    json_t *a = cfg_to_json(&base), *b = cfg_to_json(&out);
    for (void *it = json_object_iter(a); it; it = json_object_iter_next(a, it)) {
        const char *key = json_object_iter_key(it);
        json_t *v = json_object_iter_value(it);
        bool named = strcmp(key, "shuffle_partitions") == 0 || strcmp(key, "nulls_first") == 0 ||
                     strcmp(key, "csv_null_values") == 0;
        assert_int_equal(json_equal(v, json_object_get(b, key)), !named);
    }
    assert_int_equal(out.shuffle_partitions, 16);
    assert_true(out.nulls_first);
    assert_int_equal(out.csv_null_values.n, 3);
    assert_string_equal(out.csv_null_values.items[1], "");
    json_decref(a);
    json_decref(b);
    cfg_cleanup(&out);
    cfg_cleanup(&base);
}

static void test_patch_not_object(void **state)
{
    (void)state;
    struct cfg out;
    json_t *errors = NULL;
    assert_int_equal(apply_text("[1, 2]", &out, &errors), FR_EINVAL);
    assert_true(has_problem(errors, "", "must be a JSON object"));
    json_decref(errors);
}

static void test_canonical_known_vector(void **state)
{
    (void)state;
    struct cfg c;
    char *bytes;
    size_t len;
    char id[80];
    cfg_defaults(&c);
    cfg_canonical(&c, &bytes, &len);
    assert_string_equal(bytes, DEFAULTS_CANONICAL);
    assert_int_equal(len, strlen(DEFAULTS_CANONICAL));
    cfg_id(&c, id, sizeof(id));
    assert_string_equal(id, DEFAULTS_ID);
    free(bytes);
    cfg_cleanup(&c);
}

static void test_id_depends_only_on_values(void **state)
{
    (void)state;
    struct cfg a, b, defaults;
    json_t *errors = NULL;
    char ida[80], idb[80];
    /* The same values given in another order (and with other spacing). */
    assert_int_equal(apply_text("{\"nulls_first\": true, \"shuffle_partitions\": 12}", &a, &errors),
                     FR_OK);
    assert_int_equal(apply_text("{ \"shuffle_partitions\":12,\"nulls_first\":true }", &b, &errors),
                     FR_OK);
    cfg_id(&a, ida, sizeof(ida));
    cfg_id(&b, idb, sizeof(idb));
    assert_string_equal(ida, idb);
    /* One value changed: another ID. */
    b.shuffle_partitions = 13;
    cfg_id(&b, idb, sizeof(idb));
    assert_string_not_equal(ida, idb);
    cfg_defaults(&defaults);
    cfg_id(&defaults, idb, sizeof(idb));
    assert_string_not_equal(ida, idb);
    cfg_cleanup(&a);
    cfg_cleanup(&b);
    cfg_cleanup(&defaults);
}

static void test_no_floats_anywhere(void **state)
{
    (void)state;
    struct cfg c;
    cfg_defaults(&c);
    json_t *o = cfg_to_json(&c);
    assert_int_equal(json_object_size(o), (size_t)cfg_nfields);
    for (int i = 0; i < cfg_nfields; i++) {
        json_t *v = json_object_get(o, cfg_fields[i].name);
        assert_non_null(v);
        assert_false(json_is_real(v));
    }
    json_t *schema = cfg_schema_json();
    assert_int_equal(json_array_size(schema), (size_t)cfg_nfields);
    json_t *row = json_array_get(schema, 3);
    assert_string_equal(json_string_value(json_object_get(row, "name")), "shuffle_partitions");
    assert_string_equal(json_string_value(json_object_get(row, "type")), "integer");
    assert_int_equal(json_integer_value(json_object_get(row, "default")), 8);
    assert_int_equal(json_integer_value(json_object_get(row, "maximum")), 4096);
    assert_string_equal(json_string_value(json_object_get(row, "scope")), "planner");
    json_decref(schema);
    json_decref(o);
    cfg_cleanup(&c);
}

static void test_from_bytes_round_trip(void **state)
{
    (void)state;
    struct cfg c, back;
    struct fr_error err;
    json_t *errors = NULL;
    char *bytes;
    size_t len;
    fr_error_init(&err);
    assert_int_equal(apply_text("{\"morsel_size_rows\": 4096, \"maintain_order\": false,"
                                " \"csv_null_values\": [\"NA\", \"n/a\", \"\\u00e9\"]}",
                                &c, &errors),
                     FR_OK);
    cfg_canonical(&c, &bytes, &len);
    assert_int_equal(cfg_from_bytes(bytes, len, false, &back, &err), FR_OK);
    assert_true(cfg_equal(&c, &back));
    cfg_cleanup(&back);
    /* Incomplete bytes: an error unless missing fields may take defaults. */
    const char partial[] = "{\"shuffle_partitions\": 3}";
    assert_int_equal(cfg_from_bytes(partial, strlen(partial), false, &back, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "missing fields"));
    assert_int_equal(cfg_from_bytes(partial, strlen(partial), true, &back, &err), FR_OK);
    assert_int_equal(back.shuffle_partitions, 3);
    assert_int_equal(back.morsel_size_rows, 122880);
    cfg_cleanup(&back);
    /* Garbage and invalid values are FR_EDATA with the reason. */
    assert_int_equal(cfg_from_bytes("{\"shuff", 7, true, &back, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "not valid JSON"));
    const char bad[] = "{\"shuffle_partitions\": 0}";
    assert_int_equal(cfg_from_bytes(bad, strlen(bad), true, &back, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "between 1 and 4096"));
    assert_string_equal(err.field, "shuffle_partitions");
    free(bytes);
    cfg_cleanup(&c);
}

static void test_env_good(void **state)
{
    (void)state;
    struct cfg c;
    struct fr_error err;
    fr_error_init(&err);
    cfg_defaults(&c);
    char *env[] = {"PATH=/bin",
                   "FRAMED_CONFIG_SHUFFLE_PARTITIONS=32",
                   "FRAMED_CONFIG_NULLS_FIRST=1",
                   "FRAMED_CONFIG_MAINTAIN_ORDER=false",
                   "FRAMED_CONFIG_CSV_NULL_VALUES=NA,null,",
                   "FRAMED_CONFIGX=1",
                   NULL};
    assert_int_equal(cfg_apply_env(&c, env, &err), FR_OK);
    assert_int_equal(c.shuffle_partitions, 32);
    assert_true(c.nulls_first);
    assert_false(c.maintain_order);
    assert_int_equal(c.csv_null_values.n, 3);
    assert_string_equal(c.csv_null_values.items[1], "null");
    assert_string_equal(c.csv_null_values.items[2], "");
    char *empty[] = {"FRAMED_CONFIG_CSV_NULL_VALUES=", NULL};
    assert_int_equal(cfg_apply_env(&c, empty, &err), FR_OK);
    assert_int_equal(c.csv_null_values.n, 0);
    assert_int_equal(cfg_apply_env(&c, NULL, &err), FR_OK);
    cfg_cleanup(&c);
}

/* Expects env to be rejected with a message naming var and containing needle,
 * leaving the config as it was. */
static void expect_env_error(const char *assignment, const char *var, const char *needle)
{
    struct cfg c, saved;
    struct fr_error err;
    fr_error_init(&err);
    cfg_defaults(&c);
    cfg_copy(&saved, &c);
    char *env[] = {"FRAMED_CONFIG_NUM_PREVIEW_ROWS=99", (char *)assignment, NULL};
    assert_int_equal(cfg_apply_env(&c, env, &err), FR_EINVAL);
    if (!strstr(err.message, var) || !strstr(err.message, needle)) {
        print_error("%s gave '%s'\n", assignment, err.message);
        fail();
    }
    assert_true(cfg_equal(&c, &saved));
    cfg_cleanup(&c);
    cfg_cleanup(&saved);
}

static void test_env_bad(void **state)
{
    (void)state;
    expect_env_error("FRAMED_CONFIG_SHUFFLE_PARTITIONS=12abc", "FRAMED_CONFIG_SHUFFLE_PARTITIONS",
                     "not an integer");
    expect_env_error("FRAMED_CONFIG_SHUFFLE_PARTITIONS= 12", "FRAMED_CONFIG_SHUFFLE_PARTITIONS",
                     "not an integer");
    expect_env_error("FRAMED_CONFIG_SHUFFLE_PARTITIONS=", "FRAMED_CONFIG_SHUFFLE_PARTITIONS",
                     "not an integer");
    expect_env_error("FRAMED_CONFIG_TASK_MEMORY_LIMIT_BYTES=99999999999999999999",
                     "FRAMED_CONFIG_TASK_MEMORY_LIMIT_BYTES", "not an integer");
    expect_env_error("FRAMED_CONFIG_NULLS_FIRST=yes", "FRAMED_CONFIG_NULLS_FIRST", "not a boolean");
    expect_env_error("FRAMED_CONFIG_SHUFFLE_PARTITIONS=0", "FRAMED_CONFIG_SHUFFLE_PARTITIONS",
                     "between 1 and 4096");
    expect_env_error("FRAMED_CONFIG_SCAN_TASKS_MAX_SIZE_BYTES=10",
                     "FRAMED_CONFIG_SCAN_TASKS_MAX_SIZE_BYTES", "must not be greater");
    expect_env_error("FRAMED_CONFIG_SHUFLE_PARTITIONS=4", "FRAMED_CONFIG_SHUFLE_PARTITIONS",
                     "did you mean FRAMED_CONFIG_SHUFFLE_PARTITIONS");
}

static void test_frozen(void **state)
{
    (void)state;
    struct cfg c;
    struct fr_error err;
    char id[80];
    fr_error_init(&err);
    cfg_defaults(&c);
    struct cfg_frozen *f = cfg_freeze(&c);
    c.shuffle_partitions = 99; /* the snapshot does not follow its source */
    assert_string_equal(f->id, DEFAULTS_ID);
    assert_string_equal(f->canonical, DEFAULTS_CANONICAL);
    assert_int_equal(f->values.shuffle_partitions, 8);
    assert_ptr_equal(cfg_frozen_ref(f), f);
    assert_int_equal(atomic_load(&f->refcount), 2);
    cfg_frozen_unref(f);

    struct cfg_frozen *g = NULL;
    assert_int_equal(cfg_frozen_from_bytes(f->canonical, f->canonical_len, f->id, &g, &err), FR_OK);
    assert_true(cfg_equal(&g->values, &f->values));
    assert_string_equal(g->id, f->id);
    cfg_frozen_unref(g);

    cfg_id(&c, id, sizeof(id)); /* a valid ID, but of other bytes */
    assert_int_equal(cfg_frozen_from_bytes(f->canonical, f->canonical_len, id, &g, &err), FR_EDATA);
    assert_null(g);
    assert_non_null(strstr(err.message, "config-integrity"));
    /* Same length, one byte changed: caught before parsing. */
    char *tampered = strdup(f->canonical);
    tampered[strlen(tampered) - 2] = '1';
    fr_error_init(&err);
    assert_int_equal(cfg_frozen_from_bytes(tampered, f->canonical_len, f->id, &g, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "config-integrity"));
    free(tampered);
    /* Bytes that match their ID but are not canonical are refused too. */
    const char spaced[] = "{ \"shuffle_partitions\": 8 }";
    fr_sha256_id(spaced, strlen(spaced), id, sizeof(id));
    assert_int_equal(cfg_frozen_from_bytes(spaced, strlen(spaced), id, &g, &err), FR_EDATA);
    assert_non_null(strstr(err.message, "config-integrity"));
    cfg_frozen_unref(f);
    cfg_frozen_unref(NULL);
    cfg_cleanup(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_match_table),
        cmocka_unit_test(test_unknown_field_suggests),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_list_too_long),
        cmocka_unit_test(test_codec_choices),
        cmocka_unit_test(test_min_max_cross_rule),
        cmocka_unit_test(test_every_problem_listed),
        cmocka_unit_test(test_nothing_changed_on_failure),
        cmocka_unit_test(test_valid_patch_changes_only_named),
        cmocka_unit_test(test_patch_not_object),
        cmocka_unit_test(test_canonical_known_vector),
        cmocka_unit_test(test_id_depends_only_on_values),
        cmocka_unit_test(test_no_floats_anywhere),
        cmocka_unit_test(test_from_bytes_round_trip),
        cmocka_unit_test(test_env_good),
        cmocka_unit_test(test_env_bad),
        cmocka_unit_test(test_frozen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
