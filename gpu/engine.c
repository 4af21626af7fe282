/* engine.c — the engine: metric table, routing of batches to backends,
 * failover, late point accounting (see engine.h; the split and the feeds
 * are in engine_split.c and engine_feed.c, their helper threads in two
 * pools of proto/base/pool.h, what they share in engine_priv.h).
 *
 * A metric lives on backend hash(id) % nb — or on the fallback backend
 * once that one has failed (engine.h "Failover").  The fallback is b[nb];
 * "slots" are the primaries and the fallback.  Every buffer (sub-batches,
 * per-slot results, counts, workers) is kept from batch to batch, so a
 * steady stream of batches allocates nothing. */
#include "gpu/engine_priv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/cuda.h"
#include "gpu/pol.h"
#include "proto/base/hash.h"
#include "proto/ga_err.h"

#define LATE_LOG_INTERVAL_NS (10 * 1000000000LL)

static int backend_of(const struct ga_engine *e, uint32_t id)
{
    int b = e->nb == 1 ? 0 : (int)(ga_hash_fmix32(id) % (uint32_t)e->nb);
    return e->failed[b] ? e->nb : b;  /* failed: the fallback */
}

static struct eng_metric *metric_at(const struct ga_engine *e, uint32_t id)
{
    return id < e->cap_m && e->slot_of[id] != SLOT_NONE ? &e->m[id] : NULL;
}

/* ---- open, close, metrics ----------------------------------------------- */

/* The engine's own memory (not its backends; its pools only before any
 * thread started); NULL ok. */
static void free_engine(struct ga_engine *e)
{
    if (!e)
        return;
    eng_batches_free(e);
    free(e->b);
    free(e->cnt);
    free(e->failed);
    free(e->nmetrics);
    free(e->m);
    free(e->slot_of);
    pool_close(e->split_pool);        /* NULL once ga_engine_close stopped them */
    pool_close(e->feed_pool);
    free(e);
}

int ga_engine_open(struct ga_engine **out, struct ga_backend **backends, int nb)
{
    int rc = GA_EINVAL;
    struct ga_engine *e = NULL;
    if (nb < 1 || nb >= SLOT_NONE)
        goto fail;
    rc = GA_ENOMEM;
    e = calloc(1, sizeof *e);
    if (!e)
        goto fail;
    e->nb = nb;
    for (int i = 0; i < nb; i++)
        if (strcmp(backends[i]->ops->name, "cuda") == 0)
            e->want_pinned = e->has_cuda = 1;
    e->b = calloc((size_t)nb + 1, sizeof *e->b);
    e->cnt = calloc((size_t)SPLIT_MAX_PARTS * ((size_t)nb + 2), sizeof *e->cnt);
    e->failed = calloc((size_t)nb, 1);
    e->nmetrics = calloc((size_t)nb + 1, sizeof *e->nmetrics);
    /* helpers: per split range but the caller's; per slot but the feeder's,
     * or per append copy */
    if (!e->b || !e->cnt || !e->failed || !e->nmetrics ||
        pool_open(&e->split_pool, SPLIT_MAX_PARTS, "ga-engine-pool") ||
        pool_open(&e->feed_pool, nb > COPY_MAX_THREADS - 1 ? nb + 1 : COPY_MAX_THREADS, "ga-engine-pool") ||
        eng_batches_init(e))
        goto fail;
    memcpy(e->b, backends, (size_t)nb * sizeof *e->b);
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    e->ncpu = nc > 0 ? (int)nc : 1;
    e->rl = (struct ga_ratelimit)GA_RATELIMIT_INIT(LATE_LOG_INTERVAL_NS);
    pthread_rwlock_init(&e->route, NULL);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    *out = e;
    return 0;
fail:
    free_engine(e);
    for (int i = 0; i < nb; i++)
        if (backends[i])
            backends[i]->ops->close(backends[i]);
    return rc;
}

void ga_engine_close(struct ga_engine *e)
{
    if (!e)
        return;
    eng_drain(e);                     /* feeds in flight finish; their rows are dropped */
    eng_feeder_stop(e);
    pool_close(e->split_pool);
    pool_close(e->feed_pool);
    e->split_pool = e->feed_pool = NULL;
    for (int i = 0; i < ENG_INFLIGHT; i++)
        eng_free_sub(&e->batch[i]);   /* page-locked: before the GPUs' backends go */
    for (int i = 0; i < eng_nslots(e); i++)
        e->b[i]->ops->close(e->b[i]);
    pthread_rwlock_destroy(&e->route);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free_engine(e);
}

void ga_engine_set_pinned_split(struct ga_engine *e, int on)
{
    eng_drain(e);
    for (int i = 0; i < ENG_INFLIGHT && !on; i++)
        if (e->batch[i].sub_pinned)
            eng_free_sub(&e->batch[i]);
    e->want_pinned = on;
}

