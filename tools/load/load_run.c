/* load_run.c — the poll loop of gpuagg-load (load.h).
 *
 * Each turn: every connection with room (fewer than --inflight batches
 * unacked, the previous batch fully written) gets new batches while the
 * rate allows (and, with --realtime, while the batch's newest timestamp is
 * no further from --start than the clock is from the first batch); then poll for acks and writable sockets.  When the duration
 * or the point count is reached, or a connection fails, sending stops and
 * the loop waits up to --drain seconds for the outstanding acks. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/load/load.h"

#define IDLE_WAIT_MS 100

struct run {
    const struct load_opts *o;
    struct load_conn *c;
    struct load_totals t;
    struct load_hist *h;
    FILE *rec;
    int64_t now;
    int rec_failed;
};

int64_t load_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_ack(void *ctx, struct load_conn *c, struct load_batch *b, const struct ing_ack *a)
{
    struct run *r = ctx;
    r->t.points_acked += a->accepted;
    r->t.points_rejected += a->nrejected;
    r->t.batches_acked++;
    r->t.t_last_ack_ns = r->now;
    load_hist_add(r->h, (uint64_t)(r->now - b->sent_ns));
    if (r->rec && load_record_batch(r->rec, b, a) < 0)
        r->rec_failed = 1;
}

static int last_pending(const struct load_conn *c)
{
    if (!c->count)
        return 0;
    const struct load_batch *b = &c->slots[(c->head + c->count - 1) % c->nslots];
    return b->off < b->frame.size;
}

/* Start new batches on c while it has room and the rate allows; *wait_ms
 * shrinks to when the rate allows the next one.  -1 on a failure. */
static int fill(struct run *r, struct load_conn *c, int *wait_ms)
{
    const struct load_opts *o = r->o;
    while (!c->failed && c->count < c->nslots && !last_pending(c)) {
        uint64_t n = o->batch;
        if (o->points) {
            if (r->t.points_sent >= o->points)
                return 0;
            if (o->points - r->t.points_sent < n)
                n = o->points - r->t.points_sent;
        }
        if (o->rate > 0) {
            double allowed = o->rate * (double)(r->now - r->t.t_start_ns) / 1e9 + o->batch;
            if ((double)(r->t.points_sent + n) > allowed) {
                double ms = ((double)(r->t.points_sent + n) - allowed) / o->rate * 1e3;
                int w = ms < 1 ? 1 : ms > IDLE_WAIT_MS ? IDLE_WAIT_MS : (int)ms;
                *wait_ms = w < *wait_ms ? w : *wait_ms;
                return 0;
            }
        }
        if (o->realtime) {
            int64_t ahead = load_gen_newest_ts(&c->gen, o, (size_t)n) - o->start_ns -
                            (r->now - r->t.t_start_ns);
            if (ahead > 0) {
                int64_t ms = ahead / 1000000 + 1;
                int w = ms > IDLE_WAIT_MS ? IDLE_WAIT_MS : (int)ms;
                *wait_ms = w < *wait_ms ? w : *wait_ms;
                return 0;
            }
        }
        struct load_batch *b = &c->slots[(c->head + c->count) % c->nslots];
        if (load_gen_batch(&c->gen, o, b, c->next_seq++, (size_t)n) < 0) {
            fprintf(stderr, "gpuagg-load: out of memory for a batch\n");
            c->failed = 1;
            return -1;
        }
        c->count++;
        b->sent_ns = r->now;
        r->t.points_sent += n;
        r->t.batches_sent++;
        r->t.bytes_sent += b->frame.size;
        if (load_conn_flush(c) < 0)
            return -1;
    }
    return 0;
}

/* Points of fully written, unacknowledged batches (they may or may not be
 * in the daemon's journal). */
static int write_unacked(const struct run *r)
{
    FILE *f = fopen(r->o->unacked, "w");
    if (!f) {
        perror(r->o->unacked);
        return -1;
    }
    for (uint32_t i = 0; i < r->o->nconn; i++) {
        const struct load_conn *c = &r->c[i];
        for (uint32_t k = 0; k < c->count; k++) {
            const struct load_batch *b = &c->slots[(c->head + k) % c->nslots];
            if (b->off == b->frame.size)
                load_record_batch(f, b, NULL);
        }
    }
    int bad = ferror(f) | (fclose(f) != 0);
    if (bad)
        perror(r->o->unacked);
    return bad ? -1 : 0;
}

