/* kmeans.c — CPU reference of the k-means kernel (see kmeans.h).
 *
 * The summation order is the GPU's (docs/JOBS.md): tile b holds objects
 * b*TILE + r*256 + t (lane t, row r); lane t sums its members row by row from
 * 0.0; the 256 lane sums meet in the block tree (tree256); tile partials of
 * one (cluster, coordinate) are summed by 256 "threads" (thread t takes tiles
 * t, t+256, ... in order) and the 256 results meet in tree256 again. */
#include "gpu/jobs/kmeans/kmeans.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/jobs/kmeans/kmeans_model.h"
#include "proto/base/pool.h"
#include "proto/ga_err.h"

void ga_kmeans_params_default(struct ga_kmeans_params *p)
{
    memset(p, 0, sizeof *p);
    p->max_loops = 10;
    p->threshold = 0.001;
}

int ga_kmeans_validate(const struct ga_kmeans_params *p, char *err, size_t errlen)
{
    if (!p) {
        snprintf(err, errlen, "kmeans: params missing");
        return GA_EBADARG;
    }
    if (p->k < 1 || p->k > GA_KMEANS_K_MAX) {
        snprintf(err, errlen, "k must be in 1..%d, got %d", GA_KMEANS_K_MAX, p->k);
        return GA_EBADARG;
    }
    if (p->coords < 1 || p->coords > GA_KMEANS_COORDS_MAX) {
        snprintf(err, errlen, "coords must be in 1..%d, got %d", GA_KMEANS_COORDS_MAX, p->coords);
        return GA_EBADARG;
    }
    if (p->nobjs < p->k || p->nobjs > GA_KMEANS_NOBJS_MAX) {
        snprintf(err, errlen, "nobjs must be in k..%lld (k = %d), got %lld", (long long)GA_KMEANS_NOBJS_MAX, p->k,
                 (long long)p->nobjs);
        return GA_EBADARG;
    }
    if (p->max_loops < 1 || p->max_loops > GA_KMEANS_LOOPS_MAX) {
        snprintf(err, errlen, "max_loops must be in 1..%d, got %d", GA_KMEANS_LOOPS_MAX, p->max_loops);
        return GA_EBADARG;
    }
    if (!(p->threshold >= 0.0 && p->threshold <= 1.0)) {
        snprintf(err, errlen, "threshold must be in 0..1, got %g", p->threshold);
        return GA_EBADARG;
    }
    if (p->sync_every < 0) {
        snprintf(err, errlen, "sync_every must be >= 0, got %d", p->sync_every);
        return GA_EBADARG;
    }
    if (p->kernel < GA_KMEANS_KERNEL_AUTO || p->kernel > GA_KMEANS_KERNEL_GENERIC) {
        snprintf(err, errlen, "kernel must be in 0..%d, got %d", GA_KMEANS_KERNEL_GENERIC, p->kernel);
        return GA_EBADARG;
    }
    if ((p->kernel == GA_KMEANS_KERNEL_LANE || p->kernel == GA_KMEANS_KERNEL_REG) &&
        !ga_kmeans_kernel_small(p->k, p->coords)) {
        snprintf(err, errlen, "kernel %s serves coords <= 2 with k <= 32 and coords <= 4 with k <= 16, got coords %d, k %d",
                 ga_kmeans_kernel_name(p->kernel), p->coords, p->k);
        return GA_EBADARG;
    }
    return 0;
}

int ga_kmeans_kernel_small(int k, int coords)
{
    return k >= 1 && ((coords >= 1 && coords <= 2 && k <= 32) || (coords >= 3 && coords <= 4 && k <= 16));
}

const char *ga_kmeans_kernel_name(int kernel)
{
    switch (kernel) {
    case GA_KMEANS_KERNEL_AUTO: return "auto";
    case GA_KMEANS_KERNEL_LANE: return "lane";
    case GA_KMEANS_KERNEL_REG: return "reg";
    case GA_KMEANS_KERNEL_GENERIC: return "generic";
    default: return "?";
    }
}

int ga_kmeans_validate_objects(const double *objs, int64_t nobjs, int coords, char *err, size_t errlen)
{
    if (!objs) {
        snprintf(err, errlen, "kmeans: objects missing");
        return GA_EBADARG;
    }
    for (int64_t i = 0; i < nobjs; i++)
        for (int j = 0; j < coords; j++)
            if (!isfinite(objs[i * coords + j])) {
                snprintf(err, errlen, "object %lld coordinate %d must be finite, got %g", (long long)i, j,
                         objs[i * coords + j]);
                return GA_EBADARG;
            }
    return 0;
}

