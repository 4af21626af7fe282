// blackscholes_body.cuh — one option's float price on the device, as the SDK
// sample computes it (fast intrinsics, polynomial CND).  Shared by the job
// kernel and the benchmark's SDK-style baseline.
#pragma once

#include "gpu/jobs/blackscholes/blackscholes_model.h"

__device__ __forceinline__ float ga_bs_cndf(float d)
{
    const float k = __fdividef(1.0f, 1.0f + (float)GA_BS_P * fabsf(d));
    float c = (float)GA_BS_RSQRT2PI * __expf(-0.5f * d * d) *
              (k * ((float)GA_BS_A1 + k * ((float)GA_BS_A2 + k * ((float)GA_BS_A3 + k * ((float)GA_BS_A4 +
                                                                                    k * (float)GA_BS_A5)))));
    return d > 0 ? 1.0f - c : c;
}

__device__ __forceinline__ void ga_bs_body(float &call, float &put, float S, float X, float T, float R, float V)
{
    const float sqrt_t = sqrtf(T);
    const float d1 = __fdividef(__logf(S / X) + (R + 0.5f * V * V) * T, V * sqrt_t);
    const float d2 = d1 - V * sqrt_t;
    const float c1 = ga_bs_cndf(d1), c2 = ga_bs_cndf(d2);
    const float exp_rt = __expf(-R * T);
    call = S * c1 - X * exp_rt * c2;
    put = X * exp_rt * (1.0f - c2) - S * (1.0f - c1);
}
