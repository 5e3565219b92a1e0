"""Kafka end to end: a channel registered with its settings, notify() in the database, the
Processor's held transaction producing through librdkafka, and librdkafka's mock cluster
(processor/test/kafka/tool_kafka_mock.c, on loopback) read back by a real consumer, kcat: the
message's payload, key and headers (a publication's id and event type among them), the order of
one key's events, a burst produced in batches (one message too large failing alone, brokers down
then back), a retriable error then success, a permanent error, the set-up's errors (unknown topic,
brokers that cannot be resolved), settings that change, and the release build under valgrind. Not a real Kafka broker: Debian
packages none. Over TLS (the mock cluster in a network namespace of its own behind socat's TLS
server, testlib.KafkaMock): delivered with the channel's CA, refused with another CA or another
name, delivered with tls_verify false. SASL (the mock cluster has none: test/fixtures/kafkasasl.py
in front of it answers SASL itself): PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, over TLS or not, with
the password from --secret-env; a wrong password and a mechanism the brokers do not enable as
configuration errors."""
import ctypes
import json
import os
import shutil
import socket
import subprocess
import tempfile

import pytest

import testlib

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None or not os.path.exists(testlib.KAFKA_MOCK),
                                reason="kcat or the mock cluster tool is missing")


@pytest.fixture
def kafka():
    k = testlib.KafkaMock()
    yield k
    k.stop()


def register(db, channel, settings, **kw):
    args = dict(kw, backoff_base="10 milliseconds", backoff_max="50 milliseconds")
    db.sql("SELECT pgrelay.register(%%s, 'kafka', settings => %%s, %s)"
           % ", ".join("%s => %%s" % k for k in args), [channel, json.dumps(settings)] + list(args.values()))


def log_rows(db, channel):
    return db.sql("SELECT event_id, attempt, outcome, error, detail FROM pgrelay.log WHERE channel = %s ORDER BY id",
                  (channel,))


