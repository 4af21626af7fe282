/* cap_ceiling.c — PostgreSQL's own ceiling for the rows the daemon wrote
 * (cap.h).
 *
 *   1. COPY (SELECT * FROM <table> ORDER BY <its primary key>) TO STDOUT
 *      (FORMAT binary) into a file: key order, as the writer sends rows;
 *   2. a fresh table of the same shape: CREATE TABLE … (LIKE <table>
 *      INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES), with the
 *      same storage parameters and, for a partitioned table, the same
 *      partition key and one partition for each of the original's (bounds
 *      and storage parameters copied);
 *   3. the file cut at row boundaries into `sessions` parts (key ranges),
 *      each sent by its own connection as one COPY … FROM STDIN (FORMAT
 *      binary), all released together; the time is from the start to the last commit
 *      (each COPY is its own transaction).  Connections are opened first. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tools/bench/capacity/cap.h"

#define FRESH "gpuagg_capacity_ceiling"
#define MAX_SESSIONS 64
#define CHUNK (1u << 20)

static const char pgcopy_sig[11] = "PGCOPY\n\377\r\n";

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    size_t n = strlen(err);
    while (n && err[n - 1] == '\n')
        err[--n] = 0;
    return -1;
}

static void no_notice(void *arg, const char *msg)
{
    (void)arg, (void)msg;
}

/* Run sql; 0 when it returned want, else -1 with PostgreSQL's message. */
static int exec_ok(PGconn *c, const char *sql, ExecStatusType want, char *err, size_t errlen)
{
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == want;
    if (!ok)
        fail(err, errlen, "%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

/* The first value of a one-row query with text parameters, copied to out. */
static int query1(PGconn *c, const char *sql, int n, const char *const *params, char *out, size_t outlen,
                  char *err, size_t errlen)
{
    PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        rc = fail(err, errlen, "%s: %s", sql, PQresultStatus(r) == PGRES_TUPLES_OK ? "no row" : PQerrorMessage(c));
    else
        snprintf(out, outlen, "%s", PQgetisnull(r, 0, 0) ? "" : PQgetvalue(r, 0, 0));
    PQclear(r);
    return rc;
}

static int export_rows(PGconn *c, const char *qname, const char *order, const char *path, uint64_t *bytes,
                       char *err, size_t errlen)
{
    char sql[2048];
    snprintf(sql, sizeof sql, "COPY (SELECT * FROM %s%s%s) TO STDOUT (FORMAT binary)", qname,
             order[0] ? " ORDER BY " : "", order);
    FILE *f = fopen(path, "w");
    if (!f)
        return fail(err, errlen, "%s: %s", path, strerror(errno));
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COPY_OUT) {
        fail(err, errlen, "%s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        fclose(f);
        return -1;
    }
    PQclear(r);
    char *buf;
    int n;
    *bytes = 0;
    while ((n = PQgetCopyData(c, &buf, 0)) > 0) {
        fwrite(buf, 1, (size_t)n, f);
        *bytes += (uint64_t)n;
        PQfreemem(buf);
    }
    int rc = 0;
    if (n == -2)
        rc = fail(err, errlen, "%s: %s", sql, PQerrorMessage(c));
    while ((r = PQgetResult(c))) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && !rc)
            rc = fail(err, errlen, "%s: %s", sql, PQerrorMessage(c));
        PQclear(r);
    }
    if ((fflush(f) != 0 || ferror(f)) && !rc)
        rc = fail(err, errlen, "%s: %s", path, strerror(errno));
    fclose(f);
    return rc;
}

/* The fresh table: same columns, defaults, constraints, indexes, storage
 * parameters; for a partitioned table the same key and partitions. */