int ga_engine_metric_add(struct ga_engine *e, uint32_t id, const struct ga_policy *p)
{
    eng_drain(e);
    if (id >= e->cap_m) {
        size_t c = e->cap_m ? e->cap_m : 1024;
        while (c <= id)
            c *= 2;
        struct eng_metric *m = realloc(e->m, c * sizeof *m);
        if (!m)
            return GA_ENOMEM;
        memset(m + e->cap_m, 0, (c - e->cap_m) * sizeof *m);
        e->m = m;                     /* bigger than cap_m says: harmless */
        uint16_t *so = realloc(e->slot_of, c * sizeof *so);
        if (!so)
            return GA_ENOMEM;
        for (size_t i = e->cap_m; i < c; i++)
            so[i] = SLOT_NONE;
        e->slot_of = so;
        e->cap_m = c;
    }
    int live = e->slot_of[id] != SLOT_NONE;
    int bi = live ? e->slot_of[id] : backend_of(e, id);
    int rc = e->b[bi]->ops->metric_add(e->b[bi], id, p);
    if (rc)
        return rc;
    if (!live) {
        e->m[id] = (struct eng_metric){ 0 };
        e->slot_of[id] = (uint16_t)bi;
        e->stats.metrics++;
        e->nmetrics[bi]++;
    }
    e->m[id].policy = p;
    return 0;
}

void ga_engine_metric_drop(struct ga_engine *e, uint32_t id)
{
    eng_drain(e);
    struct eng_metric *m = metric_at(e, id);
    if (!m)
        return;
    int bi = e->slot_of[id];
    e->b[bi]->ops->metric_drop(e->b[bi], id);
    e->nmetrics[bi]--;
    *m = (struct eng_metric){ 0 };
    e->slot_of[id] = SLOT_NONE;
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
    eng_drain(e);
    if (!metric_at(e, id))
        return GA_ENOENT;
    struct ga_backend *b = e->b[e->slot_of[id]];
    return b->ops->window_get(b, id, w);
}

int ga_engine_window_floor(struct ga_engine *e, uint32_t id, int64_t *floor)
{
    struct ga_window w = { 0 };
    int rc = ga_engine_window_get(e, id, &w);
    if (rc < 0)
        return rc;
    struct agg_pol pol;
    *floor = INT64_MIN;
    rc = agg_pol_init(&pol, e->m[id].policy);
    if (rc == 0 && w.n)
        *floor = agg_pol_first_block(&pol, w.ts[w.n - 1]);
    free(w.ts);
    free(w.value);
    return rc;
}

static void free_windows(struct ga_window *out, const size_t *idx, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct ga_window *w = &out[idx ? idx[i] : i];
        free(w->ts);
        free(w->value);
        w->ts = NULL;
        w->value = NULL;
    }
}

int ga_engine_windows_get(struct ga_engine *e, const uint32_t *ids, size_t n, struct ga_window *out)
{
    eng_drain(e);
    for (size_t i = 0; i < n; i++)
        if (!metric_at(e, ids[i]))
            return GA_ENOENT;
    memset(out, 0, n * sizeof *out);
    uint32_t *sub = malloc((n ? n : 1) * sizeof *sub);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    struct ga_window *tmp = malloc((n ? n : 1) * sizeof *tmp);
    int rc = sub && idx && tmp ? 0 : GA_ENOMEM;
    size_t done = 0;                    /* windows in out, listed in idx[0..done) */
    for (int bi = 0; rc == 0 && bi < eng_nslots(e); bi++) {
        struct ga_backend *b = e->b[bi];
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (e->slot_of[ids[i]] == bi) {
                sub[k] = ids[i];
                idx[done + k++] = i;
            }
        if (!k)
            continue;
        size_t *at = idx + done;        /* where sub[j]'s window goes: out[at[j]] */
        if (b->ops->windows_get) {
            rc = b->ops->windows_get(b, sub, k, tmp);
            for (size_t j = 0; rc == 0 && j < k; j++)
                out[at[j]] = tmp[j];
            done += rc == 0 ? k : 0;
        } else {
            for (size_t j = 0; rc == 0 && j < k; j++) {
                rc = b->ops->window_get(b, sub[j], &out[at[j]]);
                done += rc == 0;
            }
        }
    }
    if (rc)
        free_windows(out, idx, done);
    free(sub);
    free(idx);
    free(tmp);
    return rc;
}

int ga_engine_window_put(struct ga_engine *e, uint32_t id, const struct ga_policy *p,
                         const struct ga_window *w)
{
    int rc = ga_engine_metric_add(e, id, p);
    if (rc)
        return rc;
    int bi = e->slot_of[id];
    return e->b[bi]->ops->window_put(e->b[bi], id, p, w);
}

