"""docs/COUNTERS.md lists every name `gpuaggctl stats` prints, and no other,
with the kind and unit of its row in the counter table (daemon/stat_table.c);
its section "Prometheus" lists every series a running daemon's /metrics
prints (parsed by prometheus_client), and no other, with the histograms'
buckets.

The names come from a running gpuaggd (`gpuaggctl --json stats`, storage
down: the names do not depend on it) and from the table, which the stats op
packs row by row (daemon/control/control_ops.c ga_ctl_pack_stats).  The
table's rows that read an ingest listener's own counter (source L) are the
names of the listeners' struct listener_counter tables in daemon/ingest/, their
families named by proto/ceilometer.c's reject names or the bad-frame names
of ingest_ceilo_tcp.c: no more, no fewer.  The doc's names are the first
cells of the tables in its section "## `gpuaggctl stats`".  Also: every
field of a running daemon's `status` is in the section "## `gpuaggctl
status`", and every field listed there still exists in the source."""
import glob
import json
import os
import re
import urllib.request

from bblib import GPUAGGD, ROOT, Daemon, free_port
from prometheus_client.parser import text_string_to_metric_families


DOC = os.path.join(ROOT, "docs", "COUNTERS.md")
STATS_HEADING = "## `gpuaggctl stats`"
STATUS_HEADING = "## `gpuaggctl status`"
PROM_HEADING = "## Prometheus: `/metrics`"
KINDS = {"counter", "gauge", "flag"}
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|(.*)\|\s*$")


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def doc_rows(heading):
    """{name: [cells after the first]} for the table rows of one '## ' section."""
    rows, inside, dups = {}, False, []
    with open(DOC, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("## "):
                inside = line.strip() == heading
                continue
            m = ROW.match(line) if inside else None
            if m:
                name = m.group(1)
                if name in rows:
                    dups.append(name)
                rows[name] = [c.strip() for c in m.group(2).split("|")]
    assert rows, "no table rows under %r in %s" % (heading, DOC)
    assert not dups, "listed twice in %s: %s" % (heading, dups)
    return rows


def function_body(src, name):
    """The text of C function `name` (from its name to the closing brace at column 0)."""
    m = re.search(r"^[a-z][^\n]*\b%s\(.*?^\}$" % re.escape(name), src, re.S | re.M)
    assert m, "function %s not found" % name
    return m.group(0)


KIND = re.compile(r"^const struct listener_kind \w+ = \{(.*?)^\};", re.S | re.M)


def listener_kinds():
    """[(file text, key, kind body)] of every ingest listener (daemon/ingest/*.c)."""
    out = []
    for f in sorted(glob.glob(os.path.join(ROOT, "daemon/ingest/*.c"))):
        lsrc = open(f).read()
        for body in KIND.findall(lsrc):
            key = re.search(r'\.key = "([a-z_]+)"', body)
            assert key, "%s: a listener kind without .key" % f
            out.append((lsrc, key.group(1), body))
    keys = [k for _, k, _ in out]
    assert {"unix", "tcp", "udp", "ceilometer_tcp"} <= set(keys), keys
    return out


def listener_tables():
    """[(key, [counter rows])] of every ingest listener: the rows of its
    struct listener_counter table (daemon/ingest/listener.h), each a dict of the
    row's designated fields."""
    out = []
    for lsrc, key, body in listener_kinds():
        m = re.search(r"\.counters = (\w+)", body)
        if not m:
            out.append((key, []))
            continue
        table = re.search(r"static const struct listener_counter %s\[\] = \{(.*?)^\};" % m.group(1),
                          lsrc, re.S | re.M)
        assert table, "listener %s: counters table %s not found" % (key, m.group(1))
        rows = []
        for row in re.findall(r"\{([^{}]*)\}", table.group(1)):
            fields = dict(re.findall(r"\.(\w+) = ([^,]+?)\s*(?:,|$)", row.strip()))
            if fields.get("name") != "NULL":
                rows.append(fields)
        out.append((key, rows))
    return out


def family_names(sub):
    """The member names a counter family's sub function gives, by index."""
    if sub == "ceilo_reject_name":
        names = re.findall(r'\[CEILO_[A-Z_]+\]\s*=\s*"([a-z_]+)"', read("proto/ceilometer.c"))
    elif sub == "bad_name":
        m = re.search(r'bad_names\[[A-Z_]*\]\s*=\s*\{([^}]*)\}',
                      read("daemon/ingest/ingest_ceilo_tcp.c"))
        names = re.findall(r'"([a-z_]+)"', m.group(1)) if m else []
    else:
        raise AssertionError("a counter family named by %s(): teach this test its names" % sub)
    assert names, "no names found for %s" % sub
    return names


def listener_counter_names():
    """"<key>.<name>[.<sub>]" of every ingest listener's own counters: its
    struct listener_counter table (listener.h)."""
    names = set()
    for key, rows in listener_tables():
        for r in rows:
            name = r["name"].strip('"')
            if "n" not in r:
                names.add("%s.%s" % (key, name))
                continue
            members = family_names(r["sub"])
            first = int(r.get("first", "0"))
            names |= {"%s.%s.%s" % (key, name, x) for x in members[first:]}
    assert len(names) > 20, sorted(names)
    return names


def listener_status_fields():
    """The fields listeners_pack_status puts under `status` → ingest: each
    listener's <key>_port (or <key>, its path, without a port hook) and
    <key>_<name> for its counters marked status."""
    out = {key + "_port" if ".port = " in body else key for _, key, body in listener_kinds()}
    for key, rows in listener_tables():
        out |= {"%s_%s" % (key, r["name"].strip('"')) for r in rows if r.get("status") == "1"}
    return out


def flatten(obj, prefix=""):
    """Dotted field names of a status map; entries of an array of maps as name[].field."""
    out = set()
    for k, v in obj.items():
        path = prefix + k
        if isinstance(v, dict):
            out |= flatten(v, path + ".")
        elif isinstance(v, list) and v and all(isinstance(e, dict) for e in v):
            for e in v:
                out |= flatten(e, path + "[].")
        else:
            out.add(path)
    return out


def diff_msg(what, missing_doc, missing_other, other):
    msg = []
    if missing_doc:
        msg.append("%s but not in docs/COUNTERS.md: %s" % (what, ", ".join(sorted(missing_doc))))
    if missing_other:
        msg.append("in docs/COUNTERS.md but not %s: %s" % (other, ", ".join(sorted(missing_other))))
    return "\n".join(msg)


def test_doc_rows_well_formed():
    for name, cells in doc_rows(STATS_HEADING).items():
        assert len(cells) == 3, "%s: want | name | kind | unit | what sets it |, got %r" % (name, cells)
        assert cells[0] in KINDS, "%s: kind %r is not one of %s" % (name, cells[0], sorted(KINDS))
        assert cells[1] and len(cells[2]) > 10, "%s: unit or description empty" % name
    for name, cells in doc_rows(STATUS_HEADING).items():
        assert len(cells) == 2 and cells[0] and len(cells[1]) > 3, "%s: %r" % (name, cells)
        m = re.search(r"as `stats` `([^`]+)`", cells[1])
        if m:
            assert m.group(1) in doc_rows(STATS_HEADING), "%s refers to unknown %s" % (name, m.group(1))


def test_listener_rows_match_listeners():
    """A row reading a listener counter (L) names one that exists, and
    every listener counter has its row: stats prints only the table's."""
    rows = {r["name"] for r in table_rows() if r.get("source") == "L"}
    src = listener_counter_names()
    assert rows == src, "rows with source L vs the listeners' counters: only rows %s, only listeners %s" % (
        sorted(rows - src), sorted(src - rows))
    body = function_body(read("daemon/control/control_ops.c"), "ga_ctl_pack_stats")
    assert not re.findall(r'"[a-z_]+\.[a-z_.]+"', body), "ga_ctl_pack_stats packs a name of its own"


def test_table_matches_doc():
    rows = [r for r in table_rows() if r["kind"] != "histogram"]
    doc = doc_rows(STATS_HEADING)
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names)), "a name twice in daemon/stat_table.c"
    assert set(names) == set(doc), diff_msg("in daemon/stat_table.c", set(names) - set(doc),
                                            set(doc) - set(names), "in daemon/stat_table.c")
    for r in rows:
        assert [r["kind"], r["unit"]] == doc[r["name"]][:2], (r, doc[r["name"]][:2])
    # the Prometheus section: one line per exported row, the same family, labels and type
    series, histos = doc_series()
    want = {(r["prom"], parse_labels(r["labels"])): ("counter" if r["kind"] == "counter" else "gauge",
                                                     r["name"]) for r in rows if r["prom"]}
    assert series == want, "docs Prometheus series vs daemon/stat_table.c: %s" % sorted(
        set(series.items()) ^ set(want.items()), key=str)
    hrows = {r["prom"]: r["name"] for r in table_rows() if r["kind"] == "histogram"}
    assert {k: v[0] for k, v in histos.items()} == hrows, (histos, hrows)


