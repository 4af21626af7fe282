#!/bin/sh
# Build, on this machine, self-contained binaries of the apd / gf820 job
# kernels for a GPU host that lacks the daemon's libraries (libuv, msgpack,
# libpq, yaml): each links only gpu/jobs/{apd,gf820,special_fn,job_par}
# objects, proto/ga_err.o, proto/base/log.o and the static CUDA runtime.
# Output: build/jobs_actuarial/{test_special_fn,test_apd,test_gf820,bench_jobs_actuarial}.
#   tools/gpu-host/jobs_actuarial_build.sh          (CUDA=1 when nvcc is found)
# Then run tools/gpu-host/jobs_actuarial.sh on the GPU host (with build/jobs_actuarial copied there).
set -eu
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
OUTD=$B/jobs_actuarial
NVCC=$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
[ -n "$NVCC" ] || { echo "jobs_actuarial_build: no nvcc" >&2; exit 1; }
CUDA_HOME=$(dirname "$(dirname "$NVCC")")
objs="gpu/jobs/apd/apd.o gpu/jobs/apd/apd_gpu.o gpu/jobs/gf820/gf820.o gpu/jobs/gf820/gf820_gpu.o gpu/jobs/special_fn.o
      gpu/jobs/job_par.o proto/ga_err.o proto/base/log.o"
mains="tests/unit/harness.o tests/unit/test_special_fn.o tests/unit/test_apd.o tests/unit/test_gf820.o tools/bench/bench_jobs_actuarial.o"
targets=""
for o in $objs $mains; do targets="$targets $B/obj/$o"; done
make --no-print-directory BUILD="$B" CUDA=1 $targets
mkdir -p "$OUTD"
lib=""
for o in $objs; do lib="$lib $B/obj/$o"; done
link() {   # $1 = output name, $2... = main objects
    out=$1; shift
    mo=""
    for o in "$@"; do mo="$mo $B/obj/$o"; done
    cc -o "$OUTD/$out" $mo $lib -L"$CUDA_HOME/lib64" -lcudart_static -ldl -lrt -lpthread -lm \
       -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic
}
link test_special_fn tests/unit/test_special_fn.o tests/unit/harness.o
link test_apd tests/unit/test_apd.o tests/unit/harness.o
link test_gf820 tests/unit/test_gf820.o tests/unit/harness.o
link bench_jobs_actuarial tools/bench/bench_jobs_actuarial.o
ls -la "$OUTD"
