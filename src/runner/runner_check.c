/* runner_check: what the coordinator accepts from a worker. A worker's
 * answer is data from the network like any request: its outputs list is
 * checked for shape and bounds before anything is built from it, and a
 * fetched partition must be what the worker reported. */
#include "runner_int.h"
#include "../proto/proto.h"

#include <stdio.h>
#include <string.h>

int64_t runner__answer_count(json_t *v)
{
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
    return n >= 0 && n <= RUNNER_MAX_ANSWER_COUNT ? (int64_t)n : -1;
}

const char *runner__outputs_problem(json_t *outs)
{
    if (!json_is_array(outs))
        return "it answered without an outputs array";
    if (json_array_size(outs) > PLAN_MAX_BUCKETS)
        return "it answered with more outputs than a task can have";
    size_t i;
    json_t *o;
    json_array_foreach(outs, i, o)
    {
        if (json_is_null(o))
            continue;
        json_t *rows = json_object_get(o, "rows"), *bytes = json_object_get(o, "bytes");
        if (!proto_partition_id_ok(json_string_value(json_object_get(o, "id"))))
            return "it answered with an output whose id is not a partition ID";
        if (!json_is_integer(rows) || json_integer_value(rows) < 0 || !json_is_integer(bytes) ||
            json_integer_value(bytes) < 0)
            return "it answered with an output without non-negative rows and bytes";
        if (runner__answer_count(rows) < 0 || runner__answer_count(bytes) < 0)
            return "it answered with an output whose rows or bytes are beyond any partition";
    }
    return NULL;
}

int runner__check_fetched(const struct runner_part *p, struct fr_error *err)
{
    if (p->table->nrows == p->rows)
        return FR_OK;
    return fr_error_setk(err, FR_EDATA, "invalid-worker-answer",
                         "worker %.200s sent partition %.64s with %lld rows after reporting "
                         "%lld; it is refused",
                         p->url, p->id, (long long)p->table->nrows, (long long)p->rows);
}
