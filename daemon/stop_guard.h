/* stop_guard.h — the hard bound on a stop.
 *
 * SIGTERM (or the shutdown op) drains in stages: ingest answers the acks it
 * owes, the pipeline fsyncs what it accepted, the partition workers save
 * their windows and the writers commit, then the listeners and the storage
 * threads close.  Each stage waits within storage.stop_timeout_ms of the
 * signal, but some calls cannot be interrupted (a libpq connect, a journal
 * replay in progress, a GPU kernel).  The guard is a thread that, if the
 * process is still there STOP_GUARD_GRACE_MS after that, logs the stage it
 * is stuck in and ends the process with exit status 1.  Nothing
 * acknowledged is lost by that: what was not committed is in the journal
 * and is replayed at the next start, as after a kill -9 (ARCHITECTURE.md
 * "Why nothing acknowledged is lost").
 *
 * So a stop always ends within storage.stop_timeout_ms + STOP_GUARD_GRACE_MS
 * of the moment the loop handles the signal. */
#ifndef GA_STOP_GUARD_H
#define GA_STOP_GUARD_H

#include <stdint.h>

/* What the guard adds to storage.stop_timeout_ms: the stages' own
 * deadlines are that timeout; this is for the steps after them (threads
 * noticing the deadline, a connect attempt in progress, closing). */
#define STOP_GUARD_GRACE_MS 5000

struct stop_guard;

/* Start the guard: if stop_guard_end has not been called bound_ms from
 * now, it logs event=stop_deadline_exceeded with the current stage and
 * calls _exit(1).  Returns 0 and *out, or GA_ENOMEM / -errno (the stop
 * then goes on unguarded). */
int stop_guard_start(struct stop_guard **out, int bound_ms);

/* Name the stage now running (a string literal: the guard keeps the
 * pointer).  Any thread; NULL g: no-op. */
void stop_guard_stage(struct stop_guard *g, const char *stage);

/* The milliseconds since stop_guard_start; 0 for NULL g. */
int64_t stop_guard_elapsed_ms(const struct stop_guard *g);

/* The stop finished: stop the thread and free g.  NULL: no-op. */
void stop_guard_end(struct stop_guard *g);

#endif
