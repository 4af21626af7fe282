#!/bin/sh
# Build the GPU test and benchmark binaries as self-contained programs for a
# GPU host that lacks libuv / msgpack / libpq (a GPU host may have only the
# CUDA toolkit): only the objects they need, the CUDA runtime linked
# statically.  Run here (where nvcc and the build deps are), copy
# build-gpu/ to the GPU host, run tools/gpu-host/all_in_one.sh there.
#   tools/gpu-host/build.sh   -> build-gpu/{test_cuda_backend,bench_gpu,bench_engine_gpus,wait_cost}
set -eu
cd "$(dirname "$0")/../.."
make -s build/libgpuagg.a build/libgalab.a build/obj/tests/unit/harness.o build/obj/tests/unit/test_cuda_backend.o \
     build/obj/tools/bench/bench_gpu.o build/obj/tools/bench/bench_engine_gpus.o >/dev/null
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME=${NVCC%/bin/nvcc}
OBJ="build/obj/gpu/agg_cpu.o build/obj/gpu/agg_cpu_kernels.o build/obj/proto/base/pool.o
     build/obj/gpu/agg_cpu_regroup.o build/obj/gpu/agg_cpu_window.o build/obj/gpu/engine.o
     build/obj/gpu/engine_feed.o build/obj/gpu/engine_split.o
     build/obj/proto/points.o build/obj/proto/agg.o build/obj/proto/method.o build/obj/proto/policy.o build/obj/gpu/pol.o build/obj/gpu/result.o build/obj/gpu/cuda/cuda_backend.o
     build/obj/tools/bench/cuda/cuda_bench.o build/obj/gpu/cuda/gk_bucket.o build/obj/gpu/cuda/gk_bucket_long.o
     build/obj/gpu/cuda/gk_feed.o build/obj/gpu/cuda/gk_tasks.o build/obj/gpu/cuda/gk_prim.o build/obj/gpu/cuda/gk_sort.o build/obj/tools/bench/cuda/sort_check.o build/obj/tools/bench/cuda/search_check.o
     build/obj/gpu/cuda/device.o build/obj/proto/ga_err.o
     build/obj/proto/base/log.o"
LIBS="-L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++ -lm"
mkdir -p build-gpu
cc -o build-gpu/test_cuda_backend build/obj/tests/unit/test_cuda_backend.o build/obj/tests/unit/harness.o $OBJ $LIBS
cc -o build-gpu/bench_gpu build/obj/tools/bench/bench_gpu.o $OBJ $LIBS
cc -o build-gpu/bench_engine_gpus build/obj/tools/bench/bench_engine_gpus.o $OBJ $LIBS
"$NVCC" -O2 -arch=sm_90 -cudart static -o build-gpu/wait_cost tools/gpu-host/wait_cost.cu
for b in build-gpu/test_cuda_backend build-gpu/bench_gpu build-gpu/bench_engine_gpus build-gpu/wait_cost; do
    if ldd "$b" | grep -Eq 'libuv|libpq|msgpack|libcudart'; then
        echo "build.sh: $b links a library the GPU host lacks:" >&2
        ldd "$b" >&2
        exit 1
    fi
done
ls -l build-gpu
