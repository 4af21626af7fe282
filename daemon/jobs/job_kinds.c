/* job_kinds.c — the job manager's start/reload/drain/stop for the daemon
 * (see job_kinds.h). */
#include "daemon/jobs/job_kinds.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/control/control_ops_jobs.h"
#include "daemon/daemon.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"

/* ---- the service ------------------------------------------------------------ */

int ga_job_service_start(struct ga_daemon *d, char *err, size_t errlen)
{
    int gpus[GA_GPU_MAX], n = 0;
    for (int i = 0; i < d->ngpus; i++)
        if (d->gpus[i].usable)
            gpus[n++] = d->gpus[i].index;
    struct ga_jobs_opts o = {
        .kinds = ga_job_kinds,
        .workers = d->cfg->jobs.workers,
        .max_queued = d->cfg->jobs.max_queued,
        .result_ttl_s = d->cfg->jobs.result_ttl_s,
        .max_job_bytes = (uint64_t)d->cfg->jobs.max_job_bytes,
        .results_max_bytes = (uint64_t)d->cfg->jobs.results_max_bytes,
        .ngpus = n,
        .gpus = gpus,
    };
    int rc = ga_jobs_start(&d->jobs, &o);
    if (rc < 0) {
        snprintf(err, errlen, "job manager: %s", ga_strerror(rc));
        d->jobs = NULL;
        return rc;
    }
    char kinds[256] = "";
    for (const struct ga_job_kind *const *k = ga_job_kinds; *k; k++)
        snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s",
                 kinds[0] ? "," : "", (*k)->name);
    ga_log(GA_LOG_INFO, "jobs", "workers=%d max_queued=%d result_ttl_s=%d gpus=%d input_dirs=%d "
           "kinds=%s", o.workers, o.max_queued, o.result_ttl_s, n, d->cfg->jobs.ninput_dirs, kinds);
    return 0;
}

void ga_job_service_reload(struct ga_daemon *d)
{
    if (d->jobs)
        ga_jobs_set_limits(d->jobs, d->cfg->jobs.max_queued, d->cfg->jobs.result_ttl_s,
                           (uint64_t)d->cfg->jobs.max_job_bytes,
                           (uint64_t)d->cfg->jobs.results_max_bytes);
}

void ga_job_service_drain(struct ga_daemon *d)
{
    control_ops_jobs_waiters_close(d);
    if (!d->jobs)
        return;
    struct ga_job_info *all;
    size_t n;
    if (ga_jobs_list(d->jobs, &all, &n) < 0)
        return;                          /* ga_job_service_stop cancels them */
    for (size_t i = 0; i < n; i++)
        if (all[i].state == GA_JOB_QUEUED || all[i].state == GA_JOB_RUNNING)
            ga_jobs_cancel(d->jobs, all[i].id);
    free(all);
}

void ga_job_service_stop(struct ga_daemon *d)
{
    if (d->jobs) {
        ga_jobs_stop(d->jobs);
        d->jobs = NULL;
    }
}
