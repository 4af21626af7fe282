"""Cluster mode end to end (docs/CLUSTER.md): three real nats-server
processes forming a JetStream cluster (R=3), three gpuaggd daemons on one
private PostgreSQL, sustained load into all three.

Trials (each at a random moment of the load, each followed by the check
that the stored aggregates equal, row for row, those of a single daemon fed
the acknowledged points once):
  - kill -9 of a daemon: its partitions are owned again within 10 s;
  - kill -9 of a NATS server: producers keep being acknowledged;
  - a daemon's PostgreSQL writer backends terminated: its writers are
    fenced (they do not reconnect with their old state), the daemon
    re-takes its partitions from PostgreSQL;
  - rolling restart (SIGTERM, start) of every daemon under load (not in
    CI: a known intermittent failure, see docs/CLUSTER.md).

CI runs one trial of each of the first three (GA_CLUSTER_TRIALS, default 1);
GA_CLUSTER_TRIALS=10 runs ten of each kind, in random order;
GA_CLUSTER_METRICS sets the metrics per producer (default 20: each producer
sends one point of each every ~20 ms plus the round trip)."""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterlib as cl  # noqa: E402

R = cl.inglib.Results("test_cluster")
TRIALS = int(os.environ.get("GA_CLUSTER_TRIALS", "1"))
rng = cl.inglib.rng_for("test_cluster")


class Load:
    """One producer thread per daemon, each with its own metrics, sending
    until stopped; a batch is resent to the next daemon until acked."""

    n = 0

    def __init__(self, daemons, nmetrics=int(os.environ.get("GA_CLUSTER_METRICS", "20"))):
        Load.n += 1                     # each load its own metrics: no timestamp of one
        self.daemons = daemons          # metric is written by two loads
        self.stop_ev = threading.Event()
        self.producers = []
        for i in range(len(daemons)):
            p = cl.Producer(daemons, ["l%d.p%d.m%d" % (Load.n, i, k) for k in range(nmetrics)])
            p.target = i
            self.producers.append(p)
        self.errors = []
        self.threads = [threading.Thread(target=self.run, args=(p,)) for p in self.producers]
        for t in self.threads:
            t.start()

    def run(self, p):
        try:
            while not self.stop_ev.is_set():
                p.send(1)
                time.sleep(0.02)
        except Exception as e:  # reported by the trial
            self.errors.append(repr(e))

    def acked(self):
        return sum(len(p.acked) for p in self.producers)

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(60)
        for p in self.producers:
            p.close()
        assert not self.errors, self.errors
        return [pt for p in self.producers for pt in p.acked]


class Cluster:
    def __init__(self):
        self.pg = cl.PrivatePG()
        self.nats = cl.Nats(3)
        self.daemons = [cl.ClusterDaemon(self.pg, self.nats, n) for n in ("a", "b", "c")]
        for d in self.daemons:
            d.start()
        self.settled()
        self.nref = 0

    def live(self):
        return [d for d in self.daemons if d.proc and d.proc.poll() is None]

    def owned_by_live(self):
        """{member: owned list} as the live daemons report it, or None."""
        out = {}
        for d in self.live():
            try:
                st = d.cluster_status()
            except (OSError, KeyError):
                return None
            if st["rebalancing"]:
                return None
            out[d.name] = st["owned"]
        return out

    def settled(self, timeout=30):
        """Every partition owned by exactly one live daemon, evenly."""
        def ok():
            o = self.owned_by_live()
            if not o:
                return False
            parts = sorted(p for v in o.values() for p in v)
            sizes = [len(v) for v in o.values()]
            return parts == list(range(64)) and max(sizes) - min(sizes) <= 1
        t0 = time.time()
        assert cl.wait_for(ok, timeout=timeout, step=0.1), self.owned_by_live()
        return time.time() - t0

    def check(self, points, what):
        """Stored aggregates == a single daemon's fed the acked points."""
        t0 = time.time()
        cl.flush_all(self.live())
        t1 = time.time()
        cl.wait_committed(self.pg, self.live(), timeout=30)
        t2 = time.time()
        got = cl.measures(self.pg)
        self.nref += 1
        want = cl.reference(self.pg, points, "ref%d" % self.nref)
        print("  (check: flush %.1f s, committed %.1f s, reference %.1f s)"
              % (t1 - t0, t2 - t1, time.time() - t2))
        assert got == want, (what, cl.diff(got, want))
        print("  %s: %d acked points, %d aggregates equal" % (what, len(points), len(got)))

    def stop(self):
        for d in self.daemons:
            if d.proc and d.proc.poll() is None:
                d.stop()
        self.nats.stop()
        self.pg.stop()


