/* log.c — key=value event logger (see log.h). */
#include "daemon/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static atomic_int log_level = GA_LOG_INFO;
static atomic_int log_ts = -1;   /* -1: decide from GA_LOG_NO_TS on first use */
static atomic_int log_journal = -1;  /* -1: decide from JOURNAL_STREAM on first use */

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

/* ---- journald ------------------------------------------------------------ */

int ga_log_journal_stream_matches(const char *env, int fd)
{
    unsigned long long dev, ino;
    char tail;
    struct stat st;
    if (!env || sscanf(env, "%llu:%llu%c", &dev, &ino, &tail) != 2)
        return 0;
    if (fstat(fd, &st) < 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void ga_log_set_journal(int on) { atomic_store(&log_journal, on < 0 ? -1 : on ? 1 : 0); }

int ga_log_get_journal(void)
{
    int j = atomic_load(&log_journal);
    if (j < 0) {
        j = ga_log_journal_stream_matches(getenv("JOURNAL_STREAM"), STDERR_FILENO);
        atomic_store(&log_journal, j);
    }
    return j;
}

int ga_log_syslog_priority(int level)
{
    switch (level) {
    case GA_LOG_DEBUG: return 7;        /* LOG_DEBUG */
    case GA_LOG_INFO: return 6;         /* LOG_INFO */
    case GA_LOG_WARN: return 4;         /* LOG_WARNING */
    default: return 3;                  /* LOG_ERR */
    }
}

/* ---- formatting with escaped values ---------------------------------------- */

struct out {
    char *buf;
    size_t cap, n;                     /* cap leaves room for the newline */
    size_t safe;                       /* length up to the last whole field */
    int full;
};

static void put(struct out *o, char ch)
{
    if (o->n < o->cap)
        o->buf[o->n++] = ch;
    else
        o->full = 1;
}

static int needs_quotes(const char *s)
{
    if (!*s)
        return 1;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p == 0x7f)
            return 1;
    return 0;
}

/* s with '"', '\\' and control bytes escaped; also ' ' where unquoted. */
static void put_escaped(struct out *o, const char *s, int quoted)
{
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)s; *p && !o->full; p++) {
        unsigned char ch = *p;
        if (ch == '"' || ch == '\\') {
            put(o, '\\');
            put(o, (char)ch);
        } else if (ch == '\n') {
            put(o, '\\');
            put(o, 'n');
        } else if (ch == '\t') {
            put(o, '\\');
            put(o, 't');
        } else if (ch == '\r') {
            put(o, '\\');
            put(o, 'r');
        } else if (ch < ' ' || ch == 0x7f || (ch == ' ' && !quoted)) {
            put(o, '\\');
            put(o, 'x');
            put(o, hex[ch >> 4]);
            put(o, hex[ch & 15]);
        } else {
            put(o, (char)ch);
        }
    }
}

/* Format fmt like vsnprintf, but every %s (and %c) value is escaped for its
 * place: inside a quoted value of fmt ("...%s...") quotes, backslashes and
 * control bytes get a backslash; a bare value (key=%s) that is empty or
 * holds a space, quote, '=', backslash or control byte is quoted whole. */
