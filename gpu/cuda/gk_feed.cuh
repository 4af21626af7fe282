// gk_feed.cuh — the feed's kernels before and after the bucket kernels
// (gk_feed.cu): classify the batch, order it per metric and time, keep the
// last of equal timestamps, merge the new points into the GPU-resident
// windows, the per-granularity contexts, the bucket tasks (gk_tasks.cu),
// and the pool rebuild (truncate).  gpu/cuda/cuda_backend.cu strings them together; the
// steps follow gpu/agg_cpu_window.c (docs/SEMANTICS.md steps 1-5).
#pragma once

#include "gpu/cuda/gk_bucket.cuh"

// Every device array one feed touches.  n: batch points, A accepted,
// U unique accepted, T touched metrics, S slots (metrics of the backend).
struct gk_feed {
    // backend state (read-only during a feed until the final swap)
    const uint32_t *loc;          // engine id -> slot + 1; [cap_local]
    uint32_t cap_local;
    uint32_t nslots;
    const struct agg_pol *pols;
    const uint32_t *slot_pol, *slot_id;
    const uint64_t *w_off, *w_n;  // window of each slot in the pool
    const int64_t *p_ts;
    const double *p_val;
    // batch [n]
    const uint32_t *metric;
    const int64_t *ts;
    const double *val;
    // a batch that came as 32-bit offsets (engine.h ga_points): classify
    // writes ts[i] = ts_base + ts32[i] * ts_unit first (ts32 NULL: ts came)
    const uint32_t *ts32;
    int64_t ts_base, ts_unit;
    uint8_t *reason;              // 0 accepted, else enum ga_late_reason
    uint32_t *slot_of;            // slot, or nslots when rejected
    uint64_t *key64;              // ts, sort key (gk_ts_keys: disordered batches only)
    uint32_t *idx;                // i, sort value
    int64_t *tmin;                // [S] min ts of points with ts >= 0, finite
    int64_t *fbt;                 // [S] the window's first block ts (older: late); INT64_MIN if empty
    // sorted by (slot, ts, arrival), the A accepted first [n]
    const uint32_t *key32s;       // sorted slots
    const uint32_t *idx_s;        // sorted arrival indices
    int64_t *s_ts;                // ts and values in that order (one gather; the passes
    double *s_val;                // after it read them in order)
    uint8_t *keep;
    // unique [U] (head [n])
    const uint32_t *keep_idx;
    uint32_t *u_slot;
    int64_t *u_ts;
    double *u_val;
    uint8_t *head;
    const uint32_t *seg32;        // [T] first unique point of each touched metric
    uint64_t *seg;                // [T + 1]
    uint32_t *tslot;              // [T]
    uint64_t *old_n;              // [T + 1]
    uint64_t *dup;                // [U + 1]
    uint64_t *dupx;               // [U + 1] exclusive scan of dup
    uint64_t *rold;               // [U] lower bound in the old window
    uint64_t *pos;                // [U] index in the merged window
    uint64_t *m_n;                // [T + 1] merged window length
    const uint64_t *m_off;        // [T + 1]
    const uint64_t *o_off;        // [T + 1]
    int64_t *m_ts;                // merged windows
    double *m_val;
    gk_ctx *ctx;                  // [T * D]
    int D;
    int wide;                     // rows as wide records (gk_view.wide)
    gk_task *tasks;
    // rebuild [S]
    uint64_t *cut;                // [T]
    uint64_t *new_n;              // [S + 1]
    uint32_t *slot_t;             // [S] touched index + 1, 0 if untouched
    uint32_t *t_of;               // [S] touched index of a touched slot (gk_segments;
                                  // other slots' entries are stale)
    const uint64_t *new_off;      // [S + 1]
    uint64_t *wmax;               // the longest window any rebuild has made (kept across
                                  // feeds: a bound on every window's length)
    int64_t *p2_ts;
    double *p2_val;
};

