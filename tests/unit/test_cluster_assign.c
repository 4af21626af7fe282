/* test_cluster_assign.c — how cluster mode spreads the partitions over its
 * members (storage/pg_members.h pg_members_assign): every partition has exactly
 * one owner, the shares differ by one at most, every member computes the
 * same split, and a member joining or leaving moves few partitions. */
#include <stdlib.h>

#include "harness.h"
#include "proto/ga_err.h"
#include "proto/ga_partition.h"
#include "storage/pg_members.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* owner[p] = index of the member owning p, from pg_members_assign's masks. */
static void owners(const char *const *names, int n, const char **owner)
{
    uint64_t out[PG_MEMBERS_MAX_MEMBERS];
    CHECK_INT(pg_members_assign(names, n, out), 0);
    uint64_t all = 0;
    int lo = GA_PARTITIONS, hi = 0;
    for (int m = 0; m < n; m++) {
        CHECK((all & out[m]) == 0);             /* one owner per partition */
        all |= out[m];
        int c = __builtin_popcountll(out[m]);
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        for (int p = 0; p < GA_PARTITIONS; p++)
            if (out[m] >> p & 1)
                owner[p] = names[m];
    }
    CHECK(all == ~0ULL);                        /* every partition owned */
    CHECK(hi - lo <= 1);                        /* evenly */
}

static int moved(const char **a, const char **b)
{
    int k = 0;
    for (int p = 0; p < GA_PARTITIONS; p++)
        k += strcmp(a[p], b[p]) != 0;
    return k;
}

static void test_one_member_owns_all(void)
{
    const char *names[] = { "solo" };
    uint64_t out[1];
    CHECK_INT(pg_members_assign(names, 1, out), 0);
    CHECK(out[0] == ~0ULL);
    CHECK_INT(pg_members_assign(names, 0, out), GA_EINVAL);
}

static void test_same_split_everywhere(void)
{
    /* a function of the names only: computed twice, the same masks */
    const char *names[] = { "a", "b", "c" };
    uint64_t x[3], y[3];
    CHECK_INT(pg_members_assign(names, 3, x), 0);
    CHECK_INT(pg_members_assign(names, 3, y), 0);
    for (int m = 0; m < 3; m++)
        CHECK(x[m] == y[m]);
    CHECK_INT(__builtin_popcountll(x[0]), 22);  /* 64 = 22 + 21 + 21 */
    CHECK_INT(__builtin_popcountll(x[1]), 21);
    CHECK_INT(__builtin_popcountll(x[2]), 21);
}

/* Membership changes on random names: a joining member takes about its
 * share (64 / n) and little else moves; a leaving member's share moves and
 * little else.  p % n, for comparison, moves two thirds of everything. */
static void test_join_and_leave_move_few(void)
{
    uint64_t seed = 0x5eed1234abcdULL;
    char store[6][24];
    for (int n = 1; n <= 5; n++) {
        long sum_join = 0, sum_leave = 0;
        int max_join = 0, max_leave = 0, trials = 200;
        int share = (GA_PARTITIONS + n) / (n + 1);  /* ceil(64 / (n + 1)) */
        for (int t = 0; t < trials; t++) {
            const char *names[6];
            for (int i = 0; i <= n; i++) {
                snprintf(store[i], sizeof store[i], "host-%llu",
                         (unsigned long long)(harness_xorshift(&seed) % 1000000));
                names[i] = store[i];
            }
            const char *before[GA_PARTITIONS], *after[GA_PARTITIONS], *left[GA_PARTITIONS];
            const char *old[6], *all[6], *rest[6];
            memcpy(old, names, (size_t)n * sizeof *old);
            memcpy(all, names, (size_t)(n + 1) * sizeof *all);
            qsort(old, (size_t)n, sizeof *old, cmp_str);
            qsort(all, (size_t)n + 1, sizeof *all, cmp_str);
            owners(old, n, before);
            owners(all, n + 1, after);                /* names[n] joins */
            int j = moved(before, after);
            /* one of the n + 1 leaves */
            int gone = (int)(harness_xorshift(&seed) % (uint64_t)(n + 1)), k = 0;
            for (int i = 0; i <= n; i++)
                if (i != gone)
                    rest[k++] = all[i];
            owners(rest, n, left);
            int l = moved(after, left);
            int lost = 0;                             /* the leaver's own share */
            for (int p = 0; p < GA_PARTITIONS; p++)
                lost += after[p] == all[gone];
            CHECK(l >= lost);
            sum_join += j;
            sum_leave += l;
            max_join = j > max_join ? j : max_join;
            max_leave = l > max_leave ? l : max_leave;
        }
        printf("  %d -> %d members: join moves %.1f partitions on average (max %d), "
               "a leave %.1f (max %d); the new share is %d\n", n, n + 1,
               (double)sum_join / trials, max_join, (double)sum_leave / trials, max_leave,
               share);
        /* within half a share more than the least possible, on average */
        CHECK(sum_join * 2 <= (long)trials * share * 3);
        CHECK(sum_leave * 2 <= (long)trials * share * 3);
        CHECK(max_join <= share + 10);
        CHECK(max_leave <= share + 10);
    }
}

/* The test cluster's names: what its rolling restart moves. */
static void test_three_daemons_named_a_b_c(void)
{
    const char *abc[] = { "a", "b", "c" }, *bc[] = { "b", "c" };
    const char *three[GA_PARTITIONS], *two[GA_PARTITIONS];
    owners(abc, 3, three);
    owners(bc, 2, two);
    int m = moved(three, two), own = 0;
    for (int p = 0; p < GA_PARTITIONS; p++)
        own += strcmp(three[p], "a") == 0;
    printf("  a leaves a, b, c: %d partitions move, %d of them a's\n", m, own);
    CHECK(m >= own && m <= own + 8);
}

void run_tests(void)
{
    RUN(test_one_member_owns_all);
    RUN(test_same_split_everywhere);
    RUN(test_join_and_leave_move_few);
    RUN(test_three_daemons_named_a_b_c);
}
