/* status.c -- status names and descriptions from the one X-macro list, and error records. */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>

const char *ingot_status_name(ingot_status s)
{
    switch (s) {
#define X(name, val, desc) \
    case INGOT_##name: return "INGOT_" #name;
        INGOT_STATUS_MAP(X)
#undef X
    default: return "INGOT_UNKNOWN";
    }
}

const char *ingot_status_str(ingot_status s)
{
    switch (s) {
#define X(name, val, desc) \
    case INGOT_##name: return desc;
        INGOT_STATUS_MAP(X)
#undef X
    default: return "unknown status";
    }
}

ingot_status ig__verrf(ig_err *err, ingot_status status, const char *fmt, va_list ap)
{
    if (err && err->status == INGOT_OK) {
        err->status = status;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return status;
}

ingot_status ig__errf(ig_err *err, ingot_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ig__verrf(err, status, fmt, ap);
    va_end(ap);
    return status;
}

void ig__err_prefix(ig_err *err, const char *fmt, ...)
{
    if (!err || err->status == INGOT_OK) return;
    char pre[IG_ERRMSG_MAX / 2], old[IG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%.500s: %.500s", pre, old);
}

void ig__err_clear(ig_err *err)
{
    if (!err) return;
    err->status = INGOT_OK;
    err->msg[0] = '\0';
}

void ig__assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "ingot: internal invariant failed: %s (%s:%d)\n", expr, file, line);
    abort();
}
