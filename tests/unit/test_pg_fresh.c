/* test_pg_fresh.c — the writer's high-water map (storage/pg_fresh.h)
 * against a plain array of (metric, granularity, hi), over random notes
 * and lookups, growth, the pair cap and clear. */
#include <stdlib.h>

#include "storage/pg_fresh.h"
#include "tests/unit/harness.h"

#define NPAIRS 3000

struct ref { uint32_t metric; int64_t g, hi; int known; };

static struct ref *ref_find(struct ref *r, uint32_t m, int64_t g)
{
    for (int i = 0; i < NPAIRS; i++)
        if (r[i].metric == m && r[i].g == g)
            return &r[i];
    return NULL;
}

static void test_random_against_reference(void)
{
    uint64_t s = 0x5eed;
    static struct ref r[NPAIRS];
    for (int i = 0; i < NPAIRS; i++)
        r[i] = (struct ref){ (uint32_t)(i / 3) * 7919u, (int64_t)(1 + i % 3) * 60000000000LL, 0, 0 };
    struct pg_fresh_map m = { 0 };
    size_t wrong = 0, fresh = 0;
    for (int round = 0; round < 200; round++) {
        struct ga_agg batch[64];
        for (int k = 0; k < 64; k++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            struct ref *p = &r[(s >> 33) % NPAIRS];
            batch[k] = (struct ga_agg){ .metric = p->metric, .method = GA_M_MEAN,
                                        .granularity_ns = p->g,
                                        .ts = (int64_t)((s >> 13) % 1000) * p->g, .value = 1 };
        }
        for (int k = 0; k < 64; k++) {
            struct ref *p = ref_find(r, batch[k].metric, batch[k].granularity_ns);
            int want = p->known && batch[k].ts > p->hi;
            int got = pg_fresh(&m, &batch[k]);
            wrong += want != got;
            fresh += got;
        }
        CHECK_INT(pg_fresh_note(&m, batch, 64), 0);
        for (int k = 0; k < 64; k++) {
            struct ref *p = ref_find(r, batch[k].metric, batch[k].granularity_ns);
            if (!p->known || batch[k].ts > p->hi)
                p->hi = batch[k].ts;
            p->known = 1;
        }
    }
    CHECK_INT(wrong, 0);
    CHECK(fresh > 100);                           /* the "fresh" answer did occur */
    size_t known = 0;
    for (int i = 0; i < NPAIRS; i++)
        known += r[i].known;
    CHECK_INT(m.n, known);
    CHECK(m.cap >= m.n && m.ix.n == m.n);
    CHECK(m.ix.cap * 3 >= m.ix.n * 4);            /* the index grew: at most 3/4 full */
    /* same metric, other granularity: a different pair */
    struct ga_agg a = { .metric = r[0].metric, .granularity_ns = 7, .ts = INT64_MAX };
    CHECK_INT(pg_fresh(&m, &a), 0);
    pg_fresh_clear(&m);
    CHECK_INT(m.n, 0);
    a = (struct ga_agg){ .metric = r[5].metric, .granularity_ns = r[5].g, .ts = INT64_MAX };
    CHECK_INT(pg_fresh(&m, &a), 0);             /* forgotten: not fresh */
    pg_fresh_free(&m);
    CHECK(m.e == NULL && m.cap == 0);
}

static void test_equal_ts_is_not_fresh(void)
{
    struct pg_fresh_map m = { 0 };
    struct ga_agg a = { .metric = 1, .granularity_ns = 10, .ts = 100 };
    CHECK_INT(pg_fresh_note(&m, &a, 1), 0);
    CHECK_INT(pg_fresh(&m, &a), 0);             /* the committed bucket itself */
    a.ts = 90;
    CHECK_INT(pg_fresh(&m, &a), 0);
    CHECK_INT(pg_fresh_note(&m, &a, 1), 0);           /* an older note does not lower it */
    a.ts = 100;
    CHECK_INT(pg_fresh(&m, &a), 0);
    a.ts = 110;
    CHECK_INT(pg_fresh(&m, &a), 1);
    pg_fresh_free(&m);
}

void run_tests(void)
{
    RUN(test_random_against_reference);
    RUN(test_equal_ts_is_not_fresh);
}
