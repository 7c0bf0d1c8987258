/* lib/plan/planio_write_header.c -- the plan writer's header record (docs/decisions.md §7): params and
 * config hold reals and arbitrary nesting, so the header is built and dumped with
 * jansson, into the writer's line buffer. */
#include <jansson.h>

#include "jsonw.h"
#include "planio_write_impl.h"

#ifndef VLPLAN_VERSION
#define VLPLAN_VERSION "0.0.0"
#endif

/* Reals in params/config with 15 significant digits, as the config dump writes them:
 * any such decimal survives a trip through a double, so read -> write is byte-exact. */
#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

/* jansson reports allocation failures as NULL or -1, and the _new setters release the
 * value they could not store.  Failures are collected in *ok and checked once. */
static void set(json_t *o, const char *key, json_t *v, bool *ok)
{
    if (json_object_set_new_nocheck(o, key, v) != 0)
        *ok = false;
}

static json_t *jinteger(uint64_t v)
{
    return json_integer((json_int_t)v);
}

/* params and config are kept as JSON text; the header embeds them as objects. */
static vl_status meta_json(const char *text, const char *what, json_t **out, vl_err *err)
{
    json_error_t je;
    unsigned long failed;

    vl_json_watch();
    failed = vl_json_failures();
    *out = json_loads(text ? text : "{}", JSON_REJECT_DUPLICATES, &je);
    if (vl_json_failures() != failed) { /* a syntax error to jansson, or a string cut */
        json_decref(*out);
        *out = NULL;
        return vl_seterr(err, VL_ENOMEM, "out of memory formatting the plan header");
    }
    if (!*out || !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return vl_seterr(err, VL_EINTERNAL, "plan header: %s is not a JSON object: %s", what,
                         text ? je.text : "?");
    }
    return VL_OK;
}

/* "caps": the names of the capabilities the plan uses (the optimizer's sharding has a
 * key of its own, "optimizer_shard"). */
static json_t *caps_json(uint32_t caps)
{
    json_t *a = json_array();

    for (unsigned i = 0; a && i < VL_NCAPS; i++)
        if ((caps >> i & 1) && (1u << i) != VL_CAP_WORLD_OPTIM &&
            json_array_append_new(a, json_string_nocheck(vl_cap_name(i))) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static vl_status header_json(const vl_plan *p, int64_t iters, json_t **out, vl_err *err)
{
    json_t *o, *params = NULL, *config = NULL, *man;
    char hex[65];
    bool ok = true;
    vl_status st;

    *out = NULL;
    if (p->seed > INT64_MAX)
        return vl_seterr(err, VL_EUSAGE, "seed %llu does not fit a JSON integer (max 2^63-1)",
                         (unsigned long long)p->seed);
    if ((st = meta_json(p->params_json, "params", &params, err)) != VL_OK ||
        (st = meta_json(p->config_json, "config", &config, err)) != VL_OK) {
        json_decref(params);
        return st;
    }
    vl_sha256_hex(p->m->sha256, hex);
    o = json_object();
    man = json_object();
    set(o, "type", json_string_nocheck("header"), &ok);
    set(o, "schema", json_string_nocheck(VL_PLAN_SCHEMA), &ok);
    set(o, "vlplan", json_string(VLPLAN_VERSION), &ok);
    set(o, "strategy", json_string(p->strategy), &ok);
    set(o, "seed", jinteger(p->seed), &ok);
    set(o, "params", params, &ok);
    set(o, "config", config, &ok);
    set(man, "samples", jinteger(p->m->n), &ok);
    set(man, "tokens", jinteger(p->m->tokens), &ok);
    set(man, "sha256", json_string_nocheck(hex), &ok);
    set(o, "manifest", man, &ok);
    set(o, "epochs", jinteger(p->epochs), &ok);
    if (iters >= 0)
        set(o, "iterations", jinteger((uint64_t)iters), &ok);
    if (p->caps & ~(uint32_t)VL_CAP_WORLD_OPTIM)
        set(o, "caps", caps_json(p->caps), &ok);
    if (p->caps & VL_CAP_WORLD_OPTIM)
        set(o, "optimizer_shard", json_string_nocheck("world"), &ok);
    if (!ok) {
        json_decref(o);
        return vl_seterr(err, VL_ENOMEM, "out of memory formatting the plan header");
    }
    *out = o;
    return VL_OK;
}

static int line_put(const char *s, size_t n, void *ud)
{
    return put(ud, s, n) ? 0 : -1;
}

vl_status vl__put_header(line_buf *b, const vl_plan *p, int64_t iters, bool *formatted,
                         vl_err *err)
{
    json_t *rec;
    vl_status st;
    unsigned long failed;
    int rc;

    *formatted = false;
    if ((st = header_json(p, iters, &rec, err)) != VL_OK)
        return st;
    vl_json_watch();
    failed = vl_json_failures();
    rc = json_dump_callback(rec, line_put, b, DUMP_FLAGS);
    json_decref(rec);
    /* strategy and version were checked by json_string, so a failure is memory; jansson
     * may also drop a member and succeed when an inner allocation fails (jsonw.h) */
    if ((rc != 0 && !b->oom) || (rc == 0 && vl_json_failures() != failed))
        return vl_seterr(err, VL_ENOMEM, "out of memory formatting the plan header");
    *formatted = rc == 0;
    return VL_OK;
}
