/* part_worker.c — one engine worker: the durable batches of its
 * partitions → its engine → its storage writers (part_worker.h). */
#include "daemon/part_worker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/coarse.h"
#include "daemon/ingest/admit.h"
#include "daemon/ingest/late_notice.h"
#include "daemon/daemon.h"
#include "daemon/latency.h"
#include "proto/base/grow.h"
#include "proto/base/log.h"
#include "daemon/metrics.h"
#include "daemon/pipeline.h"
#include "proto/ga_err.h"
#include "proto/ga_partition.h"
#include "storage/journal.h"
#include "storage/js_log.h"
#include "storage/pg_load.h"
#include "storage/pg_members.h"
#include "storage/pg_util.h"
#include "storage/pg_writers.h"

#define LOAD_RETRY_MAX_MS 30000
/* The most points one feed takes when batches wait in the queue: 64 Ki
 * points, at most ~800 k rows for Gnocchi's `medium` (12 a point) spread
 * over the writers, well inside their queues (storage.queue_max_rows). */
#define ENGINE_WORKER_FEED_POINTS 65536
/* A window save writes the points appended since the last (a tail,
 * docs/STORAGE.md "Window snapshots") while the metric has fewer tails
 * stored than its limit and its stored points stay within its bound;
 * otherwise the whole window, which drops the tails.  The limits are
 * spread over the metrics (tails_ok): 9 to SAVE_TAILS_MAX tails, stored
 * points 1.5 to 1.94 times the window's, so that the metrics of a
 * partition, saved together and started together, do not all come to
 * their whole save in the same transaction. */
#define SAVE_TAILS_MAX 16
enum { DIRTY_TAIL = 1, DIRTY_WHOLE = 2 };
#define SAVED_NONE INT64_MIN

struct flush_req {
    uint64_t target;                  /* aggregate every record below, then commit */
    void (*cb)(void *ctx, int rc);
    void *ctx;
    struct flush_req *next;
};

/* What the worker keeps of one metric, by its local id.  The registry and
 * the engine number the worker's metrics densely from 0 (their arrays
 * hold this worker's metrics only); the global id, the one PostgreSQL and
 * the other workers know (cluster_id: k * 64 + partition when the
 * partitions are shared out), is gid[local], put on everything that goes
 * to the writers (to_global). */
struct part_worker_metric {
    /* the window as last saved (snapshot_parts): its newest point
     * (SAVED_NONE: nothing usable stored), the points of its snapshot and
     * of the tails written since, and those tails' count */
    int64_t saved_last;
    uint64_t pend;                    /* points taken since its partition's last window
                                         set (metrics.points travels with the set) */
    uint64_t loaded_lsn;              /* its window's own position in PostgreSQL at
                                         start: records below are in it (0: not known) */
    uint32_t g_mark;                  /* g_serial: the metric is in the gathered run */
    uint32_t saved_base, saved_tail;
    uint8_t saved_recs;
    uint8_t dirty;                    /* changed since its partition's last snapshot:
                                         DIRTY_TAIL (points after the newest saved),
                                         DIRTY_WHOLE (else) */
    uint8_t part;                     /* its partition (proto/ga_partition.h) */
};

struct ga_part_worker {
    struct ga_daemon *d;
    struct ga_pipeline *pl;
    struct journal *j;
    uint64_t lag_lsn;                 /* committed position last seen by on_commit (atomic) */
    struct ga_engine *engine;
    struct ga_metrics *metrics;
    struct pg_writers *writers;             /* one per group of partitions (storage.writers) */
    pthread_t thread;
    int joined;
    pthread_mutex_t mu;               /* guards: stop, stop_deadline_ns, st, cfg_next, flushes */
    int64_t stop_deadline_ns;         /* monotonic: a replay still running then is cut */
    int stop;
    struct engine_worker_status st;
    struct ga_config *cfg;            /* the worker's own copy */
    struct ga_config *cfg_next;       /* from part_worker_reload, taken at the next batch */
    struct flush_req *flushes;
    uint64_t live_lsn;                /* records at or above came through the pipeline */
    /* The points gathered for the next feed: several batches' when more
     * wait in the queue (gather, feed_gathered), up to ENGINE_WORKER_FEED_POINTS. */
    uint32_t *name_ids;               /* per batch: its names' metric ids */
    size_t name_cap;
    uint32_t *g_ids;
    int64_t *g_ts;
    double *g_val;
    size_t g_n, g_ids_cap, g_ts_cap, g_val_cap;
    struct pg_writer_metric_def *defs;      /* the metrics the gathered batches created */
    size_t g_ndefs, def_cap;
    uint64_t g_lsn, g_end;            /* the journal records gathered: [g_lsn, g_end) */
    uint32_t g_batches;
    uint32_t g_serial;                /* the gathered run's number (from 1) */
    struct ga_result res;
    struct part_worker_metric *m;              /* per local id (meta_cap of them) */
    uint32_t *gid;                    /* masked: per local id, its global id */
    size_t meta_cap;
    /* partition snapshots: one partition every window_snapshot_s / GA_PARTITIONS */
    int next_part;
    int64_t last_tick_ns;
    uint64_t loaded_part_lsn[GA_PARTITIONS];  /* from PostgreSQL at start */
    uint64_t loaded_max_lsn;          /* records ending at or below may be partly in windows */
    uint64_t processed_lsn;
    int broken;                       /* a batch was not stored: claim no more windows */
    int cut;                          /* a replay was cut short by the stop: feed nothing more
                                         (the window sets at processed_lsn still hold) */
    struct ga_ratelimit late_rl;
    uint64_t windows_lost;            /* failover windows lost so far */
    /* cluster mode (part_worker_start_cluster): the stream instead of the journal */
    struct js_log *jsl;
    uint64_t owned;                   /* the partitions this worker owns */
    int masked;                       /* owns some partitions only: global ids by partition
                                         (gid), the others' metrics not restored, its writers
                                         masked */
    int lane, nlanes;                 /* its engine queue (pipeline.h), of nlanes */
    void (*released)(void *ctx, int lane, uint64_t window_lsn);
    void *rctx;
    uint32_t next_k[GA_PARTITIONS];   /* the next id of partition p: next_k[p] * 64 + p */
    struct coarse coarse;             /* coarse archives' buckets held back (coarse.h) */
    int coarse_next;                  /* the partition whose held buckets go next */
    int64_t coarse_tick_ns;           /* when the last went */
};

/* Copy the engine's backend states into the status (worker thread). */
static void publish_backends(struct ga_part_worker *w)
{
    int nb = ga_engine_nbackends(w->engine);
    struct ga_engine_failover_stats fo;
    ga_engine_failover_stats(w->engine, &fo);
    pthread_mutex_lock(&w->mu);
    w->st.nbackends = nb < ENGINE_WORKER_MAX_BACKENDS ? nb : ENGINE_WORKER_MAX_BACKENDS;
    for (int i = 0; i < w->st.nbackends; i++) {
        const struct ga_backend *b = ga_engine_backend(w->engine, i);
        snprintf(w->st.backends[i].label, sizeof w->st.backends[i].label, "%s", b->label);
        w->st.backends[i].failed = ga_engine_backend_failed(w->engine, i);
        w->st.backends[i].metrics = ga_engine_backend_metrics(w->engine, i);
    }
    w->st.fallback_metrics = ga_engine_backend_metrics(w->engine, -1);
    w->st.have_fallback = fo.failovers > 0 || w->st.fallback_metrics > 0 || nb > 1 ||
                          strncmp(w->st.backends[0].label, "cpu", 3) != 0;
    w->st.failover = fo;
    pthread_mutex_unlock(&w->mu);
}

const char *engine_worker_state_name(enum engine_worker_state s)
{
    static const char *const n[] = { "loading", "replaying", "running", "stopped" };
    return s <= ENGINE_WORKER_STOPPED ? n[s] : "?";
}

static int stopping(struct ga_part_worker *w)
{
    pthread_mutex_lock(&w->mu);
    int s = w->stop;
    pthread_mutex_unlock(&w->mu);
    return s;
}

/* Stopping, and past the time part_worker_request_stop gave the engine: a replay
 * stops where it is (the stop's bound, docs/ARCHITECTURE.md "Stopping"). */
static int past_stop_deadline(struct ga_part_worker *w)
{
    pthread_mutex_lock(&w->mu);
    int past = w->stop && ga_now_mono_ns() >= w->stop_deadline_ns;
    pthread_mutex_unlock(&w->mu);
    return past;
}

