/* runner_core: what every backend shares: the runner's ID, frozen config
 * and options, partition handles, the kept partitions of materialized
 * dataframes, and the generic face (free, info, config, idle hook). */
#include "runner_int.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void runner__init(runner *r, const struct runner_backend *be, struct cfg_frozen *frozen)
{
    unsigned char b[8] = {0};
    if (RAND_bytes(b, sizeof(b)) != 1) { /* unique enough: the address and the clock */
        uint64_t v = (uint64_t)(uintptr_t)r ^ (uint64_t)fr_mono_us();
        memcpy(b, &v, sizeof(b));
    }
    snprintf(r->id, sizeof(r->id), "runner-%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7]);
    r->be = be;
    r->frozen = frozen;
    plan_options_from_cfg(&frozen->values, &r->opts);
    r->opts.config_id = frozen->id; /* current_config_id(): the frozen one, never a global */
    pthread_mutex_init(&r->lock, NULL);
    pthread_mutex_init(&r->renew_lock, NULL);
    runner__spill_init(r);
    r->life = fr_xcalloc(1, sizeof(*r->life));
    atomic_init(&r->life->refs, 1);
    pthread_mutex_init(&r->life->lock, NULL);
    r->life->r = r;
}

struct runner_life *runner__life_ref(runner *r)
{
    atomic_fetch_add(&r->life->refs, 1);
    return r->life;
}

void runner__life_unref(struct runner_life *life)
{
    if (!life || atomic_fetch_sub(&life->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&life->lock);
    free(life);
}

void runner__cleanup(runner *r)
{
    pthread_mutex_lock(&r->life->lock); /* a reader charging r is done with it */
    r->life->r = NULL;
    pthread_mutex_unlock(&r->life->lock);
    runner__life_unref(r->life);
    r->life = NULL;
    for (int i = 0; i < r->nkept; i++) {
        free(r->kept[i].id);
        runner__part_free(r, r->kept[i].part);
    }
    free(r->kept);
    runner__spill_cleanup(r);
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->renew_lock);
    cfg_frozen_unref(r->frozen);
}

/* runner__config_reput is in runner_store.c, with the rest of the entry. */

int runner_free(runner *r, struct fr_error *err)
{
    if (!r)
        return FR_OK;
    r->be->stop(r);
    int rc = runner__store_unhold(r, err); /* after the last task: nothing resolves it now */
    runner__cleanup(r);
    r->be->destroy(r);
    return rc;
}

const char *runner_id(const runner *r)
{
    return r->id;
}

void runner_set_on_idle(runner *r, void (*fn)(void *), void *arg)
{
    r->on_idle = fn;
    r->on_idle_arg = arg;
}

void runner__notify_idle(runner *r)
{
    if (r->on_idle)
        r->on_idle(r->on_idle_arg);
}

const struct cfg_frozen *runner_config(const runner *r)
{
    return r->frozen;
}

const char *runner_kind(const runner *r)
{
    return r->be->kind;
}

int runner_running(runner *r)
{
    pthread_mutex_lock(&r->lock);
    int n = r->running;
    pthread_mutex_unlock(&r->lock);
    return n;
}

json_t *runner_info(runner *r)
{
    json_t *j = r->be->info(r);
    pthread_mutex_lock(&r->lock);
    int64_t bytes = 0;
    for (int i = 0; i < r->nkept; i++)
        bytes += r->kept[i].part->bytes;
    json_object_set_new(j, "kind", json_string(r->be->kind));
    json_object_set_new(j, "kept_partitions", json_integer(r->nkept));
    json_object_set_new(j, "kept_bytes", json_integer(bytes));
    json_object_set_new(j, "running", json_integer(r->running));
    pthread_mutex_unlock(&r->lock);
    return j;
}

struct runner_part *runner__part_local(struct df_table *t)
{
    struct runner_part *p = fr_xcalloc(1, sizeof(*p));
    p->table = t;
    p->made_stage = p->made_task = -1;
    p->rows = t ? t->nrows : 0;
    p->bytes = t ? df_table_bytes(t) : 0;
    return p;
}

struct runner_part *runner__part_remote(const char *url, const char *id, int64_t rows,
                                        int64_t bytes)
{
    struct runner_part *p = fr_xcalloc(1, sizeof(*p));
    p->url = fr_xstrdup(url);
    p->id = fr_xstrdup(id);
    p->made_stage = p->made_task = -1;
    p->rows = rows;
    p->bytes = bytes;
    return p;
}

void runner__part_free(runner *r, struct runner_part *p)
{
    if (!p)
        return;
    if (p->url && !p->borrowed && r->be->drop)
        r->be->drop(r, p);
    runner__spill_release(p);
    df_table_free(p->table);
    free(p->url);
    free(p->id);
    free(p->kept_id);
    json_decref(p->lineage);
    free(p);
}

void runner_set_memory_budget(runner *r, int64_t bytes)
{
    r->memory_budget = bytes > 0 ? bytes : 0;
}

void runner_set_memory_charged(runner *r, const atomic_llong *charged, const atomic_llong *checking)
{
    r->charged = charged;
    r->checking = checking;
}

int64_t runner__others_charged(const runner *r)
{
    return (r->charged ? atomic_load(r->charged) : 0) +
           (r->checking ? atomic_load(r->checking) : 0) +
           (r->read_back ? atomic_load(r->read_back) : 0);
}

int64_t runner_memory_in_use(runner *r)
{
    return atomic_load(&r->held_local) + atomic_load(&r->working);
}

void runner_memory_parts(runner *r, int64_t *held, int64_t *working)
{
    *held = atomic_load(&r->held_local);
    *working = atomic_load(&r->working);
}

void runner_set_read_back(runner *r, atomic_llong *read_back)
{
    r->read_back = read_back;
}

int64_t runner__fetch_cap(const runner *r)
{
    if (r->memory_budget > 0)
        return r->memory_budget;
    int64_t task = r->frozen->values.task_memory_limit_bytes;
    return task > 0 && task < INT64_MAX / 2 ? 2 * task : 0;
}

int runner__part_table(runner *r, struct runner_part *p, int64_t max_bytes, struct fr_error *err)
{
    if (p->table)
        return FR_OK;
    if (p->spilled)
        return runner__spill_load(p, &p->table, err);
    if (!p->url || !r->be->fetch)
        return fr_error_set(err, FR_EINTERNAL, "a partition has neither data nor an owner");
    return r->be->fetch(r, p, max_bytes > 0 ? max_bytes : runner__fetch_cap(r), err);
}

/* A view of p that its user may free without touching the original. */
static struct runner_part *borrow(const struct runner_part *p)
{
    struct runner_part *v = fr_xcalloc(1, sizeof(*v));
    v->table = p->table ? df_table_share(p->table) : NULL;
    v->url = p->url ? fr_xstrdup(p->url) : NULL;
    v->id = p->id ? fr_xstrdup(p->id) : NULL;
    v->rows = p->rows;
    v->bytes = p->bytes;
    v->borrowed = true;
    v->lineage = json_incref(p->lineage);
    v->bucket = p->bucket;
    v->lost = p->lost;
    v->spilled = runner__spill_ref(p->spilled);
    return v;
}

int runner_keep_result(runner *r, runner_query *q, const char *prefix, char ***ids, int *n)
{
    pthread_mutex_lock(&q->lock);
    if (q->state != RQ_SUCCEEDED) {
        pthread_mutex_unlock(&q->lock);
        return FR_ECONFLICT;
    }
    int nparts = q->nresult_parts;
    *ids = fr_xcalloc((size_t)nparts + 1, sizeof(char *));
    *n = nparts;
    pthread_mutex_lock(&r->lock);
    r->kept = fr_xrealloc(r->kept, sizeof(*r->kept) * (size_t)(r->nkept + nparts + 1));
    for (int i = 0; i < nparts; i++) {
        struct kept_part *k = &r->kept[r->nkept++];
        k->id = fr_xasprintf("%s-p%lld", prefix, (long long)r->kept_seq++);
        struct runner_part *p = q->result_parts[i];
        if (p->url || p->spilled) { /* the kept entry owns the data; the result shows it */
            q->result_parts[i] = borrow(p);
            k->part = p;
            df_table_free(p->table); /* a collected copy stays with the result's view */
            p->table = NULL;
        } else {
            k->part = runner__part_local(df_table_share(p->table));
        }
        (*ids)[i] = fr_xstrdup(k->id);
    }
    pthread_mutex_unlock(&r->lock);
    pthread_mutex_unlock(&q->lock);
    return FR_OK;
}

void runner_drop_kept(runner *r, const char *prefix)
{
    size_t pl = strlen(prefix);
    pthread_mutex_lock(&r->lock);
    int w = 0;
    struct kept_part *gone = fr_xcalloc((size_t)r->nkept + 1, sizeof(*gone));
    int ngone = 0;
    for (int i = 0; i < r->nkept; i++) {
        if (strncmp(r->kept[i].id, prefix, pl) == 0 && r->kept[i].id[pl] == '-')
            gone[ngone++] = r->kept[i];
        else
            r->kept[w++] = r->kept[i];
    }
    r->nkept = w;
    pthread_mutex_unlock(&r->lock);
    for (int i = 0; i < ngone; i++) { /* remote drops happen outside the lock */
        free(gone[i].id);
        runner__part_free(r, gone[i].part);
    }
    free(gone);
}

struct runner_part *runner__kept_get(runner *r, const char *id)
{
    struct runner_part *v = NULL;
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->nkept && !v; i++)
        if (strcmp(r->kept[i].id, id) == 0) {
            v = borrow(r->kept[i].part);
            v->kept_id = fr_xstrdup(id);
        }
    pthread_mutex_unlock(&r->lock);
    return v;
}

bool runner__kept_relocate(runner *r, const char *kept_id, struct runner_part *fresh)
{
    struct runner_part *old = NULL;
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->nkept && !old; i++)
        if (strcmp(r->kept[i].id, kept_id) == 0) {
            old = r->kept[i].part;
            r->kept[i].part = fresh;
        }
    pthread_mutex_unlock(&r->lock);
    if (!old) {
        runner__part_free(r, fresh);
        return false;
    }
    old->borrowed = true; /* its worker is unreachable: no DELETE to it */
    runner__part_free(r, old);
    return true;
}

void runner__kept_mark_lost(runner *r, const char *url)
{
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->nkept; i++)
        if (r->kept[i].part->url && strcmp(r->kept[i].part->url, url) == 0)
            r->kept[i].part->lost = true;
    pthread_mutex_unlock(&r->lock);
}
