/* blackscholes_rpc.c — the `blackscholes` job
 * (gpu/jobs/blackscholes/blackscholes.h).  docs/JOBS.md, "blackscholes".
 *
 * blackscholes  European call/put prices.  Input: a binary float32 matrix of
 *               3 rows (S, X, T) or a CSV of three columns S,X,T; or the
 *               generator (n, seed; the SDK sample's ranges).  Result
 *               {"n", "riskfree", "volatility", "call_mean", "put_mean",
 *               "call": [first `return`], "put": [...], "l1_error"?,
 *               "device", "timings"}.
 * `check=1` on a GPU also runs the CPU reference and reports it. */
#include <stdlib.h>
#include <string.h>

#include "daemon/jobs/kind.h"
#include "gpu/jobs/blackscholes/blackscholes.h"
#include "daemon/jobs/matrix.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"

#define INPUT_MAX ((size_t)16 << 30)
#define RETURN_MAX 100000
/* blackscholes' memory per option: S, X, T (3 floats), call and put (2
 * doubles), the GPU's float results or the check's reference (2 doubles) */
#define BS_BYTES_PER_OPTION 52

/* ---- blackscholes ------------------------------------------------------------- */

static const char *const bs_known[] = { "n", "seed", "riskfree", "volatility", "return", "check",
                                        "threads", JOB_KIND_INPUT_PATH, NULL };

static int bs_parse(const struct ga_job_params *p, size_t input_len, struct ga_bs_params *bp,
                    int64_t *ret, int64_t *check, char *err, size_t errlen)
{
    int64_t seed, th;
    ga_bs_params_default(bp);
    int rc = ga_job_params_check_known(p, bs_known, err, errlen);
    if (!rc)
        rc = job_kind_no_input_and_generator(p, input_len, "n", err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "n", GA_BS_N_DEFAULT, 1, GA_BS_N_MAX, &bp->n, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "seed", (int64_t)bp->seed, 0, INT64_MAX, &seed, err, errlen);
    if (!rc)
        rc = ga_job_param_double(p, "riskfree", bp->riskfree, -1, 1, &bp->riskfree, err, errlen);
    if (!rc)
        rc = ga_job_param_double(p, "volatility", bp->volatility, 1e-9, 5, &bp->volatility, err,
                                 errlen);
    if (!rc)
        rc = ga_job_param_int(p, "return", 0, 0, RETURN_MAX, ret, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "check", 0, 0, 1, check, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "threads", 0, 1, 1024, &th, err, errlen);
    if (rc)
        return rc;
    bp->seed = (uint64_t)seed;
    /* from the generator; an input's n is bounded by the input's size */
    uint64_t need = (uint64_t)bp->n * BS_BYTES_PER_OPTION;
    int gen = ga_job_param(p, "n") || !job_kind_has_input(p, input_len);
    if (gen && p->max_bytes && need > p->max_bytes) {
        snprintf(err, errlen, "param 'n': %lld options need %llu bytes, over jobs.max_job_bytes "
                 "(%llu)", (long long)bp->n, (unsigned long long)need,
                 (unsigned long long)p->max_bytes);
        return GA_EBADARG;
    }
    return ga_bs_validate(bp, err, errlen);
}

static int bs_validate(const struct ga_job_params *p, size_t input_len, char *err, size_t errlen)
{
    struct ga_bs_params bp;
    int64_t ret, check;
    return bs_parse(p, input_len, &bp, &ret, &check, err, errlen);
}

/* S, X, T from the input into sxt (3 n floats), n from the input. */
static int bs_load(struct ga_job_ctx *ctx, const struct ga_job_params *p, struct ga_bs_params *bp,
                   float **sxt)
{
    struct matrix m;
    int rc = matrix_load(ctx, p, INPUT_MAX, &m);
    if (rc)
        return rc;
    int rows = !m.csv;                       /* binary: 3 rows; CSV: 3 columns */
    if ((rows && m.rows != 3) || (!rows && m.cols != 3) || (rows ? m.cols : m.rows) > GA_BS_N_MAX) {
        snprintf(ctx->err, sizeof ctx->err, "input: blackscholes needs %s, got %lld x %lld",
                 rows ? "a binary matrix of 3 rows (S, X, T)" : "a CSV of 3 columns S,X,T",
                 (long long)m.rows, (long long)m.cols);
        matrix_free(&m);
        return GA_EINVAL;
    }
    bp->n = rows ? m.cols : m.rows;
    if (!(*sxt = malloc(3 * (size_t)bp->n * sizeof **sxt))) {
        matrix_free(&m);
        snprintf(ctx->err, sizeof ctx->err, "out of memory for %lld options", (long long)bp->n);
        return GA_ENOMEM;
    }
    for (int64_t i = 0; i < bp->n; i++)
        for (int v = 0; v < 3; v++)
            (*sxt)[v * bp->n + i] = (float)(rows ? matrix_at(&m, v, i) : matrix_at(&m, i, v));
    matrix_free(&m);
    return ga_bs_validate_inputs(*sxt, *sxt + bp->n, *sxt + 2 * bp->n, bp->n, ctx->err,
                                 sizeof ctx->err);
}