static void set_state(struct ga_part_worker *w, enum engine_worker_state s)
{
    pthread_mutex_lock(&w->mu);
    w->st.state = s;
    pthread_mutex_unlock(&w->mu);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    return ga_grow(p, cap, need, elem, 1024);
}

/* Room for metric ids below n (new ones zeroed, saved_last SAVED_NONE). */
static int grow_meta(struct ga_part_worker *w, size_t n)
{
    if (n <= w->meta_cap)
        return 0;
    size_t old = w->meta_cap, cap = old ? old : 1024;
    while (cap < n)
        cap *= 2;
    if (w->masked) {
        uint32_t *g = realloc(w->gid, cap * sizeof *g);
        if (!g)
            return GA_ENOMEM;
        w->gid = g;
    }
    struct part_worker_metric *m = realloc(w->m, cap * sizeof *m);
    if (!m)
        return GA_ENOMEM;             /* w->m stays valid at old */
    memset(m + old, 0, (cap - old) * sizeof *m);
    for (size_t i = old; i < cap; i++)
        m[i].saved_last = SAVED_NONE;
    w->m = m;
    w->meta_cap = cap;
    return 0;
}

/* ---- storage ------------------------------------------------------------- */

/* The ack → commit lag (daemon/latency.h): when the committed position
 * advances, the oldest record newly covered (at the previous position) was
 * acked when the journal made it durable.  Writer threads; the first
 * position seen (the start) observes nothing, nor cluster mode, whose
 * positions are stream sequences. */
