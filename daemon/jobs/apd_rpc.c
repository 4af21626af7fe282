/* apd_rpc.c — the `apd-fit` job (gpu/jobs/apd.h): rolling maximum-likelihood
 * fits of the asymmetric power distribution with value-at-risk quantiles.
 * docs/JOBS.md, "apd-fit".
 *
 * Params: window (500), stride (1), lambdas (80), lambda_lo (0.5),
 * lambda_hi (4), quantiles ("0.01,0.05"), threads.  Series: the input (a
 * CSV of one column, or a binary matrix of one row or one column), or the
 * generator: n values, seed (standard normal, Box-Muller over splitmix64).
 * Result {"windows", "quantiles": [p], "theta", "phi", "alpha", "lambda",
 * "loglik": [f64 per window], "q": [[f64 per window] per quantile],
 * "device", "timings"}; at most 500 000 windows (raise stride). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/jobs/kind.h"
#include "daemon/jobs/matrix.h"
#include "proto/base/log.h"
#include "gpu/jobs/apd/apd.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"

#define WINDOWS_MAX 500000
#define GEN_N_MAX ((int64_t)1 << 26)
#define INPUT_MAX ((size_t)1 << 30)

static const char *const known[] = { "window", "stride", "lambdas", "lambda_lo", "lambda_hi",
                                     "quantiles", "n", "seed", "threads", JOB_KIND_INPUT_PATH, NULL };

static int parse_quantiles(const char *s, struct apd_params *ap, char *err, size_t errlen)
{
    char buf[GA_JOB_VALUE_MAX], *save = NULL;
    snprintf(buf, sizeof buf, "%s", s);
    ap->n_quantiles = 0;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        double q = strtod(t, &end);
        if (end == t || *end || !(q > 0 && q < 1) || ap->n_quantiles == APD_MAX_QUANTILES) {
            snprintf(err, errlen, "param 'quantiles': expected up to %d probabilities in (0, 1) "
                     "separated by commas, got '%s'", APD_MAX_QUANTILES, s);
            return GA_EBADARG;
        }
        ap->quantiles[ap->n_quantiles++] = q;
    }
    return 0;
}

static int parse(const struct ga_job_params *p, size_t input_len, struct apd_params *ap,
                 int64_t *n, int64_t *seed, char *err, size_t errlen)
{
    int64_t w, st, L, th;
    apd_params_default(ap);
    int rc = ga_job_params_check_known(p, known, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "window", (int64_t)ap->window, 4, APD_MAX_WINDOW, &w, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "stride", 1, 1, INT32_MAX, &st, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "lambdas", ap->n_lambda, 1, APD_MAX_LAMBDAS, &L, err, errlen);
    if (!rc)
        rc = ga_job_param_double(p, "lambda_lo", ap->lambda_lo, 0.05, 50, &ap->lambda_lo, err,
                                 errlen);
    if (!rc)
        rc = ga_job_param_double(p, "lambda_hi", ap->lambda_hi, 0.05, 50, &ap->lambda_hi, err,
                                 errlen);
    if (!rc && ga_job_param(p, "quantiles"))
        rc = parse_quantiles(ga_job_param(p, "quantiles"), ap, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "n", 0, 1, GEN_N_MAX, n, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "seed", 1, 0, INT64_MAX, seed, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "threads", 0, 1, 1024, &th, err, errlen);
    if (rc)
        return rc;
    ap->window = (size_t)w;
    ap->stride = (size_t)st;
    ap->n_lambda = (int)L;
    if (*n && job_kind_has_input(p, input_len)) {
        snprintf(err, errlen, "give either an input series or the generator param 'n', not both");
        return GA_EBADARG;
    }
    if (!*n && !job_kind_has_input(p, input_len)) {
        snprintf(err, errlen, "apd-fit needs a series: an input (CSV of one column) or the "
                 "generator param n (and seed)");
        return GA_EBADARG;
    }
    if (*n && apd_window_count(ap, (size_t)*n) > WINDOWS_MAX) {
        snprintf(err, errlen, "%zu windows, at most %d: raise param 'stride'",
                 apd_window_count(ap, (size_t)*n), WINDOWS_MAX);
        return GA_EBADARG;
    }
    return apd_validate(ap, *n ? (size_t)*n : ap->window, err, errlen);
}

static int apd_job_validate(const struct ga_job_params *p, size_t input_len, char *err,
                            size_t errlen)
{
    struct apd_params ap;
    int64_t n, seed;
    return parse(p, input_len, &ap, &n, &seed, err, errlen);
}

static double uniform(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * 0x1.0p-53;    /* (0, 1) */
}