static void format_kv(struct out *o, const char *fmt, va_list ap)
{
    int quoted = 0;
    char tmp[2048];
    for (const char *f = fmt; *f && !o->full; f++) {
        if (*f != '%') {
            if (*f == '"')
                quoted = !quoted;
            if (*f == ' ' && !quoted)
                o->safe = o->n;
            put(o, *f);
            continue;
        }
        if (f[1] == '%') {
            put(o, '%');
            f++;
            continue;
        }
        /* Collect the conversion spec, resolving '*' from the arguments. */
        char spec[64];
        size_t k = 0;
        const char *p = f + 1;
        spec[k++] = '%';
        while (*p && strchr("-+ #0", *p) && k < 20)
            spec[k++] = *p++;
        for (int part = 0; part < 2; part++) {
            if (part == 1) {
                if (*p != '.')
                    break;
                spec[k++] = *p++;
            }
            if (*p == '*') {
                k += (size_t)snprintf(spec + k, sizeof spec - k, "%d", va_arg(ap, int));
                p++;
            } else {
                while (*p >= '0' && *p <= '9' && k < 40)
                    spec[k++] = *p++;
            }
        }
        int lng = 0;                   /* 1 l, 2 ll, 3 z, 4 j, 5 t, 6 L, -1 h/hh */
        while (*p && strchr("hlzjtLq", *p) && k < 56) {
            switch (*p) {
            case 'l': lng = lng == 1 ? 2 : 1; break;
            case 'q': lng = 2; break;
            case 'z': lng = 3; break;
            case 'j': lng = 4; break;
            case 't': lng = 5; break;
            case 'L': lng = 6; break;
            default: lng = -1; break;
            }
            spec[k++] = *p++;
        }
        char conv = *p;
        if (!conv)
            break;
        spec[k++] = conv;
        spec[k] = '\0';
        f = p;
        int is_str = 0;
        tmp[0] = '\0';
        switch (conv) {
        case 'd': case 'i':
            switch (lng) {
            case 1: snprintf(tmp, sizeof tmp, spec, va_arg(ap, long)); break;
            case 2: snprintf(tmp, sizeof tmp, spec, va_arg(ap, long long)); break;
            case 3: snprintf(tmp, sizeof tmp, spec, va_arg(ap, ssize_t)); break;
            case 4: snprintf(tmp, sizeof tmp, spec, va_arg(ap, intmax_t)); break;
            case 5: snprintf(tmp, sizeof tmp, spec, va_arg(ap, ptrdiff_t)); break;
            default: snprintf(tmp, sizeof tmp, spec, va_arg(ap, int)); break;
            }
            break;
        case 'u': case 'x': case 'X': case 'o':
            switch (lng) {
            case 1: snprintf(tmp, sizeof tmp, spec, va_arg(ap, unsigned long)); break;
            case 2: snprintf(tmp, sizeof tmp, spec, va_arg(ap, unsigned long long)); break;
            case 3: snprintf(tmp, sizeof tmp, spec, va_arg(ap, size_t)); break;
            case 4: snprintf(tmp, sizeof tmp, spec, va_arg(ap, uintmax_t)); break;
            case 5: snprintf(tmp, sizeof tmp, spec, va_arg(ap, ptrdiff_t)); break;
            default: snprintf(tmp, sizeof tmp, spec, va_arg(ap, unsigned)); break;
            }
            break;
        case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
            if (lng == 6)
                snprintf(tmp, sizeof tmp, spec, va_arg(ap, long double));
            else
                snprintf(tmp, sizeof tmp, spec, va_arg(ap, double));
            break;
        case 'c':
            tmp[0] = (char)va_arg(ap, int);
            tmp[1] = '\0';
            is_str = 1;
            break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            snprintf(tmp, sizeof tmp, spec, s ? s : "(null)");
            is_str = 1;
            break;
        }
        case 'p':
            snprintf(tmp, sizeof tmp, spec, va_arg(ap, void *));
            break;
        default:                       /* %n and unknown conversions: dropped */
            continue;
        }
        if (!is_str) {
            for (const char *t = tmp; *t; t++)
                put(o, *t);
        } else if (quoted) {
            put_escaped(o, tmp, 1);
        } else if (o->n > 0 && o->buf[o->n - 1] == '=' && (f[1] == ' ' || f[1] == '\0') &&
                   needs_quotes(tmp)) {
            put(o, '"');
            put_escaped(o, tmp, 1);
            put(o, '"');
        } else {
            put_escaped(o, tmp, 0);
        }
    }
    if (!o->full)
        o->safe = o->n;
}

size_t ga_log_format(char *line, size_t cap, int level, int journal, int want_ts,
                     const char *event, const char *fmt, va_list ap)
{
    struct out o = { line, cap > 1 ? cap - 1 : 0, 0, 0, 0 };
    char head[128];
    size_t h = 0;
    if (journal)
        h += (size_t)snprintf(head + h, sizeof head - h, "<%d>", ga_log_syslog_priority(level));
    if (want_ts) {
        struct timespec now;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &now);
        gmtime_r(&now.tv_sec, &tm);
        h += strftime(head + h, sizeof head - h, "ts=%Y-%m-%dT%H:%M:%S", &tm);
        h += (size_t)snprintf(head + h, sizeof head - h, ".%03ldZ ", now.tv_nsec / 1000000);
    }
    h += (size_t)snprintf(head + h, sizeof head - h, "level=%s event=", ga_log_level_name(level));
    for (size_t i = 0; i < h && i < sizeof head; i++)
        put(&o, head[i]);
    put_escaped(&o, event, 0);
    o.safe = o.n;
    if (fmt && *fmt) {
        put(&o, ' ');
        format_kv(&o, fmt, ap);
    }
    if (o.full) {                      /* cut at the last whole field */
        static const char mark[] = " truncated=1";
        o.n = o.safe;
        o.full = 0;
        if (o.n + sizeof mark - 1 > o.cap)
            o.n = o.cap - (sizeof mark - 1);
        for (const char *t = mark; *t; t++)
            put(&o, *t);
    }
    line[o.n++] = '\n';
    return o.n;
}

void ga_log(int level, const char *event, const char *fmt, ...)
{
    if (level < atomic_load(&log_level))
        return;
    int journal = ga_log_get_journal();
    int want_ts = atomic_load(&log_ts);
    if (want_ts < 0) {
        const char *e = getenv("GA_LOG_NO_TS");
        want_ts = !(e && *e == '1') && !journal;   /* journald stamps lines itself */
        atomic_store(&log_ts, want_ts);
    }
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    size_t n = ga_log_format(line, sizeof line, level, journal, want_ts, event, fmt, ap);
    va_end(ap);
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