C = None
ALL_POINTS = []


def under_load(action, what, settle=30):
    """Run action() at a random moment of a sustained load; then check."""
    load = Load(C.live())
    t0 = time.time()
    try:
        time.sleep(rng.uniform(0.5, 2.5))
        action()
        t1 = time.time()
        time.sleep(rng.uniform(0.5, 1.5))
    finally:
        pts = load.stop()
    ALL_POINTS.extend(pts)
    t2 = time.time()
    C.settled(timeout=settle)
    t3 = time.time()
    C.check(ALL_POINTS, what)
    print("  (%s: action %.1f s, load %.1f s, settle %.1f s, check %.1f s)"
          % (what, t1 - t0, t2 - t0, t3 - t2, time.time() - t3))


def trial_kill_daemon():
    victim = rng.choice(C.live())
    took = {}

    def act():
        before = C.owned_by_live()
        victim.kill9()
        t0 = time.time()
        mine = set(before[victim.name]) if before else set(range(64))

        def taken():
            o = C.owned_by_live()
            return o is not None and mine <= set(p for v in o.values() for p in v)
        assert cl.wait_for(taken, timeout=15, step=0.1), C.owned_by_live()
        took["s"] = time.time() - t0
    under_load(act, "kill -9 daemon %s" % victim.name)
    print("  takeover of %s's partitions: %.2f s" % (victim.name, took["s"]))
    assert took["s"] <= 10.0, took
    victim.start()
    C.settled()


def trial_kill_nats():
    i = rng.randrange(3)

    def act():
        C.nats.kill(i)
    under_load(act, "kill -9 nats-server n%d" % i)
    C.nats.start(i)
    assert cl.wait_for(lambda: C.nats.answers(i), timeout=20)


def trial_fence():
    victim = rng.choice(C.live())

    def act():
        parts = victim.cluster_status()["owned"]
        pids = C.pg.sql("SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND "
                        "classid = 745263746 AND objsubid = 2 AND granted AND objid IN (%s)"
                        % ",".join(str(p) for p in parts))
        assert pids, "no writer holds the partition locks of %s" % victim.name
        C.pg.sql("SELECT pg_terminate_backend(%s)" % ",".join(p[0] for p in pids[:1]) if len(pids) == 1
                 else "SELECT pg_terminate_backend(pid) FROM unnest('{%s}'::int[]) pid"
                 % ",".join(p[0] for p in pids))
        assert cl.wait_for(lambda: "storage_writer_fenced" in victim.logtext(), timeout=15), \
            victim.logtext()[-3000:]
    under_load(act, "writer backends of %s terminated" % victim.name)
    assert "cluster_fenced" in victim.logtext(), victim.logtext()[-3000:]


def trial_rolling_restart():
    def act():
        for d in list(C.daemons):
            d.stop()
            d.start()
            C.settled()
    under_load(act, "rolling restart", settle=60)


def test_start_and_settle():
    def one_owner_each():
        st = C.daemons[0].cluster_status()
        seen = sorted(p for m in st["members"] if m["live"] for p in m["owned"])
        return st if seen == list(range(64)) else None
    st = cl.wait_for(one_owner_each, timeout=10, step=0.1)
    assert st, C.daemons[0].cluster_status()
    assert [m["name"] for m in st["members"]] == ["a", "b", "c"], st["members"]
    assert all(m["live"] for m in st["members"]), st["members"]
    assert len(st["partitions"]) == 64 and all(p["owner"] for p in st["partitions"]), st
    assert st["nats"]["connected"], st["nats"]


