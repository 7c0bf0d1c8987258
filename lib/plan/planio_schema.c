/* lib/plan/planio_schema.c -- the plan schema as JSON, made from the tables the writer
 * and the readers use (planio_fields.c): every record's fields in the writer's order,
 * each list with its elements and the rule it obeys, the header's and footer's members.
 * `vlplan schema --format json` prints it; python/vlplan/plan_schema.json is its copy,
 * which the Python reader checks against (issue 25: one schema). */
#include <stdlib.h>

#include <jansson.h>

#include "jsonw.h"
#include "planio.h"

static const char *const LEVELS[] = {"iter", "rank", "pack"};
static const char *const RULES[] = {NULL,         "rank_size",  "prefix_sums", "distinct_self",
                                    "names_pack", "bwd_tokens", "cp_below_sp"};
static const char *const CLAIMS[] = {NULL, "position", "sum_tokens", "loss", "epoch", "cap"};

/* json_object_set_new that remembers a failure in *ok (jansson frees v either way, also
 * when o is NULL). */
static void put(json_t *o, const char *key, json_t *v, bool *ok)
{
    if (json_object_set_new(o, key, v) != 0)
        *ok = false;
}

static json_t *names(const char *const *v)
{
    json_t *a = json_array();

    for (size_t i = 0; a && v && v[i]; i++)
        if (json_array_append_new(a, json_string(v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *op_names(void)
{
    json_t *a = json_array();

    for (const char *c = vl_pf_op_names; a && *c; c++)
        if (json_array_append_new(a, json_stringn(c, 1)) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *item_json(const vl_pitem *it)
{
    static const char *const TYPES[] = {"int", "id", "op", "name"};
    json_t *o = json_object();
    bool ok = true;

    put(o, "name", json_string(it->name), &ok);
    put(o, "type", json_string(TYPES[it->type]), &ok);
    if (it->type == VL_PT_INT) {
        put(o, "min", json_integer(it->min), &ok);
        put(o, "max", json_integer(it->max), &ok);
    } else if (it->type == VL_PT_OP) {
        put(o, "values", op_names(), &ok);
    } else if (it->type == VL_PT_NAME) {
        put(o, "values", names(it->values), &ok);
    }
    return ok ? o : (json_decref(o), NULL);
}

static json_t *items_json(const vl_parray *a)
{
    json_t *o = json_object(), *pos;
    bool ok = true;

    switch (a->elems) {
    case VL_PA_INTS: json_decref(o); return item_json(&a->items[0]);
    case VL_PA_TUPLES:
        put(o, "type", json_string("tuple"), &ok);
        put(o, "arity",
            json_pack("[I, I]", (json_int_t)a->arity_min, (json_int_t)a->arity_max), &ok);
        pos = json_array();
        for (size_t i = 0; pos && i < a->arity_max; i++)
            if (json_array_append_new(pos, item_json(&a->items[i])) != 0)
                ok = false;
        put(o, "items", pos, &ok);
        break;
    case VL_PA_RECORDS:
        put(o, "type", json_string("record"), &ok);
        put(o, "record", json_string(LEVELS[a->record]), &ok);
        break;
    }
    return ok ? o : (json_decref(o), NULL);
}

static void list_json(json_t *o, const vl_parray *a, bool *ok)
{
    put(o, "type", json_string("list"), ok);
    put(o, "items", items_json(a), ok);
    put(o, "min_len", json_integer((json_int_t)a->min_len), ok);
    if (RULES[a->rule])
        put(o, "rule", json_string(RULES[a->rule]), ok);
}

/* A default that depends on the element is named; none (omitted when absent) is null. */
static json_t *default_json(const vl_pfield *f)
{
    if (f->def == VL_PF_DEF_INDEX)
        return json_string("index");
    if (f->def == VL_PF_DEF_TOKENS)
        return json_string("tokens");
    return f->omit_default ? json_null() : json_integer(f->def);
}

static json_t *field_json(const vl_pfield *f)
{
    json_t *o = json_object();
    bool ok = true, scalar = f->kind == VL_PF_I32 || f->kind == VL_PF_U32;

    put(o, "key", json_string(f->key), &ok);
    put(o, "required", json_boolean(f->required), &ok);
    if (f->arr) {
        list_json(o, f->arr, &ok);
    } else {
        put(o, "type",
            json_string(f->kind == VL_PF_I32   ? "int32"
                        : f->kind == VL_PF_U32 ? "uint32"
                                               : "count"),
            &ok);
        put(o, "min", json_integer(f->min), &ok);
        put(o, "max", json_integer(f->max), &ok);
        if (scalar)
            put(o, "default", default_json(f), &ok);
        if (CLAIMS[f->claim])
            put(o, "claim", json_string(CLAIMS[f->claim]), &ok);
    }
    return ok ? o : (json_decref(o), NULL);
}

static json_t *records_json(void)
{
    json_t *o = json_object();
    bool ok = true;

    for (int l = VL_PF_ITER; o && l <= VL_PF_MB; l++) {
        json_t *fields = json_array();
        for (const vl_pfield *f = vl_plan_fields; fields && f->key; f++)
            if ((int)f->level == l && json_array_append_new(fields, field_json(f)) != 0)
                ok = false;
        put(o, LEVELS[l], fields, &ok);
    }
    return ok ? o : (json_decref(o), NULL);
}

/* The capability names a header's "caps" may hold. */
static json_t *caps_json(void)
{
    json_t *a = json_array();

    for (unsigned k = 0; a && vl_cap_name(k); k++)
        if ((1u << k) != VL_CAP_WORLD_OPTIM &&
            json_array_append_new(a, json_string(vl_cap_name(k))) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *meta_json(const vl_pmeta *m)
{
    static const char *const TYPES[] = {"count", "string", "object", "caps", "list"};
    json_t *o = json_object();
    bool ok = true;

    put(o, "key", json_string(m->key), &ok);
    if (m->type == VL_PM_LIST) {
        list_json(o, m->arr, &ok);
        return ok ? o : (json_decref(o), NULL);
    }
    put(o, "type", json_string(TYPES[m->type]), &ok);
    if (m->type == VL_PM_COUNT || (m->type == VL_PM_STRING && m->max > 0)) {
        if (m->type == VL_PM_COUNT)
            put(o, "min", json_integer(m->min), &ok);
        put(o, "max", json_integer(m->max), &ok);
    }
    if (m->values)
        put(o, "values", names(m->values), &ok);
    if (m->type == VL_PM_CAPS)
        put(o, "values", caps_json(), &ok);
    return ok ? o : (json_decref(o), NULL);
}

static json_t *metas_json(void)
{
    json_t *o = json_object();
    bool ok = true;

    for (const vl_pmeta *m = vl_plan_meta; o && m->key; m++) {
        json_t *list = json_object_get(o, m->record);
        if (!list && (list = json_array()) != NULL && json_object_set_new(o, m->record, list))
            list = NULL;
        if (!list || json_array_append_new(list, meta_json(m)) != 0)
            ok = false;
    }
    return ok ? o : (json_decref(o), NULL);
}

vl_status vl_plan_schema_json(char **out, vl_err *err)
{
    json_t *o = json_object();
    bool ok = true;

    put(o, "schema", json_string(VL_PLAN_SCHEMA), &ok);
    put(o, "records", records_json(), &ok);
    put(o, "meta", metas_json(), &ok);
    *out = ok ? vl_json_dumps(o, JSON_INDENT(1)) : NULL;
    json_decref(o);
    return *out ? VL_OK : vl_seterr(err, VL_ENOMEM, "out of memory");
}
