"""Three pglogical nodes: when the lowest node dies, the lowest of the survivors (node 2, not
node 3) adopts its rows in multi-node mode and leads in leader mode; when it returns, node 1 leads
again. The helpers and the application are test_multinode.py's. PGRELAY_HA_NO_3NODES=1 leaves this
module out."""
import os

import pytest

import testlib
from testlib import pglogical_guard
from test_multinode import (DEAD_AFTER, leads, names, queue, register_channels, relay, relay_schema_for,
                            runs, stop, wait_done, wait_leader)


@pytest.fixture(scope="module")
def mesh3(require_pglogical):
    if os.environ.get("PGRELAY_HA_NO_3NODES") == "1":
        pytest.skip("PGRELAY_HA_NO_3NODES=1")
    pc = testlib.PglogicalCluster(n=3, node_ids=[1, 2, 3],
                                  conf=("wal_sender_timeout = 5s", "pg_relay.dead_after = '%s'" % DEAD_AFTER),
                                  schema=relay_schema_for(3), tables=["app.done"])
    try:
        pc.set_conflict_resolution("last_update_wins")
        register_channels(pc)
    except BaseException:
        pc.close()
        raise
    yield pc
    pc.close()


@pytest.fixture
def pgl3(request, mesh3):
    yield from pglogical_guard(request, mesh3)


def test_the_lowest_survivor_adopts_and_leads(pgl3, processors):
    n1, n2, n3 = pgl3.nodes
    procs = [relay(processors, n, "multi-node") for n in pgl3.nodes]
    probes = [queue(n, "local_jobs", ["three-%s-up" % n.name]) for n in pgl3.nodes]
    wait_done(pgl3, [p for ps in probes for p in ps])
    procs[0].kill()
    orphans = queue(n1, "jobs", names("orphan", 6))
    pgl3.wait_replicated("SELECT count(*) = 6 FROM pgrelay.queue WHERE payload = ANY(%s)",
                         params=(orphans,), nodes=[2, 3])
    pgl3.kill(1)
    procs[1].wait_log(r" node_adopted node=1 rows=6 by=2")
    wait_done(pgl3, orphans)
    assert all(r == [2] for r in runs(n2, orphans).values())
    assert not procs[2].lines("node_adopted")
    stop(procs[1], procs[2])

    pgl3.start(1)
    procs = [relay(processors, n, "leader") for n in pgl3.nodes]
    wait_leader(procs, 0)
    acquired = len(procs[1].lines("leader_acquired"))
    procs[0].kill()
    pgl3.kill(1)
    procs[1].wait_log(r" leader_acquired mode=leader node=2", count=acquired + 1)
    during = queue(n3, "jobs", names("three-leader", 4))
    wait_done(pgl3, during)
    assert all(r == [2] for r in runs(n3, during).values())
    assert leads(procs[1]) and not leads(procs[2])
    pgl3.start(1)
    procs[0] = relay(processors, n1, "leader")
    wait_leader(procs, 0)
    back = queue(n3, "jobs", names("three-back", 4))
    wait_done(pgl3, back)
    assert all(r == [1] for r in runs(n3, back).values())
    stop(*procs)
