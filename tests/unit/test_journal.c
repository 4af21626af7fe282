/* test_journal.c — the write-ahead journal on a real file system: round
 * trips of random payloads, segment rolling, replay from any LSN, release
 * and reopen, torn tails cut at every offset of the last record, flipped
 * bytes (cut at the tail, refused or repaired elsewhere), missing segments,
 * backpressure, the group-commit thread, concurrent appenders, the
 * directory lock, and a child process SIGKILLed while appending.  Each test
 * works in its own directory under /tmp and removes it. */
#include "tests/unit/harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "storage/journal.h"

#define KiB ((uint64_t)1024)
#define MiB (KiB * KiB)
#define HDR JOURNAL_HDR_BYTES

static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* Deterministic random bytes from a seed: the content of record `seed`. */
static void gen(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull | 1;
    for (size_t i = 0; i < len; i++) {
        if (i % 8 == 0) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        buf[i] = (uint8_t)(x >> 8 * (i % 8));
    }
}

/* ---------- temporary directories and files ---------- */

static char tmp_root[64];
static char jdir[128];

static void tmp_make(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/gpuagg-jnl-XXXXXX");
    if (!mkdtemp(tmp_root))
        harness_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
    snprintf(jdir, sizeof jdir, "%s/journal", tmp_root);   /* journal_open creates it */
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (e->d_type == DT_DIR)
            rm_dir(p);
        else
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static void tmp_remove(void) { rm_dir(tmp_root); }

static void seg_path(char *p, size_t n, uint64_t start)
{
    snprintf(p, n, "%s/%020" PRIu64 ".wal", jdir, start);
}

/* Segment start LSNs on disk, ascending; returns how many (at most max). */
static size_t list_segs(uint64_t *out, size_t max)
{
    size_t n = 0;
    DIR *d = opendir(jdir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strlen(e->d_name) == 24 && strcmp(e->d_name + 20, ".wal") == 0 && n < max)
            out[n++] = strtoull(e->d_name, NULL, 10);
    if (d)
        closedir(d);
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && out[b - 1] > out[b]; b--) {
            uint64_t t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return n;
}

static uint64_t fsize(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (uint64_t)sb.st_size : (uint64_t)-1;
}

static uint8_t *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len + 1);
    if (fread(b, 1, *len, f) != *len)
        *len = 0;
    fclose(f);
    return b;
}

static void spew(const char *p, const uint8_t *b, size_t len)
{
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(b, 1, len, f) != len)
        harness_fail(__FILE__, __LINE__, "write %s", p);
    if (f)
        fclose(f);
}

/* ---------- a record log and its verification ---------- */

struct rec { uint64_t lsn, end, seed; uint32_t len; };
struct recs { struct rec *v; size_t n, cap; };

static void recs_push(struct recs *r, struct rec x)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->v = realloc(r->v, r->cap * sizeof *r->v);
    }
    r->v[r->n++] = x;
}

static int opts_open(struct journal **j, uint64_t seg, uint64_t max, int repair, char *err)
{
    struct journal_opts o = { .dir = jdir, .segment_bytes = seg, .max_bytes = max, .repair = repair };
    err[0] = '\0';
    return journal_open(j, &o, err, 512);
}

static int add(struct journal *j, struct recs *r, uint32_t len)
{
    struct rec x = { .seed = rnd(), .len = len };
    uint8_t *p = malloc(len ? len : 1);
    gen(p, len, x.seed);
    int rc = journal_append(j, p, len, &x.lsn, &x.end);
    free(p);
    if (rc == 0) {
        if (x.end != x.lsn + HDR + len)
            harness_fail(__FILE__, __LINE__, "end %" PRIu64 " for lsn %" PRIu64 " len %u", x.end, x.lsn, len);
        if (r->n && r->v[r->n - 1].end != x.lsn)
            harness_fail(__FILE__, __LINE__, "lsn %" PRIu64 " after end %" PRIu64, x.lsn, r->v[r->n - 1].end);
        recs_push(r, x);
    }
    return rc;
}

struct ver { const struct rec *exp; size_t n, idx; int bad; int stop_after; };

static int ver_cb(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
    struct ver *v = ctx;
    if (v->stop_after && (int)v->idx == v->stop_after)
        return -1234;
    if (v->idx >= v->n) {
        if (v->bad++ < 3)
            harness_fail(__FILE__, __LINE__, "extra record at lsn %" PRIu64, lsn);
        return 0;
    }
    const struct rec *e = &v->exp[v->idx++];
    uint8_t *want = malloc(len ? len : 1);
    gen(want, len, e->seed);
    if (lsn != e->lsn || len != e->len || (len && memcmp(want, payload, len) != 0)) {
        if (v->bad++ < 3)
            harness_fail(__FILE__, __LINE__, "record %zu: lsn %" PRIu64 " len %zu, expected lsn %" PRIu64
                         " len %u%s", v->idx - 1, lsn, len, e->lsn, e->len,
                         lsn == e->lsn && len == e->len ? " (payload differs)" : "");
    }
    free(want);
    return 0;
}

