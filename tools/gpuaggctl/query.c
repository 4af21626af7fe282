/* query.c — gpuaggctl flush, metrics and query (see query.h).  metrics and
 * query follow the responses' "next" until the listing is complete, so the
 * output is never cut at the 1 MiB response limit. */
#include "tools/gpuaggctl/query.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "proto/ts_parse.h"
#include "tools/gpuaggctl/client.h"
#include "tools/gpuaggctl/mp_json.h"
#include "tools/gpuaggctl/opts.h"

struct row {
    int64_t ts;
    double value;
};

struct metric {
    char *name, *policy;
    uint64_t points;
};

static int usage(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "gpuaggctl: %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see 'gpuaggctl help')\n");
    return EXIT_USAGE;
}

/* The next of a data command's own options in argv (argv[0] is the
 * command's name; optind = 0 before the first call): its value in longopts
 * (>= CTL_OPT_LOCAL) with optarg, 0 for an operand (in optarg), -1 at the
 * end.  The global options among them go to o; -2 with *ex, the exit code,
 * when one ends the command (--help, --version, a usage error). */
static int data_next(int argc, char **argv, const struct option *longopts, struct ctl_opts *o,
                     int *ex)
{
    for (;;) {
        opterr = 0;
        int c = getopt_long(argc, argv, CTL_SHORTOPTS, longopts, NULL);
        if (c == -1) {
            if (optind >= argc)
                return -1;
            optarg = argv[optind++];
            return 0;
        }
        int g = ctl_opt_global(c, argv, argv[0], o);
        if (g == -2)
            return c;
        if (g >= 0) {
            *ex = g;
            return -2;
        }
    }
}

int ctl_is_data_command(const char *name)
{
    return strcmp(name, "flush") == 0 || strcmp(name, "metrics") == 0 || strcmp(name, "query") == 0;
}

int ctl_parse_time(const char *s, int64_t *ns, char *err, size_t errlen)
{
    if (strchr(s, ':')) {
        char why[128] = "";
        if (ts_parse_rfc3339(s, strlen(s), ns, why, sizeof why) == 0)
            return 0;
        snprintf(err, errlen, "'%s' is not an RFC 3339 time (%s)", s, why[0] ? why : "out of range");
        return -1;
    }
    if (ts_parse_seconds(s, ns) == 0)
        return 0;
    snprintf(err, errlen, "'%s' is neither RFC 3339 nor seconds since the epoch", s);
    return -1;
}

/* Gnocchi's timestamp form: "2026-01-02T03:04:00+00:00", with the
 * fraction (trailing zeros dropped) only when there is one. */
static void fmt_time(int64_t ns, char *buf, size_t cap)
{
    char t[TS_RFC3339_LEN + 1];
    ts_format_rfc3339(ns, t, sizeof t);
    char *dot = strchr(t, '.');
    char *end = t + TS_RFC3339_LEN - 1;          /* the 'Z' */
    while (end > dot + 1 && end[-1] == '0')
        end--;
    if (end == dot + 1)
        end = dot;
    snprintf(buf, cap, "%.*s+00:00", (int)(end - t), t);
}

static void print_json_str(const char *s)
{
    msgpack_object o = { .type = MSGPACK_OBJECT_STR };
    o.via.str.ptr = s;
    o.via.str.size = (uint32_t)strlen(s);
    mp_json_write(&o, stdout, 0);
}

/* v as --json writes a real (null for NaN/inf; mp_json.h). */
static void print_number(double v)
{
    msgpack_object o = { .type = MSGPACK_OBJECT_FLOAT64 };
    o.via.f64 = v;
    mp_json_write(&o, stdout, 0);
}

/* One call; returns EXIT_OK with r filled, or prints the failure and
 * returns its exit code. */
