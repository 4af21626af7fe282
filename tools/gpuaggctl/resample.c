/* resample.c — `gpuaggctl resample`'s options and its --local form (see
 * resample.h); the roll-up itself is gpu/jobs/resample/resample.c, shared with the
 * daemon's resample job (tools/gpuaggctl/resample_job.c submits one). */
#include "tools/gpuaggctl/resample.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/log.h"
#include "gpu/jobs/resample/resample.h"
#include "proto/ga_err.h"
#include "tools/gpuaggctl/opts.h"

static const char usage[] =
"usage: gpuaggctl resample [--local] --granularity G[,G...] --method M[,M...]\n"
"                          [--timespan T[,T...]] [--back-window N] [--threads N]\n"
"                          [--input FILE|-] [--priority N] [--json]\n"
"\n"
"Aggregate the points of a CSV file with Gnocchi's archive-policy semantics\n"
"(docs/SEMANTICS.md) and print every bucket's final value.  With --local in\n"
"this process; without, as a `resample` job of gpuaggd (the file is sent\n"
"inline, or by path when it lies in one of the daemon's jobs.input_dirs),\n"
"waiting for it (a progress bar when stderr is a terminal).  Both print the\n"
"same bytes.\n"
"\n"
"  --granularity  durations: seconds (\"60\", \"0.5\") or with a unit (\"5min\")\n"
"  --method       mean sum min max count first last std median Npct (N 1..99)\n"
"                 and rate:<any of those>; \"*\" all; \"+m\"/\"-m\" edit the default\n"
"  --timespan     one per granularity, 0 = unbounded (default: all unbounded)\n"
"  --back-window  blocks of the largest granularity a late point may reach back\n"
"                 (matters across batches only; default 0)\n"
"  --threads      worker threads (default: one per core)\n"
"  --input        the CSV (default: standard input)\n"
"  --priority     job priority, higher first (daemon only; default 0)\n"
"  --json         JSON instead of CSV\n"
"\n"
"Input: header \"metric,timestamp,value\"; timestamp in epoch seconds with up\n"
"to 9 decimals or RFC 3339; a line \"#batch\" ends a batch, other lines\n"
"starting with '#' are comments.\n"
"Output CSV: header \"metric,granularity,method,timestamp,value\"; granularity\n"
"in seconds, timestamp (bucket start) in epoch seconds with 9 decimals, value\n"
"with 17 significant digits (\"inf\", \"-inf\", \"nan\" if the arithmetic gives\n"
"them); rows sorted by metric, granularity, method (byte order of the names),\n"
"timestamp.\n"
"Output JSON: one array of objects, in the same order:\n"
"  [{\"metric\": \"cpu\", \"granularity\": 60, \"method\": \"mean\",\n"
"    \"timestamp\": 1700000040.000000000, \"value\": 0.5}, ...]\n"
"  (a non-finite value is the string \"inf\", \"-inf\" or \"nan\").\n"
"Late points (older than the back window when their batch came) are not\n"
"aggregated; each is reported on stderr as \"late,METRIC,TIMESTAMP,VALUE,window\".\n"
"Exit status: 0 ok; 1 bad input (a malformed line: nothing is written; a\n"
"point before 1970, after 2200-01-01T00:00:00Z or with a NaN/Inf value:\n"
"reported with its line number,\n"
"the other points are aggregated and written); 2 usage error.\n";

static int usage_error(FILE *err, const char *fmt, const char *arg)
{
    fputs("gpuaggctl resample: ", err);
    fprintf(err, fmt, arg);
    fputs("\n(see gpuaggctl resample --help)\n", err);
    return 2;
}

