"""Events appended to a Redis stream by the Processor's Redis module (processor/src/redis),
through its test tool (processor/test/redis/tool_redis.c), against a real redis-server: plain TCP,
TLS with the throwaway CA, AUTH with an ACL user, a retry that must not append twice, trimming,
and the classification of what the server refuses."""
import os
import shutil
import socket
import subprocess

import pytest

import testlib

TOOL = os.path.join(testlib.ROOT, "processor", "build", "asan", "tool_redis")
pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")


class Redis:
    """A redis-server of its own on a free loopback port, in a temporary directory; with certs,
    TLS only."""

    def __init__(self, tmp, certs=None, users=()):
        self.port = testlib.free_ports(1)[0]
        self.dir = tmp
        conf = ["port %d" % (0 if certs else self.port), "bind 127.0.0.1", "dir %s" % tmp,
                "save ''", "appendonly no", "daemonize no", "logfile %s/redis.log" % tmp]
        if certs:
            conf += ["tls-port %d" % self.port, "tls-cert-file %s/server.pem" % certs,
                     "tls-key-file %s/server.key" % certs, "tls-ca-cert-file %s/ca.pem" % certs,
                     "tls-auth-clients no"]
        conf += ["user %s" % u for u in users]
        with open(os.path.join(tmp, "redis.conf"), "w") as f:
            f.write("\n".join(conf) + "\n")
        self.proc = subprocess.Popen(["redis-server", os.path.join(tmp, "redis.conf")])
        self.tls = certs
        testlib.wait_for(self.listening, "redis-server to listen")

    def listening(self):
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def cli(self, *args):
        cmd = ["redis-cli", "-h", "127.0.0.1", "-p", str(self.port), "--no-auth-warning"]
        if self.tls:
            cmd += ["--tls", "--cacert", "%s/ca.pem" % self.tls]
        return subprocess.run(cmd + list(args), check=True, capture_output=True, text=True).stdout

    def entries(self, stream):
        """Each entry of the stream as a dict of its fields, read back by redis-cli."""
        return self.entries_as(None, None, stream)

    def entries_as(self, user, password, stream):
        auth = ["--user", user, "--pass", password] if user else []
        out = self.cli(*(auth + ["--raw", "XRANGE", stream, "-", "+"])).split("\n")
        entries, i = [], 0
        while i < len(out) and out[i]:
            # --raw: the id, then field, value, field, value ... one per line
            fields, i = {"id": out[i]}, i + 1
            while i + 1 < len(out) and out[i] and not _looks_like_id(out[i]):
                fields[out[i]] = out[i + 1]
                i += 2
            entries.append(fields)
        return entries

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def _looks_like_id(s):
    a, _, b = s.partition("-")
    return a.isdigit() and b.isdigit()


@pytest.fixture
def redis(tmp_path):
    r = Redis(str(tmp_path))
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
    r = Redis(str(tmp_path), certs=str(certs))
    try:
        res = append(r, "secure", ("1", "over tls"), args=["--tls", "--ca", "%s/ca.pem" % certs])
        assert res[0][0] == "sent", res
        assert r.entries("secure")[0]["payload"] == "over tls"
        # the system's CA store does not know the throwaway CA: refused, nothing sent
        (res,) = append(r, "secure", ("2", "x"), args=["--tls"])
        assert res[0] == "retry" and "certificate" in res[2], res
        # plain TCP to a TLS port: no answer the client can read
        (res,) = append(r, "secure", ("3", "x"), args=["--timeout-ms", "2000"])
        assert res[0].startswith("retry"), res
        assert len(r.entries("secure")) == 1
    finally:
        r.stop()


def test_auth_with_an_acl_user(tmp_path):
    r = Redis(str(tmp_path), users=["default off", "relay on >s3cret ~* +@all"])
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