// Each launcher: 0 or GA_ECUDA.  Sizes are the host's copies of the counts,
// or bounds on them (named *_max, or n) where the count stays on the device
// and the kernel reads it: one wait for several counts, fewer waits a feed.
// fbt[s] for every slot, from the current pool (before classifying).
int gk_first_blocks(gk_exec *x, const gk_feed *f);
int gk_classify(gk_exec *x, const gk_feed *f, size_t i0, size_t i1);
int gk_late_rows(gk_exec *x, const gk_feed *f, const uint32_t *late_idx, size_t L,
                 struct ga_late *out);
int gk_slot_keys(gk_exec *x, const gk_feed *f, const uint32_t *idx1, uint32_t *key32, size_t n);
// s_ts / s_val of the n points in (slot, ts, arrival) order (idx_s), and
// keep[j] for them, the A = n - *late accepted first: the last of equal
// (slot, ts); 0 past A.  *disorder = 1 if a slot's ts go down somewhere (the
// points were not in that order).  head[j]: j < A starts its slot's run.
// *dropped += the accepted points not kept.
int gk_gather_sorted(gk_exec *x, const gk_feed *f, size_t n, const uint32_t *late, uint32_t *disorder,
                     uint32_t *dropped);
// key64[i] = ts[i] for the batch's n points (the sort by time).
int gk_ts_keys(gk_exec *x, const gk_feed *f, size_t n);
// u_* and head for the *U kept points (keep_idx); head 0 from *U to n.
int gk_gather_unique(gk_exec *x, const gk_feed *f, size_t n, const uint32_t *U);
int gk_segments(gk_exec *x, const gk_feed *f, size_t U, size_t T);
int gk_merge_counts(gk_exec *x, const gk_feed *f, size_t U, size_t T);
int gk_merge_lengths(gk_exec *x, const gk_feed *f, size_t T);
// O_max: a bound on the touched windows' old points (o_off[T]).
int gk_merge_place(gk_exec *x, const gk_feed *f, size_t U, size_t T, size_t O_max);
int gk_contexts(gk_exec *x, const gk_feed *f, size_t T);
// The bucket tasks (gk_tasks.cu), over the U * D items in tiles of
// GK_TASK_TILE, GK_TASK_ITEMS a thread.  count: tcnt, each tile's tasks,
// rows and rows unpacked from wide records (three arrays of tiles + 1
// words).  scan: toff, tcnt's exclusive sums (the totals at [tiles]), and
// words[0..3) the totals, words[3 + c] and words[4 + nchunks + c] the first
// task and row of chunk c <= nchunks (its first tile's): the rows kernels'
// chunks.  emit: the tasks into f->tasks, in item order.
#define GK_TASK_THREADS 256
#define GK_TASK_ITEMS 8
#define GK_TASK_TILE (GK_TASK_THREADS * GK_TASK_ITEMS)
#define GK_TASK_WORDS(nchunks) (5 + 2 * (nchunks))
size_t gk_task_tiles(size_t U, int D);
int gk_tasks_count(gk_exec *x, const gk_feed *f, size_t U, uint64_t *tcnt);
int gk_tasks_scan(gk_exec *x, const uint64_t *tcnt, uint64_t *toff, size_t ntiles, int nchunks,
                  uint64_t *words);
int gk_tasks_emit(gk_exec *x, const gk_feed *f, size_t U, const uint64_t *toff);
int gk_rebuild_counts(gk_exec *x, const gk_feed *f, size_t T);
// total_max: a bound on the new pool's size (new_off[nslots]).
int gk_rebuild_copy(gk_exec *x, const gk_feed *f, size_t total_max);
int gk_reset_slots(gk_exec *x, uint64_t *w_n, const uint32_t *slots, size_t k);
// A window set (cu_windows_get): len[i] = w_n[slots[i]] for i < k; then
// the points of window slots[i] to ts / val from out_off[i] on.
int gk_window_lengths(gk_exec *x, const uint64_t *w_n, const uint32_t *slots, size_t k, uint64_t *len);
int gk_window_gather(gk_exec *x, const uint64_t *w_off, const uint64_t *w_n, const int64_t *pts,
                     const double *pval, const uint32_t *slots, const uint64_t *out_off, size_t k,
                     int64_t *ts, double *val);
