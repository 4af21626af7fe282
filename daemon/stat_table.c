/* stat_table.c — every counter of `gpuaggctl stats`, where its value is
 * read from and how /metrics exports it (see stat_table.h).  Rows are in
 * the order of `stats` and of docs/COUNTERS.md; the rows of a labelled
 * family go to Prometheus together, in the order of the family's first
 * row.  One row a line pair: tests/blackbox/test_counters_doc.py reads
 * them.
 *
 *   S(name, kind, unit, prom, labels, scale, source, help)
 *   H(name, prom, histogram, help)      a histogram, unit seconds
 *
 * source, a field of struct stat_snapshot (daemon/stat_snapshot.h) and
 * how it is read; each macro accepts only a field of its type(s):
 *   V(field)       as it is: uint64_t, int64_t, int (or double: uptime_s)
 *   MS(field)      uint64_t nanoseconds, in milliseconds
 *   NZ(field)      int, 1 if not 0
 *   Q(field, q)    struct histo_snap: COUNT, P50_US or P99_US
 *   L              the ingest listener counter the row's name names
 *   G(fn)          fn(snapshot), a value computed from several fields */
#include "daemon/stat_table.h"

#include <string.h>

#include "daemon/ingest/listener.h"
#include "daemon/latency.h"
#include "daemon/stat_snapshot.h"

#define S(n, k, u, p, l, sc, v, h) { .name = n, .kind = k, .unit = u, .help = h, .prom = p, \
                                     .labels = l, .scale = sc, .src = { v } }
#define H(n, p, hi, h) { .name = n, .kind = STAT_HISTOGRAM, .unit = "seconds", .help = h, \
                         .prom = p, .scale = 1e-9, .histo = hi, .src = { .kind = STAT_SRC_NONE } }

/* A field of the snapshot; _Generic picks the source by the field's type
 * and fails to compile for a type the macro does not read. */
#define FIELD(f, ...) .off = offsetof(struct stat_snapshot, f), \
                      .kind = _Generic(((const struct stat_snapshot *)0)->f, __VA_ARGS__)
#define V(f)     FIELD(f, uint64_t: STAT_SRC_U64, int64_t: STAT_SRC_I64, int: STAT_SRC_INT, \
                       double: STAT_SRC_DOUBLE)
#define MS(f)    FIELD(f, uint64_t: STAT_SRC_NS_MS)
#define NZ(f)    FIELD(f, int: STAT_SRC_NONZERO)
#define Q(f, q)  FIELD(f, struct histo_snap: STAT_SRC_##q)
#define L        .kind = STAT_SRC_LISTENER
#define G(fn)    .kind = STAT_SRC_GET, .get = fn

/* The writer's view once it runs; before, the supervisor's (as status →
 * storage.state). */
static uint64_t storage_connected(const struct stat_snapshot *s)
{
    return (s->ew.have_writer ? s->ew.writer.state : s->pg.state) == PG_CONN_CONNECTED;
}

