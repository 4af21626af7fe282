"""Helpers for the ingest tests: a daemon with chosen listen/limits/journal
settings, an ingest protocol v1 client, frame builders (proto/INGEST.md),
a private PostgreSQL, and queries of the gpuagg_measures view."""
import atexit
import msgpack
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "blackbox"))
import bblib  # noqa: E402
from bblib import BIN, ROOT, free_port, read_points, wait_for  # noqa: E402,F401

GPUAGG_LOAD = os.path.join(BIN, "gpuagg-load")
PG_PRIVATE = os.path.join(ROOT, "tools", "pg-private.sh")

EPROTO, ETOOBIG, EBUSY, EAUTH, ETIMEDOUT = -4097, -4100, -4101, -4106, -110


def yaml_map(d):
    return "{ " + ", ".join("%s: %s" % (k, v) for k, v in d.items()) + " }"


class IngestDaemon(bblib.Daemon):
    """bblib.Daemon with the listen, limits and journal sections (and any
    other top-level text) chosen by the test."""

    def __init__(self, conninfo=None, listen=None, limits=None, journal=None, extra="",
                 storage=None, tmp=None):
        super().__init__(conninfo=conninfo)
        if tmp:                        # reuse a directory (journal) across restarts
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = tmp
            os.makedirs(tmp, exist_ok=True)
            self.cfg = os.path.join(tmp, "gpuaggd.yaml")
            self.sock = os.path.join(tmp, "control.sock")
            self.log = os.path.join(tmp, "gpuaggd.log")
        t = self.tmp
        lst = {"unix": "%s/ingest.sock" % t, "tcp": '"127.0.0.1:0"', "udp": '"127.0.0.1:0"',
               "telemetry_secret": '""'}
        lst.update(listen or {})
        st = {"conninfo": '"%s"' % (conninfo or "host=%s/nopg dbname=gpuagg connect_timeout=1" % t),
              "retry_initial_ms": 100, "retry_max_ms": 500}
        st.update(storage or {})
        jn = {"dir": "%s/journal" % t}
        jn.update(journal or {})
        text = "log: { level: info }\ncontrol: { socket: %s }\n" % self.sock
        text += "listen: %s\nstorage: %s\njournal: %s\n" % (yaml_map(lst), yaml_map(st), yaml_map(jn))
        if limits:
            text += "limits: %s\n" % yaml_map(limits)
        self.write_config(text + extra)
        self.unix = "%s/ingest.sock" % t

    def ingest_status(self):
        return self.call("status")["result"]["ingest"]

    def tcp_port(self):
        return self.ingest_status()["tcp_port"]

    def udp_port(self):
        return self.ingest_status()["udp_port"]

    def stats(self):
        return self.call("stats")["result"]


class Client:
    """One ingest connection; recv() returns decoded messages in order."""

    def __init__(self, d=None, tcp_port=None, path=None, timeout=10.0):
        if tcp_port:
            self.s = socket.create_connection(("127.0.0.1", tcp_port), timeout=timeout)
            self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.settimeout(timeout)
            self.s.connect(path or d.unix)
        self.up = msgpack.Unpacker(raw=False, strict_map_key=False)

    def send(self, data):
        self.s.sendall(data)

    def send_obj(self, obj):
        self.s.sendall(msgpack.packb(obj, use_bin_type=True))

    def recv(self):
        """The next message, or None on EOF."""
        while True:
            for obj in self.up:
                return obj
            try:
                data = self.s.recv(1 << 20)
            except ConnectionResetError:
                data = b""
            if not data:
                return None
            self.up.feed(data)

    def hello(self, token=None):
        h = {"type": "hello", "version": 1, "client": "test_ingest"}
        if token is not None:
            h["token"] = token
        self.send_obj(h)
        r = self.recv()
        assert r and r["type"] == "hello" and r["version"] == 1, r
        assert r["server"].startswith("gpuaggd "), r
        return r

    def expect_eof(self, timeout=10.0):
        """Read until EOF; returns the messages seen before it."""
        self.s.settimeout(timeout)
        seen = []
        while True:
            m = self.recv()
            if m is None:
                return seen
            seen.append(m)

    def close(self):
        self.s.close()


# ---- frames -----------------------------------------------------------------

def u32le(xs):
    return struct.pack("<%dI" % len(xs), *xs)


def i64le(xs):
    return struct.pack("<%dq" % len(xs), *xs)


def f64le(xs):
    return struct.pack("<%dd" % len(xs), *xs)


def rand_value(rng):
    """Random, never zero, with random low bits."""
    v = rng.uniform(1.0, 1000.0)
    return -v if rng.random() < 0.25 else v


def columnar(seq, names, ts, values, index=None, counts=None):
    m = {"type": "points", "seq": seq, "names": names}
    if index is not None:
        m["index"] = u32le(index)
    else:
        m["counts"] = counts
    m["ts"] = i64le(ts)
    m["values"] = f64le(values)
    return msgpack.packb(m, use_bin_type=True)


