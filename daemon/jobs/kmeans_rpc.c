/* kmeans_rpc.c — the `kmeans` job (gpu/jobs/kmeans.h): Lloyd's algorithm,
 * initial centres the first k objects, ties to the lowest index, an empty
 * cluster keeps its centre.  docs/JOBS.md, "kmeans".
 *
 * Params: k (required), loops (10), threshold (0.001), memberships (0|1),
 * threads; objects either from the input (a matrix, daemon/jobs/matrix.h; coords,
 * when given, must match its columns) or from the built-in generator: coords and
 * mb (megabytes of generated objects) or nobjs.  On the job's GPU
 * when it has one, else the CPU reference.  Result:
 *   {"k", "coords", "nobjs", "loops", "delta", "centres": [[f64]...],
 *    "memberships"?: [int], "device": "cpu"|"cuda:N",
 *    "timings": {"load_s", "compute_s", "total_s"}} */
#include <stdlib.h>
#include <string.h>

#include "daemon/jobs/kind.h"
#include "daemon/jobs/matrix.h"
#include "proto/base/log.h"
#include "gpu/jobs/kmeans/kmeans.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"

#define KM_MB_MAX 65536
#define KM_MEMBERSHIPS_MAX 8000000          /* 5 bytes each at most: fits JOB_KIND_RESULT_MAX */
#define KM_INPUT_MAX ((size_t)16 << 30)

static const char *const known[] = { "k", "loops", "threshold", "coords", "mb", "nobjs",
                                     "memberships", "threads", JOB_KIND_INPUT_PATH, NULL };

struct km_args {
    struct ga_kmeans_params kp;
    int64_t mb, nobjs, coords;
    int memberships, generate;
};

static int parse(const struct ga_job_params *p, size_t input_len, struct km_args *a, char *err,
                 size_t errlen)
{
    int64_t k, loops, mem, th;
    memset(a, 0, sizeof *a);
    ga_kmeans_params_default(&a->kp);
    int rc = ga_job_params_check_known(p, known, err, errlen);
    if (!rc && !ga_job_param(p, "k")) {
        snprintf(err, errlen, "param 'k' missing: the number of clusters, 1..%d", GA_KMEANS_K_MAX);
        rc = GA_EBADARG;
    }
    if (!rc)
        rc = ga_job_param_int(p, "k", 0, 1, GA_KMEANS_K_MAX, &k, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "loops", 10, 1, GA_KMEANS_LOOPS_MAX, &loops, err, errlen);
    if (!rc)
        rc = ga_job_param_double(p, "threshold", 0.001, 0, 1, &a->kp.threshold, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "coords", 0, 1, GA_KMEANS_COORDS_MAX, &a->coords, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "mb", 0, 1, KM_MB_MAX, &a->mb, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "nobjs", 0, 1, GA_KMEANS_NOBJS_MAX, &a->nobjs, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "memberships", 0, 0, 1, &mem, err, errlen);
    if (!rc)
        rc = ga_job_param_int(p, "threads", 0, 1, 1024, &th, err, errlen);
    if (rc)
        return rc;
    a->kp.k = (int)k;
    a->kp.max_loops = (int)loops;
    a->memberships = (int)mem;
    a->generate = a->mb > 0 || a->nobjs > 0;
    if (a->generate && job_kind_has_input(p, input_len)) {
        snprintf(err, errlen, "give either an input matrix or the generator params mb/nobjs, "
                 "not both");
        return GA_EBADARG;
    }
    if (a->mb > 0 && a->nobjs > 0) {
        snprintf(err, errlen, "params 'mb' and 'nobjs' both size the generated dataset: give one");
        return GA_EBADARG;
    }
    if (!a->generate && !job_kind_has_input(p, input_len)) {
        snprintf(err, errlen, "kmeans needs objects: an input matrix (inline or input_path), or "
                 "the generator params coords and mb (or nobjs)");
        return GA_EBADARG;
    }
    if (a->generate) {
        if (!a->coords) {
            snprintf(err, errlen, "param 'coords' missing: the generator needs it (1..%d)",
                     GA_KMEANS_COORDS_MAX);
            return GA_EBADARG;
        }
        a->kp.coords = (int)a->coords;
        a->kp.nobjs = a->nobjs ? a->nobjs : ga_kmeans_lab_nobjs(a->mb, (int)a->coords);
        if (a->kp.nobjs < a->kp.k) {
            snprintf(err, errlen, "the generated dataset has %lld objects, fewer than k = %d",
                     (long long)a->kp.nobjs, a->kp.k);
            return GA_EBADARG;
        }
        /* the generated objects (doubles) and their memberships */
        uint64_t need = (uint64_t)a->kp.nobjs * ((uint64_t)a->kp.coords * sizeof(double) + 4);
        if (p->max_bytes && need > p->max_bytes) {
            snprintf(err, errlen, "params '%s' and 'coords': %lld objects of %d coordinates need "
                     "%llu bytes, over jobs.max_job_bytes (%llu)", a->nobjs ? "nobjs" : "mb",
                     (long long)a->kp.nobjs, a->kp.coords, (unsigned long long)need,
                     (unsigned long long)p->max_bytes);
            return GA_EBADARG;
        }
    } else {                                /* checked again once the input is read */
        a->kp.coords = a->coords ? (int)a->coords : 1;
        a->kp.nobjs = a->kp.k;
    }
    if (a->memberships && a->kp.nobjs > KM_MEMBERSHIPS_MAX) {
        snprintf(err, errlen, "param 'memberships': %lld objects are too many to return "
                 "(at most %d)", (long long)a->kp.nobjs, KM_MEMBERSHIPS_MAX);
        return GA_EBADARG;
    }
    return ga_kmeans_validate(&a->kp, err, errlen);
}

