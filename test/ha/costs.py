"""Measure what the HA harness costs on this machine (the figures in docs/testing.md):

    PGRELAY_PG_PREFIX=/tmp/pg-prefix /usr/bin/python3 test/ha/costs.py [RUNS]

Set-up of a StandbyPair and of 2- and 3-node PglogicalClusters, memory (PSS) and disk per node,
and for a 2-node mesh: kill -> survivor reports down and its slot inactive, restart -> resumed both ways, freeze ->
slot inactive (wal_sender_timeout 5 s), thaw -> resumed. Medians and ranges over RUNS (3).
"""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import testlib  # noqa: E402

ITEMS = "CREATE TABLE public.items (id bigint PRIMARY KEY, body text)"


def pss_kb(pids):
    total = 0
    for p in pids:
        try:
            with open("/proc/%d/smaps_rollup" % p) as f:
                total += sum(int(l.split()[1]) for l in f if l.startswith("Pss:"))
        except OSError:
            pass
    return total


def du_kb(path):
    return int(subprocess.run(["du", "-sk", path], capture_output=True, text=True).stdout.split()[0])


def timed(fn):
    t = time.monotonic()
    fn()
    return time.monotonic() - t


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    testlib.pg_prefix()
    out = {}

    def add(key, value):
        out.setdefault(key, []).append(value)

    for _ in range(runs):
        t = time.monotonic()
        pair = testlib.StandbyPair()
        add("standby pair set-up (s)", time.monotonic() - t)
        add("standby pair PSS per node (MB)", pss_kb(pair.primary.pids()) / 1024)
        pair.kill_primary()
        add("standby kill + promote (s)", timed(pair.promote))
        pair.close()

        for n in (2, 3):
            t = time.monotonic()
            pc = testlib.PglogicalCluster(n=n, conf=("wal_sender_timeout = 5s",), schema=ITEMS,
                                          tables=["public.items"])
            add("%d-node set-up (s)" % n, time.monotonic() - t)
            for step, secs in pc.timings.items():
                add("%d-node   %s (s)" % (n, step), secs)
            add("%d-node PSS per node (MB)" % n,
                statistics.mean(pss_kb(node.cluster.pids()) for node in pc.nodes) / 1024)
            add("%d-node disk per node (MB)" % n,
                statistics.mean(du_kb(node.cluster.path) for node in pc.nodes) / 1024)
            if n == 2:
                n1, n2 = pc.nodes
                add("kill (stop -m immediate) (s)", timed(lambda: pc.kill(2)))
                t = time.monotonic()
                testlib.wait_for(lambda: pc.status(1, 2) == "down", "down", interval=0.005)
                add("then survivor says down (s)", time.monotonic() - t)
                testlib.wait_for(lambda: pc.slot_active(1, 2) is False, "inactive", interval=0.005)
                add("then survivor's slot inactive (s)", time.monotonic() - t)
                t = time.monotonic()
                pc.start(2)
                add("start + resume_subscriptions (s)", time.monotonic() - t)
                a = n1.scalar("INSERT INTO items VALUES (1, 'a') RETURNING id")
                b = n2.scalar("INSERT INTO items VALUES (2, 'b') RETURNING id")
                pc.wait_replicated("SELECT count(*) = 2 FROM items WHERE id IN (%s, %s)", params=(a, b))
                add("restart -> rows both ways (s)", time.monotonic() - t)
                t = time.monotonic()
                pc.freeze(2)
                testlib.wait_for(lambda: pc.slot_active(1, 2) is False, "inactive", timeout=60)
                add("freeze -> survivor's slot inactive (s)", time.monotonic() - t)
                add("thaw + resume (s)", timed(lambda: pc.thaw(2)))
            pc.close()

    width = max(len(k) for k in out)
    for k, v in out.items():
        print("%-*s  median %6.2f  (%.2f-%.2f)" % (width, k, statistics.median(v), min(v), max(v)))


if __name__ == "__main__":
    main()