/* Replay from `from` yields exactly the records of r with lsn >= from. */
static void check_replay(struct journal *j, uint64_t from, const struct recs *r, int line)
{
    size_t k = 0;
    while (k < r->n && r->v[k].lsn < from)
        k++;
    struct ver v = { r->v + k, r->n - k, 0, 0, 0 };
    int rc = journal_replay(j, from, ver_cb, &v);
    if (rc != 0 || v.idx != v.n || v.bad)
        harness_fail(__FILE__, line, "replay from %" PRIu64 ": rc %d, %zu of %zu records, %d bad",
                     from, rc, v.idx, v.n, v.bad);
}

/* Where record x lies: segment start and file offset. */
static uint64_t seg_of(uint64_t lsn)
{
    uint64_t s[4096];
    size_t n = list_segs(s, 4096), i = 0;
    while (i + 1 < n && s[i + 1] <= lsn)
        i++;
    return n ? s[i] : 0;
}

static void quiet(void) { ga_log_set_level(GA_LOG_ERROR + 1); }

/* ---------- tests ---------- */

/* journal_durable_at_ns: when a record became durable, for the ack -> commit lag. */
static void test_durable_at(void)
{
    struct journal *j;
    char err[512];
    uint8_t buf[100] = { 0 };
    uint64_t lsn1, end1, lsn2, end2, d;
    tmp_make();
    CHECK_INT(opts_open(&j, 1 * MiB, 256 * MiB, 0, err), 0);
    CHECK_INT(journal_append(j, buf, sizeof buf, &lsn1, &end1), 0);
    CHECK_INT(journal_durable_at_ns(j, lsn1), 0);                 /* not durable yet */
    int64_t t0 = ga_now_mono_ns();
    CHECK_INT(journal_sync(j, &d), 0);
    int64_t t1 = ga_now_mono_ns(), a1 = journal_durable_at_ns(j, lsn1);
    CHECK(a1 >= t0 && a1 <= t1);
    CHECK_INT(journal_durable_at_ns(j, end1 - 1), a1);
    CHECK_INT(journal_durable_at_ns(j, end1), 0);
    struct timespec ts = { 0, 20 * 1000000 };                 /* past the 10 ms merge */
    nanosleep(&ts, NULL);
    CHECK_INT(journal_append(j, buf, sizeof buf, &lsn2, &end2), 0);
    CHECK_INT(journal_sync(j, &d), 0);
    int64_t a2 = journal_durable_at_ns(j, lsn2);
    CHECK(a2 >= a1 + 20 * 1000000);
    CHECK_INT(journal_durable_at_ns(j, lsn1), a1);               /* the older range kept its time */
    journal_close(j);
    CHECK_INT(opts_open(&j, 1 * MiB, 256 * MiB, 0, err), 0);
    CHECK_INT(journal_durable_at_ns(j, lsn1), 0);                 /* durable before this open */
    journal_close(j);
    tmp_remove();
}

static void test_bad_options(void)
{
    struct journal *j = NULL;
    char err[512];
    tmp_make();
    CHECK_INT(opts_open(&j, 100, 1 * MiB, 0, err), GA_EINVAL);
    CHECK_INT(opts_open(&j, 1 * MiB, 1 * MiB, 0, err), GA_EINVAL);
    CHECK_CONTAINS(err, "segment_bytes");
    CHECK(j == NULL);
    struct journal_opts o = { .dir = NULL, .segment_bytes = MiB, .max_bytes = 4 * MiB };
    CHECK_INT(journal_open(&j, &o, err, sizeof err), GA_EINVAL);
    tmp_remove();
}

static uint32_t rand_len(uint64_t seg)
{
    switch (rnd() % 10) {
    case 0: return 0;
    case 1: return (uint32_t)(seg + rnd() % seg);            /* bigger than a segment */
    case 2: return (uint32_t)(64 * KiB + rnd() % (64 * KiB));   /* written around the buffer */
    default: return (uint32_t)(1 + rnd() % 3000);
    }
}

