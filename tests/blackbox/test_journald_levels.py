"""journald levels against the real gpuaggd: with JOURNAL_STREAM naming its
stderr (as systemd sets it for StandardError=journal) every line starts with
a syslog priority "<N>"; the lines are then read the way journald reads a
stream (systemd's syslog_parse_priority: "<" 1-3 digits ">", LOG_PRI) and
filtered like `journalctl -p err` / `-p warning`; every line, prefix
stripped, must parse as logfmt key=value, quoted values with quotes and
backslashes in them included."""
import os
import re
import signal
import socket

from bblib import Daemon, config_text, wait_for


PRIORITY = {"debug": 7, "info": 6, "warn": 4, "error": 3}


def journald_priority(line):
    """(priority, rest) as journald's stream reader takes them; (None, line)
    when the line has no valid prefix (journald would use the default, 6)."""
    m = re.match(r"<(\d{1,3})>", line)
    if not m:
        return None, line
    return int(m.group(1)) & 7, line[m.end():]


TOKEN = re.compile(r'([A-Za-z0-9_.\-]+)=("(?:[^"\\]|\\.)*"|[^ "]*)(?: |$)')


def logfmt(line):
    """Parse a whole line of key=value fields; raise if any part does not
    parse.  Quoted values are unescaped."""
    out, pos = {}, 0
    while pos < len(line):
        m = TOKEN.match(line, pos)
        assert m, "not key=value at column %d: %r" % (pos, line)
        v = m.group(2)
        if v.startswith('"'):
            v = re.sub(r'\\x([0-9a-f]{2})|\\(.)',
                       lambda g: chr(int(g.group(1), 16)) if g.group(1) else
                       {"n": "\n", "t": "\t", "r": "\r"}.get(g.group(2), g.group(2)), v[1:-1])
        out[m.group(1)] = v
        pos = m.end()
    return out


def journal_daemon(extra=""):
    d = Daemon(extra=extra)
    d.write_config(config_text(d.tmp, extra=extra).replace("level: info", "level: debug"))
    open(d.log, "ab").close()
    st = os.stat(d.log)
    d.env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
    d.env.pop("GA_LOG_NO_TS", None)
    return d


def test_priorities_and_logfmt():
    d = journal_daemon()
    with d:
        # warn: a bad frame on the ingest socket (ingest_error msg="...")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(os.path.join(d.tmp, "ingest.sock"))
        s.sendall(b"\xc1garbage")
        s.settimeout(5)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
        s.close()
        # error: a reload of a file whose error message holds quotes
        good = open(d.cfg).read()
        d.write_config(good.replace("level: debug", 'level: "lo\\"ud \\\\ x"'))
        d.signal(signal.SIGHUP)
        assert wait_for(lambda: "reload_refused" in d.logtext(), timeout=10), d.logtext()
        assert d.stop() == 0
    lines = [l for l in d.logtext().split("\n") if l]
    assert len(lines) > 5, lines
    seen = {}
    for l in lines:
        pri, rest = journald_priority(l)
        assert pri is not None, "no priority prefix: %r" % l
        kv = logfmt(rest)
        assert "ts" not in kv, "ts= written although journald stamps lines: %r" % l
        assert PRIORITY[kv["level"]] == pri, l
        seen.setdefault(kv["event"], (pri, kv))
    # journalctl -p err: exactly the error lines; -p warning adds the warnings
    err = [l for l in lines if journald_priority(l)[0] <= 3]
    warn = [l for l in lines if journald_priority(l)[0] <= 4]
    assert err and all("level=error" in l for l in err), err
    assert any("event=reload_refused" in l for l in err), err
    assert any("event=ingest_error" in l for l in warn), warn
    assert not any("event=ingest_error" in l for l in err)
    pri, kv = seen["reload_refused"]
    assert 'lo"ud \\ x' in kv["error"], kv      # the value round-trips through the escaping
    assert seen["starting"][0] == 6 and seen["ingest_error"][0] == 4


def test_no_prefix_without_journal():
    """JOURNAL_STREAM set but naming another file (a child of a unit whose
    stderr was redirected): no prefix."""
    d = Daemon()
    other = os.stat(d.tmp)
    d.env["JOURNAL_STREAM"] = "%d:%d" % (other.st_dev, other.st_ino)
    with d:
        assert d.stop() == 0
    lines = [l for l in d.logtext().split("\n") if l]
    assert lines and all(l.startswith("level=") for l in lines), lines
    for l in lines:
        logfmt(l)
