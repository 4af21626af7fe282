/* pg_conn.c — PostgreSQL connection supervisor thread (see pg_conn.h). */
#include "storage/pg_conn.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/base/deadline.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"

#define PG_CONN_CHECK_MS 2000
#define PG_CONN_CONNECT_TIMEOUT_S "5"

struct pg_conn {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    char *conninfo;
    int retry_initial_ms, retry_max_ms;
    struct pg_conn_status st;       /* guarded by mu */
    PGconn *conn;               /* owned by the thread */
};

const char *pg_conn_state_name(enum pg_conn_state s)
{
    switch (s) {
    case PG_CONN_CONNECTING: return "connecting";
    case PG_CONN_CONNECTED: return "connected";
    case PG_CONN_DOWN: return "down";
    case PG_CONN_STOPPED: return "stopped";
    }
    return "?";
}

/* Copy a libpq message without its trailing newline. */
static void set_error(char *dst, size_t n, const char *msg)
{
    snprintf(dst, n, "%s", msg ? msg : "");
    size_t len = strlen(dst);
    while (len && (dst[len - 1] == '\n' || dst[len - 1] == ' '))
        dst[--len] = '\0';
    for (char *c = dst; *c; c++) {
        if (*c == '\n' || *c == '\t')
            *c = ' ';
        else if (*c == '"')
            *c = '\'';
    }
}

static void set_state(struct pg_conn *p, enum pg_conn_state s, const char *err)
{
    pthread_mutex_lock(&p->mu);
    if (p->st.state != s)
        p->st.since_real_ns = ga_now_real_ns();
    p->st.state = s;
    if (err)
        set_error(p->st.last_error, sizeof p->st.last_error, err);
    pthread_mutex_unlock(&p->mu);
}

/* Sleep up to ms or until stop; returns 1 if stopping. */
static int wait_ms(struct pg_conn *p, int ms)
{
    struct timespec until = ga_deadline_ms(CLOCK_REALTIME, ms);
    pthread_mutex_lock(&p->mu);
    while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &until) == 0)
        ;
    int stop = p->stop;
    pthread_mutex_unlock(&p->mu);
    return stop;
}

static PGconn *connect_once(struct pg_conn *p)
{
    const char *keys[] = { "dbname", "connect_timeout", "application_name", NULL };
    const char *vals[] = { p->conninfo, PG_CONN_CONNECT_TIMEOUT_S, "gpuaggd", NULL };
    /* expand_dbname=1: the conninfo string is parsed; later keys (timeout,
     * name) are defaults only when the conninfo names them itself. */
    return PQconnectdbParams(keys, vals, 1);
}

static int healthy(PGconn *c)
{
    if (PQstatus(c) != CONNECTION_OK)
        return 0;
    PGresult *r = PQexec(c, "SELECT 1");
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    return ok;
}

static void *pg_conn_main(void *arg)
{
    struct pg_conn *p = arg;
    int backoff = 0;
    char last_logged[256] = "";
    int64_t last_warn_ns = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int stop = p->stop, lo = p->retry_initial_ms, hi = p->retry_max_ms;
        p->st.attempts += p->conn ? 0 : 1;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        if (!p->conn) {
            PGconn *c = connect_once(p);
            if (PQstatus(c) == CONNECTION_OK) {
                p->conn = c;
                backoff = 0;
                pthread_mutex_lock(&p->mu);
                p->st.connects++;
                p->st.server_version = PQserverVersion(c);
                p->st.last_error[0] = '\0';
                pthread_mutex_unlock(&p->mu);
                last_logged[0] = '\0';
                set_state(p, PG_CONN_CONNECTED, NULL);
                ga_log(GA_LOG_INFO, "storage_connected", "server_version=%d", PQserverVersion(c));
            } else {
                char msg[256];
                set_error(msg, sizeof msg, PQerrorMessage(c));
                PQfinish(c);
                backoff = backoff ? (backoff * 2 > hi ? hi : backoff * 2) : lo;
                set_state(p, PG_CONN_DOWN, msg);
                /* A warning when the error changes or once a minute; the
                 * retries in between at debug level. */
                int64_t now = ga_now_mono_ns();
                int loud = strcmp(msg, last_logged) != 0 || now - last_warn_ns > 60000000000LL;
                ga_log(loud ? GA_LOG_WARN : GA_LOG_DEBUG, "storage_down",
                       "retry_in_ms=%d attempts=%llu error=\"%s\"", backoff,
                       (unsigned long long)p->st.attempts, msg);
                if (loud) {
                    last_warn_ns = now;
                    snprintf(last_logged, sizeof last_logged, "%s", msg);
                }
                if (wait_ms(p, backoff))
                    break;
                continue;
            }
        }
        if (wait_ms(p, PG_CONN_CHECK_MS))
            break;
        if (!healthy(p->conn)) {
            char msg[256];
            set_error(msg, sizeof msg, PQerrorMessage(p->conn));
            ga_log(GA_LOG_WARN, "storage_lost", "error=\"%s\"", msg);
            PQfinish(p->conn);
            p->conn = NULL;
            set_state(p, PG_CONN_CONNECTING, msg);
        }
    }
    if (p->conn)
        PQfinish(p->conn);
    p->conn = NULL;
    set_state(p, PG_CONN_STOPPED, NULL);
    return NULL;
}

int pg_conn_start(struct pg_conn **out, const char *conninfo, int retry_initial_ms, int retry_max_ms)
{
    struct pg_conn *p = calloc(1, sizeof *p);
    if (!p)
        return GA_ENOMEM;
    p->conninfo = strdup(conninfo);
    if (!p->conninfo)
        goto fail;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->retry_initial_ms = retry_initial_ms;
    p->retry_max_ms = retry_max_ms;
    p->st.state = PG_CONN_CONNECTING;
    p->st.since_real_ns = ga_now_real_ns();
    if (pthread_create(&p->thread, NULL, pg_conn_main, p) != 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        goto fail;
    }
    pthread_setname_np(p->thread, "ga-pgconn");
    *out = p;
    return 0;
fail:
    free(p->conninfo);
    free(p);
    return GA_ENOMEM;
}

void pg_conn_set_backoff(struct pg_conn *p, int retry_initial_ms, int retry_max_ms)
{
    pthread_mutex_lock(&p->mu);
    p->retry_initial_ms = retry_initial_ms;
    p->retry_max_ms = retry_max_ms;
    pthread_mutex_unlock(&p->mu);
}

void pg_conn_get_status(struct pg_conn *p, struct pg_conn_status *st)
{
    pthread_mutex_lock(&p->mu);
    *st = p->st;
    pthread_mutex_unlock(&p->mu);
}

void pg_conn_stop(struct pg_conn *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->conninfo);
    free(p);
}
