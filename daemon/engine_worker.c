/* engine_worker.c — the engine workers of a daemon, as one (engine_worker.h). */
#include "daemon/engine_worker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/daemon.h"
#include "daemon/pipeline.h"
#include "daemon/part_worker.h"
#include "proto/base/deadline.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/ga_partition.h"
#include "storage/journal.h"
#include "storage/js_log.h"
#include "storage/pg_writers.h"

struct ga_engine_worker {
    int n;
    struct ga_part_worker *w[ENGINE_WORKER_MAX_WORKERS];
    uint64_t owned[ENGINE_WORKER_MAX_WORKERS];
    struct ga_daemon *d;
    struct ga_pipeline *pl;
    struct journal *j;
    struct js_log *jsl;
    pthread_mutex_t mu;               /* guards released */
    uint64_t released[ENGINE_WORKER_MAX_WORKERS];    /* each worker's committed window position */
};

/* A worker committed a window set: the journal keeps what the lowest of
 * all the workers' window positions still needs. */
static void on_released(void *ctx, int lane, uint64_t window_lsn)
{
    struct ga_engine_worker *g = ctx;
    pthread_mutex_lock(&g->mu);
    if (window_lsn > g->released[lane])
        g->released[lane] = window_lsn;
    uint64_t low = g->released[0];
    for (int i = 1; i < g->n; i++)
        low = g->released[i] < low ? g->released[i] : low;
    pthread_mutex_unlock(&g->mu);
    if (g->j && low && journal_release(g->j, low) == 0)
        pipeline_journal_released(g->pl);
}

static struct ga_engine_worker *group_new(struct ga_daemon *d, struct ga_pipeline *pl,
                                          struct journal *j, struct js_log *jsl)
{
    struct ga_engine_worker *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->d = d;
    g->pl = pl;
    g->j = j;
    g->jsl = jsl;
    pthread_mutex_init(&g->mu, NULL);
    return g;
}

