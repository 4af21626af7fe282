#!/usr/bin/python3
"""bench_gpu_carbonara.py — Gnocchi 4.4 carbonara on bench_gpu's pipeline load.

bench_gpu's table compares the GPU pipeline with the CPU backend on the
same batches; this is its third column, carbonara on the same points:

    /usr/bin/python3 tools/bench/bench_gpu_carbonara.py [--bench build/bench/bench_gpu]
        [--metrics K] [--repeat 2]

bench_gpu --dump-load writes the pipeline's 20 batches of 4 M points (10,000
metrics, a point every 10 s, 400 a metric a batch), the points of the first
K metrics (default 500: 4 M points).  Carbonara then runs what metricd's
add_measures_to_metrics computes for each metric of each batch
(bench_engine.py's run_carbonara: numpy.sort, BoundTimeSerie.set_values,
group_serie + AggregatedTimeSerie per granularity and method; no storage
I/O, so an upper bound on metricd's speed), for each of bench_gpu's method
sets at 60 s and 1 h, back window 0 (1 with rate:).  The first 10 batches
run untimed, as bench_gpu's.  Figures: points per CPU-second, one Python
process, best of --repeat.  Its cost a point does not depend on how many
other metrics there are, so K metrics stand for the 10,000.
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_engine                    # noqa: E402  (shims numpy.int, imports carbonara)

SETS = [
    ("basic", ["mean", "sum", "min", "max", "count", "first", "last", "std"]),
    ("median+90pct", ["median", "90pct"]),
    ("rate:mean", ["rate:mean"]),
]
WARM = 10                              # bench_gpu's untimed batches


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=os.path.join(bench_engine.ROOT, "build", "bench", "bench_gpu"))
    ap.add_argument("--metrics", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "load.bin")
        subprocess.run([a.bench, "--dump-load", dump, "--dump-metrics", str(a.metrics)], check=True)
        batches = bench_engine.load_dump(dump)
    print("carbonara host=%s python=%s metrics=%d batches=%d timed_from=%d"
          % (platform.node() or "?", platform.python_version(), a.metrics, len(batches), WARM))
    print("| set | carbonara points/s (one core) | points timed |")
    print("|---|---|---|")
    for name, methods in SETS:
        best = None
        for _ in range(a.repeat):
            busy, npts = bench_engine.run_carbonara(batches, [60, 3600], methods, timed_from=WARM)
            rate = npts / busy if busy > 0 else 0.0
            best = rate if best is None or rate > best else best
        print("carbonara set=%s points=%d points_per_s=%.4g" % (name, npts, best))
        print("| %s | %s | %d |" % (name, bench_engine.fmt_rate(best), npts))


if __name__ == "__main__":
    main()