static int call(struct ctl_client *c, const char *op, const msgpack_sbuffer *args,
                struct ctl_reply *r)
{
    char err[256];
    if (ctl_client_call(c, op, args->data, args->size, r, err, sizeof err) < 0) {
        fprintf(stderr, "gpuaggctl: %s: %s\n", op, err);
        return EXIT_COMM;
    }
    if (!r->ok) {
        fprintf(stderr, "gpuaggctl: %s: %s (%s)\n", op, r->message, r->name);
        return EXIT_DAEMON;
    }
    return EXIT_OK;
}

static int connect_to(struct ctl_client *c, const struct ctl_opts *o, int timeout_ms)
{
    int rc = ctl_client_connect(c, o->socket, timeout_ms);
    if (rc < 0) {
        fprintf(stderr, "gpuaggctl: cannot connect to gpuaggd at %s: %s (is the daemon running?)\n",
                o->socket, strerror(-rc));
        return EXIT_CONNECT;
    }
    return EXIT_OK;
}

/* ---- flush ---------------------------------------------------------------- */

#define FLUSH_PROGRESS_MS 3000

struct flush_progress {
    const struct ctl_opts *o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
};

/* While a flush takes long, say every FLUSH_PROGRESS_MS on stderr what it
 * waits on: the engine's state, the storage's, the journal still to commit. */
static void *flush_progress_main(void *arg)
{
    struct flush_progress *fp = arg;
    int64_t t0 = (int64_t)time(NULL);
    pthread_mutex_lock(&fp->mu);
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += FLUSH_PROGRESS_MS / 1000;
        while (!fp->done && pthread_cond_timedwait(&fp->cv, &fp->mu, &until) == 0)
            ;
        if (fp->done)
            break;
        pthread_mutex_unlock(&fp->mu);
        struct ctl_client c;
        struct ctl_reply r;
        char err[256];
        if (ctl_client_connect(&c, fp->o->socket, 2000) == 0 &&
            ctl_client_call(&c, "status", NULL, 0, &r, err, sizeof err) == 0 && r.ok) {
            const msgpack_object *eng = mp_map_get(r.result, "engine");
            const msgpack_object *st = mp_map_get(r.result, "storage");
            const char *es = "?", *ss = "?";
            size_t el = 1, sl = 1;
            uint64_t lag = 0;
            if (eng)
                mp_get_str(eng, "state", &es, &el);
            if (st) {
                mp_get_str(st, "state", &ss, &sl);
                mp_get_uint(st, "lag_journal_bytes", &lag);
            }
            fprintf(stderr, "gpuaggctl: flush: waiting %llds: engine %.*s, storage %.*s, "
                    "%llu journal bytes to commit\n", (long long)((int64_t)time(NULL) - t0),
                    (int)el, es, (int)sl, ss, (unsigned long long)lag);
        }
        ctl_client_close(&c);
        pthread_mutex_lock(&fp->mu);
    }
    pthread_mutex_unlock(&fp->mu);
    return NULL;
}

