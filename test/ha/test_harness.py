"""The HA harness itself, on real servers: a streaming standby that promotes, a libpq multi-host
conninfo that follows the promotion, and pglogical 2 meshes of two and three nodes that lose a
node (killed, or hung with SIGSTOP) and heal. pg_relay's multi-node tests stand on this.

Run from the repository root:
    /usr/bin/python3 -m pytest -q test/ha
PGRELAY_HA_NO_3NODES=1 leaves out the three-node tests (about 4 s of set-up here).
"""
import os

import psycopg
import pytest

import testlib
from testlib import pglogical_guard

ITEMS = "CREATE TABLE public.items (id bigint PRIMARY KEY, origin text NOT NULL, body text)"


def items_schema(n):
    """The caller's schema hook: the table, and a per-node sequence (sequences are not
    replicated) so that ids never collide: node i hands out i, i+n, i+2n..."""
    def create(node):
        node.sql(ITEMS)
        node.sql("CREATE SEQUENCE public.items_id_seq START %d INCREMENT %d" % (node.index, n))
        node.sql("ALTER TABLE public.items ALTER id SET DEFAULT nextval('public.items_id_seq')")
    return create


def insert(node, body):
    return node.scalar("INSERT INTO items (origin, body) VALUES (%s, %s) RETURNING id", (node.name, body))


def frozen(pids):
    """Whether every process is stopped (SIGSTOP) or gone."""
    return all(testlib.proc_state(p) in ("T", "t", None) for p in pids)


# ---- streaming standby --------------------------------------------------------------------

def test_standby_receives_rows_and_promotes(standby_pair):
    pair = standby_pair
    with pair.primary.connect() as p:
        p.execute("CREATE TABLE t (id int PRIMARY KEY)")
        p.execute("INSERT INTO t VALUES (1)")
    pair.wait_replayed()
    standby = pair.standby
    with standby.connect() as s:
        assert s.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
        assert s.execute("SELECT array_agg(id) FROM t").fetchone()[0] == [1]
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            s.execute("INSERT INTO t VALUES (2)")
    pair.kill_primary()
    pair.promote()
    assert pair.primary is standby and pair.standby is None
    with standby.connect() as s:
        assert s.execute("SELECT pg_is_in_recovery()").fetchone()[0] is False
        s.execute("INSERT INTO t VALUES (2)")
        assert s.execute("SELECT array_agg(id ORDER BY id) FROM t").fetchone()[0] == [1, 2]


def test_multi_host_conninfo_reaches_the_new_primary_after_promotion(standby_pair):
    pair = standby_pair
    old, new = pair.primary, pair.standby
    conninfo = pair.conninfo()
    assert "target_session_attrs=read-write" in conninfo
    with psycopg.connect(conninfo, autocommit=True) as c:
        assert c.execute("SELECT inet_server_port()").fetchone()[0] == old.port
    pair.kill_primary()
    # Neither server is read-write now: libpq says so instead of settling for the standby.
    with pytest.raises(psycopg.OperationalError, match="read-only"):
        psycopg.connect(conninfo)
    pair.promote()
    with psycopg.connect(conninfo, autocommit=True) as c:
        assert c.execute("SELECT inet_server_port(), pg_is_in_recovery()").fetchone() == (new.port, False)
        c.execute("CREATE TABLE after_failover (id int)")


# ---- pglogical, two nodes -----------------------------------------------------------------

@pytest.fixture(scope="module")
def pgl2_module(require_pglogical):
    pc = testlib.PglogicalCluster(n=2, node_ids=[11, 22], conf=("wal_sender_timeout = 5s",),
                                  schema=items_schema(2), tables=["public.items"])
    yield pc
    pc.close()


@pytest.fixture
def pgl(request, pgl2_module):
    yield from pglogical_guard(request, pgl2_module)


