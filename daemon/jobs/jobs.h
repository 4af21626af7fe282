/* jobs.h — the job manager: GPU/CPU jobs submitted over the control socket.
 *
 * A job is (kind, parameters, input).  Parameters are validated by the
 * kind before the job is queued, so a bad request fails at submission with
 * a clear error.  Queued jobs wait in a bounded queue ordered by priority
 * (higher first), then submission order; jobs.workers threads run them,
 * apart from the ingest path (jobs never touch the engine's backends or
 * streams).  States: queued → running → done | failed | cancelled.  A
 * running job reports progress 0..100 and polls for cancellation through
 * its context; a job that fails records its error and never takes the
 * daemon down.  Finished jobs keep their result for jobs.result_ttl_s.
 *
 * Thread-safety: every function may be called from any thread. */
#ifndef GA_JOBS_H
#define GA_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/jobs/kind.h"

enum ga_job_state { GA_JOB_QUEUED, GA_JOB_RUNNING, GA_JOB_DONE, GA_JOB_FAILED, GA_JOB_CANCELLED };
const char *ga_job_state_name(enum ga_job_state s);

struct ga_job_info {
    uint64_t id;
    char kind[32];
    int priority;
    enum ga_job_state state;
    double progress;                   /* 0..100 */
    int64_t submitted_ns, started_ns, finished_ns;   /* CLOCK_REALTIME, 0 = not yet */
    int device;                        /* where it ran; -1 CPU */
    char error[512];
    size_t result_len;
};

struct ga_jobs_opts {
    const struct ga_job_kind *const *kinds;   /* NULL-terminated */
    int workers;                       /* jobs.workers */
    int max_queued;                    /* jobs.max_queued */
    int result_ttl_s;                  /* jobs.result_ttl_s */
    uint64_t max_job_bytes;            /* jobs.max_job_bytes (ga_job_params.max_bytes) */
    uint64_t results_max_bytes;        /* jobs.results_max_bytes: finished results kept, in all */
    int ngpus;                         /* usable GPUs for GPU kinds (0 = CPU) */
    const int *gpus;                   /* their ordinals */
};

struct ga_jobs;

int ga_jobs_start(struct ga_jobs **out, const struct ga_jobs_opts *o);
/* Cancel queued and running jobs, join the workers, free everything. */
void ga_jobs_stop(struct ga_jobs *m);
/* Reload: new queue bound, TTL and byte bounds (ga_jobs_opts). */
void ga_jobs_set_limits(struct ga_jobs *m, int max_queued, int result_ttl_s,
                        uint64_t max_job_bytes, uint64_t results_max_bytes);

/* Submit.  input (copied) may be NULL.  Returns 0 and *id, or GA_EBADARG
 * (unknown kind, bad parameters: err says which), GA_EBUSY (queue full),
 * GA_ESHUTDOWN, GA_ENOMEM. */
int ga_jobs_submit(struct ga_jobs *m, const char *kind, const struct ga_job_params *p,
                   const void *input, size_t input_len, int priority, uint64_t *id, char *err,
                   size_t errlen);
/* 0 or GA_ENOENT (unknown or expired id). */
int ga_jobs_info(struct ga_jobs *m, uint64_t id, struct ga_job_info *out);
/* Copy of the result bytes (free() it); GA_EAGAIN when not finished,
 * GA_ENOENT, or the job's own error code when it failed. */
int ga_jobs_result(struct ga_jobs *m, uint64_t id, uint8_t **bytes, size_t *len,
                   struct ga_job_info *info);
/* Cancel: a queued job is cancelled at once, a running one at its next
 * progress report.  0, GA_ENOENT, or GA_EINVAL when already finished. */
int ga_jobs_cancel(struct ga_jobs *m, uint64_t id);
/* Infos of every known job, newest first (free() *out). */
int ga_jobs_list(struct ga_jobs *m, struct ga_job_info **out, size_t *n);

struct ga_jobs_stats {
    uint64_t submitted, rejected, done, failed, cancelled, queued, running, expired;
    uint64_t evicted;                  /* finished jobs dropped at jobs.results_max_bytes */
    uint64_t results_bytes;            /* bytes of the results kept */
};
void ga_jobs_get_stats(struct ga_jobs *m, struct ga_jobs_stats *st);

#endif
