// wait_cost.cu — what one host wait for a count costs a GPU feed: a loop of
// k small kernels, then (optionally) a count read and a stream wait, the way
// gpu/cuda/cuda_backend.cu reads counts (an 8-byte copy to page-locked
// memory, or a one-thread kernel's store into mapped memory).  Prints µs
// an iteration; the difference to "no_read" is the wait's cost.
//   nvcc -O2 -arch=sm_90 -o build-gpu/wait_cost tools/gpu-host/wait_cost.cu
#include <chrono>
#include <cstdio>

#include <cuda_runtime.h>

__global__ void work(unsigned long long *c, float *a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        a[i] = a[i] * 1.0001f + 1.0f;
    if (i == 0)
        atomicAdd(c, 1ULL);
}

__global__ void store(unsigned long long *dst, const unsigned long long *src) { *dst = *src; }

static double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main()
{
    cudaSetDeviceFlags(cudaDeviceScheduleSpin | cudaDeviceMapHost);
    const int n = 1 << 20, iters = 2000;
    float *a;
    unsigned long long *c, *pin, *map, *dmap;
    cudaStream_t s;
    if (cudaMalloc(&a, n * 4) || cudaMalloc(&c, 8) || cudaHostAlloc(&pin, 8, 0) ||
        cudaHostAlloc(&map, 8, cudaHostAllocMapped) || cudaHostGetDevicePointer(&dmap, map, 0) ||
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) {
        fprintf(stderr, "wait_cost: no usable GPU\n");
        return 77;
    }
    static const char *const how[] = { "no_read", "copy+wait", "mapped+wait" };
    for (int k = 1; k <= 4; k *= 2)
        for (int mode = 0; mode < 3; mode++)
            for (int rep = 0; rep < 2; rep++) {       // the first a warm-up
                double t0 = now_s();
                for (int it = 0; it < iters; it++) {
                    for (int q = 0; q < k; q++)
                        work<<<n / 256, 256, 0, s>>>(c, a, n);
                    if (mode == 1)
                        cudaMemcpyAsync(pin, c, 8, cudaMemcpyDeviceToHost, s);
                    if (mode == 2)
                        store<<<1, 1, 0, s>>>(dmap, c);
                    if (mode)
                        cudaStreamSynchronize(s);
                }
                cudaStreamSynchronize(s);
                if (rep)
                    printf("kernels_per_read=%d mode=%s us_per_iteration=%.2f\n", k, how[mode],
                           (now_s() - t0) / iters * 1e6);
            }
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
