/* job_kinds.h — the job service: the job manager (jobs.h) started with
 * the kinds of daemon/jobs/kinds.c (daemon/jobs/kind.h) and jobs.* of the
 * running config. */
#ifndef GA_JOB_KINDS_H
#define GA_JOB_KINDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/jobs/jobs.h"
#include "daemon/jobs/kind.h"

struct ga_daemon;

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

#endif
