"""Operating the Processor: reload, pause, shutdown with work in flight, lost connections, server
restarts, standby promotion, JSON logs, and a valgrind run."""
import json
import os
import signal
import subprocess
import urllib.request

import psycopg
import pytest

import promtext
import testlib

SLOW = """
CREATE TABLE done (p text, at timestamptz DEFAULT clock_timestamp());
GRANT INSERT ON done TO PUBLIC;
-- A handler that sleeps for as many seconds as its payload says, then records it.
CREATE FUNCTION nap(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(split_part(p, ':', 1)::float8);
    INSERT INTO done (p) VALUES (p);
END $$;
"""


def naps(db, **opts):
    db.conn.execute(SLOW)
    opts.setdefault("timeout", "1 hour")
    args = "".join(", %s => '%s'" % kv for kv in opts.items())
    db.sql("SELECT pgrelay.register('nap', 'sql', handler => 'nap(text)'%s)" % args)


def sleeping_handlers(db, pid=False):
    """Sessions whose handler is inside pg_sleep right now (count, or the first pid)."""
    return db.scalar("""SELECT %s FROM pg_stat_activity
                        WHERE datname = current_database() AND state = 'active'
                          AND query LIKE '%%%%process_one%%%%' AND wait_event = 'PgSleep'"""
                     % ("min(pid)" if pid else "count(*)"))


@pytest.fixture
def few_slots():
    """A cluster of the test's own with 10 connection slots, 3 of them reserved for superusers,
    pg_relay, the handler nap(text) and its channel, and a login role relay in pgrelay_processor;
    yields the cluster and an admin (superuser) session, opened before any slot is taken."""
    c = testlib.Cluster(os.path.join(testlib.work_dir("slots-"), "c"),
                        conf=("max_connections = 10", "superuser_reserved_connections = 3"))
    c.start()
    admin = c.connect()
    admin.execute("CREATE EXTENSION pg_relay")
    admin.execute(SLOW)
    admin.execute("SELECT pgrelay.register('nap', 'sql', handler => 'nap(text)')")
    admin.execute("CREATE ROLE relay LOGIN IN ROLE pgrelay_processor")
    yield c, admin
    admin.close()
    c.stop("immediate")


def take_slots(c, user="relay"):
    """Sessions of user in every slot a role that is not a superuser may take (the others are
    reserved): a list to close(), one at a time to make room."""
    hogs = []
    while True:
        try:
            hogs.append(psycopg.connect(c.dsn().replace("user=postgres", "user=" + user), autocommit=True))
        except psycopg.OperationalError as e:
            assert "remaining connection slots are reserved" in str(e), e
            return hogs


def test_a_server_out_of_connection_slots_is_hinted_and_waited_for(few_slots, processors):
    """Other sessions hold every connection slot the Processor's role may take (SQLSTATE 53300):
    its lines say what is full, how many connections it needs and which setting to raise; it
    retries, and drains once slots are free."""
    c, admin = few_slots
    admin.execute("SELECT pgrelay.notify('nap', '0:' || n) FROM generate_series(1, 20) n")
    hogs = take_slots(c)
    dsn = c.dsn().replace("user=postgres", "user=relay")
    hint = ('hint="the slots left are reserved (superuser_reserved_connections, reserved_connections); this'
            ' Processor needs 3 connections (--workers=2 and its control connection): raise max_connections'
            ' (a server restart), end idle sessions, or lower --workers"')
    p = processors("-d", dsn, "--once", "--workers=2")
    assert p.wait_exit() == 1
    [line] = p.lines("startup_failed")
    assert "remaining connection slots are reserved" in line and line.endswith(hint)
    p = processors("-d", dsn, "--workers=2", "--poll-interval=50ms", "--reconnect-max=200ms")
    line = p.wait_log(r" warn reconnecting conn=control attempt=2 ").string
    assert line.endswith(hint)
    for h in hogs:
        h.close()
    testlib.wait_for(lambda: admin.execute("SELECT count(*) FROM done").fetchone()[0] == 20, "the drain")
    assert p.stop() == 0
    assert admin.execute("SELECT count(*), count(DISTINCT p) FROM done").fetchone() == (20, 20)
    assert p.lines("reconnected")


