"""Soak in CI's time: ingest, HTTP API reads, jobs and a kill -9, all at once.

One daemon (its shipped defaults, an HTTP listener with noauth, a private
PostgreSQL) takes three rounds of gpuagg-load while two API readers ask for
/healthz, the metric list and one metric's measures, and a job client runs
dot and k-means jobs one after another.  The first round ends with kill -9
in the middle of the load, the daemon restarts on the same journal and
database, the second round runs to its end, the third after a graceful
restart.  Then:

- every acknowledged point is stored exactly once (policy "soak": 1-second
  buckets of count, sum and last, one point per bucket, as in test_crash);
- the API answered every request it received with 200 while the daemon was
  up (a refused connection while it was down is not an answer);
- every job that was acknowledged before the kill or after the restart
  finished "done" with its result, except those the kill took (jobs and their
  table is in memory: documented in docs/JOBS.md);
- resident memory and open files stay bounded: sampled every 0.25 s from
  /proc, the peak of the last round is within 25 % + 16 MiB of the peak of
  the round before it (no growth from round to round under the same
  load), RSS stays under limits.memory_budget_bytes, and open files stay
  under the connections the daemon may hold plus its fixed set."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import pytest

from inglib import (BIN, GPUAGG_LOAD, IngestDaemon, PrivatePG, free_port, policy_yaml,
                    read_points, rng_for)

RNG = rng_for("soak")
CTL = os.path.join(BIN, "gpuaggctl")
ROUND_S = 8
RATE = 10000
GRAN_NS = 10**9
MEMORY_BUDGET = 1 << 30          # limits.memory_budget_bytes, its default


class Sampler(threading.Thread):
    """VmRSS and the count of /proc/PID/fd of one daemon process."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.rss, self.fds, self.stop = pid, [], [], threading.Event()

    def run(self):
        while not self.stop.wait(0.25):
            try:
                with open("/proc/%d/status" % self.pid) as f:
                    kb = [int(x.split()[1]) for x in f if x.startswith("VmRSS:")]
                n = len(os.listdir("/proc/%d/fd" % self.pid))
            except (OSError, IndexError):
                return
            self.rss.append(kb[0] * 1024 if kb else 0)
            self.fds.append(n)


class Readers(threading.Thread):
    """HTTP reads in a loop: status codes of the answers; refused or reset
    connections counted apart (the daemon was down)."""

    PATHS = ["/healthz", "/v1/metric?limit=50", "measures", "/v1/status"]
    IDENT = {"X-User-Id": "soak", "X-Project-Id": "soak", "X-Roles": "admin"}

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.codes, self.down, self.stop = port, {}, 0, threading.Event()
        self.bad, self.metric = [], None

    def run(self):
        i = 0
        while not self.stop.is_set():
            path = self.PATHS[i % len(self.PATHS)]
            i += 1
            if path == "measures":     # one metric of the list, by its id
                if not self.metric:
                    continue
                path = "/v1/metric/%s/measures?granularity=1&aggregation=sum" % self.metric
            try:
                req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path),
                                             headers=self.IDENT)
                with urllib.request.urlopen(req, timeout=10) as r:
                    code = r.status
                    body = r.read()
                    if path.startswith("/v1/"):
                        doc = json.loads(body)
                        if not isinstance(doc, (list, dict)):
                            self.bad.append((path, body[:200]))
                        elif path.startswith("/v1/metric?") and doc:
                            self.metric = doc[0]["id"]
            except urllib.error.HTTPError as e:
                code = e.code
                self.bad.append((path, code, e.read()[:300]))
            except (OSError, ValueError):
                self.down += 1
                time.sleep(0.05)
                continue
            self.codes[code] = self.codes.get(code, 0) + 1


