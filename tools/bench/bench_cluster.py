#!/usr/bin/python3
"""bench_cluster.py -- cluster mode on one host (docs/CLUSTER.md): N daemons,
one per GPU, against one daemon, with the capacity benchmark's workload
(tools/bench/bench_capacity.c): gpuagg-load sending one point of each metric
per interval with data time at wall time (-k 1 --realtime), batches of
10000, policy medium.  Python 3 standard library only.

  tools/bench/bench_cluster.py --metrics M --interval DUR --duration S \\
      --daemons N [--backend cpu|gpu] [--kill-at S] [--out DIR] ...

Steps:
  1. a private PostgreSQL (tools/pg-private.sh) and three nats-server
     processes forming a JetStream cluster on loopback ports (the stream has
     --replicas replicas);
  2. phase A: one daemon in cluster mode (gpu.devices: [first GPU] with
     --backend gpu, none with cpu) and one gpuagg-load at the offered rate
     (default M / interval) for --duration s; then the drain;
  3. phase B: N daemons (daemon i on the i-th GPU of --gpus), a fresh
     database and a fresh stream, one gpuagg-load per daemon sending its own
     slice of N x M metrics (names b<i>.<k>) at N x phase A's rate
     (--metrics-b, --rate-b override); at --kill-at s, kill -9 of the last
     daemon: takeover (its partitions in the survivors' `cluster.owned`) and
     catch-up (every partition committed past the stream's end at the kill)
     are timed; the survivors' loads go on; then the drain;
  4. after each phase: zero loss (sum(metrics.points) in PostgreSQL against
     the points the loads had acknowledged; points sent and not acknowledged
     may be stored too, at most as many as the loads' --unacked files hold)
     and PostgreSQL's parallel-COPY ceiling for the rows written
     (bench_capacity --ceiling-only, the capacity benchmark's ceiling);
  5. the NATS ceiling: with the daemons stopped, --nats-publishers processes
     publish messages of phase B's mean stream message size to a fresh
     stream of the same replicas, each with --nats-window unacknowledged
     publishes, for --nats-ceiling-s s (a lower bound of the servers' own
     ceiling when a publisher used a whole core; its CPU is printed);
  6. the table, and which ceiling binds.

Definitions (as bench_capacity's, with stream sequences for journal
positions): acked = ingest.points_accepted summed over the daemons; the
stream's end D = its last sequence + 1 (STREAM.INFO, asked of NATS); the
committed position C = min(partitions.committed_lsn) in PostgreSQL (every
stream message below C is committed); the storage lag at a sample is how
long ago D passed C (interpolated between samples); committed points are the
acked points when D passed C.  Rates are over the steady part of the load:
from --warmup s to the kill (phase B) or the load's end (phase A), a whole
number of intervals.  The ratio is phase B's committed points/s over N x
phase A's.  A partition's position moves only when its owner commits: with
several daemons, the messages at the stream's end that belong to the others'
partitions hold C back until the owner's next commit, so the lag is an upper
bound by up to the time between two commits of a daemon (with a batch every
few seconds, that is the gap between batches; under steady load,
storage.flush_interval_ms).  Takeover: from the kill until the survivors'
`cluster.owned` hold every partition of the killed daemon; "lag back": from
the kill until the storage lag is again at most the steady window's p99
(at least 1 s).

On the GPU host, from the unpacked bundle: /opt/root/bench_cluster (see
tools/gpu-host/bench_cluster.sh).  Files (configs, logs, samples.tsv,
summary.txt) stay in --out.  Exit 0: every step ran and nothing was lost;
1: a step failed or points were lost; 2: usage."""
import argparse
import bisect
import glob
import json
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(msg, flush=True)


def fail(msg):
    raise RuntimeError(msg)


# ---- tools ----------------------------------------------------------------

def first_existing(paths):
    for p in paths:
        if p and os.path.exists(p):
            return p
    return None


def find_tools(a):
    """gpuaggd & co: --bindir, else the repo's build/bin, else bin/ next to
    this script (the bundle); pg-private.sh: tools/ or next to the script."""
    bindirs = [a.bindir] if a.bindir else [os.path.join(HERE, "..", "..", "build", "bin"),
                                           os.path.join(HERE, "bin")]
    t = {}
    for name in ("gpuaggd", "gpuaggctl", "gpuagg-load"):
        t[name] = first_existing(os.path.join(d, name) for d in bindirs)
    t["bench_capacity"] = a.bench_capacity or first_existing(
        [os.path.join(HERE, "..", "..", "build", "bench", "bench_capacity"),
         os.path.join(HERE, "bin", "bench_capacity")] +
        [os.path.join(d, "bench_capacity") for d in bindirs])
    t["pg_script"] = a.pg_script or first_existing([os.path.join(HERE, "..", "pg-private.sh"),
                                                     os.path.join(HERE, "pg-private.sh")])
    pgbin = os.environ.get("PG_BINDIR") or (sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                                                   key=lambda p: int(p.split("/")[-2]))
                                            or [""])[-1]
    t["psql"] = first_existing([os.path.join(pgbin, "psql")]) or shutil.which("psql")
    t["nats-server"] = a.nats_server or shutil.which("nats-server") or first_existing(
        ["/usr/sbin/nats-server", "/usr/bin/nats-server", os.path.join(HERE, "bin", "nats-server")])
    missing = [k for k, v in t.items() if not v]
    if missing:
        fail("not found: %s (see --bindir, --pg-script, --nats-server, PG_BINDIR)" % ", ".join(missing))
    return {k: os.path.abspath(v) for k, v in t.items()}


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


