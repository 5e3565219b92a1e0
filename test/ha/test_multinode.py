"""pg_relay's multi-node and leader modes on a real two-node pglogical 2 mesh on loopback, with
pg_relay's tables put in the replication set by pgrelay.replication_setup(): events made on each
node are done once by their owner; a killed node's rows are adopted by the survivor after
dead_after and the node rejoins without redoing them; a hung node is not declared dead before its
link is reported down; the lowest live node leads, and leadership moves when it dies and comes
back when it returns; channel concurrency per node and cluster-wide; ids never collide.

Every test starts its own Processors on the module's mesh (testlib.pglogical_guard heals the mesh
after each test). dead_after is 2 s here and wal_sender_timeout 5 s, so a hung node is silent
for longer than dead_after well before its link is reported down.
"""
import re
import subprocess
import time
import urllib.request

import pytest

import promtext
import testlib
from testlib import pglogical_guard

DEAD_AFTER = "2s"
APP = """
CREATE SCHEMA app;
CREATE TABLE app.done (id bigint PRIMARY KEY DEFAULT pgrelay._next_id(), payload text NOT NULL,
                       channel text NOT NULL, node integer NOT NULL,
                       started timestamptz NOT NULL, finished timestamptz NOT NULL);
-- record(): which node ran which payload
CREATE FUNCTION app.record(p text) RETURNS void SECURITY DEFINER SET search_path = app, pg_catalog
LANGUAGE sql AS $$
    INSERT INTO done (payload, channel, node, started, finished)
    VALUES (p, 'jobs', current_setting('pg_relay.node_id')::integer, clock_timestamp(), clock_timestamp())
$$;
-- serial(): takes a while, so that two events of its channel running at once would overlap
CREATE FUNCTION app.serial(p text) RETURNS void SECURITY DEFINER SET search_path = app, pg_catalog
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM pg_sleep(0.05);
    INSERT INTO done (payload, channel, node, started, finished)
    VALUES (p, 'serial', current_setting('pg_relay.node_id')::integer, t0, clock_timestamp());
END $$;
"""


def relay_schema_for(n):
    """The schema hook of an n-node mesh: pg_relay on every node, the same node map everywhere
    (node i is n<i>, pg_relay node i), the application's schema, and pg_relay's tables in the
    replication set (before the subscriptions, as docs/ha.md says)."""
    def create(node):
        node.sql("CREATE EXTENSION pg_relay")
        for i in range(1, n + 1):
            node.sql("SELECT pgrelay.set_node(%s, %s)", (i, "n%d" % i))
        node.sql(APP)
        added = node.sql("SELECT relation::text, added FROM pgrelay.replication_setup()")
        assert ("pgrelay.queue", True) in added and ("pgrelay.heartbeats", True) in added
        assert "pgrelay.log" not in [r[0] for r in added]
    return create


relay_schema = relay_schema_for(2)


def register_channels(pc):
    """The test channels, registered on n1 once the mesh replicates."""
    n1 = pc.node(1)
    n1.sql("SELECT pgrelay.register('jobs', 'sql', handler => 'app.record(text)', max_attempts => 1)")
    n1.sql("SELECT pgrelay.register('local_jobs', 'sql', handler => 'app.record(text)',"
           " node_restricted => true, max_attempts => 1)")
    n1.sql("SELECT pgrelay.register('serial', 'sql', handler => 'app.serial(text)',"
           " concurrency_mode => 'channel', max_attempts => 1)")
    pc.wait_replicated("SELECT count(*) = 3 FROM pgrelay.channels")


def mesh_of_two(dead_after):
    """For a module-scoped fixture (`yield from mesh_of_two(...)`): the two-node mesh of these
    tests (node ids 1 and 2, app.done replicated, last update wins) with the test channels
    registered, pg_relay.dead_after set; closed after the module."""
    pc = testlib.PglogicalCluster(n=2, node_ids=[1, 2],
                                  conf=("wal_sender_timeout = 5s", "pg_relay.dead_after = '%s'" % dead_after),
                                  schema=relay_schema, tables=["app.done"])
    try:
        pc.set_conflict_resolution("last_update_wins")
        register_channels(pc)
    except BaseException:
        pc.close()
        raise
    yield pc
    pc.close()


