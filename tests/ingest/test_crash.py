"""Acknowledged means durable: gpuagg-load --record against gpuaggd with a
private PostgreSQL, kill -9 of the daemon at seeded random moments, restart
on the same journal and database, go on; then a graceful drain (SIGTERM)
and a check in PostgreSQL that every acknowledged (metric, ts, value) is
there exactly once.

Policy "crash": 1-second buckets of count, sum and last; every point has its
own whole-second timestamp, so each point is one bucket: count must be 1,
sum and last its value.  Its second archive, 1-minute buckets, is a coarse
archive whose buckets the daemon holds back up to storage.coarse_delay_ms
(STORAGE.md "Coarse archives"): the kills lose what was held, and every
minute bucket must still be the aggregate of its 1-second buckets.  A bucket that was never acknowledged is allowed
only for a point of a batch that was sent but not acknowledged when the
daemon died (gpuagg-load --unacked), and then with that point's value.

The third scenario changes engine.workers at every restart (4, 3, 1, 2, ...):
the partitions move between workers while the daemon is killed with their
windows saved at different positions, and the new owners must resume each
partition from its own position."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from inglib import (GPUAGG_LOAD, IngestDaemon, engine_running, PrivatePG, read_points,
                    rng_for, send_batch, wait_for)

RNG = rng_for("crash")
ROUNDS = 6
GRAN_NS = 10**9
COARSE_NS = 60 * 10**9
POLICY = ("archive_policies:\n  - name: crash\n    back_window: 0\n    definition:\n"
          "      - { granularity: 1s, points: 100000000 }\n"
          "      - { granularity: 60s, points: 10000000 }\n"
          "    aggregation_methods: [count, sum, last]\n"
          "default_archive_policy: crash\n")


def run_load(d, tmp, rnd, start_s, kill_after):
    """One round: load for up to 20 s, the daemon killed after kill_after
    seconds (None: let the load finish).  Returns (acked, unacked)."""
    rec, una = os.path.join(tmp, "acked.%d" % rnd), os.path.join(tmp, "unacked.%d" % rnd)
    out = open(os.path.join(tmp, "load.%d.log" % rnd), "w")
    cmd = [GPUAGG_LOAD, "-c", d.unix, "-n", "3", "-m", "24", "-k", "5", "-b", "400", "-i", "8",
           "--rate", "60000", "--seed", str(RNG.randrange(1, 2**31)), "--start", str(start_s * 10**9),
           "--step", "1s", "--prefix", "crash.", "--record", rec, "--unacked", una, "--drain", "20"]
    cmd += ["--points", "30000"] if kill_after is None else ["--duration", "20"]
    load = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    if kill_after is not None:
        time.sleep(kill_after)
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
    rc = load.wait(60)
    out.close()
    log = open(out.name).read()
    if kill_after is None:
        assert rc == 0, log
    else:
        # a killed daemon closes with its unread input (frames past
        # max_inflight) still queued: the client sees a reset or EPIPE
        assert rc == 1 and any(w in log for w in ("closed by the daemon", "cannot connect",
                                                  "Broken pipe", "reset by peer")), (rc, log)
    return read_points(rec), read_points(una)


class Scenario:
    """The kill -9 rounds, run once; the checks below read what they left.
    snapshot_s: storage.window_snapshot_s; at 10 s a partition's windows are
    saved every 156 ms, so the partitions stand at different journal
    positions when the daemon dies and the replay must feed each record's
    points only to the partitions whose windows do not hold them yet."""

    def __init__(self, snapshot_s, workers=None):
        self.snapshot_s = snapshot_s
        self.workers = workers         # engine.workers per round (None: the default)
        self.pg = PrivatePG()
        self.tmp = tempfile.mkdtemp(prefix="gacrash-")
        self.acked, self.unacked, self.buckets, self.coarse = {}, {}, {}, {}
        self.snapshots = 0

    def daemon(self, rnd):
        extra = POLICY
        if self.workers:
            extra += "engine: { workers: %d }\n" % self.workers[rnd % len(self.workers)]
        # max_future_s 0: the rounds are stamped from tomorrow on, each
        # 100000 s after the last, past the default one day ahead
        return IngestDaemon(conninfo=self.pg.conninfo, tmp=self.tmp,
                            storage={"flush_interval_ms": 200, "window_snapshot_s": self.snapshot_s},
                            limits={"max_future_s": 0}, extra=extra)

    def run(self):
        base = (int(time.time()) // 86400 + 1) * 86400     # tomorrow, UTC: never behind retention
        d = None
        try:
            for rnd in range(ROUNDS + 1):
                d = self.daemon(rnd)
                d.start()
                if rnd == 0:
                    # the first start creates the schema as the engine loads:
                    # a kill before that leaves no tables to read positions from
                    assert engine_running(d), d.logtext()[-3000:]
                if self.workers:
                    want = self.workers[rnd % len(self.workers)]
                    got = d.call("status")["result"]["engine"]["workers"]
                    assert got == want, (got, want)
                kill_after = None if rnd == ROUNDS else (RNG.uniform(0.05, 0.4) if rnd == 1
                                                         else RNG.uniform(0.5, 2.5))
                a, u = run_load(d, self.tmp, rnd, base + rnd * 100000, kill_after)
                print("round %d: kill after %s s, %d points acked, %d unacknowledged" %
                      (rnd, "-" if kill_after is None else "%.2f" % kill_after, len(a), len(u)))
                assert not (a.keys() & self.acked.keys()) and not (u.keys() & self.unacked.keys())
                if kill_after is not None:           # where the partitions stood at the kill
                    self.snapshots = max(self.snapshots, int(self.pg.sql(
                        "SELECT count(DISTINCT window_lsn) FROM partitions")[0][0]))
                self.acked.update(a)
                self.unacked.update(u)
            assert d.stop(timeout=60) == 0, d.logtext()[-3000:]
        finally:
            if d and d.proc and d.proc.poll() is None:
                d.proc.kill()
                d.proc.wait()
        assert len(self.acked) > 30000, len(self.acked)
        rows = self.pg.sql("SELECT metric, method, ts_ns, value FROM gpuagg_measures "
                           "WHERE granularity_ns = %d AND metric LIKE 'crash.%%'" % GRAN_NS)
        for m, method, ts, v in rows:
            self.buckets.setdefault((m, int(ts)), {})[method] = float(v)
        rows = self.pg.sql("SELECT metric, method, ts_ns, value FROM gpuagg_measures "
                           "WHERE granularity_ns = %d AND metric LIKE 'crash.%%'" % COARSE_NS)
        for m, method, ts, v in rows:
            self.coarse.setdefault((m, int(ts)), {})[method] = float(v)


S = None


@pytest.fixture(scope="module", params=[(300, None), (10, None), (10, [4, 3, 1, 2, 4, 1, 3])],
                ids=["snapshot300", "snapshot10", "snapshot10-workers"])
def scenario(request):
    """The four tests below run once for each storage.window_snapshot_s and
    engine.workers sequence, in order, on one Scenario; its directory is
    kept when one of them failed."""
    global S
    snapshot_s, workers = request.param
    S = Scenario(snapshot_s, workers)
    print("window_snapshot_s = %d, engine.workers %s" % (snapshot_s, workers or "default"))
    failed = request.session.testsfailed
    try:
        yield S
    finally:
        S.pg.stop()
        if request.session.testsfailed == failed:
            shutil.rmtree(S.tmp, ignore_errors=True)


@pytest.mark.usefixtures("scenario")
def test_kill9_rounds():
    S.run()
    if S.snapshot_s == 10:
        # the daemon died with its partitions saved at many positions
        assert S.snapshots > 4, S.snapshots


@pytest.mark.usefixtures("scenario")
def test_acknowledged_exactly_once():
    assert S.buckets, "no aggregates"
    missing = [k for k in S.acked if k not in S.buckets]
    assert not missing, "%d acknowledged points missing, e.g. %r" % (len(missing), missing[:5])
    for key, aggs in S.buckets.items():
        want = S.acked.get(key, S.unacked.get(key))
        assert want is not None, "bucket %r holds a point that was never sent" % (key,)
        assert aggs == {"count": 1.0, "sum": want, "last": want}, (key, aggs, want)
    print("%d acknowledged points all present once; %d of %d unacknowledged present" %
          (len(S.acked), len(S.buckets) - len(S.acked), len(S.unacked)))
    # Per metric, the sum of the count aggregates equals the distinct points stored.
    per_metric = {}
    for (m, _ts) in S.buckets:
        per_metric[m] = per_metric.get(m, 0) + 1
    counted = dict((m, int(n)) for m, n in S.pg.sql(
        "SELECT metric, sum(value) FROM gpuagg_measures WHERE method = 'count' AND "
        "granularity_ns = %d AND metric LIKE 'crash.%%' GROUP BY metric" % GRAN_NS))
    assert counted == per_metric, (counted, per_metric)
    assert S.pg.sql("SELECT DISTINCT policy FROM metrics WHERE name LIKE 'crash.%'") == [["crash"]]


@pytest.mark.usefixtures("scenario")
def test_coarse_archive_matches_fine():
    """Every minute bucket is the aggregate of the 1-second buckets stored
    in it (acknowledged points, and unacknowledged ones that were stored):
    none lost with what the killed daemon held, none stale."""
    want = {}
    for (m, ts) in sorted(S.buckets, key=lambda k: (k[0], k[1])):
        v = S.buckets[(m, ts)]["last"]
        w = want.setdefault((m, ts // COARSE_NS * COARSE_NS), {"count": 0.0, "sum": 0.0, "last": None})
        w["count"] += 1
        w["sum"] += v
        w["last"] = v
    assert S.coarse.keys() == want.keys(), (len(S.coarse), len(want),
                                            sorted(want.keys() ^ S.coarse.keys())[:5])
    for key, w in want.items():
        got = S.coarse[key]
        assert got["count"] == w["count"] and got["last"] == w["last"] and \
            abs(got["sum"] - w["sum"]) <= 1e-9 * max(1.0, abs(w["sum"])), (key, got, w)
    print("%d minute buckets equal the aggregates of their %d second buckets" %
          (len(want), len(S.buckets)))


@pytest.mark.usefixtures("scenario")
def test_points_counter_exactly_once():
    """metrics.points (STORAGE.md: exact, protected from double counting)
    equals the points stored.  Known to fail when the daemon restarts
    while the killed instance's last transaction is still committing:
    that commit lands after the new instance read the checkpoint, which
    then replays and counts the same records again."""
    per_metric = {}
    for (m, _ts) in S.buckets:
        per_metric[m] = per_metric.get(m, 0) + 1
    stored = dict((m, int(n)) for m, n in S.pg.sql(
        "SELECT name, points FROM metrics WHERE name LIKE 'crash.%'"))
    over = sum(stored.values()) - sum(per_metric.values())
    assert stored == per_metric, "metrics.points counts %+d points (a late commit of the killed " \
        "instance raced the restart's checkpoint read)" % over


def stop_own(d, pg, tmp):
    """After a test with its own daemon and PostgreSQL: the daemon killed if
    a failed check left it running, the server stopped, the files gone."""
    if d.proc and d.proc.poll() is None:
        d.proc.kill()
        d.proc.wait()
    pg.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def test_held_bucket_written_before_its_window_set():
    """A minute bucket held back (coarse_delay_ms 10 minutes, so that only a
    window set lets it go) is in PostgreSQL once its partition's window set
    claimed the record it came from: the replay after a kill -9 starts past
    that record and would not compute it again."""
    pg, tmp = PrivatePG(), tempfile.mkdtemp(prefix="gaheld-")
    day = (int(time.time()) // 86400 + 1) * 86400

    def daemon():
        return IngestDaemon(conninfo=pg.conninfo, tmp=tmp, extra=POLICY,
                            storage={"flush_interval_ms": 200, "window_snapshot_s": 10,
                                     "coarse_delay_ms": 600000},
                            limits={"max_future_s": 0})
    names = ["held.%d" % i for i in range(200)]          # over every partition
    ts = [(day + 7) * 10**9 + (i % 3) * 10**9 for i in range(600)]
    values = [float(i) for i in range(600)]
    minute_sql = ("SELECT metric, method, value FROM gpuagg_measures WHERE granularity_ns = %d "
                  "AND metric LIKE 'held.%%' ORDER BY 1, 2" % COARSE_NS)
    d = daemon()
    try:
        d.start()
        assert engine_running(d), d.logtext()[-3000:]
        send_batch(d, 1, (names, [i % 200 for i in range(600)], ts, values))
        wait_for(lambda: int(pg.sql("SELECT count(*) FROM gpuagg_measures WHERE granularity_ns = %d "
                                    "AND metric LIKE 'held.%%'" % GRAN_NS)[0][0]) == 600, 30)
        lsn = d.call("status")["result"]["engine"]["processed_lsn"]
        assert wait_for(lambda: int(pg.sql("SELECT min(window_lsn) FROM partitions")[0][0]) >= lsn,
                        30), pg.sql("SELECT id, window_lsn FROM partitions")
        want = []
        for j, n in enumerate(sorted(names)):
            i = names.index(n)
            pts = [(ts[k], values[k]) for k in range(i, 600, 200)]
            want += [[n, "count", "3.0"], [n, "last", repr(max(pts)[1])],
                     [n, "sum", repr(sum(v for _, v in pts))]]
        got = [[m, meth, repr(float(v))] for m, meth, v in pg.sql(minute_sql)]
        assert got == sorted(want), (got[:6], sorted(want)[:6])
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        d = daemon()
        d.start()
        assert engine_running(d), d.logtext()[-3000:]
        assert d.stop(timeout=60) == 0, d.logtext()[-3000:]
        got = [[m, meth, repr(float(v))] for m, meth, v in pg.sql(minute_sql)]
        assert got == sorted(want), (got[:6], sorted(want)[:6])
    finally:
        stop_own(d, pg, tmp)


def test_held_bucket_written_within_delay():
    """With window sets far apart (a partition's every 56 s), held minute
    buckets reach PostgreSQL in their partitions' turns, within
    storage.coarse_delay_ms (1 s here) and a flush interval, and the
    counters say so."""
    pg, tmp = PrivatePG(), tempfile.mkdtemp(prefix="gaturn-")
    day = (int(time.time()) // 86400 + 1) * 86400
    d = IngestDaemon(conninfo=pg.conninfo, tmp=tmp, extra=POLICY,
                     storage={"flush_interval_ms": 200, "window_snapshot_s": 3600,
                              "coarse_delay_ms": 1000},
                     limits={"max_future_s": 0})
    count_sql = ("SELECT count(*) FROM gpuagg_measures WHERE granularity_ns = %d "
                 "AND metric LIKE 'turn.%%'")
    try:
        d.start()
        assert engine_running(d), d.logtext()[-3000:]
        names = ["turn.%d" % i for i in range(100)]
        send_batch(d, 1, (names, list(range(100)), [(day + 5) * 10**9] * 100, [1.0] * 100))
        t0 = time.time()
        assert wait_for(lambda: int(pg.sql(count_sql % COARSE_NS)[0][0]) == 300, 10), \
            pg.sql(count_sql % COARSE_NS)
        took = time.time() - t0
        assert int(pg.sql(count_sql % GRAN_NS)[0][0]) == 300
        st = d.stats()
        assert st["engine.coarse_released"] >= 100 and st["engine.coarse_held"] == 0, st
        assert took < 4, took
        print("minute buckets in PostgreSQL %.2f s after the ack" % took)
        assert d.stop(timeout=60) == 0, d.logtext()[-3000:]
    finally:
        stop_own(d, pg, tmp)
