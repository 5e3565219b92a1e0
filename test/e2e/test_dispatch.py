"""The Processor's poll/drain/dispatch loop with SQL actions: bursts, ordering, concurrency modes,
retries and timeouts."""
import json
import re

import pytest

import testlib

SETUP = """
CREATE TABLE done (n bigserial PRIMARY KEY, payload text, started timestamptz, finished timestamptz,
                   peers int, backend int);
CREATE FUNCTION record(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$
    INSERT INTO done (payload, started, finished, backend)
    VALUES (p, clock_timestamp(), clock_timestamp(), pg_backend_pid()) $$;
GRANT INSERT, SELECT ON done TO PUBLIC;
"""


def make_channel(db, channel="jobs", handler="record(text)"):
    if not db.scalar("SELECT to_regclass('done') IS NOT NULL"):
        db.conn.execute(SETUP)
    db.sql("SELECT pgrelay.register(%s, 'sql', handler => %s)", (channel, handler))


def batch_lines(p):
    return [dict(re.findall(r"(\w+)=(\S+)", l)) for l in p.lines("batch")]


def test_burst_of_1000_is_drained_in_one_batch(db, processors):
    make_channel(db)
    p = processors("-d", db.dsn, "--log-level=debug", "--workers=4")
    p.wait_log(r" probe has_work=f")
    db.sql("SELECT count(pgrelay.notify('jobs', n::text)) FROM generate_series(1, 1000) n")
    p.wait_log(r" batch ")
    batches = batch_lines(p)
    assert len(batches) == 1
    assert batches[0]["processed"] == "1000" and batches[0]["ok"] == "1000"
    assert batches[0]["failed"] == "0" and batches[0]["retried"] == "0"
    assert db.scalar("SELECT count(*) FROM done") == 1000
    assert db.scalar("SELECT count(DISTINCT payload) FROM done") == 1000
    assert db.scalar("SELECT count(*) FROM pgrelay.log WHERE outcome = 'ok'") == 1000
    assert db.scalar("SELECT count(*) FROM pgrelay.queue") == 0
    # the work was spread over the workers, not run by one
    assert db.scalar("SELECT count(DISTINCT backend) FROM done") > 1
    assert p.stop() == 0


