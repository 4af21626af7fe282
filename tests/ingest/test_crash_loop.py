"""Crash loops shorten (docs/JOURNAL.md "Replay"), against the real gpuaggd
and a private PostgreSQL: progress is saved while the journal is replayed
(every partition's windows each journal segment replayed), so a daemon
killed with SIGKILL before its replay ends starts the next replay further
on, and the journal it keeps shrinks.

A journal of several segments is written while PostgreSQL is down (the
engine cannot load, nothing is committed).  PostgreSQL comes up; each
start replays, and is killed as soon as its replay has saved progress
(partitions.window_lsn moved) while still replaying.  Each replay must
start after the previous one's start, and the last run, left alone,
catches up with every point exactly once."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from inglib import GPUAGG_LOAD, PG_PRIVATE, IngestDaemon, PrivatePG, wait_for

POINTS = 3000000
POLICY = ("archive_policies:\n  - name: cl\n    back_window: 0\n    definition:\n"
          "      - { granularity: 60s, points: 100000 }\n"
          "    aggregation_methods: [count]\ndefault_archive_policy: cl\n")


class S:
    pg = None
    tmp = None


def daemon():
    return IngestDaemon(conninfo=S.pg.conninfo, tmp=S.tmp, extra=POLICY,
                        storage={"flush_interval_ms": 200, "window_snapshot_s": 3600,
                                 "retry_initial_ms": 100, "retry_max_ms": 200},
                        journal={"segment_bytes": "1MiB", "max_bytes": "1GiB"})


def starts(d):
    """(from, bytes) of every journal_replay_start in d's log."""
    return [(int(a), int(b)) for a, b in
            re.findall(r"event=journal_replay_start from=(\d+) until=\d+ bytes=(\d+)", d.logtext())]


def window_lsn():
    """Where the database's lowest partition window stands (0 before the
    daemon created the schema)."""
    if S.pg.sql("SELECT to_regclass('partitions') IS NULL") == [["t"]]:
        return 0
    r = S.pg.sql("SELECT coalesce(min(window_lsn), 0) FROM partitions")
    return int(r[0][0]) if r else 0


def test_replay_progress_survives_kills():
    pgdir = S.pg.dir
    subprocess.run(["sh", PG_PRIVATE, "stop", pgdir], capture_output=True, timeout=60, check=True)
    d = daemon()
    d.start()
    load = subprocess.run([GPUAGG_LOAD, "-c", d.unix, "-m", "20000", "-k", "5", "-b", "5000",
                           "-p", str(POINTS), "--json"], capture_output=True, text=True,
                          timeout=120)
    assert load.returncode == 0, load.stderr
    assert d.call("status")["result"]["engine"]["state"] == "loading"
    d.proc.kill()
    d.proc.wait()
    subprocess.run(["sh", PG_PRIVATE, "start", pgdir], capture_output=True, timeout=60, check=True)

    seen = []                       # (from, bytes) of each replay, in order
    for attempt in range(4):
        d = daemon()
        d.start()
        before = window_lsn()
        # kill as soon as this replay saved progress, while it still replays
        def progressed():
            st = d.call("status")["result"]["engine"]["state"]
            if st == "loading":
                return None
            return st if st != "replaying" or window_lsn() > before else None
        st = wait_for(progressed, 60, step=0.02)
        mine = starts(d)[len(seen):]
        assert mine, d.logtext()[-2000:]
        seen.append(mine[0])
        if st != "replaying":
            break                   # this one caught up before it saved anything else
        d.proc.kill()
        d.proc.wait()
        assert window_lsn() > before
    print("replays (from, bytes):", seen)
    assert len(seen) >= 2, (seen, re.findall(r"event=journal_replayed.*|event=storage_writer_connected.*|event=storage_commit.*", d.logtext())[-8:])
    for (f0, b0), (f1, b1) in zip(seen, seen[1:]):
        assert f1 > f0 and b1 < b0, seen
    # the last start, left alone, catches up; every point counted once
    d = daemon()
    d.start()
    assert wait_for(lambda: d.call("status")["result"]["engine"]["state"] == "running", 120), \
        d.logtext()[-2000:]
    r = d.ctl("flush", timeout=120)
    assert r.returncode == 0, r
    n = S.pg.sql("SELECT sum(vals[1]) FROM bucket_rows")
    assert int(float(n[0][0])) == POINTS, (n, seen)
    assert d.stop(timeout=60) == 0


@pytest.fixture(scope="module", autouse=True)
def suite():
    """A private PostgreSQL and a directory for the daemon's journal; long,
    so only with GA_TEST_LONG=1."""
    if not os.environ.get("GA_TEST_LONG"):
        pytest.skip("long: set GA_TEST_LONG=1 (about 30 s)")
    try:
        S.pg = PrivatePG()
        S.tmp = tempfile.mkdtemp(prefix="gacl-")
        yield
    finally:
        if S.pg:
            S.pg.stop()
        if S.tmp:
            shutil.rmtree(S.tmp, ignore_errors=True)
