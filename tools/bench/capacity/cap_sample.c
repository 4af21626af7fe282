/* cap_sample.c — the daemon's counters over time (cap.h).
 *
 * Every sample is one `status` request on the control socket: the journal's
 * durable position (what has been acknowledged), the writer's committed
 * position, the engine's processed position, and the point and row
 * counters.  Lag is measured in journal positions and turned into seconds
 * with the samples' own history of durable_lsn: the byte at committed_lsn
 * became durable (and its batch was acknowledged) when durable_lsn passed
 * it, and the lag is how long ago that was. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mp_util.h"
#include "tools/bench/capacity/cap.h"

static int get_u(const msgpack_object *res, const char *group, const char *key, uint64_t *v,
                 char *err, size_t errlen)
{
    const msgpack_object *g = mp_map_get(res, group);
    if (mp_get_uint(g, key, v) == 0)
        return 0;
    snprintf(err, errlen, "status: %s.%s missing or not an unsigned integer", group, key);
    return -1;
}

int cap_read_sample(struct ctl_client *c, pid_t pid, double t, struct cap_sample *s,
                    char *state, size_t statelen, char *err, size_t errlen)
{
    struct ctl_reply r;
    char cerr[256];
    memset(s, 0, sizeof *s);
    int rc = ctl_client_call(c, "status", NULL, 0, &r, cerr, sizeof cerr);
    if (rc < 0) {
        snprintf(err, errlen, "status: %s", cerr);
        return -1;
    }
    if (!r.ok) {
        snprintf(err, errlen, "status: %s %s", r.name, r.message);
        return -1;
    }
    const msgpack_object *res = r.result;
    if (get_u(res, "journal", "durable_lsn", &s->durable_lsn, err, errlen) < 0 ||
        get_u(res, "storage", "committed_lsn", &s->committed_lsn, err, errlen) < 0 ||
        get_u(res, "storage", "buckets_committed", &s->rows, err, errlen) < 0 ||
        get_u(res, "storage", "pending_rows", &s->pending_rows, err, errlen) < 0 ||
        get_u(res, "engine", "processed_lsn", &s->processed_lsn, err, errlen) < 0 ||
        get_u(res, "engine", "points", &s->engine_points, err, errlen) < 0 ||
        get_u(res, "ingest", "points_accepted", &s->accepted, err, errlen) < 0)
        return -1;
    if (mp_get_double(mp_map_get(res, "storage"), "lag_s", &s->writer_lag_s) < 0)
        s->writer_lag_s = NAN;
    if (state && statelen) {
        const char *st;
        size_t n;
        state[0] = 0;
        if (mp_get_str(mp_map_get(res, "engine"), "state", &st, &n) == 0)
            snprintf(state, statelen, "%.*s", (int)n, st);
    }
    s->t = t;
    s->rss_kib = cap_rss_kib(pid);
    return 0;
}

/* Where durable_lsn passed lsn: the time (and ingest.points_accepted then)
 * interpolated between the last sample at or below lsn and the first above.
 * Returns 0 with *t and *pts, or 1 when no sample is above lsn yet. */
static int passed(const struct cap_series *se, uint64_t lsn, double *t, double *pts)
{
    size_t lo = 0, hi = se->n;          /* first i with durable_lsn > lsn */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (se->s[mid].durable_lsn > lsn)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo == se->n)
        return 1;
    const struct cap_sample *b = &se->s[lo];
    if (lo == 0) {
        *t = b->t;
        *pts = 0;
        return 0;
    }
    const struct cap_sample *a = &se->s[lo - 1];
    double f = (double)(lsn - a->durable_lsn) / (double)(b->durable_lsn - a->durable_lsn);
    *t = a->t + f * (b->t - a->t);
    *pts = (double)a->accepted + f * ((double)b->accepted - (double)a->accepted);
    return 0;
}

int cap_series_add(struct cap_series *se, const struct cap_sample *s)
{
    if (se->n == se->cap) {
        size_t nc = se->cap ? se->cap * 2 : 1024;
        struct cap_sample *ns = realloc(se->s, nc * sizeof *ns);
        if (!ns)
            return -1;
        se->s = ns;
        se->cap = nc;
    }
    if (se->n == 0)
        se->base_lsn = s->durable_lsn;
    struct cap_sample *x = &se->s[se->n++];
    *x = *s;
    /* A fresh journal is numbered from the clock; the database's checkpoint
     * starts below it.  Nothing below the journal's start is owed. */
    if (x->committed_lsn < se->base_lsn)
        x->committed_lsn = se->base_lsn;
    if (x->processed_lsn < se->base_lsn)
        x->processed_lsn = se->base_lsn;
    double t, pts;
    if (passed(se, x->committed_lsn, &t, &pts) == 0) {
        x->lag_s = x->t - t;
        x->committed_points = pts;
    } else {
        x->lag_s = 0;
        x->committed_points = (double)x->accepted;
    }
    x->engine_lag_s = passed(se, x->processed_lsn, &t, &pts) == 0 ? x->t - t : 0;
    return 0;
}

void cap_series_free(struct cap_series *se)
{
    free(se->s);
    memset(se, 0, sizeof *se);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double cap_lag_quantile(const struct cap_series *se, double t0, double t1, double q, int engine)
{
    double *v = malloc((se->n ? se->n : 1) * sizeof *v);
    if (!v)
        return NAN;
    size_t k = 0;
    for (size_t i = 0; i < se->n; i++)
        if (se->s[i].t >= t0 && se->s[i].t <= t1)
            v[k++] = engine ? se->s[i].engine_lag_s : se->s[i].lag_s;
    double r = 0;
    if (k) {
        qsort(v, k, sizeof *v, cmp_double);
        size_t rank = (size_t)ceil(q * (double)k);
        r = v[rank ? rank - 1 : 0];
    }
    free(v);
    return r;
}
