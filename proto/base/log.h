/* log.h — one levelled logger writing key=value events to stderr.
 *
 *   ga_log(GA_LOG_INFO, "listen", "socket=%s mode=0660", path);
 * prints
 *   ts=2026-11-21T15:04:05.123Z level=info event=listen socket=/run/x mode=0660
 *
 * Each event is one write(2), so lines from threads never interleave.
 * Free text goes in a quoted value: msg="%s" (ga_log escapes nothing). */
#ifndef GA_LOG_H
#define GA_LOG_H

#include <stdint.h>

enum ga_log_level { GA_LOG_DEBUG = 0, GA_LOG_INFO, GA_LOG_WARN, GA_LOG_ERROR };

void ga_log_set_level(int level);
int  ga_log_get_level(void);
/* "debug"|"info"|"warn"|"error" → level; -1 if unknown. */
int  ga_log_parse_level(const char *s);
const char *ga_log_level_name(int level);
/* Omit the ts= field (journald stamps lines itself): GA_LOG_NO_TS=1 or this. */
void ga_log_set_timestamps(int on);

void ga_log(int level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Rate limiting for events that can repeat per point (late points, bad
 * datagrams): at most one line per `interval_ns`; the line carries the number
 * of events suppressed since the last one.  Thread-safe. */
struct ga_ratelimit {
    int64_t interval_ns;
    int64_t last_ns;          /* protected by atomics in log.c */
    uint64_t suppressed;
};
#define GA_RATELIMIT_INIT(ns) { (ns), 0, 0 }
/* Returns 1 and stores the count suppressed since the last emitted line in
 * *suppressed when the caller may log now; 0 otherwise. */
int ga_ratelimit_ok(struct ga_ratelimit *rl, uint64_t *suppressed);

/* CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds. */
int64_t ga_now_mono_ns(void);
int64_t ga_now_real_ns(void);

#endif
