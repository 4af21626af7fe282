/* pg_members.c — cluster membership in PostgreSQL (pg_members.h). */
#include "storage/pg_members.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/hash.h"
#include "proto/ga_err.h"
#include "storage/pg_schema.h"
#include "storage/pg_txn.h"
#include "storage/pg_util.h"

struct pg_members {
    char *conninfo;
    char name[64];
    char host[64];
    PGconn *c;
    int migrated;
    int named;                        /* held the member name's lock (row is ours) */
    struct pg_members_identity id;           /* read at connect */
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

int pg_members_open(struct pg_members **out, const char *conninfo, const char *name)
{
    struct pg_members *m = calloc(1, sizeof *m);
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

void pg_members_close(struct pg_members *m, int leave)
{
    if (!m)
        return;
    if (m->c && leave && m->named && PQstatus(m->c) == CONNECTION_OK) {
        const char *params[] = { m->name };
        PQclear(PQexecParams(m->c, "DELETE FROM cluster_members WHERE name = $1", 1, NULL,
                             params, NULL, NULL, 0));
    }
    if (m->c)
        PQfinish(m->c);
    free(m->conninfo);
    free(m);
}

static int fail(struct pg_members *m, PGresult *r, char *err, size_t errlen)
{
    pg_util_result_error(err, errlen, m->c, r);
    PQclear(r);
    int rc = PQstatus(m->c) == CONNECTION_OK ? GA_EDB : GA_EIO;
    PQfinish(m->c);
    m->c = NULL;
    return rc;
}

static void drop(struct pg_members *m)
{
    PQfinish(m->c);
    m->c = NULL;
}

/* Hold the lock of this member's name for the session, or say who has it. */
static int lock_name(struct pg_members *m, char *err, size_t errlen)
{
    const char *params[] = { m->name };
    PGresult *r = PQexecParams(m->c, "SELECT pg_try_advisory_lock(" PG_MEMBERS_NAME_LOCK_CLASS
                               ", hashtext($1))", 1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return fail(m, r, err, errlen);
    int got = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (got) {
        m->named = 1;
        return 0;
    }
    r = PQexecParams(m->c, "SELECT host, pid, round(extract(epoch FROM now() - heartbeat)::numeric, 1)"
                     " FROM cluster_members WHERE name = $1", 1, NULL, params, NULL, NULL, 0);
    int ours = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
               strcmp(PQgetvalue(r, 0, 0), m->host) == 0 && atoi(PQgetvalue(r, 0, 1)) == getpid();
    if (ours)                          /* our session was lost and the name taken meanwhile */
        snprintf(err, errlen, "cluster.member \"%s\" is taken: this daemon's membership "
                 "session ended and another session holds the name's lock now (another gpuaggd "
                 "starting under that name?); every daemon of a cluster needs a name of its own",
                 m->name);
    else if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        snprintf(err, errlen, "cluster.member \"%s\" is taken: another gpuaggd runs under that "
                 "name (host %s, pid %s, heartbeat %s s ago); every daemon of a cluster needs a "
                 "name of its own", m->name, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1),
                 PQgetvalue(r, 0, 2));
    else
        snprintf(err, errlen, "cluster.member \"%s\" is taken: another session of this "
                 "database holds its lock (another gpuaggd starting under that name); every "
                 "daemon of a cluster needs a name of its own", m->name);
    PQclear(r);
    drop(m);
    m->named = 0;                      /* the row, if any, is the other daemon's */
    return GA_EEXIST;
}

static int read_identity(struct pg_members *m, char *err, size_t errlen)
{
    PGresult *r = PQexec(m->c, "SELECT database_id, stream, stream_created_ns "
                               "FROM cluster_identity WHERE id = 1");
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return fail(m, r, err, errlen);
    if (PQntuples(r) != 1) {
        PQclear(r);
        drop(m);
        return ga_fail(GA_ECORRUPT, err, errlen, "cluster_identity has no row: restore it "
                       "(docs/STORAGE.md) or use a new database");
    }
    snprintf(m->id.database_id, sizeof m->id.database_id, "%s", PQgetvalue(r, 0, 0));
    snprintf(m->id.stream, sizeof m->id.stream, "%s", PQgetvalue(r, 0, 1));
    m->id.stream_created_ns = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    PQclear(r);
    return 0;
}

int pg_members_connect(struct pg_members *m, char *err, size_t errlen)
{
    if (m->c)
        return 0;
    m->c = pg_util_connect(m->conninfo, "gpuaggd-members");
    if (!m->c)
        return ga_fail(GA_ENOMEM, err, errlen, "out of memory");
    if (PQstatus(m->c) != CONNECTION_OK) {
        pg_util_errcopy(err, errlen, PQerrorMessage(m->c));
        drop(m);
        return GA_EIO;
    }
    /* A heartbeat need not survive a crash of the server, and must not wait
     * behind the writers' WAL flushes: the others judge it by the time it
     * becomes visible. */
    char ignore[128];
    pg_util_exec(m->c, "SET synchronous_commit = off", ignore, sizeof ignore);
    if (!m->migrated) {
        int rc = pg_schema_migrate(m->c, err, errlen);
        if (rc < 0) {
            drop(m);
            return rc;
        }
        m->migrated = 1;
    }
    int rc = lock_name(m, err, errlen);
    return rc < 0 ? rc : read_identity(m, err, errlen);
}

const struct pg_members_identity *pg_members_identity(const struct pg_members *m)
{
    return m->c ? &m->id : NULL;
}

int pg_members_claim_stream(struct pg_members *m, const char *stream, int64_t created_ns, char *err,
                     size_t errlen)
{
    if (!m->c)
        return ga_fail(GA_EIO, err, errlen, "not connected");
    char cr[24];
    snprintf(cr, sizeof cr, "%lld", (long long)created_ns);
    const char *params[] = { stream, cr };
    PGresult *r = PQexecParams(m->c, "UPDATE cluster_identity SET stream = $1, "
                               "stream_created_ns = $2::bigint WHERE id = 1 AND stream = ''",
                               2, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        return fail(m, r, err, errlen);
    PQclear(r);
    return read_identity(m, err, errlen);       /* whoever recorded first */
}

int pg_members_heartbeat(struct pg_members *m, uint64_t owned, uint64_t stream_seq, int timeout_ms,
                  struct pg_members_view *v, char *err, size_t errlen)
{
    int rc = pg_members_connect(m, err, errlen);
    if (rc < 0)
        return rc;
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
    for (int i = 0; i < PQntuples(r) && i < PG_MEMBERS_MAX_MEMBERS; i++) {
        struct pg_members_member *pm = &v->members[v->nmembers++];
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

/* A member's claim on a partition: rendezvous (highest random weight)
 * hashing, a fixed function of the member's name and the partition. */
static uint64_t score(uint64_t name_hash, int p)
{
    return ga_hash_fmix64(name_hash ^ ga_hash_fmix64((uint64_t)p + 1));
}

struct claim {
    uint64_t score;
    uint8_t p, m;
};

static int claim_cmp(const void *a, const void *b)
{
    const struct claim *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;        /* highest first */
    if (x->p != y->p)
        return x->p < y->p ? -1 : 1;
    return x->m < y->m ? -1 : (x->m > y->m);
}

int pg_members_assign(const char *const *names, int n, uint64_t *out)
{
    if (n <= 0 || n > PG_MEMBERS_MAX_MEMBERS)
        return GA_EINVAL;
    struct claim *cl = malloc((size_t)n * GA_PARTITIONS * sizeof *cl);
    if (!cl)
        return GA_ENOMEM;
    size_t k = 0;
    for (int m = 0; m < n; m++) {
        uint64_t h = ga_hash_fnv1a(names[m], strlen(names[m]));
        for (int p = 0; p < GA_PARTITIONS; p++)
            cl[k++] = (struct claim){ score(h, p), (uint8_t)p, (uint8_t)m };
    }
    qsort(cl, k, sizeof *cl, claim_cmp);
    int count[PG_MEMBERS_MAX_MEMBERS] = { 0 };
    uint64_t taken = 0;
    for (int m = 0; m < n; m++)
        out[m] = 0;
    for (size_t i = 0; i < k; i++) {
        int p = cl[i].p, m = cl[i].m;
        int quota = GA_PARTITIONS / n + (m < GA_PARTITIONS % n);
        if ((taken >> p & 1) || count[m] >= quota)
            continue;
        taken |= 1ULL << p;
        out[m] |= 1ULL << p;
        count[m]++;
    }
    free(cl);
    return 0;
}

uint64_t pg_members_share(const struct pg_members_view *v)
{
    const char *names[PG_MEMBERS_MAX_MEMBERS];
    uint64_t out[PG_MEMBERS_MAX_MEMBERS];
    int n = 0;
    for (int i = 0; i < v->nmembers; i++)
        if (v->members[i].live)
            names[n++] = v->members[i].name;
    if (v->self_index < 0 || v->self_index >= n || pg_members_assign(names, n, out) < 0)
        return 0;
    return out[v->self_index];
}

int pg_members_parts_held(PGconn *c, uint64_t parts, uint64_t *held, char *err, size_t errlen)
{
    char mask[24];
    snprintf(mask, sizeof mask, "%lld", (long long)parts);
    const char *params[] = { mask };
    PGresult *r = PQexecParams(c,
        "SELECT DISTINCT objid FROM pg_locks\n"
        "WHERE locktype = 'advisory' AND granted AND classid = " PG_TXN_PART_LOCK_CLASS "\n"
        "  AND objsubid = 2 AND objid < 64 AND pid <> pg_backend_pid()\n"
        "  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())\n"
        "  AND ($1::bigint >> objid::int) & 1 = 1", 1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_util_result_error(err, errlen, c, r);
        PQclear(r);
        return PQstatus(c) == CONNECTION_OK ? GA_EDB : GA_EIO;
    }
    *held = 0;
    for (int i = 0; i < PQntuples(r); i++)
        *held |= 1ULL << (strtoul(PQgetvalue(r, i, 0), NULL, 10) & 63);
    PQclear(r);
    return 0;
}
