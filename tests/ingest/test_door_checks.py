"""What the door refuses per point (proto/INGEST.md §4, §5, §6), against
the real gpuaggd and a private PostgreSQL.

limits.max_future_s (default one day): one point dated a year ahead of the
daemon's clock used to move its metric's window to next year, after which
every point stamped now was acknowledged and only set aside as late (reason
window).  Here it is refused in the ack with a reason naming the limit,
counted (ingest.points_rejected_future; udp.rejected.future for a
Ceilometer sample), and the points stamped now that follow are aggregated
and stored.  With the bound reloaded to 0 the same sequence silences the
metric as before, and the operator sees it in `status` → engine.late.window.

Metric names: a name holding U+202E (right-to-left override) or another
bidirectional or invisible character is refused, each of its points in the
ack with the code point named, while the other points of the batch are
stored; a Ceilometer sample whose resource_id holds one is refused
(udp.rejected.bad_field)."""
import socket
import time

import msgpack
import pytest

from inglib import (shared_suite, Client, IngestDaemon, PrivatePG, columnar, flush, friendly,
                    policy_yaml, rand_value, rfc3339, rng_for, wait_for)

RNG = rng_for("door_checks")
NS = 10**9
G_NS = 60 * NS
DAY_NS = 86400 * NS
YEAR_NS = 365 * DAY_NS
FUTURE = " is more than limits.max_future_s = 86400 s ahead"


class S:
    pg = d = None


def now_ns():
    return int(time.time()) * NS


def future_reason(ts):
    s, frac = divmod(ts, NS)
    text = rfc3339(ts)[:19]
    if frac:
        text += (".%09d" % frac).rstrip("0")
    return "timestamp %sZ%s" % (text, FUTURE)


def setup():
    S.pg = PrivatePG()
    S.d = IngestDaemon(conninfo=S.pg.conninfo, limits={"max_future_s": "1 day"},
                       storage={"flush_interval_ms": 200},
                       extra=policy_yaml("door", 60, ["mean", "count", "last"]))
    S.d.start()
    assert wait_for(lambda: S.d.call("status")["result"]["engine"]["state"] == "running", 30), \
        S.d.logtext()[-3000:]


def rows(metric, method="count"):
    res = S.d.call("query", {"metric": metric, "granularity": 60.0, "method": method})
    assert res["ok"], res
    return [(r[0], r[1]) for r in res["result"]["rows"]]


def ceilo_datagram(rid, name, ts_text, volume):
    """An unsigned Ceilometer sample (listen.telemetry_secret is "")."""
    return msgpack.packb({"source": "openstack", "counter_name": name, "counter_type": "gauge",
                          "counter_unit": "%", "counter_volume": volume, "user_id": "u",
                          "project_id": "p", "resource_id": rid, "timestamp": ts_text,
                          "resource_metadata": {}, "message_id": "m"}, use_bin_type=True)


def send_udp(d, datagrams, counter, want):
    before = d.stats()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for dg in datagrams:
        u.sendto(dg, ("127.0.0.1", d.udp_port()))
    u.close()

    def counted():
        st = d.stats()
        done = st["udp.accepted"] - before["udp.accepted"] + \
            sum(st[k] - before[k] for k in st if k.startswith("udp.rejected."))
        return st if done == len(datagrams) else None
    st = wait_for(counted, 15)
    assert st, d.stats()
    assert st[counter] - before[counter] == want, (counter, st)
    return st, before


