-- destinations: a channel of a broker kind is registered with its settings, checked and completed
-- there; altered, paused and unregistered as any channel; the Processor's claim returns them
\set SHOW_CONTEXT never
DELETE FROM pgrelay.queue;
CREATE ROLE regress_dest_admin IN ROLE pgrelay_admin;
CREATE ROLE regress_dest_proc IN ROLE pgrelay_processor;
CREATE ROLE regress_dest_producer IN ROLE pgrelay_producer;
CREATE ROLE regress_dest_monitor IN ROLE pgrelay_monitor;

-- the kinds, and the action type of each
SELECT pgrelay._destination_kinds();
SELECT action_type, run_order FROM pgrelay.action_types WHERE action_type = ANY (pgrelay._destination_kinds());
-- the page each kind's hints name
SELECT kind, pgrelay._destination_doc(kind) FROM unnest(pgrelay._destination_kinds()) AS kind;

-- a new redis channel: its settings completed with the defaults
SET SESSION AUTHORIZATION regress_dest_admin;
SELECT channel, action_type, batch FROM pgrelay.register('r_orders', 'redis', settings => '{"host": "redis.internal"}');
SELECT channel, settings FROM pgrelay.destinations;
-- altered: the keys given replace theirs, the others stay; a null removes one
SELECT channel FROM pgrelay.register('r_orders', settings => '{"port": 6380, "tls": true, "ca_file": "/etc/ssl/r.pem",
                                                               "user": "relay", "password": "env:REDIS_PW",
                                                               "stream": "orders:events", "maxlen": 100000}');
SELECT settings FROM pgrelay.destinations;
SELECT channel FROM pgrelay.register('r_orders', settings => '{"maxlen": null, "dedup_seconds": 3600}');
SELECT settings FROM pgrelay.destinations;
-- the channel's own settings without its destination's
SELECT channel, max_attempts FROM pgrelay.register('r_orders', max_attempts => 9);
SELECT settings ->> 'stream' FROM pgrelay.destinations;

-- what the settings may not be (errors)
SELECT pgrelay.register('r_bad', 'redis');
SELECT pgrelay.register('r_bad', 'redis', settings => '[]');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"hots": "x"}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "hots": null}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"port": 6379}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": ""}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "a\nb"}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "port": 70000}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "port": "6379"}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "port": 6379.5}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "tls": "yes"}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "ca_file": "/etc/ca.pem"}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "tls": true, "ca_file": "ca.pem"}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "password": "hunter2"}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "password": "env:1BAD"}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "user": "relay"}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "maxlen": -1}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "dedup_seconds": 0}');
SELECT pgrelay.register('r_bad', 'redis', settings => '{"host": "h", "stream": ""}');
SELECT count(*) FROM pgrelay.channels WHERE channel = 'r_bad';
-- a sql channel takes no settings (error)
RESET SESSION AUTHORIZATION;
CREATE SCHEMA regress_dest;
GRANT USAGE ON SCHEMA regress_dest TO regress_dest_admin;
CREATE FUNCTION regress_dest.handle(payload text) RETURNS void LANGUAGE sql SECURITY DEFINER AS '';
SET SESSION AUTHORIZATION regress_dest_admin;
SELECT pgrelay.register('r_sql', 'sql', handler => 'regress_dest.handle(text)', settings => '{"host": "h"}');

-- a destination that becomes a sql channel loses its row; a sql channel that becomes one needs settings
SELECT channel FROM pgrelay.register('r_moves', 'redis', settings => '{"host": "h"}');
SELECT channel, action_type FROM pgrelay.register('r_moves', 'sql', handler => 'regress_dest.handle(text)');
SELECT count(*) FROM pgrelay.destinations WHERE channel = 'r_moves';
SELECT channel FROM pgrelay.register('r_moves', 'redis');
SELECT channel, action_type FROM pgrelay.register('r_moves', 'redis', settings => '{"host": "h2"}');
SELECT settings ->> 'host' FROM pgrelay.destinations WHERE channel = 'r_moves';

-- paused and resumed as any channel; unregistered with its row
SELECT pgrelay.pause('r_moves');
SELECT paused FROM pgrelay.channels WHERE channel = 'r_moves';
SELECT pgrelay.resume('r_moves');
SELECT pgrelay.unregister('r_moves');
SELECT count(*) FROM pgrelay.destinations WHERE channel = 'r_moves';
RESET SESSION AUTHORIZATION;

