/* log.h — one levelled logger writing key=value events to stderr.
 *
 *   ga_log(GA_LOG_INFO, "listen", "socket=%s mode=0660", path);
 * prints
 *   ts=2026-11-21T15:04:05.123Z level=info event=listen socket=/run/x mode=0660
 *
 * Each event is one write(2), so lines from threads never interleave.
 *
 * Every line stays parseable as space-separated key=value fields (logfmt):
 * a %s (or %c) value inside a quoted value of the format (msg="%s") has its
 * '"', '\' and control bytes backslash-escaped (\n, \t, \r, \xNN); a
 * bare value (key=%s) that is empty or holds a space, quote, '=', backslash
 * or control byte is quoted whole and escaped the same way.  A line longer
 * than 4095 bytes is cut after its last whole field and ends "truncated=1".
 *
 * When stderr is the systemd journal (JOURNAL_STREAM holds stderr's
 * "device:inode", as systemd sets it for StandardError=journal), each line
 * starts with its syslog priority, "<3>" error, "<4>" warn, "<6>" info,
 * "<7>" debug, which journald turns into PRIORITY= (journalctl -p err),
 * and the ts= field is left out (journald stamps lines itself). */
#ifndef GA_LOG_H
#define GA_LOG_H

#include <stdarg.h>
#include <stddef.h>
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

/* 1 when env (a JOURNAL_STREAM value, "dev:ino" in decimal) names the file
 * that fd is open on; 0 otherwise (env NULL or malformed, fstat fails). */
int ga_log_journal_stream_matches(const char *env, int fd);
/* Whether lines carry "<N>" priorities: decided from JOURNAL_STREAM and
 * stderr on first use, or forced with ga_log_set_journal (1 on, 0 off, -1
 * decide again on next use). */
int ga_log_get_journal(void);
void ga_log_set_journal(int on);
/* The syslog priority of a level: debug 7, info 6, warn 4, error 3. */
int ga_log_syslog_priority(int level);
/* Build one line as ga_log writes it (exposed for tests): into line[cap]
 * (cap >= 64), newline-terminated, not NUL-terminated.  Returns its length. */
size_t ga_log_format(char *line, size_t cap, int level, int journal, int want_ts,
                     const char *event, const char *fmt, va_list ap);

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
