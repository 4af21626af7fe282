/* resample.h — roll-ups of a point CSV with Gnocchi's archive-policy
 * semantics: CSV in (proto/csv_points.h) → a policy built from
 * granularities/methods → the engine → every bucket's final value, sorted,
 * as CSV or JSON.  Shared by `gpuaggctl resample --local` and the daemon's
 * `resample` job, so both print the same bytes.
 *
 * Each batch ("#batch" lines separate them; without any the file is one
 * batch) is fed to the engine in arrival order; the output is the rows of
 * all feeds, a later row for a bucket replacing an earlier one, then
 * Gnocchi's read-side timespan truncation per (metric, granularity,
 * method).  Output formats are described in `gpuaggctl resample --help`.
 *
 * Thread-safety: no global state; concurrent runs are independent. */
#ifndef GA_RESAMPLE_H
#define GA_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpu/engine.h"
#include "proto/policy.h"

/* What the roll-up asks for, as text (the CLI's options, the job's params). */
struct ga_resample_spec {
    const char *granularity;     /* "60,5min": 1..16 durations, required */
    const char *method;          /* "mean,max", "*", "+median": required */
    const char *timespan;        /* one duration per granularity; NULL or "" = unbounded */
    int64_t back_window;         /* >= 0 */
};

/* Build the policy of spec into p.  Returns 0, or GA_EBADARG with a message
 * in err that starts with `prefix` and the field's name ("--granularity: \"x\"
 * is not a positive duration" with prefix "--"). */
int ga_resample_policy(const struct ga_resample_spec *spec, const char *prefix,
                       struct ga_policy *p, char *err, size_t errlen);

/* Progress 0..100 after each batch fed; nonzero return cancels. */
typedef int (*ga_resample_progress_fn)(void *arg, double pct);

struct ga_resample_io {
    FILE *in;                    /* the CSV; read to its end */
    FILE *out;                   /* the roll-ups */
    FILE *rejected;              /* "<prefix>line N: ...: point rejected" lines, or NULL */
    const char *reject_prefix;   /* may be NULL */
    FILE *late;                  /* "late,METRIC,TIMESTAMP,VALUE,window" lines, or NULL */
    int json;                    /* 1: JSON output, 0: CSV */
    ga_resample_progress_fn progress;   /* may be NULL */
    void *progress_arg;
};

struct ga_resample_stats {
    size_t points;               /* read */
    size_t rejected;             /* before 1970 or not finite */
    size_t late;                 /* older than the back window */
    size_t rows;                 /* written */
};

/* Run one roll-up.  backend: the engine's backend (ownership passes, also on
 * failure), or NULL for a CPU backend with `threads` threads (0: one per
 * core).  st may be NULL.  Returns
 *   0             output written (rejected/late points are reported, not errors);
 *   GA_EINVAL     a malformed line: err is "line N: what is wrong", nothing written;
 *   GA_ECANCELED  progress asked to stop, nothing written;
 *   GA_ENOMEM, GA_EIO (read or write error), or the backend's error (err set). */
int ga_resample_run(const struct ga_policy *p, struct ga_backend *backend, int threads,
                    const struct ga_resample_io *io, struct ga_resample_stats *st, char *err,
                    size_t errlen);

#endif
