/* engine_model.h — a naive model of carbonara + metricd for the engine tests.
 *
 * Written the slow, obvious way, straight from gnocchi/carbonara.py and
 * gnocchi/storage/__init__.py: per batch it recomputes EVERY bucket from
 * start_g = round(max(first, min batch ts), g) on, as metricd does, with
 * numpy's arithmetic (bincount sums, quantile's min_pos rounding).  Only the
 * documented differences are built in: last-received-wins duplicates,
 * NaN/Inf and ts < 0 rejected.  Header-only (static), for tests. */
#ifndef GA_ENGINE_MODEL_H
#define GA_ENGINE_MODEL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/engine.h"

struct model_row {
    int64_t g, b;
    ga_method_t m;
    double v;
};

struct model {
    const struct ga_policy *p;
    int64_t *ts;
    double *v;
    size_t n;
    struct model_row *rows;       /* rows of the last feed */
    size_t nrows;
    int64_t first_at_feed;        /* first point while the last feed computed */
    int64_t starts[GA_POLICY_MAX_DEFS][64];   /* past start_g per granularity */
    int nstarts[GA_POLICY_MAX_DEFS];
    uint64_t late[GA_LATE_OUT_OF_RANGE + 1];
};

static int model_cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int64_t model_floor(int64_t t, int64_t g) { return t / g * g; }

static void model_push(struct model *md, int64_t g, int64_t b, ga_method_t m, double v)
{
    md->rows = realloc(md->rows, (md->nrows + 1) * sizeof *md->rows);
    md->rows[md->nrows++] = (struct model_row){ g, b, m, v };
}

/* One method over x[0..n) with numpy's arithmetic; returns 0 if no value. */
static int model_method(ga_method_t m, const double *x, size_t n, int64_t min_pos, double *out)
{
    int base = GA_M_BASE(m);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    double *s = malloc((n + 1) * sizeof *s);
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, model_cmpd);
    int ok = 1;
    if (base == GA_M_MEAN) *out = sum / (double)n;
    else if (base == GA_M_SUM) *out = sum;
    else if (base == GA_M_MIN) *out = s[0];
    else if (base == GA_M_MAX) *out = s[n - 1];
    else if (base == GA_M_COUNT) *out = (double)n;
    else if (base == GA_M_FIRST) *out = x[0];
    else if (base == GA_M_LAST) *out = x[n - 1];
    else if (base == GA_M_STD) {
        if (n < 2) {
            ok = 0;
        } else {
            double mean = sum / (double)n, ss = 0;
            for (size_t i = 0; i < n; i++)
                ss += (x[i] - mean) * (x[i] - mean);
            *out = sqrt(ss / (double)(n - 1));
        }
    } else if (base == GA_M_MEDIAN) {
        size_t f = (n - 1) - n / 2, c = n % 2 ? f : f + 1;
        *out = (s[f] + s[c]) / 2.0;
    } else {
        double rp = (double)min_pos + (double)(n - 1) * ((double)GA_M_PCT_N(m) / 100.0);
        int64_t f = (int64_t)floor(rp), c = (int64_t)ceil(rp);
        if (f == c) {
            *out = s[f - min_pos];
        } else {
            double a = s[f - min_pos] * ((double)c - rp);
            double b = s[c - min_pos] * (rp - (double)f);
            *out = a + b;
        }
    }
    free(s);
    return ok;
}

/* All rows of granularity g from bucket start on, carbonara-style. */
static void model_granularity(struct model *md, int64_t g, int64_t timespan, int64_t start)
{
    const struct ga_policy *p = md->p;
    size_t base = 0, d0 = 0;
    while (base < md->n && md->ts[base] < start)
        base++;
    while (d0 < md->n && md->ts[d0] < start - g)
        d0++;
    size_t first_row = md->nrows;
    for (int mi = 0; mi < p->nmethods; mi++) {
        ga_method_t m = p->methods[mi];
        int rate = GA_M_IS_RATE(m);
        size_t mrow0 = md->nrows;
        int64_t pos = 0;                       /* numpy min_pos */
        size_t i = base;
        while (i < md->n) {
            int64_t b = model_floor(md->ts[i], g);
            size_t hi = i;
            while (hi < md->n && model_floor(md->ts[hi], g) == b)
                hi++;
            double *x = malloc((hi - i + 1) * sizeof *x);
            size_t nx = 0;
            for (size_t k = i; k < hi; k++) {
                if (!rate)
                    x[nx++] = md->v[k];
                else if (k >= d0 + 1)
                    x[nx++] = md->v[k] - md->v[k - 1];
            }
            double val;
            if (nx && model_method(m, x, nx, pos, &val))
                model_push(md, g, b, m, val);
            pos += (int64_t)nx;
            free(x);
            i = hi;
        }
        /* AggregatedTimeSerie.truncate(timespan): relative to its own last */
        if (timespan && md->nrows > mrow0) {
            int64_t last = md->rows[md->nrows - 1].b;
            size_t w = mrow0;
            for (size_t r = mrow0; r < md->nrows; r++)
                if (md->rows[r].b > last - timespan)
                    md->rows[w++] = md->rows[r];
            md->nrows = w;
        }
    }
    (void)first_row;
}

