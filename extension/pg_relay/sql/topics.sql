-- topics: create_topic, subscribe, publish (one event per subscribed channel), unsubscribe, drop_topic
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
DELETE FROM pgrelay.queue;
CREATE TABLE regress_t_calls (channel text, payload text);
CREATE FUNCTION regress_t_a(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$
    INSERT INTO regress_t_calls VALUES ('t_a', payload) $$;
CREATE FUNCTION regress_t_b(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$
    INSERT INTO regress_t_calls VALUES ('t_b', payload) $$;
SELECT channel FROM pgrelay.register('t_a', 'sql', handler => 'regress_t_a(text)');
SELECT channel FROM pgrelay.register('t_b', 'sql', handler => 'regress_t_b(text)');
SELECT channel FROM pgrelay.register('t_c', 'sql', handler => 'regress_t_b(text)', max_payload_bytes => 10);
SELECT channel FROM pgrelay.register('t_late', 'sql', handler => 'regress_t_b(text)');
SELECT channel FROM pgrelay.register('t_mail', 'notify');

-- create_topic: a name as a channel's; again: changes the description, NULL keeps it
SELECT topic, description, created_by = session_user AS by_me FROM pgrelay.create_topic('orders', 'order events');
SELECT topic, description FROM pgrelay.create_topic('orders');
SELECT topic, description FROM pgrelay.create_topic('orders', 'all order events');
SELECT pgrelay.create_topic('bad name');
SELECT pgrelay.create_topic(NULL);

-- publish to a topic without a subscriber: refused (nothing queued), as to a topic that does not exist
SELECT pgrelay.publish('orders', 'p0');
SELECT pgrelay.publish('orders', 'p0', 'order.created');
SELECT pgrelay.publish('nope', 'p0');
SELECT count(*) FROM pgrelay.queue;

-- subscribe: the topic and the channel must exist; email channels cannot subscribe
SELECT topic, channel, event_types FROM pgrelay.subscribe('orders', 't_a');
SELECT pgrelay.subscribe('nope', 't_a');
SELECT pgrelay.subscribe('orders', 'nope');
SELECT pgrelay.subscribe('orders', 't_mail');
SELECT pgrelay.subscribe('orders', 't_b', '{}');
SELECT pgrelay.subscribe('orders', 't_b', '{"order.*",NULL}');
SELECT pgrelay.subscribe('orders', 't_b', '{"order created"}');
SELECT pgrelay.subscribe('orders', 't_b', '{"order.*.x"}');

-- one subscriber: one event, exactly as notify() queues it, carrying the publication id
BEGIN;
SELECT pgrelay.publish('orders', 'p1') AS pub \gset
SELECT id = event_id AS own_event_id, id <> :pub AS not_the_publication, publication_id = :pub AS same_pub, channel,
       action_type, payload, attempt, owner_node, node_restricted, run_at BETWEEN now() AND clock_timestamp() AS due_now,
       queued_at = now() AS queued_now
FROM pgrelay.queue;
ROLLBACK;
SELECT count(*) AS rolled_back FROM pgrelay.queue;

-- three subscribers; event_types: exact and prefix; a publication without a type reaches only
-- the subscriptions without a filter
SELECT topic, channel, event_types FROM pgrelay.subscribe('orders', 't_b', '{order.created,order.created,"order.*"}');
SELECT topic, channel, event_types FROM pgrelay.subscribe('orders', 't_c', '{order.created}');
SELECT pgrelay.publish('orders', 'created', 'order.created') AS p_created \gset
SELECT pgrelay.publish('orders', 'paid', 'order.paid') AS p_paid \gset
SELECT pgrelay.publish('orders', 'untyped') AS p_untyped \gset
SELECT pgrelay.publish('orders', 'refund', 'refund.done') AS p_refund \gset
SELECT payload, array_agg(channel ORDER BY channel) AS channels, count(DISTINCT id) AS ids,
       count(DISTINCT event_id) AS event_ids, count(DISTINCT publication_id) AS publications
FROM pgrelay.queue GROUP BY payload ORDER BY payload;
SELECT (SELECT array_agg(DISTINCT publication_id) FROM pgrelay.queue WHERE payload = 'created') = ARRAY[:p_created]::bigint[]
       AS created_pub;

-- all or nothing: a subscriber that does not take the event refuses the whole publication
SELECT pgrelay.publish('orders', 'a payload too large for t_c', 'order.created');
SELECT active FROM pgrelay.register('t_b', active => false);
SELECT pgrelay.publish('orders', 'p2', 'order.paid');
SELECT active FROM pgrelay.register('t_b', active => true);
SELECT count(*) FROM pgrelay.queue WHERE payload IN ('a payload too large for t_c', 'p2');
-- a paused subscriber still receives (pause holds the events, as with notify)
SELECT pgrelay.pause('t_b');
SELECT pgrelay.publish('orders', 'while paused', 'order.paid') > 0 AS published;
SELECT pgrelay.resume('t_b');
SELECT channel FROM pgrelay.queue WHERE payload = 'while paused';

-- bad arguments
SELECT pgrelay.publish(NULL, 'x');
SELECT pgrelay.publish('orders', NULL);
SELECT pgrelay.publish('orders', 'x', 'order*');
SELECT pgrelay.publish('orders', 'x', NULL, 'infinity');

-- run_at: each event of the publication waits until then
SELECT pgrelay.publish('orders', 'later', NULL, now() + interval '1 hour') AS p_later \gset
SELECT channel, run_at > now() + interval '59 minutes' AS waits FROM pgrelay.queue WHERE publication_id = :p_later;

-- a channel subscribed later receives only the later publications
SELECT topic, channel FROM pgrelay.subscribe('orders', 't_late');
SELECT pgrelay.publish('orders', 'after t_late') AS p_after \gset
SELECT channel, payload FROM pgrelay.queue WHERE channel = 't_late' ORDER BY id;

-- the view: subscribers, the event types they take, their waiting deliveries
SELECT topic, channel, action_type, event_types, queued, due, retrying, oldest_due_age IS NOT NULL AS has_due,
       failed, failed_1h, active, paused
FROM pgrelay.topic_subscribers ORDER BY topic, channel;

-- processing: the log row carries the publication id, and so does a retry row
SELECT id AS a_id FROM pgrelay.queue WHERE channel = 't_a' AND payload = 'created' \gset
SELECT outcome FROM pgrelay.process_one(:a_id);
SELECT channel, payload, outcome, publication_id = :p_created AS same_pub FROM pgrelay.log WHERE queue_id = :a_id;
SELECT * FROM regress_t_calls;
SELECT id AS b_id FROM pgrelay.queue WHERE channel = 't_b' AND payload = 'created' \gset
CREATE OR REPLACE FUNCTION regress_t_b(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'not now'; END $$;
SELECT outcome FROM pgrelay.process_one(:b_id);
SELECT outcome, publication_id = :p_created AS same_pub FROM pgrelay.log WHERE queue_id = :b_id;
SELECT attempt, publication_id = :p_created AS retry_keeps_pub FROM pgrelay.queue
WHERE channel = 't_b' AND payload = 'created';
CREATE OR REPLACE FUNCTION regress_t_b(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE sql AS $$ INSERT INTO regress_t_calls VALUES ('t_b', payload) $$;
-- a plain notify has no publication
SELECT pgrelay.notify('t_a', 'plain') AS plain \gset
SELECT publication_id IS NULL AS queue_row_no_pub FROM pgrelay.queue WHERE id = :plain;
SELECT outcome FROM pgrelay.process_one(:plain);
SELECT publication_id IS NULL AS log_row_no_pub FROM pgrelay.log WHERE queue_id = :plain;

-- unsubscribe: later publications skip the channel, its queued deliveries stay and run
SELECT count(*) AS t_c_waiting FROM pgrelay.queue WHERE channel = 't_c';
SELECT pgrelay.unsubscribe('orders', 't_c');
SELECT pgrelay.unsubscribe('orders', 't_c');
SELECT pgrelay.publish('orders', 'after unsubscribe', 'order.created') AS p_unsub \gset
SELECT channel FROM pgrelay.queue WHERE publication_id = :p_unsub ORDER BY channel;
SELECT count(*) AS t_c_still_waiting FROM pgrelay.queue WHERE channel = 't_c';
SELECT id AS c_id FROM pgrelay.queue WHERE channel = 't_c' \gset
SELECT outcome FROM pgrelay.process_one(:c_id);
SELECT channel, payload FROM regress_t_calls WHERE channel = 't_b';

-- rights: a producer may publish, not subscribe nor read; the monitor sees the view; an admin
-- manages topics but does not publish
CREATE ROLE regress_t_producer IN ROLE pgrelay_producer;
CREATE ROLE regress_t_monitor IN ROLE pgrelay_monitor;
CREATE ROLE regress_t_admin IN ROLE pgrelay_admin;
SET ROLE regress_t_producer;
SELECT pgrelay.publish('orders', 'from producer') > 0 AS published;
SELECT pgrelay.subscribe('orders', 't_c');
SELECT pgrelay.create_topic('mine');
SELECT count(*) FROM pgrelay.subscriptions;
SELECT count(*) FROM pgrelay.topic_subscribers;
RESET ROLE;
SET ROLE regress_t_monitor;
SELECT topic, channel, event_types FROM pgrelay.topic_subscribers ORDER BY channel;
SELECT count(*) FROM pgrelay.topics;
SELECT pgrelay.publish('orders', 'x');
RESET ROLE;
SET ROLE regress_t_admin;
SELECT topic FROM pgrelay.create_topic('admins');
SELECT channel FROM pgrelay.subscribe('admins', 't_a');
SELECT count(*) FROM pgrelay.subscriptions WHERE topic = 'admins';
SELECT pgrelay.publish('admins', 'x');
SELECT pgrelay.drop_topic('admins');
RESET ROLE;

-- drop_topic: its subscriptions go, its queued deliveries stay; unknown topics are refused
SELECT count(*) AS waiting_before FROM pgrelay.queue WHERE publication_id IS NOT NULL;
SELECT pgrelay.drop_topic('orders');
SELECT count(*) AS subscriptions FROM pgrelay.subscriptions;
SELECT count(*) AS waiting_after FROM pgrelay.queue WHERE publication_id IS NOT NULL;
SELECT pgrelay.drop_topic('orders');
SELECT pgrelay.drop_topic(NULL);
SELECT pgrelay.publish('orders', 'x');

-- unregistering a channel ends its subscriptions
SELECT topic FROM pgrelay.create_topic('gone');
SELECT channel FROM pgrelay.subscribe('gone', 't_late');
DELETE FROM pgrelay.queue WHERE channel = 't_late';
SELECT pgrelay.unregister('t_late');
SELECT count(*) FROM pgrelay.subscriptions WHERE topic = 'gone';

-- retry_failed() puts a failed delivery back with its publication id
SELECT channel FROM pgrelay.subscribe('gone', 't_a');
SELECT pgrelay.publish('gone', 'fail me') AS p_fail \gset
CREATE OR REPLACE FUNCTION regress_t_a(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'never' USING ERRCODE = 'PGSTP'; END $$;
SELECT id AS f_id, event_id AS f_event FROM pgrelay.queue WHERE publication_id = :p_fail \gset
SELECT outcome FROM pgrelay.process_one(:f_id);
SELECT pgrelay.retry_failed(:f_event) AS again \gset
SELECT attempt, event_id = :f_event AS same_event, publication_id = :p_fail AS keeps_pub FROM pgrelay.queue
WHERE id = :again;

-- publication_status(): every delivery of one publication, where it stands, from the queue and
-- the log; the retried failure above waits again
SELECT channel, event_id = :f_event AS the_event, state, attempts, last_error, last_attempt_at IS NOT NULL AS ran,
       run_at IS NOT NULL AS waits
FROM pgrelay.publication_status(:p_fail);
SELECT channel FROM pgrelay.subscribe('gone', 't_b');
SELECT channel FROM pgrelay.subscribe('gone', 't_c');
SELECT pgrelay.publish('gone', 'fan') AS p_fan \gset
SELECT channel, state, attempts, last_error, last_attempt_at IS NOT NULL AS ran, run_at IS NOT NULL AS waits
FROM pgrelay.publication_status(:p_fan);
-- t_a retries (a transient error), t_b is done, t_c is cancelled
CREATE OR REPLACE FUNCTION regress_t_a(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'later'; END $$;
SELECT outcome FROM pgrelay.process_one((SELECT id FROM pgrelay.queue WHERE publication_id = :p_fan AND channel = 't_a'));
SELECT outcome FROM pgrelay.process_one((SELECT id FROM pgrelay.queue WHERE publication_id = :p_fan AND channel = 't_b'));
SELECT pgrelay.cancel((SELECT event_id FROM pgrelay.queue WHERE publication_id = :p_fan AND channel = 't_c'));
SELECT s.channel, s.event_id = e.event_id AS its_event, s.action_type, s.state, s.attempts, s.last_error,
       s.last_attempt_at IS NOT NULL AS ran, s.run_at IS NOT NULL AS waits
FROM pgrelay.publication_status(:p_fan) s
LEFT JOIN (SELECT DISTINCT channel, event_id FROM pgrelay.log WHERE publication_id = :p_fan) e ON e.channel = s.channel;
-- t_a fails for good after its retry
CREATE OR REPLACE FUNCTION regress_t_a(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'never' USING ERRCODE = 'PGSTP'; END $$;
UPDATE pgrelay.queue SET run_at = now() WHERE publication_id = :p_fan AND channel = 't_a';
SELECT outcome FROM pgrelay.process_one((SELECT id FROM pgrelay.queue WHERE publication_id = :p_fan AND channel = 't_a'));
SELECT channel, state, attempts, last_error FROM pgrelay.publication_status(:p_fan);
-- an id of no publication (a notify()'s event id among them) has no row; NULL is refused
SELECT pgrelay.notify('t_b', 'plain') AS plain \gset
SELECT count(*) AS of_a_notify FROM pgrelay.publication_status(:plain);
SELECT count(*) AS of_nothing FROM pgrelay.publication_status(-1);
SELECT * FROM pgrelay.publication_status(NULL);
-- rights: the monitor and admins call it; a producer does not
SET ROLE regress_t_monitor;
SELECT channel, state FROM pgrelay.publication_status(:p_fan);
RESET ROLE;
SET ROLE regress_t_producer;
SELECT channel, state FROM pgrelay.publication_status(:p_fan);
RESET ROLE;
-- both lookups may use the partial indexes on publication_id in the function's generic plan
-- (publication_id = $1 implies publication_id IS NOT NULL)
SET plan_cache_mode = force_generic_plan;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
PREPARE regress_pub_q(bigint) AS SELECT x.event_id FROM pgrelay.queue x WHERE x.publication_id = $1;
PREPARE regress_pub_l(bigint) AS SELECT y.event_id FROM pgrelay.log y WHERE y.publication_id = $1;
EXPLAIN (COSTS OFF) EXECUTE regress_pub_q(1);
EXPLAIN (COSTS OFF) EXECUTE regress_pub_l(1);
DEALLOCATE regress_pub_q;
DEALLOCATE regress_pub_l;
RESET enable_bitmapscan;
RESET enable_seqscan;
RESET plan_cache_mode;

DELETE FROM pgrelay.queue;
SELECT pgrelay.drop_topic('gone');
DROP ROLE regress_t_producer, regress_t_monitor, regress_t_admin;
