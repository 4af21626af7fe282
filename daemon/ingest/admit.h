/* admit.h — the bound on live metrics (limits.max_metrics), enforced at
 * the ingest door.
 *
 * A set of the metric names the daemon serves: those PostgreSQL knows
 * (added when the engine loads) and those admitted since.  The decode
 * workers ask for every name of a batch before it is journaled: a known
 * name passes; a new one is admitted while the set holds fewer than the
 * limit, else refused — its points are rejected in the ack ("too many
 * metrics"), so they never reach the journal nor the engine, and every
 * known metric keeps being served.  Names admitted before the engine's
 * load finished count against the limit; the metrics the load adds are
 * served whatever the count.
 *
 * Thread-safety: every function may be called from any thread (one mutex). */
#ifndef GA_ADMIT_H
#define GA_ADMIT_H

#include <stddef.h>
#include <stdint.h>

#include "proto/ingest_proto.h"

struct ga_admit;

/* A set that admits up to max names.  0 and *out, or GA_ENOMEM. */
int ga_admit_open(struct ga_admit **out, uint64_t max);
void ga_admit_close(struct ga_admit *a);

/* Change the limit (config reload); names already admitted stay. */
void ga_admit_set_max(struct ga_admit *a, uint64_t max);

/* Add a name that exists (loaded from PostgreSQL), whatever the limit.
 * 0 or GA_ENOMEM. */
int ga_admit_add(struct ga_admit *a, const char *name, size_t len);

/* Check the names of b (decoded, before it is journaled): refused names'
 * points move to b's rejections, with the reason "too many metrics
 * (limits.max_metrics = N)", in point order; the names themselves leave b.
 * Returns the points refused (0: b unchanged), or GA_ENOMEM (b unchanged:
 * the caller fails the batch). */
long ga_admit_batch(struct ga_admit *a, struct ing_batch *b);

/* Names in the set; points refused since open. */
uint64_t ga_admit_count(struct ga_admit *a);
uint64_t ga_admit_refused(struct ga_admit *a);

#endif
