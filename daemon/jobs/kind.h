/* kind.h — a job kind (docs/JOBS.md): what the job service (daemon/jobs/)
 * calls, and the helpers the kinds share.
 *
 * A kind's kernels and CPU reference live in gpu/jobs/X/; its RPC glue,
 * daemon/jobs/X_rpc.c, defines its struct ga_job_kind.  A kind validates its
 * parameters before the job is queued (clear errors naming the parameter),
 * reads its input on the job worker (inline bytes, or the file named by the
 * reserved parameter JOB_KIND_INPUT_PATH), and packs one msgpack result object.
 * The table of kinds is ga_job_kinds[] (daemon/jobs/kinds.c).
 *
 * Input files.  job.submit resolves a client's input_path with realpath and
 * accepts it only inside one of jobs.input_dirs; the resolved path travels
 * in the JOB_KIND_INPUT_PATH parameter.  The worker opens it and checks, through
 * /proc/self/fd, that the file it opened still is that path (a directory
 * swapped for a symlink in between is refused).
 *
 * ga_job_progress and ga_job_set_result are the job service's
 * (daemon/jobs/jobs.c); the rest is kind.c. */
#ifndef GA_JOB_KIND_H
#define GA_JOB_KIND_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GA_JOB_MAX_PARAMS 32
#define GA_JOB_KEY_MAX 64
#define GA_JOB_VALUE_MAX 1024

/* key=value parameters, as `gpuaggctl job submit --param k=v` sends them. */
struct ga_job_params {
    int n;
    uint64_t max_bytes;              /* set by the manager: jobs.max_job_bytes, the memory a
                                        job may take for its data (0: no bound) */
    struct {
        char key[GA_JOB_KEY_MAX];
        char value[GA_JOB_VALUE_MAX];
    } kv[GA_JOB_MAX_PARAMS];
};

/* Look up a parameter; NULL when absent. */
const char *ga_job_param(const struct ga_job_params *p, const char *key);
/* Typed look-ups: 0 and *v (the default when absent), or GA_EBADARG with
 * "param 'k': expected an integer in lo..hi, got 'x'" in err. */
int ga_job_param_int(const struct ga_job_params *p, const char *key, int64_t def, int64_t lo,
                     int64_t hi, int64_t *v, char *err, size_t errlen);
int ga_job_param_double(const struct ga_job_params *p, const char *key, double def, double lo,
                        double hi, double *v, char *err, size_t errlen);
/* GA_EBADARG naming the first key not in `known` (NULL-terminated). */
int ga_job_params_check_known(const struct ga_job_params *p, const char *const *known, char *err,
                              size_t errlen);

struct ga_job;

/* What a running job sees. */
struct ga_job_ctx {
    struct ga_job *job;
    int device;                        /* GPU ordinal for GPU kinds, -1 = CPU */
    const uint8_t *input;              /* inline input or the file's bytes; may be NULL */
    size_t input_len;
    char err[512];                     /* set by run() before returning < 0 */
};

/* Report progress (0..100).  Returns 1 when the job was cancelled: run()
 * should stop and return GA_ECANCELED. */
int ga_job_progress(struct ga_job_ctx *ctx, double pct);

/* Result of a job: run() appends the result object's msgpack bytes. */
int ga_job_set_result(struct ga_job_ctx *ctx, const void *msgpack_bytes, size_t len);

struct ga_job_kind {
    const char *name;
    /* Check parameters (and input presence) before queuing; 0 or GA_EBADARG + err. */
    int (*validate)(const struct ga_job_params *p, size_t input_len, char *err, size_t errlen);
    /* Run; 0 or a negative GA_E* with ctx->err set. */
    int (*run)(struct ga_job_ctx *ctx, const struct ga_job_params *p);
    int wants_gpu;                     /* 1: runs on a GPU when one is usable */
};

#define JOB_KIND_INPUT_PATH "input_path"          /* reserved parameter, set by job.submit */
#define JOB_KIND_RESULT_MAX ((size_t)64 << 20)    /* a job's packed result, at most */
#define JOB_KIND_NICE 10                          /* CPU priority of job workers running references */

/* The kinds, NULL-terminated (static storage). */
extern const struct ga_job_kind *const ga_job_kinds[];

/* ---- helpers for the kinds --------------------------------------------- */

/* 1 when the job has an input: inline bytes or JOB_KIND_INPUT_PATH. */
int job_kind_has_input(const struct ga_job_params *p, size_t input_len);

/* The job's input as a stream (fclose it): the inline bytes, or the file.
 * 0, or a GA_E* with ctx->err set ("input_path '/x': No such file ..."). */
int job_kind_input_open(struct ga_job_ctx *ctx, const struct ga_job_params *p, FILE **f);

/* The job's whole input in memory: *buf points to the inline bytes (*owned
 * = 0) or to a malloc'ed copy of the file (*owned = 1: free() it).  Inputs
 * over max bytes are refused (GA_ETOOBIG).  0 or GA_E* with ctx->err. */
int job_kind_input_read(struct ga_job_ctx *ctx, const struct ga_job_params *p, size_t max,
                        const uint8_t **buf, size_t *len, int *owned);

/* Set the result from a packed sbuffer (checks JOB_KIND_RESULT_MAX).  0 or GA_E*
 * with ctx->err. */
int job_kind_set_result(struct ga_job_ctx *ctx, const msgpack_sbuffer *sb);

/* Before a CPU reference runs: the threads it may use (the "threads"
 * parameter, validated 1..1024 by the kind, else one per online core), and
 * the calling job worker's nice value raised to JOB_KIND_NICE (once per worker;
 * the threads the reference starts inherit it), so that CPU-heavy jobs
 * yield the cores to the loop, ingest and the engine. */
int job_kind_cpu_threads(const struct ga_job_params *p);

/* Seconds between two CLOCK_MONOTONIC readings. */
double job_kind_elapsed_s(int64_t t0_ns);

/* Pack an array of n doubles. */
void job_kind_pack_doubles(msgpack_packer *pk, const double *v, size_t n);

/* The kinds (one file each). */
extern const struct ga_job_kind job_kind_resample;
extern const struct ga_job_kind job_kind_kmeans;
extern const struct ga_job_kind job_kind_dot;
extern const struct ga_job_kind job_kind_blackscholes;
extern const struct ga_job_kind job_kind_gf820;
extern const struct ga_job_kind job_kind_apd;

/* "cpu" or "cuda:N", the device a result names. */
void job_kind_device_name(int device, char *buf, size_t cap);
/* Pack "timings": {"load_s", "compute_s"}. */
void job_kind_pack_timings(msgpack_packer *pk, double load_s, double compute_s);
/* GA_EBADARG when both an input and the generator parameter gen are given. */
int job_kind_no_input_and_generator(const struct ga_job_params *p, size_t input_len, const char *gen,
                                    char *err, size_t errlen);

#endif