def test_workers_that_cannot_connect_leave_the_events_to_the_others(few_slots, processors):
    """Room for the control connection and one worker of three: the Processor runs the events on
    that one rather than wait for all, and says so in its log, in pg_relay status and in its
    metrics; once the others get in, it says that too. Every event runs once."""
    c, admin = few_slots
    admin.execute("SELECT pgrelay.notify('nap', '0:' || n) FROM generate_series(1, 30) n")
    hogs = take_slots(c)
    hogs.pop().close()
    hogs.pop().close()
    p = processors("-d", c.dsn().replace("user=postgres", "user=relay"), "--workers=3", "--poll-interval=50ms",
                   "--reconnect-max=200ms", "--metrics=127.0.0.1:0")
    addr = p.wait_log(r" metrics_listening address=(\S+)").group(1)

    def status():
        r = subprocess.run([testlib.PROCESSOR, "status", "-d", c.dsn()], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def connected():
        with urllib.request.urlopen("http://%s/metrics" % addr, timeout=10) as r:
            return promtext.parse(r.read().decode())["pgrelay_workers_connected"].value()

    line = p.wait_log(r" warn workers_missing ").string
    assert " connected=1 workers=3 hint=" in line
    testlib.wait_for(lambda: admin.execute("SELECT count(*) FROM done").fetchone()[0] == 30,
                     "the events, run by the one worker")
    assert connected() == 1
    assert any("needs 4 connections" in l for l in p.lines("reconnecting") if "conn=worker-" in l)
    row = testlib.wait_for(lambda: [l for l in status().splitlines() if "WORKERS NOT CONNECTED" in l],
                           "the Processor's row of pg_relay status")[0]
    assert row.split()[5] == "1/3" and row.endswith(" 2 WORKERS NOT CONNECTED"), row
    for h in hogs:
        h.close()
    line = p.wait_log(r" info workers_connected ").string
    assert line.endswith(" connected=3 workers=3")
    assert connected() == 3
    testlib.wait_for(lambda: "WORKERS NOT CONNECTED" not in status(), "the row with every worker")
    assert [l.split()[5] for l in status().splitlines() if l.startswith("  ") and " single " in l] == ["3"]
    assert p.stop() == 0
    assert admin.execute("SELECT count(*), count(DISTINCT p) FROM done").fetchone() == (30, 30)
    # one line when they went missing, and one more each time the number changed while they came
    # back (the freed slots may be taken one at a time), never one with all of them connected
    missing = p.lines("workers_missing")
    assert "connected=1 workers=3" in missing[0] and all("workers=3" in l and "connected=3" not in l
                                                         for l in missing), missing


def test_sighup_reloads_the_config_file(db, processors, tmp_path):
    conf = tmp_path / "relay.conf"
    conf.write_text("poll-interval = 1s\nworkers = 2\n")
    p = processors("-c", str(conf), "-d", db.dsn)
    p.wait_log(r" started .*poll-interval=1s")
    conf.write_text("poll-interval = 200ms\nworkers = 3\nlog-level = debug\n")
    p.signal(signal.SIGHUP)
    line = p.wait_log(r" reloaded source=signal").string
    assert "needs_restart=workers" in line
    p.wait_log(r" probe has_work=f")      # log-level=debug took effect
    conf.write_text("poll-interval = never\n")
    p.signal(signal.SIGHUP)
    p.wait_log(r" reload_failed source=signal error=.*invalid value \\\"never\\\" for poll-interval")
    assert p.stop() == 0


def test_request_reload_from_sql_reloads(db, processors):
    p = processors("-d", db.dsn, "--poll-interval=50ms", "--log-level=debug")
    p.wait_log(r" probe has_work=f")  # the generation seen at start is known
    db.sql("SELECT pgrelay.request_reload()")
    p.wait_log(r" reloaded source=database")
    # registering a channel asks for it too
    db.sql("CREATE FUNCTION noop(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS ''")
    db.sql("SELECT pgrelay.register('x', 'sql', handler => 'noop(text)')")
    p.wait_log(r" reloaded source=database", count=2)
    assert p.stop() == 0


def test_pause_holds_dispatch_until_resume(db, processors):
    naps(db)
    p = processors("-d", db.dsn, "--poll-interval=50ms", "--log-level=debug")
    p.wait_log(r" probe has_work=f")
    db.sql("SELECT pgrelay.pause()")
    p.wait_log(r" paused reason=pgrelay.pause")
    db.sql("SELECT pgrelay.notify('nap', '0:held')")
    # several probes see the work and the pause, and nothing is dispatched
    p.wait_log(r" probe has_work=t paused=t", count=3)
    assert db.scalar("SELECT count(*) FROM done") == 0
    assert db.scalar("SELECT count(*) FROM pgrelay.queue") == 1
    db.sql("SELECT pgrelay.resume()")
    p.wait_log(r" resumed reason=pgrelay.resume")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == 1, "the event after resume")
    assert len(p.lines("paused")) == 1 and len(p.lines("resumed")) == 1
    assert p.stop() == 0


