/* plan_explain: the logical, optimized and physical plan as JSON, with each
 * planning decision and the config value that made it. */
#include "plan_int.h"

#include <stdlib.h>
#include <string.h>

static json_t *source_json(const struct lsource *s)
{
    static const char *const kinds[] = {"file", "rows", "dataframe"};
    json_t *j = json_pack("{ss ss}", "kind", kinds[s->kind], "name", s->display ? s->display : "");
    if (s->format)
        json_object_set_new(j, "format", json_string(s->format));
    json_object_set_new(j, "bytes", json_integer(s->bytes));
    if (s->ncolumns >= 0) {
        json_t *cols = json_array();
        for (int i = 0; i < s->ncolumns; i++)
            json_array_append_new(cols, json_string(s->schema.fields[s->columns[i]].name));
        json_object_set_new(j, "columns", cols);
    }
    return j;
}

static json_t *op_json(const struct lop *op)
{
    switch (op->kind) {
    case LOP_FILTER:
        return json_pack("{ss}", "filter", op->expr);
    case LOP_PROJECT: {
        json_t *items = json_array();
        for (int i = 0; i < op->nitems; i++) {
            const struct lproj_item *it = &op->items[i];
            size_t el = it->expr ? strlen(it->expr) : 0, nl = strlen(it->name);
            /* a renamed column's text is its rename ("x" as "y") */
            bool aliased =
                (it->col && it->expr) || (el > nl && strcmp(it->expr + el - nl, it->name) == 0);
            json_array_append_new(items, it->col && !it->expr ? json_string(it->name)
                                         : aliased            ? json_string(it->expr)
                                                   : json_sprintf("%s as %s", it->expr, it->name));
        }
        return json_pack("{so}", "project", items);
    }
    case LOP_SLICE:
        return json_pack("{sI sI}", "offset", (json_int_t)op->offset, "limit",
                         (json_int_t)op->limit);
    case LOP_JOIN:
    case LOP_UNION: {
        json_t *j = json_deep_copy(op->orig);
        json_t *inner = json_object_get(j, op->kind == LOP_JOIN ? "join" : "union");
        if (op->kind == LOP_JOIN)
            json_object_set_new(inner, "right", plan__lplan_json(op->right));
        else
            json_object_set_new(j, "union", plan__lplan_json(op->right));
        return j;
    }
    default:
        return json_incref(op->orig);
    }
}

json_t *plan__lplan_json(const struct lplan *lp)
{
    json_t *ops = json_array();
    for (int i = 0; i < lp->nops; i++)
        json_array_append_new(ops, op_json(&lp->ops[i]));
    json_t *schema = json_array();
    const struct df_schema *s = plan__lplan_schema(lp);
    for (int i = 0; i < s->nfields; i++)
        json_array_append_new(schema, json_pack("{ss ss}", "name", s->fields[i].name, "type",
                                                df_type_name(s->fields[i].type)));
    return json_pack("{so so so}", "source", source_json(&lp->src), "ops", ops, "schema", schema);
}

static json_t *stage_json(const struct plan_physical *p, int i)
{
    static const char *const modes[] = {"one-to-one", "all", "bucket"};
    const struct pstage *s = &p->stages[i];
    json_t *inputs = json_array();
    for (int k = 0; k < s->nslots; k++)
        json_array_append_new(inputs, json_pack("{si ss}", "stage", s->slots[k].stage, "mode",
                                                modes[s->slots[k].mode]));
    if (s->src)
        json_array_append_new(inputs, source_json(s->src));
    json_t *j =
        json_pack("{si ss si si so sO}", "id", i, "kind", s->label, "tasks", s->ntasks,
                  "outputs_per_task", s->nbuckets, "inputs", inputs, "pipeline", s->pipeline);
    if (s->core)
        json_object_set(j, "core", s->core);
    if (s->sink)
        json_object_set(j, "sink", s->sink);
    if (s->limit_rows >= 0)
        json_object_set_new(j, "stop_after_rows", json_integer(s->limit_rows));
    return j;
}

json_t *plan_physical_explain(const plan_physical *p)
{
    json_t *stages = json_array();
    for (int i = 0; i < p->nstages; i++)
        json_array_append_new(stages, stage_json(p, i));
    json_t *decisions = json_array();
    for (int i = 0; i < p->ndecisions; i++) {
        const struct plan_decision *d = &p->decisions[i];
        json_t *j = json_pack("{ss}", "decision", d->decision);
        if (d->field) {
            bool boolean = false;
            for (int f = 0; f < cfg_nfields; f++)
                if (strcmp(cfg_fields[f].name, d->field) == 0)
                    boolean = cfg_fields[f].kind == CFG_BOOL;
            json_object_set_new(j, "config_field", json_string(d->field));
            json_object_set_new(j, "config_value",
                                boolean ? json_boolean(d->value) : json_integer(d->value));
        }
        json_array_append_new(decisions, j);
    }
    return json_pack("{sO so s{so} so}", "logical", p->logical_json, "optimized",
                     plan__lplan_json(p->logical), "physical", "stages", stages, "decisions",
                     decisions);
}
