#!/usr/bin/python3
"""The read path against Debian's Gnocchi 4.4.2, same data, same host
(docs/PERFORMANCE.md "Read path against Gnocchi").

Starts a private PostgreSQL (tools/pg-private.sh), gpuaggd (listen.http,
auth noauth) and Gnocchi (tests/api/gnocchi_server.py: its API and its
measure processing, file storage, auth noauth), and gives both the same
archive policy (60 s buckets, mean), --metrics instance resources (host
spread over 10 values) each with a cpu_util metric, and --points points at
60 s ending now.  gpuaggd gets each resource from one Ceilometer sample
on its UDP listener (the first point) and the other points on its ingest
socket; Gnocchi gets the resources through POST /v1/resource/instance and
the points through its batch measures API, and the run waits until its
processing has stored them all.  The answers of both servers to the three
kinds of request are checked equal once, then each kind is timed for
--duration seconds with --clients threads, each with its own keep-alive
connection:

  measures    GET /v1/metric/ID/measures?granularity=60&start=S
              (one metric, all its points)
  dashboard   POST /v1/search/resource/instance {"=": {"host": H}}
              (100 of 1,000 resources) then the measures of each
              resource's cpu_util: one dashboard request is the search
              plus its reads (1 + metrics/10 HTTP requests)
  aggregates  POST /v1/aggregates?groupby=host&granularity=60&start=S
              (aggregate mean (metric cpu_util mean)) over a search that
              matches all the resources

Then, as the client's ceiling, the same clients ask GET / (each server's
root, which reads no storage) of each server.  While gpuaggd's reads run, gpuagg-load sends --rate points/s into other
metrics on the ingest socket; its ack latency is reported with and
without the reads.  While Gnocchi's reads run, a thread posts --rate
points/s (one batch a second into 100 other metrics) to its batch API and
its processing aggregates them.

    tools/bench/bench_read.py [--duration 10] [--clients 4] [--metrics 1000]
                              [--points 1440] [--rate 10000] [--single]

--single replaces the timed runs by one client's latency of single
requests (GET /, measures of 60 and of all points, aggregates without
groupby over the resources of 1 and of 5 hosts), no ingest running.
"""
import argparse
import datetime
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid

import msgpack

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(ROOT, "build", "bin")
sys.path.insert(0, os.path.join(ROOT, "tests", "api"))
from gnocchi_server import GnocchiServer, create_policies, free_port  # noqa: E402

NS = uuid.UUID("5c1e5b8e-07c5-4c53-a2a5-3f2b1d6e9a47")
PROJECT, USER = "bench-project", "bench-user"
HDR = {"X-User-Id": USER, "X-Project-Id": PROJECT, "X-Roles": "admin",
       "Content-Type": "application/json", "Accept": "application/json"}
HOSTS = 10
POLICY = """archive_policies:
  - name: benchread
    back_window: 0
    definition:
      - granularity: 60
        timespan: 2 days
    aggregation_methods: [mean]
"""


def value(i, k):
    return round(10 + i % 50 + (k * 37 % 23) * 0.5, 3)


def rid_of(i):
    return str(uuid.UUID(int=0xbe0000 + i))


def host_of(i):
    return "compute-%d" % (i % HOSTS)


class Client:
    """One keep-alive connection; request() returns (status, body bytes)."""

    def __init__(self, port):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def request(self, method, path, body=None):
        self.c.request(method, path, body=body, headers=HDR)
        r = self.c.getresponse()
        b = r.read()
        if r.status // 100 != 2:
            raise RuntimeError("%s %s: %d %s" % (method, path, r.status, b[:300]))
        return b

    def json(self, method, path, body=None):
        return json.loads(self.request(method, path, body and json.dumps(body)))


