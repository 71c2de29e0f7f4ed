/* plan_live: what a running query's stage view shows of the plan: a label
 * made of the stage's operators, the stages it reads, how its input is
 * exchanged, and the planner decisions taken while the stage was cut. */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>

/* The name of one pipeline step ({"filter": ...}: "filter"; {"op": x}: x). */
static const char *step_name(json_t *step)
{
    const char *op = json_string_value(json_object_get(step, "op"));
    if (op)
        return op;
    void *it = json_object_iter(step);
    return it ? json_object_iter_key(it) : "op";
}

static void label_add(struct fr_buf *b, const char *part)
{
    if (b->len)
        fr_buf_puts(b, " | ");
    fr_buf_puts(b, part);
}

static char *stage_label(const struct pstage *s)
{
    struct fr_buf b;
    fr_buf_init(&b);
    if (s->src && s->src->display)
        fr_buf_printf(&b, "%s %s", s->label, s->src->display);
    else
        fr_buf_puts(&b, s->label);
    if (s->core)
        label_add(&b, step_name(s->core));
    size_t i;
    json_t *step;
    json_array_foreach(s->pipeline, i, step) label_add(&b, step_name(step));
    if (s->sink)
        label_add(&b, step_name(s->sink));
    char *out = fr_xstrndup(b.data ? b.data : "", b.len);
    fr_buf_cleanup(&b);
    return out;
}

/* How the stage's input crosses from the stages it reads: a bucket per task
 * is a shuffle (a range one after a range_partition), every task reading a
 * whole stage is a broadcast (several tasks) or a gather (one). */
static const char *stage_exchange(const struct plan_physical *p, const struct pstage *s)
{
    const char *kind = "none";
    for (int k = 0; k < s->nslots; k++) {
        const struct pstage *from = &p->stages[s->slots[k].stage];
        const char *sink = from->sink ? json_string_value(json_object_get(from->sink, "op")) : NULL;
        if (s->slots[k].mode == PLAN_SLOT_BUCKET)
            return sink && strcmp(sink, "range_partition") == 0 ? "range" : "shuffle";
        if (s->slots[k].mode == PLAN_SLOT_ALL)
            kind = s->ntasks > 1 ? "broadcast" : "gather";
    }
    return kind;
}

static json_t *stage_decisions(const struct plan_physical *p, int stage)
{
    json_t *out = json_array();
    for (int i = 0; i < p->ndecisions; i++) {
        const struct plan_decision *d = &p->decisions[i];
        if (d->stage != stage)
            continue;
        json_t *value = json_null();
        for (int f = 0; d->field && f < cfg_nfields; f++)
            if (strcmp(cfg_fields[f].name, d->field) == 0)
                value = cfg_fields[f].kind == CFG_BOOL ? json_boolean(d->value)
                                                       : json_integer(d->value);
        json_array_append_new(out, json_pack("{ss so so}", "decision", d->decision, "field",
                                             d->field ? json_string(d->field) : json_null(),
                                             "value", value));
    }
    return out;
}

json_t *plan_stage_describe(const plan_physical *p, int stage)
{
    const struct pstage *s = &p->stages[stage];
    json_t *inputs = json_array();
    for (int k = 0; k < s->nslots; k++)
        json_array_append_new(inputs, json_integer(s->slots[k].stage));
    char *label = stage_label(s);
    json_t *j = json_pack("{ss so ss so}", "label", label, "inputs", inputs, "exchange",
                          stage_exchange(p, s), "decisions", stage_decisions(p, stage));
    free(label);
    return j;
}
