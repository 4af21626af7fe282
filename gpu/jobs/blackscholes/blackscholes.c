/* blackscholes.c — CPU reference of the Black-Scholes job (see blackscholes.h). */
#include "gpu/jobs/blackscholes/blackscholes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu/jobs/blackscholes/blackscholes_model.h"
#include "gpu/jobs/job_par.h"
#include "proto/ga_err.h"

void ga_bs_params_default(struct ga_bs_params *p)
{
    p->n = GA_BS_N_DEFAULT;
    p->riskfree = GA_BS_RISKFREE;
    p->volatility = GA_BS_VOLATILITY;
    p->seed = 5347;
}

int ga_bs_validate(const struct ga_bs_params *p, char *err, size_t errlen)
{
    if (!p) {
        snprintf(err, errlen, "blackscholes: params missing");
        return GA_EBADARG;
    }
    if (p->n < 1 || p->n > GA_BS_N_MAX) {
        snprintf(err, errlen, "n must be in 1..%lld, got %lld", (long long)GA_BS_N_MAX, (long long)p->n);
        return GA_EBADARG;
    }
    if (!isfinite(p->riskfree) || p->riskfree < -1.0 || p->riskfree > 1.0) {
        snprintf(err, errlen, "riskfree must be in -1..1, got %g", p->riskfree);
        return GA_EBADARG;
    }
    if (!isfinite(p->volatility) || p->volatility <= 0.0 || p->volatility > 5.0) {
        snprintf(err, errlen, "volatility must be in (0, 5], got %g", p->volatility);
        return GA_EBADARG;
    }
    return 0;
}

int ga_bs_validate_inputs(const float *S, const float *X, const float *T, int64_t n, char *err, size_t errlen)
{
    if (!S || !X || !T) {
        snprintf(err, errlen, "blackscholes: S, X and T must all be given");
        return GA_EBADARG;
    }
    const float *a[3] = { S, X, T };
    const char *name[3] = { "S", "X", "T" };
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            if (!isfinite(a[k][i]) || a[k][i] <= 0.0f) {
                snprintf(err, errlen, "%s[%lld] must be finite and > 0, got %g", name[k], (long long)i,
                         (double)a[k][i]);
                return GA_EBADARG;
            }
    return 0;
}

void ga_bs_generate(float *S, float *X, float *T, int64_t n, uint64_t seed)
{
    for (int64_t i = 0; i < n; i++) {
        S[i] = ga_bs_gen(seed, i, 0, GA_BS_S_LO, GA_BS_S_HI);
        X[i] = ga_bs_gen(seed, i, 1, GA_BS_X_LO, GA_BS_X_HI);
        T[i] = ga_bs_gen(seed, i, 2, GA_BS_T_LO, GA_BS_T_HI);
    }
}

static double cnd(double d)
{
    double k = 1.0 / (1.0 + GA_BS_P * fabs(d));
    double c = GA_BS_RSQRT2PI * exp(-0.5 * d * d) *
               (k * (GA_BS_A1 + k * (GA_BS_A2 + k * (GA_BS_A3 + k * (GA_BS_A4 + k * GA_BS_A5)))));
    return d > 0 ? 1.0 - c : c;
}

struct bs_job {
    const float *S, *X, *T;
    double *call, *put, r, v;
    int64_t lo, hi;
};

/* Range `job` of the contracts, on a worker of job_par_for. */
static void bs_item(void *arg, size_t job, int worker)
{
    const struct bs_job *j = (const struct bs_job *)arg + job;
    const double r = j->r, v = j->v;
    for (int64_t i = j->lo; i < j->hi; i++) {
        double s = j->S[i], x = j->X[i], t = j->T[i];
        double sqrt_t = sqrt(t);
        double d1 = (log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt_t);
        double d2 = d1 - v * sqrt_t;
        double c1 = cnd(d1), c2 = cnd(d2);
        double exp_rt = exp(-r * t);
        j->call[i] = s * c1 - x * exp_rt * c2;
        j->put[i] = x * exp_rt * (1.0 - c2) - s * (1.0 - c1);
    }
}

int ga_bs_cpu(const struct ga_bs_params *p, const float *S, const float *X, const float *T,
              double *call, double *put, int nthreads, char *err, size_t errlen)
{
    int rc = ga_bs_validate(p, err, errlen);
    if (rc)
        return rc;
    if (!S || !X || !T || !call || !put) {
        snprintf(err, errlen, "blackscholes: S, X, T, call and put must not be NULL");
        return GA_EBADARG;
    }
    if (nthreads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = c > 0 ? (int)c : 1;
    }
    if (nthreads > 256)
        nthreads = 256;
    if (p->n < 4096)
        nthreads = 1;
    struct bs_job jobs[256];
    for (int t = 0; t < nthreads; t++)
        jobs[t] = (struct bs_job){ S, X, T, call, put, p->riskfree, p->volatility,
                                   p->n * t / nthreads, p->n * (t + 1) / nthreads };
    job_par_for((size_t)nthreads, nthreads, 0, bs_item, jobs, NULL, NULL);   /* a range each */
    return 0;
}

double ga_bs_l1_error(const float *call, const float *put, const double *rcall, const double *rput, int64_t n)
{
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        num += fabs((double)call[i] - rcall[i]) + fabs((double)put[i] - rput[i]);
        den += fabs(rcall[i]) + fabs(rput[i]);
    }
    return den > 0 ? num / den : num;
}