def test_daemon_stats_match_doc():
    assert os.access(GPUAGGD, os.X_OK), "%s not built (make)" % GPUAGGD
    with Daemon() as d:
        r = d.ctl("--json", "stats")
        assert r.returncode == 0, r
        printed = set(json.loads(r.stdout))
        r = d.ctl("stats")                      # the table form prints the same names
        assert r.returncode == 0, r
        table = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
        assert d.stop() == 0, d.logtext()[-2000:]
    assert table == printed, (sorted(table ^ printed))
    doc = set(doc_rows(STATS_HEADING))
    assert printed == doc, diff_msg("printed by gpuaggctl stats", printed - doc, doc - printed,
                                    "printed by gpuaggctl stats")


def table_rows():
    """The rows of daemon/stat_table.c: S(name, kind, unit, prom, labels, scale, source, help)
    and H(name, prom, histogram, help), as dicts."""
    src = read("daemon/stat_table.c")
    cstr = r'"(?:[^"\\]|\\.)*"'
    rows = []
    for m in re.finditer(r'^    S\((%s), STAT_(\w+), (%s), (NULL|%s), (NULL|%s), ([0-9.e-]+), (L|\w+\([^)]*\)),'
                         r'\n\s+(%s)\),$' % (cstr, cstr, cstr, cstr, cstr), src, re.M):
        val = [json.loads(x) if x != "NULL" else None for x in m.group(1, 3, 4, 5, 8)]
        rows.append(dict(name=val[0], kind=m.group(2).lower(), unit=val[1], prom=val[2], labels=val[3],
                         scale=float(m.group(6)), source=m.group(7), help=val[4]))
    for m in re.finditer(r'^    H\((%s), (%s), &(\w+),\n\s+(%s)\),$' % (cstr, cstr, cstr), src, re.M):
        rows.append(dict(name=json.loads(m.group(1)), kind="histogram", unit="seconds",
                         prom=json.loads(m.group(2)), labels=None, scale=1e-9, histo=m.group(3)))
    body = re.search(r"^const struct stat_def stat_table\[\] = \{(.*?)^\};", src, re.S | re.M).group(1)
    assert len(rows) == len(re.findall(r"^    [SH]\(", body, re.M)), "a row this test cannot read"
    return rows