static void note_commit_lag(struct ga_part_worker *w, uint64_t committed_lsn)
{
    uint64_t prev = __atomic_load_n(&w->lag_lsn, __ATOMIC_RELAXED);
    do {
        if (committed_lsn <= prev)
            return;
    } while (!__atomic_compare_exchange_n(&w->lag_lsn, &prev, committed_lsn, 0, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    int64_t t = prev && w->j && !w->jsl ? journal_durable_at_ns(w->j, prev) : 0;
    if (t)
        histo_observe_ns(&latency_commit, ga_now_mono_ns() - t);
}

static void on_commit(void *ctx, uint64_t committed_lsn, uint64_t window_lsn)
{
    struct ga_part_worker *w = ctx;
    note_commit_lag(w, committed_lsn);
    /* Records below the committed window set of this worker's partitions
     * can be rebuilt from PostgreSQL: the group lets the journal go below
     * the lowest of its workers'. */
    if (window_lsn && w->released)
        w->released(w->rctx, w->lane, window_lsn);
}

/* Submit a unit, waiting while the writer's queue is full (backpressure
 * travels: engine queue → journal-only entries → journal cap → sockets). */
static int stop_submit(void *ctx)
{
    return stopping(ctx);
}

static int submit(struct ga_part_worker *w, const struct pg_writer_unit *u)
{
    return pg_writers_submit(w->writers, u, stop_submit, w);
}

/* The partition of a global metric id, for the writers' split (worker
 * thread): masked, the id says it; else global ids are the local ones. */
static int partition_of(void *ctx, uint32_t metric)
{
    struct ga_part_worker *w = ctx;
    if (w->masked)
        return (int)(metric % GA_PARTITIONS);
    return metric < w->meta_cap ? w->m[metric].part : 0;
}

/* The global id of a new metric of partition p (masked): the partition's
 * next slot, so that workers and daemons owning different partitions never
 * hand out the same id.  gather checked that there is one. */
static uint32_t cluster_id(struct ga_part_worker *w, int p)
{
    return w->next_k[p]++ * GA_PARTITIONS + (uint32_t)p;
}

/* A local id's global id. */
static uint32_t global_id(const struct ga_part_worker *w, uint32_t id)
{
    return w->masked ? w->gid[id] : id;
}

/* Give what a feed hands to the writers the global ids: the rows (the
 * first slot of each row or record), the late points and the new
 * metrics.  Nothing to do when they are the same. */
static void to_global(struct ga_part_worker *w, struct ga_result *r, struct pg_writer_metric_def *defs,
                      size_t ndefs)
{
    if (!w->masked)
        return;
    for (size_t i = 0; i < r->naggs; i += ga_agg_span(&r->aggs[i]))
        r->aggs[i].metric = w->gid[r->aggs[i].metric];
    for (size_t i = 0; i < r->nlate; i++)
        r->late[i].metric = w->gid[r->late[i].metric];
    for (size_t i = 0; i < ndefs; i++)
        defs[i].id = w->gid[defs[i].id];
}

/* ---- coarse archives' buckets (coarse.h) --------------------------------- */

static void not_stored(struct ga_part_worker *w, int rc, uint64_t lsn, size_t points);

static int64_t finest_ns(void *ctx, uint32_t id)
{
    struct ga_part_worker *w = ctx;
    const struct ga_policy *p = ga_metrics_get(w->metrics, id)->policy;
    return p && p->ndefs ? p->defs[0].granularity_ns : INT64_MAX;
}

static int part_of_local(void *ctx, uint32_t id)
{
    struct ga_part_worker *w = ctx;
    return w->m[id].part;
}

/* Hand what the holder put out to the writers, as a unit of LSN 0: its
 * values are whole, written again harmlessly by a replay (coarse.h).  On
 * failure it is dropped all the same: it was computed from records after
 * its partitions' window sets, which the journal keeps, and the caller
 * stops claiming window sets (not_stored), so the next start computes it
 * again. */
static int submit_coarse(struct ga_part_worker *w)
{
    struct coarse *c = &w->coarse;
    if (!c->nout)
        return 0;
    for (size_t i = 0; w->masked && i < c->nout; i += ga_agg_span(&c->out[i]))
        c->out[i].metric = w->gid[c->out[i].metric];
    struct pg_writer_unit u = { .aggs = c->out, .naggs = c->nout, .lsn = 0 };
    int rc = submit(w, &u);
    coarse_out_clear(c);
    return rc;
}

/* The owned partitions whose turn came since *last_ns: one every tick_ns,
 * in turn from *next (every one when tick_ns is 0); *next and *last_ns
 * move on when any did.  0: none yet.  Window sets and the coarse
 * buckets' hand-over each keep their own turn. */
static uint64_t turns_due(const struct ga_part_worker *w, int64_t tick_ns, int *next,
                          int64_t *last_ns)
{
    int64_t now = ga_now_mono_ns();
    int owned = __builtin_popcountll(w->owned);
    int64_t due = tick_ns > 0 ? (now - *last_ns) / tick_ns : owned;
    if (due <= 0 || !owned)
        return 0;
    due = due > owned ? owned : due;
    uint64_t mask = 0;
    for (int64_t i = 0; i < due; i++) {
        while (!(w->owned >> *next & 1))
            *next = (*next + 1) % GA_PARTITIONS;
        mask |= 1ULL << *next;
        *next = (*next + 1) % GA_PARTITIONS;
    }
    *last_ns = now;
    return mask;
}

/* The coarse counters of status; w->mu held. */
static void coarse_status(struct ga_part_worker *w)
{
    w->st.coarse_held = coarse_held(&w->coarse);
    w->st.coarse_released = w->coarse.released;
}

/* Hand the held buckets of the partitions in mask (0: all) to the writers.
 * On failure the worker claims no more window sets (not_stored). */
static int hand_coarse(struct ga_part_worker *w, uint64_t mask)
{
    int rc = coarse_drain(&w->coarse, mask);
    if (rc == 0)
        rc = submit_coarse(w);
    not_stored(w, rc, w->processed_lsn, 0);
    pthread_mutex_lock(&w->mu);
    coarse_status(w);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

/* The held buckets of the owned partitions whose turn came: one every
 * storage.coarse_delay_ms / (partitions owned), so that none waits longer
 * than coarse_delay_ms; all of them when holding is off. */
static void coarse_tick(struct ga_part_worker *w)
{
    if (w->broken || !w->writers)
        return;
    int owned = __builtin_popcountll(w->owned);
    int64_t delay = (int64_t)w->cfg->storage.coarse_delay_ms * 1000000;
    uint64_t mask = turns_due(w, owned ? delay / owned : delay, &w->coarse_next,
                              &w->coarse_tick_ns);
    if (mask && coarse_held(&w->coarse))
        hand_coarse(w, mask);
}

/* May metric id's next save be a tail, with recs tails stored and stored
 * points stored (after this one) for a window of n?  Its share of the
 * spread, j = 0..7, lowers its tails limit by j and raises its points
 * bound by j/16 of the window. */
static int tails_ok(uint32_t id, unsigned recs, uint64_t stored, size_t n)
{
    unsigned j = id % 8;
    return recs < SAVE_TAILS_MAX - j && stored * 16 <= (24 + (uint64_t)j) * n;
}

/* Snapshot the windows of the metrics of the partitions in mask (every
 * one when mask is 0) that changed since their partition's last snapshot,
 * with the points they took since then, as one window set at lsn
 * (pg_writer.h "LSNs").  The journal is released below the lowest
 * partition's set once committed. */
static void feed_now(struct ga_part_worker *w);

static void snapshot_parts(struct ga_part_worker *w, uint64_t mask)
{
    feed_now(w);                       /* the windows at processed_lsn */
    uint64_t lsn = w->processed_lsn;
    if (w->broken || !w->writers)
        return;                        /* the journal must keep what was not stored */
    /* the coarse buckets held for these partitions go first: the set claims
     * the records they were computed from (coarse.h) */
    if (hand_coarse(w, mask) < 0)
        return;
    int64_t t0 = ga_now_mono_ns();
    uint32_t n = ga_metrics_count(w->metrics);
    size_t k = 0;
    for (uint32_t id = 0; id < n; id++)
        k += w->m[id].dirty && (!mask || (mask >> w->m[id].part & 1));
    struct pg_writer_window *pw = calloc(k ? k : 1, sizeof *pw);
    struct ga_window *win = calloc(k ? k : 1, sizeof *win);
    struct pg_writer_count *cnt = calloc(k ? k : 1, sizeof *cnt);
    uint32_t *ids = calloc(k ? k : 1, sizeof *ids);
    size_t m = 0, nc = 0;
    int rc = pw && win && cnt && ids ? 0 : GA_ENOMEM;
    for (uint32_t id = 0; rc == 0 && id < n; id++) {
        if (!w->m[id].dirty || (mask && !(mask >> w->m[id].part & 1)))
            continue;
        if (w->m[id].pend)
            cnt[nc++] = (struct pg_writer_count){ global_id(w, id), w->m[id].pend };
        pw[m].metric = global_id(w, id);
        pw[m].window = &win[m];
        ids[m++] = id;
    }
    /* read in slices: one copy from the GPU for each, of bounded size */
    enum { SLICE = 16384 };
    size_t got = 0;
    for (; rc == 0 && got < m; got += rc == 0 ? (m - got < SLICE ? m - got : SLICE) : 0)
        rc = ga_engine_windows_get(w->engine, ids + got, m - got < SLICE ? m - got : SLICE,
                                   win + got);
    m = got;
    /* where only points after the newest saved came (and the truncation
     * dropped old ones), those points alone: a tail */
    struct ga_window *tv = rc == 0 ? calloc(m ? m : 1, sizeof *tv) : NULL;
    rc = rc == 0 && !tv ? GA_ENOMEM : rc;
    for (size_t j = 0; rc == 0 && j < m; j++) {
        uint32_t id = ids[j];
        const struct ga_window *x = &win[j];
        int64_t last = w->m[id].saved_last;
        size_t from = x->n;
        while (from > 0 && x->ts[from - 1] > last)
            from--;
        uint64_t stored = (uint64_t)w->m[id].saved_base + w->m[id].saved_tail + (x->n - from);
        if (w->m[id].dirty == DIRTY_TAIL && last != SAVED_NONE && x->n && !x->has_prev &&
            tails_ok(id, w->m[id].saved_recs, stored, x->n)) {
            tv[j] = (struct ga_window){ .n = x->n - from, .ts = x->ts + from, .value = x->value + from };
            pw[j] = (struct pg_writer_window){ .metric = pw[j].metric, .window = &tv[j], .tail = 1,
                                         .keep_from = x->ts[0] };
        }
    }
    if (rc == 0) {
        struct pg_writer_unit u = { .windows = pw, .nwindows = m, .counts = cnt, .ncounts = nc,
                              .lsn = lsn, .window_lsn = lsn, .window_parts = mask };
        rc = submit(w, &u);
    }
    if (rc == 0) {
        for (size_t j = 0; j < m; j++) {
            uint32_t id = ids[j];
            const struct ga_window *x = &win[j];
            w->m[id].saved_last = x->n ? x->ts[x->n - 1] : SAVED_NONE;
            if (pw[j].tail) {
                w->m[id].saved_tail += (uint32_t)tv[j].n;
                w->m[id].saved_recs++;
            } else {
                w->m[id].saved_base = (uint32_t)x->n;
                w->m[id].saved_tail = 0;
                w->m[id].saved_recs = 0;
            }
        }
        for (uint32_t id = 0; id < n; id++)
            if (!mask || (mask >> w->m[id].part & 1))
                w->m[id].dirty = 0, w->m[id].pend = 0;
        pthread_mutex_lock(&w->mu);
        w->st.snapshots++;
        coarse_status(w);
        w->st.snapshot_ns += (uint64_t)(ga_now_mono_ns() - t0);
        pthread_mutex_unlock(&w->mu);
    } else {
        ga_log(GA_LOG_ERROR, "window_snapshot_failed", "error=\"%s\"", ga_strerror(rc));
    }
    for (size_t i = 0; i < m; i++) {
        free(win[i].ts);
        free(win[i].value);
    }
    free(win);
    free(tv);
    free(pw);
    free(cnt);
    free(ids);
}

/* The time between two partitions' snapshots: window_snapshot_s /
 * GA_PARTITIONS, shorter while the journal is over half full.  The journal
 * lets go of a record only once every partition's windows were saved after
 * it, so it holds a round's worth of ingest: at a million points a second
 * and the default 300 s, more than journal.max_bytes.  Past half of it the
 * round speeds up in proportion, 50 times at the cap, and the journal
 * settles below the cap (at 1 M points/s, 4 GiB and 300 s, about 80 %
 * full with a round every ~110 s) instead of refusing batches. */
static int64_t snapshot_tick_ns(struct ga_part_worker *w)
{
    int owned = __builtin_popcountll(w->owned);
    int64_t tick = (int64_t)w->cfg->storage.window_snapshot_s * 1000000000 / (owned ? owned : 1);
    if (!w->j || w->cfg->journal.max_bytes <= 0)
        return tick;
    struct journal_stats js;
    journal_get_stats(w->j, &js);
    double f = (double)js.retained_bytes / (double)w->cfg->journal.max_bytes;
    if (f <= 0.5)
        return tick;
    double k = 2 * (1 - f) < 0.02 ? 0.02 : 2 * (1 - f);
    return (int64_t)((double)tick * k);
}

/* One owned partition's snapshot every snapshot_tick_ns, in turn, so that each
 * is snapshotted every window_snapshot_s (less under journal pressure) and
 * the cost is spread evenly (also while replaying: a restart gets further
 * each time).  The partitions whose turn came since the last call are
 * saved together: a tick can be shorter than the time between batches. */
static void snapshot_tick(struct ga_part_worker *w)
{
    coarse_tick(w);
    uint64_t mask = turns_due(w, snapshot_tick_ns(w), &w->next_part, &w->last_tick_ns);
    if (mask)
        snapshot_parts(w, mask);
}

/* ---- one batch ----------------------------------------------------------- */

static void log_late(struct ga_part_worker *w, const struct ga_result *r)
{
    uint64_t suppressed;
    if (!r->nlate || !ga_ratelimit_ok(&w->late_rl, &suppressed))
        return;
    const struct ga_late *l = &r->late[0];
    struct ga_metric_info *mi = ga_metrics_get(w->metrics, l->metric);
    ga_log(GA_LOG_WARN, "late_points", "count=%zu first_metric=\"%s\" first_ts_ns=%lld "
           "reason=%s suppressed_lines=%llu", r->nlate, mi ? mi->name : "?", (long long)l->ts,
           ga_late_reason_name(l->reason), (unsigned long long)suppressed);
}

/* Tell the door (late_notice.h) the window floor of the metrics whose
 * points were late (reason window) and not explained by the floor it has:
 * a window read each, at most NOTICE_POSTS a feed (a few metrics that a
 * clock sends behind their windows are the case; many late at once cost
 * no more than this). */
#define NOTICE_POSTS 16

static void post_late(struct ga_part_worker *w, const struct ga_result *r)
{
    struct ga_late_notice *n = w->d->late_notice;
    int posts = 0;
    uint32_t last = UINT32_MAX;
    for (size_t i = 0; n && i < r->nlate && posts < NOTICE_POSTS; i++) {
        const struct ga_late *l = &r->late[i];
        if (l->reason != GA_LATE_WINDOW || l->metric == last)
            continue;
        last = l->metric;
        struct ga_metric_info *mi = ga_metrics_get(w->metrics, l->metric);
        int64_t floor;
        if (!mi || (ga_late_notice_floor(n, mi->name, strlen(mi->name), &floor) && l->ts < floor))
            continue;
        if (ga_engine_window_floor(w->engine, l->metric, &floor) == 0 && l->ts < floor) {
            ga_late_notice_post(n, mi->name, strlen(mi->name), floor);
            posts++;
        }
    }
}

/* Take in one batch covering journal records [lsn, end): its names
 * interned (new metrics registered with the engine), its points added to
 * the gathered ones; with mine set (a record read back from the journal
 * by one of several workers) only the names of the owned partitions.  A record some partitions' windows already hold
 * (replaying below loaded_max_lsn) brings only the other partitions'
 * points, and of those partitions only the metrics whose own window is
 * not past it (a window set written in part before a stop): the others'
 * are in their snapshots (and stored). */
#define NOT_MINE UINT32_MAX

static int gather(struct ga_part_worker *w, const struct ing_batch *b, uint64_t lsn, uint64_t end,
                  int mine)
{
    size_t need = w->g_n + b->n;
    int rc = grow((void **)&w->name_ids, &w->name_cap, b->nnames, sizeof *w->name_ids);
    rc = rc ? rc : grow((void **)&w->defs, &w->def_cap, w->g_ndefs + b->nnames, sizeof *w->defs);
    rc = rc ? rc : grow((void **)&w->g_ids, &w->g_ids_cap, need, sizeof *w->g_ids);
    rc = rc ? rc : grow((void **)&w->g_ts, &w->g_ts_cap, need, sizeof *w->g_ts);
    rc = rc ? rc : grow((void **)&w->g_val, &w->g_val_cap, need, sizeof *w->g_val);
    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < b->nnames; i++) {
        int created;
        uint32_t id;
        int part = w->masked || mine ? ga_partition_of(b->names[i], b->name_len[i]) : 0;
        if (mine && !(w->owned >> part & 1)) {
            w->name_ids[i] = NOT_MINE;
            continue;
        }
        /* a partition out of global ids (2^26 metrics) takes no new one */
        if (w->masked && w->next_k[part] >= UINT32_MAX / GA_PARTITIONS &&
            ga_metrics_find(w->metrics, b->names[i], b->name_len[i], &id) < 0)
            return GA_EINVAL;
        rc = ga_metrics_intern(w->metrics, b->names[i], b->name_len[i], w->cfg, &id, &created);
        if (rc < 0)
            return rc;
        if (created) {
            const struct ga_policy *p = ga_metrics_get(w->metrics, id)->policy;
            if (grow_meta(w, (size_t)id + 1) < 0)
                return GA_ENOMEM;
            if (w->masked)
                w->gid[id] = cluster_id(w, part);
            if ((rc = ga_engine_metric_add(w->engine, id, p)) < 0)
                return rc;
            w->defs[w->g_ndefs++] =
                (struct pg_writer_metric_def){ id, ga_metrics_get(w->metrics, id)->name, p };
            w->m[id].dirty = 0;
            w->m[id].pend = 0;
            w->m[id].saved_last = SAVED_NONE;
            w->m[id].part = (uint8_t)ga_partition_of(b->names[i], b->name_len[i]);
        }
        w->name_ids[i] = id;
    }
    /* Each metric's points of a feed come from one batch, so that a feed
     * of several batches gives what feeding them one after another gives
     * (docs/SEMANTICS.md is per metric, per batch): a batch with a metric
     * the gathered run has already goes into the next feed. */
    int clash = 0;
    for (uint32_t i = 0; i < b->nnames && w->g_batches; i++)
        clash |= w->name_ids[i] != NOT_MINE && w->m[w->name_ids[i]].g_mark == w->g_serial;
    if (clash)
        feed_now(w);
    for (uint32_t i = 0; i < b->nnames; i++)
        if (w->name_ids[i] != NOT_MINE)
            w->m[w->name_ids[i]].g_mark = w->g_serial;
    int partly = end <= w->loaded_max_lsn;
    size_t n = w->g_n;
    for (size_t k = 0; k < b->n; k++) {
        uint32_t id = w->name_ids[b->name_idx[k]];
        if (id == NOT_MINE)
            continue;
        if (partly && (w->loaded_part_lsn[w->m[id].part] >= end || w->m[id].loaded_lsn >= end))
            continue;
        w->g_ids[n] = id;
        w->g_ts[n] = b->ts[k];
        w->g_val[n++] = b->value[k];
    }
    w->g_n = n;
    if (!w->g_batches++)
        w->g_lsn = lsn;
    w->g_end = end;
    return 0;
}

/* Aggregate the gathered points in one feed and hand the rows, late
 * points and new metrics to the writers as one unit at the last record's
 * end.  One feed for many batches: a feed's fixed costs (its waits for
 * counts, and the GPU's window pool, rebuilt each feed: docs/GPU.md) are
 * paid once for all of them. */
static int feed_gathered(struct ga_part_worker *w)
{
    if (!w->g_batches)
        return 0;
    struct ga_points pts = { .n = w->g_n, .metric = w->g_ids, .ts = w->g_ts, .value = w->g_val };
    uint64_t end = w->g_end;
    uint32_t nb = w->g_batches;
    size_t ndefs = w->g_ndefs;
    w->g_n = w->g_ndefs = 0;
    w->g_batches = 0;
    if (++w->g_serial == 0)
        w->g_serial = 1;              /* a stale mark equal to it costs one early feed */
    int64_t t0 = ga_now_mono_ns();
    ga_result_reset(&w->res);
    w->res.want_wide = 1;         /* storage takes wide records: fewer bytes home from a GPU */
    int rc = ga_engine_feed(w->engine, &pts, &w->res);
    int64_t t1 = ga_now_mono_ns();
    if (rc < 0)
        return rc;
    struct ga_engine_failover_stats fo;
    ga_engine_failover_stats(w->engine, &fo);
    publish_backends(w);
    if (fo.windows_lost > w->windows_lost) {
        /* A GPU died with windows we could not read back: what this batch
         * computed for those metrics is wrong.  Store nothing more; the
         * journal keeps everything from here and a restart rebuilds the
         * windows from PostgreSQL and the journal. */
        w->windows_lost = fo.windows_lost;
        pthread_mutex_lock(&w->mu);
        w->st.fatal = 1;
        snprintf(w->st.fatal_reason, sizeof w->st.fatal_reason, "GPU failed and %llu metric "
                 "windows could not be read back", (unsigned long long)fo.windows_lost);
        pthread_mutex_unlock(&w->mu);
        return GA_ECUDA;
    }
    /* counters travel with their partition's next window set; a point at
     * or before the newest one saved may have changed the window in the
     * middle (or was too old): the next save is of the whole window */
    for (size_t k = 0; k < pts.n; k++) {
        uint32_t id = pts.metric[k];
        w->m[id].pend++;
        if (pts.ts[k] <= w->m[id].saved_last)
            w->m[id].dirty = DIRTY_WHOLE;
        else if (!w->m[id].dirty)
            w->m[id].dirty = DIRTY_TAIL;
    }
    log_late(w, &w->res);
    post_late(w, &w->res);
    size_t rows = w->res.nrows;
    if (w->cfg->storage.coarse_delay_ms > 0) {
        struct coarse_src src = { finest_ns, part_of_local, w };
        if ((rc = coarse_take(&w->coarse, &w->res, &src)) < 0)
            return rc;                 /* not stored: the journal keeps the batches */
    }
    to_global(w, &w->res, w->defs, ndefs);
    struct pg_writer_unit u = {
        .aggs = w->res.aggs, .naggs = w->res.naggs, .late = w->res.late, .nlate = w->res.nlate,
        .defs = w->defs, .ndefs = ndefs, .lsn = end,
    };
    if ((rc = submit(w, &u)) < 0 || (rc = submit_coarse(w)) < 0)
        return rc;
    int64_t t2 = ga_now_mono_ns();
    struct ga_engine_gpu_stats gs;
    ga_engine_gpu_stats(w->engine, &gs);
    w->processed_lsn = end;
    pthread_mutex_lock(&w->mu);
    w->st.processed_lsn = end;
    w->st.batches += nb;
    w->st.feeds++;
    w->st.feed_ns += (uint64_t)(t1 - t0);
    w->st.submit_ns += (uint64_t)(t2 - t1);
    w->st.gpu_rebuild_ns += (uint64_t)(gs.rebuild_s * 1e9);
    if (gs.have_gpu)
        w->st.window_points = gs.pool_points;
    w->st.points += pts.n;
    w->st.aggs += rows;
    coarse_status(w);
    w->st.late += w->res.nlate;
    for (size_t i = 0; i < w->res.nlate; i++) {
        uint32_t r = w->res.late[i].reason;
        w->st.late_window += r == GA_LATE_WINDOW;
        w->st.late_before_epoch += r == GA_LATE_BEFORE_EPOCH;
        w->st.late_nonfinite += r == GA_LATE_NONFINITE;
        w->st.late_out_of_range += r == GA_LATE_OUT_OF_RANGE;
    }
    w->st.metrics = ga_metrics_named(w->metrics);
    w->st.metric_slots = ga_metrics_count(w->metrics);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

/* A batch failing in the engine is a bug or memory exhaustion: it stays in
 * the journal (not released), is logged, and the worker goes on. */
static void not_stored(struct ga_part_worker *w, int rc, uint64_t lsn, size_t points)
{
    if (rc >= 0 || w->broken)
        return;
    /* From here on no window set is claimed, so the journal keeps these
     * batches and the next start replays them. */
    w->broken = 1;
    ga_log(rc == GA_ESHUTDOWN ? GA_LOG_WARN : GA_LOG_ERROR, "engine_batch_not_stored",
           "lsn=%llu points=%zu error=\"%s\" action=\"journal kept from here; replayed at "
           "next start\"", (unsigned long long)lsn, points, ga_strerror(rc));
}

/* Feed what was gathered now: before a window set is taken, before the
 * position is read, when the queue has nothing more ready. */
static void feed_now(struct ga_part_worker *w)
{
    uint64_t lsn = w->g_lsn;
    size_t n = w->g_n;
    not_stored(w, feed_gathered(w), lsn, n);
}

/* Gather one batch; feed once ENGINE_WORKER_FEED_POINTS are gathered. */
static void process_logged(struct ga_part_worker *w, const struct ing_batch *b, uint64_t lsn,
                           uint64_t end, int mine)
{
    int rc = gather(w, b, lsn, end, mine);
    if (rc < 0) {
        feed_now(w);                  /* the batches gathered before it */
        not_stored(w, rc, lsn, b->n);
        return;
    }
    if (w->g_n >= ENGINE_WORKER_FEED_POINTS)
        feed_now(w);
}

struct replay_ctx {
    struct ga_part_worker *w;
    uint64_t until;                   /* stop at records at or above */
    uint64_t set_lsn;                 /* where the last full window set was taken */
    int full_sets;                    /* a full window set every segment (start-up replay) */
    int cut;                          /* stopped before the end: the daemon is stopping */
};

static int replay_one(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
    struct replay_ctx *rc = ctx;
    if (lsn >= rc->until)
        return GA_ECANCELED;          /* caught up with the pipeline: stop */
    if (past_stop_deadline(rc->w)) {
        rc->cut = 1;                  /* what is fed so far stands; the rest is replayed */
        return GA_ECANCELED;
    }
    struct ing_msg m;
    char err[256];
    int t = ing_decode(payload, len, NULL, &m, err, sizeof err);
    if (t != ING_POINTS) {
        ga_log(GA_LOG_ERROR, "journal_record_undecodable", "lsn=%llu error=\"%s\"",
               (unsigned long long)lsn, t < 0 ? err : "not a points message");
        ing_msg_free(&m);
        return 0;
    }
    process_logged(rc->w, &m.u.points, lsn, lsn + JOURNAL_HDR_BYTES + len, rc->w->nlanes > 1);
    ing_msg_free(&m);
    /* Progress is saved while replaying at start-up, so that a daemon
     * killed before the end starts further on next time (a crash loop
     * shortens): every journal segment replayed, every partition's windows
     * (the journal position replay starts from is the lowest partition's);
     * between, one partition at a time as when running.  Batches read back
     * while running (the engine fell behind the ingest) are paced as live
     * ones: a full set there would cost the engine the time it is short of. */
    uint64_t seg = (uint64_t)rc->w->cfg->journal.segment_bytes;
    if (rc->full_sets && lsn - rc->set_lsn >= seg) {
        snapshot_parts(rc->w, 0);
        rc->set_lsn = lsn;
    } else {
        snapshot_tick(rc->w);
    }
    pthread_mutex_lock(&rc->w->mu);
    rc->w->st.replayed_records++;
    pthread_mutex_unlock(&rc->w->mu);
    return 0;
}

/* Feed the journal's records [from, until) (those of this worker's
 * partitions).  Returns 1 when the daemon's stop cut it short: every
 * record below processed_lsn was fed, none after. */
static int replay(struct ga_part_worker *w, uint64_t from, uint64_t until, int full_sets)
{
    struct journal_stats js;
    journal_get_stats(w->j, &js);
    if (from < js.first_lsn) {
        if (from != 0)
            ga_log(GA_LOG_ERROR, "journal_behind_checkpoint", "window_lsn=%llu first_lsn=%llu "
                   "msg=\"the journal starts after the database checkpoint: was journal.dir "
                   "replaced? records in between cannot be replayed\"", (unsigned long long)from,
                   (unsigned long long)js.first_lsn);
        from = js.first_lsn;
    }
    if (from >= until)
        return 0;
    struct replay_ctx rc = { w, until, from, full_sets, 0 };
    /* start-up replay is an event; reading back while running is counted
     * (pipeline.journal_only_batches) and logged at debug level */
    enum ga_log_level lvl = full_sets ? GA_LOG_INFO : GA_LOG_DEBUG;
    int64_t t0 = ga_now_mono_ns();
    ga_log(lvl, "journal_replay_start", "from=%llu until=%llu bytes=%llu",
           (unsigned long long)from, (unsigned long long)until,
           (unsigned long long)(until - from));
    int r = journal_replay(w->j, from, replay_one, &rc);
    feed_now(w);
    if (r < 0 && r != GA_ECANCELED)
        ga_log(GA_LOG_ERROR, "journal_replay_failed", "from=%llu error=\"%s\"",
               (unsigned long long)from, ga_strerror(r));
    else
        ga_log(lvl, "journal_replayed", "from=%llu until=%llu ms=%.0f",
               (unsigned long long)from, (unsigned long long)until,
               (double)(ga_now_mono_ns() - t0) / 1e6);
    if (rc.cut)
        ga_log(GA_LOG_INFO, "journal_replay_cut", "worker=%d at_lsn=%llu until=%llu msg=\"stopping: "
               "the rest is replayed at the next start\"", w->lane,
               (unsigned long long)w->processed_lsn, (unsigned long long)until);
    return rc.cut;
}

/* ---- loading ------------------------------------------------------------- */


struct saved_window {
    uint32_t metric;
    struct ga_window w;
    struct pg_load_stored stored;
    uint64_t lsn;
};

struct id_pair {
    uint32_t global, local;
    uint8_t part;
};

static int id_pair_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct id_pair *)a)->global, y = ((const struct id_pair *)b)->global;
    return x < y ? -1 : x > y;
}

