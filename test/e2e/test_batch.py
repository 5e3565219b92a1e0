"""Batches: several sql events finished in one transaction (--events-per-commit, the channel
setting batch), each handler in its own subtransaction: failures and timeouts stay the event's
own, a rollback or a crash finishes none of them and loses none, and what cannot be decided in a
batch is decided one event per transaction."""
import signal
import urllib.request

import promtext
import testlib

SETUP = """
CREATE TABLE done (p text, at timestamptz DEFAULT clock_timestamp());
-- A handler that records its payload; 'fail' raises, 'nap:S' sleeps S seconds first, 'wait'
-- waits for the advisory lock 42 (which a test holds) first.
CREATE FUNCTION work(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
BEGIN
    IF p = 'fail' THEN RAISE EXCEPTION 'no good: %', p; END IF;
    IF p LIKE 'nap:%' THEN PERFORM pg_sleep(split_part(p, ':', 2)::float8); END IF;
    IF p = 'wait' THEN PERFORM pg_advisory_xact_lock(42); END IF;
    INSERT INTO done (p) VALUES (p);
END $$;
"""


def channel(db, name="jobs", **opts):
    if not db.scalar("SELECT to_regclass('done') IS NOT NULL"):
        db.conn.execute(SETUP)
    args = "".join(", %s => %s" % (k, v if isinstance(v, bool) else "'%s'" % v) for k, v in opts.items())
    db.sql("SELECT pgrelay.register(%%s, 'sql', handler => 'work(text)'%s)" % args, (name,))


def transactions(db, channel="jobs"):
    """How many transactions wrote the channel's log rows."""
    return db.scalar("SELECT count(DISTINCT xmin::text) FROM pgrelay.log WHERE channel = %s", (channel,))


def handlers_in(db, wait_event):
    return db.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                     " AND state = 'active' AND wait_event = %s", (wait_event,))


def test_a_burst_is_finished_events_per_commit_at_a_time(db, processors):
    channel(db)
    db.sql("SELECT count(pgrelay.notify('jobs', n::text)) FROM generate_series(1, 200) n")
    p = processors("-d", db.dsn, "--once", "--workers=1", "--events-per-commit=50", "--log-level=trace")
    assert p.wait_exit() == 0
    assert db.scalar("SELECT count(DISTINCT p) FROM done") == 200
    assert db.scalar("SELECT count(*) FROM pgrelay.log WHERE outcome = 'ok'") == 200
    assert transactions(db) == 4
    assert "processed=200 ok=200 " in p.lines("batch")[0]
    done = p.lines("event_done")
    assert len(done) == 200 and all(" outcome=ok " in l and l.endswith(" events=50") for l in done)


def test_one_event_per_transaction_when_asked(db, processors):
    """--events-per-commit=1 for the Processor, batch => false for a channel."""
    channel(db)
    channel(db, "alone", batch=False)
    db.sql("SELECT count(pgrelay.notify(c, n::text)) FROM generate_series(1, 20) n, unnest(ARRAY['jobs', 'alone']) c")
    p = processors("-d", db.dsn, "--once", "--workers=1", "--events-per-commit=1")
    assert p.wait_exit() == 0
    assert (transactions(db, "jobs"), transactions(db, "alone")) == (20, 20)
    db.sql("SELECT count(pgrelay.notify(c, n::text)) FROM generate_series(21, 40) n, unnest(ARRAY['jobs', 'alone']) c")
    p = processors("-d", db.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    assert (transactions(db, "jobs"), transactions(db, "alone")) == (21, 40)


def test_a_burst_is_spread_over_the_workers(db, processors):
    """A small burst is not run by one worker in one batch while the others idle."""
    channel(db)
    p = processors("-d", db.dsn, "--workers=4", "--poll-interval=50ms")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                                       " AND application_name = 'pg_relay'") == 5, "every worker connected")
    db.sql("SELECT count(pgrelay.notify('jobs', 'nap:0.05')) FROM generate_series(1, 16) n")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == 16, "the burst")
    assert p.stop() == 0
    assert transactions(db) == 4


