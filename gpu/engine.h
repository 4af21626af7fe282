/* engine.h — the aggregation engine and the backend interface.
 *
 * The engine owns the metric table (id → policy) and routes each batch of
 * points to backends.  A backend owns the state of the metrics routed to it
 * (the raw points of the open window) and computes the buckets a batch
 * touched.  The CPU backend (gpu/agg_cpu.c) is the reference; the CUDA
 * backend implements the same ops and must give the same answers.
 *
 * Semantics are Gnocchi 4.4 carbonara's, with the documented differences in
 * docs/SEMANTICS.md.  In short, per metric:
 *   - bucket(ts, g) = floor(ts / g) * g, ts in int64 ns since the Unix epoch;
 *   - raw points are kept for max_g * (back_window + 1) (+ one block when a
 *     rate: method is on); a point older than that is a *late* point: it is
 *     reported in ga_result.late, never silently dropped;
 *   - each batch recomputes exactly the buckets it touched, for every
 *     granularity and method of the policy, and reports them as ga_agg rows;
 *   - duplicate timestamps: the last received wins (later batch, or later
 *     index within a batch).
 *
 * Threading: one ga_engine is driven by one thread at a time (the daemon's
 * engine worker); backends parallelise inside feed(); batches started with
 * ga_engine_feed_start are fed on the engine's own feeder thread while the
 * caller goes on. */
#ifndef GA_ENGINE_H
#define GA_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/agg.h"
#include "proto/ga_time.h"
#include "proto/points.h"
#include "proto/policy.h"

/* Output of a feed.  The caller owns it, resets it with ga_result_reset()
 * between feeds (keeps the memory), frees it with ga_result_free().
 * want_pinned: keep aggs in page-locked memory (ga_cuda_host_alloc; from
 * the next growth on), into which a CUDA backend copies its rows straight
 * from the GPU instead of through its own pinned buffer and a second host
 * copy; where page-locked memory is refused (no GPU, limits) aggs fall back
 * to malloc; aggs_pinned says which one they are in now.  The engine sets
 * it when it has a CUDA backend. */
struct ga_result {
    struct ga_agg *aggs;
    size_t naggs, cap_aggs;       /* slots: rows, and wide records' slots */
    size_t nrows;                 /* the rows they unpack to (naggs without wide
                                     records): every writer keeps it */
    struct ga_late *late;
    size_t nlate, cap_late;
    int want_pinned, aggs_pinned;
    int want_wide;                /* the caller reads wide records (below) */
};

/* Wide records (proto/agg.h): with want_wide a backend may write a
 * bucket's basic methods as one record; ga_result_narrow unpacks them. */
/* Unpack the wide records among slots [from, naggs) in place (for callers
 * that want rows only from some point on).  0 or GA_ENOMEM (r unchanged). */
int ga_result_narrow(struct ga_result *r, size_t from);

void ga_result_reset(struct ga_result *r);
void ga_result_free(struct ga_result *r);
/* Append helpers; return 0 or GA_ENOMEM. */
int ga_result_push_agg(struct ga_result *r, const struct ga_agg *a);
int ga_result_push_late(struct ga_result *r, const struct ga_late *l);
/* Make room for more_aggs rows and more_late late points beyond the current
 * counts, so that a backend can fill them without failing half-way.  0 or
 * GA_ENOMEM (r unchanged but possibly with more capacity). */
int ga_result_reserve(struct ga_result *r, size_t more_aggs, size_t more_late);
struct ga_backend;