-- who reads the settings: admins do; producers and the monitor do not (errors)
SET SESSION AUTHORIZATION regress_dest_producer;
SELECT count(*) FROM pgrelay.destinations;
SET SESSION AUTHORIZATION regress_dest_monitor;
SELECT count(*) FROM pgrelay.destinations;
RESET SESSION AUTHORIZATION;

-- the Processor's claim: the event, its key, its channel's settings; another kind's event is
-- refused (error)
SET SESSION AUTHORIZATION regress_dest_producer;
SELECT pgrelay.notify('r_orders', '{"id": 1}', key => 'customer-7') > 0;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_dest_proc;
BEGIN;
SELECT payload, attempt, channel, action_type, key, settings ->> 'host', settings ->> 'password', timeout_ms, replayed
FROM pgrelay._destination_claim((SELECT id FROM pgrelay.queue_pending_ids() LIMIT 1));
ROLLBACK;
RESET SESSION AUTHORIZATION;
SELECT channel FROM pgrelay.register('r_sql', 'sql', handler => 'regress_dest.handle(text)');
SELECT pgrelay.notify('r_sql', 'x') > 0;
SELECT id AS sql_event FROM pgrelay.queue WHERE channel = 'r_sql' \gset
SET SESSION AUTHORIZATION regress_dest_proc;
SELECT * FROM pgrelay._destination_claim(:sql_event);
RESET SESSION AUTHORIZATION;

-- the batched held transaction of a broker's kind: the events claimed together, in the order
-- of ids (an id of no row is skipped), then finished together in one statement: one log row per
-- attempt with its detail, each event its own outcome (a retry queued, a failure recorded)
DELETE FROM pgrelay.queue WHERE channel IN ('r_sql', 'r_orders');
SET SESSION AUTHORIZATION regress_dest_producer;
SELECT count(pgrelay.notify('r_orders', '{"n": ' || n || '}')) FROM generate_series(2, 4) n;
RESET SESSION AUTHORIZATION;
SELECT array_agg(id ORDER BY id DESC) AS batch FROM pgrelay.queue WHERE channel = 'r_orders' \gset
SET SESSION AUTHORIZATION regress_dest_proc;
BEGIN;
SELECT payload, attempt, channel, key, settings ->> 'host', replayed,
       queue_id = (:'batch'::bigint[])[ord] AS in_order
FROM pgrelay._destination_claim_many(:'batch'::bigint[] || '{-1}'::bigint[]) WITH ORDINALITY c(payload, attempt,
     event_id, channel, action_type, key, queued_at, settings, timeout_ms, replayed, publication_id,
     event_type, queue_id, ord);
SELECT (f.queue_id = (:'batch'::bigint[])[f.ord]) AS in_order, f.outcome, f.log_id IS NOT NULL AS logged,
       f.retry_id IS NOT NULL AS retried, f.retry_at > now() AS later
FROM pgrelay._finish_held_many(:'batch'::bigint[], '{ok,transient,permanent}', '{NULL,"connection lost","WRONGTYPE"}',
                               '{NULL,NULL,PGR01}', ARRAY[now(), NULL, now()]::timestamptz[],
                               ARRAY['{"entry_id": "1-0"}', NULL, '{"stream": "s"}']::jsonb[])
     WITH ORDINALITY f(queue_id, outcome, log_id, retry_id, retry_at, ord);
COMMIT;
RESET SESSION AUTHORIZATION;
SELECT l.payload, l.outcome, l.error, l.detail FROM pgrelay.log l WHERE l.queue_id = ANY (:'batch'::bigint[])
ORDER BY l.id;
SELECT attempt, last_error FROM pgrelay.queue WHERE channel = 'r_orders' AND attempt = 2;
SELECT payload, attempts, error FROM pgrelay.failed_events WHERE channel = 'r_orders';
-- bad input: a result that is none (error), arrays of other lengths (error), a start that is not
-- finite (error), a row that is not there (error): nothing is finished
SELECT id AS one FROM pgrelay.queue WHERE channel = 'r_orders' \gset
SET SESSION AUTHORIZATION regress_dest_proc;
BEGIN;
SELECT count(*) FROM pgrelay._destination_claim_many(ARRAY[:one]::bigint[]);
SELECT regress_error(format('SELECT * FROM pgrelay._finish_held_many(%L, %L, %L, %L, %L, NULL)',
                            ARRAY[:one], '{great}', '{NULL}', '{NULL}', '{NULL}'));
