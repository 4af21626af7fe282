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

enum pg_conn_state { PG_CONN_CONNECTING = 0, PG_CONN_CONNECTED, PG_CONN_DOWN, PG_CONN_STOPPED };

struct pg_conn_status {
    enum pg_conn_state state;
    char last_error[256];       /* "" when none */
    int64_t since_real_ns;      /* when the state last changed */
    uint64_t attempts;          /* connection attempts so far */
    uint64_t connects;          /* successful connections so far */
    int server_version;         /* e.g. 150018, 0 when never connected */
};

struct pg_conn;

/* Start the connection thread.  conninfo is copied.  Returns 0 or GA_E*. */
int pg_conn_start(struct pg_conn **out, const char *conninfo, int retry_initial_ms, int retry_max_ms);
/* Change the backoff bounds (reload). */
void pg_conn_set_backoff(struct pg_conn *p, int retry_initial_ms, int retry_max_ms);
/* Snapshot of the state; thread-safe. */
void pg_conn_get_status(struct pg_conn *p, struct pg_conn_status *st);
/* Stop the thread, close the connection, free p. */
void pg_conn_stop(struct pg_conn *p);
const char *pg_conn_state_name(enum pg_conn_state s);

#endif