int64_t ga_kmeans_lab_nobjs(int64_t mb, int coords)
{
    return coords > 0 ? mb * 1024 * 1024 / ((int64_t)coords * (int64_t)sizeof(double)) : 0;
}

int ga_kmeans_rand_r(unsigned int *seed)
{
    return ga_km_rand_r(seed);
}

void ga_kmeans_generate(double *objs, int64_t nobjs, int coords)
{
    for (int64_t i = 0; i < nobjs; i++) {
        unsigned int seed = (unsigned int)i;
        for (int j = 0; j < coords; j++)
            objs[i * coords + j] = ga_km_lab_value(&seed);
    }
}

/* The GPU block tree over 256 values: in each warp of 32, v[l] += v[l+off]
 * for off = 16, 8, 4, 2, 1; then the 8 warp sums the same way (off 4, 2, 1). */
static double tree256(double *v)
{
    double w[8];
    for (int g = 0; g < 8; g++) {
        double *x = v + 32 * g;
        for (int off = 16; off >= 1; off >>= 1)
            for (int l = 0; l < off; l++)
                x[l] = x[l] + x[l + off];
        w[g] = x[0];
    }
    for (int off = 4; off >= 1; off >>= 1)
        for (int l = 0; l < off; l++)
            w[l] = w[l] + w[l + off];
    return w[0];
}

struct scratch {
    int32_t *order;   /* TILE: tile slots grouped by cluster */
    int32_t *start;   /* k+1 */
    double *lane;     /* 256 */
    double *acc;      /* C */
};

struct km {
    const struct ga_kmeans_params *p;
    const double *objs;
    double *centres;          /* k*C */
    int32_t *member;          /* nobjs */
    double *psum;             /* [k*C][ntiles] */
    int64_t *pcount;          /* [k][ntiles] */
    int64_t ntiles;
    struct scratch *scr;      /* one per worker */
    int64_t *changed;         /* one per worker */
};


static void do_tile(struct km *m, struct scratch *s, int64_t b, int64_t *changed)
{
    const int C = m->p->coords, k = m->p->k;
    const int64_t n = m->p->nobjs, base = b * GA_KMEANS_TILE;
    const double *cen = m->centres;
    int present = 0;
    /* Assign (slot = r*256 + t is object base + slot). */
    memset(s->start, 0, sizeof(int32_t) * (size_t)(k + 1));
    for (int slot = 0; slot < GA_KMEANS_TILE; slot++) {
        int64_t i = base + slot;
        if (i >= n)
            break;
        const double *x = m->objs + i * C;
        int best = 0;
        double bd = 0.0;
        for (int c = 0; c < k; c++) {
            const double *cc = cen + (int64_t)c * C;
            double d = ga_km_sq(GA_KM_SUB(x[0], cc[0]));
            for (int j = 1; j < C; j++)
                d = GA_KM_ADD(d, ga_km_sq(GA_KM_SUB(x[j], cc[j])));
            if (c == 0 || d < bd) {
                bd = d;
                best = c;
            }
        }
        if (m->member[i] != best) {
            m->member[i] = best;
            (*changed)++;
        }
        s->start[best + 1]++;
        present++;
    }
    /* Group slots by cluster, lane-major then row (t outer, r inner). */
    for (int c = 0; c < k; c++)
        s->start[c + 1] += s->start[c];
    int32_t *fill = s->order + GA_KMEANS_TILE;   /* second half: write cursors */
    for (int c = 0; c < k; c++)
        fill[c] = s->start[c];
    for (int t = 0; t < GA_KMEANS_LANES; t++)
        for (int r = 0; r < GA_KMEANS_ROWS; r++) {
            int slot = r * GA_KMEANS_LANES + t;
            if (base + slot >= n)
                continue;
            s->order[fill[m->member[base + slot]]++] = slot;
        }
    (void)present;
    for (int c = 0; c < k; c++) {
        int a = s->start[c], e = s->start[c + 1];
        m->pcount[(int64_t)c * m->ntiles + b] = e - a;
        for (int j = 0; j < C; j++) {
            double *dst = &m->psum[((int64_t)c * C + j) * m->ntiles + b];
            if (a == e) {
                *dst = 0.0;
                continue;
            }
            memset(s->lane, 0, sizeof(double) * GA_KMEANS_LANES);
            for (int q = a; q < e; q++) {
                int slot = s->order[q];
                int t = slot % GA_KMEANS_LANES;
                s->lane[t] = s->lane[t] + m->objs[(base + slot) * C + j];
            }
            *dst = tree256(s->lane);
        }
    }
}