def test_trials():
    kinds = [trial_kill_daemon, trial_fence, trial_kill_nats]
    if TRIALS > 1 or "rolling" in os.environ.get("GA_CLUSTER_KINDS", ""):
        # Known failure, not in CI: in about half the runs the engine workers
        # of one or two daemons stop advancing after the restarts
        # (docs/CLUSTER.md "Limits").
        kinds.append(trial_rolling_restart)
    only = os.environ.get("GA_CLUSTER_KINDS")
    if only:
        kinds = [k for k in kinds if any(o in k.__name__ for o in only.split(","))]
    plan = [k for k in kinds for _ in range(TRIALS)]
    if TRIALS > 1:
        rng.shuffle(plan)
    for k in plan:
        t0 = time.time()
        k()
        print("  %s: %.1f s" % (k.__name__, time.time() - t0))


def test_status_from_gpuaggctl():
    out = C.live()[0].ctl("status")
    assert "cluster" in out.stdout and "members" in out.stdout, out.stdout[-2000:]


def test_cluster_status_fields_documented():
    import json
    r = C.live()[0].ctl("--json", "status")
    assert r.returncode == 0, r
    st = json.loads(r.stdout)

    def flatten(obj, prefix=""):
        out = set()
        for k, v in obj.items():
            name = prefix + k
            if isinstance(v, dict):
                out |= flatten(v, name + ".")
            elif isinstance(v, list) and v and isinstance(v[0], dict):
                out |= flatten(v[0], name + "[].")
            else:
                out.add(name)
        return out
    fields = flatten(st["cluster"], "cluster.")
    doc = open(os.path.join(cl.inglib.ROOT, "docs", "COUNTERS.md")).read()
    missing = sorted(f for f in fields if "`%s`" % f not in doc)
    assert not missing, "cluster status fields not in docs/COUNTERS.md: %s" % missing


def test_nats_down_backpressure():
    """A lone daemon (R=1, its own database and stream) whose only NATS
    server dies: batches are not acknowledged (the producer waits), status
    names the cause; once the server is back, they are, and stored."""
    C.pg.sql("DROP DATABASE IF EXISTS solo")
    C.pg.sql("CREATE DATABASE solo")

    class Solo:
        conninfo = C.pg.conninfo.replace("dbname=gpuagg", "dbname=solo")
    n = cl.Nats(1)
    d = cl.ClusterDaemon(Solo, n, "solo", replicas=1, stream="SOLO")
    d.start()
    try:
        assert cl.wait_for(lambda: len(d.cluster_status()["owned"]) == 64, timeout=30)
        c = cl.Client(tcp_port=d.tcp_port(), timeout=30)
        c.hello()
        t0 = (int(time.time()) - 600) * 10**9
        c.send(cl.columnar(1, ["solo.m"], [t0], [1.0], index=[0]))
        assert c.recv()["type"] == "ack"
        n.kill(0)
        c.send(cl.columnar(2, ["solo.m"], [t0 + 10**9], [2.0], index=[0]))
        c.s.settimeout(3)
        try:
            r = c.recv()
        except OSError:
            r = None
        assert r is None, "acknowledged while NATS is down: %r" % r
        st = d.cluster_status()["nats"]
        assert not st["connected"] and st["last_error"], st
        assert "nats_publish_retry" in d.logtext()
        n.start(0)
        c.s.settimeout(30)
        r = c.recv()
        assert r and r["type"] == "ack" and r["seq"] == 2, r
        assert d.call("flush", {"timeout_ms": 10000}).get("ok")
        rows = cl.measures_db(C.pg, "solo")
        got = sorted((m, v) for m, g, meth, ts, v in rows if meth == "sum")
        assert got == [("solo.m", "1"), ("solo.m", "2")], rows
        c.close()
    finally:
        d.stop()
        n.stop()


def test_query_from_any_daemon():
    name = "l1.p0.m0"
    outs = []
    for d in C.live():
        r = d.call("query", {"metric": name, "method": "mean", "granularity": 1})
        assert r.get("ok"), r
        outs.append(r["result"])
    assert outs[0] and all(o == outs[0] for o in outs), outs


if __name__ == "__main__":
    t0 = time.time()
    C = Cluster()
    try:
        R.run(test_start_and_settle)
        R.run(test_trials)
        R.run(test_status_from_gpuaggctl)
        R.run(test_cluster_status_fields_documented)
        R.run(test_query_from_any_daemon)
        R.run(test_nats_down_backpressure)
    finally:
        C.stop()
    print("  total %.1f s" % (time.time() - t0))
    R.finish()