struct load_ctx {
    struct saved_window *v;
    size_t n, cap;
};

static int keep_window(void *ctx, uint32_t metric, uint64_t lsn, const struct ga_window *win,
                       const struct pg_load_stored *stored)
{
    struct load_ctx *lc = ctx;
    if (grow((void **)&lc->v, &lc->cap, lc->n + 1, sizeof *lc->v) < 0)
        return GA_ENOMEM;
    struct saved_window *s = &lc->v[lc->n];
    s->metric = metric;
    s->stored = *stored;
    s->lsn = lsn;
    s->w = *win;
    s->w.ts = malloc((win->n ? win->n : 1) * sizeof *s->w.ts);
    s->w.value = malloc((win->n ? win->n : 1) * sizeof *s->w.value);
    if (!s->w.ts || !s->w.value) {
        free(s->w.ts);
        free(s->w.value);
        return GA_ENOMEM;
    }
    memcpy(s->w.ts, win->ts, win->n * sizeof *s->w.ts);
    memcpy(s->w.value, win->value, win->n * sizeof *s->w.value);
    lc->n++;
    return 0;
}

/* Load PostgreSQL's state into the registry and the engine, retrying with
 * backoff until it works or the daemon stops.  0 or GA_ESHUTDOWN. */
static int load_state(struct ga_part_worker *w, struct pg_load_state *s)
{
    int backoff = w->cfg->storage.retry_initial_ms;
    for (;;) {
        struct load_ctx lc = { 0 };
        char err[256];
        /* one of several workers: its writers hold the instance lock and
         * migrated the schema */
        int follower = w->masked && !w->jsl;
        int rc = pg_load_load_parts(w->cfg->storage.conninfo, w->masked ? w->owned : 0, follower, s,
                            keep_window, &lc, err, sizeof err);
        if (w->masked)
            memset(w->next_k, 0, sizeof w->next_k);
        /* the restored metrics by global id, for their windows: (global,
         * local) pairs sorted by global */
        struct id_pair *ix = calloc(s->nmetrics ? s->nmetrics : 1, sizeof *ix);
        size_t nix = 0;
        rc = rc == 0 && !ix ? GA_ENOMEM : rc;
        for (size_t i = 0; rc == 0 && i < s->nmetrics; i++) {
            const struct pg_load_metric *m = &s->metrics[i];
            uint32_t id = m->id;
            if (w->masked) {
                /* every stored id counts for the placement of new ones; only
                 * the owned partitions' metrics are restored, numbered
                 * densely */
                uint32_t r = m->id % GA_PARTITIONS, k = m->id / GA_PARTITIONS + 1;
                if (k > w->next_k[r])
                    w->next_k[r] = k;
                if (!(w->owned >> ga_partition_of(m->name, strlen(m->name)) & 1))
                    continue;
                id = ga_metrics_count(w->metrics);
                if (grow_meta(w, (size_t)id + 1) < 0) {
                    rc = GA_ENOMEM;
                    break;
                }
                w->gid[id] = m->id;
            }
            rc = ga_metrics_restore(w->metrics, m->name, strlen(m->name), id, m->policy);
            if (rc == 0 && w->d->admit)
                rc = ga_admit_add(w->d->admit, m->name, strlen(m->name));
            if (rc == 0)
                rc = ga_engine_metric_add(w->engine, id, ga_metrics_get(w->metrics, id)->policy);
            if (rc == 0)
                ix[nix++] = (struct id_pair){ m->id, id, (uint8_t)ga_partition_of(m->name,
                                                                                  strlen(m->name)) };
            if (rc < 0)
                snprintf(err, sizeof err, "restoring metric %s: %s", m->name, ga_strerror(rc));
        }
        if (rc == 0)
            qsort(ix, nix, sizeof *ix, id_pair_cmp);
        uint32_t nm = ga_metrics_count(w->metrics);
        if (rc == 0 && grow_meta(w, nm ? nm : 1) < 0)
            rc = GA_ENOMEM;
        if (rc == 0) {
            for (uint32_t id = 0; id < nm; id++)
                w->m[id] = (struct part_worker_metric){ .saved_last = SAVED_NONE };
            for (size_t i = 0; i < nix; i++)
                w->m[ix[i].local].part = ix[i].part;
            w->loaded_max_lsn = 0;
            for (int p = 0; p < GA_PARTITIONS; p++) {
                w->loaded_part_lsn[p] = s->part_window_lsn[p];
                if (s->part_window_lsn[p] > w->loaded_max_lsn)
                    w->loaded_max_lsn = s->part_window_lsn[p];
            }
        }
        for (size_t i = 0; rc == 0 && i < lc.n; i++) {
            struct id_pair key = { .global = lc.v[i].metric };
            const struct id_pair *e = bsearch(&key, ix, nix, sizeof *ix, id_pair_cmp);
            if (!e && w->masked)
                continue;              /* another worker's partition */
            uint32_t id = e ? e->local : 0;
            struct ga_metric_info *mi = e ? ga_metrics_get(w->metrics, id) : NULL;
            rc = mi ? ga_engine_window_put(w->engine, id, mi->policy, &lc.v[i].w) : GA_ECORRUPT;
            if (rc == 0) {
                /* what is stored, snapshot and tails: the next save adds
                 * a tail to it while tails_ok allows */
                const struct ga_window *x = &lc.v[i].w;
                const struct pg_load_stored *st = &lc.v[i].stored;
                w->m[id].loaded_lsn = lc.v[i].lsn;
                if (lc.v[i].lsn > w->loaded_max_lsn)
                    w->loaded_max_lsn = lc.v[i].lsn;
                w->m[id].saved_last = x->n ? x->ts[x->n - 1] : SAVED_NONE;
                w->m[id].saved_base = (uint32_t)(st->snapshot_points < UINT32_MAX ? st->snapshot_points
                                                                                : UINT32_MAX);
                w->m[id].saved_tail = (uint32_t)(st->tail_points < UINT32_MAX ? st->tail_points
                                                                            : UINT32_MAX);
                w->m[id].saved_recs = (uint8_t)(st->tails < SAVE_TAILS_MAX ? st->tails : SAVE_TAILS_MAX);
            }
            if (rc < 0)
                snprintf(err, sizeof err, "restoring the window of metric %u: %s", lc.v[i].metric,
                         ga_strerror(rc));
        }
        for (size_t i = 0; i < lc.n; i++) {
            free(lc.v[i].w.ts);
            free(lc.v[i].w.value);
        }
        free(lc.v);
        free(ix);
        if (rc == 0) {
            ga_log(GA_LOG_INFO, "storage_loaded", "worker=%d metrics=%u windows=%zu "
                   "committed_lsn=%llu window_lsn=%llu", w->lane, ga_metrics_named(w->metrics), lc.n,
                   (unsigned long long)s->committed_lsn, (unsigned long long)s->window_lsn);
            pthread_mutex_lock(&w->mu);
            w->st.load_error[0] = '\0';
            w->st.metrics = ga_metrics_named(w->metrics);
    w->st.metric_slots = ga_metrics_count(w->metrics);
            pthread_mutex_unlock(&w->mu);
            return 0;
        }
        pg_load_free(s);
        if (rc == GA_EPROTO || rc == GA_ECORRUPT) {
            /* Not going to get better by retrying fast; keep trying slowly
             * so an operator's fix is picked up. */
            backoff = LOAD_RETRY_MAX_MS;
        }
        /* A partial restore must not linger: start over from empty. */
        ga_metrics_close(w->metrics);
        ga_metrics_open(&w->metrics);
        for (uint32_t id = 0; id < nm; id++)
            ga_engine_metric_drop(w->engine, id);
        ga_log(GA_LOG_WARN, "storage_load_retry", "retry_in_ms=%d error=\"%s\"", backoff, err);
        pthread_mutex_lock(&w->mu);
        snprintf(w->st.load_error, sizeof w->st.load_error, "%s", err);
        pthread_mutex_unlock(&w->mu);
        for (int waited = 0; waited < backoff; waited += 50) {
            if (stopping(w))
                return GA_ESHUTDOWN;
            struct timespec ts = { 0, 50 * 1000000 };
            nanosleep(&ts, NULL);
        }
        backoff = backoff * 2 > w->cfg->storage.retry_max_ms ? w->cfg->storage.retry_max_ms : backoff * 2;
    }
}