@pytest.fixture(scope="module")
def mesh(require_pglogical):
    yield from mesh_of_two(DEAD_AFTER)


@pytest.fixture
def pgl(request, mesh):
    yield from pglogical_guard(request, mesh)


def relay(processors, node, mode, *extra):
    return processors("-d", node.dsn, "--mode=%s" % mode, "--poll-interval=100ms", "--workers=2", *extra)


def queue(node, channel, payloads):
    node.sql("SELECT pgrelay.notify(%s, p) FROM unnest(%s::text[]) p", (channel, list(payloads)))
    return list(payloads)


def names(prefix, n):
    return ["%s-%d" % (prefix, i) for i in range(n)]


def wait_done(pc, payloads, nodes=None, timeout=60):
    """Wait until every payload is in app.done on every running node (or on `nodes`)."""
    pc.wait_replicated("SELECT count(DISTINCT payload) = %s FROM app.done WHERE payload = ANY(%s)",
                       params=(len(payloads), list(payloads)), nodes=nodes, timeout=timeout)


def runs(node, payloads):
    """{payload: [node ids that ran it]} as app.done on node says."""
    out = {p: [] for p in payloads}
    for p, n in node.sql("SELECT payload, node FROM app.done WHERE payload = ANY(%s) ORDER BY id",
                         (list(payloads),)):
        out[p].append(n)
    return out


def both_running(pc, procs, tag):
    """Wait until the Processors of every node run events: one event queued on each is done."""
    probes = []
    for node in pc.up():
        probes += queue(node, "local_jobs", ["%s-%s-up" % (tag, node.name)])
    wait_done(pc, probes)


def leads(p):
    """Whether the Processor's log says it leads now (its last leader_acquired/yielded line)."""
    changes = [l for l in p.lines() if re.search(r" leader_(acquired|yielded) ", l)]
    return bool(changes) and " leader_acquired " in changes[-1]


def wait_leader(procs, i):
    """Wait until procs[i] leads and no other does. (Processors started together may see a
    leader for a moment before the lowest node's first heartbeat arrives: it hands over.)"""
    testlib.wait_for(lambda: leads(procs[i]) and not any(leads(p) for k, p in enumerate(procs) if k != i),
                     "Processor %d alone to lead" % (i + 1))


def stop(*procs):
    for p in procs:
        assert p.stop() == 0


# ---- multi-node ---------------------------------------------------------------------------

def test_multi_node_each_node_runs_its_own_events_once(pgl, processors):
    n1, n2 = pgl.nodes
    p1, p2 = relay(processors, n1, "multi-node"), relay(processors, n2, "multi-node")
    mine = {n.node_id: queue(n, "jobs", names("mn-%s" % n.name, 20)) for n in pgl.nodes}
    everything = mine[1] + mine[2]
    wait_done(pgl, everything)
    for node in pgl.nodes:
        ran = runs(node, everything)
        for owner, payloads in mine.items():
            assert all(ran[p] == [owner] for p in payloads), ran
    # pgrelay.log is each node's own record of its attempts: it is not replicated
    for node in pgl.nodes:
        assert node.scalar("SELECT array_agg(DISTINCT node_id) FROM pgrelay.log WHERE payload = ANY(%s)",
                           (everything,)) == [node.node_id]
    assert not p1.lines("node_adopted") and not p2.lines("node_adopted")
    stop(p1, p2)


