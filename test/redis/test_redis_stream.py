"""Events appended to a Redis stream by the Processor's Redis module (processor/src/redis),
through its test tool (processor/test/redis/tool_redis.c), against a real redis-server: plain TCP,
TLS with the throwaway CA, AUTH with an ACL user, a retry that must not append twice, trimming,
the classification of what the server refuses, and a server that sends more than a reply."""
import os
import shutil
import subprocess

import pytest

import testlib

TOOL = os.path.join(testlib.ROOT, "processor", "build", "asan", "tool_redis")
pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")


@pytest.fixture
def redis(tmp_path):
    r = testlib.RedisServer(str(tmp_path))
    yield r
    r.stop()


def append(r, stream, *events, args=()):
    """Runs the tool: events are (event_id, payload) pairs; one (outcome, entry_id, error) each."""
    cmd = [TOOL] + list(args) + ["127.0.0.1", str(r.port), stream]
    for ev in events:
        cmd += list(ev)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout
    return [tuple(line.split(" ", 2)) for line in out.splitlines()]


def test_an_event_is_one_entry_with_its_fields(redis):
    res = append(redis, "orders", ("101", '{"total": 3}'), args=["--key", "customer-7"])
    assert res[0][0] == "sent", res
    (e,) = redis.entries("orders")
    assert e["id"] == res[0][1]
    assert e["event_id"] == "101" and e["channel"] == "orders" and e["attempt"] == "1"
    assert e["key"] == "customer-7" and e["payload"] == '{"total": 3}'
    assert e["queued_at"] == "2026-12-07T00:00:00Z"


def test_a_retry_of_an_appended_event_appends_nothing(redis):
    """A retry after a lost reply sends the same event again: the server's script finds the
    marker of the first append and answers with that entry's id."""
    res = append(redis, "orders", ("7", "first"), ("7", "again"), ("8", "next"))
    assert [r[0] for r in res] == ["sent", "duplicate", "sent"], res
    assert res[1][1] == res[0][1]
    assert [e["event_id"] for e in redis.entries("orders")] == ["7", "8"]
    assert 0 < int(redis.cli("TTL", "{orders}:pg_relay:sent:7")) <= 86400


def test_the_script_is_loaded_again_after_a_flush(redis):
    append(redis, "s", ("1", "a"))
    redis.cli("SCRIPT", "FLUSH")
    res = append(redis, "s", ("2", "b"))
    assert res[0][0] == "sent", res


def test_maxlen_trims_the_stream(redis):
    events = [(str(i), "p%d" % i) for i in range(1, 301)]
    res = append(redis, "trimmed", *events, args=["--maxlen", "10"])
    assert all(r[0] == "sent" for r in res), res
    # MAXLEN ~ trims whole macro nodes: at least 10 entries stay, far fewer than 300
    assert 10 <= int(redis.cli("XLEN", "trimmed")) < 300


def test_a_key_of_another_type_is_a_configuration_error(redis):
    redis.cli("SET", "taken", "a string")
    (res,) = append(redis, "taken", ("1", "x"))
    assert res[0] == "config" and "WRONGTYPE" in res[2], res


def test_no_server_is_retried(tmp_path):
    port = testlib.free_ports(1)[0]
    out = subprocess.run([TOOL, "127.0.0.1", str(port), "s", "1", "x"], check=True, capture_output=True,
                         text=True).stdout
    assert out.startswith("retry - cannot connect to 127.0.0.1:%d" % port), out


def test_tls_with_the_servers_ca(tmp_path, certs):
    r = testlib.RedisServer(str(tmp_path), certs=str(certs))
    try:
        res = append(r, "secure", ("1", "over tls"), args=["--tls", "--ca", "%s/ca.pem" % certs])
        assert res[0][0] == "sent", res
        assert r.entries("secure")[0]["payload"] == "over tls"
        # the system's CA store does not know the throwaway CA: the set-up's error, nothing sent
        (res,) = append(r, "secure", ("2", "x"), args=["--tls"])
        assert res[0] == "config" and "certificate" in res[2], res
        # a CA file that cannot be read: the set-up's too
        (res,) = append(r, "secure", ("2", "x"), args=["--tls", "--ca", "%s/missing.pem" % certs])
        assert res[0] == "config" and "cannot load the CA file" in res[2], res
        # plain TCP to a TLS port: no answer the client can read
        (res,) = append(r, "secure", ("3", "x"), args=["--timeout-ms", "2000"])
        assert res[0].startswith("retry"), res
        assert len(r.entries("secure")) == 1
    finally:
        r.stop()


def test_auth_with_an_acl_user(tmp_path):
    r = testlib.RedisServer(str(tmp_path), users=["default off", "relay on >s3cret ~* +@all"])
    try:
        (res,) = append(r, "authed", ("1", "x"), args=["--user", "relay", "--password", "s3cret"])
        assert res[0] == "sent", res
        (res,) = append(r, "authed", ("2", "x"), args=["--user", "relay", "--password", "wrong"])
        assert res[0] == "config" and "AUTH refused" in res[2] and "wrong" not in res[2], res
        # without AUTH the server refuses the command (a long one even before reading it all)
        (res,) = append(r, "authed", ("3", "x"))
        assert res[0] == "config" and ("NOAUTH" in res[2] or "unauthenticated" in res[2]), res
        assert [e["event_id"] for e in r.entries_as("relay", "s3cret", "authed")] == ["1"]
    finally:
        r.stop()


def test_a_reply_larger_than_a_megabyte_is_refused(tmp_path):
    """A server that answers with more than the script's reply (not Redis, or not the one the
    settings mean) is cut off at 1 MiB: the attempt is retried, memory stays bounded."""
    import socket
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def flood():
        c, _ = srv.accept()
        c.recv(65536)
        try:
            c.sendall(b"$4000000\r\n" + b"x" * 2000000)
        except OSError:
            pass
        c.close()
    t = threading.Thread(target=flood)
    t.start()
    out = subprocess.run([TOOL, "127.0.0.1", str(port), "s", "1", "x"], check=True, capture_output=True,
                         text=True).stdout
    t.join()
    srv.close()
    assert out.startswith("retry(unknown) - ") and "larger than 1048576 bytes" in out, out