static int start_writer(struct ga_part_worker *w, const struct pg_load_state *s)
{
    const struct ga_config *c = w->cfg;
    struct journal_stats js = { 0 };  /* a fresh journal is numbered from the clock: the lag
                                     counts from its first LSN, not from 0 */
    if (w->j)
        journal_get_stats(w->j, &js);
    /* the writers are shared out over the workers: each its own connections */
    int nw = c->storage.writers > 0 ? c->storage.writers : 1;
    nw = nw / w->nlanes + (w->lane < nw % w->nlanes);
    nw = nw > 0 ? nw : 1;
    struct pg_writers_opts so = { .nwriters = nw, .partition_of = partition_of, .pctx = w,
                            .parts = w->masked ? w->owned : 0,
                            .instance_lock = !w->jsl && w->lane == 0 };
    /* A worker of several resumes from its own partitions' positions,
     * which its writers read when they connect (the checkpoint row's are
     * the daemon's lowest and highest). */
    int own = w->masked;
    struct pg_writer_opts o = {
        .conninfo = c->storage.conninfo, .flush_rows = c->storage.flush_rows,
        .queue_max_rows = (size_t)c->storage.queue_max_rows / (size_t)w->nlanes,
        .open_max = (size_t)c->storage.open_buckets_max /
                    (size_t)(c->storage.writers > 0 ? c->storage.writers : 1),
        .window_txn_bytes = (size_t)c->storage.window_txn_bytes,
        .flush_interval_ms = c->storage.flush_interval_ms,
        .retry_initial_ms = c->storage.retry_initial_ms, .retry_max_ms = c->storage.retry_max_ms,
        .committed_lsn = own ? 0 : s->committed_lsn, .window_lsn = own ? 0 : s->window_lsn,
        .part_window_lsn = s->part_window_lsn, .lsn_floor = js.first_lsn,
        .on_commit = on_commit, .ctx = w, .fence = w->jsl != NULL,
        /* the partitions ahead and retention: the first worker's first writer */
        .maintenance_interval_ms = w->lane > 0 ? -1 : 0,
    };
    so.w = o;
    int rc = pg_writers_start(&w->writers, &so);
    if (rc == 0) {
        pthread_mutex_lock(&w->mu);
        w->st.have_writer = 1;
        pthread_mutex_unlock(&w->mu);
    }
    return rc;
}