def test_killed_node_rows_are_adopted_and_the_node_rejoins_without_redoing_them(pgl, processors):
    n1, n2 = pgl.nodes
    p1, p2 = relay(processors, n1, "multi-node"), relay(processors, n2, "multi-node")
    both_running(pgl, (p1, p2), "kill")
    p2.kill()                                   # n2's Processor dies first: its new events wait
    free = queue(n2, "jobs", names("adopt", 10))
    pinned = queue(n2, "local_jobs", names("pinned", 3))
    pgl.wait_replicated("SELECT count(*) = 13 FROM pgrelay.queue WHERE owner_node = 2"
                        " AND payload = ANY(%s)", params=(free + pinned,), nodes=[1])
    pgl.kill(2)
    p1.wait_log(r" node_adopted node=2 rows=10 by=1")
    wait_done(pgl, free, nodes=[1])
    assert all(r == [1] for r in runs(n1, free).values())
    # node-restricted rows are never adopted: they wait for their node
    assert n1.sql("SELECT DISTINCT owner_node FROM pgrelay.queue WHERE payload = ANY(%s)", (pinned,)) == [(2,)]

    pgl.start(2)
    p2 = relay(processors, n2, "multi-node")
    wait_done(pgl, pinned)
    pgl.wait_replicated("SELECT count(*) = 0 FROM pgrelay.queue WHERE payload = ANY(%s)",
                        params=(free + pinned,))
    for node in pgl.nodes:
        ran = runs(node, free + pinned)
        assert all(ran[p] == [1] for p in free), ran          # done once, by the adopter
        assert all(ran[p] == [2] for p in pinned), ran        # done once, by their own node
    assert not p2.lines("node_adopted")
    stop(p1, p2)


def fan_out_topic(pc):
    """Topic "fan" on n1, subscribed by "jobs" and a second channel "jobs_too" (the same handler):
    topics, subscriptions and channels replicate, so both nodes see them."""
    n1 = pc.node(1)
    n1.sql("SELECT pgrelay.register('jobs_too', 'sql', handler => 'app.record(text)', max_attempts => 1)")
    n1.sql("SELECT pgrelay.create_topic('fan')")
    n1.sql("SELECT pgrelay.subscribe('fan', 'jobs')")
    n1.sql("SELECT pgrelay.subscribe('fan', 'jobs_too')")
    pc.wait_replicated("SELECT count(*) = 2 FROM pgrelay.subscriptions WHERE topic = 'fan'")


def drop_fan_out_topic(pc):
    n1 = pc.node(1)
    n1.sql("SELECT pgrelay.drop_topic('fan')")
    n1.sql("SELECT pgrelay.unregister('jobs_too')")
    pc.wait_replicated("SELECT count(*) = 0 FROM pgrelay.channels WHERE channel = 'jobs_too'")


def publish(node, payloads):
    """One publication on topic "fan" per payload, made on node; returns {payload: publication id}."""
    return dict(node.sql("SELECT p, pgrelay.publish('fan', p, 'fan.test') FROM unnest(%s::text[]) p",
                         (list(payloads),)))


def test_a_publication_is_delivered_once_per_subscriber_by_the_node_that_made_it(pgl, processors):
    """A publication made on n1 is one queue row per subscriber, each owned by n1 and carrying the
    publication id and event type on both nodes; with both nodes' Processors running, n1 runs
    each delivery exactly once and n2 none (its log has no attempt of them)."""
    n1, n2 = pgl.nodes
    fan_out_topic(pgl)
    pubs = publish(n1, names("fan", 10))
    pgl.wait_replicated("SELECT count(*) = 20 FROM pgrelay.queue WHERE publication_id = ANY(%s)",
                        params=(list(pubs.values()),), nodes=[2])
    assert n2.sql("SELECT DISTINCT owner_node, event_type FROM pgrelay.queue WHERE publication_id = ANY(%s)",
                  (list(pubs.values()),)) == [(1, "fan.test")]
    p1, p2 = relay(processors, n1, "multi-node"), relay(processors, n2, "multi-node")
    pgl.wait_replicated("SELECT count(*) = 0 FROM pgrelay.queue WHERE publication_id = ANY(%s)",
                        params=(list(pubs.values()),))
    pgl.wait_replicated("SELECT count(*) = 20 FROM app.done WHERE payload = ANY(%s)", params=(list(pubs),))
    stop(p1, p2)
    for node in pgl.nodes:
        assert all(r == [1, 1] for r in runs(node, list(pubs)).values()), runs(node, list(pubs))
    assert sorted(n1.sql("SELECT publication_id, channel, event_type FROM pgrelay.log WHERE publication_id = ANY(%s)",
                         (list(pubs.values()),))) == \
        sorted((pub, ch, "fan.test") for pub in pubs.values() for ch in ("jobs", "jobs_too"))
    assert n2.scalar("SELECT count(*) FROM pgrelay.log WHERE publication_id = ANY(%s)", (list(pubs.values()),)) == 0
    drop_fan_out_topic(pgl)


