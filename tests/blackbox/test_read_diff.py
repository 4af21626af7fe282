"""test_read_diff.py — what the daemon stores and returns, against carbonara.

The engine's own differential test (tests/engine/test_carbonara_diff.py)
stops at the engine; this one goes the whole way: seeded random series,
several batches per metric (back windows, points too old for the window,
timestamps re-sent with new values, timespans that truncate, rate:*, Npct),
pushed through the real ingest socket, journal, engine and PostgreSQL of a
running gpuaggd, then read back through the `gpuagg_measures` view and
`gpuaggctl query`, and compared bucket for bucket with Gnocchi's carbonara
driven the way metricd drives it (tests/engine/carbonara_oracle.py), and
with `gpuaggctl resample --local` on the same batches.

Each batch is acknowledged and flushed before the next is sent, so the
daemon aggregates it on its own, as metricd would.  Late points must be
those carbonara drops (the `late_points` table, reason `window`).

Each case (one archive policy, its metrics and their batches) is one test
(test_case, parametrized); one daemon holds them all.
GA_SEED=N picks another base seed, GA_READ_CASES=N the number of cases."""
import collections
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time

import msgpack
import psycopg2
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "engine"))
import carbonara_oracle as co  # noqa: E402
import test_carbonara_diff as cd  # noqa: E402
from bblib import ROOT, Daemon, recv, wait_for  # noqa: E402