# ---- gpuaggd -------------------------------------------------------------------
def ctl(out, *args):
    r = subprocess.run([os.path.join(BIN, "gpuaggctl"), "--socket", out + "/control.sock", "--json"]
                       + list(args), capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError("gpuaggctl %s: %s" % (args, r.stderr))
    return json.loads(r.stdout) if r.stdout.strip() else None


def start_gpuagg(out, conninfo):
    port = free_port()
    with open(out + "/gpuaggd.yaml", "w") as f:
        f.write("""log: { level: warn }
control: { socket: %(o)s/control.sock }
listen: { unix: %(o)s/ingest.sock, tcp: "", udp: "127.0.0.1:0", telemetry_secret: "",
          http: "127.0.0.1:%(p)d" }
http: { auth: noauth }
storage: { conninfo: "%(c)s" }
journal: { dir: %(o)s/journal }
%(pol)sdefault_archive_policy: benchread
""" % {"o": out, "p": port, "c": conninfo, "pol": POLICY})
    d = subprocess.Popen([BIN + "/gpuaggd", "--config", out + "/gpuaggd.yaml", "--foreground"],
                         stderr=open(out + "/gpuaggd.log", "w"))
    for _ in range(300):
        try:
            if ctl(out, "status")["engine"]["state"] == "running":
                return d, port
        except RuntimeError:
            pass
        time.sleep(0.1)
    raise RuntimeError("gpuaggd did not start; see %s/gpuaggd.log" % out)


def next_obj(s, up):
    while True:
        for o in up:
            return o
        data = s.recv(65536)
        if not data:
            raise RuntimeError("ingest socket closed")
        up.feed(data)


def feed_gpuagg(out, port, args, base):
    """Resources by one Ceilometer sample each (point 0), the other points
    on the ingest socket."""
    udp = ctl(out, "status")["ingest"]["udp_port"]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c = Client(port)

    def sample(i):
        u.sendto(msgpack.packb({
            "source": "openstack", "counter_name": "cpu_util", "counter_type": "gauge",
            "counter_unit": "%", "counter_volume": value(i, 0), "user_id": USER,
            "project_id": PROJECT, "resource_id": rid_of(i),
            "timestamp": datetime.datetime.utcfromtimestamp(base).isoformat(),
            "resource_metadata": {"display_name": "vm%d" % i, "host": host_of(i),
                                  "flavor": {"id": "f%d" % (i % 3), "name": "m1.small"}},
            "message_id": str(uuid.uuid4()), "monotonic_time": None,
            "message_signature": ""}, use_bin_type=True), ("127.0.0.1", udp))

    missing = list(range(args.metrics))
    for _ in range(20):
        for n, i in enumerate(missing):
            sample(i)
            if n % 50 == 49:
                time.sleep(0.01)
        time.sleep(0.5)
        have = set()
        for r in c.json("POST", "/v1/search/resource/instance?limit=1000&attrs=id",
                        {"=": {"project_id": PROJECT}}):
            have.add(r["id"])
        while len(have) < args.metrics and len(have) % 1000 == 0 and have:
            page = c.json("POST", "/v1/search/resource/instance?limit=1000&attrs=id&marker="
                          + sorted(have)[-1], {"=": {"project_id": PROJECT}})
            if not page:
                break
            have.update(r["id"] for r in page)
        missing = [i for i in range(args.metrics) if rid_of(i) not in have]
        if not missing:
            break
    if missing:
        raise RuntimeError("gpuaggd recorded %d of %d resources"
                           % (args.metrics - len(missing), args.metrics))
    u.close()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(out + "/ingest.sock")
    up = msgpack.Unpacker(raw=False)
    s.sendall(msgpack.packb({"type": "hello", "version": 1, "client": "bench_read"}))
    next_obj(s, up)
    per = max(1, 20000 // args.points)
    seq = 0
    for lo in range(0, args.metrics, per):
        seq += 1
        s.sendall(msgpack.packb({"type": "points", "seq": seq, "metrics": [
            {"metric": rid_of(i) + "/cpu_util",
             "points": [[(base + 60 * k) * 10**9, value(i, k)] for k in range(1, args.points)]}
            for i in range(lo, min(args.metrics, lo + per))]}))
        ack = next_obj(s, up)
        if ack.get("type") != "ack" or ack.get("rejected"):
            raise RuntimeError("ingest: %r" % ack)
    s.close()
    ctl(out, "--timeout", "300", "flush")


def load(out, args, duration):
    """gpuagg-load at --rate into other metrics; its JSON report."""
    return subprocess.Popen([os.path.join(BIN, "gpuagg-load"), "--connect", out + "/ingest.sock",
                             "--metrics", "1000", "--rate", str(args.rate), "--duration",
                             str(duration), "--batch", "1000", "--prefix", "ingest.", "--json",
                             "--start", "now", "--step", "10ms"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def load_report(p):
    o, e = p.communicate(timeout=300)
    if p.returncode:
        raise RuntimeError("gpuagg-load failed: %s %s" % (o, e))
    return json.loads(o)


# ---- Gnocchi ---------------------------------------------------------------------
def instance_attributes():
    """The attributes of the instance type ceilometer-upgrade creates in
    Gnocchi (Ceilometer's resources_initial with its updates applied)."""
    import copy
    from ceilometer import gnocchi_client as cgc
    attrs = copy.deepcopy(cgc.resources_initial["instance"])
    for op in cgc.resources_update_operations:
        if op["type"] != "update_attribute_type" or op["resource_type"] != "instance":
            continue
        for d in op["data"]:
            name = d["path"].split("/")[-1]
            if d["op"] == "add":
                attrs[name] = {k: v for k, v in d["value"].items() if k != "options"}
            elif d["op"] == "remove":
                attrs.pop(name, None)
    return attrs


def feed_gnocchi(g, args, base):
    """Resources by the REST API (4 threads), points by the batch API;
    returns {resource id: Gnocchi's cpu_util metric id}."""
    create_policies(g, POLICY, headers=HDR)
    attrs = instance_attributes()
    Client(g.port).json("POST", "/v1/resource_type", {"name": "instance", "attributes": attrs})
    ids, errors = {}, []

    def create(part):
        c = Client(g.port)
        try:
            for i in part:
                r = c.json("POST", "/v1/resource/instance", {
                    "id": rid_of(i), "project_id": PROJECT, "user_id": USER,
                    "display_name": "vm%d" % i, "host": host_of(i), "flavor_id": "f%d" % (i % 3),
                    "flavor_name": "m1.small",
                    "metrics": {"cpu_util": {"archive_policy_name": "benchread", "unit": "%"}}})
                ids[rid_of(i)] = r["metrics"]["cpu_util"]
        except Exception as e:        # reported below
            errors.append(e)

    ts = [threading.Thread(target=create, args=(range(t, args.metrics, 4),)) for t in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    c = Client(g.port)
    per = max(1, 50000 // args.points)
    for lo in range(0, args.metrics, per):
        batch = {rid_of(i): {"cpu_util": [{"timestamp": base + 60 * k, "value": value(i, k)}
                                          for k in range(args.points)]}
                 for i in range(lo, min(args.metrics, lo + per))}
        c.c.request("POST", "/v1/batch/resources/metrics/measures", json.dumps(batch), HDR)
        r = c.c.getresponse()
        r.read()
        if r.status != 202:
            raise RuntimeError("Gnocchi batch: %d" % r.status)
    return ids


class GnocchiIngest:
    """--rate points/s into 100 other metrics of Gnocchi: one batch a second."""

    def __init__(self, g, args):
        self.g, self.rate, self.stop = g, int(args.rate), threading.Event()
        c = Client(g.port)
        self.mids = [c.json("POST", "/v1/metric", {"name": "ingest.%d" % i,
                                                   "archive_policy_name": "benchread"})["id"]
                     for i in range(100)]
        self.t0 = time.time()
        self.j = 0
        self.posted = 0

    def run(self):
        c = Client(self.g.port)
        per = max(1, self.rate // len(self.mids))
        nxt = time.time()
        while not self.stop.is_set():
            batch = {m: [{"timestamp": self.t0 + 0.01 * (self.j + k), "value": float(k)}
                         for k in range(per)] for m in self.mids}
            self.j += per
            c.c.request("POST", "/v1/batch/metrics/measures", json.dumps(batch), HDR)
            r = c.c.getresponse()
            r.read()
            if r.status != 202:
                raise RuntimeError("Gnocchi ingest batch: %d" % r.status)
            self.posted += per * len(self.mids)
            nxt += 1
            self.stop.wait(max(0, nxt - time.time()))


# ---- requests ------------------------------------------------------------------------
def dashboard(c, mid_of, n, start):
    """The search for one host's resources, then each one's measures."""
    res = c.json("POST", "/v1/search/resource/instance", {"=": {"host": host_of(n)}})
    out = {}
    for r in res:
        out[r["id"]] = json.loads(c.request("GET", "/v1/metric/%s/measures?granularity=60&start=%d"
                                            % (mid_of(r["id"]), start)))
    return out


def aggregates(c, start):
    body = {"operations": "(aggregate mean (metric cpu_util mean))", "resource_type": "instance",
            "search": {"=": {"project_id": PROJECT}}}
    return c.json("POST", "/v1/aggregates?groupby=host&granularity=60&start=%d" % start, body)


def measures(c, mid, start):
    return c.json("GET", "/v1/metric/%s/measures?granularity=60&start=%d" % (mid, start))


def close_enough(a, b, path="answer"):
    """None when equal (floats to a relative 1e-9), else where they differ."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
                abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)):
            return None
        return "%s: %r != %r" % (path, a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return "%s: keys %s != %s" % (path, sorted(a)[:5], sorted(b)[:5])
        for k in a:
            w = close_enough(a[k], b[k], "%s.%s" % (path, k))
            if w:
                return w
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return "%s: %d items != %d" % (path, len(a), len(b))
        for k, (x, y) in enumerate(zip(a, b)):
            w = close_enough(x, y, "%s[%d]" % (path, k))
            if w:
                return w
        return None
    return None if a == b else "%s: %r != %r" % (path, a, b)


def by_group(ans):
    return sorted(ans, key=lambda x: json.dumps(x["group"], sort_keys=True))


def check_equal(gp, gn, gmid, nmid, args, start):
    cg, cn = Client(gp), Client(gn)
    checks = []
    for i in (0, args.metrics // 2, args.metrics - 1):
        a, b = measures(cg, gmid(rid_of(i)), start), measures(cn, nmid(rid_of(i)), start)
        if len(a) != args.points:
            raise RuntimeError("gpuaggd has %d points of %d" % (len(a), args.points))
        checks.append(("measures %d" % i, close_enough(a, b)))
    checks.append(("dashboard", close_enough(dashboard(cg, gmid, 3, start),
                                             dashboard(cn, nmid, 3, start))))
    checks.append(("aggregates", close_enough(by_group(aggregates(cg, start)),
                                              by_group(aggregates(cn, start)))))
    for label, why in checks:
        if why:
            raise RuntimeError("the servers answer %s differently: %s" % (label, why))
    return [label for label, _ in checks]


def timed(port, kind, mid_of, args, start):
    """Run kind (or "ceiling": GET /, the API's root, which reads no
    storage) for --duration with --clients threads: (requests/s, p50 ms,
    p99 ms, HTTP requests/s, requests timed); a request under way when
    the time is up is waited for and counted."""
    stop = threading.Event()
    lats = [[] for _ in range(args.clients)]
    http_n = [0] * args.clients
    errors = []
    per_dash = 1 + args.metrics // HOSTS

    def worker(t):
        c = Client(port)
        n = t
        try:
            while not stop.is_set():
                t0 = time.perf_counter()
                if kind == "measures":
                    c.request("GET", "/v1/metric/%s/measures?granularity=60&start=%d"
                              % (mid_of(rid_of(n % args.metrics)), start))
                    http_n[t] += 1
                elif kind == "ceiling":
                    c.request("GET", "/")
                    http_n[t] += 1
                elif kind == "dashboard":
                    dashboard(c, mid_of, n, start)
                    http_n[t] += per_dash
                else:
                    c.request("POST", "/v1/aggregates?groupby=host&granularity=60&start=%d"
                              % start, json.dumps({
                                  "operations": "(aggregate mean (metric cpu_util mean))",
                                  "resource_type": "instance",
                                  "search": {"=": {"project_id": PROJECT}}}))
                    http_n[t] += 1
                lats[t].append(time.perf_counter() - t0)
                n += 7
        except Exception as e:      # reported by the caller
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(args.clients)]
    t0 = time.time()
    for t in ts:
        t.start()
    time.sleep(args.duration)
    stop.set()
    for t in ts:
        t.join()
    took = time.time() - t0
    if errors:
        raise errors[0]
    all_l = sorted(x for l in lats for x in l)
    if not all_l:
        return 0.0, float("nan"), float("nan"), 0.0, 0
    p = lambda q: all_l[min(len(all_l) - 1, int(q * len(all_l)))] * 1000  # noqa: E731
    return len(all_l) / took, p(0.50), p(0.99), sum(http_n) / took, len(all_l)


def single(gport, nport, gmid, nmid, args, start):
    """One client, one request at a time, each server: the median of 3."""
    now = (int(time.time()) // 60) * 60
    per_host = args.metrics // HOSTS
    asks = [("GET /", "GET", "/", None, None),
            ("measures, 60 points", "GET", "/v1/metric/%s/measures?granularity=60&start=%d",
             now - 3600, None),
            ("measures, %d points" % args.points, "GET",
             "/v1/metric/%s/measures?granularity=60&start=%d", start, None)]
    for nh in (1, 5):
        asks.append(("aggregates, %d series" % (nh * per_host), "POST",
                     "/v1/aggregates?granularity=60&start=%d" % start, None,
                     {"operations": "(aggregate mean (metric cpu_util mean))",
                      "resource_type": "instance",
                      "search": {"in": {"host": [host_of(h) for h in range(nh)]}}}))
    print("%-26s %12s %12s" % ("one client, median of 3", "gpuagg ms", "Gnocchi ms"))
    for label, method, path, st, body in asks:
        row = []
        for port, mid in ((gport, gmid), (nport, nmid)):
            c = Client(port)
            q = path % (mid(rid_of(0)), st) if st is not None else path
            took = []
            for _ in range(3):
                t0 = time.perf_counter()
                c.request(method, q, body and json.dumps(body))
                took.append(time.perf_counter() - t0)
            row.append(sorted(took)[1] * 1000)
        print("%-26s %12.2f %12.2f" % (label, row[0], row[1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench-read"))
    ap.add_argument("--duration", type=int, default=10, help="seconds per kind and server")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--metrics", type=int, default=1000, help="resources, one metric each")
    ap.add_argument("--points", type=int, default=1440, help="points per metric, 60 s apart")
    ap.add_argument("--rate", default="10000", help="ingest points/s during the reads")
    ap.add_argument("--single", action="store_true",
                    help="instead of the timed runs: one client's latency of single requests")
    args = ap.parse_args()
    if args.metrics < HOSTS or args.metrics % HOSTS:
        ap.error("--metrics must be a multiple of %d" % HOSTS)
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out + "/journal")
    os.makedirs(out + "/gnocchi")
    print("load average at start: %.2f %.2f %.2f, %d CPUs" % (os.getloadavg() + (os.cpu_count(),)))
    conninfo = subprocess.run([ROOT + "/tools/pg-private.sh", "start", out + "/pg"],
                              capture_output=True, text=True, check=True).stdout.strip()
    d = g = None
    base = (int(time.time()) // 60 - args.points) * 60
    start = base
    try:
        d, gport = start_gpuagg(out, conninfo)
        g = GnocchiServer(out + "/gnocchi", conninfo, auth="noauth").start()
        t0 = time.time()
        feed_gpuagg(out, gport, args, base)
        t1 = time.time()
        nids = feed_gnocchi(g, args, base)
        t2 = time.time()
        if not g.wait_processed(3600):
            raise RuntimeError("Gnocchi did not process the measures")
        t3 = time.time()
        print("%d metrics x %d points at 60 s: gpuaggd fed in %.1f s; Gnocchi fed in %.1f s, "
              "processed %.1f s later" % (args.metrics, args.points, t1 - t0, t2 - t1, t3 - t2))
        gmid = lambda rid: str(uuid.uuid3(NS, rid + "/cpu_util"))  # noqa: E731
        nmid = nids.__getitem__
        got = Client(gport).json("GET", "/v1/resource/instance/" + rid_of(0))
        if got["metrics"].get("cpu_util") != gmid(rid_of(0)):
            raise RuntimeError("gpuaggd's cpu_util of %s: %r" % (rid_of(0), got["metrics"]))
        print("answers equal on both servers:", ", ".join(check_equal(gport, g.port, gmid, nmid,
                                                                      args, start)))
        if args.single:
            single(gport, g.port, gmid, nmid, args, start)
            return
        gi = GnocchiIngest(g, args)
        alone = load_report(load(out, args, args.duration))
        rows, acks = [], []
        for kind in ("measures", "dashboard", "aggregates"):
            p = load(out, args, args.duration)
            rg = timed(gport, kind, gmid, args, start)
            rep = load_report(p)
            acks.append((kind, rep))
            gi.stop.clear()
            th = threading.Thread(target=gi.run)
            th.start()
            rn = timed(g.port, kind, nmid, args, start)
            gi.stop.set()
            th.join()
            rows.append((kind, rg, rn))
        ceil = [timed(p, "ceiling", None, args, start) for p in (gport, g.port)]
        st, j = g.get_json("/v1/status?details=false", headers=HDR)
        backlog = j["storage"]["summary"]["measures"] if st == 200 else "?"
        print()
        print("%-10s %-7s %7s %11s %9s %9s %9s %10s %8s" % (
            "kind", "server", "clients", "requests/s", "p50 ms", "p99 ms", "ratio", "HTTP req/s",
            "timed"))
        for kind, rg, rn in rows:
            ratio = rg[0] / rn[0] if rn[0] else float("inf")
            for name, r, rat in (("gpuagg", rg, "%.2f" % ratio), ("Gnocchi", rn, "")):
                print("%-10s %-7s %7d %11.2f %9.1f %9.1f %9s %10.1f %8d"
                      % (kind, name, args.clients, r[0], r[1], r[2], rat, r[3], r[4]))
        print("(dashboard: one request = the search + %d measures reads; ratio: gpuagg's "
              "requests/s over Gnocchi's; timed: requests in the sample)" % (args.metrics // HOSTS))
        for name, r in zip(("gpuagg", "Gnocchi"), ceil):
            print("ceiling: the same clients on GET / of %-7s %9.1f requests/s, p50 %.2f ms, "
                  "p99 %.2f ms" % (name, r[0], r[1], r[2]))
        print()
        print("gpuagg-load ack latency at %s points/s (1,000 other metrics):" % args.rate)
        print("%-22s %10s %9s %9s" % ("during", "acked/s", "p50 ms", "p99 ms"))
        for kind, rep in [("no API load", alone)] + acks:
            lat = rep["latency_ms"]
            print("%-22s %10.0f %9.3f %9.3f" % (kind if kind == "no API load" else kind + " reads",
                                                rep["acked_per_s"], lat["p50"], lat["p99"]))
        print("Gnocchi: %d points posted to its batch API during its reads; "
              "%s measures left unprocessed at the end" % (gi.posted, backlog))
        print("load average at end: %.2f %.2f %.2f" % os.getloadavg())
    finally:
        if g:
            g.stop()
        if d:
            d.terminate()
            d.wait(60)
        subprocess.run([ROOT + "/tools/pg-private.sh", "stop", out + "/pg"])


if __name__ == "__main__":
    main()