def test_a_dead_nodes_publication_is_adopted_and_delivered_once(pgl, processors):
    """Publications made on n2 while its Processor is down, then n2 killed: after dead_after, n1
    adopts every delivery and runs each once; n2, back, redoes none."""
    n1, n2 = pgl.nodes
    fan_out_topic(pgl)
    p1 = relay(processors, n1, "multi-node")
    pubs = publish(n2, names("fan-adopt", 5))
    pgl.wait_replicated("SELECT count(*) = 10 FROM pgrelay.queue WHERE owner_node = 2 AND publication_id = ANY(%s)",
                        params=(list(pubs.values()),), nodes=[1])
    pgl.kill(2)
    p1.wait_log(r" node_adopted node=2 rows=10 by=1")
    wait_done(pgl, list(pubs), nodes=[1])
    testlib.wait_for(lambda: n1.scalar("SELECT count(*) FROM app.done WHERE payload = ANY(%s)", (list(pubs),)) == 10,
                     "both deliveries of each publication")
    pgl.start(2)
    p2 = relay(processors, n2, "multi-node")
    pgl.wait_replicated("SELECT count(*) = 0 FROM pgrelay.queue WHERE publication_id = ANY(%s)",
                        params=(list(pubs.values()),))
    pgl.wait_replicated("SELECT count(*) = 10 FROM app.done WHERE payload = ANY(%s)", params=(list(pubs),))
    for node in pgl.nodes:
        assert all(r == [1, 1] for r in runs(node, list(pubs)).values()), runs(node, list(pubs))
    assert sorted(n1.sql("SELECT publication_id, channel FROM pgrelay.log WHERE publication_id = ANY(%s)",
                         (list(pubs.values()),))) == \
        sorted((pub, ch) for pub in pubs.values() for ch in ("jobs", "jobs_too"))
    stop(p1, p2)
    drop_fan_out_topic(pgl)


def test_each_node_rebuilds_its_own_queue_indexes_and_events_flow_after_it(pgl, processors):
    """A backlog that came and went through replication leaves both nodes' queue indexes large;
    each node's Processor rebuilds its own (REINDEX is not replicated: each node has its own
    index files), while the rows themselves stay replicated, and events queued on either node
    afterwards are done once by their owner."""
    n1, n2 = pgl.nodes
    # Rows of no node (3) due tomorrow: nobody may run them while they replicate.
    n1.sql("INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, run_at)"
           " SELECT n, 'jobs', 'sql', 'bloat ' || n, 3, now() + interval '1 day'"
           " FROM generate_series(1, 120000) n")
    pgl.wait_replicated("SELECT count(*) = 120000 FROM pgrelay.queue", timeout=120)
    n1.sql("DELETE FROM pgrelay.queue")
    pgl.wait_replicated("SELECT count(*) = 0 FROM pgrelay.queue", timeout=120)
    files = {}
    for node in pgl.nodes:
        node.sql("VACUUM pgrelay.queue")
        assert node.scalar("SELECT pg_relation_size('pgrelay.queue')") == 0
        assert node.scalar("SELECT pg_indexes_size('pgrelay.queue')") >= 10 * 1024 * 1024
        files[node.node_id] = node.scalar("SELECT pg_relation_filenode('pgrelay.queue_pkey')")
    p1, p2 = relay(processors, n1, "multi-node"), relay(processors, n2, "multi-node")
    for node in pgl.nodes:
        testlib.wait_for(lambda: node.scalar("SELECT pg_indexes_size('pgrelay.queue')") < 1024 * 1024,
                         "node %d's rebuild of its queue's indexes" % node.node_id, timeout=60)
        assert node.scalar("SELECT pg_relation_filenode('pgrelay.queue_pkey')") != files[node.node_id]
    mine = {n.node_id: queue(n, "jobs", names("rebuilt-%s" % n.name, 10)) for n in pgl.nodes}
    wait_done(pgl, mine[1] + mine[2])
    for node in pgl.nodes:
        ran = runs(node, mine[1] + mine[2])
        for owner, payloads in mine.items():
            assert all(ran[p] == [owner] for p in payloads), ran
    stop(p1, p2)
    for p in (p1, p2):
        assert not p.lines("report_failed") and "were not rebuilt" not in p.log()