class Jobs(threading.Thread):
    """Jobs one after another: (kind, exit status, output) of each."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock, self.done, self.stop = sock, [], threading.Event()

    def run(self):
        k = 0
        while not self.stop.is_set():
            k += 1
            if k % 2:
                args = ["dot", "--param", "n=200000", "--param", "seed=%d" % k]
            else:
                args = ["kmeans", "--param", "k=4", "--param", "coords=2", "--param",
                        "nobjs=20000", "--param", "loops=10"]
            t0 = time.time()
            r = subprocess.run([CTL, "--socket", self.sock, "--json", "job", "submit"] + args +
                               ["--wait"], capture_output=True, timeout=120)
            self.done.append((args[0], r.returncode, r.stdout, r.stderr, t0, time.time()))
            if r.returncode != 0:
                time.sleep(0.1)


class Soak:
    def __init__(self):
        self.pg = PrivatePG()
        self.tmp = tempfile.mkdtemp(prefix="gasoak-")
        self.port = free_port()
        self.acked, self.unacked, self.buckets = {}, {}, {}
        self.samplers, self.readers, self.jobs = [], [], None
        self.downs = []                # (killed at, back at) wall times

    def daemon(self):
        extra = policy_yaml("soak", 1, ["count", "sum", "last"], points=10**8)
        extra += "http: { auth: noauth }\n"
        return IngestDaemon(conninfo=self.pg.conninfo, tmp=self.tmp,
                            listen={"http": '"127.0.0.1:%d"' % self.port}, extra=extra)

    def start(self):
        d = self.daemon()
        d.start()
        deadline = time.time() + 60
        while d.call("status")["result"]["engine"]["state"] != "running":
            assert time.time() < deadline, d.logtext()[-3000:]
            time.sleep(0.1)
        s = Sampler(d.proc.pid)
        s.start()
        self.samplers.append(s)
        return d

    def load(self, d, rnd, start_s, kill_after):
        rec = os.path.join(self.tmp, "acked.%d" % rnd)
        una = os.path.join(self.tmp, "unacked.%d" % rnd)
        out = open(os.path.join(self.tmp, "load.%d.log" % rnd), "w")
        cmd = [GPUAGG_LOAD, "-c", d.unix, "-n", "3", "-m", "300", "-k", "4", "-b", "600",
               "-i", "8", "--rate", str(RATE), "--seed", str(RNG.randrange(1, 2**31)),
               "--start", str(start_s * 10**9), "--step", "1s", "--prefix", "soak.",
               "--record", rec, "--unacked", una, "--drain", "20", "--duration", str(ROUND_S)]
        load = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        if kill_after is not None:
            time.sleep(kill_after)
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            self.downs.append([time.time(), None])
        rc = load.wait(ROUND_S + 60)
        out.close()
        log = open(out.name).read()
        assert rc == (0 if kill_after is None else 1), (rc, log)
        a, u = read_points(rec), read_points(una)
        assert not (a.keys() & self.acked.keys()) and not (u.keys() & self.unacked.keys())
        self.acked.update(a)
        self.unacked.update(u)
        print("round %d: %s, %d points acknowledged, %d not" %
              (rnd, "kill -9 after %.1f s" % kill_after if kill_after else "to its end",
               len(a), len(u)))

    def run(self):
        # a month back: the rounds 100,000 s apart stay in the past, far
        # inside the policy's reach and never past limits.max_future_s
        base = (int(time.time()) // 86400 - 30) * 86400
        d = None
        try:
            d = self.start()
            self.readers = [Readers(self.port) for _ in range(2)]
            for r in self.readers:
                r.start()
            self.jobs = Jobs(d.sock)
            self.jobs.start()
            self.load(d, 0, base, RNG.uniform(2, 6))
            d = self.start()
            self.downs[-1][1] = time.time()
            self.load(d, 1, base + 100000, None)
            assert d.stop(timeout=60) == 0, d.logtext()[-3000:]
            self.downs.append([time.time(), None])
            d = self.start()
            self.downs[-1][1] = time.time()
            self.load(d, 2, base + 200000, None)
            for t in self.readers + [self.jobs]:
                t.stop.set()
            for t in self.readers + [self.jobs]:
                t.join(130)
            assert d.stop(timeout=60) == 0, d.logtext()[-3000:]
            for s in self.samplers:
                s.stop.set()
                s.join()
        finally:
            if d and d.proc and d.proc.poll() is None:
                d.proc.kill()
                d.proc.wait()
        rows = self.pg.sql("SELECT metric, method, ts_ns, value FROM gpuagg_measures "
                           "WHERE granularity_ns = %d AND metric LIKE 'soak.%%'" % GRAN_NS)
        for m, method, ts, v in rows:
            self.buckets.setdefault((m, int(ts)), {})[method] = float(v)


S = None


def test_rounds():
    S.run()
    assert len(S.acked) > 2 * ROUND_S * RATE // 2, len(S.acked)


def test_acknowledged_exactly_once():
    missing = [k for k in S.acked if k not in S.buckets]
    assert not missing, "%d acknowledged points missing, e.g. %r" % (len(missing), missing[:5])
    for key, aggs in S.buckets.items():
        want = S.acked.get(key, S.unacked.get(key))
        assert want is not None, "bucket %r holds a point that was never sent" % (key,)
        assert aggs == {"count": 1.0, "sum": want, "last": want}, (key, aggs, want)
    print("%d acknowledged points stored once each" % len(S.acked))


def test_api_answered():
    codes, down = {}, 0
    for r in S.readers:
        for c, n in r.codes.items():
            codes[c] = codes.get(c, 0) + n
        down += r.down
        assert not r.bad, r.bad[:5]
    print("API: %s answers by status, %d attempts while the daemon was down" %
          (sorted(codes.items()), down))
    assert set(codes) == {200} and codes.get(200, 0) > 100, codes


def test_jobs_finished():
    done = [j for j in S.jobs.done if j[1] == 0]
    for kind, rc, out, err, t0, t1 in S.jobs.done:
        if rc == 0:
            res = json.loads(out)
            assert ("dot" in res) if kind == "dot" else ("centres" in res or "centers" in res), res
            continue
        # a job may fail only when the daemon was down during it
        assert any(a - 1 <= t1 and t0 <= (b or a) + 1 for a, b in S.downs), \
            (kind, rc, err.decode(errors="replace")[-300:], t0, t1, S.downs)
    print("jobs: %d done, %d ended by a restart" % (len(done), len(S.jobs.done) - len(done)))
    assert len(done) >= 6, S.jobs.done[-3:]


def test_memory_and_files_bounded():
    peaks = [(max(s.rss), max(s.fds)) for s in S.samplers if s.rss]
    assert len(peaks) == 3, peaks
    for i, (rss, fds) in enumerate(peaks):
        print("instance %d: peak RSS %.1f MiB, peak open files %d" % (i, rss / 2**20, fds))
        assert rss < MEMORY_BUDGET, rss
        # listeners, journal, writers' connections, HTTP places: a fixed
        # set of a few dozen, plus one per connection (3 ingest, 2 API, 1 job)
        assert fds < 128, fds
    (rss1, fds1), (rss2, fds2) = peaks[1], peaks[2]
    assert rss2 <= rss1 * 1.25 + 16 * 2**20, (rss1, rss2)
    assert fds2 <= fds1 + 8, (fds1, fds2)


@pytest.fixture(scope="module", autouse=True)
def soak(request):
    """One Soak: test_rounds runs it, the others check what it left, in
    order; its directory is kept when a test failed."""
    global S
    S = Soak()
    try:
        yield
    finally:
        S.pg.stop()
        if not request.session.testsfailed:
            shutil.rmtree(S.tmp, ignore_errors=True)
