"""bench_capacity end to end, short: a private PostgreSQL, the real daemon,
3,000 metrics at one point a second for 8 s.  Checks that the table and the
summary are sane: points acked, everything acked committed after the drain
(and counted in PostgreSQL), a positive COPY ceiling over the same rows."""
import os
import re
import subprocess
import tempfile

import pytest

from bblib import ROOT

BENCH = os.path.join(ROOT, "build", "bench", "bench_capacity")
ROW = re.compile(r"^\s*(\d+\.\d)" + r"\s+(\d+)" * 5 + r"\s+([\d.]+)" * 3 + r"\s+(\d+)\s+(\d+)\s*$")
out = proc = text = rows = None


@pytest.fixture(scope="module", autouse=True)
def bench_run():
    """One short bench_capacity run; every test reads its output."""
    global out, proc, text, rows
    out = tempfile.mkdtemp(prefix="gabench-")
    os.chmod(out, 0o755)    # the postgres user reaches the cluster inside
    proc = subprocess.run([BENCH, "--metrics", "3000", "--interval", "1s", "--duration", "8",
                           "--connections", "2", "--batch", "500", "--report-s", "2",
                           "--copy-sessions", "2", "--out", out],
                          capture_output=True, text=True, timeout=300)
    text = proc.stdout
    print(text)
    print(proc.stderr)
    rows = [m.groups() for m in map(ROW.match, text.splitlines()) if m]
    yield
    subprocess.run(["rm", "-rf", out])


def field(name):
    m = re.search(r"^\| %s \| (.*) \|$" % re.escape(name), text, re.M)
    assert m, "summary has no line %r" % name
    return m.group(1)


def test_exit_zero():
    assert proc.returncode == 0, proc.returncode


def test_table_lines():
    assert len(rows) >= 3, rows
    # offered is the configured rate; acked, aggregated and committed move
    assert all(float(r[1]) == 3000 for r in rows[:-1]), rows
    assert max(float(r[2]) for r in rows) > 0
    assert max(float(r[3]) for r in rows) > 0
    assert max(float(r[4]) for r in rows) > 0
    assert max(float(r[5]) for r in rows) > 0      # rows/s
    assert all(float(r[9]) > 0 and float(r[10]) > 0 for r in rows)   # RSS, RSS per metric


def test_acked_and_committed():
    acked = int(re.match(r"(\d+) points", field("acked")).group(1))
    # 8 s of 3000 points/s, give or take the edges
    assert 18000 <= acked <= 27000, acked
    db = re.match(r"sum\(metrics.points\) (\d+) \(acked (\d+)\), (\d+) rows in bucket_rows", field("in PostgreSQL"))
    assert db, field("in PostgreSQL")
    assert int(db.group(1)) == int(db.group(2)) == acked, db.groups()
    assert int(db.group(3)) > 0
    assert re.match(r"[\d.]+ s from the load's end", field("drain")), field("drain")
    # the last sample: committed points caught up with acked
    last = open(os.path.join(out, "samples.tsv")).read().splitlines()[-1].split("\t")
    assert float(last[6]) == float(last[4]) == acked, last


def test_ceiling():
    m = re.match(r"(\d+) rows/s: (\d+) rows", field("PostgreSQL ceiling"))
    assert m, field("PostgreSQL ceiling")
    assert int(m.group(1)) > 0
    db_rows = int(re.search(r"(\d+) rows in bucket_rows", field("in PostgreSQL")).group(1))
    assert int(m.group(2)) == db_rows, (m.groups(), db_rows)
    assert re.match(r"[\d.]+ %$", field("writer / ceiling")), field("writer / ceiling")


def test_goals_printed():
    for g in ("storage lag p99 <= 2 s", "drain <= 2 s", "writer >= 80 % of the COPY ceiling"):
        assert g in text, g


@pytest.fixture(scope="module")
def backfill():
    """A short --backfill run: 2,000 metrics, 2 minutes of 1 s history each."""
    d = tempfile.mkdtemp(prefix="gabench-bf-")
    os.chmod(d, 0o755)
    p = subprocess.run([BENCH, "--metrics", "2000", "--interval", "1s", "--backfill", "2min",
                        "--connections", "2", "--batch", "2000", "--report-s", "2",
                        "--copy-sessions", "2", "--out", d],
                       capture_output=True, text=True, timeout=300)
    print(p.stdout)
    print(p.stderr)
    yield p
    subprocess.run(["rm", "-rf", d])


def test_backfill_every_point_committed(backfill):
    assert backfill.returncode == 0, backfill.returncode
    t = backfill.stdout

    def line(name):
        m = re.search(r"^\| %s \| (.*) \|$" % re.escape(name), t, re.M)
        assert m, "summary has no line %r" % name
        return m.group(1)
    assert line("offered").startswith("120 s of history (120 points of each metric), as fast as acks allow")
    acked = int(re.match(r"(\d+) points", line("acked")).group(1))
    assert acked == 2000 * 120, acked
    db = re.match(r"sum\(metrics.points\) (\d+) \(acked (\d+)\)", line("in PostgreSQL"))
    assert db and int(db.group(1)) == int(db.group(2)) == acked, line("in PostgreSQL")
    m = re.match(r"(\d+) points/s: (\d+) points in ([\d.]+) s", line("committed, load and drain"))
    assert m, line("committed, load and drain")
    assert int(m.group(2)) == acked and float(m.group(3)) > 0
    # the rate is the points over the seconds printed (to 0.01 s)
    assert abs(int(m.group(1)) * float(m.group(3)) - acked) <= int(m.group(1)) * 0.005 + 1, m.groups()


def test_backfill_bad_span():
    for args, msg in ((["--backfill", "500ms", "--interval", "1s"], "--backfill must span at least one --interval"),
                      (["--backfill", "soon"], "bad value for --backfill: 'soon'")):
        p = subprocess.run([BENCH] + args, capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and msg in p.stderr, (args, p.returncode, p.stderr)