static int cmd_flush(int argc, char **argv, struct ctl_opts *o)
{
    static const struct option longopts[] = { CTL_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    int oc, ex = EXIT_OK;
    optind = 0;
    while ((oc = data_next(argc, argv, longopts, o, &ex)) != -1) {
        if (oc == -2)
            return ex;
        return usage("flush", "unexpected argument '%s'", optarg);
    }
    struct ctl_client c;
    int timeout_ms = (int)(o->timeout_s * 1000);
    int code = connect_to(&c, o, timeout_ms);
    if (code == EXIT_OK) {
        c.timeout_ms = timeout_ms + 2000;   /* the daemon answers ETIMEDOUT first */
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_map(&pk, 1);
        mp_pack_kv_uint(&pk, "timeout_ms", (uint64_t)timeout_ms);
        struct ctl_reply r;
        struct flush_progress fp = { .o = o };
        pthread_mutex_init(&fp.mu, NULL);
        pthread_cond_init(&fp.cv, NULL);
        pthread_t th;
        int have_th = pthread_create(&th, NULL, flush_progress_main, &fp) == 0;
        code = call(&c, "flush", &sb, &r);
        pthread_mutex_lock(&fp.mu);
        fp.done = 1;
        pthread_cond_signal(&fp.cv);
        pthread_mutex_unlock(&fp.mu);
        if (have_th)
            pthread_join(th, NULL);
        pthread_cond_destroy(&fp.cv);
        pthread_mutex_destroy(&fp.mu);
        msgpack_sbuffer_destroy(&sb);
        if (code == EXIT_OK && o->json) {
            mp_json_write(r.result, stdout, 1);
            printf("\n");
        } else if (code == EXIT_OK) {
            uint64_t lsn = 0;
            if (mp_get_uint(r.result, "committed_lsn", &lsn) == 0)
                printf("flushed: committed through journal LSN %" PRIu64 " in %.1f ms\n", lsn, r.rtt_ms);
            else
                printf("flushed in %.1f ms\n", r.rtt_ms);
        }
    }
    ctl_client_close(&c);
    return code;
}

/* ---- metrics -------------------------------------------------------------- */

static int fetch_metrics(struct ctl_client *c, const char *prefix, struct metric **out, size_t *n)
{
    size_t cap = 0;
    char *after = NULL;
    int code = EXIT_OK;
    for (;;) {
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_map(&pk, (prefix ? 1 : 0) + (after ? 1 : 0));
        if (prefix)
            mp_pack_kv_str(&pk, "prefix", prefix);
        if (after)
            mp_pack_kv_str(&pk, "after", after);
        struct ctl_reply r;
        code = call(c, "metrics", &sb, &r);
        msgpack_sbuffer_destroy(&sb);
        free(after);
        after = NULL;
        if (code != EXIT_OK)
            break;
        const msgpack_object *list = mp_map_get(r.result, "metrics");
        if (!list || list->type != MSGPACK_OBJECT_ARRAY) {
            fprintf(stderr, "gpuaggctl: metrics: malformed response (no 'metrics' array)\n");
            return EXIT_COMM;
        }
        for (uint32_t i = 0; i < list->via.array.size; i++) {
            const msgpack_object *e = &list->via.array.ptr[i];
            const char *nm = "", *po = "";
            size_t nl = 0, pl = 0;
            uint64_t pts = 0;
            mp_get_str(e, "name", &nm, &nl);
            mp_get_str(e, "policy", &po, &pl);
            mp_get_uint(e, "points", &pts);
            if (*n == cap) {
                cap = cap ? cap * 2 : 256;
                struct metric *m = realloc(*out, cap * sizeof *m);
                if (!m)
                    return EXIT_COMM;
                *out = m;
            }
            (*out)[*n] = (struct metric){ strndup(nm, nl), strndup(po, pl), pts };
            (*n)++;
        }
        const char *nx;
        size_t nxl;
        if (mp_get_str(r.result, "next", &nx, &nxl) != 0)
            break;
        after = strndup(nx, nxl);
    }
    return code;
}

static void print_metrics(const struct metric *m, size_t n, int json)
{
    if (json) {
        printf("[");
        for (size_t i = 0; i < n; i++) {
            printf("%s\n  {\"name\": ", i ? "," : "");
            print_json_str(m[i].name ? m[i].name : "");
            printf(", \"policy\": ");
            print_json_str(m[i].policy ? m[i].policy : "");
            printf(", \"points\": %" PRIu64 "}", m[i].points);
        }
        printf("%s]\n", n ? "\n" : "");
        return;
    }
    int wn = 4, wp = 6;
    for (size_t i = 0; i < n; i++) {
        int a = m[i].name ? (int)strlen(m[i].name) : 0, b = m[i].policy ? (int)strlen(m[i].policy) : 0;
        wn = a > wn ? a : wn;
        wp = b > wp ? b : wp;
    }
    printf("%-*s  %-*s  %s\n", wn, "NAME", wp, "POLICY", "POINTS");
    for (size_t i = 0; i < n; i++)
        printf("%-*s  %-*s  %" PRIu64 "\n", wn, m[i].name ? m[i].name : "", wp,
               m[i].policy ? m[i].policy : "", m[i].points);
}

static int cmd_metrics(int argc, char **argv, struct ctl_opts *o)
{
    static const struct option longopts[] = {
        { "prefix", required_argument, NULL, CTL_OPT_LOCAL }, CTL_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 },
    };
    const char *prefix = NULL;
    int oc, ex = EXIT_OK;
    optind = 0;
    while ((oc = data_next(argc, argv, longopts, o, &ex)) != -1) {
        if (oc == -2)
            return ex;
        if (oc == 0)
            return usage("metrics", "unexpected argument '%s'", optarg);
        prefix = optarg;
    }
    struct ctl_client c;
    struct metric *m = NULL;
    size_t n = 0;
    int code = connect_to(&c, o, (int)(o->timeout_s * 1000));
    if (code == EXIT_OK)
        code = fetch_metrics(&c, prefix, &m, &n);
    if (code == EXIT_OK)
        print_metrics(m, n, o->json);
    for (size_t i = 0; i < n; i++) {
        free(m[i].name);
        free(m[i].policy);
    }
    free(m);
    ctl_client_close(&c);
    return code;
}

