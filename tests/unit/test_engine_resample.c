/* test_engine_resample.c — `gpuaggctl resample --local` end to end: CSV in,
 * CSV/JSON out, batches and late points, bad lines with their numbers,
 * usage errors.  The CLI sources are compiled into this test directly (they
 * are not part of libgpuagg). */
#include "tests/unit/harness.h"

#include <stdlib.h>
#include <unistd.h>

#include "proto/csv_points.h"
#include "tools/gpuaggctl/resample.c"

#define SEC 1000000000LL

static uint64_t rng = 0x853c49e6748fea9bULL;
static uint64_t rnd(void)
{
    return harness_xorshift(&rng);
}

struct run {
    int rc;
    char *out, *err;
};

/* Run the command on input text; argv without the --input. */
static struct run run_cli(const char *input, const char *const *args, int nargs)
{
    char in_path[] = "/tmp/ga_resample_inXXXXXX";
    int fd = mkstemp(in_path);
    FILE *f = fdopen(fd, "w");
    fputs(input, f);
    fclose(f);
    char *argv[32];
    int argc = 0;
    argv[argc++] = "resample";
    argv[argc++] = "--local";
    for (int i = 0; i < nargs; i++)
        argv[argc++] = (char *)args[i];
    argv[argc++] = "--input";
    argv[argc++] = in_path;
    argv[argc] = NULL;
    struct run r = { 0 };
    size_t lo, le;
    FILE *out = open_memstream(&r.out, &lo), *err = open_memstream(&r.err, &le);
    r.rc = resample_main(argc, argv, out, err);
    fclose(out);
    fclose(err);
    unlink(in_path);
    return r;
}

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
}

static void test_csv_mean_count_and_order(void)
{
    /* two metrics named so that byte order differs from input order */
    double sum[2][2] = { { 0 } };
    int cnt[2][2] = { { 0 } };
    char *in = NULL;
    size_t len;
    FILE *f = open_memstream(&in, &len);
    fputs("metric,timestamp,value\n", f);
    int64_t t0 = 1700000040LL * SEC;
    for (int i = 0; i < 200; i++) {
        int m = (int)(rnd() % 2), b = (int)(rnd() % 2);
        int64_t t = t0 + b * 60 * SEC + (int64_t)(rnd() % (60 * SEC));
        t = t / 1000 * 1000 + (i % 7);                      /* unique, sub-second */
        double v = (double)(rnd() % 100000) / 8.0;          /* exact in binary */
        sum[m][b] += v;
        cnt[m][b]++;
        fprintf(f, "%s,%lld.%09lld,%.17g\n", m ? "b.cpu" : "a,disk", (long long)(t / SEC),
                (long long)(t % SEC), v);
    }
    fclose(f);
    const char *args[] = { "--granularity", "60", "--method", "mean,count" };
    struct run r = run_cli(in, args, 4);
    CHECK_INT(r.rc, 0);
    CHECK_STR(r.err, "");
    char *line = strtok(r.out, "\n");
    CHECK_STR(line, "metric,granularity,method,timestamp,value");
    /* "a,disk" (quoted) sorts before "b.cpu"; count before mean */
    for (int m = 0; m < 2; m++) {
        for (int k = 0; k < 2; k++) {
            for (int b = 0; b < 2; b++) {
                if (!cnt[m][b])
                    continue;
                char want[256];
                double v = k == 0 ? cnt[m][b] : sum[m][b] / cnt[m][b];
                snprintf(want, sizeof want, "%s,60,%s,%lld.000000000,%.17g",
                         m ? "b.cpu" : "\"a,disk\"", k ? "mean" : "count",
                         (long long)((t0 + b * 60 * SEC) / SEC), v);
                line = strtok(NULL, "\n");
                CHECK_STR(line, want);
            }
        }
    }
    CHECK(strtok(NULL, "\n") == NULL);
    run_free(&r);
    free(in);
}