def test_nodes_have_their_ids_extension_and_full_mesh(pgl):
    assert [n.scalar("SHOW pg_relay.node_id") for n in pgl.nodes] == ["11", "22"]
    for n in pgl.nodes:
        n.sql("CREATE EXTENSION IF NOT EXISTS pg_relay")
    # pg_relay itself reads the setting as this node's id
    assert [n.scalar("SELECT pgrelay._this_node()") for n in pgl.nodes] == [11, 22]
    assert [n.scalar("SELECT node_name FROM pglogical.local_node JOIN pglogical.node USING (node_id)")
            for n in pgl.nodes] == ["n1", "n2"]
    for i, peer in ((1, 2), (2, 1)):
        (row,) = pgl.subscription_status(i)
        assert row["subscription_name"] == "n%d_from_n%d" % (i, peer)
        assert row["provider_node"] == "n%d" % peer
        assert row["status"] == "replicating"
        assert row["forward_origins"] == []
        assert "port=%d" % pgl.node(peer).cluster.port in row["provider_dsn"]
        assert pgl.slot_active(peer, i) is True
    assert [n.scalar("SELECT array_agg(relname::text) FROM pglogical.replication_set_table"
                     " JOIN pglogical.replication_set USING (set_id) JOIN pg_class ON oid = set_reloid"
                     " WHERE set_name = 'default'") for n in pgl.nodes] == [["items"], ["items"]]


def test_rows_flow_both_ways_on_two_nodes(pgl):
    n1, n2 = pgl.nodes
    a = insert(n1, "from n1")
    b = insert(n2, "from n2")
    pgl.wait_replicated("SELECT count(*) = 2 FROM items WHERE id IN (%s, %s)", params=(a, b))
    n2.sql("UPDATE items SET body = 'changed on n2' WHERE id = %s", (a,))
    n1.sql("DELETE FROM items WHERE id = %s", (b,))
    pgl.wait_replicated("SELECT body = 'changed on n2' FROM items WHERE id = %s", params=(a,))
    pgl.wait_replicated("SELECT NOT EXISTS (SELECT FROM items WHERE id = %s)", params=(b,))
    # no echo (forward_origins '{}'): the change made on n2 did not come back to it as a new row
    assert [n.scalar("SELECT count(*) FROM items WHERE id IN (%s, %s)", (a, b)) for n in pgl.nodes] == [1, 1]


def test_killed_node_is_reported_down_and_its_slot_inactive(pgl):
    pgl.kill(2)
    testlib.wait_for(lambda: pgl.status(1, 2) == "down", "n1's subscription to n2 to be down")
    testlib.wait_for(lambda: pgl.slot_active(1, 2) is False, "n1's slot for n2 to be inactive")


def test_restarted_node_resumes_and_rows_flow_both_ways(pgl):
    n1, n2 = pgl.nodes
    pgl.kill(2)
    testlib.wait_for(lambda: pgl.status(1, 2) == "down", "n1's subscription to n2 to be down")
    during = insert(n1, "written while n2 was down")
    kicks = len(pgl.kicks)
    pgl.start(2)
    # the survivor's subscription was down: resume_subscriptions disabled and enabled it
    assert (1, "n1_from_n2") in pgl.kicks[kicks:]
    assert pgl.status(1, 2) == "replicating" and pgl.status(2, 1) == "replicating"
    after = insert(n2, "written after the restart")
    pgl.wait_replicated("SELECT count(*) = 2 FROM items WHERE id IN (%s, %s)", params=(during, after))


def test_frozen_node_stays_replicating_until_its_slot_times_out_then_flows_after_thaw(pgl):
    n1, n2 = pgl.nodes
    assert pgl.slot_active(1, 2) is True
    pids = n2.cluster.pids()
    pgl.freeze(2)
    assert frozen(pids)
    assert pgl.status(1, 2) == "replicating"
    # wal_sender_timeout (5 s here) ends n1's walsender for n2; nothing else notices the hang
    testlib.wait_for(lambda: pgl.slot_active(1, 2) is False, "n1's slot for n2 to go inactive", timeout=60)
    assert pgl.status(1, 2) == "replicating"
    during = insert(n1, "written while n2 was frozen")
    pgl.thaw(2)
    after = insert(n2, "written after the thaw")
    pgl.wait_replicated("SELECT count(*) = 2 FROM items WHERE id IN (%s, %s)", params=(during, after))