/* ---- flush requests --------------------------------------------------------- */

static void flush_done(void *ctx, int rc, uint64_t committed_lsn)
{
    struct flush_req *f = ctx;
    f->cb(f->ctx, rc);
    free(f);
}

/* Requests whose target is aggregated go to the writer; it answers once
 * it has committed. */
static void serve_flushes(struct ga_part_worker *w)
{
    /* A flush commits everything aggregated so far, point counters included:
     * those travel with window sets, so the changed windows are saved too. */
    int ready = 0;
    pthread_mutex_lock(&w->mu);
    for (struct flush_req *f = w->flushes; f && !ready; f = f->next)
        ready = w->processed_lsn >= f->target && w->writers;
    pthread_mutex_unlock(&w->mu);
    if (ready)
        snapshot_parts(w, 0);
    pthread_mutex_lock(&w->mu);
    struct flush_req **pp = &w->flushes;
    while (*pp) {
        struct flush_req *f = *pp;
        if (w->processed_lsn < f->target || !w->writers) {
            pp = &f->next;
            continue;
        }
        *pp = f->next;
        if (pg_writers_flush(w->writers, flush_done, f) < 0) {
            f->cb(f->ctx, GA_ESHUTDOWN);
            free(f);
        }
    }
    pthread_mutex_unlock(&w->mu);
}

