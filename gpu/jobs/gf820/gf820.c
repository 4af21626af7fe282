/* gf820.c — GF820 validation, outer times and the CPU reference (see gf820.h). */
#include "gpu/jobs/gf820/gf820.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/jobs/gf820/gf820_impl.h"
#include "proto/ga_err.h"

#define ERR(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); } while (0)

int gf820_validate(const struct gf820_contract *c, size_t n, char *err, size_t errlen)
{
    if (n == 0 || !c) {
        ERR("no contracts");
        return GA_EBADARG;
    }
    if (n > GF820_MAX_CONTRACTS) {
        ERR("%zu contracts, at most %d in one job", n, GF820_MAX_CONTRACTS);
        return GA_EBADARG;
    }
    for (size_t i = 0; i < n; i++) {
        if (c[i].x < 0 || c[i].x > 119) {
            ERR("contract %zu: x = %d, the insured's age must be 0..119", i, c[i].x);
            return GA_EBADARG;
        }
        if (c[i].r < 0 || c[i].r > 120) {
            ERR("contract %zu: r = %d, the retirement age must be 0..120", i, c[i].r);
            return GA_EBADARG;
        }
        if (c[i].g < 0 || c[i].g > 120) {
            ERR("contract %zu: g = %d, the age difference must be 0..120", i, c[i].g);
            return GA_EBADARG;
        }
        if (c[i].steps < 1 || c[i].steps > GF820_MAX_STEPS) {
            ERR("contract %zu: steps = %d, must be 1..%d", i, c[i].steps, GF820_MAX_STEPS);
            return GA_EBADARG;
        }
    }
    return 0;
}

size_t gf820_outer_points(const struct gf820_contract *c)
{
    return (size_t)(120 - c->x) * (size_t)(2 * c->steps + 1);
}

void gf820_outer_times(const struct gf820_contract *c, double *t)
{
    int a = 120 - c->x, steps = c->steps;
    double h = -1.0 / steps;
    size_t i = 0;
    for (int y = a; y > 0; y--) {
        double ty = y;
        for (int s = 0; s < steps; s++) {
            t[i++] = ty;
            t[i++] = ty + h / 2;
            ty += h;                  /* Rk4.SolveAll: t += h inside a year */
        }
        t[i++] = ty;
    }
}

struct gf_job {
    const struct gf820_contract *c;
    const int *t_contract;            /* contract of each outer time */
    const double *t;                  /* all contracts' outer times */
    double *m;                        /* Middle value at each outer time */
    double *scratch;                  /* GF_ETA_POINTS per worker */
};

static void middle_item(void *ctx, size_t i, int worker)
{
    struct gf_job *j = ctx;
    const struct gf820_contract *c = &j->c[j->t_contract[i]];
    double tau = (double)c->x + j->t[i];
    double k = gf_k(c->g, c->r, tau);
    double *d = j->scratch + (size_t)worker * GF_ETA_POINTS;
    for (int e = 0; e < GF_ETA_POINTS; e++)
        d[e] = gf_middle_f(e, tau, k, c->steps);
    j->m[i] = gf_middle_combine(d);
}

int gf820_cpu(const struct gf820_contract *c, size_t n, double *v0, double *table, int threads,
              job_par_progress_fn cb, void *ud, char *err, size_t errlen)
{
    int rc = gf820_validate(c, n, err, errlen);
    if (rc)
        return rc;
    if (threads < 1 || threads > 1024) {
        ERR("threads = %d, must be 1..1024", threads);
        return GA_EBADARG;
    }
    size_t nt = 0;
    for (size_t i = 0; i < n; i++)
        nt += gf820_outer_points(&c[i]);
    struct gf_job j = { .c = c };
    int *tc = malloc(nt * sizeof *tc);
    double *t = malloc(nt * sizeof *t);
    double *m = malloc(nt * sizeof *m);
    double *scratch = malloc((size_t)threads * GF_ETA_POINTS * sizeof *scratch);
    double row[GF820_TABLE_LEN];
    rc = GA_ENOMEM;
    if (!tc || !t || !m || !scratch)
        goto out;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t np = gf820_outer_points(&c[i]);
        gf820_outer_times(&c[i], t + off);
        for (size_t p = 0; p < np; p++)
            tc[off + p] = (int)i;
        off += np;
    }
    j.t_contract = tc;
    j.t = t;
    j.m = m;
    j.scratch = scratch;
    size_t round = (size_t)threads * 16;
    rc = job_par_for(nt, threads, round, middle_item, &j, cb, ud);
    if (rc)
        goto out;
    off = 0;
    for (size_t i = 0; i < n; i++) {
        for (int y = 0; y < GF820_TABLE_LEN; y++)
            row[y] = NAN;
        v0[i] = gf_outer_solve(c[i].x, c[i].steps, t + off, m + off, row);
        if (table)
            memcpy(table + i * GF820_TABLE_LEN, row, sizeof row);
        off += gf820_outer_points(&c[i]);
    }
    rc = 0;
out:
    free(tc);
    free(t);
    free(m);
    free(scratch);
    return rc;
}
