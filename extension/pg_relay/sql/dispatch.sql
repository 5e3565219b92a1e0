-- queue_probe(), queue_has_work(), queue_pending_ids() and the dispatch rule
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
CREATE FUNCTION regress_noop(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
DELETE FROM pgrelay.queue;

-- the interface version the Processor checks, and the single-mode gate (a primary here)
SELECT pgrelay.interface_version(), pgrelay.should_dispatch_single();

-- empty queue: no work
SELECT has_work, paused FROM pgrelay.queue_probe();
SELECT pgrelay.queue_has_work();
SELECT count(*) FROM pgrelay.queue_pending_ids();

-- an event that is not yet due is not work and is never offered
SELECT channel FROM pgrelay.register('d_a', 'sql', handler => 'regress_noop(text)');
SELECT pgrelay.notify('d_a', 'future', now() + interval '1 hour') > 0 AS queued;
SELECT has_work FROM pgrelay.queue_probe();
SELECT count(*) FROM pgrelay.queue_pending_ids();

-- a due event is
SELECT pgrelay.notify('d_a', 'due') > 0 AS queued;
SELECT pgrelay.queue_has_work(), (SELECT has_work FROM pgrelay.queue_probe());
SELECT action_type, channel, timeout_ms, attempt FROM pgrelay.queue_pending_ids();
DELETE FROM pgrelay.queue;

-- reload_requested compares the generation with the one the caller has seen
SELECT reload_generation AS gen FROM pgrelay.queue_probe() \gset
SELECT reload_requested FROM pgrelay.queue_probe(:gen);
SELECT pgrelay.request_reload() = :gen + 1 AS bumped;
SELECT reload_requested FROM pgrelay.queue_probe(:gen);
SELECT reload_requested FROM pgrelay.queue_probe(:gen + 1);
SELECT reload_requested FROM pgrelay.queue_probe();

-- ordering: action_types.run_order NULLS LAST, then run_at, then queued_at (then id)
INSERT INTO pgrelay.action_types (action_type, run_order) VALUES ('regress_first', 1), ('regress_last', NULL);
INSERT INTO pgrelay.channels (channel, action_type) VALUES ('d_first', 'regress_first'), ('d_last', 'regress_last');
UPDATE pgrelay.action_types SET run_order = 30 WHERE action_type = 'notify';
SELECT channel FROM pgrelay.register('d_mail', 'notify');
SELECT channel FROM pgrelay.register('d_b', 'sql', handler => 'regress_noop(text)');
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, run_at, queued_at) VALUES
    (0, 'd_last',  'regress_last',  'last, due earliest', now() - interval '9 minutes', now() - interval '9 minutes'),
    (0, 'd_mail',  'notify',        'mail',               now() - interval '8 minutes', now() - interval '8 minutes'),
    (0, 'd_a',     'sql',           'sql, run_at -1m',    now() - interval '1 minute',  now() - interval '5 minutes'),
    (0, 'd_b',     'sql',           'sql, run_at -2m, queued -1m', now() - interval '2 minutes', now() - interval '1 minute'),
    (0, 'd_a',     'sql',           'sql, run_at -2m, queued -3m', now() - interval '2 minutes', now() - interval '3 minutes'),
    (0, 'd_first', 'regress_first', 'first',              now(),                        now()),
    (0, 'd_a',     'sql',           'sql, not due',       now() + interval '1 minute',  now() - interval '9 minutes');
UPDATE pgrelay.queue SET event_id = id;
SELECT q.payload FROM pgrelay.queue_pending_ids() p JOIN pgrelay.queue q USING (id);
-- a limit takes the head of that order
SELECT q.payload FROM pgrelay.queue_pending_ids(2) p JOIN pgrelay.queue q USING (id);
-- a limit must be positive (error)
SELECT * FROM pgrelay.queue_pending_ids(0);

-- an inactive channel's events stay queued but are not offered
SELECT active FROM pgrelay.register('d_a', active => false);
SELECT q.payload FROM pgrelay.queue_pending_ids() p JOIN pgrelay.queue q USING (id);
SELECT active FROM pgrelay.register('d_a', active => true);

