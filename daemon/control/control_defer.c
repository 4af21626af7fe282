/* control_defer.c — deferred control requests (see control.h): the
 * completion list and its wakeup, deadlines, and the blocking-work threads
 * (lock rules in control_priv.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/control_priv.h"
#include "daemon/daemon.h"
#include "proto/base/log.h"
#include "proto/ctl_proto.h"
#include "proto/ga_err.h"

#define CTL_THREADS_MAX 64

static void on_completions(uv_async_t *a);

int ctl_defer_init(struct ga_control *s)
{
    if (pthread_mutex_init(&s->mu, NULL) != 0)
        return GA_ENOMEM;
    if (pthread_cond_init(&s->cv, NULL) != 0 ||
        uv_async_init(s->d->loop, &s->async, on_completions) < 0) {
        pthread_mutex_destroy(&s->mu);
        return GA_ENOMEM;
    }
    s->async.data = s;
    uv_timer_init(s->d->loop, &s->timer);
    s->timer.data = s;
    s->handles_open = 2;
    return 0;
}

struct ga_ctl_req *ctl_req_new(struct ga_control *s, uint64_t id, const char *op, size_t oplen)
{
    struct ga_ctl_req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->srv = s;
    r->id = id;
    snprintf(r->op, sizeof r->op, "%.*s", (int)oplen, op);
    return r;
}

char *ctl_pack_response(uint64_t id, int rc, const char *result, size_t rlen, const char *msg,
                        size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    if (rc < 0) {
        ctl_pack_error(&pk, id, rc, msg);
    } else {
        ctl_pack_ok_head(&pk, id);
        if (rlen)
            msgpack_sbuffer_write(&sb, result, rlen);
        else
            msgpack_pack_nil(&pk);
    }
    *len = sb.size;
    return sb.data;
}

/* ---- deadlines ------------------------------------------------------------ */

static void on_deadline(uv_timer_t *t);

static void arm(struct ga_control *s, uint64_t deadline_ms)
{
    if (s->armed_ms && s->armed_ms <= deadline_ms)
        return;
    uint64_t now = uv_now(s->d->loop);
    s->armed_ms = deadline_ms;
    uv_timer_start(&s->timer, on_deadline, deadline_ms > now ? deadline_ms - now : 0, 0);
}

/* Answer ETIMEDOUT in place of the request of slot sl; it is orphaned. */
static int expire(struct ga_control *s, struct ctl_slot *sl)
{
    struct ga_ctl_req *r = sl->req;
    char msg[320];
    if (r->timeout_msg[0])
        snprintf(msg, sizeof msg, "%s", r->timeout_msg);
    else
        snprintf(msg, sizeof msg, "'%s' did not complete in time", r->op);
    size_t len = 0;
    char *data = ctl_pack_response(r->id, GA_ETIMEDOUT, NULL, 0, msg, &len);
    if (!data)
        return -1;
    ga_log(GA_LOG_INFO, "ctl_timeout", "conn=%llu op=%s id=%llu", (unsigned long long)sl->conn->id,
           r->op, (unsigned long long)r->id);
    s->d->counters.ctl_errors++;
    r->slot = NULL;
    sl->req = NULL;
    sl->data = data;
    sl->len = len;
    sl->conn->npending--;
    return 0;
}

static void on_deadline(uv_timer_t *t)
{
    struct ga_control *s = t->data;
    uint64_t now = uv_now(s->d->loop), next = 0;
    s->armed_ms = 0;
    for (struct ctl_conn *c = s->conns; c; c = c->next) {
        int expired = 0;
        for (struct ctl_slot *sl = c->head; sl; sl = sl->next) {
            struct ga_ctl_req *r = sl->req;
            if (!r || !r->deadline_ms)
                continue;
            if (r->deadline_ms <= now && expire(s, sl) == 0) {
                expired = 1;
                continue;
            }
            uint64_t d = r->deadline_ms <= now ? now + 10 : r->deadline_ms;  /* no memory: retry */
            if (!next || d < next)
                next = d;
        }
        if (expired)
            ctl_conn_pump(c);
    }
    if (next)
        arm(s, next);
}

void ga_ctl_set_timeout(struct ga_ctl_req *req, uint64_t timeout_ms, const char *message)
{
    req->deadline_ms = timeout_ms ? uv_now(req->srv->d->loop) + timeout_ms : 0;
    snprintf(req->timeout_msg, sizeof req->timeout_msg, "%s", message ? message : "");
}

void ctl_req_deferred(struct ga_control *s, struct ga_ctl_req *req, struct ctl_slot *slot)
{
    s->outstanding++;
    req->slot = slot;
    if (slot && req->deadline_ms)
        arm(s, req->deadline_ms);
}

void ctl_slot_orphan(struct ctl_slot *slot)
{
    slot->req->slot = NULL;
    slot->req = NULL;
}

/* ---- completion ----------------------------------------------------------- */

/* Link req into the completion list and wake the loop.  The wakeup is sent
 * under the lock: the loop cannot see req, count it done and close the
 * async handle before uv_async_send has returned. */