def test_rows_of_an_unknown_owner_are_rehomed_at_start(pgl, processors):
    """Pending rows whose owner is no configured node (a node removed from the cluster) move to
    the node whose Processor starts, which says so and runs them once."""
    n1, n2 = pgl.nodes
    orphans = queue(n1, "jobs", names("orphan", 5))
    n1.sql("UPDATE pgrelay.queue SET owner_node = 7 WHERE payload = ANY(%s)", (orphans,))
    pgl.wait_replicated("SELECT count(*) = 5 FROM pgrelay.queue WHERE owner_node = 7")
    p1 = relay(processors, n1, "multi-node")
    p1.wait_log(r" queue_rehomed mode=multi-node owner_node=7 rows=5")
    wait_done(pgl, orphans)
    for node in pgl.nodes:
        assert all(r == [1] for r in runs(node, orphans).values()), runs(node, orphans)
    stop(p1)


def test_hung_node_is_not_dead_before_its_link_is_reported_down(pgl, processors):
    n1, n2 = pgl.nodes
    p1, p2 = relay(processors, n1, "multi-node"), relay(processors, n2, "multi-node")
    both_running(pgl, (p1, p2), "hung")
    p2.kill()
    hung = queue(n2, "jobs", names("hung", 5))
    pgl.wait_replicated("SELECT count(*) = 5 FROM pgrelay.queue WHERE payload = ANY(%s)",
                        params=(hung,), nodes=[1])
    assert "replicating" in n1.scalar("SELECT link FROM pgrelay.cluster_status WHERE node_id = 2")
    pgl.freeze(2)
    silent_but_linked = False
    while True:
        # read what n1 did before the link's state, so that an adoption seen here happened while
        # the link read as up
        adopted = n1.scalar("SELECT count(*) FROM pgrelay.queue WHERE payload = ANY(%s) AND owner_node = 1",
                            (hung,)) + n1.scalar("SELECT count(*) FROM app.done WHERE payload = ANY(%s)", (hung,))
        status = n1.sql("SELECT silent_for >= %s::interval, dead, link_up FROM pgrelay.cluster_status"
                        " WHERE node_id = 2", (DEAD_AFTER,))[0]
        if not pgl.slot_active(1, 2):
            break
        # n2's subscription still reads "replicating" and n1's slot for it is active: not dead,
        # however long n2 has been silent
        assert pgl.status(1, 2) == "replicating"
        assert adopted == 0 and not p1.lines("node_adopted"), p1.log()
        if status[0] and status[2]:
            assert status[1] is False
            silent_but_linked = True
        time.sleep(0.05)
    assert silent_but_linked, "n2 was never seen silent for dead_after while its link was up"
    p1.wait_log(r" node_adopted node=2 rows=5 by=1")
    wait_done(pgl, hung, nodes=[1])
    assert all(r == [1] for r in runs(n1, hung).values())
    stop(p1)


# ---- leader -------------------------------------------------------------------------------

def scrape(p):
    addr = p.wait_log(r" metrics_listening address=(\S+)").group(1)
    with urllib.request.urlopen("http://%s/metrics" % addr, timeout=10) as r:
        return promtext.parse(r.read().decode())


