"""Recurring events on a real two-node pglogical 2 mesh, with pg_relay's tables (schedules and their
runs among them) in the replication set: the fire function, called on both nodes for every
occurrence as both nodes' Processors would call it, queues each occurrence once. In multi-node
mode only the lowest live node fires, in leader mode only the leader; the HA tick tells only that
node that a schedule is due. Two nodes that both believe they fire queue an occurrence once while
they replicate (the second finds the first's run); split, each queues it, and when the link
returns pglogical's conflict resolution (last_update_wins) keeps one run per occurrence on both.

The clock is the test's: _schedule_fire(at) walks the occurrences of 2030 without waiting.
No Processor runs here (the Processor's call of _schedule_fire is not in this test): the nodes'
sessions run the HA tick themselves, as the Processor does each poll interval.
"""
import psycopg
import pytest

import testlib
from testlib import pglogical_guard
from test_multinode import mesh_of_two

# Long enough that a loaded machine never breaks the contact between two ticks of the test: the
# nodes acknowledge each other within dead_after / 2, and nothing here waits for a node to die.
DEAD_AFTER = "10s"
T0 = "2030-01-01 00:00:00+00"


@pytest.fixture(scope="module")
def mesh(require_pglogical):
    yield from mesh_of_two(DEAD_AFTER)


@pytest.fixture
def pgl(request, mesh):
    yield from pglogical_guard(request, mesh)
    n1 = mesh.node(1)
    n1.sql("SELECT pgrelay.unschedule(name) FROM pgrelay.schedule_entries")
    n1.sql("DELETE FROM pgrelay.queue")
    n1.sql("DELETE FROM pgrelay.heartbeats")
    mesh.wait_replicated("SELECT count(*) = 0 FROM pgrelay.schedule_entries")
    mesh.wait_replicated("SELECT count(*) = 0 FROM pgrelay.queue")


@pytest.fixture
def sessions(pgl):
    """A session of its own on each node (the settings of a mode stay on it), closed afterwards."""
    conns = [psycopg.connect(n.dsn, autocommit=True) for n in pgl.nodes]
    yield conns
    for c in conns:
        c.close()


def scheduled(pc, name, cron="*/5 * * * *", at=T0):
    """A schedule made on n1, replicated, its next run pinned to `at` on both nodes."""
    n1 = pc.node(1)
    n1.sql("SELECT pgrelay.schedule(%s, 'jobs', %s, %s)", (name, cron, name))
    n1.sql("UPDATE pgrelay.schedule_entries SET next_run_at = %s WHERE name = %s", (at, name))
    pc.wait_replicated("SELECT count(*) = 1 FROM pgrelay.schedule_entries WHERE name = %s AND next_run_at = %s",
                       params=(name, at))


def fire(conn, at):
    """_schedule_fire(at) on a session: [(schedule, occurrence, outcome)]."""
    return [(s, o.isoformat(), out) for s, o, out in conn.execute(
        "SELECT schedule, occurrence, outcome FROM pgrelay._schedule_fire(%s)", (at,)).fetchall()]


def tick(conn, first):
    """One HA tick, as the Processor runs it: (dispatch, is_leader, schedule_due)."""
    return conn.execute("SELECT dispatch, is_leader, schedule_due FROM pgrelay._ha_tick(NULL, true, %s, false)",
                        (first,)).fetchone()


def in_contact(sessions, mode, want):
    """Set the mode on both sessions and tick both until want(answer of node 1, of node 2)."""
    for c in sessions:
        c.execute("SELECT set_config('pg_relay.mode', %s, false)", (mode,))
    firsts = [True, True]

    def ticked():
        out = []
        for i, c in enumerate(sessions):
            out.append(tick(c, firsts[i]))
            firsts[i] = False
        return want(*out) and out
    return testlib.wait_for(ticked, "both nodes to tick into contact (%s)" % mode, timeout=60, interval=0.1)


def both_tick(sessions):
    """One tick on each node, as their Processors tick every poll interval: (node 1's, node 2's)."""
    return tuple(tick(c, False) for c in sessions)


def runs_everywhere(pc, name, count):
    """Wait until both nodes have `count` runs of the schedule; return node 1's [(occurrence, node_id)]."""
    pc.wait_replicated("SELECT count(*) = %s FROM pgrelay.schedule_runs WHERE schedule = %s", params=(count, name))
    rows = [n.sql("SELECT occurrence::text, node_id FROM pgrelay.schedule_runs WHERE schedule = %s"
                  " ORDER BY occurrence", (name,)) for n in pc.nodes]
    assert rows[0] == rows[1]
    return rows[0]


def queued_everywhere(pc, payload, count):
    pc.wait_replicated("SELECT count(*) = %s FROM pgrelay.queue WHERE payload = %s", params=(count, payload))
    return [n.sql("SELECT owner_node, run_at::text FROM pgrelay.queue WHERE payload = %s ORDER BY run_at",
                  (payload,)) for n in pc.nodes]


OCCURRENCES = ["2030-01-01 00:00:00+00", "2030-01-01 00:05:00+00", "2030-01-01 00:10:00+00"]