def wait_for(pred, timeout, step=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


# ---- /proc ----------------------------------------------------------------

def cpu_ticks(pid):
    """utime + stime of pid in clock ticks, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    f = s[s.rindex(")") + 2:].split()
    return int(f[11]) + int(f[12])


def host_ticks():
    """(busy, total) clock ticks of all CPUs since boot."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v[:8]) - idle, sum(v[:8])


def children_of(ppid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    s = f.read()
                if int(s[s.rindex(")") + 2:].split()[1]) == ppid:
                    out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


class CpuMeter:
    """CPU seconds used by groups of processes between start() and stop():
    each pid's ticks are read at every sample, so a process that exits in
    between keeps what it used up to its last sample."""

    def __init__(self):
        self.groups = {}                # name -> callable returning pids
        self.first, self.last = {}, {}

    def add(self, name, pids_fn):
        self.groups[name] = pids_fn

    def sample(self):
        for name, fn in self.groups.items():
            for pid in fn():
                t = cpu_ticks(pid)
                if t is None:
                    continue
                self.first.setdefault((name, pid), t)
                self.last[(name, pid)] = t
        self.host_last = host_ticks()
        if not hasattr(self, "host_first"):
            self.host_first = self.host_last

    def seconds(self, name):
        return sum(self.last[k] - self.first[k] for k in self.last if k[0] == name) / CLK

    def host_busy(self):
        b = self.host_last[0] - self.host_first[0]
        t = self.host_last[1] - self.host_first[1]
        return b / t if t else 0.0


# ---- NATS: the text protocol, enough for JetStream API requests -----------

class NatsConn:
    """One connection to a nats-server; request() sends a request and
    returns the reply's payload (headers dropped)."""

    def __init__(self, port, timeout=10):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self._line()                     # INFO {...}
        self.s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,'
                       b'"no_responders":true,"protocol":1}\r\nPING\r\n')
        self.inbox = "_INBOX.bc%d%d" % (os.getpid(), port)
        while self._msg() != "PONG":
            pass
        self.s.sendall(("SUB %s.* 1\r\n" % self.inbox).encode())
        self.n = 0

    def _fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            fail("NATS connection closed")
        self.buf += d

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def _take(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n + 2:]
        return d

    def _msg(self):
        """The next protocol message: "PONG", "PING" (answered), ("MSG",
        subject, payload), or ("ERR", text)."""
        line = self._line()
        op = line.split(" ", 1)[0].upper()
        if op == "PING":
            self.s.sendall(b"PONG\r\n")
            return "PING"
        if op in ("PONG", "+OK", "INFO"):
            return op
        if op == "-ERR":
            return ("ERR", line)
        f = line.split()
        if op == "MSG":
            return ("MSG", f[1], self._take(int(f[-1])))
        if op == "HMSG":
            d = self._take(int(f[-1]))
            hl = int(f[-2])
            hdr = d[:hl].decode(errors="replace")
            if " 503" in hdr.split("\r\n", 1)[0]:
                return ("MSG", f[1], b'{"error":{"description":"no responders"}}')
            return ("MSG", f[1], d[hl:])
        return op

    def request(self, subject, payload=b"", timeout=10):
        self.n += 1
        rep = "%s.%d" % (self.inbox, self.n)
        self.s.sendall(b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), rep.encode(), len(payload), payload))
        self.s.settimeout(timeout)
        while True:
            m = self._msg()
            if isinstance(m, tuple) and m[0] == "ERR":
                fail("NATS: %s" % m[1])
            if isinstance(m, tuple) and m[1] == rep:
                return json.loads(m[2] or b"{}")

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class Nats:
    """n nats-server processes with JetStream; n > 1 forms one cluster
    (as tests/cluster/clusterlib.py's Nats)."""

    def __init__(self, binary, d, n=3, max_file="40GB"):
        self.dir = d
        os.makedirs(d, exist_ok=True)
        ports = free_ports(2 * n)
        self.ports, self.routes = ports[:n], ports[n:]
        self.procs = []
        for i in range(n):
            routes = ", ".join("nats-route://127.0.0.1:%d" % p for j, p in enumerate(self.routes) if j != i)
            text = ("server_name: n%d\nlisten: 127.0.0.1:%d\nmax_payload: 8MB\n"
                    "jetstream { store_dir: \"%s/n%d\", max_memory_store: 256MB, max_file_store: %s }\n"
                    % (i, self.ports[i], d, i, max_file))
            if n > 1:
                text += "cluster { name: gabench, listen: 127.0.0.1:%d, routes: [%s] }\n" % (self.routes[i], routes)
            cfg = os.path.join(d, "n%d.conf" % i)
            with open(cfg, "w") as f:
                f.write(text)
            logf = open(os.path.join(d, "n%d.log" % i), "ab")
            self.procs.append(subprocess.Popen([binary, "-c", cfg], stdout=logf, stderr=logf))
        for i in range(n):
            if not wait_for(lambda i=i: self._answers(i), 20):
                fail("nats-server n%d does not answer; see %s/n%d.log" % (i, d, i))
        # JetStream ready: a stream info request gets an answer (not found)
        self.conn = None

        def ready():
            try:
                c = NatsConn(self.ports[0], timeout=3)
                r = c.request("$JS.API.INFO", timeout=3)
                if "error" in r:
                    c.close()
                    return False
                self.conn = c
                return True
            except (OSError, RuntimeError):
                return False
        if not wait_for(ready, 60, 0.5):
            fail("JetStream not ready after 60 s; see %s/n*.log" % d)

    def _answers(self, i):
        try:
            socket.create_connection(("127.0.0.1", self.ports[i]), timeout=0.5).close()
            return True
        except OSError:
            return False

    def urls(self):
        return ",".join("nats://127.0.0.1:%d" % p for p in self.ports)

    def pids(self):
        return [p.pid for p in self.procs if p.poll() is None]

    def stream_info(self, name):
        r = self.conn.request("$JS.API.STREAM.INFO." + name, timeout=5)
        return r.get("state") if "error" not in r else None

    def delete_stream(self, name):
        self.conn.request("$JS.API.STREAM.DELETE." + name, timeout=30)

    def stop(self):
        if self.conn:
            self.conn.close()
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()


# ---- PostgreSQL -------------------------------------------------------------

class PG:
    def __init__(self, tools, pgdir):
        self.tools, self.pgdir = tools, pgdir
        r = subprocess.run(["/bin/sh", tools["pg_script"], "start", pgdir], capture_output=True, text=True)
        if r.returncode != 0:
            fail("pg-private.sh start failed: %s" % r.stderr.strip())
        self.base = r.stdout.strip().splitlines()[-1]
        kv = dict(x.split("=", 1) for x in self.base.split())
        self.sock = kv["host"]

    def conninfo(self, db):
        return "host=%s user=postgres dbname=%s" % (self.sock, db)

    def sql(self, q, db="postgres", timeout=600):
        r = subprocess.run([self.tools["psql"], "-h", self.sock, "-U", "postgres", "-d", db, "-XAtq",
                            "-v", "ON_ERROR_STOP=1", "-c", q], capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            fail("psql: %s: %s" % (q, r.stderr.strip()))
        return r.stdout.strip()

    def fresh_db(self, db):
        self.sql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % db)
        self.sql("CREATE DATABASE %s" % db)

    def pids(self):
        try:
            with open(os.path.join(self.pgdir, "data", "postmaster.pid")) as f:
                pm = int(f.readline())
        except (OSError, ValueError):
            return []
        return [pm] + children_of(pm)

    def stop(self):
        subprocess.run(["/bin/sh", self.tools["pg_script"], "stop", self.pgdir], capture_output=True)