/* Feed one metric's share of a batch (arrival order). */
static void model_feed(struct model *md, const int64_t *ts, const double *v, size_t k)
{
    const struct ga_policy *p = md->p;
    int64_t block = p->defs[p->ndefs - 1].granularity_ns;
    int64_t bw = p->back_window + (ga_policy_has_rate(p) ? 1 : 0);
    int64_t fbt = md->n ? model_floor(md->ts[md->n - 1], block) - block * bw : INT64_MIN;
    int64_t tmin = INT64_MAX;
    size_t nacc = 0;
    md->nrows = 0;
    for (size_t i = 0; i < k; i++) {
        if (ts[i] < 0) { md->late[GA_LATE_BEFORE_EPOCH]++; continue; }
        if (ts[i] > GA_TS_MAX) { md->late[GA_LATE_OUT_OF_RANGE]++; continue; }
        if (!isfinite(v[i])) { md->late[GA_LATE_NONFINITE]++; continue; }
        tmin = ts[i] < tmin ? ts[i] : tmin;
        if (ts[i] < fbt) { md->late[GA_LATE_WINDOW]++; continue; }
        nacc++;
        size_t at = 0;                         /* insert, replacing an equal ts */
        while (at < md->n && md->ts[at] < ts[i])
            at++;
        if (at < md->n && md->ts[at] == ts[i]) {
            md->v[at] = v[i];
            continue;
        }
        md->ts = realloc(md->ts, (md->n + 1) * sizeof *md->ts);
        md->v = realloc(md->v, (md->n + 1) * sizeof *md->v);
        memmove(md->ts + at + 1, md->ts + at, (md->n - at) * sizeof *md->ts);
        memmove(md->v + at + 1, md->v + at, (md->n - at) * sizeof *md->v);
        md->ts[at] = ts[i];
        md->v[at] = v[i];
        md->n++;
    }
    if (!nacc)
        return;
    int64_t tstamp = md->ts[0] > tmin ? md->ts[0] : tmin;
    md->first_at_feed = md->ts[0];
    for (int d = 0; d < p->ndefs; d++) {
        int64_t g = p->defs[d].granularity_ns;
        if (md->nstarts[d] < 64)
            md->starts[d][md->nstarts[d]++] = model_floor(tstamp, g);
        model_granularity(md, g, p->defs[d].timespan_ns, model_floor(tstamp, g));
    }
    int64_t nf = model_floor(md->ts[md->n - 1], block) - block * bw;
    size_t cut = 0;
    while (cut < md->n && md->ts[cut] < nf)
        cut++;
    memmove(md->ts, md->ts + cut, (md->n - cut) * sizeof *md->ts);
    memmove(md->v, md->v + cut, (md->n - cut) * sizeof *md->v);
    md->n -= cut;
}

static const struct model_row *model_find(const struct model *md, int64_t g, ga_method_t m,
                                          int64_t b)
{
    for (size_t r = 0; r < md->nrows; r++)
        if (md->rows[r].g == g && md->rows[r].m == m && md->rows[r].b == b)
            return &md->rows[r];
    return NULL;
}

static void model_free(struct model *md)
{
    free(md->ts);
    free(md->v);
    free(md->rows);
}


/* 1 if bucket b of definition d was the first recomputed bucket of an
 * earlier feed (carbonara's rate: rule then depends on history). */
static int model_was_start(const struct model *md, int d, int64_t b)
{
    for (int i = 0; i + 1 < md->nstarts[d]; i++)
        if (md->starts[d][i] == b)
            return 1;
    return 0;
}

#endif