SELECT regress_error(format('SELECT * FROM pgrelay._finish_held_many(%L, %L, %L, %L, %L, NULL)',
                            ARRAY[:one], '{ok,ok}', '{NULL}', '{NULL}', '{NULL}'));
SELECT regress_error(format('SELECT * FROM pgrelay._finish_held_many(%L, %L, %L, %L, %L, %L)',
                            ARRAY[:one], '{ok}', '{NULL}', '{NULL}', '{NULL}', '{NULL,NULL}'));
SELECT regress_error(format('SELECT * FROM pgrelay._finish_held_many(%L, %L, %L, %L, %L, NULL)',
                            ARRAY[:one], '{ok}', '{NULL}', '{NULL}', '{infinity}'));
SELECT regress_error(format('SELECT * FROM pgrelay._finish_held_many(%L, %L, %L, %L, %L, NULL)',
                            ARRAY[:one, -1], '{ok,ok}', '{NULL,NULL}', '{NULL,NULL}', '{NULL,NULL}'));
ROLLBACK;
SELECT count(*) FROM pgrelay._finish_held_many('{}', '{}', '{}', '{}', '{}', '{}');
RESET SESSION AUTHORIZATION;
SELECT count(*) AS queued FROM pgrelay.queue WHERE id = :one;
DELETE FROM pgrelay.failed_events WHERE channel = 'r_orders';
-- the batch's claim keeps the checks of one event's: a paused channel's events are skipped (still
-- queued), and so are those the dispatch rule offers another node; an id listed twice is claimed
-- once; a replayed row (its attempt is logged already) comes back replayed, without its settings
-- and key, finished by the claim; a claimed event of a channel that is not a destination is an
-- error
SELECT pgrelay.notify('r_orders', 'p1', key => 'k-1') AS p1 \gset
SELECT pgrelay.notify('r_orders', 'p2', key => 'k-2') AS p2 \gset
SELECT pgrelay.pause('r_orders');
BEGIN;
SELECT count(*) AS claimed_paused FROM pgrelay._destination_claim_many(ARRAY[:p1, :p2]);
ROLLBACK;
SELECT pgrelay.resume('r_orders');
BEGIN;
SET LOCAL pg_relay.mode = 'multi-node';
SET LOCAL pg_relay.node_id = 5;
SELECT count(*) AS claimed_elsewhere FROM pgrelay._destination_claim_many(ARRAY[:p1, :p2]);
ROLLBACK;
BEGIN;
SELECT payload, key, replayed FROM pgrelay._destination_claim_many(ARRAY[:p2, :p1, :p2]);
ROLLBACK;
INSERT INTO pgrelay.log (queue_id, event_id, channel, action_type, payload, attempt, outcome, node_id, queued_at,
                         started_at, finished_at)
