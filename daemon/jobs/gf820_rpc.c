/* gf820_rpc.c — the `gf820` job (gpu/jobs/gf820.h): the collective
 * spouse-pension reserve of each contract.  docs/JOBS.md, "gf820".
 *
 * Contracts: one from the params g, r, x, steps; or many from the input, a
 * CSV of the columns g,r,x,steps (a header line allowed) or a binary matrix
 * of 4 columns (daemon/jobs/matrix.h), whole numbers.  table=1 also returns each
 * contract's reserve table V(y), y = 0..120 (NaN past 120-x; at most
 * 10 000 contracts then).  Result {"contracts", "v0": [f64], "tables"?:
 * [[f64 x 121]], "device", "timings"}. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/jobs/kind.h"
#include "daemon/jobs/matrix.h"
#include "proto/base/log.h"
#include "gpu/jobs/gf820/gf820.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"

#define TABLES_MAX 10000
#define INPUT_MAX ((size_t)64 << 20)

static const char *const known[] = { "g", "r", "x", "steps", "table", "threads", JOB_KIND_INPUT_PATH,
                                     NULL };

/* The one contract of the params (when there is no input). */
static int one_contract(const struct ga_job_params *p, struct gf820_contract *c, char *err,
                        size_t errlen)
{
    int64_t g, r, x, steps;
    const char *need[] = { "g", "r", "x" };
    for (int i = 0; i < 3; i++)
        if (!ga_job_param(p, need[i])) {
            snprintf(err, errlen, "param '%s' missing: give g, r, x (and steps), or an input CSV "
                     "of contracts g,r,x,steps", need[i]);
            return GA_EBADARG;
        }
    int rc = ga_job_param_int(p, "g", 0, 0, 120, &g, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "r", 0, 0, 120, &r, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "x", 0, 0, 119, &x, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "steps", 10, 1, GF820_MAX_STEPS, &steps, err, errlen);
    if (rc)
        return rc;
    *c = (struct gf820_contract){ (int)g, (int)r, (int)x, (int)steps };
    return gf820_validate(c, 1, err, errlen);
}

static int gf_validate(const struct ga_job_params *p, size_t input_len, char *err, size_t errlen)
{
    int64_t table, th;
    struct gf820_contract c;
    int rc = ga_job_params_check_known(p, known, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "table", 0, 0, 1, &table, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "threads", 0, 1, 1024, &th, err, errlen);
    if (rc)
        return rc;
    if (!job_kind_has_input(p, input_len))
        return one_contract(p, &c, err, errlen);
    for (const char *const *k = known; k < known + 4; k++)
        if (ga_job_param(p, *k)) {
            snprintf(err, errlen, "param '%s' goes with a single contract: with an input CSV, "
                     "the contracts come from it", *k);
            return GA_EBADARG;
        }
    return 0;
}

static int load_contracts(struct ga_job_ctx *ctx, const struct ga_job_params *p,
                          struct gf820_contract **c, size_t *n)
{
    struct matrix m;
    int rc = matrix_load(ctx, p, INPUT_MAX, &m);
    if (rc)
        return rc;
    if (m.cols != 4 || m.rows > GF820_MAX_CONTRACTS) {
        snprintf(ctx->err, sizeof ctx->err, "input: gf820 needs rows of 4 columns g,r,x,steps "
                 "(at most %d rows), got %lld x %lld", GF820_MAX_CONTRACTS, (long long)m.rows,
                 (long long)m.cols);
        matrix_free(&m);
        return GA_EINVAL;
    }
    *n = (size_t)m.rows;
    if (!(*c = malloc(*n * sizeof **c))) {
        matrix_free(&m);
        return GA_ENOMEM;
    }
    for (size_t i = 0; i < *n; i++) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            double d = matrix_at(&m, (int64_t)i, k);
            if (!(d == floor(d) && fabs(d) < 1e6)) {
                snprintf(ctx->err, sizeof ctx->err, "input: contract %zu, column %d: %g is not a "
                         "whole number", i, k + 1, d);
                matrix_free(&m);
                return GA_EINVAL;
            }
            v[k] = (int)d;
        }
        (*c)[i] = (struct gf820_contract){ v[0], v[1], v[2], v[3] };
    }
    matrix_free(&m);
    return gf820_validate(*c, *n, ctx->err, sizeof ctx->err);
}

