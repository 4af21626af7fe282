#!/bin/sh
# jobs_peers.sh — every GPU check and benchmark of the dot, Black-Scholes and
# k-means jobs, in one go, on a machine with a CUDA GPU.  Logs go to $OUT
# (default ./jobs_peers_out); a short table is printed last.
#
#   tools/gpu-host/jobs_peers.sh --build   (here, with nvcc and `make` done) link
#                                      static binaries into build-jobs-peers/
#   tools/gpu-host/jobs_peers.sh           (there) run; uses build-jobs-peers/ if it
#                                      runs, else builds with the local nvcc
#   tools/gpu-host/jobs_peers.sh --kmeans-only   (there) only test_kmeans and the
#                                      k-means benchmark (lane and reg kernels,
#                                      CPU reference), no PyTorch comparison
#
# Binaries link only the job objects, proto/ga_err, proto/base/log, gpu/cuda/device
# and the static CUDA runtime: no libuv, libpq or msgpack on the GPU host.
set -u
cd "$(dirname "$0")/../.."
BIN=build-jobs-peers
OUT=${OUT:-jobs_peers_out}
mkdir -p "$OUT"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_HOME=$(dirname "$(dirname "$NVCC")")
FAMILIES="dot blackscholes kmeans"

link_all() {   # $1 = object dir
    o=$1
    jobs=""
    for f in $FAMILIES; do
        jobs="$jobs $o/gpu/jobs/$f/$f.o $o/gpu/jobs/$f/${f}_gpu.o $o/tools/bench/cuda/${f}_bench.o"
    done
    common="$jobs $o/gpu/cuda/device.o $o/proto/ga_err.o $o/proto/base/log.o"
    libs="-L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lpthread -lm -lstdc++"
    mkdir -p $BIN
    for t in $FAMILIES; do
        cc -o $BIN/test_$t $o/tests/unit/test_$t.o $o/tests/unit/harness.o $common $libs || return 1
    done
    cc -o $BIN/bench_jobs_peers $o/tools/bench/bench_jobs_peers.o $common $libs || return 1
}

build_here() {   # from `make` objects (build/obj); only the objects needed
    objs="build/obj/gpu/cuda/device.o build/obj/proto/ga_err.o build/obj/proto/base/log.o build/obj/tests/unit/harness.o
          build/obj/tools/bench/bench_jobs_peers.o"
    for f in $FAMILIES; do
        objs="$objs build/obj/gpu/jobs/$f/$f.o build/obj/gpu/jobs/$f/${f}_gpu.o build/obj/tools/bench/cuda/${f}_bench.o
              build/obj/tests/unit/test_$f.o"
    done
    make -s $objs || return 1
    link_all build/obj
}

build_there() {   # no make deps: compile the few sources directly
    o=build-jobs-peers-obj
    CF="-O2 -std=c11 -D_GNU_SOURCE -pthread -I. -DGA_HAVE_CUDA=1 -DGA_VERSION=\"0\""
    NF="-O3 -std=c++17 -I. -gencode arch=compute_90,code=sm_90"
    for s in $(for f in $FAMILIES; do echo gpu/jobs/$f/$f.c; done) proto/ga_err.c proto/base/log.c tests/unit/harness.c \
             tests/unit/test_dot.c tests/unit/test_blackscholes.c tests/unit/test_kmeans.c tools/bench/bench_jobs_peers.c; do
        mkdir -p $o/$(dirname $s); cc $CF -c $s -o $o/${s%.c}.o || return 1
    done
    for s in $(for f in $FAMILIES; do echo gpu/jobs/$f/${f}_gpu.cu tools/bench/cuda/${f}_bench.cu; done) gpu/cuda/device.cu; do
        mkdir -p $o/$(dirname $s); "$NVCC" $NF -c $s -o $o/${s%.cu}.o &
    done
    wait
    link_all $o
}

if [ "${1:-}" = "--build" ]; then
    build_here && ls -la $BIN
    exit $?
fi
KMONLY=0
if [ "${1:-}" = "--kmeans-only" ]; then
    KMONLY=1
fi

{
    echo "== host"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv
    nproc; "$NVCC" --version | tail -1
} >"$OUT/host.log" 2>&1
if [ ! -x $BIN/test_dot ]; then
    echo "no prebuilt binaries: building with $NVCC" | tee -a "$OUT/host.log"
    build_there >>"$OUT/host.log" 2>&1 || { echo "build failed"; tail -30 "$OUT/host.log"; exit 1; }
fi
# cuBLAS for the dot comparison (dlopen): the toolkit's or PyTorch's wheel.
for d in "$CUDA_HOME/lib64" $(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null); do
    [ -e "$d/libcublas.so.13" ] || [ -e "$d/libcublas.so.12" ] || [ -e "$d/libcublas.so" ] && LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export LD_LIBRARY_PATH GA_LOG_NO_TS=1

rows=""
TESTS=$FAMILIES
BENCH_ARGS=""
if [ $KMONLY = 1 ]; then
    TESTS=kmeans
    BENCH_ARGS="--only kmeans"
fi
for t in $TESTS; do
    timeout 90 $BIN/test_$t >"$OUT/test_$t.log" 2>&1
    rc=$?
    rows="$rows\n$(tail -1 "$OUT/test_$t.log") (rc $rc)"
done
timeout 85 $BIN/bench_jobs_peers $BENCH_ARGS --centres "$OUT/kmeans_centres.txt" >"$OUT/bench.log" 2>&1
echo "bench rc $?" >>"$OUT/bench.log"
if [ $KMONLY = 1 ]; then
    echo "skipped (--kmeans-only)" >"$OUT/torch.log"
elif python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    PYTHONUNBUFFERED=1 timeout 45 python3 tests/gpu/kmeans_torch.py --centres "$OUT/kmeans_centres.txt" \
        >"$OUT/torch.log" 2>&1
else
    echo "torch with CUDA not available" >"$OUT/torch.log"
fi

echo "== host"; cat "$OUT/host.log" | head -5
echo "== GPU checks (tests)"; grep -h -E "^blackscholes gpu|FAIL" "$OUT"/test_*.log | head -30
if [ -f "$OUT/test_kmeans.log" ]; then
    echo "kmeans gpu cases: $(grep -c '^kmeans gpu' "$OUT/test_kmeans.log"), with memberships and centres identical:" \
         "$(grep '^kmeans gpu' "$OUT/test_kmeans.log" | grep -c 'memberships differing 0, centres differing 0')"
    grep -h -E "^kmeans gpu n=4194304" "$OUT/test_kmeans.log"
fi
echo "== bench"; sed -n '/== \(dot\|kmeans\)/,$p' "$OUT/bench.log" | grep -v "^$" | head -60
echo "== torch"; grep -v "^$" "$OUT/torch.log" | tail -5
echo "== summary"; printf "$rows\n"; sed -n '/== summary/,$p' "$OUT/bench.log" | tail -4
