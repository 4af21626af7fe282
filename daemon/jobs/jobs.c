/* jobs.c — job queue, workers, states, retention (see jobs.h). */
#include "daemon/jobs/jobs.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"

struct ga_job {
    struct ga_job_info info;
    const struct ga_job_kind *kind;
    struct ga_job_params params;
    uint8_t *input;
    size_t input_len;
    uint8_t *result;
    size_t result_cap;
    int cancel;                        /* guarded by the manager's mutex */
    int rc;
    struct ga_jobs *m;
    struct ga_job *next;               /* all jobs, newest first */
};

struct ga_jobs {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    const struct ga_job_kind *const *kinds;
    int max_queued, result_ttl_s;
    uint64_t max_job_bytes, results_max_bytes;
    int ngpus, next_gpu;
    int gpus[64];
    int nworkers;
    pthread_t *workers;
    struct ga_job *jobs;
    uint64_t next_id;
    struct ga_jobs_stats st;
};

const char *ga_job_state_name(enum ga_job_state s)
{
    static const char *const n[] = { "queued", "running", "done", "failed", "cancelled" };
    return s <= GA_JOB_CANCELLED ? n[s] : "?";
}

/* ---- parameters ------------------------------------------------------------ */

int ga_job_progress(struct ga_job_ctx *ctx, double pct)
{
    struct ga_job *j = ctx->job;
    pthread_mutex_lock(&j->m->mu);
    if (pct > j->info.progress && pct <= 100)
        j->info.progress = pct;
    int cancel = j->cancel;
    pthread_mutex_unlock(&j->m->mu);
    return cancel;
}

int ga_job_set_result(struct ga_job_ctx *ctx, const void *bytes, size_t len)
{
    struct ga_job *j = ctx->job;
    uint8_t *r = malloc(len ? len : 1);
    if (!r)
        return GA_ENOMEM;
    memcpy(r, bytes, len);
    free(j->result);
    j->result = r;
    j->result_cap = len;
    return 0;
}

/* Drop finished jobs past their TTL.  Called with mu held. */
static void evict(struct ga_jobs *m);

static void expire(struct ga_jobs *m)
{
    int64_t cutoff = ga_now_real_ns() - (int64_t)m->result_ttl_s * 1000000000;
    for (struct ga_job **pp = &m->jobs; *pp;) {
        struct ga_job *j = *pp;
        if (j->info.state >= GA_JOB_DONE && j->info.finished_ns < cutoff) {
            *pp = j->next;
            free(j->input);
            free(j->result);
            free(j);
            m->st.expired++;
        } else {
            pp = &j->next;
        }
    }
    evict(m);
}

/* Keep the finished results within results_max_bytes: drop the finished
 * jobs that ended first until the rest fit.  Called with mu held. */
static void evict(struct ga_jobs *m)
{
    for (;;) {
        uint64_t total = 0;
        struct ga_job **oldest = NULL;
        for (struct ga_job **pp = &m->jobs; *pp; pp = &(*pp)->next) {
            struct ga_job *j = *pp;
            if (j->info.state < GA_JOB_DONE)
                continue;
            total += j->result_cap;
            if (j->result_cap && (!oldest || j->info.finished_ns <= (*oldest)->info.finished_ns))
                oldest = pp;
        }
        m->st.results_bytes = total;
        if (!m->results_max_bytes || total <= m->results_max_bytes || !oldest)
            return;
        struct ga_job *j = *oldest;
        ga_log(GA_LOG_INFO, "job_result_evicted", "id=%" PRIu64 " bytes=%zu kept_bytes=%" PRIu64
               " msg=\"jobs.results_max_bytes reached\"", j->info.id, j->result_cap, total);
        *oldest = j->next;
        free(j->input);
        free(j->result);
        free(j);
        m->st.evicted++;
    }
}

/* Highest priority, then oldest.  Called with mu held. */
static struct ga_job *next_queued(struct ga_jobs *m)
{
    struct ga_job *best = NULL;
    for (struct ga_job *j = m->jobs; j; j = j->next)
        if (j->info.state == GA_JOB_QUEUED &&
            (!best || j->info.priority > best->info.priority ||
             (j->info.priority == best->info.priority && j->info.id < best->info.id)))
            best = j;
    return best;
}

