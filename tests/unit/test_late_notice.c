/* test_late_notice.c — the door's table of window floors
 * (daemon/ingest/late_notice.h): empty, a floor posted and moved, more
 * metrics than places (a lookup finds a metric's own floor or nothing,
 * never another's), and posters racing readers. */
#include "tests/unit/harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "daemon/ingest/late_notice.h"

static int name_of(uint32_t i, char *buf, size_t len)
{
    return snprintf(buf, len, "vm-%u/cpu_util", i);
}

/* each metric's floors are i * 1000 + k: i tells whose floor a lookup saw */
static int64_t floor_of(uint32_t i, int k)
{
    return (int64_t)i * 1000 + k;
}

static void test_post_and_move(void)
{
    struct ga_late_notice *n;
    CHECK_INT(ga_late_notice_open(&n), 0);
    int64_t f = -1;
    CHECK_INT(ga_late_notice_floor(n, "a", 1, &f), 0);
    ga_late_notice_post(n, "a", 1, 5000);
    CHECK_INT(ga_late_notice_floor(n, "a", 1, &f), 1);
    CHECK(f == 5000);
    CHECK_INT(ga_late_notice_floor(n, "b", 1, &f), 0);
    ga_late_notice_post(n, "a", 1, 9000);           /* the window moved on */
    CHECK_INT(ga_late_notice_floor(n, "a", 1, &f), 1);
    CHECK(f == 9000);
    CHECK(ga_late_notice_posted(n) == 2);
    ga_late_notice_close(n);
}

static void test_more_metrics_than_places(void)
{
    struct ga_late_notice *n;
    CHECK_INT(ga_late_notice_open(&n), 0);
    const uint32_t total = GA_LATE_NOTICE_ENTRIES * 2;
    char name[64];
    for (uint32_t i = 0; i < total; i++) {
        int len = name_of(i, name, sizeof name);
        ga_late_notice_post(n, name, (size_t)len, floor_of(i, 1));
    }
    uint32_t found = 0, wrong = 0;
    for (uint32_t i = 0; i < total; i++) {
        int len = name_of(i, name, sizeof name);
        int64_t f;
        if (ga_late_notice_floor(n, name, (size_t)len, &f)) {
            found++;
            wrong += f != floor_of(i, 1);
        }
    }
    CHECK_INT(wrong, 0);
    CHECK(found <= GA_LATE_NOTICE_ENTRIES);
    CHECK(found >= GA_LATE_NOTICE_ENTRIES / 2);      /* the table was filled, not emptied */
    int len = name_of(total - 1, name, sizeof name); /* the last posted is there */
    int64_t f;
    CHECK_INT(ga_late_notice_floor(n, name, (size_t)len, &f), 1);
    CHECK(f == floor_of(total - 1, 1));
    ga_late_notice_close(n);
}

struct race {
    struct ga_late_notice *n;
    atomic_int stop;
    atomic_ulong wrong, seen;
};

static void *poster(void *arg)
{
    struct race *r = arg;
    char name[64];
    for (int k = 0; k < 40; k++)
        for (uint32_t i = 0; i < GA_LATE_NOTICE_ENTRIES * 2; i += 7) {
            int len = name_of(i, name, sizeof name);
            ga_late_notice_post(r->n, name, (size_t)len, floor_of(i, k));
        }
    atomic_store(&r->stop, 1);
    return NULL;
}

static void *reader(void *arg)
{
    struct race *r = arg;
    char name[64];
    uint32_t i = 0;
    while (!atomic_load(&r->stop)) {
        i = (i + 7) % (GA_LATE_NOTICE_ENTRIES * 2);
        int len = name_of(i, name, sizeof name);
        int64_t f;
        if (ga_late_notice_floor(r->n, name, (size_t)len, &f)) {
            atomic_fetch_add(&r->seen, 1);
            if (f / 1000 != (int64_t)i)
                atomic_fetch_add(&r->wrong, 1);
        }
    }
    return NULL;
}

static void test_posters_race_readers(void)
{
    struct race r = { 0 };
    CHECK_INT(ga_late_notice_open(&r.n), 0);
    pthread_t p, q[2];
    pthread_create(&p, NULL, poster, &r);
    for (int i = 0; i < 2; i++)
        pthread_create(&q[i], NULL, reader, &r);
    pthread_join(p, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(q[i], NULL);
    CHECK(atomic_load(&r.wrong) == 0);
    CHECK(atomic_load(&r.seen) > 0);
    ga_late_notice_close(r.n);
}

void run_tests(void)
{
    RUN(test_post_and_move);
    RUN(test_more_metrics_than_places);
    RUN(test_posters_race_readers);
}