SELECT id, event_id, channel, action_type, payload, attempt, 'ok', 0, queued_at, now(), now()
FROM pgrelay.queue WHERE id = :p1;
BEGIN;
SELECT payload, replayed, settings IS NULL AS no_settings, key IS NULL AS no_key
FROM pgrelay._destination_claim_many(ARRAY[:p1, :p2]);
COMMIT;
SELECT payload FROM pgrelay.queue WHERE id IN (:p1, :p2);
SELECT pgrelay.notify('r_sql', 'not a destination') AS s1 \gset
BEGIN;
SELECT count(*) FROM pgrelay._destination_claim_many(ARRAY[:p2, :s1]);
ROLLBACK;
DELETE FROM pgrelay.queue WHERE id IN (:p2, :s1);
DELETE FROM pgrelay.log WHERE queue_id = :p1;
-- the batch's claim returns, event by event, what one event's claim returns (_destination_claim,
-- whose checks are _claim_event's), whatever stops an event: not yet due, its channel inactive,
-- dispatch paused, the dispatch rule (multi-node and leader modes, a restricted row, a replayed row
-- of another node: skipped and kept), a replayed row (finished: deleted), the events of a channel
-- that runs one at a time (all of them, in one transaction), ids of two dimensions or NULL ones.
-- Each claim runs in a subtransaction that is undone; the result: its rows in order
-- (payload:replayed:key:no settings:timeout_ms:attempt), then the events still queued.
CREATE FUNCTION pg_temp.claimed(ids bigint[], many boolean) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    r text;
    q text;
BEGIN
    IF many THEN
        SELECT string_agg(concat_ws(':', d.payload, d.replayed, COALESCE(d.key, '-'), d.settings IS NULL,
                                    d.timeout_ms, d.attempt), ' ') INTO r
        FROM pgrelay._destination_claim_many(ids) d;
    ELSE
        SELECT string_agg(concat_ws(':', d.payload, d.replayed, COALESCE(d.key, '-'), d.settings IS NULL,
                                    d.timeout_ms, d.attempt), ' ' ORDER BY u.o) INTO r
        FROM unnest(ids) WITH ORDINALITY u(id, o), LATERAL pgrelay._destination_claim(u.id) d;
    END IF;
    SELECT string_agg(x.payload, ',' ORDER BY x.payload) INTO q FROM pgrelay.queue x WHERE x.id = ANY (ids);
    RAISE EXCEPTION 'undone' USING DETAIL = COALESCE(r, '(none)') || ' | queued: ' || COALESCE(q, '');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS r = PG_EXCEPTION_DETAIL, q = MESSAGE_TEXT;
    RETURN CASE WHEN q = 'undone' THEN r ELSE q END;
END
$f$;
SELECT count(*) FROM pgrelay.register('r_serial', 'redis', settings => '{"host": "h"}', concurrency_mode => 'channel');
SELECT count(*) FROM pgrelay.register('r_idle', 'kafka', settings => '{"brokers": "k:9092"}');
SELECT count(*) FROM pgrelay.register('r_rmq', 'rabbitmq', settings => '{"host": "h"}', timeout => '7 seconds');
CREATE TEMP TABLE claim_cases (tag text PRIMARY KEY, id bigint);
INSERT INTO claim_cases VALUES
    ('a', pgrelay.notify('r_orders', 'a', key => 'ka')),   -- due
    ('b', pgrelay.notify('r_orders', 'b')),                -- not yet due
    ('c', pgrelay.notify('r_idle', 'c')),                  -- channel inactive
    ('d1', pgrelay.notify('r_serial', 'd1')),              -- one at a time
    ('d2', pgrelay.notify('r_serial', 'd2')),
    ('e', pgrelay.notify('r_orders', 'e')),                -- node 7's, restricted to it
    ('f', pgrelay.notify('r_rmq', 'f', key => 'kf')),      -- replayed
    ('g', pgrelay.notify('r_orders', 'g')),                -- node 7's, replayed
    ('h', pgrelay.notify('r_orders', 'h'));                -- its third attempt
SELECT count(*) FROM pgrelay.register('r_idle', active => false);
UPDATE pgrelay.queue SET run_at = now() + interval '1 hour' WHERE id = (SELECT id FROM claim_cases WHERE tag = 'b');
UPDATE pgrelay.queue SET owner_node = 7, node_restricted = true WHERE id = (SELECT id FROM claim_cases WHERE tag = 'e');
UPDATE pgrelay.queue SET owner_node = 7 WHERE id = (SELECT id FROM claim_cases WHERE tag = 'g');
UPDATE pgrelay.queue SET attempt = 3 WHERE id = (SELECT id FROM claim_cases WHERE tag = 'h');
INSERT INTO pgrelay.log (queue_id, event_id, channel, action_type, payload, attempt, outcome, node_id, queued_at,
                         started_at, finished_at)
SELECT id, event_id, channel, action_type, payload, attempt, 'ok', 0, queued_at, now(), now()
FROM pgrelay.queue WHERE id IN (SELECT id FROM claim_cases WHERE tag IN ('f', 'g'));
SELECT ARRAY(SELECT id FROM claim_cases ORDER BY tag DESC) AS cases \gset
SELECT pg_temp.claimed(:'cases', true) = pg_temp.claimed(:'cases', false) AS same, pg_temp.claimed(:'cases', true) AS single;
BEGIN;
SET LOCAL pg_relay.mode = 'multi-node';
SELECT pg_temp.claimed(:'cases', true) = pg_temp.claimed(:'cases', false) AS same, pg_temp.claimed(:'cases', true) AS multi_node_0;
SET LOCAL pg_relay.node_id = 7;
SELECT pg_temp.claimed(:'cases', true) = pg_temp.claimed(:'cases', false) AS same, pg_temp.claimed(:'cases', true) AS multi_node_7;
SET LOCAL pg_relay.mode = 'leader';
SELECT pg_temp.claimed(:'cases', true) = pg_temp.claimed(:'cases', false) AS same, pg_temp.claimed(:'cases', true) AS follower_7;
SET LOCAL pg_relay.is_leader = 'on';
SET LOCAL pg_relay.node_id = 0;
SELECT pg_temp.claimed(:'cases', true) = pg_temp.claimed(:'cases', false) AS same, pg_temp.claimed(:'cases', true) AS leader_0;
ROLLBACK;
SELECT pgrelay.pause();
SELECT pg_temp.claimed(:'cases', true) = pg_temp.claimed(:'cases', false) AS same, pg_temp.claimed(:'cases', true) AS paused;
SELECT pgrelay.resume();
SELECT ARRAY[ARRAY[(SELECT id FROM claim_cases WHERE tag = 'a'), NULL], ARRAY[NULL, (SELECT id FROM claim_cases WHERE tag = 'd1')]]
       AS square \gset
SELECT pg_temp.claimed(:'square', true) = pg_temp.claimed(:'square', false) AS same, pg_temp.claimed(:'square', true) AS square;
DELETE FROM pgrelay.log WHERE queue_id IN (SELECT id FROM claim_cases);
DELETE FROM pgrelay.queue WHERE id IN (SELECT id FROM claim_cases);
SELECT pgrelay.unregister(c) FROM unnest('{r_serial,r_idle,r_rmq}'::text[]) c;
DROP TABLE claim_cases;
-- a kafka channel: its settings completed with the defaults (topic: the channel's name, key: the
-- event's); TLS, SASL with the password as a reference, the key a field of the payload
SET SESSION AUTHORIZATION regress_dest_admin;
SELECT channel, action_type FROM pgrelay.register('k_orders', 'kafka', settings => '{"brokers": "k1:9092,k2:9093"}');
SELECT settings FROM pgrelay.destinations WHERE channel = 'k_orders';
SELECT channel FROM pgrelay.register('k_orders', settings => '{"topic": "orders.v1", "key": "field", "key_field": "customer",
                                                               "tls": true, "ca_file": "/etc/ssl/k.pem", "tls_verify": false,
                                                               "sasl_mechanism": "SCRAM-SHA-512", "user": "relay",
                                                               "password": "file:kafka_pw", "timeout_ms": 5000}');
SELECT settings FROM pgrelay.destinations WHERE channel = 'k_orders';
SELECT channel FROM pgrelay.register('k_orders', settings => '{"key": "none", "key_field": null, "timeout_ms": null}');
SELECT settings FROM pgrelay.destinations WHERE channel = 'k_orders';
-- what a kafka channel's settings may not be (errors)
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"topic": "t"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "stream": "s"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092, k2:9092"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": ["k1:9092"]}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "topic": "a/b"}');
SELECT pgrelay.register('k_bad:x', 'kafka', settings => '{"brokers": "k1:9092"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "key": "payload"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "key": "field"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "key_field": "customer"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "tls": 1}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "ca_file": "/etc/ca.pem"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "tls_verify": false}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "tls": true, "ca_file": "ca.pem"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "sasl_mechanism": "GSSAPI"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "sasl_mechanism": "PLAIN", "user": "u"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "user": "u", "password": "env:KPW"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "sasl_mechanism": "PLAIN", "user": "u",
                                                        "password": "s3cret"}');
