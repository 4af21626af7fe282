"""/metrics, /healthz and /readyz on the HTTP listener, against the real
gpuaggd: /metrics parsed by a real Prometheus text parser (Debian's
python3-prometheus-client) with every series docs/COUNTERS.md's
"Prometheus" section documents present, typed as documented and equal to
`gpuaggctl stats`, and the latency histograms; /readyz flipping when PostgreSQL
stops, when the journal fills and while draining; /healthz staying up
(also while the drain's final commit holds the event loop)."""
import json
import os
import re
import signal
import sys
import time

from apilib import ROOT, HttpDaemon, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ingest"))
from inglib import Client, PrivatePG, columnar, flush  # noqa: E402

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402


def documented():
    """{stats name: (family, labels, type)} of docs/COUNTERS.md's Prometheus series table."""
    out, on = {}, False
    with open(os.path.join(ROOT, "docs", "COUNTERS.md")) as f:
        for line in f:
            if line.startswith("## "):
                on = line.startswith("## Prometheus")
            m = re.match(r"\| `(gpuagg_\w+)(\{[^}]*\})?` \| (\w+) \| `([^`]+)`", line) if on else None
            if m:
                labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
                out[m.group(4)] = (m.group(1), labels, m.group(3))
    assert len(out) > 80, out
    return out


def scrape(d):
    """{(sample name, labels): (family type, value)}; every family has HELP and a type."""
    st, hd, body = d.request("GET", "/metrics")
    assert st == 200, (st, body[:300])
    assert hd["Content-Type"].startswith("text/plain; version=0.0.4"), hd
    out = {}
    for fam in text_string_to_metric_families(body.decode("utf-8")):
        assert fam.documentation and fam.type != "unknown", (fam.name, fam.type, fam.documentation)
        for s in fam.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, "twice: %s" % (key,)
            out[key] = (fam.type, s.value)
    return out


def readyz(d):
    st, j = d.get_json("/readyz")
    assert st in (200, 503) and j["status"] == ("ready" if st == 200 else "not ready"), (st, j)
    return st, j


def test_metrics_every_documented_counter():
    with HttpDaemon() as d:
        d.wait_http()
        live = scrape(d)
        r = d.ctl("--json", "stats")
        assert r.returncode == 0, r
        stats = json.loads(r.stdout)
        docs = documented()
        missing = sorted(n for n, (fam, labels, typ) in docs.items() if (fam, labels) not in live)
        assert not missing, "documented but not in /metrics: %s" % missing
        for name, (fam, labels, typ) in docs.items():
            assert name in stats, "documented for /metrics but not in stats: %s" % name
            assert live[(fam, labels)][0] == typ, (name, fam, live[(fam, labels)], typ)
            assert re.fullmatch(r"gpuagg_[a-z0-9_]+", fam), fam
            assert fam.endswith("_total") == (typ == "counter"), (fam, typ)
        key = lambda n: (docs[n][0], docs[n][1])    # noqa: E731
        assert key("uptime_s") == ("gpuagg_uptime_seconds", frozenset())
        assert key("ingest.bytes_in") == ("gpuagg_received_bytes_total", frozenset({("listener", "stream")}))
        assert key("udp.rejected.bad_signature") == ("gpuagg_udp_rejected_total",
                                                     frozenset({("reason", "bad_signature")}))
        assert key("engine.late.window") == ("gpuagg_engine_late_points_total",
                                             frozenset({("reason", "window")}))
        assert key("engine.feed_ms") == ("gpuagg_engine_feed_seconds_total", frozenset())
        # values: the same counters as gpuaggctl stats (those that do not move by themselves)
        for name in ("gpu.devices", "config.reloads", "udp.datagrams", "journal.segments",
                     "ceilometer_tcp.frames", "storage.connected"):
            assert live[key(name)][1] == stats[name], (name, live[key(name)], stats[name])
        # the histograms: buckets, sum and count; the HTTP one counts the scrapes
        for h in ("gpuagg_ingest_ack_latency_seconds", "gpuagg_storage_commit_lag_seconds",
                  "gpuagg_http_request_duration_seconds"):
            assert (h + "_count", frozenset()) in live and (h + "_sum", frozenset()) in live, h
            assert (h + "_bucket", frozenset({("le", "+Inf")})) in live, h
        n0 = live[("gpuagg_http_request_duration_seconds_count", frozenset())][1]
        ctl = key("ctl.requests")
        again = scrape(d)
        assert again[("gpuagg_http_request_duration_seconds_count", frozenset())][1] > n0, "not timed"
        assert again[ctl][1] == live[ctl][1] + 1, "a scrape is not a control request (one ctl stats above)"
        assert d.stop() == 0