def parse_labels(text):
    return frozenset(re.findall(r'(\w+)="([^"]*)"', text or ""))


def doc_series():
    """{(family, labels): (type, stats name)} of the Prometheus section's series table, and
    {family: (stats stem, [bounds])} of its histograms table."""
    series, histos, inside = {}, {}, False
    with open(DOC, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                inside = line.strip() == PROM_HEADING
                continue
            if not inside:
                continue
            m = re.match(r"^\| `(gpuagg_\w+)(\{[^}]*\})?` \| (\w+) \| `([^`]+)`", line)
            if m:
                key = (m.group(1), parse_labels(m.group(2)))
                assert key not in series, "listed twice: %s" % line
                series[key] = (m.group(3), m.group(4))
                continue
            m = re.match(r"^\| `(gpuagg_\w+)` \| `([^`]+)\.count`[^|]*\| ([0-9., ]+) \|", line)
            if m:
                histos[m.group(1)] = (m.group(2), [float(x) for x in m.group(3).split(",")])
    assert len(series) > 100 and len(histos) >= 3, (len(series), histos)
    return series, histos


def test_daemon_status_fields_documented():
    with Daemon() as d:
        r = d.ctl("--json", "status")
        assert r.returncode == 0, r
        fields = flatten(json.loads(r.stdout))
        assert d.stop() == 0, d.logtext()[-2000:]
    doc = set(doc_rows(STATUS_HEADING))
    missing = fields - doc
    assert not missing, "printed by gpuaggctl status but not in docs/COUNTERS.md: %s" % sorted(missing)
    # The other way: GPU entries appear only with a GPU, so check the source.
    src = (read("daemon/control/control_ops.c") + read("daemon/control/control_ops_jobs_pack.c") +
           read("daemon/cluster.c"))
    quoted = set(re.findall(r'"([a-z_]+)"', src)) | listener_status_fields()
    gone = {f for f in doc if re.split(r"\[\]\.|\.", f)[-1] not in quoted}
    assert not gone, "in docs/COUNTERS.md's status tables but not in the source: %s" % sorted(gone)


def http_daemon():
    """A Daemon with listen.http on a free port (its .port)."""
    d = Daemon(extra="http: { auth: noauth }\n")
    d.port = free_port()
    text = open(d.cfg).read().replace('telemetry_secret: "" }',
                                      'telemetry_secret: "", http: "127.0.0.1:%d" }' % d.port)
    assert "http: \"127.0.0.1:" in text, text
    d.write_config(text)
    return d


def scrape(d):
    """The parsed /metrics of d: [metric family]."""
    import time
    end = time.time() + 10
    while True:
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % d.port, timeout=10) as r:
                assert r.status == 200, r.status
                ctype = r.headers["Content-Type"]
                body = r.read().decode("utf-8")
                break
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.1)
    assert ctype.startswith("text/plain; version=0.0.4"), ctype
    return list(text_string_to_metric_families(body)), body


