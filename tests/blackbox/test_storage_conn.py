"""The daemon with a real PostgreSQL: connects, notices the server going
away, keeps running, and reconnects when it returns."""
import os
import subprocess
import tempfile

from bblib import ROOT, Daemon, wait_for

PG = os.path.join(ROOT, "tools", "pg-private.sh")


def storage_state(d):
    return d.call("status")["result"]["storage"]


def test_connect_lose_reconnect():
    pgdir = tempfile.mkdtemp(prefix="gapg-", dir="/tmp")
    conninfo = subprocess.run([PG, "start", pgdir], capture_output=True, text=True, check=True).stdout.strip()
    try:
        with Daemon(conninfo=conninfo) as d:
            st = wait_for(lambda: (lambda s: s if s["state"] == "connected" else None)(storage_state(d)), 15)
            assert st, d.logtext()
            assert st["server_version"] >= 150000, st
            subprocess.run([PG, "stop", pgdir], check=True)
            st = wait_for(lambda: (lambda s: s if s["state"] in ("down", "connecting") else None)(storage_state(d)), 15)
            assert st and st["last_error"], st
            assert d.proc.poll() is None
            subprocess.run([PG, "start", pgdir], capture_output=True, check=True)
            # The writer reconnects on its own; the health checker (whose
            # counters status shows) follows within its 2 s check interval.
            st = wait_for(lambda: (lambda s: s if s["state"] == "connected" and s["connects"] >= 2
                                   else None)(storage_state(d)), 20)
            assert st, (storage_state(d), d.logtext())
            assert d.stop() == 0
    finally:
        subprocess.run([PG, "stop", pgdir])
