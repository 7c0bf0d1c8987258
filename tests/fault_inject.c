/* tests/fault_inject.c -- fault injection for the test build of vlplan (issue 13, item 5;
 * curl's torture mode, SQLite's failing malloc and VFS).  Linked only into the sanitizer
 * builds (make SAN=1), with -Wl,--wrap so that the program's own calls to malloc,
 * calloc, realloc, posix_memalign (lib/util/bigmem.c's large arrays), strdup, strndup,
 * write, fsync and rename come here first; jansson's
 * allocations are routed here too.  A release build has none of this.
 *
 *   VLPLAN_FAULT=KIND:N      the N-th call (1-based) of KIND fails: malloc (any of the
 *                            allocations; NULL, ENOMEM), write (ENOSPC), fsync (EIO) or
 *                            rename (EIO)
 *   VLPLAN_FAULT_REPORT=FILE at exit, "malloc A write B fsync C rename D hit H" into FILE:
 *                            the calls of each kind and whether the fault was injected
 *   VLPLAN_FAULT_TRACE=1     print the stack of the failing call on standard error
 *
 * tests/robust/test_faults.c runs each command once for the counts, then once per N. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <sanitizer/common_interface_defs.h>

enum { F_MALLOC, F_WRITE, F_FSYNC, F_RENAME, F_KINDS };
static const char *const kind_names[F_KINDS] = {"malloc", "write", "fsync", "rename"};

static unsigned long calls[F_KINDS];  /* atomically updated: the plan reader has threads */
static int fail_kind = -1;
static unsigned long fail_at;
static int hit;

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_fsync(int fd);
int __real_rename(const char *a, const char *b);

/* Count a call of kind; true when it is the one to fail. */
static int fails(int kind)
{
    unsigned long n = __atomic_add_fetch(&calls[kind], 1, __ATOMIC_SEQ_CST);

    if (kind != fail_kind || n != fail_at)
        return 0;
    __atomic_store_n(&hit, 1, __ATOMIC_SEQ_CST);
    if (getenv("VLPLAN_FAULT_TRACE"))   /* where the failing call is, for a test's report */
        __sanitizer_print_stack_trace();
    return 1;
}

static void report(void)
{
    const char *path = getenv("VLPLAN_FAULT_REPORT");
    FILE *f;

    if (!path || !(f = fopen(path, "w")))
        return;
    for (int k = 0; k < F_KINDS; k++)
        fprintf(f, "%s %lu ", kind_names[k], calls[k]);
    fprintf(f, "hit %d\n", hit);
    fclose(f);
}

void *__wrap_malloc(size_t n)
{
    if (fails(F_MALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_malloc(n);
}

void *__wrap_calloc(size_t k, size_t n)
{
    if (fails(F_MALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_calloc(k, n);
}

void *__wrap_realloc(void *p, size_t n)
{
    if (fails(F_MALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_realloc(p, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    if (fails(F_MALLOC))
        return ENOMEM; /* it reports in its value, not errno, and leaves *p alone */
    return __real_posix_memalign(p, align, n);
}

char *__wrap_strdup(const char *s)
{
    if (fails(F_MALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    if (fails(F_MALLOC)) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_strndup(s, n);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    if (fails(F_WRITE)) {
        errno = ENOSPC;
        return -1;
    }
    return __real_write(fd, buf, n);
}

int __wrap_fsync(int fd)
{
    if (fails(F_FSYNC)) {
        errno = EIO;
        return -1;
    }
    return __real_fsync(fd);
}

int __wrap_rename(const char *a, const char *b)
{
    if (fails(F_RENAME)) {
        errno = EIO;
        return -1;
    }
    return __real_rename(a, b);
}

static void *json_alloc(size_t n)
{
    return __wrap_malloc(n);
}

__attribute__((constructor)) static void fault_init(void)
{
    const char *spec = getenv("VLPLAN_FAULT");

    json_set_alloc_funcs(json_alloc, free);
    if (getenv("VLPLAN_FAULT_REPORT"))
        atexit(report);
    if (!spec)
        return;
    for (int k = 0; k < F_KINDS; k++) {
        size_t len = strlen(kind_names[k]);
        if (strncmp(spec, kind_names[k], len) == 0 && spec[len] == ':') {
            fail_kind = k;
            fail_at = strtoul(spec + len + 1, NULL, 10);
        }
    }
}
