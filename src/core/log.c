/* log.c -- library log lines go to a user callback; the default prints warnings and errors. */
#include "core.h"

#include <stdatomic.h>
#include <stdio.h>

static void default_log(ingot_log_level level, const char *msg, void *user)
{
    (void)user;
    static const char *names[] = {"error", "warning", "info", "debug"};
    if (level <= INGOT_LOG_WARN) fprintf(stderr, "ingot: %s: %s\n", names[level], msg);
}

/* The (callback, user) pair is read and written as one, under a spin lock held for two loads or two
 * stores: contexts log from several threads while ingot_log_set may run. The callback itself is
 * called outside the lock, so it may log or call ingot_log_set without deadlocking. */
static atomic_flag log_lock = ATOMIC_FLAG_INIT;
static ingot_log_fn log_fn = default_log;
static void *log_user;

static void lock(void)
{
    while (atomic_flag_test_and_set_explicit(&log_lock, memory_order_acquire)) {}
}

static void unlock(void) { atomic_flag_clear_explicit(&log_lock, memory_order_release); }

void ingot_log_set(ingot_log_fn fn, void *user)
{
    lock();
    log_fn = fn;
    log_user = user;
    unlock();
}

void ig__log(ingot_log_level level, const char *fmt, ...)
{
    lock();
    ingot_log_fn fn = log_fn;
    void *user = log_user;
    unlock();
    if (!fn) return;
    char buf[IG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fn(level, buf, user);
}
