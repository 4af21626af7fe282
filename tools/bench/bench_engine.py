#!/usr/bin/python3
"""bench_engine.py — engine (CPU backend) against Gnocchi 4.4 carbonara.

Runs build/bench/bench_engine for each size and method set with 1 thread and
with every core, and carbonara (python3-gnocchi) on the same points in the
same run, then prints a Markdown table (docs/PERFORMANCE.md keeps one).

    /usr/bin/python3 tools/bench/bench_engine.py [--sizes 1e6,1e7,1e8]
        [--metrics 10000] [--batch 1000000] [--granularity 60,3600]
        [--carbonara-calls 2000] [--sets all] [--threads N]

Load: bench_engine.c's synthetic load (every metric a random walk sampled
each 10 s, batches of --batch points, 100 points per metric per batch at the
defaults).  Carbonara runs what metricd's add_measures_to_metrics computes
for each metric of each batch — numpy.sort, BoundTimeSerie.set_values and
the aggregation callback (group_serie + AggregatedTimeSerie per method) —
but not splitting, serialisation nor storage I/O, so its figures are an
upper bound on metricd's speed and the speed-ups a lower bound.  Python runs
on one core; it is timed on the first K metrics over the whole run
(K * batches ~ --carbonara-calls set_values calls), the exact points
bench_engine dumps, and reported per point.

Per-core figures are points per CPU-second (process CPU time of the timed
calls, all threads), so other load on the machine barely moves them; the
"total" figure is points per wall-clock second and needs an idle machine.
Each figure is the best of --repeat runs (gpuagg: sizes up to 10M;
carbonara: repeat - 1 runs).
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy

if not hasattr(numpy, "int"):          # carbonara's Npct on numpy >= 1.24
    numpy.int = int
from gnocchi import carbonara          # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "build", "bench", "bench_engine")
BASIC = ["count", "sum", "mean", "min", "max", "first", "last", "std"]
SETS = [(m, [m], 20) for m in BASIC] + [
    ("median", ["median"], 5),
    ("90pct", ["90pct"], 5),
    ("rate:mean", ["rate:mean"], 20),
    ("all basic", BASIC, 20),
    ("all (basic+median+90pct+rate:mean)", BASIC + ["median", "90pct", "rate:mean"], 5),
]
DUMP_DT = numpy.dtype([("ts", "<i8"), ("value", "<f8"), ("metric", "<i8")])


def run_engine(n, a, methods, threads, dump=None, dump_k=0):
    """Best (wall points/s, CPU points/s) of a.repeat runs (1 above 10M)."""
    wall = cpu = 0.0
    for i in range(a.repeat if n <= 10 ** 7 else 1):
        kv = run_engine_once(n, a, methods, threads, dump if i == 0 else None, dump_k)
        wall = max(wall, float(kv["points_per_s"]))
        cpu = max(cpu, float(kv["points_per_cpu_s"]))
    return wall, cpu


def run_engine_once(n, a, methods, threads, dump=None, dump_k=0):
    cmd = [BENCH, "--points", str(n), "--metrics", str(a.metrics), "--batch", str(a.batch),
           "--threads", str(threads), "--granularity", a.granularity,
           "--method", ",".join(methods)]
    if dump:
        cmd += ["--dump", dump, "--dump-metrics", str(dump_k)]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout
    return dict(f.split("=", 1) for f in out.split())


def read_dump(path):
    """[batch] -> its records (DUMP_DT), in arrival order."""
    batches = []
    with open(path, "rb") as f:
        while True:
            c = numpy.fromfile(f, dtype="<i8", count=1)
            if not len(c):
                return batches
            batches.append(numpy.fromfile(f, dtype=DUMP_DT, count=int(c[0])))


def load_dump(path):
    """[batch] -> [(metric, ts ns array, values array)], arrival order kept."""
    batches = []
    for recs in read_dump(path):
        per = []
        order = numpy.argsort(recs["metric"], kind="stable")
        ms, starts = numpy.unique(recs["metric"][order], return_index=True)
        bounds = list(starts[1:]) + [len(order)]
        for m, s, e in zip(ms, starts, bounds):
            idx = order[s:e]
            per.append((int(m), recs["ts"][idx].astype("datetime64[ns]"),
                        recs["value"][idx].copy()))
        batches.append(per)
    return batches


def run_carbonara(batches, grans_s, methods, timed_from=0):
    """Seconds carbonara takes, metricd's compute path, and the points, of
    the batches from index timed_from on (the ones before run untimed)."""
    aggs = [carbonara.Aggregation(m, numpy.timedelta64(g, "s"), None)
            for g in sorted(grans_s) for m in methods]
    block = numpy.timedelta64(max(grans_s), "s")
    back_window = 1 if any(m.startswith("rate:") for m in methods) else 0
    bounds, npts, busy = {}, 0, 0.0
    for bi, per in enumerate(batches):
        timed = bi >= timed_from
        for m, ts, vals in per:
            raw = carbonara.make_timeseries(ts, vals)
            npts += len(raw) if timed else 0
            t0 = time.process_time()
            measures = numpy.sort(raw, order="timestamps")
            bound = bounds.get(m)
            if bound is None:
                bound = bounds[m] = carbonara.BoundTimeSerie(block_size=block,
                                                             back_window=back_window)

            def callback(bts, measures=measures):
                tstamp = max(bts.first, measures["timestamps"][0])
                grouped = {}
                out = []
                for agg in aggs:
                    g = agg.granularity
                    if g not in grouped:
                        grouped[g] = bts.group_serie(g, carbonara.round_timestamp(tstamp, g))
                    out.append(carbonara.AggregatedTimeSerie.from_grouped_serie(
                        grouped[g], agg))
                return out

            bound.set_values(measures, before_truncate_callback=callback)
            busy += time.process_time() - t0 if timed else 0.0
    return busy, npts


def fmt_rate(x):
    if x >= 1e6:
        return "%.1f M" % (x / 1e6)
    return "%.0f k" % (x / 1e3)


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return "%s, %d cores, %.0f GiB, %s" % (cpu, os.cpu_count(), mem, platform.platform())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e6,1e7,1e8")
    ap.add_argument("--metrics", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=1000000)
    ap.add_argument("--granularity", default="60,3600")
    ap.add_argument("--carbonara-calls", type=int, default=2000)
    ap.add_argument("--sets", default="all", help="comma list of set names, or all")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=3,
                    help="best of N runs for each figure (sizes up to 10M)")
    a = ap.parse_args()
    if not os.access(BENCH, os.X_OK):
        sys.exit("missing %s: run make" % BENCH)
    sizes = [int(float(s)) for s in a.sizes.split(",")]
    sets = SETS if a.sets == "all" else [s for s in SETS if s[0] in a.sets.split(",")]
    grans_s = [int(g) for g in a.granularity.split(",")]
    print("machine: %s; load average %.2f" % (machine(), os.getloadavg()[0]))
    print("command: %s" % " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]))
    print()
    print("| points | methods | gpuagg per core (1 thread) | gpuagg %d threads, total "
          "| gpuagg %d threads, per core | carbonara per core | carbonara sample "
          "| speed-up per core | goal |" % (a.threads, a.threads))
    print("|---|---|---|---|---|---|---|---|---|")
    sys.stdout.flush()
    fails = 0
    for n in sizes:
        nbatches = max(1, n // a.batch)
        k = max(1, min(a.metrics, a.carbonara_calls // nbatches))
        with tempfile.TemporaryDirectory() as tmp:
            dump = os.path.join(tmp, "points.bin")
            batches = None
            for name, methods, goal in sets:
                _, one = run_engine(n, a, methods, 1, dump if batches is None else None, k)
                if batches is None:
                    batches = load_dump(dump)
                many, many_cpu = run_engine(n, a, methods, a.threads)
                carb = 0.0
                for _ in range(max(1, a.repeat - 1)):
                    secs, npts = run_carbonara(batches, grans_s, methods)
                    carb = max(carb, npts / secs)
                speed = one / carb
                ok = speed >= goal
                fails += not ok
                print("| %s | %s | %s/s | %s/s | %s/s | %s/s | %d metrics, %s points | %.0f× | "
                      "%s %d× |" % ("{:,}".format(n), name, fmt_rate(one), fmt_rate(many),
                                    fmt_rate(many_cpu), fmt_rate(carb), k,
                                    "{:,}".format(npts), speed, "ok" if ok else "MISSED", goal))
                sys.stdout.flush()
    print()
    print("load average at the end: %.2f" % os.getloadavg()[0])
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
