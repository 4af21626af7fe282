/* late_notice.h — what the ingest door knows of metrics whose points
 * arrive behind their windows, so that an ack can say so.
 *
 * An ack leaves once its batch is durable, before the engine has seen it:
 * the door cannot know the window of every metric.  This table holds the
 * window floor (the first timestamp the metric's window still takes,
 * ga_engine_window_floor) of the metrics the engine has set points aside
 * for as late (reason `window`): a partition worker posts a metric when a
 * late point is not explained by the floor already posted.  The decode
 * workers look up every point of a batch while the table is not empty and
 * list, in the ack's `late`, the points before their metric's posted floor
 * (proto/INGEST.md §3).  Such points are still accepted (durable, stored
 * in late_points); the notice only tells the producer.
 *
 * Bounds: GA_LATE_NOTICE_ENTRIES metrics (16 bytes each); a metric that
 * finds no free place among its 8 probes takes the place of the one at its
 * first probe.  Keyed by a 64-bit hash of the name: two names with the
 * same hash share an entry (the notice may then name a point late that is
 * not; at 2^16 entries and a 64-bit hash, about one chance in 2^48).
 * The floor a door reads may lag the engine's: it reports fewer late points
 * than the engine finds, never a point the floor it read would take.
 *
 * Thread-safety: post from any thread (one mutex among posters); lookups
 * lock-free from any thread. */
#ifndef GA_LATE_NOTICE_H
#define GA_LATE_NOTICE_H

#include <stddef.h>
#include <stdint.h>

#define GA_LATE_NOTICE_ENTRIES 65536

struct ga_late_notice;

/* An empty table.  0 and *out, or GA_ENOMEM. */
int ga_late_notice_open(struct ga_late_notice **out);
void ga_late_notice_close(struct ga_late_notice *n);

/* Metric name[0..len) takes no point before floor now. */
void ga_late_notice_post(struct ga_late_notice *n, const char *name, size_t len, int64_t floor);

/* 1 and *floor when name is in the table, else 0.  Cheap when empty. */
int ga_late_notice_floor(const struct ga_late_notice *n, const char *name, size_t len,
                         int64_t *floor);

/* Posts since open. */
uint64_t ga_late_notice_posted(const struct ga_late_notice *n);

#endif
