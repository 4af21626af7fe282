"""SIGTERM ends within storage.stop_timeout_ms + 5 s in every state, with
the exit status documented for that state (docs/gpuaggd.8 SIGNALS,
docs/ARCHITECTURE.md "Stopping"), and a restart with PostgreSQL back
stores every acknowledged point once.  Against the real gpuaggd and a
private PostgreSQL per test, with stop_timeout_ms 1000 (a bound of 6 s):

* PostgreSQL down with acknowledged batches not yet committed: exit 1;
* the journal at journal.max_bytes with PostgreSQL down (batches past it
  answered busy): exit 1;
* the first start while PostgreSQL is unreachable (the engine still
  loading), with acknowledged batches in the journal: exit 1;
* a replay of a 40 MB journal in progress while the database blocks every
  commit (another session holds a lock on metrics): exit 1 — the replay is
  cut at half the deadline and the writers' statements, stuck on the lock,
  are cancelled at the deadline (the stop guard is the last resort).

The journal's file system out of space is tests/ingest/test_journal_full.py
(it needs root to mount a small tmpfs).  Each stop's wall time is printed;
the restart's own stop, with everything committed, must exit 0."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from inglib import (EBUSY, GPUAGG_LOAD, PG_PRIVATE, Client, IngestDaemon, PrivatePG,
                    columnar, engine_running, flush, wait_for)

STOP_MS = 1000
GRACE_S = 5.0                           # daemon/stop_guard.h STOP_GUARD_GRACE_MS
BOUND_S = STOP_MS / 1000 + GRACE_S
SLACK_S = 0.5                           # the process's exit and this test's wait
T0 = ((int(time.time()) // 60) * 60 - 3600) * 10**9
POLICY = ("archive_policies:\n  - name: sb\n    back_window: 0\n    definition:\n"
          "      - { granularity: 60s, points: 100000 }\n"
          "    aggregation_methods: [count]\ndefault_archive_policy: sb\n")


class Env:
    """A private PostgreSQL that can go down and come back with its data,
    and a journal directory kept across the daemon's restarts."""

    def __init__(self):
        self.pg = PrivatePG()
        self.tmp = tempfile.mkdtemp(prefix="gasb-")
        self.acked = 0                  # points acknowledged so far

    def pg_down(self):
        subprocess.run(["sh", PG_PRIVATE, "stop", self.pg.dir], capture_output=True, timeout=60,
                       check=True)

    def pg_up(self):
        subprocess.run(["sh", PG_PRIVATE, "start", self.pg.dir], capture_output=True, timeout=60,
                       check=True)

    def daemon(self, storage=None, journal=None):
        st = {"stop_timeout_ms": STOP_MS, "flush_interval_ms": 100, "retry_initial_ms": 100,
              "retry_max_ms": 200}
        st.update(storage or {})
        jn = {"segment_bytes": "1MiB", "max_bytes": "1GiB"}
        jn.update(journal or {})
        return IngestDaemon(conninfo=self.pg.conninfo, tmp=self.tmp, extra=POLICY, storage=st,
                            journal=jn)

    def send(self, c, seq, n):
        """One batch of n points of its own metric; True when acknowledged
        (counted), else the reply (error) or None (closed)."""
        ts = [T0 + i * 10**9 for i in range(n)]
        c.send(columnar(seq, ["sb.%d" % seq], ts, [float(i) for i in range(n)], counts=[n]))
        got = c.recv()
        if got and got["type"] == "ack" and got["accepted"] == n:
            self.acked += n
            return True
        return got

    def close(self):
        self.pg.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def sigterm(d, what):
    """SIGTERM; the exit status, after checking the stop's wall time."""
    t0 = time.time()
    d.signal(signal.SIGTERM)
    try:
        rc = d.proc.wait(BOUND_S + 30)
    except subprocess.TimeoutExpired:
        d.proc.kill()
        d.proc.wait()
        raise AssertionError("%s: no exit within %.0f s of SIGTERM:\n%s" % (
            what, BOUND_S + 30, d.logtext()[-3000:]))
    took = time.time() - t0
    print("%s: exit %d after %.2f s (bound %.1f s)" % (what, rc, took, BOUND_S))
    assert took <= BOUND_S + SLACK_S, (what, took, d.logtext()[-3000:])
    return rc


