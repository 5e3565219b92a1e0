"""A node whose server restarts under a running Processor runs nothing twice, on pglogical and on a
Spock stand-in (test/ha/spock_over_pglogical.sql: Spock's catalog over a replicating pglogical
node). The server of node 1 is killed (pg_ctl stop -m immediate) while its Processor drains, and
started again at once; the Processors are left running. The peer's apply worker for node 1 comes
back only after the engine's delay (5 s: spock.restart_delay_default, pglogical's fixed delay), so
for those seconds node 2 hears nothing of node 1.

Each case asserts that every event ran exactly once, as app.done on both nodes says, in leader
mode and in multi-node mode, with pg_relay.dead_after below the engine's delay (which pg_relay
raises, with a warning naming both settings) and at its default.
"""
import os
import re
import subprocess

import pytest

import testlib
from testlib import pglogical_guard

HERE = os.path.dirname(__file__)
EVENTS = 120
APP = """
CREATE SCHEMA app;
CREATE TABLE app.done (id bigint PRIMARY KEY DEFAULT pgrelay._next_id(), payload text NOT NULL,
                       node integer NOT NULL);
-- slow(): 20 ms, so that the kill lands while events run
CREATE FUNCTION app.slow(p text) RETURNS void SECURITY DEFINER SET search_path = app, pg_catalog
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(0.02);
    INSERT INTO done (payload, node) VALUES (p, current_setting('pg_relay.node_id')::integer);
END $$;
"""


def schema_for(engine):
    def create(node):
        if engine == "spock":
            with open(os.path.join(HERE, "spock_over_pglogical.sql")) as f:
                node.sql(f.read())
        node.sql("CREATE EXTENSION pg_relay")
        for i in (1, 2):
            node.sql("SELECT pgrelay.set_node(%s, %s)", (i, "n%d" % i))
        node.sql(APP)
        assert node.scalar("SELECT pgrelay._engine()") == engine
        added = node.sql("SELECT relation::text, added FROM pgrelay.replication_setup()")
        assert ("pgrelay.queue", True) in added
    return create


def mesh(engine):
    pc = testlib.PglogicalCluster(n=2, node_ids=[1, 2],
                                  conf=("wal_sender_timeout = 5s", "spock.restart_delay_default = 5000"),
                                  schema=schema_for(engine), tables=["app.done"])
    try:
        pc.set_conflict_resolution("last_update_wins")
        pc.node(1).sql("SELECT pgrelay.register('slow', 'sql', handler => 'app.slow(text)', max_attempts => 1)")
        pc.wait_replicated("SELECT count(*) = 1 FROM pgrelay.channels WHERE channel = 'slow'")
    except BaseException:
        pc.close()
        raise
    return pc


@pytest.fixture(scope="module", params=["pglogical", "spock"])
def engine_mesh(request, require_pglogical):
    pc = mesh(request.param)
    pc.engine = request.param
    yield pc
    pc.close()


@pytest.fixture
def pgl(request, engine_mesh):
    yield from pglogical_guard(request, engine_mesh)


def set_dead_after(pc, value):
    """pg_relay.dead_after for the sessions opened from now on (the Processors'), on every node."""
    for node in pc.up():
        if value is None:
            node.sql('ALTER DATABASE "%s" RESET pg_relay.dead_after' % node.dbname)
        else:
            node.sql('ALTER DATABASE "%s" SET pg_relay.dead_after = \'%s\'' % (node.dbname, value))


def runs(node, payloads):
    out = {p: [] for p in payloads}
    for p, n in node.sql("SELECT payload, node FROM app.done WHERE payload = ANY(%s) ORDER BY id", (list(payloads),)):
        out[p].append(n)
    return out


