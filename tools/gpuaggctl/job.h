/* job.h — gpuaggctl's job commands (docs/gpuaggctl.1), clients of the
 * job.* control ops (proto/PROTOCOL.md, "Jobs"):
 *
 *   gpuaggctl job submit KIND [--param k=v ...] [--input FILE|-] [--priority N] [--wait] [--json]
 *   gpuaggctl job status|result|cancel ID [--json]
 *   gpuaggctl job list [--json]
 *
 * and the pieces `gpuaggctl resample` (without --local) shares: sending a
 * job with its input, waiting with a progress bar, fetching the result. */
#ifndef GA_CTL_JOB_H
#define GA_CTL_JOB_H

#include <stdint.h>

#include <msgpack.h>

#include "tools/gpuaggctl/client.h"
#include "tools/gpuaggctl/query.h"

#define CTL_JOB_MAX_PARAMS 31

/* What to submit.  Strings are borrowed. */
struct ctl_job_spec {
    const char *kind;
    int nparams;
    const char *key[CTL_JOB_MAX_PARAMS], *value[CTL_JOB_MAX_PARAMS];
    const char *input;          /* a file, "-" for stdin, or NULL */
    int priority;
};

/* The command: argv[0] is "job".  Returns the exit code. */
int ctl_job_main(int argc, char **argv, const struct ctl_opts *o);

/* Submit s on c: the input goes by path when the file lies in one of the
 * daemon's jobs.input_dirs (asked with config.get), else inline.  Prints
 * failures on stderr prefixed by `who` ("gpuaggctl job submit").  Returns
 * EXIT_OK with *id, or the exit code. */
int ctl_job_submit(struct ctl_client *c, const struct ctl_job_spec *s, const char *who,
                   uint64_t *id);

/* Poll job.status until the job ends (a progress bar on stderr when it is
 * a terminal).  *state gets "done", "failed" or "cancelled", *error the
 * job's error text (both copied, NUL-terminated).  Returns EXIT_OK or the
 * exit code of a failed call. */
int ctl_job_wait(struct ctl_client *c, uint64_t id, const char *who, char *state, size_t scap,
                 char *error, size_t ecap);

/* Fetch the result of job id (in chunks when it is larger than one
 * response) into u (msgpack_unpacked_init'ed by the caller; destroy it),
 * whose strings point into *buf (free() it after u; NULL on failure).  On
 * a daemon error *code gets its code and the message is printed unless
 * quiet.  Returns EXIT_OK or the exit code. */
int ctl_job_fetch(struct ctl_client *c, uint64_t id, const char *who, msgpack_unpacked *u,
                  char **buf, int64_t *code, int quiet);

/* `gpuaggctl resample` without --local: argv[0] is "resample".  Prints what
 * --local prints; returns the same exit codes (3/4 when the daemon cannot
 * be reached or the conversation fails). */
int ctl_resample_job(int argc, char **argv, const struct ctl_opts *o);

#endif
