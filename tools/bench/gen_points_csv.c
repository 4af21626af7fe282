/* gen_points_csv.c — a large point CSV for the `resample` job (the input of
 * `gpuaggctl resample --local`), written fast by all cores.
 *
 *   build/bench/gen_points_csv FILE POINTS [--metrics M] [--step-ms S]
 *                              [--batch B] [--start SEC] [--threads T]
 *
 * Line i (0-based) is metric "m<i % M>", timestamp START + (i / M) * S ms
 * (epoch seconds with 3 decimals), value a hash of i in -999.999..999.999
 * (3 decimals).  Every metric gets one point per step, in time order, so
 * nothing is late (back window 0).  A "#batch" line ends a batch every B
 * points (0: one batch).  Defaults: M 1000, S 10 ms, B 10,000,000, START
 * 1700000000, T one per core.  With the defaults 100 M points span 1000 s:
 * 17 buckets of 60 s per metric, so the job's output stays small (51,000
 * rows for 3 methods) and the time goes to reading and aggregating.
 *
 * Threads format rounds of lines into their own buffers; the buffers are
 * then written at their offsets with pwrite.  Prints one line: points,
 * bytes, seconds. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/bench_opts.h"

#define LINE_MAX_BYTES 64
#define ROUND_LINES (1u << 20)      /* lines a thread formats per round */
#define MAX_THREADS 256

struct opts {
    uint64_t points, metrics, step_ms, batch, start;
    int threads;
};

struct part {
    const struct opts *o;
    uint64_t from, to;              /* line range of this round */
    char *buf;
    size_t len, off;
    int fd, err;
    pthread_t th;
};

static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

static char *put_3(char *p, unsigned v)    /* exactly 3 digits */
{
    p[0] = (char)('0' + v / 100);
    p[1] = (char)('0' + v / 10 % 10);
    p[2] = (char)('0' + v % 10);
    return p + 3;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static void *format(void *arg)
{
    struct part *p = arg;
    const struct opts *o = p->o;
    char *w = p->buf;
    for (uint64_t i = p->from; i < p->to; i++) {
        if (o->batch && i && i % o->batch == 0) {
            memcpy(w, "#batch\n", 7);
            w += 7;
        }
        uint64_t m = i % o->metrics, t = i / o->metrics;
        uint64_t ms = t * o->step_ms;
        *w++ = 'm';
        w = put_u64(w, m);
        *w++ = ',';
        w = put_u64(w, o->start + ms / 1000);
        *w++ = '.';
        w = put_3(w, (unsigned)(ms % 1000));
        *w++ = ',';
        uint64_t h = mix(i);
        if (h >> 63)
            *w++ = '-';
        w = put_u64(w, (h >> 10) % 1000);
        *w++ = '.';
        w = put_3(w, (unsigned)((h >> 20) % 1000));
        *w++ = '\n';
    }
    p->len = (size_t)(w - p->buf);
    return NULL;
}

static void *writeout(void *arg)
{
    struct part *p = arg;
    size_t done = 0;
    while (done < p->len) {
        ssize_t k = pwrite(p->fd, p->buf + done, p->len - done, (off_t)(p->off + done));
        if (k < 0) {
            if (errno == EINTR)
                continue;
            p->err = errno;
            return NULL;
        }
        done += (size_t)k;
    }
    return NULL;
}

static int run_all(struct part *ps, int n, void *(*fn)(void *))
{
    for (int i = 0; i < n; i++)
        if (pthread_create(&ps[i].th, NULL, fn, &ps[i])) {
            for (int j = 0; j < i; j++)
                pthread_join(ps[j].th, NULL);
            return -1;
        }
    for (int i = 0; i < n; i++)
        pthread_join(ps[i].th, NULL);
    return 0;
}

/* The usage on f; returns 2, the exit status of a usage error. */
static int usage(FILE *f)
{
    fprintf(f, "usage: gen_points_csv FILE POINTS [--metrics M] [--step-ms S] [--batch B] "
                    "[--start SEC] [--threads T]\n");
    return 2;
}

static int num(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *v = x;
    return 0;
}

int main(int argc, char **argv)
{
    enum { O_METRICS = 0x100, O_STEP, O_BATCH, O_START, O_THREADS };
    static const struct option lo[] = {
        { "metrics", required_argument, NULL, O_METRICS },
        { "step-ms", required_argument, NULL, O_STEP },
        { "batch", required_argument, NULL, O_BATCH },
        { "start", required_argument, NULL, O_START },
        { "threads", required_argument, NULL, O_THREADS },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    struct opts o = { 0, 1000, 10, 10000000, 1700000000, nc > 0 ? (int)nc : 1 };
    int opt, idx = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", lo, &idx)) != -1) {
        uint64_t v = 0;
        if (opt == 'h') {
            usage(stdout);
            return 0;
        }
        if (opt == '?' || opt == ':') {
            bench_opt_error("gen_points_csv", opt, argv);
            return usage(stderr);
        }
        if (num(optarg, &v) || (opt == O_METRICS && v < 1) || (opt == O_STEP && v < 1) ||
            (opt == O_THREADS && (v < 1 || v > MAX_THREADS))) {
            fprintf(stderr, "gen_points_csv: --%s: '%s' is out of range\n", lo[idx].name, optarg);
            return usage(stderr);
        }
        switch (opt) {
        case O_METRICS: o.metrics = v; break;
        case O_STEP: o.step_ms = v; break;
        case O_BATCH: o.batch = v; break;
        case O_START: o.start = v; break;
        case O_THREADS: o.threads = (int)v; break;
        }
    }
    if (argc - optind != 2 || num(argv[optind + 1], &o.points))
        return usage(stderr);
    const char *path = argv[optind];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        fprintf(stderr, "gen_points_csv: %s: %s\n", path, strerror(errno));
        return 1;
    }
    static const char header[] = "metric,timestamp,value\n";
    size_t off = sizeof header - 1;
    if (pwrite(fd, header, off, 0) != (ssize_t)off) {
        fprintf(stderr, "gen_points_csv: write: %s\n", strerror(errno));
        return 1;
    }
    static struct part ps[MAX_THREADS];
    for (int t = 0; t < o.threads; t++) {
        ps[t].o = &o;
        ps[t].fd = fd;
        /* a round's lines, plus a "#batch" line for each line at most */
        ps[t].buf = malloc((size_t)ROUND_LINES * (LINE_MAX_BYTES + 7));
        if (!ps[t].buf) {
            fprintf(stderr, "gen_points_csv: out of memory\n");
            return 1;
        }
    }
    for (uint64_t base = 0; base < o.points;) {
        int n = 0;
        for (; n < o.threads && base < o.points; n++) {
            ps[n].from = base;
            ps[n].to = base + ROUND_LINES < o.points ? base + ROUND_LINES : o.points;
            base = ps[n].to;
        }
        if (run_all(ps, n, format))
            return fprintf(stderr, "gen_points_csv: pthread_create failed\n"), 1;
        for (int t = 0; t < n; t++) {
            ps[t].off = off;
            off += ps[t].len;
        }
        if (run_all(ps, n, writeout))
            return fprintf(stderr, "gen_points_csv: pthread_create failed\n"), 1;
        for (int t = 0; t < n; t++)
            if (ps[t].err) {
                fprintf(stderr, "gen_points_csv: write: %s\n", strerror(ps[t].err));
                return 1;
            }
    }
    if (close(fd)) {
        fprintf(stderr, "gen_points_csv: close: %s\n", strerror(errno));
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("points %" PRIu64 " bytes %zu seconds %.3f\n", o.points, off, s);
    return 0;
}
