/* lib/util/jsonw.c -- JSON object writer (jsonw.h): vl_jw is a jansson json_t underneath. */
#include "jsonw.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define J(o) ((json_t *)(o))

vl_jw *vl_jw_object(void)
{
    return (vl_jw *)json_object();
}

static vl_jw *attach(vl_jw *parent, const char *key, json_t *v)
{
    if (!v)
        return NULL;
    /* set_new steals v even on failure, so v never leaks */
    if (json_object_set_new(J(parent), key, v) != 0)
        return NULL;
    return (vl_jw *)v;
}

vl_jw *vl_jw_child(vl_jw *parent, const char *key)
{
    return attach(parent, key, json_object());
}

vl_jw *vl_jw_array(vl_jw *parent, const char *key)
{
    return attach(parent, key, json_array());
}

vl_jw *vl_jw_push(vl_jw *arr)
{
    json_t *o = json_object();
    if (!o || json_array_append_new(J(arr), o) != 0)
        return NULL;
    return (vl_jw *)o;
}

int vl_jw_int(vl_jw *o, const char *key, int64_t v)
{
    return json_object_set_new(J(o), key, json_integer((json_int_t)v));
}

int vl_jw_num(vl_jw *o, const char *key, double v)
{
    /* JSON has no NaN or infinity; null says "not defined here" */
    if (!isfinite(v))
        return json_object_set_new(J(o), key, json_null());
    return json_object_set_new(J(o), key, json_real(v));
}

int vl_jw_str(vl_jw *o, const char *key, const char *v)
{
    return json_object_set_new(J(o), key, json_string(v));
}

int vl_jw_bool(vl_jw *o, const char *key, int v)
{
    return json_object_set_new(J(o), key, json_boolean(v));
}

char *vl_jw_dump(const vl_jw *o)
{
    return vl_json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
}

static atomic_ulong json_failures;
static pthread_once_t watch_once = PTHREAD_ONCE_INIT;

static void *counting_malloc(size_t n)
{
    void *p = malloc(n);

    if (!p)
        atomic_fetch_add(&json_failures, 1);
    return p;
}

static void install(void)
{
    json_set_alloc_funcs(counting_malloc, free);
}

void vl_json_watch(void)
{
    pthread_once(&watch_once, install);
}

unsigned long vl_json_failures(void)
{
    return atomic_load(&json_failures);
}

char *vl_json_dumps(const void *json, size_t flags)
{
    unsigned long before;
    char *text;

    vl_json_watch();
    before = vl_json_failures();
    text = json_dumps(json, flags);
    if (text && vl_json_failures() != before) {
        free(text);
        return NULL;
    }
    return text;
}

void vl_jw_free(vl_jw *o)
{
    json_decref(J(o));
}
