"""Helpers for the cluster tests (docs/CLUSTER.md): real nats-server
processes with JetStream on loopback ports (one, or a 3-node JetStream
cluster), gpuaggd daemons in cluster mode on one private PostgreSQL, a
producer that resends what was not acknowledged, and the comparison of the
stored aggregates with those of a single daemon fed the same points."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ingest"))
import inglib  # noqa: E402
from inglib import Client, IngestDaemon, PrivatePG, columnar, wait_for  # noqa: E402,F401

NATS_SERVER = shutil.which("nats-server") or "/usr/bin/nats-server"


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class Nats:
    """n nats-server processes with JetStream; n > 1 forms one cluster."""

    def __init__(self, n=3):
        self.dir = tempfile.mkdtemp(prefix="ganats-", dir="/tmp")
        ports = free_ports(2 * n)
        self.ports, self.routes = ports[:n], ports[n:]
        self.procs = [None] * n
        for i in range(n):
            routes = ", ".join("nats-route://127.0.0.1:%d" % p for j, p in enumerate(self.routes)
                               if j != i)
            text = ("server_name: n%d\nlisten: 127.0.0.1:%d\n"
                    "jetstream { store_dir: \"%s/n%d\", max_memory_store: 64MB, "
                    "max_file_store: 1GB }\n" % (i, self.ports[i], self.dir, i))
            if n > 1:
                text += ("cluster { name: gatest, listen: 127.0.0.1:%d, routes: [%s] }\n"
                         % (self.routes[i], routes))
            with open(os.path.join(self.dir, "n%d.conf" % i), "w") as f:
                f.write(text)
        for i in range(n):
            self.start(i)
        for i in range(n):
            wait_for(lambda i=i: self.answers(i), timeout=20)

    def answers(self, i):
        try:
            socket.create_connection(("127.0.0.1", self.ports[i]), timeout=0.5).close()
            return True
        except OSError:
            return False

    def start(self, i):
        log = open(os.path.join(self.dir, "n%d.log" % i), "ab")
        self.procs[i] = subprocess.Popen([NATS_SERVER, "-c", os.path.join(self.dir, "n%d.conf" % i)],
                                         stdout=log, stderr=log)

    def kill(self, i):
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait()

    def urls(self):
        return ",".join("nats://127.0.0.1:%d" % p for p in self.ports)

    def stop(self):
        for p in self.procs:
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            if p:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


POLICY = inglib.policy_yaml("cl", 1, ["mean", "sum", "count", "max", "min", "last"])


class ClusterDaemon(IngestDaemon):
    """gpuaggd in cluster mode, member `name`."""

    def __init__(self, pg, nats, name, replicas=3, stream="GATEST", extra="", writers=2,
                 storage=None):
        self.name = name
        cl = ("cluster: { nats: \"%s\", stream: %s, replicas: %d, member: %s, heartbeat_ms: 250, "
              "member_timeout_ms: 2000, publish_timeout_ms: 2000 }\n"
              % (nats.urls(), stream, replicas, name))
        st = {"writers": writers, "flush_interval_ms": 100, "window_snapshot_s": 10}
        st.update(storage or {})
        super().__init__(conninfo=pg.conninfo, extra=cl + POLICY + extra, storage=st)
        if os.environ.get("GA_CLUSTER_DIAG"):
            self.env["GA_LOG_NO_TS"] = "0"     # timestamps, to line the logs up

    def cluster_status(self):
        return self.call("status")["result"]["cluster"]

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def measures(pg):
    """Every stored aggregate, sorted: [metric, granularity_ns, method, ts_ns, value]."""
    return pg.sql("SELECT metric, granularity_ns, method, ts_ns, value FROM gpuagg_measures "
                  "ORDER BY 1, 2, 3, 4")


class Producer:
    """Sends batches over TCP to one daemon after another; a batch is
    resent (to the next daemon) until acknowledged.  acked: the points."""

    def __init__(self, daemons, metrics, seed=1):
        self.daemons = daemons
        self.metrics = metrics
        self.acked = []                 # (name, ts_ns, value)
        self.ack_times = []             # time.monotonic() of each acknowledged batch
        self.seq = 0
        self.t0 = (int(time.time()) - 900) * 10**9   # recent: retention keeps it
        self.step = 0
        self.target = 0
        self.client = None

    def _connect(self):
        for k in range(len(self.daemons) * 4):
            d = self.daemons[(self.target + k) % len(self.daemons)]
            if d.proc is None or d.proc.poll() is not None:
                continue
            try:
                c = Client(tcp_port=d.tcp_port(), timeout=15)
                c.hello()
                self.target = (self.target + k) % len(self.daemons)
                return c
            except (OSError, AssertionError, KeyError):
                time.sleep(0.1)
        raise AssertionError("no daemon accepts connections")

    def batch(self, npoints_per_metric=1):
        """One batch: every metric gets points at the next timestamps."""
        names, ts, vals, idx = list(self.metrics), [], [], []
        for _ in range(npoints_per_metric):
            t = self.t0 + self.step * 250 * 10**6
            self.step += 1
            for i, _m in enumerate(names):
                idx.append(i)
                ts.append(t)
                vals.append(float((self.step * 7 + i * 13) % 1000) / 8.0)
        return names, idx, ts, vals

    def send(self, npoints_per_metric=1):
        names, idx, ts, vals = self.batch(npoints_per_metric)
        while True:
            if self.client is None:
                self.client = self._connect()
            self.seq += 1
            try:
                self.client.send(columnar(self.seq, names, ts, vals, index=idx))
                r = self.client.recv()
            except OSError:
                r = None
            if r and r.get("type") == "ack" and r.get("seq") == self.seq:
                for i, k in enumerate(idx):
                    self.acked.append((names[k], ts[i], vals[i]))
                self.ack_times.append(time.monotonic())
                return
            # not acknowledged: resend elsewhere
            try:
                self.client.close()
            except OSError:
                pass
            self.client = None
            self.target += 1

    def close(self):
        if self.client:
            self.client.close()


def reference(pg, points, dbname):
    """The aggregates a single daemon (local journal, no cluster) stores
    when fed points once each, in a database of its own on the same
    server: the expected result of a cluster trial."""
    pg.sql("DROP DATABASE IF EXISTS %s" % dbname)
    pg.sql("CREATE DATABASE %s" % dbname)
    conninfo = pg.conninfo.replace("dbname=gpuagg", "dbname=%s" % dbname)
    assert conninfo != pg.conninfo, pg.conninfo
    d = IngestDaemon(conninfo=conninfo, extra=POLICY, storage={"flush_interval_ms": 100})
    d.start()
    try:
        wait_running(d)
        c = Client(d)
        c.hello()
        # per metric in time order (a metric's points are in time order in
        # the stream too: one producer, in order)
        by = {}
        for name, ts, v in points:
            by.setdefault(name, {})[ts] = v
        names = sorted(by)
        seq = 0
        idx, tss, vals = [], [], []
        for i, n in enumerate(names):
            for ts in sorted(by[n]):
                idx.append(i)
                tss.append(ts)
                vals.append(by[n][ts])
        step = 20000
        for k in range(0, len(idx), step):
            seq += 1
            c.send(columnar(seq, names, tss[k:k + step], vals[k:k + step], index=idx[k:k + step]))
            r = c.recv()
            assert r["type"] == "ack", r
        c.close()
        r = d.call("flush")
        assert r.get("ok"), r
        rows = pg.sql("SELECT 1") and measures_db(pg, dbname)
    finally:
        d.stop()
    return rows


def wait_running(d, timeout=30):
    def running():
        try:
            return d.call("status")["result"]["engine"]["state"] == "running"
        except (OSError, KeyError):
            return False
    assert wait_for(running, timeout=timeout), "engine not running: " + d.logtext()[-2000:]


def flush_all(daemons, timeout=30):
    """gpuaggctl flush on every live daemon, retried while one is busy
    (partitions being reassigned, state loading)."""
    for d in daemons:
        if not d.proc or d.proc.poll() is not None:
            continue
        def ok():
            r = d.call("flush", {"timeout_ms": 5000})
            return r.get("ok")
        assert wait_for(ok, timeout=timeout, step=0.2), d.call("flush", {"timeout_ms": 5000})


def measures_db(pg, dbname):
    cmd = ["psql", "-h", pg.sockdir, "-U", "postgres", "-d", dbname, "-Atc",
           "SELECT metric, granularity_ns, method, ts_ns, value FROM gpuagg_measures "
           "ORDER BY 1, 2, 3, 4"]
    if os.getuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [line.split("|") for line in r.stdout.splitlines() if line]


def wait_committed(pg, daemons, timeout=30):
    """Until everything is stored: every live daemon (each reads the whole
    stream) reports the same processed position twice in a row, half a
    second apart, and every partition's committed position has reached it."""
    seen = {"p": None}

    def done():
        pos = set()
        for d in daemons:
            if d.proc and d.proc.poll() is None:
                try:
                    pos.add(d.call("status")["result"]["engine"]["processed_lsn"])
                except (OSError, KeyError):
                    return False
        if len(pos) != 1:
            seen["p"] = None
            return False
        p = pos.pop()
        stable, seen["p"] = seen["p"] == p, p
        rows = pg.sql("SELECT min(committed_lsn) FROM partitions")
        return stable and p > 0 and int(rows[0][0]) >= p
    if not wait_for(done, timeout=timeout, step=0.5):
        st = {}
        for d in daemons:
            if d.proc and d.proc.poll() is None:
                r = d.call("status")["result"]
                st[d.name] = (r["engine"]["processed_lsn"], r["cluster"]["nats"]["stream_last_seq"])
                if os.environ.get("GA_CLUSTER_GDB"):   # where a daemon behind is stuck
                    subprocess.run("gdb -p %d -batch -ex 'thread apply all bt' > %s 2>&1"
                                   % (d.proc.pid, os.environ["GA_CLUSTER_GDB"] + "." + d.name),
                                   shell=True, timeout=60)
        if os.environ.get("GA_CLUSTER_DIAG"):
            for _ in range(3):
                diagnose(pg, daemons, os.environ["GA_CLUSTER_DIAG"])
                time.sleep(3)
        raise AssertionError("not everything committed within %d s: (processed, stream last) %r, "
                             "lowest committed %r" % (timeout, st, pg.sql(
                                 "SELECT min(committed_lsn) FROM partitions")))