static void test_roundtrip_and_rolling(void)
{
    struct journal *j;
    struct recs r = { 0 };
    char err[512];
    const uint64_t seg = 32 * KiB;
    tmp_make();
    CHECK_INT(opts_open(&j, seg, 256 * MiB, 0, err), 0);
    for (int i = 0; i < 400; i++)
        CHECK_INT(add(j, &r, rand_len(seg)), 0);
    CHECK_INT(r.v[0].lsn, 0);
    check_replay(j, 0, &r, __LINE__);           /* while open: the buffer is flushed first */
    struct journal_stats st;
    journal_get_stats(j, &st);
    CHECK_INT(st.appends, 400);
    CHECK_INT(st.next_lsn, r.v[r.n - 1].end);
    journal_close(j);                               /* no sync: close must flush */

    CHECK_INT(opts_open(&j, seg, 256 * MiB, 0, err), 0);
    journal_get_stats(j, &st);
    CHECK_INT(st.next_lsn, r.v[r.n - 1].end);
    CHECK_INT(st.durable_lsn, st.next_lsn);
    CHECK_INT(st.first_lsn, 0);
    CHECK_INT(st.torn_tails_cut, 0);
    check_replay(j, 0, &r, __LINE__);

    /* segments: contiguous, each within segment_bytes unless one big record */
    uint64_t s[4096];
    size_t n = list_segs(s, 4096);
    CHECK_INT(n, st.segments);
    CHECK(n > 10);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        char p[256];
        seg_path(p, sizeof p, s[i]);
        uint64_t sz = fsize(p);
        CHECK_INT(s[i], at);
        at += sz;
        if (sz > seg) {
            int single = 0;
            for (size_t k = 0; k < r.n; k++)
                single |= r.v[k].lsn == s[i] && r.v[k].end == s[i] + sz;
            CHECK(single);
        }
    }
    CHECK_INT(at, st.next_lsn);

    /* replay from the start of every 7th record, from inside records, from the end */
    for (size_t k = 0; k < r.n; k += 7) {
        check_replay(j, r.v[k].lsn, &r, __LINE__);
        check_replay(j, r.v[k].lsn + 1 + rnd() % (HDR + r.v[k].len - 1), &r, __LINE__);
    }
    check_replay(j, st.next_lsn, &r, __LINE__);
    struct ver v = { r.v, r.n, 0, 0, 0 };
    CHECK_INT(journal_replay(j, st.next_lsn + 1, ver_cb, &v), GA_ERANGE);
    v.stop_after = 5;
    CHECK_INT(journal_replay(j, 0, ver_cb, &v), -1234);
    CHECK_INT(v.idx, 5);

    /* appends go on after reopen */
    for (int i = 0; i < 20; i++)
        CHECK_INT(add(j, &r, rand_len(seg)), 0);
    uint64_t d;
    CHECK_INT(journal_sync(j, &d), 0);
    CHECK_INT(d, r.v[r.n - 1].end);
    journal_close(j);
    CHECK_INT(opts_open(&j, seg, 256 * MiB, 0, err), 0);
    check_replay(j, 0, &r, __LINE__);
    journal_close(j);
    free(r.v);
    tmp_remove();
}

static void test_release(void)
{
    struct journal *j;
    struct recs r = { 0 };
    char err[512];
    const uint64_t seg = 4 * KiB, max = 64 * MiB;
    tmp_make();
    CHECK_INT(opts_open(&j, seg, max, 0, err), 0);
    for (int i = 0; i < 500; i++)
        CHECK_INT(add(j, &r, (uint32_t)(1 + rnd() % 400)), 0);
    uint64_t before[4096];
    size_t nb = list_segs(before, 4096);
    uint64_t ckpt = r.v[100 + rnd() % 300].end;
    CHECK_INT(journal_release(j, ckpt), 0);
    uint64_t after[4096];
    size_t na = list_segs(after, 4096);
    /* exactly the segments wholly below the checkpoint are gone */
    size_t gone = 0;
    while (gone + 1 < nb && before[gone + 1] <= ckpt)
        gone++;
    CHECK(gone > 0);
    CHECK_INT(na, nb - gone);
    CHECK_INT(after[0], before[gone]);
    CHECK(after[0] <= ckpt);
    struct journal_stats st;
    journal_get_stats(j, &st);
    CHECK_INT(st.first_lsn, after[0]);
    CHECK_INT(st.released_lsn, ckpt);
    CHECK_INT(st.retained_bytes, st.next_lsn - after[0]);
    check_replay(j, ckpt, &r, __LINE__);
    check_replay(j, after[0], &r, __LINE__);
    struct ver v = { r.v, r.n, 0, 0, 0 };
    CHECK_INT(journal_replay(j, after[0] - 1, ver_cb, &v), GA_ERANGE);
    CHECK_INT(journal_release(j, ckpt - 1), 0);     /* going back deletes nothing */
    CHECK_INT(list_segs(after, 4096), na);
    journal_close(j);

    CHECK_INT(opts_open(&j, seg, max, 0, err), 0);
    journal_get_stats(j, &st);
    CHECK_INT(st.first_lsn, after[0]);
    check_replay(j, ckpt, &r, __LINE__);

    /* everything covered: one empty segment named for the next LSN */
    uint64_t next = st.next_lsn;
    CHECK_INT(journal_release(j, next), 0);
    journal_get_stats(j, &st);
    CHECK_INT(st.retained_bytes, 0);
    CHECK_INT(st.segments, 1);
    CHECK_INT(list_segs(after, 4096), 1);
    CHECK_INT(after[0], next);
    journal_close(j);
    CHECK_INT(opts_open(&j, seg, max, 0, err), 0);
    journal_get_stats(j, &st);
    CHECK_INT(st.next_lsn, next);               /* numbering survives an empty journal */
    r.n = 0;
    CHECK_INT(add(j, &r, 77), 0);
    CHECK_INT(r.v[0].lsn, next);

    /* a checkpoint beyond the journal: numbering continues after it */
    uint64_t jump = next + 1000003;
    CHECK_INT(journal_release(j, jump), 0);
    r.n = 0;
    CHECK_INT(add(j, &r, 99), 0);
    CHECK_INT(r.v[0].lsn, jump);
    journal_close(j);
    CHECK_INT(opts_open(&j, seg, max, 0, err), 0);
    check_replay(j, jump, &r, __LINE__);
    journal_close(j);

    /* a jump interrupted before the old segments were unlinked */
    char p[256];
    uint64_t jump2 = r.v[0].end + 5000;
    seg_path(p, sizeof p, jump2);
    spew(p, (const uint8_t *)"", 0);
    CHECK_INT(opts_open(&j, seg, max, 0, err), 0);
    journal_get_stats(j, &st);
    CHECK_INT(st.first_lsn, jump2);
    CHECK_INT(st.next_lsn, jump2);
    CHECK_INT(list_segs(after, 4096), 1);
    journal_close(j);
    free(r.v);
    tmp_remove();
}

