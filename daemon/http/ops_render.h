/* ops_render.h — the bodies of the operational HTTP endpoints, as pure
 * functions of their inputs (no daemon state, no I/O):
 *
 *   /metrics  the Prometheus text exposition format (version 0.0.4) of the
 *             counter table (daemon/stat_table.h): `gpuaggctl stats`'s
 *             values under their Prometheus names, labels and units, with
 *             # HELP and # TYPE, and the latency histograms;
 *   /healthz  liveness: the process answers and its event loop turns;
 *   /readyz   readiness: storage reachable, journal not full, not draining.
 */
#ifndef GA_OPS_RENDER_H
#define GA_OPS_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "daemon/stat_table.h"

/* Render the stats map (the result of control op `stats`: str name →
 * int/uint/float) as Prometheus text from the n rows of table: one family
 * per distinct prom name, in the order of its first row, with # HELP (the
 * family's help from fam[nfam] when its rows carry labels, else the row's)
 * and # TYPE (counter, gauge for gauges and flags, histogram); a sample per
 * row whose name is in the map, its labels, its value × scale.  Rows
 * without prom are left out; histogram rows are read from their histogram
 * (_bucket, _sum, _count).  A stats name no row has becomes an untyped
 * family gpuagg_<name with [^A-Za-z0-9_] as '_'>, after the others.
 * *out is malloc'ed and NUL-terminated (*outlen bytes, without the NUL); the
 * caller frees it.  Returns 0, GA_EINVAL (stats not a map, a key not a str,
 * a value not a number) or GA_ENOMEM. */
int ops_prom_render(const msgpack_object *stats, const struct stat_def *table, size_t n,
                    const struct stat_family *fam, size_t nfam, char **out, size_t *outlen);

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
