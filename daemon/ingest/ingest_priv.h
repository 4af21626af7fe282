/* ingest_priv.h — the ingest core's state (ingest.c), shared with the
 * listeners (listener.h).  Loop thread only. */
#ifndef GA_INGEST_PRIV_H
#define GA_INGEST_PRIV_H

#include "daemon/ingest/ingest.h"
#include "daemon/ingest/listener.h"
#include "daemon/pipeline.h"
#include "proto/ingest_proto.h"

struct ingest_conn;

struct ga_ingest {
    struct ga_daemon *d;
    struct ga_pipeline *pl;
    uv_loop_t *loop;
    void *ls[INGEST_MAX_LISTENERS];     /* each started listener's state, by row */
    int nls;
    uv_timer_t sweep;
    struct ingest_conn *conns;
    struct ing_limits lim;
    size_t max_inflight;
    int paused;                        /* global backpressure */
    int stopping;
    void (*stop_done)(void *ctx);
    void *stop_ctx;
    int64_t stop_deadline_ns;
    int open_handles;                  /* server handles not yet closed */
    struct ga_ingest_stats st;
};

/* The decode limits of an item arriving now: g->lim with the daemon's
 * clock and the running config's limits.max_future_s (loop thread). */
struct ing_limits ingest_item_limits(const struct ga_ingest *g);
/* 1 while the pipeline is too far behind to take more input. */
int ingest_overloaded(struct ga_ingest *g);
/* Ceilometer samples gathered as [u32 len][body]... (ingest_ceilo.c): an
 * item owning buf whose decoder checks and decodes them as Ceilometer
 * samples (listen.telemetry_secret; the HTTP API's resource recorder sees
 * each accepted one).  NULL when out of memory (buf stays the caller's). */
struct pipeline_item *ingest_ceilo_item(struct ga_ingest *g, uint8_t *buf, size_t len, uint32_t n);
uint32_t ingest_ceilo_samples(const struct pipeline_item *it);
/* Add a decoded item's rejections to rejected[r], r a ceilo_reject reason
 * (1 to CEILO_NREASONS - 1). */
void ingest_ceilo_count_rejects(const struct pipeline_item *it, uint64_t *rejected);
/* A stream listener's read buffer for libuv's alloc callback: when less
 * than chunk is free, grow *b (doubling from chunk) up to max bytes; *out
 * is the free space after len (empty when max is reached: the frame is too
 * big and the reader says so). */
void ingest_read_buf(uint8_t **b, size_t *cap, size_t len, size_t chunk, size_t max, uv_buf_t *out);
/* Check whether a stopping ingest has finished (closes and calls done). */
void ingest_check_stopped(struct ga_ingest *g);

#endif