def stored_all(env):
    """PostgreSQL back, a restart stores every acknowledged point once (the
    count method: one per point, none late), then stops with exit 0."""
    env.pg_up()
    d = env.daemon()
    d.start()
    try:
        assert engine_running(d, 120), d.logtext()[-3000:]
        flush(d)
        n = env.pg.sql("SELECT coalesce(sum(vals[1]), 0) FROM bucket_rows")
        assert int(float(n[0][0])) == env.acked, (n, env.acked)
        assert env.pg.sql("SELECT count(*) FROM late_points") == [["0"]]
        assert d.stop(timeout=BOUND_S + 10) == 0, d.logtext()[-3000:]
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()


def running(d):
    assert engine_running(d, 60), d.logtext()[-3000:]


def test_postgres_down_with_acked_pending():
    env = Env()
    try:
        d = env.daemon()
        d.start()
        running(d)
        c = Client(d)
        c.hello()
        assert env.send(c, 1, 100) is True
        flush(d)                         # in PostgreSQL
        env.pg_down()
        for seq in range(2, 6):          # only in the journal
            assert env.send(c, seq, 100) is True
        assert sigterm(d, "postgres down") == 1
        assert "event=storage_stop_incomplete" in d.logtext() or \
            "event=stop_uncommitted" in d.logtext(), d.logtext()[-3000:]
        stored_all(env)
    finally:
        env.close()


def test_journal_full_storage_down():
    env = Env()
    try:
        journal = {"max_bytes": "2MiB"}
        d = env.daemon(journal=journal)
        d.start()
        running(d)
        env.pg_down()
        c = Client(d)
        c.hello()
        got = None
        for seq in range(1, 40):         # ~320 KB a batch against 2 MiB
            got = env.send(c, seq, 20000)
            if got is not True:
                break
        assert got and got["type"] == "error" and got["code"] == EBUSY, got
        assert env.acked > 0
        assert sigterm(d, "journal full, postgres down") == 1
        stored_all(env)
    finally:
        env.close()


def test_first_start_loading():
    env = Env()
    try:
        env.pg_down()                    # the database exists; its server is down
        d = env.daemon()
        d.start()
        c = Client(d)
        c.hello()
        for seq in range(1, 4):
            assert env.send(c, seq, 100) is True
        assert d.call("status")["result"]["engine"]["state"] == "loading"
        assert sigterm(d, "loading") == 1
        assert "event=stop_uncommitted" in d.logtext(), d.logtext()[-3000:]
        stored_all(env)
    finally:
        env.close()


class Lock:
    """Another session holding metrics in EXCLUSIVE mode: reads go on,
    every writer's commit (which counts its metrics' points) waits."""

    def __init__(self, pg):
        cmd = ["psql", "-h", pg.sockdir, "-U", "postgres", "-d", "gpuagg", "-Atq"]
        if os.getuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.p.stdin.write("BEGIN; LOCK TABLE metrics IN EXCLUSIVE MODE; SELECT 'locked';\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        assert line.strip() == "locked", line

    def release(self):
        if self.p.poll() is None:
            self.p.stdin.write("ROLLBACK;\n")
            self.p.stdin.close()
            self.p.wait(30)


def test_replay_with_commits_blocked():
    env = Env()
    lock = None
    try:
        # a 40 MB journal written while the database is down
        env.pg_down()
        d = env.daemon()
        d.start()
        points = 2000000
        load = subprocess.run([GPUAGG_LOAD, "-c", d.unix, "-m", "20000", "-k", "5", "-b", "5000",
                               "-p", str(points), "--start", str(T0), "--json"],
                              capture_output=True, text=True, timeout=120)
        assert load.returncode == 0, load.stderr
        env.acked += points
        assert sigterm(d, "loading, 40 MB journaled") == 1
        # back up: the replay is paced by the writers (a small queue), and
        # the database then blocks their commits
        env.pg_up()
        d = env.daemon(storage={"queue_max_rows": 2000})
        d.start()
        state = lambda: d.call("status")["result"]["engine"]["state"]  # noqa: E731
        assert wait_for(lambda: state() == "replaying", 60, step=0.01), d.logtext()[-3000:]
        lock = Lock(env.pg)
        time.sleep(0.5)
        assert state() == "replaying", "the replay ended before the commits were blocked"
        assert sigterm(d, "replaying, commits blocked") == 1
        log = d.logtext()
        assert "event=stop_deadline_exceeded" in log or "event=stop_uncommitted" in log or \
            "event=storage_stop_incomplete" in log, log[-3000:]
        lock.release()
        stored_all(env)
    finally:
        if lock:
            lock.release()
        env.close()
