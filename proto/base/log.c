/* log.c — key=value event logger (see log.h). */
#include "proto/base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int log_level = GA_LOG_INFO;
static atomic_int log_ts = -1;   /* -1: decide from GA_LOG_NO_TS on first use */

static const char *const names[] = { "debug", "info", "warn", "error" };

void ga_log_set_level(int level) { atomic_store(&log_level, level); }
int  ga_log_get_level(void) { return atomic_load(&log_level); }
void ga_log_set_timestamps(int on) { atomic_store(&log_ts, on ? 1 : 0); }

int ga_log_parse_level(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    if (strcmp(s, "warning") == 0)
        return GA_LOG_WARN;
    return -1;
}

const char *ga_log_level_name(int level)
{
    return level >= 0 && level < 4 ? names[level] : "?";
}

int64_t ga_now_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t ga_now_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ga_log(int level, const char *event, const char *fmt, ...)
{
    if (level < atomic_load(&log_level))
        return;
    int want_ts = atomic_load(&log_ts);
    if (want_ts < 0) {
        const char *e = getenv("GA_LOG_NO_TS");
        want_ts = !(e && *e == '1');
        atomic_store(&log_ts, want_ts);
    }
    char line[4096];
    size_t n = 0;
    if (want_ts) {
        struct timespec now;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &now);
        gmtime_r(&now.tv_sec, &tm);
        n += strftime(line, sizeof line, "ts=%Y-%m-%dT%H:%M:%S", &tm);
        n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ ", now.tv_nsec / 1000000);
    }
    n += (size_t)snprintf(line + n, sizeof line - n, "level=%s event=%s",
                          ga_log_level_name(level), event);
    if (fmt && *fmt && n < sizeof line - 2) {
        line[n++] = ' ';
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(line + n, sizeof line - n, fmt, ap);
        va_end(ap);
        if (k > 0)
            n += (size_t)k;
    }
    if (n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}

int ga_ratelimit_ok(struct ga_ratelimit *rl, uint64_t *suppressed)
{
    int64_t now = ga_now_mono_ns();
    int64_t last = __atomic_load_n(&rl->last_ns, __ATOMIC_RELAXED);
    if (last != 0 && now - last < rl->interval_ns) {
        __atomic_fetch_add(&rl->suppressed, 1, __ATOMIC_RELAXED);
        return 0;
    }
    if (!__atomic_compare_exchange_n(&rl->last_ns, &last, now, 0,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&rl->suppressed, 1, __ATOMIC_RELAXED);
        return 0;
    }
    *suppressed = __atomic_exchange_n(&rl->suppressed, 0, __ATOMIC_RELAXED);
    return 1;
}
