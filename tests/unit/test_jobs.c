/* test_jobs.c — the job manager with test kinds: validation at submit,
 * priority order, progress, cancel (queued and running), failures, queue
 * bound, result retention. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "daemon/jobs/jobs.h"
#include "proto/ga_err.h"
#include "tests/unit/harness.h"

static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static int order[16], norder;
static volatile int gate_open;

static int v_any(const struct ga_job_params *p, size_t input_len, char *err, size_t errlen)
{
    static const char *const known[] = { "tag", "ms", NULL };
    int64_t v;
    int rc = ga_job_params_check_known(p, known, err, errlen);
    return rc ? rc : ga_job_param_int(p, "ms", 0, 0, 10000, &v, err, errlen);
}

/* Records its tag; waits for the gate when tag is 0. */
static int r_record(struct ga_job_ctx *ctx, const struct ga_job_params *p)
{
    int64_t tag;
    ga_job_param_int(p, "tag", 0, 0, 100, &tag, ctx->err, sizeof ctx->err);
    while (tag == 0 && !gate_open)
        usleep(1000);
    pthread_mutex_lock(&order_mu);
    order[norder++] = (int)tag;
    pthread_mutex_unlock(&order_mu);
    unsigned char res[2] = { 0x91, (unsigned char)tag };   /* msgpack [tag] */
    return ga_job_set_result(ctx, res, sizeof res);
}

/* Reports progress every ms until cancelled or 100 %. */
static int r_slow(struct ga_job_ctx *ctx, const struct ga_job_params *p)
{
    for (int i = 1; i <= 100; i++) {
        usleep(2000);
        if (ga_job_progress(ctx, i))
            return GA_ECANCELED;
    }
    return ga_job_set_result(ctx, "\xc0", 1);
}

static int r_fail(struct ga_job_ctx *ctx, const struct ga_job_params *p)
{
    snprintf(ctx->err, sizeof ctx->err, "input has %zu bytes, wanted more", ctx->input_len);
    return GA_EBADARG;
}

static const struct ga_job_kind k_record = { "record", v_any, r_record, 0 };
static const struct ga_job_kind k_slow = { "slow", v_any, r_slow, 0 };
static const struct ga_job_kind k_fail = { "fail", v_any, r_fail, 1 };
static const struct ga_job_kind *const kinds[] = { &k_record, &k_slow, &k_fail, NULL };

static struct ga_jobs *start_opts(int workers, int max_queued, int ttl, uint64_t results_max)
{
    static const int gpus[] = { 3 };
    struct ga_jobs_opts o = { .kinds = kinds, .workers = workers, .max_queued = max_queued,
                              .result_ttl_s = ttl, .results_max_bytes = results_max,
                              .ngpus = 1, .gpus = gpus };
    struct ga_jobs *m = NULL;
    CHECK_INT(ga_jobs_start(&m, &o), 0);
    return m;
}

static struct ga_jobs *start(int workers, int max_queued, int ttl)
{
    return start_opts(workers, max_queued, ttl, 0);
}

static void params(struct ga_job_params *p, const char *k, const char *v)
{
    p->n = 1;
    snprintf(p->kv[0].key, sizeof p->kv[0].key, "%s", k);
    snprintf(p->kv[0].value, sizeof p->kv[0].value, "%s", v);
}

static void wait_final(struct ga_jobs *m, uint64_t id, struct ga_job_info *info)
{
    for (int i = 0; i < 5000; i++) {
        ga_jobs_info(m, id, info);
        if (info->state >= GA_JOB_DONE)
            return;
        usleep(1000);
    }
}

