"""Topics end to end: one publish() in the database, and a running Processor delivers it to each
subscribed channel as an event of its own: to a SQL handler and, over HTTPS, to a real webhook
receiver (test/fixtures/hookd.py), each attempt logged with the publication's id."""
import json
import shutil

import pytest

import testlib
from testlib import HookServer as H

ENV = {"HOOK_SECRET": H.SECRET}
BIND = "--secret-env=HOOK_SECRET=webhook/hook"

SETUP = """
CREATE TABLE public.topic_calls (payload text);
CREATE FUNCTION public.topic_record(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$
BEGIN
    IF payload LIKE '%%fail%%' THEN
        RAISE EXCEPTION 'this subscriber fails';
    END IF;
    INSERT INTO public.topic_calls VALUES (payload);
END
$$;
GRANT EXECUTE ON FUNCTION public.topic_record(text) TO pgrelay_processor;
"""


def subscribers(db, h, **sql_channel):
    """Topic "orders": the sql channel "ledger" (handler topic_record) and the webhook channel
    "hook" (receiver h), both subscribed to every publication."""
    db.sql(SETUP)
    db.sql("SELECT pgrelay.register('ledger', 'sql', handler => 'public.topic_record(text)'%s)"
           % "".join(", %s => %%(%s)s" % (k, k) for k in sql_channel), sql_channel)
    db.sql("SELECT pgrelay.register_webhook('hook', %s, ca_file => %s, signing_secret => 'env:HOOK_SECRET',"
           " backoff_base => '10 milliseconds', backoff_max => '50 milliseconds')", (h.url(), h.ca))
    db.sql("SELECT pgrelay.create_topic('orders', 'order events')")
    db.sql("SELECT pgrelay.subscribe('orders', 'ledger')")
    db.sql("SELECT pgrelay.subscribe('orders', 'hook', '{order.*}')")


def log_rows(db):
    return db.sql("SELECT channel, outcome, publication_id, event_id, payload FROM pgrelay.log ORDER BY channel, id")


def test_a_publication_reaches_a_sql_and_a_webhook_subscriber(db, hookd, processors):
    """publish() queues one event per subscriber; the Processor runs the SQL handler with the
    payload and POSTs it, signed, to the webhook receiver; both log rows carry the publication id
    publish() returned, each under its own event id (the webhook-id the receiver saw)."""
    h = hookd()
    subscribers(db, h)
    payload = '{"order": 7}'
    pub = db.scalar("SELECT pgrelay.publish('orders', %s, 'order.created')", (payload,))
    events = dict(db.sql("SELECT channel, event_id FROM pgrelay.queue WHERE publication_id = %s", (pub,)))
    assert set(events) == {"ledger", "hook"} and events["ledger"] != events["hook"]
    p = processors("-d", db.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    assert log_rows(db) == [("hook", "ok", pub, events["hook"], payload),
                            ("ledger", "ok", pub, events["ledger"], payload)]
    assert db.sql("SELECT payload FROM public.topic_calls") == [(payload,)]
    [r] = h.requests()
    assert r["signature"] == "valid" and r["webhook_id"] == str(events["hook"]) and h.body(r) == payload.encode()
    assert db.scalar("SELECT count(*) FROM pgrelay.queue") == 0


def test_a_failing_subscriber_does_not_hold_back_the_other(db, hookd, processors):
    """The SQL subscriber's handler raises: its event waits for a retry an hour later, while the
    webhook subscriber's event of the same publication is delivered and done; the view shows the
    one delivery still waiting."""
    h = hookd()
    subscribers(db, h, backoff_base="1 hour", backoff_max="2 hours")
    pub = db.scalar("SELECT pgrelay.publish('orders', '{\"fail\": true}', 'order.created')")
    p = processors("-d", db.dsn, "--poll-interval=50ms", BIND, env=ENV)
    testlib.wait_for(lambda: len(log_rows(db)) == 2, "an attempt of each subscriber", 60)
    p.stop()
    rows = log_rows(db)
    assert [(c, o, pb) for c, o, pb, _, _ in rows] == [("hook", "ok", pub), ("ledger", "retry", pub)]
    assert len(h.requests()) == 1
    assert db.sql("SELECT channel, attempt, publication_id FROM pgrelay.queue") == [("ledger", 2, pub)]
    assert db.sql("SELECT topic, channel, queued FROM pgrelay.topic_subscribers ORDER BY channel") == \
        [("orders", "hook", 0), ("orders", "ledger", 1)]


@pytest.fixture
def redis(tmp_path):
    started = []

    def start():
        d = tmp_path / ("redis-%d" % len(started))
        d.mkdir()
        started.append(testlib.RedisServer(str(d)))
        return started[-1]
    yield start
    for r in started:
        r.stop()


def pg_relay_headers(request):
    """The pg-relay-* headers of a request the receiver recorded, by lower-case name."""
    return {k.lower(): v for k, v in request["headers"] if k.lower().startswith("pg-relay-")}


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_every_receiver_sees_the_publication_id_and_event_type(db, hookd, redis, processors):
    """A publication with an event type and a key reaches a webhook subscriber and a Redis Streams
    subscriber: the request carries pg-relay-publication-id and pg-relay-event-type, the stream
    entry the fields publication_id and event_type, both the id publish() returned, and each its
    own event id. A notify() on the same two channels carries neither."""
    h = hookd()
    r = redis()
    db.sql("SELECT pgrelay.register_webhook('hook', %s, ca_file => %s, signing_secret => 'env:HOOK_SECRET')",
           (h.url(), h.ca))
    db.sql("SELECT pgrelay.register('stream', 'redis', settings => %s)",
           (json.dumps({"host": "127.0.0.1", "port": r.port, "stream": "orders:events"}),))
    db.sql("SELECT pgrelay.create_topic('orders')")
    db.sql("SELECT pgrelay.subscribe('orders', 'hook', '{order.*}')")
    db.sql("SELECT pgrelay.subscribe('orders', 'stream')")
    pub = db.scalar("SELECT pgrelay.publish('orders', '{\"order\": 9}', 'order.paid', key => 'order-9')")
    events = dict(db.sql("SELECT channel, event_id FROM pgrelay.queue WHERE publication_id = %s", (pub,)))
    plain_hook = db.scalar("SELECT pgrelay.notify('hook', 'plain')")
    plain_stream = db.scalar("SELECT pgrelay.notify('stream', 'plain')")
    p = processors("-d", db.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    hooks = {r_["webhook_id"]: r_ for r_ in h.requests()}
    assert set(hooks) == {str(events["hook"]), str(plain_hook)}
    assert pg_relay_headers(hooks[str(events["hook"])]) == \
        {"pg-relay-publication-id": str(pub), "pg-relay-event-type": "order.paid"}
    assert hooks[str(events["hook"])]["signature"] == "valid"
    assert pg_relay_headers(hooks[str(plain_hook)]) == {}
    entries = {e["event_id"]: e for e in r.entries("orders:events")}
    assert set(entries) == {str(events["stream"]), str(plain_stream)}
    published = entries[str(events["stream"])]
    assert (published["publication_id"], published["event_type"], published["key"], published["payload"]) == \
        (str(pub), "order.paid", "order-9", '{"order": 9}')
    assert "publication_id" not in entries[str(plain_stream)] and "event_type" not in entries[str(plain_stream)]
    assert db.sql("SELECT channel, outcome, publication_id, event_type FROM pgrelay.log WHERE publication_id = %s"
                  " ORDER BY channel", (pub,)) == [("hook", "ok", pub, "order.paid"), ("stream", "ok", pub, "order.paid")]
