/* job_kinds.c — the kinds table, the job manager's start/reload/stop for the
 * daemon, and the input/result helpers the kinds share (see job_kinds.h). */
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

const struct ga_job_kind *const ga_job_kinds[] = {
    &jk_resample,
    &jk_kmeans,
    &jk_dot,
    &jk_blackscholes,
    &jk_gf820,
    &jk_apd,
    NULL,
};

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
    ctlj_waiters_close(d);
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

/* ---- inputs ------------------------------------------------------------------ */

int jk_has_input(const struct ga_job_params *p, size_t input_len)
{
    return input_len > 0 || ga_job_param(p, JK_INPUT_PATH) != NULL;
}

/* Open the resolved input path and make sure the file opened is that path. */
static int open_checked(struct ga_job_ctx *ctx, const char *path, int *fd_out, int64_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        snprintf(ctx->err, sizeof ctx->err, "input_path '%s': %s", path, strerror(e));
        return e == ENOENT ? GA_ENOENT : GA_EIO;
    }
    char link[64], now[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, now, sizeof now - 1);
    struct stat st;
    if (n < 0 || fstat(fd, &st) < 0) {
        snprintf(ctx->err, sizeof ctx->err, "input_path '%s': %s", path, strerror(errno));
        close(fd);
        return GA_EIO;
    }
    now[n] = '\0';
    if (strcmp(now, path) != 0) {
        snprintf(ctx->err, sizeof ctx->err, "input_path '%.200s' now resolves to '%.200s': refused",
                 path, now);
        close(fd);
        return GA_EBADARG;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(ctx->err, sizeof ctx->err, "input_path '%s': not a regular file", path);
        close(fd);
        return GA_EBADARG;
    }
    *fd_out = fd;
    *size = (int64_t)st.st_size;
    return 0;
}

int jk_input_open(struct ga_job_ctx *ctx, const struct ga_job_params *p, FILE **f)
{
    const char *path = ga_job_param(p, JK_INPUT_PATH);
    if (!path) {
        *f = ctx->input_len ? fmemopen((void *)ctx->input, ctx->input_len, "r")
                            : fopen("/dev/null", "r");
        if (!*f) {
            snprintf(ctx->err, sizeof ctx->err, "input: %s", strerror(errno));
            return GA_ENOMEM;
        }
        return 0;
    }
    int fd;
    int64_t size;
    int rc = open_checked(ctx, path, &fd, &size);
    if (rc < 0)
        return rc;
    if (!(*f = fdopen(fd, "r"))) {
        snprintf(ctx->err, sizeof ctx->err, "input_path '%s': %s", path, strerror(errno));
        close(fd);
        return GA_ENOMEM;
    }
    return 0;
}

int jk_input_read(struct ga_job_ctx *ctx, const struct ga_job_params *p, size_t max,
                  const uint8_t **buf, size_t *len, int *owned)
{
    const char *path = ga_job_param(p, JK_INPUT_PATH);
    *owned = 0;
    if (!path) {
        if (ctx->input_len > max) {
            snprintf(ctx->err, sizeof ctx->err, "input: %zu bytes, over the limit of %zu",
                     ctx->input_len, max);
            return GA_ETOOBIG;
        }
        *buf = ctx->input;
        *len = ctx->input_len;
        return 0;
    }
    int fd;
    int64_t size;
    int rc = open_checked(ctx, path, &fd, &size);
    if (rc < 0)
        return rc;
    if ((uint64_t)size > max) {
        snprintf(ctx->err, sizeof ctx->err, "input_path '%s': %lld bytes, over the limit of %zu",
                 path, (long long)size, max);
        close(fd);
        return GA_ETOOBIG;
    }
    uint8_t *b = malloc(size ? (size_t)size : 1);
    if (!b) {
        snprintf(ctx->err, sizeof ctx->err, "input_path '%s': out of memory for %lld bytes",
                 path, (long long)size);
        close(fd);
        return GA_ENOMEM;
    }
    size_t got = 0;
    while (got < (size_t)size) {
        ssize_t r = read(fd, b + got, (size_t)size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(ctx->err, sizeof ctx->err, "input_path '%s': %s", path,
                     r < 0 ? strerror(errno) : "file shrank while read");
            free(b);
            close(fd);
            return GA_EIO;
        }
        got += (size_t)r;
        /* reading a big file may take a while: let a cancel through */
        if (ga_job_progress(ctx, 0)) {
            free(b);
            close(fd);
            return GA_ECANCELED;
        }
    }
    close(fd);
    *buf = b;
    *len = got;
    *owned = 1;
    return 0;
}

/* ---- results ------------------------------------------------------------------- */

int jk_set_result(struct ga_job_ctx *ctx, const msgpack_sbuffer *sb)
{
    if (!sb->data) {
        snprintf(ctx->err, sizeof ctx->err, "out of memory packing the result");
        return GA_ENOMEM;
    }
    if (sb->size > JK_RESULT_MAX) {
        snprintf(ctx->err, sizeof ctx->err, "result of %zu bytes is over the limit of %zu MiB "
                 "kept per job", sb->size, JK_RESULT_MAX >> 20);
        return GA_ETOOBIG;
    }
    int rc = ga_job_set_result(ctx, sb->data, sb->size);
    if (rc < 0)
        snprintf(ctx->err, sizeof ctx->err, "out of memory keeping the result");
    return rc;
}

int jk_cpu_threads(const struct ga_job_params *p)
{
    static _Thread_local int lowered;
    if (!lowered) {
        lowered = 1;
        if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), JK_NICE) < 0)
            ga_log(GA_LOG_WARN, "job_nice", "error=\"%s\"", strerror(errno));
    }
    const char *s = ga_job_param(p, "threads");
    long n = s ? atol(s) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

double jk_elapsed_s(int64_t t0_ns)
{
    return (double)(ga_now_mono_ns() - t0_ns) / 1e9;
}

void jk_pack_doubles(msgpack_packer *pk, const double *v, size_t n)
{
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++)
        msgpack_pack_double(pk, v[i]);
}
