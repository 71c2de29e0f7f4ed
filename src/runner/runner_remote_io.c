/* runner_remote_io: what the remote runner reads and decides without its
 * loop: fetching a partition from a worker (also for a result read after
 * the runner is gone, by a copied runner_fetcher), and where a task would
 * best run (its file's key, the worker holding its inputs). */
#include "runner_int.h"
#include "../proto/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fetches remote p's table from its worker as peer, checked as a task
 * input is (the rows it reported); the error names the worker. */
int runner__fetch_as(const struct proto_peer *peer, int64_t timeout_ms, struct runner_part *p,
                     int64_t max_bytes, struct fr_error *err)
{
    struct fr_buf bytes;
    fr_buf_init(&bytes);
    int rc = proto_fetch_partition_rows(peer, p->url, p->id, p->ranged ? p->range_start : -1,
                                        p->rows, max_bytes, timeout_ms, &bytes, err);
    if (rc == FR_OK)
        rc = df_table_deserialize(bytes.data, bytes.len, &p->table, err);
    if (rc == FR_OK && p->ranged && p->table->nrows == p->range_total &&
        p->range_total != p->rows) { /* a worker that ignores ?offset= sent it whole */
        struct df_table *whole = p->table;
        p->table = df_table_slice(whole, p->range_start, p->rows);
        df_table_free(whole);
    }
    if (rc == FR_EDATA) { /* name the worker that sent it */
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        fr_error_setk(err, FR_EDATA, "invalid-worker-answer",
                      "worker %.200s sent partition %.64s that is refused: %.400s", p->url, p->id,
                      why);
    } else if (rc == FR_OK && (rc = runner__check_fetched(p, err)) != FR_OK) {
        df_table_free(p->table);
        p->table = NULL;
    } else if (rc != FR_OK && rc != FR_ENOSPACE) {
        char why[sizeof(err->message)];
        snprintf(why, sizeof(why), "%s", err->message);
        fr_error_setk(err, rc, "input-lost", "%s", why);
    }
    fr_buf_cleanup(&bytes);
    return rc;
}

int runner__fetcher_fetch(const struct runner_fetcher *f, struct runner_part *p,
                          struct fr_error *err)
{
    if (!f->config_id || !p->url)
        return fr_error_set(err, FR_EINTERNAL, "a partition has neither data nor an owner");
    struct proto_peer peer = {.config_id = f->config_id,
                              .secret = f->secret,
                              .sender = f->sender,
                              .codecs = f->codecs,
                              .request_id = p->request_id[0] ? p->request_id : NULL,
                              .query_id = p->query_id[0] ? p->query_id : NULL};
    return runner__fetch_as(&peer, f->timeout_ms, p, f->cap, err);
}

void runner__fetcher_cleanup(struct runner_fetcher *f)
{
    free(f->config_id);
    free(f->secret);
    free(f->sender);
    free(f->codecs);
    *f = (struct runner_fetcher){0};
}

/* A file input's key: FNV-1a over its path, size and mtime (the identity a
 * worker's copy must have to be read), never 0; 0 for a job without one. */
uint64_t runner__scan_key(const json_t *spec)
{
    const json_t *in = json_object_get(spec, "input");
    const char *path = json_string_value(json_object_get(in, "path"));
    const char *kind = json_string_value(json_object_get(in, "kind"));
    if (!path || !kind || strcmp(kind, "file") != 0)
        return 0;
    char id[64];
    snprintf(id, sizeof(id), "|%lld|%lld",
             (long long)json_integer_value(json_object_get(in, "size")),
             (long long)json_integer_value(json_object_get(in, "mtime_ns")));
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = path; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    for (const char *c = id; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    return h | 2; /* bit 0 is the registry's local flag; never 0 or 1 */
}

/* The worker holding most of job's input bytes (borrowed), NULL when none
 * is remote: tasks go where their inputs live. *whole: it holds them all (a
 * task then waits for it a while when it is busy; inputs spread over the
 * workers, as a shuffle's are, are worth no wait). */
const char *runner__input_owner(const struct rjob *job, bool *whole)
{
    /* one pass: bytes per distinct worker (a few; linear in the inputs) */
    struct owner_bytes {
        const char *url;
        int64_t bytes;
    } own[16];
    int nown = 0;
    int64_t total = 0;
    for (int k = 0; k < job->nslots; k++)
        for (int i = 0; i < job->ninputs[k]; i++) {
            const struct runner_part *in = job->inputs[k][i];
            int64_t b = in->bytes > 0 ? in->bytes : 1;
            total += b;
            if (!in->url)
                continue;
            int j = 0;
            while (j < nown && strcmp(own[j].url, in->url) != 0)
                j++;
            if (j == nown && nown < (int)(sizeof(own) / sizeof(own[0])))
                own[nown++] = (struct owner_bytes){in->url, 0};
            if (j < nown) /* past 16 workers: counted for none */
                own[j].bytes += b;
        }
    int best = -1;
    for (int j = 0; j < nown; j++)
        if (best < 0 || own[j].bytes > own[best].bytes)
            best = j;
    *whole = best >= 0 && own[best].bytes == total;
    return best >= 0 ? own[best].url : NULL;
}