static int on_progress(void *ud, size_t done, size_t total)
{
    return ga_job_progress(ud, total ? 100.0 * (double)done / (double)total : 0);
}

static void pack_result(msgpack_packer *pk, size_t n, const double *v0, const double *table,
                        int device, double load_s, double compute_s)
{
    char dev[16];
    snprintf(dev, sizeof dev, device < 0 ? "cpu" : "cuda:%d", device);
    msgpack_pack_map(pk, 4 + (table != NULL));
    mp_pack_kv_uint(pk, "contracts", n);
    mp_pack_cstr(pk, "v0");
    job_kind_pack_doubles(pk, v0, n);
    if (table) {
        mp_pack_cstr(pk, "tables");
        msgpack_pack_array(pk, n);
        for (size_t i = 0; i < n; i++)
            job_kind_pack_doubles(pk, table + i * GF820_TABLE_LEN, GF820_TABLE_LEN);
    }
    mp_pack_kv_str(pk, "device", dev);
    mp_pack_cstr(pk, "timings");
    msgpack_pack_map(pk, 2);
    mp_pack_kv_double(pk, "load_s", load_s);
    mp_pack_kv_double(pk, "compute_s", compute_s);
}

static int gf_run(struct ga_job_ctx *ctx, const struct ga_job_params *p)
{
    int64_t t0 = ga_now_mono_ns(), want_table;
    struct gf820_contract one, *c = &one;
    size_t n = 1;
    double *v0 = NULL, *table = NULL;
    int device = ctx->device, rc = 0;
    ga_job_param_int(p, "table", 0, 0, 1, &want_table, ctx->err, sizeof ctx->err);
    if (job_kind_has_input(p, ctx->input_len))
        rc = load_contracts(ctx, p, &c, &n);
    else
        rc = one_contract(p, &one, ctx->err, sizeof ctx->err);
    if (!rc && want_table && n > TABLES_MAX) {
        snprintf(ctx->err, sizeof ctx->err, "param 'table': %zu contracts, at most %d with "
                 "tables", n, TABLES_MAX);
        rc = GA_EBADARG;
    }
    if (rc)
        goto out;
    v0 = malloc(n * sizeof *v0);
    table = want_table ? malloc(n * GF820_TABLE_LEN * sizeof *table) : NULL;
    if (!v0 || (want_table && !table)) {
        rc = GA_ENOMEM;
        snprintf(ctx->err, sizeof ctx->err, "out of memory for %zu contracts", n);
        goto out;
    }
    double load_s = job_kind_elapsed_s(t0);
    if (device >= 0 && (rc = gf820_gpu(device, c, n, v0, table, on_progress, ctx, ctx->err,
                                       sizeof ctx->err)) == GA_ENOGPU) {
        ga_log(GA_LOG_WARN, "job_gpu_fallback", "kind=gf820 device=%d error=\"%s\"", device,
               ctx->err);
        device = -1;
    }
    int threads = job_kind_cpu_threads(p);
    if (device < 0)
        rc = gf820_cpu(c, n, v0, table, threads, on_progress, ctx, ctx->err, sizeof ctx->err);
    if (rc)
        goto out;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pack_result(&pk, n, v0, table, device, load_s, job_kind_elapsed_s(t0) - load_s);
    rc = job_kind_set_result(ctx, &sb);
    msgpack_sbuffer_destroy(&sb);
out:
    if (c != &one)
        free(c);
    free(v0);
    free(table);
    return rc;
}

const struct ga_job_kind job_kind_gf820 = { "gf820", gf_validate, gf_run, 1 };