/* A fresh journal of n small random records and a last one of payload
 * last_len; r gets the records; the journal is closed. */
static void build(struct recs *r, uint64_t seg, int n, uint32_t last_len)
{
    struct journal *j;
    char err[512];
    r->n = 0;
    CHECK_INT(opts_open(&j, seg, 64 * MiB, 0, err), 0);
    for (int i = 0; i < n; i++)
        CHECK_INT(add(j, r, (uint32_t)(1 + rnd() % 500)), 0);
    CHECK_INT(add(j, r, last_len), 0);
    journal_close(j);
}

static void test_torn_tail(void)
{
    struct journal *j;
    struct recs r = { 0 };
    char err[512], p[256];
    const uint64_t seg = 4 * KiB;
    tmp_make();
    build(&r, seg, 60, 100);
    const struct rec last = r.v[r.n - 1];
    uint64_t s = seg_of(last.lsn);
    seg_path(p, sizeof p, s);
    size_t len;
    uint8_t *orig = slurp(p, &len);
    CHECK_INT(len, last.end - s);
    struct recs head = r;
    head.n = r.n - 1;
    for (uint64_t o = last.lsn - s; o < len; o++) {
        spew(p, orig, (size_t)o);
        CHECK_INT(opts_open(&j, seg, 64 * MiB, 0, err), 0);
        struct journal_stats st;
        journal_get_stats(j, &st);
        CHECK_INT(st.next_lsn, last.lsn);
        CHECK_INT(st.torn_tails_cut, o > last.lsn - s);
        CHECK_INT(st.cut_bytes, o - (last.lsn - s));
        check_replay(j, 0, &head, __LINE__);
        journal_close(j);
        CHECK_INT(fsize(p), last.lsn - s);
    }
    /* garbage zeros past the end (unwritten blocks after a power cut) */
    uint8_t *z = calloc(1, len + 8192);
    memcpy(z, orig, len);
    spew(p, z, len + 8192);
    CHECK_INT(opts_open(&j, seg, 64 * MiB, 0, err), 0);
    check_replay(j, 0, &r, __LINE__);
    /* and appends continue where the cut left off */
    CHECK_INT(add(j, &r, 321), 0);
    CHECK_INT(r.v[r.n - 1].lsn, last.end);
    journal_close(j);
    CHECK_INT(opts_open(&j, seg, 64 * MiB, 0, err), 0);
    check_replay(j, 0, &r, __LINE__);
    journal_close(j);
    free(z);
    free(orig);
    free(r.v);
    tmp_remove();
}

static void test_flip_in_last_record(void)
{
    struct journal *j;
    struct recs r = { 0 };
    char err[512], p[256];
    tmp_make();
    build(&r, 4 * KiB, 40, 60);
    const struct rec last = r.v[r.n - 1];
    uint64_t s = seg_of(last.lsn);
    seg_path(p, sizeof p, s);
    size_t len;
    uint8_t *orig = slurp(p, &len);
    CHECK_INT(len, last.end - s);
    struct recs head = r;
    head.n = r.n - 1;
    for (size_t o = (size_t)(last.lsn - s); o < len; o++) {
        uint8_t bit = (uint8_t)(1u << (rnd() % 8));
        orig[o] ^= bit;
        spew(p, orig, len);
        orig[o] ^= bit;
        CHECK_INT(opts_open(&j, 4 * KiB, 64 * MiB, 0, err), 0);
        struct journal_stats st;
        journal_get_stats(j, &st);
        CHECK_INT(st.torn_tails_cut, 1);
        CHECK_INT(st.next_lsn, last.lsn);
        check_replay(j, 0, &head, __LINE__);
        journal_close(j);
    }
    spew(p, orig, len);                         /* intact again: nothing cut */
    CHECK_INT(opts_open(&j, 4 * KiB, 64 * MiB, 0, err), 0);
    check_replay(j, 0, &r, __LINE__);
    journal_close(j);
    free(orig);
    free(r.v);
    tmp_remove();
}

