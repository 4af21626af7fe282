#!/bin/sh
# Multi-GPU engine probe (a host of 4 GPUs): the engines of bench_engine_gpus,
# each in its own process, in the steady state (the default warm-up), and
# the N-GPU engines after one warm-up batch only (--warmup 1: the windows
# still growing; skipped with "quick").
#   with build-gpu/ (tools/gpu-host/build.sh) on the host, run: sh tools/gpu-host/engine_gpus_warmup.sh [quick]
B="build-gpu/bench_engine_gpus --batch 10000000 --batches 10 --metrics 10000"
table() { sed -n '/^| engine/,$p' | grep -v '^$' | grep -v '^|---'; }
nvidia-smi -L
for g in 4 2; do
    for o in 1 2 4 5; do
        [ $g = 2 ] && { [ $o = 1 ] || [ $o = 4 ]; } && continue
        echo "== --gpus $g --only $o"; timeout 100 $B --gpus $g --only $o 2>&1 | table
    done
    [ "${1:-}" = quick ] && continue
    for o in 2 5; do
        echo "== --gpus $g --only $o --warmup 1"; timeout 100 $B --gpus $g --only $o --warmup 1 2>&1 | table
    done
done
