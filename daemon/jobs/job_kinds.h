/* job_kinds.h — the job kinds gpuaggd offers (docs/JOBS.md) and the glue
 * between the daemon and the job manager (daemon/jobs/jobs.h).
 *
 * Each kind lives in its own file: job_resample.c, job_kmeans.c,
 * job_numeric.c (dot, blackscholes), job_gf820.c, job_apd.c (apd-fit).  A kind validates its
 * parameters before the job is queued (clear errors naming the parameter),
 * reads its input on the job worker (inline bytes, or the file named by the
 * reserved parameter JK_INPUT_PATH), and packs one msgpack result object.
 *
 * Input files.  job.submit resolves a client's input_path with realpath and
 * accepts it only inside one of jobs.input_dirs; the resolved path travels
 * in the JK_INPUT_PATH parameter.  The worker opens it and checks, through
 * /proc/self/fd, that the file it opened still is that path (a directory
 * swapped for a symlink in between is refused). */
#ifndef GA_JOB_KINDS_H
#define GA_JOB_KINDS_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/jobs/jobs.h"

#define JK_INPUT_PATH "input_path"          /* reserved parameter, set by job.submit */
#define JK_RESULT_MAX ((size_t)64 << 20)    /* a job's packed result, at most */
#define JK_NICE 10                          /* CPU priority of job workers running references */

struct ga_daemon;

/* The kinds, NULL-terminated (static storage). */
extern const struct ga_job_kind *const ga_job_kinds[];

/* Start the job manager with the kinds, jobs.* of the running config and
 * the usable GPUs of d->gpus; sets d->jobs.  Loop thread.  0 or GA_E* with
 * err. */
int ga_job_service_start(struct ga_daemon *d, char *err, size_t errlen);
/* Reload: the new jobs.max_queued / jobs.result_ttl_s.  Loop thread. */
void ga_job_service_reload(struct ga_daemon *d);
/* Drain (loop thread, at its start): answer job.submit waits with
 * ESHUTDOWN, cancel every queued and running job (a running one stops at
 * its next progress report); job.submit is refused from now on. */
void ga_job_service_drain(struct ga_daemon *d);
/* After the loop has ended (the control server's threads are gone): join
 * the workers, free the manager, d->jobs = NULL. */
void ga_job_service_stop(struct ga_daemon *d);

/* ---- helpers for the kinds --------------------------------------------- */

/* 1 when the job has an input: inline bytes or JK_INPUT_PATH. */
int jk_has_input(const struct ga_job_params *p, size_t input_len);

/* The job's input as a stream (fclose it): the inline bytes, or the file.
 * 0, or a GA_E* with ctx->err set ("input_path '/x': No such file ..."). */
int jk_input_open(struct ga_job_ctx *ctx, const struct ga_job_params *p, FILE **f);

/* The job's whole input in memory: *buf points to the inline bytes (*owned
 * = 0) or to a malloc'ed copy of the file (*owned = 1: free() it).  Inputs
 * over max bytes are refused (GA_ETOOBIG).  0 or GA_E* with ctx->err. */
int jk_input_read(struct ga_job_ctx *ctx, const struct ga_job_params *p, size_t max,
                  const uint8_t **buf, size_t *len, int *owned);

/* Set the result from a packed sbuffer (checks JK_RESULT_MAX).  0 or GA_E*
 * with ctx->err. */
int jk_set_result(struct ga_job_ctx *ctx, const msgpack_sbuffer *sb);

/* Before a CPU reference runs: the threads it may use (the "threads"
 * parameter, validated 1..1024 by the kind, else one per online core), and
 * the calling job worker's nice value raised to JK_NICE (once per worker;
 * the threads the reference starts inherit it), so that CPU-heavy jobs
 * yield the cores to the loop, ingest and the engine. */
int jk_cpu_threads(const struct ga_job_params *p);

/* Seconds between two CLOCK_MONOTONIC readings. */
double jk_elapsed_s(int64_t t0_ns);

/* Pack an array of n doubles. */
void jk_pack_doubles(msgpack_packer *pk, const double *v, size_t n);

/* The kinds (one file each). */
extern const struct ga_job_kind jk_resample;
extern const struct ga_job_kind jk_kmeans;
extern const struct ga_job_kind jk_dot;
extern const struct ga_job_kind jk_blackscholes;
extern const struct ga_job_kind jk_gf820;
extern const struct ga_job_kind jk_apd;

#endif
