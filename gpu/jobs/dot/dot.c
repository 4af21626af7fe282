/* dot.c — CPU reference of the dot job (see dot.h). */
#include "gpu/jobs/dot/dot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu/jobs/job_par.h"
#include "proto/ga_err.h"

size_t ga_dot_elem_size(int dtype)
{
    return dtype == GA_DOT_F32 ? 4 : dtype == GA_DOT_F64 ? 8 : 0;
}

int ga_dot_validate(const struct ga_dot_params *p, char *err, size_t errlen)
{
    if (!p) {
        snprintf(err, errlen, "dot: params missing");
        return GA_EBADARG;
    }
    if (p->dtype != GA_DOT_F32 && p->dtype != GA_DOT_F64) {
        snprintf(err, errlen, "dtype must be f32 (0) or f64 (1), got %d", p->dtype);
        return GA_EBADARG;
    }
    if (p->n < 1 || p->n > GA_DOT_N_MAX) {
        snprintf(err, errlen, "n must be in 1..%lld, got %lld", (long long)GA_DOT_N_MAX, (long long)p->n);
        return GA_EBADARG;
    }
    return 0;
}

/* Pairwise sum over [lo, hi): the tree splits at lo + half (half = len/2),
 * leaves of at most 64 elements are summed in order.  The tree depends on n
 * alone, so any split among threads gives the same answer. */
#define LEAF 64

struct pw { double s, a; };

static struct pw leaf(int dtype, const void *x, const void *y, int64_t lo, int64_t hi)
{
    struct pw r = { 0.0, 0.0 };
    if (dtype == GA_DOT_F32) {
        const float *a = x, *b = y;
        for (int64_t i = lo; i < hi; i++) {
            double p = (double)a[i] * (double)b[i];
            r.s += p;
            r.a += fabs(p);
        }
    } else {
        const double *a = x, *b = y;
        for (int64_t i = lo; i < hi; i++) {
            double p = a[i] * b[i];
            r.s += p;
            r.a += fabs(p);
        }
    }
    return r;
}

static struct pw pairwise(int dtype, const void *x, const void *y, int64_t lo, int64_t hi)
{
    if (hi - lo <= LEAF)
        return leaf(dtype, x, y, lo, hi);
    int64_t mid = lo + (hi - lo) / 2;
    struct pw l = pairwise(dtype, x, y, lo, mid), r = pairwise(dtype, x, y, mid, hi);
    return (struct pw){ l.s + r.s, l.a + r.a };
}

/* The top DEPTH levels of the tree are cut into 2^DEPTH subtrees; threads
 * take subtrees, and the main thread joins them along the same tree. */
#define DEPTH 6
#define NSUB (1 << DEPTH)

struct job {
    int dtype;
    const void *x, *y;
    int64_t lo[NSUB], hi[NSUB];
    struct pw res[NSUB];
    int nsub;
};

static void cut(struct job *j, int64_t lo, int64_t hi, int depth, int *k)
{
    if (depth == 0 || hi - lo <= LEAF) {
        j->lo[*k] = lo;
        j->hi[*k] = hi;
        (*k)++;
        return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    cut(j, lo, mid, depth - 1, k);
    cut(j, mid, hi, depth - 1, k);
}

static struct pw join(const struct job *j, int64_t lo, int64_t hi, int depth, int *k)
{
    if (depth == 0 || hi - lo <= LEAF)
        return j->res[(*k)++];
    int64_t mid = lo + (hi - lo) / 2;
    struct pw l = join(j, lo, mid, depth - 1, k);
    struct pw r = join(j, mid, hi, depth - 1, k);
    return (struct pw){ l.s + r.s, l.a + r.a };
}

/* Subtree k, on a worker of job_par_for. */
static void sub_item(void *arg, size_t k, int worker)
{
    struct job *j = arg;
    j->res[k] = pairwise(j->dtype, j->x, j->y, j->lo[k], j->hi[k]);
}

int ga_dot_cpu(const struct ga_dot_params *p, const void *x, const void *y, double *out,
               double *abs_out, int nthreads, char *err, size_t errlen)
{
    int rc = ga_dot_validate(p, err, errlen);
    if (rc)
        return rc;
    if (!x || !y || !out) {
        snprintf(err, errlen, "dot: x, y and out must not be NULL");
        return GA_EBADARG;
    }
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return GA_ENOMEM;
    j->dtype = p->dtype;
    j->x = x;
    j->y = y;
    int k = 0;
    cut(j, 0, p->n, DEPTH, &k);
    j->nsub = k;
    if (nthreads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = c > 0 ? (int)c : 1;
    }
    if (nthreads > k)
        nthreads = k;
    if (p->n < 65536)
        nthreads = 1;
    job_par_for((size_t)k, nthreads, 0, sub_item, j, NULL, NULL);   /* threads: same answer */
    k = 0;
    struct pw r = join(j, 0, p->n, DEPTH, &k);
    *out = r.s;
    if (abs_out)
        *abs_out = r.a;
    free(j);
    return 0;
}
