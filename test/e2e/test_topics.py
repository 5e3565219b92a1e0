"""Topics end to end: one publish() in the database, and a running Processor delivers it to each
subscribed channel as an event of its own: to a SQL handler and, over HTTPS, to a real webhook
receiver (test/fixtures/hookd.py), each attempt logged with the publication's id."""
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