def test_a_failing_handler_fails_only_its_event(db, processors):
    channel(db, max_attempts=3, backoff_base="1 hour", backoff_max="1 hour")
    db.sql("SELECT pgrelay.notify('jobs', p) FROM unnest(ARRAY['a', 'fail', 'b']) p")
    p = processors("-d", db.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    assert db.sql("SELECT payload, outcome, sqlstate FROM pgrelay.log ORDER BY id") == \
        [("a", "ok", None), ("fail", "retry", "P0001"), ("b", "ok", None)]
    assert transactions(db) == 1
    assert sorted(r[0] for r in db.sql("SELECT p FROM done")) == ["a", "b"]
    assert db.sql("SELECT payload, attempt FROM pgrelay.queue") == [("fail", 2)]
    [line] = p.lines("attempt_failed")
    assert " outcome=retry sqlstate=P0001 retry_at=20" in line and 'error="no good: fail"' in line


def test_a_timeout_in_a_batch_is_that_events_alone(db, processors):
    """The batch's statement timeout (the channel's timeout plus the window) ends the handler that
    hangs, which had its whole timeout: a timeout, retried; the event before it is done, the
    one after it waits for the next batch; the worker's session stays."""
    channel(db, timeout="300 ms", backoff_base="1 hour", backoff_max="1 hour")
    db.sql("SELECT pgrelay.notify('jobs', p) FROM unnest(ARRAY['first', 'nap:30', 'after']) p")
    p = processors("-d", db.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    assert db.sql("SELECT payload, outcome, sqlstate FROM pgrelay.log ORDER BY id") == \
        [("first", "ok", None), ("nap:30", "timeout", "57014"), ("after", "ok", None)]
    assert db.sql("SELECT payload, attempt FROM pgrelay.queue") == [("nap:30", 2)]
    assert sorted(r[0] for r in db.sql("SELECT p FROM done")) == ["after", "first"]
    assert p.lines("reconnecting") == []
    assert " outcome=timeout sqlstate=57014 " in p.lines("attempt_failed")[0]
    # the error says which timeout ended it, and how to raise it
    assert ('error="the handler ran longer than the channel\'s timeout of 0.3 s: make it faster, or raise the'
            " timeout: SELECT pgrelay.register('jobs', timeout => '0.6 seconds')\"") in p.lines("attempt_failed")[0]


def test_shutdown_cancels_a_batch_and_its_events_wait_unspent(db, processors):
    """A cancel after --shutdown-timeout rolls the whole batch back: no event of it is finished,
    none spends an attempt, no handler's work stays."""
    channel(db, timeout="1 hour")
    db.sql("SELECT pgrelay.notify('jobs', p) FROM unnest(ARRAY['first', 'nap:60', 'after']) p")
    p = processors("-d", db.dsn, "--workers=1", "--shutdown-timeout=200ms")
    testlib.wait_for(lambda: handlers_in(db, "PgSleep") == 1, "the batch to reach the long handler")
    p.signal(signal.SIGTERM)
    assert p.wait_exit(timeout=30) == 0
    assert db.scalar("SELECT count(*) FROM pgrelay.log") == 0
    assert db.sql("SELECT payload, attempt FROM pgrelay.queue ORDER BY id") == \
        [("first", 1), ("nap:60", 1), ("after", 1)]
    assert db.scalar("SELECT count(*) FROM done") == 0
    [line] = p.lines("attempt_failed")
    assert "outcome=not_finished step=process_batch" in line and " events=3 " in line
    assert "sqlstate=57014" in line


def test_a_crash_mid_batch_loses_nothing_and_runs_nothing_twice(db, processors):
    """The Processor dies in the middle of a batch: the server rolls the batch back (the
    connection check the Processor sets), and the next Processor runs every event once."""
    channel(db, timeout="1 hour")
    db.sql("SELECT pgrelay.notify('jobs', p) FROM unnest(ARRAY['first', 'wait', 'after']) p")
    holder = db.cluster.connect(db.name)
    holder.execute("SELECT pg_advisory_lock(42)")
    p = processors("-d", db.dsn, "--workers=1")
    testlib.wait_for(lambda: handlers_in(db, "advisory") == 1, "the batch to wait in its handler")
    p.kill()
    testlib.wait_for(lambda: handlers_in(db, "advisory") == 0, "the server to roll the batch back")
    holder.execute("SELECT pg_advisory_unlock(42)")
    holder.close()
    assert db.scalar("SELECT count(*) FROM done") == 0
    assert db.scalar("SELECT count(*) FROM pgrelay.queue WHERE attempt = 1") == 3
    p = processors("-d", db.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    assert db.sql("SELECT p, count(*) FROM done GROUP BY p ORDER BY p") == \
        [("after", 1), ("first", 1), ("wait", 1)]
    assert db.scalar("SELECT count(*) FROM pgrelay.log WHERE outcome = 'ok'") == 3


def test_an_outcome_that_cannot_be_recorded_sends_the_batch_one_event_per_transaction(db, processors):
    """Recording one event's outcome fails (a trigger refuses its log row): the batch rolls back
    whole, and its events are run one per transaction, where only that one fails, for good."""
    channel(db)
    with db.poison_log_refused():
        db.sql("SELECT pgrelay.notify('jobs', p) FROM unnest(ARRAY['a', 'poison', 'b']) p")
        p = processors("-d", db.dsn, "--once", "--workers=1", "--log-level=debug")
        assert p.wait_exit() == 0
        assert db.sql("SELECT payload, outcome FROM pgrelay.log ORDER BY payload") == \
            [("a", "ok"), ("b", "ok"), ("poison", "failed")]
        assert transactions(db) == 3
        assert sorted(r[0] for r in db.sql("SELECT p FROM done")) == ["a", "b"]
        assert " events=3 sqlstate=P0001 " in p.lines("batch_split")[0]
        assert "could not be recorded" in db.scalar("SELECT error FROM pgrelay.failed")


def test_64_events_per_commit_or_more_is_warned_at_start_and_on_reload(db, processors, tmp_path):
    """From 64 writing subtransactions a transaction overflows PostgreSQL's subtransaction cache
    (a hot standby's at 64, the primary's at 65): the Processor says so for such a setting, at
    start and after a reload, and not for 63."""
    conf = tmp_path / "relay.conf"
    conf.write_text("events-per-commit = 63\n")
    p = processors("-c", str(conf), "-d", db.dsn)
    p.wait_log(r" started .*events-per-commit=63")
    conf.write_text("events-per-commit = 64\n")
    p.signal(signal.SIGHUP)
    p.wait_log(r" reloaded source=signal")
    line = p.wait_log(r" batch_subtransactions ").string
    assert "events_per_commit=64 cached=64 " in line and "pg_subtrans" in line
    assert p.stop() == 0
    assert len(p.lines("batch_subtransactions")) == 1   # none at the start with 63
    p = processors("-d", db.dsn, "--once", "--events-per-commit=1000")
    assert p.wait_exit() == 0
    assert "events_per_commit=1000 " in p.lines("batch_subtransactions")[0]



FLAKY = """
CREATE TABLE seen (xid bigint);
CREATE TABLE killing (active boolean);
INSERT INTO killing VALUES (true);
CREATE SEQUENCE kills;
-- While killing.active, a handler that finds itself the 11th event of its transaction terminates
-- its own session (as pg_terminate_backend() by an admin would) before it records its payload:
-- every batch of more than 10 events is lost with its connection, whatever the machine's speed.
CREATE FUNCTION flaky(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO seen VALUES (txid_current());
    IF (SELECT active FROM killing) AND (SELECT count(*) FROM seen WHERE xid = txid_current()) > 10 THEN
        PERFORM nextval('kills');
        PERFORM pg_terminate_backend(pg_backend_pid());
        PERFORM pg_sleep(60);   -- the termination ends the session here
    END IF;
    INSERT INTO done (p) VALUES (p);
END $$;
SELECT pgrelay.register('flaky', 'sql', handler => 'flaky(text)');
"""


def test_batches_shrink_while_their_sessions_are_killed_and_the_drain_goes_on(db, processors):
    """Every batch of more than 10 events loses its session mid-statement. With the same 50
    events each time, the Processor would finish none of 2,000; instead a batch lost with its
    connection halves its worker's batch size (25, 12, 6: a batch that commits) and each batch of
    that size that commits raises it by one, so most events are finished while the sessions keep
    being killed (counted: the wait only bounds a broken test), and every event runs once."""
    channel(db)   # the table done
    db.conn.execute(FLAKY)
    db.sql("SELECT count(pgrelay.notify('flaky', n::text)) FROM generate_series(1, 2000) n")
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms", "--metrics=127.0.0.1:0")
    addr = p.wait_log(r" metrics_listening address=(\S+)").group(1)
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") >= 1500,
                     "most events done while batches of more than 10 are killed", timeout=120)
    # the worker's batches are smaller, and the sessions were killed again and again
    with urllib.request.urlopen("http://%s/metrics" % addr, timeout=10) as r:
        size = promtext.parse(r.read().decode())["pgrelay_events_per_commit"].value(worker="1")
    assert 5 <= size <= 11
    assert db.scalar("SELECT last_value FROM kills") >= 10
    db.sql("UPDATE killing SET active = false")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == 2000, "the rest")
    assert p.stop() == 0
    assert db.sql("SELECT count(*), count(DISTINCT p) FROM done") == [(2000, 2000)]
    assert db.scalar("SELECT count(*) FROM pgrelay.log WHERE outcome = 'ok'") == 2000
    assert db.scalar("SELECT count(*) FROM pgrelay.queue") == 0
    lost = [l for l in p.lines("reconnecting") if "reason=connection_lost step=process_batch" in l]
    assert len(lost) >= 10
    sizes = [l.split(" events_per_commit=")[1] for l in p.lines("batch_size")]
    # 50 is lost, 25 is lost, 12 is lost, 6 commits and grows one by one until 11 is lost: 5 ...
    assert sizes[:4] == ["25 reason=connection_lost", "12 reason=connection_lost",
                         "6 reason=connection_lost", "5 reason=connection_lost"]