struct ga_backend_ops {
    const char *name;            /* "cpu", "cuda" */
    /* Start tracking a metric under a policy (copied).  0 or GA_E*. */
    int (*metric_add)(struct ga_backend *b, uint32_t metric, const struct ga_policy *p);
    /* Aggregate a batch whose points all belong to this backend's metrics.
     * Appends changed buckets and late points to out.  0 or GA_E*; on
     * failure the backend's state is unchanged (so the batch can be re-fed
     * elsewhere). */
    int (*feed)(struct ga_backend *b, const struct ga_points *pts, struct ga_result *out);
    /* Copy out / load a metric's raw window (for failover and jobs). */
    int (*window_get)(struct ga_backend *b, uint32_t metric, struct ga_window *out);
    int (*window_put)(struct ga_backend *b, uint32_t metric, const struct ga_policy *p,
                      const struct ga_window *w);
    /* Forget a metric. */
    void (*metric_drop)(struct ga_backend *b, uint32_t metric);
    /* Close; feeds still in flight are dropped (their rows never counted). */
    void (*close)(struct ga_backend *b);
    /* Optional (NULL: only feed), the CUDA backend's two halves of feed:
     * feed_start does all of it but wait for the rows to arrive — on 0 the
     * batch is applied (pts may be reused), out has room reserved and the
     * rows are on their way; feed_wait waits for the oldest started feed
     * and appends its rows and late points to its out (out->naggs, nlate
     * grow only there).  Up to two feeds in flight, each into its own out:
     * start batch k + 1, then wait for batch k, and k + 1's upload and
     * kernels overlap k's rows coming back.  feed_start: 0 or as feed, and
     * GA_EBUSY with two in flight, GA_EINVAL when out is the out of the
     * one in flight.  feed_wait: 0, GA_ENOENT (none in flight) or GA_ECUDA
     * (the copy failed: the batch is applied but its rows are lost — a
     * sticky device failure in practice, for the engine's failover and the
     * journal replay).  feed itself first waits for the feeds in flight. */
    int (*feed_start)(struct ga_backend *b, const struct ga_points *pts, struct ga_result *out);
    int (*feed_wait)(struct ga_backend *b);
    /* Optional (NULL: none): start uploading a batch that a later feed or
     * feed_start will be given, so that its copy runs while the feeds
     * before it compute.  The feed whose pts has the same three arrays and
     * n as the oldest prefetched batch uses that upload; the arrays must
     * not change from prefetch until that feed returns (or, if no feed
     * takes it, until a feed drops it or the backend closes).  Up to two batches
     * prefetched and not yet fed; a feed of other arrays ignores them (and
     * drops them when both are held).  1: started; 0: not (arrays not in
     * page-locked memory, or n 0); GA_EBUSY with two held; GA_ECUDA.
     * Pipelined: prefetch(k + 1), feed_start(k), feed_wait(k - 1). */
    int (*prefetch)(struct ga_backend *b, const struct ga_points *pts);
    /* Optional (NULL: window_get for each): copy out the windows of
     * metrics ids[0..n) into out[0..n) at once (the caller frees each
     * out[i].ts, out[i].value).  0, or GA_ENOENT (an id not held),
     * GA_ENOMEM, GA_ECUDA with nothing allocated in out. */
    int (*windows_get)(struct ga_backend *b, const uint32_t *ids, size_t n, struct ga_window *out);
};

struct ga_backend {
    const struct ga_backend_ops *ops;
    char label[32];              /* "cpu", "cuda:0", ... for status */
};

/* The CPU reference backend.  threads = 0: one per online core. */
int ga_cpu_backend_open(struct ga_backend **out, int threads);

/* ---- the engine ------------------------------------------------------- */

struct ga_engine;

struct ga_engine_stats {
    uint64_t points_in, points_aggregated, aggs_out;   /* aggs_out: rows (unpacked) */
    uint64_t late_window, late_before_epoch, late_nonfinite, late_unknown, late_out_of_range;
    uint64_t metrics;
};

/* Create an engine over nb backends, 1 <= nb < 65535 (ownership passes to
 * the engine, also on failure).  Metrics are assigned to backends by hash
 * of their id. */
int ga_engine_open(struct ga_engine **out, struct ga_backend **backends, int nb);
void ga_engine_close(struct ga_engine *e);

/* Register metric `id` (dense ids from 0 are cheapest) under a policy. */
int ga_engine_metric_add(struct ga_engine *e, uint32_t id, const struct ga_policy *p);

/* Aggregate a batch spanning any metrics; results appended to out (rows of
 * one metric together, metrics in no particular order; within a metric by
 * granularity, bucket, method; with out->want_wide, the rows its wide
 * records unpack to, out->nrows of them).  With several backends, their outputs come
 * in backend order (primaries, then the fallback), so the same batches give
 * the same order, whatever the timing.  Points of
 * ids never added come back as late GA_LATE_UNKNOWN_METRIC.  Late points
 * are counted (stats, per metric) and logged, rate-limited.  0 or GA_E*; on
 * failure with several backends (fed at the same time), every other
 * backend's share of the batch stays applied, and the output of the
 * backends before the failing one (in that order) stays in out.  With a
 * CUDA backend it sets out->want_pinned (struct ga_result).  GA_EBUSY
 * while batches started with ga_engine_feed_start are not yet waited for. */
int ga_engine_feed(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out);

/* ga_engine_feed in two halves, so that the caller prepares (and the
 * engine splits) batch k + 1 while the backends feed batch k: feed_start
 * splits the batch on the caller's thread and hands the feeds to the
 * engine's feeder thread; feed_wait waits for the oldest batch started and
 * returns what ga_engine_feed would have (its rows, late points and
 * statistics are in and counted from then on).  Up to two batches in
 * flight, each into its own out; pts and out stay untouched by the caller
 * until that batch's feed_wait returns.  The same batches give the same
 * rows in the same order as ga_engine_feed.  Any other engine call that
 * touches a backend (metric_add, drop, windows, set_fallback, close) first
 * waits for the feeds in flight to end (their results stay for
 * feed_wait); close drops the results of batches never waited for.
 * feed_start: 0; GA_EBUSY with two in flight; GA_EINVAL when out is the
 * out of a batch in flight; GA_ENOMEM (no feeder thread); or the split's
 * error (nothing in flight then: that batch is finished, as by
 * ga_engine_feed).  feed_wait: the batch's result as ga_engine_feed's, or
 * GA_ENOENT with none in flight. */
