#!/usr/bin/env python3
"""Helpers of tools/gpu-host/bench_host.sh (pure Python + msgpack; msgpack's
pure-Python fallback is enough).

  visprobe.py probe --ingest SOCK --psql PSQL --pghost DIR --db DB [--count N]
                    [--interval S] [--poll S] [--metric NAME] [--grace S] [--out F]
      Ack-to-visible latency.  Every --interval seconds send a batch of one
      point (friendly form) for --metric with a timestamp of its own (whole
      seconds apart, so each lands in its own 1 s bucket), note the time its
      ack arrives; a second thread polls PostgreSQL (one long-lived psql, the
      view gpuagg_measures, method count, granularity 1 s) every --poll
      seconds and notes when each probe's bucket appears (a first, uncounted
      probe creates the metric and must be visible before the others go).  Reports
      visible - ack (p50/p90/p99/max, ms) and the send -> ack time.  A
      probe's visible time is the start of the first poll that saw it, so
      the figure is late by at most one poll interval plus the query's time.
  visprobe.py sockcopy [--mib N]
      Copy N MiB (default 2048) through a Unix stream socketpair between two
      processes in 1 MiB writes and reads; prints {"mb_per_s": ...}.
  visprobe.py jobwatch --socket CTL [--timeout S] [--out F]
      Poll job.list on the control socket every 20 ms until the newest job
      is finished; record when its progress first moved (the CSV was read
      and the first batch fed: the `resample` job reports progress only
      after each engine feed) and when it reached 90 % (every batch fed; the
      last 10 % is sorting and printing the rows).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

import msgpack


def pct(xs, q):
    """Nearest-rank percentile of a sorted list."""
    if not xs:
        return None
    k = max(0, min(len(xs) - 1, int(-(-q * len(xs) // 100)) - 1))
    return xs[k]


def recv_obj(sock, up):
    while True:
        for obj in up:
            return obj
        data = sock.recv(65536)
        if not data:
            raise EOFError("connection closed")
        up.feed(data)


class Psql:
    """One psql process; run() sends a query and reads its rows."""

    def __init__(self, psql, host, db):
        self.p = subprocess.Popen([psql, "-X", "-h", host, "-U", "postgres", "-d", db, "-Atq",
                                   "-v", "ON_ERROR_STOP=0"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.n = 0

    def run(self, sql):
        self.n += 1
        mark = "__visprobe_end_%d__" % self.n
        self.p.stdin.write(sql.rstrip().rstrip(";") + ";\n\\echo " + mark + "\n")
        self.p.stdin.flush()
        rows = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise EOFError("psql exited")
            line = line.rstrip("\n")
            if line == mark:
                return rows
            rows.append(line)

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(5)
        except Exception:
            self.p.kill()


def cmd_probe(a):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(a.ingest)
    up = msgpack.Unpacker(raw=False)
    s.sendall(msgpack.packb({"type": "hello", "version": 1, "client": "visprobe"}))
    hello = recv_obj(s, up)
    if hello.get("type") != "hello":
        sys.exit("visprobe: server answered %r" % (hello,))
    base = (time.time_ns() // 10**9) * 10**9
    db = Psql(a.psql, a.pghost, a.db)
    db.run("SELECT 1")
    lock = threading.Lock()
    pending = {}            # ts_ns -> (k, t_send, t_ack)
    done = []               # (k, t_send, t_ack, t_visible)
    poll_times = []
    errors = []
    sending = [True]

    def poller():
        while True:
            with lock:
                if not pending and not sending[0]:
                    return
                lo, hi = (min(pending), max(pending)) if pending else (None, None)
            if lo is not None:
                t_q = time.monotonic()
                try:
                    rows = db.run("SELECT ts_ns FROM gpuagg_measures WHERE metric = '%s' AND "
                                  "method = 'count' AND granularity_s = 1 AND ts_ns >= %d AND "
                                  "ts_ns <= %d" % (a.metric, lo, hi))
                except Exception as e:      # psql died: give up polling
                    errors.append("psql: %s" % e)
                    return
                t_r = time.monotonic()
                poll_times.append(t_r - t_q)
                with lock:
                    for r in rows:
                        try:
                            ts = int(r)
                        except ValueError:
                            errors.append("psql: " + r)
                            continue
                        if ts in pending:
                            k, t_send, t_ack = pending.pop(ts)
                            done.append((k, t_send, t_ack, t_q))
                    if not sending[0] and pending and time.monotonic() > deadline[0]:
                        return
            time.sleep(a.poll)

    # Warm-up: the first point of the metric also creates it in PostgreSQL;
    # wait until it is visible before measuring (not counted).
    warm = None
    s.sendall(msgpack.packb({"type": "points", "seq": 1, "metrics": [
        {"metric": a.metric, "points": [[base, 0.0]]}]}))
    recv_obj(s, up)
    tw = time.monotonic()
    while time.monotonic() < tw + a.grace:
        if db.run("SELECT 1 FROM gpuagg_measures WHERE metric = '%s' AND method = 'count' AND "
                  "granularity_s = 1 AND ts_ns = %d" % (a.metric, base)):
            warm = time.monotonic() - tw
            break
        time.sleep(a.poll)
    base += 10**9
    deadline = [float("inf")]
    th = threading.Thread(target=poller, daemon=True)
    th.start()
    t0 = time.monotonic()
    acks = []
    try:
        for k in range(a.count):
            wake = t0 + k * a.interval
            now = time.monotonic()
            if wake > now:
                time.sleep(wake - now)
            ts = base + k * 10**9
            msg = {"type": "points", "seq": k + 2,
                   "metrics": [{"metric": a.metric, "points": [[ts, float(k + 1)]]}]}
            t_send = time.monotonic()
            with lock:
                pending[ts] = (k, t_send, None)
            s.sendall(msgpack.packb(msg))
            ack = recv_obj(s, up)
            t_ack = time.monotonic()
            if ack.get("type") != "ack" or ack.get("accepted") != 1:
                errors.append("probe %d: %r" % (k, ack))
                with lock:
                    pending.pop(ts, None)
                continue
            acks.append(t_ack - t_send)
            with lock:
                if ts in pending:
                    pending[ts] = (k, t_send, t_ack)
                else:                       # seen before its ack was read: visible at once
                    for i, d in enumerate(done):
                        if d[0] == k:
                            done[i] = (k, t_send, t_ack, max(d[3], t_ack))
    except Exception as e:
        errors.append("send: %s" % e)
    with lock:
        sending[0] = False
        deadline[0] = time.monotonic() + a.grace
    th.join(a.grace + 30)
    db.close()
    s.close()
    lat = sorted((d[3] - d[2]) * 1e3 for d in done if d[2] is not None)
    ackl = sorted(x * 1e3 for x in acks)
    out = {
        "warmup_visible_s": warm,
        "probes_sent": a.count, "acked": len(acks), "visible": len(lat),
        "missing": a.count - len(lat), "interval_s": a.interval, "poll_s": a.poll,
        "visible_minus_ack_ms": {"p50": pct(lat, 50), "p90": pct(lat, 90), "p99": pct(lat, 99),
                                 "max": lat[-1] if lat else None,
                                 "min": lat[0] if lat else None},
        "send_to_ack_ms": {"p50": pct(ackl, 50), "p99": pct(ackl, 99),
                           "max": ackl[-1] if ackl else None},
        "poll_query_ms_mean": (sum(poll_times) / len(poll_times) * 1e3) if poll_times else None,
        "polls": len(poll_times), "errors": errors[:20],
        "samples_ms": [round(x, 3) for x in lat],
        # per probe: [k, ack time since the first send (s), visible - ack (ms)]
        "probes": [[d[0], round(d[2] - t0, 3), round((d[3] - d[2]) * 1e3, 3)]
                   for d in sorted(done) if d[2] is not None],
    }
    text = json.dumps(out)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0 if len(lat) >= min(a.count, 100) and not errors else 1


def cmd_sockcopy(a):
    chunk = 1 << 20
    total = a.mib * chunk
    p, c = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        p.close()
        buf = b"\x5a" * chunk
        try:
            for _ in range(a.mib):
                c.sendall(buf)
        finally:
            c.close()
            os._exit(0)
    c.close()
    buf = bytearray(chunk)
    view = memoryview(buf)
    got = 0
    while True:
        n = p.recv_into(view)
        if not n:
            break
        got += n
    t = time.monotonic() - t0
    os.waitpid(pid, 0)
    p.close()
    out = {"bytes": got, "seconds": round(t, 4), "mb_per_s": round(got / t / 1e6, 1)}
    print(json.dumps(out))
    return 0 if got == total else 1


def cmd_jobwatch(a):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(a.socket)
    up = msgpack.Unpacker(raw=False)
    rid = 0
    first_move = t90 = None
    job = None
    t_watch = time.time_ns() - 2 * 10**9   # jobs submitted before the watch began are not ours
    end = time.time() + a.timeout
    last = None
    while time.time() < end:
        rid += 1
        s.sendall(msgpack.packb({"id": rid, "op": "job.list"}))
        r = recv_obj(s, up)
        now = time.time_ns()
        jobs = [j for j in (r.get("result") or []) if j.get("submitted_ns", 0) >= t_watch]
        if jobs:
            j = jobs[0]                     # newest first
            if job is None or j["id"] != job:
                job, first_move, t90 = j["id"], None, None
            last = j
            prog = j.get("progress") or 0
            if first_move is None and prog > 0:
                first_move = now
            if t90 is None and prog >= 90:
                t90 = now
            if j["state"] in ("done", "failed", "cancelled"):
                break
        time.sleep(0.02)
    s.close()
    out = {"job": last}
    if last and last.get("started_ns"):
        st = last["started_ns"]
        fin = last.get("finished_ns")
        out["run_s"] = (fin - st) / 1e9 if fin else None
        out["first_progress_s"] = (first_move - st) / 1e9 if first_move else None
        out["progress90_s"] = (t90 - st) / 1e9 if t90 else None
        out["queued_s"] = (st - last["submitted_ns"]) / 1e9
    text = json.dumps(out)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0 if last and last.get("state") == "done" else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--ingest", required=True)
    p.add_argument("--psql", required=True)
    p.add_argument("--pghost", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--metric", default="probe.vis")
    p.add_argument("--count", type=int, default=120)
    p.add_argument("--interval", type=float, default=0.2)
    p.add_argument("--poll", type=float, default=0.02)
    p.add_argument("--grace", type=float, default=15.0)
    p.add_argument("--out")
    p = sub.add_parser("sockcopy")
    p.add_argument("--mib", type=int, default=2048)
    p = sub.add_parser("jobwatch")
    p.add_argument("--socket", required=True)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--out")
    a = ap.parse_args()
    return {"probe": cmd_probe, "sockcopy": cmd_sockcopy, "jobwatch": cmd_jobwatch}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
