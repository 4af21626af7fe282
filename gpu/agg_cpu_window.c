/* agg_cpu_window.c — one metric's raw window and what a batch does to it.
 *
 * This is carbonara's BoundTimeSerie.set_values() with metricd's callback
 * (gnocchi/storage/__init__.py add_measures_to_metrics), per metric:
 *
 *   fbt_old = floor(last / block) * block - block * bw   (window non-empty)
 *   points with ts < fbt_old are late (carbonara drops them silently);
 *   the rest are merged, a new point replacing an old one at the same ts;
 *   tstamp = max(first point of the merged window, min ts of the batch);
 *   for each granularity g, carbonara recomputes every bucket from
 *   start_g = floor(tstamp / g) * g on; rate: differences come from the
 *   points from start_g - g on (so the first point of bucket start_g has a
 *   difference only when a point lies in [start_g - g, start_g));
 *   the window is then cut at the new fbt.
 *
 * We compute only the buckets whose values can have changed: those holding
 * a new point and, for rate: methods, the bucket of the point right after
 * each run of new points (its difference changed).  The other recomputed
 * buckets would come out the same, bit for bit. */
#include "gpu/agg_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/ga_time.h"

static int64_t bucket_of(int64_t ts, int64_t g)
{
    return ts - ts % g;                        /* ts >= 0: floor */
}

/* First i in [lo, hi) with ts[i] >= key, hi if none. */
static size_t lower_bound(const int64_t *ts, size_t lo, size_t hi, int64_t key)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* First i in [lo, hi) past bucket b (ts[i] - b >= g; no overflow). */
static size_t bucket_end(const int64_t *ts, size_t lo, size_t hi, int64_t b, int64_t g)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts[mid] - b < g)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int agg_win_reserve(struct agg_win *w, size_t n)
{
    if (n <= w->cap)
        return 0;
    size_t cap = w->cap ? w->cap : 16;
    while (cap < n)
        cap += cap / 2 + 16;
    int64_t *ts = realloc(w->ts, cap * sizeof *ts);
    if (!ts)
        return GA_ENOMEM;
    w->ts = ts;
    double *val = realloc(w->val, cap * sizeof *val);
    if (!val)
        return GA_ENOMEM;                      /* ts grew; contents intact */
    w->val = val;
    w->cap = cap;
    return 0;
}

/* ---- phase 1 ------------------------------------------------------------- */

void agg_job_stage(struct agg_job *j, struct agg_stage *st, struct agg_scratch *s)
{
    const struct agg_win *w = j->w;
    const struct agg_pol *pol = j->pol;
    int64_t *ts = st->ts + j->off;
    double *val = st->val + j->off;
    int64_t fbt = w->n ? agg_pol_first_block(pol, w->ts[w->n - 1]) : INT64_MIN;
    j->err = agg_scratch_reserve_pairs(s, j->k);
    if (j->err)
        return;

    /* Partition: accepted to the front in order, late to the scratch. */
    size_t a = 0, nl = 0;
    int64_t tmin = INT64_MAX;
    for (size_t i = 0; i < j->k; i++) {
        int64_t t = ts[i];
        double v = val[i];
        uint8_t why = 0;
        if (t < GA_TS_MIN) {
            why = GA_LATE_BEFORE_EPOCH;
        } else if (t > GA_TS_MAX) {
            why = GA_LATE_OUT_OF_RANGE;
        } else if (!isfinite(v)) {
            why = GA_LATE_NONFINITE;
        } else {
            tmin = t < tmin ? t : tmin;
            if (t < fbt)
                why = GA_LATE_WINDOW;
        }
        if (why) {
            s->ts[nl] = t;
            s->val[nl] = v;
            st->reason[j->off + nl] = why;    /* reason[] is free until we move it */
            nl++;
        } else {
            ts[a] = t;
            val[a] = v;
            a++;
        }
    }
    /* Late points go to the tail of the slice, still in arrival order. */
    j->late_at = j->off + a;
    j->nlate = nl;
    memmove(st->reason + j->late_at, st->reason + j->off, nl);
    memcpy(ts + a, s->ts, nl * sizeof *ts);
    memcpy(val + a, s->val, nl * sizeof *val);
    j->tmin = tmin;

    /* Sort (stable) and keep the last received of equal timestamps. */
    agg_sort_pairs(ts, val, a, s->ts, s->val);
    size_t u = 0;
    for (size_t i = 0; i < a; i++) {
        if (i + 1 < a && ts[i + 1] == ts[i])
            continue;
        ts[u] = ts[i];
        val[u] = val[i];
        u++;
    }
    j->nacc = u;

    j->err = agg_win_reserve(j->w, w->n + u);
    if (j->err)
        return;
    j->need_buf = w->n + u;

    /* Rows: per granularity, u_g buckets hold new points, and rate: methods
     * may touch one more bucket (the successor's) per such bucket. */
    size_t bound = 0;
    for (int d = 0; d < pol->p.ndefs && u; d++) {
        int64_t g = pol->p.defs[d].granularity_ns;
        size_t ug = 1;
        int64_t b = bucket_of(ts[0], g);
        for (size_t i = 1; i < u; i++) {
            if (ts[i] - b >= g) {
                b = bucket_of(ts[i], g);
                ug++;
            }
        }
        bound += ug * (size_t)pol->nplain + 2 * ug * (size_t)pol->nrate;
    }
    j->agg_bound = bound;
}