/* Send until done, then drain.  Returns 0, or 1 when something failed. */
static int loop(struct run *r)
{
    const struct load_opts *o = r->o;
    struct pollfd *pf = calloc(o->nconn, sizeof *pf);
    if (!pf)
        return 1;
    int sending = 1, status = 0;
    int64_t drain_until = 0;
    uint32_t rot = 0;
    for (;;) {
        r->now = load_now_ns();
        int failed = 0, busy = 0;
        for (uint32_t i = 0; i < o->nconn; i++) {
            failed |= r->c[i].failed;
            busy |= !r->c[i].failed && r->c[i].count > 0;
        }
        int over = (o->duration_s > 0 && r->now - r->t.t_start_ns >= (int64_t)(o->duration_s * 1e9)) ||
                   (o->points && r->t.points_sent >= o->points);
        if (sending && (over || failed)) {
            sending = 0;
            r->t.t_send_end_ns = r->now;
            drain_until = r->now + (int64_t)(o->drain_s * 1e9);
        }
        int wait_ms = IDLE_WAIT_MS;
        if (sending && o->duration_s > 0) {
            int64_t left = r->t.t_start_ns + (int64_t)(o->duration_s * 1e9) - r->now;
            int ms = (int)(left / 1000000) + 1;
            wait_ms = ms < wait_ms ? ms : wait_ms;
        }
        for (uint32_t k = 0; sending && k < o->nconn; k++)
            if (fill(r, &r->c[(rot + k) % o->nconn], &wait_ms) < 0)
                status = 1;
        rot++;
        if (!sending && !busy)
            break;
        if (!sending && r->now > drain_until) {
            fprintf(stderr, "gpuagg-load: %g s after the last batch, acks are still missing\n",
                    o->drain_s);
            status = 1;
            break;
        }
        for (uint32_t i = 0; i < o->nconn; i++) {
            struct load_conn *c = &r->c[i];
            pf[i].fd = c->failed ? -1 : c->fd;
            pf[i].events = (short)(POLLIN | (last_pending(c) ? POLLOUT : 0));
            pf[i].revents = 0;
        }
        if (poll(pf, o->nconn, wait_ms) < 0)
            continue;
        r->now = load_now_ns();
        for (uint32_t i = 0; i < o->nconn; i++) {
            struct load_conn *c = &r->c[i];
            if (pf[i].revents & (POLLIN | POLLHUP | POLLERR))
                load_conn_read(c, on_ack, r);
            if (!c->failed && (pf[i].revents & POLLOUT))
                load_conn_flush(c);
        }
    }
    free(pf);
    for (uint32_t i = 0; i < o->nconn; i++)
        r->t.errors += r->c[i].failed;
    return status || r->t.errors;
}

int load_run(const struct load_opts *o)
{
    struct run r = { .o = o };
    int status = 1;
    r.h = calloc(1, sizeof *r.h);
    r.c = calloc(o->nconn, sizeof *r.c);
    for (uint32_t i = 0; r.c && i < o->nconn; i++)
        r.c[i].fd = -1;
    if (!r.h || !r.c || load_names_init(o) < 0) {
        fprintf(stderr, "gpuagg-load: out of memory\n");
        goto out;
    }
    if (o->record && !(r.rec = fopen(o->record, "w"))) {
        perror(o->record);
        goto out;
    }
    for (uint32_t i = 0; i < o->nconn; i++) {
        if (load_conn_open(&r.c[i], o, i) < 0)
            goto out;
        if (load_gen_init(&r.c[i].gen, o, i) < 0) {
            fprintf(stderr, "gpuagg-load: out of memory\n");
            goto out;
        }
    }
    r.t.t_start_ns = load_now_ns();
    status = loop(&r);
    r.t.t_end_ns = load_now_ns();
    if (!r.t.t_send_end_ns)
        r.t.t_send_end_ns = r.t.t_end_ns;
    if (r.rec && (fflush(r.rec) != 0 || r.rec_failed)) {
        perror(o->record);
        status = 1;
    }
    if (o->unacked && write_unacked(&r) < 0)
        status = 1;
    load_report(o, &r.t, r.h);
out:
    if (r.rec && fclose(r.rec) != 0)
        status = 1;
    for (uint32_t i = 0; r.c && i < o->nconn; i++)
        load_conn_close(&r.c[i]);
    free(r.c);
    free(r.h);
    load_names_free();
    return status;
}
