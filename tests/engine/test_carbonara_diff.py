"""test_carbonara_diff.py — the engine against Gnocchi 4.4 carbonara.

Differential tests on seeded random series: the same points go through
  - `gpuaggctl resample --local` (one input file = one batch), and
  - build/bench/engine_replay (the engine API, several batches, late points),
and through tests/engine/carbonara_oracle.py (gnocchi.carbonara driven as
metricd drives it, with gpuagg's documented differences as explicit options).

Comparison, per (metric, granularity, method) series: the same buckets, and
  - count, min, max, first, last, median, Npct (and their rate:) — exactly;
  - mean, sum, std (and their rate:) — |a - b| <= 1e-12 * max(|a|, |b|, s),
    s = the largest |input| of the bucket (raw values, or deltas for rate:),
    which allows for a different summation order under cancellation.
Late points (engine_replay, and gpuaggctl's "late," lines) must be those
carbonara drops.  Multi-batch files also go through gpuaggctl ("#batch").

The oracle runs with gpuagg's documented differences (carbonara_oracle.py):
last-wins ties within a batch, exact int64 bucketing, only touched buckets
rewritten, NaN/Inf and pre-1970 points rejected.  Fixed cases show each one
against plain carbonara (dedupe_last_vs_min, float_bucketing,
rewrite_partial_bucket, rewrite_rate_gap, rewrite_pct_minpos,
nonfinite_rejected).

Each case is one test (pytest parametrizes test_case over them).  A failing
case prints its seed and leaves its input under
build/test-logs/carbonara_diff/.  GA_SEED=N reruns with another base seed,
GA_DIFF_CASES=N sets the number of random cases (2N through gpuaggctl, N
multi-batch through engine_replay; default 250), GA_CTL=PATH another
gpuaggctl.
"""
import collections
import datetime
import math
import os
import random
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import carbonara_oracle as co  # noqa: E402

ROOT = os.environ.get("GA_ROOT") or os.path.dirname(os.path.dirname(HERE))
CTL = os.environ.get("GA_CTL") or os.path.join(ROOT, "build", "bin", "gpuaggctl")
REPLAY = os.path.join(ROOT, "build", "bench", "engine_replay")
KEEP = os.path.join(ROOT, "build", "test-logs", "carbonara_diff")
NS = co.NS
BASE_SEED = int(os.environ.get("GA_SEED", "20240611"))
NCASES = int(os.environ.get("GA_DIFF_CASES", "250"))

BASES = ["mean", "sum", "min", "max", "count", "first", "last", "std", "median"]
ALL_METHODS = ([b for b in BASES] + ["%dpct" % i for i in range(1, 100)])
ALL_METHODS += ["rate:" + m for m in ALL_METHODS]          # 216, as Gnocchi's '*'
TOLERANT = ("mean", "sum", "std")
GRANS = [int(x * NS) for x in (0.1, 0.25, 0.5, 1, 1.5, 5, 7, 10, 35, 60, 300, 3600)]
T0 = 1700000000 * NS                                      # 2023-11-14T22:13:20Z


# -- case generation --------------------------------------------------------
def pick_methods(rng, i):
    """A random method set; case i also takes the i-th slice of ALL_METHODS
    so that every method runs in several cases."""
    k = 9
    start = (i * k) % len(ALL_METHODS)
    ms = set(ALL_METHODS[start:start + k])
    ms.update(rng.sample(BASES, rng.randint(1, 4)))
    if rng.random() < 0.5:
        ms.add("rate:" + rng.choice(BASES))
    ms.add("%dpct" % rng.randint(1, 99))
    return sorted(ms)


def pick_grans(rng):
    k = rng.choice([1, 1, 2, 2, 3])
    return sorted(rng.sample(GRANS, k))