/* ---- phase 2 ------------------------------------------------------------- */

/* Merge the staged new points into the window (new wins on equal ts);
 * pos[i] receives the merged index of new point i. */
static void merge_new(struct agg_win *w, const int64_t *nts, const double *nval, size_t u,
                      uint32_t *pos)
{
    size_t n = w->n;
    /* count duplicates to know the final size, then merge from the back */
    size_t i = lower_bound(w->ts, 0, n, nts[0]), k = 0, dups = 0;
    while (i < n && k < u) {
        if (w->ts[i] < nts[k])
            i++;
        else if (w->ts[i] > nts[k])
            k++;
        else {
            dups++;
            i++;
            k++;
        }
    }
    size_t total = n + u - dups;
    size_t wi = total, oi = n, ni = u;         /* one past, so unsigned works */
    while (ni > 0) {
        if (oi > 0 && w->ts[oi - 1] > nts[ni - 1]) {
            wi--, oi--;
            w->ts[wi] = w->ts[oi];
            w->val[wi] = w->val[oi];
        } else {
            if (oi > 0 && w->ts[oi - 1] == nts[ni - 1])
                oi--;                          /* replaced */
            wi--, ni--;
            w->ts[wi] = nts[ni];
            w->val[wi] = nval[ni];
            pos[ni] = (uint32_t)wi;
        }
    }
    w->n = total;
}

/* Newest bucket >= base of which a std-like method (needs two inputs) emits
 * a value: the bucket of the newest adjacent pair in one bucket, both
 * inputs at index >= first.  -1 if none. */
static int64_t last_pair_bucket(const int64_t *ts, size_t n, size_t first, int64_t g)
{
    for (size_t i = n; i-- > first + 1;)
        if (bucket_of(ts[i - 1], g) == bucket_of(ts[i], g))
            return bucket_of(ts[i], g);
    return -1;
}

struct gran_ctx {
    const struct agg_win *w;
    const struct agg_pol *pol;
    struct agg_scratch *s;
    int64_t g, timespan;
    size_t base;                  /* first point >= start_g */
    size_t dfirst;                /* first point with a rate: difference */
    size_t fd;                    /* max(base, dfirst): numpy offset origin */
    int64_t last_plain, last_std, last_rate, last_rstd;   /* -1: none */
};

static int allowed(int64_t b, int64_t last, int64_t timespan)
{
    if (!timespan)
        return 1;
    return last >= 0 && b > last - timespan;
}

