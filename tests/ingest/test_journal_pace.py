"""Window saves keep pace with the journal (docs/JOURNAL.md "Size"),
against the real gpuaggd and a private PostgreSQL: the journal lets go of
a record only once every partition's windows were saved after it, so it
holds a round of window saves' worth of ingest.  Here a round is
window_snapshot_s = 10 s of about 1 MB/s against a 4 MiB journal: at the
configured pace the journal would fill within seconds and refuse batches
(so does a pace of at most one partition per batch, at 3 s).  Past
half full the round speeds up, so the journal stays below its cap:
gpuagg-load gets every batch acknowledged, none is refused busy (an append
may wait a moment for space while the first round completes), and every
acknowledged point is counted in PostgreSQL."""
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from inglib import GPUAGG_LOAD, IngestDaemon, PrivatePG, wait_for

POLICY = ("archive_policies:\n  - name: jp\n    back_window: 0\n    definition:\n"
          "      - { granularity: 60s, points: 1000 }\n"
          "    aggregation_methods: [count]\ndefault_archive_policy: jp\n")


class S:
    pg = None


def test_journal_never_fills():
    with IngestDaemon(conninfo=S.pg.conninfo, extra=POLICY,
                      storage={"flush_interval_ms": 200, "window_snapshot_s": 10},
                      journal={"segment_bytes": "1MiB", "max_bytes": "4MiB"}) as d:
        assert wait_for(lambda: d.call("status")["result"]["engine"]["state"] == "running", 60)
        peak = [0]
        load = subprocess.Popen([GPUAGG_LOAD, "-c", d.unix, "-m", "4000", "-k", "1", "-b", "2000",
                                 "--step", "50ms", "-r", "40000", "-d", "20", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while load.poll() is None:
            j = d.call("status")["result"]["journal"]
            peak[0] = max(peak[0], j["retained_bytes"])
            time.sleep(0.2)
        out, err = load.communicate()
        assert load.returncode == 0, (err, out)
        rep = json.loads(out)
        st = d.stats()
        print("acked %d points, journal peak %.1f MiB, %d window saves, %d appends waited" %
              (rep["points_acked"], peak[0] / 2**20, st["engine.window_snapshots"],
               st["pipeline.journal_full_waits"]))
        assert rep["points_acked"] >= 600000, rep
        assert st["pipeline.journal_full_busy"] == 0, st
        assert st["engine.window_snapshots"] > 20 * 64 // 10, st
        r = d.ctl("flush", timeout=120)
        assert r.returncode == 0, r
        n = S.pg.sql("SELECT sum(points) FROM metrics")
        assert int(n[0][0]) == rep["points_acked"], (n, rep)


@pytest.fixture(scope="module", autouse=True)
def suite():
    """A private PostgreSQL."""
    try:
        S.pg = PrivatePG()
        yield
    finally:
        if S.pg:
            S.pg.stop()
