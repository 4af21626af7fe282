"""The query side against a real PostgreSQL and the real daemon: points pushed
through the ingest socket, `gpuaggctl flush`, then `gpuaggctl query` and
`metrics` checked against roll-ups computed here, the Grafana view against
the CLI, errors, deferred-reply ordering on one connection, a connection
closed with a flush pending, and PostgreSQL going away."""
import datetime
import json
import os
import random
import socket
import subprocess
import tempfile
import time

import msgpack
import pytest

from bblib import ROOT, Daemon, recv, send, wait_for

PG = os.path.join(ROOT, "tools", "pg-private.sh")
G_NS = 60 * 10**9
POLICY = """archive_policies:
  - name: qtest
    back_window: 0
    definition:
      - granularity: 60
        timespan: 1 day
    aggregation_methods: [mean, sum, count, max, min]
default_archive_policy: qtest
"""
METRICS = ["qtest/a", "qtest/b", "qtest/c"]
# Two hours ago, on an hour boundary: inside the policy's day, one partition.
BASE_NS = ((int(time.time()) // 3600 - 2) * 3600) * 10**9
rng = random.Random(20261121)


def make_points(n):
    """n points at distinct random times over 30 minutes, ascending, values
    random and never zero."""
    offs = sorted(rng.sample(range(0, 1800 * 1000), n))   # ms offsets
    pts = []
    for o in offs:
        v = 0.0
        while v == 0.0:
            v = round(rng.uniform(-1000, 1000), 3)
        pts.append([BASE_NS + o * 10**6, v])
    return pts


DATA = {m: make_points(150) for m in METRICS}


def rollup(points, method):
    """Gnocchi's roll-up at 60 s: {bucket_start_ns: value}."""
    buckets = {}
    for ts, v in points:
        buckets.setdefault(ts - ts % G_NS, []).append(v)
    f = {"mean": lambda xs: sum(xs) / len(xs), "sum": sum, "count": lambda xs: float(len(xs)),
         "max": max, "min": min}[method]
    return {b: f(xs) for b, xs in sorted(buckets.items())}


def iso(ns):
    return datetime.datetime.fromtimestamp(ns // 10**9, datetime.timezone.utc).isoformat()


def ingest(d, batches):
    """Push {metric: [[ts_ns, v], ...]} batches over the Unix ingest socket;
    wait for every ack."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(os.path.join(d.tmp, "ingest.sock"))
    up = msgpack.Unpacker(raw=False)
    s.sendall(msgpack.packb({"type": "hello", "version": 1, "client": "test_query"}))
    hello = recv(s, up)
    assert hello["type"] == "hello", hello
    accepted = 0
    for seq, batch in enumerate(batches, 1):
        s.sendall(msgpack.packb({"type": "points", "seq": seq, "metrics": [
            {"metric": m, "points": p} for m, p in batch.items()]}))
        ack = recv(s, up)
        assert ack["type"] == "ack" and ack["seq"] == seq and not ack["rejected"], ack
        accepted += ack["accepted"]
    s.close()
    return accepted


class Env:
    pg = None
    d = None
    conninfo = None


E = Env()


def ctl_json(*args):
    r = E.d.ctl("--json", *args, timeout=30)
    assert r.returncode == 0, (args, r.returncode, r.stdout, r.stderr)
    return json.loads(r.stdout)


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)


def test_push_flush():
    # Engine state loads from PostgreSQL first; flush says so until then.
    st = wait_for(lambda: E.d.call("status")["result"]["engine"]["state"] == "running", 30)
    assert st, E.d.logtext()
    n = ingest(E.d, [{m: DATA[m][:100] for m in METRICS}, {m: DATA[m][100:] for m in METRICS}])
    assert n == 150 * len(METRICS)
    r = E.d.ctl("flush", timeout=30)
    assert r.returncode == 0 and "flushed" in r.stdout, (r, E.d.logtext())
    j = ctl_json("flush")
    assert isinstance(j["committed_lsn"], int) and j["committed_lsn"] > 0, j


def test_query_matches_python():
    for m in METRICS:
        for method in ("mean", "sum", "count", "max"):
            got = ctl_json("query", m, "--granularity", "60", "--method", method)
            want = rollup(DATA[m], method)
            assert [row[0] for row in got] == [iso(b) for b in want], (m, method, got[:3])
            assert all(row[1] == 60.0 for row in got)
            for row, (b, v) in zip(got, want.items()):
                ok = row[2] == v if method in ("count", "max") else close(row[2], v)
                assert ok, (m, method, row, v)


def test_query_start_stop_and_human():
    m = METRICS[0]
    want = rollup(DATA[m], "max")
    keys = list(want)
    lo, hi = keys[3], keys[9]
    start = iso(lo).replace("+00:00", "Z")
    stop = "%d" % (hi // 10**9)                    # epoch seconds; stop is exclusive
    got = ctl_json("query", m, "--granularity", "60", "--method", "max", "--start", start,
                   "--stop", stop)
    assert [r[0] for r in got] == [iso(b) for b in keys[3:9]], got
    r = E.d.ctl("query", m, "--granularity=60", "--method=max", "--start", start, "--stop", stop)
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["TIMESTAMP", "GRANULARITY", "VALUE"], lines
    assert len(lines) == 7 and lines[1].split()[0] == iso(keys[3]), lines
    assert float(lines[1].split()[2]) == want[keys[3]]


def test_protocol_time_forms_and_paging():
    m = METRICS[1]
    want = rollup(DATA[m], "mean")
    keys = list(want)
    args = {"metric": m, "granularity": 60.0, "method": "mean", "start": keys[2] / 1e9,
            "stop": iso(keys[8]), "limit": 4}
    r = E.d.call("query", args)
    assert r["ok"], r
    res = r["result"]
    assert res["granularity_ns"] == G_NS and res["metric"] == m and res["method"] == "mean"
    assert [row[0] for row in res["rows"]] == keys[2:6], res
    assert res["next"] == keys[6], res
    args["start"] = res["next"]                    # int: ns
    res = E.d.call("query", args)["result"]
    assert [row[0] for row in res["rows"]] == keys[6:8] and res["next"] is None, res


def test_metrics_listing():
    got = ctl_json("metrics")
    mine = {e["name"]: e for e in got if e["name"].startswith("qtest/")}
    assert sorted(mine) == METRICS, got
    for m in METRICS:
        assert mine[m]["points"] == len(DATA[m]) and mine[m]["policy"] == "qtest", mine[m]
    r = E.d.ctl("metrics", "--prefix", "qtest/b")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "POLICY", "POINTS"], lines
    assert lines[1].split() == ["qtest/b", "qtest", str(len(DATA["qtest/b"]))], lines
    assert len(lines) == 2, lines
    res = E.d.call("metrics", {"prefix": "qtest/", "limit": 2})["result"]
    assert [e["name"] for e in res["metrics"]] == METRICS[:2] and res["next"] == METRICS[1], res
    res = E.d.call("metrics", {"prefix": "qtest/", "after": res["next"]})["result"]
    assert [e["name"] for e in res["metrics"]] == METRICS[2:] and res["next"] is None, res


def test_errors():
    r = E.d.ctl("query", "qtest/nope", "--granularity", "60", "--method", "mean")
    assert r.returncode == 1 and "unknown metric 'qtest/nope'" in r.stderr, r
    r = E.d.ctl("query", METRICS[0], "--granularity", "60", "--method", "bogus")
    assert r.returncode == 1 and "unknown method 'bogus'" in r.stderr, r
    r = E.d.ctl("query", METRICS[0], "--granularity", "60", "--method", "median")
    assert r.returncode == 1 and "not in policy 'qtest'" in r.stderr, r
    r = E.d.ctl("query", METRICS[0], "--granularity", "300", "--method", "mean")
    assert r.returncode == 1 and "granularity 300s" in r.stderr, r
    r = E.d.ctl("query", METRICS[0], "--method", "mean")
    assert r.returncode == 2 and "--granularity" in r.stderr, r
    r = E.d.ctl("query", METRICS[0], "--granularity", "60", "--method", "mean", "--start", "yesterday")
    assert r.returncode == 2 and "--start" in r.stderr, r
    r = E.d.call("query", {"metric": METRICS[0], "granularity": "60", "method": "mean"})
    assert not r["ok"] and r["error"]["name"] == "EBADARG" and "granularity" in r["error"]["message"], r
    r = E.d.call("flush", {"timeout_ms": -1})
    assert not r["ok"] and r["error"]["name"] == "EBADARG", r


def test_grafana_view_matches_cli():
    import psycopg2
    conn = psycopg2.connect(E.conninfo)
    try:
        cur = conn.cursor()
        for m in METRICS:
            cur.execute("SELECT time, value FROM gpuagg_measures WHERE metric = %s AND method = 'mean'"
                        " AND granularity_s = 60 AND ts_ns >= gpuagg_ns(%s::timestamptz)"
                        " AND ts_ns < gpuagg_ns(now()) ORDER BY time", (m, iso(BASE_NS)))
            sql = [[t.astimezone(datetime.timezone.utc).isoformat(), 60.0, v] for t, v in cur.fetchall()]
            cli = ctl_json("query", m, "--granularity", "60", "--method", "mean")
            assert sql == cli and len(sql) > 10, (m, sql[:2], cli[:2])
    finally:
        conn.close()


def test_deferred_reply_order():
    ingest(E.d, [{METRICS[0]: [[BASE_NS + 1800 * 10**9 + 1, 5.0]]}])   # something to commit
    s = E.d.connect()
    s.settimeout(30)
    try:
        s.sendall(msgpack.packb({"id": 7, "op": "flush"}) + msgpack.packb({"id": 8, "op": "ping"}) +
                  msgpack.packb({"id": 9, "op": "metrics", "args": {"prefix": "qtest/a"}}) +
                  msgpack.packb({"id": 10, "op": "frob"}))
        up = msgpack.Unpacker(raw=False)
        got = [recv(s, up) for _ in range(4)]
    finally:
        s.close()
    assert [g["id"] for g in got] == [7, 8, 9, 10], got
    assert got[0]["ok"] and got[0]["result"]["committed_lsn"] > 0, got[0]
    assert got[1]["ok"] and got[1]["result"]["pong"], got[1]
    # metrics started when it arrived (replies wait, execution does not): before
    # or after the flush committed.
    assert got[2]["ok"] and got[2]["result"]["metrics"][0]["points"] in (150, 151), got[2]
    assert not got[3]["ok"] and got[3]["error"]["name"] == "EBADOP", got[3]


def test_close_with_flush_pending():
    ingest(E.d, [{METRICS[1]: [[BASE_NS + 1800 * 10**9 + 2, 6.0]]}])
    for i in range(5):
        s = E.d.connect()
        send(s, "flush", None, 100 + i)
        if i % 2:
            send(s, "query", {"metric": METRICS[1], "granularity": 60, "method": "mean"}, 200 + i)
        s.close()
    time.sleep(0.5)
    assert E.d.proc.poll() is None
    assert E.d.call("ping")["ok"]
    r = E.d.ctl("flush", timeout=30)
    assert r.returncode == 0, r
    st = E.d.call("status")["result"]
    assert st["state"] == "running" and st["queues"]["control_connections"] == 1, st["queues"]


def test_postgres_down():
    subprocess.run([PG, "stop", E.pg], check=True)
    r = E.d.ctl("query", METRICS[0], "--granularity", "60", "--method", "mean", timeout=60)
    assert r.returncode == 1 and "(EDB)" in r.stderr and "storage unavailable" in r.stderr, r
    r = E.d.ctl("metrics", timeout=60)
    assert r.returncode == 1 and "(EDB)" in r.stderr, r
    # A flush with something to commit cannot finish: the daemon answers at --timeout.
    ingest(E.d, [{METRICS[2]: [[BASE_NS + 1800 * 10**9 + 3, 7.0]]}])
    t0 = time.time()
    r = E.d.ctl("--timeout", "1.5", "flush", timeout=30)
    took = time.time() - t0
    assert r.returncode == 1 and "ETIMEDOUT" in r.stderr and "not committed within 1500 ms" in r.stderr, r
    assert 1.3 < took < 4, took
    assert E.d.proc.poll() is None and E.d.call("ping")["ok"]
    # Back up: the same flush goes through, and the query sees the new point.
    subprocess.run([PG, "start", E.pg], capture_output=True, check=True)
    r = E.d.ctl("--timeout", "30", "flush", timeout=60)
    assert r.returncode == 0, (r, E.d.logtext()[-2000:])
    got = ctl_json("query", METRICS[2], "--granularity", "60", "--method", "count")
    assert got[-1] == [iso(BASE_NS + 1800 * 10**9), 60.0, 1.0], got[-1]


def test_flush_while_loading():
    """A daemon whose PostgreSQL is not there yet: flush waits for the load
    within --timeout and then says what it waited on."""
    with Daemon(extra=POLICY) as d:
        t0 = time.time()
        r = d.ctl("--timeout", "4", "flush", timeout=30)
        assert r.returncode == 1 and "(ETIMEDOUT)" in r.stderr, r
        assert "the engine was loading its state from PostgreSQL" in r.stderr, r
        assert 3.9 <= time.time() - t0 < 12, time.time() - t0
        # past 3 s it says what it waits on
        assert "gpuaggctl: flush: waiting 3s: engine loading, storage " in r.stderr, r
        r = d.ctl("query", "x", "--granularity", "60", "--method", "mean", timeout=30)
        assert r.returncode == 1 and "(EDB)" in r.stderr, r
        assert "the engine has not loaded its state from PostgreSQL yet" in r.stderr, r
        assert d.stop() == 0


@pytest.fixture(scope="module", autouse=True)
def shared_daemon():
    """A private PostgreSQL and one daemon on it, shared by the tests in
    order (test_flush_while_loading starts its own); the daemon must exit 0."""
    E.pg = tempfile.mkdtemp(prefix="gapg-", dir="/tmp")
    try:
        E.conninfo = subprocess.run([PG, "start", E.pg], capture_output=True, text=True,
                                    check=True).stdout.strip()
        with Daemon(conninfo=E.conninfo, extra=POLICY) as d:
            E.d = d
            yield
            assert d.stop(30) == 0, d.logtext()[-3000:]
    finally:
        subprocess.run([PG, "stop", E.pg])
        subprocess.run(["rm", "-rf", E.pg])
