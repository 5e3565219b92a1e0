"""Leader mode on a real two-node pglogical 2 mesh: a cold start runs every unrestricted event
once, whatever order the Processors start in, with the events queued and replicated before either
starts, and whether the nodes never ran a Processor (no heartbeats) or both stopped cleanly before
(their heartbeats say so). A node started alone leads only once its peer is found dead, and says
why it waited. A queue row the engine delivers again after it was finished (inserted again with
its id) is finished without running again on the node that ran it, and leaves both queues.

dead_after is 2 s here (the module sets it in postgresql.conf on both nodes)."""
import pytest

import testlib
from testlib import pglogical_guard
from test_multinode import cluster_rows, mesh_of_two, names, queue, relay, runs, stop, wait_done

DEAD_AFTER = "2s"


@pytest.fixture(scope="module")
def mesh(require_pglogical):
    yield from mesh_of_two(DEAD_AFTER)


@pytest.fixture
def pgl(request, mesh):
    yield from pglogical_guard(request, mesh)


def forget_heartbeats(pc):
    """As on a mesh whose Processors never ran: no heartbeat on either node (the DELETE replicates)."""
    pc.node(1).sql("DELETE FROM pgrelay.heartbeats")
    pc.wait_replicated("SELECT count(*) = 0 FROM pgrelay.heartbeats")


def queued_everywhere(pc, tag, n):
    """n unrestricted events queued on each node, waiting on both before any Processor starts."""
    payloads = []
    for node in pc.nodes:
        payloads += queue(node, "jobs", names("%s-%s" % (tag, node.name), n))
    pc.wait_replicated("SELECT count(*) = %s FROM pgrelay.queue WHERE payload = ANY(%s)",
                       params=(len(payloads), payloads))
    return payloads


@pytest.mark.parametrize("history", ["never_ran", "stopped_cleanly"])
@pytest.mark.parametrize("order", ["1_then_2", "2_then_1", "together"])
def test_a_cold_start_in_any_order_runs_each_event_once(pgl, processors, order, history):
    n1, n2 = pgl.nodes
    if history == "never_ran":
        forget_heartbeats(pgl)
    else:
        # both Processors ran and stopped cleanly: each heartbeat says stopped
        ps = [relay(processors, n, "leader") for n in pgl.nodes]
        ps[0].wait_log(r" leader_acquired ")
        stop(*ps)
        pgl.wait_replicated("SELECT count(*) = 2 FROM pgrelay.heartbeats WHERE stopped_at IS NOT NULL")
    tag = "cold-%s-%s" % (order, history)
    payloads = queued_everywhere(pgl, tag, 100)
    if order == "together":
        procs = [relay(processors, n, "leader") for n in pgl.nodes]
    else:
        first, second = (n1, n2) if order == "1_then_2" else (n2, n1)
        a = relay(processors, first, "leader")
        # the first one has decided (it leads, or waits and says why) before the second starts
        a.wait_log(r" (leader_acquired|leader_waiting|peers_waiting) ")
        b = relay(processors, second, "leader")
        procs = [a, b] if first is n1 else [b, a]
    wait_done(pgl, payloads)
    for node in pgl.nodes:
        ran = runs(node, payloads)
        assert all(r == [1] for r in ran.values()), {p: r for p, r in ran.items() if r != [1]}
    # node 2 never led: node 1 was live for it from the start (heard from, or not yet found dead)
    assert not procs[1].lines("leader_acquired"), procs[1].log()
    assert procs[0].lines("leader_acquired")
    stop(*procs)


def test_a_node_started_alone_leads_after_dead_after_and_says_why(pgl, processors):
    n1, n2 = pgl.nodes
    forget_heartbeats(pgl)
    payloads = queue(n2, "jobs", names("alone", 20))
    pgl.kill(1)
    p2 = relay(processors, n2, "leader")
    p2.wait_log(r' leader_waiting mode=leader node=2 reason="node 1 is the lowest live node: not heard from since'
                r' this node started watching, it counts as live until it is found dead"')
    p2.wait_log(r" leader_acquired mode=leader node=2")
    lines = p2.lines()
    waited = [i for i, l in enumerate(lines) if " leader_waiting " in l]
    acquired = [i for i, l in enumerate(lines) if " leader_acquired " in l]
    assert waited[0] < acquired[0], lines
    wait_done(pgl, payloads, nodes=[2])
    assert all(r == [2] for r in runs(n2, payloads).values())
    # node 1 was found dead on the way (silent for dead_after, its link down)
    assert n2.scalar("SELECT dead FROM pgrelay.cluster_status WHERE node_id = 1") is True
    stop(p2)
    pgl.start(1)