static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int ctl_resample_parse(int argc, char **argv, struct ctl_resample_opts *o, FILE *out, FILE *err)
{
    enum { O_LOCAL = 0x100, O_JSON, O_GRAN, O_METHOD, O_TIMESPAN, O_INPUT, O_BACK, O_THREADS, O_PRIO };
    static const struct option longopts[] = {
        { "local", no_argument, NULL, O_LOCAL },
        { "help", no_argument, NULL, 'h' },
        { "json", no_argument, NULL, O_JSON },
        { "granularity", required_argument, NULL, O_GRAN },
        { "method", required_argument, NULL, O_METHOD },
        { "timespan", required_argument, NULL, O_TIMESPAN },
        { "input", required_argument, NULL, O_INPUT },
        { "back-window", required_argument, NULL, O_BACK },
        { "threads", required_argument, NULL, O_THREADS },
        { "priority", required_argument, NULL, O_PRIO },
        { NULL, 0, NULL, 0 },
    };
    *o = (struct ctl_resample_opts){ .input = "-" };
    opterr = 0;
    optind = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "+:h", longopts, NULL);
        if (c == -1)
            break;
        const char *v = optarg;
        int64_t n;
        switch (c) {
        case O_LOCAL:
            o->local = 1;
            break;
        case 'h':
            fputs(usage, out);
            return 0;
        case O_JSON:
            o->json = 1;
            break;
        case O_GRAN:
            o->gran = v;
            break;
        case O_METHOD:
            o->method = v;
            break;
        case O_TIMESPAN:
            o->timespan = v;
            break;
        case O_INPUT:
            o->input = v;
            break;
        case O_BACK:
            if (parse_int(v, 0, INT32_MAX, &o->back_window))
                return usage_error(err, "--back-window: \"%s\" is not a whole number >= 0", v);
            break;
        case O_THREADS:
            if (parse_int(v, 1, 1024, &n))
                return usage_error(err, "--threads: \"%s\" is not a number in 1..1024", v);
            o->threads = (int)n;
            break;
        case O_PRIO:
            if (parse_int(v, INT32_MIN, INT32_MAX, &n))
                return usage_error(err, "--priority: \"%s\" is not a whole number", v);
            o->priority = (int)n;
            break;
        case ':':
            return usage_error(err, "%s needs a value", ctl_opt_bad(argv));
        default:
            return usage_error(err, "unknown option \"%s\"", ctl_opt_bad(argv));
        }
    }
    if (optind < argc)
        return usage_error(err, "unexpected argument \"%s\"", argv[optind]);
    if (!o->gran)
        return usage_error(err, "%s", "--granularity is required");
    if (!o->method)
        return usage_error(err, "%s", "--method is required");
    return -1;                                 /* go on */
}

/* ---- the command ---------------------------------------------------------- */

int ctl_resample_spec(const struct ctl_resample_opts *o, struct ga_policy *pol, FILE *err)
{
    struct ga_resample_spec spec = { o->gran, o->method, o->timespan, o->back_window };
    char msg[512];
    if (ga_resample_policy(&spec, "--", pol, msg, sizeof msg) == 0)
        return -1;
    return usage_error(err, "%s", msg);
}

static int resample_main(int argc, char **argv, FILE *out, FILE *err)
{
    struct ctl_resample_opts o;
    struct ga_policy pol;
    int rc = ctl_resample_parse(argc, argv, &o, out, err);
    if (rc >= 0)
        return rc;
    rc = ctl_resample_spec(&o, &pol, err);
    if (rc >= 0)
        return rc;
    const char *name = strcmp(o.input, "-") ? o.input : "stdin";
    FILE *f = strcmp(o.input, "-") == 0 ? stdin : fopen(o.input, "r");
    if (!f) {
        fprintf(err, "gpuaggctl resample: %s: %s\n", o.input, strerror(errno));
        return 1;
    }
    ga_log_set_level(GA_LOG_ERROR);            /* late points are listed on err */
    struct ga_resample_io io = { .in = f, .out = out, .rejected = err,
                                 .reject_prefix = "gpuaggctl resample: ", .late = err,
                                 .json = o.json };
    struct ga_resample_stats st;
    char emsg[512] = "";
    rc = ga_resample_run(&pol, NULL, o.threads, &io, &st, emsg, sizeof emsg);
    if (f != stdin)
        fclose(f);
    if (rc == GA_EINVAL)
        fprintf(err, "gpuaggctl resample: %s: %s\n", name, emsg);
    else if (rc)
        fprintf(err, "gpuaggctl resample: %s\n", emsg);
    return rc ? 1 : st.rejected ? 1 : 0;
}

int ctl_resample_local(int argc, char **argv)
{
    return resample_main(argc, argv, stdout, stderr);
}
