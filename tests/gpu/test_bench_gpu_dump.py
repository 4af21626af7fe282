"""test_bench_gpu_dump.py — bench_gpu's pipeline load as carbonara gets it.

The GPU benchmark compares the pipeline with carbonara on the same points
(tools/bench/bench_gpu_carbonara.py, docs/PERFORMANCE.md); this checks the
chain without a GPU: `bench_gpu --dump-load` writes 20 batches of K metrics'
points (400 a metric a batch, metrics interleaved, each metric's points
10 s apart with jitter, in time order across batches, values a random walk)
in bench_engine's dump format, and the carbonara driver times exactly the
batches after the first 10, for each method set.

It also checks that bench_gpu refuses bad --batch / --set values.
"""
import os
import subprocess
import sys
import tempfile

import numpy
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "build", "bench", "bench_gpu")
DRIVER = os.path.join(ROOT, "tools", "bench", "bench_gpu_carbonara.py")
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import bench_engine                    # noqa: E402

K = 7


class Dump:
    """What `bench_gpu --dump-load` wrote, read back (fixture dump)."""
    tmp = path = rc = raw = ts = mid = steps = vals = None


D = Dump()


@pytest.fixture(scope="module", autouse=True)
def dump():
    with tempfile.TemporaryDirectory() as tmp:
        D.tmp = tmp
        D.path = os.path.join(tmp, "load.bin")
        D.rc = subprocess.run([BENCH, "--dump-load", D.path, "--dump-metrics", str(K)]).returncode
        if D.rc == 0:
            D.raw = bench_engine.read_dump(D.path)
            D.ts = numpy.concatenate([b["ts"] for b in D.raw])
            D.mid = numpy.concatenate([b["metric"] for b in D.raw])
            D.steps = [numpy.diff(D.ts[D.mid == m]) for m in range(K)]
            D.vals = numpy.concatenate([b["value"] for b in D.raw])
        yield


def test_dump_load_exits_0():
    assert D.rc == 0, "bench_gpu --dump-load exits 0 (no GPU needed)"


def test_20_batches():
    assert len(D.raw) == 20, "20 batches, got %d" % len(D.raw)


def test_400_points_a_metric_a_batch():
    assert all(len(b) == K * 400 for b in D.raw), "400 points a metric a batch"


def test_metrics_0_to_k():
    assert all(set(b["metric"].tolist()) == set(range(K)) for b in D.raw), "metrics 0..K-1 only"


def test_metrics_interleaved():
    assert all((b["metric"] == numpy.tile(numpy.arange(K), 400)).all() for b in D.raw), \
        "metrics interleaved, in arrival order"


def test_time_order():
    assert all((s > 0).all() for s in D.steps), "each metric's points in time order, all batches"


def test_10_s_apart():
    assert all(5e9 <= s.min() and s.max() <= 15e9 for s in D.steps), "10 s apart, jitter < 5 s"


def test_values_random_walk():
    assert numpy.isfinite(D.vals).all() and len(numpy.unique(D.vals)) > len(D.vals) // 2, \
        "values finite and varied (a random walk)"


def test_k_beyond_load_refused():
    bad = subprocess.run([BENCH, "--dump-load", D.path, "--dump-metrics", "10001"],
                         stderr=subprocess.PIPE, universal_newlines=True)
    assert bad.returncode == 2 and "--dump-metrics" in bad.stderr, \
        "a K beyond the load's metrics is refused, naming the option"


@pytest.mark.parametrize("bad_opt", [["--batch", "5"], ["--batch", "1e6"], ["--set", "medians"]],
                         ids=" ".join)
def test_bad_option_refused(bad_opt):
    r = subprocess.run([BENCH] + bad_opt, stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 2 and bad_opt[0] in r.stderr, \
        "bench_gpu %s is refused with the usage naming it" % " ".join(bad_opt)


@pytest.fixture(scope="module")
def driver():
    """bench_gpu_carbonara.py on 3 metrics, once: (exit status, its carbonara lines)."""
    out = subprocess.run([sys.executable, DRIVER, "--bench", BENCH, "--metrics", "3",
                          "--repeat", "1"], stdout=subprocess.PIPE, universal_newlines=True)
    kv = [dict(f.split("=", 1) for f in line.split()[1:]) for line in out.stdout.splitlines()
          if line.startswith("carbonara set=")]
    return out.returncode, kv


def test_driver_exits_0(driver):
    assert driver[0] == 0, "bench_gpu_carbonara.py exits 0"


def test_driver_three_sets(driver):
    assert [d["set"] for d in driver[1]] == ["basic", "median+90pct", "rate:mean"], "the three sets"


def test_driver_times_the_last_10_batches(driver):
    assert all(int(d["points"]) == 3 * 400 * 10 for d in driver[1]), "the 10 batches after 10 timed"


def test_driver_rate_for_each(driver):
    assert all(float(d["points_per_s"]) > 0 for d in driver[1]), "a rate for each"
