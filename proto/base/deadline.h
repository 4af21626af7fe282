/* deadline.h — absolute deadlines for pthread_cond_timedwait and friends:
 * a struct timespec plus a duration, normalised (0 <= tv_nsec < 1e9). */
#ifndef GA_BASE_DEADLINE_H
#define GA_BASE_DEADLINE_H

#include <stdint.h>
#include <time.h>

/* t + ns (ns >= 0). */
static inline struct timespec ga_timespec_add_ns(struct timespec t, int64_t ns)
{
    int64_t n = (int64_t)t.tv_nsec + ns % 1000000000;
    t.tv_sec += (time_t)(ns / 1000000000 + n / 1000000000);
    t.tv_nsec = (long)(n % 1000000000);
    return t;
}

/* The clock's now + ms (ms >= 0). */
static inline struct timespec ga_deadline_ms(clockid_t clock, int64_t ms)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return ga_timespec_add_ns(t, ms * 1000000);
}

#endif