/* ---- query ---------------------------------------------------------------- */

struct query_args {
    const char *metric, *method;
    int64_t granularity_ns, start_ns, stop_ns;
    int has_start, has_stop;
};

/* Pack one page's request: granularity as int seconds when whole. */
static void pack_query(msgpack_sbuffer *sb, const struct query_args *q, int64_t start, int has_start)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3 + (size_t)has_start + (size_t)q->has_stop);
    mp_pack_kv_str(&pk, "metric", q->metric);
    mp_pack_cstr(&pk, "granularity");
    if (q->granularity_ns % 1000000000 == 0)
        msgpack_pack_int64(&pk, q->granularity_ns / 1000000000);
    else
        msgpack_pack_double(&pk, (double)q->granularity_ns / 1e9);
    mp_pack_kv_str(&pk, "method", q->method);
    if (has_start)
        mp_pack_kv_int(&pk, "start", start);
    if (q->has_stop)
        mp_pack_kv_int(&pk, "stop", q->stop_ns);
}

static int fetch_rows(struct ctl_client *c, const struct query_args *q, struct row **out, size_t *n,
                      int64_t *gran_ns)
{
    size_t cap = 0;
    int64_t start = q->start_ns;
    int has_start = q->has_start;
    for (;;) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        pack_query(&sb, q, start, has_start);
        struct ctl_reply r;
        int code = call(c, "query", &sb, &r);
        msgpack_sbuffer_destroy(&sb);
        if (code != EXIT_OK)
            return code;
        const msgpack_object *rows = mp_map_get(r.result, "rows");
        if (!rows || rows->type != MSGPACK_OBJECT_ARRAY ||
            mp_get_int(r.result, "granularity_ns", gran_ns) < 0) {
            fprintf(stderr, "gpuaggctl: query: malformed response (no 'rows' array)\n");
            return EXIT_COMM;
        }
        for (uint32_t i = 0; i < rows->via.array.size; i++) {
            const msgpack_object *e = &rows->via.array.ptr[i];
            if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 2) {
                fprintf(stderr, "gpuaggctl: query: malformed row %u\n", i);
                return EXIT_COMM;
            }
            const msgpack_object *t = &e->via.array.ptr[0], *v = &e->via.array.ptr[1];
            if (*n == cap) {
                cap = cap ? cap * 2 : 1024;
                struct row *nr = realloc(*out, cap * sizeof *nr);
                if (!nr)
                    return EXIT_COMM;
                *out = nr;
            }
            (*out)[*n].ts = t->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? t->via.i64 : (int64_t)t->via.u64;
            (*out)[*n].value = v->type == MSGPACK_OBJECT_FLOAT64 || v->type == MSGPACK_OBJECT_FLOAT32
                ? v->via.f64 : v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? (double)v->via.i64
                : (double)v->via.u64;
            (*n)++;
        }
        if (mp_get_int(r.result, "next", &start) != 0)
            return EXIT_OK;
        has_start = 1;
    }
}