def test_year_ahead_point_refused_later_points_stored():
    d = S.d
    before = d.stats()
    now = now_ns()
    ahead = now + YEAR_NS + RNG.randrange(NS)
    c = Client(d)
    c.hello()
    c.send(friendly(1, [("fut.a", [[ahead, 1.0]])]))
    a = c.recv()
    assert a["type"] == "ack" and a["accepted"] == 0, a
    assert [(r["index"], r["reason"]) for r in a["rejected"]] == [(0, future_reason(ahead))], a
    # points stamped now, in the minutes before the clock, on both listeners
    t0 = (now // G_NS - 5) * G_NS
    pts = [[t0 + i * G_NS, rand_value(RNG)] for i in range(5)]
    c.send(friendly(2, [("fut.a", pts)]))
    a = c.recv()
    assert a == {"type": "ack", "seq": 2, "accepted": 5, "rejected": []}, a
    c.close()
    # columnar over TCP: a year ahead and just past the bound refused, just
    # within it and now accepted
    now = now_ns()
    ts = [now + YEAR_NS, t0, now + DAY_NS - 60 * NS, now + DAY_NS + 60 * NS, t0 + G_NS]
    c = Client(d, tcp_port=d.tcp_port())
    c.hello()
    c.send(columnar(3, ["fut.b"], ts, [1.0, 2.0, 3.0, 4.0, 5.0], counts=[5]))
    a = c.recv()
    assert [(r["index"], r["reason"]) for r in a["rejected"]] == \
        [(0, future_reason(ts[0])), (3, future_reason(ts[3]))], a
    assert a["accepted"] == 3, a
    c.close()

    flush(d)
    st = d.stats()
    assert st["ingest.points_rejected_future"] - before["ingest.points_rejected_future"] == 3, st
    assert st["ingest.points_rejected"] - before["ingest.points_rejected"] == 3, st
    assert st["engine.late.window"] == before["engine.late.window"], st
    # aggregated: one point a minute bucket, the values stored
    assert rows("fut.a") == [(t, 1.0) for t, _ in pts], rows("fut.a")
    assert rows("fut.a", "last") == [(t, v) for t, v in pts], rows("fut.a", "last")
    got = S.pg.sql("SELECT count(*), max(ts_ns) FROM gpuagg_measures WHERE metric = 'fut.a' "
                   "AND method = 'count'")
    assert got == [["5", str(pts[-1][0])]], got
    assert S.pg.sql("SELECT count(*) FROM late_points l JOIN metrics m ON m.id = l.metric "
                    "WHERE m.name LIKE 'fut.%'") == [["0"]]
    bt = [t for t, _ in rows("fut.b")]
    assert bt == [t0, t0 + G_NS, ((now + DAY_NS - 60 * NS) // G_NS) * G_NS], bt


def test_ceilometer_sample_ahead_refused():
    d = S.d
    now = now_ns()
    ahead = rfc3339(now + YEAR_NS)
    ok = rfc3339((now // G_NS - 3) * G_NS)
    send_udp(d, [ceilo_datagram("vm-f", "cpu_util", ahead, 1.0),
                 ceilo_datagram("vm-f", "cpu_util", ok, 2.0)], "udp.rejected.future", 1)
    # counted as decoded, before the journal: flush until the sample is in
    want = [((now // G_NS - 3) * G_NS, 1.0)]
    assert wait_for(lambda: flush(d) or rows("vm-f/cpu_util") == want, 30), rows("vm-f/cpu_util")


def test_status_late_by_reason_and_bound_reloaded_off():
    """Without the bound (reloaded to 0) a year-ahead point is accepted and
    the metric's later points become late points: `status` shows them by
    reason, as `stats` does, and once the engine has seen the first of
    them the acks list them in `late`."""
    d = S.d
    with open(d.cfg) as f:
        text = f.read()
    assert "max_future_s: 1 day" in text, text
    d.write_config(text.replace("max_future_s: 1 day", "max_future_s: 0"))
    r = d.ctl("reload")
    assert r.returncode == 0, (r, d.logtext()[-2000:])
    before = d.call("status")["result"]["engine"]
    assert set(before["late"]) == {"window", "before_epoch", "nonfinite", "out_of_range"}, before
    now = now_ns()
    c = Client(d)
    c.hello()
    c.send(friendly(4, [("silenced.m", [[now + YEAR_NS, 1.0]])]))
    assert c.recv()["accepted"] == 1
    c.send(friendly(5, [("silenced.m", [[now, 2.0], [now + NS, 3.0]])]))
    a = c.recv()
    # the first late batch leaves before the engine has seen it: its ack
    # cannot know (proto/INGEST.md §3, "late")
    assert a["accepted"] == 2 and not a["rejected"] and "late" not in a, a
    flush(d)
    # the engine has told the door the metric's floor: the next ack lists
    # the points behind it (a rejected NaN first: indices are the batch's)
    floor = (now + YEAR_NS) // G_NS * G_NS
    other = (now // G_NS) * G_NS
    c.send(friendly(6, [("silenced.m", [[now + 2 * NS, float("nan")], [now + 3 * NS, 4.0]]),
                        ("noticed.ok", [[other, 1.0]]),
                        ("silenced.m", [[floor, 5.0], [now + 4 * NS, 6.0]])]))
    a = c.recv()
    why = "behind its metric's window, which takes no point before %sZ: stored as a late " \
        "point, not aggregated" % rfc3339(floor)[:19]
    assert a["accepted"] == 4 and [r["index"] for r in a["rejected"]] == [0], a
    assert [(r["index"], r["reason"]) for r in a["late"]] == [(1, why), (4, why)], a
    c.close()
    flush(d)
    assert d.stats()["ingest.points_late_noticed"] == 2, d.stats()
    assert rows("silenced.m") == [(floor, 2.0)], rows("silenced.m")
    assert rows("noticed.ok") == [(other, 1.0)]
    eng = d.call("status")["result"]["engine"]
    st = d.stats()
    assert eng["late"]["window"] - before["late"]["window"] == 4, (before, eng)
    assert eng["late"]["window"] == st["engine.late.window"], (eng, st)
    assert eng["late_points"] == st["engine.late_points"], (eng, st)
    out = d.ctl("status").stdout
    assert "late" in out and "window" in out, out
    assert S.pg.sql("SELECT count(*) FROM late_points l JOIN metrics m ON m.id = l.metric "
                    "WHERE m.name = 'silenced.m' AND l.reason = 'window'") == [["4"]]
    d.write_config(text)
    assert d.ctl("reload").returncode == 0


def test_bidi_name_refused_others_stored():
    d = S.d
    now = now_ns()
    t0 = (now // G_NS - 10) * G_NS
    bidi = "cpu.ut\u202eil"                        # shows as "cpu.utli"-like text
    good_a = [[t0 + i * G_NS, rand_value(RNG)] for i in range(3)]
    good_b = [[t0 + i * G_NS, rand_value(RNG)] for i in range(2)]
    c = Client(d)
    c.hello()
    c.send(friendly(6, [("name.ok.a", good_a), (bidi, [[t0, 1.0], [t0 + G_NS, 2.0]]),
                        ("name.ok.b", good_b)]))
    a = c.recv()
    why = "metric name contains U+202E (right-to-left override) at byte 6"
    assert [(r["index"], r["reason"]) for r in a["rejected"]] == [(3, why), (4, why)], a
    assert a["accepted"] == 5, a
    # columnar: an isolate and a zero width joiner, the good name between them
    c.send(columnar(7, ["\u2066x\u2069", "name.ok.c", "a\u200db"], [t0, t0, t0 + G_NS, t0],
                    [1.0, 2.0, 3.0, 4.0], index=[0, 1, 1, 2]))
    a = c.recv()
    assert [(r["index"], r["reason"]) for r in a["rejected"]] == [
        (0, "metric name contains U+2066 (left-to-right isolate) at byte 0"),
        (3, "metric name contains U+200D (zero width joiner) at byte 1")], a
    assert a["accepted"] == 2, a
    c.close()
    # Ceilometer: a resource_id with the override is refused, counted
    send_udp(d, [ceilo_datagram("vm\u202e1", "cpu_util", rfc3339(t0), 1.0)],
             "udp.rejected.bad_field", 1)
    flush(d)
    assert rows("name.ok.a", "last") == [(t, v) for t, v in good_a]
    assert rows("name.ok.b", "last") == [(t, v) for t, v in good_b]
    assert rows("name.ok.c") == [(t0, 1.0), (t0 + G_NS, 1.0)]
    names = [r[0] for r in S.pg.sql("SELECT name FROM metrics")]
    assert not [n for n in names if any(ch in n for ch in "\u202e\u2066\u2069\u200d")], names


@pytest.fixture(scope="module", autouse=True)
def suite():
    """setup(): one daemon shared by the tests in order."""
    yield from shared_suite(S, setup)