def test_events_become_messages_with_their_key_and_headers(db, kafka, processors):
    """Each event is one message of the channel's topic: the payload as the value, the event's key
    as the key, the headers event_id, channel, attempt and queued_at; the log row names its
    partition and offset."""
    kafka.command("topic orders.v1 3")
    register(db, "orders", {"brokers": kafka.bootstrap, "topic": "orders.v1"})
    first = db.scalar("SELECT pgrelay.notify('orders', '{\"id\": 1}', key => 'customer-7')")
    second = db.scalar("SELECT pgrelay.notify('orders', 'plain text')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    msgs = sorted(kafka.messages("orders.v1"), key=lambda m: int(m["headers"]["event_id"]))
    assert [m["headers"]["event_id"] for m in msgs] == [str(first), str(second)]
    assert msgs[0]["payload"] == '{"id": 1}' and msgs[0]["key"] == "customer-7"
    assert msgs[1]["key"] is None and msgs[1]["payload"] == "plain text"
    assert all(m["headers"]["channel"] == "orders" and m["headers"]["attempt"] == "1" for m in msgs)
    assert msgs[0]["headers"]["queued_at"].endswith("Z") and "T" in msgs[0]["headers"]["queued_at"]
    rows = sorted(log_rows(db, "orders"))
    assert [(row[0], row[2]) for row in rows] == [(first, "ok"), (second, "ok")]
    assert (rows[0][4]["topic"], rows[0][4]["partition"], rows[0][4]["offset"]) == \
        ("orders.v1", msgs[0]["partition"], msgs[0]["offset"])
    assert all("publication_id" not in m["headers"] and "event_type" not in m["headers"] for m in msgs)


def test_a_publication_carries_its_id_and_event_type_as_headers(db, kafka, processors):
    """A delivery of a topic's publication carries the headers publication_id and event_type
    besides the event's own; the same publication id as its sibling delivery's."""
    db.sql("SELECT pgrelay.create_topic('orders')")
    for name in ("shipped", "billed"):
        kafka.command("topic %s.v1 1" % name)
        register(db, name, {"brokers": kafka.bootstrap, "topic": name + ".v1"})
        db.sql("SELECT pgrelay.subscribe('orders', %s)", (name,))
    pub = db.scalar("SELECT pgrelay.publish('orders', '{\"id\": 9}', 'order.shipped')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    [a], [b] = kafka.messages("shipped.v1"), kafka.messages("billed.v1")
    assert a["headers"]["event_id"] != b["headers"]["event_id"]
    for msg in (a, b):
        assert msg["headers"]["publication_id"] == str(pub) and msg["headers"]["event_type"] == "order.shipped"


def test_one_keys_events_keep_their_order(db, kafka, processors):
    """A key holds one waiting event at a time (notify() replaces it): the events of a key, queued
    one after the other's delivery, land in one partition in that order, with four workers."""
    kafka.command("topic ordered 4")
    register(db, "ordered", {"brokers": kafka.bootstrap, "topic": "ordered"})
    ids = {}
    for _ in range(4):
        for k in range(5):
            key = "k%d" % k
            ids.setdefault(key, []).append(db.scalar("SELECT pgrelay.notify('ordered', 'x', key => %s)", (key,)))
        p = processors("-d", db.dsn, "--once", "--workers=4")
        assert p.wait_exit() == 0
    msgs = kafka.messages("ordered")
    assert len(msgs) == 20
    for key, queued in ids.items():
        mine = [m for m in msgs if m["key"] == key]
        assert len({m["partition"] for m in mine}) == 1
        assert [int(m["headers"]["event_id"]) for m in mine] == queued


def test_the_key_from_a_payload_member(db, kafka, processors):
    """key: field takes the message key from the payload's member; a payload without it fails."""
    kafka.command("topic by_customer 2")
    register(db, "by_customer", {"brokers": kafka.bootstrap, "topic": "by_customer", "key": "field",
                                 "key_field": "customer"})
    db.scalar("SELECT pgrelay.notify('by_customer', '{\"customer\": \"c-9\", \"n\": 1}', key => 'ignored')")
    db.scalar("SELECT pgrelay.notify('by_customer', '{\"customer\": 42}')")
    bad = db.scalar("SELECT pgrelay.notify('by_customer', '{\"n\": 3}')")
    p = processors("-d", db.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    assert sorted(m["key"] for m in kafka.messages("by_customer")) == ["42", "c-9"]
    [(outcome, error)] = db.sql("SELECT outcome, error FROM pgrelay.log WHERE event_id = %s", (bad,))
    assert outcome == "failed" and '"customer"' in error


def test_a_retriable_error_then_success_is_one_message(db, kafka, processors):
    """Two Produce requests refused with NOT_ENOUGH_REPLICAS: the idempotent producer retries, the
    third is taken; the event is finished once, at its first attempt, and the topic holds it once."""
    kafka.command("topic retried 1")
    kafka.command("produce-errors 19 2")
    register(db, "retried", {"brokers": kafka.bootstrap, "topic": "retried"})
    eid = db.scalar("SELECT pgrelay.notify('retried', 'once')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    assert [m["headers"]["event_id"] for m in kafka.messages("retried")] == [str(eid)]
    assert [row[1:3] for row in log_rows(db, "retried")] == [(1, "ok")]


def test_brokers_that_are_down_are_retried_until_they_are_back(db, kafka, processors):
    """No delivery report within the timeout: the attempt is a retry, and a later one delivers."""
    kafka.command("topic down 1")
    register(db, "down", {"brokers": kafka.bootstrap, "topic": "down", "timeout_ms": 1000})
    kafka.command("down")
    eid = db.scalar("SELECT pgrelay.notify('down', 'x')")
    p = processors("-d", db.dsn, "--poll-interval=50ms")
    p.wait_log(r" attempt_failed .*outcome=retry")
    [(_, attempt, outcome, error, _)] = log_rows(db, "down")[:1]
    assert (attempt, outcome) == (1, "retry") and "timed out" in error, error
    kafka.command("up")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.log WHERE channel = 'down' AND outcome = 'ok'"),
                     "the event delivered once the brokers are back")
    assert p.stop() == 0
    assert [m["headers"]["event_id"] for m in kafka.messages("down")][-1] == str(eid)
    assert log_rows(db, "down")[-1][1] >= 2


def test_a_batch_with_a_message_too_large_fails_only_that_event(db, kafka, processors):
    """One worker takes a burst of one channel's events together: one claim, every message produced
    before any report is awaited, one finish, one commit. The message larger than librdkafka's
    message.max.bytes is refused at once and fails alone; the others of its batch are delivered,
    each once."""
    kafka.command("topic burst 2")
    register(db, "burst", {"brokers": kafka.bootstrap, "topic": "burst"}, max_payload_bytes=2000000, max_attempts=1)
    ids = [db.scalar("SELECT pgrelay.notify('burst', %s)", ('{"n": %d}' % n,)) for n in range(10)]
    big = db.scalar("SELECT pgrelay.notify('burst', repeat('x', 1100000))")
    ids += [db.scalar("SELECT pgrelay.notify('burst', %s)", ('{"n": %d}' % n,)) for n in range(10, 20)]
    p = processors("-d", db.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    assert sorted(int(m["headers"]["event_id"]) for m in kafka.messages("burst")) == sorted(ids)
    rows = db.sql("SELECT event_id, outcome, error, xmin::text FROM pgrelay.log WHERE channel = 'burst'")
    assert sorted(row[0] for row in rows) == sorted(ids + [big])  # one log row per event
    assert {row[0]: row[1] for row in rows} == {i: "failed" if i == big else "ok" for i in ids + [big]}
    assert "too large" in [row[2] for row in rows if row[0] == big][0].lower()
    # in a batch with others: the log rows of a batch are written by its one transaction
    assert [row[3] for row in rows if row[0] == big][0] in {row[3] for row in rows if row[0] != big}


def test_a_batch_while_the_brokers_are_down_arrives_once_when_they_are_back(db, kafka, processors):
    """A burst produced while every broker is down: no report comes within the timeout, so every
    event of the batch is retried; once the brokers are back each arrives, exactly once."""
    kafka.command("topic downb 2")
    register(db, "downb", {"brokers": kafka.bootstrap, "topic": "downb", "timeout_ms": 1000})
    kafka.command("down")
    ids = [db.scalar("SELECT pgrelay.notify('downb', %s, key => %s)", ("x", "k%d" % n)) for n in range(12)]
    p = processors("-d", db.dsn, "--workers=1", "--poll-interval=50ms")
    testlib.wait_for(lambda: db.scalar("SELECT count(DISTINCT event_id) FROM pgrelay.log WHERE channel = 'downb'"
                                       " AND outcome = 'retry'") == len(ids), "every event retried")
    first = db.sql("SELECT error, xmin::text FROM pgrelay.log WHERE channel = 'downb' AND attempt = 1")
    assert len(first) == len(ids) and all("timed out" in row[0] for row in first), first
    assert len({row[1] for row in first}) < len(ids)  # in batches
    kafka.command("up")
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.log WHERE channel = 'downb' AND outcome = 'ok'")
                     == len(ids), "every event delivered once the brokers are back")
    assert p.stop() == 0
    assert sorted(int(m["headers"]["event_id"]) for m in kafka.messages("downb")) == sorted(ids)


def test_a_permanent_error_fails_the_event(db, kafka, processors):
    kafka.command("topic big 1")
    kafka.command("produce-errors 10 1")  # MESSAGE_TOO_LARGE
    register(db, "big", {"brokers": kafka.bootstrap, "topic": "big"})
    eid = db.scalar("SELECT pgrelay.notify('big', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    [(_, attempt, outcome, error, _)] = log_rows(db, "big")
    assert (attempt, outcome) == (1, "failed") and "too large" in error.lower(), error
    assert db.scalar("SELECT count(*) FROM pgrelay.failed_events WHERE event_id = %s", (eid,)) == 1


def test_an_unknown_topic_is_the_set_ups_error(db, kafka, processors):
    """A topic the cluster does not have (its metadata says UNKNOWN_TOPIC_OR_PART: the mock
    cluster would create any other on first use) is a configuration error with a hint."""
    kafka.command("topic-error missing 3")
    register(db, "nope", {"brokers": kafka.bootstrap, "topic": "missing", "timeout_ms": 2000}, max_attempts=2)
    db.scalar("SELECT pgrelay.notify('nope', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    line = p.lines("attempt_failed")[0]
    assert " error " in line and "config_error=destination" in line and "topic" in line.lower(), line
    assert "fix the channel's settings" in p.log()
    assert db.scalar("SELECT pgrelay.error_kind(sqlstate) FROM pgrelay.log WHERE channel = 'nope' LIMIT 1") \
        == "configuration"


def test_brokers_that_cannot_be_resolved_are_the_set_ups_error(db, kafka, processors):
    register(db, "nowhere", {"brokers": "kafka.nowhere.invalid:9092", "timeout_ms": 1000}, max_attempts=1)
    db.scalar("SELECT pgrelay.notify('nowhere', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    line = p.lines("attempt_failed")[0]
    assert "config_error=destination" in line and "resolve" in line.lower(), line


def test_changed_settings_rebuild_the_channels_producer(db, kafka, processors):
    """One Processor keeps the channel's producer between events; register() moving the channel to
    another topic sends the next event there."""
    kafka.command("topic first 1")
    kafka.command("topic second 1")
    register(db, "moving", {"brokers": kafka.bootstrap, "topic": "first"})
    db.scalar("SELECT pgrelay.notify('moving', 'a')")
    p = processors("-d", db.dsn, "--poll-interval=50ms")
    testlib.wait_for(lambda: kafka.messages("first"), "the first message")
    register(db, "moving", {"topic": "second"})
    db.scalar("SELECT pgrelay.notify('moving', 'b')")
    testlib.wait_for(lambda: kafka.messages("second"), "the second message, in the new topic")
    assert p.stop() == 0
    assert [m["payload"] for m in kafka.messages("first")] == ["a"]
    assert [m["payload"] for m in kafka.messages("second")] == ["b"]


def test_valgrind_kafka_run_is_clean(db, kafka, processors):
    """The release build under valgrind produces through the shared producer of two workers and
    destroys it at exit, without a memory error or a leak."""
    kafka.command("topic vg 2")
    register(db, "vg", {"brokers": kafka.bootstrap, "topic": "vg"})
    for i in range(4):
        db.sql("SELECT pgrelay.notify('vg', %s, key => %s)", ('{"n": %d}' % i, "k%d" % i))
    out = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite,indirect",
                          "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
                          testlib.PROCESSOR_RELEASE, "-d", db.dsn, "--once", "--workers=2"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-6000:]
    assert "ERROR SUMMARY: 0 errors" in out.stdout
    assert [row[2] for row in log_rows(db, "vg")] == ["ok"] * 4
    assert len(kafka.messages("vg")) == 4


TLS_MISSING = testlib.kafka_tls_missing()
needs_tls = pytest.mark.skipif(TLS_MISSING is not None, reason=TLS_MISSING or "")


@pytest.fixture
def kafka_tls(certs):
    """kafka_tls(cert_name): the mock cluster reached over TLS only, its brokers showing the
    certificate cert_name of test/fixtures/certs.sh (testlib.KafkaMock)."""
    started = []

    def start(cert_name="server"):
        k = testlib.KafkaMock(certs=certs, cert_name=cert_name)
        started.append(k)
        return k

    yield start
    for k in started:
        k.stop()


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory):
    """Another throwaway CA: it signed none of the brokers' certificates."""
    return testlib.make_certs(tmp_path_factory.mktemp("other-ca"))


@needs_tls
def test_events_over_tls_arrive_whole(db, kafka_tls, certs, processors):
    """tls with the channel's ca_file: librdkafka checks the brokers' certificate against that CA
    and its name (127.0.0.1) and produces over TLS, the only way the brokers can be reached; each
    message arrives whole, its log row names its partition and offset."""
    kafka = kafka_tls()
    kafka.command("topic secure 2")
    register(db, "secure", {"brokers": kafka.bootstrap, "topic": "secure", "tls": True,
                            "ca_file": os.path.join(certs, "ca.pem")})
    first = db.scalar("SELECT pgrelay.notify('secure', '{\"id\": 1}', key => 'customer-7')")
    second = db.scalar("SELECT pgrelay.notify('secure', 'plain text')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    msgs = sorted(kafka.messages("secure"), key=lambda m: int(m["headers"]["event_id"]))
    assert [(m["headers"]["event_id"], m["key"], m["payload"]) for m in msgs] == \
        [(str(first), "customer-7", '{"id": 1}'), (str(second), None, "plain text")]
    assert all(m["headers"]["channel"] == "secure" and m["headers"]["attempt"] == "1" for m in msgs)
    rows = sorted(log_rows(db, "secure"))
    assert [(row[0], row[2]) for row in rows] == [(first, "ok"), (second, "ok")]
    assert [(row[4]["partition"], row[4]["offset"]) for row in rows] == [(m["partition"], m["offset"]) for m in msgs]


@needs_tls
@pytest.mark.parametrize("cert_name, ca", [("server", "other"), ("wrong", "ours")],
                         ids=["signed-by-another-ca", "for-another-name"])
def test_a_certificate_that_fails_the_check_is_the_set_ups_error(db, kafka_tls, certs, other_ca, processors,
                                                                 cert_name, ca):
    """The brokers' certificate not signed by ca_file's CA, or signed by it but for another name:
    the handshake fails, the attempt is a retry with config_error=destination and the hint, and
    nothing is delivered."""
    kafka = kafka_tls(cert_name)
    kafka.command("topic refused 1")
    register(db, "refused", {"brokers": kafka.bootstrap, "topic": "refused", "tls": True, "timeout_ms": 1000,
                             "ca_file": os.path.join(other_ca if ca == "other" else certs, "ca.pem")},
             max_attempts=2)
    eid = db.scalar("SELECT pgrelay.notify('refused', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    line = p.lines("attempt_failed")[0]
    assert " error " in line and "config_error=destination" in line, line
    assert "fix the channel's settings" in p.log()
    [(event, attempt, outcome, error, _)] = log_rows(db, "refused")[:1]
    assert (event, attempt, outcome) == (eid, 1, "retry") and "certificate" in error.lower(), error
    assert db.scalar("SELECT pgrelay.error_kind(sqlstate) FROM pgrelay.log WHERE channel = 'refused' LIMIT 1") \
        == "configuration"
    assert kafka.messages("refused") == []


@needs_tls
def test_tls_verify_false_delivers_without_the_check(db, kafka_tls, other_ca, processors):
    """tls_verify false: a certificate of another CA and for another name is taken; still TLS."""
    kafka = kafka_tls("wrong")
    kafka.command("topic unchecked 1")
    register(db, "unchecked", {"brokers": kafka.bootstrap, "topic": "unchecked", "tls": True, "tls_verify": False,
                               "ca_file": os.path.join(other_ca, "ca.pem")})
    eid = db.scalar("SELECT pgrelay.notify('unchecked', 'x')")
    p = processors("-d", db.dsn, "--once")
    assert p.wait_exit() == 0
    assert [(m["headers"]["event_id"], m["payload"]) for m in kafka.messages("unchecked")] == [(str(eid), "x")]
    assert [row[2] for row in log_rows(db, "unchecked")] == ["ok"]


SASL_USER, SASL_PASSWORD = "relay", "kafka-pw-7f3a"


@pytest.fixture
def kafka_sasl(certs):
    """kafka_sasl(mechanism, tls): the mock cluster reached only through test/fixtures/kafkasasl.py,
    which takes the user relay with SASL_PASSWORD by that mechanism alone (over TLS with
    test/fixtures/certs.sh's server certificate when tls) before it passes anything on."""
    started = []

    def start(mechanism, tls):
        k = testlib.KafkaMock(certs=certs if tls else None,
                              sasl={"mechanisms": [mechanism], "user": SASL_USER, "password": SASL_PASSWORD})
        started.append(k)
        return k

    yield start
    for k in started:
        k.stop()


def register_sasl(db, kafka, certs, channel, mechanism, tls, **kw):
    settings = {"brokers": kafka.bootstrap, "topic": channel, "sasl_mechanism": mechanism, "user": SASL_USER,
                "password": "env:KAFKA_PW"}
    if tls:
        settings.update(tls=True, ca_file=os.path.join(certs, "ca.pem"))
    register(db, channel, dict(settings, **kw.pop("settings", {})), **kw)


SASL_CASES = [(m, tls) for m in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") for tls in (False, True)]
SASL_IDS = ["%s%s" % (m.lower(), "-tls" if tls else "") for m, tls in SASL_CASES]


@needs_tls
@pytest.mark.parametrize("mechanism, tls", SASL_CASES, ids=SASL_IDS)
def test_sasl_authenticates_with_the_password_from_the_environment(db, kafka_sasl, certs, processors, mechanism,
                                                                   tls):
    """sasl_mechanism with user and password env:KAFKA_PW (bound to the channel by --secret-env):
    librdkafka authenticates by that mechanism, the only way to the brokers, and each message
    arrives whole."""
    kafka = kafka_sasl(mechanism, tls)
    kafka.command("topic sasl 2")
    register_sasl(db, kafka, certs, "sasl", mechanism, tls)
    ids = [db.scalar("SELECT pgrelay.notify('sasl', %s, key => %s)", ('{"n": %d}' % n, "k%d" % n)) for n in range(3)]
    p = processors("-d", db.dsn, "--once", "--secret-env=KAFKA_PW=channel/sasl", env={"KAFKA_PW": SASL_PASSWORD})
    assert p.wait_exit() == 0
    msgs = sorted(kafka.messages("sasl"), key=lambda m: int(m["headers"]["event_id"]))
    assert [(int(m["headers"]["event_id"]), m["payload"]) for m in msgs] == \
        [(eid, '{"n": %d}' % n) for n, eid in enumerate(ids)]
    assert [row[2] for row in log_rows(db, "sasl")] == ["ok"] * 3
    assert "authenticated %s with %s" % (SASL_USER, mechanism) in kafka.proxy_log()
    assert SASL_PASSWORD not in p.log()
    # neither command line, which any user of the machine can read, carries it
    assert not [a for s in [p.proc] + kafka.proxies for a in s.args if SASL_PASSWORD in a]


@needs_tls
@pytest.mark.parametrize("mechanism, tls", SASL_CASES, ids=SASL_IDS)
def test_a_wrong_sasl_password_is_the_set_ups_error(db, kafka_sasl, certs, processors, mechanism, tls):
    """The brokers refuse the password: the attempt is a retry with config_error=destination and
    the hint, the error names the refused authentication, and nothing is delivered. A refused
    SCRAM login also says, with librdkafka before 2.6.1 (Debian 12's), that Kafka 4 brokers refuse
    that librdkafka's SCRAM whatever the password."""
    kafka = kafka_sasl(mechanism, tls)
    error = refused_attempt(db, kafka, certs, processors, mechanism, tls, "not-it")
    assert "authentication failed" in error.lower(), error
    note = "librdkafka before 2.6.1 cannot log in with SCRAM to Kafka 4 brokers"
    assert (note in error) == (mechanism.startswith("SCRAM") and kafka_version() < (2, 6, 1)), error
    assert "refused: %s: Authentication failed: invalid credentials" % mechanism in kafka.proxy_log()


@needs_tls
def test_a_sasl_mechanism_the_brokers_do_not_enable_is_the_set_ups_error(db, kafka_sasl, certs, processors):
    """The brokers enable SCRAM-SHA-512 only and the channel says PLAIN: the handshake is refused
    with the brokers' mechanisms, a retry with config_error=destination, nothing delivered."""
    kafka = kafka_sasl("SCRAM-SHA-512", False)
    error = refused_attempt(db, kafka, certs, processors, "PLAIN", False, SASL_PASSWORD)
    assert "SCRAM-SHA-512" in error and "PLAIN" in error, error
    assert "refused: mechanism PLAIN is not enabled" in kafka.proxy_log()


def kafka_version():
    """The version of the librdkafka the Processor is linked with (the system's), as a tuple."""
    v = ctypes.CDLL("librdkafka.so.1").rd_kafka_version()
    return (v >> 24 & 0xff, v >> 16 & 0xff, v >> 8 & 0xff)


def refused_attempt(db, kafka, certs, processors, mechanism, tls, password):
    """One event of a channel whose SASL the brokers refuse: its first attempt is a retry with
    config_error=destination, the hint and the configuration kind, and nothing is delivered; the
    log row's error."""
    kafka.command("topic denied 1")
    register_sasl(db, kafka, certs, "denied", mechanism, tls, settings={"timeout_ms": 1000}, max_attempts=2)
    eid = db.scalar("SELECT pgrelay.notify('denied', 'x')")
    p = processors("-d", db.dsn, "--once", "--secret-env=KAFKA_PW=channel/denied", env={"KAFKA_PW": password})
    assert p.wait_exit() == 0
    line = p.lines("attempt_failed")[0]
    assert " error " in line and "config_error=destination" in line, line
    assert "fix the channel's settings" in p.log()
    [(event, attempt, outcome, error, _)] = log_rows(db, "denied")[:1]
    assert (event, attempt, outcome) == (eid, 1, "retry"), error
    assert db.scalar("SELECT pgrelay.error_kind(sqlstate) FROM pgrelay.log WHERE channel = 'denied' LIMIT 1") \
        == "configuration"
    assert kafka.messages("denied") == []
    return error



@needs_tls
def test_a_mock_cluster_whose_servers_fail_to_start_leaves_nothing_running(certs, monkeypatch):
    """A server in front of the brokers that cannot start: KafkaMock raises, and the cluster, the
    servers already started and their directory are gone with it, since no fixture gets the object
    to stop."""
    seen = []

    def fail_after_one(self, certs, cert_name, sasl):
        seen.append(self)
        self.dir = tempfile.mkdtemp(prefix="kafka-proxy-")
        self._start(self.inside + ["socat", "UNIX-LISTEN:%s/b0.sock" % self.dir, "STDOUT"])
        raise RuntimeError("a forwarding server exited")

    monkeypatch.setattr(testlib.KafkaMock, "_serve_outside", fail_after_one)
    with pytest.raises(RuntimeError, match="a forwarding server exited"):
        testlib.KafkaMock(certs=certs)
    [k] = seen
    assert k.proc.poll() is not None
    assert [p.poll() is not None for p in k.proxies] == [True]
    assert not os.path.exists(k.dir)


@needs_tls
@pytest.mark.parametrize("listen", [False, True], ids=["bound", "listening"])
def test_a_broker_port_taken_here_gets_a_new_cluster(certs, monkeypatch, listen):
    """The port a broker took in the cluster's namespace is held here by another socket, bound or
    listening (which would take a connection meant for the server): the TLS server cannot listen on
    it, and KafkaMock starts a cluster again (other ports), the first one gone; the second is
    served."""
    serve, clusters, held = testlib.KafkaMock._serve_outside, [], []

    def hold_the_first_port(self, certs, cert_name, sasl):
        clusters.append((self.proc, self.bootstrap))
        if len(clusters) == 1:
            held.append(socket.socket())
            held[0].bind(("127.0.0.1", int(self.bootstrap.rsplit(":", 1)[1])))
            if listen:
                held[0].listen()
        return serve(self, certs, cert_name, sasl)

    monkeypatch.setattr(testlib.KafkaMock, "_serve_outside", hold_the_first_port)
    try:
        k = testlib.KafkaMock(certs=certs)
        try:
            assert len(clusters) == 2 and clusters[0][0].poll() is not None
            assert k.bootstrap == clusters[1][1] != clusters[0][1]
            with socket.create_connection(("127.0.0.1", int(k.bootstrap.rsplit(":", 1)[1])), timeout=10):
                pass
        finally:
            k.stop()
    finally:
        for s in held:
            s.close()
