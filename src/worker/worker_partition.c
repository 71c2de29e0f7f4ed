/* worker_partition: the tables this worker's tasks produced, by partition ID,
 * each tagged with the config it was made with so that a fetch under another
 * config is refused. Readers get their own table sharing the columns
 * (reference counted), so a partition can be dropped while a task reads it;
 * a result stream also pins the partition, so that its memory stays charged
 * (to the stream) until the stream ends. */
#include "worker_int.h"
#include "../engine/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int not_found(const char *id, struct fr_error *err)
{
    return fr_error_setk(err, FR_ENOTFOUND, "partition-not-found",
                         "this worker holds no partition %s", id);
}

static void part_free(struct worker__part *p)
{
    df_table_free(p->table);
    free(p);
}

void worker_partition_put(worker *w, const char *config_id, struct df_table *t, char *id_out,
                          size_t id_outsz, int64_t *bytes)
{
    struct worker__part *p = fr_xcalloc(1, sizeof(*p));
    worker__random_id("p-", 16, p->id, sizeof(p->id));
    snprintf(p->config_id, sizeof(p->config_id), "%s", config_id);
    p->table = t;
    p->rows = t->nrows;
    p->bytes = df_table_bytes(t);
    snprintf(id_out, id_outsz, "%s", p->id);
    if (bytes)
        *bytes = p->bytes;
    pthread_mutex_lock(&w->parts_lock);
    p->seq = ++w->part_seq;
    p->next = w->parts;
    w->parts = p;
    w->nparts++;
    w->part_bytes += p->bytes;
    pthread_mutex_unlock(&w->parts_lock);
}

/* The partition of id, or NULL. Caller holds parts_lock. */
static struct worker__part *part_find(worker *w, const char *id)
{
    for (struct worker__part *p = w->parts; p; p = p->next) {
        if (strcmp(p->id, id) == 0)
            return p;
    }
    return NULL;
}

/* A new table sharing the columns of p's. */
static struct df_table *share_table(const struct df_table *t)
{
    int *cols = fr_xcalloc((size_t)t->ncols + 1, sizeof(int));
    for (int i = 0; i < t->ncols; i++)
        cols[i] = i;
    struct df_table *out = df_table_project(t, cols, t->ncols);
    free(cols);
    return out;
}

/* The refusal of a partition made under another config than config_id, or
 * FR_OK. Caller holds parts_lock. */
static int check_config(const struct worker__part *p, const char *config_id, struct fr_error *err)
{
    if (config_id && strcmp(p->config_id, config_id) == 0)
        return FR_OK;
    return fr_error_setk(err, FR_ECONFLICT, "config-mismatch",
                         "partition %s was made with config %s, not %s", p->id, p->config_id,
                         config_id ? config_id : "(none)");
}

int worker_partition_table(worker *w, const char *id, const char *config_id, struct df_table **out,
                           struct fr_error *err)
{
    int rc = FR_OK;
    *out = NULL;
    pthread_mutex_lock(&w->parts_lock);
    struct worker__part *p = part_find(w, id);
    if (!p) {
        rc = not_found(id, err);
    } else if ((rc = check_config(p, config_id, err)) == FR_OK) {
        *out = share_table(p->table);
    }
    pthread_mutex_unlock(&w->parts_lock);
    return rc;
}

int worker_partition_serialize(worker *w, const char *id, const char *config_id, char **bytes,
                               size_t *len, struct fr_error *err)
{
    struct df_table *t = NULL;
    int rc = worker_partition_table(w, id, config_id, &t, err);
    if (rc == FR_OK)
        rc = df_table_serialize(t, bytes, len, err);
    df_table_free(t);
    return rc;
}

/* Unlinks and returns the partitions whose ID (or, by_config, config ID)
 * is key; *n: how many were unlinked, those a stream still reads (freed by
 * its close) included. Caller holds parts_lock. */
static struct worker__part *unlink_matching(worker *w, const char *key, bool by_config,
                                            int64_t max_seq, int64_t *n)
{
    struct worker__part *gone = NULL;
    *n = 0;
    struct worker__part **pp = &w->parts;
    while (*pp) {
        struct worker__part *p = *pp;
        if (strcmp(by_config ? p->config_id : p->id, key) != 0 || p->seq > max_seq) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        (*n)++;
        w->nparts--;
        w->part_bytes -= p->bytes;
        if (p->streams > 0) { /* the last stream's close frees it */
            p->dropped = true;
            atomic_fetch_add(&w->result_stream_bytes, p->bytes);
            continue;
        }
        p->next = gone;
        gone = p;
    }
    return gone;
}

