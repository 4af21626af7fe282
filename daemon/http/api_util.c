/* api_util.c — Gnocchi's time forms, ids, and the lookups shared by the
 * API handlers (see api.h). */
#include "daemon/http/api.h"

#include <ctype.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/ts_parse.h"
#include "proto/uuid.h"
#include "storage/pg_api.h"
#include "storage/pg_query.h"

#define NS 1000000000LL

/* ---- timespans and times --------------------------------------------------- */

/* pytimeparse's units that Gnocchi users write. */
static int64_t unit_ns(const char *u, size_t n)
{
    static const struct { const char *name; int64_t ns; } units[] = {
        { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
        { "s", NS }, { "sec", NS }, { "secs", NS }, { "second", NS }, { "seconds", NS },
        { "m", 60 * NS }, { "min", 60 * NS }, { "mins", 60 * NS }, { "minute", 60 * NS },
        { "minutes", 60 * NS }, { "h", 3600 * NS }, { "hr", 3600 * NS }, { "hrs", 3600 * NS },
        { "hour", 3600 * NS }, { "hours", 3600 * NS }, { "d", 86400 * NS }, { "day", 86400 * NS },
        { "days", 86400 * NS }, { "w", 604800 * NS }, { "wk", 604800 * NS },
        { "week", 604800 * NS }, { "weeks", 604800 * NS },
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && strncasecmp(units[i].name, u, n) == 0)
            return units[i].ns;
    return 0;
}

/* "1 day", "5min", "1h30m", "1.5 hours", "2 days, 3 hours" → ns (>= 0). */
static int parse_units(const char *s, int64_t *out)
{
    double total = 0;
    int parts = 0;
    while (*s) {
        while (*s == ' ' || *s == ',')
            s++;
        if (!*s)
            break;
        char *end;
        double v = strtod(s, &end);
        if (end == s || !isfinite(v) || v < 0)
            return GA_EINVAL;
        s = end;
        while (*s == ' ')
            s++;
        const char *u = s;
        while (isalpha((unsigned char)*s))
            s++;
        int64_t m = unit_ns(u, (size_t)(s - u));
        if (!m)
            return GA_EINVAL;
        total += v * (double)m;
        parts++;
    }
    if (!parts || total > 9.2e18)
        return GA_EINVAL;
    *out = (int64_t)total;
    return 0;
}

int api_parse_span(const char *s, int64_t *ns)
{
    char *end;
    double v = strtod(s, &end);
    if (end != s && *end == '\0') {
        if (!isfinite(v) || v <= 0 || v > 9.2e9)
            return GA_EINVAL;
        *ns = (int64_t)llround(v * 1e9);
        return *ns > 0 ? 0 : GA_EINVAL;
    }
    if (parse_units(s, ns) < 0 || *ns <= 0)
        return GA_EINVAL;
    return 0;
}

int api_parse_time(const char *s, int64_t now_ns, int64_t *ns, char *why, size_t whylen)
{
    char *end;
    if (!s[0])
        return ga_fail(GA_EINVAL, why, whylen, "empty timestamp");
    double v = strtod(s, &end);
    if (end != s && *end == '\0' && (isdigit((unsigned char)s[0]) || s[0] == '-' || s[0] == '.')) {
        if (!isfinite(v) || fabs(v) > 9.2e9)
            return ga_fail(GA_EINVAL, why, whylen, "timestamp '%s' out of range", s);
        *ns = (int64_t)llround(v * 1e9);
        return 0;
    }
    if (strcasecmp(s, "now") == 0) {
        *ns = now_ns;
        return 0;
    }
    if (s[0] == '-' || s[0] == '+') {
        int64_t d;
        if (parse_units(s + 1, &d) < 0)
            return ga_fail(GA_EINVAL, why, whylen, "Unable to parse timestamp '%s' (relative "
                           "forms look like '-1 day', '-5min')", s);
        if (s[0] == '-' ? __builtin_sub_overflow(now_ns, d, ns) : __builtin_add_overflow(now_ns, d, ns))
            return ga_fail(GA_EINVAL, why, whylen, "timestamp '%s' out of range", s);
        return 0;
    }
    /* ISO 8601: complete a date alone or a time without seconds */
    char buf[80];
    size_t n = strlen(s);
    if (n >= 48)
        return ga_fail(GA_EINVAL, why, whylen, "Unable to parse timestamp '%.60s'", s);
    memcpy(buf, s, n + 1);
    if (n == 10)
        strcat(buf, "T00:00:00");
    else if (n >= 16 && (buf[16] == '\0' || buf[16] == 'Z' || buf[16] == '+' || buf[16] == '-') &&
             buf[13] == ':') {
        char rest[40];
        size_t rl = strlen(buf + 16);
        memcpy(rest, buf + 16, rl + 1);
        memcpy(buf + 16, ":00", 3);
        memcpy(buf + 19, rest, rl + 1);
    }
    if (ts_parse_iso8601(buf, strlen(buf), ns, NULL, 0) < 0)
        return ga_fail(GA_EINVAL, why, whylen, "Unable to parse timestamp '%.60s' (ISO 8601, "
                       "seconds since the epoch, 'now' or '-1 day')", s);
    return 0;
}

void api_iso(int64_t ns, char out[40])
{
    int64_t sec = ns / NS, frac = ns % NS;
    if (frac < 0) {
        frac += NS;
        sec--;
    }
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t o = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac / 1000)
        o += (size_t)snprintf(out + o, 40 - o, ".%06" PRId64, frac / 1000);
    snprintf(out + o, 40 - o, "+00:00");
}

