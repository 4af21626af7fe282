/* test_pg_open.c — open buckets in blocks (storage/pg_open.h) against a
 * reference, without a database: random batches are routed, the rows
 * left in them are merged into a model of `buckets` (the union of the
 * methods, the new values winning, as the upsert does), the changes are
 * committed, and then the model plus the blocks' entries must hold what
 * merging every batch's rows into one map holds, each bucket in one place.
 * Also: the blocks' images, partitions, the memory bound, and a bucket
 * that stays a row when its partition is not known. */
#include <stdlib.h>
#include <string.h>

#include "storage/pg_open.h"
#include "tests/unit/harness.h"

#define METRICS 200
#define NMETH 6
#define SLOTS 64                         /* bucket starts a pair can have */

static const int64_t grans[2] = { 10, 60 };

struct bucket {                          /* a bucket's values by method, NaN: none */
    int used;
    double v[NMETH];
};

/* [metric][granularity][bucket start / granularity] */
static struct bucket want[METRICS][2][SLOTS], rows[METRICS][2][SLOTS];

static uint64_t rnd_s = 0x0b10c5;
static uint64_t rnd(void)
{
    rnd_s = rnd_s * 6364136223846793005ULL + 1442695040888963407ULL;
    return rnd_s >> 33;
}

static int gi_of(int64_t g) { return g == grans[0] ? 0 : 1; }

static void merge_into(struct bucket *b, const struct ga_agg *r, size_t n)
{
    if (!b->used)
        for (int k = 0; k < NMETH; k++)
            b->v[k] = -1;
    b->used = 1;
    for (size_t k = 0; k < n; k++)
        b->v[r[k].method - 1] = r[k].value;
}

/* Every bucket of b (sorted: a bucket's rows adjacent) merged into to. */
static void merge_batch(struct bucket to[METRICS][2][SLOTS], const struct pg_batch *b)
{
    for (size_t i = 0, j; i < b->naggs; i = j) {
        const struct ga_agg *a = &b->aggs[i];
        for (j = i + 1; j < b->naggs && b->aggs[j].metric == a->metric &&
                        b->aggs[j].granularity_ns == a->granularity_ns && b->aggs[j].ts == a->ts;)
            j++;
        merge_into(&to[a->metric][gi_of(a->granularity_ns)][a->ts / a->granularity_ns], a, j - i);
    }
}

/* A random batch: distinct buckets, methods ascending, sorted; metrics
 * below 8 have no partition (aux 0). */
static size_t make_batch(struct ga_agg **out, int round)
{
    size_t cap = 4096, n = 0;
    struct ga_agg *a = malloc(cap * sizeof *a);
    static uint8_t seen[METRICS][2][SLOTS];
    memset(seen, 0, sizeof seen);
    int nb = 20 + (int)(rnd() % 60);
    for (int k = 0; k < nb; k++) {
        uint32_t m = (uint32_t)(rnd() % METRICS);
        int gi = (int)(rnd() % 2);
        /* now moves forward; now and then an older bucket */
        int slot = round / (gi ? 6 : 1);
        if (rnd() % 8 == 0)
            slot -= (int)(rnd() % 4);
        if (slot < 0 || slot >= SLOTS || seen[m][gi][slot])
            continue;
        seen[m][gi][slot] = 1;
        for (int meth = 1; meth <= NMETH; meth++) {
            if (meth > 1 && rnd() % 3 == 0)
                continue;                     /* a subset of the methods, mean always */
            a[n++] = (struct ga_agg){ .metric = m, .method = (ga_method_t)meth,
                                      .aux = m < 8 ? 0 : (uint16_t)(m % GA_PARTITIONS + 1),
                                      .granularity_ns = grans[gi],
                                      .ts = (int64_t)slot * grans[gi],
                                      .value = (double)(rnd() % 100000) / 7 };
        }
    }
    *out = a;
    return n;
}

/* The high water of `buckets` for the pairs of b not held, as the writer
 * learns it before a flush (pg_writer.c learn_pairs, pg_txn_high_water). */