static size_t do_bucket(const struct gran_ctx *c, size_t lo, size_t hi, int64_t b, int plain,
                        struct ga_agg *rows)
{
    const struct agg_pol *pol = c->pol;
    struct agg_emit e = { .metric = c->w->id, .g = c->g, .b = b };
    size_t nr = 0;
    if (plain && pol->nplain) {
        e.allow_other = allowed(b, c->last_plain, c->timespan);
        e.allow_std = allowed(b, c->last_std, c->timespan);
        nr += agg_kern_bucket(c->w->val + lo, hi - lo, (int64_t)(lo - c->base), pol->plain,
                              pol->nplain, pol->plain_need, c->s->sortbuf, &e, rows);
    }
    size_t dlo = lo > c->dfirst ? lo : c->dfirst;
    if (pol->nrate && dlo < hi) {
        e.allow_other = allowed(b, c->last_rate, c->timespan);
        e.allow_std = allowed(b, c->last_rstd, c->timespan);
        const double *v = c->w->val;
        double *d = c->s->diff;
        for (size_t i = dlo; i < hi; i++)
            d[i - dlo] = v[i] - v[i - 1];
        nr += agg_kern_bucket(d, hi - dlo, (int64_t)(dlo - c->fd), pol->rate, pol->nrate,
                              pol->rate_need, c->s->sortbuf, &e, rows + nr);
    }
    return nr;
}

void agg_job_apply(struct agg_job *j, struct agg_stage *st, struct agg_scratch *s,
                   struct ga_agg *rows)
{
    struct agg_win *w = j->w;
    const struct agg_pol *pol = j->pol;
    size_t u = j->nacc, nr = 0;
    j->naggs = 0;
    if (!u)
        return;
    const int64_t *nts = st->ts + j->off;
    uint32_t *pos = st->pos + j->off;
    merge_new(w, nts, st->val + j->off, u, pos);
    size_t n = w->n;
    const int64_t *ts = w->ts;
    int64_t tstamp = ts[0] > j->tmin ? ts[0] : j->tmin;

    for (int d = 0; d < pol->p.ndefs; d++) {
        struct gran_ctx c = { .w = w, .pol = pol, .s = s };
        c.g = pol->p.defs[d].granularity_ns;
        c.timespan = pol->p.defs[d].timespan_ns;
        int64_t start = bucket_of(tstamp, c.g);
        c.base = lower_bound(ts, 0, n, start);
        c.dfirst = lower_bound(ts, 0, c.base, start - c.g) + 1;
        c.fd = c.base > c.dfirst ? c.base : c.dfirst;
        if (c.timespan) {
            c.last_plain = bucket_of(ts[n - 1], c.g);
            c.last_std = last_pair_bucket(ts, n, c.base, c.g);
            c.last_rate = n - 1 >= c.fd ? c.last_plain : -1;
            c.last_rstd = last_pair_bucket(ts, n, c.fd, c.g);
        }
        size_t k = 0, prev_hi = 0;
        while (k < u) {
            int64_t b = bucket_of(nts[k], c.g);
            size_t k2 = k + 1;
            while (k2 < u && nts[k2] - b < c.g)
                k2++;
            size_t lo = lower_bound(ts, prev_hi, pos[k] + 1, b);
            size_t hi = bucket_end(ts, pos[k2 - 1] + 1, n, b, c.g);
            nr += do_bucket(&c, lo, hi, b, 1, rows + nr);
            prev_hi = hi;
            /* rate: the point after this run changed its difference */
            if (pol->nrate && hi < n && hi == (size_t)pos[k2 - 1] + 1) {
                int64_t sb = bucket_of(ts[hi], c.g);
                if (k2 >= u || bucket_of(nts[k2], c.g) != sb) {
                    size_t shi = bucket_end(ts, hi + 1, n, sb, c.g);
                    nr += do_bucket(&c, hi, shi, sb, 0, rows + nr);
                    prev_hi = shi;
                }
            }
            k = k2;
        }
    }
    j->naggs = nr;
    agg_win_truncate(w, pol);
}

void agg_win_truncate(struct agg_win *w, const struct agg_pol *pol)
{
    size_t n = w->n;
    if (!n)
        return;
    size_t cut = lower_bound(w->ts, 0, n, agg_pol_first_block(pol, w->ts[n - 1]));
    if (cut) {
        memmove(w->ts, w->ts + cut, (n - cut) * sizeof *w->ts);
        memmove(w->val, w->val + cut, (n - cut) * sizeof *w->val);
        w->n = n - cut;
    }
}
