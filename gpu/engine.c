/* engine.c — the engine: metric table, routing of batches to backends, late
 * point accounting (see engine.h).
 *
 * A metric lives on backend hash(id) % nb for its whole life.  With one
 * backend a batch goes through untouched; with several it is split by a
 * counting sort into one columnar sub-batch per backend (arrival order kept),
 * in buffers the engine reuses. */
#include "gpu/engine.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "proto/ga_err.h"

#define LATE_LOG_INTERVAL_NS (10 * 1000000000LL)

struct eng_metric {
    uint16_t backend;
    uint8_t live;
    struct ga_metric_stats st;
};

struct ga_engine {
    struct ga_backend **b;
    int nb;
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
};

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
    return e->nb == 1 ? 0 : (int)(hash32(id) % (uint32_t)e->nb);
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
    e->b = calloc((size_t)nb, sizeof *e->b);
    e->bstart = calloc((size_t)nb + 1, sizeof *e->bstart);
    if (!e->b || !e->bstart)
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
    for (int i = 0; i < e->nb; i++)
        e->b[i]->ops->close(e->b[i]);
    free(e->b);
    free(e->bstart);
    free(e->m);
    free(e->sub_metric);
    free(e->sub_ts);
    free(e->sub_value);
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
    int bi = backend_of(e, id);
    int rc = e->b[bi]->ops->metric_add(e->b[bi], id, p);
    if (rc)
        return rc;
    if (!e->m[id].live) {
        e->m[id] = (struct eng_metric){ .backend = (uint16_t)bi, .live = 1 };
        e->stats.metrics++;
    }
    return 0;
}

void ga_engine_metric_drop(struct ga_engine *e, uint32_t id)
{
    struct eng_metric *m = metric_at(e, id);
    if (!m)
        return;
    e->b[m->backend]->ops->metric_drop(e->b[m->backend], id);
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

/* Split pts per backend into the sub arrays; unknown ids go to out->late. */
static int split(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out)
{
    int rc = reserve_sub(e, pts->n);
    if (rc)
        return rc;
    size_t *bs = e->bstart;
    memset(bs, 0, ((size_t)e->nb + 1) * sizeof *bs);
    for (size_t i = 0; i < pts->n; i++) {
        const struct eng_metric *m = metric_at(e, pts->metric[i]);
        if (m)
            bs[m->backend + 1]++;
    }
    for (int b = 0; b < e->nb; b++)
        bs[b + 1] += bs[b];
    for (size_t i = 0; i < pts->n; i++) {
        const struct eng_metric *m = metric_at(e, pts->metric[i]);
        if (!m) {
            struct ga_late l = { .metric = pts->metric[i], .reason = GA_LATE_UNKNOWN_METRIC,
                                 .ts = pts->ts[i], .value = pts->value[i] };
            rc = ga_result_push_late(out, &l);
            if (rc)
                return rc;
            continue;
        }
        size_t at = bs[m->backend]++;
        e->sub_metric[at] = pts->metric[i];
        e->sub_ts[at] = pts->ts[i];
        e->sub_value[at] = pts->value[i];
    }
    for (int b = e->nb; b > 0; b--)          /* back to start offsets */
        bs[b] = bs[b - 1];
    bs[0] = 0;
    return 0;
}

int ga_engine_feed(struct ga_engine *e, const struct ga_points *pts, struct ga_result *out)
{
    size_t naggs0 = out->naggs, nlate0 = out->nlate;
    int rc = 0;
    if (e->nb == 1) {
        rc = e->b[0]->ops->feed(e->b[0], pts, out);
    } else {
        rc = split(e, pts, out);
        for (int b = 0; b < e->nb && !rc; b++) {
            struct ga_points sub = { .n = e->bstart[b + 1] - e->bstart[b],
                                     .metric = e->sub_metric + e->bstart[b],
                                     .ts = e->sub_ts + e->bstart[b],
                                     .value = e->sub_value + e->bstart[b] };
            if (sub.n)
                rc = e->b[b]->ops->feed(e->b[b], &sub, out);
        }
    }
    e->stats.points_in += pts->n;
    e->stats.aggs_out += out->naggs - naggs0;
    account_late(e, out, nlate0);
    if (!rc)
        e->stats.points_aggregated += pts->n - (out->nlate - nlate0);
    return rc;
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
