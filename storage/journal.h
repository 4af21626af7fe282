/* journal.h — the write-ahead journal of accepted batches (docs/JOURNAL.md).
 *
 * Records are opaque payloads addressed by LSN: the byte offset of the
 * record in the logical log, a u64 that only grows and is never reused.
 * The log lives in segment files "<20-digit start LSN>.wal" in one
 * directory; each record carries a CRC-32C, so a torn tail left by a crash
 * is found and cut at open, and damage anywhere else stops the open instead
 * of being replayed.
 *
 * The daemon's use:
 *   journal_open → journal_replay(checkpoint from PostgreSQL) → journal_commit_start →
 *   journal_append per accepted batch, ack when the commit callback's durable
 *   LSN reaches the batch's end → journal_release(checkpoint) after each
 *   storage transaction → journal_commit_stop → journal_close.
 *
 * Thread-safety: every function may be called from any thread at the same
 * time as the others, except journal_close (nothing else may run on j) and
 * journal_commit_stop (nothing else may run on that committer).  One internal
 * mutex guards the journal; fsync runs outside it. */
#ifndef GA_JOURNAL_H
#define GA_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#define JOURNAL_HDR_BYTES 24                    /* record header, see docs/JOURNAL.md */
#define JOURNAL_MAX_PAYLOAD (1u << 30)          /* larger appends fail with GA_ETOOBIG */
#define JOURNAL_MIN_SEGMENT_BYTES 4096

struct journal_opts {
    const char *dir;            /* journal.dir; created (0750) if missing */
    uint64_t segment_bytes;     /* roll to a new segment past this; >= JOURNAL_MIN_SEGMENT_BYTES */
    uint64_t max_bytes;         /* retained bytes cap (backpressure); >= 2 * segment_bytes */
    int repair;                 /* 1: cut the log at the first damaged record instead of refusing */
};

struct journal_stats {
    uint64_t first_lsn;         /* start of the oldest retained segment */
    uint64_t next_lsn;          /* LSN the next append gets */
    uint64_t durable_lsn;       /* everything below is fsynced */
    uint64_t released_lsn;      /* highest checkpoint passed to journal_release */
    uint64_t retained_bytes;    /* next_lsn - first_lsn: what max_bytes limits */
    uint64_t segments;          /* segment files */
    uint64_t appends;           /* records appended since open */
    uint64_t syncs;             /* fdatasync calls completed since open */
    uint64_t bytes_written;     /* bytes written to segment files since open */
    uint64_t torn_tails_cut;    /* torn tails cut at open (0 or 1) */
    uint64_t cut_bytes;         /* bytes cut at open (torn tail or repair) */
    uint64_t backpressure;      /* appends refused with GA_ENOSPC */
    uint64_t write_failures;    /* writes that found no space (the journal stalled) */
    int stalled_errno;          /* ENOSPC / EDQUOT / EFBIG while stalled; 0 when not */
    int failed;                 /* 1 after an error that cannot be retried (fsync) */
};

struct journal;

/* Open (creating if needed) the journal in o->dir: take an exclusive flock
 * on "<dir>/LOCK", validate every record of every segment, cut a torn tail
 * off the last segment (logged, counted).  Damage anywhere else — a bad
 * record before the end, a gap between segments — fails with GA_ECORRUPT
 * and err naming the file, offset and LSN, unless o->repair is set: then the
 * log is cut at the damage and the bytes dropped are logged and counted.
 * Returns 0 and *out (free with journal_close), or GA_EINVAL (bad options),
 * GA_EBUSY (another process holds the lock), GA_ECORRUPT, -errno; err gets
 * one line saying what was wrong.  o is copied. */
int journal_open(struct journal **out, const struct journal_opts *o, char *err, size_t errlen);

/* Write out and fsync what was appended, release the lock, free j.  Stop
 * any committer on j first.  NULL is a no-op. */
void journal_close(struct journal *j);

/* Append one record holding payload[0..len) (copied; len may be 0).  On
 * success *lsn (if not NULL) is the record's LSN and *end (if not NULL) the
 * LSN just past it: the record is durable once the durable LSN >= *end.
 * Returns 0; GA_ENOSPC when the retained bytes would pass max_bytes
 * (backpressure: retry after journal_release); GA_ETOOBIG when len is over
 * JOURNAL_MAX_PAYLOAD or the record alone is over max_bytes; GA_EAGAIN while
 * the journal is stalled — a write found its file system full (ENOSPC,
 * EDQUOT, EFBIG): nothing is taken until the records already buffered are
 * written, which every later append and sync tries again, and the stall
 * ends by itself once space returns; GA_EIO after an fsync or another
 * write error (the journal stays failed until reopened).
 * Never waits for fsync (it may write(2), and fsyncs once per segment roll). */
