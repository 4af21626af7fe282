/* pg_members.h — cluster membership in PostgreSQL (docs/CLUSTER.md).
 *
 * Every daemon of a cluster upserts its row of `cluster_members` every
 * cluster.heartbeat_ms (heartbeat = the database's now(), so one clock
 * judges every member) with the partitions it owns at that moment; a member
 * whose heartbeat is older than cluster.member_timeout_ms is dead.  The live
 * members, sorted by name, split the partitions: member i of n owns the
 * partitions p with p % n == i (pgm_assign).  A daemon owning a partition
 * still takes its advisory lock on the writer session that commits it
 * (storage/pg_writers.h): membership only says who should; the locks
 * decide who can.
 *
 * Not thread-safe: one thread (the daemon's cluster thread) owns a pgm. */
#ifndef GA_PG_MEMBERS_H
#define GA_PG_MEMBERS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/ga_partition.h"

#define PGM_MAX_MEMBERS 64

struct pgm_member {
    char name[64];
    char host[64];
    int pid;
    int live;                         /* heartbeat within the timeout */
    int self;
    double heartbeat_age_s;
    uint64_t owned;                   /* as it reported it */
    uint64_t stream_seq;              /* the stream's last sequence it has seen */
};

struct pgm_view {
    int nmembers;
    struct pgm_member members[PGM_MAX_MEMBERS];   /* sorted by name */
    int nlive;
    int self_index;                   /* among the live members, -1 if not live */
    uint64_t window_lsn[GA_PARTITIONS];           /* partitions: positions */
    uint64_t committed_lsn[GA_PARTITIONS];
};

struct pgm;

/* name: this member; conninfo copied.  Returns 0, GA_ENOMEM. */
int pgm_open(struct pgm **out, const char *conninfo, const char *name);
/* Delete this member's row (graceful leave), close, free.  NULL: no-op. */
void pgm_close(struct pgm *m, int leave);

/* Connect if needed, upsert this member's heartbeat with owned and
 * stream_seq, then read every member and the partitions' positions into
 * *v.  Returns 0, or GA_EIO / GA_EDB with err (the connection is dropped
 * and made again next time). */
int pgm_heartbeat(struct pgm *m, uint64_t owned, uint64_t stream_seq, int timeout_ms,
                  struct pgm_view *v, char *err, size_t errlen);

/* The partitions live member index i of n owns: p % n == i. */
uint64_t pgm_assign(int i, int n);

#endif