const struct stat_def stat_table[] = {
    S("uptime_s", STAT_GAUGE, "seconds (float)", "gpuagg_uptime_seconds", NULL, 1, V(uptime_s),
      "Time since the daemon started (monotonic clock), at the moment of the request."),
    S("ctl.connections_total", STAT_COUNTER, "connections", "gpuagg_connections_total", "listener=\"control\"", 1, V(ctl.ctl_connections),
      "Connections accepted on the control socket (control.socket); each gpuaggctl command opens one."),
    S("ctl.connections_open", STAT_GAUGE, "connections", "gpuagg_connections_open", "listener=\"control\"", 1, V(ctl_connections_open),
      "Control connections open now, the one asking included."),
    S("ctl.requests", STAT_COUNTER, "requests", "gpuagg_ctl_requests_total", NULL, 1, V(ctl.ctl_requests),
      "Requests whose envelope was valid (a map with a uint id, a non-empty str op, args absent, nil or a map), whatever happened next: unknown ops, failed ops and this stats request itself are counted."),
    S("ctl.errors", STAT_COUNTER, "requests", "gpuagg_ctl_errors_total", NULL, 1, V(ctl.ctl_errors),
      "Requests answered \"ok\": false after a valid envelope: an unknown op (EBADOP); an op that returned an error (bad argument, reload of a bad file, EDB, ESHUTDOWN, …); a request beyond the 64 replies that may be pending on one connection (EBUSY); a deferred reply (flush, metrics, query, job.submit with wait or input_path, …) that completed with an error or passed its timeout_ms (ETIMEDOUT)."),
    S("ctl.protocol_errors", STAT_COUNTER, "frames", "gpuagg_ctl_protocol_errors_total", NULL, 1, V(ctl.ctl_protocol_errors),
      "Frames refused at the envelope, after which the daemon closes the connection: a c1 type byte (EPROTO), a frame over 1 MiB or nested too deep (ETOOBIG), a frame msgpack-c cannot decode, a request that is not a map or has no valid id / op, args that is not a map (the table \"Errors and what happens to the connection\" in PROTOCOL.md)."),
    S("config.reloads", STAT_COUNTER, "reloads", "gpuagg_config_reloads_total", NULL, 1, V(ctl.reloads),
      "Reloads (SIGHUP or op reload) whose file loaded, parsed and validated and was applied."),
    S("config.reload_failures", STAT_COUNTER, "reloads", "gpuagg_config_reload_failures_total", NULL, 1, V(ctl.reload_failures),
      "Reloads refused because the file did not load, parse or validate (or memory ran out); the running configuration stayed and status → last_reload_error has the message."),
    S("ingest.connections_open", STAT_GAUGE, "connections", "gpuagg_connections_open", "listener=\"stream\"", 1, V(in.conns_open),
      "Stream connections held now: from accept until the connection is closed and none of its batches is still with a decoder or the sequencer."),
    S("ingest.connections_total", STAT_COUNTER, "connections", "gpuagg_connections_total", "listener=\"stream\"", 1, V(in.conns_total),
      "Stream connections accepted, the refused ones (ingest.connections_refused) included."),
    S("ingest.connections_refused", STAT_COUNTER, "connections", "gpuagg_connections_refused_total", "listener=\"stream\",reason=\"max_connections\"", 1, V(in.conns_refused),
      "Connections answered EBUSY (\"too many connections (limits.max_connections)\") and closed at once because accepting them made more than limits.max_connections open."),
    S("ingest.connections_refused_peer", STAT_COUNTER, "connections", "gpuagg_connections_refused_total", "listener=\"stream\",reason=\"max_connections_per_peer\"", 1, V(in.conns_refused_peer),
      "Connections answered EBUSY (\"too many connections from this user / address (limits.max_connections_per_peer)\") and closed at once: their peer (uid on the unix socket, address over TCP) already had limits.max_connections_per_peer open."),
    S("ingest.bytes_in", STAT_COUNTER, "bytes", "gpuagg_received_bytes_total", "listener=\"stream\"", 1, V(in.bytes_in),
      "Bytes read from stream connections, whole and partial frames alike."),
    S("ingest.frames", STAT_COUNTER, "frames", "gpuagg_received_frames_total", "listener=\"stream\"", 1, V(in.frames),
      "Complete msgpack frames read from stream connections (the hello and each batch), counted before they are decoded."),
    S("ingest.batches_acked", STAT_COUNTER, "batches", "gpuagg_ingest_batches_acked_total", NULL, 1, V(in.batches_acked),
      "acks sent: batches decoded, appended to the journal and fsynced (or with no valid point, so nothing to journal), acknowledged in order per connection."),
    S("ingest.points_accepted", STAT_COUNTER, "points", "gpuagg_ingest_points_accepted_total", "listener=\"stream\"", 1, V(in.points_accepted),
      "Sum of the accepted counts of those acks: points journaled for aggregation, including those the engine later finds late (engine.late_points)."),
    S("ingest.points_rejected", STAT_COUNTER, "points", "gpuagg_ingest_points_rejected_total", NULL, 1, V(in.points_rejected),
      "Sum of the lengths of those acks' rejected lists: points refused one by one by the decoder (bad metric name, timestamp before 1970, after 2200-01-01T00:00:00Z or more than limits.max_future_s ahead of the daemon's clock, NaN or non-numeric value: INGEST.md §6) while the rest of their batch went on."),
    S("ingest.points_rejected_future", STAT_COUNTER, "points", "gpuagg_ingest_points_rejected_future_total", NULL, 1, V(in.points_rejected_future),
      "Of ingest.points_rejected, the points refused because their timestamp was more than limits.max_future_s seconds after the daemon's clock as their batch arrived (reason timestamp T is more than limits.max_future_s = N s ahead, INGEST.md §4)."),
    S("ingest.points_late_noticed", STAT_COUNTER, "points", "gpuagg_ingest_points_late_noticed_total", NULL, 1, V(in.points_late_noticed),
      "Of ingest.points_accepted, the points listed in their ack's late: before the window of their metric as the door knew it (the metric's floor posted when the engine last set its points aside as late, daemon/ingest/late_notice.h; INGEST.md §3)."),
    S("ingest.protocol_errors", STAT_COUNTER, "errors", "gpuagg_ingest_protocol_errors_total", NULL, 1, V(in.protocol_errors),
      "Connections failed with an error message (then closed): every frame-level error of INGEST.md §7 (a malformed or oversized frame, a missing or bad hello, an unsupported version, a batch that does not decode as a whole), the authentication failures (ingest.auth_failures) and the incomplete-frame timeouts (part of ingest.slow_timeouts)."),
    S("ingest.auth_failures", STAT_COUNTER, "connections", "gpuagg_ingest_auth_failures_total", NULL, 1, V(in.auth_failures),
      "TCP hellos without the right token while listen.token is set (EAUTH, \"hello: token required\" / \"hello: wrong token\")."),
    S("ingest.idle_timeouts", STAT_COUNTER, "connections", "gpuagg_ingest_timeouts_total", "reason=\"idle\"", 1, V(in.idle_timeouts),
      "Connections answered ETIMEDOUT (\"idle for longer than limits.idle_timeout_s\") and closed because nothing arrived for limits.idle_timeout_s while none of their batches was in flight (checked once a second)."),
    S("ingest.slow_timeouts", STAT_COUNTER, "connections", "gpuagg_ingest_timeouts_total", "reason=\"slow\"", 1, V(in.slow_timeouts),
      "Connections ended for being slow (checked once a second): a frame left incomplete for longer than limits.slow_client_timeout_s (ETIMEDOUT, also an ingest.protocol_errors), or a client not reading its replies, more than limits.conn_buffer_bytes of them queued (closed without a message, logged ingest_slow_reader)."),
    S("ingest.backpressure_pauses", STAT_COUNTER, "pauses", "gpuagg_ingest_backpressure_pauses_total", NULL, 1, V(in.pauses),
      "Times ingest entered backpressure (from off to on): it stops reading every stream socket and drops UDP datagrams (udp.dropped_backpressure) while pipeline.sequencer_backlog ≥ limits.queue_batches, ingest.decode_bytes_inflight > limits.memory_budget_bytes / 2, or the journal is at journal.max_bytes."),
    S("ingest.backpressure_active", STAT_FLAG, "—", "gpuagg_ingest_backpressure_active", NULL, 1, V(in.paused),
      "1 while ingest is in backpressure (the condition above), else 0.  status → ingest.backpressure."),
    S("ingest.inflight_waits", STAT_COUNTER, "times", "gpuagg_ingest_inflight_waits_total", NULL, 1, V(in.inflight_waits),
      "Times a connection's buffered input held more frames while it already had max_inflight (limits.queue_batches) batches unacknowledged: the daemon stopped taking its frames (and reading it) until acks made room."),
    S("ingest.metrics_admitted", STAT_GAUGE, "metrics", "gpuagg_ingest_metrics_admitted", NULL, 1, V(metrics_admitted),
      "Metric names the door knows: those loaded from PostgreSQL and those admitted since the start; new names are admitted while this is below limits.max_metrics (0 or auto: one per KiB of a quarter of the physical memory, sizing.limits.max_metrics)."),
    S("ingest.metrics_refused", STAT_COUNTER, "points", "gpuagg_ingest_metrics_refused_total", NULL, 1, V(metrics_refused),
      "Points rejected at the door (in the ack, reason \"too many metrics (limits.max_metrics = N): new metric refused\"; for UDP samples, dropped) because they named a new metric past limits.max_metrics."),
    S("ingest.decode_bytes_inflight", STAT_GAUGE, "bytes", "gpuagg_ingest_decode_inflight_bytes", NULL, 1, V(in.decode_bytes_inflight),
      "Bytes of stream frames, and of gathered UDP datagrams (4 bytes of length prefix each), handed to the decode workers and not back yet."),
    H("ingest.ack_latency", "gpuagg_ingest_ack_latency_seconds", &latency_ack,
      "Stream ingest batches: time from the batch's frame taken in from the connection to its ack queued on it (decode, journal append and fsync, the batches before it on the connection)."),
    S("ingest.ack_latency.count", STAT_COUNTER, "batches", NULL, NULL, 1, Q(ack_latency, COUNT),
      "Observations of the histogram gpuagg_ingest_ack_latency_seconds (its _count)."),
    S("ingest.ack_latency.p50_us", STAT_GAUGE, "µs", NULL, NULL, 1, Q(ack_latency, P50_US),
      "Upper bound of the histogram bucket holding the median since the start; 0 before the first."),
    S("ingest.ack_latency.p99_us", STAT_GAUGE, "µs", NULL, NULL, 1, Q(ack_latency, P99_US),
      "Upper bound of the histogram bucket holding the 99th percentile since the start; 0 before the first."),
    S("udp.datagrams", STAT_COUNTER, "datagrams", "gpuagg_received_frames_total", "listener=\"udp\"", 1, L,
      "Non-empty datagrams received, whatever became of them."),
    S("udp.accepted", STAT_COUNTER, "samples", "gpuagg_ingest_points_accepted_total", "listener=\"udp\"", 1, L,
      "Datagrams that decoded (and matched the signature when listen.telemetry_secret is set): one point each, handed to the journal."),
    S("udp.dropped_backpressure", STAT_COUNTER, "datagrams", "gpuagg_udp_dropped_backpressure_total", NULL, 1, L,
      "Datagrams dropped without decoding because ingest was in backpressure or over its limits when they arrived (see ingest.backpressure_pauses), or because memory to gather them could not be had."),
    S("udp.rejected.not_msgpack", STAT_COUNTER, "datagrams", "gpuagg_udp_rejected_total", "reason=\"not_msgpack\"", 1, L,
      "Not exactly one well-formed msgpack object: truncated, the byte c1, bytes after the object, nested too deep, does not decode; also datagrams the kernel truncated (over the 64 KiB receive buffer)."),
    S("udp.rejected.not_map", STAT_COUNTER, "datagrams", "gpuagg_udp_rejected_total", "reason=\"not_map\"", 1, L,
      "The object is not a map."),
    S("udp.rejected.missing_field", STAT_COUNTER, "datagrams", "gpuagg_udp_rejected_total", "reason=\"missing_field\"", 1, L,
      "counter_name, resource_id, counter_type or timestamp absent or nil, or counter_volume absent."),
    S("udp.rejected.bad_field", STAT_COUNTER, "datagrams", "gpuagg_udp_rejected_total", "reason=\"bad_field\"", 1, L,
      "A key of the map that is neither str nor bin, str and bin keys mixed, a key not valid UTF-8, a duplicate key; counter_name / resource_id not a str, empty, not UTF-8, holding a character names may not hold (controls, NUL included, bidirectional and invisible formatting characters such as U+202E: INGEST.md §5), or together longer than 511 bytes; counter_type not gauge, delta or cumulative; a value the signature cannot be computed over (or memory ran out computing it)."),
    S("udp.rejected.unsigned", STAT_COUNTER, "datagrams", "gpuagg_udp_rejected_total", "reason=\"unsigned\"", 1, L,
      "listen.telemetry_secret is set and message_signature is absent, nil or empty."),
    S("udp.rejected.bad_signature", STAT_COUNTER, "datagrams", "gpuagg_udp_rejected_total", "reason=\"bad_signature\"", 1, L,
      "listen.telemetry_secret is set and message_signature is not a str/bin or does not match the HMAC-SHA256 of the other fields."),
    S("udp.rejected.bad_timestamp", STAT_COUNTER, "datagrams", "gpuagg_udp_rejected_total", "reason=\"bad_timestamp\"", 1, L,
      "timestamp not a str, not ISO 8601, or before 1677-09-21 (the int64 nanosecond range)."),
    S("udp.rejected.bad_value", STAT_COUNTER, "datagrams", "gpuagg_udp_rejected_total", "reason=\"bad_value\"", 1, L,
      "counter_volume nil or not an int or float, or NaN / ±infinity."),
    S("udp.rejected.out_of_range", STAT_COUNTER, "datagrams", "gpuagg_udp_rejected_total", "reason=\"out_of_range\"", 1, L,
      "timestamp a valid ISO 8601 time after 2200-01-01T00:00:00Z (GA_TS_MAX, SEMANTICS.md \"Time range and limits\"), e.g. 2262-04-11T23:47:16.854775."),
    S("udp.rejected.future", STAT_COUNTER, "datagrams", "gpuagg_udp_rejected_total", "reason=\"future\"", 1, L,
      "A sample that passed every other check whose timestamp is more than limits.max_future_s seconds after the daemon's clock as its datagrams were gathered (INGEST.md §4)."),
    S("ceilometer_tcp.connections_open", STAT_GAUGE, "connections", "gpuagg_connections_open", "listener=\"ceilometer_tcp\"", 1, L,
      "Connections held now, from accept until closed."),
    S("ceilometer_tcp.connections_total", STAT_COUNTER, "connections", "gpuagg_connections_total", "listener=\"ceilometer_tcp\"", 1, L,
      "Connections accepted, the refused ones included."),
    S("ceilometer_tcp.connections_refused", STAT_COUNTER, "connections", "gpuagg_connections_refused_total", "listener=\"ceilometer_tcp\",reason=\"max_connections\"", 1, L,
      "Connections closed at once because accepting them made more than limits.max_connections of them open (counted apart from the stream connections)."),
    S("ceilometer_tcp.bytes_in", STAT_COUNTER, "bytes", "gpuagg_received_bytes_total", "listener=\"ceilometer_tcp\"", 1, L,
      "Bytes read, length prefixes and partial frames included."),
    S("ceilometer_tcp.frames", STAT_COUNTER, "samples", "gpuagg_received_frames_total", "listener=\"ceilometer_tcp\"", 1, L,
      "Whole frames cut from the streams (each one sample), counted before they are decoded."),
    S("ceilometer_tcp.accepted", STAT_COUNTER, "samples", "gpuagg_ingest_points_accepted_total", "listener=\"ceilometer_tcp\"", 1, L,
      "Frames that decoded (and matched the signature when listen.telemetry_secret is set): one point each, handed to the journal."),
    S("ceilometer_tcp.rejected.not_msgpack", STAT_COUNTER, "samples", "gpuagg_ceilometer_tcp_rejected_total", "reason=\"not_msgpack\"", 1, L,
      "Not exactly one well-formed msgpack object (the body, as for udp.rejected.not_msgpack)."),
    S("ceilometer_tcp.rejected.not_map", STAT_COUNTER, "samples", "gpuagg_ceilometer_tcp_rejected_total", "reason=\"not_map\"", 1, L,
      "As udp.rejected.not_map (cannot happen: a body that does not start with a map closes the connection as bad_frames.garbage)."),
    S("ceilometer_tcp.rejected.missing_field", STAT_COUNTER, "samples", "gpuagg_ceilometer_tcp_rejected_total", "reason=\"missing_field\"", 1, L,
      "As udp.rejected.missing_field."),
    S("ceilometer_tcp.rejected.bad_field", STAT_COUNTER, "samples", "gpuagg_ceilometer_tcp_rejected_total", "reason=\"bad_field\"", 1, L,
      "As udp.rejected.bad_field."),
    S("ceilometer_tcp.rejected.unsigned", STAT_COUNTER, "samples", "gpuagg_ceilometer_tcp_rejected_total", "reason=\"unsigned\"", 1, L,
      "As udp.rejected.unsigned."),
    S("ceilometer_tcp.rejected.bad_signature", STAT_COUNTER, "samples", "gpuagg_ceilometer_tcp_rejected_total", "reason=\"bad_signature\"", 1, L,
      "As udp.rejected.bad_signature."),
    S("ceilometer_tcp.rejected.bad_timestamp", STAT_COUNTER, "samples", "gpuagg_ceilometer_tcp_rejected_total", "reason=\"bad_timestamp\"", 1, L,
      "As udp.rejected.bad_timestamp."),
    S("ceilometer_tcp.rejected.bad_value", STAT_COUNTER, "samples", "gpuagg_ceilometer_tcp_rejected_total", "reason=\"bad_value\"", 1, L,
      "As udp.rejected.bad_value."),
    S("ceilometer_tcp.rejected.out_of_range", STAT_COUNTER, "samples", "gpuagg_ceilometer_tcp_rejected_total", "reason=\"out_of_range\"", 1, L,
      "As udp.rejected.out_of_range."),
    S("ceilometer_tcp.rejected.future", STAT_COUNTER, "samples", "gpuagg_ceilometer_tcp_rejected_total", "reason=\"future\"", 1, L,
      "As udp.rejected.future."),
    S("ceilometer_tcp.bad_frames.oversize", STAT_COUNTER, "connections", "gpuagg_ceilometer_tcp_bad_frames_total", "reason=\"oversize\"", 1, L,
      "Connections closed because a length prefix was over limits.max_frame_bytes."),
    S("ceilometer_tcp.bad_frames.garbage", STAT_COUNTER, "connections", "gpuagg_ceilometer_tcp_bad_frames_total", "reason=\"garbage\"", 1, L,
      "Connections closed because a length prefix was 0 or the body after it did not start with a msgpack map: not Ceilometer's framing, or a stream that lost its place."),
    S("ceilometer_tcp.bad_frames.truncated", STAT_COUNTER, "connections", "gpuagg_ceilometer_tcp_bad_frames_total", "reason=\"truncated\"", 1, L,
      "Connections whose peer ended the stream inside a frame (the partial frame is dropped)."),
    S("ceilometer_tcp.bad_frames.slow", STAT_COUNTER, "connections", "gpuagg_ceilometer_tcp_bad_frames_total", "reason=\"slow\"", 1, L,
      "Connections closed because a frame stayed incomplete for longer than limits.slow_client_timeout_s while the daemon was reading them (checked once a second)."),
    S("journal.retained_bytes", STAT_GAUGE, "bytes", "gpuagg_journal_retained_bytes", NULL, 1, V(jn.retained_bytes),
      "next_lsn − start of the oldest retained segment: what journal.max_bytes bounds."),
    S("journal.segments", STAT_GAUGE, "files", "gpuagg_journal_segments", NULL, 1, V(jn.segments),
      "Segment files in journal.dir."),
    S("journal.appends", STAT_COUNTER, "records", "gpuagg_journal_appends_total", NULL, 1, V(jn.appends),
      "Records appended: one per batch or UDP bundle with at least one accepted point."),
    S("journal.syncs", STAT_COUNTER, "fsyncs", "gpuagg_journal_syncs_total", NULL, 1, V(jn.syncs),
      "fdatasync calls completed on segment files: the group commits (journal.fsync_interval_ms) and the syncs when a segment is closed for the next."),
    S("journal.bytes_written", STAT_COUNTER, "bytes", "gpuagg_journal_written_bytes_total", NULL, 1, V(jn.bytes_written),
      "Bytes written to segment files (record headers and payloads)."),
    S("journal.full_refusals", STAT_COUNTER, "appends", "gpuagg_journal_full_refusals_total", NULL, 1, V(jn.backpressure),
      "Appends refused because the record would take journal.retained_bytes past journal.max_bytes (storage has not committed what would free space)."),
    S("journal.torn_tails_cut", STAT_FLAG, "—", "gpuagg_journal_torn_tails_cut", NULL, 1, V(jn.torn_tails_cut),
      "1 if, at start, the last segment ended in a torn record (a crash mid-write) that was cut off (logged journal_torn_tail); else 0."),
    S("journal.write_failures", STAT_COUNTER, "writes", "gpuagg_journal_write_failures_total", NULL, 1, V(jn.write_failures),
      "Journal writes (or segment creations) that failed because the file system was full (ENOSPC, EDQUOT, EFBIG); each leaves the journal stalled until a write succeeds (docs/JOURNAL.md)."),
    S("journal.stalled", STAT_FLAG, "—", "gpuagg_journal_stalled", NULL, 1, NZ(jn.stalled_errno),
      "1 while the journal cannot write for want of space: new batches are refused with an error, those already appended wait for space."),
    S("pipeline.journal_stall_refusals", STAT_COUNTER, "batches", "gpuagg_pipeline_journal_stall_refusals_total", NULL, 1, V(pl.journal_stall_refusals),
      "Batches refused with an error reply because the journal was stalled (its file system full); the client may resend."),
    S("pipeline.journal_full_busy", STAT_COUNTER, "batches", "gpuagg_pipeline_journal_full_busy_total", NULL, 1, V(pl.journal_full_busy),
      "Batches answered EBUSY (\"busy: journal full (journal.max_bytes) …\") because the journal stayed at journal.max_bytes for a second: storage is behind."),
    S("pipeline.sequencer_backlog", STAT_GAUGE, "batches", "gpuagg_pipeline_sequencer_backlog", NULL, 1, V(pl.sequencer_backlog),
      "Decoded batches handed to the sequencer and not yet appended to the journal (waiting their turn or for journal space)."),
    S("pipeline.engine_queue", STAT_GAUGE, "batches", "gpuagg_pipeline_engine_queue", NULL, 1, V(pl.engine_queue),
      "Journaled batches (a worker's part of one each) held in memory for the partition workers, all lanes together (ranges to be read back from the journal are not counted)."),
    S("pipeline.engine_queue_bytes", STAT_GAUGE, "bytes", "gpuagg_pipeline_engine_queue_bytes", NULL, 1, V(pl.engine_queue_bytes),
      "Estimated memory of those batches (names, and 20 bytes per point)."),
    S("pipeline.journal_only_batches", STAT_COUNTER, "batches", "gpuagg_pipeline_journal_only_batches_total", NULL, 1, V(pl.journal_only),
      "Batches not kept in memory because the engine queue was full (limits.queue_batches batches, or half of limits.memory_budget_bytes); the engine reads them back from the journal (engine.replayed_records)."),
    S("pipeline.journal_full_waits", STAT_COUNTER, "waits", "gpuagg_pipeline_journal_full_waits_total", NULL, 1, V(pl.journal_full_waits),
      "Times the sequencer waited (up to 100 ms each, less when storage released space) for a full journal; see journal.full_refusals."),
    S("engine.metrics", STAT_GAUGE, "metrics", "gpuagg_engine_metrics", NULL, 1, V(ew.metrics),
      "Metrics the engine knows: those loaded from PostgreSQL at start plus the names seen since.  0 until the state is loaded."),
    S("engine.batches", STAT_COUNTER, "batches", "gpuagg_engine_batches_total", NULL, 1, V(ew.batches),
      "Batches aggregated and handed to the storage writer: live ones, the journal replayed at start, and journal-only ones read back."),
    S("engine.points", STAT_COUNTER, "points", "gpuagg_engine_points_total", NULL, 1, V(ew.points),
      "Points of those batches, late ones included (replayed points count again after a restart)."),
    S("engine.aggregates", STAT_COUNTER, "values", "gpuagg_engine_aggregates_total", NULL, 1, V(ew.aggs),
      "Changed bucket values (one per metric, method, granularity and bucket) computed and handed to the writer, before the writer merges repeats of the same bucket (storage.rows_committed counts after)."),
    S("engine.late_points", STAT_COUNTER, "points", NULL, NULL, 1, V(ew.late),
      "Points of those batches that were not aggregated (they are stored as late points): engine.late.window + engine.late.before_epoch + engine.late.nonfinite + engine.late.out_of_range, plus points of a metric the engine never added, which the daemon does not produce."),
    S("engine.late.window", STAT_COUNTER, "points", "gpuagg_engine_late_points_total", "reason=\"window\"", 1, V(ew.late_window),
      "Older than the metric's window: ts before fbt (SEMANTICS.md, \"Too old\")."),
    S("engine.late.before_epoch", STAT_COUNTER, "points", "gpuagg_engine_late_points_total", "reason=\"before_epoch\"", 1, V(ew.late_before_epoch),
      "ts before 1970."),
    S("engine.late.nonfinite", STAT_COUNTER, "points", "gpuagg_engine_late_points_total", "reason=\"nonfinite\"", 1, V(ew.late_nonfinite),
      "NaN or ±infinity values."),
    S("engine.late.out_of_range", STAT_COUNTER, "points", "gpuagg_engine_late_points_total", "reason=\"out_of_range\"", 1, V(ew.late_out_of_range),
      "ts after 2200-01-01T00:00:00Z (GA_TS_MAX)."),
    S("engine.replayed_records", STAT_COUNTER, "records", "gpuagg_engine_replayed_records_total", NULL, 1, V(ew.replayed_records),
      "Journal records read back and fed to the engine: at start (records after the database's window checkpoint) and the journal-only batches (pipeline.journal_only_batches)."),
    S("engine.window_snapshots", STAT_COUNTER, "snapshots", "gpuagg_engine_window_snapshots_total", NULL, 1, V(ew.snapshots),
      "Window sets submitted to the writer: each worker one of its partitions' changed windows every storage.window_snapshot_s / (its partitions) while replaying and running, every partition's on gpuaggctl flush and at the drain (none before the writer runs, nor after an engine failure)."),
    S("engine.feeds", STAT_COUNTER, "feeds", "gpuagg_engine_feeds_total", NULL, 1, V(ew.feeds),
      "Feeds of the engine: each aggregates the batches that were ready one after another in the engine queue, up to 65,536 points (one batch when the engine keeps up; many when it catches up, so a feed's fixed costs are paid once for all of them).  engine.batches / engine.feeds is the batches a feed."),
    S("engine.feed_ms", STAT_COUNTER, "ms", "gpuagg_engine_feed_seconds_total", NULL, 0.001, MS(ew.feed_ns),
      "Time the partition workers spent in those feeds (the engine's aggregation, GPU waits included), summed over the workers."),
    S("engine.submit_ms", STAT_COUNTER, "ms", "gpuagg_engine_submit_seconds_total", NULL, 0.001, MS(ew.submit_ns),
      "Time it spent handing their rows to the storage writers, waiting included while a writer's queue was full (storage.queue_max_rows)."),
    S("engine.snapshot_ms", STAT_COUNTER, "ms", "gpuagg_engine_snapshot_seconds_total", NULL, 0.001, MS(ew.snapshot_ns),
      "Time it spent on window sets (engine.window_snapshots): reading the changed windows (from the GPUs: one gather and copy a slice) and handing them to the writers."),
    S("engine.gpu_rebuild_ms", STAT_COUNTER, "ms", "gpuagg_engine_gpu_rebuild_seconds_total", NULL, 0.001, MS(ew.gpu_rebuild_ns),
      "GPU time of the window pool's rebuilds, summed over the CUDA backends (docs/GPU.md, step 9), as the backends time them on the GPU; 0 without a GPU."),
    S("engine.window_points", STAT_GAUGE, "points", "gpuagg_engine_window_points", NULL, 1, V(ew.window_points),
      "Raw points the GPUs' window pools hold (every metric's points of its current block, docs/SEMANTICS.md), as of the last feed; 0 without a GPU."),
    S("engine.coarse_held", STAT_GAUGE, "buckets", "gpuagg_engine_coarse_held_buckets", NULL, 1, V(ew.coarse_held),
      "Buckets of coarse archives (every archive but a policy's finest) the partition workers hold back now, each written within storage.coarse_delay_ms (STORAGE.md, \"Coarse archives\")."),
    S("engine.coarse_released", STAT_COUNTER, "buckets", "gpuagg_engine_coarse_released_buckets_total", NULL, 1, V(ew.coarse_released),
      "Held coarse buckets handed to the writers: in turn within storage.coarse_delay_ms, before their partition's window set, when a newer bucket of the same archive displaced them.  Against engine.aggregates it shows the rows the holding saved."),
    S("engine.gpu_failovers", STAT_COUNTER, "GPUs", "gpuagg_engine_gpu_failovers_total", NULL, 1, V(ew.failover.failovers),
      "GPU backends that failed (GA_ECUDA) and whose metrics moved to the CPU fallback (logged backend_failover)."),
    S("engine.gpu_failover_metrics_moved", STAT_COUNTER, "metrics", "gpuagg_engine_gpu_failover_metrics_moved_total", NULL, 1, V(ew.failover.metrics_moved),
      "Metrics moved to the CPU by those failovers."),
    S("engine.gpu_failover_windows_lost", STAT_COUNTER, "windows", "gpuagg_engine_gpu_failover_windows_lost_total", NULL, 1, V(ew.failover.windows_lost),
      "Metric windows the failovers could not read back from the failed GPU."),
    S("storage.connected", STAT_FLAG, "—", "gpuagg_storage_connected", NULL, 1, G(storage_connected),
      "1 when the writer's connection (before the writer runs: the supervisor's) is in state connected, as status → storage.state."),
    S("storage.connect_attempts", STAT_COUNTER, "attempts", "gpuagg_storage_connect_attempts_total", NULL, 1, V(pg.attempts),
      "Connection attempts of the supervisor: the first, each retry after a failure, each reconnect after the link was lost."),
    S("storage.rows_committed", STAT_COUNTER, "values", "gpuagg_storage_rows_committed_total", NULL, 1, V(ew.writer.rows_committed),
      "Aggregate values in committed writer transactions (one per metric, method, granularity and bucket per transaction, after merging); the values of a bucket travel in one buckets row."),
    S("storage.buckets_committed", STAT_COUNTER, "buckets", "gpuagg_storage_buckets_committed_total", NULL, 1, V(ew.writer.buckets_committed),
      "Buckets written by committed writer transactions, one per (metric, granularity, bucket) per transaction holding all its values: buckets rows, and open buckets changed in their blocks (storage.open_written)."),
    S("storage.rows_fresh", STAT_COUNTER, "rows", "gpuagg_storage_rows_fresh_total", NULL, 1, V(ew.writer.rows_fresh),
      "Of those bucket rows, the ones written by the direct COPY of fresh buckets (STORAGE.md, \"Fresh buckets and HOT updates\"); the others went through the staging table and the upsert."),
    S("storage.rows_merged", STAT_COUNTER, "rows", "gpuagg_storage_rows_merged_total", NULL, 1, V(ew.writer.rows_merged),
      "Bucket rows rewritten with another method set than the one the writer knows is stored (a rate:-only update, an older bucket, the first rewrite after a start), merged by gpuagg_merge in the upsert; the others replace the stored row."),
    S("storage.fresh_fallbacks", STAT_COUNTER, "transactions", "gpuagg_storage_fresh_fallbacks_total", NULL, 1, V(ew.writer.fresh_fallbacks),
      "Committed transactions whose fresh COPY hit an existing row, rolled back to its savepoint and upserted every row instead."),
    S("storage.rows_rejected", STAT_COUNTER, "rows", "gpuagg_storage_rows_rejected_total", NULL, 1, V(ew.writer.rows_rejected),
      "Rows PostgreSQL refused for their data (docs/STORAGE.md \"Rows the database refuses\"), recorded in rejected_rows by a committed flush instead of being written: one per bucket value, late point, metric definition or window snapshot / point counter of a refused metric (also counted when even recording them failed; they are then only in the log)."),
    S("storage.isolations", STAT_COUNTER, "flushes", "gpuagg_storage_isolations_total", NULL, 1, V(ew.writer.isolations),
      "Flushes that failed on their data (SQLSTATE class 22, 23, 54 or P0) and were split to find the refused metrics; the rest of each was committed."),
    S("storage.open_buckets", STAT_GAUGE, "buckets", "gpuagg_storage_open_buckets", NULL, 1, V(ew.writer.open_buckets),
      "Open buckets (the newest bucket of a (metric, granularity)) the writers hold in blocks, committed (STORAGE.md, \"Open buckets\"); at most storage.open_buckets_max, plus those loaded from blocks already stored."),
    S("storage.open_blocks", STAT_GAUGE, "rows", "gpuagg_storage_open_blocks", NULL, 1, V(ew.writer.open_blocks),
      "The open_blocks rows holding them."),
    S("storage.open_written", STAT_COUNTER, "buckets", "gpuagg_storage_open_written_total", NULL, 1, V(ew.writer.open_written),
      "Open buckets changed by committed transactions, written in their blocks instead of as buckets rows."),
    S("storage.open_blocks_written", STAT_COUNTER, "rows", "gpuagg_storage_open_blocks_written_total", NULL, 1, V(ew.writer.open_blocks_written),
      "open_blocks rows written by committed transactions (a block is written whole when any of its buckets changed)."),
    S("storage.open_closed", STAT_COUNTER, "buckets", "gpuagg_storage_open_closed_total", NULL, 1, V(ew.writer.open_closed),
      "Open buckets that a newer bucket of their pair closed, moved from their block to buckets as a row in the same transaction."),
    S("storage.open_full", STAT_COUNTER, "buckets", "gpuagg_storage_open_full_total", NULL, 1, V(ew.writer.open_full),
      "Buckets of pairs new to the blocks that stayed buckets rows because the writer held its share of storage.open_buckets_max."),
    S("storage.rows_updated", STAT_COUNTER, "rows", "gpuagg_storage_rows_updated_total", NULL, 1, V(ew.writer.rows_updated),
      "Of the bucket rows, the ones that replaced a row the writer knows is stored (its pair's newest bucket, method set known and held by the new one) with a plain UPDATE joined on the primary key, not the upsert (STORAGE.md, \"Fresh buckets and HOT updates\")."),
    S("storage.pairs_asked", STAT_COUNTER, "pairs", "gpuagg_storage_pairs_asked_total", NULL, 1, V(ew.writer.pairs_asked),
      "(metric, granularity) pairs whose newest stored bucket the writers read from the database before their first flush in this process (STORAGE.md, \"Fresh buckets and HOT updates\")."),
    S("storage.pairs_new", STAT_COUNTER, "pairs", "gpuagg_storage_pairs_new_total", NULL, 1, V(ew.writer.pairs_new),
      "Pairs of metrics created by this process, noted as holding no bucket without asking the database."),
    S("storage.update_fallbacks", STAT_COUNTER, "transactions", "gpuagg_storage_update_fallbacks_total", NULL, 1, V(ew.writer.update_fallbacks),
      "Committed transactions whose UPDATE found fewer rows than it replaces (rows dropped or deleted behind the writer's back): rolled back and written again with the upsert."),
    S("storage.late_committed", STAT_COUNTER, "points", "gpuagg_storage_late_committed_total", NULL, 1, V(ew.writer.late_committed),
      "Late points stored in committed writer transactions."),
    S("storage.transactions", STAT_COUNTER, "transactions", "gpuagg_storage_transactions_total", NULL, 1, V(ew.writer.transactions),
      "Writer transactions committed: one per flush of the pending work (when storage.flush_rows rows are pending, storage.flush_interval_ms after the oldest, on gpuaggctl flush, at the drain)."),
    S("storage.retries", STAT_COUNTER, "attempts", "gpuagg_storage_retries_total", NULL, 1, V(ew.writer.retries),
      "Flush attempts that failed (an SQL error, a lost connection) and are retried after the backoff; a failed reconnect does not count."),
    S("storage.pending_rows", STAT_GAUGE, "rows", "gpuagg_storage_pending_rows", NULL, 1, V(ew.writer.pending_rows),
      "Rows handed to the writer and not yet committed, in the batch being written plus the one filling plus the units the writer has not yet taken into it, and the windows of a window set written over several transactions still to come (STORAGE.md \"A window set over several transactions\"): aggregate rows (after merging, once taken), late points and metric window snapshots."),
    S("storage.lag_journal_bytes", STAT_GAUGE, "bytes", "gpuagg_storage_lag_journal_bytes", NULL, 1, V(ew.writer.lag_lsn),
      "Journal bytes aggregated and handed to the writer but not yet covered by the committed checkpoint (highest LSN submitted − committed_lsn, or − the journal's first LSN while the checkpoint is below it: a fresh journal is numbered from the clock)."),
    S("storage.partitions_created", STAT_COUNTER, "partitions", "gpuagg_storage_partitions_created_total", NULL, 1, V(ew.writer.partitions_created),
      "Daily partitions created by the writer: in its flush transactions that committed, and by the periodic maintenance."),
    S("storage.partitions_dropped", STAT_COUNTER, "partitions", "gpuagg_storage_partitions_dropped_total", NULL, 1, V(ew.writer.partitions_dropped),
      "Partitions dropped by the periodic maintenance (retention)."),
    H("storage.commit_lag", "gpuagg_storage_commit_lag_seconds", &latency_commit,
      "Time from a journal record acked (made durable) to the PostgreSQL commit that covers it, once per advance of a partition worker's committed position, for the oldest record newly covered."),
    S("storage.commit_lag.count", STAT_COUNTER, "advances", NULL, NULL, 1, Q(commit_lag, COUNT),
      "Observations of the histogram gpuagg_storage_commit_lag_seconds (its _count)."),
    S("storage.commit_lag.p50_us", STAT_GAUGE, "µs", NULL, NULL, 1, Q(commit_lag, P50_US),
      "Upper bound of the histogram bucket holding the median since the start; 0 before the first."),
    S("storage.commit_lag.p99_us", STAT_GAUGE, "µs", NULL, NULL, 1, Q(commit_lag, P99_US),
      "Upper bound of the histogram bucket holding the 99th percentile since the start; 0 before the first."),
    S("gpu.devices", STAT_GAUGE, "GPUs", "gpuagg_gpu_devices", NULL, 1, V(gpus),
      "GPUs found by the probe at start, kept to gpu.devices when that lists ordinals, usable or not (status → backends says which are used).  0 with gpu.devices: none, without a CUDA driver or device, and in CPU-only builds."),
    S("sizing.storage.writers", STAT_GAUGE, "connections", "gpuagg_sizing_value", "key=\"storage.writers\"", 1, V(sizing[GA_SIZED_WRITERS].value),
      "PostgreSQL writers in effect (storage.writers)."),
    S("sizing.storage.writers.auto", STAT_FLAG, "—", "gpuagg_sizing_auto", "key=\"storage.writers\"", 1, V(sizing[GA_SIZED_WRITERS].is_auto),
      "1 if storage.writers is auto (one writer a CPU, 4 to 16), 0 if the config set it."),
    S("sizing.journal.max_bytes", STAT_GAUGE, "bytes", "gpuagg_sizing_value", "key=\"journal.max_bytes\"", 1, V(sizing[GA_SIZED_JOURNAL_MAX_BYTES].value),
      "The journal's cap in effect (journal.max_bytes), as status → journal.max_bytes."),
    S("sizing.journal.max_bytes.auto", STAT_FLAG, "—", "gpuagg_sizing_auto", "key=\"journal.max_bytes\"", 1, V(sizing[GA_SIZED_JOURNAL_MAX_BYTES].is_auto),
      "1 if journal.max_bytes is auto (one window-save round of the rated ingest, twice, within half of the free disk), 0 if the config set it."),
    S("sizing.limits.max_metrics", STAT_GAUGE, "metrics", "gpuagg_sizing_value", "key=\"limits.max_metrics\"", 1, V(sizing[GA_SIZED_MAX_METRICS].value),
      "The live-metric bound in effect (limits.max_metrics, or its auto value)."),
    S("sizing.limits.max_metrics.auto", STAT_FLAG, "—", "gpuagg_sizing_auto", "key=\"limits.max_metrics\"", 1, V(sizing[GA_SIZED_MAX_METRICS].is_auto),
      "1 if limits.max_metrics is auto (0 or auto: one metric per KiB of a quarter of the memory), 0 if the config set it; follows reloads."),
    S("sizing.engine.workers", STAT_GAUGE, "workers", "gpuagg_sizing_value", "key=\"engine.workers\"", 1, V(sizing[GA_SIZED_ENGINE_WORKERS].value),
      "Partition workers in effect (engine.workers)."),
    S("sizing.engine.workers.auto", STAT_FLAG, "—", "gpuagg_sizing_auto", "key=\"engine.workers\"", 1, V(sizing[GA_SIZED_ENGINE_WORKERS].is_auto),
      "1 if engine.workers is auto (one per 4 CPUs, 1 to 16), 0 if the config set it."),
    S("http.connections_open", STAT_GAUGE, "connections", "gpuagg_connections_open", "listener=\"http\"", 1, V(http.connections),
      "HTTP connections served now: on a place (at most http.max_connections) or on one of the 8 places kept for the probes; not those waiting for a place (API.md \"Who is served\")."),
    S("http.requests", STAT_COUNTER, "requests", "gpuagg_http_requests_total", NULL, 1, V(http.requests),
      "HTTP requests answered, whatever the status."),
    S("http.errors_4xx", STAT_COUNTER, "requests", "gpuagg_http_errors_total", "status_class=\"4xx\"", 1, V(http.errors_4xx),
      "Requests answered with a 4xx status (bad input, unknown ids, 401, 413; a request target refused before routing: 400, 414)."),
    S("http.errors_5xx", STAT_COUNTER, "requests", "gpuagg_http_errors_total", "status_class=\"5xx\"", 1, V(http.errors_5xx),
      "Requests answered with a 5xx status (PostgreSQL unreachable: 503; a database error: 500; a request other than a probe on a probe's place: 503)."),
    S("http.too_big", STAT_COUNTER, "requests", "gpuagg_http_too_big_total", NULL, 1, V(http.too_big),
      "Request bodies over http.max_body_bytes: 413 when Content-Length said so, else the connection closed."),
    S("http.unauthorized", STAT_COUNTER, "requests", "gpuagg_http_unauthorized_total", NULL, 1, V(http.unauthorized),
      "Requests without the credentials http.auth asks for (401)."),
    S("http.header_timeouts", STAT_COUNTER, "connections", "gpuagg_http_timeouts_total", "reason=\"header\"", 1, V(http.header_timeouts),
      "Served connections shut because their request line and headers were not whole within http.header_timeout_s of being accepted or of their previous answer (a client trickling its headers, or idle on keep-alive)."),
    S("http.probe_timeouts", STAT_COUNTER, "connections", "gpuagg_http_timeouts_total", "reason=\"probe\"", 1, V(http.probe_timeouts),
      "Connections on the places held for /healthz, /readyz and /metrics shut after their hold (3 s)."),
    S("http.wait_timeouts", STAT_COUNTER, "connections", "gpuagg_http_timeouts_total", "reason=\"wait\"", 1, V(http.wait_timeouts),
      "Connections that waited 1 s for a place with a partial request and were closed."),
    S("http.wait_evicted", STAT_COUNTER, "connections", "gpuagg_http_wait_evicted_total", NULL, 1, V(http.wait_evicted),
      "Waiting connections closed to make room for a newer one (at most 256 wait)."),
    S("http.refused_full", STAT_COUNTER, "requests", "gpuagg_http_refused_total", "reason=\"full\"", 1, V(http.refused_full),
      "Whole requests answered 503 (Retry-After: 1) because no place opened within 1 s (http.max_connections taken)."),
    S("http.refused_peer", STAT_COUNTER, "requests", "gpuagg_http_refused_total", "reason=\"peer\"", 1, V(http.refused_peer),
      "Whole requests answered 503 because their address held its http.max_connections_per_peer places."),
    S("http.keystone.validations", STAT_COUNTER, "requests", "gpuagg_http_keystone_validations_total", NULL, 1, V(http.keystone.validations),
      "Token validations Keystone answered (GET /v3/auth/tokens, http.auth: keystone): valid or not; each is a token that was not in the cache (API.md \"Keystone\")."),
    S("http.keystone.cache_hits", STAT_COUNTER, "requests", "gpuagg_http_keystone_cache_hits_total", NULL, 1, V(http.keystone.cache_hits),
      "Requests whose token was answered from the cache (accepted or refused) without asking Keystone."),
    S("http.keystone.rejected", STAT_COUNTER, "requests", "gpuagg_http_keystone_rejected_total", NULL, 1, V(http.keystone.rejected),
      "Requests refused with 401 in keystone mode: no X-Auth-Token, a malformed one, or one Keystone (or the cache of its answers) says is unknown, expired or revoked."),
    S("http.keystone.errors", STAT_COUNTER, "requests", "gpuagg_http_keystone_errors_total", NULL, 1, V(http.keystone.errors),
      "Requests answered 503 because Keystone could not say: unreachable or past http.keystone.timeout_ms, an unexpected answer, the service user refused, or http.keystone.max_validations busy for timeout_ms."),
    S("http.keystone.evictions", STAT_COUNTER, "tokens", "gpuagg_http_keystone_evictions_total", NULL, 1, V(http.keystone.evictions),
      "Cached tokens, not yet expired, dropped to keep the cache at http.keystone.cache_entries (the oldest first)."),
    S("http.keystone.service_tokens", STAT_COUNTER, "tokens", "gpuagg_http_keystone_service_tokens_total", NULL, 1, V(http.keystone.service_tokens),
      "Service tokens obtained for the service user (POST /v3/auth/tokens): the first, each renewal, and a new one when Keystone refused the one held."),
    S("http.keystone.cached", STAT_GAUGE, "tokens", "gpuagg_http_keystone_cached", NULL, 1, V(http.keystone.cached),
      "Tokens in the cache now, accepted and refused (at most http.keystone.cache_entries; expired entries leave when looked up or overwritten)."),
    H("http.request_latency", "gpuagg_http_request_duration_seconds", &latency_http,
      "HTTP requests routed to a handler (the API, /metrics and the probes): time from the request read whole (headers and body) to its response built."),
    S("http.request_latency.count", STAT_COUNTER, "requests", NULL, NULL, 1, Q(request_latency, COUNT),
      "Observations of the histogram gpuagg_http_request_duration_seconds (its _count)."),
    S("http.request_latency.p50_us", STAT_GAUGE, "µs", NULL, NULL, 1, Q(request_latency, P50_US),
      "Upper bound of the histogram bucket holding the median since the start; 0 before the first."),
    S("http.request_latency.p99_us", STAT_GAUGE, "µs", NULL, NULL, 1, Q(request_latency, P99_US),
      "Upper bound of the histogram bucket holding the 99th percentile since the start; 0 before the first."),
    S("resources.samples_seen", STAT_COUNTER, "samples", "gpuagg_resources_samples_seen_total", NULL, 1, V(res.seen),
      "Ceilometer samples shown to the resource recorder."),
    S("resources.recorded", STAT_COUNTER, "rows", "gpuagg_resources_recorded_total", NULL, 1, V(res.recorded),
      "Resource updates written to PostgreSQL (new resources, new metrics of a resource, changed attributes)."),
    S("resources.dropped", STAT_COUNTER, "samples", "gpuagg_resources_dropped_total", NULL, 1, V(res.dropped),
      "Resource updates dropped because the recorder's queue (4096) was full; the next sample of the resource tries again."),
    S("resources.errors", STAT_COUNTER, "events", "gpuagg_resources_errors_total", NULL, 1, V(res.errors),
      "Samples whose resource id Gnocchi would refuse (a '/', over 255 bytes) and failed writes (retried every second while PostgreSQL is unreachable)."),
    S("jobs.submitted", STAT_COUNTER, "jobs", "gpuagg_jobs_submitted_total", NULL, 1, V(jobs.submitted),
      "Jobs queued (given an id) by job.submit."),
    S("jobs.rejected", STAT_COUNTER, "requests", "gpuagg_jobs_rejected_total", NULL, 1, V(jobs.rejected),
      "Submits the job manager refused: an unknown kind, parameters or input the kind refused (EBADARG), a full queue (EBUSY), the manager stopping."),
    S("jobs.queued", STAT_GAUGE, "jobs", "gpuagg_jobs_queued", NULL, 1, V(jobs.queued),
      "Jobs waiting for a worker."),
    S("jobs.running", STAT_GAUGE, "jobs", "gpuagg_jobs_running", NULL, 1, V(jobs.running),
      "Jobs running on a worker."),
    S("jobs.done", STAT_COUNTER, "jobs", "gpuagg_jobs_finished_total", "outcome=\"done\"", 1, V(jobs.done),
      "Jobs that finished with a result."),
    S("jobs.failed", STAT_COUNTER, "jobs", "gpuagg_jobs_finished_total", "outcome=\"failed\"", 1, V(jobs.failed),
      "Jobs that ended with an error (not a cancel)."),
    S("jobs.cancelled", STAT_COUNTER, "jobs", "gpuagg_jobs_finished_total", "outcome=\"cancelled\"", 1, V(jobs.cancelled),
      "Queued jobs cancelled (job.cancel, the drain) and running jobs that stopped after a cancel (or whose kind returned ECANCELED)."),
    S("jobs.expired", STAT_COUNTER, "jobs", "gpuagg_jobs_expired_total", NULL, 1, V(jobs.expired),
      "Finished jobs forgotten jobs.result_ttl_s after they ended."),
    S("jobs.evicted", STAT_COUNTER, "jobs", "gpuagg_jobs_evicted_total", NULL, 1, V(jobs.evicted),
      "Finished jobs dropped (status and result) before jobs.result_ttl_s because the results kept would pass jobs.results_max_bytes; the ones that finished first go first."),
    S("jobs.results_bytes", STAT_GAUGE, "bytes", "gpuagg_jobs_results_bytes", NULL, 1, V(jobs.results_bytes),
      "Bytes of the finished jobs' results kept (at most jobs.results_max_bytes)."),
};
const size_t stat_table_n = sizeof stat_table / sizeof stat_table[0];