static void bs_pack(msgpack_packer *pk, const struct ga_bs_params *bp, const double *call,
                    const double *put, int64_t ret, int have_l1, double l1, int device,
                    double load_s, double compute_s)
{
    double cs = 0, ps = 0;
    for (int64_t i = 0; i < bp->n; i++) {
        cs += call[i];
        ps += put[i];
    }
    if (ret > bp->n)
        ret = bp->n;
    char dev[16];
    job_kind_device_name(device, dev, sizeof dev);
    msgpack_pack_map(pk, 9 + have_l1);
    mp_pack_kv_int(pk, "n", bp->n);
    mp_pack_kv_double(pk, "riskfree", bp->riskfree);
    mp_pack_kv_double(pk, "volatility", bp->volatility);
    mp_pack_kv_double(pk, "call_mean", cs / (double)bp->n);
    mp_pack_kv_double(pk, "put_mean", ps / (double)bp->n);
    mp_pack_cstr(pk, "call");
    job_kind_pack_doubles(pk, call, (size_t)ret);
    mp_pack_cstr(pk, "put");
    job_kind_pack_doubles(pk, put, (size_t)ret);
    if (have_l1)
        mp_pack_kv_double(pk, "l1_error", l1);
    mp_pack_kv_str(pk, "device", dev);
    job_kind_pack_timings(pk, load_s, compute_s);
}

static int bs_run(struct ga_job_ctx *ctx, const struct ga_job_params *p)
{
    int64_t t0 = ga_now_mono_ns(), ret, check;
    struct ga_bs_params bp;
    float *sxt = NULL, *fout = NULL;
    double *dout = NULL, *rout = NULL, l1 = 0;
    int device = ctx->device, gen = ga_job_param(p, "n") || !job_kind_has_input(p, ctx->input_len);
    int rc = bs_parse(p, ctx->input_len, &bp, &ret, &check, ctx->err, sizeof ctx->err);
    if (!rc && !gen)
        rc = bs_load(ctx, p, &bp, &sxt);
    if (!rc && gen && device < 0 && !(sxt = malloc(3 * (size_t)bp.n * sizeof *sxt)))
        rc = GA_ENOMEM;
    if (!rc && gen && device < 0)
        ga_bs_generate(sxt, sxt + bp.n, sxt + 2 * bp.n, bp.n, bp.seed);
    size_t n = (size_t)bp.n;
    if (!rc && !(dout = malloc(2 * n * sizeof *dout)))
        rc = GA_ENOMEM;
    if (!rc && ga_job_progress(ctx, 10))
        rc = GA_ECANCELED;
    if (rc == GA_ENOMEM)
        snprintf(ctx->err, sizeof ctx->err, "out of memory for %zu options", n);
    if (rc)
        goto out;
    double load_s = job_kind_elapsed_s(t0);
    if (device >= 0) {
        if (!(fout = malloc(2 * n * sizeof *fout))) {
            rc = GA_ENOMEM;
            goto out;
        }
        rc = ga_bs_gpu(device, &bp, sxt, sxt ? sxt + n : NULL, sxt ? sxt + 2 * n : NULL, fout,
                       fout + n, ctx->err, sizeof ctx->err);
        for (size_t i = 0; rc == 0 && i < 2 * n; i++)
            dout[i] = fout[i];
        if (rc == GA_ENOGPU) {
            ga_log(GA_LOG_WARN, "job_gpu_fallback", "kind=blackscholes device=%d error=\"%s\"",
                   device, ctx->err);
            device = -1;
            if (!sxt && !(sxt = malloc(3 * n * sizeof *sxt))) {
                rc = GA_ENOMEM;
                goto out;
            }
            if (gen)
                ga_bs_generate(sxt, sxt + n, sxt + 2 * n, bp.n, bp.seed);
        }
    }
    if (device < 0)
        rc = ga_bs_cpu(&bp, sxt, sxt + n, sxt + 2 * n, dout, dout + n, job_kind_cpu_threads(p), ctx->err,
                       sizeof ctx->err);
    int have_l1 = 0;
    if (rc == 0 && device >= 0 && check) {
        if (!sxt && (sxt = malloc(3 * n * sizeof *sxt)))
            ga_bs_generate(sxt, sxt + n, sxt + 2 * n, bp.n, bp.seed);
        rout = malloc(2 * n * sizeof *rout);
        if (!sxt || !rout)
            rc = GA_ENOMEM;
        else if ((rc = ga_bs_cpu(&bp, sxt, sxt + n, sxt + 2 * n, rout, rout + n, job_kind_cpu_threads(p),
                                 ctx->err, sizeof ctx->err)) == 0) {
            l1 = ga_bs_l1_error(fout, fout + n, rout, rout + n, bp.n);
            have_l1 = 1;
        }
    }
    if (rc)
        goto out;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    bs_pack(&pk, &bp, dout, dout + n, ret, have_l1, l1, device, load_s, job_kind_elapsed_s(t0) - load_s);
    rc = job_kind_set_result(ctx, &sb);
    msgpack_sbuffer_destroy(&sb);
out:
    if (rc == GA_ENOMEM && !ctx->err[0])
        snprintf(ctx->err, sizeof ctx->err, "out of memory for %zu options", n);
    free(sxt);
    free(fout);
    free(dout);
    free(rout);
    return rc;
}

const struct ga_job_kind job_kind_blackscholes = { "blackscholes", bs_validate, bs_run, 1 };
