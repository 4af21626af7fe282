/* apd.c — APD fit: parameters, validation and the CPU reference (see apd.h). */
#include "gpu/jobs/apd/apd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/jobs/apd/apd_priv.h"
#include "gpu/jobs/special_fn.h"
#include "proto/ga_err.h"

#define ERR(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); } while (0)

void apd_params_default(struct apd_params *p)
{
    memset(p, 0, sizeof *p);
    p->window = 500;
    p->stride = 1;
    p->n_lambda = 80;
    p->lambda_lo = 0.5;
    p->lambda_hi = 4.0;
    p->n_quantiles = 2;
    p->quantiles[0] = 0.01;
    p->quantiles[1] = 0.05;
}

int apd_validate(const struct apd_params *p, size_t n_series, char *err, size_t errlen)
{
    if (!p) {
        ERR("no parameters");
        return GA_EBADARG;
    }
    if (p->window < 4 || p->window > APD_MAX_WINDOW) {
        ERR("window = %zu, must be 4..%d", p->window, APD_MAX_WINDOW);
        return GA_EBADARG;
    }
    if (p->stride < 1) {
        ERR("stride = %zu, must be >= 1", p->stride);
        return GA_EBADARG;
    }
    if (p->n_lambda < 1 || p->n_lambda > APD_MAX_LAMBDAS) {
        ERR("n_lambda = %d, must be 1..%d", p->n_lambda, APD_MAX_LAMBDAS);
        return GA_EBADARG;
    }
    if (!(p->lambda_lo >= 0.05) || !(p->lambda_hi <= 50.0) || !(p->lambda_lo <= p->lambda_hi)) {
        ERR("lambda range [%g, %g], must satisfy 0.05 <= lo <= hi <= 50", p->lambda_lo, p->lambda_hi);
        return GA_EBADARG;
    }
    if (p->n_lambda == 1 && p->lambda_lo != p->lambda_hi) {
        ERR("n_lambda = 1 needs lambda_lo == lambda_hi (got %g, %g)", p->lambda_lo, p->lambda_hi);
        return GA_EBADARG;
    }
    if (p->n_lambda > 1 && !(p->lambda_lo < p->lambda_hi)) {
        ERR("n_lambda = %d needs lambda_lo < lambda_hi (got %g, %g)", p->n_lambda, p->lambda_lo, p->lambda_hi);
        return GA_EBADARG;
    }
    if (p->n_quantiles < 0 || p->n_quantiles > APD_MAX_QUANTILES) {
        ERR("n_quantiles = %d, must be 0..%d", p->n_quantiles, APD_MAX_QUANTILES);
        return GA_EBADARG;
    }
    for (int m = 0; m < p->n_quantiles; m++) {
        if (!(p->quantiles[m] > 0.0 && p->quantiles[m] < 1.0)) {
            ERR("quantiles[%d] = %g, must be in (0, 1)", m, p->quantiles[m]);
            return GA_EBADARG;
        }
    }
    if (p->gpu_chunk != 0 && p->gpu_chunk != 8 && p->gpu_chunk != 16 && p->gpu_chunk != 20) {
        ERR("gpu_chunk = %d, must be 0, 8, 16 or 20", p->gpu_chunk);
        return GA_EBADARG;
    }
    if (n_series < p->window) {
        ERR("series of %zu values is shorter than one window (%zu)", n_series, p->window);
        return GA_EBADARG;
    }
    return 0;
}

size_t apd_window_count(const struct apd_params *p, size_t n)
{
    if (!p || p->stride < 1 || n < p->window)
        return 0;
    return (n - p->window) / p->stride + 1;
}

double apd_lambda(const struct apd_params *p, int j)
{
    if (p->n_lambda <= 1)
        return p->lambda_lo;
    return p->lambda_lo + j * ((p->lambda_hi - p->lambda_lo) / (p->n_lambda - 1));
}

void apd_lambda_table(const struct apd_params *p, struct apd_lam *tab)
{
    double n = (double)p->window;
    for (int j = 0; j < p->n_lambda; j++) {
        double lam = apd_lambda(p, j);
        tab[j].lam = lam;
        tab[j].inv1 = 1.0 / (lam + 1.0);
        tab[j].cst = -n * ga_lgamma(1.0 + 1.0 / lam) - (n / lam) * (1.0 + log(lam / n));
        tab[j].coef = n * (lam + 1.0) / lam;
    }
}