static void print_rows(const struct row *rows, size_t n, int64_t gran_ns, int json)
{
    char ts[64];
    double g = (double)gran_ns / 1e9;
    if (json) {
        printf("[");
        for (size_t i = 0; i < n; i++) {
            fmt_time(rows[i].ts, ts, sizeof ts);
            printf("%s\n  [\"%s\", ", i ? "," : "", ts);
            print_number(g);
            printf(", ");
            print_number(rows[i].value);
            printf("]");
        }
        printf("%s]\n", n ? "\n" : "");
        return;
    }
    printf("%-25s  %-11s  %s\n", "TIMESTAMP", "GRANULARITY", "VALUE");
    for (size_t i = 0; i < n; i++) {
        fmt_time(rows[i].ts, ts, sizeof ts);
        printf("%-25s  %-11g  ", ts, g);
        print_number(rows[i].value);
        printf("\n");
    }
}

/* Returns -1 to go on, else the exit code. */
static int parse_query_args(int argc, char **argv, struct query_args *q, struct ctl_opts *o)
{
    enum { O_GRAN = CTL_OPT_LOCAL, O_METHOD, O_START, O_STOP };
    static const struct option longopts[] = {
        { "granularity", required_argument, NULL, O_GRAN },
        { "method", required_argument, NULL, O_METHOD },
        { "start", required_argument, NULL, O_START },
        { "stop", required_argument, NULL, O_STOP },
        CTL_GLOBAL_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    const char *gran = NULL, *start = NULL, *stop = NULL;
    char err[256];
    int c, ex = EXIT_OK;
    optind = 0;
    while ((c = data_next(argc, argv, longopts, o, &ex)) != -1) {
        switch (c) {
        case -2:
            return ex;
        case O_GRAN:
            gran = optarg;
            break;
        case O_METHOD:
            q->method = optarg;
            break;
        case O_START:
            start = optarg;
            break;
        case O_STOP:
            stop = optarg;
            break;
        default:                                /* 0: the operand */
            if (q->metric)
                return usage("query", "unexpected argument '%s'", optarg);
            q->metric = optarg;
        }
    }
    if (!q->metric || !*q->metric)
        return usage("query", "%s", "no METRIC given");
    if (!gran)
        return usage("query", "%s", "--granularity SECONDS is required");
    if (!q->method || !*q->method)
        return usage("query", "%s", "--method METHOD is required (mean, max, ...)");
    if (ts_parse_seconds(gran, &q->granularity_ns) < 0 || q->granularity_ns <= 0)
        return usage("query", "--granularity: '%s' is not a positive number of seconds", gran);
    if (start && ctl_parse_time(start, &q->start_ns, err, sizeof err) < 0)
        return usage("query", "--start: %s", err);
    if (stop && ctl_parse_time(stop, &q->stop_ns, err, sizeof err) < 0)
        return usage("query", "--stop: %s", err);
    q->has_start = start != NULL;
    q->has_stop = stop != NULL;
    return -1;
}

static int cmd_query(int argc, char **argv, struct ctl_opts *o)
{
    struct query_args q = { 0 };
    int code = parse_query_args(argc, argv, &q, o);
    if (code >= 0)
        return code;
    struct ctl_client c;
    struct row *rows = NULL;
    size_t n = 0;
    int64_t gran_ns = q.granularity_ns;
    code = connect_to(&c, o, (int)(o->timeout_s * 1000));
    if (code == EXIT_OK)
        code = fetch_rows(&c, &q, &rows, &n, &gran_ns);
    if (code == EXIT_OK)
        print_rows(rows, n, gran_ns, o->json);
    free(rows);
    ctl_client_close(&c);
    return code;
}

int ctl_data_command(const char *name, int argc, char **argv, struct ctl_opts *o)
{
    if (strcmp(name, "flush") == 0)
        return cmd_flush(argc, argv, o);
    if (strcmp(name, "metrics") == 0)
        return cmd_metrics(argc, argv, o);
    return cmd_query(argc, argv, o);
}
