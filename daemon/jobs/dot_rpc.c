/* dot_rpc.c — the `dot` job (gpu/jobs/dot/dot.h).  docs/JOBS.md, "dot".
 *
 * dot           x·y.  Input: a binary matrix of 2 rows (x, y; float32 or
 *               float64) or a CSV of two columns x,y; or the generator: n,
 *               seed (uniform values in [-1, 1) from splitmix64), dtype.
 *               Result {"dot", "n", "dtype", "abs_sum"?, "reference"?,
 *               "device", "timings"}.
 * `check=1` on a GPU also runs the CPU reference and reports it. */
#include <stdlib.h>
#include <string.h>

#include "daemon/jobs/kind.h"
#include "gpu/jobs/dot/dot.h"
#include "daemon/jobs/matrix.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"

#define GEN_N_MAX ((int64_t)1 << 30)        /* generated elements per vector, at most */
#define INPUT_MAX ((size_t)16 << 30)

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ---- dot ------------------------------------------------------------------------ */

static const char *const dot_known[] = { "n", "seed", "dtype", "check", "threads",
                                         JOB_KIND_INPUT_PATH, NULL };

static int dot_parse(const struct ga_job_params *p, size_t input_len, struct ga_dot_params *dp,
                     int64_t *seed, int64_t *check, char *err, size_t errlen)
{
    int64_t th;
    const char *dt = ga_job_param(p, "dtype");
    int rc = ga_job_params_check_known(p, dot_known, err, errlen);
    if (!rc)
        rc = job_kind_no_input_and_generator(p, input_len, "n", err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "n", 0, 1, GEN_N_MAX, &dp->n, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "seed", 1, 0, INT64_MAX, seed, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "check", 0, 0, 1, check, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "threads", 0, 1, 1024, &th, err, errlen);
    if (rc)
        return rc;
    if (dt && strcmp(dt, "f32") && strcmp(dt, "f64")) {
        snprintf(err, errlen, "param 'dtype': expected f32 or f64, got '%s'", dt);
        return GA_EBADARG;
    }
    dp->dtype = dt && strcmp(dt, "f32") == 0 ? GA_DOT_F32 : GA_DOT_F64;
    uint64_t need = 2 * (uint64_t)dp->n * ga_dot_elem_size(dp->dtype);
    if (p->max_bytes && need > p->max_bytes) {
        snprintf(err, errlen, "param 'n': %lld elements need %llu bytes (x and y), over "
                 "jobs.max_job_bytes (%llu)", (long long)dp->n, (unsigned long long)need,
                 (unsigned long long)p->max_bytes);
        return GA_EBADARG;
    }
    if (!dp->n && !job_kind_has_input(p, input_len)) {
        snprintf(err, errlen, "dot needs vectors: an input (2-row matrix or x,y CSV), or the "
                 "generator param n (and seed, dtype)");
        return GA_EBADARG;
    }
    if (!dp->n)
        dp->n = 1;                           /* from the input, checked when read */
    return ga_dot_validate(dp, err, errlen);
}

static int dot_validate(const struct ga_job_params *p, size_t input_len, char *err, size_t errlen)
{
    struct ga_dot_params dp;
    int64_t seed, check;
    return dot_parse(p, input_len, &dp, &seed, &check, err, errlen);
}