static void learn(struct pg_fresh_map *hw, const struct pg_open *o, const struct pg_batch *b)
{
    for (size_t i = 0; i < b->naggs; i++) {
        const struct ga_agg *a = &b->aggs[i];
        if (pg_fresh_known(hw, a) || pg_open_has(o, a->metric, a->granularity_ns))
            continue;
        struct ga_agg hi = *a;
        hi.ts = -1;
        for (int s = 0; s < SLOTS; s++)
            if (rows[a->metric][gi_of(a->granularity_ns)][s].used)
                hi.ts = (int64_t)s * a->granularity_ns;
        CHECK_INT(pg_fresh_note(hw, &hi, 1), 0);
    }
}

static void check_images(const struct pg_open *o)
{
    for (size_t d = 0; d < o->ndirty; d++) {
        uint32_t bi = o->dirty[d], len = pg_open_block_len(o, bi);
        CHECK(len > 0);
        for (uint32_t k = 0; k < len; k++) {
            uint32_t m;
            int64_t g, ts;
            struct pg_open_vals *v;
            pg_open_block_entry(o, bi, k, &m, &g, &ts, &v);
            CHECK_INT(o->blk[bi].id >> 32, m % GA_PARTITIONS);   /* the metric's partition */
            CHECK(m >= 8);
            CHECK(v->n >= 1 && v->n <= NMETH);
            for (uint16_t x = 1; x < v->n; x++)
                CHECK(v->m[x - 1] < v->m[x]);
            for (uint32_t j = 0; j < k; j++) {
                uint32_t m2;
                int64_t g2, ts2;
                struct pg_open_vals *v2;
                pg_open_block_entry(o, bi, j, &m2, &g2, &ts2, &v2);
                CHECK(!(m2 == m && g2 == g));   /* a pair once */
            }
        }
    }
}

static void test_random_against_rows(void)
{
    struct pg_open o;
    struct pg_fresh_map hw = { 0 };
    CHECK_INT(pg_open_init(&o, 150), 0);
    memset(want, 0, sizeof want);
    memset(rows, 0, sizeof rows);
    for (int round = 0; round < SLOTS; round++) {
        struct pg_batch b = { 0 };
        b.naggs = make_batch(&b.aggs, round);
        b.cap_aggs = b.naggs;
        pg_batch_sort(&b);
        merge_batch(want, &b);                         /* what rows alone would store */
        learn(&hw, &o, &b);
        CHECK_INT(pg_open_route(&o, &b, &hw), 0);
        check_images(&o);
        for (size_t i = 0; i < b.naggs; i++)
            CHECK_INT(b.aggs[i].aux, 0);
        merge_batch(rows, &b);                         /* the rows left: into `buckets` */
        CHECK_INT(pg_fresh_note(&hw, b.aggs, b.naggs), 0);
        pg_open_commit(&o);
        CHECK_INT(o.npend, 0);
        CHECK_INT(o.ndirty, 0);
        free(b.aggs);
    }
    /* rows + blocks = what rows alone store; a bucket in one place */
    static struct bucket got[METRICS][2][SLOTS];
    memcpy(got, rows, sizeof got);
    for (size_t e = 0; e < o.nent; e++) {
        const struct pg_open_ent *x = &o.ent[e];
        struct bucket *b = &got[x->metric][gi_of(x->granularity_ns)][x->ts / x->granularity_ns];
        CHECK(!b->used);
        for (int s = (int)(x->ts / x->granularity_ns) + 1; s < SLOTS; s++)
            CHECK(!rows[x->metric][gi_of(x->granularity_ns)][s].used);   /* its pair's newest */
        b->used = 1;
        for (int k = 0; k < NMETH; k++)
            b->v[k] = -1;
        for (uint16_t k = 0; k < x->cur.n; k++)
            b->v[x->cur.m[k] - 1] = x->cur.v[k];
    }
    size_t diff = 0, nb = 0;
    for (int m = 0; m < METRICS; m++)
        for (int gi = 0; gi < 2; gi++)
            for (int s = 0; s < SLOTS; s++) {
                const struct bucket *a = &want[m][gi][s], *c = &got[m][gi][s];
                nb += a->used;
                diff += a->used != c->used || (a->used && memcmp(a->v, c->v, sizeof a->v));
            }
    CHECK_INT(diff, 0);
    CHECK(nb > 1000);
    /* the bound: 150 entries held, the other pairs rows */
    CHECK_INT(o.nent, 150);
    CHECK(o.st.full > 0 && o.st.closed > 0 && o.st.written > o.nent);
    CHECK_INT(o.st.entries, o.nent);
    for (size_t e = 0; e < o.nent; e++)
        CHECK(o.ent[e].metric >= 8);             /* no partition: always rows */
    pg_open_free(&o);
    pg_fresh_free(&hw);
}