static void test_flip_in_earlier_segment(void)
{
    struct journal *j;
    struct recs r = { 0 };
    char err[512], p[256], want[300];
    tmp_make();
    build(&r, 4 * KiB, 200, 50);
    uint64_t s[4096];
    size_t ns = list_segs(s, 4096);
    CHECK(ns > 5);
    /* a record in a middle segment */
    size_t k;
    do
        k = rnd() % (r.n - 1);
    while (seg_of(r.v[k].lsn) == s[ns - 1]);
    uint64_t sk = seg_of(r.v[k].lsn), fo = r.v[k].lsn - sk;
    seg_path(p, sizeof p, sk);
    size_t len;
    uint8_t *b = slurp(p, &len);
    b[fo + rnd() % (HDR + r.v[k].len)] ^= (uint8_t)(1u << (rnd() % 8));
    spew(p, b, len);
    free(b);
    CHECK_INT(opts_open(&j, 4 * KiB, 64 * MiB, 0, err), GA_ECORRUPT);
    snprintf(want, sizeof want, "%020" PRIu64 ".wal offset %" PRIu64 " (LSN %" PRIu64 ")", sk, fo, r.v[k].lsn);
    CHECK_CONTAINS(err, want);
    CHECK_CONTAINS(err, "repair");
    CHECK_INT(list_segs(s, 4096), ns);          /* nothing was touched */

    CHECK_INT(opts_open(&j, 4 * KiB, 64 * MiB, 1, err), 0);
    struct journal_stats st;
    journal_get_stats(j, &st);
    CHECK_INT(st.next_lsn, r.v[k].lsn);
    CHECK_INT(st.cut_bytes, r.v[r.n - 1].end - r.v[k].lsn);
    CHECK_INT(st.torn_tails_cut, 0);
    r.n = k;
    check_replay(j, 0, &r, __LINE__);
    CHECK_INT(add(j, &r, 500), 0);
    journal_close(j);
    CHECK_INT(opts_open(&j, 4 * KiB, 64 * MiB, 0, err), 0);
    check_replay(j, 0, &r, __LINE__);
    journal_close(j);

    /* in the last segment, but sound records follow: corruption too */
    tmp_remove();
    tmp_make();
    build(&r, 64 * KiB, 30, 40);
    k = r.n - 3;
    sk = seg_of(r.v[k].lsn);
    seg_path(p, sizeof p, sk);
    b = slurp(p, &len);
    b[r.v[k].lsn - sk + HDR] ^= 0x10;
    spew(p, b, len);
    free(b);
    CHECK_INT(opts_open(&j, 64 * KiB, 64 * MiB, 0, err), GA_ECORRUPT);
    CHECK_CONTAINS(err, "sound records follow");
    /* the same with a length that runs past the end of the file */
    b = slurp(p, &len);
    b[r.v[k].lsn - sk + HDR] ^= 0x10;
    b[r.v[k].lsn - sk + 6] = 0x20;
    spew(p, b, len);
    free(b);
    CHECK_INT(opts_open(&j, 64 * KiB, 64 * MiB, 0, err), GA_ECORRUPT);
    CHECK_CONTAINS(err, "record runs past end of file; sound records follow");
    CHECK_INT(opts_open(&j, 64 * KiB, 64 * MiB, 1, err), 0);
    journal_get_stats(j, &st);
    CHECK_INT(st.next_lsn, r.v[k].lsn);
    CHECK_INT(st.torn_tails_cut, 0);
    journal_close(j);

    /* a missing segment in the middle */
    tmp_remove();
    tmp_make();
    build(&r, 4 * KiB, 200, 50);
    ns = list_segs(s, 4096);
    seg_path(p, sizeof p, s[ns / 2]);
    unlink(p);
    CHECK_INT(opts_open(&j, 4 * KiB, 64 * MiB, 0, err), GA_ECORRUPT);
    CHECK_CONTAINS(err, "next segment starts at LSN");
    CHECK_INT(opts_open(&j, 4 * KiB, 64 * MiB, 1, err), 0);
    journal_get_stats(j, &st);
    CHECK_INT(st.next_lsn, s[ns / 2]);
    CHECK_INT(st.segments, ns / 2);
    for (k = 0; r.v[k].lsn < s[ns / 2]; k++)
        ;
    r.n = k;
    check_replay(j, 0, &r, __LINE__);
    journal_close(j);
    free(r.v);
    tmp_remove();
}