int part_worker_flush(struct ga_part_worker *w, uint64_t target, void (*cb)(void *ctx, int rc), void *ctx)
{
    struct flush_req *f = calloc(1, sizeof *f);
    if (!f)
        return GA_ENOMEM;
    f->target = target;
    f->cb = cb;
    f->ctx = ctx;
    pthread_mutex_lock(&w->mu);
    f->next = w->flushes;
    w->flushes = f;
    pthread_mutex_unlock(&w->mu);
    return 0;
}

/* ---- the thread -------------------------------------------------------------- */

static void take_reload(struct ga_part_worker *w)
{
    pthread_mutex_lock(&w->mu);
    struct ga_config *next = w->cfg_next;
    w->cfg_next = NULL;
    pthread_mutex_unlock(&w->mu);
    if (next) {
        free(w->cfg);
        w->cfg = next;
        if (w->writers)
            pg_writers_set_tuning(w->writers, next->storage.flush_rows, next->storage.flush_interval_ms);
    }
}

void part_worker_reload(struct ga_part_worker *w, const struct ga_config *cfg)
{
    struct ga_config *c = malloc(sizeof *c);
    if (!c)
        return;
    *c = *cfg;
    pthread_mutex_lock(&w->mu);
    free(w->cfg_next);
    w->cfg_next = c;
    pthread_mutex_unlock(&w->mu);
}

/* Records with nothing for this worker: its position moves past them, with
 * the run gathered if there is one (its unit then covers them too). */
static void skip_to(struct ga_part_worker *w, uint64_t end)
{
    if (w->g_batches) {
        w->g_end = end;
        return;
    }
    if (w->broken || end <= w->processed_lsn)
        return;
    w->processed_lsn = end;
    pthread_mutex_lock(&w->mu);
    w->st.processed_lsn = end;
    pthread_mutex_unlock(&w->mu);
}

static void consume(struct ga_part_worker *w, const struct pipeline_entry *e)
{
    if (e->batch) {
        process_logged(w, e->batch, e->lsn, e->end, 0);
        ing_batch_free(e->batch);
        free(e->batch);
    } else if (e->skip) {
        skip_to(w, e->end);
    } else if (replay(w, e->lsn, e->end, 0)) {  /* dropped from memory: read it back */
        w->cut = 1;                    /* stopping: nothing after it is fed */
    } else {
        w->processed_lsn = e->end;
    }
}

/* ---- cluster mode --------------------------------------------------------- */

/* Wait until no other session holds the lock of a partition this worker
 * owns (the previous owner let go), polling every 50 ms, before the writers
 * take them: a writer never holds some of its locks while it waits for the
 * rest, which would keep them from their owner and could not be
 * interrupted.  0 or GA_ESHUTDOWN. */
static int wait_parts_free(struct ga_part_worker *w)
{
    int64_t t0 = ga_now_mono_ns(), last_log = t0;
    PGconn *c = NULL;
    int rc = 0;
    for (;;) {
        if (stopping(w)) {
            rc = GA_ESHUTDOWN;
            break;
        }
        char err[256] = "";
        uint64_t held = ~0ULL;
        if (!c)
            c = pg_util_connect(w->cfg->storage.conninfo, "gpuaggd-handover");
        if (c && PQstatus(c) != CONNECTION_OK)
            pg_util_errcopy(err, sizeof err, PQerrorMessage(c));
        else if (c && pg_members_parts_held(c, w->owned, &held, err, sizeof err) == 0 && !held)
            break;
        if (c && PQstatus(c) != CONNECTION_OK) {
            PQfinish(c);
            c = NULL;
        }
        if (ga_now_mono_ns() - last_log > 5LL * 1000000000) {
            last_log = ga_now_mono_ns();
            ga_log(GA_LOG_INFO, "cluster_waiting_for_partitions", "parts=0x%016llx "
                   "held=0x%016llx waited_s=%.1f error=\"%s\"", (unsigned long long)w->owned,
                   (unsigned long long)(held & w->owned), (double)(last_log - t0) / 1e9, err);
        }
        struct timespec ts = { 0, (c ? 50 : 500) * 1000000L };
        nanosleep(&ts, NULL);
    }
    if (c)
        PQfinish(c);
    return rc;
}

/* Wait until every writer is connected, i.e. holds its partitions' locks
 * (and read their positions after taking them).  0 or GA_ESHUTDOWN. */
static int wait_locked(struct ga_part_worker *w)
{
    int64_t t0 = ga_now_mono_ns(), last_log = t0;
    for (;;) {
        struct pg_writer_status st;
        pg_writers_get_status(w->writers, &st);
        if (st.state == PG_CONN_CONNECTED && st.connects > 0)
            return 0;
        if (stopping(w))
            return GA_ESHUTDOWN;
        if (ga_now_mono_ns() - last_log > 5LL * 1000000000) {
            last_log = ga_now_mono_ns();
            ga_log(GA_LOG_INFO, "cluster_waiting_for_locks", "parts=0x%016llx waited_s=%.1f "
                   "last_error=\"%s\"", (unsigned long long)w->owned,
                   (double)(last_log - t0) / 1e9, st.last_error);
        }
        struct timespec ts = { 0, 20 * 1000000 };
        nanosleep(&ts, NULL);
    }
}

/* One stream message: aggregate it when its partition is ours, else only
 * move past it. */
static void consume_message(struct ga_part_worker *w, uint64_t seq, int part, const void *data,
                            size_t len)
{
    if (part >= 0 && (w->owned >> part & 1)) {
        struct ing_msg m;
        char err[256];
        int t = ing_decode(data, len, NULL, &m, err, sizeof err);
        if (t == ING_POINTS) {
            process_logged(w, &m.u.points, seq, seq + 1, 0);
            feed_now(w);               /* the position is per message here */
            ing_msg_free(&m);
            if (w->processed_lsn >= seq + 1)
                return;
        } else {
            ga_log(GA_LOG_ERROR, "stream_message_undecodable", "seq=%llu partition=%d "
                   "error=\"%s\"", (unsigned long long)seq, part,
                   t < 0 ? err : "not a points message");
            ing_msg_free(&m);
        }
    }
    int mine = part >= 0 && (w->owned >> part & 1);
    if (w->broken)
        return;                        /* keep the position: the rest is replayed */
    w->processed_lsn = seq + 1;
    pthread_mutex_lock(&w->mu);
    w->st.processed_lsn = seq + 1;
    w->st.stream_not_owned += !mine;
    pthread_mutex_unlock(&w->mu);
}

/* Cluster mode: take the owned partitions' locks (writers first, so that
 * what is loaded next is what the previous owner committed last), load
 * their state, consume the stream from the lowest of their window
 * positions, and leave with a window set of every owned partition. */