const struct stat_family stat_table_families[] = {
    { "gpuagg_connections_total", "Connections accepted, by listener (control, stream, ceilometer_tcp)." },
    { "gpuagg_connections_open", "Connections open now, by listener (control, stream, ceilometer_tcp, http)." },
    { "gpuagg_connections_refused_total",
      "Connections refused at accept, by listener and the limit that refused them." },
    { "gpuagg_received_bytes_total", "Bytes read from ingest connections, by listener." },
    { "gpuagg_received_frames_total",
      "Frames (stream batches and hellos, Ceilometer TCP samples, UDP datagrams) received, by listener." },
    { "gpuagg_ingest_points_accepted_total",
      "Points accepted by ingest and handed to the journal, by listener (stream: acked)." },
    { "gpuagg_ingest_timeouts_total", "Stream ingest connections closed for being idle or slow, by reason." },
    { "gpuagg_udp_rejected_total", "Ceilometer UDP datagrams rejected, by reason (the first failing check)." },
    { "gpuagg_ceilometer_tcp_rejected_total", "Ceilometer TCP samples rejected, by reason (the first failing check)." },
    { "gpuagg_ceilometer_tcp_bad_frames_total",
      "Ceilometer TCP connections closed for a bad frame, by reason." },
    { "gpuagg_engine_late_points_total",
      "Points the engine stored as late points instead of aggregating them, by reason." },
    { "gpuagg_sizing_value", "The value in effect of each config key sized by the machine (key)." },
    { "gpuagg_sizing_auto", "1 if the config key (key) is auto, 0 if the config set it." },
    { "gpuagg_http_errors_total", "HTTP requests answered with an error status, by status class." },
    { "gpuagg_http_timeouts_total", "HTTP connections shut on a timeout, by reason (header, probe, wait)." },
    { "gpuagg_http_refused_total", "HTTP requests answered 503 for want of a place, by reason (full, peer)." },
    { "gpuagg_jobs_finished_total", "Jobs ended, by outcome (done, failed, cancelled)." },
};
const size_t stat_table_nfamilies = sizeof stat_table_families / sizeof stat_table_families[0];

