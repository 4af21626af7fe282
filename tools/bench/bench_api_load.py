#!/usr/bin/python3
"""Ingest ack latency with and without load on the HTTP API (docs/API.md).

Starts a private PostgreSQL and gpuaggd (listen.http, auth noauth) under
--out, fills --metrics metrics for a warm-up, then runs gpuagg-load at
--rate points/s for --duration seconds, alternately alone and while
--api-threads clients loop over measures reads and 10-metric aggregates,
--rounds times each, and prints ack latency (gpuagg-load's p50/p90/p99)
and the API's request rate per run.

    tools/bench/bench_api_load.py [--rate 100000] [--duration 10] [--rounds 2]
                                  [--api-threads 4] [--metrics 1000]
"""
import argparse
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(ROOT, "build", "bin")
NS = uuid.UUID("5c1e5b8e-07c5-4c53-a2a5-3f2b1d6e9a47")
sys.path.insert(0, os.path.join(ROOT, "tests", "blackbox"))
from bblib import free_port  # noqa: E402


def ctl(out, *args):
    r = subprocess.run([os.path.join(BIN, "gpuaggctl"), "--socket", out + "/control.sock", "--json"]
                       + list(args), capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise SystemExit("gpuaggctl %s: %s" % (args, r.stderr))
    return json.loads(r.stdout) if r.stdout.strip() else None


def load(out, args, prefix, duration):
    r = subprocess.run([os.path.join(BIN, "gpuagg-load"), "--connect", out + "/ingest.sock",
                        "--metrics", str(args.metrics), "--rate", str(args.rate), "--duration",
                        str(duration), "--batch", "1000", "--prefix", prefix, "--json",
                        "--start", "now", "--step", "10ms"],
                       capture_output=True, text=True, timeout=duration + 120)
    if r.returncode:
        raise SystemExit("gpuagg-load failed: %s %s" % (r.stdout, r.stderr))
    return json.loads(r.stdout)


def api_worker(port, ids, stop, counts, i):
    h = {"X-User-Id": "bench", "X-Project-Id": "bench", "Content-Type": "application/json"}
    rng = random.Random(i)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    n = 0
    while not stop.is_set():
        if n % 2:
            body = json.dumps({"operations": ["aggregate", "mean", ["metric"] +
                                              [[m, "mean"] for m in rng.sample(ids, 10)]]})
            c.request("POST", "/v1/aggregates?granularity=60&needed_overlap=0", body=body, headers=h)
        else:
            c.request("GET", "/v1/metric/%s/measures?granularity=60" % rng.choice(ids), headers=h)
        r = c.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit("API answered %d" % r.status)
        n += 1
    counts[i] = n
    c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench-api"))
    ap.add_argument("--rate", default="100000")
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--api-threads", type=int, default=4)
    ap.add_argument("--metrics", type=int, default=1000)
    args = ap.parse_args()
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out + "/journal")
    conninfo = subprocess.run([ROOT + "/tools/pg-private.sh", "start", out + "/pg"],
                              capture_output=True, text=True, check=True).stdout.strip()
    port = free_port()
    with open(out + "/gpuaggd.yaml", "w") as f:
        f.write("""log: { level: warn }
control: { socket: %(o)s/control.sock }
listen: { unix: %(o)s/ingest.sock, tcp: "", udp: "", http: "127.0.0.1:%(p)d" }
http: { auth: noauth }
storage: { conninfo: "%(c)s" }
journal: { dir: %(o)s/journal }
default_archive_policy: medium
""" % {"o": out, "p": port, "c": conninfo})
    d = subprocess.Popen([BIN + "/gpuaggd", "--config", out + "/gpuaggd.yaml", "--foreground"],
                         stderr=open(out + "/gpuaggd.log", "w"))
    try:
        for _ in range(300):
            try:
                if ctl(out, "status")["engine"]["state"] == "running":
                    break
            except SystemExit:
                pass
            time.sleep(0.1)
        load(out, args, "bench.", 3)                 # create the metrics, some data
        ctl(out, "flush")
        ids = [str(uuid.uuid3(NS, "bench.%d" % i)) for i in range(args.metrics)]
        print("rate %s points/s, %d metrics, %d s runs, %d API threads, %d CPUs"
              % (args.rate, args.metrics, args.duration, args.api_threads, os.cpu_count()))
        print("%-9s %10s %9s %9s %9s %12s" % ("run", "acked/s", "p50 ms", "p90 ms", "p99 ms",
                                              "API req/s"))
        for rnd in range(args.rounds):
            for with_api in (False, True):
                stop, counts, threads = threading.Event(), [0] * args.api_threads, []
                if with_api:
                    threads = [threading.Thread(target=api_worker, args=(port, ids, stop, counts, i))
                               for i in range(args.api_threads)]
                    for t in threads:
                        t.start()
                t0 = time.time()
                rep = load(out, args, "bench.", args.duration)
                stop.set()
                for t in threads:
                    t.join()
                took = time.time() - t0
                lat = rep["latency_ms"]
                print("%-9s %10.0f %9.3f %9.3f %9.3f %12s" % (
                    ("api" if with_api else "alone") + " %d" % (rnd + 1), rep["acked_per_s"],
                    lat["p50"], lat["p90"], lat["p99"],
                    "%.0f" % (sum(counts) / took) if with_api else "-"))
                sys.stdout.flush()
    finally:
        d.terminate()
        d.wait(60)
        subprocess.run([ROOT + "/tools/pg-private.sh", "stop", out + "/pg"])


main()
