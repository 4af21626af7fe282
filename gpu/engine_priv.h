/* engine_priv.h — the engine's insides, shared by its files:
 *   engine.c        open, close, metrics, windows, failover, statistics
 *   engine_split.c  a batch split per backend (into page-locked memory)
 *   engine_feed.c   the feeder thread, feed_start / feed_wait / feed
 *
 * Threads.  The caller's thread (one at a time, engine.h) owns the metric
 * table and splits batches; the feeder thread feeds the backends (with its
 * own pool of workers) and is the only one that touches a backend while a
 * batch is in flight.  Everything else that touches a backend (metric_add,
 * drop, windows, set_fallback, close) first drains the feeder (eng_drain).
 * The routing (slot_of, failed, nmetrics, fo) changes under `route`
 * written: by the caller only while the feeder is drained, by the feeder
 * only in a failover; the caller's split reads it under `route` read. */
#ifndef GA_ENGINE_PRIV_H
#define GA_ENGINE_PRIV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "proto/base/log.h"
#include "proto/base/pool.h"
#include "gpu/engine.h"

#define SLOT_NONE UINT16_MAX              /* slot_of: id not added (or dropped) */
#define ENG_INFLIGHT 2                    /* batches started and not yet waited for */
#define SPLIT_MAX_PARTS 64                /* split ranges (threads) at most */
#define COPY_MAX_THREADS 8                /* append copies (threads) at most */

struct eng_metric {
    const struct ga_policy *policy;   /* the caller's, kept alive by it (the registry) */
    struct ga_metric_stats st;
};

struct copy_piece {
    char *dst;
    const char *src;
    size_t bytes;
};

enum eng_batch_state { B_FREE, B_QUEUED, B_DONE };

/* One batch from feed_start to feed_wait.  Its buffers are kept from batch
 * to batch. */
struct eng_batch {
    enum eng_batch_state state;       /* under the engine's mu */
    uint64_t seq;                     /* start order */
    struct ga_result *out;
    size_t naggs0, nrows0, nlate0;    /* out's counts at the start */
    struct ga_points pts;             /* the caller's batch */
    int split;                        /* 1: fed from the sub arrays below */
    int pipe;                         /* started by feed_start (fed on the feeder) */
    int rc;                           /* of the split, then of the feeds */
    /* the split: slot b's share at [bstart[b], bstart[b+1]) of the sub
     * arrays (ts, then value, then metric in one block of cap_sub each;
     * ts holds 32-bit offsets when the batch came so: eng_sub_points) */
    void *sub_block;
    int sub_pinned;                   /* sub_block from ga_cuda_host_alloc */
    uint32_t *sub_metric;
    int64_t *sub_ts;
    double *sub_value;
    size_t cap_sub;
    size_t *bstart;                   /* ns + 2: slot starts, unknown ids, end */
    /* the feeds */
    struct ga_result *part;           /* per slot output but the first busy slot's */
    int *busy, *frc;                  /* slots with points, their feeds' rc */
    double *fsecs;                    /* and times */
    struct copy_piece *pieces;        /* 2 per slot: rows, late points */
    double t0;                        /* host clock: start */
    struct ga_engine_feed_times times;
};

struct ga_engine {
    struct ga_backend **b;            /* nb primaries, then the fallback (if any) */
    int nb;
    int have_fallback;
    uint8_t *failed;                  /* per primary */
    uint64_t *nmetrics;               /* per backend, fallback last */
    struct ga_engine_failover_stats fo;
    pthread_rwlock_t route;           /* slot_of, failed, nmetrics, fo (header) */
    struct eng_metric *m;             /* by id, cap_m */
    uint16_t *slot_of;                /* by id, cap_m: the metric's slot, or SLOT_NONE */
    size_t cap_m;
    struct ga_engine_stats stats;
    struct ga_ratelimit rl;
    int ncpu;                         /* online cores, for the split and append threads */
    int want_pinned;                  /* a CUDA backend: split into page-locked memory */
    int has_cuda;                     /* results in page-locked memory (ga_result.want_pinned) */
    size_t *cnt;                      /* SPLIT_MAX_PARTS x (nb + 2) split counts */
    struct pool *split_pool;          /* the caller's helpers: split */
    struct pool *feed_pool;           /* the feeder's helpers: feeds, append */
    struct eng_batch batch[ENG_INFLIGHT];
    uint64_t next_seq;                /* batches started */
    /* the feeder thread */
    pthread_t feeder;
    int feeder_on, feeder_quit;
    pthread_mutex_t mu;               /* batch states, feeder_quit */
    pthread_cond_t cv;
    struct ga_engine_feed_times times;   /* of the last batch waited for */
};

static inline double eng_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Backends a batch can be split over: the primaries, and the fallback. */
static inline int eng_nslots(const struct ga_engine *e)
{
    return e->nb + e->have_fallback;
}

/* engine_split.c: split b->pts per slot into b's sub arrays; points of
 * unknown ids go to b->out as late points.  0 or GA_E*. */
int eng_split(struct ga_engine *e, struct eng_batch *b);
/* Points [lo, hi) of b's sub arrays, in the form b's batch came in. */
struct ga_points eng_sub_points(const struct eng_batch *b, size_t lo, size_t hi);
void eng_free_sub(struct eng_batch *b);

/* engine.c: move every metric of failed primary `slot` to the fallback
 * (the feeder's thread, under route written). */
void eng_fail_over(struct ga_engine *e, int slot, int why);
/* engine.c: count and log the late points out->late[from..] (the caller's
 * thread). */
void eng_account_late(struct ga_engine *e, const struct ga_result *out, size_t from);

/* engine_feed.c */
void eng_drain(struct ga_engine *e);          /* wait until the feeder is idle */
void eng_feeder_stop(struct ga_engine *e);
int eng_batches_init(struct ga_engine *e);
void eng_batches_free(struct ga_engine *e);

#endif
