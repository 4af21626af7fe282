/* cluster.h — cluster mode's ownership: which partitions this daemon works
 * on now (docs/CLUSTER.md).
 *
 * A thread heartbeats the member row in PostgreSQL every
 * cluster.heartbeat_ms (storage/pg_members.h) and computes the partitions
 * this daemon should own: its share among the live members.  When that set
 * changes, or a writer was fenced (its session, and so its locks, lost),
 * the loop thread replaces the engine worker: the old one stops (window
 * sets of its partitions committed, locks released with its sessions) and
 * a new one starts on the new set (engine_worker_start_cluster), both on the libuv
 * pool so the loop keeps serving producers.  While the heartbeat cannot
 * reach PostgreSQL for longer than cluster.member_timeout_ms, the daemon
 * owns nothing (the others consider it dead and take its partitions).
 *
 * Threads: ga_cluster_start/stop/pack_status and the swap run on the loop
 * thread; the heartbeat thread talks to it through a mutex and a uv_async. */
#ifndef GA_CLUSTER_H
#define GA_CLUSTER_H

#include <msgpack.h>
#include <stdint.h>

struct ga_daemon;
struct ga_cluster;
struct js_log;
struct ga_pipeline;

/* Check what can be checked now (the member name is free; the database
 * and the stream belong together: docs/CLUSTER.md "Identity"), then start
 * the heartbeat thread, which joins once those checks passed and stops the
 * daemon (exit 1, cluster_refused) if they fail later.  d->worker is
 * replaced by the cluster from now on.  Returns 0, or GA_EEXIST (the name
 * is taken), GA_ECONFIG (database and stream do not belong together),
 * GA_ENOMEM, with err. */
int ga_cluster_start(struct ga_cluster **out, struct ga_daemon *d, struct js_log *jsl,
                     struct ga_pipeline *pl, char *err, size_t errlen);
/* A worker swap is running on the pool (the drain waits for it). */
int ga_cluster_busy(struct ga_cluster *c);
/* Stop swapping (the drain takes over the worker): loop thread. */
void ga_cluster_freeze(struct ga_cluster *c);
/* Stop the thread; leave: delete the member row (graceful), so that the
 * others rebalance at once.  Frees c; NULL: no-op. */
void ga_cluster_stop(struct ga_cluster *c, int leave);
/* The "cluster" object of the status op: member, owned, members, stream,
 * partitions (owner, positions, lag). */
void ga_cluster_pack_status(struct ga_cluster *c, msgpack_packer *pk);

#endif