-- pause: nothing is offered; the probe says so; resume
SELECT pgrelay.pause();
SELECT has_work, paused FROM pgrelay.queue_probe();
SELECT count(*) FROM pgrelay.queue_pending_ids();
SELECT pgrelay.resume();
SELECT has_work, paused FROM pgrelay.queue_probe();

-- concurrency_mode 'channel' offers only the first due event of the channel
SELECT concurrency_mode FROM pgrelay.register('d_a', concurrency_mode => 'channel');
SELECT q.payload FROM pgrelay.queue_pending_ids() p JOIN pgrelay.queue q USING (id) WHERE p.channel = 'd_a';
SELECT concurrency_mode FROM pgrelay.register('d_a', concurrency_mode => 'parallel');
DELETE FROM pgrelay.queue;
DELETE FROM pgrelay.channels WHERE channel IN ('d_first', 'd_last');
DELETE FROM pgrelay.action_types WHERE action_type LIKE 'regress_%';
UPDATE pgrelay.action_types SET run_order = 20 WHERE action_type = 'notify';

-- the dispatch rule (SPEC section 6), as seen through queue_pending_ids()
SELECT node_restricted FROM pgrelay.register('d_b', node_restricted => true);
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, node_restricted) VALUES
    (0, 'd_a', 'sql', 'node 1, free',       1, false),
    (0, 'd_a', 'sql', 'node 2, free',       2, false),
    (0, 'd_b', 'sql', 'node 1, restricted', 1, true),
    (0, 'd_b', 'sql', 'node 2, restricted', 2, true);
SET pg_relay.node_id = 1;
-- single: everything
SELECT q.payload FROM pgrelay.queue_pending_ids() p JOIN pgrelay.queue q USING (id) ORDER BY 1;
-- multi-node: only this node's rows
SET pg_relay.mode = 'multi-node';
SELECT q.payload FROM pgrelay.queue_pending_ids() p JOIN pgrelay.queue q USING (id) ORDER BY 1;
-- leader: own restricted rows plus every free row
SET pg_relay.mode = 'leader';
SET pg_relay.is_leader = on;
SELECT q.payload FROM pgrelay.queue_pending_ids() p JOIN pgrelay.queue q USING (id) ORDER BY 1;
-- non-leader: own restricted rows only
SET pg_relay.is_leader = off;
SELECT q.payload FROM pgrelay.queue_pending_ids() p JOIN pgrelay.queue q USING (id) ORDER BY 1;
-- the rule itself, row by row: (owner, restricted) under each mode for node 1
SELECT m, l, o, r, pgrelay._dispatch_allowed(o, r, m, 1, l) AS offered
FROM unnest(ARRAY['single', 'multi-node', 'leader']) m, unnest(ARRAY[false, true]) l,
     unnest(ARRAY[1, 2]) o, unnest(ARRAY[false, true]) r
WHERE m = 'leader' OR NOT l
ORDER BY 1, 2, 3, 4;
-- the parts of the queue the probe and the fetch read (_dispatch_scope) are the rule, case by case
SELECT m, l, o, r
FROM unnest(ARRAY['single', 'multi-node', 'leader']) m, unnest(ARRAY[false, true]) l,
     unnest(ARRAY[1, 2]) o, unnest(ARRAY[false, true]) r,
     pgrelay._dispatch_scope(m, l) s
WHERE pgrelay._dispatch_allowed(o, r, m, 1, l)
      IS DISTINCT FROM ((NOT r AND s.free_any) OR (r AND s.restricted_any)
                        OR (o = 1 AND NOT r AND s.own_free) OR (o = 1 AND r AND s.own_restricted));
-- an unknown mode (error)
SET pg_relay.mode = 'everything';
SELECT * FROM pgrelay.queue_pending_ids();
RESET pg_relay.mode;
RESET pg_relay.is_leader;
RESET pg_relay.node_id;
DELETE FROM pgrelay.queue;

