"""carbonara_oracle.py — Gnocchi 4.4 carbonara, driven as metricd drives it.

The reference the engine is tested against (tests/engine/test_carbonara_diff.py)
and benchmarked against (tools/bench/bench_engine.py).  It runs the installed
gnocchi.carbonara (python3-gnocchi 4.4.2), not a re-implementation: per metric
and per batch it does what gnocchi/storage/__init__.py add_measures_to_metrics
does —

    measures = numpy.sort(batch, order='timestamps')
    back_window += 1 if any rate: method
    BoundTimeSerie(block_size=max granularity, back_window).set_values(
        measures, before_truncate_callback=cb)
    cb: tstamp = max(bound.first, measures[0].ts); for each granularity
        group_serie(g, round_timestamp(tstamp, g)); for each method
        AggregatedTimeSerie.from_grouped_serie(...) (rate: via derived());
        truncate(timespan)

— and keeps the final value of every bucket (a later computation of a bucket
replaces the earlier one, as _update_metric_splits merges splits).  The read
side's truncation (get_aggregated_measures: keep buckets newer than
last - timespan, per aggregation) is applied at the end.

Where gpuagg deliberately differs from carbonara ("Deliberate differences"
in docs/SEMANTICS.md), the difference is an explicit, named option of Oracle,
so each one can be turned off and shown on its own (differences 2-4, late,
pre-1970 and NaN/Inf points reported instead of dropped or stored, are left
to the caller: feed the oracle only the points gpuagg accepts):

  dedupe='last'     (1) a duplicate timestamp within a batch keeps the LAST
                    received value (gpuagg).  dedupe='carbonara' hands the batch
                    over as is: numpy.sort breaks timestamp ties on the value,
                    numpy.unique keeps the first, so carbonara keeps the
                    SMALLEST value.  Across batches both keep the newer batch.
  buckets='exact'   (6) bucket(ts, g) = floor(ts / g) * g in int64 ns (gpuagg).
                    buckets='carbonara' is carbonara's round_timestamp, which
                    divides in float64: with present-day timestamps (~1.7e18 ns
                    > 2**53) a point on or within ~1e-7 g of a bucket boundary
                    can land in the previous bucket.
  rewrite='touched' (5) a batch rewrites only the buckets it touched: those
                    holding a new point (and, for rate:, those holding a point
                    whose predecessor is new).  Each of those is computed by
                    carbonara's own code exactly as metricd computes it.
                    rewrite='carbonara' keeps everything metricd's callback
                    computes: every bucket from round(tstamp, g) on, touched or
                    not.  Those rewrites of untouched buckets are artifacts: a
                    bucket of a granularity that does not divide the block
                    loses the points truncated from the window; a rate: bucket
                    gains or loses the difference into its first point
                    depending on where this batch's recompute starts; Npct
                    changes in the last bits (quantile()'s rank includes the
                    bucket's offset in the recomputed range).

Late points: carbonara silently drops a point older than the bound serie's
first block (computed before the batch is merged); the oracle returns them
(reason "window") so they can be compared with the engine's late report.

Importing this module shims numpy.int (removed in numpy 1.24, used by
carbonara's Npct) in this process only.

Library use:
    o = Oracle(Policy([60 * 10**9], ['mean', 'rate:max'], back_window=0))
    o.feed([(metric, ts_ns, value), ...])      # one batch, arrival order
    rows = o.rows()    # [(metric, g_ns, method, bucket_ns, value)], sorted
    o.late             # [(metric, ts_ns, value, 'window')]
Command line (same CSV as `gpuaggctl resample --local`; input lines "#batch"
separate batches):
    python3 carbonara_oracle.py --granularity 60,300 --method mean,90pct \
        [--timespan 3600,86400] [--back-window N] [--input FILE]
        [--dedupe carbonara] [--buckets carbonara] [--rewrite carbonara]
(late points go to stderr as "late,METRIC,TIMESTAMP,VALUE,window").
"""
import argparse
import collections
import sys

import numpy

if not hasattr(numpy, "int"):  # carbonara's quantile() uses numpy.int
    numpy.int = int

from gnocchi import carbonara  # noqa: E402

NS = 10 ** 9
_NATIVE_ROUND = carbonara.round_timestamp


def _exact_round(ts, freq):
    """round_timestamp in exact int64 arithmetic (floor, as carbonara)."""
    f = int(freq / numpy.timedelta64(1, "ns"))
    i = numpy.asarray(ts).astype("datetime64[ns]").astype(numpy.int64)
    r = (numpy.floor_divide(i, f) * f).astype("datetime64[ns]")
    return r[()] if r.ndim == 0 else r


