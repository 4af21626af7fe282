/* resample.h — `gpuaggctl resample`: roll-ups of a CSV file, in-process
 * (--local) or as a `resample` job of gpuaggd; both print the same bytes.
 * See `gpuaggctl resample --help`. */
#ifndef GA_CTL_RESAMPLE_H
#define GA_CTL_RESAMPLE_H

#include <stdint.h>
#include <stdio.h>

#include "proto/policy.h"

struct ctl_resample_opts {
    const char *gran, *method, *timespan;   /* as given; timespan may be NULL */
    const char *input;                      /* path, "-" = stdin */
    int64_t back_window;
    int threads;                            /* 0 = one per core */
    int priority;                           /* the job's (daemon form) */
    int json, local;
};

/* Parse the command's options (argv[0] is "resample").  Returns -1 to go
 * on, or the exit code after printing: 0 for --help (usage on out), 2 for a
 * usage error (on err). */
int ctl_resample_parse(int argc, char **argv, struct ctl_resample_opts *o, FILE *out, FILE *err);

/* Check the options' granularities/methods/timespans as the daemon will:
 * -1 and *pol on success, else 2 after printing the usage error on err. */
int ctl_resample_spec(const struct ctl_resample_opts *o, struct ga_policy *pol, FILE *err);

/* Run the --local form.  argv[0] is "resample".  Writes the roll-ups to
 * stdout and diagnostics to stderr.  Returns the process exit code: 0 ok,
 * 1 bad input data (a malformed line: nothing written; or points rejected
 * as before 1970 / after 2200-01-01T00:00:00Z / non-finite: reported per line, the rest aggregated and
 * written), 2 usage error. */
int ctl_resample_local(int argc, char **argv);

#endif