static void test_backpressure(void)
{
    struct journal *j;
    struct recs r = { 0 };
    char err[512];
    const uint64_t seg = 4 * KiB, max = 8 * KiB;
    tmp_make();
    CHECK_INT(opts_open(&j, seg, max, 0, err), 0);
    int rc;
    while ((rc = add(j, &r, (uint32_t)(100 + rnd() % 200))) == 0)
        ;
    CHECK_INT(rc, GA_ENOSPC);
    struct journal_stats st;
    journal_get_stats(j, &st);
    CHECK(st.retained_bytes <= max);
    CHECK(st.retained_bytes > max - 400);
    CHECK_INT(st.backpressure, 1);
    CHECK_INT(add(j, &r, 200), GA_ENOSPC);      /* still full */
    /* release what the first segment holds: room again */
    uint64_t s[16];
    CHECK(list_segs(s, 16) >= 2);
    CHECK_INT(journal_release(j, s[1]), 0);
    CHECK_INT(add(j, &r, 200), 0);
    CHECK_INT(journal_release(j, r.v[r.n - 1].end), 0);
    journal_get_stats(j, &st);
    CHECK_INT(st.retained_bytes, 0);
    /* a record that can never fit */
    uint8_t *big = calloc(1, max);
    CHECK_INT(journal_append(j, big, max - HDR + 1, NULL, NULL), GA_ETOOBIG);
    CHECK_INT(journal_append(j, big, (size_t)JOURNAL_MAX_PAYLOAD + 1, NULL, NULL), GA_ETOOBIG);
    CHECK_INT(journal_append(j, big, max - HDR, NULL, NULL), 0);   /* exactly max fits an empty journal */
    free(big);
    journal_close(j);
    free(r.v);
    tmp_remove();
}

/* ---------- threads ---------- */

struct gc { pthread_mutex_t mu; uint64_t *v; size_t n, cap; int err; };

static void gc_cb(void *ctx, uint64_t durable, int err)
{
    struct gc *g = ctx;
    pthread_mutex_lock(&g->mu);
    if (err)
        g->err = err;
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 1024;
        g->v = realloc(g->v, g->cap * sizeof *g->v);
    }
    g->v[g->n++] = durable;
    pthread_mutex_unlock(&g->mu);
}

struct worker { struct journal *j; int tid, n, sleep_us; uint64_t seed; uint64_t *lsns, max_end; int fails; };

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    uint8_t buf[2048];
    uint64_t x = w->seed;
    for (int i = 0; i < w->n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t len = 16 + (size_t)(x % (sizeof buf - 16));
        uint64_t seed = x;
        memcpy(buf, &w->tid, 4);
        memcpy(buf + 4, &i, 4);
        memcpy(buf + 8, &seed, 8);
        gen(buf + 16, len - 16, seed);
        uint64_t end;
        if (journal_append(w->j, buf, len, &w->lsns[i], &end) != 0)
            w->fails++;
        if (end > w->max_end)
            w->max_end = end;
        if (w->sleep_us && x % 4 == 0)
            usleep((useconds_t)(x % (uint64_t)w->sleep_us));
    }
    return NULL;
}

static int64_t now_ms(void) { return ga_now_mono_ns() / 1000000; }