static void test_validation_at_submit(void)
{
    struct ga_jobs *m = start(1, 8, 60);
    struct ga_job_params p;
    uint64_t id;
    char err[256];
    params(&p, "bogus", "1");
    CHECK_INT(ga_jobs_submit(m, "record", &p, NULL, 0, 0, &id, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "unknown param 'bogus'");
    params(&p, "ms", "-5");
    CHECK_INT(ga_jobs_submit(m, "record", &p, NULL, 0, 0, &id, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "param 'ms': expected an integer in 0..10000, got '-5'");
    CHECK_INT(ga_jobs_submit(m, "nope", &p, NULL, 0, 0, &id, err, sizeof err), GA_EBADARG);
    CHECK_CONTAINS(err, "unknown job kind 'nope'");
    struct ga_jobs_stats st;
    ga_jobs_get_stats(m, &st);
    CHECK_INT(st.rejected, 3);
    CHECK_INT(st.submitted, 0);
    ga_jobs_stop(m);
}

static void test_priority_order_and_results(void)
{
    struct ga_jobs *m = start(1, 16, 60);
    struct ga_job_params p;
    uint64_t ids[5];
    char err[256];
    norder = 0;
    gate_open = 0;
    params(&p, "tag", "0");                        /* blocks the only worker */
    CHECK_INT(ga_jobs_submit(m, "record", &p, NULL, 0, 0, &ids[0], err, sizeof err), 0);
    usleep(20000);
    const char *tags[] = { "1", "2", "3", "4" };
    const int prio[] = { 0, 5, 0, 9 };
    for (int i = 0; i < 4; i++) {
        params(&p, "tag", tags[i]);
        CHECK_INT(ga_jobs_submit(m, "record", &p, NULL, 0, prio[i], &ids[i + 1], err, sizeof err), 0);
    }
    gate_open = 1;
    struct ga_job_info info;
    for (int i = 0; i < 5; i++)
        wait_final(m, ids[i], &info);
    const int want[] = { 0, 4, 2, 1, 3 };          /* priority first, then submission order */
    CHECK_INT(norder, 5);
    for (int i = 0; i < 5; i++)
        CHECK_INT(order[i], want[i]);
    uint8_t *res;
    size_t len;
    CHECK_INT(ga_jobs_result(m, ids[2], &res, &len, &info), 0);
    CHECK_INT(len, 2);
    CHECK_INT(res[1], 2);
    CHECK_INT(info.state, GA_JOB_DONE);
    CHECK(info.progress == 100);
    CHECK_INT(info.device, -1);                    /* a CPU kind */
    free(res);
    ga_jobs_stop(m);
}

static void test_cancel_running_and_queued(void)
{
    struct ga_jobs *m = start(1, 16, 60);
    struct ga_job_params p = { 0 };
    uint64_t a, b;
    char err[256];
    CHECK_INT(ga_jobs_submit(m, "slow", &p, NULL, 0, 0, &a, err, sizeof err), 0);
    CHECK_INT(ga_jobs_submit(m, "slow", &p, NULL, 0, 0, &b, err, sizeof err), 0);
    struct ga_job_info info;
    for (int i = 0; i < 2000; i++) {
        ga_jobs_info(m, a, &info);
        if (info.progress >= 10)
            break;
        usleep(1000);
    }
    CHECK(info.state == GA_JOB_RUNNING && info.progress >= 10 && info.progress < 100);
    CHECK_INT(ga_jobs_cancel(m, b), 0);            /* queued: at once */
    ga_jobs_info(m, b, &info);
    CHECK_INT(info.state, GA_JOB_CANCELLED);
    CHECK_INT(ga_jobs_cancel(m, a), 0);            /* running: at its next report */
    wait_final(m, a, &info);
    CHECK_INT(info.state, GA_JOB_CANCELLED);
    uint8_t *res;
    size_t len;
    CHECK_INT(ga_jobs_result(m, a, &res, &len, &info), GA_ECANCELED);
    CHECK_INT(ga_jobs_cancel(m, a), GA_EINVAL);    /* already finished */
    CHECK_INT(ga_jobs_cancel(m, 999), GA_ENOENT);
    ga_jobs_stop(m);
}

static void test_failure_recorded_gpu_assigned(void)
{
    struct ga_jobs *m = start(2, 16, 60);
    struct ga_job_params p = { 0 };
    uint64_t id;
    char err[256];
    CHECK_INT(ga_jobs_submit(m, "fail", &p, "abc", 3, 0, &id, err, sizeof err), 0);
    struct ga_job_info info;
    wait_final(m, id, &info);
    CHECK_INT(info.state, GA_JOB_FAILED);
    CHECK_STR(info.error, "input has 3 bytes, wanted more");
    CHECK_INT(info.device, 3);                     /* a GPU kind gets a configured GPU */
    uint8_t *res;
    size_t len;
    CHECK_INT(ga_jobs_result(m, id, &res, &len, &info), GA_EBADARG);
    ga_jobs_stop(m);
}

static void test_queue_bound_and_ttl(void)
{
    struct ga_jobs *m = start(1, 2, 0);
    struct ga_job_params p;
    uint64_t id[4];
    char err[256];
    gate_open = 0;
    params(&p, "tag", "0");
    CHECK_INT(ga_jobs_submit(m, "record", &p, NULL, 0, 0, &id[0], err, sizeof err), 0);
    usleep(20000);                                 /* running: not counted as queued */
    params(&p, "tag", "7");
    CHECK_INT(ga_jobs_submit(m, "record", &p, NULL, 0, 0, &id[1], err, sizeof err), 0);
    CHECK_INT(ga_jobs_submit(m, "record", &p, NULL, 0, 0, &id[2], err, sizeof err), 0);
    CHECK_INT(ga_jobs_submit(m, "record", &p, NULL, 0, 0, &id[3], err, sizeof err), GA_EBUSY);
    CHECK_CONTAINS(err, "job queue full");
    gate_open = 1;
    struct ga_job_info info;
    for (int i = 0; i < 3000; i++) {
        struct ga_jobs_stats st;
        ga_jobs_get_stats(m, &st);
        if (st.done == 3)
            break;
        usleep(1000);
    }
    usleep(2000);
    CHECK_INT(ga_jobs_info(m, id[1], &info), GA_ENOENT);   /* TTL 0: gone once finished */
    struct ga_job_info *list;
    size_t n;
    CHECK_INT(ga_jobs_list(m, &list, &n), 0);
    CHECK_INT(n, 0);
    free(list);
    ga_jobs_stop(m);
}

/* jobs.results_max_bytes: the results kept stay within it; the jobs that
 * finished first go (counted); the newest result stays readable. */
static void test_results_bytes_bound(void)
{
    struct ga_jobs *m = start_opts(1, 16, 3600, 5);    /* each result is 2 bytes */
    struct ga_job_params p;
    uint64_t id[4];
    char err[256];
    gate_open = 1;
    for (int i = 0; i < 4; i++) {
        char tag[8];
        snprintf(tag, sizeof tag, "%d", 10 + i);
        params(&p, "tag", tag);
        CHECK_INT(ga_jobs_submit(m, "record", &p, NULL, 0, 0, &id[i], err, sizeof err), 0);
        struct ga_job_info info;
        wait_final(m, id[i], &info);
        CHECK_INT(info.state, GA_JOB_DONE);
    }
    struct ga_jobs_stats st;
    ga_jobs_get_stats(m, &st);
    CHECK_INT(st.evicted, 2);
    CHECK_INT(st.results_bytes, 4);
    uint8_t *bytes = NULL;
    size_t len = 0;
    struct ga_job_info ri;
    CHECK_INT(ga_jobs_result(m, id[0], &bytes, &len, &ri), GA_ENOENT);
    CHECK_INT(ga_jobs_result(m, id[1], &bytes, &len, &ri), GA_ENOENT);
    CHECK_INT(ga_jobs_result(m, id[3], &bytes, &len, &ri), 0);
    CHECK_INT(len, 2);
    CHECK_INT(bytes[1], 13);
    free(bytes);
    ga_jobs_stop(m);
}

static void test_param_parsing(void)
{
    struct ga_job_params p;
    char err[128];
    double d;
    int64_t v;
    params(&p, "x", "2.5e3");
    CHECK_INT(ga_job_param_double(&p, "x", 1, 0, 1e4, &d, err, sizeof err), 0);
    CHECK(d == 2500);
    CHECK_INT(ga_job_param_double(&p, "x", 1, 0, 100, &d, err, sizeof err), GA_EBADARG);
    CHECK_INT(ga_job_param_double(&p, "y", 1.5, 0, 100, &d, err, sizeof err), 0);
    CHECK(d == 1.5);
    params(&p, "n", "12abc");
    CHECK_INT(ga_job_param_int(&p, "n", 0, 0, 100, &v, err, sizeof err), GA_EBADARG);
    params(&p, "n", "nan");
    CHECK_INT(ga_job_param_double(&p, "n", 0, -1e9, 1e9, &d, err, sizeof err), GA_EBADARG);
}

void run_tests(void)
{
    RUN(test_validation_at_submit);
    RUN(test_priority_order_and_results);
    RUN(test_cancel_running_and_queued);
    RUN(test_failure_recorded_gpu_assigned);
    RUN(test_queue_bound_and_ttl);
    RUN(test_param_parsing);
    RUN(test_results_bytes_bound);
}
