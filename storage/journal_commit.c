/* journal_commit.c — the group-commit thread (see journal_commit_start in
 * journal.h).  Appenders only set a flag (through the journal's append
 * hook) and, when it was clear, signal the thread; the thread sleeps until
 * the flag is set, waits out the rest of the fsync interval since its last
 * sync began, clears the flag, calls journal_sync and reports the durable LSN.
 *
 * Lock order: journal mutex → c->mu (the hook runs under the journal's
 * mutex and takes c->mu); the thread never holds c->mu while calling into
 * the journal. */
#include "storage/journal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "proto/base/deadline.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"

#define STALL_RETRY_MS 200

struct journal_commit {
    struct journal *j;
    int interval_ms;
    void (*cb)(void *ctx, uint64_t durable_lsn, int err);
    void *ctx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* CLOCK_MONOTONIC */
    atomic_int pending;         /* appended since the last sync began */
    int stop;                   /* guarded by mu */
    uint64_t reported;          /* last durable LSN passed to cb */
    int dead;                   /* a sync failed; no more tries */
    int stalled;                /* the last sync found the journal stalled */
};

/* The append hook: runs under the journal mutex, so it stays cheap. */
static void kick(void *arg)
{
    struct journal_commit *c = arg;
    if (atomic_exchange(&c->pending, 1) == 0) {
        pthread_mutex_lock(&c->mu);
        pthread_cond_signal(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
}

static void sync_and_report(struct journal_commit *c)
{
    uint64_t d = 0;
    if (c->dead)
        return;
    atomic_store(&c->pending, 0);
    int rc = journal_sync(c->j, &d);
    if (rc == GA_EAGAIN) {
        /* no space: try again (commit_main waits STALL_RETRY_MS) */
        atomic_store(&c->pending, 1);
        if (!c->stalled)
            c->cb(c->ctx, c->reported, rc);
        c->stalled = 1;
        return;
    }
    c->stalled = 0;
    if (rc < 0) {
        c->dead = 1;
        c->cb(c->ctx, c->reported, rc);
    } else if (d > c->reported) {
        c->reported = d;
        c->cb(c->ctx, d, 0);
    }
}

static void *commit_main(void *arg)
{
    struct journal_commit *c = arg;
    struct timespec last = { 0, 0 };
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->stop && !atomic_load(&c->pending))
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->stop)
            break;
        /* at most one sync per interval: wait until last + interval (while
         * stalled, STALL_RETRY_MS) */
        int iv = c->stalled && c->interval_ms < STALL_RETRY_MS ? STALL_RETRY_MS : c->interval_ms;
        struct timespec until = ga_timespec_add_ns(last, (int64_t)iv * 1000000);
        while (!c->stop && pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT)
            ;
        if (c->stop)
            break;
        pthread_mutex_unlock(&c->mu);
        clock_gettime(CLOCK_MONOTONIC, &last);
        sync_and_report(c);
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    sync_and_report(c);          /* the final sync */
    return NULL;
}

int journal_commit_start(struct journal_commit **out, struct journal *j, int interval_ms,
                     void (*cb)(void *ctx, uint64_t durable_lsn, int err), void *ctx)
{
    *out = NULL;
    if (!j || !cb || interval_ms < 0 || interval_ms > 60000)
        return GA_EINVAL;
    struct journal_commit *c = calloc(1, sizeof *c);
    if (!c)
        return GA_ENOMEM;
    c->j = j;
    c->interval_ms = interval_ms;
    c->cb = cb;
    c->ctx = ctx;
    atomic_init(&c->pending, 1);  /* report the durable LSN at start */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&c->mu, NULL);
    int rc = pthread_create(&c->thread, NULL, commit_main, c);
    if (rc != 0) {
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return -rc;
    }
    pthread_setname_np(c->thread, "ga-jcommit");
    journal_set_append_hook(j, kick, c);
    *out = c;
    return 0;
}

void journal_commit_stop(struct journal_commit *c)
{
    if (!c)
        return;
    journal_set_append_hook(c->j, NULL, NULL);
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