def test_sigterm_lets_in_flight_events_finish(db, processors):
    naps(db)
    db.sql("SELECT pgrelay.notify('nap', '1:in flight')")
    p = processors("-d", db.dsn, "--workers=2")
    testlib.wait_for(lambda: sleeping_handlers(db) == 1, "the handler to run")
    p.signal(signal.SIGTERM)
    assert p.wait_exit() == 0
    assert "reason=signal in_flight=1" in p.lines("stopping")[0]
    assert db.sql("SELECT p FROM done") == [("1:in flight",)]
    assert db.sql("SELECT outcome FROM pgrelay.log") == [("ok",)]
    assert p.lines("stopped")[0].endswith("unfinished=0")


def test_sigterm_during_once_says_signal(db, processors):
    """--once cut short by SIGTERM stops for the signal, not because the queue was drained."""
    naps(db)
    db.sql("SELECT pgrelay.notify('nap', '1:in flight')")
    db.sql("SELECT pgrelay.notify('nap', '0:after it')")
    # one event per transaction: in a batch the second event would finish with the first
    p = processors("-d", db.dsn, "--once", "--workers=1", "--events-per-commit=1")
    testlib.wait_for(lambda: sleeping_handlers(db) == 1, "the handler to run")
    p.signal(signal.SIGTERM)
    assert p.wait_exit() == 0
    assert "reason=signal in_flight=1" in p.lines("stopping")[0]
    assert db.sql("SELECT p FROM done") == [("1:in flight",)]


def test_shutdown_timeout_cancels_and_the_event_waits_with_its_attempt_unspent(db, processors):
    naps(db, backoff_base="1 hour")
    db.sql("SELECT pgrelay.notify('nap', '60:too long')")
    p = processors("-d", db.dsn, "--shutdown-timeout=200ms")
    testlib.wait_for(lambda: sleeping_handlers(db) == 1, "the handler to run")
    p.signal(signal.SIGTERM)
    assert p.wait_exit(timeout=30) == 0
    assert "action=cancel" in p.lines("stopping")[1]
    # the cancelled event is not finished and spends no attempt: a deploy does not burn retries
    assert db.sql("SELECT outcome, sqlstate FROM pgrelay.log") == []
    assert db.sql("SELECT payload, attempt FROM pgrelay.queue") == [("60:too long", 1)]
    line = p.lines("attempt_failed")[0]
    assert "outcome=not_finished" in line and "sqlstate=57014" in line


def test_second_signal_exits_at_once_and_loses_nothing(db, processors):
    naps(db)
    db.sql("SELECT pgrelay.notify('nap', '60:interrupted')")
    p = processors("-d", db.dsn)
    testlib.wait_for(lambda: sleeping_handlers(db) == 1, "the handler to run")
    p.signal(signal.SIGTERM)
    p.wait_log(r" stopping reason=signal")
    p.signal(signal.SIGTERM)
    assert p.wait_exit(timeout=10) == 1
    assert "second signal, exiting at once" in p.log()
    # the server notices the lost client (client_connection_check_interval, set by the
    # Processor), cancels the handler and rolls back: the event is still queued, untouched
    testlib.wait_for(lambda: sleeping_handlers(db) == 0, "the backend to go")
    assert db.sql("SELECT payload, attempt FROM pgrelay.queue") == [("60:interrupted", 1)]
    assert db.scalar("SELECT count(*) FROM pgrelay.log") == 0