# ---- daemons ----------------------------------------------------------------

class Daemon:
    def __init__(self, ctx, phase, i, db, stream, gpu, max_metrics):
        a = ctx.a
        self.ctx, self.i, self.name = ctx, i, "%s%d" % (phase, i)
        self.dir = os.path.join(ctx.out, phase, "d%d" % i)
        self.run = os.path.join(ctx.rundir, "%s%d" % (phase, i))
        for d in (self.dir, self.run):
            os.makedirs(d, exist_ok=True)
        shutil.rmtree(os.path.join(self.dir, "journal"), ignore_errors=True)
        self.sock = os.path.join(self.run, "control.sock")
        self.ingest = os.path.join(self.run, "ingest.sock")
        self.cfg = os.path.join(self.dir, "gpuaggd.yaml")
        self.log = os.path.join(self.dir, "gpuaggd.log")
        st = ""
        for key, v in (("flush_rows", a.flush_rows), ("flush_interval_ms", a.flush_interval_ms),
                       ("writers", a.writers), ("window_snapshot_s", a.window_snapshot_s)):
            if v:
                st += "  %s: %d\n" % (key, v)
        text = ("# written by bench_cluster.py\n"
                "log: { level: \"%s\" }\n"
                "control: { socket: \"%s\" }\n"
                "listen: { unix: \"%s\", tcp: \"\", udp: \"\" }\n"
                "storage:\n  conninfo: \"%s\"\n%s"
                "limits: { max_metrics: %d }\n"
                "journal: { dir: \"%s/journal\" }\n"
                "gpu: { devices: %s }\n"
                "cluster: { nats: \"%s\", stream: %s, replicas: %d, member: %s, heartbeat_ms: %d, "
                "member_timeout_ms: %d }\n"
                "archive_policy_rules: []\n"
                "default_archive_policy: \"%s\"\n"
                % (a.log_level, self.sock, self.ingest, ctx.pg.conninfo(db), st, max_metrics, self.dir,
                   "none" if gpu is None else "[%d]" % gpu, ctx.nats.urls(), stream, a.replicas, self.name,
                   a.heartbeat_ms, a.member_timeout_ms, a.policy))
        with open(self.cfg, "w") as f:
            f.write(text)
        r = subprocess.run([ctx.tools["gpuaggd"], "--check-config", self.cfg], capture_output=True, text=True)
        if r.returncode != 0:
            fail("gpuaggd refused %s: %s%s" % (self.cfg, r.stdout, r.stderr))
        self.proc = None
        self.status_last = None
        self.rows = Counter()

    def start(self):
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen([self.ctx.tools["gpuaggd"], "--config", self.cfg, "--foreground"],
                                     stdout=logf, stderr=logf)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def status_cmd(self):
        return [self.ctx.tools["gpuaggctl"], "--socket", self.sock, "--json", "--timeout", "5", "status"]

    def status(self):
        r = subprocess.run(self.status_cmd(), capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return None
        return json.loads(r.stdout)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout=300):
        if not self.alive():
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log("   %s still stopping after %d s: SIGKILL" % (self.name, timeout))
            self.proc.kill()
            self.proc.wait()


class Counter:
    """A daemon's counter made monotonic: storage counters belong to the
    engine worker, and a worker replaced (a new share of partitions)
    starts them from 0 again."""

    def __init__(self):
        self.prev = self.total = 0

    def add(self, v):
        self.total += v - self.prev if v >= self.prev else v
        self.prev = v
        return self.total