static void hand_over(struct ga_ctl_req *req)
{
    struct ga_control *s = req->srv;
    pthread_mutex_lock(&s->mu);
    req->next_done = NULL;
    if (s->done_tail)
        s->done_tail->next_done = req;
    else
        s->done = req;
    s->done_tail = req;
    uv_async_send(&s->async);
    pthread_mutex_unlock(&s->mu);
}

void ga_ctl_reply(struct ga_ctl_req *req, int rc, msgpack_sbuffer *result, const char *message)
{
    req->rc = rc < 0 ? rc : 0;
    if (rc >= 0 && result && result->size) {
        req->result = result->data;
        req->result_len = result->size;
        result->data = NULL;
        result->size = result->alloc = 0;
    }
    snprintf(req->message, sizeof req->message, "%s", message ? message : "");
    hand_over(req);
}

void ga_ctl_finish_on_loop(struct ga_ctl_req *req, int rc, ga_ctl_finish fn)
{
    req->rc = rc;
    req->finish = fn;
    hand_over(req);
}

/* The response bytes of a completed request (loop thread). */
static char *respond(struct ga_control *s, struct ga_ctl_req *r, size_t *len)
{
    if (!r->finish) {
        if (r->rc < 0)
            s->d->counters.ctl_errors++;
        return ctl_pack_response(r->id, r->rc, r->result, r->result_len,
                                 r->message[0] ? r->message : NULL, len);
    }
    char err[512] = "";
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int rc = r->finish(s->d, r->rc, &pk, err, sizeof err);
    if (rc < 0)
        s->d->counters.ctl_errors++;
    char *data = ctl_pack_response(r->id, rc < 0 ? rc : 0, sb.data, rc < 0 ? 0 : sb.size,
                                   err[0] ? err : NULL, len);
    msgpack_sbuffer_destroy(&sb);
    return data;
}

static void on_completions(uv_async_t *a)
{
    struct ga_control *s = a->data;
    pthread_mutex_lock(&s->mu);
    struct ga_ctl_req *r = s->done;
    s->done = s->done_tail = NULL;
    pthread_mutex_unlock(&s->mu);
    while (r) {
        struct ga_ctl_req *next = r->next_done;
        struct ctl_slot *sl = r->slot;
        s->outstanding--;
        if (sl) {
            size_t len = 0;
            sl->data = respond(s, r, &len);
            sl->len = sl->data ? len : 0;
            sl->req = NULL;
            sl->conn->npending--;
            ctl_conn_pump(sl->conn);
        }
        free(r->result);
        free(r);
        r = next;
    }
    ctl_maybe_free_server(s);
}

/* ---- blocking work -------------------------------------------------------- */

static void *job_thread(void *arg)
{
    struct ga_control *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->jobs && !s->quit)
            pthread_cond_wait(&s->cv, &s->mu);
        struct ctl_job *j = s->jobs;
        if (!j)
            break;                       /* quit and nothing queued */
        s->jobs = j->next;
        if (!s->jobs)
            s->jobs_tail = NULL;
        s->njobs--;
        pthread_mutex_unlock(&s->mu);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Start the threads on first use, signals blocked in them (the loop's
 * uv_signal_t handles signals).  Returns 0 or GA_ENOMEM. */
static int start_threads(struct ga_control *s)
{
    if (s->threads)
        return 0;
    int n = s->d->cfg ? s->d->cfg->storage.pool_size : 1;
    n = n < 1 ? 1 : n > CTL_THREADS_MAX ? CTL_THREADS_MAX : n;
    s->threads = calloc((size_t)n, sizeof *s->threads);
    if (!s->threads)
        return GA_ENOMEM;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&s->threads[i], NULL, job_thread, s) != 0)
            break;
        s->nthreads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (s->nthreads == 0) {
        free(s->threads);
        s->threads = NULL;
        return GA_ENOMEM;
    }
    return 0;
}

int ga_ctl_run_blocking(struct ga_ctl_req *req, void (*fn)(void *arg), void *arg)
{
    struct ga_control *s = req->srv;
    if (start_threads(s) < 0)
        return GA_ENOMEM;
    struct ctl_job *j = malloc(sizeof *j);
    if (!j)
        return GA_ENOMEM;
    j->fn = fn;
    j->arg = arg;
    j->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->njobs >= CTL_MAX_JOBS) {
        pthread_mutex_unlock(&s->mu);
        free(j);
        return GA_EBUSY;
    }
    if (s->jobs_tail)
        s->jobs_tail->next = j;
    else
        s->jobs = j;
    s->jobs_tail = j;
    s->njobs++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int ctl_defer_idle_close(struct ga_control *s)
{
    if (s->outstanding)
        return 0;
    if (s->threads) {
        pthread_mutex_lock(&s->mu);
        s->quit = 1;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        for (int i = 0; i < s->nthreads; i++)
            pthread_join(s->threads[i], NULL);
        free(s->threads);
        s->threads = NULL;
        s->nthreads = 0;
    }
    return 1;
}
