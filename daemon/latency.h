/* latency.h — the daemon's three latency histograms (proto/base/histo.h),
 * observed lock-free from whichever thread sees the event end, shown by
 * `gpuaggctl stats` (a few summary names) and /metrics (the buckets),
 * through the counter table (daemon/stat_table.c).  Their bounds are in
 * docs/COUNTERS.md, "Prometheus".
 *
 *   latency_ack     stream ingest: a batch's frame taken in from the
 *                   connection → its ack queued on it (daemon/ingest/ingest.c);
 *   latency_commit  a journal record acked (made durable) → the
 *                   transaction that commits it to PostgreSQL, once per
 *                   advance of a partition worker's committed position,
 *                   for the oldest record it newly covers
 *                   (daemon/part_worker.c);
 *   latency_http    an HTTP request routed to a handler: read whole
 *                   (headers and body) → its response built
 *                   (daemon/http/http_server.c); refusals before routing
 *                   (admission, bad target, body too big) are not timed.
 *
 * They live for the process (counters start from 0 at each start, as every
 * other counter). */
#ifndef GA_LATENCY_H
#define GA_LATENCY_H

#include "proto/base/histo.h"

extern struct histo latency_ack;
extern struct histo latency_commit;
extern struct histo latency_http;

#endif