def gen_values(rng, n):
    style = rng.choice(["float", "float", "int", "counter", "const", "mixed"])
    if style == "float":
        scale = 10 ** rng.uniform(-3, 6)
        off = rng.choice([0, 0, scale * 10])
        vs = [off + rng.gauss(0, scale) for _ in range(n)]
    elif style == "int":
        vs = [float(rng.randint(-50, 1000)) for _ in range(n)]
    elif style == "counter":
        vs, c = [], rng.uniform(0, 1e6)
        for _ in range(n):
            c = 0.0 if rng.random() < 0.02 else c + rng.expovariate(1 / 50.0)
            vs.append(round(c, rng.choice([0, 3, 6])))
    elif style == "const":
        vs = [rng.choice([1.0, -2.5, 1e100, 3e-100])] * n
    else:
        vs = [rng.choice([rng.gauss(0, 1), float(rng.randint(0, 9)), 1e15 + rng.random(),
                          -1e-9 * rng.random()]) for _ in range(n)]
    if all(v == 0 for v in vs):
        vs[0] = 1.0
    return vs


def gen_timestamps(rng, n, start, span, grans):
    style = rng.choice(["grid", "random", "bursty", "subsec"])
    if style == "grid":                    # on a grid: many points on bucket edges
        step = max(1, span // max(n, 1))
        unit = rng.choice([NS, NS // 4, NS // 1000, grans[0]])
        step = max(unit, step // unit * unit)
        base = start // unit * unit
        ts = [base + i * step for i in range(n)]
    elif style == "random":
        ts = sorted(start + rng.randrange(max(span, 1)) for _ in range(n))
    elif style == "bursty":                # clusters separated by gaps
        ts, t = [], start
        while len(ts) < n:
            for _ in range(rng.randint(1, 20)):
                t += rng.randrange(1, max(2, span // (4 * n) + 2))
                ts.append(t)
            t += rng.randrange(max(span // 4, 1) + 1)
        ts = ts[:n]
    else:                                  # sub-second, ns resolution
        ts = sorted(start + rng.randrange(max(span // 50, 1000)) for _ in range(n))
    return ts


def gen_metric_points(rng, name, grans, span_scale):
    n = rng.choice([1, 2, 3, rng.randint(4, 40), rng.randint(40, 300)])
    span = int(grans[-1] * span_scale)
    start = T0 + rng.randrange(0, 3600 * NS)
    ts = gen_timestamps(rng, n, start, span, grans)
    vs = gen_values(rng, len(ts))
    pts = [(name, t, v) for t, v in zip(ts, vs)]
    # ties: the same timestamp again with another value
    for _ in range(rng.choice([0, 0, 1, 3])):
        if pts:
            t = rng.choice(pts)[1]
            pts.append((name, t, rng.choice(vs) + rng.choice([0.0, 1.0, -7.25])))
    return pts


def arrival_order(rng, pts):
    style = rng.choice(["sorted", "shuffled", "swaps", "reversed"])
    pts = list(pts)
    if not pts:
        return pts
    if style == "shuffled":
        rng.shuffle(pts)
    elif style == "swaps":
        for _ in range(max(1, len(pts) // 5)):
            i, j = rng.randrange(len(pts)), rng.randrange(len(pts))
            pts[i], pts[j] = pts[j], pts[i]
    elif style == "reversed":
        pts.reverse()
    return pts


def metric_names(rng, k):
    pool = ["cpu.util", "m0", "host-1.disk.read_bytes", "a", "net/eth0 rx", "Z_9"]
    return rng.sample(pool, k)


# -- text formats -------------------------------------------------------------
def ts_text(rng, ns):
    """The timestamp as the CLI accepts it: epoch seconds (0-9 decimals) or
    RFC 3339 (Z or an offset)."""
    r = rng.random()
    if r < 0.6:
        return co.fmt_ns(ns)
    if r < 0.8:
        return co.fmt_ns(ns).rstrip("0").rstrip(".")
    sec, frac = divmod(ns, NS)
    off = rng.choice([0, 0, 3600, -5 * 3600 - 1800, 14 * 3600])
    d = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=sec + off)
    s = d.strftime("%Y-%m-%dT%H:%M:%S")
    if frac or rng.random() < 0.3:
        s += ("." + "%09d" % frac).rstrip("0") if frac else ".000"
    if off == 0:
        return s + rng.choice(["Z", "z", "+00:00"])
    sign = "+" if off > 0 else "-"
    return s + "%s%02d:%02d" % (sign, abs(off) // 3600, abs(off) % 3600 // 60)


def write_input(path, batches, rng, rfc3339=True):
    with open(path, "w") as f:
        f.write("metric,timestamp,value\n")
        for i, b in enumerate(batches):
            if i:
                f.write("#batch\n")
            for m, t, v in b:
                tt = ts_text(rng, t) if rfc3339 else co.fmt_ns(t)
                f.write("%s,%s,%s\n" % (m, tt, repr(v)))


def gran_arg(grans):
    return ",".join(co.fmt_gran(g) for g in grans)


# -- running and comparing ----------------------------------------------------
def parse_output(text):
    """CSV rows -> {(metric, g_ns, method): {bucket_ns: value}}."""
    lines = text.splitlines()
    if not lines or lines[0] != "metric,granularity,method,timestamp,value":
        raise ValueError("bad header %r" % (lines[:1],))
    out = collections.defaultdict(dict)
    order = []
    for line in lines[1:]:
        m, g, meth, t, v = line.rsplit(",", 4)
        m = m.strip('"')
        key = (m, co.parse_ns(g), meth)
        b = co.parse_ns(t)
        if b in out[key]:
            raise ValueError("duplicate row %r" % line)
        out[key][b] = float(v)
        order.append((m, key[1], meth, b))
    return out, order


STATS = collections.Counter()


def close(method, a, b, scale):
    base = method[5:] if method.startswith("rate:") else method
    STATS["values"] += 1
    if a == b or (math.isnan(a) and math.isnan(b)):
        return True
    if base in TOLERANT:
        STATS["within tolerance, not bit-equal"] += 1
        return abs(a - b) <= 1e-12 * max(abs(a), abs(b), scale)
    return False


def compare(oracle, got, limit=8):
    """List of difference descriptions (empty = equal)."""
    want = oracle.series()
    diffs = []
    for key in sorted(set(want) | set(got)):
        w, g = want.get(key, {}), got.get(key, {})
        for b in sorted(set(w) | set(g)):
            if b not in g:
                diffs.append("missing %s %s = %.17g" % (key, co.fmt_ns(b), w[b]))
            elif b not in w:
                diffs.append("extra   %s %s = %.17g" % (key, co.fmt_ns(b), g[b]))
            elif not close(key[2], g[b], w[b], oracle.scale_of(key[0], key[1], key[2], b)):
                diffs.append("value   %s %s got %.17g want %.17g" % (key, co.fmt_ns(b), g[b], w[b]))
    if len(diffs) > limit:
        diffs = diffs[:limit] + ["... %d more" % (len(diffs) - limit)]
    return diffs


def run_cli(path, grans, methods, back_window, spans=None):
    cmd = [CTL, "resample", "--local", "--granularity", gran_arg(grans),
           "--method", ",".join(methods), "--back-window", str(back_window), "--input", path]
    if spans and any(spans):
        cmd += ["--timespan", ",".join(co.fmt_gran(x or 0) for x in spans)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    return cmd, p


def run_replay(path, grans, methods, back_window, spans, late_path, threads=1):
    cmd = [REPLAY, "--granularity", gran_arg(grans), "--method", ",".join(methods),
           "--back-window", str(back_window), "--input", path, "--late", late_path,
           "--threads", str(threads)]
    if any(spans):
        cmd += ["--timespan", ",".join(co.fmt_gran(s or 0) for s in spans)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    return cmd, p


class Suite(object):
    def __init__(self):
        self.passed = self.failed = 0
        os.makedirs(KEEP, exist_ok=True)

    def result(self, name, diffs, seed=None, cmd=None, keep=None):
        if not diffs:
            self.passed += 1
            return
        self.failed += 1
        print("FAIL %s%s" % (name, "" if seed is None else " (seed %d)" % seed))
        if cmd:
            print("  command: %s" % " ".join(cmd))
        if keep:
            print("  input kept: %s" % keep)
        for d in diffs:
            print("  " + d)
        sys.stdout.flush()


def keep_path(name):
    return os.path.join(KEEP, name + ".csv")


# -- the cases ----------------------------------------------------------------
def case_cli_random(suite, i):
    seed = BASE_SEED * 1000 + i
    rng = random.Random(seed)
    grans = pick_grans(rng)
    methods = pick_methods(rng, i)
    back_window = rng.choice([0, 0, 1, 5])
    pts = []
    for name in metric_names(rng, rng.randint(1, 4)):
        pts += gen_metric_points(rng, name, grans, rng.choice([0.5, 2, 5, 20]))
    pts = arrival_order(rng, pts)
    spans = None
    if rng.random() < 0.3:
        spans = [g * rng.randint(1, 40) if rng.random() < 0.7 else None for g in grans]
    run_cli_case(suite, "cli_random_%d" % i, seed, rng, [pts], grans, methods, back_window,
                 spans)


def run_cli_case(suite, name, seed, rng, batches, grans, methods, back_window, spans=None):
    path = keep_path(name)
    write_input(path, batches, rng)
    oracle = co.Oracle(co.Policy(grans, methods, back_window, spans))
    for b in batches:
        oracle.feed(b)
    cmd, p = run_cli(path, grans, methods, back_window, spans)
    if p.returncode != 0:
        return suite.result(name, ["exit %d: %s" % (p.returncode, p.stderr.strip()[-500:])],
                            seed, cmd, path)
    try:
        got, order = parse_output(p.stdout)
    except ValueError as e:
        return suite.result(name, [str(e)], seed, cmd, path)
    diffs = compare(oracle, got)
    if not diffs and order != sorted(order, key=lambda r: (r[0], r[1], r[2], r[3])) \
            and order != sorted(order, key=lambda r: (r[0], r[1], method_rank(r[2]), r[3])):
        diffs = ["rows not sorted by metric, granularity, method, timestamp"]
    suite.result(name, diffs, seed, cmd, path if diffs else None)
    if not diffs:
        os.unlink(path)


def method_rank(name):
    return ALL_METHODS.index(name) if name in ALL_METHODS else 999


def case_replay_random(suite, i):
    seed = BASE_SEED * 1000 + 500 + i
    rng = random.Random(seed)
    grans = pick_grans(rng)
    methods = pick_methods(rng, i + 7)
    back_window = rng.choice([0, 0, 1, 2, 3])
    spans = [None] * len(grans)
    if rng.random() < 0.4:
        spans = [g * rng.randint(3, 60) if rng.random() < 0.7 else None for g in grans]
    block = grans[-1]
    names = metric_names(rng, rng.randint(1, 3))
    nb = rng.randint(2, 6)
    # a clock per metric moving forward batch after batch
    clock = {m: T0 + rng.randrange(0, 3600 * NS) for m in names}
    batches, history = [], collections.defaultdict(list)
    for _ in range(nb):
        batch = []
        for m in names:
            if rng.random() < 0.15:
                continue
            adv = int(block * rng.choice([0.1, 0.5, 1, 1.7, 3, (back_window + 2)]))
            pts = gen_metric_points(rng, m, grans, rng.choice([0.3, 1, 2.5]))
            shift = clock[m] - pts[0][1]
            pts = [(m, t + shift, v) for _, t, v in pts]
            clock[m] = max(t for _, t, _ in pts) + adv
            # late points: inside and beyond the back window
            for _ in range(rng.choice([0, 1, 2])):
                if history[m]:
                    back = rng.choice([0.3, 1, back_window + 0.5, back_window + 1.5,
                                       back_window + 3]) * block
                    t = max(history[m]) - int(back) - rng.randrange(NS)
                    pts.append((m, t, rng.uniform(-10, 10)))
            # a timestamp of an earlier batch again: the newer batch wins
            if history[m] and rng.random() < 0.3:
                pts.append((m, rng.choice(history[m]), rng.uniform(100, 200)))
            history[m] += [t for _, t, _ in pts]
            batch += pts
        batches.append(arrival_order(rng, batch))
    name = "replay_random_%d" % i
    run_replay_case(suite, name, seed, batches, grans, methods, back_window, spans)


def run_replay_case(suite, name, seed, batches, grans, methods, back_window, spans):
    rng = random.Random(seed)
    path = keep_path(name)
    late_path = path + ".late"
    write_input(path, batches, rng, rfc3339=False)
    oracle = co.Oracle(co.Policy(grans, methods, back_window, spans))
    for b in batches:
        oracle.feed(b)
    cmd, p = run_replay(path, grans, methods, back_window, spans, late_path,
                        rng.choice([1, 1, 2, 3]))
    if p.returncode != 0:
        return suite.result(name, ["exit %d: %s" % (p.returncode, p.stderr.strip()[-500:])],
                            seed, cmd, path)
    got, _ = parse_output(p.stdout)
    diffs = compare(oracle, got)
    want_late = collections.Counter((m, t) for m, t, _, _ in oracle.late)
    got_late = collections.Counter()
    with open(late_path) as f:
        for line in f:
            m, t, v, why = line.strip().rsplit(",", 3)
            got_late[(m, co.parse_ns(t))] += 1
            if why != "window":
                diffs.append("late point %s reason %s, want window" % (line.strip(), why))
    if set(got_late) != set(want_late):
        for k in sorted(set(want_late) - set(got_late))[:4]:
            diffs.append("late point not reported: %s %s" % (k[0], co.fmt_ns(k[1])))
        for k in sorted(set(got_late) - set(want_late))[:4]:
            diffs.append("reported late but carbonara aggregates it: %s %s"
                         % (k[0], co.fmt_ns(k[1])))
    # the CLI reads the same file ("#batch" lines) and must say the same
    ccmd, cp = run_cli(path, grans, methods, back_window, spans)
    if cp.returncode != 0:
        diffs.append("gpuaggctl exit %d: %s" % (cp.returncode, cp.stderr.strip()[-300:]))
    else:
        diffs += ["gpuaggctl: " + d for d in compare(oracle, parse_output(cp.stdout)[0], 4)]
        cli_late = collections.Counter()
        for line in cp.stderr.splitlines():
            if line.startswith("late,"):
                _, m, t, v, why = line.rsplit(",", 4)
                cli_late[(m, co.parse_ns(t))] += 1
        if set(cli_late) != set(want_late):
            diffs.append("gpuaggctl: late points %d, carbonara drops %d"
                         % (len(cli_late), len(want_late)))
    suite.result(name, diffs, seed, cmd, path if diffs else None)
    if diffs:
        print("  also: %s" % " ".join(ccmd))
    else:
        os.unlink(path)
        os.unlink(late_path)


def case_dedupe_last_vs_min(suite):
    """Ties within a batch: carbonara keeps the smallest value, gpuagg the
    last received.  The CLI must equal the last-wins oracle, and the plain
    carbonara run must differ from it (else the test shows nothing)."""
    t = T0 + 30 * NS
    pts = [("m", t, 5.0), ("m", t, 1.0), ("m", t + NS, 2.0), ("m", t, 3.0)]
    methods = ["first", "min", "max", "sum", "count"]
    want = co.Oracle(co.Policy([60 * NS], methods))
    want.feed(pts)
    native = co.Oracle(co.Policy([60 * NS], methods), dedupe="carbonara")
    native.feed(pts)
    diffs = []
    b = T0 // (60 * NS) * (60 * NS)
    if native.series()[("m", 60 * NS, "first")][b] != 1.0 or \
            want.series()[("m", 60 * NS, "first")][b] != 3.0:
        diffs.append("oracle: carbonara should keep 1 (smallest), last-wins 3")
    path = keep_path("dedupe_last_vs_min")
    write_input(path, [pts], random.Random(1), rfc3339=False)
    cmd, p = run_cli(path, [60 * NS], methods, 0)
    if p.returncode:
        diffs.append("exit %d: %s" % (p.returncode, p.stderr.strip()))
    else:
        diffs += compare(want, parse_output(p.stdout)[0])
    suite.result("dedupe_last_vs_min", diffs, None, cmd, path if diffs else None)


def case_float_bucketing(suite):
    """carbonara's round_timestamp divides in float64: 1700000000.25 with a
    0.25 s granularity lands in the .00 bucket.  gpuagg buckets exactly."""
    g = NS // 4
    pts = [("m", T0 + g, 7.0), ("m", T0 + g - 1, 3.0), ("m", T0 + 5 * g, 1.0)]
    methods = ["count", "sum"]
    want = co.Oracle(co.Policy([g], methods))
    want.feed(pts)
    native = co.Oracle(co.Policy([g], methods), buckets="carbonara")
    native.feed(pts)
    diffs = []
    if native.series() == want.series():
        diffs.append("oracle: expected carbonara's float bucketing to differ here")
    if want.series()[("m", g, "count")] != {T0: 1.0, T0 + g: 1.0, T0 + 5 * g: 1.0}:
        diffs.append("oracle: exact bucketing wrong: %r" % want.series())
    path = keep_path("float_bucketing")
    write_input(path, [pts], random.Random(1), rfc3339=False)
    cmd, p = run_cli(path, [g], methods, 0)
    if p.returncode:
        diffs.append("exit %d: %s" % (p.returncode, p.stderr.strip()))
    else:
        diffs += compare(want, parse_output(p.stdout)[0])
    suite.result("float_bucketing", diffs, None, cmd, path if diffs else None)


def case_all_methods(suite, seed):
    """Every one of the 216 methods (Gnocchi's '*') on one series."""
    rng = random.Random(seed)
    grans = [int(1.5 * NS), 7 * NS, 60 * NS]
    pts = []
    for name in ("a", "b"):
        pts += gen_metric_points(rng, name, grans, 10)
    pts = arrival_order(rng, pts)
    run_cli_case(suite, "all_methods_%d" % seed, seed, rng, [pts], grans, ALL_METHODS, 0)


def rewrite_case(suite, name, batches, grans, methods, back_window, key, want_carb, want_ours):
    """A batch makes carbonara rewrite a bucket it did not touch; gpuagg
    keeps the bucket's last computed value (rewrite='touched')."""
    diffs = []
    for mode, want in (("carbonara", want_carb), ("touched", want_ours)):
        o = co.Oracle(co.Policy(grans, methods, back_window), rewrite=mode)
        for b in batches:
            o.feed(b)
        got = o.series().get(key[:3], {}).get(key[3])
        if got != want:
            diffs.append("oracle rewrite=%s: %s = %r, expected %r" % (mode, key, got, want))
    n0 = suite.failed
    run_replay_case(suite, name, 1, batches, grans, methods, back_window, [None] * len(grans))
    if diffs:
        if suite.failed == n0:
            suite.passed -= 1
            suite.failed += 1
        print("FAIL %s (oracle)\n  %s" % (name, "\n  ".join(diffs)))


def case_rewrite_partial_bucket(suite):
    """7 s buckets, 60 s blocks: bucket B+56 s straddles the block edge B+60.
    Batch 2 only adds a late point and a new point at B+100: carbonara
    recomputes from its window's first point (B+61) and rewrites bucket B+56
    from the one point left in the window (count 1); gpuagg keeps 3."""
    B = (T0 // (420 * NS) + 1) * 420 * NS
    b1 = [("m", B + s * NS, float(s)) for s in (56, 58, 61)]
    b2 = [("m", B + 10 * NS, 1.0), ("m", B + 100 * NS, 2.0)]
    rewrite_case(suite, "rewrite_partial_bucket", [b1, b2], [7 * NS, 60 * NS], ["count"], 0,
                 ("m", 7 * NS, "count", B + 56 * NS), 1.0, 3.0)


def case_rewrite_rate_gap(suite):
    """rate: a recompute starting at bucket b takes the difference into b's
    first point only from a point in [b - g, b).  Batch 2 starts at B+50 with
    the previous point at B+5: rate:sum(B+50) = 10 without the 1 -> 10 step.
    Batch 3 starts at B+0: carbonara rewrites B+50 with that step (19);
    gpuagg did not touch B+50 and keeps 10."""
    B = (T0 // (60 * NS) + 1) * 60 * NS
    b1 = [("m", B, 0.0), ("m", B + 5 * NS, 1.0)]
    b2 = [("m", B + 50 * NS, 10.0), ("m", B + 55 * NS, 20.0)]
    b3 = [("m", B + 3 * NS, 0.5), ("m", B + 60 * NS, 21.0)]
    rewrite_case(suite, "rewrite_rate_gap", [b1, b2, b3], [10 * NS], ["rate:sum"], 5,
                 ("m", 10 * NS, "rate:sum", B + 50 * NS), 19.0, 10.0)


def case_rewrite_pct_minpos(suite):
    """Npct: carbonara recomputes the 90pct of bucket B+120 in a batch that
    starts its grouping elsewhere than the batch that last changed the
    bucket, so min_pos, and the rounding of the rank, differ: carbonara ends
    with 3.582, gpuagg keeps the changing batch's 3.582000000000001 (batch 3
    is late points only)."""
    B = (T0 // (60 * NS) + 1) * 60 * NS
    b1 = [("m", B + s * NS, v) for s, v in ((23, 0.85), (43, 7.36))]
    b2 = [("m", B + s * NS, v) for s, v in ((64, 6.06), (155, 0.36), (40, 10.0), (163, 3.94))]
    b3 = [("m", B + s * NS, v) for s, v in ((95, 5.44), (113, 5.02), (9, 8.71), (93, 4.65),
                                            (81, 9.08), (108, 8.92))]
    rewrite_case(suite, "rewrite_pct_minpos", [b1, b2, b3], [60 * NS, 10 * NS], ["90pct"], 0,
                 ("m", 60 * NS, "90pct", B + 120 * NS), 3.582, 3.582000000000001)


def case_nonfinite_rejected(suite):
    """NaN, Inf and points before 1970 are rejected by gpuagg, each reported
    with its line number (exit 1), the other points aggregated.  carbonara
    would aggregate NaN/Inf (and refuse the whole metric before 1970), so
    the oracle gets the batch without them."""
    rng = random.Random(3)
    good = gen_metric_points(rng, "m", [10 * NS], 5)
    bad = [("m", T0 + 7 * NS, float("nan")), ("m", T0 + 8 * NS, float("inf")),
           ("m", T0 + 9 * NS, float("-inf")), ("m", -5 * NS, 1.0)]
    pts = list(good)
    at = sorted(rng.sample(range(len(pts) + len(bad)), len(bad)))
    for k, p in zip(at, bad):
        pts.insert(k, p)
    path = keep_path("nonfinite_rejected")
    with open(path, "w") as f:
        f.write("metric,timestamp,value\n")
        for m, t, v in pts:
            f.write("%s,%s,%s\n" % (m, co.fmt_ns(t), repr(v)))
    methods = ["mean", "max", "count", "rate:sum", "std"]
    oracle = co.Oracle(co.Policy([10 * NS], methods))
    oracle.feed(good)
    cmd, p = run_cli(path, [10 * NS], methods, 0)
    diffs = []
    if p.returncode != 1:
        diffs.append("exit %d, want 1" % p.returncode)
    for k in at:
        if not any(("line %d:" % (k + 2)) in line for line in p.stderr.splitlines()):
            diffs.append("line %d (%r) not reported: %s" % (k + 2, pts[k], p.stderr.strip()))
    try:
        diffs += compare(oracle, parse_output(p.stdout)[0])
    except ValueError as e:
        diffs.append(str(e))
    suite.result("nonfinite_rejected", diffs, None, cmd, path if diffs else None)
    if not diffs:
        os.unlink(path)


def case_late_fixed(suite):
    """A batch with a point inside and one beyond the back window."""
    g = 60 * NS
    b1 = [("m", T0 + i * 10 * NS, float(i + 1)) for i in range(40)]   # to T0+390 s
    last = T0 + 390 * NS
    fbt = last // g * g - g                                             # back window 1
    b2 = [("m", fbt - NS, 100.0), ("m", fbt + NS, 200.0), ("m", last + 5 * NS, 9.0)]
    run_replay_case(suite, "late_fixed", 7, [b1, b2], [10 * NS, g],
                    ["mean", "count", "last", "rate:sum", "50pct"], 1, [None, None])


CASES = [(case_cli_random, i) for i in range(NCASES * 2)]
CASES += [(case_replay_random, i) for i in range(NCASES)]
CASES += [(f, None) for f in (case_dedupe_last_vs_min, case_float_bucketing,
                              case_late_fixed, case_nonfinite_rejected,
                              case_rewrite_partial_bucket, case_rewrite_rate_gap,
                              case_rewrite_pct_minpos)]
CASES += [(case_all_methods, BASE_SEED + seed) for seed in (1, 2)]


@pytest.fixture(scope="module", autouse=True)
def binaries():
    for exe in (CTL, REPLAY):
        assert os.access(exe, os.X_OK), "missing %s (run make)" % exe
    t0 = time.time()
    yield
    print("%.1fs; %d values compared, %d within tolerance but not bit-equal"
          % (time.time() - t0, STATS["values"], STATS["within tolerance, not bit-equal"]))


@pytest.mark.parametrize("fn,arg", CASES, ids=["%s(%s)" % (fn.__name__[len("case_"):],
                                                          "" if arg is None else arg)
                                              for fn, arg in CASES])
def test_case(fn, arg):
    suite = Suite()
    fn(suite) if arg is None else fn(suite, arg)
    assert suite.failed == 0, "the differences are printed above"
