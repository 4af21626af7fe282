/* kind.c — parameters and the input/result helpers the kinds share
 * (see kind.h). */
#include "daemon/jobs/kind.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"

/* ---- parameters -------------------------------------------------------------- */

const char *ga_job_param(const struct ga_job_params *p, const char *key)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->kv[i].key, key) == 0)
            return p->kv[i].value;
    return NULL;
}

int ga_job_param_int(const struct ga_job_params *p, const char *key, int64_t def, int64_t lo,
                     int64_t hi, int64_t *v, char *err, size_t errlen)
{
    const char *s = ga_job_param(p, key);
    if (!s) {
        *v = def;
        return 0;
    }
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi) {
        snprintf(err, errlen, "param '%s': expected an integer in %" PRId64 "..%" PRId64 ", got '%s'",
                 key, lo, hi, s);
        return GA_EBADARG;
    }
    *v = x;
    return 0;
}

int ga_job_param_double(const struct ga_job_params *p, const char *key, double def, double lo,
                        double hi, double *v, char *err, size_t errlen)
{
    const char *s = ga_job_param(p, key);
    if (!s) {
        *v = def;
        return 0;
    }
    char *end;
    double x = strtod(s, &end);
    if (end == s || *end || !isfinite(x) || x < lo || x > hi) {
        snprintf(err, errlen, "param '%s': expected a number in %g..%g, got '%s'", key, lo, hi, s);
        return GA_EBADARG;
    }
    *v = x;
    return 0;
}

int ga_job_params_check_known(const struct ga_job_params *p, const char *const *known, char *err,
                              size_t errlen)
{
    for (int i = 0; i < p->n; i++) {
        int ok = 0;
        for (const char *const *k = known; *k && !ok; k++)
            ok = strcmp(*k, p->kv[i].key) == 0;
        if (!ok) {
            snprintf(err, errlen, "unknown param '%s'", p->kv[i].key);
            return GA_EBADARG;
        }
    }
    return 0;
}

/* ---- running ------------------------------------------------------------- */

/* ---- inputs ------------------------------------------------------------------ */

int job_kind_has_input(const struct ga_job_params *p, size_t input_len)
{
    return input_len > 0 || ga_job_param(p, JOB_KIND_INPUT_PATH) != NULL;
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

int job_kind_input_open(struct ga_job_ctx *ctx, const struct ga_job_params *p, FILE **f)
{
    const char *path = ga_job_param(p, JOB_KIND_INPUT_PATH);
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

int job_kind_input_read(struct ga_job_ctx *ctx, const struct ga_job_params *p, size_t max,
                        const uint8_t **buf, size_t *len, int *owned)
{
    const char *path = ga_job_param(p, JOB_KIND_INPUT_PATH);
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

int job_kind_set_result(struct ga_job_ctx *ctx, const msgpack_sbuffer *sb)
{
    if (!sb->data) {
        snprintf(ctx->err, sizeof ctx->err, "out of memory packing the result");
        return GA_ENOMEM;
    }
    if (sb->size > JOB_KIND_RESULT_MAX) {
        snprintf(ctx->err, sizeof ctx->err, "result of %zu bytes is over the limit of %zu MiB "
                 "kept per job", sb->size, JOB_KIND_RESULT_MAX >> 20);
        return GA_ETOOBIG;
    }
    int rc = ga_job_set_result(ctx, sb->data, sb->size);
    if (rc < 0)
        snprintf(ctx->err, sizeof ctx->err, "out of memory keeping the result");
    return rc;
}

int job_kind_cpu_threads(const struct ga_job_params *p)
{
    static _Thread_local int lowered;
    if (!lowered) {
        lowered = 1;
        if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), JOB_KIND_NICE) < 0)
            ga_log(GA_LOG_WARN, "job_nice", "error=\"%s\"", strerror(errno));
    }
    const char *s = ga_job_param(p, "threads");
    long n = s ? atol(s) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

double job_kind_elapsed_s(int64_t t0_ns)
{
    return (double)(ga_now_mono_ns() - t0_ns) / 1e9;
}

void job_kind_pack_doubles(msgpack_packer *pk, const double *v, size_t n)
{
    msgpack_pack_array(pk, n);
    for (size_t i = 0; i < n; i++)
        msgpack_pack_double(pk, v[i]);
}

/* ---- shared by the kinds' results ------------------------------------------- */

void job_kind_device_name(int device, char *buf, size_t cap)
{
    snprintf(buf, cap, device < 0 ? "cpu" : "cuda:%d", device);
}

void job_kind_pack_timings(msgpack_packer *pk, double load_s, double compute_s)
{
    mp_pack_cstr(pk, "timings");
    msgpack_pack_map(pk, 2);
    mp_pack_kv_double(pk, "load_s", load_s);
    mp_pack_kv_double(pk, "compute_s", compute_s);
}

int job_kind_no_input_and_generator(const struct ga_job_params *p, size_t input_len,
                                    const char *gen, char *err, size_t errlen)
{
    if (job_kind_has_input(p, input_len) && ga_job_param(p, gen)) {
        snprintf(err, errlen, "give either an input or the generator param '%s', not both", gen);
        return GA_EBADARG;
    }
    return 0;
}