static void group_free(struct ga_engine_worker *g)
{
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* Start worker k of n over the partitions in owned, with its own engine. */
static int start_one(struct ga_engine_worker *g, struct ga_daemon *d, int k, int n,
                     uint64_t owned)
{
    struct ga_engine *engine;
    int rc = ga_daemon_open_engine(d, n, &engine);
    if (rc < 0)
        return rc;
    struct part_worker_opts o = { .d = d, .pl = g->pl, .j = g->j, .jsl = g->jsl, .engine = engine,
                         .lane = k, .nlanes = n, .owned = owned, .released = on_released,
                         .ctx = g };
    if ((rc = part_worker_start(&g->w[k], &o)) < 0) {
        ga_engine_close(engine);
        return rc;
    }
    g->owned[k] = owned;
    g->n = k + 1;
    return 0;
}

int engine_worker_start(struct ga_engine_worker **out, struct ga_daemon *d, struct ga_pipeline *pl,
             struct journal *j, int n)
{
    if (n < 1 || n > ENGINE_WORKER_MAX_WORKERS || n > pipeline_lanes(pl))
        return GA_EINVAL;
    struct ga_engine_worker *g = group_new(d, pl, j, NULL);
    if (!g)
        return GA_ENOMEM;
    for (int k = 0; k < n; k++) {
        uint64_t owned = 0;
        for (int p = 0; p < GA_PARTITIONS; p++)
            if (pipeline_lane_of(p, n) == k)
                owned |= 1ULL << p;
        int rc = start_one(g, d, k, n, owned);
        if (rc < 0) {
            engine_worker_stop(g, 0);
            return rc;
        }
    }
    ga_log(GA_LOG_INFO, "engine_workers", "workers=%d partitions_each=%d", n, GA_PARTITIONS / n);
    *out = g;
    return 0;
}

int engine_worker_start_cluster(struct ga_engine_worker **out, struct ga_daemon *d, struct ga_pipeline *pl,
                     struct js_log *jsl, uint64_t owned)
{
    struct ga_engine_worker *g = group_new(d, pl, NULL, jsl);
    if (!g)
        return GA_ENOMEM;
    int rc = start_one(g, d, 0, 1, owned);
    if (rc < 0) {
        group_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

int engine_worker_stop(struct ga_engine_worker *g, int timeout_ms)
{
    if (!g)
        return 0;
    /* One deadline from here: the workers drain and save their windows at
     * once (a journal replay still running at half of it is cut, the rest
     * replayed at the next start), then their writers' final commits get
     * what is left. */
    struct timespec until = ga_deadline_ms(CLOCK_MONOTONIC, timeout_ms);
    int64_t cut_ns = ga_now_mono_ns() + (int64_t)timeout_ms * 1000000 / 2;
    for (int k = 0; k < g->n; k++)
        part_worker_request_stop(g->w[k], cut_ns);
    for (int k = 0; k < g->n; k++)
        part_worker_join(g->w[k]);
    int rc = 0;
    for (int k = 0; k < g->n; k++) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t left = ((int64_t)until.tv_sec - now.tv_sec) * 1000 +
                       (until.tv_nsec - now.tv_nsec) / 1000000;
        int r = part_worker_stop(g->w[k], left > 0 ? (int)left : 0);
        rc = rc ? rc : r;
    }
    group_free(g);
    return rc;
}

/* ---- flush ---------------------------------------------------------------- */

struct group_flush {
    pthread_mutex_t mu;
    int left, rc;
    void (*cb)(void *ctx, int rc);
    void *ctx;
};

static void one_flushed(void *ctx, int rc)
{
    struct group_flush *f = ctx;
    pthread_mutex_lock(&f->mu);
    if (rc < 0 && !f->rc)
        f->rc = rc;
    int last = --f->left == 0;
    pthread_mutex_unlock(&f->mu);
    if (!last)
        return;
    f->cb(f->ctx, f->rc);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

int engine_worker_flush(struct ga_engine_worker *g, void (*cb)(void *ctx, int rc), void *ctx)
{
    uint64_t target;
    if (g->jsl) {
        /* everything this daemon published: the messages of its partitions
         * aggregated and committed */
        struct js_log_stats js;
        js_log_get_stats(g->jsl, &js);
        target = js.last_acked_seq + 1;
    } else {
        target = pipeline_durable_lsn(g->pl);
    }
    struct group_flush *f = calloc(1, sizeof *f);
    if (!f)
        return GA_ENOMEM;
    pthread_mutex_init(&f->mu, NULL);
    f->left = g->n;
    f->cb = cb;
    f->ctx = ctx;
    for (int k = 0; k < g->n; k++)
        if (part_worker_flush(g->w[k], target, one_flushed, f) < 0)
            one_flushed(f, GA_ENOMEM);
    return 0;
}

void engine_worker_reload(struct ga_engine_worker *g)
{
    for (int k = 0; k < g->n; k++)
        part_worker_reload(g->w[k], g->d->cfg);
}

/* ---- status --------------------------------------------------------------- */

/* Fold worker o's status into st (counters summed, positions the lowest,
 * the least advanced state, the first error). */
static void merge(struct engine_worker_status *st, const struct engine_worker_status *o)
{
    for (int i = 0; i < st->nbackends && i < o->nbackends; i++) {
        st->backends[i].failed |= o->backends[i].failed;
        st->backends[i].metrics += o->backends[i].metrics;
    }
    st->have_fallback |= o->have_fallback;
    st->fallback_metrics += o->fallback_metrics;
    st->failover.failovers += o->failover.failovers;
    st->failover.metrics_moved += o->failover.metrics_moved;
    st->failover.windows_lost += o->failover.windows_lost;
    if (o->fatal && !st->fatal) {
        st->fatal = 1;
        memcpy(st->fatal_reason, o->fatal_reason, sizeof st->fatal_reason);
    }
    st->state = o->state < st->state ? o->state : st->state;
    if (!st->load_error[0] && o->load_error[0])
        memcpy(st->load_error, o->load_error, sizeof st->load_error);
    st->processed_lsn = o->processed_lsn < st->processed_lsn ? o->processed_lsn
                                                             : st->processed_lsn;
#define SUM_(f) st->f += o->f
    SUM_(batches);
    SUM_(points);
    SUM_(aggs);
    SUM_(late);
    SUM_(metrics);
    SUM_(snapshots);
    SUM_(replayed_records);
    SUM_(feeds);
    SUM_(feed_ns);
    SUM_(submit_ns);
    SUM_(snapshot_ns);
    SUM_(gpu_rebuild_ns);
    SUM_(window_points);
    SUM_(late_window);
    SUM_(late_before_epoch);
    SUM_(late_nonfinite);
    SUM_(late_out_of_range);
    SUM_(stream_not_owned);
    SUM_(metric_slots);
    SUM_(coarse_held);
    SUM_(coarse_released);
#undef SUM_
    if (st->have_writer && o->have_writer)
        pg_writers_status_merge(&st->writer, &o->writer, o->owned);
    st->have_writer &= o->have_writer;
    st->owned |= o->owned;
}

void engine_worker_get_status(struct ga_engine_worker *g, struct engine_worker_status *st)
{
    struct engine_worker_status *o = malloc(sizeof *o);
    part_worker_get_status(g->w[0], st);
    st->nworkers = g->n;
    for (int k = 0; k < g->n; k++) {
        const struct engine_worker_status *x = st;
        if (k > 0) {
            if (!o)
                break;
            part_worker_get_status(g->w[k], o);
            x = o;
        }
        st->workers[k] = (struct engine_worker_worker_status){
            .state = x->state, .owned = g->owned[k], .processed_lsn = x->processed_lsn,
            .points = x->points, .metrics = x->metrics, .metric_slots = x->metric_slots,
            .feeds = x->feeds,
            .feed_ns = x->feed_ns, .submit_ns = x->submit_ns, .snapshot_ns = x->snapshot_ns };
        if (k > 0)
            merge(st, o);
    }
    free(o);
}