static void test_rfc3339_equals_epoch_and_json(void)
{
    const char *args[] = { "--granularity", "1min", "--method", "sum,rate:last", "--json" };
    double a = (double)(rnd() % 1000) / 4, b = (double)(rnd() % 1000) / 4;
    char in1[512], in2[512];
    snprintf(in1, sizeof in1, "metric,timestamp,value\nx\"y,1700000050.5,%g\nx\"y,1700000051,%g\n", a, b);
    snprintf(in2, sizeof in2, "metric,timestamp,value\n\"x\"\"y\",2023-11-14T23:14:10.5+01:00,%g\r\n"
             "\"x\"\"y\",2023-11-14T22:14:11Z,%g\r\n", a, b);
    struct run r1 = run_cli(in1, args, 5), r2 = run_cli(in2, args, 5);
    CHECK_INT(r1.rc, 0);
    CHECK_INT(r2.rc, 0);
    CHECK_STR(r1.out, r2.out);
    char want[512];
    snprintf(want, sizeof want, "{\"metric\": \"x\\\"y\", \"granularity\": 60, \"method\": "
             "\"rate:last\", \"timestamp\": 1700000040.000000000, \"value\": %.17g}", b - a);
    CHECK_CONTAINS(r1.out, want);
    CHECK(r1.out[0] == '[');
    run_free(&r1);
    run_free(&r2);
}

static void test_batches_and_late_points(void)
{
    const char *args[] = { "--granularity", "60", "--method", "last,count", "--back-window", "0" };
    double v1 = (double)(rnd() % 997), v2 = (double)(rnd() % 991), v3 = (double)(rnd() % 983);
    char in[512];
    /* batch 2 replaces 1700000100 (later wins) and sends one point older
     * than the first block (1700000100): late */
    snprintf(in, sizeof in, "metric,timestamp,value\nm,1700000100,%g\n#batch\nm,1700000099,%g\n"
             "m,1700000100,%g\n", v1, v2, v3);
    struct run r = run_cli(in, args, 6);
    CHECK_INT(r.rc, 0);
    char want[256];
    snprintf(want, sizeof want, "m,60,last,1700000100.000000000,%g\n", v3);
    CHECK_CONTAINS(r.out, want);
    CHECK_CONTAINS(r.out, "m,60,count,1700000100.000000000,1\n");
    CHECK(!strstr(r.out, "1700000040.000000000"));
    snprintf(want, sizeof want, "late,m,1700000099.000000000,%.17g,window\n", v2);
    CHECK_STR(r.err, want);
    run_free(&r);
}

static void test_bad_lines_reported_with_numbers(void)
{
    const char *args[] = { "--granularity", "60", "--method", "mean" };
    struct run r = run_cli("metric,timestamp,value\nm,1700000000,1\n\n# c\nm,17000x,2\n", args, 4);
    CHECK_INT(r.rc, 1);
    CHECK_STR(r.out, "");
    CHECK_CONTAINS(r.err, "line 5: bad timestamp");
    CHECK(!strstr(r.err, "17000x"));            /* input bytes are never echoed */
    run_free(&r);
    r = run_cli("m,1700000000,1\n", args, 4);
    CHECK_INT(r.rc, 1);
    CHECK_CONTAINS(r.err, "line 1: expected the header");
    run_free(&r);
    r = run_cli("metric,timestamp,value\nm,1700000000.1234567891,1\n", args, 4);
    CHECK_INT(r.rc, 1);
    CHECK_CONTAINS(r.err, "line 2");
    run_free(&r);
    /* rejected points: reported, the rest aggregated, exit 1 */
    double v = (double)(rnd() % 1000);
    char in[256];
    snprintf(in, sizeof in, "metric,timestamp,value\nm,-5,1\nm,1700000000,nan\nm,1700000001,%g\n", v);
    r = run_cli(in, args, 4);
    CHECK_INT(r.rc, 1);
    CHECK_CONTAINS(r.err, "line 2: timestamp before 1970");
    CHECK_CONTAINS(r.err, "line 3: value is not finite");
    char want[128];
    snprintf(want, sizeof want, "m,60,mean,1699999980.000000000,%g\n", v);
    CHECK_CONTAINS(r.out, want);
    run_free(&r);
    /* after 2200-01-01T00:00:00Z (GA_TS_MAX): rejected with its line; the
     * bound itself is aggregated */
    snprintf(in, sizeof in, "metric,timestamp,value\nm,9000000000,1\nm,2262-04-11T23:47:16Z,2\n"
             "m,7258118400.000000001,3\nm,7258118400,%g\n", v);
    r = run_cli(in, args, 4);
    CHECK_INT(r.rc, 1);
    CHECK_CONTAINS(r.err, "line 2: timestamp after 2200-01-01T00:00:00Z");
    CHECK_CONTAINS(r.err, "line 3: timestamp after 2200-01-01T00:00:00Z");
    CHECK_CONTAINS(r.err, "line 4: timestamp after 2200-01-01T00:00:00Z");
    snprintf(want, sizeof want, "m,60,mean,7258118400.000000000,%g\n", v);
    CHECK_STR(r.out, (snprintf(in, sizeof in, "metric,granularity,method,timestamp,value\n%s", want), in));
    run_free(&r);
    /* a granularity or back window past the limits: a usage error */
    const char *big[] = { "--granularity", "3651d", "--method", "mean" };
    r = run_cli("metric,timestamp,value\nm,1,1\n", big, 4);
    CHECK(r.rc != 0);
    CHECK_CONTAINS(r.err, "longer than 3650 days");
    run_free(&r);
}

