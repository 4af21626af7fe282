/* resample_rpc.c — the `resample` job: the roll-ups of a point CSV with
 * Gnocchi's semantics, the same bytes as `gpuaggctl resample --local`
 * (gpu/jobs/resample/resample.c does both).  docs/JOBS.md, "resample".
 *
 * Params: granularity, method (required), timespan, back-window, json
 * (0|1), threads.  Input: the CSV, inline or input_path.  Result:
 *   {"output": str, "format": "csv"|"json", "rejected": str, "late": str,
 *    "points": n, "rejected_points": n, "late_points": n, "rows": n,
 *    "backend": "cpu"|"cuda:N", "seconds": f}
 * "rejected" and "late" are what --local writes on stderr (without its
 * "gpuaggctl resample: " prefix on the rejected lines). */
#include <stdlib.h>
#include <string.h>

#include "daemon/jobs/kind.h"
#include "proto/base/log.h"
#include "gpu/cuda.h"
#include "gpu/jobs/resample/resample.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"

static const char *const known[] = { "granularity", "method", "timespan", "back-window", "json",
                                     "threads", JOB_KIND_INPUT_PATH, NULL };

static int spec_of(const struct ga_job_params *p, struct ga_resample_spec *s, int *json,
                   char *err, size_t errlen)
{
    int64_t bw, js, th;
    int rc = ga_job_params_check_known(p, known, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "back-window", 0, 0, INT32_MAX, &bw, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "json", 0, 0, 1, &js, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "threads", 0, 1, 1024, &th, err, errlen);
    if (rc)
        return rc;
    *s = (struct ga_resample_spec){ ga_job_param(p, "granularity"), ga_job_param(p, "method"),
                                    ga_job_param(p, "timespan"), bw };
    *json = (int)js;
    return 0;
}

static int resample_validate(const struct ga_job_params *p, size_t input_len, char *err,
                             size_t errlen)
{
    struct ga_resample_spec s;
    struct ga_policy pol;
    int json;
    int rc = spec_of(p, &s, &json, err, errlen);
    if (!rc)
        rc = ga_resample_policy(&s, "param ", &pol, err, errlen);
    if (!rc && !job_kind_has_input(p, input_len)) {
        snprintf(err, errlen, "resample needs an input: the CSV of points "
                 "(header metric,timestamp,value), inline or input_path");
        rc = GA_EBADARG;
    }
    return rc;
}

static int on_progress(void *arg, double pct)
{
    return ga_job_progress(arg, pct);
}

/* The CUDA backend on the job's GPU, or NULL (CPU) when there is none. */
static struct ga_backend *gpu_backend(int device, char *label, size_t cap)
{
    struct ga_backend *b = NULL;
    snprintf(label, cap, "cpu");
    if (device < 0)
        return NULL;
    int rc = ga_cuda_backend_open(&b, device, NULL);
    if (rc < 0) {
        ga_log(GA_LOG_WARN, "job_gpu_fallback", "kind=resample device=%d error=\"%s\"", device,
               ga_strerror(rc));
        return NULL;
    }
    snprintf(label, cap, "cuda:%d", device);
    return b;
}

struct streams {
    char *out, *rej, *late;
    size_t nout, nrej, nlate;
    FILE *fout, *frej, *flate;
};

static int close_streams(struct streams *s)
{
    int bad = 0;
    FILE **f[] = { &s->fout, &s->frej, &s->flate };
    for (int i = 0; i < 3; i++)
        if (*f[i]) {
            bad |= fclose(*f[i]) != 0;
            *f[i] = NULL;
        }
    return bad ? GA_ENOMEM : 0;
}

static void pack_result(msgpack_packer *pk, const struct streams *s, int json,
                        const struct ga_resample_stats *st, const char *backend, double secs)
{
    msgpack_pack_map(pk, 10);
    mp_pack_cstr(pk, "output");
    msgpack_pack_str_with_body(pk, s->out, s->nout);
    mp_pack_kv_str(pk, "format", json ? "json" : "csv");
    mp_pack_cstr(pk, "rejected");
    msgpack_pack_str_with_body(pk, s->rej, s->nrej);
    mp_pack_cstr(pk, "late");
    msgpack_pack_str_with_body(pk, s->late, s->nlate);
    mp_pack_kv_uint(pk, "points", st->points);
    mp_pack_kv_uint(pk, "rejected_points", st->rejected);
    mp_pack_kv_uint(pk, "late_points", st->late);
    mp_pack_kv_uint(pk, "rows", st->rows);
    mp_pack_kv_str(pk, "backend", backend);
    mp_pack_kv_double(pk, "seconds", secs);
}

static int resample_run(struct ga_job_ctx *ctx, const struct ga_job_params *p)
{
    int64_t t0 = ga_now_mono_ns();
    struct ga_resample_spec spec;
    struct ga_policy pol;
    struct streams s = { 0 };
    struct ga_resample_stats st;
    FILE *in = NULL;
    char label[32];
    int json;
    int rc = spec_of(p, &spec, &json, ctx->err, sizeof ctx->err);
    if (!rc)
        rc = ga_resample_policy(&spec, "param ", &pol, ctx->err, sizeof ctx->err);
    if (!rc)
        rc = job_kind_input_open(ctx, p, &in);
    if (rc)
        goto out;
    s.fout = open_memstream(&s.out, &s.nout);
    s.frej = open_memstream(&s.rej, &s.nrej);
    s.flate = open_memstream(&s.late, &s.nlate);
    if (!s.fout || !s.frej || !s.flate) {
        rc = GA_ENOMEM;
        snprintf(ctx->err, sizeof ctx->err, "out of memory");
        goto out;
    }
    struct ga_resample_io io = { .in = in, .out = s.fout, .rejected = s.frej, .late = s.flate,
                                 .json = json, .progress = on_progress, .progress_arg = ctx };
    struct ga_backend *b = gpu_backend(ctx->device, label, sizeof label);
    rc = ga_resample_run(&pol, b, job_kind_cpu_threads(p), &io, &st, ctx->err, sizeof ctx->err);
    if (!rc && (rc = close_streams(&s)) < 0)
        snprintf(ctx->err, sizeof ctx->err, "out of memory");
    if (!rc) {
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        pack_result(&pk, &s, json, &st, label, job_kind_elapsed_s(t0));
        rc = job_kind_set_result(ctx, &sb);
        msgpack_sbuffer_destroy(&sb);
    }
out:
    if (in)
        fclose(in);
    close_streams(&s);
    free(s.out);
    free(s.rej);
    free(s.late);
    return rc;
}

const struct ga_job_kind job_kind_resample = { "resample", resample_validate, resample_run, 1 };