static void test_group_commit(void)
{
    struct journal *j;
    struct journal_commit *c;
    char err[512];
    struct gc g = { .mu = PTHREAD_MUTEX_INITIALIZER };
    enum { T = 4, N = 400, INTERVAL = 3 };
    tmp_make();
    CHECK_INT(opts_open(&j, 256 * KiB, 256 * MiB, 0, err), 0);
    CHECK_INT(journal_commit_start(&c, j, -1, gc_cb, &g), GA_EINVAL);
    CHECK_INT(journal_commit_start(&c, j, INTERVAL, gc_cb, &g), 0);
    struct journal_stats st0;
    journal_get_stats(j, &st0);
    int64_t t0 = now_ms();
    pthread_t th[T];
    struct worker w[T];
    for (int t = 0; t < T; t++) {
        w[t] = (struct worker){ .j = j, .tid = t, .n = N, .sleep_us = 400, .seed = rnd() | 1 };
        w[t].lsns = calloc(N, sizeof(uint64_t));
        pthread_create(&th[t], NULL, worker_main, &w[t]);
    }
    uint64_t max_end = 0;
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        CHECK_INT(w[t].fails, 0);
        if (w[t].max_end > max_end)
            max_end = w[t].max_end;
    }
    /* the thread gets there by itself, without a stop */
    uint64_t last = 0;
    for (int64_t until = now_ms() + 3000; now_ms() < until; usleep(1000)) {
        pthread_mutex_lock(&g.mu);
        last = g.n ? g.v[g.n - 1] : 0;
        pthread_mutex_unlock(&g.mu);
        if (last >= max_end)
            break;
    }
    CHECK_INT(last, max_end);
    int64_t elapsed = now_ms() - t0;
    struct journal_stats st;
    journal_get_stats(j, &st);
    journal_commit_stop(c);
    CHECK_INT(g.err, 0);
    CHECK(g.n > 3);
    for (size_t i = 1; i < g.n; i++)
        if (g.v[i] <= g.v[i - 1]) {
            harness_fail(__FILE__, __LINE__, "durable LSN %" PRIu64 " after %" PRIu64, g.v[i], g.v[i - 1]);
            break;
        }
    CHECK_INT(g.v[g.n - 1], st.next_lsn);
    /* at most one fsync per interval (plus the rolls') */
    uint64_t syncs = st.syncs - st0.syncs;
    if (syncs > (uint64_t)(elapsed / INTERVAL + 2 + st.segments))
        harness_fail(__FILE__, __LINE__, "%" PRIu64 " syncs in %lld ms", syncs, (long long)elapsed);
    CHECK(syncs < (uint64_t)T * N);             /* commits were grouped */
    /* stop syncs what came after the last report */
    g.n = 0;
    CHECK_INT(journal_commit_start(&c, j, 60000, gc_cb, &g), 0);
    usleep(20000);                              /* the start report */
    uint64_t e1;
    CHECK_INT(journal_append(j, "abc", 3, NULL, &e1), 0);
    journal_commit_stop(c);
    CHECK(g.n >= 1);
    CHECK_INT(g.v[g.n - 1], e1);
    journal_close(j);
    for (int t = 0; t < T; t++)
        free(w[t].lsns);
    free(g.v);
    tmp_remove();
}

struct seen { int T, N; uint8_t *hit; int last_seq[16]; int bad; struct worker *w; };

static int seen_cb(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
    struct seen *s = ctx;
    const uint8_t *p = payload;
    int tid, seq;
    uint64_t seed;
    if (len < 16) {
        s->bad++;
        return 0;
    }
    memcpy(&tid, p, 4);
    memcpy(&seq, p + 4, 4);
    memcpy(&seed, p + 8, 8);
    if (tid < 0 || tid >= s->T || seq < 0 || seq >= s->N || s->hit[tid * s->N + seq]++ ||
        seq <= s->last_seq[tid] || s->w[tid].lsns[seq] != lsn) {
        s->bad++;
        return 0;
    }
    s->last_seq[tid] = seq;
    uint8_t want[2048];
    gen(want, len - 16, seed);
    if (memcmp(want, p + 16, len - 16) != 0)
        s->bad++;
    return 0;
}

static void test_concurrent_appenders(void)
{
    struct journal *j;
    char err[512];
    enum { T = 8, N = 2000 };
    tmp_make();
    CHECK_INT(opts_open(&j, 64 * KiB, 256 * MiB, 0, err), 0);
    pthread_t th[T];
    struct worker w[T];
    for (int t = 0; t < T; t++) {
        w[t] = (struct worker){ .j = j, .tid = t, .n = N, .seed = rnd() | 1 };
        w[t].lsns = calloc(N, sizeof(uint64_t));
        pthread_create(&th[t], NULL, worker_main, &w[t]);
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        CHECK_INT(w[t].fails, 0);
    }
    journal_close(j);
    CHECK_INT(opts_open(&j, 64 * KiB, 256 * MiB, 0, err), 0);
    struct seen s = { .T = T, .N = N, .hit = calloc(T * N, 1), .w = w };
    for (int t = 0; t < T; t++)
        s.last_seq[t] = -1;
    CHECK_INT(journal_replay(j, 0, seen_cb, &s), 0);
    CHECK_INT(s.bad, 0);
    int missing = 0;
    for (int i = 0; i < T * N; i++)
        missing += s.hit[i] != 1;
    CHECK_INT(missing, 0);
    struct journal_stats st;
    journal_get_stats(j, &st);
    CHECK_INT(st.torn_tails_cut, 0);
    journal_close(j);
    for (int t = 0; t < T; t++)
        free(w[t].lsns);
    free(s.hit);
    tmp_remove();
}

static void test_lock(void)
{
    struct journal *a, *b = NULL;
    char err[512], pid[32];
    tmp_make();
    CHECK_INT(opts_open(&a, 64 * KiB, MiB, 0, err), 0);
    CHECK_INT(opts_open(&b, 64 * KiB, MiB, 0, err), GA_EBUSY);
    CHECK(b == NULL);
    CHECK_CONTAINS(err, "in use by another process");
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    CHECK_CONTAINS(err, pid);
    journal_close(a);
    CHECK_INT(opts_open(&b, 64 * KiB, MiB, 0, err), 0);
    journal_close(b);
    tmp_remove();
}

/* ---------- crash: SIGKILL a child in the middle of appending ---------- */

static int crash_pipe = -1;

