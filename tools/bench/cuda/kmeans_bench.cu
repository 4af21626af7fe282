// kmeans_bench.cu — ga_kmeans_bench_run: the whole iteration loop timed with
// events, the generated dataset generated on the device, plus generation and
// host-load (copy + transpose) times.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "gpu/cuda/cuda_check.cuh"
#include "gpu/jobs/kmeans/kmeans.cuh"
#include "tools/bench/cuda/bench_hooks.h"

namespace {

struct B {
    ga_kmeans_dev *d = nullptr;
    cudaStream_t s = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
};

int elapsed(B *b, double *ms)
{
    CUDA_CHECK(cudaEventSynchronize(b->e1));
    float f = 0;
    CUDA_CHECK(cudaEventElapsedTime(&f, b->e0, b->e1));
    *ms = f;
    return 0;
}

int bench(B *b, int device, const ga_kmeans_params *p, int reps, ga_kmeans_bench *o, double *centres)
{
    int rc;
    if ((rc = ga_kmeans_dev_create(device, p, &b->d)))
        return rc;
    o->kernel = ga_kmeans_dev_kernel(b->d);
    CUDA_CHECK(cudaStreamCreateWithFlags(&b->s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&b->e0));
    CUDA_CHECK(cudaEventCreate(&b->e1));
    // Load from host memory (row-major, pageable): copy + transpose.
    std::vector<double> host((size_t)p->nobjs * p->coords);
    ga_kmeans_generate(host.data(), p->nobjs, p->coords);
    CUDA_CHECK(cudaEventRecord(b->e0, b->s));
    if ((rc = ga_kmeans_dev_load(b->d, host.data(), b->s)))
        return rc;
    CUDA_CHECK(cudaEventRecord(b->e1, b->s));
    if ((rc = elapsed(b, &o->load_ms)))
        return rc;
    CUDA_CHECK(cudaEventRecord(b->e0, b->s));
    if ((rc = ga_kmeans_dev_generate(b->d, b->s)))
        return rc;
    CUDA_CHECK(cudaEventRecord(b->e1, b->s));
    if ((rc = elapsed(b, &o->gen_ms)))
        return rc;
    std::vector<double> t;
    for (int r = 0; r < reps + 1; r++) {   // the first run warms up
        CUDA_CHECK(cudaEventRecord(b->e0, b->s));
        if ((rc = ga_kmeans_dev_start(b->d, b->s)) || (rc = ga_kmeans_launch(b->d, p->max_loops, b->s)))
            return rc;
        CUDA_CHECK(cudaEventRecord(b->e1, b->s));
        double ms;
        if ((rc = elapsed(b, &ms)))
            return rc;
        if (r > 0)
            t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    o->iter_ms = t[t.size() / 2];
    int done = 0;
    if ((rc = ga_kmeans_dev_status(b->d, b->s, &o->loops, &done, &o->delta, 0, nullptr)))
        return rc;
    o->per_iter_ms = o->loops > 0 ? o->iter_ms / o->loops : 0;
    if (centres && (rc = ga_kmeans_dev_results(b->d, b->s, centres, nullptr)))
        return rc;
    return 0;
}

}  // namespace

extern "C" int ga_kmeans_bench_run(int device, const struct ga_kmeans_params *p, int reps,
                                   struct ga_kmeans_bench *out, double *centres, char *err, size_t errlen)
{
    int rc = ga_kmeans_validate(p, err, errlen);
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    B b;
    rc = bench(&b, device, p, reps < 1 ? 1 : reps, out, centres);
    if (b.e0)
        (void)cudaEventDestroy(b.e0);
    if (b.e1)
        (void)cudaEventDestroy(b.e1);
    if (b.s)
        (void)cudaStreamDestroy(b.s);
    int drc = ga_kmeans_dev_destroy(b.d);
    if (!rc)
        rc = drc;
    if (rc == GA_ECUDA)
        snprintf(err, errlen, "a CUDA call failed (logged as cuda_error with file and line)");
    return rc;
}