static void run_one(struct ga_jobs *m, struct ga_job *j)
{
    struct ga_job_ctx ctx = { .job = j, .device = j->info.device, .input = j->input,
                              .input_len = j->input_len };
    ga_log(GA_LOG_INFO, "job_start", "id=%" PRIu64 " kind=%s device=%d", j->info.id, j->kind->name,
           ctx.device);
    int rc = j->kind->run(&ctx, &j->params);
    pthread_mutex_lock(&m->mu);
    j->rc = rc;
    j->info.finished_ns = ga_now_real_ns();
    if (rc == 0) {
        j->info.state = GA_JOB_DONE;
        j->info.progress = 100;
        j->info.result_len = j->result_cap;
        m->st.done++;
    } else if (rc == GA_ECANCELED || j->cancel) {
        j->info.state = GA_JOB_CANCELLED;
        m->st.cancelled++;
    } else {
        j->info.state = GA_JOB_FAILED;
        snprintf(j->info.error, sizeof j->info.error, "%s", ctx.err[0] ? ctx.err : ga_strerror(rc));
        m->st.failed++;
    }
    m->st.running--;
    free(j->input);                    /* the input is not needed any more */
    j->input = NULL;
    uint64_t id = j->info.id;
    const char *kind = j->kind->name;
    enum ga_job_state state = j->info.state;
    double ms = (double)(j->info.finished_ns - j->info.started_ns) / 1e6;
    char error[sizeof j->info.error];
    memcpy(error, j->info.error, sizeof error);
    evict(m);                          /* may free j */
    pthread_mutex_unlock(&m->mu);
    ga_log(rc == 0 ? GA_LOG_INFO : GA_LOG_WARN, "job_end", "id=%" PRIu64 " kind=%s state=%s "
           "ms=%.1f error=\"%s\"", id, kind, ga_job_state_name(state), ms, error);
}