PG = os.path.join(ROOT, "tools", "pg-private.sh")
NS = co.NS
BASE_SEED = int(os.environ.get("GA_SEED", "20261127"))
NCASES = int(os.environ.get("GA_READ_CASES", "24"))
# Three hours ago on an hour boundary: partitions are created on demand and
# nothing is old enough for retention (every timespan here is bounded by
# LONG, which keeps the policies' reach far past the data).
T0 = ((int(time.time()) // 3600 - 3) * 3600) * NS
LONG = 3650 * 86400 * NS


class Case(object):
    """One policy, its metrics (prefix cN/) and their batches."""

    def __init__(self, i):
        self.i = i
        self.seed = BASE_SEED * 100 + i
        rng = random.Random(self.seed)
        self.name = "rd%d" % i
        self.grans = cd.pick_grans(rng)
        self.methods = cd.pick_methods(rng, i * 3 + 1)
        self.back_window = rng.choice([0, 0, 1, 2])
        # most timespans truncate: a few buckets to a few dozen
        self.spans = [g * rng.randint(2, 40) if rng.random() < 0.8 else LONG
                      for g in self.grans]
        block = self.grans[-1]
        names = ["%s/%s" % (self.name, m) for m in cd.metric_names(rng, rng.randint(1, 3))]
        clock = {m: T0 + rng.randrange(0, 3600 * NS) for m in names}
        history = collections.defaultdict(list)
        self.batches = []
        for _ in range(rng.randint(3, 7)):
            batch = []
            for m in names:
                if rng.random() < 0.15:
                    continue
                pts = cd.gen_metric_points(rng, m, self.grans, rng.choice([0.3, 1, 2.5]))
                shift = clock[m] - pts[0][1]
                pts = [(m, t + shift, v) for _, t, v in pts]
                adv = int(block * rng.choice([0.1, 0.5, 1, 1.7, 3, self.back_window + 2]))
                clock[m] = max(t for _, t, _ in pts) + adv
                for _ in range(rng.choice([0, 1, 2])):      # late, inside and past the window
                    if history[m]:
                        back = rng.choice([0.3, 1, self.back_window + 0.5,
                                           self.back_window + 1.5, self.back_window + 3])
                        pts.append((m, max(history[m]) - int(back * block) - rng.randrange(NS),
                                    rng.uniform(-10, 10)))
                if history[m] and rng.random() < 0.3:      # re-sent: the newer batch wins
                    pts.append((m, rng.choice(history[m]), rng.uniform(100, 200)))
                history[m] += [t for _, t, _ in pts]
                batch += pts
            self.batches.append(cd.arrival_order(rng, batch))
        self.oracle = co.Oracle(co.Policy(self.grans, self.methods, self.back_window, self.spans))
        for b in self.batches:
            self.oracle.feed(b)

    def policy_yaml(self):
        defs = "".join("        - { granularity: %s, timespan: %s }\n"
                       % (co.fmt_gran(g), co.fmt_gran(s)) for g, s in zip(self.grans, self.spans))
        return ("  - name: %s\n    back_window: %d\n    definition:\n%s"
                "    aggregation_methods: [%s]\n"
                % (self.name, self.back_window, defs,
                   ", ".join('"%s"' % m for m in self.methods)))

    def rule_yaml(self):
        return ('  - metric_pattern: "%s/*"\n    archive_policy_name: %s\n'
                % (self.name, self.name))


class Ingest(object):
    """One ingest connection, friendly form, one message a batch."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(30)
        self.s.connect(path)
        self.up = msgpack.Unpacker(raw=False)
        self.s.sendall(msgpack.packb({"type": "hello", "version": 1, "client": "read_diff"}))
        assert recv(self.s, self.up)["type"] == "hello"
        self.seq = 0

    def send(self, points):
        per = collections.OrderedDict()
        for m, t, v in points:              # per metric, arrival order kept
            per.setdefault(m, []).append([t, v])
        self.seq += 1
        self.s.sendall(msgpack.packb({"type": "points", "seq": self.seq, "metrics": [
            {"metric": m, "points": p} for m, p in per.items()]}))
        ack = recv(self.s, self.up)
        assert ack["type"] == "ack" and ack["seq"] == self.seq, ack
        assert not ack["rejected"], ack
        assert ack["accepted"] == len(points), (ack, len(points))


def read_view(conn, case):
    got = collections.defaultdict(dict)
    with conn.cursor() as c:
        c.execute("SELECT metric, granularity_ns, method, ts_ns, value FROM gpuagg_measures"
                  " WHERE metric LIKE %s", (case.name + "/%",))
        for m, g, meth, t, v in c.fetchall():
            key = (m, int(g), meth)
            assert t not in got[key], ("duplicate row", key, t)
            got[key][int(t)] = v
    return got


def read_late(conn, case):
    with conn.cursor() as c:
        c.execute("SELECT m.name, l.ts, l.reason FROM late_points l JOIN metrics m"
                  " ON m.id = l.metric WHERE m.name LIKE %s", (case.name + "/%",))
        return c.fetchall()


def check_case(d, conn, case):
    diffs = cd.compare(case.oracle, read_view(conn, case))
    want_late = set((m, t) for m, t, _, _ in case.oracle.late)
    late = read_late(conn, case)
    got_late = set((m, int(t)) for m, t, _ in late)
    for m, t, why in late:
        if why != "window":
            diffs.append("late point %s %s reason %s, want window" % (m, t, why))
    if got_late != want_late:
        diffs.append("late points: %d not stored that carbonara drops, %d stored that it keeps"
                     % (len(want_late - got_late), len(got_late - want_late)))
    # gpuaggctl query reads the same series as the view, for one series a
    # granularity (the whole range: start at the epoch)
    want = case.oracle.series()
    for g in case.grans:
        keys = sorted(k for k in want if k[1] == g)
        if not keys:
            continue
        m, _, meth = keys[len(keys) // 2]
        r = d.ctl("--json", "query", m, "--granularity", co.fmt_gran(g), "--method", meth,
                  "--start", "0", "--stop", str(2 ** 62 // NS), timeout=60)
        if r.returncode != 0:
            diffs.append("gpuaggctl query %s: exit %d %s" % (m, r.returncode, r.stderr.strip()))
            continue
        vals = [row[2] for row in json.loads(r.stdout)]
        w = [v for _, v in sorted(want[(m, g, meth)].items())]
        if len(vals) != len(w) or any(not cd.close(meth, a, b, abs(b) + 1) for a, b in zip(vals, w)):
            diffs.append("gpuaggctl query %s %s %s: %d buckets, carbonara %d"
                         % (m, co.fmt_gran(g), meth, len(vals), len(w)))
    # gpuaggctl resample --local on the same batches ("#batch" lines) says
    # the same as carbonara, so the daemon's path and the local one agree
    path = os.path.join(tempfile.gettempdir(), "read_diff_%d_%d.csv" % (os.getpid(), case.i))
    cd.write_input(path, case.batches, random.Random(case.seed), rfc3339=False)
    cmd, p = cd.run_cli(path, case.grans, case.methods, case.back_window, case.spans)
    os.unlink(path)
    if p.returncode != 0:
        diffs.append("resample --local exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
    else:
        diffs += ["resample --local: " + x for x in cd.compare(case.oracle, cd.parse_output(p.stdout)[0], 4)]
    return diffs


CASES = [Case(i) for i in range(NCASES)]


class Env:
    d = conn = None


E = Env()


@pytest.fixture(scope="module", autouse=True)
def daemon():
    """A private PostgreSQL and one daemon with every case's policy and
    rule; every case's batch k is sent and flushed before batch k+1.  The
    tests then read back one case each; the daemon must exit 0."""
    cases = CASES
    # the clocks run ahead by a few blocks a batch (up to days at the coarse
    # granularities): limits.max_future_s 0 keeps only the 2200-01-01 bound,
    # so every generated point is accepted and compared
    extra = "limits: { max_future_s: 0 }\n"
    extra += "archive_policies:\n" + "".join(c.policy_yaml() for c in cases)
    extra += "archive_policy_rules:\n" + "".join(c.rule_yaml() for c in cases)
    pg = tempfile.mkdtemp(prefix="gapg-", dir="/tmp")
    t0 = time.time()
    try:
        conninfo = subprocess.run([PG, "start", pg], capture_output=True, text=True,
                                  check=True).stdout.strip()
        with Daemon(conninfo=conninfo, extra=extra) as d:
            ok = wait_for(lambda: d.call("status")["result"]["engine"]["state"] == "running", 60)
            assert ok, d.logtext()[-3000:]
            ing = Ingest(os.path.join(d.tmp, "ingest.sock"))
            for k in range(max(len(c.batches) for c in cases)):
                for c in cases:
                    if k < len(c.batches) and c.batches[k]:
                        ing.send(c.batches[k])
                r = d.ctl("--timeout", "60", "flush", timeout=90)   # batch k on its own
                assert r.returncode == 0, (r, d.logtext()[-3000:])
            conn = psycopg2.connect(conninfo)
            conn.autocommit = True
            E.d, E.conn = d, conn
            yield
            conn.close()
            ing.s.close()
            rc = d.stop(30)
            values = sum(len(s) for c in cases for s in c.oracle.series().values())
            print("%.1fs; %d cases, %d buckets compared" % (time.time() - t0, len(cases), values))
            assert rc == 0, "daemon exit %s" % rc
    finally:
        subprocess.run([PG, "stop", pg], capture_output=True)
        subprocess.run(["rm", "-rf", pg])


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_case(c):
    diffs = check_case(E.d, E.conn, c)
    assert not diffs, ("case %d (seed %d; GA_SEED=%d): grans %s methods %s bw %d spans %s\n"
                       % (c.i, c.seed, BASE_SEED, [co.fmt_gran(g) for g in c.grans],
                          c.methods, c.back_window, [co.fmt_gran(s) for s in c.spans])
                       + "\n".join("  " + x for x in diffs))
