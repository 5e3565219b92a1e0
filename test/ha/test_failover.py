"""A Processor on a multi-host conninfo (target_session_attrs=read-write) keeps draining across
the death of its primary (pg_ctl stop -m immediate) and the promotion of the streaming standby:
every event committed before the kill and received by the standby is done, exactly once for SQL
handlers (the handler's row and the end of its event commit together, so the promoted node
either has both or neither)."""
import testlib

SETUP = """
CREATE EXTENSION pg_relay;
CREATE TABLE done (n bigserial PRIMARY KEY, payload text NOT NULL, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION record(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(0.005);
    INSERT INTO done (payload) VALUES (p);
END $$;
SELECT pgrelay.register('jobs', 'sql', handler => 'record(text)', max_attempts => 1);
"""


def test_processor_drains_across_primary_kill_and_promotion(standby_pair, processors):
    pair = standby_pair
    with pair.primary.connect() as c:
        c.execute("CREATE DATABASE relay")
    with pair.primary.connect("relay") as c:
        c.execute(SETUP)
        c.execute("SELECT pgrelay.notify('jobs', 'e' || n) FROM generate_series(1, 400) n")
    pair.wait_replayed()                         # every event is on the standby too
    p = processors("-d", pair.conninfo("relay"), "--workers=2", "--poll-interval=100ms", "--reconnect-max=500ms")
    with pair.primary.connect("relay") as c:
        testlib.wait_for(lambda: c.execute("SELECT count(*) FROM done").fetchone()[0] >= 50,
                         "the Processor to be under way")
    pair.kill_primary()                          # mid-drain
    pair.promote()
    with pair.primary.connect("relay") as c:     # the promoted node
        testlib.wait_for(lambda: c.execute("SELECT count(*) FROM pgrelay.queue").fetchone()[0] == 0,
                         "the promoted node's queue to drain", timeout=60)
        assert c.execute("SELECT count(*), count(DISTINCT payload) FROM done").fetchone() == (400, 400)
        # one attempt each, as the promoted node's log says
        assert c.execute("SELECT count(*), count(DISTINCT event_id) FROM pgrelay.log WHERE outcome = 'ok'"
                         ).fetchone() == (400, 400)
    assert p.lines("reconnecting")
    assert p.stop() == 0
