"""RabbitMQ end to end: a channel registered with its settings, notify() in the database, the
Processor's held transaction publishing with confirms, and a real rabbitmq-server (Debian's, one
node of the session's own) read back with pika and amqp-tools: the message's properties and
headers, the routing key fixed, from the event's key and from a payload field, an unroutable
message, a wrong password, a missing exchange, a broker that stops and comes back, a broker that blocks publishers (a resource
alarm), a batch larger than the sockets' buffers that such a broker cannot take, a connection the broker closed, TLS with the throwaway CA, and the release build under valgrind. A channel's
events go in batches: the broker's nack of some (a full queue) retries those alone, an unroutable one fails alone, and
a connection closed while confirms are outstanding loses none. A stop while the broker blocks leaves
the event for the next run."""
import json
import os
import shutil
import subprocess

import pytest

import testlib

pytestmark = pytest.mark.skipif(not os.path.exists(testlib.RabbitServer.BIN + "/rabbitmq-server"),
                                reason="rabbitmq-server is not installed")


@pytest.fixture(scope="session")
def rabbit(tmp_path_factory, certs):
    """One broker for the session (it takes seconds to start): plain and TLS listeners."""
    r = testlib.RabbitServer(tmp_path_factory.mktemp("rabbitmq"), certs=str(certs))
    yield r
    r.stop()


def declare(rabbit, queue, exchange=None, kind="direct", binding=None, arguments=None):
    """A durable queue (with arguments, when given), and when asked an exchange of kind bound to
    it by binding."""
    import pika
    params = pika.ConnectionParameters("127.0.0.1", rabbit.port, "/", pika.PlainCredentials("guest", "guest"))
    with pika.BlockingConnection(params) as conn:
        ch = conn.channel()
        ch.queue_declare(queue, durable=True, arguments=arguments)
        if exchange:
            ch.exchange_declare(exchange, kind, durable=True)
            ch.queue_bind(queue, exchange, routing_key=binding if binding is not None else queue)


def register(db, channel, settings, **kw):
    args = dict(kw, backoff_base="10 milliseconds", backoff_max="50 milliseconds")
    db.sql("SELECT pgrelay.register(%%s, 'rabbitmq', settings => %%s, %s)"
           % ", ".join("%s => %%s" % k for k in args), [channel, json.dumps(settings)] + list(args.values()))


def log_rows(db, channel):
    return db.sql("SELECT event_id, attempt, outcome, error, detail FROM pgrelay.log WHERE channel = %s ORDER BY id",
                  (channel,))


