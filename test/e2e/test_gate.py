"""The gate takes effect at once: when dispatch is paused, the ids the Processor fetched but has not
started are dropped, and the claim refuses the rest, so no event starts after pause() returned.
(Standby, lost leadership and adopted-away rows close the same gate: test/ha.)"""
import testlib

NAPS = """
CREATE TABLE done (p text, started timestamptz, finished timestamptz);
-- A handler that sleeps for as many seconds as its payload says, then records when it started.
CREATE FUNCTION nap(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM pg_sleep(p::float8);
    INSERT INTO done VALUES (p, t0, clock_timestamp());
END $$;
SELECT pgrelay.register('nap', 'sql', handler => 'nap(text)');
"""


def test_pause_drops_fetched_events_and_none_starts_after_it(db, processors):
    db.conn.execute(NAPS)
    db.sql("SELECT pgrelay.notify('nap', '0.3') FROM generate_series(1, 20)")
    # one event per transaction: the worker takes one id, the other 19 wait in the Processor
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=100ms", "--log-level=debug",
                   "--events-per-commit=1")
    # one fetch took all 20 ids; the one worker runs the first
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
                                       " AND query LIKE '%%process_one%%'") == 1, "the first event to run")
    db.sql("SELECT pgrelay.pause()")
    paused_at = db.scalar("SELECT clock_timestamp()")
    p.wait_log(r" paused reason=pgrelay.pause")
    p.wait_log(r" queue_dropped count=\d+ reason=paused")
    p.wait_log(r" batch ")                      # the pool is empty again: the drain is over
    assert db.scalar("SELECT count(*) FROM done WHERE started > %s", (paused_at,)) == 0
    assert db.scalar("SELECT count(*) FROM done") <= 1
    assert db.scalar("SELECT count(*) FROM pgrelay.queue") >= 19
    db.sql("SELECT pgrelay.resume()")
    p.wait_log(r" resumed ")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done WHERE started > %s", (paused_at,)) > 0,
                     "events to run again after resume()")
    assert p.stop() == 0


def test_pause_stops_a_batch_before_its_next_event(db, processors):
    """A batch claims its events together, and asks the gate again before each one: after
    pause() it starts none, and the events it did not start wait, queued, for resume()."""
    db.conn.execute(NAPS)
    db.sql("SELECT pgrelay.notify('nap', '0.3') FROM generate_series(1, 20)")
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=100ms")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
                                       " AND query LIKE '%%process_batch%%'") == 1, "a batch to run")
    db.sql("SELECT pgrelay.pause()")
    paused_at = db.scalar("SELECT clock_timestamp()")
    p.wait_log(r" paused reason=pgrelay.pause")
    p.wait_log(r" batch ")                      # the batch ended without starting more events
    assert db.scalar("SELECT count(*) FROM done WHERE started > %s", (paused_at,)) == 0
    left = db.scalar("SELECT count(*) FROM pgrelay.queue")
    assert left >= 16 and left + db.scalar("SELECT count(*) FROM done") == 20
    assert db.scalar("SELECT count(*) FROM pgrelay.log WHERE outcome <> 'ok'") == 0
    db.sql("SELECT pgrelay.resume()")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == 20, "every event after resume()")
    assert p.stop() == 0
