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
-- put back what the next part expects: only t_a subscribed (its handler still fails for good)
SELECT pgrelay.unsubscribe('gone', 't_b');
SELECT pgrelay.unsubscribe('gone', 't_c');
SELECT event_type IS NULL AS untyped FROM pgrelay.queue WHERE id = :again;
DELETE FROM pgrelay.queue;

-- the event type travels with every delivery: queue row, log row, retry row, retry_failed()
SELECT channel FROM pgrelay.subscribe('gone', 't_b', '{"order.*"}');
SELECT pgrelay.publish('gone', 'typed', 'order.shipped') AS p_typed \gset
SELECT channel, publication_id = :p_typed AS same_pub, event_type FROM pgrelay.queue ORDER BY channel;
SELECT id AS ta_id, event_id AS ta_event FROM pgrelay.queue WHERE channel = 't_a' \gset
SELECT outcome FROM pgrelay.process_one(:ta_id);
SELECT publication_id = :p_typed AS same_pub, event_type FROM pgrelay.log WHERE queue_id = :ta_id;
SELECT pgrelay.retry_failed(:ta_event) AS ta_again \gset
SELECT publication_id = :p_typed AS same_pub, event_type FROM pgrelay.queue WHERE id = :ta_again;
CREATE OR REPLACE FUNCTION regress_t_b(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'not now'; END $$;
SELECT id AS tb_id FROM pgrelay.queue WHERE channel = 't_b' \gset
SELECT outcome FROM pgrelay.process_one(:tb_id);
SELECT attempt, event_type, publication_id = :p_typed AS same_pub FROM pgrelay.queue WHERE channel = 't_b';
CREATE OR REPLACE FUNCTION regress_t_b(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE sql AS $$ INSERT INTO regress_t_calls VALUES ('t_b', payload) $$;
DELETE FROM pgrelay.queue;
-- a plain notify has neither
SELECT pgrelay.notify('t_b', 'plain again') AS plain2 \gset
SELECT publication_id IS NULL AND event_type IS NULL AS neither FROM pgrelay.queue WHERE id = :plain2;
DELETE FROM pgrelay.queue;

-- publish(key => ...): the key on each subscriber's delivery, as notify(key => ...) queues it
SELECT pgrelay.publish('gone', 'k1', 'order.a', key => 'o-1') AS pk1 \gset
SELECT channel, key, key_owner = session_user AS mine, payload, event_type, publication_id = :pk1 AS same_pub
FROM pgrelay.queue ORDER BY channel;
-- keep (the default): the waiting deliveries stand, the call still returns its own publication id
SELECT pgrelay.publish('gone', 'k2', 'order.b', key => 'o-1') AS pk2 \gset
SELECT :pk2 <> :pk1 AS new_pub_id;
SELECT channel, payload, event_type, publication_id = :pk1 AS first_pub FROM pgrelay.queue ORDER BY channel;
-- replace: each subscriber's waiting delivery takes the payload, publication and event type
SELECT pgrelay.publish('gone', 'k3', 'order.c', key => 'o-1', key_mode => 'replace') AS pk3 \gset
SELECT channel, payload, event_type, publication_id = :pk3 AS third_pub FROM pgrelay.queue ORDER BY channel;
-- debounce: also moves run_at
SELECT pgrelay.publish('gone', 'k4', 'order.d', now() + interval '1 hour', key => 'o-1', key_mode => 'debounce') AS pk4 \gset
SELECT channel, payload, event_type, run_at > now() + interval '59 minutes' AS moved, publication_id = :pk4 AS fourth_pub
FROM pgrelay.queue ORDER BY channel;
-- a notify() with replace on one subscriber's key: that delivery is no longer the publication's
SELECT pgrelay.notify('t_a', 'by notify', key => 'o-1', key_mode => 'replace') > 0 AS replaced;
SELECT channel, payload, publication_id IS NULL AS no_pub, event_type FROM pgrelay.queue ORDER BY channel;
-- another key: its own deliveries
SELECT pgrelay.publish('gone', 'k5', key => 'o-2') > 0 AS other_key;
SELECT key, count(*) FROM pgrelay.queue GROUP BY key ORDER BY key;
-- a key another role's event holds on one subscriber (the channel does not share keys) refuses
-- the whole publication: nothing is queued on the other subscriber either
SELECT pgrelay.notify('t_b', 'mine', key => 'o-6') > 0 AS held_on_t_b;
CREATE ROLE regress_t_other IN ROLE pgrelay_producer;
SET SESSION AUTHORIZATION regress_t_other;
SELECT pgrelay.publish('gone', 'theirs', 'order.z', key => 'o-6');
SELECT pgrelay.publish('gone', 'theirs', 'order.z', key => 'o-3') > 0 AS own_key;
RESET SESSION AUTHORIZATION;
SELECT channel, key FROM pgrelay.queue WHERE payload = 'theirs' ORDER BY channel;
-- all or nothing with a key: a subscriber that does not take the payload refuses it
SELECT (pgrelay.register('t_b', max_payload_bytes => 5)).max_payload_bytes;
SELECT pgrelay.publish('gone', 'too large', 'order.x', key => 'o-4');
SELECT (pgrelay.register('t_b', max_payload_bytes => 1000)).max_payload_bytes;
SELECT count(*) AS none FROM pgrelay.queue WHERE key = 'o-4';
-- bad keys, bad key_mode, a topic without subscriber
SELECT pgrelay.publish('gone', 'x', key => '');
SELECT pgrelay.publish('gone', 'x', key => repeat('k', 513));
SELECT pgrelay.publish('gone', 'x', key => E'a\tb');
SELECT pgrelay.publish('gone', 'x', key => 'o-5', key_mode => 'sometimes');
SELECT pgrelay.publish('gone', 'x', key => 'o-5', key_mode => NULL);
SELECT topic FROM pgrelay.create_topic('lonely');
SELECT pgrelay.publish('lonely', 'x', key => 'o-5');
SELECT pgrelay.drop_topic('lonely');
SELECT pgrelay.publish('nope', 'x', key => 'o-5');
DELETE FROM pgrelay.queue;

-- the Processor's claims return the publication and its event type (NULL for notify())
SELECT channel FROM pgrelay.register('t_redis', 'redis', settings => '{"host": "127.0.0.1"}');
SELECT channel FROM pgrelay.register_webhook('t_hook', 'https://hooks.example.com/t');
SELECT channel FROM pgrelay.subscribe('gone', 't_redis');
SELECT channel FROM pgrelay.subscribe('gone', 't_hook');
SELECT pgrelay.publish('gone', 'claimed', 'order.claimed', key => 'c-1') AS p_claim \gset
SELECT id AS r_id FROM pgrelay.queue WHERE channel = 't_redis' \gset
SELECT id AS h_id FROM pgrelay.queue WHERE channel = 't_hook' \gset
BEGIN;
SELECT payload, key, publication_id = :p_claim AS same_pub, event_type FROM pgrelay._destination_claim(:r_id);
ROLLBACK;
BEGIN;
SELECT payload, key, publication_id = :p_claim AS same_pub, event_type, queue_id = :r_id AS same_row
FROM pgrelay._destination_claim_many(ARRAY[:r_id]);
ROLLBACK;
BEGIN;
SELECT payload, publication_id = :p_claim AS same_pub, event_type FROM pgrelay._webhook_claim(:h_id);
ROLLBACK;
SELECT pgrelay.notify('t_redis', 'plain r') AS r_plain \gset
SELECT pgrelay.notify('t_hook', 'plain h') AS h_plain \gset
BEGIN;
SELECT payload, publication_id IS NULL AS no_pub, event_type IS NULL AS no_type FROM pgrelay._destination_claim(:r_plain);
SELECT payload, publication_id IS NULL AS no_pub, event_type IS NULL AS no_type FROM pgrelay._webhook_claim(:h_plain);
ROLLBACK;

-- a retrying delivery that a later keyed publish() replaces runs for that publication now: the
-- first lists it as superseded, the later as retrying
DELETE FROM pgrelay.queue;
CREATE FUNCTION regress_t_later(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'later'; END $$;
SELECT channel FROM pgrelay.register('t_d', 'sql', handler => 'regress_t_later(text)');
SELECT topic FROM pgrelay.create_topic('keyed');
SELECT channel FROM pgrelay.subscribe('keyed', 't_d');
SELECT pgrelay.publish('keyed', 'first', key => 's-1') AS s1 \gset
SELECT outcome FROM pgrelay.process_one((SELECT id FROM pgrelay.queue WHERE publication_id = :s1));
SELECT pgrelay.publish('keyed', 'second', key => 's-1', key_mode => 'replace') AS s2 \gset
SELECT state, attempts, last_error FROM pgrelay.publication_status(:s1);
SELECT state, attempts FROM pgrelay.publication_status(:s2);
DELETE FROM pgrelay.queue;
SELECT pgrelay.drop_topic('keyed');
SELECT pgrelay.unregister('t_d');

DELETE FROM pgrelay.queue;
SELECT pgrelay.drop_topic('gone');
SELECT pgrelay.unregister('t_redis');
SELECT pgrelay.unregister('t_hook');
DROP ROLE regress_t_producer, regress_t_monitor, regress_t_admin, regress_t_other;
