/* engine_agg_types: the names of aggregate functions and the types of their
 * results, shared by the expression binder and the aggregation operator. */
#include "engine.h"

df_type df_agg_result_type(enum df_agg_func f, df_type arg)
{
    switch (f) {
    case DF_AGG_COUNT_STAR:
    case DF_AGG_COUNT:
    case DF_AGG_COUNT_DISTINCT:
        return DF_TYPE_INT64;
    case DF_AGG_SUM:
        return arg == DF_TYPE_FLOAT64 ? DF_TYPE_FLOAT64 : DF_TYPE_INT64;
    case DF_AGG_MEAN:
    case DF_AGG_STDDEV:
    case DF_AGG_MEDIAN:
    case DF_AGG_CORR:
        return DF_TYPE_FLOAT64;
    case DF_AGG_MIN:
    case DF_AGG_MAX:
    case DF_AGG_FIRST:
        return arg;
    }
    return DF_TYPE_NULL;
}

const char *df_agg_func_name(enum df_agg_func f)
{
    switch (f) {
    case DF_AGG_COUNT_STAR:
    case DF_AGG_COUNT:
        return "count";
    case DF_AGG_COUNT_DISTINCT:
        return "count_distinct";
    case DF_AGG_SUM:
        return "sum";
    case DF_AGG_MEAN:
        return "mean";
    case DF_AGG_MIN:
        return "min";
    case DF_AGG_MAX:
        return "max";
    case DF_AGG_STDDEV:
        return "stddev";
    case DF_AGG_FIRST:
        return "first";
    case DF_AGG_MEDIAN:
        return "median";
    case DF_AGG_CORR:
        return "corr";
    }
    return "unknown";
}
