/* lib/util/err.c -- error values (see err.h). */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

vl_status vl_seterr(vl_err *err, vl_status code, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void vl_err_clear(vl_err *err)
{
    if (err == NULL)
        return;
    err->code = VL_OK;
    err->msg[0] = '\0';
}

const char *vl_status_name(vl_status st)
{
    switch (st) {
    case VL_OK: return "ok";
    case VL_ENOMEM: return "out of memory";
    case VL_EIO: return "i/o error";
    case VL_EDATA: return "bad data";
    case VL_ENOINPUT: return "missing input";
    case VL_ECONFIG: return "bad config";
    case VL_ECANTCREAT: return "cannot create output";
    case VL_EUSAGE: return "usage error";
    case VL_EVERIFY: return "plan violates an invariant";
    case VL_EINFEASIBLE: return "infeasible";
    case VL_EINTERNAL: return "internal error";
    }
    return "unknown error";
}
