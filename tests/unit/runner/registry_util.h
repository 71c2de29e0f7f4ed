/* Helpers of the registry's unit tests (test_registry.c, test_clock_step.c):
 * announce a worker, read the state the registry lists for a URL. Include
 * after cmocka.h and runner/runner_int.h. */
#ifndef FRAMED_TEST_REGISTRY_UTIL_H
#define FRAMED_TEST_REGISTRY_UTIL_H

#include <stdio.h>
#include <string.h>

/* Announces a worker holding the configs of held (a JSON array, stolen);
 * returns the configs the answer tells it to drop (new). */
static inline json_t *announce_holding(runner_registry *g, const char *id, const char *url,
                                       int threads, json_t *held)
{
    json_t *b = json_pack("{ss ss si si so}", "id", id, "url", url, "threads", threads,
                          "running_tasks", 0, "config_ids", held);
    json_t *release = json_array();
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(runner_registry_announce(g, b, release, &err), FR_OK);
    json_decref(b);
    return release;
}

/* Announces a worker that holds no config; returns what the answer tells it
 * to drop (new). */
static inline json_t *announce_told(runner_registry *g, const char *id, const char *url,
                                    int threads)
{
    return announce_holding(g, id, url, threads, json_array());
}

static inline void announce(runner_registry *g, const char *id, const char *url, int threads)
{
    json_decref(announce_told(g, id, url, threads));
}

/* The state the registry lists for url, "" when it is not listed. */
static inline const char *state(runner_registry *g, const char *url)
{
    static char buf[16];
    json_t *list = runner_registry_list(g);
    size_t i;
    json_t *w;
    buf[0] = '\0';
    json_array_foreach(list, i, w)
    {
        if (strcmp(json_string_value(json_object_get(w, "url")), url) == 0)
            snprintf(buf, sizeof(buf), "%s", json_string_value(json_object_get(w, "state")));
    }
    json_decref(list);
    return buf;
}

#endif
