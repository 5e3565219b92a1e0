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
ANALYZE pgrelay.log, pgrelay.queue, pgrelay.action_types;
-- The probe reads queue_dispatch_idx once per action type and never touches pgrelay.log.
EXPLAIN (COSTS OFF) SELECT * FROM pgrelay._has_due_work();
SELECT pgrelay.queue_has_work();
-- The log row of an attempt is found through the unique index log_event_idx, also in the generic
-- plan a session keeps (an ANALYZE of the log replaces plans made while it was small).
SET plan_cache_mode = force_generic_plan;
PREPARE regress_log_row(bigint, bigint) AS
    SELECT 1 FROM pgrelay.log x WHERE x.event_id = $1 AND x.queue_id = $2;
EXPLAIN (COSTS OFF) EXECUTE regress_log_row(1, 1);
DEALLOCATE regress_log_row;
RESET plan_cache_mode;
DELETE FROM pgrelay.log WHERE channel = 'plan';
DELETE FROM pgrelay.queue WHERE channel = 'plan';
SELECT pgrelay.unregister('plan');
DROP FUNCTION regress_plan_noop(text);
