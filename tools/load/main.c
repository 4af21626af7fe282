/* main.c — gpuagg-load: options and exit status (load.h, docs/gpuagg-load.1).
 *
 *   gpuagg-load --connect PATH|HOST:PORT [options]
 *
 * Exit status: 0 every batch acknowledged, 1 a connection failed (an error
 * from the daemon, a closed connection, acks missing after --drain, a
 * record file not written), 2 usage. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/ts_parse.h"
#include "tools/load/load.h"

#ifndef GA_VERSION
#define GA_VERSION "0.0.0"
#endif

static void usage(FILE *f)
{
    fprintf(f,
"usage: gpuagg-load --connect PATH|HOST:PORT [options]\n"
"\n"
"  -c, --connect ADDR      Unix socket path (contains '/') or host:port\n"
"  -n, --connections N     connections (default 1)\n"
"  -f, --form FORM         friendly | columnar (default columnar)\n"
"      --index             columnar: per-point \"index\" instead of \"counts\"\n"
"      --ts-form FORM      friendly timestamps: ns | seconds | rfc3339 (default ns)\n"
"  -b, --batch N           points per batch (default 1000)\n"
"  -m, --metrics N         metrics in all, spread over the connections (default 100)\n"
"  -k, --points-per-metric N  consecutive points of one metric in a batch (default 10)\n"
"  -r, --rate R            target points/s over all connections, or 'max' (default max)\n"
"  -d, --duration S        stop sending after S seconds\n"
"  -p, --points N          stop after N points in all (default: 10 s if neither is given)\n"
"  -i, --inflight N        unacknowledged batches per connection (default 8)\n"
"  -s, --seed N            random seed (default 1)\n"
"      --step DUR          timestamp step per metric: 1s, 250ms, 10us, 100ns (default 1s)\n"
"      --start TS          first timestamp: ns since the epoch, RFC 3339, or now (default)\n"
"      --realtime          send no point before its time: point j of a metric waits\n"
"                          until j steps have passed since the start\n"
"      --late F            fraction 0..1 of points stamped in the past (default 0)\n"
"      --late-steps N      how many steps back a late point may go (default 10)\n"
"      --token T           token for the hello (TCP listeners with listen.token)\n"
"      --prefix P          metric names are P0, P1, ... (default \"load.\")\n"
"      --record FILE       write every acknowledged point: metric TAB ts_ns TAB value\n"
"      --unacked FILE      at the end, the points of batches sent but not acknowledged\n"
"      --drain S           wait up to S seconds for the last acks (default 30)\n"
"      --json              print the report as one JSON object\n"
"  -h, --help, --version\n"
"\n"
"exit status: 0 all acknowledged, 1 failure (daemon error, closed connection,\n"
"missing acks), 2 usage\n");
}

static int bad(const char *opt, const char *val)
{
    fprintf(stderr, "gpuagg-load: bad value for %s: '%s'\n(see gpuagg-load --help)\n", opt, val);
    return 2;
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || v != floor(v) || v < min || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_dur_ns(const char *s, int64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    static const struct { const char *unit; double ns; } u[] = {
        { "", 1e9 }, { "s", 1e9 }, { "ms", 1e6 }, { "us", 1e3 }, { "ns", 1 }, { "min", 60e9 },
        { "h", 3600e9 },
    };
    if (end == s || !(v >= 0))
        return -1;
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        if (strcmp(end, u[i].unit) == 0 && v * u[i].ns < 9e18) {
            *out = (int64_t)llround(v * u[i].ns);
            return 0;
        }
    return -1;
}

static int parse_start(const char *s, int64_t *out)
{
    if (strcmp(s, "now") == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *out = (int64_t)ts.tv_sec * 1000000000;
        return 0;
    }
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end != s && !*end && v >= 0) {
        *out = v;
        return 0;
    }
    return ts_parse_rfc3339(s, strlen(s), out, NULL, 0) == 0 && *out >= 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct load_opts o = {
        .nconn = 1, .form = LOAD_COLUMNAR, .ts_form = ING_TS_NS, .batch = 1000, .metrics = 100,
        .ppm = 10, .inflight = 8, .seed = 1, .step_ns = 1000000000, .late_steps = 10,
        .prefix = "load.", .drain_s = 30, .connect_timeout_s = 10,
    };
    enum { O_INDEX = 256, O_TSFORM, O_STEP, O_START, O_LATE, O_LATE_STEPS, O_TOKEN, O_PREFIX,
           O_RECORD, O_UNACKED, O_DRAIN, O_JSON, O_VERSION, O_REALTIME };
    static const struct option lo[] = {
        { "connect", 1, 0, 'c' }, { "connections", 1, 0, 'n' }, { "form", 1, 0, 'f' },
        { "index", 0, 0, O_INDEX }, { "ts-form", 1, 0, O_TSFORM }, { "batch", 1, 0, 'b' },
        { "metrics", 1, 0, 'm' }, { "points-per-metric", 1, 0, 'k' }, { "rate", 1, 0, 'r' },
        { "duration", 1, 0, 'd' }, { "points", 1, 0, 'p' }, { "inflight", 1, 0, 'i' },
        { "seed", 1, 0, 's' }, { "step", 1, 0, O_STEP }, { "start", 1, 0, O_START },
        { "realtime", 0, 0, O_REALTIME },
        { "late", 1, 0, O_LATE }, { "late-steps", 1, 0, O_LATE_STEPS }, { "token", 1, 0, O_TOKEN },
        { "prefix", 1, 0, O_PREFIX }, { "record", 1, 0, O_RECORD }, { "unacked", 1, 0, O_UNACKED },
        { "drain", 1, 0, O_DRAIN }, { "json", 0, 0, O_JSON }, { "help", 0, 0, 'h' },
        { "version", 0, 0, O_VERSION }, { 0, 0, 0, 0 },
    };
    int have_start = 0, opt;
    char *end;
    while ((opt = getopt_long(argc, argv, "c:n:f:b:m:k:r:d:p:i:s:h", lo, NULL)) != -1) {
        switch (opt) {
        case 'c': o.connect = optarg; break;
        case 'n': if (parse_u32(optarg, 1, 100000, &o.nconn) < 0) return bad("--connections", optarg); break;
        case 'f':
            if (strcmp(optarg, "friendly") == 0) o.form = LOAD_FRIENDLY;
            else if (strcmp(optarg, "columnar") == 0) o.form = LOAD_COLUMNAR;
            else return bad("--form", optarg);
            break;
        case O_INDEX: o.use_index = 1; break;
        case O_TSFORM:
            if (strcmp(optarg, "ns") == 0) o.ts_form = ING_TS_NS;
            else if (strcmp(optarg, "seconds") == 0) o.ts_form = ING_TS_SECONDS;
            else if (strcmp(optarg, "rfc3339") == 0) o.ts_form = ING_TS_RFC3339;
            else return bad("--ts-form", optarg);
            break;
        case 'b': if (parse_u32(optarg, 1, 4u << 20, &o.batch) < 0) return bad("--batch", optarg); break;
        case 'm': if (parse_u32(optarg, 1, 1u << 24, &o.metrics) < 0) return bad("--metrics", optarg); break;
        case 'k': if (parse_u32(optarg, 1, 4u << 20, &o.ppm) < 0) return bad("--points-per-metric", optarg); break;
        case 'r':
            if (strcmp(optarg, "max") == 0) { o.rate = 0; break; }
            o.rate = strtod(optarg, &end);
            if (end == optarg || *end || !(o.rate > 0) || isinf(o.rate)) return bad("--rate", optarg);
            break;
        case 'd':
            o.duration_s = strtod(optarg, &end);
            if (end == optarg || *end || !(o.duration_s > 0) || o.duration_s > 1e7) return bad("--duration", optarg);
            break;
        case 'p': {
            double v = strtod(optarg, &end);
            if (end == optarg || *end || !(v >= 1) || v > 1e18 || v != floor(v)) return bad("--points", optarg);
            o.points = (uint64_t)v;
            break;
        }
        case 'i': if (parse_u32(optarg, 1, 1u << 20, &o.inflight) < 0) return bad("--inflight", optarg); break;
        case 's':
            o.seed = strtoull(optarg, &end, 0);
            if (end == optarg || *end) return bad("--seed", optarg);
            break;
        case O_STEP: if (parse_dur_ns(optarg, &o.step_ns) < 0 || o.step_ns < 1) return bad("--step", optarg); break;
        case O_START: if (parse_start(optarg, &o.start_ns) < 0) return bad("--start", optarg); have_start = 1; break;
        case O_REALTIME: o.realtime = 1; break;
        case O_LATE:
            o.late = strtod(optarg, &end);
            if (end == optarg || *end || !(o.late >= 0 && o.late <= 1)) return bad("--late", optarg);
            break;
        case O_LATE_STEPS: if (parse_u32(optarg, 1, 1u << 30, &o.late_steps) < 0) return bad("--late-steps", optarg); break;
        case O_TOKEN: o.token = optarg; break;
        case O_PREFIX: o.prefix = optarg; break;
        case O_RECORD: o.record = optarg; break;
        case O_UNACKED: o.unacked = optarg; break;
        case O_DRAIN:
            o.drain_s = strtod(optarg, &end);
            if (end == optarg || *end || !(o.drain_s >= 0) || o.drain_s > 1e6) return bad("--drain", optarg);
            break;
        case O_JSON: o.json = 1; break;
        case 'h': usage(stdout); return 0;
        case O_VERSION: printf("gpuagg-load %s\n", GA_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpuagg-load: unexpected argument '%s'\n(see gpuagg-load --help)\n", argv[optind]);
        return 2;
    }
    if (!o.connect) {
        fprintf(stderr, "gpuagg-load: --connect is required\n(see gpuagg-load --help)\n");
        return 2;
    }
    if (o.metrics < o.nconn) {
        fprintf(stderr, "gpuagg-load: --metrics (%u) must be at least --connections (%u): "
                "every connection sends its own metrics\n", o.metrics, o.nconn);
        return 2;
    }
    if (strlen(o.prefix) > ING_NAME_MAX - 10) {
        fprintf(stderr, "gpuagg-load: --prefix longer than %d bytes\n", ING_NAME_MAX - 10);
        return 2;
    }
    if (!o.duration_s && !o.points)
        o.duration_s = 10;
    if (!have_start)
        parse_start("now", &o.start_ns);
    return load_run(&o);
}
