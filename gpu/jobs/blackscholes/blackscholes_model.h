/* blackscholes_model.h — pieces of the Black-Scholes job shared by the CPU
 * reference (C) and the CUDA code: constants and the counter-based generator.
 * Internal to gpu/jobs/blackscholes*. */
#ifndef GA_JOBS_BLACKSCHOLES_MODEL_H
#define GA_JOBS_BLACKSCHOLES_MODEL_H

#include <stdint.h>

#ifdef __CUDACC__
#define GA_BS_HD __host__ __device__ __forceinline__
#else
#define GA_BS_HD static inline
#endif

/* Abramowitz-Stegun 26.2.17, as in the CUDA SDK sample. */
#define GA_BS_A1 0.31938153
#define GA_BS_A2 (-0.356563782)
#define GA_BS_A3 1.781477937
#define GA_BS_A4 (-1.821255978)
#define GA_BS_A5 1.330274429
#define GA_BS_P  0.2316419
#define GA_BS_RSQRT2PI 0.39894228040143267793994605993438

GA_BS_HD uint64_t ga_bs_mix(uint64_t seed, uint64_t k)
{
    uint64_t z = seed + (k + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Value k (0 = S, 1 = X, 2 = T) of option i. */
GA_BS_HD float ga_bs_gen(uint64_t seed, int64_t i, int k, float lo, float hi)
{
    float t = (float)(ga_bs_mix(seed, 3 * (uint64_t)i + (uint64_t)k) >> 40) * (1.0f / 16777216.0f);
    return (1.0f - t) * lo + t * hi;
}

#endif
