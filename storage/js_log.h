/* js_log.h — the replicated log of cluster mode: a NATS JetStream stream
 * (docs/CLUSTER.md).
 *
 * One stream (cluster.stream, R = cluster.replicas, file storage) with one
 * subject per partition of the metric space: "<stream>.p.<partition>"
 * (proto/ga_partition.h).  A message holds the points of one partition
 * encoded as a columnar points message (proto/PROTOCOL.md), the same
 * payload the local journal stores.  A message is addressed by its stream
 * sequence (1, 2, ...); in cluster mode the sequence plays the part of the
 * journal's LSN: a partition's positions in `partitions` (window_lsn,
 * committed_lsn) are "every message below this sequence".
 *
 * Publishing (js_log_publish) sends a group of messages asynchronously and
 * waits until JetStream acknowledged every one of them, which it does only
 * once the write is stored on a quorum of the stream's replicas.  A group
 * that is not fully acknowledged within publish_timeout_ms is sent again
 * with the same message ids (Nats-Msg-Id): JetStream drops the copies it
 * already stored (duplicate window, 2 minutes), so a retry never doubles a
 * point.
 *
 * Consuming (js_log_sub_*) is an ordered consumer on every partition subject
 * from a start sequence: messages arrive in stream order, without acks
 * (positions live in PostgreSQL); after a gap, a lost server or a lost
 * connection it is re-created from the next sequence expected.
 *
 * Thread-safety: js_log_publish from one thread at a time; a subscription
 * from one thread; js_log_get_stats from any thread. */
#ifndef GA_JS_LOG_H
#define GA_JS_LOG_H

#include <stddef.h>
#include <stdint.h>

struct js_log_opts {
    const char *urls;               /* comma-separated nats:// URLs */
    const char *stream;             /* stream name; subjects "<stream>.p.<n>" */
    int replicas;                   /* 1..5 */
    const char *credentials;        /* .creds file or NULL/"" */
    const char *token;              /* token or NULL/"" */
    const char *name;               /* connection name (the member) */
    int publish_timeout_ms;         /* a group not acknowledged by then is sent again */
    int64_t max_pending_bytes;      /* bytes of one publish group (the caller's bound) */
};

struct js_log_stats {
    int connected;                  /* 1 while the NATS connection is up */
    uint64_t published, publish_bytes, publish_groups, publish_retries;
    uint64_t last_acked_seq;        /* highest stream sequence acknowledged to us */
    uint64_t stream_last_seq;       /* the stream's last sequence, last seen */
    uint64_t consumed, consumer_resets;
    uint64_t async_errors;          /* errors the client library reported on its own
                                       (a subscription's slow consumer, ...) */
    char last_error[256];           /* "" when the last publish went through */
    char server[128];               /* URL of the server we are connected to */
};

struct js_log_msg {
    int partition;                  /* 0..GA_PARTITIONS-1 */
    const void *data;
    size_t len;
};

struct js_log;
struct js_log_sub;

/* Connect (the connection retries in the background when no server
 * answers yet: a cluster daemon starts while NATS is down).  The stream is
 * created or checked on first use.  Returns 0 and *out, GA_EINVAL,
 * GA_ENOMEM or GA_EIO with err saying why. */
int js_log_open(struct js_log **out, const struct js_log_opts *o, char *err, size_t errlen);
/* Close the connection, free j.  Subscriptions must be closed first. */
void js_log_close(struct js_log *j);

/* Publish msgs[0..n) and wait until JetStream stored every one of them,
 * retrying (same message ids) until stop(sctx) returns non-zero.  *last_seq
 * (if not NULL) gets the highest stream sequence of the group.  Returns 0,
 * GA_ESHUTDOWN (stop said so; some messages may be stored: never
 * acknowledged to the producer, so a resend is safe), GA_ETOOBIG (a
 * message over the servers' max_payload), GA_ENOMEM. */
int js_log_publish(struct js_log *j, const struct js_log_msg *msgs, size_t n, uint64_t *last_seq,
                int (*stop)(void *sctx), void *sctx);

/* An ordered consumer of every partition subject from stream sequence
 * from (>= 1).  Returns 0 and *out, or GA_E* with err. */
int js_log_sub_open(struct js_log_sub **out, struct js_log *j, uint64_t from, char *err, size_t errlen);
/* The next message, waiting up to timeout_ms.  Returns 1 with *seq, *part,
 * *data, *len set (data valid until the next call or close), 0 on timeout,
 * or GA_E* (the subscription is re-created on the next call).  Messages of
 * subjects that are not partition subjects are skipped. */
int js_log_sub_next(struct js_log_sub *s, uint64_t *seq, int *part, const void **data, size_t *len,
                 int timeout_ms);
/* The stream's last sequence as the consumer last saw it (0 = unknown). */
uint64_t js_log_sub_stream_last(struct js_log_sub *s);
void js_log_sub_close(struct js_log_sub *s);

void js_log_get_stats(struct js_log *j, struct js_log_stats *st);

struct js_log_stream_info {
    uint64_t last_seq;              /* the stream's last sequence */
    int64_t created_ns;             /* when it was created (JetStream's clock) */
    char description[256];          /* its description: "" when none */
    char leader[64];                /* the server leading it (its server_name); "" unknown */
};

/* The description the stream gets when this daemon creates it (the
 * database identity, docs/CLUSTER.md "Identity").  Any thread. */
void js_log_set_description(struct js_log *j, const char *desc);
/* Create the stream if it does not exist yet, then ask for its state (a
 * JetStream API request; blocks up to timeout_ms).  Returns 0 and *out,
 * GA_ECONFIG (another application's stream of that name), or GA_EIO (not
 * connected, no answer). */
int js_log_stream_info(struct js_log *j, struct js_log_stream_info *out, int timeout_ms);
/* Set the existing stream's description, its configuration otherwise
 * unchanged.  Returns 0 or GA_EIO (reason in the stats' last_error). */
int js_log_stream_describe(struct js_log *j, const char *desc, int timeout_ms);

#endif
