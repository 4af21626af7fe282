/* resample_job.c — `gpuaggctl resample` without --local: the same options,
 * sent to gpuaggd as a `resample` job (input inline, or by path when it lies
 * in one of the daemon's jobs.input_dirs), waited for, and printed exactly
 * as --local prints: the roll-ups on stdout, the rejected points (with the
 * "gpuaggctl resample: " prefix) and the late points on stderr, exit 1 when
 * points were rejected or the input was malformed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "tools/gpuaggctl/job.h"
#include "tools/gpuaggctl/resample.h"

#define WHO "gpuaggctl resample"

/* Write s[0..n) to f, each line prefixed. */
static void put_lines(FILE *f, const char *prefix, const char *s, size_t n)
{
    while (n) {
        const char *nl = memchr(s, '\n', n);
        size_t l = nl ? (size_t)(nl - s) + 1 : n;
        fputs(prefix, f);
        fwrite(s, 1, l, f);
        s += l;
        n -= l;
    }
}

static int put_str(const msgpack_object *res, const char *key, FILE *f, const char *prefix)
{
    const char *s;
    size_t n;
    if (mp_get_str(res, key, &s, &n) < 0)
        return -1;
    if (prefix)
        put_lines(f, prefix, s, n);
    else
        fwrite(s, 1, n, f);
    return 0;
}

/* Print what --local prints; returns the exit code. */
static int print_result(const msgpack_object *res)
{
    uint64_t rejected = 0;
    if (put_str(res, "output", stdout, NULL) < 0) {
        fprintf(stderr, WHO ": the job's result has no output\n");
        return EXIT_COMM;
    }
    put_str(res, "rejected", stderr, WHO ": ");
    put_str(res, "late", stderr, NULL);
    mp_get_uint(res, "rejected_points", &rejected);
    return rejected ? 1 : 0;
}

static int run(struct ctl_client *c, const struct ctl_resample_opts *ro)
{
    struct ctl_job_spec s = { .kind = "resample", .input = ro->input, .priority = ro->priority };
    char bw[32], th[32];
    s.key[s.nparams] = "granularity";
    s.value[s.nparams++] = ro->gran;
    s.key[s.nparams] = "method";
    s.value[s.nparams++] = ro->method;
    if (ro->timespan) {
        s.key[s.nparams] = "timespan";
        s.value[s.nparams++] = ro->timespan;
    }
    if (ro->back_window) {
        snprintf(bw, sizeof bw, "%" PRId64, ro->back_window);
        s.key[s.nparams] = "back-window";
        s.value[s.nparams++] = bw;
    }
    if (ro->threads) {
        snprintf(th, sizeof th, "%d", ro->threads);
        s.key[s.nparams] = "threads";
        s.value[s.nparams++] = th;
    }
    if (ro->json) {
        s.key[s.nparams] = "json";
        s.value[s.nparams++] = "1";
    }
    uint64_t id;
    int ex = ctl_job_submit(c, &s, WHO, &id);
    if (ex != EXIT_OK)
        return ex;
    char state[32], error[1024];
    if ((ex = ctl_job_wait(c, id, WHO, state, sizeof state, error, sizeof error)) != EXIT_OK)
        return ex;
    msgpack_unpacked u;
    char *buf = NULL;
    int64_t code = 0;
    msgpack_unpacked_init(&u);
    ex = ctl_job_fetch(c, id, WHO, &u, &buf, &code, 1);
    const char *name = strcmp(ro->input, "-") ? ro->input : "stdin";
    if (ex == EXIT_OK)
        ex = print_result(&u.data);
    else if (ex == EXIT_DAEMON && code == GA_EINVAL)       /* the input is malformed */
        fprintf(stderr, WHO ": %s: %s\n", name, error);
    else if (ex == EXIT_DAEMON)
        fprintf(stderr, WHO ": job %" PRIu64 " %s%s%s\n", id,
                strcmp(state, "cancelled") == 0 ? "was cancelled" : state,
                error[0] ? ": " : "", error);
    msgpack_unpacked_destroy(&u);
    free(buf);
    return ex;
}

int ctl_resample_job(int argc, char **argv, const struct ctl_opts *o)
{
    struct ctl_resample_opts ro;
    struct ga_policy pol;
    int ex = ctl_resample_parse(argc, argv, &ro, stdout, stderr);
    if (ex >= 0)
        return ex;
    ro.json |= o->json;
    if ((ex = ctl_resample_spec(&ro, &pol, stderr)) >= 0)
        return ex;
    struct ctl_client c;
    int rc = ctl_client_connect(&c, o->socket, (int)(o->timeout_s * 1000));
    if (rc < 0) {
        fprintf(stderr, "gpuaggctl: cannot connect to gpuaggd at %s: %s (is the daemon running?)\n",
                o->socket, strerror(-rc));
        ctl_client_close(&c);
        return EXIT_CONNECT;
    }
    ex = run(&c, &ro);
    if (fflush(stdout) != 0 && ex == EXIT_OK)
        ex = EXIT_COMM;
    ctl_client_close(&c);
    return ex;
}