-- The floors under finished rows (queue_probe's bound, single mode). A first call notes the time
-- to prove and sets no floor; a bound swept more than a minute ago has its floors dropped and
-- found again (none above the clock); a clock earlier than the bound's times starts it again from
-- none.
SELECT b.next_bound ->> 'at' IS NOT NULL AS noted, b.next_bound -> 'floor' = '{}' AS no_floors
FROM pgrelay.queue_probe(NULL, '{}') b;
SELECT (b.next_bound -> 'floor' ->> 'sql')::timestamptz <= now() AS found_again
FROM pgrelay.queue_probe(NULL, jsonb_build_object('safe', now() - interval '1 s', 'swept', now() - interval '2 min',
                                                  'at', now() - interval '1 s', 'wait', '[]'::jsonb,
                                                  'floor', jsonb_build_object('sql', now() + interval '1 day'))) b;
SELECT b.next_bound -> 'floor' = '{}' AS no_floors, b.next_bound ->> 'safe' IS NULL AS no_safe
FROM pgrelay.queue_probe(NULL, jsonb_build_object('safe', now() + interval '1 h', 'swept', now() + interval '1 h',
                                                  'at', now() + interval '1 h', 'wait', '[]'::jsonb,
                                                  'floor', jsonb_build_object('sql', now() + interval '1 h'))) b;
-- Multi-node and leader mode: the floors are under the rows only this node writes, its own
-- ("own:" and "own restricted:" keys; leader mode: only its restricted ones, since the leader's
-- unrestricted rows are retried by other nodes). With a safe time and an empty queue every floor
-- comes at the safe time; a row of another node, which arrives by replication with its origin's
-- run_at, is no floor's concern; a row of this node below its floor is not looked for.
CREATE TEMP TABLE regress_bound AS
SELECT jsonb_build_object('safe', now() - interval '1 s', 'swept', now(), 'at', now(), 'wait', '[]'::jsonb,
                          'floor', '{}'::jsonb) AS b;
SET pg_relay.node_id = 1;
SET pg_relay.mode = 'multi-node';
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(p.next_bound -> 'floor') k) AS floors
FROM regress_bound r, pgrelay.queue_probe(NULL, r.b) p;
SET pg_relay.mode = 'leader';
SET pg_relay.is_leader = on;
SELECT (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(p.next_bound -> 'floor') k) AS floors
FROM regress_bound r, pgrelay.queue_probe(NULL, r.b) p;
SET pg_relay.mode = 'multi-node';
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, node_restricted, run_at)
VALUES (0, 'd_b', 'sql', 'of 2', 2, false, now() - interval '1 h');
SELECT p.has_work, p.next_bound -> 'floor' ->> 'own:sql' IS NOT NULL AS floored
FROM regress_bound r, pgrelay.queue_probe(NULL, r.b) p;
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, node_restricted, run_at)
VALUES (0, 'd_b', 'sql', 'of 1', 1, false, now() - interval '1 h');
-- from no floor, it is found and holds the floor at its run_at; above it, it is not looked for
SELECT p.has_work, (p.next_bound -> 'floor' ->> 'own:sql')::timestamptz < now() - interval '59 min' AS floor_at_row
FROM regress_bound r, pgrelay.queue_probe(NULL, r.b) p;
SELECT p.has_work FROM regress_bound r,
       pgrelay.queue_probe(NULL, jsonb_set(r.b, '{floor}', jsonb_build_object('own:sql', now()))) p;
SELECT f.channel FROM regress_bound r, pgrelay._queue_fetch(10, r.b) f;
SELECT count(*) AS fetched FROM regress_bound r,
       pgrelay._queue_fetch(10, jsonb_set(r.b, '{floor}', jsonb_build_object('own:sql', now()))) f;
-- leader mode, leading: the unrestricted rows of any owner are read without floors
SET pg_relay.mode = 'leader';
SELECT count(*) AS fetched FROM regress_bound r,
       pgrelay._queue_fetch(10, jsonb_set(r.b, '{floor}', jsonb_build_object('own:sql', now(), 'sql', now()))) f;
DELETE FROM pgrelay.queue;
DROP TABLE regress_bound;
RESET pg_relay.is_leader;
RESET pg_relay.mode;
RESET pg_relay.node_id;
