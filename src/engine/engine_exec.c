/* engine_exec: a task's execution context: memory account and cancellation. */
#include "engine.h"

void df_exec_init(struct df_exec *ex, const struct df_options *opts, const atomic_bool *cancel)
{
    ex->opts = opts;
    ex->mem_used = 0;
    ex->mem_peak = 0;
    ex->cancel = cancel;
    ex->null_errors = 0;
    ex->deadline_us = 0;
    ex->shared_add = NULL;
    ex->shared_arg = NULL;
}

void df_exec_release(struct df_exec *ex, int64_t bytes)
{
    ex->mem_used -= bytes;
    int64_t budget;
    if (ex->shared_add && bytes)
        ex->shared_add(ex->shared_arg, -bytes, &budget);
}

int df_exec_check_cancel(const struct df_exec *ex, struct fr_error *err)
{
    if (ex->cancel && atomic_load_explicit(ex->cancel, memory_order_relaxed))
        return fr_error_set(err, FR_ECANCELLED, "the query was cancelled");
    if (ex->deadline_us && fr_mono_us() > ex->deadline_us)
        return fr_error_set(err, FR_ETIMEOUT, "a task ran longer than task_timeout_ms");
    return FR_OK;
}

int df_exec_charge(struct df_exec *ex, int64_t bytes, struct fr_error *err)
{
    ex->mem_used += bytes;
    if (ex->mem_used > ex->mem_peak)
        ex->mem_peak = ex->mem_used;
    /* the process's account moves with mem_used, whatever the checks say:
     * the owner gives back mem_used at the end */
    int64_t budget = 0;
    int64_t over = ex->shared_add && bytes ? ex->shared_add(ex->shared_arg, bytes, &budget) : 0;
    int64_t limit = ex->opts ? ex->opts->task_memory_limit_bytes : 0;
    if (limit > 0 && ex->mem_used > limit) /* the task's own limit first: the narrower */
        return fr_error_set(err, FR_EMEMLIMIT,
                            "a task needed %lld bytes, over task_memory_limit_bytes %lld; raise "
                            "the limit or add shuffle_partitions/smaller scan tasks",
                            (long long)ex->mem_used, (long long)limit);
    if (bytes > 0 && over > 0)
        return fr_error_setk(err, FR_ENOSPACE, "memory-budget-exceeded",
                             "a task's working memory (%lld bytes) took the server %lld bytes "
                             "over its memory budget (--memory-limit %lld) with the results, "
                             "dataframes and intermediate data it holds; delete dataframes or "
                             "query results, or raise the limit",
                             (long long)ex->mem_used, (long long)over, (long long)budget);
    return df_exec_check_cancel(ex, err);
}
