/* agg.h — what the engine reports and storage writes: a bucket's value
 * (struct ga_agg, as a row or packed into wide records), a point that was
 * not aggregated (struct ga_late) and a metric's raw window (struct
 * ga_window).  Semantics: docs/SEMANTICS.md; the records' bytes:
 * below. */
#ifndef GA_AGG_H
#define GA_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "proto/policy.h"

/* One bucket whose value changed (or appeared). */
struct ga_agg {
    uint32_t metric;
    ga_method_t method;
    uint16_t aux;                /* 0 in a row; a packed record's count (below) */
    int64_t granularity_ns;
    int64_t ts;                  /* bucket start, ns */
    double value;
};

/* Why a point was not aggregated. */
enum ga_late_reason {
    GA_LATE_WINDOW = 1,          /* older than the metric's raw window */
    GA_LATE_BEFORE_EPOCH,        /* ts < 0 */
    GA_LATE_NONFINITE,           /* NaN or ±Inf value (docs/SEMANTICS.md) */
    GA_LATE_UNKNOWN_METRIC,      /* id never added */
    GA_LATE_OUT_OF_RANGE,        /* ts > GA_TS_MAX (proto/ga_time.h) */
};

struct ga_late {
    uint32_t metric;
    uint32_t reason;             /* enum ga_late_reason */
    int64_t ts;
    double value;
};

/* Wide records.  A reader of engine output that asked for them
 * (ga_result.want_wide, gpu/engine.h) walks the slots with ga_agg_span and
 * ga_agg_unpack; a backend may then write a bucket's basic methods as one
 * record instead of a row each (the CUDA backend does; the CPU backend
 * writes rows, which read the same way).  The record carries the leading
 * methods of the policy while they are basic and ascending (every policy
 * from config or the wire has its methods ascending: all its basic ones);
 * the bucket's other methods follow as rows.  Unpacked, the rows are the
 * ones want_wide = 0 gives, in the same order, with the same values.  What
 * matters is the bytes when the rows come home over PCIe (docs/GPU.md):
 * 8 rows are 256 bytes, the records below 64 or 96.  mask: bit m - 1 for
 * each method m of GA_M_MEAN .. GA_M_STD the bucket has (1..8 bits).
 *
 * Packed (1 or 2 consecutive slots; written where the bucket has at most
 * 65,535 points, its granularity is a whole number of seconds below 2^32
 * and its start lies in [0, 2^32) seconds, i.e. before 2106):
 *   bytes 0..3    metric;
 *         4..5    method = GA_M_PACKED | mask;
 *         6..7    aux = the bucket's point count n (1..65535);
 *         8..11   granularity, seconds (uint32);
 *        12..15   bucket start, seconds since the epoch (uint32);
 *        16..     the values of the mask's methods in ascending order, as
 *                 doubles, but for count (it is n) and for mean when sum is
 *                 there (it is sum / n, the division every backend makes):
 *                 at most 6; unused ones to the end of the last slot 0.
 *   A slot for up to 2 values, two for up to 6: basic's 8 methods in 64
 *   bytes.
 * Wide (1 + ceil(k / 4) slots, the other buckets):
 *   slot 0:  metric, method GA_M_WIDE, granularity_ns and ts as the rows',
 *            value = mask (k = its bit count);
 *   slots 1..: the k values as doubles, in ascending method order, four a
 *            slot; unused ones in the last slot are 0. */
#define GA_WIDE_MAX 8
/* Slots the row or record at a takes: 1, 1 or 2 for a packed record,
 * 1 + ceil(k / 4) for a wide one (1 for a malformed header: mask 0 or past
 * 8 bits, or a packed one of count 0). */
size_t ga_agg_span(const struct ga_agg *a);
/* The bucket the row or record at a is of: its granularity and start, ns
 * (a packed record keeps them in seconds). */
void ga_agg_bucket(const struct ga_agg *a, int64_t *granularity_ns, int64_t *ts);
/* The rows of the row or record at a (avail slots from a on) into out:
 * their count, 1..GA_WIDE_MAX; 0 for a malformed record or one longer than
 * avail. */
size_t ga_agg_unpack(const struct ga_agg *a, size_t avail, struct ga_agg out[GA_WIDE_MAX]);
/* Rows that slots aggs[0..n) unpack to, by walking them (ga_result.nrows
 * keeps the count without a walk). */
size_t ga_aggs_count(const struct ga_agg *aggs, size_t n);
/* "window", "before_epoch", "nonfinite", "unknown_metric", "out_of_range";
 * "?" otherwise.
 * Static storage. */
const char *ga_late_reason_name(uint32_t reason);

/* A metric's raw window, for moving a metric between backends and for
 * on-demand resampling.  Points sorted by ts, unique ts.  Owned by the
 * caller: free ts and value with free().  has_prev is reserved: carbonara's
 * window holds no point before its first block, so window_get returns 0 and
 * window_put refuses 1 (GA_EINVAL). */
struct ga_window {
    size_t n;
    int64_t *ts;
    double *value;
    int has_prev;                /* rate: the point just before the window */
    int64_t prev_ts;
    double prev_value;
};

#endif
