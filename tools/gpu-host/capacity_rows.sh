#!/bin/sh
# Rows of docs/PERFORMANCE.md "Capacity" on the GPU host, from the bundle
# (tools/gpu-host/bundle.sh), the daemon's shipped defaults unless a row
# names settings.  Each argument is one run:
#   METRICS:INTERVAL:SECONDS:BACKEND[:OPTION,VALUE,...]
# e.g.
#   tools/gpu-host/capacity_rows.sh 1000000:1s:600:gpu 2000000:1s:300:gpu \
#       1000000:1s:300:cpu 1000000:1s:120:gpu:--workers,1,--writers,4,--journal-gib,4
# The load generator sends with 4 connections in batches of 10,000
# (settings of the load, not of the daemon).  Each run's summary is
# printed; its whole output and gpuaggd.log go to $OUT (or /tmp/capacity).
# BUNDLE: the bundle's tarball (default build-bundle/gpuagg-bundle.tar.xz);
# unpacked once to /opt/root.
set -u
OUT=${OUT:-/tmp/capacity}
BUNDLE=${BUNDLE:-build-bundle/gpuagg-bundle.tar.xz}
mkdir -p "$OUT"
[ -x /opt/root/bench_capacity ] || tar -C /opt -xJf "$BUNDLE" || exit 1
nproc; free -g | head -2; df -h /tmp | tail -1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
for row in "$@"; do
    m=$(echo "$row" | cut -d: -f1); iv=$(echo "$row" | cut -d: -f2)
    s=$(echo "$row" | cut -d: -f3); be=$(echo "$row" | cut -d: -f4)
    extra=$(echo "$row" | cut -d: -f5- | tr ',' ' ')
    tag=$(echo "$m-$iv-$s-$be$extra" | tr -c 'A-Za-z0-9\n-' '_')
    dir=/tmp/cap-$tag
    rm -rf "$dir"
    echo "== $row"
    # shellcheck disable=SC2086
    /opt/root/bench_capacity --metrics "$m" --interval "$iv" --policy medium --duration "$s" \
        --backend "$be" --connections 4 --batch 10000 --max-metrics 0 --drain-timeout 60 \
        --out "$dir" $extra > "$OUT/cap-$tag.txt" 2>&1
    echo "exit $?"
    sed -n '/^== summary/,$p' "$OUT/cap-$tag.txt" | grep -v '^  this run is'
    grep 'event=sizing\|event=engine_workers\|event=engine_backends' "$dir/gpuaggd.log" 2>/dev/null | cut -c1-200
    cp "$dir/gpuaggd.log" "$OUT/gpuaggd-$tag.log" 2>/dev/null
done
