/* test_pg_env.h — a private PostgreSQL for the storage unit tests
 * (tools/pg-private.sh in a fresh directory under /tmp), plus random data
 * helpers.  Header-only (static inline) so that each test_pg_*.c stays one
 * translation unit with the harness. */
#ifndef GA_TEST_PG_ENV_H
#define GA_TEST_PG_ENV_H

#include <glob.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/harness.h"

struct pgenv {
    char dir[128];
    char conninfo[512];
};

static inline int pgenv_have_binaries(void)
{
    glob_t g;
    int ok = glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    return ok;
}

static inline const char *pgenv_script(void)
{
    static char path[1024];
    const char *root = getenv("GA_ROOT");
    snprintf(path, sizeof path, "%s/tools/pg-private.sh", root && *root ? root : ".");
    return path;
}

/* Run "pg-private.sh CMD DIR"; for start, read the conninfo.  0 or -1. */
static inline int pgenv_cmd(struct pgenv *e, const char *cmd)
{
    char line[1200];
    snprintf(line, sizeof line, "'%s' %s '%s'", pgenv_script(), cmd, e->dir);
    FILE *f = popen(line, "r");
    if (!f)
        return -1;
    char out[512] = "";
    if (!fgets(out, sizeof out, f))
        out[0] = '\0';
    int rc = pclose(f);
    if (rc != 0)
        return -1;
    if (strcmp(cmd, "start") == 0) {
        out[strcspn(out, "\n")] = '\0';
        snprintf(e->conninfo, sizeof e->conninfo, "%s", out);
    }
    return 0;
}

static inline int pgenv_start(struct pgenv *e)
{
    char line[4096];
    snprintf(e->dir, sizeof e->dir, "/tmp/gapg-unit-XXXXXX");
    if (!mkdtemp(e->dir))
        return -1;
    /* A watcher stops the server and removes the directory if this process
     * dies without pgenv_destroy (a crash, an ASan abort). */
    snprintf(line, sizeof line,
             "(while kill -0 %d 2>/dev/null; do sleep 1; done; [ -d '%s' ] && "
             "'%s' stop '%s' && rm -rf '%s') >/dev/null 2>&1 </dev/null &",
             (int)getpid(), e->dir, pgenv_script(), e->dir, e->dir);
    if (system(line) != 0)
        fprintf(stderr, "could not start the cleanup watcher\n");
    return pgenv_cmd(e, "start");
}

static inline int pgenv_stop_server(struct pgenv *e) { return pgenv_cmd(e, "stop"); }
static inline int pgenv_restart_server(struct pgenv *e) { return pgenv_cmd(e, "start"); }

static inline void pgenv_destroy(struct pgenv *e)
{
    char line[1200];
    pgenv_cmd(e, "stop");
    snprintf(line, sizeof line, "rm -rf '%s'", e->dir);
    if (system(line) != 0)
        fprintf(stderr, "could not remove %s\n", e->dir);
}

static inline PGconn *pgenv_connect(const struct pgenv *e)
{
    PGconn *c = PQconnectdb(e->conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "connect %s: %s", e->conninfo, PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* First column of the first row of a parameterless query as long long;
 * -999999 on error (printed). */
static inline long long pg_scalar(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    long long v = -999999;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) >= 1 && !PQgetisnull(r, 0, 0))
        v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    else
        fprintf(stderr, "query failed: %s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    return v;
}

/* Run a command, 0 on success (errors printed). */
static inline int pg_cmd(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "command failed: %s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

/* xorshift64* — reproducible random data; the seed is printed by tests. */
static inline uint64_t rnd_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dULL;
}

static inline uint64_t rnd_seed(void)
{
    const char *env = getenv("GA_TEST_SEED");
    uint64_t s = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return s ? s : 1;
}

/* A random finite non-zero double spanning many magnitudes and signs. */
static inline double rnd_value(uint64_t *s)
{
    for (;;) {
        double m = (double)(rnd_next(s) >> 11) / 9007199254740992.0 - 0.5;
        int e = (int)(rnd_next(s) % 40) - 20;
        double v = m * __builtin_powi(10.0, e);
        if (v != 0)
            return v;
    }
}

/* Without PostgreSQL's server binaries the whole binary is one skipped
 * test (tests/unit/harness.h) and ends here. */
#define PGENV_SKIP_IF_NO_PG(name)                                                              \
    do {                                                                                       \
        if (!pgenv_have_binaries()) {                                                          \
            harness_skip("%s: PostgreSQL server binaries not found under /usr/lib/postgresql " \
                         "(tools/deps.sh installs them)", name);                               \
            exit(harness_finish());                                                            \
        }                                                                                      \
    } while (0)

#endif

/* ---- aggregates helpers (need gpu/engine.h, storage/pg_util.h) ---- */
#ifdef GA_ENGINE_H
#include <stdlib.h>

#include "storage/pg_util.h"

static inline int agg_key_cmp(const struct ga_agg *a, const struct ga_agg *b)
{
    if (a->metric != b->metric)
        return a->metric < b->metric ? -1 : 1;
    if (a->granularity_ns != b->granularity_ns)
        return a->granularity_ns < b->granularity_ns ? -1 : 1;
    if (a->method != b->method)
        return a->method < b->method ? -1 : 1;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

struct agg_seq { struct ga_agg a; size_t seq; };

static inline int agg_seq_cmp(const void *x, const void *y)
{
    const struct agg_seq *a = x, *b = y;
    int d = agg_key_cmp(&a->a, &b->a);
    return d ? d : (a->seq > b->seq) - (a->seq < b->seq);
}

/* What the table must hold after all[0..n) were submitted in order: one
 * row per key, the last value, sorted by key.  Caller frees *out. */
static inline size_t aggs_expected(const struct ga_agg *all, size_t n, struct ga_agg **out)
{
    struct agg_seq *t = malloc((n ? n : 1) * sizeof *t);
    for (size_t i = 0; i < n; i++) {
        t[i].a = all[i];
        t[i].seq = i;
    }
    qsort(t, n, sizeof *t, agg_seq_cmp);
    struct ga_agg *o = malloc((n ? n : 1) * sizeof *o);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && agg_key_cmp(&t[i].a, &t[i + 1].a) == 0)
            continue;                       /* a later one follows */
        o[m++] = t[i].a;
    }
    free(t);
    *out = o;
    return m;
}

