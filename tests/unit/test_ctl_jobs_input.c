/* test_ctl_jobs_input.c — what the job kinds read: the matrix format (binary
 * "GAMX", in place or copied, and CSV; every refusal with its reason), the
 * input file of input_path (read by the worker; a path that no longer
 * resolves to itself is refused), and the kinds run through the job manager
 * on random data: resample equal to gpu/resample on the same CSV, dot and
 * kmeans equal to their CPU references. */
#include "tests/unit/harness.h"

#include <stdlib.h>
#include <unistd.h>

#include <msgpack.h>

#include "daemon/jobs/job_kinds.h"
#include "daemon/jobs/matrix.h"
#include "gpu/jobs/dot/dot.h"
#include "gpu/jobs/kmeans/kmeans.h"
#include "gpu/jobs/resample/resample.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t rnd(void)
{
    return harness_xorshift(&rng);
}

/* Non-zero values in [-100, 100). */
static double rval(void)
{
    double v = 0;
    while (v == 0)
        v = (double)(rnd() >> 11) * 0x1.0p-53 * 200 - 100;
    return v;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A GAMX buffer of rows x cols doubles at offset `shift` of a malloc'ed block. */
static uint8_t *gamx(int64_t rows, int64_t cols, const double *v, size_t shift, size_t *len)
{
    *len = MATRIX_HEADER + (size_t)(rows * cols) * 8;
    uint8_t *b = malloc(*len + shift), *p = b + shift;
    memcpy(p, "GAMX", 4);
    put_le(p + 4, 8, 4);
    put_le(p + 8, (uint64_t)rows, 8);
    put_le(p + 16, (uint64_t)cols, 8);
    memcpy(p + MATRIX_HEADER, v, (size_t)(rows * cols) * 8);
    return b;
}

static void test_matrix_binary(void)
{
    double v[12];
    for (int i = 0; i < 12; i++)
        v[i] = rval();
    for (size_t shift = 0; shift < 2; shift++) {          /* aligned: in place; not: copied */
        size_t len;
        uint8_t *b = gamx(3, 4, v, shift, &len);
        struct matrix m;
        char err[256];
        CHECK_INT(matrix_parse(b + shift, len, &m, err, sizeof err), 0);
        CHECK(m.rows == 3 && m.cols == 4 && m.elem == 8 && !m.csv);
        CHECK_INT(m.owned, (int)shift);
        for (int i = 0; i < 12; i++)
            CHECK(matrix_at(&m, i / 4, i % 4) == v[i]);
        matrix_free(&m);
        /* one byte short, a bad element size, an empty matrix */
        CHECK_INT(matrix_parse(b + shift, len - 1, &m, err, sizeof err), GA_EINVAL);
        CHECK_CONTAINS(err, "needs 96 bytes after the header, got 95");
        b[shift + 4] = 2;
        CHECK_INT(matrix_parse(b + shift, len, &m, err, sizeof err), GA_EINVAL);
        CHECK_CONTAINS(err, "element size");
        b[shift + 4] = 8;
        put_le(b + shift + 8, 0, 8);
        CHECK_INT(matrix_parse(b + shift, len, &m, err, sizeof err), GA_EINVAL);
        CHECK_CONTAINS(err, "empty or too large");
        CHECK_INT(matrix_parse(b + shift, 10, &m, err, sizeof err), GA_EINVAL);
        CHECK_CONTAINS(err, "header is 24 bytes");
        free(b);
    }
}

static void test_matrix_csv(void)
{
    char text[4096];
    double v[30];
    size_t n = (size_t)snprintf(text, sizeof text, "x,y,z\r\n# a comment\n\n");
    for (int r = 0; r < 10; r++) {
        for (int c = 0; c < 3; c++)
            v[r * 3 + c] = rval();
        n += (size_t)snprintf(text + n, sizeof text - n, "%.17g, %.17g,%.17g\n", v[r * 3],
                              v[r * 3 + 1], v[r * 3 + 2]);
    }
    struct matrix m;
    char err[256];
    CHECK_INT(matrix_parse((const uint8_t *)text, n, &m, err, sizeof err), 0);
    CHECK(m.rows == 10 && m.cols == 3 && m.csv && m.elem == 8);
    for (int i = 0; i < 30; i++)
        CHECK(matrix_at(&m, i / 3, i % 3) == v[i]);
    matrix_free(&m);
    const char *bad[][2] = {
        { "1,2\n3\n", "line 2: 1 fields, expected 2" },
        { "1,2\n3,x\n", "line 2, field 2 is not a number (1 bytes)" },
        { "h1,h2\nh3,h4\n", "line 2, field 1" },
        { "# nothing\n", "no rows" },
        { "1,,2\n", "field 2" },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK_INT(matrix_parse((const uint8_t *)bad[k][0], strlen(bad[k][0]), &m, err,
                               sizeof err), GA_EINVAL);
        CHECK_CONTAINS(err, bad[k][1]);
    }
}

/* ---- kinds through the job manager ----------------------------------------------- */

static struct ga_jobs *start(void)
{
    struct ga_jobs *m = NULL;
    struct ga_jobs_opts o = { .kinds = ga_job_kinds, .workers = 2, .max_queued = 16,
                              .result_ttl_s = 60 };
    CHECK_INT(ga_jobs_start(&m, &o), 0);
    return m;
}

static void param(struct ga_job_params *p, const char *k, const char *v)
{
    snprintf(p->kv[p->n].key, GA_JOB_KEY_MAX, "%s", k);
    snprintf(p->kv[p->n].value, GA_JOB_VALUE_MAX, "%s", v);
    p->n++;
}

/* Run a job to its end; returns its result code, bytes in *res (free). */
static int run_job(struct ga_jobs *m, const char *kind, const struct ga_job_params *p,
                   const void *in, size_t inlen, uint8_t **res, size_t *len, struct ga_job_info *info)
{
    uint64_t id;
    char err[512];
    int rc = ga_jobs_submit(m, kind, p, in, inlen, 0, &id, err, sizeof err);
    CHECK_INT(rc, 0);
    if (rc)
        return rc;
    for (int i = 0; i < 20000; i++) {
        rc = ga_jobs_result(m, id, res, len, info);
        if (rc != GA_EAGAIN)
            return rc;
        usleep(1000);
    }
    return GA_ETIMEDOUT;
}

static char *random_points_csv(size_t *len)
{
    char *buf;
    FILE *f = open_memstream(&buf, len);
    fputs("metric,timestamp,value\n", f);
    int64_t t = 1700000000;
    for (int i = 0; i < 2000; i++) {
        t += 1 + (int64_t)(rnd() % 9);
        fprintf(f, "m%d,%lld.%03d,%.17g\n", (int)(rnd() % 5), (long long)t, (int)(rnd() % 1000),
                rval());
        if (i == 1000)
            fputs("#batch\nm1,1600000000,1\n", f);          /* a late point */
    }
    fputs("m2,-1,5\n", f);                                   /* rejected */
    fclose(f);
    return buf;
}

static void test_resample_kind_and_input_path(void)
{
    size_t len;
    char *csv = random_points_csv(&len);
    /* the reference: gpu/resample on the same bytes */
    struct ga_resample_spec spec = { "60,300", "mean,max,90pct", NULL, 0 };
    struct ga_policy pol;
    char err[512], *want, *late;
    size_t wlen, llen;
    CHECK_INT(ga_resample_policy(&spec, "", &pol, err, sizeof err), 0);
    FILE *in = fmemopen(csv, len, "r"), *out = open_memstream(&want, &wlen);
    FILE *lf = open_memstream(&late, &llen);
    struct ga_resample_io io = { .in = in, .out = out, .late = lf };
    CHECK_INT(ga_resample_run(&pol, NULL, 1, &io, NULL, err, sizeof err), 0);
    fclose(in);
    fclose(out);
    fclose(lf);

    char path[] = "/tmp/ga_job_inputXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, csv, len) == (ssize_t)len);
    close(fd);
    struct ga_jobs *m = start();
    for (int by_path = 0; by_path < 2; by_path++) {
        struct ga_job_params p = { 0 };
        param(&p, "granularity", "60,300");
        param(&p, "method", "mean,max,90pct");
        if (by_path)
            param(&p, JOB_KIND_INPUT_PATH, path);
        uint8_t *res = NULL;
        size_t rlen = 0;
        struct ga_job_info info;
        CHECK_INT(run_job(m, "resample", &p, by_path ? NULL : csv, by_path ? 0 : len, &res, &rlen,
                          &info), 0);
        msgpack_zone z;
        msgpack_object o;
        size_t off = 0;
        msgpack_zone_init(&z, 4096);
        CHECK_INT(msgpack_unpack((const char *)res, rlen, &off, &z, &o), MSGPACK_UNPACK_SUCCESS);
        const char *s;
        size_t n;
        uint64_t rejected = 0;
        CHECK_INT(mp_get_str(&o, "output", &s, &n), 0);
        CHECK(n == wlen && memcmp(s, want, n) == 0);
        CHECK_INT(mp_get_str(&o, "late", &s, &n), 0);
        CHECK(n == llen && memcmp(s, late, n) == 0 && llen > 0);
        CHECK_INT(mp_get_uint(&o, "rejected_points", &rejected), 0);
        CHECK_INT(rejected, 1);
        msgpack_zone_destroy(&z);
        free(res);
    }
    /* the path now a symlink to elsewhere: the worker refuses it */
    char moved[sizeof path + 8];
    snprintf(moved, sizeof moved, "%s.real", path);
    CHECK_INT(rename(path, moved), 0);
    CHECK_INT(symlink(moved, path), 0);
    struct ga_job_params p = { 0 };
    param(&p, "granularity", "60");
    param(&p, "method", "mean");
    param(&p, JOB_KIND_INPUT_PATH, path);
    uint8_t *res = NULL;
    size_t rlen;
    struct ga_job_info info;
    CHECK_INT(run_job(m, "resample", &p, NULL, 0, &res, &rlen, &info), GA_EBADARG);
    CHECK_CONTAINS(info.error, "now resolves to");
    unlink(path);
    CHECK_INT(run_job(m, "resample", &p, NULL, 0, &res, &rlen, &info), GA_ENOENT);
    CHECK_CONTAINS(info.error, "No such file");
    unlink(moved);
    ga_jobs_stop(m);
    free(csv);
    free(want);
    free(late);
}

static void test_dot_and_kmeans_kinds(void)
{
    struct ga_jobs *m = start();
    /* dot on a 2-row binary matrix equals ga_dot_cpu */
    int64_t n = 1000 + (int64_t)(rnd() % 1000);
    double *xy = malloc(2 * (size_t)n * sizeof *xy), ref = 0, abs_ref = 0, dot = 0;
    for (int64_t i = 0; i < 2 * n; i++)
        xy[i] = rval();
    size_t len;
    uint8_t *b = gamx(2, n, xy, 0, &len);
    struct ga_dot_params dp = { GA_DOT_F64, n };
    char err[256];
    CHECK_INT(ga_dot_cpu(&dp, xy, xy + n, &ref, &abs_ref, 1, err, sizeof err), 0);
    struct ga_job_params p = { 0 };
    uint8_t *res;
    size_t rlen;
    struct ga_job_info info;
    CHECK_INT(run_job(m, "dot", &p, b, len, &res, &rlen, &info), 0);
    msgpack_zone z;
    msgpack_object o;
    size_t off = 0;
    msgpack_zone_init(&z, 4096);
    CHECK_INT(msgpack_unpack((const char *)res, rlen, &off, &z, &o), MSGPACK_UNPACK_SUCCESS);
    CHECK_INT(mp_get_double(&o, "dot", &dot), 0);
    CHECK(dot == ref);
    msgpack_zone_destroy(&z);
    free(res);
    free(b);

    /* kmeans on a CSV equals ga_kmeans_cpu's centres, bit for bit */
    int nobjs = 500, k = 4;
    char *csv;
    size_t clen;
    FILE *f = open_memstream(&csv, &clen);
    for (int i = 0; i < nobjs; i++)
        fprintf(f, "%.17g,%.17g\n", xy[2 * i], xy[2 * i + 1]);
    fclose(f);
    struct ga_kmeans_params kp;
    ga_kmeans_params_default(&kp);
    kp.nobjs = nobjs;
    kp.coords = 2;
    kp.k = k;
    double centres[8];
    struct ga_kmeans_result kr = { centres, NULL, 0, 0 };
    CHECK_INT(ga_kmeans_cpu(&kp, xy, &kr, 1, NULL, NULL, err, sizeof err), 0);
    p = (struct ga_job_params){ 0 };
    param(&p, "k", "4");
    CHECK_INT(run_job(m, "kmeans", &p, csv, clen, &res, &rlen, &info), 0);
    off = 0;
    msgpack_zone_init(&z, 4096);
    CHECK_INT(msgpack_unpack((const char *)res, rlen, &off, &z, &o), MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *c = mp_map_get(&o, "centres");
    CHECK(c && c->type == MSGPACK_OBJECT_ARRAY && c->via.array.size == (uint32_t)k);
    for (int i = 0; c && i < k * 2; i++)
        CHECK(c->via.array.ptr[i / 2].via.array.ptr[i % 2].via.f64 == centres[i]);
    int64_t loops = 0;
    CHECK_INT(mp_get_int(&o, "loops", &loops), 0);
    CHECK_INT(loops, kr.loops);
    msgpack_zone_destroy(&z);
    free(res);
    free(csv);
    free(xy);
    ga_jobs_stop(m);
}

void run_tests(void)
{
    RUN(test_matrix_binary);
    RUN(test_matrix_csv);
    RUN(test_resample_kind_and_input_path);
    RUN(test_dot_and_kmeans_kinds);
}