/* x and y (2 n elements of dp->dtype, x then y) into *xy. */
static int dot_load(struct ga_job_ctx *ctx, const struct ga_job_params *p,
                    struct ga_dot_params *dp, uint64_t seed, void **xy)
{
    size_t es = ga_dot_elem_size(dp->dtype);
    if (ga_job_param(p, "n")) {
        if (!(*xy = malloc(2 * (size_t)dp->n * es)))
            goto nomem;
        for (int64_t i = 0; i < 2 * dp->n; i++) {
            double v = (double)(splitmix64(&seed) >> 11) * 0x1.0p-52 - 1.0;
            if (dp->dtype == GA_DOT_F32)
                ((float *)*xy)[i] = (float)v;
            else
                ((double *)*xy)[i] = v;
        }
        return 0;
    }
    struct matrix m;
    int rc = matrix_load(ctx, p, INPUT_MAX, &m);
    if (rc)
        return rc;
    int rows = !m.csv;                       /* binary: 2 rows; CSV: 2 columns */
    if ((rows && m.rows != 2) || (!rows && m.cols != 2)) {
        snprintf(ctx->err, sizeof ctx->err, "input: dot needs %s, got %lld x %lld",
                 rows ? "a binary matrix of 2 rows (x, y)" : "a CSV of 2 columns x,y",
                 (long long)m.rows, (long long)m.cols);
        matrix_free(&m);
        return GA_EINVAL;
    }
    if (!ga_job_param(p, "dtype") && !m.csv)
        dp->dtype = m.elem == 4 ? GA_DOT_F32 : GA_DOT_F64;
    dp->n = rows ? m.cols : m.rows;
    es = ga_dot_elem_size(dp->dtype);
    if (!(*xy = malloc(2 * (size_t)dp->n * es))) {
        matrix_free(&m);
        goto nomem;
    }
    for (int64_t i = 0; i < dp->n; i++)
        for (int v = 0; v < 2; v++) {
            double x = rows ? matrix_at(&m, v, i) : matrix_at(&m, i, v);
            if (dp->dtype == GA_DOT_F32)
                ((float *)*xy)[v * dp->n + i] = (float)x;
            else
                ((double *)*xy)[v * dp->n + i] = x;
        }
    matrix_free(&m);
    return ga_dot_validate(dp, ctx->err, sizeof ctx->err);
nomem:
    snprintf(ctx->err, sizeof ctx->err, "out of memory for 2 x %lld elements", (long long)dp->n);
    return GA_ENOMEM;
}

static int dot_run(struct ga_job_ctx *ctx, const struct ga_job_params *p)
{
    int64_t t0 = ga_now_mono_ns(), seed, check;
    struct ga_dot_params dp;
    void *xy = NULL;
    double dot = 0, ref = 0, abs_sum = 0, load_s;
    int device = ctx->device, have_ref = 0;
    int rc = dot_parse(p, ctx->input_len, &dp, &seed, &check, ctx->err, sizeof ctx->err);
    if (!rc)
        rc = dot_load(ctx, p, &dp, (uint64_t)seed, &xy);
    if (!rc && ga_job_progress(ctx, 10))
        rc = GA_ECANCELED;
    if (rc)
        goto out;
    load_s = job_kind_elapsed_s(t0);
    const char *y = (const char *)xy + (size_t)dp.n * ga_dot_elem_size(dp.dtype);
    if (device >= 0 && (rc = ga_dot_gpu(device, &dp, xy, y, &dot, ctx->err,
                                        sizeof ctx->err)) == GA_ENOGPU) {
        ga_log(GA_LOG_WARN, "job_gpu_fallback", "kind=dot device=%d error=\"%s\"", device, ctx->err);
        device = -1;
    }
    if (device < 0 || (rc == 0 && check)) {
        rc = ga_dot_cpu(&dp, xy, y, device < 0 ? &dot : &ref, &abs_sum, job_kind_cpu_threads(p), ctx->err,
                        sizeof ctx->err);
        have_ref = device >= 0;
    }
    if (rc)
        goto out;
    double compute_s = job_kind_elapsed_s(t0) - load_s;
    char dev[16];
    job_kind_device_name(device, dev, sizeof dev);
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5 + (device < 0 || have_ref) + have_ref);
    mp_pack_kv_double(&pk, "dot", dot);
    mp_pack_kv_int(&pk, "n", dp.n);
    mp_pack_kv_str(&pk, "dtype", dp.dtype == GA_DOT_F32 ? "f32" : "f64");
    if (device < 0 || have_ref)
        mp_pack_kv_double(&pk, "abs_sum", abs_sum);
    if (have_ref)
        mp_pack_kv_double(&pk, "reference", ref);
    mp_pack_kv_str(&pk, "device", dev);
    job_kind_pack_timings(&pk, load_s, compute_s);
    rc = job_kind_set_result(ctx, &sb);
    msgpack_sbuffer_destroy(&sb);
out:
    free(xy);
    return rc;
}

const struct ga_job_kind job_kind_dot = { "dot", dot_validate, dot_run, 1 };
