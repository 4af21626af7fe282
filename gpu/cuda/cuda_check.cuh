// cuda_check.cuh — every CUDA runtime call goes through CUDA_CHECK, which
// records the failing call's file, line and text and returns GA_ECUDA from
// the enclosing function (which must return int).
#pragma once

#include <cuda_runtime.h>

extern "C" {
#include "proto/base/log.h"
#include "proto/ga_err.h"
}

#define CUDA_CHECK(call)                                                           \
    do {                                                                           \
        cudaError_t ga_cuda_err_ = (call);                                         \
        if (ga_cuda_err_ != cudaSuccess) {                                         \
            ga_log(GA_LOG_ERROR, "cuda_error", "call=\"%s\" file=%s line=%d err=%s msg=\"%s\"", \
                   #call, __FILE__, __LINE__, cudaGetErrorName(ga_cuda_err_),      \
                   cudaGetErrorString(ga_cuda_err_));                              \
            return GA_ECUDA;                                                       \
        }                                                                          \
    } while (0)
