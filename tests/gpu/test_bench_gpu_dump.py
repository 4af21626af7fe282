#!/usr/bin/python3
"""test_bench_gpu_dump.py — bench_gpu's pipeline load as carbonara gets it.

The GPU benchmark compares the pipeline with carbonara on the same points
(tools/bench/bench_gpu_carbonara.py, docs/PERFORMANCE.md); this checks the
chain without a GPU: `bench_gpu --dump-load` writes 20 batches of K metrics'
points (400 a metric a batch, metrics interleaved, each metric's points
10 s apart with jitter, in time order across batches, values a random walk)
in bench_engine's dump format, and the carbonara driver times exactly the
batches after the first 10, for each method set.
    carbonara_dump: N passed, N failed, N skipped

It also checks that bench_gpu refuses bad --batch / --set values.
"""
import os
import subprocess
import sys
import tempfile

import numpy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "build", "bench", "bench_gpu")
DRIVER = os.path.join(ROOT, "tools", "bench", "bench_gpu_carbonara.py")
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import bench_engine                    # noqa: E402

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s" % what)


def main():
    k = 7
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "load.bin")
        r = subprocess.run([BENCH, "--dump-load", path, "--dump-metrics", str(k)])
        check(r.returncode == 0, "bench_gpu --dump-load exits 0 (no GPU needed)")
        raw = bench_engine.read_dump(path)
        check(len(raw) == 20, "20 batches, got %d" % len(raw))
        check(all(len(b) == k * 400 for b in raw), "400 points a metric a batch")
        check(all(set(b["metric"].tolist()) == set(range(k)) for b in raw), "metrics 0..K-1 only")
        check(all((b["metric"] == numpy.tile(numpy.arange(k), 400)).all() for b in raw),
              "metrics interleaved, in arrival order")
        ts = numpy.concatenate([b["ts"] for b in raw])
        mid = numpy.concatenate([b["metric"] for b in raw])
        steps = [numpy.diff(ts[mid == m]) for m in range(k)]
        check(all((s > 0).all() for s in steps), "each metric's points in time order, all batches")
        check(all(5e9 <= s.min() and s.max() <= 15e9 for s in steps), "10 s apart, jitter < 5 s")
        vals = numpy.concatenate([b["value"] for b in raw])
        check(numpy.isfinite(vals).all() and len(numpy.unique(vals)) > len(vals) // 2,
              "values finite and varied (a random walk)")
        bad = subprocess.run([BENCH, "--dump-load", path, "--dump-metrics", "10001"],
                             stderr=subprocess.PIPE, universal_newlines=True)
        check(bad.returncode == 2 and "--dump-metrics" in bad.stderr,
              "a K beyond the load's metrics is refused, naming the option")
        for bad_opt in (["--batch", "5"], ["--batch", "1e6"], ["--set", "medians"]):
            r = subprocess.run([BENCH] + bad_opt, stderr=subprocess.PIPE, universal_newlines=True)
            check(r.returncode == 2 and bad_opt[0] in r.stderr,
                  "bench_gpu %s is refused with the usage naming it" % " ".join(bad_opt))
        out = subprocess.run([sys.executable, DRIVER, "--bench", BENCH, "--metrics", "3",
                              "--repeat", "1"], stdout=subprocess.PIPE, universal_newlines=True)
        check(out.returncode == 0, "bench_gpu_carbonara.py exits 0")
        kv = [dict(f.split("=", 1) for f in l.split()[1:]) for l in out.stdout.splitlines()
              if l.startswith("carbonara set=")]
        check([d["set"] for d in kv] == ["basic", "median+90pct", "rate:mean"], "the three sets")
        check(all(int(d["points"]) == 3 * 400 * 10 for d in kv), "the 10 batches after 10 timed")
        check(all(float(d["points_per_s"]) > 0 for d in kv), "a rate for each")
    print("carbonara_dump: %d passed, %d failed, 0 skipped" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