class Policy(object):
    """granularities and timespans in ns (timespan None = unbounded)."""

    def __init__(self, granularities, methods, back_window=0, timespans=None):
        order = sorted(range(len(granularities)), key=lambda i: granularities[i])
        self.granularities = [int(granularities[i]) for i in order]
        ts = timespans or [None] * len(granularities)
        self.timespans = [None if ts[i] in (None, 0) else int(ts[i]) for i in order]
        self.methods = list(methods)
        self.back_window = int(back_window)

    def aggregations(self):
        """ArchivePolicy.aggregations: by granularity, then method."""
        return [carbonara.Aggregation(m, numpy.timedelta64(g, "ns"),
                                      None if t is None else numpy.timedelta64(t, "ns"))
                for g, t in zip(self.granularities, self.timespans)
                for m in self.methods]


class Oracle(object):
    def __init__(self, policy, dedupe="last", buckets="exact", rewrite="touched"):
        assert dedupe in ("last", "carbonara") and buckets in ("exact", "carbonara")
        assert rewrite in ("touched", "carbonara")
        self.policy = policy
        self.dedupe = dedupe
        self.buckets = buckets
        self.rewrite = rewrite
        self.aggs = policy.aggregations()
        self.block_size = numpy.timedelta64(policy.granularities[-1], "ns")
        self.back_window = policy.back_window
        if any(m.startswith("rate:") for m in policy.methods):
            self.back_window += 1      # "We keep one more blocks to calculate rate"
        self.bound = {}                # metric -> BoundTimeSerie
        # (metric, g_ns, method) -> {bucket_ns: value}, final state
        self.state = collections.defaultdict(dict)
        # (metric, g_ns, rate?) -> {bucket_ns: max |input|}, for tolerances
        self.scale = collections.defaultdict(dict)
        self.late = []

    # -- one batch ----------------------------------------------------------
    def feed(self, points):
        """points: iterable of (metric, ts_ns, value) in arrival order."""
        per_metric = collections.OrderedDict()
        for m, t, v in points:
            per_metric.setdefault(m, []).append((int(t), float(v)))
        carbonara.round_timestamp = (_exact_round if self.buckets == "exact"
                                     else _NATIVE_ROUND)
        try:
            for m, pts in per_metric.items():
                self._feed_metric(m, pts)
        finally:
            carbonara.round_timestamp = _NATIVE_ROUND

    def _feed_metric(self, metric, pts):
        if self.dedupe == "last":
            last = {}
            for t, v in pts:
                last[t] = v            # later index wins
            pts = list(last.items())
        ts = numpy.array([t for t, _ in pts], dtype=numpy.int64)
        vals = numpy.array([v for _, v in pts], dtype=numpy.float64)
        measures = carbonara.make_timeseries(ts.astype("datetime64[ns]"), vals)
        measures = numpy.sort(measures, order="timestamps")

        bound = self.bound.get(metric)
        if bound is None:
            bound = carbonara.BoundTimeSerie(block_size=self.block_size,
                                             back_window=self.back_window)
            self.bound[metric] = bound
        elif len(bound.ts):
            fbt = bound.first_block_timestamp()
            for t, v in zip(measures["timestamps"], measures["values"]):
                if t < fbt:
                    self.late.append((metric, int(t.astype(numpy.int64)),
                                      float(v), "window"))
        fbt_old = bound.first_block_timestamp() if len(bound.ts) else None
        new_ts = measures["timestamps"]
        if fbt_old is not None:
            new_ts = new_ts[new_ts >= fbt_old]

        def callback(bts):
            # gnocchi/storage/__init__.py _map_compute_splits_operations
            tstamp = max(bts.first, measures["timestamps"][0])
            grouped = {}
            touched = self._touched(bts, new_ts) if self.rewrite == "touched" else None
            for agg in self.aggs:
                g = agg.granularity
                if g not in grouped:
                    grouped[g] = bts.group_serie(
                        g, carbonara.round_timestamp(tstamp, g))
                    self._note_scale(metric, grouped[g])
                ats = carbonara.AggregatedTimeSerie.from_grouped_serie(grouped[g], agg)
                if agg.timespan is not None:
                    ats.truncate(agg.timespan)
                key = (metric, int(g / numpy.timedelta64(1, "ns")), agg.method)
                d = self.state[key]
                keep = None
                if touched is not None:
                    keep = touched[(g, agg.method.startswith("rate:"))]
                for t, v in zip(ats.timestamps.astype(numpy.int64), ats.values):
                    if keep is None or int(t) in keep:
                        d[int(t)] = float(v)

        bound.set_values(measures, before_truncate_callback=callback)

    def _touched(self, bts, new_ts):
        """rewrite='touched': {(g, rate?): set of buckets} gpuagg recomputes —
        those holding a new point and, for rate:, those holding a point
        whose predecessor is new (its difference changed)."""
        allts = bts.timestamps
        isnew = numpy.isin(allts, new_ts)
        succ = numpy.zeros_like(isnew)
        succ[1:] = isnew[:-1]
        out = {}
        for g in set(a.granularity for a in self.aggs):
            b = carbonara.round_timestamp(allts, g).astype(numpy.int64)
            plain = set(int(x) for x in b[isnew])
            out[(g, False)] = plain
            out[(g, True)] = plain | set(int(x) for x in b[succ])
        return out

    def _note_scale(self, metric, grouped):
        g = int(grouped.granularity / numpy.timedelta64(1, "ns"))
        sers = [(False, grouped)]
        if any(m.startswith("rate:") for m in self.policy.methods):
            sers.append((True, grouped.derived()))
        for rate, gs in sers:
            if not len(gs.tstamps):
                continue
            lo, hi = gs.min(), gs.max()
            d = self.scale[(metric, g, rate)]
            for t, a, b in zip(lo["timestamps"].astype(numpy.int64),
                               lo["values"], hi["values"]):
                d[int(t)] = max(abs(float(a)), abs(float(b)))

    # -- results ------------------------------------------------------------
    def series(self):
        """{(metric, g_ns, method): {bucket_ns: value}} after the read-side
        timespan truncation (keep buckets > last - timespan)."""
        out = {}
        tspan = dict(zip(self.policy.granularities, self.policy.timespans))
        for key, d in self.state.items():
            if not d:
                continue
            t = tspan[key[1]]
            if t is not None:
                last = max(d)
                d = {b: v for b, v in d.items() if b > last - t}
            out[key] = d
        return out

    def rows(self):
        rows = []
        for (m, g, meth), d in self.series().items():
            for b, v in d.items():
                rows.append((m, g, meth, b, v))
        rows.sort()
        return rows

    def scale_of(self, metric, g, method, bucket):
        """Largest |input| of a bucket (raw values, or deltas for rate:)."""
        return self.scale[(metric, g, method.startswith("rate:"))].get(bucket, 0.0)


