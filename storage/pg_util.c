/* pg_util.c — libpq helpers (see pg_util.h). */
#include "storage/pg_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"

void pg_util_buf_reserve(struct pg_util_buf *b, size_t more)
{
    if (b->oom || b->len + more <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return;
    }
    b->p = p;
    b->cap = cap;
}

void pg_util_put(struct pg_util_buf *b, const void *data, size_t n)
{
    pg_util_buf_reserve(b, n);
    if (b->oom)
        return;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_be(struct pg_util_buf *b, uint64_t v, int bytes)
{
    uint8_t tmp[8];
    for (int i = 0; i < bytes; i++)
        tmp[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    pg_util_put(b, tmp, (size_t)bytes);
}

void pg_util_put_i16(struct pg_util_buf *b, int16_t v) { put_be(b, (uint16_t)v, 2); }
void pg_util_put_i32(struct pg_util_buf *b, int32_t v) { put_be(b, (uint32_t)v, 4); }
void pg_util_put_i64(struct pg_util_buf *b, int64_t v) { put_be(b, (uint64_t)v, 8); }

void pg_util_put_f64(struct pg_util_buf *b, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    put_be(b, bits, 8);
}

void pg_util_buf_free(struct pg_util_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

void pg_util_array_begin(struct pg_util_buf *b, uint32_t elem_oid, size_t n)
{
    pg_util_put_i32(b, 1);                 /* ndim */
    pg_util_put_i32(b, 0);                 /* no NULLs */
    pg_util_put_i32(b, (int32_t)elem_oid);
    pg_util_put_i32(b, (int32_t)n);        /* dimension length */
    pg_util_put_i32(b, 1);                 /* lower bound */
}

void pg_util_array_i32(struct pg_util_buf *b, int32_t v)
{
    pg_util_put_i32(b, 4);
    pg_util_put_i32(b, v);
}

void pg_util_array_i64(struct pg_util_buf *b, int64_t v)
{
    pg_util_put_i32(b, 8);
    pg_util_put_i64(b, v);
}

void pg_util_array_f64(struct pg_util_buf *b, double v)
{
    pg_util_put_i32(b, 8);
    pg_util_put_f64(b, v);
}

void pg_util_array_bytes(struct pg_util_buf *b, const void *p, size_t n)
{
    pg_util_put_i32(b, (int32_t)n);
    pg_util_put(b, p, n);
}

void pg_util_errcopy(char *dst, size_t n, const char *msg)
{
    if (!n)
        return;
    snprintf(dst, n, "%s", msg ? msg : "");
    size_t len = strlen(dst);
    while (len && (dst[len - 1] == '\n' || dst[len - 1] == ' '))
        dst[--len] = '\0';
    for (char *c = dst; *c; c++)
        if (*c == '\n' || *c == '"')
            *c = ' ';
}

void pg_util_result_error(char *dst, size_t n, PGconn *c, const PGresult *r)
{
    const char *msg = r ? PQresultErrorMessage(r) : NULL;
    if (!msg || !*msg)
        msg = c ? PQerrorMessage(c) : "no connection";
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    char line[512];
    pg_util_errcopy(line, sizeof line, msg);
    if (state)
        snprintf(dst, n, "SQLSTATE %s: %s", state, line);
    else
        snprintf(dst, n, "%s", line);
}

int pg_util_data_error(const char *err)
{
    static const char *const classes[] = { "22", "23", "54", "P0" };
    const char *s = err ? strstr(err, "SQLSTATE ") : NULL;
    if (!s || strlen(s) < 14)
        return 0;
    s += 9;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (s[0] == classes[i][0] && s[1] == classes[i][1])
            return 1;
    return 0;
}

int pg_util_exec(PGconn *c, const char *sql, char *err, size_t errlen)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    int rc = 0;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        pg_util_result_error(err, errlen, c, r);
        rc = GA_EDB;
    }
    PQclear(r);
    return rc;
}

PGconn *pg_util_connect(const char *conninfo, const char *application_name)
{
    const char *keys[] = { "connect_timeout", "application_name", "options", "dbname", NULL };
    const char *vals[] = { "5", application_name, "-c client_min_messages=warning", conninfo,
                           NULL };
    /* expand_dbname=1: the conninfo string is parsed in place of dbname and
     * its settings override the defaults listed before it. */
    return PQconnectdbParams(keys, vals, 1);
}

static uint64_t get_be(const char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | (uint8_t)p[i];
    return v;
}

int64_t pg_util_get_i64(const char *p) { return (int64_t)get_be(p, 8); }
int32_t pg_util_get_i32(const char *p) { return (int32_t)(uint32_t)get_be(p, 4); }

double pg_util_get_f64(const char *p)
{
    uint64_t bits = get_be(p, 8);
    double v;
    memcpy(&v, &bits, 8);
    return v;
}

#define PG_UTIL_INSTANCE_LOCK "7452637461010000"   /* an arbitrary bigint, gpuagg's own */

int pg_util_instance_lock(PGconn *c, int timeout_ms, char *err, size_t errlen)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SET lock_timeout = %d", timeout_ms);
    int rc = pg_util_exec(c, sql, err, errlen);
    if (rc == 0)
        rc = pg_util_exec(c, "SELECT pg_advisory_lock(" PG_UTIL_INSTANCE_LOCK ")", err, errlen);
    char ignore[128];
    pg_util_exec(c, "SET lock_timeout = 0", ignore, sizeof ignore);
    if (rc == 0)
        return 0;
    /* Who holds it, for the message. */
    PGresult *r = PQexec(c, "SELECT a.pid, coalesce(a.application_name, ''), a.state "
                            "FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                            "WHERE l.locktype = 'advisory' AND l.granted AND "
                            "(l.classid::bigint << 32 | l.objid::bigint) = " PG_UTIL_INSTANCE_LOCK);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
        snprintf(err, errlen, "the database is in use by another gpuaggd (backend pid %s, %s, %s); "
                 "waiting for it to end", PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1),
                 PQgetvalue(r, 0, 2));
    else
        snprintf(err, errlen, "the database instance lock was not granted within %d ms", timeout_ms);
    PQclear(r);
    return GA_EBUSY;
}

void pg_util_instance_unlock(PGconn *c)
{
    char ignore[128];
    pg_util_exec(c, "SELECT pg_advisory_unlock(" PG_UTIL_INSTANCE_LOCK ")", ignore, sizeof ignore);
}
