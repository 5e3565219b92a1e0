"""Recurring events fired by a real Processor: the probe sees a due schedule, the Processor runs
pgrelay._schedule_fire() on its control connection, and the occurrence's event runs like any other.

A schedule's time is made to have come by moving its next_run_at back (as a superuser): the same
row the clock would reach, without a test waiting for the next minute."""
import os

import testlib

SETUP = """
CREATE TABLE done (n bigserial PRIMARY KEY, payload text);
CREATE FUNCTION record(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql
AS $$ INSERT INTO done (payload) VALUES (p) $$;
"""


THIS_MINUTE = "date_trunc('minute', now())"


def make_schedule(db, name, cron, next_run, **kw):
    """A schedule on channel jobs whose next run is at the SQL expression next_run (in the past)."""
    args = "".join(", %s => %%s" % k for k in kw)
    db.sql("SELECT pgrelay.schedule(%%s, 'jobs', %%s%s)" % args, (name, cron) + tuple(kw.values()))
    db.sql("UPDATE pgrelay.schedule_entries SET next_run_at = %s WHERE name = %%s" % next_run, (name,))


def setup_channel(db):
    db.conn.execute(SETUP)
    db.sql("SELECT pgrelay.register('jobs', 'sql', handler => 'record(text)')")


def runs(db, name):
    return db.sql("SELECT outcome, late, event_id IS NOT NULL FROM pgrelay.schedule_runs WHERE schedule = %s",
                  (name,))


def test_a_due_schedule_is_fired_once_and_its_event_runs(db, processors):
    setup_channel(db)
    make_schedule(db, "every_minute", "* * * * *", THIS_MINUTE, payload="tick")
    p = processors("-d", db.dsn)
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") >= 1, "the scheduled event to run")
    # (a new minute may begin while the test runs: its occurrence fires too, and is left out here)
    first = "SELECT %s FROM pgrelay.schedule_runs WHERE schedule = 'every_minute' ORDER BY occurrence LIMIT 1"
    assert db.sql(first % "outcome, late, event_id IS NOT NULL") == [("queued", False, True)]
    eid = db.scalar(first % "event_id")
    assert db.sql("SELECT outcome FROM pgrelay.log WHERE event_id = %s", (eid,)) == [("ok",)]
    assert db.scalar("SELECT payload FROM done ORDER BY n LIMIT 1") == "tick"
    line = p.wait_log("schedule_fired").string
    assert "schedule=every_minute" in line and "outcome=queued" in line and "event_id=%d" % eid in line
    # its next run is counted from the occurrence: after the time it fired, each occurrence once
    assert db.scalar("SELECT s.next_run_at > r.fired_at FROM pgrelay.schedules s JOIN pgrelay.schedule_runs r"
                     " ON r.schedule = s.name WHERE s.name = 'every_minute' ORDER BY r.occurrence DESC LIMIT 1")
    assert p.stop() == 0
    assert len(runs(db, "every_minute")) in (1, 2)


def test_a_missed_run_is_caught_up_once_or_skipped(db, processors):
    """No Processor ran for hours: catch_up once queues the first missed occurrence, once; skip
    records it as skipped and queues nothing."""
    setup_channel(db)
    make_schedule(db, "nightly", '0 3 * * *', "now() - interval '3 hours'", payload="caught up")
    make_schedule(db, "nightly_skip", '0 3 * * *', "now() - interval '3 hours'", payload="never", catch_up="skip")
    p = processors("-d", db.dsn)
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == 1, "the caught-up event to run")
    testlib.wait_for(lambda: runs(db, "nightly_skip") != [], "the skipped run to be recorded")
    assert runs(db, "nightly") == [("queued", True, True)]
    assert runs(db, "nightly_skip") == [("skipped", True, False)]
    assert db.sql("SELECT payload FROM done") == [("caught up",)]
    skipped = p.wait_log("schedule_fired.*schedule=nightly_skip").string
    assert "outcome=skipped" in skipped and "late=t" in skipped
    assert p.stop() == 0


def test_schedules_fire_while_paused_and_their_events_wait(db, processors):
    setup_channel(db)
    db.sql("SELECT pgrelay.pause()")
    make_schedule(db, "paused", "* * * * *", THIS_MINUTE)
    p = processors("-d", db.dsn)
    testlib.wait_for(lambda: runs(db, "paused") != [], "the schedule to fire while paused")
    assert db.scalar("SELECT count(*) FROM pgrelay.queue WHERE channel = 'jobs'") == 1
    assert db.scalar("SELECT count(*) FROM done") == 0
    db.sql("SELECT pgrelay.resume()")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == 1, "the event to run after resume()")
    assert p.stop() == 0


def test_an_occurrence_the_channel_refuses_is_a_warning_and_the_schedule_goes_on(db, processors):
    setup_channel(db)
    make_schedule(db, "refused", "* * * * *", THIS_MINUTE)
    db.sql("SELECT pgrelay.register('jobs', active => false)")
    p = processors("-d", db.dsn)
    line = p.wait_log("schedule_failed").string
    assert "schedule=refused" in line and "is not active" in line
    assert runs(db, "refused") == [("failed", False, False)]
    assert db.scalar("SELECT count(*) FROM pgrelay.queue") == 0
    assert db.scalar("SELECT next_run_at > now() FROM pgrelay.schedules WHERE name = 'refused'")
    assert p.stop() == 0


def test_a_standby_fires_nothing(private_cluster, processors):
    """The probe of a standby never says a schedule is due: its primary fires."""
    primary = private_cluster
    with primary.connect() as k:
        k.execute(SETUP)
        k.execute("SELECT pgrelay.register('jobs', 'sql', handler => 'record(text)')")
        k.execute("SELECT pgrelay.schedule('primary_only', 'jobs', '* * * * *')")
        k.execute("UPDATE pgrelay.schedule_entries SET next_run_at = " + THIS_MINUTE)
    standby = primary.standby(os.path.join(testlib.work_dir("standby-"), "s"))
    try:
        with standby.connect() as k:
            testlib.wait_for(lambda: k.execute("SELECT count(*) FROM pgrelay.schedule_entries").fetchone()[0] == 1,
                             "the schedule to reach the standby")
        p = processors("-d", standby.dsn(), "--poll-interval=50ms", "--log-level=debug")
        p.wait_log(r" standby_waiting ")
        p.wait_log(r" probe ", count=5)
        assert not p.lines("schedule_fired") and not p.lines("schedule_fire_failed")
        with standby.connect() as k:
            assert k.execute("SELECT count(*) FROM pgrelay.schedule_runs").fetchone()[0] == 0
        assert p.stop() == 0
    finally:
        standby.stop("immediate")
