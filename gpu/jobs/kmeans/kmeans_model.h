/* kmeans_model.h — the k-means arithmetic shared bit for bit by the CPU
 * reference (C) and the CUDA kernels: distance, the built-in generator's rand_r,
 * and the fixed reduction trees.  Internal to gpu/jobs/kmeans*. */
#ifndef GA_JOBS_KMEANS_MODEL_H
#define GA_JOBS_KMEANS_MODEL_H

#include <stdint.h>

#ifdef __CUDACC__
#define GA_KM_HD __host__ __device__ __forceinline__
#define GA_KM_DEV __device__ __forceinline__   /* the arithmetic: host code uses the C build */
#define GA_KM_SUB(a, b) __dsub_rn((a), (b))
#define GA_KM_MUL(a, b) __dmul_rn((a), (b))
#define GA_KM_ADD(a, b) __dadd_rn((a), (b))
#else
#define GA_KM_HD static inline
#define GA_KM_DEV static inline
/* C11 with -std=c11 does not contract a*b+c into an fma (-ffp-contract=off). */
#define GA_KM_SUB(a, b) ((a) - (b))
#define GA_KM_MUL(a, b) ((a) * (b))
#define GA_KM_ADD(a, b) ((a) + (b))
#endif

#define GA_KM_RAND_MAX 2147483647

/* glibc's rand_r (stdlib/rand_r.c). */
GA_KM_HD int ga_km_rand_r(unsigned int *seed)
{
    unsigned int next = *seed;
    int result;
    next *= 1103515245u;
    next += 12345u;
    result = (int)((unsigned int)(next / 65536u) % 2048u);
    next *= 1103515245u;
    next += 12345u;
    result <<= 10;
    result ^= (int)((unsigned int)(next / 65536u) % 1024u);
    next *= 1103515245u;
    next += 12345u;
    result <<= 10;
    result ^= (int)((unsigned int)(next / 65536u) % 1024u);
    *seed = next;
    return result;
}

/* One term of the distance, (x_j - c_j)^2 rounded.  The distance is
 * d = t_0 + t_1 + ... left to right, starting from t_0: every t_j is >= +0
 * or NaN (never -0), so starting from 0.0 instead would give the same bits. */
GA_KM_DEV double ga_km_sq(double diff)
{
    return GA_KM_MUL(diff, diff);
}

GA_KM_HD double ga_km_lab_value(unsigned int *seed)
{
    return ((double)ga_km_rand_r(seed) / (double)GA_KM_RAND_MAX) * 10.0;
}

#endif
