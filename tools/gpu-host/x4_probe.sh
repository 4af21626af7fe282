#!/bin/sh
# Multi-GPU engine probe (nvidia-h200-x4): the engines of bench_engine_gpus,
# each in its own process, steady state (default warm-up) and, for the
# N-GPU engines, after one warm-up batch only (the windows still growing).
#   carry build-gpu/ (tools/gpu-host/build.sh), run: sh tools/gpu-host/x4_probe.sh
B="build-gpu/bench_engine_gpus --batch 10000000 --batches 10 --metrics 10000"
table() { sed -n '/^| engine/,$p' | grep -v '^$'; }
nvidia-smi -L
for g in 4 2; do
    for o in 1 2 4 5; do
        [ $g = 2 ] && { [ $o = 1 ] || [ $o = 4 ]; } && continue
        echo "== --gpus $g --only $o"; timeout 100 $B --gpus $g --only $o 2>&1 | table
    done
    for o in 2 5; do
        echo "== --gpus $g --only $o --warmup 1"; timeout 100 $B --gpus $g --only $o --warmup 1 2>&1 | table
    done
done
