/* pg_members.h — cluster membership in PostgreSQL (docs/CLUSTER.md).
 *
 * Every daemon of a cluster upserts its row of `cluster_members` every
 * cluster.heartbeat_ms (heartbeat = the database's now(), so one clock
 * judges every member) with the partitions it owns at that moment; a member
 * whose heartbeat is older than cluster.member_timeout_ms is dead.  The live
 * members split the partitions by rendezvous hashing (pg_members_assign).  A
 * daemon owning a partition still takes its advisory lock on the writer
 * session that commits it (storage/pg_writers.h): membership only says who
 * should; the locks decide who can.
 *
 * Not thread-safe: one thread (the daemon's cluster thread) owns a pg_members. */
#ifndef GA_PG_MEMBERS_H
#define GA_PG_MEMBERS_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/ga_partition.h"

#define PG_MEMBERS_MAX_MEMBERS 64

struct pg_members_member {
    char name[64];
    char host[64];
    int pid;
    int live;                         /* heartbeat within the timeout */
    int self;
    double heartbeat_age_s;
    uint64_t owned;                   /* as it reported it */
    uint64_t stream_seq;              /* the stream's last sequence it has seen */
};

struct pg_members_view {
    int nmembers;
    struct pg_members_member members[PG_MEMBERS_MAX_MEMBERS];   /* sorted by name */
    int nlive;
    int self_index;                   /* among the live members, -1 if not live */
    uint64_t window_lsn[GA_PARTITIONS];           /* partitions: positions */
    uint64_t committed_lsn[GA_PARTITIONS];
};

/* Advisory lock class (two-key form) of member names: key hashtext(name),
 * held by the membership session of the daemon of that name. */
#define PG_MEMBERS_NAME_LOCK_CLASS "745263747"

/* The database's side of the identity check (table cluster_identity). */
struct pg_members_identity {
    char database_id[64];             /* random, made by migration 11 */
    char stream[64];                  /* the stream its positions are of; "" = none yet */
    int64_t stream_created_ns;        /* that stream's creation time */
};

struct pg_members;

/* name: this member; conninfo copied.  Returns 0, GA_ENOMEM. */
int pg_members_open(struct pg_members **out, const char *conninfo, const char *name);
/* Delete this member's row (graceful leave; only when this pg_members held the
 * name), close, free.  NULL: no-op. */
void pg_members_close(struct pg_members *m, int leave);

/* Connect if not connected: migrations, the lock of the member name (held
 * for the session: a second daemon of the same name cannot have it), the
 * identity row.  Returns 0; GA_EEXIST when another session holds the name
 * (err names the holder as its member row tells); GA_EIO / GA_EDB with err
 * (connection dropped, made again next time). */
int pg_members_connect(struct pg_members *m, char *err, size_t errlen);
/* The identity read at the last connect; NULL while not connected. */
const struct pg_members_identity *pg_members_identity(const struct pg_members *m);
/* Record stream / created_ns as the stream of this database's positions if
 * none is recorded yet, then read the identity again (whoever recorded
 * first wins).  Returns 0 or GA_E* with err. */
int pg_members_claim_stream(struct pg_members *m, const char *stream, int64_t created_ns, char *err,
                     size_t errlen);

/* Connect if needed (pg_members_connect), upsert this member's heartbeat with
 * owned and stream_seq, then read every member and the partitions'
 * positions into *v.  Returns 0, or pg_members_connect's errors, or GA_EIO /
 * GA_EDB with err (the connection is dropped and made again next time). */
int pg_members_heartbeat(struct pg_members *m, uint64_t owned, uint64_t stream_seq, int timeout_ms,
                  struct pg_members_view *v, char *err, size_t errlen);

/* Which of the partitions in parts some other session holds the partition
 * lock of (storage/pg_txn.h), in c's database: *held.  A new owner waits
 * for its partitions to be free before its writers take them, so that no
 * writer holds some of its partitions' locks while it waits for the rest.
 * Returns 0, or GA_EDB / GA_EIO with err. */
int pg_members_parts_held(PGconn *c, uint64_t parts, uint64_t *held, char *err, size_t errlen);

/* Spread the partitions over the n live members names[0..n) (sorted by
 * name, as in a view): out[i] gets member i's partitions.  Rendezvous
 * hashing with bounded loads: the (member, partition) claims are taken in
 * the order of a hash of both, highest first, each member up to its quota
 * (64 / n, one more for the first 64 % n members), so the shares differ by
 * one partition at most, and a member joining or leaving moves few
 * partitions besides its own share (docs/CLUSTER.md).  A function of the
 * names only: every member computes the same split.  Returns 0, GA_EINVAL
 * (n out of 1..PG_MEMBERS_MAX_MEMBERS), GA_ENOMEM. */
int pg_members_assign(const char *const *names, int n, uint64_t *out);
/* This member's share in v (pg_members_assign over its live members); 0 when it
 * is not live itself. */
uint64_t pg_members_share(const struct pg_members_view *v);

#endif
