"""Daemon lifecycle against the real gpuaggd: start, status over the socket,
SIGHUP with good and bad files, sd_notify, drain on SIGTERM, backgrounding."""
import json
import os
import signal
import socket
import stat
import subprocess
import tempfile
import time

from bblib import GPUAGGD, ROOT, Daemon, config_text, recv, send, wait_for


def test_check_config_ok_and_bad():
    r = subprocess.run([GPUAGGD, "--check-config", os.path.join(ROOT, "etc/gpuaggd.yaml")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "storage.writers" in r.stdout and "journal.max_bytes" in r.stdout, r.stdout  # the sizing here
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write("control: { socket: /tmp/x.sock }\nlisten:\n  tcp: \"127.0.0.1:99999\"\n")
    r = subprocess.run([GPUAGGD, "--check-config", f.name], capture_output=True, text=True)
    assert r.returncode == 1, r
    assert "%s:3" % f.name in r.stderr and "listen.tcp" in r.stderr, r.stderr
    os.unlink(f.name)


def test_start_status_storage_down():
    with Daemon() as d:
        st = d.call("status")
        assert st["ok"] is True and st["id"] == 1, st
        res = st["result"]
        assert res["state"] == "running", res
        assert res["pid"] == d.proc.pid
        assert res["backends"][0]["backend"] == "cpu"
        # PostgreSQL is not there: the daemon runs anyway and says why.
        res = wait_for(lambda: (lambda r: r if r["storage"]["state"] == "down" else None)(
            d.call("status")["result"]), timeout=10)
        assert res, d.logtext()
        assert res["storage"]["last_error"], res["storage"]
        assert res["storage"]["attempts"] >= 1
        mode = stat.S_IMODE(os.stat(d.sock).st_mode)
        assert mode == 0o660, oct(mode)
        assert d.stop() == 0
        assert not os.path.exists(d.sock), "control socket left behind"


def test_cli_status_and_json():
    with Daemon() as d:
        r = d.ctl("status")
        assert r.returncode == 0 and "running" in r.stdout and "storage" in r.stdout, r
        r = d.ctl("--json", "status")
        assert r.returncode == 0, r
        j = json.loads(r.stdout)
        assert j["state"] == "running" and j["version"]
        r = d.ctl("stats", "--json")
        assert r.returncode == 0 and "ctl.requests" in json.loads(r.stdout), r
        r = d.ctl("ping")
        assert r.returncode == 0, r


def test_status_shows_sizing():
    """The keys sized by the machine: what auto came to and why, in status,
    stats and the log; a number in the file is 'set'."""
    ncpu = os.sysconf("SC_NPROCESSORS_ONLN")
    with Daemon(extra="limits: { max_metrics: 5000 }\n") as d:
        sizing = {e["key"]: e for e in d.call("status")["result"]["sizing"]}
        assert list(sizing) == ["storage.writers", "journal.max_bytes", "limits.max_metrics",
                                "engine.workers"], sizing
        w = sizing["storage.writers"]
        assert w["source"] == "auto" and w["value"] == min(max(ncpu, 4), 16), w
        assert w["reason"].startswith("%d CPU" % ncpu), w
        j = sizing["journal.max_bytes"]
        assert j["source"] == "auto" and j["value"] >= 256 << 20 and j["reason"], j
        assert sizing["limits.max_metrics"] == {"key": "limits.max_metrics", "value": 5000, "source": "set",
                                                "reason": "set in the config (line 6)"}, sizing
        e = sizing["engine.workers"]
        assert e["source"] == "auto" and e["value"] == min(max(ncpu // 4, 1), 16), e
        st = d.call("status")["result"]
        assert st["journal"]["max_bytes"] == j["value"], st["journal"]
        stats = d.call("stats")["result"]
        assert stats["sizing.journal.max_bytes"] == j["value"], stats
        assert stats["sizing.storage.writers.auto"] == 1 and stats["sizing.limits.max_metrics.auto"] == 0
        assert d.call("config.get")["result"]["storage"]["writers"] == w["value"]
        r = d.ctl("status")                     # the tree form names them with the reason
        assert r.returncode == 0 and "sizing:" in r.stdout and w["reason"] in r.stdout, r.stdout
        assert "event=sizing key=storage.writers value=%d source=auto" % w["value"] in d.logtext()
        # An unchanged file reloaded: auto against what it came to is no change.
        r = d.ctl("--json", "reload")
        assert r.returncode == 0 and json.loads(r.stdout)["restart_needed"] == [], r
        # limits.max_metrics is reloaded: auto again is one metric a KiB of a quarter of the memory.
        d.write_config(open(d.cfg).read().replace("max_metrics: 5000", "max_metrics: auto"))
        r = d.ctl("--json", "reload")
        assert r.returncode == 0 and json.loads(r.stdout)["restart_needed"] == [], r
        m = {e["key"]: e for e in d.call("status")["result"]["sizing"]}["limits.max_metrics"]
        phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        assert m["source"] == "auto" and m["value"] == phys // 4 // 1024, m
        assert "a quarter of" in m["reason"] and "RAM" in m["reason"], m
        assert d.stop() == 0


def test_sighup_bad_file_keeps_old_config():
    with Daemon() as d:
        before = d.call("config.get")["result"]
        good = open(d.cfg).read()
        d.write_config(good + "bogus_key: 1\n")
        d.signal(signal.SIGHUP)
        res = wait_for(lambda: (lambda r: r if r["counters"]["reload_failures"] == 1 else None)(
            d.call("status")["result"]))
        assert res, d.logtext()
        assert "bogus_key" in res["last_reload_error"], res["last_reload_error"]
        assert d.proc.poll() is None
        assert d.call("config.get")["result"] == before
        assert "reload_refused" in d.logtext()
        # The CLI reload says so too, exit 1.
        r = d.ctl("reload")
        assert r.returncode == 1 and "bogus_key" in r.stderr, r
        # A good file with a changed log level and socket: level applies, socket needs restart.
        d.write_config(good.replace("level: info", "level: debug").replace(
            "control.sock", "control2.sock"))
        r = d.ctl("--json", "reload")
        assert r.returncode == 0, r
        j = json.loads(r.stdout)
        assert j["reloaded"] is True and "control.socket" in j["restart_needed"], j
        cfg = d.call("config.get")["result"]
        assert cfg["log"]["level"] == "debug", cfg["log"]
        assert d.stop() == 0


def test_protocol_errors_keep_daemon_alive():
    with Daemon() as d:
        # Unknown op: an error naming it; the connection stays usable.
        s = d.connect()
        send(s, "no.such.op", None, 7)
        r = recv(s)
        assert r["ok"] is False and r["id"] == 7 and "no.such.op" in r["error"]["message"], r
        assert r["error"]["name"] == "EBADOP"
        send(s, "ping", None, 8)
        assert recv(s)["id"] == 8
        # Pipelining: three requests in one write, three answers in order.
        import msgpack
        s.sendall(b"".join(msgpack.packb({"id": i, "op": "ping"}) for i in (10, 11, 12)))
        import msgpack as mp
        up = mp.Unpacker(raw=False)
        ids = [recv(s, up)["id"] for _ in range(3)]
        assert ids == [10, 11, 12], ids
        # A request split into single bytes.
        for b in msgpack.packb({"id": 13, "op": "ping"}):
            s.sendall(bytes([b]))
            time.sleep(0.001)
        assert recv(s, up)["id"] == 13
        s.close()
        # Garbage (0xc1 is never valid msgpack): error with id 0, then close.
        s = d.connect()
        s.sendall(b"\xc1\x00\x01")
        r = recv(s)
        assert r["ok"] is False and r["id"] == 0 and r["error"]["name"] == "EPROTO", r
        assert s.recv(10) == b"", "connection not closed after a malformed frame"
        s.close()
        # Not a map / missing op.
        s = d.connect()
        s.sendall(msgpack.packb([1, 2, 3]))
        r = recv(s)
        assert r["ok"] is False and r["error"]["message"], r
        s.close()
        # Oversized frame: a str32 header declaring 100 MiB.
        s = d.connect()
        s.sendall(b"\xdb" + (100 << 20).to_bytes(4, "big") + b"x" * 100)
        r = recv(s)
        assert r["ok"] is False and r["error"]["name"] == "ETOOBIG", r
        s.close()
        assert d.call("ping")["ok"] is True
        st = d.call("status")["result"]["counters"]
        assert st["ctl_protocol_errors"] >= 3, st
        assert d.stop() == 0


def test_sd_notify_and_watchdog():
    tmp = tempfile.mkdtemp(prefix="ganotify-")
    path = os.path.join(tmp, "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(path)
    ns.settimeout(10)
    msgs = []

    def until(word):
        while True:
            m = ns.recv(4096).decode()
            msgs.append(m)
            if word in m:
                return m

    d = Daemon(env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"})
    with d:
        until("READY=1")
        t0 = time.time()
        until("WATCHDOG=1")
        until("WATCHDOG=1")
        assert time.time() - t0 < 1.0, "watchdog pings should come every ~100 ms"
        d.signal(signal.SIGHUP)
        until("RELOADING=1")
        until("READY=1")
        d.signal(signal.SIGTERM)
        until("STOPPING=1")
        assert d.proc.wait(15) == 0
    assert any(m.startswith("STATUS=") or "\nSTATUS=" in m for m in msgs), msgs
    ns.close()


def test_sigint_and_shutdown_op_exit_zero():
    with Daemon() as d:
        d.signal(signal.SIGINT)
        assert d.proc.wait(15) == 0
    with Daemon() as d:
        r = d.ctl("shutdown")
        assert r.returncode == 0, r
        assert d.proc.wait(15) == 0


def test_second_daemon_refuses_live_socket():
    with Daemon() as d:
        r = subprocess.run([GPUAGGD, "--config", d.cfg, "--foreground"], capture_output=True,
                           text=True, timeout=20)
        assert r.returncode == 1, r
        assert "in use" in r.stderr, r.stderr
        assert d.call("ping")["ok"] is True


def test_background_mode():
    tmp = tempfile.mkdtemp(prefix="gabg-")
    cfg = os.path.join(tmp, "c.yaml")
    with open(cfg, "w") as f:
        f.write(config_text(tmp))
    log = open(os.path.join(tmp, "log"), "wb")
    r = subprocess.run([GPUAGGD, "--config", cfg], stderr=log, timeout=20)
    assert r.returncode == 0, open(os.path.join(tmp, "log")).read()
    d = Daemon()
    d.sock = os.path.join(tmp, "control.sock")
    st = d.call("status")["result"]
    pid = st["pid"]
    os.kill(pid, signal.SIGTERM)
    assert wait_for(lambda: not os.path.exists("/proc/%d" % pid) or
                    open("/proc/%d/stat" % pid).read().split()[2] == "Z", timeout=15)


def test_cli_cannot_connect_exit_3():
    r = subprocess.run([os.path.join(ROOT, "build/bin/gpuaggctl"), "--socket",
                        "/nonexistent/gpuagg.sock", "status"], capture_output=True, text=True)
    assert r.returncode == 3, r
    assert "/nonexistent/gpuagg.sock" in r.stderr and "is the daemon running" in r.stderr, r.stderr