def _socket_inodes(pid):
    out = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                m = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if m.startswith("socket:["):
                out.add(m[8:-1])
    except OSError:
        pass
    return out


def diagnose(pg, daemons, path):
    """Debugging aid (GA_CLUSTER_DIAG=file): which daemon's session holds
    or waits for which partition lock, and what every backend is doing."""
    owner = {}                          # socket inode of a daemon -> member
    for d in daemons:
        if d.proc and d.proc.poll() is None:
            for ino in _socket_inodes(d.proc.pid):
                owner[ino] = d.name
    peer = {}
    r = subprocess.run(["ss", "-xn"], capture_output=True, text=True)
    for line in r.stdout.splitlines()[1:]:
        f = line.split()
        if len(f) >= 8:
            peer[f[5]] = f[7]
    rows = pg.sql("SELECT a.pid, a.application_name, a.state, coalesce(a.wait_event, ''), "
                  "left(a.query, 80), coalesce((SELECT string_agg(l.objid::text || "
                  "CASE WHEN l.granted THEN '' ELSE '?' END, ',' ORDER BY l.objid) FROM pg_locks l "
                  "WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.classid = 745263746), '') "
                  "FROM pg_stat_activity a WHERE a.backend_type = 'client backend'")
    with open(path, "a") as f:
        f.write("---- %s\n" % time.strftime("%H:%M:%S"))
        for d in daemons:
            if d.proc and d.proc.poll() is None:
                r = d.call("status")["result"]
                f.write("%s engine=%r\n%s cluster=%r\n" % (d.name, r.get("engine"), d.name,
                                                          r.get("cluster", {}).get("nats")))
        for pid, app, state, wait, q, locks in rows:
            who = "?"
            for ino in _socket_inodes(int(pid)):
                if peer.get(ino) in owner:
                    who = owner[peer[ino]]
            f.write("pid=%s member=%s app=%s state=%s wait=%s locks=[%s] query=%r\n"
                    % (pid, who, app, state, wait, locks, q))


def diff(got, want, limit=5):
    """Rows in one and not the other (a few), for assertion messages."""
    g, w = set(map(tuple, got)), set(map(tuple, want))
    return {"missing": sorted(w - g)[:limit], "extra": sorted(g - w)[:limit],
            "n_got": len(got), "n_want": len(want)}