static void test_usage_errors(void)
{
    const char *a1[] = { "--method", "mean" };
    struct run r = run_cli("metric,timestamp,value\n", a1, 2);
    CHECK_INT(r.rc, 2);
    CHECK_CONTAINS(r.err, "--granularity");
    run_free(&r);
    const char *a2[] = { "--granularity", "60", "--method", "mean,avg" };
    r = run_cli("metric,timestamp,value\n", a2, 4);
    CHECK_INT(r.rc, 2);
    CHECK_CONTAINS(r.err, "\"avg\"");
    run_free(&r);
    const char *a3[] = { "--granularity", "60,x", "--method", "mean" };
    r = run_cli("metric,timestamp,value\n", a3, 4);
    CHECK_INT(r.rc, 2);
    run_free(&r);
    const char *a4[] = { "--granularity", "60", "--method", "mean", "--bogus" };
    r = run_cli("metric,timestamp,value\n", a4, 5);
    CHECK_INT(r.rc, 2);
    run_free(&r);
    const char *a5[] = { "--help" };
    r = run_cli("", a5, 1);
    CHECK_INT(r.rc, 0);
    CHECK_CONTAINS(r.out, "Output JSON");
    run_free(&r);
}

static void test_timespan_read_side(void)
{
    const char *args[] = { "--granularity", "60", "--timespan", "120", "--method", "max" };
    char in[512];
    double v[4];
    for (int i = 0; i < 4; i++)
        v[i] = (double)(rnd() % 1000);
    snprintf(in, sizeof in, "metric,timestamp,value\nm,1700000040,%g\nm,1700000100,%g\n"
             "m,1700000160,%g\nm,1700000220,%g\n", v[0], v[1], v[2], v[3]);
    struct run r = run_cli(in, args, 6);
    CHECK_INT(r.rc, 0);
    /* newest bucket 1700000220: keep > 1700000100 */
    CHECK(!strstr(r.out, "1700000100.000000000"));
    char want[128];
    snprintf(want, sizeof want, "m,60,max,1700000160.000000000,%g\nm,60,max,1700000220.000000000,%g\n",
             v[2], v[3]);
    CHECK_CONTAINS(r.out, want);
    run_free(&r);
}

void run_tests(void)
{
    RUN(test_csv_mean_count_and_order);
    RUN(test_rfc3339_equals_epoch_and_json);
    RUN(test_batches_and_late_points);
    RUN(test_bad_lines_reported_with_numbers);
    RUN(test_usage_errors);
    RUN(test_timespan_read_side);
}