def cluster_rows(node):
    """The Cluster section of `pg_relay status` on a node: {node id: the row's columns}."""
    r = subprocess.run([testlib.PROCESSOR, "status", "-d", node.dsn], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0 and "Sanitizer" not in r.stderr, r.stderr
    assert re.search(r"^Cluster: +2 node\(s\)", r.stdout, re.M), r.stdout
    return {l.split()[0]: l.split() for l in r.stdout.splitlines() if re.match(r"  +\d+ n\d ", l)}


def test_leader_mode_the_lowest_node_leads_and_leadership_moves_and_returns(pgl, processors):
    n1, n2 = pgl.nodes
    p1 = relay(processors, n1, "leader", "--metrics=127.0.0.1:0")
    p2 = relay(processors, n2, "leader", "--metrics=127.0.0.1:0")
    wait_leader((p1, p2), 0)
    # the metrics say who leads; each node lists its own Processor only (the table is node-local;
    # Processors killed by earlier tests may still be listed, as not alive)
    pids = [p1.proc.pid, p2.proc.pid]
    for p, node, lead in ((p1, n1, 1), (p2, n2, 0)):
        testlib.wait_for(lambda: scrape(p)["pgrelay_leader"].value() == lead, "pgrelay_leader %d" % lead)
        assert scrape(p)["pgrelay_processor_info"].series()[0][0]["mode"] == "leader"
        testlib.wait_for(lambda: node.sql("SELECT pid, mode, alive FROM pgrelay.processors WHERE pid = ANY(%s)",
                                          (pids,)) == [(p.proc.pid, "leader", True)],
                         "node %s's own Processor in pgrelay.processors" % node.name)
    # pg_relay status on either node shows both nodes, node 1 leading, node 2 alive and linked
    for node in pgl.nodes:
        # (each node's heartbeat says whether it leads, and reaches the other node by replication)
        testlib.wait_for(lambda: [r[3:5] for _, r in sorted(cluster_rows(node).items())]
                         == [["leader", "yes"], ["leader", "no"]], "node 1 leading in %s's status" % node.name)
        rows = cluster_rows(node)
        assert rows[str(3 - node.node_id)][5] == "up" and rows[str(3 - node.node_id)][-1] == "alive", rows
        assert rows[str(node.node_id)][-2:] == ["this", "node"], rows
    acquired = len(p2.lines("leader_acquired"))
    free = {n.node_id: queue(n, "jobs", names("free-%s" % n.name, 10)) for n in pgl.nodes}
    pinned = {n.node_id: queue(n, "local_jobs", names("own-%s" % n.name, 3)) for n in pgl.nodes}
    everything = free[1] + free[2] + pinned[1] + pinned[2]
    wait_done(pgl, everything)
    ran = runs(n1, everything)
    assert all(ran[p] == [1] for p in free[1] + free[2]), ran    # every unrestricted row: the leader
    assert all(ran[p] == [1] for p in pinned[1]) and all(ran[p] == [2] for p in pinned[2]), ran
    assert len(p2.lines("leader_acquired")) == acquired

    # the leader dies: after dead_after node 2 leads
    p1.kill()
    pgl.kill(1)
    p2.wait_log(r" leader_acquired mode=leader node=2", count=acquired + 1)
    during = queue(n2, "jobs", names("while-n1-down", 5))
    wait_done(pgl, during)
    assert all(r == [2] for r in runs(n2, during).values())

    # it comes back: node 2 yields once node 1 is live again, and node 1 leads
    yielded = len(p2.lines("leader_yielded"))
    pgl.start(1)
    p1 = relay(processors, n1, "leader")
    p2.wait_log(r" leader_yielded mode=leader node=2 reason=\"node 1 is the lowest live node\"", count=yielded + 1)
    p1.wait_log(r" leader_acquired mode=leader node=1")
    after = queue(n2, "jobs", names("after-n1-back", 5))
    wait_done(pgl, after)
    for node in pgl.nodes:
        ran = runs(node, everything + during + after)
        assert all(len(r) == 1 for r in ran.values()), ran       # nothing twice
        assert all(ran[p] == [1] for p in after), ran
    stop(p1, p2)


# ---- channel concurrency ------------------------------------------------------------------

def overlaps(rows):
    """Pairs of (payload, started, finished) rows whose runs overlap in time."""
    rows = sorted(rows, key=lambda r: r[1])
    return [(a[0], b[0]) for a, b in zip(rows, rows[1:]) if b[1] < a[2]]


@pytest.mark.parametrize("mode", ["multi-node", "leader"])
def test_channel_concurrency_holds_per_node_under_multi_node_and_cluster_wide_under_leader(pgl, processors, mode):
    n1, n2 = pgl.nodes
    procs = [relay(processors, n, mode, "--workers=4") for n in pgl.nodes]
    if mode == "leader":
        wait_leader(procs, 0)
    tag = "serial-%s" % mode
    mine = {n.node_id: queue(n, "serial", names("%s-%s" % (tag, n.name), 8)) for n in pgl.nodes}
    everything = mine[1] + mine[2]
    wait_done(pgl, everything)
    rows = n1.sql("SELECT payload, started, finished, node FROM app.done WHERE payload = ANY(%s)", (everything,))
    assert len(rows) == 16
    by_node = {1: [r for r in rows if r[3] == 1], 2: [r for r in rows if r[3] == 2]}
    # one event of the channel at a time on each node ...
    assert overlaps(by_node[1]) == [] and overlaps(by_node[2]) == []
    if mode == "multi-node":
        # ... each node running its own
        assert sorted(r[0] for r in by_node[1]) == sorted(mine[1])
        assert sorted(r[0] for r in by_node[2]) == sorted(mine[2])
    else:
        # ... and under leader only the leader runs them: one at a time in the whole cluster
        assert by_node[2] == [] and overlaps(rows) == []
    stop(*procs)


# ---- schedules ----------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["multi-node", "leader"])
def test_a_schedule_fires_once_on_the_mesh_and_its_event_runs_once(pgl, processors, mode):
    """Both nodes' Processors see the schedule due; only the node that fires schedules (the
    lowest live node; the leader) queues the occurrence, and its event runs once."""
    n1, n2 = pgl.nodes
    name = "mesh-%s" % mode
    n1.sql("SELECT pgrelay.schedule(%s, 'jobs', '* * * * *', payload => %s)", (name, name))
    n1.sql("UPDATE pgrelay.schedule_entries SET next_run_at = date_trunc('minute', now()) WHERE name = %s",
           (name,))
    pgl.wait_replicated("SELECT next_run_at <= now() FROM pgrelay.schedule_entries WHERE name = %s",
                        params=(name,))
    procs = [relay(processors, n, mode) for n in pgl.nodes]
    wait_done(pgl, [name])
    n1.sql("SELECT pgrelay.schedule(%s, active => false)", (name,))  # no further minute fires while we count
    pgl.wait_replicated("SELECT NOT active FROM pgrelay.schedule_entries WHERE name = %s", params=(name,))
    # every occurrence fired (a minute may have turned meanwhile) runs, once, on node 1
    pgl.wait_replicated("SELECT (SELECT count(*) FROM pgrelay.schedule_runs WHERE schedule = %s)"
                        " = (SELECT count(*) FROM app.done WHERE payload = %s)", params=(name, name))
    stop(*procs)
    fired = n1.sql("SELECT occurrence, node_id, outcome FROM pgrelay.schedule_runs WHERE schedule = %s", (name,))
    assert fired and all(r[1] == 1 and r[2] == "queued" for r in fired)
    assert runs(n1, [name])[name] == [1] * len(fired)
    assert not procs[1].lines("schedule_fired")
    n1.sql("SELECT pgrelay.unschedule(%s)", (name,))


# ---- ids ----------------------------------------------------------------------------------

def test_ids_made_on_different_nodes_never_collide(pgl):
    def draw(node):
        return node.scalar("SELECT array_agg(pgrelay._next_id()) FROM generate_series(1, 5000)")
    a, b = testlib.run_parallel(lambda: draw(pgl.node(1)), lambda: draw(pgl.node(2)))
    assert len(set(a) | set(b)) == 10000
    decoded = pgl.node(1).sql("SELECT DISTINCT (pgrelay.decode_id(i)).node_id FROM unnest(%s::bigint[]) i"
                              " ORDER BY 1", (a + b,))
    assert decoded == [(1,), (2,)]