/* Every aggregates row, sorted by key, read in binary (bit-exact values). */
static inline size_t pg_read_aggs(PGconn *c, struct ga_agg **out)
{
    PGresult *r = PQexecParams(c, "SELECT metric, granularity, method, ts, value FROM aggregates "
                                  "ORDER BY metric, granularity, method, ts",
                               0, NULL, NULL, NULL, NULL, 1);
    size_t n = PQresultStatus(r) == PGRES_TUPLES_OK ? (size_t)PQntuples(r) : 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fprintf(stderr, "read aggregates: %s", PQresultErrorMessage(r));
    struct ga_agg *o = calloc(n ? n : 1, sizeof *o);
    for (size_t i = 0; i < n; i++) {
        o[i].metric = (uint32_t)pg_util_get_i32(PQgetvalue(r, (int)i, 0));
        o[i].granularity_ns = pg_util_get_i64(PQgetvalue(r, (int)i, 1));
        o[i].method = (ga_method_t)((uint8_t)PQgetvalue(r, (int)i, 2)[0] << 8 |
                                    (uint8_t)PQgetvalue(r, (int)i, 2)[1]);
        o[i].ts = pg_util_get_i64(PQgetvalue(r, (int)i, 3));
        o[i].value = pg_util_get_f64(PQgetvalue(r, (int)i, 4));
    }
    PQclear(r);
    *out = o;
    return n;
}

/* Number of rows of a and b (both sorted by key) that differ, bit-exact;
 * prints the first few. */
static inline size_t aggs_diff(const struct ga_agg *a, size_t na, const struct ga_agg *b, size_t nb)
{
    size_t bad = na > nb ? na - nb : nb - na, n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++) {
        if (agg_key_cmp(&a[i], &b[i]) == 0 && memcmp(&a[i].value, &b[i].value, 8) == 0)
            continue;
        if (bad++ < 5)
            fprintf(stderr, "  row %zu: (%u,%lld,%u,%lld)=%.17g vs (%u,%lld,%u,%lld)=%.17g\n", i,
                    a[i].metric, (long long)a[i].granularity_ns, a[i].method, (long long)a[i].ts,
                    a[i].value, b[i].metric, (long long)b[i].granularity_ns, b[i].method,
                    (long long)b[i].ts, b[i].value);
    }
    return bad;
}

/* A test policy with sub-microsecond granularities. */
static inline void nano_policy(struct ga_policy *p)
{
    static const char *const methods[] = { "mean", "max", "rate:mean", "90pct" };
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "nano");
    p->back_window = 2;
    ga_policy_add_def(p, 1, 0, 100000, NULL);
    ga_policy_add_def(p, 500, 0, 100000, NULL);
    ga_policy_add_def(p, 7000000000LL, 0, 1000, NULL);
    ga_policy_methods_from_list(p, methods, 4, NULL);
}

/* A random agg of metric m under policy p, its bucket on day base_day + 0..ndays-1. */
static inline struct ga_agg rnd_agg(uint64_t *s, uint32_t m, const struct ga_policy *p,
                                    int64_t base_day, int ndays)
{
    struct ga_agg a;
    a.metric = m;
    a.granularity_ns = p->defs[rnd_next(s) % (uint64_t)p->ndefs].granularity_ns;
    a.method = p->methods[rnd_next(s) % (uint64_t)p->nmethods];
    int64_t day_ns = 86400LL * 1000000000LL;
    int64_t t = (base_day + (int64_t)(rnd_next(s) % (uint64_t)ndays)) * day_ns +
                (int64_t)(rnd_next(s) % (uint64_t)day_ns);
    a.ts = t / a.granularity_ns * a.granularity_ns;
    a.value = rnd_value(s);
    return a;
}
#endif