void api_timedelta(int64_t ns, char out[48])
{
    int64_t s = ns / NS, us = (ns % NS) / 1000;
    int64_t days = s / 86400, rem = s % 86400;
    int o = 0;
    if (days)
        o = snprintf(out, 48, "%" PRId64 " day%s, ", days, days == 1 ? "" : "s");
    o += snprintf(out + o, (size_t)(48 - o), "%" PRId64 ":%02" PRId64 ":%02" PRId64, rem / 3600,
                  rem / 60 % 60, rem % 60);
    if (us)
        snprintf(out + o, (size_t)(48 - o), ".%06" PRId64, us);
}

/* ---- database helpers -------------------------------------------------------- */

void api_db_error(struct http_resp *resp, int rc, const char *err)
{
    if (rc == GA_EIO)
        http_error(resp, 503, "storage unavailable: %s", err);
    else
        http_error(resp, 500, "database error: %s", err);
}

json_t *api_query_json(struct http_req *req, struct http_resp *resp, const char *sql, int nparams,
                       const char *const *vals)
{
    char err[512];
    int rc = 0;
    PGresult *r = pg_query_exec(http_server_pgq(req->srv), sql, nparams, vals, &rc, err, sizeof err);
    if (!r) {
        api_db_error(resp, rc, err);
        return NULL;
    }
    json_t *a = json_array();
    for (int i = 0; a && i < PQntuples(r); i++) {
        json_error_t je;
        json_t *j = json_loads(PQgetvalue(r, i, 0), JSON_DECODE_ANY, &je);
        if (!j || json_array_append_new(a, j) < 0) {
            json_decref(a);
            a = NULL;
        }
    }
    PQclear(r);
    if (!a)
        http_error(resp, 500, "out of memory reading the database's answer");
    return a;
}

const char *api_scope(const struct http_ident *id, char *buf, size_t buflen, const char **vals,
                      int *n)
{
    return pg_api_scope(id->admin, id->creator, id->project, buf, buflen, vals, n);
}

