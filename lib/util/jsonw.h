/* lib/util/jsonw.h -- a small JSON object writer over jansson, for the reports cmd/ prints
 * (stats, compare, metrics extras), so that nobody builds JSON with printf. */
#ifndef VLPLAN_JSONW_H
#define VLPLAN_JSONW_H

#include <stddef.h>
#include <stdint.h>

typedef struct vl_jw vl_jw;

/** A new empty object, or NULL when out of memory.  Members keep insertion order. */
vl_jw *vl_jw_object(void);
/** A new object stored under key in parent (owned by parent), or NULL. */
vl_jw *vl_jw_child(vl_jw *parent, const char *key);
/** A new array stored under key in parent; add objects to it with vl_jw_push. */
vl_jw *vl_jw_array(vl_jw *parent, const char *key);
/** A new object appended to array arr (owned by arr), or NULL. */
vl_jw *vl_jw_push(vl_jw *arr);
/* Set members; each returns 0, or -1 when out of memory (the object stays valid). */
int vl_jw_int(vl_jw *o, const char *key, int64_t v);
int vl_jw_num(vl_jw *o, const char *key, double v);
int vl_jw_str(vl_jw *o, const char *key, const char *v);
int vl_jw_bool(vl_jw *o, const char *key, int v);
/** Compact text (malloc'd; caller frees), or NULL when out of memory. */
char *vl_jw_dump(const vl_jw *o);
/** Free a top-level object (children go with it); NULL is a no-op. */
void vl_jw_free(vl_jw *o);

/* jansson under memory pressure: json_dumps may return text with a member left out
 * when one of its inner allocations fails (seen with the fault injector), and a parse
 * may fail with a syntax message.  So jansson allocates through a function that counts
 * its failures (installed by vl_json_watch, once per process; free stays free), and
 * whoever dumps or parses compares the count before and after. */
void vl_json_watch(void);
/** jansson allocations that failed so far (after vl_json_watch). */
unsigned long vl_json_failures(void);
/** json_dumps(json, flags), NULL when out of memory, also when jansson returned text
 *  despite a failed allocation.  Free the text with free(). */
char *vl_json_dumps(const void *json, size_t flags);

#endif
