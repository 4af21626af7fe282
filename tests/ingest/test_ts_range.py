"""The end of the accepted time range (proto/ga_time.h; proto/INGEST.md
§4, §6) against the real gpuaggd and a private PostgreSQL.

A point dated 2262-04-11, were it acknowledged, would overflow the
partition function's int64 and fail every flush for every metric.  Here such
points travel among good ones, in both point forms and as RFC 3339 text:
each is rejected in the ack with its reason and counted, and the good
points, including one at exactly 2200-01-01T00:00:00Z (GA_TS_MAX), are
committed by a flush with no retry and can be queried.  The repository's
own signed Ceilometer vector dated 2262-04-11
(tests/ceilometer/data/samples.txt) is refused over UDP and counted as
udp.rejected.out_of_range, while a good vector signed with the same
secret is stored.  The points at the bound are some 173 years ahead of the
clock: the daemon runs with limits.max_future_s 0 (no bound but 2200-01-01;
the bound ahead of the clock: test_door_checks.py)."""
import json
import os
import socket

import pytest

from inglib import (shared_suite, ROOT, Client, IngestDaemon, PrivatePG, columnar, friendly,
                    policy_yaml, rand_value, rng_for, wait_for)

RNG = rng_for("ts_range")
TS_MAX = 7258118400000000000            # 2200-01-01T00:00:00Z
BAD_NS = 9223372036000000000            # 2262-04-11T23:47:16Z
AFTER = "timestamp after 2200-01-01T00:00:00Z"
G_NS = 60 * 10**9
TIMESPAN_NS = 100000 * G_NS             # policy_yaml's points
SECRET = "change this for valid signing"
VECTORS = os.path.join(ROOT, "tests", "ceilometer", "data", "samples.txt")