void eng_account_late(struct ga_engine *e, const struct ga_result *out, size_t from)
{
    uint64_t by[GA_LATE_OUT_OF_RANGE + 1] = { 0 };
    pthread_rwlock_rdlock(&e->route);     /* a failover may move metrics meanwhile */
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
        case GA_LATE_OUT_OF_RANGE:
            e->stats.late_out_of_range++;
            if (m)
                m->st.late_out_of_range++;
            break;
        default:
            e->stats.late_unknown++;
            break;
        }
        by[l->reason <= GA_LATE_OUT_OF_RANGE ? l->reason : 0]++;
    }
    pthread_rwlock_unlock(&e->route);
    uint64_t suppressed;
    if (out->nlate > from && ga_ratelimit_ok(&e->rl, &suppressed)) {
        const struct ga_late *l = &out->late[from];
        ga_log(GA_LOG_WARN, "late_points",
               "count=%zu window=%" PRIu64 " before_epoch=%" PRIu64 " nonfinite=%" PRIu64
               " unknown_metric=%" PRIu64 " out_of_range=%" PRIu64 " first_metric=%" PRIu32
               " first_ts=%" PRId64
               " first_reason=%s suppressed=%" PRIu64,
               out->nlate - from, by[GA_LATE_WINDOW], by[GA_LATE_BEFORE_EPOCH],
               by[GA_LATE_NONFINITE], by[GA_LATE_UNKNOWN_METRIC], by[GA_LATE_OUT_OF_RANGE],
               l->metric, l->ts,
               ga_late_reason_name(l->reason), suppressed);
    }
}

/* ---- failover ------------------------------------------------------------ */

void eng_fail_over(struct ga_engine *e, int b, int why)
{
    struct ga_backend *from = e->b[b], *to = e->b[e->nb];
    uint64_t moved = 0, lost = 0;
    pthread_rwlock_wrlock(&e->route);
    e->failed[b] = 1;
    e->fo.failovers++;
    for (size_t id = 0; id < e->cap_m; id++) {
        if (e->slot_of[id] != b)
            continue;
        struct eng_metric *m = &e->m[id];
        struct ga_window w = { 0 };
        int rc = from->ops->window_get(from, (uint32_t)id, &w);
        int ok = to->ops->metric_add(to, (uint32_t)id, m->policy) == 0;
        if (ok && rc == 0)
            ok = to->ops->window_put(to, (uint32_t)id, m->policy, &w) == 0;
        if (rc != 0 || !ok)
            lost++;
        free(w.ts);
        free(w.value);
        e->slot_of[id] = (uint16_t)e->nb;
        e->nmetrics[b]--;
        e->nmetrics[e->nb]++;
        moved++;
    }
    e->fo.metrics_moved += moved;
    e->fo.windows_lost += lost;
    pthread_rwlock_unlock(&e->route);
    ga_log(GA_LOG_ERROR, "backend_failover", "backend=%s error=\"%s\" metrics_moved=%" PRIu64
           " windows_lost=%" PRIu64 " to=%s", from->label, ga_strerror(why), moved, lost,
           to->label);
}

void ga_engine_feed_times(const struct ga_engine *e, struct ga_engine_feed_times *t)
{
    *t = e->times;
}

int ga_engine_set_fallback(struct ga_engine *e, struct ga_backend *fallback)
{
    eng_drain(e);
    if (e->have_fallback)
        return GA_EEXIST;
    e->b[e->nb] = fallback;
    e->have_fallback = 1;
    return 0;
}

/* The routing under `route` read (a failover on the feeder writes it). */
static pthread_rwlock_t *route(const struct ga_engine *e)
{
    return (pthread_rwlock_t *)&e->route;
}

int ga_engine_backend_failed(const struct ga_engine *e, int i)
{
    pthread_rwlock_rdlock(route(e));
    int f = i >= 0 && i < e->nb ? e->failed[i] : 0;
    pthread_rwlock_unlock(route(e));
    return f;
}

void ga_engine_failover_stats(const struct ga_engine *e, struct ga_engine_failover_stats *st)
{
    pthread_rwlock_rdlock(route(e));
    *st = e->fo;
    pthread_rwlock_unlock(route(e));
}

uint64_t ga_engine_backend_metrics(const struct ga_engine *e, int i)
{
    pthread_rwlock_rdlock(route(e));
    uint64_t n = i < 0 ? (e->have_fallback ? e->nmetrics[e->nb] : 0) : i < e->nb ? e->nmetrics[i] : 0;
    pthread_rwlock_unlock(route(e));
    return n;
}

void ga_engine_gpu_stats(const struct ga_engine *e, struct ga_engine_gpu_stats *st)
{
    memset(st, 0, sizeof *st);
    struct ga_cuda_feed_stats cs;
    for (int i = 0; i < e->nb; i++)
        if (ga_cuda_backend_stats(ga_engine_backend(e, i), &cs) == 0) {
            st->have_gpu = 1;
            st->rebuild_s += cs.gpu_rebuild_s;
            st->pool_points += cs.pool_points;
        }
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