static void *worker_main(void *arg)
{
    struct ga_jobs *m = arg;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        struct ga_job *j;
        while (!m->stop && !(j = next_queued(m)))
            pthread_cond_wait(&m->cv, &m->mu);
        if (m->stop)
            break;
        j->info.state = GA_JOB_RUNNING;
        j->info.started_ns = ga_now_real_ns();
        m->st.queued--;
        m->st.running++;
        if (j->kind->wants_gpu && m->ngpus > 0) {
            j->info.device = m->gpus[m->next_gpu];
            m->next_gpu = (m->next_gpu + 1) % m->ngpus;
        } else {
            j->info.device = -1;
        }
        pthread_mutex_unlock(&m->mu);
        run_one(m, j);
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* ---- the API ----------------------------------------------------------------- */

int ga_jobs_submit(struct ga_jobs *m, const char *kind, const struct ga_job_params *p,
                   const void *input, size_t input_len, int priority, uint64_t *id, char *err,
                   size_t errlen)
{
    const struct ga_job_kind *k = NULL;
    for (const struct ga_job_kind *const *kk = m->kinds; *kk && !k; kk++)
        if (strcmp((*kk)->name, kind) == 0)
            k = *kk;
    if (!k) {
        snprintf(err, errlen, "unknown job kind '%s'", kind);
        pthread_mutex_lock(&m->mu);
        m->st.rejected++;
        pthread_mutex_unlock(&m->mu);
        return GA_EBADARG;
    }
    struct ga_job_params *bp = malloc(sizeof *bp);
    if (!bp)
        return GA_ENOMEM;
    *bp = *p;
    pthread_mutex_lock(&m->mu);
    bp->max_bytes = m->max_job_bytes;
    pthread_mutex_unlock(&m->mu);
    p = bp;
    int rc = k->validate(p, input_len, err, errlen);
    if (rc < 0) {
        free(bp);
        pthread_mutex_lock(&m->mu);
        m->st.rejected++;
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    struct ga_job *j = calloc(1, sizeof *j);
    if (!j || (input_len && !(j->input = malloc(input_len)))) {
        free(j);
        free(bp);
        return GA_ENOMEM;
    }
    if (input_len)
        memcpy(j->input, input, input_len);
    j->input_len = input_len;
    j->kind = k;
    j->params = *p;
    free(bp);
    j->m = m;
    j->info.priority = priority;
    j->info.device = -1;
    snprintf(j->info.kind, sizeof j->info.kind, "%s", k->name);
    pthread_mutex_lock(&m->mu);
    expire(m);
    if (m->stop || m->st.queued >= (uint64_t)m->max_queued) {
        rc = m->stop ? GA_ESHUTDOWN : GA_EBUSY;
        if (!m->stop)
            snprintf(err, errlen, "job queue full (%d queued, jobs.max_queued)", m->max_queued);
        m->st.rejected++;
        pthread_mutex_unlock(&m->mu);
        free(j->input);
        free(j);
        return rc;
    }
    j->info.id = ++m->next_id;
    j->info.submitted_ns = ga_now_real_ns();
    j->info.state = GA_JOB_QUEUED;
    j->next = m->jobs;
    m->jobs = j;
    m->st.submitted++;
    m->st.queued++;
    *id = j->info.id;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static struct ga_job *find(struct ga_jobs *m, uint64_t id)
{
    for (struct ga_job *j = m->jobs; j; j = j->next)
        if (j->info.id == id)
            return j;
    return NULL;
}

int ga_jobs_info(struct ga_jobs *m, uint64_t id, struct ga_job_info *out)
{
    pthread_mutex_lock(&m->mu);
    expire(m);
    struct ga_job *j = find(m, id);
    if (j)
        *out = j->info;
    pthread_mutex_unlock(&m->mu);
    return j ? 0 : GA_ENOENT;
}

int ga_jobs_result(struct ga_jobs *m, uint64_t id, uint8_t **bytes, size_t *len,
                   struct ga_job_info *info)
{
    pthread_mutex_lock(&m->mu);
    expire(m);
    struct ga_job *j = find(m, id);
    int rc = 0;
    if (!j) {
        rc = GA_ENOENT;
    } else {
        *info = j->info;
        if (j->info.state == GA_JOB_QUEUED || j->info.state == GA_JOB_RUNNING)
            rc = GA_EAGAIN;
        else if (j->info.state == GA_JOB_CANCELLED)
            rc = GA_ECANCELED;
        else if (j->info.state == GA_JOB_FAILED)
            rc = j->rc < 0 ? j->rc : GA_EIO;
        else if (!(*bytes = malloc(j->result_cap ? j->result_cap : 1)))
            rc = GA_ENOMEM;
        else {
            memcpy(*bytes, j->result, j->result_cap);
            *len = j->result_cap;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int ga_jobs_cancel(struct ga_jobs *m, uint64_t id)
{
    pthread_mutex_lock(&m->mu);
    struct ga_job *j = find(m, id);
    int rc = 0;
    if (!j) {
        rc = GA_ENOENT;
    } else if (j->info.state == GA_JOB_QUEUED) {
        j->info.state = GA_JOB_CANCELLED;
        j->info.finished_ns = ga_now_real_ns();
        free(j->input);
        j->input = NULL;
        m->st.queued--;
        m->st.cancelled++;
    } else if (j->info.state == GA_JOB_RUNNING) {
        j->cancel = 1;
    } else {
        rc = GA_EINVAL;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int ga_jobs_list(struct ga_jobs *m, struct ga_job_info **out, size_t *n)
{
    pthread_mutex_lock(&m->mu);
    expire(m);
    size_t k = 0;
    for (struct ga_job *j = m->jobs; j; j = j->next)
        k++;
    *out = malloc((k ? k : 1) * sizeof **out);
    if (!*out) {
        pthread_mutex_unlock(&m->mu);
        return GA_ENOMEM;
    }
    k = 0;
    for (struct ga_job *j = m->jobs; j; j = j->next)
        (*out)[k++] = j->info;
    *n = k;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

void ga_jobs_get_stats(struct ga_jobs *m, struct ga_jobs_stats *st)
{
    pthread_mutex_lock(&m->mu);
    *st = m->st;
    pthread_mutex_unlock(&m->mu);
}

void ga_jobs_set_limits(struct ga_jobs *m, int max_queued, int result_ttl_s,
                        uint64_t max_job_bytes, uint64_t results_max_bytes)
{
    pthread_mutex_lock(&m->mu);
    m->max_queued = max_queued;
    m->result_ttl_s = result_ttl_s;
    m->max_job_bytes = max_job_bytes;
    m->results_max_bytes = results_max_bytes;
    evict(m);
    pthread_mutex_unlock(&m->mu);
}

int ga_jobs_start(struct ga_jobs **out, const struct ga_jobs_opts *o)
{
    struct ga_jobs *m = calloc(1, sizeof *m);
    if (!m)
        return GA_ENOMEM;
    m->kinds = o->kinds;
    m->max_queued = o->max_queued;
    m->result_ttl_s = o->result_ttl_s;
    m->max_job_bytes = o->max_job_bytes;
    m->results_max_bytes = o->results_max_bytes;
    m->ngpus = o->ngpus < 64 ? o->ngpus : 64;
    for (int i = 0; i < m->ngpus; i++)
        m->gpus[i] = o->gpus[i];
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    m->workers = calloc((size_t)o->workers, sizeof *m->workers);
    if (!m->workers)
        goto fail;
    for (int i = 0; i < o->workers; i++) {
        if (pthread_create(&m->workers[i], NULL, worker_main, m) != 0)
            break;
        m->nworkers++;
    }
    if (m->nworkers == 0)
        goto fail;
    *out = m;
    return 0;
fail:
    free(m->workers);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    free(m);
    return GA_ENOMEM;
}

void ga_jobs_stop(struct ga_jobs *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    for (struct ga_job *j = m->jobs; j; j = j->next)
        j->cancel = 1;                 /* running jobs stop at their next progress report */
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < m->nworkers; i++)
        pthread_join(m->workers[i], NULL);
    while (m->jobs) {
        struct ga_job *j = m->jobs;
        m->jobs = j->next;
        free(j->input);
        free(j->result);
        free(j);
    }
    free(m->workers);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