/* A rewrite of the held bucket merges methods; a newer one closes it into
 * rows; an older one stays a row. */
static void test_merge_close_older(void)
{
    struct pg_open o;
    struct pg_fresh_map hw = { 0 };
    CHECK_INT(pg_open_init(&o, 10), 0);
    struct ga_agg none = { .metric = 9, .granularity_ns = 60, .ts = -1 };
    CHECK_INT(pg_fresh_note(&hw, &none, 1), 0);
    struct pg_batch b = { 0 };
    struct ga_agg r1[] = { { .metric = 9, .method = 1, .aux = 10, .granularity_ns = 60, .ts = 600,
                             .value = 1 },
                           { .metric = 9, .method = 3, .aux = 10, .granularity_ns = 60, .ts = 600,
                             .value = 3 } };
    b.aggs = malloc(sizeof r1);
    memcpy(b.aggs, r1, sizeof r1);
    b.naggs = b.cap_aggs = 2;
    CHECK_INT(pg_open_route(&o, &b, &hw), 0);
    CHECK_INT(b.naggs, 0);                        /* both in the new entry */
    CHECK_INT(o.nplaced, 1);
    CHECK_INT(o.blk[o.placed[0].blk].id, (int64_t)9 << 32);
    pg_open_commit(&o);
    CHECK(pg_open_has(&o, 9, 60));
    /* same bucket, methods 2 and 3: union {1,2,3}, 3 replaced */
    struct ga_agg r2[] = { { .metric = 9, .method = 2, .aux = 10, .granularity_ns = 60, .ts = 600,
                             .value = 20 },
                           { .metric = 9, .method = 3, .aux = 10, .granularity_ns = 60, .ts = 600,
                             .value = 30 } };
    free(b.aggs);
    b.aggs = malloc(sizeof r2);
    memcpy(b.aggs, r2, sizeof r2);
    b.naggs = b.cap_aggs = 2;
    CHECK_INT(pg_open_route(&o, &b, &hw), 0);
    CHECK_INT(b.naggs, 0);
    pg_open_commit(&o);
    CHECK_INT(o.ent[0].cur.n, 3);
    CHECK(o.ent[0].cur.v[0] == 1 && o.ent[0].cur.v[1] == 20 && o.ent[0].cur.v[2] == 30);
    /* an older bucket (a row) and a newer one (closes 600 into rows) */
    struct ga_agg r3[] = { { .metric = 9, .method = 1, .aux = 10, .granularity_ns = 60, .ts = 540,
                             .value = 5 },
                           { .metric = 9, .method = 1, .aux = 10, .granularity_ns = 60, .ts = 660,
                             .value = 7 } };
    free(b.aggs);
    b.aggs = malloc(sizeof r3);
    memcpy(b.aggs, r3, sizeof r3);
    b.naggs = b.cap_aggs = 2;
    CHECK_INT(pg_open_route(&o, &b, &hw), 0);
    CHECK_INT(b.naggs, 4);                        /* 540 as it came, 600 closed: 3 methods */
    CHECK(b.aggs[0].ts == 540 && b.aggs[0].value == 5);
    for (int k = 1; k < 4; k++)
        CHECK(b.aggs[k].ts == 600 && b.aggs[k].method == k);
    pg_open_commit(&o);
    CHECK(o.ent[0].ts == 660 && o.ent[0].cur.n == 1 && o.st.closed == 1);
    free(b.aggs);
    pg_open_free(&o);
    pg_fresh_free(&hw);
}

void run_tests(void)
{
    RUN(test_random_against_rows);
    RUN(test_merge_close_older);
}
