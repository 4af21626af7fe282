/* pg_conn.h — the daemon's link to PostgreSQL: connect, watch, reconnect.
 *
 * A dedicated thread owns the libpq connection (libpq calls block; the loop
 * thread never makes one).  It connects with exponential backoff between
 * storage.retry_initial_ms and storage.retry_max_ms, checks the connection
 * every few seconds, and reconnects when it is lost.  The daemon starts
 * whether or not PostgreSQL is reachable; status shows the state.  The
 * writer (pg_writer.h) and the queries (pg_query.h) have connections of
 * their own; this one only watches (docs/STORAGE.md "Connections"). */
#ifndef GA_PG_CONN_H
#define GA_PG_CONN_H

#include <stdint.h>

enum pgc_state { PGC_CONNECTING = 0, PGC_CONNECTED, PGC_DOWN, PGC_STOPPED };

struct pgc_status {
    enum pgc_state state;
    char last_error[256];       /* "" when none */
    int64_t since_real_ns;      /* when the state last changed */
    uint64_t attempts;          /* connection attempts so far */
    uint64_t connects;          /* successful connections so far */
    int server_version;         /* e.g. 150018, 0 when never connected */
};

struct pgc;

/* Start the connection thread.  conninfo is copied.  Returns 0 or GA_E*. */
int pgc_start(struct pgc **out, const char *conninfo, int retry_initial_ms, int retry_max_ms);
/* Change the backoff bounds (reload). */
void pgc_set_backoff(struct pgc *p, int retry_initial_ms, int retry_max_ms);
/* Snapshot of the state; thread-safe. */
void pgc_get_status(struct pgc *p, struct pgc_status *st);
/* Stop the thread, close the connection, free p. */
void pgc_stop(struct pgc *p);
const char *pgc_state_name(enum pgc_state s);

#endif
