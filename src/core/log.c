/* log.c -- library log lines go to a user callback; the default prints warnings and errors. */
#include "core.h"

#include <stdio.h>

static void default_log(ingot_log_level level, const char *msg, void *user)
{
    (void)user;
    static const char *names[] = {"error", "warning", "info", "debug"};
    if (level <= INGOT_LOG_WARN) fprintf(stderr, "ingot: %s: %s\n", names[level], msg);
}

static ingot_log_fn log_fn = default_log;
static void *log_user;

void ingot_log_set(ingot_log_fn fn, void *user)
{
    log_fn = fn;
    log_user = user;
}

void ig__log(ingot_log_level level, const char *fmt, ...)
{
    if (!log_fn) return;
    char buf[IG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_fn(level, buf, log_user);
}
