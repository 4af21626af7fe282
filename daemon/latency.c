/* latency.c — the daemon's latency histograms and their bucket bounds
 * (see latency.h; documented in docs/COUNTERS.md, "Prometheus"). */
#include "daemon/latency.h"

#define MS 1000000LL
#define S 1000000000LL

/* fdatasync dominates: sub-millisecond on NVMe, tens of ms on disks */
static const int64_t ack_bounds[] = {
    MS / 2, 1 * MS, 2 * MS + MS / 2, 5 * MS, 10 * MS, 25 * MS, 50 * MS, 100 * MS,
    250 * MS, 500 * MS, 1 * S, 2 * S + S / 2, 5 * S, 10 * S,
};
/* storage.flush_interval_ms (1 s by default) and the engine's feed */
static const int64_t commit_bounds[] = {
    10 * MS, 50 * MS, 100 * MS, 250 * MS, 500 * MS, 1 * S, 2 * S + S / 2, 5 * S,
    10 * S, 30 * S, 60 * S, 120 * S, 300 * S,
};
static const int64_t http_bounds[] = {
    1 * MS, 2 * MS + MS / 2, 5 * MS, 10 * MS, 25 * MS, 50 * MS, 100 * MS, 250 * MS,
    500 * MS, 1 * S, 2 * S + S / 2, 5 * S, 10 * S, 30 * S,
};

#define N(a) ((int)(sizeof a / sizeof a[0]))

struct histo latency_ack = { .bounds_ns = ack_bounds, .nbounds = N(ack_bounds) };
struct histo latency_commit = { .bounds_ns = commit_bounds, .nbounds = N(commit_bounds) };
struct histo latency_http = { .bounds_ns = http_bounds, .nbounds = N(http_bounds) };

_Static_assert(sizeof ack_bounds / sizeof ack_bounds[0] <= HISTO_MAX, "ack bounds");
_Static_assert(sizeof commit_bounds / sizeof commit_bounds[0] <= HISTO_MAX, "commit bounds");
_Static_assert(sizeof http_bounds / sizeof http_bounds[0] <= HISTO_MAX, "http bounds");
