/* ops_render.h — the bodies of the operational HTTP endpoints, as pure
 * functions of their inputs (no daemon state, no I/O):
 *
 *   /metrics  the Prometheus text exposition format (version 0.0.4) of the
 *             counters `gpuaggctl stats` reports, with # HELP and # TYPE
 *             from docs/COUNTERS.md;
 *   /healthz  liveness: the process answers and its event loop turns;
 *   /readyz   readiness: storage reachable, journal not full, not draining.
 *
 * Prometheus names (ops_prom_name): "gpuagg_" + the stats name with every
 * character outside [A-Za-z0-9_] turned into '_'; a counter gets the suffix
 * "_total" (unless it has it); a name ending in "_s" whose unit is seconds
 * ends in "_seconds" instead; a name whose unit is bytes and that does not
 * say so gets "_bytes".  Examples:
 *   ingest.points_accepted  counter  →  gpuagg_ingest_points_accepted_total
 *   ctl.connections_total   counter  →  gpuagg_ctl_connections_total
 *   uptime_s                gauge    →  gpuagg_uptime_seconds
 *   ingest.bytes_in         counter  →  gpuagg_ingest_bytes_in_total
 *   storage.connected       flag     →  gpuagg_storage_connected  (a gauge)
 */
#ifndef GA_OPS_RENDER_H
#define GA_OPS_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

/* One documented stats name (docs/COUNTERS.md). */
struct ops_counter_doc {
    const char *name;        /* "ingest.points_accepted" */
    const char *kind;        /* "counter", "gauge" or "flag" */
    const char *unit;        /* "points", "bytes", "seconds (float)", "—" */
    const char *help;        /* one sentence */
};
/* The table generated from docs/COUNTERS.md at build time
 * (tools/gen/counters_doc.sh). */
extern const struct ops_counter_doc ops_counter_docs[];
extern const size_t ops_ncounter_docs;

/* The Prometheus name of stats name `name` (doc NULL: undocumented, no
 * suffix) into out[n].  Returns its length, or 0 when it does not fit. */
size_t ops_prom_name(const char *name, const struct ops_counter_doc *doc, char *out, size_t n);

/* Render the stats map (the result of control op `stats`: str name →
 * int/uint/float) as Prometheus text.  Every entry becomes one metric
 * family with # HELP and # TYPE (counter for kind counter, gauge for gauge
 * and flag; untyped, with a HELP saying so, for a name docs does not list),
 * families in the map's order.  *out is malloc'ed and NUL-terminated
 * (*outlen bytes, without the NUL); the caller frees it.
 * Returns 0, GA_EINVAL (stats not a map, a key not a str, a value not a
 * number) or GA_ENOMEM. */
int ops_prom_render(const msgpack_object *stats, const struct ops_counter_doc *docs, size_t ndocs,
                    char **out, size_t *outlen);

/* /healthz input: whether the event loop answered, and how fast. */
struct ops_health {
    int loop_ok;             /* the loop ran a request within the limit */
    int draining;            /* the drain began: a busy loop is expected, not a failure */
    double loop_ms;          /* its round trip, ms (or the limit, when not) */
    double limit_ms;
    double uptime_s;
    const char *version;
};

/* /readyz input, read on the loop thread. */
struct ops_ready {
    int unread;                      /* 1: the loop was busy draining; only state and
                                        draining are set, storage and journal not read */
    const char *state;               /* ga_state_name(): "running", "draining", ... */
    int draining;
    int storage_connected;
    const char *storage_state;       /* "connected", "down", ... */
    const char *storage_error;       /* last error, "" when none */
    uint64_t journal_retained_bytes;
    uint64_t journal_max_bytes;
    uint64_t journal_segment_bytes;
    const char *journal_error;       /* why the journal cannot write (stalled: its file
                                        system full; failed); NULL or "" when it can */
};

/* JSON bodies: *json malloc'ed, NUL-terminated; returns the HTTP status
 * (200 healthy/ready, 503 not), or GA_ENOMEM with *json NULL.
 *   /healthz  {"status": "ok"|"fail", "checks": {"loop": {"ok": b,
 *              "round_trip_ms": x, "limit_ms": x}, "draining": b},
 *              "uptime_s": x, "version": s, "reasons": [s...]}
 *             A loop that does not answer while draining is expected (the
 *             final commit holds it): still "ok", with the reason listed.
 *   /readyz   {"status": "ready"|"not ready", "checks": {"storage":
 *              {"ok", "state", "last_error"}, "journal": {"ok",
 *              "retained_bytes", "max_bytes", "segment_bytes", "error"},
 *              "draining": {"ok", "state"}}, "reasons": [s...]}
 *             With unread, "storage" and "journal" are {"ok": null,
 *             "why": "not read: ..."}.
 * The journal counts as full when less than one segment of room is left
 * (retained_bytes + segment_bytes > max_bytes): the next segment cannot be
 * started and appends are about to be refused until storage catches up.
 * reasons lists, in words, every check that failed (empty when none). */
int ops_health_render(const struct ops_health *h, char **json);
int ops_ready_render(const struct ops_ready *r, char **json);

#endif