const struct stat_def *stat_table_find(const char *name, size_t len)
{
    for (size_t i = 0; i < stat_table_n; i++)
        if (strlen(stat_table[i].name) == len && memcmp(stat_table[i].name, name, len) == 0)
            return &stat_table[i];
    return NULL;
}

const char *stat_table_family_help(const char *prom)
{
    for (size_t i = 0; i < stat_table_nfamilies; i++)
        if (strcmp(stat_table_families[i].prom, prom) == 0)
            return stat_table_families[i].help;
    return NULL;
}

/* The slot of listener counter name ("<key>.<name>" or, of a family,
 * "<key>.<name>.<sub>", as listeners.c names them), or NULL. */
static const uint64_t *listener_slot(const struct ga_ingest_stats *st, const char *name)
{
    for (int i = 0; i < INGEST_MAX_LISTENERS && listeners[i]; i++) {
        const struct listener_kind *k = listeners[i];
        size_t kl = strlen(k->key);
        if (strncmp(name, k->key, kl) != 0 || name[kl] != '.')
            continue;
        const char *rest = name + kl + 1;
        for (const struct listener_counter *ct = k->counters; ct && ct->name; ct++) {
            size_t cl = strlen(ct->name);
            if (strncmp(rest, ct->name, cl) != 0)
                continue;
            if (!ct->n && rest[cl] == '\0')
                return &st->listener[i][ct->slot];
            for (int j = ct->first; ct->n && rest[cl] == '.' && j < ct->n; j++)
                if (strcmp(rest + cl + 1, ct->sub(j)) == 0)
                    return &st->listener[i][ct->slot + j];
        }
    }
    return NULL;
}