class S:
    pg = d = None
    t0 = (1795273445 // 60) * 60 * 10**9 + RNG.randrange(0, 1000) * G_NS
    sent = {}                           # metric -> [(ts, value)] accepted


def vectors():
    """(datagram, ns) of the samples.txt lines signed with SECRET."""
    out = []
    with open(VECTORS) as f:
        for line in f:
            tok = line.split()
            if tok[0] == SECRET.encode().hex() and tok[4] != "-":
                out.append((bytes.fromhex(tok[1]), int(tok[5])))
    return out


def setup():
    S.pg = PrivatePG()
    S.d = IngestDaemon(conninfo=S.pg.conninfo, listen={"telemetry_secret": json.dumps(SECRET)},
                       storage={"flush_interval_ms": 200}, limits={"max_future_s": 0},
                       extra=policy_yaml("tsr", 60, ["mean", "count", "last"]))
    S.d.start()
    assert wait_for(lambda: S.d.call("status")["result"]["engine"]["state"] == "running", 30), \
        S.d.logtext()[-3000:]


def test_ack_rejects_2262_among_good_points():
    d = S.d
    c = Client(d)
    c.hello()
    before = d.stats()
    t0 = S.t0
    a_pts = [[t0 + i * G_NS, rand_value(RNG)] for i in range(5)]
    b_val = rand_value(RNG)
    ents = [("tsr.a", a_pts[:2] + [[BAD_NS, 1.0]] + a_pts[2:] + [[2**63 - 1, 2.0]]),
            ("tsr.b", [["2262-04-11T00:00:00Z", 3.0], ["2200-01-01T00:00:00Z", b_val],
                       ["2200-01-01T00:00:00.000000001Z", 4.0], [TS_MAX + 1, 5.0]])]
    c.send(friendly(21, ents))
    a = c.recv()
    assert a["type"] == "ack" and a["seq"] == 21, a
    got = [(r["index"], r["reason"]) for r in a["rejected"]]
    assert got == [(2, AFTER), (6, AFTER), (7, AFTER), (9, AFTER), (10, AFTER)], a
    assert a["accepted"] == 6, a
    S.sent["tsr.a"] = [tuple(p) for p in a_pts]
    S.sent["tsr.b"] = [(TS_MAX, b_val)]

    # columnar: the same, checked on the decoder's fast path
    c_ts = [t0, BAD_NS, t0 + G_NS, TS_MAX + 1, TS_MAX]
    c_vs = [rand_value(RNG) for _ in c_ts]
    c.send(columnar(22, ["tsr.c"], c_ts, c_vs, counts=[len(c_ts)]))
    a = c.recv()
    got = [(r["index"], r["reason"]) for r in a["rejected"]]
    assert got == [(1, AFTER), (3, AFTER)] and a["accepted"] == 3, a
    S.sent["tsr.c"] = [(c_ts[i], c_vs[i]) for i in (0, 2, 4)]
    c.close()

    after = d.stats()
    assert after["ingest.points_rejected"] - before["ingest.points_rejected"] == 7, after
    assert after["ingest.points_accepted"] - before["ingest.points_accepted"] == 9, after


def test_good_points_committed_and_queryable():
    d = S.d
    r = d.ctl("flush", timeout=60)
    assert r.returncode == 0 and "flushed" in r.stdout, (r, d.logtext()[-3000:])
    st = d.stats()
    assert st["storage.retries"] == 0, (st, d.logtext()[-3000:])
    assert st["engine.late.out_of_range"] == 0, st         # stopped at the door
    assert d.call("status")["result"]["storage"]["last_error"] == "", d.call("status")
    for m, pts in S.sent.items():
        res = d.call("query", {"metric": m, "granularity": 60.0, "method": "last"})
        assert res["ok"], res
        want = sorted(((ts // G_NS) * G_NS, v) for ts, v in pts)
        # the read side keeps the buckets within the timespan of the newest
        # (docs/SEMANTICS.md, Timespan): tsr.c's 2026 buckets are out of it
        want = [(t, v) for t, v in want if t > want[-1][0] - TIMESPAN_NS]
        got = [(row[0], row[1]) for row in res["result"]["rows"]]
        assert got == want, (m, got, want)
    # nothing past the bound reached the database; the bound's buckets are
    # their series' newest, so they are open buckets in blocks (a bucket at
    # the bound as a row of `buckets`, with its day's partition:
    # test_bad_rows.py)
    assert S.pg.sql("SELECT count(*) FROM aggregates WHERE ts > %d" % TS_MAX) == [["0"]]
    rows = S.pg.sql("SELECT metric, ts_ns FROM gpuagg_measures WHERE ts_ns >= %d" % TS_MAX)
    assert sorted(set(map(tuple, rows))) == [("tsr.b", str(TS_MAX)), ("tsr.c", str(TS_MAX))], rows
    assert S.pg.sql("SELECT count(*) FROM open_blocks o, unnest(o.tss) t WHERE t = %d"
                    % TS_MAX) == [["2"]]


def test_ceilometer_vector_2262_refused():
    d = S.d
    vec = vectors()
    late = [(dg, ns) for dg, ns in vec if ns > TS_MAX]
    good = [(dg, ns) for dg, ns in vec if 0 <= ns <= TS_MAX]
    assert late and good, "samples.txt lacks the 2262-04-11 or a good vector signed with %r" % SECRET
    before = d.stats()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(late[0][0], ("127.0.0.1", d.udp_port()))
    u.sendto(good[0][0], ("127.0.0.1", d.udp_port()))
    u.close()

    def counted():
        st = d.stats()
        return st if st["udp.datagrams"] - before["udp.datagrams"] == 2 and \
            st["udp.accepted"] + st["udp.rejected.out_of_range"] - \
            before["udp.accepted"] - before["udp.rejected.out_of_range"] == 2 else None
    st = wait_for(counted, 15)
    assert st, d.stats()
    assert st["udp.rejected.out_of_range"] - before["udp.rejected.out_of_range"] == 1, st
    assert st["udp.rejected.bad_timestamp"] == before["udp.rejected.bad_timestamp"], st
    r = d.ctl("flush", timeout=60)
    assert r.returncode == 0 and "flushed" in r.stdout, (r, d.logtext()[-3000:])
    assert d.stats()["storage.retries"] == 0, d.logtext()[-3000:]
    assert S.pg.sql("SELECT count(*) FROM aggregates WHERE ts > %d" % TS_MAX) == [["0"]]
    assert S.pg.sql("SELECT count(*) FROM late_points WHERE ts > %d" % TS_MAX) == [["0"]]


@pytest.fixture(scope="module", autouse=True)
def suite():
    """setup(): one daemon shared by the tests in order."""
    yield from shared_suite(S, setup)