int api_policy_grans(const json_t *row, int64_t *out, int max)
{
    const json_t *def = json_object_get(row, "definition");
    size_t i;
    const json_t *d;
    int n = 0;
    json_array_foreach(def, i, d) {
        if (n < max)
            out[n++] = json_integer_value(json_object_get(d, "granularity_ns"));
    }
    for (int a = 1; a < n; a++)                /* descending, as Gnocchi lists them */
        for (int b = a; b > 0 && out[b] > out[b - 1]; b--) {
            int64_t t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return n;
}

int api_policy_has_method(const json_t *row, const char *method)
{
    const json_t *ms = json_object_get(row, "methods");
    size_t i;
    const json_t *m;
    json_array_foreach(ms, i, m) {
        if (json_is_string(m) && strcmp(json_string_value(m), method) == 0)
            return 1;
    }
    return 0;
}

json_t *api_policy_json(const json_t *row)
{
    json_t *def = json_array();
    size_t i;
    const json_t *d;
    json_array_foreach(json_object_get(row, "definition"), i, d) {
        int64_t g = json_integer_value(json_object_get(d, "granularity_ns"));
        int64_t span = json_integer_value(json_object_get(d, "timespan_ns"));
        char gs[48], ts[48];
        api_timedelta(g, gs);
        api_timedelta(span, ts);
        json_array_append_new(def, json_pack("{s:s, s:o, s:o}", "granularity", gs, "points",
                                             span && g ? json_integer(span / g) : json_null(),
                                             "timespan", span ? json_string(ts) : json_null()));
    }
    int64_t bw = json_integer_value(json_object_get(row, "back_window"));
    return json_pack("{s:O, s:I, s:o, s:O}", "name", json_object_get(row, "name"), "back_window",
                     (json_int_t)bw, "definition", def, "aggregation_methods",
                     json_object_get(row, "methods"));
}

json_t *api_metric_out(const json_t *row)
{
    json_t *m = json_deep_copy(row);
    if (!m)
        return NULL;
    json_object_set_new(m, "archive_policy", api_policy_json(json_object_get(row, "policy")));
    json_object_del(m, "policy");
    json_object_del(m, "gpuagg_name");
    return m;
}

void api_error_desc(struct http_resp *resp, int status, json_t *desc)
{
    const char *title = status == 404 ? "Not Found" : status == 400 ? "Bad Request" : "Error";
    http_json(resp, status, json_pack("{s:i, s:s, s:o}", "code", status, "title", title,
                                      "description", desc ? desc : json_null()));
}

void api_pyfloat(double v, char out[32])
{
    snprintf(out, 32, "%.15g", v);
    if (!strpbrk(out, ".eEn"))
        strcat(out, ".0");
}

int api_range_args(struct http_req *req, struct http_resp *resp, int64_t *start, int64_t *stop,
                   int64_t *gran)
{
    struct timespec tsn;
    clock_gettime(CLOCK_REALTIME, &tsn);
    int64_t now = (int64_t)tsn.tv_sec * NS + tsn.tv_nsec;
    char why[256];
    const char *s = http_arg(req, "start"), *e = http_arg(req, "stop"), *g = http_arg(req, "granularity");
    *start = INT64_MIN;
    *stop = INT64_MAX;
    *gran = 0;
    /* Gnocchi's answers: the argument named in detail, its rule in reason */
    if (s && api_parse_time(s, now, start, why, sizeof why) < 0) {
        api_error_desc(resp, 400, json_pack("{s:s, s:s, s:s}", "cause", "Argument value error",
                                            "detail", "start", "reason",
                                            "Must be a datetime or a timestamp"));
        return 400;
    }
    if (e && api_parse_time(e, now, stop, why, sizeof why) < 0) {
        api_error_desc(resp, 400, json_pack("{s:s, s:s, s:s}", "cause", "Argument value error",
                                            "detail", "stop", "reason",
                                            "Must be a datetime or a timestamp"));
        return 400;
    }
    if (g && api_parse_span(g, gran) < 0) {
        api_error_desc(resp, 400, json_pack("{s:s, s:s, s:s}", "cause", "Argument value error",
                                            "detail", "granularity", "reason",
                                            "Unable to parse timespan"));
        return 400;
    }
    /* start after stop selects nothing: an empty answer, as Gnocchi's */
    return 0;
}
