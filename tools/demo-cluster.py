#!/usr/bin/python3
"""`make demo-cluster`: cluster mode on this machine (docs/CLUSTER.md).

Starts a private PostgreSQL, three nats-server processes forming a
JetStream cluster and three gpuaggd daemons (members a, b, c; stream R=3),
pushes load into all three, kills one daemon with SIGKILL and shows the
others taking its partitions over; then stops the load and checks that the
stored aggregates equal those of a single daemon fed the acknowledged
points.  Everything lives in temporary directories and is removed at the
end."""
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))
os.environ.setdefault("GA_ROOT", ROOT)
os.environ.setdefault("GA_LOG_NO_TS", "1")
import clusterlib as cl  # noqa: E402
import test_cluster as tc  # noqa: E402


def show(c, title):
    print("== %s" % title)
    for d in c.daemons:
        if not d.proc or d.proc.poll() is not None:
            print("   %s: down" % d.name)
            continue
        st = d.cluster_status()
        print("   %s: owns %2d partitions %s  published %d  consumed %d" % (
            d.name, len(st["owned"]), "(rebalancing)" if st["rebalancing"] else "",
            st["nats"]["published"], st["nats"]["consumed"]))


def main():
    print("== starting PostgreSQL, 3 nats-servers (JetStream cluster), 3 gpuaggd")
    c = tc.Cluster()
    tc.C = c
    try:
        show(c, "settled: 64 partitions over 3 members")
        print("   nats: %s" % c.nats.urls())
        print("   gpuaggctl --socket %s status   (any member)" % c.daemons[0].sock)
        load = tc.Load(c.live())
        time.sleep(3)
        show(c, "under load (%d points acknowledged)" % load.acked())
        victim = c.daemons[1]
        mine = set(victim.cluster_status()["owned"])
        print("== kill -9 %s (pid %d), owner of %d partitions" % (victim.name, victim.proc.pid,
                                                                 len(mine)))
        victim.kill9()
        t0 = time.time()

        def taken():
            o = c.owned_by_live()
            return o is not None and mine <= set(p for v in o.values() for p in v)
        cl.wait_for(taken, timeout=30, step=0.1)
        print("   partitions owned again after %.2f s" % (time.time() - t0))
        time.sleep(2)
        show(c, "after the takeover (%d points acknowledged)" % load.acked())
        pts = load.stop()
        print("== load stopped; comparing with a single daemon fed the %d acknowledged points"
              % len(pts))
        c.check(pts, "demo")
        print("== equal: nothing lost, nothing doubled")
    finally:
        c.stop()


if __name__ == "__main__":
    main()
