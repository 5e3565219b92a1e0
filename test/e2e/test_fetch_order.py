"""The Processor's fetch, pgrelay._queue_fetch(), offers exactly what queue_pending_ids() offers, in
its order: the two differ only in taking no row locks (the claim is an event's one lock) and in
the batch column. Pinned here so that neither can drift from the other."""

SETUP = """
CREATE FUNCTION fetch_order_noop(p text) RETURNS void SECURITY DEFINER SET search_path = public
    LANGUAGE plpgsql AS $$ BEGIN END $$;
"""

COLUMNS = "id, action_type, channel, timeout_ms, attempt"


def channels(db):
    db.conn.execute(SETUP)
    db.sql("SELECT pgrelay.register('fo_parallel', 'sql', handler => 'fetch_order_noop(text)')")
    db.sql("SELECT pgrelay.register('fo_short', 'sql', handler => 'fetch_order_noop(text)', "
           "timeout => '5 s', batch => false)")
    db.sql("SELECT pgrelay.register('fo_one', 'sql', handler => 'fetch_order_noop(text)', "
           "concurrency_mode => 'channel')")
    db.sql("SELECT pgrelay.register_webhook('fo_hook', 'http://127.0.0.1:9/', allow_http => true)")


def queue(db):
    """60 events over the four channels and two action types: due at scattered times in the past,
    a few queued for later, several sharing a run_at."""
    names = ["fo_parallel", "fo_short", "fo_one", "fo_hook"]
    for i in range(60):
        when = "now() + interval '1 hour'" if i % 13 == 5 else \
            "now() - interval '%d minutes'" % ((i * 37) % 11)
        db.sql("SELECT pgrelay.notify(%%s, %%s, %s)" % when, (names[i % 4], "e%d" % i))


def offered(db, function, max_rows):
    arg = "" if max_rows is None else "%d" % max_rows
    return db.sql("SELECT %s FROM pgrelay.%s(%s)" % (COLUMNS, function, arg))


def test_the_fetch_offers_what_queue_pending_ids_offers_in_its_order(db):
    channels(db)
    queue(db)
    everything = offered(db, "queue_pending_ids", None)
    assert len(everything) > 10
    assert offered(db, "_queue_fetch", 1000) == everything
    for n in (1, 2, 7, 25):
        assert offered(db, "_queue_fetch", n) == offered(db, "queue_pending_ids", n)


def test_the_batch_column_says_which_events_may_batch(db):
    channels(db)
    queue(db)
    rows = db.sql("SELECT channel, batch FROM pgrelay._queue_fetch(1000)")
    assert {c for c, b in rows if b} == {"fo_parallel", "fo_one"}
    assert {c for c, b in rows if not b} == {"fo_short", "fo_hook"}


def test_paused_both_offer_nothing(db):
    channels(db)
    queue(db)
    db.sql("SELECT pgrelay.pause()")
    assert offered(db, "queue_pending_ids", None) == offered(db, "_queue_fetch", 1000) == []
    db.sql("SELECT pgrelay.resume()")
    assert offered(db, "_queue_fetch", 1000) == offered(db, "queue_pending_ids", None) != []
