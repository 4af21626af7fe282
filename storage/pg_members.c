/* pg_members.c — cluster membership in PostgreSQL (pg_members.h). */
#include "storage/pg_members.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/ga_err.h"
#include "storage/pg_schema.h"
#include "storage/pg_util.h"

struct pgm {
    char *conninfo;
    char name[64];
    char host[64];
    PGconn *c;
    int migrated;
};

static const char beat_sql[] =
    "INSERT INTO cluster_members (name, owned, stream_seq, pid, host)\n"
    "VALUES ($1, $2::bigint, $3::bigint, $4::int, $5)\n"
    "ON CONFLICT (name) DO UPDATE SET heartbeat = now(), owned = EXCLUDED.owned,\n"
    "    stream_seq = EXCLUDED.stream_seq, pid = EXCLUDED.pid, host = EXCLUDED.host";

static const char members_sql[] =
    "SELECT name, host, pid, owned, stream_seq,\n"
    "       extract(epoch FROM now() - heartbeat)::float8,\n"
    "       heartbeat > now() - make_interval(secs => $1::float8 / 1000)\n"
    "FROM cluster_members ORDER BY name COLLATE \"C\" LIMIT 64";

static const char parts_sql[] = "SELECT id, window_lsn, committed_lsn FROM partitions";

int pgm_open(struct pgm **out, const char *conninfo, const char *name)
{
    struct pgm *m = calloc(1, sizeof *m);
    if (!m || !(m->conninfo = strdup(conninfo))) {
        free(m);
        return GA_ENOMEM;
    }
    snprintf(m->name, sizeof m->name, "%s", name);
    if (gethostname(m->host, sizeof m->host) != 0)
        m->host[0] = '\0';
    m->host[sizeof m->host - 1] = '\0';
    *out = m;
    return 0;
}

void pgm_close(struct pgm *m, int leave)
{
    if (!m)
        return;
    if (m->c && leave && PQstatus(m->c) == CONNECTION_OK) {
        const char *params[] = { m->name };
        PQclear(PQexecParams(m->c, "DELETE FROM cluster_members WHERE name = $1", 1, NULL,
                             params, NULL, NULL, 0));
    }
    if (m->c)
        PQfinish(m->c);
    free(m->conninfo);
    free(m);
}

static int fail(struct pgm *m, PGresult *r, char *err, size_t errlen)
{
    pgu_result_error(err, errlen, m->c, r);
    PQclear(r);
    int rc = PQstatus(m->c) == CONNECTION_OK ? GA_EDB : GA_EIO;
    PQfinish(m->c);
    m->c = NULL;
    return rc;
}

int pgm_heartbeat(struct pgm *m, uint64_t owned, uint64_t stream_seq, int timeout_ms,
                  struct pgm_view *v, char *err, size_t errlen)
{
    if (!m->c) {
        m->c = pgu_connect(m->conninfo, "gpuaggd-members");
        if (!m->c)
            return ga_fail(GA_ENOMEM, err, errlen, "out of memory");
        if (PQstatus(m->c) != CONNECTION_OK) {
            pgu_errcopy(err, errlen, PQerrorMessage(m->c));
            PQfinish(m->c);
            m->c = NULL;
            return GA_EIO;
        }
        if (!m->migrated) {
            int rc = pgs_migrate(m->c, err, errlen);
            if (rc < 0) {
                PQfinish(m->c);
                m->c = NULL;
                return rc;
            }
            m->migrated = 1;
        }
    }
    char o[24], s[24], pid[16], to[16];
    snprintf(o, sizeof o, "%lld", (long long)owned);
    snprintf(s, sizeof s, "%llu", (unsigned long long)stream_seq);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    snprintf(to, sizeof to, "%d", timeout_ms);
    const char *bp[] = { m->name, o, s, pid, m->host };
    PGresult *r = PQexecParams(m->c, beat_sql, 5, NULL, bp, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        return fail(m, r, err, errlen);
    PQclear(r);
    const char *mp[] = { to };
    r = PQexecParams(m->c, members_sql, 1, NULL, mp, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return fail(m, r, err, errlen);
    memset(v, 0, sizeof *v);
    v->self_index = -1;
    for (int i = 0; i < PQntuples(r) && i < PGM_MAX_MEMBERS; i++) {
        struct pgm_member *pm = &v->members[v->nmembers++];
        snprintf(pm->name, sizeof pm->name, "%s", PQgetvalue(r, i, 0));
        snprintf(pm->host, sizeof pm->host, "%s", PQgetvalue(r, i, 1));
        pm->pid = atoi(PQgetvalue(r, i, 2));
        pm->owned = (uint64_t)strtoll(PQgetvalue(r, i, 3), NULL, 10);
        pm->stream_seq = strtoull(PQgetvalue(r, i, 4), NULL, 10);
        pm->heartbeat_age_s = strtod(PQgetvalue(r, i, 5), NULL);
        pm->live = strcmp(PQgetvalue(r, i, 6), "t") == 0;
        pm->self = strcmp(pm->name, m->name) == 0;
        if (pm->self && pm->live)
            v->self_index = v->nlive;
        v->nlive += pm->live;
    }
    PQclear(r);
    r = PQexec(m->c, parts_sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return fail(m, r, err, errlen);
    for (int i = 0; i < PQntuples(r); i++) {
        int id = atoi(PQgetvalue(r, i, 0));
        if (id < 0 || id >= GA_PARTITIONS)
            continue;
        v->window_lsn[id] = strtoull(PQgetvalue(r, i, 1), NULL, 10);
        v->committed_lsn[id] = strtoull(PQgetvalue(r, i, 2), NULL, 10);
    }
    PQclear(r);
    return 0;
}

uint64_t pgm_assign(int i, int n)
{
    uint64_t mask = 0;
    if (n <= 0 || i < 0 || i >= n)
        return 0;
    for (int p = 0; p < GA_PARTITIONS; p++)
        if (p % n == i)
            mask |= 1ULL << p;
    return mask;
}