@pytest.mark.parametrize("mode,dead_after", [("leader", "4s"), ("multi-node", "4s"), ("leader", None), ("multi-node", None)])
def test_a_restarted_nodes_events_run_once(pgl, processors, mode, dead_after):
    """Node 1's server restarts while its Processor (the leader, in leader mode) drains: node 1's
    Processor starts over as a new one (it re-arms and waits to be heard), node 2 does not find it
    dead before its apply worker is back (dead_after is never below twice the engine's delay), and
    every event runs once."""
    n1, n2 = pgl.nodes
    set_dead_after(pgl, dead_after)
    tag = "%s-%s-%s" % (pgl.engine, mode, dead_after or "default")
    procs = [processors("-d", n.dsn, "--mode=%s" % mode, "--poll-interval=100ms", "--workers=2") for n in pgl.nodes]
    # both Processors run: an event of each node is done
    probe = ["%s-up-%d" % (tag, n.node_id) for n in pgl.nodes]
    for node, p in zip(pgl.nodes, probe):
        node.sql("SELECT pgrelay.notify('slow', %s)", (p,))
    pgl.wait_replicated("SELECT count(*) = 2 FROM app.done WHERE payload = ANY(%s)", params=(probe,), timeout=60)

    payloads = {n.node_id: ["%s-%d-%d" % (tag, n.node_id, i) for i in range(EVENTS // 2)] for n in pgl.nodes}
    for node in pgl.nodes:
        node.sql("SELECT pgrelay.notify('slow', p) FROM unnest(%s::text[]) p", (payloads[node.node_id],))
    everything = payloads[1] + payloads[2]
    # node 1 is running events when its server goes
    testlib.wait_for(lambda: n1.scalar("SELECT count(*) FROM app.done WHERE node = 1 AND payload = ANY(%s)",
                                       (everything,)) >= 10, "node 1 to run events")
    pgl.kill(1)
    pgl.start(1, resume=False)     # the peer's apply worker comes back after the engine's delay
    pgl.wait_replicated("SELECT count(DISTINCT payload) = %s FROM app.done WHERE payload = ANY(%s)",
                        params=(len(everything), everything), timeout=240)
    # (replication settles: each node has the other's rows)
    pgl.wait_replicated("SELECT count(*) >= %s FROM app.done WHERE payload = ANY(%s)",
                        params=(len(everything), everything), timeout=240)
    for node in pgl.nodes:
        ran = runs(node, everything)
        twice = {p: r for p, r in ran.items() if len(r) != 1}
        assert not twice, "%d of %d events ran more than once (on %s): %s" % (
            len(twice), len(everything), node.name, sorted(twice.items())[:10])
    assert procs[0].lines("reconnecting")
    if dead_after == "4s":
        setting = "spock.restart_delay_default (5000)" if pgl.engine == "spock" else "pglogical's delay"
        for p in procs:
            assert [l for l in p.lines("server_warning") if "pg_relay.dead_after (4s) is below twice %s" % setting
                    in l and ": 10s is used" in l], p.log()
    for p in procs:
        assert p.stop() == 0


def status(node, user=None):
    dsn = node.dsn if user is None else node.dsn + " user=%s" % user
    return subprocess.run([testlib.PROCESSOR, "status", "-d", dsn], capture_output=True, text=True, timeout=60)


def test_status_after_a_crash_tells_the_truth(pgl, processors):
    """Node 1 leads; its Processor and its server are killed, and the server is started again with
    no Processor: pg_relay status there shows that Processor not alive and not leading (its
    session is gone with the server), and node 2's silence as unknown (what node 1 observed was
    lost with the crash), not as a leader and a silence of 0 s."""
    n1, n2 = pgl.nodes
    procs = [processors("-d", n.dsn, "--mode=leader", "--poll-interval=100ms", "--workers=1") for n in pgl.nodes]
    procs[0].wait_log(r" leader_acquired mode=leader node=1")
    testlib.wait_for(lambda: re.search(r"^  +\S+ +%d .* yes +\S+ +\S+ ago$" % procs[0].proc.pid,
                                       status(n1).stdout, re.M), "node 1's Processor shown leading")
    procs[0].kill()
    pgl.kill(1)
    pgl.start(1)
    out = status(n1)
    assert out.returncode == 0, out.stderr
    row = [l for l in out.stdout.splitlines() if re.match(r"^  +\S+ +%d " % procs[0].proc.pid, l)]
    assert len(row) == 1 and " yes " not in row[0] and row[0].endswith("NOT ALIVE"), out.stdout
    assert re.search(r"^Processors: +NONE alive", out.stdout, re.M), out.stdout
    peer = [l for l in out.stdout.splitlines() if re.match(r"^ +2 n2 ", l)]
    assert len(peer) == 1 and " unknown " in peer[0], out.stdout
    assert procs[1].stop() == 0
