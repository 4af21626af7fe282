/* engine.c — the engine: metric table, routing of batches to backends, late
 * point accounting (see engine.h).
 *
 * A metric lives on backend hash(id) % nb — or on the fallback backend
 * once that one has failed (engine.h "Failover").  With one backend and no
 * failover a batch goes through untouched; otherwise it is split by a
 * counting sort into one columnar sub-batch per backend (arrival order kept),
 * in buffers the engine reuses.  The fallback is b[nb]. */
#include "gpu/engine.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/log.h"
#include "proto/ga_err.h"

#define LATE_LOG_INTERVAL_NS (10 * 1000000000LL)

struct eng_metric {
    uint16_t backend;
    uint8_t live;
    const struct ga_policy *policy;   /* the caller's, kept alive by it (the registry) */
    struct ga_metric_stats st;
};

struct ga_engine {
    struct ga_backend **b;            /* nb primaries, then the fallback (if any) */
    int nb;
    int have_fallback;
    uint8_t *failed;                  /* per primary */
    uint64_t *nmetrics;               /* per backend, fallback last */
    struct ga_engine_failover_stats fo;
    struct eng_metric *m;
    size_t cap_m;
    struct ga_engine_stats stats;
    struct ga_ratelimit rl;
    /* sub-batches, nb > 1 */
    uint32_t *sub_metric;
    int64_t *sub_ts;
    double *sub_value;
    size_t cap_sub;
    size_t *bstart;               /* nb + 1 offsets */
    struct ga_result *part;       /* per slot output, when slots run concurrently */
    struct ga_engine_feed_times times;   /* of the last feed */
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void time_slot(struct ga_engine *e, int b, double s)
{
    if (b < GA_ENGINE_TIMED_SLOTS)
        e->times.slot_s[b] += s;
}

static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

static int backend_of(const struct ga_engine *e, uint32_t id)
{
    int b = e->nb == 1 ? 0 : (int)(hash32(id) % (uint32_t)e->nb);
    return e->failed[b] ? e->nb : b;  /* failed: the fallback */
}

/* Backends a batch can be split over: the primaries, and the fallback. */
static int nslots(const struct ga_engine *e)
{
    return e->nb + e->have_fallback;
}

static struct eng_metric *metric_at(const struct ga_engine *e, uint32_t id)
{
    return id < e->cap_m && e->m[id].live ? &e->m[id] : NULL;
}

int ga_engine_open(struct ga_engine **out, struct ga_backend **backends, int nb)
{
    int rc = GA_EINVAL;
    struct ga_engine *e = NULL;
    if (nb < 1 || nb > UINT16_MAX)
        goto fail;
    rc = GA_ENOMEM;
    e = calloc(1, sizeof *e);
    if (!e)
        goto fail;
    e->b = calloc((size_t)nb + 1, sizeof *e->b);
    e->bstart = calloc((size_t)nb + 2, sizeof *e->bstart);
    e->failed = calloc((size_t)nb, 1);
    e->nmetrics = calloc((size_t)nb + 1, sizeof *e->nmetrics);
    if (!e->b || !e->bstart || !e->failed || !e->nmetrics)
        goto fail;
    memcpy(e->b, backends, (size_t)nb * sizeof *e->b);
    e->nb = nb;
    e->rl = (struct ga_ratelimit)GA_RATELIMIT_INIT(LATE_LOG_INTERVAL_NS);
    *out = e;
    return 0;
fail:
    if (e) {
        free(e->b);
        free(e->bstart);
        free(e->failed);
        free(e->nmetrics);
        free(e);
    }
    for (int i = 0; i < nb; i++)
        if (backends[i])
            backends[i]->ops->close(backends[i]);
    return rc;
}

void ga_engine_close(struct ga_engine *e)
{
    if (!e)
        return;
    for (int i = 0; i < nslots(e); i++)
        e->b[i]->ops->close(e->b[i]);
    free(e->b);
    free(e->bstart);
    free(e->failed);
    free(e->nmetrics);
    free(e->m);
    free(e->sub_metric);
    free(e->sub_ts);
    free(e->sub_value);
    if (e->part)
        for (int i = 0; i < nslots(e); i++)
            ga_result_free(&e->part[i]);
    free(e->part);
    free(e);
}

int ga_engine_metric_add(struct ga_engine *e, uint32_t id, const struct ga_policy *p)
{
    if (id >= e->cap_m) {
        size_t c = e->cap_m ? e->cap_m : 1024;
        while (c <= id)
            c *= 2;
        struct eng_metric *m = realloc(e->m, c * sizeof *m);
        if (!m)
            return GA_ENOMEM;
        memset(m + e->cap_m, 0, (c - e->cap_m) * sizeof *m);
        e->m = m;
        e->cap_m = c;
    }
    int bi = e->m[id].live ? e->m[id].backend : backend_of(e, id);
    int rc = e->b[bi]->ops->metric_add(e->b[bi], id, p);
    if (rc)
        return rc;
    if (!e->m[id].live) {
        e->m[id] = (struct eng_metric){ .backend = (uint16_t)bi, .live = 1 };
        e->stats.metrics++;
        e->nmetrics[bi]++;
    }
    e->m[id].policy = p;
    return 0;
}

void ga_engine_metric_drop(struct ga_engine *e, uint32_t id)
{
    struct eng_metric *m = metric_at(e, id);
    if (!m)
        return;
    e->b[m->backend]->ops->metric_drop(e->b[m->backend], id);
    e->nmetrics[m->backend]--;
    *m = (struct eng_metric){ 0 };
    e->stats.metrics--;
}

int ga_engine_metric_stats(const struct ga_engine *e, uint32_t id, struct ga_metric_stats *st)
{
    const struct eng_metric *m = metric_at(e, id);
    if (!m)
        return GA_ENOENT;
    *st = m->st;
    return 0;
}

int ga_engine_window_get(struct ga_engine *e, uint32_t id, struct ga_window *w)
{
    struct eng_metric *m = metric_at(e, id);
    if (!m)
        return GA_ENOENT;
    return e->b[m->backend]->ops->window_get(e->b[m->backend], id, w);
}

int ga_engine_window_put(struct ga_engine *e, uint32_t id, const struct ga_policy *p,
                         const struct ga_window *w)
{
    int rc = ga_engine_metric_add(e, id, p);
    if (rc)
        return rc;
    int bi = e->m[id].backend;
    return e->b[bi]->ops->window_put(e->b[bi], id, p, w);
}

/* Count and log the late points out->late[from..]. */
static void account_late(struct ga_engine *e, const struct ga_result *out, size_t from)
{
    uint64_t by[5] = { 0 };
    for (size_t i = from; i < out->nlate; i++) {
        const struct ga_late *l = &out->late[i];
        struct eng_metric *m = metric_at(e, l->metric);
        switch (l->reason) {
        case GA_LATE_WINDOW:
            e->stats.late_window++;
            if (m)
                m->st.late_window++;
            break;
        case GA_LATE_BEFORE_EPOCH:
            e->stats.late_before_epoch++;
            if (m)
                m->st.late_before_epoch++;
            break;
        case GA_LATE_NONFINITE:
            e->stats.late_nonfinite++;
            if (m)
                m->st.late_nonfinite++;
            break;
        default:
            e->stats.late_unknown++;
            break;
        }
        by[l->reason < 5 ? l->reason : 0]++;
    }
    uint64_t suppressed;
    if (out->nlate > from && ga_ratelimit_ok(&e->rl, &suppressed)) {
        const struct ga_late *l = &out->late[from];
        ga_log(GA_LOG_WARN, "late_points",
               "count=%zu window=%" PRIu64 " before_epoch=%" PRIu64 " nonfinite=%" PRIu64
               " unknown_metric=%" PRIu64 " first_metric=%" PRIu32 " first_ts=%" PRId64
               " first_reason=%s suppressed=%" PRIu64,
               out->nlate - from, by[GA_LATE_WINDOW], by[GA_LATE_BEFORE_EPOCH],
               by[GA_LATE_NONFINITE], by[GA_LATE_UNKNOWN_METRIC], l->metric, l->ts,
               ga_late_reason_name(l->reason), suppressed);
    }
}

static int reserve_sub(struct ga_engine *e, size_t n)
{
    if (n <= e->cap_sub)
        return 0;
    size_t c = n + n / 4 + 1024;
    uint32_t *m = realloc(e->sub_metric, c * sizeof *m);
    if (!m)
        return GA_ENOMEM;
    e->sub_metric = m;
    int64_t *t = realloc(e->sub_ts, c * sizeof *t);
    if (!t)
        return GA_ENOMEM;
    e->sub_ts = t;
    double *v = realloc(e->sub_value, c * sizeof *v);
    if (!v)
        return GA_ENOMEM;
    e->sub_value = v;
    e->cap_sub = c;
    return 0;
}

/* Splitting a batch per backend: a counting sort, by ranges of the batch
 * on several threads when it is big (the GPUs wait for it), keeping arrival
 * order within each backend's share. */
#define SPLIT_PAR_MIN ((size_t)1 << 20)    /* points; smaller batches: one thread */
#define SPLIT_MAX_PARTS 16

struct split_part {
    const struct ga_engine *e;
    const struct ga_points *pts;
    size_t lo, hi;
    size_t *cnt;                 /* ns + 1: per slot, then unknown ids */
    int scatter;                 /* 0: count; 1: scatter using cnt as cursors */
    pthread_t th;
};

static void *split_part_main(void *arg)
{
    struct split_part *p = arg;
    struct ga_engine *e = (struct ga_engine *)p->e;
    int ns = nslots(e);
    for (size_t i = p->lo; i < p->hi; i++) {
        const struct eng_metric *m = metric_at(e, p->pts->metric[i]);
        if (!p->scatter) {
            p->cnt[m ? m->backend : ns]++;
        } else if (m) {
            size_t at = p->cnt[m->backend]++;
            e->sub_metric[at] = p->pts->metric[i];
            e->sub_ts[at] = p->pts->ts[i];
            e->sub_value[at] = p->pts->value[i];
        }
    }
    return NULL;
}

static void run_parts(struct split_part *parts, int n)
{
    int started[SPLIT_MAX_PARTS] = { 0 };
    for (int t = 1; t < n; t++)
        started[t] = pthread_create(&parts[t].th, NULL, split_part_main, &parts[t]) == 0;
    split_part_main(&parts[0]);
    for (int t = 1; t < n; t++) {
        if (started[t])
            pthread_join(parts[t].th, NULL);
        else
            split_part_main(&parts[t]);
    }
}

/* Split pts per backend into the sub arrays; unknown ids go to out->late. */
static int split(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out)
{
    int rc = reserve_sub(e, pts->n);
    if (rc)
        return rc;
    int ns = nslots(e);
    int nparts = pts->n < SPLIT_PAR_MIN ? 1 : (int)(pts->n / (SPLIT_PAR_MIN / 2));
    if (nparts > SPLIT_MAX_PARTS)
        nparts = SPLIT_MAX_PARTS;
    size_t cnt[SPLIT_MAX_PARTS][ns + 1];
    struct split_part parts[SPLIT_MAX_PARTS];
    memset(cnt, 0, sizeof cnt);
    for (int t = 0; t < nparts; t++)
        parts[t] = (struct split_part){ e, pts, pts->n * (size_t)t / (size_t)nparts,
                                        pts->n * (size_t)(t + 1) / (size_t)nparts, cnt[t], 0, 0 };
    run_parts(parts, nparts);
    /* Cursors: slot by slot, part by part, so order within a slot is kept. */
    size_t *bs = e->bstart, at = 0, unknown = 0;
    for (int b = 0; b < ns; b++) {
        bs[b] = at;
        for (int t = 0; t < nparts; t++) {
            size_t c = cnt[t][b];
            cnt[t][b] = at;
            at += c;
        }
    }
    bs[ns] = at;
    for (int t = 0; t < nparts; t++) {
        unknown += cnt[t][ns];
        parts[t].scatter = 1;
    }
    run_parts(parts, nparts);
    for (size_t i = 0; unknown && i < pts->n; i++) {
        if (metric_at(e, pts->metric[i]))
            continue;
        struct ga_late l = { .metric = pts->metric[i], .reason = GA_LATE_UNKNOWN_METRIC,
                             .ts = pts->ts[i], .value = pts->value[i] };
        if ((rc = ga_result_push_late(out, &l)))
            return rc;
        unknown--;
    }
    return 0;
}

/* Move every metric of failed primary b to the fallback. */
static void fail_over(struct ga_engine *e, int b, int why)
{
    struct ga_backend *from = e->b[b], *to = e->b[e->nb];
    uint64_t moved = 0, lost = 0;
    e->failed[b] = 1;
    e->fo.failovers++;
    for (size_t id = 0; id < e->cap_m; id++) {
        struct eng_metric *m = &e->m[id];
        if (!m->live || m->backend != b)
            continue;
        struct ga_window w = { 0 };
        int rc = from->ops->window_get(from, (uint32_t)id, &w);
        int ok = to->ops->metric_add(to, (uint32_t)id, m->policy) == 0;
        if (ok && rc == 0)
            ok = to->ops->window_put(to, (uint32_t)id, m->policy, &w) == 0;
        if (rc != 0 || !ok)
            lost++;
        free(w.ts);
        free(w.value);
        m->backend = (uint16_t)e->nb;
        e->nmetrics[b]--;
        e->nmetrics[e->nb]++;
        moved++;
    }
    e->fo.metrics_moved += moved;
    e->fo.windows_lost += lost;
    ga_log(GA_LOG_ERROR, "backend_failover", "backend=%s error=\"%s\" metrics_moved=%" PRIu64
           " windows_lost=%" PRIu64 " to=%s", from->label, ga_strerror(why), moved, lost,
           to->label);
}

/* Feed backend slot b its sub-batch; on a CUDA failure of a primary with a
 * fallback, fail over and feed the fallback instead. */
static int feed_slot(struct ga_engine *e, int b, const struct ga_points *sub, struct ga_result *out)
{
    size_t naggs = out->naggs, nlate = out->nlate;
    double t0 = now_s();
    int rc = e->b[b]->ops->feed(e->b[b], sub, out);
    time_slot(e, b, now_s() - t0);
    if (rc != GA_ECUDA || b == e->nb || !e->have_fallback)
        return rc;
    out->naggs = naggs;                      /* the failed feed's partial output */
    out->nlate = nlate;
    fail_over(e, b, rc);
    return e->b[e->nb]->ops->feed(e->b[e->nb], sub, out);
}

/* One slot's share of a batch, fed on its own thread. */
struct slot_job {
    struct ga_engine *e;
    int b;
    struct ga_points sub;
    int rc;
    pthread_t th;
    int threaded;
    double secs;
};

static void *slot_main(void *arg)
{
    struct slot_job *j = arg;
    struct ga_backend *be = j->e->b[j->b];
    double t0 = now_s();
    j->rc = be->ops->feed(be, &j->sub, &j->e->part[j->b]);
    j->secs = now_s() - t0;
    return NULL;
}

static int append_part(struct ga_result *out, const struct ga_result *p)
{
    int rc = ga_result_reserve(out, p->naggs, p->nlate);
    if (rc)
        return rc;
    if (p->naggs)
        memcpy(out->aggs + out->naggs, p->aggs, p->naggs * sizeof *p->aggs);
    out->naggs += p->naggs;
    if (p->nlate)
        memcpy(out->late + out->nlate, p->late, p->nlate * sizeof *p->late);
    out->nlate += p->nlate;
    return 0;
}

/* Several slots with work: every backend (each GPU, the CPU fallback) is
 * fed at the same time on its own thread, into its own result; outputs are
 * appended in slot order, so the answer does not depend on timing.  A GPU
 * whose feed failed with GA_ECUDA fails over afterwards, on this thread
 * (its partial output is dropped: the backend left its state unchanged),
 * and its share is fed to the fallback. */
static int feed_concurrently(struct ga_engine *e, struct ga_result *out)
{
    int ns = nslots(e), rc = 0;
    if (!e->part && !(e->part = calloc((size_t)ns, sizeof *e->part)))
        return GA_ENOMEM;
    struct slot_job jobs[ns];
    int first = -1;
    for (int b = 0; b < ns; b++) {
        jobs[b] = (struct slot_job){ .e = e, .b = b, .rc = 0,
                                     .sub = { .n = e->bstart[b + 1] - e->bstart[b],
                                              .metric = e->sub_metric + e->bstart[b],
                                              .ts = e->sub_ts + e->bstart[b],
                                              .value = e->sub_value + e->bstart[b] } };
        ga_result_reset(&e->part[b]);
        if (!jobs[b].sub.n)
            continue;
        if (first < 0) {
            first = b;                /* this thread takes the first one */
            continue;
        }
        jobs[b].threaded = pthread_create(&jobs[b].th, NULL, slot_main, &jobs[b]) == 0;
        if (!jobs[b].threaded)
            slot_main(&jobs[b]);
    }
    if (first >= 0)
        slot_main(&jobs[first]);
    for (int b = 0; b < ns; b++)
        if (jobs[b].threaded)
            pthread_join(jobs[b].th, NULL);
    for (int b = 0; b < ns; b++)
        time_slot(e, b, jobs[b].secs);
    double t_app = now_s();
    for (int b = 0; b < ns && !rc; b++) {
        if (!jobs[b].sub.n)
            continue;
        if (jobs[b].rc == GA_ECUDA && b < e->nb && e->have_fallback) {
            fail_over(e, b, jobs[b].rc);
            struct ga_backend *fb = e->b[e->nb];
            rc = fb->ops->feed(fb, &jobs[b].sub, out);
            continue;
        }
        rc = jobs[b].rc ? jobs[b].rc : append_part(out, &e->part[b]);
    }
    e->times.append_s = now_s() - t_app;
    return rc;
}

int ga_engine_feed(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out)
{
    size_t naggs0 = out->naggs, nlate0 = out->nlate;
    int rc = 0;
    double t0 = now_s(), t1;
    e->times = (struct ga_engine_feed_times){ .nslots = nslots(e) };
    if (e->nb == 1 && !e->failed[0]) {
        /* one backend serves every metric (the fallback none yet): no split */
        if (e->have_fallback) {
            rc = feed_slot(e, 0, pts, out);
        } else {
            rc = e->b[0]->ops->feed(e->b[0], pts, out);
            time_slot(e, 0, now_s() - t0);
        }
    } else {
        rc = split(e, pts, out);
        e->times.split_s = now_s() - t0;
        int busy = 0;
        for (int b = 0; b < nslots(e); b++)
            busy += e->bstart[b + 1] > e->bstart[b];
        if (!rc && busy > 1) {
            rc = feed_concurrently(e, out);
        } else {
            for (int b = 0; b < nslots(e) && !rc; b++) {
                struct ga_points sub = { .n = e->bstart[b + 1] - e->bstart[b],
                                         .metric = e->sub_metric + e->bstart[b],
                                         .ts = e->sub_ts + e->bstart[b],
                                         .value = e->sub_value + e->bstart[b] };
                if (sub.n)
                    rc = feed_slot(e, b, &sub, out);
            }
        }
    }
    t1 = now_s();
    e->times.total_s = t1 - t0;
    e->times.feed_s = e->times.total_s - e->times.split_s - e->times.append_s;
    e->stats.points_in += pts->n;
    e->stats.aggs_out += out->naggs - naggs0;
    account_late(e, out, nlate0);
    if (!rc)
        e->stats.points_aggregated += pts->n - (out->nlate - nlate0);
    return rc;
}

void ga_engine_feed_times(const struct ga_engine *e, struct ga_engine_feed_times *t)
{
    *t = e->times;
}

int ga_engine_set_fallback(struct ga_engine *e, struct ga_backend *fallback)
{
    if (e->have_fallback)
        return GA_EEXIST;
    e->b[e->nb] = fallback;
    e->have_fallback = 1;
    return 0;
}

int ga_engine_backend_failed(const struct ga_engine *e, int i)
{
    return i >= 0 && i < e->nb ? e->failed[i] : 0;
}

void ga_engine_failover_stats(const struct ga_engine *e, struct ga_engine_failover_stats *st)
{
    *st = e->fo;
}

uint64_t ga_engine_backend_metrics(const struct ga_engine *e, int i)
{
    if (i < 0)
        return e->have_fallback ? e->nmetrics[e->nb] : 0;
    return i < e->nb ? e->nmetrics[i] : 0;
}

void ga_engine_get_stats(const struct ga_engine *e, struct ga_engine_stats *st)
{
    *st = e->stats;
}

int ga_engine_nbackends(const struct ga_engine *e)
{
    return e->nb;
}

const struct ga_backend *ga_engine_backend(const struct ga_engine *e, int i)
{
    return i >= 0 && i < e->nb ? e->b[i] : NULL;
}
