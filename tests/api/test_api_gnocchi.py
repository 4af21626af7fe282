"""The Gnocchi-compatible HTTP API against Debian's real python3-gnocchiclient
(library and `gnocchi` CLI, noauth plugin) with a real PostgreSQL and the
real daemon: standalone metrics pushed on the ingest socket, resources
learnt from Ceilometer samples on the UDP socket; metrics and resources
listed, measures read, aggregates with search and groupby, every number
compared with `gpuaggctl query`; bad input (malformed JSON, unknown
operations, invalid dates, huge bodies, unknown ids) answered with
Gnocchi-shaped errors while ingest keeps acknowledging."""
import datetime
import json
import os
import socket
import subprocess
import tempfile
import time
import uuid

import msgpack
import pytest

from apilib import ROOT, HttpDaemon, wait_for

from gnocchiclient import auth as gauth
from gnocchiclient import client as gclient
from gnocchiclient import exceptions as gexc
from keystoneauth1 import session as ksession

PG = os.path.join(ROOT, "tools", "pg-private.sh")
POLICY = """archive_policies:
  - name: apitest
    back_window: 0
    definition:
      - granularity: 60
        timespan: 1 day
      - granularity: 300
        timespan: 1 day
    aggregation_methods: [mean, sum, count, max, min]
default_archive_policy: apitest
"""
METRIC_NS = uuid.UUID("5c1e5b8e-07c5-4c53-a2a5-3f2b1d6e9a47")
RESOURCE_NS = uuid.UUID("0a7a15ff-aa13-4ac2-897c-9bdf30ce175b")
BASE = (int(time.time()) // 3600 - 2) * 3600          # two hours ago, on the hour
P1, P2, USER = "proj-one", "proj-two", "user-a"
INST = {str(uuid.UUID(int=0x1111 + i)): (P1 if i < 2 else P2) for i in range(3)}
NIC = "instance-0001-tap0"                             # not a UUID


class Env:
    d = None
    conninfo = None


E = Env()


def client(project=P1, roles="admin", user=USER):
    a = gauth.GnocchiNoAuthPlugin(user, project, roles, E.d.url)
    return gclient.Client("1", session=ksession.Session(auth=a))


def ingest(points):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(os.path.join(E.d.tmp, "ingest.sock"))
    up = msgpack.Unpacker(raw=False)
    s.sendall(msgpack.packb({"type": "hello", "version": 1, "client": "test_api"}))
    _ = next_obj(s, up)
    s.sendall(msgpack.packb({"type": "points", "seq": 1, "metrics": [
        {"metric": m, "points": p} for m, p in points.items()]}))
    ack = next_obj(s, up)
    s.close()
    assert ack["type"] == "ack" and not ack["rejected"], ack
    return ack


def next_obj(s, up):
    while True:
        for o in up:
            return o
        up.feed(s.recv(65536))


def ceilometer_sample(rid, project, meter, ts, value, metadata):
    """One datagram as Ceilometer's UDP publisher sends it (unsigned)."""
    return msgpack.packb({
        "source": "openstack", "counter_name": meter, "counter_type": "gauge",
        "counter_unit": "%", "counter_volume": value, "user_id": USER, "project_id": project,
        "resource_id": rid, "timestamp": datetime.datetime.utcfromtimestamp(ts).isoformat(),
        "resource_metadata": metadata, "message_id": str(uuid.uuid4()),
        "monotonic_time": None, "message_signature": ""}, use_bin_type=True)


def values(i, k):
    return round(10 + i * 7 + (k * 37 % 23) * 0.5, 3)


def setup_data():
    st = wait_for(lambda: E.d.call("status")["result"]["engine"]["state"] == "running", 30)
    assert st, E.d.logtext()
    ingest({"apitest/a": [[(BASE + 20 * k) * 10**9, values(0, k)] for k in range(90)],
            "apitest/b": [[(BASE + 30 * k) * 10**9, values(1, k)] for k in range(60)]})
    port = E.d.call("status")["result"]["ingest"]["udp_port"]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i, (rid, proj) in enumerate(sorted(INST.items())):
        md = {"display_name": "vm%d" % i, "host": "compute-%d" % (i % 2),
              "flavor": {"id": "f1", "name": "m1.small"}}
        for k in range(45):
            u.sendto(ceilometer_sample(rid, proj, "cpu_util", BASE + 40 * k, values(i + 2, k), md),
                     ("127.0.0.1", port))
            if k % 15 == 0:
                time.sleep(0.01)
    for k in range(30):
        u.sendto(ceilometer_sample(NIC, P1, "network.incoming.bytes.rate", BASE + 60 * k,
                                   values(9, k), {"name": "tap0"}), ("127.0.0.1", port))
    u.close()
    want = sum(1 for _ in INST) * 45 + 30
    ok = wait_for(lambda: E.d.call("status")["result"]["ingest"]["udp_accepted"] >= want, 15)
    assert ok, E.d.call("status")
    r = E.d.ctl("flush", timeout=30)
    assert r.returncode == 0, r
    ok = wait_for(lambda: len(client().resource.list("generic")) == 4, 15)
    assert ok, (client().resource.list("generic"), E.d.logtext()[-2000:])


def ctl_query(name, method="mean", gran=60):
    r = E.d.ctl("--json", "query", name, "--granularity", str(gran), "--method", method, timeout=30)
    assert r.returncode == 0, r
    return [(row[0], row[1], row[2]) for row in json.loads(r.stdout)]


def as_rows(measures):
    return [(t.isoformat() if hasattr(t, "isoformat") else t, g, v) for t, g, v in measures]


def metric_id(name):
    return str(uuid.uuid3(METRIC_NS, name))


def test_meta():
    c = client()
    caps = c.capabilities.list()
    assert "mean" in caps["aggregation_methods"] and "rate:max" in caps["aggregation_methods"], caps
    st = c.status.get()
    assert st["gpuagg"]["metrics"] >= 5 and st["storage"]["summary"]["measures"] is None, st
    pols = {p["name"]: p for p in c.archive_policy.list()}
    assert pols["apitest"]["definition"][0] == {"granularity": "0:01:00", "points": 1440,
                                                 "timespan": "1 day, 0:00:00"}, pols["apitest"]
    assert c.archive_policy.get("apitest")["back_window"] == 0
    try:
        c.archive_policy.get("nope")
        raise AssertionError("unknown policy answered")
    except gexc.ArchivePolicyNotFound:
        pass
    assert "instance" in [t["name"] for t in c.resource_type.list()]
    assert c.resource_type.get("instance_disk")["state"] == "active"


def test_metric_list_and_get():
    c = client()
    ms = {m["id"]: m for m in c.metric.list()}
    for name in ("apitest/a", "apitest/b"):
        m = ms[metric_id(name)]
        assert m["name"] == name and m["resource_id"] is None, m
        assert m["archive_policy"]["name"] == "apitest", m
    got = c.metric.get(metric_id("apitest/a"))
    assert sorted(got["archive_policy"]["aggregation_methods"]) == ["count", "max", "mean", "min",
                                                                    "sum"], got
    assert [d["granularity"] for d in got["archive_policy"]["definition"]] == ["0:01:00", "0:05:00"]
    page = c.metric.list(limit=2)
    assert len(page) == 2 and sorted(page, key=lambda m: m["id"]) == page, page
    # the name works in the path too (gpuagg's own addition)
    st, j = E.d.get_json("/v1/metric/apitest/b", headers={"X-User-Id": USER, "X-Project-Id": P1})
    assert st == 200 and j["id"] == metric_id("apitest/b"), (st, j)


def test_measures_match_gpuaggctl():
    c = client()
    for name in ("apitest/a", "apitest/b"):
        for method in ("mean", "max", "count"):
            got = as_rows(c.metric.get_measures(metric_id(name), aggregation=method, granularity=60))
            assert got == ctl_query(name, method), (name, method, got[:3])
    # no granularity: every archive, the coarsest first
    both = as_rows(c.metric.get_measures(metric_id("apitest/a")))
    assert both == ctl_query("apitest/a", gran=300) + ctl_query("apitest/a"), both[:4]
    # start inside a bucket is rounded down to the granularity, stop exclusive
    rows = ctl_query("apitest/a")
    start = datetime.datetime.fromisoformat(rows[3][0]) + datetime.timedelta(seconds=17)
    stop = datetime.datetime.fromisoformat(rows[9][0])
    got = as_rows(c.metric.get_measures(metric_id("apitest/a"), start=start.replace(tzinfo=None),
                                        stop=stop, granularity=60))
    assert got == rows[3:9], got
    # epoch and relative forms
    st, j = E.d.get_json("/v1/metric/%s/measures?granularity=60&start=%d&stop=now"
                         % (metric_id("apitest/b"), BASE), headers={"X-User-Id": USER})
    assert st == 200 and [tuple(r) for r in j] == ctl_query("apitest/b"), (st, j)
    st, j = E.d.get_json("/v1/metric/%s/measures?granularity=60&start=-1%%20day"
                         % metric_id("apitest/b"), headers={"X-User-Id": USER})
    assert st == 200 and [tuple(r) for r in j] == ctl_query("apitest/b"), (st, j)


def test_resources():
    c = client()
    inst = c.resource.list("instance")
    assert sorted(r["id"] for r in inst) == sorted(INST), inst
    r0 = c.resource.get("instance", sorted(INST)[0])
    assert r0["project_id"] == P1 and r0["user_id"] == USER and r0["display_name"] == "vm0", r0
    assert r0["flavor_id"] == "f1" and r0["metrics"] == {
        "cpu_util": metric_id(sorted(INST)[0] + "/cpu_util")}, r0
    # a raw id that is not a UUID names a resource by the requester's creator
    nic_id = str(uuid.uuid5(RESOURCE_NS, NIC + "\x00" + USER + ":" + P1))
    nic = c.resource.get("instance_network_interface", NIC)
    assert nic["id"] == nic_id and nic["original_resource_id"] == NIC, nic
    # ... so another requester (another project) does not see it by that id
    other = client(project=P2, roles="member")
    try:
        other.resource.get("generic", NIC)
        raise AssertionError("found through another creator")
    except gexc.ResourceNotFound:
        pass
    # project scoping: a member sees only its project's resources
    seen = sorted(r["id"] for r in other.resource.list("generic"))
    assert seen == sorted(k for k, p in INST.items() if p == P2), seen
    # search: the filter language
    got = c.resource.search("instance", query={"and": [{"=": {"project_id": P1}},
                                                      {"like": {"display_name": "vm%"}}]})
    assert sorted(r["id"] for r in got) == sorted(k for k, p in INST.items() if p == P1), got
    got = c.resource.search("generic", query={"in": {"id": [NIC, sorted(INST)[2]]}})
    assert sorted(r["id"] for r in got) == sorted([nic_id, sorted(INST)[2]]), got
    got = c.resource.search("instance", query={"or": [{"=": {"host": "compute-1"}},
                                                     {"!=": {"project_id": P1}}]})
    assert sorted(r["id"] for r in got) == sorted(INST)[1:], got


def test_resource_metric_measures():
    c = client()
    rid = sorted(INST)[1]
    got = as_rows(c.metric.get_measures("cpu_util", resource_id=rid, granularity=60,
                                        aggregation="max"))
    assert got == ctl_query(rid + "/cpu_util", "max"), got[:3]
    try:
        c.metric.get_measures("nope", resource_id=rid)
        raise AssertionError("unknown metric answered")
    except gexc.MetricNotFound:
        pass


def test_aggregates_by_metrics():
    c = client()
    a, b = metric_id("apitest/a"), metric_id("apitest/b")
    res = c.aggregates.fetch(["aggregate", "mean", ["metric", [a, "mean"], [b, "mean"]]],
                             granularity=60, needed_overlap=0)
    ra, rb = dict((t, v) for t, _, v in ctl_query("apitest/a")), dict(
        (t, v) for t, _, v in ctl_query("apitest/b"))
    got = as_rows(res["measures"]["aggregated"])
    assert [r[0] for r in got] == sorted(set(ra) | set(rb)), got
    for t, g, v in got:
        xs = [x[t] for x in (ra, rb) if t in x]
        assert g == 60.0 and abs(v - sum(xs) / len(xs)) < 1e-9, (t, v, xs)
    # plain series, and arithmetic
    res = c.aggregates.fetch(["*", ["metric", a, "max"], 2], granularity=60)
    got = as_rows(res["measures"][a]["max"])
    assert got == [(t, g, v * 2) for t, g, v in ctl_query("apitest/a", "max")], got[:3]


def test_aggregates_search_groupby():
    c = client()
    res = c.aggregates.fetch(["aggregate", "sum", ["metric", "cpu_util", "mean"]],
                             search={"=": {"type": "instance"}}, resource_type="instance",
                             granularity=60, needed_overlap=0)
    per = [dict((t, v) for t, _, v in ctl_query(rid + "/cpu_util")) for rid in INST]
    got = as_rows(res["measures"]["aggregated"])
    assert [r[0] for r in got] == sorted(set().union(*per)), got[:3]
    for t, g, v in got:
        assert abs(v - sum(p[t] for p in per if t in p)) < 1e-9, (t, v)
    groups = c.aggregates.fetch(["aggregate", "max", ["metric", "cpu_util", "max"]],
                                search={">=": {"started_at": "2000-01-01"}},
                                resource_type="instance", groupby=["project_id"],
                                granularity=60, needed_overlap=0)
    assert sorted(g["group"]["project_id"] for g in groups) == [P1, P2], groups
    for g in groups:
        mine = [rid for rid, p in INST.items() if p == g["group"]["project_id"]]
        per = [dict((t, v) for t, _, v in ctl_query(rid + "/cpu_util", "max")) for rid in mine]
        for t, _, v in as_rows(g["measures"]["measures"]["aggregated"]):
            assert v == max(p[t] for p in per if t in p), (g["group"], t, v)
    # without aggregate: per resource, per metric name
    res = c.aggregates.fetch(["metric", "cpu_util", "min"], search={"=": {"project_id": P2}},
                             resource_type="instance", granularity=60)
    rid = [k for k, p in INST.items() if p == P2][0]
    assert as_rows(res["measures"][rid]["cpu_util"]["min"]) == ctl_query(rid + "/cpu_util", "min")
    # an unknown metric name in a search is a 400, not a 404
    try:
        c.aggregates.fetch(["metric", "nope", "mean"], search={}, resource_type="instance")
        raise AssertionError("unknown metric in search answered")
    except gexc.BadRequest as e:
        assert "Metrics not found" in str(e.message), e.message


def test_legacy_aggregation_reads():
    """The /v1/aggregation/... reads Grafana's Gnocchi data source uses."""
    h = {"X-User-Id": USER, "X-Project-Id": P1, "X-Roles": "admin",
         "Content-Type": "application/json"}
    a, b = metric_id("apitest/a"), metric_id("apitest/b")
    st, j = E.d.get_json("/v1/aggregation/metric?metric=%s&metric=%s&aggregation=max&granularity=60"
                         "&needed_overlap=0" % (a, b), headers=h)
    assert st == 200, (st, j)
    ra = dict((t, v) for t, _, v in ctl_query("apitest/a", "max"))
    rb = dict((t, v) for t, _, v in ctl_query("apitest/b", "max"))
    assert [r[0] for r in j] == sorted(set(ra) | set(rb)), j[:3]
    for t, g, v in j:
        xs = [x[t] for x in (ra, rb) if t in x]
        assert v == max(xs), (t, v, xs)            # reaggregation defaults to aggregation
    st, j = E.d.get_json("/v1/aggregation/resource/instance/metric/cpu_util?aggregation=mean"
                         "&reaggregation=max&granularity=60&needed_overlap=0", headers=h,
                         method="POST", body={"=": {"project_id": P2}})
    rid = [k for k, p in INST.items() if p == P2][0]
    assert st == 200, (st, j)
    # without the admin role, project P1 does not see P2's resources: no
    # metric, an empty list (Gnocchi's answer when nothing matches)
    del h["X-Roles"]
    st2, j2 = E.d.get_json("/v1/aggregation/resource/instance/metric/cpu_util?granularity=60",
                           headers=h, method="POST", body={"=": {"project_id": P2}})
    assert st2 == 200 and j2 == [], (st2, j2)
    assert [tuple(r) for r in j] == ctl_query(rid + "/cpu_util"), j[:3]


def test_cli():
    env = dict(os.environ, OS_AUTH_TYPE="gnocchi-noauth", GNOCCHI_ENDPOINT=E.d.url,
               GNOCCHI_USER_ID=USER, GNOCCHI_PROJECT_ID=P1)
    r = subprocess.run(["gnocchi", "metric", "list", "-f", "json"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r
    assert metric_id("apitest/a") in {m["id"] for m in json.loads(r.stdout)}, r.stdout
    r = subprocess.run(["gnocchi", "measures", "show", metric_id("apitest/a"), "--granularity", "60",
                        "--aggregation", "sum", "--utc", "-f", "json"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r
    want = ctl_query("apitest/a", "sum")
    assert [row["value"] for row in json.loads(r.stdout)] == [v for _, _, v in want], r.stdout
    r = subprocess.run(["gnocchi", "resource", "list", "--type", "instance", "-f", "json"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and len(json.loads(r.stdout)) == 3, r


def test_errors_and_ingest_unaffected():
    h = {"X-User-Id": USER, "X-Project-Id": P1, "Content-Type": "application/json"}
    st, j = E.d.get_json("/v1/aggregates", headers=h, method="POST", body="{not json")
    assert st == 400 and "Invalid JSON" in j["description"], (st, j)
    st, j = E.d.get_json("/v1/aggregates", headers=h, method="POST",
                         body={"operations": ["frobnicate", ["metric", metric_id("apitest/a"), "mean"]]})
    assert st == 400 and j["description"]["reason"].startswith("'frobnicate' operation invalid"), \
        (st, j)
    st, j = E.d.get_json("/v1/aggregates", headers=h, method="POST",
                         body={"operations": ["metric", str(uuid.uuid4()), "mean"]})
    assert st == 404 and j["description"]["cause"] == "Unknown metrics", (st, j)
    st, j = E.d.get_json("/v1/metric/%s/measures?start=yesterday-ish" % metric_id("apitest/a"),
                         headers=h)
    assert st == 400 and j["description"] == {"cause": "Argument value error", "detail": "start",
                                              "reason": "Must be a datetime or a timestamp"}, (st, j)
    st, j = E.d.get_json("/v1/metric/%s/measures?aggregation=median" % metric_id("apitest/a"),
                         headers=h)
    assert st == 404 and j["description"]["detail"]["aggregation_method"] == "median", (st, j)
    st, j = E.d.get_json("/v1/search/resource/instance", headers=h, method="POST",
                         body={"~=": {"project_id": "x"}})
    assert st == 400 and j["description"]["detail"] == ["~="], (st, j)
    # a huge body: 413 from the headers alone, before the body is read
    s = socket.create_connection(("127.0.0.1", E.d.port), timeout=10)
    s.sendall(b"POST /v1/aggregates HTTP/1.1\r\nHost: x\r\nX-User-Id: u\r\n"
              b"Content-Length: 3000000\r\n\r\n" + b"[" * 1000)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    assert data.startswith(b"HTTP/1.1 413") and b"max_body_bytes" in data, data[:300]
    st, j = E.d.get_json("/v1/metric", headers={})
    assert st == 401, (st, j)
    ack = ingest({"apitest/c": [[(BASE + 5) * 10**9, 1.5]]})
    assert ack["accepted"] == 1, ack


@pytest.fixture(scope="module", autouse=True)
def shared_daemon():
    """A private PostgreSQL and one daemon on it with the data (setup_data),
    shared by the tests in order; the daemon must exit 0."""
    pgdir = tempfile.mkdtemp(prefix="gapg-", dir="/tmp")
    try:
        E.conninfo = subprocess.run([PG, "start", pgdir], capture_output=True, text=True,
                                    check=True).stdout.strip()
        E.d = HttpDaemon(conninfo=E.conninfo, http="auth: noauth", extra=POLICY)
        with E.d:
            E.d.wait_http()
            setup_data()
            yield
            assert E.d.stop(30) == 0, E.d.logtext()[-3000:]
    finally:
        subprocess.run([PG, "stop", pgdir])
        subprocess.run(["rm", "-rf", pgdir])
