"""Measure what multi-node and leader mode cost on this machine (the figures in docs/ha.md):

    PGRELAY_PG_PREFIX=/tmp/pg-prefix /usr/bin/python3 test/ha/relay_costs.py [SECONDS]

1. One node: the tick's statement (heartbeat, watch, probe) against single mode's probe and
   SELECT 1, each prepared and run 2,000 times in autocommit over the unix socket, as the
   Processor runs them.
2. One node: queue_probe() and queue_pending_ids() of node 1 under multi-node while 100,000 due
   rows belong to node 2, measured in the server (a PL/pgSQL loop), against an empty queue.
3. A two-node pglogical mesh with both Processors idle in multi-node mode at the default poll
   interval (1 s), for SECONDS (20): transactions, WAL and CPU per tick on each node.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import testlib  # noqa: E402

STATEMENTS = {
    "SELECT 1": "SELECT 1",
    "single-mode probe": "SELECT p.has_work, p.reload_requested, p.paused, p.reload_generation,"
                         " pgrelay.should_dispatch_single() FROM pgrelay.queue_probe(NULL) p",
    "multi-node tick (beat)": "SELECT * FROM pgrelay._ha_tick(NULL, true, false, false)",
    "leader tick (beat)": "SELECT * FROM pgrelay._ha_tick(NULL, true, false, false)",
}


def latency_us(conn, sql, n=2000):
    conn.execute(sql, prepare=True)
    t = time.perf_counter()
    for _ in range(n):
        conn.execute(sql, prepare=True).fetchall()
    return (time.perf_counter() - t) / n * 1e6


def in_server_us(conn, call, n=5000):
    conn.execute("""CREATE OR REPLACE FUNCTION pg_temp.loop(n int, q text) RETURNS float8 LANGUAGE plpgsql AS $$
                    DECLARE t timestamptz := clock_timestamp();
                    BEGIN
                        FOR i IN 1..n LOOP EXECUTE q; END LOOP;
                        RETURN date_part('epoch', clock_timestamp() - t) * 1e6 / n;
                    END $$""")
    return conn.execute("SELECT pg_temp.loop(%s, %s)", (n, call)).fetchone()[0]


def one_node():
    c = testlib.Cluster(os.path.join(testlib.work_dir("costs-"), "c"), conf=("pg_relay.node_id = 1",))
    c.start()
    try:
        with c.connect() as conn:
            conn.execute("CREATE DATABASE relay")
        with c.connect("relay") as conn:
            conn.execute("CREATE EXTENSION pg_relay")
            for name, sql in STATEMENTS.items():
                mode = "leader" if name.startswith("leader") else "multi-node"
                conn.execute("SELECT set_config('pg_relay.mode', %s, false)", (mode,))
                if name.startswith(("multi", "leader")):
                    conn.execute("SELECT * FROM pgrelay._ha_tick(NULL, true, true, false)")
                else:
                    conn.execute("RESET pg_relay.mode")
                print("%-32s %7.1f us per call (client round trip)" % (name, latency_us(conn, sql)))

            conn.execute("RESET pg_relay.mode")
            conn.execute("CREATE FUNCTION noop(p text) RETURNS void SECURITY DEFINER LANGUAGE sql AS 'SELECT'")
            conn.execute("SELECT pgrelay.register('costs', 'sql', handler => 'noop(text)')")
            conn.execute("SELECT set_config('pg_relay.mode', 'multi-node', false)")
            conn.execute("VACUUM ANALYZE pgrelay.queue")
            empty = in_server_us(conn, "SELECT * FROM pgrelay.queue_probe()")
            fetch_empty = in_server_us(conn, "SELECT * FROM pgrelay.queue_pending_ids(1000)", 2000)
            conn.execute("""INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, run_at)
                            SELECT n, 'costs', 'sql', '', 2, now() - interval '1 minute'
                            FROM generate_series(1, 100000) n""")
            conn.execute("VACUUM ANALYZE pgrelay.queue")
            full = in_server_us(conn, "SELECT * FROM pgrelay.queue_probe()")
            fetch_full = in_server_us(conn, "SELECT * FROM pgrelay.queue_pending_ids(1000)", 2000)
            print("queue_probe(), node 1, multi-node: %.1f us empty queue, %.1f us with 100,000 due rows of node 2"
                  % (empty, full))
            print("queue_pending_ids(1000), same:     %.1f us empty queue, %.1f us with 100,000 due rows of node 2"
                  % (fetch_empty, fetch_full))
            conn.execute("RESET pg_relay.mode")
            single = in_server_us(conn, "SELECT * FROM pgrelay.queue_probe()")
            print("queue_probe(), single mode, the same 100,000 rows (work is due): %.1f us" % single)
    finally:
        c.stop("immediate")


def cpu_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except OSError:
        return 0


def mesh(seconds):
    from test_multinode import relay_schema
    pc = testlib.PglogicalCluster(n=2, node_ids=[1, 2], conf=("pg_relay.dead_after = '60s'",),
                                  schema=relay_schema, tables=["app.done"])
    procs = []
    try:
        procs = [testlib.Processor(["-d", n.dsn, "--mode=multi-node"], binary=testlib.PROCESSOR_RELEASE)
                 for n in pc.nodes]
        for p in procs:
            p.wait_log(r" started ")
        time.sleep(3)                               # past the first ticks
        hz = os.sysconf("SC_CLK_TCK")

        def sample():
            out = []
            for node, p in zip(pc.nodes, procs):
                lsn, commits = node.sql("SELECT pg_current_wal_lsn()::text, xact_commit FROM pg_stat_database"
                                        " WHERE datname = current_database()")[0]
                backends = [r[0] for r in node.sql("SELECT pid FROM pg_stat_activity WHERE application_name = 'pg_relay'")]
                out.append((lsn, commits, cpu_ticks(p.proc.pid), sum(cpu_ticks(b) for b in backends)))
            return out
        a = sample()
        t = time.monotonic()
        time.sleep(seconds)
        b = sample()
        dt = time.monotonic() - t
        for node, x, y in zip(pc.nodes, a, b):
            wal = float(node.scalar("SELECT pg_wal_lsn_diff(%s, %s)", (y[0], x[0])))
            print("%s idle, multi-node, poll 1 s: %.2f commits/s (its ticks, the peer's heartbeats applied,"
                  " and this sampler's two), %.0f WAL bytes/s,"
                  " Processor CPU %.3f%%, its sessions' CPU %.3f%%"
                  % (node.name, (y[1] - x[1]) / dt, wal / dt, (y[2] - x[2]) / hz / dt * 100,
                     (y[3] - x[3]) / hz / dt * 100))
    finally:
        for p in procs:
            p.stop()
        pc.close()


if __name__ == "__main__":
    testlib.pg_prefix()
    one_node()
    if not testlib.pglogical_missing():
        mesh(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