def test_connection_killed_mid_event(db, processors):
    db.conn.execute(SLOW)
    # The first attempt sleeps until killed; the second (after reconnect) finishes at once. A
    # sequence counts the attempts because sequences ignore the rollback of the killed one.
    db.sql("CREATE SEQUENCE attempts")
    db.sql("""CREATE FUNCTION once_slow(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE plpgsql AS $$
              BEGIN
                  IF nextval('attempts') = 1 THEN PERFORM pg_sleep(60); END IF;
                  INSERT INTO done (p) VALUES (p);
              END $$""")
    db.sql("SELECT pgrelay.register('victim', 'sql', handler => 'once_slow(text)', timeout => '1 hour')")
    db.sql("SELECT pgrelay.notify('victim', 'v')")
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms")
    pid = testlib.wait_for(lambda: sleeping_handlers(db, pid=True), "the handler to run")
    db.sql("SELECT pg_terminate_backend(%s)", (pid,))
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == 1, "the re-offered event")
    assert p.stop() == 0
    assert "reason=connection_lost" in p.lines("reconnecting")[0]
    assert db.sql("SELECT p FROM done") == [("v",)]                 # the handler's work: once
    assert db.sql("SELECT attempt, outcome FROM pgrelay.log") == [(1, "ok")]  # finished once
    assert db.scalar("SELECT count(*) FROM pgrelay.queue") == 0
    assert db.scalar("SELECT last_value FROM attempts") == 2


def test_server_restart_loses_nothing_and_finishes_nothing_twice(private_cluster, processors):
    c = private_cluster
    conn = c.connect()
    conn.execute(SLOW)
    conn.execute("SELECT pgrelay.register('nap', 'sql', handler => 'nap(text)', backoff_base => '10 ms', backoff_max => '50 ms')")
    conn.execute("SELECT pgrelay.notify('nap', '0.02:' || n) FROM generate_series(1, 300) n")
    conn.close()
    p = processors("-d", c.dsn(), "--workers=4", "--poll-interval=50ms", "--reconnect-max=200ms")

    def done():
        with c.connect() as k:
            return k.execute("SELECT count(*) FROM done").fetchone()[0]

    testlib.wait_for(lambda: done() >= 20, "some events to be done")
    c.restart("immediate")
    p.wait_log(r" reconnected conn=control")
    testlib.wait_for(lambda: done() == 300, "every event after the restart", timeout=120)
    assert p.stop() == 0
    with c.connect() as k:
        assert k.execute("SELECT count(DISTINCT p), count(*) FROM done").fetchone() == (300, 300)
        assert k.execute("SELECT count(*) FROM pgrelay.log WHERE outcome = 'ok'").fetchone()[0] == 300
        assert k.execute("SELECT count(*) FROM pgrelay.queue").fetchone()[0] == 0
    assert p.lines("reconnecting")


def test_standby_waits_then_dispatches_after_promotion(private_cluster, processors):
    primary = private_cluster
    with primary.connect() as k:
        k.execute(SLOW)
        k.execute("SELECT pgrelay.register('nap', 'sql', handler => 'nap(text)')")
        k.execute("SELECT pgrelay.notify('nap', '0:after failover')")
    standby = primary.standby(os.path.join(testlib.work_dir("standby-"), "s"))
    try:
        with standby.connect() as k:
            testlib.wait_for(lambda: k.execute("SELECT count(*) FROM pgrelay.queue").fetchone()[0] == 1,
                             "the event to reach the standby")
        p = processors("-d", standby.dsn(), "--poll-interval=50ms", "--log-level=debug")
        p.wait_log(r" standby_waiting ")
        p.wait_log(r" probe has_work=t paused=f dispatch=f", count=3)
        with standby.connect() as k:
            assert k.execute("SELECT count(*) FROM done").fetchone()[0] == 0
        primary.stop("immediate")
        standby.promote()
        p.wait_log(r" primary_active ")
        with standby.connect() as k:
            testlib.wait_for(lambda: k.execute("SELECT count(*) FROM done").fetchone()[0] == 1,
                             "the event after promotion")
        assert len(p.lines("standby_waiting")) == 1
        assert p.stop() == 0
    finally:
        standby.stop("immediate")


def test_json_log_lines_parse(db, processors):
    naps(db)
    db.sql("SELECT pgrelay.notify('nap', '0:json')")
    p = processors("-d", db.dsn, "--once", "--log-format=json")
    assert p.wait_exit() == 0
    events = [json.loads(l) for l in p.log().splitlines()]
    assert [e["event"] for e in events] == ["started", "batch", "stopping", "stopped"]
    assert all(set(("ts", "level", "event")) <= set(e) for e in events)
    batch = events[1]
    assert batch["processed"] == 1 and batch["ok"] == 1 and isinstance(batch["duration_ms"], int)
    assert events[0]["mode"] == "single" and events[0]["workers"] == 4