SELECT pgrelay.register('k_bad', 'kafka', settings => '{"brokers": "k1:9092", "timeout_ms": 10}');
SELECT count(*) FROM pgrelay.channels WHERE channel LIKE 'k_bad%';
-- a redis channel that becomes a kafka one starts from the kafka defaults, not the redis settings
SELECT channel FROM pgrelay.register('k_moves', 'redis', settings => '{"host": "h"}');
SELECT pgrelay.register('k_moves', 'kafka');
SELECT channel, action_type FROM pgrelay.register('k_moves', 'kafka', settings => '{"brokers": "k:9092"}');
SELECT settings FROM pgrelay.destinations WHERE channel = 'k_moves';
SELECT pgrelay.unregister('k_moves');
-- a rabbitmq channel: its settings completed with the defaults, altered, and what they may not be
-- (errors); its events claimed as a redis channel's are
SET SESSION AUTHORIZATION regress_dest_admin;
SELECT channel, action_type FROM pgrelay.register('q_orders', 'rabbitmq', settings => '{"host": "mq.internal"}');
SELECT settings FROM pgrelay.destinations WHERE channel = 'q_orders';
SELECT channel FROM pgrelay.register('q_orders', settings => '{"port": 5671, "vhost": "shop", "tls": true,
                                                               "ca_file": "/etc/ssl/mq.pem", "user": "relay",
                                                               "password": "file:mq_pw", "exchange": "orders",
                                                               "routing_key_from": "field",
                                                               "routing_key_field": "type", "mandatory": false}');
