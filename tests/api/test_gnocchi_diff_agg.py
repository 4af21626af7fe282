"""The aggregates reads of gpuagg and of Debian's real Gnocchi 4.4.2
(tests/api/gnocchi_server.py: its API and its measure processing on the same
private PostgreSQL server), answer for answer.

Both get the same archive policies, the same metrics (standalone ones by
name, and cpu_util of three instances in two projects) and the same points
in one batch each.  Every request below goes to both; metric ids, which
differ (gpuagg derives them from names, Gnocchi draws them), are written as
{a}, {b}, ... in the requests and mapped back to the metric names in the
answers.  Compared: the status, and the body (for errors the description,
the error shape being common to every endpoint), values within 1e-12
relative (the summation order may differ), NaN and ±inf as null (Gnocchi
writes the non-JSON tokens NaN and Infinity, gpuagg JSON null).

Every request ends in one of three tallies: equal; deliberate (listed in
DELIBERATE with the reason, and in docs/API.md "Differences from Gnocchi";
the test checks that the difference is the one described); remaining (a
failure).  The last line before the result is
    aggregates diff: N equal, N deliberate, N remaining"""
import datetime
import json
import math
import os
import socket
import subprocess
import tempfile
import time
import uuid

import msgpack
import pytest

from apilib import ROOT, HttpDaemon, wait_for
from gnocchi_server import GnocchiServer, create_policies

