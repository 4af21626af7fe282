/* pg_writers.c — writers side by side, one per group of partitions (see
 * pg_writers.h). */
#include "storage/pg_writers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/base/grow.h"
#include "proto/ga_err.h"

/* One writer's share of a unit being split. */
struct share {
    struct ga_agg *aggs;
    size_t naggs, cap_aggs;
    uint8_t *agg_part;               /* per slot of aggs: the metric's partition */
    size_t cap_agg_part;
    struct ga_late *late;
    size_t nlate, cap_late;
    struct pg_writer_metric_def *defs;
    size_t ndefs, cap_defs;
    struct pg_writer_count *counts;
    size_t ncounts, cap_counts;
    struct pg_writer_window *windows;
    size_t nwindows, cap_windows;
};

struct slot {
    struct pg_writers *s;
    int i;
};

struct pg_writers {
    int n;
    struct pg_writer **w;
    struct slot *slots;
    struct share *share;
    uint64_t *parts;                  /* per writer: the partitions it owns */
    uint8_t writer_of[GA_PARTITIONS]; /* the writer of each partition */
    int masked;                       /* pg_writers_opts.parts set: always split */
    int (*partition_of)(void *ctx, uint32_t metric);
    void *pctx;
    void (*on_commit)(void *ctx, uint64_t committed_lsn, uint64_t window_lsn);
    void *ctx;
    pthread_mutex_t mu;               /* guards committed, window */
    int mu_ok;
    uint64_t *committed, *window;
};

