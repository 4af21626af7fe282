"""etc/grafana/gpuagg.json, the Grafana dashboard: valid JSON, every panel
with PromQL targets, and every gpuagg_ series its expressions name is in a
running gpuaggd's /metrics (parsed by prometheus_client), with the label
values its exact matchers ask for.  A renamed counter fails here instead
of leaving an empty panel."""
import json
import os
import re
import socket
import time
import urllib.request

from bblib import ROOT, Daemon
from prometheus_client.parser import text_string_to_metric_families

DASH = os.path.join(ROOT, "etc", "grafana", "gpuagg.json")
SELECTOR = re.compile(r"\b(gpuagg_[a-zA-Z0-9_]+)(\{([^}]*)\})?")
MATCHER = re.compile(r'(\w+)\s*(=~|!=|!~|=)\s*"([^"]*)"')


def panels(dash):
    """Every panel, rows' nested panels included."""
    for p in dash["panels"]:
        yield p
        for q in p.get("panels", []):
            yield q


def expressions():
    """[(panel title, expr)] of every target of every panel but rows."""
    with open(DASH, encoding="utf-8") as f:
        dash = json.load(f)
    out = []
    for p in panels(dash):
        if p["type"] == "row":
            continue
        targets = p.get("targets") or []
        assert targets, "panel %r has no query" % p.get("title")
        for t in targets:
            assert t.get("expr"), "panel %r: a target without expr" % p["title"]
            out.append((p["title"], t["expr"]))
    return out


def live_series():
    """{sample name: [labels dict]} of a running daemon's /metrics."""
    d = Daemon(extra="http: { auth: noauth }\n")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    d.write_config(open(d.cfg).read().replace('telemetry_secret: "" }',
                                              'telemetry_secret: "", http: "127.0.0.1:%d" }' % port))
    with d:
        end = time.time() + 10
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
                    body = r.read().decode("utf-8")
                break
            except OSError:
                if time.time() > end:
                    raise
                time.sleep(0.1)
        assert d.stop() == 0, d.logtext()[-2000:]
    out = {}
    for fam in text_string_to_metric_families(body):
        for smp in fam.samples:
            out.setdefault(smp.name, []).append(smp.labels)
    return out


def test_dashboard_is_sound():
    exprs = expressions()
    titles = {t for t, _ in exprs}
    for want in ("Ingest rate", "Acks and rejections", "Ack latency", "Commit lag", "API latency",
                 "Journal fill", "Partition worker load"):
        assert want in titles, "no panel %r: %s" % (want, sorted(titles))
    for title, e in exprs:
        assert SELECTOR.search(e), "panel %r: no gpuagg_ series in %r" % (title, e)
        assert e.count("(") == e.count(")"), "panel %r: unbalanced %r" % (title, e)
        if "histogram_quantile" in e:
            assert "_bucket" in e and "by (le)" in e, "panel %r: %r" % (title, e)


def test_dashboard_series_exist():
    live = live_series()
    bad = []
    for title, e in expressions():
        for m in SELECTOR.finditer(e):
            name, matchers = m.group(1), m.group(3)
            if name not in live:
                bad.append("%s: %s not in /metrics" % (title, name))
                continue
            for label, op, value in MATCHER.findall(matchers or ""):
                if op == "=" and not any(lb.get(label) == value for lb in live[name]):
                    bad.append('%s: %s{%s="%s"} not in /metrics' % (title, name, label, value))
        for label in re.findall(r"by \(([^)]*)\)", e):
            for lab in (x.strip() for x in label.split(",")):
                names = [m.group(1) for m in SELECTOR.finditer(e) if m.group(1) in live]
                if lab != "le" and not any(lab in lb for n in names for lb in live[n]):
                    bad.append("%s: no series of %s has the label %s" % (title, names, lab))
    assert not bad, "\n".join(bad)