static int kmeans_validate(const struct ga_job_params *p, size_t input_len, char *err,
                           size_t errlen)
{
    struct km_args a;
    return parse(p, input_len, &a, err, errlen);
}

/* The objects from the input matrix into *objs (kp.nobjs/coords set). */
static int load_objects(struct ga_job_ctx *ctx, const struct ga_job_params *p, struct km_args *a,
                        struct matrix *m)
{
    int rc = matrix_load(ctx, p, KM_INPUT_MAX, m);
    if (rc)
        return rc;
    if (m->elem != 8) {
        snprintf(ctx->err, sizeof ctx->err, "input: kmeans needs a float64 matrix, got float32");
        return GA_EINVAL;
    }
    if (a->coords && a->coords != m->cols) {
        snprintf(ctx->err, sizeof ctx->err, "param 'coords' is %lld but the input has %lld "
                 "columns", (long long)a->coords, (long long)m->cols);
        return GA_EBADARG;
    }
    a->kp.coords = (int)m->cols;
    a->kp.nobjs = m->rows;
    if (a->memberships && m->rows > KM_MEMBERSHIPS_MAX) {
        snprintf(ctx->err, sizeof ctx->err, "param 'memberships': %lld objects are too many to "
                 "return (at most %d)", (long long)m->rows, KM_MEMBERSHIPS_MAX);
        return GA_EBADARG;
    }
    rc = ga_kmeans_validate(&a->kp, ctx->err, sizeof ctx->err);
    if (!rc)
        rc = ga_kmeans_validate_objects(m->data, m->rows, (int)m->cols, ctx->err, sizeof ctx->err);
    return rc;
}

static void pack_result(msgpack_packer *pk, const struct km_args *a,
                        const struct ga_kmeans_result *r, int device, const double t[3])
{
    char dev[16];
    snprintf(dev, sizeof dev, device < 0 ? "cpu" : "cuda:%d", device);
    msgpack_pack_map(pk, 8 + (a->memberships != 0));
    mp_pack_kv_int(pk, "k", a->kp.k);
    mp_pack_kv_int(pk, "coords", a->kp.coords);
    mp_pack_kv_int(pk, "nobjs", a->kp.nobjs);
    mp_pack_kv_int(pk, "loops", r->loops);
    mp_pack_kv_double(pk, "delta", r->delta);
    mp_pack_cstr(pk, "centres");
    msgpack_pack_array(pk, (size_t)a->kp.k);
    for (int c = 0; c < a->kp.k; c++)
        job_kind_pack_doubles(pk, r->centres + (size_t)c * a->kp.coords, (size_t)a->kp.coords);
    if (a->memberships) {
        mp_pack_cstr(pk, "memberships");
        msgpack_pack_array(pk, (size_t)a->kp.nobjs);
        for (int64_t i = 0; i < a->kp.nobjs; i++)
            msgpack_pack_int32(pk, r->membership[i]);
    }
    mp_pack_kv_str(pk, "device", dev);
    mp_pack_cstr(pk, "timings");
    msgpack_pack_map(pk, 3);
    mp_pack_kv_double(pk, "load_s", t[0]);
    mp_pack_kv_double(pk, "compute_s", t[1]);
    mp_pack_kv_double(pk, "total_s", t[2]);
}

