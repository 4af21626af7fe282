"""The journal's file system fills up (docs/JOURNAL.md "A full file
system"), against the real gpuaggd on a small tmpfs and a private
PostgreSQL.

While the file system is full: the journal is `stalled` in `status` with
the system's message and counted; a batch appended before the failure
waits (it is not lost); a new batch gets an error reply at once that says
why.  When space returns, the journal recovers by itself: the waiting
batch is acknowledged, new batches are, and every acknowledged point is
stored.  Stalled again with a client waiting, SIGTERM still ends the
daemon within storage.stop_timeout_ms + 5 s (docs/gpuaggd.8 SIGNALS), with
exit status 0: the batch that could not be written was never
acknowledged, and everything acknowledged is in PostgreSQL.  Needs root
for mount(8); skips with the reason when it cannot mount."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from inglib import Client, IngestDaemon, PrivatePG, friendly, wait_for

MIB = 1 << 20
STOP_MS = 2000
BOUND_S = STOP_MS / 1000 + 5.0          # + daemon/stop_guard.h STOP_GUARD_GRACE_MS


class S:
    pg = d = None
    tmp = mnt = None
    now = (int(time.time()) // 60) * 60 * 10**9


def fill(path):
    """Write path until the file system is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def journal(d):
    return d.call("status")["result"]["journal"]


def settled(d):
    """Storage committed and released everything: nothing frees space."""
    st = d.call("status")["result"]
    return st["storage"]["lag_journal_bytes"] == 0 and st["journal"]["segments"] == 1


def batch(seq, metric, n=5):
    return friendly(seq, [(metric, [[S.now + i * 10**9, float(i)] for i in range(n)])])


def setup():
    S.tmp = tempfile.mkdtemp(prefix="gajfull-")
    S.mnt = os.path.join(S.tmp, "jfs")
    os.makedirs(S.mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", S.mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        S.mnt = None
        return "cannot mount a tmpfs (%s)" % r.stderr.strip()
    S.pg = PrivatePG()
    S.d = IngestDaemon(conninfo=S.pg.conninfo, storage={"flush_interval_ms": 100,
                                                        "stop_timeout_ms": STOP_MS},
                       journal={"dir": S.mnt + "/journal", "segment_bytes": "1MiB",
                                "max_bytes": "64MiB", "fsync_interval_ms": 5})
    S.d.start()
    assert wait_for(lambda: S.d.call("status")["result"]["engine"]["state"] == "running", 30), \
        S.d.logtext()[-3000:]
    return None


def test_full_then_recovered():
    d = S.d
    c0 = Client(d)
    c0.hello()
    c0.send(batch(1, "jf.before"))
    assert c0.recv()["type"] == "ack"
    assert wait_for(lambda: settled(d), 30), d.call("status")
    fill(os.path.join(S.mnt, "filler"))
    before = d.stats()

    a = Client(d)                       # appended before the failure: waits
    a.hello()
    a.send(batch(2, "jf.a", 2000))
    assert wait_for(lambda: journal(d)["state"] == "stalled", 10), journal(d)
    j = journal(d)
    assert j["error"] == "No space left on device", j
    a.s.settimeout(0.5)
    try:
        got = a.recv()
        raise AssertionError("ack while the journal cannot write: %r" % got)
    except OSError:
        pass
    a.s.settimeout(10)

    b = Client(d)                       # arrives during the failure: refused, says why
    b.hello()
    b.send(batch(3, "jf.b", 2000))
    e = b.recv()
    assert e["type"] == "error" and "No space left on device" in e["message"] and \
        "resend" in e["message"], e
    st = d.stats()
    assert st["journal.stalled"] == 1 and st["journal.write_failures"] > before[
        "journal.write_failures"], st
    assert st["pipeline.journal_stall_refusals"] >= 1, st

    os.unlink(os.path.join(S.mnt, "filler"))      # space returns
    got = a.recv()
    assert got["type"] == "ack" and got["seq"] == 2 and got["accepted"] == 2000, got
    assert wait_for(lambda: journal(d)["state"] == "ok", 10), journal(d)
    c = Client(d)
    c.hello()
    c.send(batch(4, "jf.c"))
    assert c.recv()["type"] == "ack"
    r = d.ctl("flush", timeout=60)
    assert r.returncode == 0, (r, d.logtext()[-3000:])
    for m in ("jf.before", "jf.a", "jf.c"):
        n = S.pg.sql("SELECT count(*) FROM bucket_rows b JOIN metrics m ON m.id = b.metric "
                     "WHERE m.name = '%s'" % m)
        assert n != [["0"]], (m, n)
    assert S.pg.sql("SELECT count(*) FROM metrics WHERE name = 'jf.b'") == [["0"]]
    assert "journal_recovered" in d.logtext()
    for x in (c0, a, b, c):
        x.close()


def test_sigterm_while_stalled():
    d = S.d
    assert wait_for(lambda: settled(d), 30), d.call("status")
    fill(os.path.join(S.mnt, "filler"))
    w = Client(d)
    w.hello()
    w.send(batch(5, "jf.w", 2000))
    assert wait_for(lambda: journal(d)["state"] == "stalled", 10), journal(d)
    # its record stays appended, never durable: the engine must not wait for it
    w.close()
    t0 = time.time()
    d.signal(signal.SIGTERM)
    try:
        rc = d.proc.wait(BOUND_S + 30)
    except subprocess.TimeoutExpired:
        d.proc.kill()
        d.proc.wait()
        raise AssertionError("gpuaggd did not stop on SIGTERM with the journal stalled:\n" +
                             d.logtext()[-3000:])
    took = time.time() - t0
    print("journal stalled: exit %d after %.2f s (bound %.1f s)" % (rc, took, BOUND_S))
    assert took <= BOUND_S + 0.5, (took, d.logtext()[-3000:])
    assert rc == 0, (rc, d.logtext()[-3000:])
    os.unlink(os.path.join(S.mnt, "filler"))


@pytest.fixture(scope="module", autouse=True)
def suite():
    """setup(): a tmpfs journal and one daemon shared by the tests in order;
    without a tmpfs (mount needs root) every test is skipped with the reason."""
    try:
        why = setup()
        if why:
            pytest.skip(why)
        yield
    finally:
        if S.d and S.d.proc and S.d.proc.poll() is None:
            S.d.proc.kill()
            S.d.proc.wait()
        if S.pg:
            S.pg.stop()
        if S.mnt:
            subprocess.run(["umount", "-l", S.mnt], capture_output=True)
        if S.tmp:
            shutil.rmtree(S.tmp, ignore_errors=True)