uint64_t stat_value(const struct stat_def *d, const struct stat_snapshot *s)
{
    const void *f = (const char *)s + d->src.off;
    switch (d->src.kind) {
    case STAT_SRC_U64:
        return *(const uint64_t *)f;
    case STAT_SRC_I64:
        return (uint64_t)*(const int64_t *)f;
    case STAT_SRC_INT:
        return (uint64_t)*(const int *)f;
    case STAT_SRC_DOUBLE:
        return (uint64_t)*(const double *)f;
    case STAT_SRC_NS_MS:
        return *(const uint64_t *)f / 1000000;
    case STAT_SRC_NONZERO:
        return *(const int *)f != 0;
    case STAT_SRC_COUNT:
        return ((const struct histo_snap *)f)->count;
    case STAT_SRC_P50_US:
        return (uint64_t)histo_quantile_bound_ns(f, 0.5) / 1000;
    case STAT_SRC_P99_US:
        return (uint64_t)histo_quantile_bound_ns(f, 0.99) / 1000;
    case STAT_SRC_LISTENER: {
        const uint64_t *v = listener_slot(&s->in, d->name);
        return v ? *v : 0;
    }
    case STAT_SRC_GET:
        return d->src.get(s);
    case STAT_SRC_NONE:
        break;
    }
    return 0;
}

double stat_value_double(const struct stat_def *d, const struct stat_snapshot *s)
{
    return *(const double *)((const char *)s + d->src.off);
}

const char *stat_kind_name(enum stat_kind k)
{
    static const char *const names[] = { "counter", "gauge", "flag", "histogram" };
    return k <= STAT_HISTOGRAM ? names[k] : "?";
}