PG = os.path.join(ROOT, "tools", "pg-private.sh")
POLICY = """archive_policies:
  - name: difftest
    back_window: 0
    definition:
      - granularity: 60
        timespan: 1 day
      - granularity: 300
        timespan: 1 day
    aggregation_methods: [mean, sum, count, max, min, std, 90pct]
  - name: difffine
    back_window: 0
    definition:
      - granularity: 60
        timespan: 1 day
    aggregation_methods: [mean, max]
  - name: diffdup
    back_window: 0
    definition:
      - granularity: 60
        timespan: 1 day
    aggregation_methods: [last, min, mean]
archive_policy_rules:
  - metric_pattern: "fine-*"
    archive_policy_name: difffine
  - metric_pattern: "dup-*"
    archive_policy_name: diffdup
"""
GA_POLICY = POLICY + "default_archive_policy: difftest\n"
METRIC_NS = uuid.UUID("5c1e5b8e-07c5-4c53-a2a5-3f2b1d6e9a47")
BASE = (int(time.time()) // 3600 - 3) * 3600
P1, P2, USER = "proj-one", "proj-two", "user-a"
INST = {str(uuid.UUID(int=0x2221 + i)): (P1 if i < 2 else P2) for i in range(3)}
SERIES = {
    "diff-a": [(BASE + 20 * k, round(10 + (k * 37 % 23) * 0.5, 3)) for k in range(150)],
    "diff-b": [(BASE + 600 + 45 * k, round(-3 + (k * 11 % 17) * 0.25, 3)) for k in range(70)],
    "diff-c": [(BASE + 1200 + 60 * k, float(k % 7)) for k in range(40) if k % 5 != 3],
    "fine-f": [(BASE + 30 * k, float(k % 9)) for k in range(60)],
    # one timestamp three times in the batch: gpuagg keeps the last received
    # (3.0), carbonara the smallest (1.0); docs/SEMANTICS.md, difference 1
    "dup-d": [(BASE + 30 * k, float(k)) for k in range(10)] + [(BASE + 150, 5.0),
                                                              (BASE + 150, 1.0),
                                                              (BASE + 150, 3.0)],
}
DUP_T, DUP_LAST, DUP_MIN = BASE + 150, 3.0, 1.0
CPU = {rid: [(BASE + 40 * k + 7 * i, round(20 + i * 5 + (k * 13 % 11) * 0.75, 3))
             for k in range(60)] for i, rid in enumerate(sorted(INST))}
KEYS = {"a": "diff-a", "b": "diff-b", "c": "diff-c", "f": "fine-f", "d": "dup-d"}


class Env:
    ga = None
    gn = None
    gn_ids = {}                # metric name -> Gnocchi's id


E = Env()
GA_H = {"X-User-Id": USER, "X-Project-Id": P1, "X-Roles": "admin",
        "Content-Type": "application/json", "Accept": "application/json"}


# ---- feeding both ------------------------------------------------------------------
def ga_ingest(points):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(os.path.join(E.ga.tmp, "ingest.sock"))
    up = msgpack.Unpacker(raw=False)

    def nxt():
        while True:
            for o in up:
                return o
            up.feed(s.recv(65536))
    s.sendall(msgpack.packb({"type": "hello", "version": 1, "client": "test_gnocchi_diff_agg"}))
    nxt()
    s.sendall(msgpack.packb({"type": "points", "seq": 1, "metrics": [
        {"metric": m, "points": [[t * 10**9, v] for t, v in p]} for m, p in points.items()]}))
    ack = nxt()
    s.close()
    assert ack["type"] == "ack" and not ack["rejected"], ack


def ceilometer_sample(rid, project, ts, value):
    return msgpack.packb({
        "source": "openstack", "counter_name": "cpu_util", "counter_type": "gauge",
        "counter_unit": "%", "counter_volume": value, "user_id": USER, "project_id": project,
        "resource_id": rid, "timestamp": datetime.datetime.utcfromtimestamp(ts).isoformat(),
        "resource_metadata": {"display_name": rid[-4:]}, "message_id": str(uuid.uuid4()),
        "monotonic_time": None, "message_signature": ""}, use_bin_type=True)


def iso(t):
    return datetime.datetime.utcfromtimestamp(t).isoformat()


def gn(method, path, body=None):
    return E.gn.get_json(path, headers=E.gn.headers(), method=method, body=body)


def setup_data():
    # gpuagg
    ok = wait_for(lambda: E.ga.call("status")["result"]["engine"]["state"] == "running", 30)
    assert ok, E.ga.logtext()
    ga_ingest(SERIES)
    port = E.ga.call("status")["result"]["ingest"]["udp_port"]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for rid, pts in CPU.items():
        for k, (t, v) in enumerate(pts):
            u.sendto(ceilometer_sample(rid, INST[rid], t, v), ("127.0.0.1", port))
            if k % 20 == 0:
                time.sleep(0.01)
    u.close()
    want = sum(len(p) for p in CPU.values())
    ok = wait_for(lambda: E.ga.call("status")["result"]["ingest"]["udp_accepted"] >= want, 15)
    assert ok, E.ga.call("status")
    # Gnocchi: policies, metrics, resources, measures
    create_policies(E.gn, POLICY)
    for name, pts in SERIES.items():
        pol = {"fine": "difffine", "dup-": "diffdup"}.get(name[:4], "difftest")
        st, j = gn("POST", "/v1/metric", {"name": name, "archive_policy_name": pol})
        assert st == 201, (st, j)
        E.gn_ids[name] = j["id"]
        st, j = gn("POST", "/v1/metric/%s/measures" % j["id"],
                   [{"timestamp": iso(t), "value": v} for t, v in pts])
        assert st == 202, (st, j)
    st, j = gn("POST", "/v1/resource_type", {"name": "instance", "attributes": {}})
    assert st == 201, (st, j)
    for rid, pts in CPU.items():
        st, j = gn("POST", "/v1/resource/instance", {
            "id": rid, "project_id": INST[rid], "user_id": USER,
            "metrics": {"cpu_util": {"archive_policy_name": "difftest"}}})
        assert st == 201, (st, j)
        E.gn_ids[rid + "/cpu_util"] = j["metrics"]["cpu_util"]
        st, j = gn("POST", "/v1/resource/instance/%s/metric/cpu_util/measures" % rid,
                   [{"timestamp": iso(t), "value": v} for t, v in pts])
        assert st == 202, (st, j)
    r = E.ga.ctl("flush", timeout=30)
    assert r.returncode == 0, r
    assert E.gn.wait_processed(timeout=60), "Gnocchi did not process the measures"
    ok = wait_for(lambda: ga("GET", "/v1/resource/instance")[0] == 200 and
                  len(ga("GET", "/v1/resource/instance")[1]) == 3, 15)
    assert ok, ga("GET", "/v1/resource/instance")


def ga(method, path, body=None):
    return E.ga.get_json(path, headers=GA_H, method=method, body=body)


# ---- the requests ------------------------------------------------------------------
def ga_id(name):
    return str(uuid.uuid3(METRIC_NS, name))


def fill_ids(x, ids):
    s = json.dumps(x) if not isinstance(x, str) else x
    for k, name in KEYS.items():
        s = s.replace("{%s}" % k, ids(name))
    return s if isinstance(x, str) else json.loads(s)


def normalise(body, ids):
    """Metric ids to names, non-finite numbers to null."""
    s = json.dumps(body)
    for name in list(SERIES) + [rid + "/cpu_util" for rid in CPU]:
        s = s.replace(ids(name), name)
    return json.loads(s, parse_constant=lambda c: None)


def loads_lenient(b):
    return json.loads(b, parse_constant=lambda c: None) if b else None


def ask(server, method, path, body):
    if server == "ga":
        st, _, b = E.ga.request(method, path, json.dumps(body) if body is not None else None,
                                GA_H)
        ids = ga_id
    else:
        h = dict(E.gn.headers(), **{"Content-Type": "application/json",
                                    "Accept": "application/json"})
        st, _, b = E.gn.request(method, path, json.dumps(body) if body is not None else None, h)
        ids = E.gn_ids.__getitem__
    try:
        j = loads_lenient(b)
    except ValueError:
        j = b.decode(errors="replace")[:300]
    if st >= 400 and isinstance(j, dict) and "description" in j:
        j = j["description"]
    j = normalise(j, ids)
    # the order of an error's references is the indexer's, not meaningful
    if st >= 400 and isinstance(j, dict) and isinstance(j.get("detail"), list):
        j["detail"] = sorted(j["detail"], key=json.dumps)
    return st, j


def close(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1.0)
    return a == b


MAB = ["metric", ["{a}", "mean"], ["{b}", "mean"]]
MABC = ["metric", ["{a}", "mean"], ["{b}", "mean"], ["{c}", "mean"]]
A_, B_ = ["metric", "{a}", "mean"], ["metric", "{b}", "mean"]
AGG = "/v1/aggregates"


def agg(ops, qs="", search=None):
    body = {"operations": ops}
    if search is not None:
        body.update(search)
    return ("POST", AGG + ("?" + qs if qs else ""), body)


SEARCH = {"resource_type": "instance", "search": {}}
REQUESTS = {}
for _m in ["mean", "median", "std", "min", "max", "sum", "var", "count"]:
    for _mm in (_m, "rate:" + _m):
        REQUESTS["aggregate %s" % _mm] = agg(["aggregate", _mm, MABC], "needed_overlap=0")
        REQUESTS["aggregate %s fill=0" % _mm] = agg(["aggregate", _mm, MAB], "fill=0&granularity=60")
REQUESTS.update({
    "aggregate 90pct refs fill=null": agg(["aggregate", "max", ["metric", ["{a}", "90pct"],
                                                                ["{b}", "90pct"]]], "fill=null"),
    "dropna default": agg(["aggregate", "mean", MAB]),
    "needed_overlap=100": agg(["aggregate", "mean", MAB], "needed_overlap=100"),
    "needed_overlap=10": agg(["aggregate", "mean", MAB], "needed_overlap=10"),
    "needed_overlap start": agg(["aggregate", "mean", MAB], "needed_overlap=10&start=%d"
                                % (BASE + 300)),
    "needed_overlap stop": agg(["aggregate", "mean", MAB], "needed_overlap=10&stop=%d"
                               % (BASE + 3000)),
    "fill=null": agg(["aggregate", "sum", MABC], "fill=null"),
    "fill number": agg(["aggregate", "sum", MABC], "fill=-1.5&granularity=300"),
    "several refs": agg(MABC, "needed_overlap=0"),
    "several refs fill=null": agg(MABC, "fill=null&granularity=60"),
    "refs start stop": agg(["metric", ["{a}", "max"], ["{c}", "min"]],
                           "start=%d&stop=%d" % (BASE + 1000, BASE + 2500)),
    "common granularity": agg(["aggregate", "mean", ["metric", ["{a}", "mean"], ["{f}", "mean"]]],
                              "needed_overlap=0"),
    "granularities missing": agg(["aggregate", "mean", ["metric", ["{a}", "mean"], ["{f}", "mean"]]],
                                 "needed_overlap=0&granularity=300"),
    "no data in range": agg(MAB, "needed_overlap=0&start=%d" % (BASE + 90000)),
    "string form": ("POST", AGG + "?needed_overlap=0",
                    {"operations": "(aggregate mean (metric ({a} mean) ({b} mean)))"}),
    "string form arithmetic": ("POST", AGG + "?granularity=60",
                               {"operations": "(+ (metric {a} max) 2)"}),
    "unknown metric": agg(["metric", str(uuid.UUID(int=99)), "mean"]),
    "unknown aggregation": agg(["metric", "{a}", "median"]),
    "invalid operation": agg(["sqrt", A_]),
    "invalid rolling window": agg(["rolling", "mean", 0, A_]),
    "invalid aggregate method": agg(["aggregate", "90pct", A_]),
    "empty operations": agg([]),
    "bad fill": agg(A_, "fill=zero"),
    "bad needed_overlap": agg(A_, "needed_overlap=lots"),
    "no metric": agg(["+", 1, 2]),
    "rolling too long": agg(["rolling", "mean", 1000, MAB], "needed_overlap=0"),
    "resample different granularity": agg(["+", ["resample", "mean", 300, A_], A_],
                                          "granularity=60"),
    "resample var": agg(["resample", "var", 300, A_], "granularity=60"),
    "search aggregate": agg(["aggregate", "sum", ["metric", "cpu_util", "mean"]],
                            "needed_overlap=0&granularity=60", SEARCH),
    "search refs": agg(["metric", "cpu_util", "max"], "granularity=300", SEARCH),
    "search groupby": agg(["aggregate", "max", ["metric", "cpu_util", "max"]],
                          "needed_overlap=0&groupby=project_id", SEARCH),
    "search groupby filter": agg(["aggregate", "mean", ["metric", "cpu_*", "mean"]],
                                 "needed_overlap=0&groupby=project_id&groupby=user_id",
                                 {"resource_type": "instance",
                                  "search": {"=": {"project_id": P1}}}),
    "search unknown metric": agg(["metric", "nope", "mean"], "", SEARCH),
})
for _op in ["+", "-", "*", "/", "**", "%", "clip_min", "clip_max"]:
    REQUESTS["binary %s series" % _op] = agg([_op, A_, B_], "needed_overlap=0")
    REQUESTS["binary %s number" % _op] = agg([_op, A_, 2.5], "needed_overlap=0")
    REQUESTS["binary %s refs" % _op] = agg([_op, 3, MAB], "needed_overlap=0&granularity=60")
for _op in ["<", ">=", "=="]:
    REQUESTS["comparison %s" % _op] = agg([_op, A_, B_], "needed_overlap=0")
for _op in ["abs", "neg", "cos", "floor", "ceil", "rateofchange"]:
    REQUESTS["unary %s" % _op] = agg([_op, B_], "needed_overlap=0")
    REQUESTS["unary %s refs" % _op] = agg([_op, MAB], "needed_overlap=0&fill=null")
REQUESTS["clip"] = agg(["clip", A_, 11, 14], "needed_overlap=0")
REQUESTS["max - min"] = agg(["-", ["aggregate", "max", MABC], ["aggregate", "min", MABC]],
                            "needed_overlap=0")
for _m in ["mean", "median", "std", "sum", "count", "rate:max"]:
    REQUESTS["rolling %s" % _m] = agg(["rolling", _m, 3, MAB], "needed_overlap=0")
for _m in ["mean", "max", "std", "count", "rate:sum"]:
    REQUESTS["resample %s" % _m] = agg(["resample", _m, 300, A_], "granularity=60")
    REQUESTS["resample %s refs" % _m] = agg(["resample", _m, "10min", MAB],
                                            "granularity=60&fill=null")
REQUESTS["aggregate of resample"] = agg(["aggregate", "mean", ["resample", "max", 120, MABC]],
                                        "granularity=60&needed_overlap=0")
LEG = "/v1/aggregation/metric?metric={a}&metric={b}&metric={c}"
REQUESTS.update({
    "deprecated default": ("GET", LEG, None),
    "deprecated needed_overlap=0": ("GET", LEG + "&needed_overlap=0", None),
    "deprecated needed_overlap=50": ("GET", LEG + "&needed_overlap=50", None),
    "deprecated reaggregation": ("GET", LEG + "&needed_overlap=0&reaggregation=max", None),
    "deprecated aggregation max": ("GET", LEG + "&needed_overlap=0&aggregation=max"
                                   "&reaggregation=min&granularity=300", None),
    "deprecated 90pct": ("GET", LEG + "&needed_overlap=0&aggregation=90pct&reaggregation=mean",
                         None),
    "deprecated reaggregation 90pct": ("GET", LEG + "&needed_overlap=0&reaggregation=90pct",
                                       None),
    "deprecated fill": ("GET", LEG + "&fill=0&granularity=60", None),
    "deprecated start": ("GET", LEG + "&needed_overlap=0&start=%d" % (BASE + 900), None),
    "deprecated one metric": ("GET", "/v1/aggregation/metric?metric={a}&aggregation=max", None),
    "deprecated one metric 90pct": ("GET", "/v1/aggregation/metric?metric={a}&aggregation=90pct",
                                    None),
    "deprecated resample": ("GET", LEG + "&needed_overlap=0&granularity=60&resample=600", None),
    "deprecated resample one": ("GET", "/v1/aggregation/metric?metric={a}&granularity=60"
                                "&resample=300", None),
    "deprecated resample no granularity": ("GET", LEG + "&resample=600", None),
    "deprecated no granularity match": ("GET", "/v1/aggregation/metric?metric={a}&metric={f}"
                                        "&granularity=300", None),
    "deprecated unknown aggregation": ("GET", "/v1/aggregation/metric?metric={a}"
                                       "&aggregation=median", None),
    "deprecated unknown metric": ("GET", "/v1/aggregation/metric?metric=%s" % uuid.UUID(int=98),
                                  None),
    "deprecated POST": ("POST", "/v1/aggregation/metric?needed_overlap=0", ["{a}", "{b}"]),
    "deprecated resource": ("POST", "/v1/aggregation/resource/instance/metric/cpu_util"
                            "?needed_overlap=0", {}),
    "deprecated resource filter": ("POST", "/v1/aggregation/resource/instance/metric/cpu_util"
                                   "?granularity=60&reaggregation=max&needed_overlap=0",
                                   {"=": {"project_id": P1}}),
    "deprecated resource groupby": ("POST", "/v1/aggregation/resource/instance/metric/cpu_util"
                                    "?needed_overlap=0&groupby=project_id", {}),
    "deprecated resource none": ("POST", "/v1/aggregation/resource/instance/metric/cpu_util",
                                 {"=": {"project_id": "nobody"}}),
    "deprecated resource GET": ("GET", "/v1/aggregation/resource/instance/metric/cpu_util", None),
    "measures resample": ("GET", "/v1/metric/{a}/measures?granularity=60&resample=300", None),
    "measures resample max": ("GET", "/v1/metric/{a}/measures?granularity=60&aggregation=max"
                              "&resample=10min", None),
    "measures resample no granularity": ("GET", "/v1/metric/{a}/measures?resample=300", None),
})

for _m in ("last", "min", "mean"):
    REQUESTS["duplicates %s" % _m] = agg(["metric", "{d}", _m], "granularity=60")


def dup_only(a, g):
    """The two answers differ only in the bucket of the duplicated timestamp,
    where gpuagg aggregated the last received value and Gnocchi the smallest."""
    if a[0] != 200 or g[0] != 200:
        return False
    ra, rg = a[1]["measures"]["dup-d"], g[1]["measures"]["dup-d"]
    (method,) = ra.keys()
    ra, rg = ra[method], rg[method]
    bucket = datetime.datetime.utcfromtimestamp(DUP_T - DUP_T % 60).isoformat() + "+00:00"
    want = {"last": (DUP_LAST, DUP_MIN), "min": (min(DUP_LAST, 4.0), DUP_MIN),
            "mean": ((4.0 + DUP_LAST) / 2, (4.0 + DUP_MIN) / 2)}[method]
    return [r[:2] for r in ra] == [r[:2] for r in rg] and all(
        x == y if x[0] != bucket else (x[2], y[2]) == want for x, y in zip(ra, rg))


# Differences kept on purpose (docs/API.md "Differences from Gnocchi"):
# label -> (reason, check(ga, gn) that the difference is the one described)
DELIBERATE = {
    "duplicates last": ("a timestamp repeated in one batch: gpuagg keeps the last received value, "
                        "carbonara the smallest (docs/SEMANTICS.md, difference 1)", dup_only),
    "duplicates min": ("idem", dup_only),
    "deprecated reaggregation 90pct": ("a reaggregation outside AGG_MAP: Gnocchi 500 (KeyError), "
                                       "gpuagg 400 naming the choices",
                                       lambda a, g: g[0] == 500 and a[0] == 400),
    "duplicates mean": ("idem", dup_only),
    "aggregate count": ("numpy's count is an integer array Gnocchi fails to serialise (500); "
                        "gpuagg answers the counts", lambda a, g: g[0] == 500 and a[0] == 200),
    "aggregate count fill=0": ("idem", lambda a, g: g[0] == 500 and a[0] == 200),
    "aggregate rate:count": ("idem", lambda a, g: g[0] == 500 and a[0] == 200),
    "aggregate rate:count fill=0": ("idem", lambda a, g: g[0] == 500 and a[0] == 200),
    "rolling count": ("idem", lambda a, g: g[0] == 500 and a[0] == 200),
    "deprecated resource GET": ("405 in both; its body is the one every 405 of gpuagg has",
                                lambda a, g: a[0] == g[0] == 405),
    "comparison <": ("Gnocchi fails to serialise numpy booleans (500); gpuagg answers "
                     "true/false", lambda a, g: g[0] == 500 and a[0] == 200),
    "comparison >=": ("idem", lambda a, g: g[0] == 500 and a[0] == 200),
    "comparison ==": ("idem", lambda a, g: g[0] == 500 and a[0] == 200),
    "resample var": ("carbonara has no var: Gnocchi 500, gpuagg 400 naming the method",
                     lambda a, g: g[0] == 500 and a[0] == 400),
    "resample different granularity": ("the reason names the operands as JSON, Gnocchi as "
                                       "Python's repr", lambda a, g: a[0] == g[0] == 400 and
                                       a[1]["reason"].split(" [")[0] == g[1]["reason"].split(" [")[0]),
}


def classify(label, req):
    method, path, body = req
    a = ask("ga", method, fill_ids(path, ga_id), fill_ids(body, ga_id) if body is not None
            else None)
    g = ask("gn", method, fill_ids(path, E.gn_ids.__getitem__),
            fill_ids(body, E.gn_ids.__getitem__) if body is not None else None)
    if a[0] == g[0] and close(a[1], g[1]):
        return "equal", None
    if label in DELIBERATE and DELIBERATE[label][1] is not None and DELIBERATE[label][1](a, g):
        return "deliberate", None
    return "remaining", (label, method, path, json.dumps(body)[:200] if body else "",
                         "gpuagg", a[0], json.dumps(a[1])[:700],
                         "gnocchi", g[0], json.dumps(g[1])[:700])


def test_compare():
    tally = {"equal": 0, "deliberate": 0, "remaining": 0}
    diffs = []
    for label, req in REQUESTS.items():
        kind, why = classify(label, req)
        tally[kind] += 1
        if why:
            diffs.append(why)
    print("aggregates diff: %(equal)d equal, %(deliberate)d deliberate, %(remaining)d remaining"
          % tally)
    for d in diffs:
        print("REMAINING %s" % json.dumps(d)[:2000])
    assert not diffs, "%d requests answered differently (listed above)" % len(diffs)


@pytest.fixture(scope="module", autouse=True)
def servers():
    """A private PostgreSQL, Gnocchi's server and gpuagg on it, both fed the
    same data (setup_data); gpuagg must exit 0."""
    pgdir = tempfile.mkdtemp(prefix="gapg-", dir="/tmp")
    gndir = tempfile.mkdtemp(prefix="gagn-", dir="/tmp")
    try:
        conninfo = subprocess.run([PG, "start", pgdir], capture_output=True, text=True,
                                  check=True).stdout.strip()
        E.gn = GnocchiServer(gndir, conninfo, auth="noauth")
        E.gn.start()
        try:
            E.ga = HttpDaemon(conninfo=conninfo, http="auth: noauth", extra=GA_POLICY)
            with E.ga:
                E.ga.wait_http()
                setup_data()
                yield
                assert E.ga.stop(30) == 0, E.ga.logtext()[-3000:]
        finally:
            E.gn.stop()
    finally:
        subprocess.run([PG, "stop", pgdir])
        subprocess.run(["rm", "-rf", pgdir, gndir])