static int create_clone(PGconn *c, const char *oid, const char *qname, int *parts, char *err, size_t errlen)
{
    char kind[8], opts[1024], key[1024], sql[4096];
    const char *p[1] = { oid };
    *parts = 0;
    if (exec_ok(c, "DROP TABLE IF EXISTS " FRESH, PGRES_COMMAND_OK, err, errlen) < 0 ||
        query1(c, "SELECT relkind FROM pg_class WHERE oid = $1::oid", 1, p, kind, sizeof kind, err, errlen) < 0 ||
        query1(c, "SELECT coalesce(array_to_string(reloptions, ', '), '') FROM pg_class WHERE oid = $1::oid", 1, p,
               opts, sizeof opts, err, errlen) < 0)
        return -1;
    const char *like = "INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES";
    if (kind[0] != 'p') {
        snprintf(sql, sizeof sql, "CREATE TABLE " FRESH " (LIKE %s %s)%s%s%s", qname, like,
                 opts[0] ? " WITH (" : "", opts, opts[0] ? ")" : "");
        return exec_ok(c, sql, PGRES_COMMAND_OK, err, errlen);
    }
    if (query1(c, "SELECT pg_get_partkeydef($1::oid)", 1, p, key, sizeof key, err, errlen) < 0)
        return -1;
    snprintf(sql, sizeof sql, "CREATE TABLE " FRESH " (LIKE %s %s) PARTITION BY %s", qname, like, key);
    if (exec_ok(c, sql, PGRES_COMMAND_OK, err, errlen) < 0)
        return -1;
    PGresult *r = PQexecParams(c,
        "SELECT c.relkind, pg_get_expr(c.relpartbound, c.oid), "
        "       coalesce(array_to_string(c.reloptions, ', '), '') "
        "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = $1::oid ORDER BY c.relname", 1, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fail(err, errlen, "partitions of %s: %s", qname, PQerrorMessage(c));
        PQclear(r);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < PQntuples(r) && !rc; i++) {
        if (PQgetvalue(r, i, 0)[0] == 'p') {
            rc = fail(err, errlen, "%s has sub-partitioned partitions: not supported", qname);
            break;
        }
        const char *o = PQgetvalue(r, i, 2);
        snprintf(sql, sizeof sql, "CREATE TABLE " FRESH "_%d PARTITION OF " FRESH " %s%s%s%s", i,
                 PQgetvalue(r, i, 1), o[0] ? " WITH (" : "", o, o[0] ? ")" : "");
        rc = exec_ok(c, sql, PGRES_COMMAND_OK, err, errlen);
        *parts = i + 1;
    }
    PQclear(r);
    return rc;
}

/* Offsets of the rows in a binary COPY file: the header's length in *hdr,
 * row k at off[k] (off[nrows] = the trailer).  Returns 0 or -1. */
static int index_rows(const uint8_t *d, size_t len, size_t *hdr, size_t **off, uint64_t *nrows,
                      char *err, size_t errlen)
{
    if (len < 21 || memcmp(d, pgcopy_sig, 11) != 0)
        return fail(err, errlen, "not a binary COPY file");
    uint32_t ext = (uint32_t)d[15] << 24 | (uint32_t)d[16] << 16 | (uint32_t)d[17] << 8 | d[18];
    size_t p = 19 + (size_t)ext, cap = 1 << 20, n = 0;
    size_t *o = malloc(cap * sizeof *o);
    if (!o)
        return fail(err, errlen, "out of memory");
    *hdr = p;
    for (;;) {
        if (p + 2 > len)
            goto bad;
        int16_t nf = (int16_t)(d[p] << 8 | d[p + 1]);
        if (n == cap) {
            size_t *no = realloc(o, (cap *= 2) * sizeof *o);
            if (!no) {
                free(o);
                return fail(err, errlen, "out of memory");
            }
            o = no;
        }
        o[n] = p;
        if (nf == -1)
            break;
        p += 2;
        for (int f = 0; f < nf; f++) {
            if (p + 4 > len)
                goto bad;
            int32_t fl = (int32_t)((uint32_t)d[p] << 24 | (uint32_t)d[p + 1] << 16 | (uint32_t)d[p + 2] << 8 | d[p + 3]);
            p += 4 + (fl > 0 ? (size_t)fl : 0);
        }
        n++;
    }
    *off = o;
    *nrows = n;
    return 0;
bad:
    free(o);
    return fail(err, errlen, "binary COPY file cut short");
}

/* The start signal: every session waits for go (1 start, -1 give up). */
struct start {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;
};

struct session {
    PGconn *conn;
    const uint8_t *hdr, *rows;
    size_t hdrlen, rowslen;
    struct start *start;
    double done;
    char err[512];
};