SELECT settings FROM pgrelay.destinations WHERE channel = 'q_orders';
SELECT channel FROM pgrelay.register('q_orders', settings => '{"exchange": "", "routing_key_from": "key",
                                                               "routing_key_field": null, "tls_verify": false}');
SELECT settings FROM pgrelay.destinations WHERE channel = 'q_orders';
SELECT pgrelay.register('q_bad', 'rabbitmq');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "queue": "q"}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"port": 5672}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "port": 0}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "vhost": ""}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "exchange": 7}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "exchange": "a\tb"}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "routing_key": ""}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => format('{"host": "h", "routing_key": "%s"}', repeat('k', 256))::jsonb);
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "routing_key_from": "header"}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "routing_key_from": "field"}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "routing_key_field": "type"}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "mandatory": "yes"}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "tls_verify": 1}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "ca_file": "/etc/ca.pem"}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "tls": true, "ca_file": "ca.pem"}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "password": "guest"}');
SELECT pgrelay.register('q_bad', 'rabbitmq', settings => '{"host": "h", "user": "relay"}');
SELECT count(*) FROM pgrelay.channels WHERE channel = 'q_bad';
-- a redis channel that becomes a rabbitmq one starts from its own settings
SELECT channel FROM pgrelay.register('q_moves', 'redis', settings => '{"host": "h", "maxlen": 5}');
SELECT pgrelay.register('q_moves', 'rabbitmq', settings => '{"maxlen": 5}');
SELECT channel, action_type FROM pgrelay.register('q_moves', 'rabbitmq', settings => '{"host": "h"}');
SELECT settings FROM pgrelay.destinations WHERE channel = 'q_moves';
SELECT pgrelay.unregister('q_moves');
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_dest_producer;
SELECT pgrelay.notify('q_orders', '{"type": "paid"}', key => 'customer-8') > 0;
RESET SESSION AUTHORIZATION;
SELECT id AS q_event FROM pgrelay.queue WHERE channel = 'q_orders' \gset
SET SESSION AUTHORIZATION regress_dest_proc;
BEGIN;
SELECT payload, attempt, channel, action_type, key, settings ->> 'exchange', settings ->> 'routing_key_from', replayed
FROM pgrelay._destination_claim(:q_event);
ROLLBACK;
RESET SESSION AUTHORIZATION;

-- the internal functions are nobody's to call (error)
SET SESSION AUTHORIZATION regress_dest_admin;
SELECT pgrelay._destination_save(NULL, NULL, NULL);
RESET SESSION AUTHORIZATION;

-- clean up
DELETE FROM pgrelay.queue;
SELECT pgrelay.unregister('r_orders');
SELECT pgrelay.unregister('r_sql');
SELECT pgrelay.unregister('k_orders');
SELECT pgrelay.unregister('q_orders');
DROP SCHEMA regress_dest CASCADE;
DROP ROLE regress_dest_admin, regress_dest_proc, regress_dest_producer, regress_dest_monitor;
