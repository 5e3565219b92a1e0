"""Redis Streams end to end: a channel registered with its settings, notify() in the database, the
Processor's held transaction, and a real redis-server (Debian's) read back with redis-cli: plain,
AUTH with an ACL user and its password bound to the channel, TLS with the throwaway CA; a server
that is down, then back; a refusal that is the set-up's."""
import json
import os
import shutil
import signal
import subprocess

import pytest

import testlib

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")


@pytest.fixture
def redis(tmp_path):
    started = []

    def start(**kw):
        d = tmp_path / ("redis-%d" % len(started))
        d.mkdir()
        r = testlib.RedisServer(str(d), **kw)
        started.append(r)
        return r
    yield start
    for r in started:
        r.stop()


def register(db, channel, settings, **kw):
    args = dict(kw, backoff_base="10 milliseconds", backoff_max="50 milliseconds")
    db.sql("SELECT pgrelay.register(%%s, 'redis', settings => %%s, %s)"
           % ", ".join("%s => %%s" % k for k in args), [channel, json.dumps(settings)] + list(args.values()))


def log_rows(db, channel):
    return db.sql("SELECT event_id, attempt, outcome, error, detail FROM pgrelay.log WHERE channel = %s ORDER BY id",
                  (channel,))


def test_events_become_entries_with_their_fields(db, redis, processors):
    """Each event is one entry of the channel's stream with its id, channel, attempt, queue time,
    key and payload; the log row names the entry."""
    r = redis()
    register(db, "orders", {"host": "127.0.0.1", "port": r.port, "stream": "orders:events"})
    first = db.scalar("SELECT pgrelay.notify('orders', '{\"id\": 1}', key => 'customer-7')")
    second = db.scalar("SELECT pgrelay.notify('orders', 'plain text')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    # two workers may append them in either order
    entries = sorted(r.entries("orders:events"), key=lambda e: int(e["event_id"]))
    assert [e["event_id"] for e in entries] == [str(first), str(second)]
    assert entries[0]["payload"] == '{"id": 1}' and entries[0]["key"] == "customer-7"
    assert "key" not in entries[1] and entries[1]["payload"] == "plain text"
    assert all(e["channel"] == "orders" and e["attempt"] == "1" for e in entries)
    assert entries[0]["queued_at"].endswith("Z") and "T" in entries[0]["queued_at"]
    rows = sorted(log_rows(db, "orders"))
    assert [(row[0], row[2]) for row in rows] == [(first, "ok"), (second, "ok")]
    assert rows[0][4]["entry_id"] == entries[0]["id"] and rows[0][4]["duplicate"] is False
    assert rows[0][4]["stream"] == "orders:events"


def test_a_server_that_is_down_is_retried_until_it_is_back(db, redis, processors):
    r = redis()
    register(db, "down", {"host": "127.0.0.1", "port": r.port})
    r.stop()
    eid = db.scalar("SELECT pgrelay.notify('down', 'x')")
    p = processors("-d", db.dsn, "--poll-interval=50ms")
    p.wait_log(r" attempt_failed .*outcome=retry")
    [(_, attempt, outcome, error, _)] = log_rows(db, "down")[:1]
    assert (attempt, outcome) == (1, "retry") and "cannot connect" in error
    r.start()
    testlib.wait_for(lambda: r.entries("down"), "the entry once the server is back")
    assert p.stop() == 0
    assert [e["event_id"] for e in r.entries("down")] == [str(eid)]
    assert log_rows(db, "down")[-1][2] == "ok"


def test_auth_with_the_channels_own_secret(db, redis, processors, tmp_path):
    """The password is a reference the Processor resolves for this channel only: bound with
    --secret-env to channel/authed, or a file of the channel's directory; a wrong one is a
    configuration error at error level, with a hint, and no secret anywhere in the log."""
    r = redis(users=["default off", "relay on >s3cret-pw ~* +@all"])
    register(db, "authed", {"host": "127.0.0.1", "port": r.port, "user": "relay", "password": "env:REDIS_PW"})
    db.scalar("SELECT pgrelay.notify('authed', 'one')")
    p = processors("-d", db.dsn, "--once", "--secret-env=REDIS_PW=channel/authed", env={"REDIS_PW": "s3cret-pw"})
    assert p.wait_exit() == 0
    assert [e["payload"] for e in r.entries_as("relay", "s3cret-pw", "authed")] == ["one"]

    secrets = tmp_path / "secrets"
    (secrets / "channel" / "authed").mkdir(parents=True)
    (secrets / "channel" / "authed" / "redis_pw").write_text("wrong-pw\n")
    register(db, "authed", {"password": "file:redis_pw"})
    db.scalar("SELECT pgrelay.notify('authed', 'two')")
    p = processors("-d", db.dsn, "--once", "--secrets-dir", str(secrets))
    assert p.wait_exit() == 0
    line = p.lines("attempt_failed")[0]  # --once runs the retries that come due meanwhile too
    assert " error " in line and "config_error=destination" in line and "AUTH refused" in line, line
    assert "wrong-pw" not in p.log() and "s3cret-pw" not in p.log()
    assert log_rows(db, "authed")[-1][2] in ("retry", "failed")

    # a webhook's binding of the same name is not the channel's
    db.scalar("SELECT pgrelay.notify('authed', 'three')")
    register(db, "authed", {"password": "env:REDIS_PW"})
    p = processors("-d", db.dsn, "--once", "--secret-env=REDIS_PW=webhook/authed", env={"REDIS_PW": "s3cret-pw"})
    assert p.wait_exit() == 0
    assert any("config_error=secret" in l and "is not bound to channel/authed" in l
               for l in p.lines("attempt_failed")), p.log()


def test_tls_with_the_channels_ca(db, redis, processors, certs):
    r = redis(certs=str(certs))
    register(db, "secure", {"host": "localhost", "port": r.port, "tls": True, "ca_file": str(certs / "ca.pem")})
    db.scalar("SELECT pgrelay.notify('secure', 'over tls')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    assert [e["payload"] for e in r.entries("secure")] == ["over tls"]


def test_a_key_of_another_type_is_the_set_ups_error(db, redis, processors):
    r = redis()
    r.cli("SET", "taken", "a string")
    register(db, "taken", {"host": "127.0.0.1", "port": r.port})
    db.scalar("SELECT pgrelay.notify('taken', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    line = p.lines("attempt_failed")[0]
    assert "config_error=destination" in line and "WRONGTYPE" in line, line
    assert db.scalar("SELECT pgrelay.error_kind(sqlstate) FROM pgrelay.log WHERE channel = 'taken'") == "configuration"


def test_a_burst_is_appended_in_batches_each_event_its_own_outcome(db, redis, processors):
    """A worker takes a burst of events of one channel together: one claim, one pipeline of appends
    on one connection, one finish, one commit. Each event still gets its own log row and its own
    outcome, so the one whose append the server refuses (its marker key holds a hash: WRONGTYPE)
    fails alone and the others of its batch are appended."""
    r = redis()
    register(db, "burst", {"host": "127.0.0.1", "port": r.port, "stream": "burst:events"}, max_attempts=1)
    ids = [db.scalar("SELECT pgrelay.notify('burst', %s)", ("event %d" % n,)) for n in range(20)]
    bad = ids[7]
    r.cli("HSET", "{burst:events}:pg_relay:sent:%d" % bad, "field", "value")
    p = processors("-d", db.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    assert sorted(int(e["event_id"]) for e in r.entries("burst:events")) == sorted(i for i in ids if i != bad)
    rows = db.sql("SELECT event_id, outcome, error, xmin::text FROM pgrelay.log WHERE channel = 'burst'")
    assert sorted(row[0] for row in rows) == sorted(ids)  # one log row per event
    assert {row[0]: row[1] for row in rows} == {i: "failed" if i == bad else "ok" for i in ids}
    assert "WRONGTYPE" in [row[2] for row in rows if row[0] == bad][0]
    # finished in batches: the log rows of a batch are written by its one transaction
    assert len({row[3] for row in rows}) < len(ids)
    assert db.scalar("SELECT count(*) FROM pgrelay.failed_events WHERE channel = 'burst'") == 1


def test_a_connection_the_server_closed_costs_no_attempt(db, redis, processors):
    """A worker keeps its connection between events; when the server has closed it meanwhile (its
    idle timeout, CLIENT KILL), the next event opens a new one and is appended at its first
    attempt."""
    r = redis()
    register(db, "kept", {"host": "127.0.0.1", "port": r.port})
    db.scalar("SELECT pgrelay.notify('kept', 'first')")
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms")
    testlib.wait_for(lambda: r.entries("kept"), "the first entry")
    assert int(r.cli("CLIENT", "KILL", "TYPE", "normal")) >= 1
    db.scalar("SELECT pgrelay.notify('kept', 'second')")
    testlib.wait_for(lambda: len(r.entries("kept")) == 2, "the second entry")
    assert p.stop() == 0
    assert not p.lines("attempt_failed"), p.log()
    assert [row[1:3] for row in log_rows(db, "kept")] == [(1, "ok"), (1, "ok")]


def test_an_append_whose_reply_never_came_is_not_made_twice(db, redis, processors):
    """The server hangs (SIGSTOP) once the append has gone out on the worker's kept connection:
    the attempt runs out of time with an unknown outcome. Let go, the server runs the append it
    had received; the retry finds the event's marker, appends nothing and finishes the event with
    that entry."""
    r = redis()
    db.sql("SELECT pgrelay.register('hung', 'redis', settings => %s, timeout => '1 second',"
           " backoff_base => '3 seconds', backoff_max => '3 seconds')",
           (json.dumps({"host": "127.0.0.1", "port": r.port}),))
    first = db.scalar("SELECT pgrelay.notify('hung', 'first')")
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms")
    # the first append loads the script: the second goes out as one EVALSHA
    testlib.wait_for(lambda: r.entries("hung"), "the first entry")
    r.proc.send_signal(signal.SIGSTOP)
    try:
        second = db.scalar("SELECT pgrelay.notify('hung', 'second')")
        p.wait_log(r" attempt_failed .*outcome=retry")
    finally:
        r.proc.send_signal(signal.SIGCONT)
    # the backoff leaves the server time to run what it had received before the retry comes
    testlib.wait_for(lambda: len(r.entries("hung")) == 2, "the append the server had received")
    testlib.wait_for(lambda: not db.scalar("SELECT count(*) FROM pgrelay.queue WHERE channel = 'hung'"),
                     "the retry")
    assert p.stop() == 0
    entries = r.entries("hung")
    assert [e["event_id"] for e in entries] == [str(first), str(second)]
    rows = [row for row in log_rows(db, "hung") if row[0] == second]
    assert [row[1:3] for row in rows] == [(1, "retry"), (2, "ok")]
    assert rows[0][4]["unknown"] is True, rows[0]
    assert rows[1][4]["duplicate"] is True and rows[1][4]["entry_id"] == entries[1]["id"], rows[1]


def test_a_long_stream_name_is_recorded(db, redis, processors):
    """The log row's detail names the stream, whatever its length (up to the 512 bytes a setting
    may have)."""
    r = redis()
    stream = "s" * 500
    register(db, "long", {"host": "127.0.0.1", "port": r.port, "stream": stream})
    db.scalar("SELECT pgrelay.notify('long', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    [(_, attempt, outcome, _, detail)] = log_rows(db, "long")
    assert (attempt, outcome, detail["stream"]) == (1, "ok", stream)
    assert r.entries(stream)[0]["payload"] == "x"


def test_a_certificate_for_another_name_is_the_set_ups_error(db, redis, processors, certs):
    """The server's certificate must name the host the settings give: one made for another name is
    a configuration error, and nothing is sent."""
    r = redis(certs=str(certs), cert_name="wrong")
    register(db, "spoofed", {"host": "localhost", "port": r.port, "tls": True, "ca_file": str(certs / "ca.pem")})
    db.scalar("SELECT pgrelay.notify('spoofed', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    line = p.lines("attempt_failed")[0]
    assert "config_error=destination" in line and "certificate" in line, line


def test_valgrind_redis_run_is_clean(db, redis, processors, certs):
    """The release build under valgrind appends over TLS with AUTH (OpenSSL, hiredis's reader, the
    kept connection of two workers) without a memory error
    or a leak."""
    r = redis(certs=str(certs), users=["default off", "relay on >s3cret-pw ~* +@all"])
    register(db, "vg", {"host": "localhost", "port": r.port, "tls": True, "ca_file": str(certs / "ca.pem"),
                        "user": "relay", "password": "env:REDIS_PW"})
    for i in range(4):
        db.sql("SELECT pgrelay.notify('vg', %s)", ('{"n": %d}' % i,))
    out = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite,indirect",
                          "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
                          testlib.PROCESSOR_RELEASE, "-d", db.dsn, "--once", "--workers=2",
                          "--secret-env=REDIS_PW=channel/vg"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                         env=dict(os.environ, REDIS_PW="s3cret-pw"))
    assert out.returncode == 0, out.stdout[-6000:]
    assert "ERROR SUMMARY: 0 errors" in out.stdout
    assert [row[2] for row in log_rows(db, "vg")] == ["ok"] * 4
    assert len(r.entries_as("relay", "s3cret-pw", "vg")) == 4