int apd_check_input(const struct apd_params *p, const double *series, size_t n, char *err, size_t errlen)
{
    int rc = apd_validate(p, n, err, errlen);
    if (rc)
        return rc;
    if (!series) {
        ERR("no series");
        return GA_EBADARG;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(series[i])) {
            ERR("series[%zu] = %g is not finite", i, series[i]);
            return GA_EBADARG;
        }
    }
    return 0;
}

struct apd_job {
    const struct apd_params *p;
    const double *series;
    const struct apd_lam *tab;
    struct apd_fit *out;
    double *scratch;                  /* 2 W per worker: sorted window, logs */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fit_window(void *ctx, size_t w, int worker)
{
    struct apd_job *jb = ctx;
    const struct apd_params *p = jb->p;
    int n = (int)p->window, L = p->n_lambda;
    double *xs = jb->scratch + (size_t)worker * 2 * p->window, *ld = xs + p->window;
    memcpy(xs, jb->series + w * p->stride, p->window * sizeof *xs);
    qsort(xs, p->window, sizeof *xs, cmp_double);
    double bll = -INFINITY;
    int bi = -1, bj = -1;
    for (int i = 0; i < n; i++) {
        double theta = xs[i];
        for (int k = 0; k < i; k++)
            ld[k] = log(theta - xs[k]);          /* one log per pair, for all λ */
        for (int k = i + 1; k < n; k++)
            ld[k] = log(xs[k] - theta);
        for (int j = 0; j < L; j++) {
            double lam = jb->tab[j].lam, xm = 0.0, xp = 0.0;
            for (int k = 0; k < i; k++)
                xm += exp(lam * ld[k]);
            for (int k = i + 1; k < n; k++)
                xp += exp(lam * ld[k]);
            double ll = apd_candidate_ll(xm, xp, &jb->tab[j]);
            if (apd_better(ll, j, i, bll, bj, bi)) {
                bll = ll;
                bi = i;
                bj = j;
            }
        }
    }
    apd_finish(xs, n, bi, bj, jb->tab, p->n_quantiles, p->quantiles, &jb->out[w]);
}

int apd_fit_cpu(const struct apd_params *p, const double *series, size_t n, struct apd_fit *out, int threads,
                job_par_progress_fn cb, void *ud, char *err, size_t errlen)
{
    int rc = apd_check_input(p, series, n, err, errlen);
    if (rc)
        return rc;
    if (threads < 1 || threads > 1024) {
        ERR("threads = %d, must be 1..1024", threads);
        return GA_EBADARG;
    }
    size_t nw = apd_window_count(p, n);
    struct apd_lam *tab = malloc((size_t)p->n_lambda * sizeof *tab);
    double *scratch = malloc((size_t)threads * 2 * p->window * sizeof *scratch);
    rc = GA_ENOMEM;
    if (tab && scratch) {
        apd_lambda_table(p, tab);
        struct apd_job jb = { .p = p, .series = series, .tab = tab, .out = out, .scratch = scratch };
        size_t round = (size_t)threads * 4;
        rc = job_par_for(nw, threads, round, fit_window, &jb, cb, ud);
    }
    free(tab);
    free(scratch);
    return rc;
}

double apd_cdf(const struct apd_fit *f, double y)
{
    if (f->lambda_index < 0)
        return NAN;
    double lam = f->lambda, al = f->alpha, s = 1.0 / lam, delta = apd_delta(al, lam);
    double u = (y - f->theta) / f->phi;
    if (u <= 0.0)
        return al * ga_gamma_q(s, delta * pow(-u, lam) / pow(al, lam));
    return al + (1.0 - al) * ga_gamma_p(s, delta * pow(u, lam) / pow(1.0 - al, lam));
}

double apd_logpdf(const struct apd_fit *f, double y)
{
    if (f->lambda_index < 0)
        return NAN;
    double lam = f->lambda, al = f->alpha, delta = apd_delta(al, lam);
    double u = (y - f->theta) / f->phi;
    double side = u <= 0.0 ? pow(al, lam) : pow(1.0 - al, lam);
    return -log(f->phi) + log(delta) / lam - ga_lgamma(1.0 + 1.0 / lam) - delta / side * pow(fabs(u), lam);
}

double apd_quantile(const struct apd_fit *f, double p)
{
    if (f->lambda_index < 0)
        return NAN;
    double delta = apd_delta(f->alpha, f->lambda);
    return f->theta + f->phi * apd_std_quantile(f->alpha, f->lambda, delta, p);
}
