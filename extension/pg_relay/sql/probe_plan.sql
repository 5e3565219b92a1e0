-- The probe is an index lookup on the queue, whatever the size of pgrelay.log.
\set SHOW_CONTEXT never
DELETE FROM pgrelay.queue;
CREATE FUNCTION regress_plan_noop(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
SELECT channel FROM pgrelay.register('plan', 'sql', handler => 'regress_plan_noop(text)');
-- a big history and a queue of events scheduled for later, none due
INSERT INTO pgrelay.log (id, queue_id, event_id, channel, action_type, attempt, outcome, node_id,
                         started_at, finished_at)
SELECT n, n, n, 'plan', 'sql', 1, 'ok', 0, now(), now()
FROM generate_series(1, 200000) n;
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, run_at)
SELECT n, 'plan', 'sql', '', now() + interval '1 day' + n * interval '1 second'
FROM generate_series(1, 10000) n;
ANALYZE pgrelay.log, pgrelay.queue, pgrelay.action_types, pgrelay.channels;
-- The probe reads unrestricted rows from queue_free_idx once per action type and restricted ones
-- from queue_node_idx once, and never touches pgrelay.log.
EXPLAIN (COSTS OFF) SELECT * FROM pgrelay._has_due_work();
SELECT pgrelay.queue_has_work();
-- channel_stats reads only the log rows of the last hour, through the primary key (log ids start
-- with their creation time): this history of 200,000 older rows costs it nothing.
EXPLAIN (COSTS OFF) SELECT * FROM pgrelay.channel_stats;
SELECT channel, done_1h FROM pgrelay.channel_stats WHERE channel = 'plan';
-- The log row of an attempt is found through the unique index log_event_idx, also in the generic
-- plan a session keeps (an ANALYZE of the log replaces plans made while it was small).
SET plan_cache_mode = force_generic_plan;
PREPARE regress_log_row(bigint, bigint) AS
    SELECT 1 FROM pgrelay.log x WHERE x.event_id = $1 AND x.queue_id = $2;
EXPLAIN (COSTS OFF) EXECUTE regress_log_row(1, 1);
DEALLOCATE regress_log_row;
RESET plan_cache_mode;
-- The probe and the fetch, which take the Processor's bound, keep one plan for any bound: planned
-- again for the given floors whenever the estimates favoured it, a long-lived session's probe cost
-- 75-125 us instead of 46, its fetch 640 instead of 144.
SELECT p.proname, c.setting FROM pg_proc p CROSS JOIN unnest(p.proconfig) c(setting)
WHERE p.oid IN ('pgrelay.queue_probe(bigint,jsonb)'::regprocedure, 'pgrelay._queue_fetch(integer,jsonb)'::regprocedure)
  AND c.setting LIKE 'plan_cache_mode=%'
ORDER BY 1;
DELETE FROM pgrelay.log WHERE channel = 'plan';
DELETE FROM pgrelay.queue WHERE channel = 'plan';

-- Multi-node and leader mode: the probe reads only the part of the queue the dispatch rule offers
-- this node, each from its index, so 100,000 due rows of node 2 (a tenth of them restricted to
-- it) cost node 1 one empty index probe per action type.
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, node_restricted, run_at)
SELECT n, 'plan', 'sql', '', 2, n % 10 = 0, now() - interval '1 minute'
FROM generate_series(1, 100000) n;
ANALYZE pgrelay.queue;
-- multi-node, node 1: its own rows, restricted or not
EXPLAIN (COSTS OFF) SELECT * FROM pgrelay._has_due_work(false, false, true, true, 1);
-- the plan PL/pgSQL keeps is a generic one, which cannot know that node 1 owns none of these
-- rows (it guesses from the average owner): it reads its part of queue_node_idx all the same
SET plan_cache_mode = force_generic_plan;
PREPARE regress_scope(boolean, boolean, boolean, boolean, integer) AS
    SELECT * FROM pgrelay._has_due_work($1, $2, $3, $4, $5);
EXPLAIN (COSTS OFF) EXECUTE regress_scope(false, false, true, true, 1);
DEALLOCATE regress_scope;
RESET plan_cache_mode;
SET pg_relay.node_id = 1;
SET pg_relay.mode = 'multi-node';
SELECT has_work FROM pgrelay.queue_probe();
SELECT count(*) FROM pgrelay.queue_pending_ids();
-- leader mode, node 1 not leading: its own restricted rows only
EXPLAIN (COSTS OFF) SELECT * FROM pgrelay._has_due_work(false, false, false, true, 1);
SET pg_relay.mode = 'leader';
SET pg_relay.is_leader = off;
SELECT has_work FROM pgrelay.queue_probe();
SELECT count(*) FROM pgrelay.queue_pending_ids();
-- node 1 leading: every unrestricted row is its work, whoever queued it
SET pg_relay.is_leader = on;
SELECT has_work FROM pgrelay.queue_probe();
SELECT count(*) FROM pgrelay.queue_pending_ids(10);
-- node 2 under multi-node: its own rows
SET pg_relay.node_id = 2;
SET pg_relay.mode = 'multi-node';
SELECT has_work FROM pgrelay.queue_probe();
SELECT count(*) FROM pgrelay.queue_pending_ids(10);
RESET pg_relay.mode;
RESET pg_relay.is_leader;
RESET pg_relay.node_id;
DELETE FROM pgrelay.queue WHERE channel = 'plan';
SELECT pgrelay.unregister('plan');
DROP FUNCTION regress_plan_noop(text);
