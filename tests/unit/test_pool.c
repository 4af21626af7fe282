/* test_pool.c — the one thread pool (proto/base/pool.h): every item runs
 * once on a worker in range, helpers start only when needed, item i is
 * worker i's (all at once) when there are no more items than workers, and
 * many runs of mixed sizes back to back (helpers left out of a run and
 * brought back) lose nothing. */
#include "tests/unit/harness.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "proto/base/pool.h"
#include "proto/ga_err.h"

#define MAXN 5000

struct count_ctx {
    atomic_int hits[MAXN];
    atomic_int bad_worker;
    int nthreads;
};

static void count_item(void *arg, size_t i, int worker)
{
    struct count_ctx *c = arg;
    atomic_fetch_add(&c->hits[i], 1);
    if (worker < 0 || worker >= c->nthreads)
        atomic_store(&c->bad_worker, 1);
}

/* Run n items on p and check that each ran once on a worker in range. */
static void run_and_check(struct pool *p, int nthreads, size_t n)
{
    static struct count_ctx c;
    for (size_t i = 0; i < n; i++)
        atomic_store(&c.hits[i], 0);
    atomic_store(&c.bad_worker, 0);
    c.nthreads = nthreads;
    pool_run(p, n, count_item, &c);
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&c.hits[i]) != 1) {
            harness_fail(__FILE__, __LINE__, "nthreads %d n %zu: item %zu ran %d times", nthreads, n, i,
                         atomic_load(&c.hits[i]));
            return;
        }
    CHECK_INT(atomic_load(&c.bad_worker), 0);
}

static void test_every_item_once(void)
{
    static const int threads[] = { 0, 1, 2, 3, 8 };
    static const size_t ns[] = { 0, 1, 2, 3, 7, 8, 9, 1000, MAXN };
    for (size_t a = 0; a < sizeof threads / sizeof threads[0]; a++) {
        struct pool *p;
        CHECK_INT(pool_open(&p, threads[a], "test-pool"), 0);
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
            run_and_check(p, threads[a] < 1 ? 1 : threads[a], ns[b]);
        pool_close(p);
    }
}

static void test_started_on_need(void)
{
    struct pool *p;
    CHECK_INT(pool_open(&p, 8, NULL), 0);
    CHECK_INT(pool_started(p), 0);
    run_and_check(p, 8, 1);                 /* the caller alone */
    CHECK_INT(pool_started(p), 0);
    run_and_check(p, 8, 3);
    CHECK_INT(pool_started(p), 2);
    run_and_check(p, 8, 100);
    CHECK_INT(pool_started(p), 7);
    run_and_check(p, 8, 2);                 /* kept */
    CHECK_INT(pool_started(p), 7);
    pool_close(p);
    pool_close(NULL);
}

/* n <= nthreads: item i on worker i, all running at the same time (each
 * waits, up to 10 s, until every one has arrived). */
struct meet_ctx {
    atomic_int arrived;
    int n, worker_of[8], all_met[8];
};

static void meet_item(void *arg, size_t i, int worker)
{
    struct meet_ctx *c = arg;
    c->worker_of[i] = worker;
    atomic_fetch_add(&c->arrived, 1);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (atomic_load(&c->arrived) == c->n) {
            c->all_met[i] = 1;
            return;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < 10);
}

static void test_one_item_each(void)
{
    struct pool *p;
    CHECK_INT(pool_open(&p, 4, NULL), 0);
    for (int n = 2; n <= 4; n++) {
        struct meet_ctx c = { .n = n };
        pool_run(p, (size_t)n, meet_item, &c);
        for (int i = 0; i < n; i++) {
            CHECK_INT(c.worker_of[i], i);
            CHECK_INT(c.all_met[i], 1);
        }
    }
    pool_close(p);
}

static void test_many_runs(void)
{
    struct pool *p;
    CHECK_INT(pool_open(&p, 6, NULL), 0);
    srand(7);
    for (int r = 0; r < 3000; r++)
        run_and_check(p, 6, (size_t)(rand() % 3 == 0 ? 2 + rand() % 5 : rand() % 200));
    pool_close(p);
}

void run_tests(void)
{
    RUN(test_every_item_once);
    RUN(test_started_on_need);
    RUN(test_one_item_each);
    RUN(test_many_runs);
}
