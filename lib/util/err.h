/* lib/util/err.h -- the error value every lib/ and plans/ function returns.
 * The library never prints: the function that detects a failure writes one line
 * into a vl_err (with file:line[:col] of the offending input) and returns its
 * code; callers pass the code up unchanged.  Only cmd/ prints and maps codes to
 * sysexits (cmd/vlplan/cli.c). */
#ifndef VLPLAN_ERR_H
#define VLPLAN_ERR_H

#include <stddef.h>

typedef enum vl_status {
    VL_OK = 0,
    VL_ENOMEM,      /* allocation failed                          -> 71 */
    VL_EIO,         /* read/write/fsync failed                    -> 74 */
    VL_EDATA,       /* bad manifest or plan data                  -> 65 */
    VL_ENOINPUT,    /* input missing or unreadable                -> 66 */
    VL_ECONFIG,     /* bad config: syntax, key, type, range       -> 78 */
    VL_ECANTCREAT,  /* cannot create output                       -> 73 */
    VL_EUSAGE,      /* bad argument passed through the API        -> 64 */
    VL_EVERIFY,     /* a plan violates an invariant (verify)      -> 1 / 70 */
    VL_EINFEASIBLE, /* no plan satisfies the constraints          -> 65 */
    VL_EINTERNAL    /* a bug: self-check failed                   -> 70 */
} vl_status;

#define VL_ERRMSG_MAX 512

typedef struct vl_err {
    vl_status code;
    char msg[VL_ERRMSG_MAX];
} vl_err;

/** Record a failure: formats one line into err->msg (truncated to fit), sets
 *  err->code and returns code, so callers write `return vl_seterr(...)`.
 *  err may be NULL (the message is then discarded). */
vl_status vl_seterr(vl_err *err, vl_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/** Reset err to VL_OK with an empty message. */
void vl_err_clear(vl_err *err);

/** Short name of a status ("out of memory", "bad data", ...); never NULL. */
const char *vl_status_name(vl_status st);

#endif