def test_valgrind_once_run_is_clean(db):
    naps(db)
    db.sql("SELECT pgrelay.notify('nap', '0:' || n) FROM generate_series(1, 20) n")
    r = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite,indirect",
                        "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
                        testlib.PROCESSOR_RELEASE, "-d", db.dsn, "--once", "--workers=2"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert "ERROR SUMMARY: 0 errors" in r.stdout
    assert db.scalar("SELECT count(*) FROM done") == 20


def test_idle_workers_find_their_dead_session_before_using_it(private_cluster, processors):
    """After a server restart, an idle worker notices its session is gone before it runs the next
    event (the server said goodbye on the socket): the event is done on the first try, nothing lost."""
    c = private_cluster
    with c.connect() as k:
        k.execute(SLOW)
        k.execute("SELECT pgrelay.register('nap', 'sql', handler => 'nap(text)')")
    p = processors("-d", c.dsn(), "--workers=1", "--poll-interval=50ms", "--reconnect-max=200ms")
    p.wait_log(r" started ")
    with c.connect() as k:
        k.execute("SELECT pgrelay.notify('nap', '0:warm up')")
    p.wait_log(r" batch .*processed=1")
    c.restart("fast")
    p.wait_log(r" reconnected conn=control")
    with c.connect() as k:
        k.execute("SELECT pgrelay.notify('nap', '0:after the restart')")
    p.wait_log(r" batch .*processed=1", count=2)
    assert p.stop() == 0
    assert "lost=0" in p.lines("batch")[1]
    assert any("conn=worker-1" in l and "reason=stale_connection" in l for l in p.lines("reconnecting"))
    with c.connect() as k:
        assert k.execute("SELECT count(*) FROM pgrelay.log WHERE outcome = 'ok'").fetchone()[0] == 2


def test_application_name_follows_pgappname(db, processors):
    """The Processor's sessions are called pg_relay unless PGAPPNAME or the connection string names
    them otherwise."""
    def names():
        return {r[0] for r in db.sql("SELECT application_name FROM pg_stat_activity"
                                     " WHERE datname = current_database() AND pid <> pg_backend_pid()")}
    p = processors("-d", db.dsn, "--workers=1")
    testlib.wait_for(lambda: names() == {"pg_relay"}, "the default name")
    assert p.stop() == 0
    p = processors("-d", db.dsn, "--workers=1", env={"PGAPPNAME": "relay-eu-1"})
    testlib.wait_for(lambda: names() == {"relay-eu-1"}, "PGAPPNAME")
    assert p.stop() == 0
    p = processors("-d", db.dsn + " application_name=relay-eu-2", "--workers=1")
    testlib.wait_for(lambda: names() == {"relay-eu-2"}, "the connection string's name")
    assert p.stop() == 0


def test_the_report_gives_the_queue_index_space_back(db, processors):
    """A backlog leaves the queue's indexes as large as it needed (a B-tree reuses its emptied
    pages, it never gives them back); once vacuum has emptied them, the Processor's report
    rebuilds them, and the queue keeps working."""
    naps(db)
    db.sql("INSERT INTO pgrelay.queue (event_id, channel, action_type, payload)"
           " SELECT n, 'nap', 'sql', '0:old ' || n FROM generate_series(1, 120000) n")
    db.sql("DELETE FROM pgrelay.queue")

    def emptied():
        # VACUUM gives the heap back only when nothing holds a lock or a snapshot older than the
        # DELETE (an autovacuum or another test's session may, for a moment).
        db.sql("VACUUM pgrelay.queue")
        return db.scalar("SELECT pg_relation_size('pgrelay.queue')") == 0
    testlib.wait_for(emptied, "vacuum to truncate the emptied queue")
    assert db.scalar("SELECT pg_indexes_size('pgrelay.queue')") >= 10 * 1024 * 1024
    before = db.scalar("SELECT pg_relation_filenode('pgrelay.queue_free_idx')")
    p = processors("-d", db.dsn, "--workers=1")
    testlib.wait_for(lambda: db.scalar("SELECT pg_indexes_size('pgrelay.queue')") < 1024 * 1024,
                     "the report's rebuild of the queue's indexes")
    assert db.scalar("SELECT pg_relation_filenode('pgrelay.queue_free_idx')") != before
    db.sql("SELECT pgrelay.notify('nap', '0:after')")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == 1, "an event after the rebuild")
    assert p.stop() == 0
    assert not p.lines("report_failed")