def test_once_drains_what_is_due_and_exits_0(db, processors):
    make_channel(db)
    db.sql("SELECT pgrelay.notify('jobs', n::text) FROM generate_series(1, 50) n")
    db.sql("SELECT pgrelay.notify('jobs', 'tomorrow', now() + interval '1 day')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    assert db.scalar("SELECT count(*) FROM done") == 50
    assert db.sql("SELECT payload FROM pgrelay.queue") == [("tomorrow",)]
    assert p.lines("stopping")[0].find("reason=once") > 0


def test_one_worker_follows_run_at_then_queued_at(db, processors):
    make_channel(db)
    db.sql("""INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, run_at, queued_at) VALUES
                (0, 'jobs', 'sql', 'c', now() - interval '1 minute', now() - interval '9 minutes'),
                (0, 'jobs', 'sql', 'a', now() - interval '3 minutes', now() - interval '1 minute'),
                (0, 'jobs', 'sql', 'b', now() - interval '2 minutes', now() - interval '8 minutes'),
                (0, 'jobs', 'sql', 'a2', now() - interval '3 minutes', now() - interval '2 seconds');
              UPDATE pgrelay.queue SET event_id = id""")
    p = processors("-d", db.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    assert [r[0] for r in db.sql("SELECT payload FROM done ORDER BY n")] == ["a", "a2", "b", "c"]


def test_unknown_action_type_is_skipped_and_reported_once(db, processors):
    """A custom action type this Processor cannot run (run_order 1: offered before sql) is skipped
    every time it is offered, and reported at warn level once; the sql event still runs."""
    make_channel(db)
    db.sql("INSERT INTO pgrelay.action_types VALUES ('regress_other', 1, 'test')")
    db.sql("INSERT INTO pgrelay.channels (channel, action_type) VALUES ('other', 'regress_other')")
    db.sql("SELECT pgrelay.notify('jobs', 'sql event')")
    db.sql("SELECT pgrelay.notify('other', 'other event')")
    p = processors("-d", db.dsn, "--once", "--workers=1", "--log-level=trace")
    assert p.wait_exit() == 0
    done = p.lines("event_done")
    assert "channel=other" in done[0] and "outcome=skipped" in done[0]
    assert "channel=jobs" in done[1] and "outcome=ok" in done[1]
    assert len([l for l in done if "channel=other" in l]) == 2       # offered twice (two rounds)
    warned = p.lines("attempt_failed")
    assert len([l for l in warned if " warn " in l]) == 1
    assert "unknown action type regress_other" in warned[0]


PEERS = """
CREATE TABLE seen (channel text, payload text, peers int, started timestamptz, finished timestamptz);
GRANT INSERT ON seen TO PUBLIC;
-- peers(): how many sessions are running a handler of this channel right now (this one included).
-- The handler names its session after the channel for the length of its transaction.
CREATE FUNCTION peers(ch text) RETURNS int LANGUAGE sql AS $$
    SELECT count(*)::int FROM pg_stat_activity
    WHERE application_name = 'pgr-test:' || ch AND state = 'active' $$;
-- serial_h looks for company after a pause long enough for any overlap to show.
CREATE FUNCTION serial_h(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp(); n int;
BEGIN
    PERFORM set_config('application_name', 'pgr-test:serial', true);
    PERFORM pg_sleep(0.05);
    n := peers('serial');
    INSERT INTO seen VALUES ('serial', p, n, t0, clock_timestamp());
END $$;
-- parallel_h waits (up to 1 s) until another event of its channel runs beside it.
CREATE FUNCTION parallel_h(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp(); n int;
BEGIN
    PERFORM set_config('application_name', 'pgr-test:parallel', true);
    LOOP
        n := peers('parallel');
        EXIT WHEN n >= 2 OR clock_timestamp() > t0 + interval '1 second';
        PERFORM pg_sleep(0.01);
    END LOOP;
    INSERT INTO seen VALUES ('parallel', p, n, t0, clock_timestamp());
END $$;
"""


def test_channel_mode_never_overlaps_while_parallel_does(db, processors):
    db.conn.execute(PEERS)
    db.sql("SELECT pgrelay.register('serial', 'sql', handler => 'serial_h(text)', concurrency_mode => 'channel')")
    db.sql("SELECT pgrelay.register('parallel', 'sql', handler => 'parallel_h(text)')")
    db.sql("SELECT pgrelay.notify(c, n::text) FROM generate_series(1, 12) n, unnest(ARRAY['serial', 'parallel']) c")
    p = processors("-d", db.dsn, "--workers=4", "--poll-interval=50ms")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM seen") == 24, "all 24 events")
    assert p.stop() == 0
    # never two serial events at once: seen by the handlers themselves, and by their intervals
    assert db.scalar("SELECT max(peers) FROM seen WHERE channel = 'serial'") == 1
    assert db.scalar("""SELECT count(*) FROM seen a JOIN seen b
                        ON a.channel = 'serial' AND b.channel = 'serial' AND a.payload < b.payload
                        AND a.started < b.finished AND b.started < a.finished""") == 0
    # parallel events did run side by side
    assert db.scalar("SELECT max(peers) FROM seen WHERE channel = 'parallel'") >= 2
    # losing the race for the channel is a skip, never a failure
    assert db.scalar("SELECT count(*) FROM pgrelay.log WHERE outcome <> 'ok'") == 0


def test_transient_failure_is_retried_with_backoff(db, processors):
    db.conn.execute("""
        CREATE SEQUENCE tries;
        CREATE TABLE done (p text);
        CREATE FUNCTION flaky(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
        BEGIN
            IF nextval('tries') = 1 THEN
                RAISE EXCEPTION 'could not serialize' USING ERRCODE = 'serialization_failure';
            END IF;
            INSERT INTO done VALUES (p);
        END $$""")
    db.sql("SELECT pgrelay.register('flaky', 'sql', handler => 'flaky(text)', backoff_base => '10 ms', backoff_max => '20 ms')")
    db.sql("SELECT pgrelay.notify('flaky', 'x')")
    p = processors("-d", db.dsn, "--poll-interval=20ms")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == 1, "the retry to succeed")
    assert p.stop() == 0
    assert db.sql("SELECT attempt, outcome, sqlstate FROM pgrelay.log ORDER BY id") == \
        [(1, "retry", "40001"), (2, "ok", None)]
    line = p.lines("attempt_failed")[0]
    assert "outcome=retry" in line and "attempt=1" in line and 'error="could not serialize"' in line


def test_permanent_failure_lands_in_failed(db, processors):
    """Under retry_policy strict a plain handler error fails the event at once."""
    db.conn.execute("""CREATE FUNCTION broken(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
                       BEGIN RAISE EXCEPTION 'no such customer %', p; END $$""")
    db.sql("SELECT pgrelay.register('broken', 'sql', handler => 'broken(text)', retry_policy => 'strict')")
    db.sql("SELECT pgrelay.notify('broken', '42')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    assert db.sql("SELECT channel, payload, attempts, error FROM pgrelay.failed") == \
        [("broken", "42", 1, "no such customer 42")]
    line = p.lines("attempt_failed")[0]
    assert "outcome=failed" in line and "sqlstate=P0001" in line and "retry_at=-" in line
    assert "failed=1" in p.lines("batch")[0]


def test_any_handler_error_is_retried_until_max_attempts(db, processors):
    """By default every handler error is retried with backoff; the log line and pgrelay.log carry
    the SQLSTATE and the next run time, and the last attempt lands in pgrelay.failed."""
    db.conn.execute("""CREATE FUNCTION buggy(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
                       BEGIN RAISE EXCEPTION 'bug in the handler for %', p; END $$""")
    db.sql("SELECT pgrelay.register('buggy', 'sql', handler => 'buggy(text)', max_attempts => 3,"
           " backoff_base => '10 ms', backoff_max => '20 ms')")
    db.sql("SELECT pgrelay.notify('buggy', '7')")
    p = processors("-d", db.dsn, "--poll-interval=20ms")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.failed") == 1, "the event to fail for good")
    assert p.stop() == 0
    assert db.sql("SELECT attempt, outcome, sqlstate, retry_at IS NOT NULL FROM pgrelay.log ORDER BY id") == \
        [(1, "retry", "P0001", True), (2, "retry", "P0001", True), (3, "failed", "P0001", False)]
    assert db.sql("SELECT attempts, error_kind FROM pgrelay.failed") == [(3, "handler")]
    lines = p.lines("attempt_failed")
    assert len(lines) == 3
    assert re.search(r"outcome=retry sqlstate=P0001 retry_at=20\d\d-\d\d-\d\dT[0-9:.]+Z ", lines[0])
    assert "outcome=failed sqlstate=P0001 retry_at=- " in lines[2]


def log_records(p, fmt):
    """The Processor's lines as dicts: event, then the fields (JSON as written; text: strings)."""
    if fmt == "json":
        return [json.loads(l) for l in p.log().splitlines() if l.startswith("{")]
    out = []
    for l in p.log().splitlines():
        parts = l.split(" ", 3)
        if len(parts) < 3 or not re.match(r"\d{4}-", parts[0]):
            continue
        fields = {k: v.strip('"') for k, v in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', l)}
        out.append(dict(fields, event=parts[2]))
    return out


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_line_about_an_event_names_the_event_and_its_attempt(db, processors, fmt):
    """A retry is a new queue row; the event stays the one notify() returned and pgrelay.failed
    names. Every line about an event carries that event_id, the attempt and the queue row of the
    attempt (queue_id), alone and in a batch, so one search for the event id finds its history."""
    db.conn.execute("""CREATE FUNCTION buggy(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
                       BEGIN RAISE EXCEPTION 'bug in the handler for %', p; END $$""")
    db.sql("SELECT pgrelay.register('buggy', 'sql', handler => 'buggy(text)', max_attempts => 3,"
           " backoff_base => '10 ms', backoff_max => '20 ms')")
    # two events queued together run as a batch on one worker; their retries may run alone
    events = [r[0] for r in db.sql("SELECT pgrelay.notify('buggy', n::text) FROM generate_series(1, 2) n")]
    p = processors("-d", db.dsn, "--poll-interval=20ms", "--workers=1", "--log-level=trace", "--log-format=" + fmt)
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.failed") == 2, "both events to fail for good")
    assert p.stop() == 0
    assert sorted(r[0] for r in db.sql("SELECT event_id FROM pgrelay.failed")) == sorted(events)
    records = log_records(p, fmt)
    for eid in events:
        mine = [r for r in records if r.get("event_id") == str(eid)]
        rows = db.sql("SELECT attempt, queue_id, outcome FROM pgrelay.log WHERE event_id = %s ORDER BY attempt",
                      (eid,))
        assert [a for a, _, _ in rows] == [1, 2, 3]
        for event in ("attempt_failed", "event_done"):
            seen = [(int(r["attempt"]), int(r["queue_id"]), r["outcome"]) for r in mine if r["event"] == event]
            assert seen == [(a, q, o) for a, q, o in rows], (event, seen, rows)
        # three queue rows, one event
        assert len({q for _, q, _ in rows}) == 3
    # nothing about an event is logged without its event id
    assert all("event_id" in r for r in records if "queue_id" in r or r["event"] in ("attempt_failed", "event_done"))
    assert not any("id" in r for r in records)


def test_a_cancel_the_handler_raises_spends_attempts_like_any_error(db, processors):
    """A handler that raises SQLSTATE 57014 itself (as dblink and postgres_fdw pass on a remote
    statement timeout) is not the Processor's cancel: each such attempt is recorded as a timeout and retried
    until max_attempts, in a batch or alone, instead of the event being offered again for ever;
    the events beside it are done."""
    db.conn.execute("""
        CREATE TABLE done (p text);
        CREATE FUNCTION remote(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
        BEGIN
            IF p = 'remote-timeout' THEN
                RAISE EXCEPTION 'canceling statement due to statement timeout' USING ERRCODE = 'query_canceled';
            END IF;
            INSERT INTO done VALUES (p);
        END $$""")
    db.sql("SELECT pgrelay.register('remote', 'sql', handler => 'remote(text)', max_attempts => 2,"
           " backoff_base => '10 ms', backoff_max => '20 ms')")
    for payload in ("a", "remote-timeout", "b"):
        db.sql("SELECT pgrelay.notify('remote', %s)", (payload,))
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=20ms")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.failed") == 1, "the event to fail for good")
    assert p.stop() == 0
    assert sorted(r[0] for r in db.sql("SELECT p FROM done")) == ["a", "b"]
    assert db.sql("SELECT attempt, outcome, sqlstate FROM pgrelay.log WHERE payload = 'remote-timeout'"
                  " ORDER BY id") == [(1, "timeout", "57014"), (2, "failed", "57014")]
    assert db.scalar("SELECT count(*) FROM pgrelay.queue") == 0
    lines = p.lines("attempt_failed")
    assert len(lines) == 2 and "outcome=timeout sqlstate=57014" in lines[0] and "outcome=failed sqlstate=57014" in lines[1]


def test_channel_timeout_cancels_the_handler_and_the_worker_goes_on(db, processors):
    db.conn.execute("""
        CREATE TABLE done (p text);
        CREATE FUNCTION sleepy(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
        BEGIN
            IF p = 'slow' THEN PERFORM pg_sleep(30); END IF;
            INSERT INTO done VALUES (p);
        END $$""")
    db.sql("SELECT pgrelay.register('sleepy', 'sql', handler => 'sleepy(text)', timeout => '300 ms', backoff_base => '1 hour')")
    db.sql("SELECT pgrelay.notify('sleepy', 'slow')")
    db.sql("SELECT pgrelay.notify('sleepy', 'fast')")
    p = processors("-d", db.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    assert db.sql("SELECT payload, outcome, sqlstate FROM pgrelay.log ORDER BY id") == \
        [("slow", "timeout", "57014"), ("fast", "ok", None)]
    assert db.sql("SELECT payload, attempt FROM pgrelay.queue") == [("slow", 2)]
    assert db.sql("SELECT p FROM done") == [("fast",)]
    # one worker did both: the timed-out session was reused, never reconnected
    assert p.lines("reconnecting") == []
    assert "outcome=timeout" in p.lines("attempt_failed")[0]
    # the error names the channel's timeout and the call that raises it, in the log and the line
    said = ("the handler ran longer than the channel's timeout of 0.3 s: make it faster, or raise the timeout:"
            " SELECT pgrelay.register('sleepy', timeout => '0.6 seconds')")
    assert db.scalar("SELECT error FROM pgrelay.log WHERE outcome = 'timeout'") == said
    assert 'error="%s"' % said in p.lines("attempt_failed")[0]


def test_inactive_channel_waits_until_activated(db, processors):
    make_channel(db)
    db.sql("SELECT pgrelay.notify('jobs', 'held')")
    db.sql("SELECT pgrelay.register('jobs', active => false)")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    assert db.scalar("SELECT count(*) FROM done") == 0
    db.sql("SELECT pgrelay.register('jobs', active => true)")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    assert db.sql("SELECT payload FROM done") == [("held",)]


def test_an_outcome_that_cannot_be_recorded_fails_the_event_instead_of_looping(db, processors):
    """When writing an attempt's outcome fails with an error that would come back every time (here
    a trigger refusing the log row), the event is failed for good with the reason, once; it is not
    run again and again. Its handler's work is rolled back with the attempt that could not be
    recorded."""
    make_channel(db)
    with db.poison_log_refused():
        db.sql("SELECT pgrelay.notify('jobs', 'poison')")
        p = processors("-d", db.dsn, "--once")
        assert p.wait_exit() == 0
        assert db.sql("SELECT attempt, outcome, sqlstate FROM pgrelay.log") == [(1, "failed", "P0001")]
        assert "could not be recorded (process_one: log rows of poison are refused)" in \
            db.scalar("SELECT error FROM pgrelay.failed")
        assert db.scalar("SELECT count(*) FROM pgrelay.queue") == 0
        assert db.scalar("SELECT count(*) FROM done") == 0
        lines = p.lines("attempt_failed")
        assert len(lines) == 2
        assert "outcome=not_finished" in lines[0] and "outcome=failed" in lines[1]


def test_an_outcome_that_cannot_be_recorded_leaves_an_event_paused_meanwhile_alone(db, processors):
    """An event whose outcome cannot be recorded is failed for good only by a claim that holds it:
    its channel paused while its handler ran, the claim skips it, and it stays queued as it was
    (nothing failed, no log row), with a second line saying so. Once the channel is resumed, the
    error that persists fails it as before."""
    make_channel(db)
    db.conn.execute("""
        CREATE FUNCTION record_after_42(p text) RETURNS void SECURITY DEFINER SET search_path = public
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock(42);
            INSERT INTO done (payload) VALUES (p);
        END $$""")
    db.sql("SELECT pgrelay.register('jobs', handler => 'record_after_42(text)')")
    holder = db.cluster.connect(db.name)
    holder.execute("SELECT pg_advisory_lock(42)")
    with db.poison_log_refused():
        db.sql("SELECT pgrelay.notify('jobs', 'poison')")
        p = processors("-d", db.dsn, "--once", "--workers=1")
        testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                                           " AND wait_event = 'advisory'") == 1, "the handler to wait")
        db.sql("SELECT pgrelay.pause('jobs')")
        holder.execute("SELECT pg_advisory_unlock(42)")
        holder.close()
        assert p.wait_exit() == 0
        assert db.sql("SELECT payload, attempt FROM pgrelay.queue") == [("poison", 1)]
        assert db.scalar("SELECT count(*) FROM pgrelay.failed") == 0
        assert db.scalar("SELECT count(*) FROM pgrelay.log") == 0
        assert db.scalar("SELECT count(*) FROM done") == 0
        lines = p.lines("attempt_failed")
        assert len(lines) == 2
        assert "outcome=not_finished" in lines[0]
        assert "outcome=skipped" in lines[1] and "the claim to fail it skipped it" in lines[1]
        db.sql("SELECT pgrelay.resume('jobs')")
        p = processors("-d", db.dsn, "--once", "--workers=1")
        assert p.wait_exit() == 0
        assert db.sql("SELECT attempt, outcome, sqlstate FROM pgrelay.log") == [(1, "failed", "P0001")]
        assert db.scalar("SELECT count(*) FROM pgrelay.queue") == 0
