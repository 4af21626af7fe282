/* stop_guard.c — the hard bound on a stop (stop_guard.h). */
#include "daemon/stop_guard.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/notify.h"
#include "proto/base/deadline.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"

struct stop_guard {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;                 /* on CLOCK_MONOTONIC */
    int ended;                         /* stop_guard_end: under mu */
    struct timespec deadline;
    int bound_ms;
    int64_t t0_ns;
    _Atomic(const char *) stage;
};

static void *guard_main(void *arg)
{
    struct stop_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->ended && pthread_cond_timedwait(&g->cv, &g->mu, &g->deadline) != ETIMEDOUT)
        ;
    int fire = !g->ended;
    pthread_mutex_unlock(&g->mu);
    if (!fire)
        return NULL;
    ga_log(GA_LOG_ERROR, "stop_deadline_exceeded", "stage=%s elapsed_ms=%lld bound_ms=%d "
           "msg=\"the stop did not end within storage.stop_timeout_ms + %d ms; what is not "
           "committed stays in the journal and is replayed at the next start; exit 1\"",
           atomic_load(&g->stage), (long long)stop_guard_elapsed_ms(g), g->bound_ms,
           STOP_GUARD_GRACE_MS);
    ga_notify("STATUS=stop deadline exceeded in stage %s; exit 1", atomic_load(&g->stage));
    _exit(1);
}

int stop_guard_start(struct stop_guard **out, int bound_ms)
{
    *out = NULL;
    struct stop_guard *g = calloc(1, sizeof *g);
    if (!g)
        return GA_ENOMEM;
    g->bound_ms = bound_ms;
    g->t0_ns = ga_now_mono_ns();
    g->deadline = ga_deadline_ms(CLOCK_MONOTONIC, bound_ms);
    atomic_init(&g->stage, "start");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g->mu, NULL);
    int rc = pthread_create(&g->thread, NULL, guard_main, g);
    if (rc != 0) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return -rc;
    }
    pthread_setname_np(g->thread, "ga-stopguard");
    *out = g;
    return 0;
}

void stop_guard_stage(struct stop_guard *g, const char *stage)
{
    if (g)
        atomic_store(&g->stage, stage);
}

int64_t stop_guard_elapsed_ms(const struct stop_guard *g)
{
    return g ? (ga_now_mono_ns() - g->t0_ns) / 1000000 : 0;
}

void stop_guard_end(struct stop_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->ended = 1;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}
