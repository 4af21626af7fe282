/* loop_call.c — functions run on the loop thread for other threads (see
 * loop_call.h). */
#include "daemon/loop_call.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "proto/base/deadline.h"
#include "proto/ga_err.h"

enum { LC_QUEUED, LC_RUNNING, LC_DONE, LC_FAILED };

struct lc_req {
    void (*fn)(void *arg);
    void *arg;
    int state;
    struct lc_req *next;
};

struct ga_loop_call {
    uv_async_t async;
    pthread_mutex_t mu;
    pthread_cond_t cv;               /* CLOCK_MONOTONIC */
    struct lc_req *head, *tail;
    int closed;
};

static void on_async(uv_async_t *a)
{
    struct ga_loop_call *lc = a->data;
    pthread_mutex_lock(&lc->mu);
    while (lc->head) {
        struct lc_req *r = lc->head;
        lc->head = r->next;
        if (!lc->head)
            lc->tail = NULL;
        r->state = LC_RUNNING;
        pthread_mutex_unlock(&lc->mu);
        r->fn(r->arg);
        pthread_mutex_lock(&lc->mu);
        r->state = LC_DONE;
        pthread_cond_broadcast(&lc->cv);
    }
    pthread_mutex_unlock(&lc->mu);
}

int ga_loop_call_open(struct ga_loop_call **out, uv_loop_t *loop)
{
    struct ga_loop_call *lc = calloc(1, sizeof *lc);
    if (!lc)
        return GA_ENOMEM;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&lc->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&lc->mu, NULL);
    if (uv_async_init(loop, &lc->async, on_async) < 0) {
        pthread_cond_destroy(&lc->cv);
        pthread_mutex_destroy(&lc->mu);
        free(lc);
        return GA_EIO;
    }
    lc->async.data = lc;
    *out = lc;
    return 0;
}

int ga_loop_call(struct ga_loop_call *lc, void (*fn)(void *arg), void *arg, int timeout_ms)
{
    struct lc_req r = { fn, arg, LC_QUEUED, NULL };
    struct timespec until = ga_deadline_ms(CLOCK_MONOTONIC, timeout_ms);
    pthread_mutex_lock(&lc->mu);
    if (lc->closed) {
        pthread_mutex_unlock(&lc->mu);
        return GA_ESHUTDOWN;
    }
    if (lc->tail)
        lc->tail->next = &r;
    else
        lc->head = &r;
    lc->tail = &r;
    uv_async_send(&lc->async);
    int rc = 0;
    while (r.state != LC_DONE && r.state != LC_FAILED) {
        if (r.state == LC_QUEUED && rc == ETIMEDOUT) {
            /* not started in time: take it off the queue; it never runs */
            struct lc_req **pp = &lc->head, *prev = NULL;
            while (*pp != &r) {
                prev = *pp;
                pp = &(*pp)->next;
            }
            *pp = r.next;
            if (lc->tail == &r)
                lc->tail = prev;
            pthread_mutex_unlock(&lc->mu);
            return GA_ETIMEDOUT;
        }
        if (r.state == LC_RUNNING)     /* started: it is quick, wait for it */
            pthread_cond_wait(&lc->cv, &lc->mu);
        else
            rc = pthread_cond_timedwait(&lc->cv, &lc->mu, &until);
    }
    int failed = r.state == LC_FAILED;
    pthread_mutex_unlock(&lc->mu);
    return failed ? GA_ESHUTDOWN : 0;
}

static void on_closed(uv_handle_t *h)
{
    struct ga_loop_call *lc = h->data;
    pthread_cond_destroy(&lc->cv);
    pthread_mutex_destroy(&lc->mu);
    free(lc);
}

void ga_loop_call_close(struct ga_loop_call *lc)
{
    if (!lc)
        return;
    pthread_mutex_lock(&lc->mu);
    lc->closed = 1;
    for (struct lc_req *r = lc->head; r; r = r->next)
        r->state = LC_FAILED;
    lc->head = lc->tail = NULL;
    pthread_cond_broadcast(&lc->cv);
    pthread_mutex_unlock(&lc->mu);
    uv_close((uv_handle_t *)&lc->async, on_closed);
}