def test_latency_histograms_observe():
    """Acked batches and their commit land in the ack-latency and commit-lag
    histograms, in /metrics and in gpuaggctl stats' summary names."""
    pg = PrivatePG()
    try:
        with HttpDaemon(conninfo=pg.conninfo) as d:
            d.wait_http()
            assert wait_for(lambda: d.call("status")["result"]["engine"]["state"] == "running",
                            timeout=30), d.call("status")
            c, n = feed(d, 2000, per_batch=100)
            for _ in range(n):
                m = c.recv()
                assert m and m["type"] == "ack", m
            c.close()
            flush(d)
            # a second round: the first commit only sets where the worker starts
            c, n = feed(d, 2000, per_batch=100)
            for _ in range(n):
                assert c.recv()["type"] == "ack"
            c.close()
            flush(d)

            def count(h):
                return scrape(d)[(h + "_count", frozenset())][1]
            assert count("gpuagg_ingest_ack_latency_seconds") == 2 * n, scrape(d)
            assert wait_for(lambda: count("gpuagg_storage_commit_lag_seconds") >= 1, timeout=10), \
                d.ctl("stats").stdout
            live = scrape(d)
            h = "gpuagg_storage_commit_lag_seconds"
            assert live[(h + "_bucket", frozenset({("le", "+Inf")}))][1] == live[(h + "_count", frozenset())][1]
            assert 0 < live[(h + "_sum", frozenset())][1] < 60, live[(h + "_sum", frozenset())]
            stats = json.loads(d.ctl("--json", "stats").stdout)
            assert stats["ingest.ack_latency.count"] == 2 * n, stats
            assert 0 < stats["ingest.ack_latency.p50_us"] <= stats["ingest.ack_latency.p99_us"], stats
            assert stats["storage.commit_lag.count"] >= 1 and stats["storage.commit_lag.p99_us"] > 0, stats
            assert d.stop() == 0
    finally:
        pg.stop()


def test_healthz_and_readyz_without_postgres():
    with HttpDaemon() as d:
        d.wait_http()
        st, j = d.get_json("/healthz")
        assert st == 200 and j["status"] == "ok" and j["checks"]["loop"]["ok"] is True, j
        assert j["checks"]["loop"]["round_trip_ms"] < 2000 and j["reasons"] == [], j
        st, j = readyz(d)
        assert st == 503, j
        assert j["checks"]["storage"]["ok"] is False and j["checks"]["journal"]["ok"] is True, j
        assert j["checks"]["draining"]["ok"] is True, j
        assert any(x.startswith("storage (PostgreSQL) is ") for x in j["reasons"]), j
        assert d.stop() == 0


def feed(d, npoints, per_batch=20000):
    c = Client(path=os.path.join(d.tmp, "ingest.sock"))
    c.hello()
    t0 = int(time.time()) * 10**9
    seq = 0
    for k in range(0, npoints, per_batch):
        n = min(per_batch, npoints - k)
        seq += 1
        c.send(columnar(seq, ["m%d" % (i % 50) for i in range(50)],
                        [t0 + (k + i) * 1000 for i in range(n)], [float(i) for i in range(n)],
                        index=[i % 50 for i in range(n)]))
    return c, seq


def test_readyz_journal_full():
    d = HttpDaemon()
    d.write_config(open(d.cfg).read().replace(
        "journal: { dir: %s/journal }" % d.tmp,
        "journal: { dir: %s/journal, segment_bytes: 1MiB, max_bytes: 2MiB }" % d.tmp))
    with d:
        d.wait_http()
        st, j = readyz(d)
        assert j["checks"]["journal"]["ok"] is True and j["checks"]["journal"]["max_bytes"] == 2 << 20, j
        c, n = feed(d, 60000)                  # ~1.5 MB of journal records; storage never commits
        full = wait_for(lambda: (lambda r: r if not r[1]["checks"]["journal"]["ok"] else None)(readyz(d)),
                        timeout=20)
        assert full, readyz(d)
        assert any(x.startswith("journal full: ") for x in full[1]["reasons"]), full
        assert full[1]["checks"]["journal"]["retained_bytes"] > 1 << 20, full
        c.close()


def test_readyz_flips_when_postgres_stops():
    pg = PrivatePG()
    try:
        with HttpDaemon(conninfo=pg.conninfo) as d:
            d.wait_http()
            ok = wait_for(lambda: readyz(d)[0] == 200, timeout=15)
            assert ok, readyz(d)
            st, j = readyz(d)
            assert j["reasons"] == [] and j["checks"]["storage"]["state"] == "connected", j
            # the engine has loaded its state (so the drain below has work to commit)
            assert wait_for(lambda: d.call("status")["result"]["engine"]["state"] == "running",
                            timeout=30), d.call("status")
            pg.stop()
            down = wait_for(lambda: (lambda r: r if r[0] == 503 else None)(readyz(d)), timeout=30)
            assert down, readyz(d)
            assert down[1]["checks"]["storage"]["ok"] is False, down
            assert any("storage (PostgreSQL)" in x for x in down[1]["reasons"]), down
            st, j = d.get_json("/healthz")
            assert st == 200, j
            # Draining: points journaled that storage cannot take, so the
            # drain's final commit waits (up to 30 s) with the loop busy:
            # /readyz says draining, /healthz stays ok.
            c, n = feed(d, 2000, per_batch=1000)
            for _ in range(n):
                m = c.recv()
                assert m and m["type"] == "ack", m
            c.close()
            d.signal(signal.SIGTERM)
            got = wait_for(lambda: (lambda r: r if r[1]["checks"]["draining"]["ok"] is False else None)(
                readyz(d)), timeout=10)
            assert got, d.logtext()[-2000:]
            st, j = got
            assert st == 503 and "draining: the daemon is shutting down" in j["reasons"], j
            assert j["checks"]["draining"]["state"] == "draining", j
            st, j = d.get_json("/healthz")
            assert st == 200 and j["status"] == "ok" and j["checks"]["draining"] is True, j
    finally:
        pg.stop()