/* Tile b, on a worker of the loop's pool. */
static void tile_item(void *arg, size_t b, int worker)
{
    struct km *m = arg;
    do_tile(m, &m->scr[worker], (int64_t)b, &m->changed[worker]);
}

/* New centres from the tile partials, in the GPU's finalize order. */
static void finalize(struct km *m)
{
    const int C = m->p->coords, k = m->p->k;
    double v[GA_KMEANS_LANES];
    for (int c = 0; c < k; c++) {
        int64_t cnt = 0;
        for (int64_t b = 0; b < m->ntiles; b++)
            cnt += m->pcount[(int64_t)c * m->ntiles + b];
        for (int j = 0; j < C; j++) {
            const double *ps = &m->psum[((int64_t)c * C + j) * m->ntiles];
            for (int t = 0; t < GA_KMEANS_LANES; t++) {
                double acc = 0.0;
                for (int64_t b = t; b < m->ntiles; b += GA_KMEANS_LANES)
                    acc = acc + ps[b];
                v[t] = acc;
            }
            double sum = tree256(v);
            if (cnt > 0)
                m->centres[(int64_t)c * C + j] = sum / (double)cnt;
        }
    }
}

int ga_kmeans_cpu(const struct ga_kmeans_params *p, const double *objs, struct ga_kmeans_result *res,
                  int nthreads, ga_kmeans_progress_fn fn, void *arg, char *err, size_t errlen)
{
    int rc = ga_kmeans_validate(p, err, errlen);
    if (rc)
        return rc;
    if (!objs || !res || !res->centres) {
        snprintf(err, errlen, "kmeans: objects and result centres must not be NULL");
        return GA_EBADARG;
    }
    const int C = p->coords, k = p->k;
    struct km m = { .p = p, .objs = objs, .centres = res->centres };
    struct pool *pool = NULL;
    m.ntiles = (p->nobjs + GA_KMEANS_TILE - 1) / GA_KMEANS_TILE;
    m.member = res->membership ? res->membership : malloc(sizeof(int32_t) * (size_t)p->nobjs);
    m.psum = malloc(sizeof(double) * (size_t)k * C * (size_t)m.ntiles);
    m.pcount = malloc(sizeof(int64_t) * (size_t)k * (size_t)m.ntiles);
    if (!m.member || !m.psum || !m.pcount) {
        rc = GA_ENOMEM;
        goto out;
    }
    for (int64_t i = 0; i < p->nobjs; i++)
        m.member[i] = -1;
    memcpy(res->centres, objs, sizeof(double) * (size_t)k * C);
    if (nthreads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = c > 0 ? (int)c : 1;
    }
    if (nthreads > m.ntiles)
        nthreads = (int)m.ntiles;
    if (nthreads > 256)
        nthreads = 256;
    m.scr = calloc((size_t)nthreads, sizeof *m.scr);
    m.changed = calloc((size_t)nthreads, sizeof *m.changed);
    if (!m.scr || !m.changed || pool_open(&pool, nthreads, NULL) != 0) {
        rc = GA_ENOMEM;
        goto out;
    }
    for (int t = 0; t < nthreads; t++) {
        struct scratch *sc = &m.scr[t];
        sc->order = malloc(sizeof(int32_t) * (2 * GA_KMEANS_TILE + (size_t)k));
        sc->start = malloc(sizeof(int32_t) * ((size_t)k + 1));
        sc->lane = malloc(sizeof(double) * GA_KMEANS_LANES);
        if (!sc->order || !sc->start || !sc->lane) {
            rc = GA_ENOMEM;
            goto out;
        }
    }
    res->loops = 0;
    res->delta = 0.0;
    for (int loop = 1; loop <= p->max_loops; loop++) {
        int64_t changed = 0;
        memset(m.changed, 0, sizeof *m.changed * (size_t)nthreads);
        pool_run(pool, (size_t)m.ntiles, tile_item, &m);
        for (int t = 0; t < nthreads; t++)
            changed += m.changed[t];
        finalize(&m);
        res->loops = loop;
        res->delta = (double)changed / (double)p->nobjs;
        if (fn && fn(arg, loop, res->delta)) {
            rc = GA_ECANCELED;
            snprintf(err, errlen, "kmeans: cancelled after %d loops", loop);
            break;
        }
        if (res->delta <= p->threshold)
            break;
    }
out:
    pool_close(pool);
    for (int t = 0; m.scr && t < nthreads; t++) {
        free(m.scr[t].order);
        free(m.scr[t].start);
        free(m.scr[t].lane);
    }
    free(m.scr);
    free(m.changed);
    if (m.member != res->membership)
        free(m.member);
    free(m.psum);
    free(m.pcount);
    return rc;
}