static uint64_t lowest(const uint64_t *v, int n)
{
    uint64_t m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

/* A writer committed: the journal may go up to the lowest of all. */
static void on_commit(void *ctx, uint64_t committed_lsn, uint64_t window_lsn)
{
    struct slot *sl = ctx;
    struct pg_writers *s = sl->s;
    pthread_mutex_lock(&s->mu);
    s->committed[sl->i] = committed_lsn;
    s->window[sl->i] = window_lsn;
    uint64_t c = lowest(s->committed, s->n), wl = lowest(s->window, s->n);
    pthread_mutex_unlock(&s->mu);
    if (s->on_commit)
        s->on_commit(s->ctx, c, wl);
}

int pg_writers_start(struct pg_writers **out, const struct pg_writers_opts *o)
{
    if (o->nwriters < 1 || o->nwriters > GA_PARTITIONS ||
        ((o->nwriters > 1 || o->parts) && !o->partition_of))
        return GA_EINVAL;
    struct pg_writers *s = calloc(1, sizeof *s);
    if (!s)
        return GA_ENOMEM;
    int n = o->nwriters, owned = __builtin_popcountll(o->parts);
    if (o->parts && owned < n)
        n = owned;
    s->n = n;
    s->masked = o->parts != 0;
    s->partition_of = o->partition_of;
    s->pctx = o->pctx;
    s->on_commit = o->w.on_commit;
    s->ctx = o->w.ctx;
    s->w = calloc((size_t)n, sizeof *s->w);
    s->slots = calloc((size_t)n, sizeof *s->slots);
    s->share = calloc((size_t)n, sizeof *s->share);
    s->parts = calloc((size_t)n, sizeof *s->parts);
    s->committed = calloc((size_t)n, sizeof *s->committed);
    s->window = calloc((size_t)n, sizeof *s->window);
    if (!s->w || !s->slots || !s->share || !s->parts || !s->committed || !s->window) {
        pg_writers_stop(s, 0);
        return GA_ENOMEM;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->mu_ok = 1;
    for (int p = 0, k = 0; p < GA_PARTITIONS; p++) {
        if (o->parts && !(o->parts >> p & 1))
            continue;
        int i = o->parts ? k++ % n : p % n;
        s->parts[i] |= 1ULL << p;
        s->writer_of[p] = (uint8_t)i;
    }
    for (int i = 0; i < n; i++) {
        struct pg_writer_opts wo = o->w;
        s->slots[i] = (struct slot){ s, i };
        wo.parts = n > 1 || s->masked ? s->parts[i] : 0;
        wo.no_instance_lock = i > 0 || (s->masked && !o->instance_lock);  /* the first holds it */
        if (i > 0)
            wo.maintenance_interval_ms = -1; /* partitions ahead and retention: the first */
        wo.on_commit = on_commit;
        wo.ctx = &s->slots[i];
        s->committed[i] = o->w.committed_lsn;
        s->window[i] = o->w.window_lsn;
        int rc = pg_writer_start(&s->w[i], &wo);
        if (rc < 0) {
            pg_writers_stop(s, 0);
            return rc;
        }
    }
    *out = s;
    return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    return ga_grow(p, cap, need, elem, 256);
}

#define PUT(sh, field, val)                                                                  \
    (grow((void **)&(sh)->field, &(sh)->cap_##field, (sh)->n##field + 1, sizeof *(sh)->field) \
         ? GA_ENOMEM                                                                          \
         : ((sh)->field[(sh)->n##field++] = (val), 0))

/* The share of the writer of a metric's partition. */
static struct share *share_of(struct pg_writers *s, uint32_t metric)
{
    return &s->share[s->writer_of[s->partition_of(s->pctx, metric) % GA_PARTITIONS]];
}

/* Each slot's partition for a unit given whole to the only writer. */
static int tag_parts(struct pg_writers *s, const struct pg_writer_unit *u)
{
    struct share *sh = &s->share[0];
    if (grow((void **)&sh->agg_part, &sh->cap_agg_part, u->naggs, 1))
        return GA_ENOMEM;
    for (size_t i = 0; i < u->naggs;) {
        size_t span = ga_agg_span(&u->aggs[i]);
        if (span > u->naggs - i)
            span = u->naggs - i;
        memset(sh->agg_part + i, s->partition_of(s->pctx, u->aggs[i].metric) % GA_PARTITIONS,
               span);
        i += span;
    }
    return 0;
}

static int split(struct pg_writers *s, const struct pg_writer_unit *u)
{
    for (int i = 0; i < s->n; i++) {
        struct share *sh = &s->share[i];
        sh->naggs = sh->nlate = sh->ndefs = sh->ncounts = sh->nwindows = 0;
    }
    for (size_t i = 0; i < u->naggs;) {
        size_t span = ga_agg_span(&u->aggs[i]);
        if (span > u->naggs - i)
            break;                          /* cut short: no writer would read it either */
        int p = s->partition_of(s->pctx, u->aggs[i].metric) % GA_PARTITIONS;
        struct share *sh = &s->share[s->writer_of[p]];
        if (grow((void **)&sh->aggs, &sh->cap_aggs, sh->naggs + span, sizeof *sh->aggs) ||
            grow((void **)&sh->agg_part, &sh->cap_agg_part, sh->naggs + span, 1))
            return GA_ENOMEM;
        memcpy(sh->aggs + sh->naggs, &u->aggs[i], span * sizeof *sh->aggs);
        memset(sh->agg_part + sh->naggs, p, span);
        sh->naggs += span;
        i += span;
    }
    for (size_t i = 0; i < u->nlate; i++)
        if (PUT(share_of(s, u->late[i].metric), late, u->late[i]))
            return GA_ENOMEM;
    for (size_t i = 0; i < u->ndefs; i++)
        if (PUT(share_of(s, u->defs[i].id), defs, u->defs[i]))
            return GA_ENOMEM;
    for (size_t i = 0; i < u->ncounts; i++)
        if (PUT(share_of(s, u->counts[i].metric), counts,
                u->counts[i]))
            return GA_ENOMEM;
    for (size_t i = 0; i < u->nwindows; i++)
        if (PUT(share_of(s, u->windows[i].metric), windows,
                u->windows[i]))
            return GA_ENOMEM;
    return 0;
}

int pg_writers_submit(struct pg_writers *s, const struct pg_writer_unit *u, int (*stop)(void *sctx), void *sctx)
{
    int splitting = s->n > 1 || s->masked;
    if (splitting && split(s, u) < 0)
        return GA_ENOMEM;
    if (!splitting && s->partition_of && tag_parts(s, u) < 0)
        return GA_ENOMEM;
    for (int i = 0; i < s->n; i++) {
        struct pg_writer_unit part = *u;
        if (!splitting && s->partition_of)
            part.agg_part = s->share[0].agg_part;
        if (splitting) {
            const struct share *sh = &s->share[i];
            part = (struct pg_writer_unit){
                .aggs = sh->aggs, .naggs = sh->naggs, .agg_part = sh->agg_part, .late = sh->late, .nlate = sh->nlate,
                .defs = sh->defs, .ndefs = sh->ndefs, .counts = sh->counts,
                .ncounts = sh->ncounts, .windows = sh->windows, .nwindows = sh->nwindows,
                .lsn = u->lsn,
            };
            uint64_t cover = (u->window_parts ? u->window_parts : ~0ULL) & s->parts[i];
            if (u->window_lsn && cover) {
                part.window_lsn = u->window_lsn;
                part.window_parts = cover;
            }
        }
        for (;;) {
            int rc = pg_writer_submit(s->w[i], &part);
            if (rc != GA_EBUSY) {
                if (rc < 0)
                    return rc;
                break;
            }
            if (stop && stop(sctx))
                return GA_ESHUTDOWN;        /* still in the journal: replayed at the next start */
            struct timespec ts = { 0, 20 * 1000000 };
            nanosleep(&ts, NULL);
        }
    }
    return 0;
}

struct fan_in {
    pthread_mutex_t mu;
    int left, rc;
    uint64_t lsn;
    void (*cb)(void *ctx, int rc, uint64_t committed_lsn);
    void *ctx;
};

static void one_flushed(void *ctx, int rc, uint64_t committed_lsn)
{
    struct fan_in *f = ctx;
    pthread_mutex_lock(&f->mu);
    if (rc < 0 && f->rc == 0)
        f->rc = rc;
    if (committed_lsn < f->lsn)
        f->lsn = committed_lsn;
    int last = --f->left == 0;
    pthread_mutex_unlock(&f->mu);
    if (!last)
        return;
    f->cb(f->ctx, f->rc, f->rc ? 0 : f->lsn);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

int pg_writers_flush(struct pg_writers *s, void (*cb)(void *ctx, int rc, uint64_t committed_lsn), void *ctx)
{
    struct fan_in *f = calloc(1, sizeof *f);
    if (!f)
        return GA_ENOMEM;
    pthread_mutex_init(&f->mu, NULL);
    f->left = s->n;
    f->lsn = UINT64_MAX;
    f->cb = cb;
    f->ctx = ctx;
    for (int i = 0; i < s->n; i++)
        if (pg_writer_flush(s->w[i], one_flushed, f) < 0)
            one_flushed(f, GA_ESHUTDOWN, 0);
    return 0;
}

void pg_writers_set_tuning(struct pg_writers *s, int flush_rows, int flush_interval_ms)
{
    for (int i = 0; i < s->n; i++)
        pg_writer_set_tuning(s->w[i], flush_rows, flush_interval_ms, 0, 0);
}

/* How bad a state is, for picking the one to show. */
static int badness(enum pg_conn_state st)
{
    return st == PG_CONN_CONNECTED ? 0 : st == PG_CONN_STOPPED ? 1 : st == PG_CONN_CONNECTING ? 2 : 3;
}

void pg_writers_status_merge(struct pg_writer_status *st, const struct pg_writer_status *op, uint64_t parts)
{
    const struct pg_writer_status o = *op;
    if (badness(o.state) > badness(st->state) || (!st->last_error[0] && o.last_error[0])) {
        st->state = o.state;
        st->since_real_ns = o.since_real_ns;
        memcpy(st->last_error, o.last_error, sizeof st->last_error);
    }
#define MIN_(f) st->f = o.f < st->f ? o.f : st->f
#define MAX_(f) st->f = o.f > st->f ? o.f : st->f
#define SUM_(f) st->f += o.f
    MIN_(committed_lsn);
    MIN_(window_lsn);
    MAX_(submitted_lsn);
    MAX_(lag_s);
    MAX_(lag_lsn);
    SUM_(pending_rows);
    SUM_(pending_units);
    SUM_(rows_committed);
    SUM_(buckets_committed);
    SUM_(late_committed);
    SUM_(windows_committed);
    SUM_(defs_committed);
    SUM_(transactions);
    SUM_(retries);
    SUM_(connects);
    SUM_(units_skipped);
    SUM_(busy_refusals);
    SUM_(partitions_created);
    SUM_(partitions_dropped);
    SUM_(rows_fresh);
    SUM_(fresh_fallbacks);
    SUM_(rows_updated);
    SUM_(pairs_asked);
    SUM_(pairs_new);
    SUM_(update_fallbacks);
    SUM_(rows_merged);
    SUM_(rows_rejected);
    SUM_(isolations);
    SUM_(open_buckets);
    SUM_(open_blocks);
    SUM_(open_written);
    SUM_(open_blocks_written);
    SUM_(open_closed);
    SUM_(open_full);
    if (o.last_rejected[0])
        memcpy(st->last_rejected, o.last_rejected, sizeof st->last_rejected);
    SUM_(last_rows);
    MAX_(last_flush_ms);
    MAX_(last_copy_ms);
    MAX_(last_upsert_ms);
    MAX_(last_commit_ms);
    MAX_(last_fresh_ms);
    MAX_(fenced);
#undef MIN_
#undef MAX_
#undef SUM_
    for (int p = 0; p < GA_PARTITIONS; p++)
        if (parts >> p & 1)
            st->part_window_lsn[p] = o.part_window_lsn[p];
}

void pg_writers_get_status(struct pg_writers *s, struct pg_writer_status *st)
{
    pg_writer_get_status(s->w[0], st);
    for (int i = 1; i < s->n; i++) {
        struct pg_writer_status o;
        pg_writer_get_status(s->w[i], &o);
        pg_writers_status_merge(st, &o, s->parts[i]);
    }
}

static void ignore_flushed(void *ctx, int rc, uint64_t committed_lsn)
{
}

int pg_writers_stop(struct pg_writers *s, int timeout_ms)
{
    if (!s)
        return 0;
    int rc = 0;
    /* let every writer commit at once, all against one deadline, then
     * join them one by one */
    for (int i = 0; s->w && i < s->n; i++)
        if (s->w[i])
            pg_writer_flush(s->w[i], ignore_flushed, NULL);
    for (int i = 0; s->w && i < s->n; i++)
        pg_writer_stop_begin(s->w[i], timeout_ms);
    for (int i = 0; s->w && i < s->n; i++) {
        int r = s->w[i] ? pg_writer_stop(s->w[i], timeout_ms) : 0;   /* the earlier deadline holds */
        rc = rc ? rc : r;
    }
    for (int i = 0; s->share && i < s->n; i++) {
        struct share *sh = &s->share[i];
        free(sh->aggs);
        free(sh->agg_part);
        free(sh->late);
        free(sh->defs);
        free(sh->counts);
        free(sh->windows);
    }
    if (s->mu_ok)
        pthread_mutex_destroy(&s->mu);
    free(s->w);
    free(s->slots);
    free(s->share);
    free(s->parts);
    free(s->committed);
    free(s->window);
    free(s);
    return rc;
}