def test_thaw_after_a_short_freeze_flows_both_ways(pgl):
    n1, n2 = pgl.nodes
    pgl.freeze(2)
    during = insert(n1, "written during a short freeze")
    pgl.thaw(2)
    after = insert(n2, "written after the short freeze")
    pgl.wait_replicated("SELECT count(*) = 2 FROM items WHERE id IN (%s, %s)", params=(during, after))


def test_last_update_wins_converges_concurrent_updates(pgl):
    n1, n2 = pgl.nodes
    row = insert(n1, "original")
    pgl.wait_replicated("SELECT count(*) = 1 FROM items WHERE id = %s", params=(row,))
    pgl.set_conflict_resolution("last_update_wins")
    try:
        assert [n.scalar("SHOW pglogical.conflict_resolution") for n in pgl.nodes] == ["last_update_wins"] * 2
        # concurrent: neither update reaches the other node before both are committed
        for i, peer in ((1, 2), (2, 1)):
            pgl.node(i).sql("SELECT pglogical.alter_subscription_disable(%s, true)", (pgl.sub_name(i, peer),))
        n1.sql("UPDATE items SET body = 'n1 first' WHERE id = %s", (row,))
        n2.sql("UPDATE items SET body = 'n2 later' WHERE id = %s", (row,))
        for i, peer in ((1, 2), (2, 1)):
            pgl.node(i).sql("SELECT pglogical.alter_subscription_enable(%s, true)", (pgl.sub_name(i, peer),))
        pgl.wait_replicated("SELECT body = 'n2 later' FROM items WHERE id = %s", params=(row,))
    finally:
        pgl.set_conflict_resolution("apply_remote")


def test_close_stops_a_frozen_mesh_and_removes_its_directories(require_pglogical):
    pc = testlib.PglogicalCluster(n=2, subscribe=False)
    pids = [p for n in pc.nodes for p in n.cluster.pids()]
    pc.freeze(2)
    pc.close()
    assert not os.path.exists(pc.path) or testlib.keep_dirs()
    # every server process has exited (a zombie only waits for its parent to collect it)
    assert [p for p in pids if testlib.proc_state(p) not in (None, "Z")] == []


# ---- pglogical, three nodes ---------------------------------------------------------------

@pytest.fixture(scope="module")
def pgl3_module(require_pglogical):
    if os.environ.get("PGRELAY_HA_NO_3NODES") == "1":
        pytest.skip("PGRELAY_HA_NO_3NODES=1")
    pc = testlib.PglogicalCluster(n=3, conf=("wal_sender_timeout = 5s",),
                                  schema=items_schema(3), tables=["public.items"])
    yield pc
    pc.close()


@pytest.fixture
def pgl3(request, pgl3_module):
    yield from pglogical_guard(request, pgl3_module)


def test_rows_flow_between_all_three_nodes(pgl3):
    ids = [insert(n, "from " + n.name) for n in pgl3.nodes]
    pgl3.wait_replicated("SELECT count(*) = 3 FROM items WHERE id = ANY(%s)", params=(ids,))
    for n in pgl3.nodes:
        assert n.scalar("SELECT array_agg(origin ORDER BY origin) FROM items WHERE id = ANY(%s)",
                        (ids,)) == ["n1", "n2", "n3"]


def test_three_nodes_survive_a_killed_node_and_resume_after_restart(pgl3):
    n1, n2, n3 = pgl3.nodes
    pgl3.kill(2)
    for i in (1, 3):
        testlib.wait_for(lambda: pgl3.status(i, 2) == "down", "n%d's subscription to n2 to be down" % i)
        testlib.wait_for(lambda: pgl3.slot_active(i, 2) is False, "n%d's slot for n2 to be inactive" % i)
    # the two survivors still replicate with each other
    a = insert(n1, "n1 while n2 is down")
    pgl3.wait_replicated("SELECT count(*) = 1 FROM items WHERE id = %s", params=(a,), nodes=[3])
    pgl3.start(2)
    b = insert(n2, "n2 after its restart")
    c = insert(n3, "n3 after n2's restart")
    pgl3.wait_replicated("SELECT count(*) = 3 FROM items WHERE id IN (%s, %s, %s)", params=(a, b, c))
