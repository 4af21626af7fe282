"""POST /v1/aggregates and the deprecated /v1/aggregation/ reads against
Gnocchi 4.4's own aggregation code (Debian's python3-gnocchi:
gnocchi.rest.aggregates.processor.get_measures and operations.evaluate).

The real daemon stores roll-ups in a private PostgreSQL; the same stored
series (read back with `gpuaggctl query`) are handed to Gnocchi's processor
through a small storage adapter, with Gnocchi's own ArchivePolicy objects,
and every answer is compared with gpuagg's: the same timestamps and
granularities, values equal (min, max, count, comparisons exactly; sums and
their means within 1e-12 relative, for a different summation order), the
same error status and description for the errors the processor raises.
Operations: every AGG_MAP method of aggregate, rolling and resample, the
unary, binary and ternary operators, several references, fill,
needed_overlap, start/stop, the string form; search and groupby; the
deprecated reads (trimming, needed_overlap, granularity match, Npct,
resample=, the methods they allow); http.max_points, at and past the limit, a series
holding more than its share of it."""
import json
import math
import os
import subprocess
import tempfile
import time
import urllib.parse
import uuid

import msgpack
import numpy
import pytest

from apilib import ROOT, HttpDaemon, wait_for

from gnocchi import archive_policy as gap
from gnocchi import carbonara
from gnocchi.rest.aggregates import api as gapi
from gnocchi.rest.aggregates import exceptions as gexc
from gnocchi.rest.aggregates import processor

