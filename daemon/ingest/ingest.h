/* ingest.h — the ingest listeners: protocol v1 on Unix and TCP streams
 * (proto/INGEST.md) and Ceilometer's udp:// and tcp:// publishers; each
 * is a row of listeners[] (listener.h).
 *
 * The loop thread accepts, reads, frames (mp_frame_scan) and answers the
 * hello; every points frame becomes a pipeline_item decoded on the thread pool
 * and sequenced into the journal in the connection's arrival order.  Acks
 * go out in request order once the batch is durable.  A malformed frame
 * gets an error naming what was wrong, after the acks of the batches before
 * it, and closes that connection only.
 *
 * Bounded everywhere: frames over limits.max_frame_bytes are refused;
 * a connection stops being read while it has max_inflight batches unacked;
 * every connection stops being read while the sequencer backlog or the
 * bytes being decoded exceed their limits (TCP/Unix backpressure), and
 * UDP datagrams arriving then are dropped and counted. */
#ifndef GA_INGEST_H
#define GA_INGEST_H

#include <stdint.h>
#include <uv.h>

struct ga_daemon;
struct ga_pipeline;
struct ga_ingest;

#define INGEST_MAX_LISTENERS 16         /* rows of listeners[] (listener.h) */
#define INGEST_MAX_COUNTERS 32          /* counter slots of one listener */

/* The core's counters (protocol v1 on Unix and TCP) and each listener's own. */
struct ga_ingest_stats {
    uint64_t conns_open, conns_total, conns_refused, bytes_in, frames, batches_acked;
    uint64_t points_accepted, points_rejected, protocol_errors, auth_failures;
    uint64_t idle_timeouts, slow_timeouts, pauses, paused, decode_bytes_inflight;
    uint64_t inflight_waits;            /* reads that stopped at max_inflight unacked batches */
    uint64_t conns_refused_peer;        /* refused at limits.max_connections_per_peer */
    uint64_t points_rejected_future;    /* of points_rejected: limits.max_future_s */
    uint64_t points_late_noticed;       /* accepted, listed in the ack's late */
    /* by row of listeners[]: the slots its struct listener_counter table names */
    uint64_t listener[INGEST_MAX_LISTENERS][INGEST_MAX_COUNTERS];
};

/* Start the configured listeners.  Returns 0 or GA_E* with err. */
int ga_ingest_start(struct ga_daemon *d, struct ga_pipeline *pl, struct ga_ingest **out,
                    char *err, size_t errlen);
/* The durable LSN moved or items were sequenced: send what acks can go. */
void ga_ingest_on_durable(struct ga_ingest *g, uint64_t durable_lsn);
/* Drain: stop accepting and reading; once every batch in flight has been
 * acked (or deadline_ms passed), close connections and call done(ctx). */
void ga_ingest_stop(struct ga_ingest *g, int deadline_ms, void (*done)(void *ctx), void *ctx);
/* Free a stopped ingest (after done ran, outside the ingest's callbacks). */
void ga_ingest_free(struct ga_ingest *g);
void ga_ingest_get_stats(struct ga_ingest *g, struct ga_ingest_stats *st);
/* A listener's bound port (for "port 0" configs), 0 when it is off or has
 * no port. */
struct listener_kind;
int ga_ingest_port(const struct ga_ingest *g, const struct listener_kind *k);

#endif