def statuses(daemons):
    """`gpuaggctl --json status` of every live daemon, in parallel:
    {index: result or None}."""
    procs = {d.i: subprocess.Popen(d.status_cmd(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
             for d in daemons if d.alive()}
    out = {}
    for i, p in procs.items():
        try:
            so, _ = p.communicate(timeout=30)
            out[i] = json.loads(so) if p.returncode == 0 else None
        except (subprocess.TimeoutExpired, ValueError):
            p.kill()
            p.wait()
            out[i] = None
    return out


def owned_of(st):
    return set(st["cluster"]["owned"]) if st and "cluster" in st else set()


# ---- the series: lag and committed points ------------------------------------

class Series:
    """Samples (t, stream end D, acked points, committed position C); the
    lag and committed points derived as cap_series_add does with journal
    positions (tools/bench/capacity/cap_sample.c)."""

    def __init__(self):
        self.t, self.d, self.acked, self.c = [], [], [], []
        self.lag, self.cpts = [], []

    def passed(self, pos):
        """When D passed pos: (t, acked then), interpolated; None if not yet."""
        i = bisect.bisect_right(self.d, pos)
        if i == len(self.d):
            return None
        if i == 0:
            return self.t[0], 0.0
        f = (pos - self.d[i - 1]) / (self.d[i] - self.d[i - 1])
        return (self.t[i - 1] + f * (self.t[i] - self.t[i - 1]),
                self.acked[i - 1] + f * (self.acked[i] - self.acked[i - 1]))

    def add(self, t, d, acked, c):
        if self.d and d < self.d[-1]:
            d = self.d[-1]                # never backwards (a sample of a lagging server)
        base = self.d[0] if self.d else d
        c = max(c, base)
        self.t.append(t)
        self.d.append(d)
        self.acked.append(acked)
        self.c.append(c)
        p = self.passed(c)
        if p is None:
            self.lag.append(0.0)
            self.cpts.append(float(acked))
        else:
            self.lag.append(t - p[0])
            self.cpts.append(p[1])

    def at(self, t):
        """Index of the last sample at or before t."""
        return max(0, bisect.bisect_right(self.t, t) - 1)

    def quantile(self, t0, t1, q):
        v = sorted(self.lag[i] for i in range(len(self.t)) if t0 <= self.t[i] <= t1)
        if not v:
            return 0.0
        k = max(1, int(-(-q * len(v) // 1)))
        return v[k - 1]

    def rate(self, t0, t1, committed):
        i, j = self.at(t0), self.at(t1)
        dt = self.t[j] - self.t[i]
        if dt <= 0:
            return 0.0
        v = self.cpts if committed else self.acked
        return (v[j] - v[i]) / dt


# ---- a phase -----------------------------------------------------------------

class Phase:
    def __init__(self, ctx, name, n, metrics, rate, kill_at, gpus):
        self.ctx, self.name, self.n, self.metrics, self.rate = ctx, name, n, metrics, rate
        self.kill_at, self.gpus = kill_at, gpus
        self.db = "gpuagg_cluster_%s" % name
        self.stream = "GABENCH_%s" % name.upper()
        self.se = Series()
        self.res = {"phase": name, "daemons": n, "metrics": metrics, "offered": rate}

    def run(self):
        ctx, a, res = self.ctx, self.ctx.a, self.res
        log("\n== phase %s: %d daemon%s, %d metrics every %g s, offered %.0f points/s for %g s%s"
            % (self.name, self.n, "s" if self.n > 1 else "", self.metrics, a.interval, self.rate, a.duration,
               ", kill -9 of one at %g s" % self.kill_at if self.kill_at else ""))
        ctx.pg.fresh_db(self.db)
        ctx.nats.delete_stream(self.stream)
        self.daemons = [Daemon(ctx, self.name, i, self.db, self.stream, self.gpus[i] if self.gpus else None,
                               a.max_metrics or self.metrics) for i in range(self.n)]
        for d in self.daemons:
            d.start()
        self.settle()
        cpu = CpuMeter()
        cpu.add("daemons", lambda: [d.proc.pid for d in self.daemons if d.alive()])
        cpu.add("nats", ctx.nats.pids)
        cpu.add("postgres", ctx.pg.pids)
        cpu.add("loads", lambda: [p.pid for p in self.loads if p.poll() is None])
        self.loads = []
        try:
            self.drive(cpu)
        finally:
            for p in self.loads:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    p.wait()
            st = statuses(self.daemons)
            res["counters"] = {self.daemons[i].name: {k: s[k] for k in ("ingest", "engine", "storage")
                                                      if k in s} for i, s in st.items() if s}
            for d in self.daemons:
                d.stop()
        res["cpu_s"] = {k: cpu.seconds(k) for k in cpu.groups}
        res["host_busy"] = cpu.host_busy()
        self.check()
        self.ceiling()
        ctx.nats.delete_stream(self.stream)
        return res

    def settle(self):
        """Every engine running, the 64 partitions owned once, nobody rebalancing."""
        def ok():
            for d in self.daemons:
                if not d.alive():
                    fail("%s exited at start; see %s" % (d.name, d.log))
            st = statuses(self.daemons)
            if any(s is None for s in st.values()):
                return False
            owned = [owned_of(s) for s in st.values()]
            return (all(s["engine"]["state"] == "running" and not s["cluster"]["rebalancing"]
                        for s in st.values()) and sum(len(o) for o in owned) == 64 and
                    len(set().union(*owned)) == 64)
        t0 = time.monotonic()
        if not wait_for(ok, 180, 0.25):
            fail("the cluster did not settle in 180 s (64 partitions owned once); see %s/*/gpuaggd.log"
                 % os.path.join(self.ctx.out, self.name))
        st = statuses(self.daemons)
        log("   settled in %.1f s: %s; backends %s" % (
            time.monotonic() - t0, ", ".join("%s owns %d" % (self.daemons[i].name, len(owned_of(s)))
                                              for i, s in st.items()),
            ", ".join(sorted({b.get("device", "?") for s in st.values() for b in s.get("backends", [])}))))

    def start_loads(self):
        a, ctx = self.ctx.a, self.ctx
        base, extra = divmod(self.metrics, self.n)
        self.slice = []
        for i, d in enumerate(self.daemons):
            m = base + (1 if i < extra else 0)
            rate = self.rate * m / self.metrics
            conns = min(a.connections, m)
            batch = min(a.batch, -(-m // conns))
            pdir = os.path.join(ctx.out, self.name)
            out = os.path.join(pdir, "load%d.json" % i)
            err = os.path.join(pdir, "load%d.err" % i)
            unacked = os.path.join(pdir, "load%d.unacked" % i)
            argv = [ctx.tools["gpuagg-load"], "--connect", d.ingest, "--connections", str(conns),
                    "--metrics", str(m), "--batch", str(batch), "--inflight", str(a.inflight), "-k", "1",
                    "--step", "%dns" % round(a.interval * 1e9), "--start", "now", "--realtime",
                    "--rate", "%.3f" % rate, "--duration", "%g" % a.duration, "--drain", "600",
                    "--prefix", "%s%d." % (self.name, i), "--json", "--unacked", unacked]
            if i == 0:
                log("   load (each daemon its own): %s" % " ".join(argv))
            self.slice.append({"out": out, "err": err, "unacked": unacked, "metrics": m, "rate": rate})
            self.loads.append(subprocess.Popen(argv, stdout=open(out, "w"), stderr=open(err, "w")))

    def sample(self, t0, cpu, tsv):
        ctx = self.ctx
        st = statuses(self.daemons)
        for i, s in st.items():
            if s:
                self.daemons[i].status_last = s
        info = ctx.nats.stream_info(self.stream) or {"last_seq": 0, "bytes": 0, "messages": 0}
        c = int(ctx.pg.sql("SELECT coalesce(min(committed_lsn), 0) FROM partitions", self.db) or 0)
        t = time.monotonic() - t0
        acked = sum(d.status_last["ingest"]["points_accepted"] for d in self.daemons if d.status_last)
        rows = sum(d.rows.add(d.status_last["storage"]["buckets_committed"]) for d in self.daemons
                   if d.status_last)
        self.se.add(t, info["last_seq"] + 1, acked, c)
        self.rows.append(rows)
        self.sbytes.append(info["bytes"])
        self.smsgs.append(info["messages"])
        cpu.sample()
        k = len(self.se.t) - 1
        tsv.write("%.3f\t%d\t%d\t%d\t%.0f\t%.3f\t%d\t%d\t%d\t%d\n" % (
            t, acked, info["last_seq"] + 1, self.se.c[k], self.se.cpts[k], self.se.lag[k], rows, info["bytes"],
            info["messages"], sum(1 for d in self.daemons if d.alive())))
        return t

    def line(self, a_i, b_i, offered):
        se = self.se
        dt = se.t[b_i] - se.t[a_i]
        if dt <= 0:
            return
        log("%8.1f %10.0f %10.0f %10.0f %10.0f %7.2f %7.2f %10.0f %6d" % (
            se.t[b_i], offered, (se.acked[b_i] - se.acked[a_i]) / dt, (se.cpts[b_i] - se.cpts[a_i]) / dt,
            (self.rows[b_i] - self.rows[a_i]) / dt, se.quantile(se.t[a_i], se.t[b_i], 0.5),
            se.quantile(se.t[a_i], se.t[b_i], 0.99), (self.sbytes[b_i] - self.sbytes[a_i]) / dt,
            sum(1 for d in self.daemons if d.alive())))

    def drive(self, cpu):
        a, res = self.ctx.a, self.res
        self.rows, self.sbytes, self.smsgs = [], [], []
        tsv = open(os.path.join(self.ctx.out, self.name, "samples.tsv"), "w")
        tsv.write("t_s\tacked_points\tstream_end\tcommitted_pos\tcommitted_points\tlag_s\trows_committed\t"
                  "stream_bytes\tstream_messages\tdaemons_live\n")
        log("%8s %10s %10s %10s %10s %7s %7s %10s %6s" % ("elapsed", "offered", "acked", "committed",
                                                         "rows/s", "lag p50", "p99", "stream B/s", "live"))
        t0 = time.monotonic()
        self.sample(t0, cpu, tsv)
        self.start_loads()
        t0 = time.monotonic() - self.se.t[0]
        victim, takeover = None, None
        next_s, line_from, next_line = time.monotonic(), 0, time.monotonic() + a.report_s
        t_end = None
        while True:
            next_s += a.sample_s
            time.sleep(max(0.0, next_s - time.monotonic()))
            t = self.sample(t0, cpu, tsv)
            if self.kill_at and victim is None and t >= self.kill_at:
                victim = self.daemons[-1]
                mine = owned_of(victim.status_last)
                d_kill = self.se.d[-1]
                victim.kill9()
                t_kill = time.monotonic() - t0
                log("   kill -9 %s (pid %d), owner of %d partitions, at %.1f s (stream end %d)"
                    % (victim.name, victim.proc.pid, len(mine), t_kill, d_kill))
                takeover = Takeover(self.daemons[:-1], mine, t0)
                res.update(t_kill=t_kill, d_kill=d_kill, victim=victim.name, victim_parts=len(mine))
            if time.monotonic() >= next_line:
                self.line(line_from, len(self.se.t) - 1, self.rate if t_end is None else 0)
                line_from, next_line = len(self.se.t) - 1, next_line + a.report_s
            if t_end is None and all(p.poll() is not None for p in self.loads):
                t_end = t
                d_end = self.se.d[-1]
                self.line(line_from, len(self.se.t) - 1, self.rate)
                line_from = len(self.se.t) - 1
                log("   load done at %.1f s; draining (committed position to %d)" % (t, d_end))
            if t_end is not None and self.se.c[-1] >= d_end and (takeover is None or takeover.done.is_set()):
                break
            if t_end is not None and t - t_end > a.drain_timeout:
                log("   NOT drained after %g s" % a.drain_timeout)
                break
        if len(self.se.t) - 1 > line_from:
            self.line(line_from, len(self.se.t) - 1, 0)
        tsv.close()
        res["t_load_end"] = t_end
        res["drain_s"] = self.se.t[-1] - t_end if self.se.c[-1] >= d_end else None
        # steady part: from the warmup to the kill (or the load's end), a
        # whole number of intervals (-k 1 --realtime sends each metric's
        # point once an interval: a window of whole intervals holds as many
        # batches wherever it starts)
        se = self.se
        s1 = res.get("t_kill", t_end)
        s0 = min(a.warmup, s1 / 2)
        if s1 - s0 >= a.interval:
            s0 = s1 - (s1 - s0) // a.interval * a.interval
        if takeover:
            takeover.done.wait(130)
            res["takeover_s"] = takeover.t - res["t_kill"] if takeover.t is not None else None
            # caught up: the storage lag back at the steady window's p99
            # (at least 1 s) after the takeover
            normal = max(1.0, se.quantile(s0, s1, 0.99))
            res["caught_up_s"] = None
            res["lag_max_kill"] = max([se.lag[k] for k in range(len(se.t)) if se.t[k] >= res["t_kill"]] or [0])
            if takeover.t is not None:
                for k in range(len(se.t)):
                    if se.t[k] >= takeover.t and se.lag[k] <= normal:
                        res["caught_up_s"] = se.t[k] - res["t_kill"]
                        break
        res.update(
            steady=(s0, s1),
            acked_rate=se.rate(s0, s1, False), committed_rate=se.rate(s0, s1, True),
            acked_rate_load=se.acked[se.at(t_end)] / t_end, committed_rate_load=se.cpts[se.at(t_end)] / t_end,
            rows_rate=(self.rows[se.at(s1)] - self.rows[se.at(s0)]) / max(1e-9, se.t[se.at(s1)] - se.t[se.at(s0)]),
            lag_p50=se.quantile(s0, s1, 0.5), lag_p99=se.quantile(s0, s1, 0.99), lag_max=se.quantile(s0, s1, 1),
            lag_p99_load=se.quantile(0, t_end, 0.99), lag_max_load=se.quantile(0, t_end, 1),
            stream_Bps=(self.sbytes[se.at(s1)] - self.sbytes[se.at(s0)]) / max(1e-9, se.t[se.at(s1)] - se.t[se.at(s0)]),
            stream_msgps=(self.smsgs[se.at(s1)] - self.smsgs[se.at(s0)]) / max(1e-9, se.t[se.at(s1)] - se.t[se.at(s0)]),
            stream_bytes=self.sbytes[-1], stream_messages=self.smsgs[-1], steady_s=s1 - s0, load_s=t_end)

    def check(self):
        """Zero loss: what the loads had acknowledged is in PostgreSQL."""
        res, pg = self.res, self.ctx.pg
        acked = rejected = unacked = 0
        rcs = []
        for i, sl in enumerate(self.slice):
            try:
                with open(sl["out"]) as f:
                    j = json.loads(f.read().strip().splitlines()[-1])
            except (OSError, ValueError, IndexError):
                fail("gpuagg-load %d printed no report; see %s" % (i, sl["err"]))
            acked += j["points_acked"]
            rejected += j["points_rejected"]
            try:
                with open(sl["unacked"]) as f:
                    unacked += sum(1 for _ in f)
            except OSError:
                pass
            rcs.append(self.loads[i].returncode)
        db_points = int(pg.sql("SELECT coalesce(sum(points), 0) FROM metrics", self.db))
        rows = int(pg.sql("SELECT count(*) FROM bucket_rows", self.db))
        res.update(acked=acked, rejected=rejected, unacked=unacked, db_points=db_points, db_rows=rows,
                   load_rcs=rcs, loss=max(0, acked - db_points), extra=db_points - acked)
        # the killed daemon's load ends with an error (its daemon is gone)
        res["ok"] = (res["loss"] == 0 and 0 <= res["extra"] <= unacked and res["drain_s"] is not None and
                     all(rc == 0 for i, rc in enumerate(rcs) if not (self.kill_at and i == self.n - 1)))
        log("   in PostgreSQL: sum(metrics.points) %d, acked by the loads %d (%d sent and not acknowledged, "
            "%d rejected), %d buckets (bucket_rows): %s" % (
                db_points, acked, unacked, rejected, rows,
                "nothing lost" if res["loss"] == 0 else "%d POINTS LOST" % res["loss"]))

    def ceiling(self):
        a, res = self.ctx.a, self.res
        argv = [self.ctx.tools["bench_capacity"], "--ceiling-only", "--conninfo", self.ctx.pg.conninfo(self.db),
                "--table", "buckets", "--out", os.path.join(self.ctx.out, self.name)]
        if a.copy_sessions:
            argv += ["--copy-sessions", str(a.copy_sessions)]
        r = subprocess.run(argv, capture_output=True, text=True)
        line = [x for x in r.stdout.splitlines() if x.startswith("ceiling ")]
        if r.returncode != 0 or not line:
            log("   PostgreSQL ceiling failed: %s" % r.stderr.strip())
            res["pg_ceiling"] = None
            return
        c = dict(x.split("=", 1) for x in line[0].split()[1:])
        res["pg_ceiling"] = {k: float(v) for k, v in c.items()}
        log("   PostgreSQL ceiling: %.0f rows/s (%d rows by %d parallel COPY sessions in %.2f s); "
            "the daemons committed %.0f rows/s" % (float(c["rows_per_s"]), int(c["rows"]), int(c["sessions"]),
                                                   float(c["load_s"]), res["rows_rate"]))


class Takeover:
    """Polls the survivors until the victim's partitions are in their
    `cluster.owned` (their engine workers have them)."""

    def __init__(self, survivors, parts, t0):
        self.survivors, self.parts, self.t0 = survivors, parts, t0
        self.t = None
        self.done = threading.Event()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        end = time.monotonic() + 120
        while time.monotonic() < end:
            st = statuses(self.survivors)
            t = time.monotonic() - self.t0
            owned = set().union(*[owned_of(s) for s in st.values()]) if st else set()
            if self.parts <= owned:
                self.t = t
                break
            time.sleep(0.05)
        self.done.set()


# ---- the NATS ceiling ----------------------------------------------------------

def _publisher(port, subject, size, window, seconds, q):
    c = NatsConn(port)
    payload = os.urandom(size)
    pub = b"PUB %s %%s %d\r\n" % (subject.encode(), size)
    out = 0
    acked = errors = 0
    t0 = time.monotonic()
    t_end = t0 + seconds
    c.s.settimeout(30)
    cpu0 = time.process_time()
    while True:
        now = time.monotonic()
        while out < window and now < t_end:
            c.n += 1
            c.s.sendall(pub % ("%s.%d" % (c.inbox, c.n)).encode() + payload + b"\r\n")
            out += 1
        if out == 0:
            break
        m = c._msg()
        if isinstance(m, tuple) and m[0] == "MSG":
            out -= 1
            if b'"error"' in m[2]:
                errors += 1
            else:
                acked += 1
        elif isinstance(m, tuple):
            errors += 1
            break
    dt = time.monotonic() - t0
    q.put((acked, errors, dt, time.process_time() - cpu0))
    c.close()


def nats_ceiling(ctx, size):
    """Publishers into a fresh stream of --replicas replicas."""
    a = ctx.a
    name = "GABENCH_CEIL"
    ctx.nats.delete_stream(name)
    cfg = {"name": name, "subjects": ["gabench.ceil.>"], "storage": "file", "num_replicas": a.replicas,
           "retention": "limits", "discard": "old", "duplicate_window": 120 * 10**9}
    r = ctx.nats.conn.request("$JS.API.STREAM.CREATE." + name, json.dumps(cfg).encode(), timeout=30)
    if "error" in r:
        fail("creating %s: %s" % (name, r["error"]))
    q = multiprocessing.Queue()
    ps = [multiprocessing.Process(target=_publisher, args=(ctx.nats.ports[k % len(ctx.nats.ports)],
                                                          "gabench.ceil.%d" % k, size, a.nats_window,
                                                          a.nats_ceiling_s, q))
          for k in range(a.nats_publishers)]
    cpu = CpuMeter()
    cpu.add("nats", ctx.nats.pids)
    cpu.sample()
    for p in ps:
        p.start()
    got = [q.get(timeout=a.nats_ceiling_s + 120) for _ in ps]
    for p in ps:
        p.join()
    cpu.sample()
    ctx.nats.delete_stream(name)
    acked = sum(g[0] for g in got)
    errors = sum(g[1] for g in got)
    dt = max(g[2] for g in got)
    pub_cpu = max(g[3] / g[2] for g in got)
    return {"msgps": acked / dt, "Bps": acked * size / dt, "size": size, "errors": errors,
            "publishers": a.nats_publishers, "window": a.nats_window, "seconds": dt,
            "publisher_cpu_max": pub_cpu, "nats_cpu": cpu.seconds("nats") / dt}


# ---- the report ----------------------------------------------------------------

def fmt(v, f="%.0f", none="-"):
    return none if v is None else f % v


def report(ctx, A, B, nc):
    a = ctx.a
    out = []

    def p(s=""):
        out.append(s)
    p("== summary (workload: %d metrics a daemon, one point each per %g s, policy %s, backend %s, "
      "%d s of load, batches of %d, stream R=%d)" % ((A or B)["metrics"] // (A or B)["daemons"], a.interval, a.policy, a.backend, a.duration,
                                                     a.batch, a.replicas))
    p("| daemons | offered pts/s | acked pts/s | committed pts/s | ratio to N x one | lag p50 / p99 s | "
      "takeover s | lag back s (max after kill) | loss | PostgreSQL ceiling rows/s | rows/s committed |")
    p("|---|---|---|---|---|---|---|---|---|---|---|")
    base = A["committed_rate"] if A else None
    for r in (A, B):
        if r is None:
            continue
        ratio = r["committed_rate"] / (r["daemons"] * base) if base else None
        p("| %d | %.0f | %.0f | %.0f | %s | %.2f / %.2f | %s | %s | %d%s | %s | %.0f |" % (
            r["daemons"], r["offered"], r["acked_rate"], r["committed_rate"], fmt(ratio, "%.2f"),
            r["lag_p50"], r["lag_p99"], fmt(r.get("takeover_s"), "%.2f"),
            "-" if "t_kill" not in r else "%s (%.2f)" % (fmt(r.get("caught_up_s"), "%.2f", "never"),
                                                         r["lag_max_kill"]),
            r["loss"], "" if r["extra"] == 0 else " (+%d unacked stored)" % r["extra"],
            fmt((r["pg_ceiling"] or {}).get("rows_per_s")), r["rows_rate"]))
    p()
    for r in (A, B):
        if r is None:
            continue
        cs = r["cpu_s"]
        L = r["load_s"]
        p("phase %s: steady window %.1f-%.1f s; over the whole load: acked %.0f pts/s, committed %.0f pts/s, "
          "lag p99 %.2f s, max %.2f s; drain %s s; stream %.1f MB/s, %.0f msgs/s (mean %.0f B a message); "
          "CPU over the phase (cores): daemons %.2f, nats-servers %.2f, PostgreSQL %.2f, loads %.2f; host busy %.0f %% (everything on the host)"
          % (r["phase"], r["steady"][0], r["steady"][1], r["acked_rate_load"], r["committed_rate_load"],
             r["lag_p99_load"], r["lag_max_load"], fmt(r["drain_s"], "%.2f", "NOT drained"), r["stream_Bps"] / 1e6,
             r["stream_msgps"], r["stream_bytes"] / max(1, r["stream_messages"]), cs["daemons"] / L,
             cs["nats"] / L, cs["postgres"] / L, cs["loads"] / L, 100 * r["host_busy"]))
    if nc:
        p("NATS ceiling: %.0f msgs/s, %.1f MB/s of %d B messages into a stream of R=%d (%d publishers, %d "
          "unacknowledged each, %.1f s, %d errors; busiest publisher %.0f %% of a core%s; nats-servers %.2f cores)"
          % (nc["msgps"], nc["Bps"] / 1e6, nc["size"], a.replicas, nc["publishers"], nc["window"], nc["seconds"],
             nc["errors"], 100 * nc["publisher_cpu_max"],
             ": a lower bound of the servers' ceiling" if nc["publisher_cpu_max"] > 0.9 else "", nc["nats_cpu"]))
    # which ceiling binds
    r = B or A
    cands = []
    if r["pg_ceiling"]:
        cands.append(("PostgreSQL (rows/s committed over the parallel-COPY ceiling)",
                      r["rows_rate"] / r["pg_ceiling"]["rows_per_s"]))
    if nc and nc["Bps"]:
        cands.append(("NATS (stream bytes/s over the publish ceiling)", r["stream_Bps"] / nc["Bps"]))
        cands.append(("NATS (stream messages/s over the publish ceiling)", r["stream_msgps"] / nc["msgps"]))
    cands.append(("host CPU (busy over all %d cores)" % os.cpu_count(), r["host_busy"]))
    p("use of each ceiling in phase %s (steady window): %s" % (r["phase"], "; ".join("%s %.0f %%" % (k, 100 * v) for k, v in cands)))
    top = max(cands, key=lambda kv: kv[1])
    keeping_up = r["acked_rate"] >= 0.95 * r["offered"]     # a short window holds +-1 batch
    if top[1] >= 0.8:
        p("binds: %s at %.0f %%%s" % (top[0], 100 * top[1],
                                      "" if not keeping_up else " (the run kept up with the offered load)"))
    elif keeping_up:
        p("binds: none -- the daemons kept up with the offered load (acked = offered) and no measured "
          "ceiling is above 80 %; raise the rate to find the capacity")
    else:
        p("binds: none of the measured ceilings is above 80 %% (highest: %s at %.0f %%) and acked < "
          "offered: the daemons themselves bound the run" % (top[0], 100 * top[1]))
    if B and A:
        ratio = B["committed_rate"] / (B["daemons"] * base) if base else 0
        p()
        p("goals (the issue's; reported, not asserted):")
        p("  committed >= 0.8 x N x one daemon ... %s (%.2f)" % ("met" if ratio >= 0.8 else "NOT met", ratio))
        if B.get("t_kill") is not None:
            t = B.get("takeover_s")
            p("  takeover <= 10 s ................... %s (%s)" % ("met" if t is not None and t <= 10 else "NOT met",
                                                                  fmt(t, "%.2f s", "not taken over")))
        p("  zero loss .......................... %s (phase A %d, phase B %d lost)" % (
            "met" if A["loss"] == 0 and B["loss"] == 0 else "NOT met", A["loss"], B["loss"]))
    return "\n".join(out)


# ---- main ----------------------------------------------------------------------

def parse_dur(s):
    for unit, f in (("ms", 1e-3), ("min", 60), ("s", 1), ("h", 3600), ("", 1)):
        if s.endswith(unit):
            try:
                v = float(s[:len(s) - len(unit)] if unit else s) * f
            except ValueError:
                continue
            if v > 0:
                return v
    raise argparse.ArgumentTypeError("bad duration '%s' (1s, 500ms, 1min)" % s)


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench_cluster", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metrics", type=int, default=100000, help="live metrics of phase A (default 100000)")
    ap.add_argument("--interval", type=parse_dur, default=2.0, help="sampling interval of each metric (default 2s)")
    ap.add_argument("--policy", default="medium", help="archive policy (default medium)")
    ap.add_argument("--rate", type=float, help="phase A's offered points/s (default metrics / interval)")
    ap.add_argument("--duration", type=float, default=120, help="seconds of load of each phase (default 120)")
    ap.add_argument("--daemons", type=int, default=2, help="daemons of phase B (default 2)")
    ap.add_argument("--metrics-b", type=int, help="phase B's metrics (default daemons x --metrics)")
    ap.add_argument("--rate-b", type=float, help="phase B's offered points/s (default daemons x phase A's)")
    ap.add_argument("--kill-at", type=float, help="kill -9 of the last daemon of phase B at S s of load "
                    "(default duration / 2 with 2 daemons or more; 0: no kill)")
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu",
                    help="gpu: daemon i on the i-th of --gpus; cpu: gpu.devices none (default cpu)")
    ap.add_argument("--gpus", help="GPU ids, comma-separated, one per daemon (default 0,1,..); repeat one "
                    "(0,0) to share it")
    ap.add_argument("--skip-a", action="store_true", help="phase B only (no ratio)")
    ap.add_argument("--connections", type=int, default=2, help="ingest connections a load (default 2)")
    ap.add_argument("--batch", type=int, default=10000, help="points a batch (default 10000)")
    ap.add_argument("--inflight", type=int, default=8, help="unacknowledged batches a connection (default 8)")
    ap.add_argument("--replicas", type=int, default=3, help="stream replicas (default 3)")
    ap.add_argument("--heartbeat-ms", type=int, default=1000, help="cluster.heartbeat_ms (default 1000)")
    ap.add_argument("--member-timeout-ms", type=int, default=5000, help="cluster.member_timeout_ms (default 5000)")
    ap.add_argument("--flush-rows", type=int), ap.add_argument("--flush-interval-ms", type=int)
    ap.add_argument("--writers", type=int), ap.add_argument("--window-snapshot-s", type=int)
    ap.add_argument("--max-metrics", type=int, help="limits.max_metrics (default: the phase's metrics)")
    ap.add_argument("--log-level", default="info")
    ap.add_argument("--sample-ms", type=float, default=500, help="sampling period (default 500)")
    ap.add_argument("--report-s", type=float, default=5, help="seconds between table lines (default 5)")
    ap.add_argument("--warmup", type=float, default=10, help="the steady window starts here (default 10 s)")
    ap.add_argument("--drain-timeout", type=float, default=300, help="default 300 s")
    ap.add_argument("--copy-sessions", type=int, help="COPY sessions of the PostgreSQL ceiling (default: CPUs)")
    ap.add_argument("--nats-publishers", type=int, default=min(4, os.cpu_count() or 1),
                    help="processes of the NATS ceiling (default min(4, CPUs))")
    ap.add_argument("--nats-window", type=int, default=256, help="unacknowledged publishes a publisher (256)")
    ap.add_argument("--nats-ceiling-s", type=float, default=10, help="seconds of the NATS ceiling (0: skip)")
    ap.add_argument("--nats-max-file", default="40GB", help="JetStream max_file_store of each server (40GB)")
    ap.add_argument("--out", default="bench-cluster", help="directory of the run's files (default bench-cluster)")
    ap.add_argument("--bindir"), ap.add_argument("--bench-capacity"), ap.add_argument("--pg-script")
    ap.add_argument("--nats-server", help="nats-server binary (default: from PATH)")
    a = ap.parse_args(argv)
    if a.daemons < 1 or a.daemons > 64:
        ap.error("--daemons must be 1..64")
    if a.rate is None:
        a.rate = a.metrics / a.interval
    if a.kill_at is None:
        a.kill_at = a.duration / 2 if a.daemons >= 2 else 0
    if a.kill_at and a.daemons < 2:
        ap.error("--kill-at needs --daemons 2 or more (someone must take over)")
    if a.kill_at and not 0 < a.kill_at < a.duration:
        ap.error("--kill-at must be inside the load (0 < S < --duration)")
    a.gpu_ids = None
    if a.backend == "gpu":
        a.gpu_ids = [int(x) for x in a.gpus.split(",")] if a.gpus else list(range(a.daemons))
        if len(a.gpu_ids) < a.daemons:
            ap.error("--gpus names %d GPUs for %d daemons" % (len(a.gpu_ids), a.daemons))
    a.sample_s = a.sample_ms / 1e3
    return a


class Ctx:
    pass


def main(argv):
    a = parse_args(argv)
    ctx = Ctx()
    ctx.a = a
    ctx.tools = find_tools(a)
    os.makedirs(a.out, exist_ok=True)
    ctx.out = os.path.abspath(a.out)
    os.chmod(ctx.out, 0o755)
    for ph in ("a", "b"):
        os.makedirs(os.path.join(ctx.out, ph), exist_ok=True)
    ctx.rundir = os.path.join(ctx.out, "run")
    tmp_run = len(ctx.rundir) > 80       # Unix socket paths: 107 bytes
    if tmp_run:
        ctx.rundir = tempfile.mkdtemp(prefix="bench-cluster.")
    os.makedirs(ctx.rundir, exist_ok=True)
    ctx.pg = ctx.nats = None
    A = B = nc = None
    ok = True

    def on_term(sig, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    try:
        log("== PostgreSQL: %s start %s/pg" % (ctx.tools["pg_script"], ctx.out))
        ctx.pg = PG(ctx.tools, os.path.join(ctx.out, "pg"))
        shutil.rmtree(os.path.join(ctx.out, "nats"), ignore_errors=True)
        ctx.nats = Nats(ctx.tools["nats-server"], os.path.join(ctx.out, "nats"), 3, a.nats_max_file)
        log("== NATS: 3 nats-servers (%s), JetStream cluster; streams of R=%d" % (ctx.nats.urls(), a.replicas))
        if not a.skip_a:
            A = Phase(ctx, "a", 1, a.metrics, a.rate, 0, a.gpu_ids[:1] if a.gpu_ids else None).run()
        B = Phase(ctx, "b", a.daemons, a.metrics_b or a.daemons * a.metrics,
                  a.rate_b or a.daemons * a.rate, a.kill_at, a.gpu_ids).run()
        if a.nats_ceiling_s > 0:
            size = max(64, int(B["stream_bytes"] / max(1, B["stream_messages"])))
            log("\n== NATS ceiling: %d publishers, %d B messages, %g s" % (a.nats_publishers, size,
                                                                          a.nats_ceiling_s))
            nc = nats_ceiling(ctx, size)
    except (RuntimeError, OSError, subprocess.SubprocessError, KeyboardInterrupt) as e:
        log("bench_cluster: %s" % (e if not isinstance(e, KeyboardInterrupt) else "interrupted"))
        ok = False
    finally:
        if ctx.nats:
            ctx.nats.stop()
        if ctx.pg:
            ctx.pg.stop()
        if tmp_run:
            shutil.rmtree(ctx.rundir, ignore_errors=True)
    if A is None and B is None:
        return 1
    text = report(ctx, A, B, nc)
    log("\n" + text)
    with open(os.path.join(ctx.out, "summary.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(ctx.out, "results.json"), "w") as f:
        json.dump({"phase_a": A, "phase_b": B, "nats_ceiling": nc, "args": vars(a)}, f, indent=1, default=str)
    ok = ok and all(r is None or r.get("ok") for r in (A, B))
    log("\nbench_cluster: %s" % ("completed, nothing lost" if ok else "a step failed or points were lost (see above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
