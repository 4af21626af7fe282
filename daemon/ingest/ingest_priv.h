/* ingest_priv.h — state shared by daemon/ingest/ingest.c (streams) and
 * daemon/ingest/ingest_udp.c (Ceilometer datagrams).  Loop thread only. */
#ifndef GA_INGEST_PRIV_H
#define GA_INGEST_PRIV_H

#include "daemon/ingest/ingest.h"
#include "daemon/ingest/pipeline.h"
#include "proto/ingest_proto.h"

struct ic_conn;

struct ga_ingest {
    struct ga_daemon *d;
    struct ga_pipeline *pl;
    uv_loop_t *loop;
    uv_pipe_t unix_srv;
    uv_tcp_t tcp_srv;
    int have_unix, have_tcp, tcp_port;
    uv_timer_t sweep;
    struct ic_conn *conns;
    struct ing_limits lim;
    size_t max_inflight;
    int paused;                        /* global backpressure */
    int stopping;
    void (*stop_done)(void *ctx);
    void *stop_ctx;
    int64_t stop_deadline_ns;
    int open_handles;                  /* server handles not yet closed */
    struct ga_ingest_stats st;
    /* UDP (ingest_udp.c) */
    struct ic_udp *udp;
    /* Ceilometer TCP (ingest_ceilo_tcp.c) */
    struct ic_ctcp *ctcp;
};

/* 1 while the pipeline is too far behind to take more input. */
int ic_overloaded(struct ga_ingest *g);
/* Decoded UDP items: the pump for the UDP listener's FIFO. */
int ic_udp_start(struct ga_ingest *g, const char *hostport, char *err, size_t errlen);
void ic_udp_pump(struct ga_ingest *g);
void ic_udp_stop(struct ga_ingest *g);
int ic_udp_idle(struct ga_ingest *g);
int ic_udp_port(const struct ga_ingest *g);
/* Ceilometer's tcp:// framing (ingest_ceilo_tcp.c): start the listener;
 * move decoded items on and resume reading (after journal progress); begin
 * the drain and say whether nothing is left in flight; close everything. */
int ic_ctcp_start(struct ga_ingest *g, const char *hostport, char *err, size_t errlen);
void ic_ctcp_pump(struct ga_ingest *g);
int ic_ctcp_idle(struct ga_ingest *g);
void ic_ctcp_stop(struct ga_ingest *g);
int ic_ctcp_port(const struct ga_ingest *g);
/* Check whether a stopping ingest has finished (closes and calls done). */
void ic_check_stopped(struct ga_ingest *g);

#endif