static int load_series(struct ga_job_ctx *ctx, const struct ga_job_params *p, int64_t n,
                       uint64_t seed, double **x, size_t *len)
{
    if (n) {
        if (!(*x = malloc((size_t)n * sizeof **x)))
            return GA_ENOMEM;
        for (int64_t i = 0; i < n; i += 2) {
            double u1 = uniform(&seed), u2 = uniform(&seed), r = sqrt(-2 * log(u1));
            (*x)[i] = r * cos(2 * M_PI * u2);
            if (i + 1 < n)
                (*x)[i + 1] = r * sin(2 * M_PI * u2);
        }
        *len = (size_t)n;
        return 0;
    }
    struct matrix m;
    int rc = matrix_load(ctx, p, INPUT_MAX, &m);
    if (rc)
        return rc;
    if (m.rows != 1 && m.cols != 1) {
        snprintf(ctx->err, sizeof ctx->err, "input: apd-fit needs one series (one column or one "
                 "row), got %lld x %lld", (long long)m.rows, (long long)m.cols);
        matrix_free(&m);
        return GA_EINVAL;
    }
    *len = (size_t)(m.rows * m.cols);
    if ((*x = malloc(*len * sizeof **x)))
        for (size_t i = 0; i < *len; i++)
            (*x)[i] = m.rows == 1 ? matrix_at(&m, 0, (int64_t)i) : matrix_at(&m, (int64_t)i, 0);
    matrix_free(&m);
    return *x ? 0 : GA_ENOMEM;
}

static int on_progress(void *ud, size_t done, size_t total)
{
    return ga_job_progress(ud, total ? 100.0 * (double)done / (double)total : 0);
}

#define FIELD(name, expr) do { mp_pack_cstr(pk, name); msgpack_pack_array(pk, nw); \
    for (size_t i = 0; i < nw; i++) msgpack_pack_double(pk, (expr)); } while (0)

static void pack_result(msgpack_packer *pk, const struct apd_params *ap, const struct apd_fit *f,
                        size_t nw, int device, double load_s, double compute_s)
{
    char dev[16];
    snprintf(dev, sizeof dev, device < 0 ? "cpu" : "cuda:%d", device);
    msgpack_pack_map(pk, 10);
    mp_pack_kv_uint(pk, "windows", nw);
    mp_pack_cstr(pk, "quantiles");
    job_kind_pack_doubles(pk, ap->quantiles, (size_t)ap->n_quantiles);
    FIELD("theta", f[i].theta);
    FIELD("phi", f[i].phi);
    FIELD("alpha", f[i].alpha);
    FIELD("lambda", f[i].lambda);
    FIELD("loglik", f[i].loglik);
    mp_pack_cstr(pk, "q");
    msgpack_pack_array(pk, (size_t)ap->n_quantiles);
    for (int m = 0; m < ap->n_quantiles; m++) {
        msgpack_pack_array(pk, nw);
        for (size_t i = 0; i < nw; i++)
            msgpack_pack_double(pk, f[i].q[m]);
    }
    mp_pack_kv_str(pk, "device", dev);
    mp_pack_cstr(pk, "timings");
    msgpack_pack_map(pk, 2);
    mp_pack_kv_double(pk, "load_s", load_s);
    mp_pack_kv_double(pk, "compute_s", compute_s);
}

static int apd_job_run(struct ga_job_ctx *ctx, const struct ga_job_params *p)
{
    int64_t t0 = ga_now_mono_ns(), n, seed;
    struct apd_params ap;
    double *x = NULL;
    struct apd_fit *fits = NULL;
    size_t len = 0, nw = 0;
    int device = ctx->device;
    int rc = parse(p, ctx->input_len, &ap, &n, &seed, ctx->err, sizeof ctx->err);
    if (!rc)
        rc = load_series(ctx, p, n, (uint64_t)seed, &x, &len);
    if (!rc && (rc = apd_validate(&ap, len, ctx->err, sizeof ctx->err)) == 0 &&
        (nw = apd_window_count(&ap, len)) > WINDOWS_MAX) {
        snprintf(ctx->err, sizeof ctx->err, "%zu windows, at most %d: raise param 'stride'", nw,
                 WINDOWS_MAX);
        rc = GA_EBADARG;
    }
    if (!rc && !(fits = calloc(nw, sizeof *fits)))
        rc = GA_ENOMEM;
    if (rc == GA_ENOMEM && !ctx->err[0])
        snprintf(ctx->err, sizeof ctx->err, "out of memory for a series of %zu values", len);
    if (rc)
        goto out;
    double load_s = job_kind_elapsed_s(t0);
    if (device >= 0 && (rc = apd_fit_gpu(device, &ap, x, len, fits, on_progress, ctx, ctx->err,
                                         sizeof ctx->err)) == GA_ENOGPU) {
        ga_log(GA_LOG_WARN, "job_gpu_fallback", "kind=apd-fit device=%d error=\"%s\"", device,
               ctx->err);
        device = -1;
    }
    int threads = job_kind_cpu_threads(p);
    if (device < 0)
        rc = apd_fit_cpu(&ap, x, len, fits, threads, on_progress, ctx, ctx->err, sizeof ctx->err);
    if (rc)
        goto out;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pack_result(&pk, &ap, fits, nw, device, load_s, job_kind_elapsed_s(t0) - load_s);
    rc = job_kind_set_result(ctx, &sb);
    msgpack_sbuffer_destroy(&sb);
out:
    free(x);
    free(fits);
    return rc;
}

const struct ga_job_kind job_kind_apd = { "apd-fit", apd_job_validate, apd_job_run, 1 };