int journal_append(struct journal *j, const void *payload, size_t len, uint64_t *lsn, uint64_t *end);

/* Make everything appended so far durable (write + fdatasync).  Returns 0
 * and the durable LSN in *durable_lsn (if not NULL), GA_EAGAIN while
 * stalled (try again later), or GA_EIO (failed for good). */
int journal_sync(struct journal *j, uint64_t *durable_lsn);

/* When the record at lsn became durable (so could be acknowledged): the
 * monotonic clock (ga_now_mono_ns) after the sync that covered it, to
 * within 10 ms.  0 when unknown: durable before this process opened the
 * journal, not durable yet, or older than the last JOURNAL_DUR_RING syncs
 * (syncs less than 10 ms apart count as one).  Any thread. */
#define JOURNAL_DUR_RING 8192
int64_t journal_durable_at_ns(struct journal *j, uint64_t lsn);

/* Call records with lsn >= from, in LSN order, as cb(ctx, lsn, payload,
 * len); payload is valid only during the call.  cb returns 0 to go on, or
 * a negative code that stops the replay and is returned.  Returns 0,
 * GA_ERANGE when from is below first_lsn (records storage still needs were
 * released) or above next_lsn (the journal is behind the checkpoint),
 * GA_ECORRUPT if a record went bad since open, or -errno.  Records appended
 * while it runs may or may not be included. */
int journal_replay(struct journal *j, uint64_t from,
               int (*cb)(void *ctx, uint64_t lsn, const void *payload, size_t len), void *ctx);

/* Storage has durably committed every record below lsn (the checkpoint).
 * Deletes the segments that lie entirely below it; when it covers
 * everything (lsn >= next_lsn) the active segment too, after starting an
 * empty one named for the next LSN, so the directory always records where
 * numbering goes on.  lsn > next_lsn (the journal is behind the database,
 * e.g. its directory was lost) moves next_lsn up to lsn, so new records are
 * never hidden below the checkpoint.  Returns 0 or -errno (a deletion
 * failed: logged; the file is picked up again by the next open). */
int journal_release(struct journal *j, uint64_t lsn);

/* Snapshot of the counters. */
/* A snapshot of j's counters and positions; all zero when j is NULL (no
 * local journal: cluster mode). */
void journal_get_stats(struct journal *j, struct journal_stats *st);

/* Set fn(ctx) to be called after every successful append, from the
 * appending thread with the journal lock held: it must be quick and must
 * not call into j.  NULL removes it; once this returns the old hook is not
 * running and will not run again.  Used by the group committer. */
void journal_set_append_hook(struct journal *j, void (*fn)(void *ctx), void *ctx);

/* ---- group commit (storage/journal_commit.c) ---- */

struct journal_commit;

/* Start a thread that, while there are appended records not yet durable,
 * calls journal_sync at most once every interval_ms (journal.fsync_interval_ms,
 * 0..60000; 0 = as soon as data is there) (the first sync
 * after an idle spell starts at once) and then cb(ctx, durable_lsn, 0)
 * from that thread whenever the durable LSN grew (the daemon forwards it to
 * its loop with uv_async_send).  Durable LSNs passed to cb strictly
 * increase.  While the journal is stalled (GA_EAGAIN) the thread tries
 * again every 200 ms and calls cb(ctx, last durable LSN, GA_EAGAIN) at the
 * start of each stall.  If a sync fails for good, cb(ctx, last durable
 * LSN, GA_EIO) is called once and no more syncs are tried.  Returns 0 and *out, or GA_ENOMEM /
 * -errno, GA_EINVAL for a bad interval.  At most one committer per
 * journal; it replaces any append hook. */
int journal_commit_start(struct journal_commit **out, struct journal *j, int interval_ms,
                     void (*cb)(void *ctx, uint64_t durable_lsn, int err), void *ctx);

/* Stop the thread after a final sync (and cb), free c.  NULL is a no-op. */
void journal_commit_stop(struct journal_commit *c);

#endif
