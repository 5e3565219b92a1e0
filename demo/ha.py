"""demo/ha.py - what `make demo-ha` runs: pg_relay on a two-node pglogical cluster, for a
newcomer to watch adoption and leadership moving (run through demo/ha-run, which installs what is
missing and builds the Processor first).

  1. two PostgreSQL servers on loopback, pglogical subscriptions both ways, pg_relay on both with
     its tables in the replication set (pgrelay.replication_setup())
  2. --mode=multi-node: each node runs the events it queued
  3. node n2 dies with events pending: after dead_after n1 adopts and runs them
  4. n2 comes back and runs only its node-restricted event; nothing is run twice
  5. --mode=leader: n1 (the lowest node) runs every event; it dies and n2 leads; it comes back
     and leads again

Everything lives in one temporary directory and is stopped and removed at the end (KEEP=1 leaves
it and prints where).
"""
import os
import re
import sys
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))

import testlib  # noqa: E402

DEAD_AFTER = "3s"
BIN = os.path.join(TOP, "processor", "build", "release", "pg_relay")
APP = """
CREATE SCHEMA shop;
CREATE TABLE shop.shipped (id bigint PRIMARY KEY DEFAULT pgrelay._next_id(), parcel text NOT NULL,
                           node integer NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION shop.ship(p text) RETURNS void SECURITY DEFINER SET search_path = shop, pg_catalog
LANGUAGE sql AS $$
    INSERT INTO shipped (parcel, node) VALUES (p, current_setting('pg_relay.node_id')::integer)
$$;
"""

BOLD, RESET = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("", "")
T0 = time.monotonic()


def step(title):
    print("\n%s== %s ==%s" % (BOLD, title, RESET), flush=True)


def say(text=""):
    print(("  [%5.1fs] " % (time.monotonic() - T0)) + text if text else "", flush=True)


def table(rows, header):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    for r in [header] + [["-" * w for w in widths]] + [list(r) for r in rows]:
        print("    " + "  ".join(str(x).ljust(w) for x, w in zip(r, widths)))


def schema(node):
    node.sql("CREATE EXTENSION pg_relay")
    node.sql("SELECT pgrelay.set_node(1, 'n1'), pgrelay.set_node(2, 'n2')")
    node.sql(APP)
    node.sql("SELECT * FROM pgrelay.replication_setup()")