static void free_list(struct worker__part *p)
{
    while (p) {
        struct worker__part *next = p->next;
        part_free(p);
        p = next;
    }
}

int worker_partition_delete(worker *w, const char *id, const char *config_id, struct fr_error *err)
{
    struct worker__part *gone = NULL;
    pthread_mutex_lock(&w->parts_lock);
    struct worker__part *p = part_find(w, id);
    int rc = p ? check_config(p, config_id, err) : not_found(id, err);
    int64_t n = 0;
    if (rc == FR_OK)
        gone = unlink_matching(w, id, false, INT64_MAX, &n);
    pthread_mutex_unlock(&w->parts_lock);
    free_list(gone);
    return rc;
}

int64_t worker__partitions_drop_config(worker *w, const char *config_id, int64_t max_seq)
{
    int64_t n = 0;
    pthread_mutex_lock(&w->parts_lock);
    struct worker__part *gone = unlink_matching(w, config_id, true, max_seq, &n);
    pthread_mutex_unlock(&w->parts_lock);
    free_list(gone);
    return n;
}

int64_t worker__partitions_mark(worker *w)
{
    pthread_mutex_lock(&w->parts_lock);
    int64_t seq = w->part_seq;
    pthread_mutex_unlock(&w->parts_lock);
    return seq;
}

void worker_partition_totals(worker *w, int64_t *count, int64_t *bytes)
{
    pthread_mutex_lock(&w->parts_lock);
    *count = w->nparts;
    *bytes = w->part_bytes;
    pthread_mutex_unlock(&w->parts_lock);
}

struct worker_result_stream {
    worker *w;
    struct worker__part *part; /* pinned: part->streams counts this stream */
    int64_t charged;           /* its encode buffer's bytes in result_stream_bytes */
};

int worker_result_stream_open(worker *w, const char *id, const char *config_id,
                              worker_result_stream **out, struct df_table **t, struct fr_error *err)
{
    *out = NULL;
    *t = NULL;
    pthread_mutex_lock(&w->parts_lock);
    struct worker__part *p = part_find(w, id);
    int rc = p ? check_config(p, config_id, err) : not_found(id, err);
    if (rc == FR_OK) {
        p->streams++;
        *t = share_table(p->table);
    }
    pthread_mutex_unlock(&w->parts_lock);
    if (rc != FR_OK)
        return rc;
    worker_result_stream *s = fr_xcalloc(1, sizeof(*s));
    s->w = w;
    s->part = p;
    atomic_fetch_add(&w->result_streams, 1);
    *out = s;
    return FR_OK;
}

void worker_result_stream_charge(worker_result_stream *s, int64_t bytes)
{
    atomic_fetch_add(&s->w->result_stream_bytes, bytes - s->charged);
    s->charged = bytes;
}

void worker_result_stream_close(worker_result_stream *s)
{
    if (!s)
        return;
    worker *w = s->w;
    struct worker__part *p = s->part, *gone = NULL;
    pthread_mutex_lock(&w->parts_lock);
    if (--p->streams == 0 && p->dropped) {
        atomic_fetch_sub(&w->result_stream_bytes, p->bytes);
        gone = p;
    }
    pthread_mutex_unlock(&w->parts_lock);
    if (gone)
        part_free(gone);
    worker_result_stream_charge(s, 0);
    atomic_fetch_sub(&w->result_streams, 1);
    free(s);
}

void worker_result_stream_totals(worker *w, int64_t *count, int64_t *bytes)
{
    *count = atomic_load(&w->result_streams);
    *bytes = atomic_load(&w->result_stream_bytes);
}

void worker_partition_sent(worker *w, int codec, int64_t bytes)
{
    if (codec < FR_CODEC_NONE || codec > FR_CODEC_ZSTD)
        return;
    atomic_fetch_add(&w->sent_n[codec], 1);
    atomic_fetch_add(&w->sent_bytes[codec], bytes > 0 ? bytes : 0);
}