def test_events_become_persistent_confirmed_messages(db, rabbit, processors):
    """Each event is one persistent message on the exchange with the event's id as message_id,
    its channel, attempt, queue time and key as headers, and application/json for JSON; the log
    row says the broker confirmed it."""
    declare(rabbit, "q_orders", exchange="x_orders", binding="orders.created")
    register(db, "orders", {"host": "127.0.0.1", "port": rabbit.port, "exchange": "x_orders",
                            "routing_key": "orders.created"})
    first = db.scalar("SELECT pgrelay.notify('orders', '{\"id\": 1}', key => 'customer-7')")
    second = db.scalar("SELECT pgrelay.notify('orders', 'plain text')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    msgs = sorted(rabbit.messages("q_orders"), key=lambda m: int(m["message_id"]))
    assert [m["message_id"] for m in msgs] == [str(first), str(second)]
    assert msgs[0]["body"] == '{"id": 1}' and msgs[0]["content_type"] == "application/json"
    assert msgs[1]["body"] == "plain text" and msgs[1]["content_type"] is None
    assert all(m["delivery_mode"] == 2 and m["exchange"] == "x_orders" and m["routing_key"] == "orders.created"
               and m["app_id"] == "pg_relay" for m in msgs)
    assert msgs[0]["headers"]["key"] == "customer-7" and "key" not in msgs[1]["headers"]
    assert all(m["headers"]["channel"] == "orders" and m["headers"]["attempt"] == 1 for m in msgs)
    assert msgs[0]["headers"]["queued_at"].endswith("Z") and "T" in msgs[0]["headers"]["queued_at"]
    rows = sorted(log_rows(db, "orders"))
    assert [(row[0], row[1], row[2]) for row in rows] == [(first, 1, "ok"), (second, 1, "ok")]
    assert rows[0][4] == {"exchange": "x_orders", "routing_key": "orders.created", "host": "127.0.0.1",
                          "port": rabbit.port, "confirmed": True}
    assert all("publication_id" not in m["headers"] and "event_type" not in m["headers"] for m in msgs)


def test_a_publication_carries_its_id_and_event_type_as_headers(db, rabbit, processors):
    """A delivery of a topic's publication carries the headers publication_id and event_type; each
    subscriber's message has its own message_id and the same publication id."""
    db.sql("SELECT pgrelay.create_topic('orders')")
    for name in ("shipped", "billed"):
        declare(rabbit, "q_" + name, exchange="x_" + name, binding=name)
        register(db, name, {"host": "127.0.0.1", "port": rabbit.port, "exchange": "x_" + name,
                            "routing_key": name})
        db.sql("SELECT pgrelay.subscribe('orders', %s)", (name,))
    pub = db.scalar("SELECT pgrelay.publish('orders', '{\"id\": 9}', 'order.shipped')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    [a], [b] = rabbit.messages("q_shipped"), rabbit.messages("q_billed")
    assert a["message_id"] != b["message_id"]
    for msg in (a, b):
        assert msg["headers"]["publication_id"] == str(pub) and msg["headers"]["event_type"] == "order.shipped"


def test_a_payload_larger_than_a_frame_arrives_whole(db, rabbit, processors):
    """The Processor asks for 16 kB frames (less memory per connection): a payload of 100 kB goes in
    several body frames and arrives as one message, byte for byte."""
    declare(rabbit, "q_large")
    register(db, "large", {"host": "127.0.0.1", "port": rabbit.port, "routing_key": "q_large"})
    payload = json.dumps({"text": "".join(chr(0x41 + i % 26) for i in range(100000))})
    event = db.scalar("SELECT pgrelay.notify('large', %s)", (payload,))
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    [msg] = rabbit.messages("q_large")
    assert msg["message_id"] == str(event) and msg["body"] == payload
    assert [row[2] for row in log_rows(db, "large")] == ["ok"]


def test_routing_keys_from_the_event_and_the_payload(db, rabbit, processors):
    """routing_key_from "key" routes by the event's key, "field" by a field of the JSON payload
    (amqp-get reads each queue back); an event without one fails for good, nothing published."""
    for q in ("rk_eu", "rk_us", "rk_paid"):
        declare(rabbit, q, exchange="x_route", binding=q)
    register(db, "by_key", {"host": "127.0.0.1", "port": rabbit.port, "exchange": "x_route",
                            "routing_key_from": "key"})
    register(db, "by_field", {"host": "127.0.0.1", "port": rabbit.port, "exchange": "x_route",
                              "routing_key_from": "field", "routing_key_field": "status"})
    db.scalar("SELECT pgrelay.notify('by_key', 'to eu', key => 'rk_eu')")
    db.scalar("SELECT pgrelay.notify('by_key', 'to us', key => 'rk_us')")
    db.scalar("SELECT pgrelay.notify('by_field', '{\"status\": \"rk_paid\"}')")
    db.scalar("SELECT pgrelay.notify('by_key', 'no key')")
    db.scalar("SELECT pgrelay.notify('by_field', '{\"other\": 1}')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    assert rabbit.amqp("amqp-get", "-q", "rk_eu") == "to eu"
    assert rabbit.amqp("amqp-get", "-q", "rk_us") == "to us"
    assert rabbit.amqp("amqp-get", "-q", "rk_paid") == '{"status": "rk_paid"}'
    outcomes = {r[3]: r[2] for r in log_rows(db, "by_key") + log_rows(db, "by_field") if r[2] != "ok"}
    assert outcomes == {"the event has no key of 1 to 255 bytes to route by": "failed",
                        'the payload has no field "status" (a string of 1 to 255 bytes or a whole number) to '
                        'route by': "failed"}


def test_an_unroutable_message_fails_instead_of_vanishing(db, rabbit, processors):
    """mandatory (the default): a message no queue is bound for comes back, and the event fails
    for good instead of being dropped by the broker."""
    declare(rabbit, "q_unbound", exchange="x_unbound", binding="something.else")
    register(db, "unroutable", {"host": "127.0.0.1", "port": rabbit.port, "exchange": "x_unbound"})
    db.scalar("SELECT pgrelay.notify('unroutable', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    [(_, attempt, outcome, error, _)] = log_rows(db, "unroutable")
    assert (attempt, outcome) == (1, "failed") and "312 NO_ROUTE" in error, error


def test_a_wrong_password_is_the_set_ups_error(db, rabbit, processors, tmp_path):
    """The password is a reference resolved for this channel only; a wrong one is a configuration
    error at error level, with a hint, and no secret anywhere in the log."""
    rabbit.ctl("add_user", "relay", "s3cret-pw")
    rabbit.ctl("set_permissions", "-p", "/", "relay", ".*", ".*", ".*")
    declare(rabbit, "q_authed")
    register(db, "authed", {"host": "127.0.0.1", "port": rabbit.port, "routing_key": "q_authed",
                            "user": "relay", "password": "env:MQ_PW"})
    db.scalar("SELECT pgrelay.notify('authed', 'one')")
    p = processors("-d", db.dsn, "--once", "--secret-env=MQ_PW=channel/authed", env={"MQ_PW": "s3cret-pw"})
    assert p.wait_exit() == 0
    assert [m["body"] for m in rabbit.messages("q_authed")] == ["one"]

    secrets = tmp_path / "secrets"
    (secrets / "channel" / "authed").mkdir(parents=True)
    (secrets / "channel" / "authed" / "mq_pw").write_text("wrong-pw\n")
    register(db, "authed", {"password": "file:mq_pw"})
    db.scalar("SELECT pgrelay.notify('authed', 'two')")
    p = processors("-d", db.dsn, "--once", "--secrets-dir", str(secrets))
    assert p.wait_exit() == 0
    line = p.lines("attempt_failed")[0]
    assert " error " in line and "config_error=destination" in line and "ACCESS_REFUSED" in line, line
    assert "hint=" in line or "fix the channel" in p.log(), line
    assert "wrong-pw" not in p.log() and "s3cret-pw" not in p.log()
    assert db.scalar("SELECT pgrelay.error_kind(sqlstate) FROM pgrelay.log WHERE channel = 'authed' "
                     "AND outcome <> 'ok' ORDER BY id LIMIT 1") == "configuration"


def test_a_missing_exchange_or_vhost_is_the_set_ups_error(db, rabbit, processors):
    register(db, "no_exchange", {"host": "127.0.0.1", "port": rabbit.port, "exchange": "x_missing"})
    register(db, "no_vhost", {"host": "127.0.0.1", "port": rabbit.port, "vhost": "missing"})
    db.scalar("SELECT pgrelay.notify('no_exchange', 'x')")
    db.scalar("SELECT pgrelay.notify('no_vhost', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    lines = p.lines("attempt_failed")
    assert any("config_error=destination" in l and "404 NOT_FOUND" in l and "x_missing" in l for l in lines), lines
    assert any("config_error=destination" in l and "530 NOT_ALLOWED" in l for l in lines), lines
    assert {r[2] for r in log_rows(db, "no_exchange")} <= {"retry", "failed"}


def test_a_broker_that_is_down_is_retried_until_it_is_back(db, rabbit, processors):
    declare(rabbit, "q_down")
    register(db, "down", {"host": "127.0.0.1", "port": rabbit.port, "routing_key": "q_down"}, max_attempts=1000)
    rabbit.ctl("stop_app")
    try:
        eid = db.scalar("SELECT pgrelay.notify('down', 'x')")
        p = processors("-d", db.dsn, "--poll-interval=50ms")
        p.wait_log(r" attempt_failed .*outcome=retry")
        [(_, attempt, outcome, error, _)] = log_rows(db, "down")[:1]
        assert (attempt, outcome) == (1, "retry") and "cannot connect" in error, error
    finally:
        rabbit.ctl("start_app")
    testlib.wait_for(lambda: log_rows(db, "down")[-1][2] == "ok", "the event once the broker is back")
    assert p.stop() == 0
    assert [m["message_id"] for m in rabbit.messages("q_down")] == [str(eid)]


def test_a_connection_the_broker_closed_costs_no_attempt(db, rabbit, processors):
    """A worker keeps its connection between events; when the broker has closed it meanwhile, the
    next event goes on a new one at its first attempt."""
    declare(rabbit, "q_kept")
    register(db, "kept", {"host": "127.0.0.1", "port": rabbit.port, "routing_key": "q_kept"})
    db.scalar("SELECT pgrelay.notify('kept', 'first')")
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms")
    testlib.wait_for(lambda: log_rows(db, "kept"), "the first message")
    rabbit.ctl("close_all_connections", "closed by the test")
    db.scalar("SELECT pgrelay.notify('kept', 'second')")
    testlib.wait_for(lambda: len(log_rows(db, "kept")) == 2, "the second message")
    assert p.stop() == 0
    assert not p.lines("attempt_failed"), p.log()
    assert [row[1:3] for row in log_rows(db, "kept")] == [(1, "ok"), (1, "ok")]
    assert sorted(m["body"] for m in rabbit.messages("q_kept")) == ["first", "second"]


def test_tls_with_the_channels_ca(db, rabbit, processors, certs, tmp_path):
    """TLS to the broker's TLS listener, its certificate checked against the channel's CA and the
    host name; a certificate another CA signed is the set-up's error."""
    declare(rabbit, "q_tls")
    register(db, "secure", {"host": "localhost", "port": rabbit.tls_port, "tls": True,
                            "ca_file": str(certs / "ca.pem"), "routing_key": "q_tls"})
    db.scalar("SELECT pgrelay.notify('secure', 'over tls')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    assert [m["body"] for m in rabbit.messages("q_tls")] == ["over tls"]

    other = testlib.make_certs(tmp_path / "other")
    register(db, "spoofed", {"host": "localhost", "port": rabbit.tls_port, "tls": True,
                             "ca_file": str(other / "ca.pem"), "routing_key": "q_tls"})
    db.scalar("SELECT pgrelay.notify('spoofed', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    line = p.lines("attempt_failed")[0]
    assert "config_error=destination" in line and "certificate" in line, line


def test_valgrind_rabbitmq_run_is_clean(db, rabbit, processors, certs):
    """The release build under valgrind publishes over TLS with a password (OpenSSL, rabbitmq-c,
    the kept connection of two workers) without a memory error or a leak."""
    rabbit.ctl("add_user", "vg", "vg-pw")
    rabbit.ctl("set_permissions", "-p", "/", "vg", ".*", ".*", ".*")
    declare(rabbit, "q_vg")
    register(db, "vg", {"host": "localhost", "port": rabbit.tls_port, "tls": True, "ca_file": str(certs / "ca.pem"),
                        "user": "vg", "password": "env:MQ_PW", "routing_key": "q_vg"})
    for i in range(4):
        db.sql("SELECT pgrelay.notify('vg', %s)", ('{"n": %d}' % i,))
    out = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite,indirect",
                          "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
                          testlib.PROCESSOR_RELEASE, "-d", db.dsn, "--once", "--workers=2",
                          "--secret-env=MQ_PW=channel/vg"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                         env=dict(os.environ, MQ_PW="vg-pw"))
    assert out.returncode == 0, out.stdout[-6000:]
    assert "ERROR SUMMARY: 0 errors" in out.stdout
    assert [row[2] for row in log_rows(db, "vg")] == ["ok"] * 4
    assert len(rabbit.messages("q_vg")) == 4


def test_a_broker_that_blocks_publishers_is_retried(db, rabbit, processors):
    """A resource alarm (here the memory watermark at 0) makes the broker stop reading publishers:
    no confirm comes within the channel's timeout, the attempt is retried as unknown, and the
    event is delivered once the alarm clears (at least once: a copy may come twice, with the same
    message_id)."""
    declare(rabbit, "q_blocked")
    register(db, "blocked", {"host": "127.0.0.1", "port": rabbit.port, "routing_key": "q_blocked"},
             timeout="1 second", max_attempts=1000)
    rabbit.ctl("set_vm_memory_high_watermark", "0")
    try:
        eid = db.scalar("SELECT pgrelay.notify('blocked', 'x')")
        p = processors("-d", db.dsn, "--poll-interval=50ms")
        p.wait_log(r" attempt_failed .*channel=blocked .*outcome=retry")
        [(_, attempt, outcome, error, detail)] = log_rows(db, "blocked")[:1]
        assert (attempt, outcome) == (1, "retry") and "no confirm" in error and detail["unknown"] is True, error
    finally:
        rabbit.ctl("set_vm_memory_high_watermark", "0.4")
    testlib.wait_for(lambda: log_rows(db, "blocked")[-1][2] == "ok", "the event once the alarm cleared")
    assert p.stop() == 0
    assert {m["message_id"] for m in rabbit.messages("q_blocked")} == {str(eid)}


def notify_all(db, channel, payloads):
    """The events' ids, queued in this order."""
    return [db.scalar("SELECT pgrelay.notify(%s, %s)", (channel, body)) for body in payloads]


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_a_blocked_broker_ends_a_large_batch_at_the_timeout(db, rabbit, processors, certs, tls):
    """A resource alarm makes the broker stop reading publishers. A batch of messages far larger
    together than the sockets' buffers (four of 8 MB) cannot all be written: the write still ends
    at the channel's timeout, each event a retry whose error names the timeout, and the one worker
    goes on to the next attempt; over TCP and over TLS. A small message ahead of them in the batch
    went out whole: its error says no confirm came, and it is marked unknown. Once the alarm clears
    (and the timeout is raised, for a machine that stores 32 MB slowly) each event is confirmed
    once and on the queue whole (a copy may come twice, with the same message_id)."""
    queue = "q_stuck_tls" if tls else "q_stuck"
    declare(rabbit, queue)
    where = ({"host": "localhost", "port": rabbit.tls_port, "tls": True, "ca_file": str(certs / "ca.pem")} if tls
             else {"host": "127.0.0.1", "port": rabbit.port})
    register(db, "stuck", dict(where, routing_key=queue), timeout="2 seconds", max_attempts=1000,
             max_payload_bytes=8 << 20)
    small = db.scalar("SELECT pgrelay.notify('stuck', 'small')")
    payloads = {small: "small"}
    for letter in "abcd":
        payloads[db.scalar("SELECT pgrelay.notify('stuck', repeat(%s, %s))", (letter, 8 << 20))] = letter * (8 << 20)
    rabbit.ctl("set_vm_memory_high_watermark", "0")
    try:
        p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms")
        # a second attempt of each event: the worker came back from the first
        testlib.wait_for(lambda: {r[0] for r in log_rows(db, "stuck") if r[1] == 2} == set(payloads),
                         "the batch attempted twice", timeout=60)
    finally:
        rabbit.ctl("set_vm_memory_high_watermark", "0.4")
    first = [r for r in log_rows(db, "stuck") if r[1] == 1]
    assert sorted(r[0] for r in first) == sorted(payloads), first
    assert all(r[2] == "retry" and "within the timeout" in r[3] for r in first), first
    [went] = [r for r in first if r[0] == small]
    assert went[3] == "no confirm from the broker within the timeout" and went[4]["unknown"] is True, went
    db.sql("SELECT pgrelay.register('stuck', 'rabbitmq', timeout => '60 seconds')")
    testlib.wait_for(lambda: {r[0] for r in log_rows(db, "stuck") if r[2] == "ok"} == set(payloads),
                     "every event confirmed once the alarm cleared", timeout=120)
    assert p.stop() == 0
    ok = [r[0] for r in log_rows(db, "stuck") if r[2] == "ok"]
    assert sorted(ok) == sorted(payloads)
    got = rabbit.messages(queue)
    assert {m["message_id"] for m in got} == {str(i) for i in payloads}
    assert all(m["body"] == payloads[int(m["message_id"])] for m in got)


def test_a_batch_the_broker_nacks_in_part_retries_only_the_nacked(db, rabbit, processors):
    """A queue that holds two messages and refuses more (x-max-length 2, x-overflow
    reject-publish): the broker acks the first two of the batch and nacks the rest; the nacked
    events are retried (not failed, not lost) while the acked ones are finished once, and as the
    queue is drained every event ends on it exactly once."""
    declare(rabbit, "q_full", exchange="x_full", binding="full",
            arguments={"x-max-length": 2, "x-overflow": "reject-publish"})
    register(db, "full", {"host": "127.0.0.1", "port": rabbit.port, "exchange": "x_full", "routing_key": "full"},
             max_attempts=1000)
    ids = notify_all(db, "full", ["m%d" % i for i in range(5)])
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms")
    testlib.wait_for(lambda: len({r[0] for r in log_rows(db, "full")}) == 5, "a first attempt of each event")
    first = {r[0]: (r[2], r[3]) for r in log_rows(db, "full") if r[1] == 1}
    nacked = "the broker nacked the message (it could not take it)"
    assert first == {ids[0]: ("ok", None), ids[1]: ("ok", None), ids[2]: ("retry", nacked),
                     ids[3]: ("retry", nacked), ids[4]: ("retry", nacked)}, first
    got = []

    def all_ok():
        got.extend(rabbit.messages("q_full"))    # room on the queue for the retries
        return {r[0] for r in log_rows(db, "full") if r[2] == "ok"} == set(ids)

    testlib.wait_for(all_ok, "every event confirmed once the queue has room", timeout=60)
    assert p.stop() == 0
    got.extend(rabbit.messages("q_full"))
    assert sorted(int(m["message_id"]) for m in got) == sorted(ids)
    rows = log_rows(db, "full")
    assert sorted(r[0] for r in rows if r[2] == "ok") == sorted(ids)
    assert {(r[2], r[3]) for r in rows if r[2] != "ok"} == {("retry", nacked)}


def test_one_unroutable_message_of_a_batch_fails_alone(db, rabbit, processors):
    """mandatory: of one batch, the message no queue is bound for comes back and its event fails
    for good; the others are confirmed and finished."""
    declare(rabbit, "q_mixed", exchange="x_mixed", binding="mixed.ok")
    register(db, "mixed", {"host": "127.0.0.1", "port": rabbit.port, "exchange": "x_mixed",
                           "routing_key_from": "field", "routing_key_field": "to"})
    ids = notify_all(db, "mixed", ['{"n": %d, "to": "mixed.%s"}' % (i, to)
                                   for i, to in enumerate(["ok", "ok", "nowhere", "ok"])])
    p = processors("-d", db.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    rows = {r[0]: r[1:4] for r in log_rows(db, "mixed")}
    assert {i: r[:2] for i, r in rows.items()} == {ids[0]: (1, "ok"), ids[1]: (1, "ok"), ids[2]: (1, "failed"),
                                                   ids[3]: (1, "ok")}, rows
    assert "312 NO_ROUTE" in rows[ids[2]][2], rows
    assert sorted(int(m["message_id"]) for m in rabbit.messages("q_mixed")) == [ids[0], ids[1], ids[3]]


def connection_states(rabbit):
    return rabbit.ctl("list_connections", "-q", "--no-table-headers", "state").split()


def test_a_connection_closed_while_confirms_are_outstanding_loses_nothing(db, rabbit, processors):
    """A resource alarm makes the broker stop reading the publisher: once the connection shows
    blocked, the batch is out and its confirms outstanding. Closing the connection then makes each
    event of the batch whose confirm had not come a retry marked unknown, none lost; once the alarm
    clears each event is confirmed and on the queue at least once (a copy may come twice, with the
    same message_id)."""
    declare(rabbit, "q_cut")
    register(db, "cut", {"host": "127.0.0.1", "port": rabbit.port, "routing_key": "q_cut"},
             timeout="60 seconds", max_attempts=1000)
    ids = notify_all(db, "cut", ["c%d" % i for i in range(5)])
    rabbit.ctl("set_vm_memory_high_watermark", "0")
    try:
        p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms")
        testlib.wait_for(lambda: "blocked" in connection_states(rabbit), "the batch published, unconfirmed",
                         timeout=60, interval=0.2)
        rabbit.ctl("close_all_connections", "closed by the test")
        testlib.wait_for(lambda: len(log_rows(db, "cut")) >= 5, "the batch's attempts")
    finally:
        rabbit.ctl("set_vm_memory_high_watermark", "0.4")
    first = log_rows(db, "cut")[:5]
    assert sorted(r[0] for r in first) == sorted(ids)
    # the broker may have taken the message that made it block before it stopped reading
    assert all(r[1:3] == (1, "ok") or (r[1:3] == (1, "retry") and r[4]["unknown"] is True) for r in first), first
    assert sum(r[2] == "retry" for r in first) >= len(ids) - 1, first
    testlib.wait_for(lambda: {r[0] for r in log_rows(db, "cut") if r[2] == "ok"} == set(ids),
                     "every event confirmed once the alarm cleared", timeout=60)
    assert p.stop() == 0
    got = [int(m["message_id"]) for m in rabbit.messages("q_cut")]
    assert set(got) == set(ids) and len(got) >= len(ids)
    assert not [r for r in log_rows(db, "cut") if r[2] not in ("ok", "retry")]


def test_a_stop_while_the_broker_blocks_leaves_the_event_for_the_next_run(db, rabbit, processors):
    """A stop while the broker blocks the publisher (a memory alarm) and the channel's timeout is
    far off: the cancel at --shutdown-timeout does not reach the wait for the broker, so the
    Processor exits without that attempt; its transaction rolls back, no log row, and the next run
    delivers the event at its first attempt (a copy may come twice, with the same message_id)."""
    declare(rabbit, "q_stop")
    register(db, "stop", {"host": "127.0.0.1", "port": rabbit.port, "routing_key": "q_stop"},
             timeout="60 seconds", max_attempts=1000)
    rabbit.ctl("set_vm_memory_high_watermark", "0")
    try:
        eid = db.scalar("SELECT pgrelay.notify('stop', 'x')")
        p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms", "--shutdown-timeout=1s")
        testlib.wait_for(lambda: "blocked" in connection_states(rabbit), "the message published, unconfirmed",
                         timeout=60, interval=0.2)
        assert p.stop() == 0
        assert "unfinished=1" in p.lines("stopped")[0], p.log()
        assert log_rows(db, "stop") == []
    finally:
        rabbit.ctl("set_vm_memory_high_watermark", "0.4")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    assert [r[1:3] for r in log_rows(db, "stop")] == [(1, "ok")]
    assert {m["message_id"] for m in rabbit.messages("q_stop")} == {str(eid)}
