/* ga_time.h — the time range gpuagg accepts, shared by every part (ingest,
 * Ceilometer UDP, the engine on CPU and GPU, config, the resample tool).
 *
 * Time is int64 nanoseconds since 1970-01-01T00:00:00Z.  A point is
 * accepted when GA_TS_MIN <= ts <= GA_TS_MAX, both ends included:
 *
 *   GA_TS_MIN = 0                    1970-01-01T00:00:00Z
 *   GA_TS_MAX = 7258118400000000000  2200-01-01T00:00:00Z
 *
 * int64 nanoseconds would reach 2262-04-11T23:47:16.854775807Z; the bound
 * is kept ~62 years below that so that everything computed from an
 * accepted timestamp stays inside int64: a bucket start (<= ts) plus its
 * granularity (<= GA_GRANULARITY_MAX) plus one day (the upper bound of the
 * storage partition of the bucket's day, storage/pg_schema.c), a window's
 * first block (bucket − block × back window, >= −GA_TIMESPAN_MAX), the
 * timespan cut (last bucket − timespan) and the retention reach (timespan
 * + granularity).  proto/policy.c checks those sums at compile time.
 *
 * Ingest refuses points outside the range one by one (proto/INGEST.md §6:
 * "timestamp before 1970", "timestamp after 2200-01-01T00:00:00Z"), and
 * those more than limits.max_future_s ahead of the daemon's clock
 * (ing_ts_too_far_ahead(), proto/ingest_proto.h; the engine has no clock),
 * Ceilometer UDP refuses a sample after GA_TS_MAX (udp.rejected.out_of_range),
 * and the engine reports any such point that still reaches it as late
 * (reasons before_epoch and out_of_range, docs/SEMANTICS.md).
 *
 * Plain macros: included from C and CUDA. */
#ifndef GA_TIME_H
#define GA_TIME_H

#include <stdint.h>

#define GA_NS_PER_SEC 1000000000LL
#define GA_NS_PER_DAY (86400LL * GA_NS_PER_SEC)

/* The accepted timestamps, inclusive. */
#define GA_TS_MIN 0LL
#define GA_TS_MAX 7258118400000000000LL          /* 2200-01-01T00:00:00Z */
#define GA_TS_MAX_TEXT "2200-01-01T00:00:00Z"

/* The largest granularity a policy may have: 3650 days (about 10 years). */
#define GA_GRANULARITY_MAX (3650LL * GA_NS_PER_DAY)
#define GA_GRANULARITY_MAX_TEXT "3650 days"
/* The largest timespan of a definition, and the largest back window span
 * (largest granularity × (back_window + 1)): 36500 days (about 100 years). */
#define GA_TIMESPAN_MAX (36500LL * GA_NS_PER_DAY)
#define GA_TIMESPAN_MAX_TEXT "36500 days"

/* 1 when ts is an accepted timestamp. */
#define GA_TS_IN_RANGE(ts) ((ts) >= GA_TS_MIN && (ts) <= GA_TS_MAX)

#endif
