"""What a failover to an asynchronous standby and a split brain cost, and what a synchronous
standby keeps, on a real streaming pair (docs/guarantees.md). The promises pg_relay keeps are
proved elsewhere (the soak, the isolation specs, test_operations.py); these tests pin down what
happens around them, so that the documentation says exactly what it costs."""

import testlib

SETUP = """
CREATE EXTENSION pg_relay;
CREATE TABLE public.done (payload text);
CREATE FUNCTION public.record(p text) RETURNS void SECURITY DEFINER SET search_path = pg_catalog
LANGUAGE sql AS 'INSERT INTO public.done VALUES (p)';
SELECT pgrelay.register('jobs', 'sql', handler => 'public.record(text)');
"""


def sql(cluster, query, params=None):
    with cluster.connect() as c:
        cur = c.execute(query, params)
        return cur.fetchall() if cur.description else None


def drain(cluster):
    p = testlib.Processor(["-d", cluster.dsn(), "--once"])
    assert p.wait_exit() == 0


def test_async_failover_loses_what_the_standby_never_received():
    """Asynchronous replication: after a failover, an event queued on the old primary after the
    standby's last received WAL is gone (its producer saw it committed), and an event finished
    there is still queued on the new primary and runs again, once in the surviving history."""
    pair = testlib.StandbyPair()
    try:
        p = pair.primary
        with p.connect() as c:
            c.execute(SETUP)
            c.execute("SELECT pgrelay.notify('jobs', 'finished on the old primary only')")
        pair.wait_replayed()
        pair.standby.stop()             # the standby falls behind: it receives nothing from now on
        drain(p)
        assert sql(p, "SELECT payload FROM public.done") == [("finished on the old primary only",)]
        sql(p, "SELECT pgrelay.notify('jobs', 'queued on the old primary only')")
        pair.kill_primary()
        pair.standby.start()
        pair.promote()
        new = pair.primary
        assert sql(new, "SELECT payload FROM pgrelay.queue") == [("finished on the old primary only",)]
        drain(new)
        assert sql(new, "SELECT payload FROM public.done") == [("finished on the old primary only",)]
        assert sql(new, "SELECT payload, outcome FROM pgrelay.log") == [("finished on the old primary only", "ok")]
        assert sql(new, "SELECT count(*) FROM pgrelay.queue") == [(0,)]
    finally:
        pair.close()


def test_split_brain_runs_pending_events_on_both_sides():
    """Two writable servers (the standby promoted while the primary still runs): a Processor on
    each runs every event that was pending at the split - on both sides - and an event queued on
    one side after the split exists on that side only. Fencing the old primary is the operator's
    job; pg_relay cannot see a split brain."""
    pair = testlib.StandbyPair()
    try:
        old, new = pair.primary, pair.standby
        with old.connect() as c:
            c.execute(SETUP)
            for n in range(3):
                c.execute("SELECT pgrelay.notify('jobs', %s)", ("pending %d" % n,))
        pair.wait_replayed()
        new.promote()
        with new.connect() as c:
            testlib.wait_for(lambda: not c.execute("SELECT pg_is_in_recovery()").fetchone()[0], "the promotion")
        sql(old, "SELECT pgrelay.notify('jobs', 'after the split, old side')")
        sql(new, "SELECT pgrelay.notify('jobs', 'after the split, new side')")
        drain(old)
        drain(new)
        pending = [("pending %d" % n,) for n in range(3)]
        assert sql(old, "SELECT payload FROM public.done ORDER BY 1") == sorted(pending + [("after the split, old side",)])
        assert sql(new, "SELECT payload FROM public.done ORDER BY 1") == sorted(pending + [("after the split, new side",)])
    finally:
        pair.close()


def test_a_synchronous_standby_has_every_acknowledged_commit():
    """With synchronous replication a commit returns once the standby has it: every event a
    producer saw queued, and every outcome the Processor saw recorded, survives the primary's
    death on the promoted standby."""
    pair = testlib.StandbyPair(conf=("synchronous_standby_names = '*'",))
    try:
        p = pair.primary
        with p.connect() as c:
            c.execute(SETUP)
            for n in range(5):
                c.execute("SELECT pgrelay.notify('jobs', %s)", ("event %d" % n,))
        drain(p)
        with p.connect() as c:
            for n in range(5, 8):
                c.execute("SELECT pgrelay.notify('jobs', %s)", ("event %d" % n,))
        pair.kill_primary()             # no wait for replay: every acknowledged commit is there
        pair.promote()
        new = pair.primary
        with new.connect() as c:
            c.execute("ALTER SYSTEM SET synchronous_standby_names = ''")
            c.execute("SELECT pg_reload_conf()")
        assert sql(new, "SELECT count(*) FROM public.done") == [(5,)]
        assert sql(new, "SELECT payload FROM pgrelay.queue ORDER BY 1") == [("event %d" % n,) for n in range(5, 8)]
        drain(new)
        assert sql(new, "SELECT count(*), count(DISTINCT payload) FROM public.done") == [(8, 8)]
    finally:
        pair.close()