def test_daemon_metrics_match_doc():
    with http_daemon() as d:
        fams, body = scrape(d)
        stats = json.loads(d.ctl("--json", "stats").stdout)
        assert d.stop() == 0, d.logtext()[-2000:]
    series, histos = doc_series()
    live, lhist = {}, {}
    for fam in fams:
        assert fam.type != "unknown", "untyped (not in daemon/stat_table.c): %s" % fam.name
        assert fam.documentation.strip(), "no HELP: %s" % fam.name
        assert "# TYPE %s" % fam.name in body, fam.name
        if fam.type == "histogram":
            bounds = [float(s.labels["le"]) for s in fam.samples
                      if s.name.endswith("_bucket") and s.labels["le"] != "+Inf"]
            lhist[fam.name] = bounds
            names = {s.name for s in fam.samples}
            assert names == {fam.name + x for x in ("_bucket", "_sum", "_count")}, names
            continue
        for s in fam.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in live, "twice: %s" % (key,)
            live[key] = (fam.type, s.value)
            assert fam.type != "counter" or s.name.endswith("_total"), s.name
            assert fam.type == "counter" or not s.name.endswith("_total"), s.name
    missing = sorted(set(series) - set(live), key=str)
    extra = sorted(set(live) - set(series), key=str)
    assert not missing, "in docs/COUNTERS.md's Prometheus series but not in /metrics: %s" % missing
    assert not extra, "in /metrics but not in docs/COUNTERS.md's Prometheus series: %s" % extra
    for key, (typ, name) in series.items():
        assert live[key][0] == typ, (key, live[key], typ)
    assert {k: v[1] for k, v in histos.items()} == lhist, (histos, lhist)
    # values that do not move by themselves equal gpuaggctl stats'
    by_name = {name: key for key, (typ, name) in series.items()}
    for name in ("gpu.devices", "config.reloads", "udp.rejected.bad_signature", "engine.late.window",
                 "sizing.storage.writers", "journal.segments"):
        assert live[by_name[name]][1] == stats[name], (name, live[by_name[name]], stats[name])