static void crash_cb(void *ctx, uint64_t durable, int err)
{
    if (!err && write(crash_pipe, &durable, sizeof durable) != sizeof durable)
        _exit(3);
}

static void crash_child(uint32_t round)
{
    struct journal *j;
    struct journal_commit *c;
    char err[512];
    uint8_t buf[4096];
    if (opts_open(&j, 256 * KiB, 64 * MiB, 0, err) != 0 || journal_commit_start(&c, j, 1, crash_cb, NULL) != 0)
        _exit(2);
    uint64_t x = 0x1234567ull * (round + 1);
    for (uint32_t seq = 0;; ) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t len = 16 + (size_t)(x % (sizeof buf - 16));
        memcpy(buf, &round, 4);
        memcpy(buf + 4, &seq, 4);
        memcpy(buf + 8, &x, 8);
        gen(buf + 16, len - 16, x);
        int rc = journal_append(j, buf, len, NULL, NULL);
        if (rc == GA_ENOSPC)
            usleep(1000);
        else if (rc != 0)
            _exit(4);
        else
            seq++;
    }
}

struct crash_ver { uint32_t round, next_seq; int bad; uint64_t *ends; size_t n; };

static int crash_cb_ver(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
    struct crash_ver *v = ctx;
    const uint8_t *p = payload;
    uint32_t round, seq;
    uint64_t seed;
    uint8_t want[4096];
    memcpy(&round, p, 4);
    memcpy(&seq, p + 4, 4);
    memcpy(&seed, p + 8, 8);
    gen(want, len - 16, seed);
    if (len < 16 || round != v->round || seq != v->next_seq++ || memcmp(want, p + 16, len - 16) != 0)
        v->bad++;
    v->ends[v->n++] = lsn + HDR + len;
    return 0;
}

static void test_crash_sigkill(void)
{
    char err[512];
    struct journal *j;
    tmp_make();
    for (uint32_t round = 0; round < 4; round++) {
        int fds[2];
        CHECK_INT(pipe(fds), 0);
        uint64_t start_lsn = 0;
        if (round > 0) {
            struct journal_stats st;
            CHECK_INT(opts_open(&j, 256 * KiB, 64 * MiB, 0, err), 0);
            journal_get_stats(j, &st);
            CHECK_INT(journal_release(j, st.next_lsn), 0);   /* each round starts empty */
            start_lsn = st.next_lsn;
            journal_close(j);
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            crash_pipe = fds[1];
            crash_child(round);
        }
        close(fds[1]);
        uint64_t d, max_d = 0, *reported = NULL;
        size_t nrep = 0, cap = 0;
        /* let it get going (its first durable report), then kill it at a random moment */
        CHECK_INT(read(fds[0], &d, sizeof d), sizeof d);
        reported = malloc((cap = 1024) * sizeof d);
        reported[nrep++] = max_d = d;
        usleep((useconds_t)(rnd() % 150000));
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        while (read(fds[0], &d, sizeof d) == sizeof d) {
            if (nrep == cap)
                reported = realloc(reported, (cap = cap ? 2 * cap : 1024) * sizeof d);
            reported[nrep++] = d;
            if (d > max_d)
                max_d = d;
        }
        close(fds[0]);
        CHECK(nrep > 0);
        CHECK_INT(opts_open(&j, 256 * KiB, 64 * MiB, 0, err), 0);
        struct journal_stats st;
        journal_get_stats(j, &st);
        CHECK(st.next_lsn >= max_d);
        struct crash_ver v = { .round = round, .ends = malloc((st.next_lsn - start_lsn) / HDR * sizeof d + 8) };
        CHECK_INT(journal_replay(j, start_lsn, crash_cb_ver, &v), 0);
        CHECK_INT(v.bad, 0);
        CHECK(v.n > 0);
        /* every durable LSN reported is a record boundary that survived */
        size_t missing = 0, e = 0;
        for (size_t i = 0; i < nrep; i++) {
            if (i && reported[i] <= reported[i - 1])
                missing++;
            while (e < v.n && v.ends[e] < reported[i])
                e++;
            if (reported[i] != start_lsn && (e == v.n || v.ends[e] != reported[i]))
                missing++;
        }
        CHECK_INT(missing, 0);
        journal_close(j);
        free(v.ends);
        free(reported);
    }
    tmp_remove();
}

void run_tests(void)
{
    quiet();
    const char *seed = getenv("GA_TEST_SEED");
    if (seed)
        rng_state = strtoull(seed, NULL, 0) | 1;
    RUN(test_bad_options);
    RUN(test_durable_at);
    RUN(test_roundtrip_and_rolling);
    RUN(test_release);
    RUN(test_torn_tail);
    RUN(test_flip_in_last_record);
    RUN(test_flip_in_earlier_segment);
    RUN(test_backpressure);
    RUN(test_group_commit);
    RUN(test_concurrent_appenders);
    RUN(test_lock);
    RUN(test_crash_sigkill);
}
