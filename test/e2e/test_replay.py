"""Replayed queue rows on a single node: an event finished, then its queue row inserted again with
its original id (what a replication engine does when it applies an INSERT a second time after a
crash, or a restore brings back), is recognised at its claim by its row in pgrelay.log and
finished without running again: per event (process_one), in a batch (process_batch) and in a
webhook's held transaction. The Processor says so (event_replayed) and counts it
(pgrelay_events_total{outcome="replayed"}). Also: the documented way to set pg_relay.dead_after,
and a node in leader mode with no peer leads at once."""
import re
import urllib.request

import psycopg

import promtext
import testlib
from testlib import HookServer as H

HANDLER = """
CREATE TABLE IF NOT EXISTS public.replay_runs (n bigint GENERATED ALWAYS AS IDENTITY, payload text NOT NULL);
CREATE OR REPLACE FUNCTION public.replay_record(p text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE sql AS $$ INSERT INTO replay_runs (payload) VALUES (p) $$;
"""


def replay(db, channel):
    """Insert every finished row of the channel again, with its id, as it was queued."""
    return db.scalar("WITH r AS (INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload,"
                     " owner_node, node_restricted, attempt, run_at, queued_at)"
                     " SELECT l.queue_id, l.event_id, l.channel, l.action_type, l.payload, 0, false, l.attempt,"
                     " now(), l.queued_at FROM pgrelay.log l WHERE l.channel = %s RETURNING 1)"
                     " SELECT count(*) FROM r", (channel,))


def scrape(p):
    addr = p.wait_log(r" metrics_listening address=(\S+)").group(1)
    with urllib.request.urlopen("http://%s/metrics" % addr, timeout=10) as r:
        return promtext.parse(r.read().decode())


def test_replayed_rows_are_finished_without_running_again(db, processors, hookd):
    db.sql(HANDLER)
    db.sql("SELECT pgrelay.register('rp_batch', 'sql', handler => 'public.replay_record(text)')")
    db.sql("SELECT pgrelay.register('rp_one', 'sql', handler => 'public.replay_record(text)', batch => false)")
    h = hookd()
    db.sql("SELECT pgrelay.register_webhook('rp_hook', %s, ca_file => %s, signing_secret => 'env:HOOK_SECRET')",
           (h.url(), h.ca))
    payloads = {c: ["%s-%d" % (c, i) for i in range(5)] for c in ("rp_batch", "rp_one")}
    for c, ps in payloads.items():
        db.sql("SELECT pgrelay.notify(%s, p) FROM unnest(%s::text[]) p", (c, ps))
    db.sql("SELECT pgrelay.notify('rp_hook', '{\"n\": ' || i || '}') FROM generate_series(1, 3) i")
    p = processors("-d", db.dsn, "--poll-interval=50ms", "--metrics=127.0.0.1:0",
                   "--secret-env=HOOK_SECRET=webhook/rp_hook", env={"HOOK_SECRET": H.SECRET})
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.queue") == 0
                     and db.scalar("SELECT count(*) FROM pgrelay.log WHERE outcome = 'ok'") == 13, "13 events done")
    assert len(h.requests()) == 3
    # the engine applies the INSERTs again: the rows are back with their ids
    assert [replay(db, c) for c in ("rp_batch", "rp_one", "rp_hook")] == [5, 5, 3]
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "the replayed rows finished")
    # nothing ran twice: each handler once, each webhook once, one log row per attempt
    assert db.sql("SELECT payload, count(*) FROM replay_runs GROUP BY payload ORDER BY payload") == \
        sorted((x, 1) for ps in payloads.values() for x in ps)
    assert len(h.requests()) == 3
    assert db.scalar("SELECT count(*) FROM pgrelay.log WHERE channel LIKE 'rp_%'") == 13
    lines = p.wait_log(r" event_replayed ", count=13) and p.lines("event_replayed")
    assert len(lines) == 13, lines
    assert all("reason=attempt_recorded_already" in l for l in lines), lines
    assert sorted(re.search(r"channel=(\S+)", l).group(1) for l in lines) == \
        ["rp_batch"] * 5 + ["rp_hook"] * 3 + ["rp_one"] * 5
    # process_one and process_batch name the log row that recorded the attempt
    assert all(re.search(r"log_id=\d+", l) for l in lines if "rp_hook" not in l), lines
    assert not p.lines("attempt_failed"), p.log()
    ev = scrape(p)["pgrelay_events_total"]
    assert [ev.value(channel=c, outcome="replayed") for c in ("rp_batch", "rp_one", "rp_hook")] == [5, 5, 3]
    assert [ev.value(channel=c, outcome="ok") for c in ("rp_batch", "rp_one", "rp_hook")] == [5, 5, 3]
    assert p.stop() == 0


def test_dead_after_is_set_as_documented(cluster, db):
    """docs/ha.md: SET, then ALTER SYSTEM SET, then pg_reload_conf(); ALTER SYSTEM alone does not
    know a pg_relay.* name before PostgreSQL 17. Run verbatim, each statement on its own (ALTER
    SYSTEM cannot run in a transaction block)."""
    doc = open(testlib.ROOT + "/docs/ha.md").read()
    block = doc.split("<!-- dead_after: -->\n```sql\n", 1)[1].split("```", 1)[0]
    code = "\n".join(l.split("--", 1)[0] for l in block.splitlines())
    statements = [s.strip() for s in code.split(";") if s.strip()]
    assert [s.split()[0] for s in statements] == ["SET", "ALTER", "SELECT"], statements
    with psycopg.connect(db.dsn, autocommit=True) as c:
        try:
            for s in statements:
                c.execute(s)
            with psycopg.connect(db.dsn, autocommit=True) as fresh:
                testlib.wait_for(lambda: fresh.execute("SELECT pgrelay._dead_after()").fetchone()[0].total_seconds()
                                 == 30, "the new dead_after to take effect")
        finally:
            c.execute("ALTER SYSTEM RESET pg_relay.dead_after")
            c.execute("SELECT pg_reload_conf()")


def test_a_node_alone_in_leader_mode_leads_at_once(db, processors):
    """No peer configured (pgrelay.nodes is empty, no engine): nobody to wait for."""
    assert db.scalar("SELECT count(*) FROM pgrelay.nodes") == 0
    p = processors("-d", db.dsn, "--mode=leader", "--poll-interval=50ms")
    p.wait_log(r" leader_acquired mode=leader node=0")
    assert not p.lines("leader_waiting") and not p.lines("peers_waiting"), p.log()
    assert p.stop() == 0