def test_a_replayed_row_is_finished_without_running_again_on_both_nodes(pgl, processors):
    """Node 1 leads and runs node 2's events; then the engine delivers their INSERTs again (here:
    inserted again on node 2 with their ids, which replicates them to node 1, as a subscription
    that resumed from a position before the crash does). Node 1 has their log rows: it finishes
    them without running again, and its deletions empty node 2's queue too."""
    n1, n2 = pgl.nodes
    p1, p2 = relay(processors, n1, "leader"), relay(processors, n2, "leader")
    p1.wait_log(r" leader_acquired mode=leader node=1")
    payloads = queue(n2, "jobs", names("replay", 30))
    wait_done(pgl, payloads)
    pgl.wait_replicated("SELECT count(*) = 0 FROM pgrelay.queue WHERE payload = ANY(%s)", params=(payloads,))
    rows = n1.sql("SELECT queue_id, event_id, channel, action_type, payload, attempt, queued_at FROM pgrelay.log"
                  " WHERE payload = ANY(%s)", (payloads,))
    assert len(rows) == 30
    assert n2.scalar("SELECT count(*) FROM pgrelay.log WHERE payload = ANY(%s)", (payloads,)) == 0
    for r in rows:
        n2.sql("INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,"
               " attempt, run_at, queued_at) VALUES (%s, %s, %s, %s, %s, 2, false, %s, now(), %s)", r)
    p1.wait_log(r" event_replayed .*reason=attempt_recorded_already", count=30)
    pgl.wait_replicated("SELECT count(*) = 0 FROM pgrelay.queue WHERE payload = ANY(%s)", params=(payloads,))
    for node in pgl.nodes:
        assert all(r == [1] for r in runs(node, payloads).values())
    assert n1.scalar("SELECT count(*) FROM pgrelay.log WHERE payload = ANY(%s)", (payloads,)) == 30
    assert not p1.lines("attempt_failed") and not p2.lines("event_replayed"), p1.log()
    stop(p1, p2)


def test_status_agrees_with_the_heartbeats_through_a_clean_stop(pgl, processors):
    """pg_relay status on node 2: node 1 leads in both tables while it runs; once its Processor
    stopped cleanly, node 1 shows stopped at once and node 2 leads, in both tables again; no
    duration is negative."""
    n1, n2 = pgl.nodes
    p1, p2 = relay(processors, n1, "leader"), relay(processors, n2, "leader")
    p1.wait_log(r" leader_acquired mode=leader node=1")
    # (node 1 may lead for a tick and yield until node 2 has heard from it, then lead again: the
    # two tables are read together until they agree, as for node 2 below)
    testlib.wait_for(lambda: cluster_rows(n2)["1"][4] == "yes"
                     and n1.scalar("SELECT leader FROM pgrelay.processors WHERE pid = %s", (p1.proc.pid,)) is True,
                     "node 1 leading in both tables")
    stop(p1)
    testlib.wait_for(lambda: cluster_rows(n2)["1"][-1] == "stopped", "node 1 stopped in node 2's status")
    p2.wait_log(r" leader_acquired mode=leader node=2")
    testlib.wait_for(lambda: cluster_rows(n2)["2"][4] == "yes"
                     and n2.scalar("SELECT leader FROM pgrelay.processors WHERE pid = %s", (p2.proc.pid,)) is True,
                     "node 2 leading in both tables")
    assert cluster_rows(n2)["1"][4] == "no"
    for node in pgl.nodes:
        assert node.scalar("SELECT count(*) FROM pgrelay.cluster_status WHERE silent_for < '0'") == 0
        assert node.scalar("SELECT count(*) FROM pgrelay.processors WHERE silent_for < '0'") == 0
    stop(p2)