# -- CSV, as gpuaggctl resample ---------------------------------------------
def fmt_ns(ns):
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return "%s%d.%09d" % (sign, ns // NS, ns % NS)


def fmt_gran(ns):
    s = fmt_ns(ns).rstrip("0").rstrip(".")
    return s


def parse_ns(text):
    """Epoch seconds with up to 9 decimals -> int ns (exact, no float)."""
    text = text.strip()
    neg = text.startswith("-")
    if neg:
        text = text[1:]
    whole, _, frac = text.partition(".")
    if len(frac) > 9 or not (whole or frac) or not (whole + frac).isdigit():
        raise ValueError("bad timestamp %r" % text)
    ns = int(whole or "0") * NS + int((frac + "000000000")[:9])
    return -ns if neg else ns


def write_csv(rows, out):
    out.write("metric,granularity,method,timestamp,value\n")
    for m, g, meth, b, v in rows:
        out.write("%s,%s,%s,%s,%s\n" % (m, fmt_gran(g), meth, fmt_ns(b), "%.17g" % v))


def read_batches(lines):
    batches, cur = [], []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        if line == "#batch":
            if cur:
                batches.append(cur)
            cur = []
            continue
        if line.startswith("#") or line == "metric,timestamp,value":
            continue
        m, t, v = line.rsplit(",", 2)
        cur.append((m, parse_ns(t), float(v)))
    if cur:
        batches.append(cur)
    return batches


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--granularity", required=True)
    ap.add_argument("--method", required=True)
    ap.add_argument("--timespan")
    ap.add_argument("--back-window", type=int, default=0)
    ap.add_argument("--input", default="-")
    ap.add_argument("--dedupe", default="last", choices=("last", "carbonara"))
    ap.add_argument("--buckets", default="exact", choices=("exact", "carbonara"))
    ap.add_argument("--rewrite", default="touched", choices=("touched", "carbonara"))
    a = ap.parse_args(argv)
    grans = [parse_ns(x) for x in a.granularity.split(",")]
    spans = [parse_ns(x) for x in a.timespan.split(",")] if a.timespan else None
    pol = Policy(grans, a.method.split(","), a.back_window, spans)
    f = sys.stdin if a.input == "-" else open(a.input)
    o = Oracle(pol, dedupe=a.dedupe, buckets=a.buckets, rewrite=a.rewrite)
    for b in read_batches(f):
        o.feed(b)
    write_csv(o.rows(), sys.stdout)
    for m, t, v, why in o.late:
        sys.stderr.write("late,%s,%s,%.17g,%s\n" % (m, fmt_ns(t), v, why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