def friendly(seq, entries):
    """entries: [(metric, [[ts, value], ...]), ...]"""
    return msgpack.packb({"type": "points", "seq": seq, "metrics": [
        {"metric": n, "points": p} for n, p in entries]}, use_bin_type=True)


def send_ack(d, seq, frame, points=None):
    """One frame on a fresh connection; asserts a clean ack (every point
    accepted when points is given) and returns it."""
    c = Client(d)
    c.hello()
    c.send(frame)
    a = c.recv()
    c.close()
    assert a["type"] == "ack" and a["seq"] == seq and not a.get("rejected"), a
    assert points is None or a["accepted"] == points, a
    return a


def send_batch(d, seq, batch):
    """batch = (names, index, ts, values): one columnar frame, every point
    accepted."""
    names, index, ts, values = batch
    return send_ack(d, seq, columnar(seq, names, ts, values, index=index), len(ts))


def flush(d):
    """gpuaggctl flush: everything acknowledged is committed."""
    r = d.ctl("flush", timeout=60)
    assert r.returncode == 0 and "flushed" in r.stdout, (r, d.logtext()[-3000:])


def engine_running(d, timeout=60):
    return wait_for(lambda: d.call("status")["result"]["engine"]["state"] == "running", timeout)


# What a database stores, to compare two: buckets, late points, point counts.
STORED_SQL = ("SELECT m.name, b.granularity, b.ts, s.methods, b.vals FROM bucket_rows b "
              "JOIN metrics m ON m.id = b.metric JOIN method_sets s ON s.id = b.mset "
              "ORDER BY 1, 2, 3; "
              "SELECT m.name, l.ts, l.value, l.reason FROM late_points l "
              "JOIN metrics m ON m.id = l.metric ORDER BY 1, 2, 3; "
              "SELECT name, points FROM metrics ORDER BY 1")


def rfc3339(ns):
    s, frac = divmod(ns, 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".%09dZ" % frac


# ---- PostgreSQL ---------------------------------------------------------------

class PrivatePG:
    """tools/pg-private.sh in its own temporary directory (it chowns it to
    postgres when run as root); stopped and removed by stop()."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gapg-", dir="/tmp")
        r = subprocess.run(["sh", PG_PRIVATE, "start", self.dir], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            raise AssertionError("private PostgreSQL did not start: " + r.stderr)
        atexit.register(self.stop)
        self.conninfo = r.stdout.strip()
        self.sockdir = os.path.join(self.dir, "sock")

    def sql(self, q, db="gpuagg"):
        cmd = ["psql", "-h", self.sockdir, "-U", "postgres", "-d", db, "-Atc", q]
        if os.getuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return [line.split("|") for line in r.stdout.splitlines() if line]

    def stop(self):
        if self.dir:
            subprocess.run(["sh", PG_PRIVATE, "stop", self.dir], capture_output=True, timeout=60)
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def policy_yaml(name, granularity_s, methods, points=100000):
    return ("archive_policies:\n  - name: %s\n    back_window: 0\n    definition:\n"
            "      - { granularity: %ds, points: %d }\n    aggregation_methods: [%s]\n"
            "default_archive_policy: %s\n" % (name, granularity_s, points, ", ".join(methods), name))


def batch_sensitive_policy(name):
    """A policy whose answers depend on how points are grouped into batches
    (rate:, a percentile, std, back_window 1): for comparing two ways of
    feeding the same batches."""
    return ("archive_policies:\n  - name: %s\n    back_window: 1\n    definition:\n"
            "      - { granularity: 1s, points: 100000 }\n"
            "      - { granularity: 10s, points: 100000 }\n"
            "    aggregation_methods: [mean, count, std, 50pct, last, rate:mean, rate:max]\n"
            "default_archive_policy: %s\n" % (name, name))


def random_points(rng, nnames, points, base):
    """points points of each of nnames names around base (ns): out of order,
    one in 20 older than a back_window of 1 at 1 s (late).  Returns
    (index, ts, values)."""
    index, ts, vals = [], [], []
    for j in range(nnames):
        for _ in range(points):
            t = base + rng.randrange(-6 * 10**9, 2 * 10**9)
            if rng.random() < 0.05:
                t -= 80 * 10**9               # older than the window: late
            index.append(j)
            ts.append(t)
            vals.append(rand_value(rng))
    return index, ts, vals


def shared_suite(S, setup, cleanup=None):
    """The body of a module-scoped pytest fixture (`yield from
    shared_suite(S, setup)`): setup(), then the tests run; at the end S.d
    is stopped (a non-zero exit fails the suite), S.pg stopped, cleanup()
    run."""
    rc = 0
    try:
        setup()
        yield
    finally:
        if S.d:
            rc = S.d.stop(timeout=60)
        if S.pg:
            S.pg.stop()
        if cleanup:
            cleanup()
    assert rc == 0, "gpuaggd exited %r" % rc


def rng_for(name):
    seed = int(os.environ.get("GA_TEST_SEED", "0")) or random.randrange(1, 1 << 30)
    print("%s: seed %d (GA_TEST_SEED to repeat)" % (name, seed))
    return random.Random(seed)
