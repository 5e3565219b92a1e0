"""The Processor under a Type=notify unit: readiness, reload, stop, status line and watchdog, told
to a datagram socket that stands in for systemd's NOTIFY_SOCKET (test/lib/notifysock.py)."""
import signal

import pytest

import testlib
from notifysock import NotifySocket

BLOCKED = """
CREATE FUNCTION blocked(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql
AS 'SELECT pg_advisory_xact_lock(4242)';
"""


@pytest.fixture
def notify(tmp_path):
    tmp_path.chmod(0o755)
    s = NotifySocket(tmp_path)
    yield s
    s.close()


def test_ready_status_reload_watchdog_stopping(db, processors, notify):
    db.conn.execute(BLOCKED)
    db.sql("SELECT pgrelay.register('blocked', 'sql', handler => 'blocked(text)')")
    p = processors("-d", db.dsn, "--poll-interval=50ms", env=notify.env(watchdog_usec=400000))

    ready = notify.wait_key("READY", "1")
    assert notify.messages[ready].get("STATUS") == "idle"
    assert p.lines("started"), "READY=1 came before the started line"
    assert not any("READY" in m for m in notify.messages[:ready])

    # WATCHDOG_USEC=400ms: pinged at half of it, from the main loop, again and again
    first = notify.wait_key("WATCHDOG", "1", after=ready)
    notify.wait_key("WATCHDOG", "1", after=first + 1)

    # an event in flight shows in the status line, and idle again when it is done
    with testlib.psycopg.connect(db.dsn, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(4242)")
        db.sql("SELECT pgrelay.notify('blocked', 'x')")
        draining = notify.wait_key("STATUS", "draining, 1 in flight", after=ready)
        holder.execute("SELECT pg_advisory_unlock(4242)")
    notify.wait_key("STATUS", "idle", after=draining)
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.log WHERE outcome = 'ok'") == 1,
                     "the event to finish")

    # SIGHUP: RELOADING=1 (with the monotonic time), the reload, then READY=1 again
    mark = len(notify.messages)
    p.signal(signal.SIGHUP)
    reloading = notify.wait_key("RELOADING", "1", after=mark)
    assert int(notify.messages[reloading]["MONOTONIC_USEC"]) > 0
    notify.wait_key("READY", "1", after=reloading)
    p.wait_log(r" reloaded source=signal")

    mark = len(notify.messages)
    p.signal(signal.SIGTERM)
    stopping = notify.wait_key("STOPPING", "1", after=mark)
    assert notify.messages[stopping]["STATUS"] == "stopping, 0 in flight"
    assert p.wait_exit() == 0


def test_no_watchdog_pings_unless_asked(db, processors, notify):
    p = processors("-d", db.dsn, "--poll-interval=50ms", "--log-level=debug", env=notify.env())
    notify.wait_key("READY", "1")
    p.wait_log(r" probe has_work=f", count=5)  # several passes of the loop went by
    p.signal(signal.SIGTERM)
    notify.wait_key("STOPPING", "1")
    assert p.wait_exit() == 0
    assert not any("WATCHDOG" in m for m in notify.received())


def test_once_says_ready_and_stopping(db, processors, notify):
    p = processors("-d", db.dsn, "--once", env=notify.env())
    assert p.wait_exit() == 0
    keys = [k for m in notify.received() for k in m if k in ("READY", "STOPPING")]
    assert keys == ["READY", "STOPPING"]


def test_a_processor_holds_workers_plus_one_connections(db, processors):
    """docs/operations.md sizes max_connections by this: one control connection and --workers."""
    p = processors("-d", db.dsn, "--workers=3", "--poll-interval=50ms", "--log-level=debug")
    p.wait_log(r" probe has_work=f")

    def connections():
        return db.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                         "AND application_name = 'pg_relay'")
    testlib.wait_for(lambda: connections() == 4, "1 + 3 connections")
    assert p.stop() == 0


def test_batch_size_bounds_one_fetch(db, processors):
    """docs/operations.md: a drain takes due events batch-size at a time."""
    db.sql("CREATE FUNCTION noop(p text) RETURNS void SECURITY DEFINER SET search_path = public "
           "LANGUAGE sql AS ''")
    db.sql("SELECT pgrelay.register('n', 'sql', handler => 'noop(text)')")
    db.sql("SELECT count(pgrelay.notify('n', g::text)) FROM generate_series(1, 25) g")
    p = processors("-d", db.dsn, "--once", "--workers=1", "--batch-size=10")
    assert p.wait_exit() == 0
    [batch] = p.lines("batch")
    assert " rounds=3 processed=25 ok=25 " in batch


def test_a_notification_socket_nobody_reads_never_stops_the_processor(db, processors, tmp_path):
    """systemd behind on reading: the socket's queue (net.unix.max_dgram_qlen datagrams) is full.
    The watchdog pings are dropped, the main loop keeps dispatching, and a stop waits at most a
    moment for room for STOPPING=1 before it gives up on it."""
    import socket
    tmp_path.chmod(0o755)
    path = str(tmp_path / "deaf.sock")
    deaf = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    deaf.bind(path)
    tmp_path.joinpath("deaf.sock").chmod(0o777)
    try:
        db.sql("CREATE TABLE done (p text)")
        db.sql("CREATE FUNCTION rec(p text) RETURNS void SECURITY DEFINER SET search_path = public "
               "LANGUAGE sql AS 'INSERT INTO done VALUES (p)'")
        db.sql("SELECT pgrelay.register('ev', 'sql', handler => 'rec(text)')")
        # a ping every 5 ms: the queue is full long before the events come
        p = processors("-d", db.dsn, "--poll-interval=50ms", "--log-level=debug",
                       env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "10000"})
        p.wait_log(r" probe has_work=f", count=40)
        for i in range(5):
            db.sql("SELECT pgrelay.notify('ev', %s)", (str(i),))
            testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM done") == i + 1, "event %d to run" % i)
        p.signal(signal.SIGTERM)
        assert p.wait_exit() == 0
        assert p.lines("stopped")
        # the one message a full queue refused after its wait: STOPPING=1, logged once
        failed = p.lines("notify_failed")
        assert len(failed) == 1 and "Resource temporarily unavailable" in failed[0]
    finally:
        deaf.close()
