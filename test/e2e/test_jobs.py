"""Keys, notify_many(), cancel() and snooze through a real Processor and many producer sessions."""
import threading

import psycopg

import testlib

SETUP = """
CREATE TABLE done (n bigserial PRIMARY KEY, payload text, backend int);
CREATE SEQUENCE asked;  -- nextval() is not rolled back: it counts the snooze's attempts
CREATE FUNCTION record(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
BEGIN
    -- 'wait': hold until the test lets go of advisory lock 42 (an attempt that is running)
    IF p = 'wait' THEN
        PERFORM pg_advisory_xact_lock(42);
    END IF;
    -- 'snooze once': the first attempt asks for a short delay, the next one is done
    IF p = 'snooze once' AND nextval('asked') = 1 THEN
        INSERT INTO done (payload) VALUES ('snooze once (asked)');  -- rolled back with the snooze
        RAISE EXCEPTION 'not yet' USING ERRCODE = 'PGSNZ', DETAIL = '0.05';
    END IF;
    INSERT INTO done (payload, backend) VALUES (p, pg_backend_pid());
END
$$;
"""


def make_channel(db):
    db.conn.execute(SETUP)
    db.sql("SELECT pgrelay.register('jobs', 'sql', handler => 'record(text)')")


def producers(db, n, work):
    """Runs work(conn, i) in n sessions at once, each with its own connection; re-raises the first error."""
    errors = []
    start = threading.Barrier(n)

    def run(i):
        try:
            with psycopg.connect(db.dsn, autocommit=True) as c:
                start.wait()
                work(c, i)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_concurrent_producers_leave_one_waiting_event_per_key(db):
    """Sixteen sessions queue 40 events each over five keys at once, in every key mode: five events
    wait, each returned id is the event that stands for its key, and nothing else was queued."""
    make_channel(db)
    modes = ("keep", "replace", "debounce")
    returned = {}

    def work(c, i):
        for j in range(40):
            key = "k%d" % ((i + j) % 5)
            eid = c.execute("SELECT pgrelay.notify('jobs', %s, key => %s, key_mode => %s)",
                            ("%d.%d" % (i, j), key, modes[(i + j) % 3])).fetchone()[0]
            returned.setdefault(key, set()).add(eid)

    producers(db, 16, work)
    rows = db.sql("SELECT key, event_id FROM pgrelay.queue ORDER BY key")
    assert [k for k, _ in rows] == ["k0", "k1", "k2", "k3", "k4"]
    for key, eid in rows:
        assert returned[key] == {eid}, key
    assert db.scalar("SELECT sum(keyed) FROM pgrelay.queue_depth WHERE channel = 'jobs'") == 5


def test_keyed_events_run_once_each_while_producers_keep_queueing(db, processors):
    """With the Processor draining while producers queue, every event that stood for a key runs
    exactly once (one log row, one handler call), and calls merged into waiting events ran
    nothing of their own."""
    make_channel(db)
    p = processors("-d", db.dsn, "--workers=4")

    def work(c, i):
        for j in range(50):
            c.execute("SELECT pgrelay.notify('jobs', %s, key => %s, key_mode => 'replace')",
                      ("%d.%d" % (i, j), "k%d" % (j % 3)))

    producers(db, 8, work)
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "the queue to drain")
    ran = db.scalar("SELECT count(*) FROM done")
    assert ran == db.scalar("SELECT count(DISTINCT event_id) FROM pgrelay.log WHERE outcome = 'ok'")
    assert ran == db.scalar("SELECT count(*) FROM pgrelay.log")
    assert 3 <= ran <= 400
    assert p.stop() == 0


def test_notify_many_queues_each_payload_once(db, processors):
    make_channel(db)
    ids = db.scalar("SELECT pgrelay.notify_many('jobs', array_agg(n::text ORDER BY n)) FROM generate_series(1, 500) n")
    assert len(ids) == len(set(ids)) == 500
    p = processors("-d", db.dsn, "--once", "--workers=2")
    assert p.wait_exit() == 0
    assert db.scalar("SELECT count(*) FROM done") == 500
    assert db.scalar("SELECT count(DISTINCT payload) FROM done") == 500


def test_a_snoozed_event_runs_again_without_spending_an_attempt(db, processors):
    make_channel(db)
    db.sql("SELECT pgrelay.register('jobs', max_attempts => 1)")
    eid = db.scalar("SELECT pgrelay.notify('jobs', 'snooze once')")
    p = processors("-d", db.dsn, "--log-level=debug")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done WHERE payload = 'snooze once'") == 1,
                     "the snoozed event to run again")
    log = db.sql("SELECT outcome, attempt, sqlstate FROM pgrelay.log WHERE event_id = %s ORDER BY id", (eid,))
    assert log == [("snoozed", 1, "PGSNZ"), ("ok", 1, None)]
    # the handler's work of the snoozed attempt was rolled back
    assert db.scalar("SELECT count(*) FROM done WHERE payload = 'snooze once (asked)'") == 0
    assert p.lines("snoozed")
    assert p.stop() == 0


def test_cancel_of_a_running_event_cancels_nothing_and_a_waiting_one_never_runs(db, processors):
    """An event whose attempt runs is reported running and finishes as it will; a scheduled one
    cancelled before it is due never runs. No event is both run and cancelled."""
    make_channel(db)
    hold = psycopg.connect(db.dsn, autocommit=True)
    try:
        hold.execute("SELECT pg_advisory_lock(42)")
        running = db.scalar("SELECT pgrelay.notify('jobs', 'wait')")
        later = db.scalar("SELECT pgrelay.notify('jobs', 'later', now() + interval '1 hour')")
        p = processors("-d", db.dsn, "--workers=2")
        testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                                           " AND objid = 42 AND NOT granted") == 1,
                         "the handler to wait for the lock")
        assert db.scalar("SELECT pgrelay.cancel(%s)", (running,)) == "running"
        assert db.scalar("SELECT pgrelay.cancel(%s)", (later,)) == "cancelled"
        hold.execute("SELECT pg_advisory_unlock(42)")
        testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "the running event to finish")
    finally:
        hold.close()
    assert db.sql("SELECT payload FROM done") == [("wait",)]
    assert db.sql("SELECT event_id, outcome FROM pgrelay.log ORDER BY event_id") == [
        (running, "ok"), (later, "cancelled")]
    assert db.scalar("SELECT pgrelay.cancel(%s)", (running,)) == "finished"
    assert p.stop() == 0