static void signal_start(struct start *st, int go)
{
    pthread_mutex_lock(&st->mu);
    st->go = go;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

static int put(struct session *s, const void *p, size_t n)
{
    return PQputCopyData(s->conn, p, (int)n) == 1 ? 0 : -1;
}

static void *session_main(void *arg)
{
    struct session *s = arg;
    static const uint8_t trailer[2] = { 0xff, 0xff };
    pthread_mutex_lock(&s->start->mu);
    while (!s->start->go)
        pthread_cond_wait(&s->start->cv, &s->start->mu);
    int go = s->start->go;
    pthread_mutex_unlock(&s->start->mu);
    if (go < 0)
        return NULL;
    PGresult *r = PQexec(s->conn, "COPY " FRESH " FROM STDIN (FORMAT binary)");
    int ok = PQresultStatus(r) == PGRES_COPY_IN;
    PQclear(r);
    if (ok) {
        ok = put(s, s->hdr, s->hdrlen) == 0;
        for (size_t o = 0; ok && o < s->rowslen; o += CHUNK)
            ok = put(s, s->rows + o, s->rowslen - o < CHUNK ? s->rowslen - o : CHUNK) == 0;
        ok = ok && put(s, trailer, 2) == 0;
        ok = PQputCopyEnd(s->conn, ok ? NULL : "bench_capacity: send failed") == 1 && ok;
        while ((r = PQgetResult(s->conn))) {
            ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
            PQclear(r);
        }
    }
    if (!ok)
        snprintf(s->err, sizeof s->err, "COPY FROM STDIN: %s", PQerrorMessage(s->conn));
    s->done = cap_now();
    return NULL;
}

static int load_parallel(const char *conninfo, const uint8_t *d, size_t hdr, const size_t *off, uint64_t nrows,
                         int sessions, double *secs, char *err, size_t errlen)
{
    struct session s[MAX_SESSIONS];
    pthread_t th[MAX_SESSIONS];
    struct start go = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
    int rc = 0, started = 0;
    memset(s, 0, sizeof s);
    for (int i = 0; i < sessions; i++) {
        uint64_t a = nrows * (uint64_t)i / (uint64_t)sessions, b = nrows * (uint64_t)(i + 1) / (uint64_t)sessions;
        s[i].conn = PQconnectdb(conninfo);
        if (PQstatus(s[i].conn) != CONNECTION_OK) {
            rc = fail(err, errlen, "session %d: %s", i, PQerrorMessage(s[i].conn));
            break;
        }
        PQclear(PQexec(s[i].conn, "SET application_name = 'bench_capacity-copy'"));
        s[i].hdr = d;
        s[i].hdrlen = hdr;
        s[i].rows = d + off[a];
        s[i].rowslen = off[b] - off[a];
        s[i].start = &go;
    }
    if (rc == 0) {
        for (; started < sessions; started++)
            if (pthread_create(&th[started], NULL, session_main, &s[started]) != 0)
                break;
        if (started < sessions) {
            rc = fail(err, errlen, "cannot start %d threads", sessions);
            signal_start(&go, -1);
            for (int i = 0; i < started; i++)
                pthread_join(th[i], NULL);
        } else {
            double t0 = cap_now(), t1 = t0;
            signal_start(&go, 1);
            for (int i = 0; i < sessions; i++) {
                pthread_join(th[i], NULL);
                t1 = s[i].done > t1 ? s[i].done : t1;
                if (s[i].err[0] && rc == 0)
                    rc = fail(err, errlen, "session %d: %s", i, s[i].err);
            }
            *secs = t1 - t0;
        }
    }
    for (int i = 0; i < sessions; i++)
        PQfinish(s[i].conn);
    return rc;
}

int cap_ceiling_run(const char *conninfo, const char *table, const char *path, int sessions,
                    int keep, struct cap_ceiling *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    if (sessions < 1 || sessions > MAX_SESSIONS)
        return fail(err, errlen, "sessions must be 1..%d", MAX_SESSIONS);
    res->sessions = sessions;
    PGconn *c = PQconnectdb(conninfo);
    PQsetNoticeProcessor(c, no_notice, NULL);
    uint8_t *d = MAP_FAILED;
    size_t *off = NULL, dlen = 0, hdr = 0;
    int fd = -1, rc = -1;
    char oid[32], qname[512], count[32], order[1024];
    const char *p[1] = { table };
    if (PQstatus(c) != CONNECTION_OK) {
        fail(err, errlen, "connect: %s", PQerrorMessage(c));
        goto out;
    }
    if (query1(c, "SELECT coalesce(to_regclass($1)::oid::text, '')", 1, p, oid, sizeof oid, err, errlen) < 0)
        goto out;
    if (!oid[0]) {
        fail(err, errlen, "table '%s' does not exist", table);
        goto out;
    }
    p[0] = oid;
    if (query1(c, "SELECT $1::oid::regclass::text", 1, p, qname, sizeof qname, err, errlen) < 0)
        goto out;
    /* In primary-key order, as the writer sends its rows (none: as stored). */
    if (query1(c, "SELECT coalesce(string_agg(quote_ident(a.attname), ', ' ORDER BY k.n), '') "
                  "FROM pg_index i, unnest(i.indkey) WITH ORDINALITY k(att, n), pg_attribute a "
                  "WHERE i.indrelid = $1::oid AND i.indisprimary AND a.attrelid = i.indrelid AND a.attnum = k.att",
               1, p, order, sizeof order, err, errlen) < 0)
        goto out;
    /* gpuagg keeps its open buckets packed in blocks (docs/STORAGE.md "Open
     * buckets"): the same buckets as rows of `buckets` are those of the
     * view bucket_rows, whose time ranges get their partitions first. */
    const char *src = qname;
    if (!strcmp(qname, "buckets")) {
        char view[8];
        if (query1(c, "SELECT to_regclass('bucket_rows') IS NOT NULL", 0, NULL, view, sizeof view,
                   err, errlen) < 0)
            goto out;
        if (view[0] == 't') {
            if (exec_ok(c, "SELECT count(gpuagg_ensure_partition(g, p)) FROM (SELECT DISTINCT "
                           "granularity AS g, ts / gpuagg_partition_width(granularity) AS p "
                           "FROM bucket_rows) q", PGRES_TUPLES_OK, err, errlen) < 0)
                goto out;
            src = "bucket_rows";
        }
    }
    double t0 = cap_now();
    if (export_rows(c, src, order, path, &res->bytes, err, errlen) < 0)
        goto out;
    res->export_s = cap_now() - t0;
    if (create_clone(c, oid, qname, &res->partitions, err, errlen) < 0)
        goto out;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        fail(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    dlen = (size_t)st.st_size;
    d = mmap(NULL, dlen, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (d == MAP_FAILED) {
        fail(err, errlen, "mmap %s: %s", path, strerror(errno));
        goto out;
    }
    if (index_rows(d, dlen, &hdr, &off, &res->rows, err, errlen) < 0)
        goto out;
    if (res->rows == 0) {
        fail(err, errlen, "table %s is empty: nothing to load", qname);
        goto out;
    }
    if ((uint64_t)sessions > res->rows)
        sessions = res->sessions = (int)res->rows;
    /* Settle the dirty pages of the export and the DDL before the clock runs. */
    if (exec_ok(c, "CHECKPOINT", PGRES_COMMAND_OK, err, errlen) < 0)
        goto out;
    if (load_parallel(conninfo, d, hdr, off, res->rows, sessions, &res->load_s, err, errlen) < 0)
        goto out;
    res->rows_per_s = res->load_s > 0 ? (double)res->rows / res->load_s : 0;
    if (query1(c, "SELECT count(*) FROM " FRESH, 0, NULL, count, sizeof count, err, errlen) < 0)
        goto out;
    if (strtoull(count, NULL, 10) != res->rows) {
        fail(err, errlen, "the fresh table holds %s rows, %llu were loaded", count, (unsigned long long)res->rows);
        goto out;
    }
    rc = 0;
out:
    if (PQstatus(c) == CONNECTION_OK && !keep)
        PQclear(PQexec(c, "DROP TABLE IF EXISTS " FRESH));
    PQfinish(c);
    free(off);
    if (d != MAP_FAILED)
        munmap(d, dlen);
    if (fd >= 0)
        close(fd);
    if (!keep)
        unlink(path);
    return rc;
}
