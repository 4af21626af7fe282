/* load.h — gpuagg-load, the ingest load generator (docs/gpuagg-load.1).
 *
 * One thread drives N non-blocking connections with poll(2): each speaks
 * ingest protocol v1 (proto/INGEST.md), keeps up to --inflight batches
 * unacknowledged, and matches acks to batches by seq.  Modules:
 *   main.c         options, usage, exit status
 *   load_gen.c     seeded values and timestamps, batch encoding
 *   load_conn.c    connect, hello, writing frames, reading acks and errors
 *   load_run.c     the poll loop: rate, stop conditions, drain
 *   load_report.c  latency histogram, table / JSON report, record files
 * Everything is single-threaded; no function here is thread-safe. */
#ifndef GA_LOAD_H
#define GA_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <msgpack.h>

#include "proto/ingest_proto.h"

enum load_form { LOAD_COLUMNAR, LOAD_FRIENDLY };

struct load_opts {
    const char *connect;          /* Unix socket path (has a '/') or host:port */
    uint32_t nconn;
    enum load_form form;
    int use_index;                /* columnar: "index" instead of "counts" */
    enum ing_ts_form ts_form;     /* friendly: how timestamps are written */
    uint32_t batch;               /* points per batch */
    uint32_t metrics;             /* metrics in all, spread over connections */
    uint32_t ppm;                 /* consecutive points of one metric in a batch */
    double rate;                  /* target points/s over all connections; 0 = max */
    double duration_s;            /* stop sending after this; 0 = no limit */
    uint64_t points;              /* stop after this many points; 0 = no limit */
    uint32_t inflight;            /* unacked batches per connection */
    uint64_t seed;
    int64_t step_ns;              /* timestamp step per metric */
    int64_t start_ns;             /* first timestamp of every metric */
    int realtime;                 /* send no point before its timestamp's offset from
                                     start_ns has passed on the clock since the start */
    double late;                  /* fraction of points stamped in the past */
    uint32_t late_steps;          /* how far back a late point goes, in steps */
    const char *token;            /* hello token, NULL = none */
    const char *prefix;           /* metric names: <prefix><index> */
    const char *record;           /* file of acknowledged points, NULL = none */
    const char *unacked;          /* file of points sent but never acked */
    int json;
    double drain_s;               /* wait this long for the last acks */
    double connect_timeout_s;
};

/* Per-run totals, filled by the loop, printed by load_report. */
struct load_totals {
    uint64_t points_sent, batches_sent, bytes_sent;
    uint64_t points_acked, batches_acked, points_rejected;
    int64_t t_start_ns, t_send_end_ns, t_last_ack_ns, t_end_ns;
    int errors;                   /* connections that failed */
};

/* ---- load_gen.c ---- */

/* One batch: kept from generation until its ack (or the end). */
struct load_batch {
    uint64_t seq;
    int64_t sent_ns;              /* when its first byte was written */
    size_t n;                     /* points */
    uint32_t ngroups;             /* runs of points of one metric */
    uint32_t *gmetric, *gcount;   /* per run: metric number, points */
    int64_t *ts;                  /* n timestamps as the daemon decodes them */
    double *value;
    msgpack_sbuffer frame;        /* the encoded message */
    size_t off;                   /* bytes of frame written */
    size_t cap_points, cap_groups;
};

struct load_gen {
    uint64_t rng;
    uint32_t *metrics;            /* the metric numbers this connection owns */
    uint32_t nmetrics, cursor;    /* next metric to fill */
    int64_t *next_ts;             /* per owned metric */
    /* encoding scratch */
    const char **names;
    uint32_t *index;
    size_t cap_names, cap_index;
};

/* Metric names "<prefix><i>" for i < o->metrics; 0 or -1 (out of memory). */
int load_names_init(const struct load_opts *o);
const char *load_name(uint32_t metric);
void load_names_free(void);

/* Set up connection conn's generator: its metrics are those i with
 * i % nconn == conn.  Returns 0 or -1 (out of memory). */
int load_gen_init(struct load_gen *g, const struct load_opts *o, uint32_t conn);
void load_gen_free(struct load_gen *g);
/* Fill b with n points (its buffers grow as needed) and encode it with seq.
 * Returns 0 or -1 (out of memory). */
int load_gen_batch(struct load_gen *g, const struct load_opts *o, struct load_batch *b,
                   uint64_t seq, size_t n);
void load_batch_free(struct load_batch *b);
/* The newest regular timestamp (late points aside) that the next batch of n
 * points from g would carry, without drawing it: what --realtime waits for. */
int64_t load_gen_newest_ts(const struct load_gen *g, const struct load_opts *o, size_t n);

/* ---- load_conn.c ---- */

struct load_conn {
    uint32_t id;
    int fd;
    int failed, closed;
    uint8_t *in;                  /* received bytes not yet framed */
    size_t inlen, incap;
    struct load_batch *slots;     /* ring of in-flight batches, seq order */
    uint32_t nslots, head, count;
    uint64_t next_seq;
    uint64_t max_inflight;        /* from the server's hello */
    struct load_gen gen;
};

/* Connect to o->connect, send the hello, wait for the server's.  On
 * failure prints why on stderr and returns -1. */
int load_conn_open(struct load_conn *c, const struct load_opts *o, uint32_t id);
/* Write what is pending of the newest batch.  1 when all is out, 0 when
 * the socket is full, -1 on error (printed, c->failed set). */
int load_conn_flush(struct load_conn *c);
/* Read what arrived and handle every complete ack: cb(ctx, c, batch, ack)
 * for each, before the batch's slot is reused.  0, or -1 on error or EOF
 * (printed, c->failed / c->closed set). */
int load_conn_read(struct load_conn *c, void (*cb)(void *ctx, struct load_conn *c,
                                                   struct load_batch *b, const struct ing_ack *a),
                   void *ctx);
void load_conn_close(struct load_conn *c);

/* ---- load_report.c ---- */

/* Latency histogram: log-linear buckets (1/64 relative precision), exact max. */
struct load_hist {
    uint64_t count, max;
    uint64_t b[64 * 64];
};
void load_hist_add(struct load_hist *h, uint64_t ns);
/* The q-quantile (0..1) in ns, the upper edge of its bucket (max at 1). */
uint64_t load_hist_quantile(const struct load_hist *h, double q);

/* Write the points of b not listed in a's rejections (a NULL: all) as
 * "metric\tts_ns\tvalue\n" lines.  Returns 0 or -1 (write error). */
int load_record_batch(FILE *f, const struct load_batch *b, const struct ing_ack *a);
/* Print the report (table on stdout, or one JSON object with o->json). */
void load_report(const struct load_opts *o, const struct load_totals *t, const struct load_hist *h);

/* ---- load_run.c ---- */

/* Run the load; returns the exit status (0 ok, 1 failures). */
int load_run(const struct load_opts *o);

/* Monotonic clock, ns. */
int64_t load_now_ns(void);

#endif