def test_multi_node_only_the_lowest_live_node_fires(pgl, sessions):
    s1, s2 = sessions
    scheduled(pgl, "mn")
    in_contact(sessions, "multi-node", lambda a, b: a[0] and b[0])
    for at in OCCURRENCES:
        t = at.replace(":00+00", ":20+00")
        both_tick(sessions)
        # both nodes' Processors fire at the same moment, node 2 first
        assert fire(s2, t) == []
        assert fire(s1, t) == [("mn", at.replace(" ", "T").replace("+00", "+00:00"), "queued")]
        pgl.wait_replicated("SELECT next_run_at > %s FROM pgrelay.schedule_entries WHERE name = 'mn'", params=(at,))
        # and again once it replicated: nothing more on either
        assert fire(s2, t) == [] and fire(s1, t) == []
    assert runs_everywhere(pgl, "mn", 3) == [(o, 1) for o in OCCURRENCES]
    q1, q2 = queued_everywhere(pgl, "mn", 3)
    assert q1 == q2 == [(1, o) for o in OCCURRENCES]


def test_multi_node_the_tick_tells_only_the_firing_node(pgl, sessions):
    s1, s2 = sessions
    scheduled(pgl, "due")
    in_contact(sessions, "multi-node", lambda a, b: a[0] and b[0])
    pgl.node(1).sql("UPDATE pgrelay.schedule_entries SET next_run_at = now() - interval '1 second' WHERE name = 'due'")
    pgl.wait_replicated("SELECT next_run_at <= now() FROM pgrelay.schedule_entries WHERE name = 'due'")
    # the probe says it on both nodes; the tick only on node 1, the lowest live node
    assert [c.execute("SELECT schedule_due FROM pgrelay.queue_probe()").fetchone()[0] for c in sessions] == [True, True]
    def told():
        a, b = both_tick(sessions)
        assert b[2] is False, "node 2's tick said a schedule is due"
        return a[2]
    testlib.wait_for(told, "node 1's tick to say schedule_due", timeout=60, interval=0.1)
    # the Processor's statement, by the real clock
    assert [r[2] for r in fire(s1, None)] == ["queued"]
    pgl.wait_replicated("SELECT NOT (next_run_at <= now()) FROM pgrelay.schedule_entries WHERE name = 'due'")
    assert [t[2] for t in both_tick(sessions)] == [False, False]


def test_leader_mode_only_the_leader_fires(pgl, sessions):
    s1, s2 = sessions
    scheduled(pgl, "ld")
    in_contact(sessions, "leader", lambda a, b: a[1] and b[1] is False)
    for at in OCCURRENCES:
        t = at.replace(":00+00", ":05+00")
        assert fire(s2, t) == []
        assert [r[2] for r in fire(s1, t)] == ["queued"]
    assert runs_everywhere(pgl, "ld", 3) == [(o, 1) for o in OCCURRENCES]
    q1, q2 = queued_everywhere(pgl, "ld", 3)
    assert q1 == q2 == [(1, o) for o in OCCURRENCES]


def test_two_nodes_that_both_fire_queue_an_occurrence_once_while_they_replicate(pgl, sessions):
    """Single mode on both: each node believes it fires (a misconfiguration, or a handover)."""
    s1, s2 = sessions
    scheduled(pgl, "both")
    for k, at in enumerate(OCCURRENCES):
        first, second = (s1, s2) if k % 2 == 0 else (s2, s1)
        assert [r[2] for r in fire(first, at)] == ["queued"]
        pgl.wait_replicated("SELECT count(*) = 1 FROM pgrelay.schedule_runs WHERE schedule = 'both'"
                            " AND occurrence = %s", params=(at,))
        assert fire(second, at) == []
    assert [o for o, _ in runs_everywhere(pgl, "both", 3)] == OCCURRENCES
    q1, q2 = queued_everywhere(pgl, "both", 3)
    assert [r for _, r in q1] == OCCURRENCES


def test_a_split_queues_an_occurrence_on_each_side_and_the_runs_converge(pgl, sessions):
    """Both nodes fire the same occurrence while neither hears from the other: each queues it (a
    duplicate, never a miss). When the link returns, the two inserts of the run's key meet:
    last_update_wins keeps the one committed later, on both nodes."""
    s1, s2 = sessions
    scheduled(pgl, "split")
    for i, peer in ((1, 2), (2, 1)):
        pgl.node(i).sql("SELECT pglogical.alter_subscription_disable(%s, true)", (pgl.sub_name(i, peer),))
    try:
        assert [r[2] for r in fire(s1, T0)] == ["queued"]
        assert [r[2] for r in fire(s2, T0)] == ["queued"]
    finally:
        for i, peer in ((1, 2), (2, 1)):
            pgl.node(i).sql("SELECT pglogical.alter_subscription_enable(%s, true)", (pgl.sub_name(i, peer),))
    # node 2 committed later: its run wins on both nodes
    pgl.wait_replicated("SELECT node_id = 2 FROM pgrelay.schedule_runs WHERE schedule = 'split' AND occurrence = %s",
                        params=(T0,), timeout=60)
    assert runs_everywhere(pgl, "split", 1) == [(T0, 2)]
    pgl.wait_replicated("SELECT last_run_at = %s AND next_run_at > %s FROM pgrelay.schedule_entries WHERE name = 'split'",
                        params=(T0, T0))
    # the two events stay two, each owned by the node that queued it
    q1, q2 = queued_everywhere(pgl, "split", 2)
    assert sorted(q1) == sorted(q2) == [(1, T0), (2, T0)]
    # and the next occurrence is queued once again
    assert [r[2] for r in fire(s1, "2030-01-01 00:05:00+00")] == ["queued"]
    pgl.wait_replicated("SELECT count(*) = 2 FROM pgrelay.schedule_runs WHERE schedule = 'split'")
    assert fire(s2, "2030-01-01 00:05:00+00") == []