static void *cluster_main(struct ga_part_worker *w)
{
    struct pg_load_state s = { 0 }, none = { 0 };
    struct js_log_sub *sub = NULL;
    char err[256];
    set_state(w, ENGINE_WORKER_LOADING);
    if (wait_parts_free(w) < 0)
        goto out;
    if (start_writer(w, &none) < 0) {
        ga_log(GA_LOG_ERROR, "storage_writer_start_failed", "msg=\"aggregation stays off\"");
        goto out;
    }
    if (wait_locked(w) < 0 || load_state(w, &s) < 0)
        goto out;
    uint64_t from = UINT64_MAX;
    for (int p = 0; p < GA_PARTITIONS; p++)
        if ((w->owned >> p & 1) && s.part_window_lsn[p] < from)
            from = s.part_window_lsn[p];
    if (from == UINT64_MAX)
        from = 0;                      /* owns nothing */
    pg_load_free(&s);
    w->processed_lsn = from;
    pthread_mutex_lock(&w->mu);
    w->st.processed_lsn = from;
    pthread_mutex_unlock(&w->mu);
    if (js_log_sub_open(&sub, w->jsl, from ? from : 1, err, sizeof err) < 0) {
        ga_log(GA_LOG_ERROR, "stream_subscribe_failed", "error=\"%s\"", err);
        goto out;
    }
    ga_log(GA_LOG_INFO, "cluster_partitions_taken", "parts=0x%016llx count=%d from_seq=%llu",
           (unsigned long long)w->owned, __builtin_popcountll(w->owned),
           (unsigned long long)from);
    w->last_tick_ns = w->coarse_tick_ns = ga_now_mono_ns();
    set_state(w, ENGINE_WORKER_RUNNING);
    publish_backends(w);
    while (!stopping(w)) {
        take_reload(w);
        uint64_t seq;
        int part;
        const void *data;
        size_t len;
        int rc = js_log_sub_next(sub, &seq, &part, &data, &len, 100);
        if (rc == 1)
            consume_message(w, seq, part, data, len);
        snapshot_tick(w);
        serve_flushes(w);
    }
    snapshot_parts(w, 0);
    serve_flushes(w);
out:
    js_log_sub_close(sub);
    pg_load_free(&s);
    set_state(w, ENGINE_WORKER_STOPPED);
    return NULL;
}

static void *worker_main(void *arg)
{
    struct ga_part_worker *w = arg;
    if (w->jsl)
        return cluster_main(w);
    struct pg_load_state s = { 0 }, none = { 0 };
    set_state(w, ENGINE_WORKER_LOADING);
    if (w->masked) {
        /* One of several workers: its writers take its partitions' locks
         * (the first worker's first writer the instance lock too) before
         * it reads their state, so that what it loads is what the killed
         * instance's sessions committed last, and it resumes from its
         * partitions' own positions. */
        if (start_writer(w, &none) < 0) {
            ga_log(GA_LOG_ERROR, "storage_writer_start_failed", "msg=\"aggregation stays off\"");
            goto drain;
        }
        if (wait_locked(w) < 0 || load_state(w, &s) < 0)
            goto drain;
    } else {
        if (load_state(w, &s) < 0)
            goto drain;
        if (start_writer(w, &s) < 0) {
            ga_log(GA_LOG_ERROR, "storage_writer_start_failed", "msg=\"aggregation stays off\"");
            goto drain;
        }
    }
    set_state(w, ENGINE_WORKER_REPLAYING);
    /* from the lowest of its partitions' window positions */
    uint64_t from = UINT64_MAX;
    for (int p = 0; p < GA_PARTITIONS; p++)
        if ((w->owned >> p & 1) && s.part_window_lsn[p] < from)
            from = s.part_window_lsn[p];
    from = from == UINT64_MAX ? s.window_lsn : from;
    w->processed_lsn = from;
    w->last_tick_ns = w->coarse_tick_ns = ga_now_mono_ns();
    w->cut = replay(w, from, w->live_lsn, 1);
    if (!w->cut)
        w->processed_lsn = w->live_lsn > w->processed_lsn ? w->live_lsn : w->processed_lsn;
    pg_load_free(&s);
    set_state(w, ENGINE_WORKER_RUNNING);
    publish_backends(w);
    while (!w->cut) {
        take_reload(w);
        struct pipeline_entry e;
        /* batches ready one after another are gathered into one feed */
        int rc = pipeline_engine_pop(w->pl, w->lane, &e, w->g_batches ? 0 : 100);
        if (rc == 1 && !w->st.fatal)
            consume(w, &e);
        else if (rc == 1 && e.batch) {   /* fatal: the journal keeps it for the restart */
            ing_batch_free(e.batch);
            free(e.batch);
        }
        if (rc != 1)
            feed_now(w);
        snapshot_tick(w);
        serve_flushes(w);
        if (rc == GA_ESHUTDOWN)
            break;
    }
    snapshot_parts(w, 0);
    serve_flushes(w);
    set_state(w, ENGINE_WORKER_STOPPED);
    return NULL;
drain:
    /* Not loaded (stopping before PostgreSQL came back): everything stays in
     * the journal for the next start; empty the queue. */
    pg_load_free(&s);
    for (;;) {
        struct pipeline_entry e;
        int rc = pipeline_engine_pop(w->pl, w->lane, &e, 100);
        if (rc == 1 && e.batch) {
            ing_batch_free(e.batch);
            free(e.batch);
        }
        if (rc == GA_ESHUTDOWN || (rc == 0 && stopping(w)))
            break;
    }
    set_state(w, ENGINE_WORKER_STOPPED);
    return NULL;
}

int part_worker_start(struct ga_part_worker **out, const struct part_worker_opts *o)
{
    struct ga_part_worker *w = calloc(1, sizeof *w);
    if (!w)
        return GA_ENOMEM;
    w->g_serial = 1;
    w->d = o->d;
    w->pl = o->pl;
    w->j = o->j;
    w->jsl = o->jsl;
    w->lane = o->lane;
    w->nlanes = o->nlanes > 0 ? o->nlanes : 1;
    w->owned = o->owned;
    w->masked = o->jsl || w->nlanes > 1;
    w->st.owned = o->owned;
    w->engine = o->engine;
    w->released = o->released;
    w->rctx = o->ctx;
    w->next_part = __builtin_ctzll(o->owned ? o->owned : 1);
    w->late_rl = (struct ga_ratelimit)GA_RATELIMIT_INIT(10LL * 1000000000);
    w->cfg = malloc(sizeof *w->cfg);
    if (!w->cfg || ga_metrics_open(&w->metrics) < 0)
        goto fail;
    *w->cfg = *o->d->cfg;
    struct journal_stats js = { 0 };
    if (o->j)
        journal_get_stats(o->j, &js);
    w->live_lsn = js.next_lsn;
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        goto fail;
    }
    char name[16];
    snprintf(name, sizeof name, "ga-engine-%d", w->lane);
    pthread_setname_np(w->thread, name);
    *out = w;
    return 0;
fail:
    ga_metrics_close(w->metrics);
    free(w->cfg);
    free(w);
    return GA_ENOMEM;
}

void part_worker_request_stop(struct ga_part_worker *w, int64_t deadline_ns)
{
    pthread_mutex_lock(&w->mu);
    if (!w->stop)
        w->stop_deadline_ns = deadline_ns;
    w->stop = 1;
    pthread_mutex_unlock(&w->mu);
}

void part_worker_join(struct ga_part_worker *w)
{
    part_worker_request_stop(w, ga_now_mono_ns());
    if (!w->joined)
        pthread_join(w->thread, NULL);
    w->joined = 1;
}

int part_worker_stop(struct ga_part_worker *w, int timeout_ms)
{
    int stop_rc = 0;
    if (!w)
        return 0;
    part_worker_join(w);
    if (w->writers) {
        int rc = pg_writers_stop(w->writers, timeout_ms);
        if (rc < 0)
            ga_log(GA_LOG_ERROR, "storage_stop_incomplete", "error=\"%s\" note=\"uncommitted work "
                   "stays in the journal and is replayed at the next start; exit 1\"",
                   ga_strerror(rc));
        stop_rc = rc < 0 ? rc : 0;
    }
    for (struct flush_req *f = w->flushes, *next; f; f = next) {
        next = f->next;
        f->cb(f->ctx, GA_ESHUTDOWN);
        free(f);
    }
    ga_engine_close(w->engine);
    ga_metrics_close(w->metrics);
    ga_result_free(&w->res);
    coarse_free(&w->coarse);
    free(w->name_ids);
    free(w->g_ids);
    free(w->g_ts);
    free(w->g_val);
    free(w->defs);
    free(w->m);
    free(w->gid);
    free(w->cfg);
    free(w->cfg_next);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return stop_rc;
}

void part_worker_get_status(struct ga_part_worker *w, struct engine_worker_status *st)
{
    pthread_mutex_lock(&w->mu);
    *st = w->st;
    pthread_mutex_unlock(&w->mu);
    if (st->have_writer)
        pg_writers_get_status(w->writers, &st->writer);
}