PG = os.path.join(ROOT, "tools", "pg-private.sh")
METHODS = ["mean", "sum", "count", "max", "min", "90pct"]
POLICY = """archive_policies:
  - name: aggtest
    back_window: 0
    definition:
      - granularity: 60
        timespan: 1 day
      - granularity: 300
        timespan: 1 day
    aggregation_methods: [%s]
  - name: aggfine
    back_window: 0
    definition:
      - granularity: 60
        timespan: 1 day
    aggregation_methods: [mean, max]
default_archive_policy: aggtest
archive_policy_rules:
  - metric_pattern: "aggfine/*"
    archive_policy_name: aggfine
""" % ", ".join(METHODS)
METRIC_NS = uuid.UUID("5c1e5b8e-07c5-4c53-a2a5-3f2b1d6e9a47")
BASE = (int(time.time()) // 3600 - 3) * 3600
H = {"X-User-Id": "u", "X-Project-Id": "p", "X-Roles": "admin",
     "Content-Type": "application/json"}
NS = 10**9


class Env:
    d = None
    conninfo = None


E = Env()


def metric_id(name):
    return str(uuid.uuid3(METRIC_NS, name))


# the series: a, b, c overlap only partly; f has one granularity only
SERIES = {
    "aggtest/a": [(BASE + 20 * k, round(10 + (k * 37 % 23) * 0.5, 3)) for k in range(150)],
    "aggtest/b": [(BASE + 600 + 45 * k, round(-3 + (k * 11 % 17) * 0.25, 3)) for k in range(70)],
    "aggtest/c": [(BASE + 1200 + 60 * k, float(k % 7)) for k in range(40) if k % 5 != 3],
    "aggfine/f": [(BASE + 30 * k, float(k % 9)) for k in range(60)],
}


def ingest(points):
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(os.path.join(E.d.tmp, "ingest.sock"))
    up = msgpack.Unpacker(raw=False)

    def nxt():
        while True:
            for o in up:
                return o
            up.feed(s.recv(65536))
    s.sendall(msgpack.packb({"type": "hello", "version": 1, "client": "test_aggregates_ops"}))
    nxt()
    s.sendall(msgpack.packb({"type": "points", "seq": 1, "metrics": [
        {"metric": m, "points": [[t * NS, v] for t, v in p]} for m, p in points.items()]}))
    ack = nxt()
    s.close()
    assert ack["type"] == "ack" and not ack["rejected"], ack


def setup_data():
    ok = wait_for(lambda: E.d.call("status")["result"]["engine"]["state"] == "running", 30)
    assert ok, E.d.logtext()
    ingest(SERIES)
    r = E.d.ctl("flush", timeout=30)
    assert r.returncode == 0, r


# ---- the oracle: Gnocchi's processor over gpuagg's stored series ---------------------

_cache = {}


def stored(name, method, gran):
    key = (name, method, gran)
    if key not in _cache:
        r = E.d.ctl("--json", "query", name, "--granularity", str(gran), "--method", method,
                    timeout=30)
        assert r.returncode == 0, r
        rows = json.loads(r.stdout)
        _cache[key] = ([numpy.datetime64(t[:19], "ns") for t, _, _ in rows],
                       [v for _, _, v in rows])
    return _cache[key]


def policy_of(name):
    if name.startswith("aggfine/"):
        return gap.ArchivePolicy("aggfine", 0, [gap.ArchivePolicyItem(granularity=60, points=1440)],
                                 ["mean", "max"])
    return gap.ArchivePolicy("aggtest", 0, [gap.ArchivePolicyItem(granularity=60, points=1440),
                                            gap.ArchivePolicyItem(granularity=300, points=288)],
                             METHODS)


class StoredSeries:
    """Gnocchi's storage read (get_aggregated_measures) answered from the
    series gpuagg stored."""

    def get_aggregated_measures(self, metrics_and_aggregations, from_timestamp=None,
                                to_timestamp=None, resample=None):
        out = {}
        for metric, aggs in metrics_and_aggregations.items():
            out[metric] = {}
            for agg in aggs:
                g = int(agg.granularity / numpy.timedelta64(1, "s"))
                t, v = stored(metric.gpuagg_name, agg.method, g)
                out[metric][agg] = carbonara.AggregatedTimeSerie.from_data(agg, t, v)
        return out


class Metric:
    """What Gnocchi's processor reads of an indexer metric."""

    def __init__(self, name):
        self.id = uuid.UUID(metric_id(name))
        self.name = self.gpuagg_name = name
        self.archive_policy = policy_of(name)

    def __eq__(self, other):
        return isinstance(other, Metric) and self.id == other.id

    def __hash__(self):
        return hash(self.id)


def metric_obj(name):
    return Metric(name)


def to_ts(s):
    if s is None:
        return None
    if isinstance(s, (int, float)):
        return numpy.datetime64(int(s * NS), "ns")
    return numpy.datetime64(s, "ns")


def oracle(refs, ops, start=None, stop=None, granularity=None, needed_overlap=None, fill=None,
           dropna_default=True):
    """Gnocchi's answer (status, body) for references [(name, agg)]."""
    if dropna_default and fill is None and needed_overlap is None:
        fill = "dropna"
    if fill not in (None, "null", "dropna"):
        fill = float(fill)
    grans = None if granularity is None else [numpy.timedelta64(int(granularity * NS), "ns")]
    mrefs = [processor.MetricReference(metric_obj(n), a) for n, a in refs]
    ops = gapi.OperationsSchema(ops)          # as the API validates (timespans, numbers)
    try:
        res = processor.get_measures(StoredSeries(), mrefs, ops, to_ts(start), to_ts(stop), grans,
                                     100.0 if needed_overlap is None else float(needed_overlap),
                                     fill)
    except gexc.UnAggregableTimeseries as e:
        return 400, {"cause": "Metrics can't being aggregated", "reason": e.reason,
                     "detail": prim(e.references)}
    return 200, prim(res)


def prim(x):
    if isinstance(x, dict):
        return {str(k): prim(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        if len(x) == 3 and isinstance(x[0], numpy.datetime64):
            v = x[2]
            if isinstance(v, (bool, numpy.bool_)):
                v = bool(v)
            else:
                v = float(v)                  # NaN, ±inf: Gnocchi writes the non-JSON
                v = v if math.isfinite(v) else None   # tokens NaN, Infinity; gpuagg null
            t = str(x[0].astype("datetime64[us]"))
            t = (t[:19] if t.endswith(".000000") else t) + "+00:00"
            return [t, float(x[1] / numpy.timedelta64(1, "s")), v]
        return [prim(i) for i in x]
    if isinstance(x, numpy.timedelta64):
        return float(x / numpy.timedelta64(1, "s"))
    if isinstance(x, uuid.UUID):
        return str(x)
    return x


def close(a, b):
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isinf(a) or math.isinf(b):
            return a == b
        return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1.0)
    return a == b


def same(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return close(a, b)


def ids_to_names(x):
    """Metric ids in keys and details back to names, to read failures."""
    s = json.dumps(x)
    for n in SERIES:
        s = s.replace(metric_id(n), n)
    return s[:1500]


def qs(**kw):
    return "&".join("%s=%s" % (k, v) for k, v in kw.items() if v is not None)


def post(ops, **kw):
    return E.d.get_json("/v1/aggregates?" + qs(**kw), headers=H, method="POST",
                        body={"operations": ops})


def refs_of(ops, out):
    if isinstance(ops, list):
        if ops and ops[0] == "metric":
            pairs = ops[1:] if isinstance(ops[1], list) else [ops[1:]]
            for n, a in pairs:
                if (n, a) not in out:
                    out.append((n, a))
        else:
            for o in ops[1:]:
                refs_of(o, out)
    return out


def by_id(ops):
    """ops with metric names replaced by their ids."""
    if isinstance(ops, list):
        if ops and ops[0] == "metric":
            if isinstance(ops[1], list):
                return ["metric"] + [[metric_id(n), a] for n, a in ops[1:]]
            return ["metric", metric_id(ops[1]), ops[2]]
        return [by_id(o) for o in ops]
    return ops


DIFFERENT_GRAN = "Can't compute timeseries with different granularity "


def check(ops, **kw):
    """gpuagg's answer to ops (names) equals Gnocchi's on the same series."""
    refs = [(metric_id(n), a) for n, a in refs_of(ops, [])]
    st, got = post(by_id(ops), **kw)
    kw2 = dict(kw)
    if "granularity" in kw2:
        kw2["granularity"] = float(kw2["granularity"])
    ost, want = oracle([(dict((metric_id(n), n) for n in SERIES)[i], a) for i, a in refs],
                       by_id(ops), **kw2)
    if ost == 200:
        want = {"measures": want}
    else:
        got = got.get("description") if isinstance(got, dict) else got
        # deliberate: gpuagg names the operands in JSON, Gnocchi in Python's repr
        for d in (got, want):
            if isinstance(d, dict) and d.get("reason", "").startswith(DIFFERENT_GRAN):
                d["reason"] = DIFFERENT_GRAN
    assert st == ost and same(got, want), (ops, kw, st, ost, ids_to_names(got),
                                           ids_to_names(want))
    return got


A, B, C, F = "aggtest/a", "aggtest/b", "aggtest/c", "aggfine/f"
MAB = ["metric", [A, "mean"], [B, "mean"]]
MABC = ["metric", [A, "mean"], [B, "mean"], [C, "mean"]]


def test_aggregate_methods():
    for m in ["mean", "median", "std", "min", "max", "sum", "var", "count"]:
        for meth in (m, "rate:" + m):
            check(["aggregate", meth, MABC], needed_overlap=0)
            check(["aggregate", meth, MAB], granularity=60, fill=0)
    check(["aggregate", "max", ["metric", [A, "90pct"], [B, "90pct"]]], fill="null")


def test_overlap_fill_and_ranges():
    check(["aggregate", "mean", MAB])                          # dropna default
    check(["aggregate", "mean", MAB], needed_overlap=100)      # 400: less than 100 %
    check(["aggregate", "mean", MAB], needed_overlap=10)       # trimmed to the overlap
    check(["aggregate", "mean", MAB], needed_overlap=10, start=BASE + 300)
    check(["aggregate", "mean", MAB], needed_overlap=10, stop=BASE + 3000)
    check(["aggregate", "sum", MABC], fill="null")
    check(["aggregate", "sum", MABC], fill=-1.5, granularity=300)
    check(MABC, fill="null", granularity=60)
    check(MABC, needed_overlap=0)
    check(["metric", [A, "max"], [C, "min"]], start=BASE + 1000, stop=BASE + 2500)
    check(["aggregate", "mean", ["metric", [A, "mean"], [F, "mean"]]], needed_overlap=0)
    check(["aggregate", "mean", ["metric", [A, "mean"], [F, "mean"]]], needed_overlap=0,
          granularity=300)                                     # Granularities are missing
    check(["metric", [A, "mean"], [B, "mean"]], needed_overlap=0, start=BASE + 9000)


def test_operators():
    a, b = ["metric", A, "mean"], ["metric", B, "mean"]
    for op in ["+", "-", "*", "/", "**", "%", "mod", "add", "sub", "mul", "div", "pow",
               "<", ">", "<=", ">=", "==", "!=", "eq", "ne", "lt", "ge", "clip_min", "clip_max"]:
        check([op, a, b], needed_overlap=0)
        check([op, a, 2.5], needed_overlap=0)
        check([op, 3, b], needed_overlap=0, granularity=60)
    for op in ["abs", "absolute", "neg", "negative", "cos", "sin", "tan", "floor", "ceil",
               "rateofchange"]:
        check([op, b], needed_overlap=0)
        check([op, MAB], needed_overlap=0, fill="null")
    check(["clip", a, 11, 14], needed_overlap=0)
    check(["clip", MAB, 0], needed_overlap=0)
    check(["-", ["aggregate", "max", MABC], ["aggregate", "min", MABC]], needed_overlap=0)
    check(["*", MAB, ["metric", C, "mean"]], needed_overlap=0, fill=0)   # the first series kept
    check(["abs", ["-", a, b]], needed_overlap=0)
    check(["/", ["aggregate", "sum", MAB], ["aggregate", "count", MAB]], fill=0)


def test_rolling_and_resample():
    for m in ["mean", "median", "std", "min", "max", "sum", "var", "count", "rate:mean",
              "rate:max"]:
        check(["rolling", m, 3, MAB], needed_overlap=0)
        check(["rolling", m, 2, ["aggregate", "mean", MABC]], needed_overlap=0)
    check(["rolling", "mean", 1000, MAB], needed_overlap=0)     # window over the series: 400
    for m in ["mean", "median", "std", "min", "max", "sum", "count", "rate:sum", "rate:mean"]:
        check(["resample", m, 300, ["metric", A, "mean"]], granularity=60)
        check(["resample", m, "10min", MAB], granularity=60, fill="null")
    check(["aggregate", "mean", ["resample", "max", 120, MABC]], granularity=60, needed_overlap=0)
    check(["+", ["resample", "mean", 300, ["metric", A, "mean"]], ["metric", A, "mean"]],
          granularity=60)                                       # different granularities: 400
    check(["rolling", "sum", 2, ["resample", "sum", 600, MAB]], granularity=60, fill=0)


def test_string_form_and_invalid():
    st, got = post("(aggregate mean (metric (%s mean) (%s mean)))" % (metric_id(A), metric_id(B)),
                   needed_overlap=0)
    st2, want = post(["aggregate", "mean", by_id(MAB)], needed_overlap=0)
    assert st == st2 == 200 and got == want, (st, ids_to_names(got))
    st, got = post("(+ (metric %s max) 2)" % metric_id(A), granularity=60)
    assert st == 200 and got["measures"][metric_id(A)]["max"][0][2] == \
        stored(A, "max", 60)[1][0] + 2, ids_to_names(got)
    # Gnocchi's schema (api.py OperationsSchema): what it refuses and how
    for ops, reason in [
            (["sqrt", ["metric", metric_id(A), "mean"]], "'sqrt' operation invalid"),
            (["rolling", "mean", 0, ["metric", metric_id(A), "mean"]], "'rolling' operation invalid"),
            (["aggregate", "90pct", ["metric", metric_id(A), "mean"]], "'aggregate' operation invalid"),
            (["+", ["metric", metric_id(A), "mean"]], "'+' operation invalid"),
            ([], "Operation must not be empty")]:
        st, j = post(ops)
        assert st == 400 and j["description"] == {
            "cause": "Invalid input", "reason": reason + " for dictionary value @ data['operations']",
            "detail": ["operations"]}, (ops, st, j)
    st, j = post(["metric", str(uuid.uuid4()), "mean"])
    assert st == 404 and j["description"]["cause"] == "Unknown metrics", (st, j)
    st, j = post(["metric", metric_id(A), "median"])
    assert st == 404 and j["description"] == {"cause": "Metrics with unknown aggregation",
                                               "detail": [[metric_id(A), "median"]]}, (st, j)
    st, j = post(["metric", metric_id(A), "mean"], fill="zero")
    assert st == 400 and j["description"] == {"cause": "Argument value error", "detail": "fill",
                                               "reason": "Must be a float, 'dropna' or 'null'"}, j
    st, j = post(["metric", metric_id(A), "mean"], needed_overlap="lots")
    assert st == 400 and j["description"]["detail"] == "needed_overlap", j


def legacy(path, method="GET", body=None):
    return E.d.get_json(path, headers=H, method=method, body=body)


def test_deprecated_aggregation_metric():
    a, b, c = metric_id(A), metric_id(B), metric_id(C)
    # several metrics: ["aggregate", RE, ["metric", ...]], fill None: trimmed to the overlap
    for q, kw in [("", {}), ("&needed_overlap=0", {"needed_overlap": 0}),
                  ("&needed_overlap=50", {"needed_overlap": 50}),
                  ("&reaggregation=max", {}), ("&aggregation=max&reaggregation=min", {}),
                  ("&granularity=300&needed_overlap=20", {"granularity": 300.0,
                                                          "needed_overlap": 20}),
                  ("&start=%d&needed_overlap=0" % (BASE + 900), {"start": BASE + 900,
                                                                 "needed_overlap": 0}),
                  ("&aggregation=90pct&reaggregation=mean&needed_overlap=0",
                   {"needed_overlap": 0})]:
        args = urllib.parse.parse_qs(q.lstrip("&"))
        agg = args.get("aggregation", ["mean"])[0]
        re_ = args.get("reaggregation", [agg])[0]
        kw = dict(kw)
        if "start" in kw:
            kw["start"] = str(numpy.datetime64(kw["start"], "s"))
        ops = ["aggregate", re_, ["metric", [a, agg], [b, agg], [c, agg]]]
        ost, want = oracle([(A, agg), (B, agg), (C, agg)], ops, dropna_default=False, **kw)
        st, got = legacy("/v1/aggregation/metric?metric=%s&metric=%s&metric=%s%s" % (a, b, c, q))
        if ost == 200:
            want = want["aggregated"]
        else:
            got = got["description"]
        assert st == ost and same(got, want), (q, st, ost, ids_to_names(got), ids_to_names(want))
    # POST with the ids in the body
    st, got = legacy("/v1/aggregation/metric?needed_overlap=0", "POST", [a, b])
    st2, want = legacy("/v1/aggregation/metric?metric=%s&metric=%s&needed_overlap=0" % (a, b))
    assert st == st2 == 200 and got == want, (st, got)
    # one metric: its stored measures, every granularity, Npct included
    st, got = legacy("/v1/aggregation/metric?metric=%s&aggregation=90pct" % a)
    want = [[t, float(g), v] for g in (300, 60)
            for t, v in zip(*stored(A, "90pct", g))]
    assert st == 200 and [r[1:] for r in got] == [r[1:] for r in want], (got[:3], want[:3])
    # resample needs a granularity; it is carbonara's resample of the series
    st, j = legacy("/v1/aggregation/metric?metric=%s&resample=600" % a)
    assert st == 400 and j["description"] == "A granularity must be specified to resample", j
    st, got = legacy("/v1/aggregation/metric?metric=%s&aggregation=max&granularity=60&resample=600"
                     % a)
    t, v = stored(A, "max", 60)
    ts = carbonara.AggregatedTimeSerie.from_data(
        carbonara.Aggregation("max", numpy.timedelta64(60, "s"), None), t, v).resample(
        numpy.timedelta64(600, "s"))
    want = prim([(x, numpy.timedelta64(600, "s"), y) for x, y in
                 zip(ts["timestamps"], ts["values"])])
    assert st == 200 and same(got, want), (got[:3], want[:3])
    # no granularity in common, aggregation not in a policy
    st, j = legacy("/v1/aggregation/metric?metric=%s&metric=%s&granularity=300" % (a, metric_id(F)))
    assert st == 404 and "does not exist" in j["description"], j
    st, j = legacy("/v1/aggregation/metric?metric=%s&aggregation=median" % a)
    assert st == 404 and j["description"] == {
        "cause": "Aggregation method does not exist for this metric",
        "detail": {"metric": a, "aggregation_method": "median"}}, j
    st, j = legacy("/v1/aggregation/metric?metric=%s&metric=%s&aggregation=median" % (a, b))
    assert st == 404 and j["description"] == ("Aggregation method 'median' at granularity '60.0' "
                                              "for metric %s does not exist" % a), j
    st, j = legacy("/v1/aggregation/metric?metric=%s" % uuid.UUID(int=7))
    assert st == 404 and j["description"] == "Metric %s does not exist" % uuid.UUID(int=7), j
    # the resource form is POST only, as in Gnocchi
    st, j = legacy("/v1/aggregation/resource/generic/metric/cpu_util")
    assert st == 405, (st, j)
    st, j = legacy("/v1/aggregation/resource/generic/metric/cpu_util", "POST", {})
    assert st == 200 and j == [], (st, j)


def test_resample_on_measures():
    a = metric_id(A)
    for agg, rs in [("mean", 300), ("max", "10min"), ("count", 120), ("sum", 3600)]:
        st, got = legacy("/v1/metric/%s/measures?aggregation=%s&granularity=60&resample=%s"
                         % (a, agg, rs))
        t, v = stored(A, agg, 60)
        samp = numpy.timedelta64(600 if rs == "10min" else rs, "s")
        ts = carbonara.AggregatedTimeSerie.from_data(
            carbonara.Aggregation(agg, numpy.timedelta64(60, "s"), None), t, v).resample(samp)
        want = prim([(x, samp, y) for x, y in zip(ts["timestamps"], ts["values"])])
        assert st == 200 and same(got, want), (agg, rs, got[:3], want[:3])
    st, j = legacy("/v1/metric/%s/measures?resample=300" % a)
    assert st == 400 and j["description"] == "A granularity must be specified to resample", j


def max_points_answers():
    """Answers of the running daemon for test_max_points: the points of A
    and F at 60 s, the measures of A, an aggregate of A and F and the two
    series."""
    n = (len(stored(A, "mean", 60)[0]), len(stored(F, "mean", 60)[0]))
    ops = ["aggregate", "mean", ["metric", [metric_id(A), "mean"], [metric_id(F), "mean"]]]
    return [n, E.d.get_json("/v1/metric/%s/measures?granularity=60" % metric_id(A), headers=H),
            post(ops, granularity=60, fill="null"),
            post(["metric", [metric_id(A), "mean"], [metric_id(F), "mean"]], granularity=60,
                 fill="null")]


def test_max_points():
    """http.max_points: a read of exactly that many points is answered as
    without the limit, whether a series holds more than its share of it or
    not (storage/pg_read.c reads such a read a row a point); one more is a
    400.  The answers without a limit come from the shared daemon, which
    then stops: each limit is a daemon of its own on the same database."""
    shared = E.d
    want = max_points_answers()
    assert shared.stop(30) == 0, shared.logtext()[-3000:]
    na, nf = want[0]
    assert na > (na + nf) // 2 + 1, want[0]     # A holds more than its share of na + nf
    try:
        for limit, ok in [(na + nf, True), (na + nf - 1, False), (1000, True)]:
            d = HttpDaemon(conninfo=E.conninfo, http="auth: noauth, max_points: %d" % limit,
                           extra=POLICY)
            with d:
                d.wait_http()
                E.d = d
                got = max_points_answers()
                assert d.stop(30) == 0, d.logtext()[-3000:]
            assert got[1] == want[1], (limit, got[1], want[1])
            if ok:
                assert got[2:] == want[2:], (limit, got[2:], want[2:])
            else:
                for st, j in got[2:]:
                    assert st == 400 and "http.max_points (%d)" % limit in json.dumps(j), \
                        (limit, st, j)
    finally:
        E.d = shared


@pytest.fixture(scope="module", autouse=True)
def shared_daemon():
    """A private PostgreSQL and one daemon on it with the data (setup_data),
    shared by the tests in order; the daemon must exit 0."""
    pgdir = tempfile.mkdtemp(prefix="gapg-", dir="/tmp")
    try:
        conninfo = subprocess.run([PG, "start", pgdir], capture_output=True, text=True,
                                  check=True).stdout.strip()
        E.conninfo = conninfo
        E.d = HttpDaemon(conninfo=conninfo, http="auth: noauth", extra=POLICY)
        with E.d:
            E.d.wait_http()
            setup_data()
            yield
            assert E.d.stop(30) == 0, E.d.logtext()[-3000:]
    finally:
        subprocess.run([PG, "stop", pgdir])
        subprocess.run(["rm", "-rf", pgdir])