struct km_progress {
    struct ga_job_ctx *ctx;
    int max_loops;
};

static int progress(void *arg, int loop, double delta)
{
    struct km_progress *kp = arg;
    return ga_job_progress(kp->ctx, 100.0 * loop / kp->max_loops);
}

static int kmeans_run(struct ga_job_ctx *ctx, const struct ga_job_params *p)
{
    int64_t t0 = ga_now_mono_ns();
    struct km_args a;
    struct matrix m = { 0 };
    struct ga_kmeans_result r = { 0 };
    double *gen = NULL, t[3];
    int rc = parse(p, ctx->input_len, &a, ctx->err, sizeof ctx->err);
    if (!rc && !a.generate)
        rc = load_objects(ctx, p, &a, &m);
    if (rc)
        goto out;
    size_t ncent = (size_t)a.kp.k * (size_t)a.kp.coords;
    r.centres = malloc(ncent * sizeof *r.centres);
    if (a.memberships)
        r.membership = malloc((size_t)a.kp.nobjs * sizeof *r.membership);
    if (!r.centres || (a.memberships && !r.membership)) {
        rc = GA_ENOMEM;
        snprintf(ctx->err, sizeof ctx->err, "out of memory for %lld objects", (long long)a.kp.nobjs);
        goto out;
    }
    const double *objs = m.data;
    int device = ctx->device;
    if (a.generate && device < 0) {          /* the GPU generates its own on the device */
        gen = malloc((size_t)a.kp.nobjs * (size_t)a.kp.coords * sizeof *gen);
        if (!gen) {
            rc = GA_ENOMEM;
            snprintf(ctx->err, sizeof ctx->err, "out of memory generating %lld x %d objects",
                     (long long)a.kp.nobjs, a.kp.coords);
            goto out;
        }
        ga_kmeans_generate(gen, a.kp.nobjs, a.kp.coords);
        objs = gen;
    }
    t[0] = job_kind_elapsed_s(t0);
    struct km_progress pr = { ctx, a.kp.max_loops };
    if (device >= 0) {
        rc = ga_kmeans_gpu(device, &a.kp, objs, &r, progress, &pr, ctx->err, sizeof ctx->err);
        if (rc == GA_ENOGPU) {
            ga_log(GA_LOG_WARN, "job_gpu_fallback", "kind=kmeans device=%d error=\"%s\"", device,
                   ctx->err);
            ctx->err[0] = '\0';
            device = -1;
            if (a.generate && !(objs = gen = malloc((size_t)a.kp.nobjs * (size_t)a.kp.coords *
                                                   sizeof *gen))) {
                rc = GA_ENOMEM;
                goto out;
            }
            if (a.generate)
                ga_kmeans_generate(gen, a.kp.nobjs, a.kp.coords);
        }
    }
    if (device < 0)
        rc = ga_kmeans_cpu(&a.kp, objs, &r, job_kind_cpu_threads(p), progress, &pr, ctx->err,
                           sizeof ctx->err);
    if (rc)
        goto out;
    t[1] = job_kind_elapsed_s(t0) - t[0];
    t[2] = job_kind_elapsed_s(t0);
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pack_result(&pk, &a, &r, device, t);
    rc = job_kind_set_result(ctx, &sb);
    msgpack_sbuffer_destroy(&sb);
out:
    free(gen);
    free(r.centres);
    free(r.membership);
    matrix_free(&m);
    return rc;
}

const struct ga_job_kind job_kind_kmeans = { "kmeans", kmeans_validate, kmeans_run, 1 };