class Demo:
    def __init__(self):
        self.procs = {}
        self.seen = {}
        self.pc = None

    def start(self):
        step("1. Two nodes, pglogical both ways, pg_relay on both")
        self.pc = testlib.PglogicalCluster(
            n=2, node_ids=[1, 2], schema=schema, tables=["shop.shipped"],
            conf=("wal_sender_timeout = 5s", "pg_relay.dead_after = '%s'" % DEAD_AFTER))
        self.pc.set_conflict_resolution("last_update_wins")
        n1 = self.pc.node(1)
        n1.sql("SELECT pgrelay.register('ship', 'sql', handler => 'shop.ship(text)')")
        n1.sql("SELECT pgrelay.register('ship_local', 'sql', handler => 'shop.ship(text)', node_restricted => true)")
        self.pc.wait_replicated("SELECT count(*) = 2 FROM pgrelay.channels")
        for node in self.pc.nodes:
            say("%s: PostgreSQL on port %d, pg_relay.node_id = %d" % (node.name, node.cluster.port, node.node_id))
        say("pgrelay.replication_setup() put these tables in the replication set on each node:")
        table([(r, "yes" if y else "no", w if len(w) <= 80 else w[:77] + "...")
               for r, y, w in n1.sql("SELECT relation::text, replicate, why FROM pgrelay.replication_tables()")],
              ["table", "replicates", "why"])
        say("channels 'ship' (any node may run it) and 'ship_local' (node_restricted) registered on n1,"
            " replicated to n2; pg_relay.dead_after = %s" % DEAD_AFTER)

    def relay(self, i, mode):
        node = self.pc.node(i)
        self.procs[i] = testlib.Processor(["-d", node.dsn, "--mode=%s" % mode, "--poll-interval=200ms",
                                           "--workers=2"], binary=BIN)
        self.seen = {k: v for k, v in self.seen.items() if k[0] != i}
        say("started the Processor of %s: pg_relay --mode=%s" % (node.name, mode))

    def stop(self, i, kill=False):
        p = self.procs.pop(i)
        if kill:
            p.kill()
        else:
            p.stop()
        return p

    def queue(self, i, channel, parcels):
        self.pc.node(i).sql("SELECT pgrelay.notify(%s, p) FROM unnest(%s::text[]) p", (channel, parcels))
        say("queued on %s (%s): %s" % (self.pc.node(i).name, channel, ", ".join(parcels)))
        return parcels

    def shipped(self, parcels, nodes=None):
        self.pc.wait_replicated("SELECT count(DISTINCT parcel) = %s FROM shop.shipped WHERE parcel = ANY(%s)",
                                params=(len(parcels), parcels), nodes=nodes, timeout=90)
        node = self.pc.node(nodes[0]) if nodes else self.pc.up()[0]
        rows = node.sql("SELECT parcel, 'n' || node FROM shop.shipped WHERE parcel = ANY(%s) ORDER BY at", (parcels,))
        table(rows, ["parcel", "run by"])

    def log(self, i, pattern):
        """Wait for the next line of n<i>'s Processor matching pattern (not one seen before)."""
        seen = self.seen.setdefault((i, pattern), 0)
        line = self.procs[i].wait_log(pattern, timeout=90, count=seen + 1).string
        self.seen[(i, pattern)] = seen + 1
        say("n%d's Processor: %s" % (i, re.sub(r"^\S+ ", "", line)))

    def multi_node(self):
        step("2. --mode=multi-node: each node runs the events it queued")
        self.relay(1, "multi-node")
        self.relay(2, "multi-node")
        self.shipped(self.queue(1, "ship", ["a1", "a2"]) + self.queue(2, "ship", ["b1", "b2"]))

        step("3. n2 dies with events pending; n1 adopts them after dead_after")
        self.stop(2, kill=True)
        say("n2's Processor killed; the events queued on n2 now wait in both nodes' queues:")
        pending = self.queue(2, "ship", ["c1", "c2", "c3"])
        pinned = self.queue(2, "ship_local", ["c-local"])
        self.pc.wait_replicated("SELECT count(*) = 4 FROM pgrelay.queue WHERE payload = ANY(%s)",
                                params=(pending + pinned,), nodes=[1])
        self.pc.kill(2)
        say("n2's server stopped (pg_ctl stop -m immediate). n1 waits until n2 has been silent for %s"
            " and its link is down, then adopts:" % DEAD_AFTER)
        self.log(1, r" node_adopted node=2 ")
        self.shipped(pending, nodes=[1])
        say("n1's pgrelay.cluster_status:")
        table(self.pc.node(1).sql("SELECT node_id, link, silent_for::text, dead FROM pgrelay.cluster_status"),
              ["node", "link", "silent for", "dead"])
        say("c-local is node-restricted: never adopted, it waits for n2 (owner_node %s on n1)"
            % self.pc.node(1).scalar("SELECT owner_node FROM pgrelay.queue WHERE payload = 'c-local'"))

        step("4. n2 comes back: it runs its own restricted event, nothing twice")
        self.pc.start(2)
        say("n2's server started, pglogical subscriptions resumed")
        self.relay(2, "multi-node")
        self.log(2, r" peers_in_contact ")
        self.shipped(pending + pinned)
        twice = self.pc.node(2).scalar("SELECT count(*) FROM (SELECT parcel FROM shop.shipped"
                                       " GROUP BY parcel HAVING count(*) > 1) x")
        say("parcels run twice: %d" % twice)
        self.stop(1)
        self.stop(2)

    def leader(self):
        step("5. --mode=leader: the lowest live node runs every unrestricted event")
        self.relay(1, "leader")
        self.relay(2, "leader")
        self.log(1, r" leader_acquired ")
        # (started together, n2 may lead for a moment before n1's first heartbeat reaches it)
        testlib.wait_for(lambda: self.leads(2) is not True, "n2 to leave the lead to n1", timeout=90)
        self.seen[(2, r" leader_acquired ")] = len(self.procs[2].lines("leader_acquired"))
        self.seen[(2, r" leader_yielded ")] = len(self.procs[2].lines("leader_yielded"))
        self.shipped(self.queue(2, "ship", ["d1", "d2"]))
        say("n1 dies:")
        self.stop(1, kill=True)
        self.pc.kill(1)
        self.log(2, r" leader_acquired ")
        self.shipped(self.queue(2, "ship", ["e1", "e2"]), nodes=[2])
        say("n1 comes back:")
        self.pc.start(1)
        self.relay(1, "leader")
        self.log(2, r" leader_yielded ")
        self.log(1, r" leader_acquired ")
        self.shipped(self.queue(2, "ship", ["f1", "f2"]))

    def leads(self, i):
        """What n<i>'s Processor last said of its leadership: True, False or None (nothing)."""
        lines = [l for l in self.procs[i].lines() if re.search(r" leader_(acquired|yielded) ", l)]
        return (" leader_acquired " in lines[-1]) if lines else None

    def close(self):
        for i in list(self.procs):
            self.stop(i, kill=True)
        if self.pc:
            if testlib.keep_dirs():
                print("\nKEEP=1: the clusters are stopped and kept in %s" % self.pc.path)
            self.pc.close()


def main():
    testlib.pg_prefix()
    reason = testlib.pglogical_missing()
    if reason:
        print("demo-ha: " + reason, file=sys.stderr)
        return 1
    demo = Demo()
    try:
        demo.start()
        demo.multi_node()
        demo.leader()
    finally:
        demo.close()
    step("What just happened")
    print("""  * Every node ran the events it queued (multi-node), or the lowest live node ran them
    all (leader). A node is dead when its heartbeat has not moved for dead_after AND the
    replication engine reports its link down; the lowest live node then adopts its unrestricted
    events, or leads.
  * A node that comes back first waits until its peers have heard from it (peers_in_contact),
    so it never runs what they adopted while it was away.
  Read on: docs/ha.md.""")
    print("\nStopped both servers and removed their directories.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