int ga_engine_feed_start(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out);
int ga_engine_feed_wait(struct ga_engine *e);

void ga_engine_get_stats(const struct ga_engine *e, struct ga_engine_stats *st);

/* Where the last ga_engine_feed() spent its time (host wall clock), for
 * benchmarks.  split_s: splitting the batch per backend; feed_s: the
 * backends' feeds, from the first start to the last end (fail-overs
 * included); append_s: gathering their outputs into the caller's result.
 * With one backend and nothing to split, all of it is feed_s.  slot_s[i]:
 * backend i's own feed (primaries, then the fallback; 0 if it got no
 * points), for the first GA_ENGINE_TIMED_SLOTS of nslots. */
#define GA_ENGINE_TIMED_SLOTS 8
struct ga_engine_feed_times {
    double split_s, feed_s, append_s, total_s;
    int nslots;
    double slot_s[GA_ENGINE_TIMED_SLOTS];
};
void ga_engine_feed_times(const struct ga_engine *e, struct ga_engine_feed_times *t);

/* With a CUDA backend in the engine, batches are split per backend into
 * page-locked memory (the GPUs DMA straight from it).  0 turns that off
 * (pageable memory; each GPU then stages its share itself): for
 * benchmarks comparing the two.  Default 1. */
void ga_engine_set_pinned_split(struct ga_engine *e, int on);

/* Late points of one metric, by reason, since it was added. */
struct ga_metric_stats {
    uint64_t late_window, late_before_epoch, late_nonfinite, late_out_of_range;
};
/* 0, or GA_ENOENT for an id never added (or dropped). */
int ga_engine_metric_stats(const struct ga_engine *e, uint32_t id, struct ga_metric_stats *st);

/* Forget a metric (its backend drops the window).  No-op if unknown. */
void ga_engine_metric_drop(struct ga_engine *e, uint32_t id);
/* Copy out a metric's raw window (the caller frees w->ts, w->value) / load
 * one (the metric is added under p if needed).  0, GA_ENOENT, GA_ENOMEM or
 * GA_EINVAL (window not sorted/unique, ts < 0, non-finite value). */
int ga_engine_window_get(struct ga_engine *e, uint32_t id, struct ga_window *w);
/* The windows of ids[0..n) into out[0..n), read from each backend in one
 * go (a window set of a partition: one copy from the GPU, not one per
 * metric).  0, or as ga_engine_window_get with nothing allocated in out. */
int ga_engine_windows_get(struct ga_engine *e, const uint32_t *ids, size_t n, struct ga_window *out);
/* The first timestamp metric id's window takes now (agg_pol_first_block of
 * its newest point; INT64_MIN for an empty window): a point before it is
 * late (GA_LATE_WINDOW).  Reads the window (ga_engine_window_get): for the
 * rare metric whose points were found late, not for every feed.  0,
 * GA_ENOENT, GA_ENOMEM or GA_EINVAL. */
int ga_engine_window_floor(struct ga_engine *e, uint32_t id, int64_t *floor);
int ga_engine_window_put(struct ga_engine *e, uint32_t id, const struct ga_policy *p,
                         const struct ga_window *w);
int  ga_engine_nbackends(const struct ga_engine *e);
const struct ga_backend *ga_engine_backend(const struct ga_engine *e, int i);

/* Failover.  With a fallback backend set (the CPU backend; ownership
 * passes), a primary backend whose feed fails with GA_ECUDA is marked
 * failed: its metrics' windows move to the fallback (window_get on the
 * failed backend, window_put on the fallback), the failed feed's partial
 * output is discarded, and that backend's part of the batch is fed to the
 * fallback instead.  New metrics that hash to a failed backend go to the
 * fallback too.  A metric whose window cannot be read back is restarted
 * empty on the fallback and counted in failover_windows_lost (the journal
 * replay at the next start restores it; the daemon logs this). */
int ga_engine_set_fallback(struct ga_engine *e, struct ga_backend *fallback);
/* 1 if primary backend i has failed over. */
int ga_engine_backend_failed(const struct ga_engine *e, int i);
struct ga_engine_failover_stats {
    uint64_t failovers, metrics_moved, windows_lost;
};
void ga_engine_failover_stats(const struct ga_engine *e, struct ga_engine_failover_stats *st);
/* Metrics currently served by primary backend i, or by the fallback (i = -1). */
uint64_t ga_engine_backend_metrics(const struct ga_engine *e, int i);
/* What the CUDA backends report of their last feed, summed over them: the
 * GPU time of the window pools' rebuilds and the raw points the pools hold
 * (docs/GPU.md); have_gpu 0 (and the rest 0) when no primary is a GPU. */
struct ga_engine_gpu_stats {
    int have_gpu;
    double rebuild_s;
    uint64_t pool_points;
};
void ga_engine_gpu_stats(const struct ga_engine *e, struct ga_engine_gpu_stats *st);

#endif
