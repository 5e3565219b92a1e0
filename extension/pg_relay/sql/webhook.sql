-- register_webhook(): an admin fixes a channel's HTTP endpoint; the Processor's claim and 410 Gone
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
DELETE FROM pgrelay.queue;
CREATE ROLE regress_hook_admin IN ROLE pgrelay_admin;
CREATE ROLE regress_hook_proc IN ROLE pgrelay_processor;
CREATE ROLE regress_hook_producer IN ROLE pgrelay_producer;
CREATE ROLE regress_hook_monitor IN ROLE pgrelay_monitor;

-- the action type is a row of action_types, dispatched after sql and notify
SELECT action_type, run_order FROM pgrelay.action_types ORDER BY run_order;

-- a new webhook channel: the endpoint's defaults and the channel's; secrets shown only as how they are given
SET SESSION AUTHORIZATION regress_hook_admin;
SELECT channel, url, method, allow_http, ca_file, debug, headers, signing, gone_at
FROM pgrelay.register_webhook('h_orders', 'https://hooks.example.com/orders?src=db',
                              headers => '{"Authorization": "env:HOOK_TOKEN", "X-Source": "pg_relay",
                                           "X-Key": "file:hook_key", "X-Escaped": "value:env:literal"}',
                              signing_secret => 'env:HOOK_SECRET', timeout => '5 seconds', max_attempts => 8);
SELECT channel, action_type, handler, timeout, max_attempts, registered_by FROM pgrelay.channels WHERE channel = 'h_orders';
-- admins read the endpoint, not the secrets (error)
SELECT count(*) FROM pgrelay.webhooks;
SELECT * FROM pgrelay.webhook_secrets;
RESET SESSION AUTHORIZATION;
SELECT channel, headers, signing_secret FROM pgrelay.webhook_secrets;

-- changing it: NULL keeps, reset restores defaults; the channel's settings go on to register()
SET SESSION AUTHORIZATION regress_hook_admin;
SELECT url, method, headers, signing, debug
FROM pgrelay.register_webhook('h_orders', method => 'put', debug => true, reset => '{headers}');
SELECT url, method, headers, signing, ca_file
FROM pgrelay.register_webhook('h_orders', url => 'https://[::1]:8443/v2/orders', ca_file => '/etc/pg_relay/ca.pem',
                              reset => '{method,signing_secret,debug}', backoff_base => '1 second');
SELECT timeout, max_attempts, backoff_base FROM pgrelay.channels WHERE channel = 'h_orders';
-- a literal whsec_ key; http:// only when the admin allows it
SELECT signing FROM pgrelay.register_webhook('h_orders',
                                              signing_secret => 'whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=');
SELECT url, allow_http FROM pgrelay.register_webhook('h_plain', 'http://127.0.0.1:8080/hook', allow_http => true);
-- register() changes the channel's own settings and keeps the endpoint
SELECT channel, max_attempts FROM pgrelay.register('h_orders', max_attempts => 3);
SELECT url FROM pgrelay.webhooks WHERE channel = 'h_orders';

-- registration errors: a bad URL (error)
SELECT pgrelay.register_webhook('h_bad');
SELECT pgrelay.register_webhook('h_bad', 'ftp://hooks.example.com/x');
SELECT pgrelay.register_webhook('h_bad', 'HTTPS://hooks.example.com/x');
SELECT pgrelay.register_webhook('h_bad', 'https://user:pw@hooks.example.com/x');
SELECT pgrelay.register_webhook('h_bad', 'https://hooks.example.com/x#frag');
SELECT pgrelay.register_webhook('h_bad', 'https://hooks.example.com/a b');
SELECT pgrelay.register_webhook('h_bad', E'https://hooks.example.com/a\r\nHost: evil');
SELECT pgrelay.register_webhook('h_bad', 'https://hooks.example.com:99999/x');
SELECT pgrelay.register_webhook('h_bad', 'https://-bad-.example.com/x');
SELECT pgrelay.register_webhook('h_bad', 'https://' || repeat('a', 2048));
-- http:// without the admin's opt-in (error)
SELECT pgrelay.register_webhook('h_bad', 'http://hooks.example.com/x');
SELECT pgrelay.register_webhook('h_plain', allow_http => false);
-- bad header names and values: CR/LF, reserved, duplicates, not strings, bad references (error)
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"Bad Name": "x"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"X-Bad:": "x"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"": "x"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"X-A": "one\r\nX-Injected: two"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"X-A": "one\ntwo"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"X-A": "nul\u0001"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"X-A": ""}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"X-A": 1}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"X-A": "a", "x-a": "b"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"Host": "evil.example"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"Content-Length": "1"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"webhook-signature": "v1,x"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"PG-Relay-Publication-Id": "1"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"Proxy-Authorization": "x"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '["X-A", "a"]');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"X-A": "env:1BAD"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', headers => '{"X-A": "file:../etc/shadow"}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/',
                                headers => (SELECT jsonb_object_agg('X-' || i, 'v') FROM generate_series(1, 51) i));
-- bad signing secrets, method, CA file (error)
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', signing_secret => 'a-raw-passphrase-of-many-bytes');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', signing_secret => 'whsec_AAAAAAAAAAAAAAAAAAAAAA==');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', signing_secret => 'whsec_!!!');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', signing_secret => 'env:');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', signing_secret => '');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', method => 'GET');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', ca_file => 'relative/ca.pem');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', reset => '{url}');
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', method => 'PUT', reset => '{method}');
-- the endpoint's check alone (_check_webhook): nothing for a valid endpoint, else the first bad
-- setting in the order url, method, headers, signing secret, ca_file (error); internal, so not the
-- admin's to call (error)
SELECT pgrelay._check_webhook(NULL, NULL, NULL, NULL);
RESET SESSION AUTHORIZATION;
SELECT pgrelay._check_webhook(w, NULL, NULL, NULL) FROM pgrelay.webhooks w WHERE w.channel = 'h_orders';
SELECT pgrelay._check_webhook(jsonb_populate_record(w, '{"url": "ftp://h.example/", "ca_file": "relative"}'), NULL, NULL, NULL)
FROM pgrelay.webhooks w WHERE w.channel = 'h_orders';
SELECT pgrelay._check_webhook(jsonb_populate_record(w, '{"ca_file": "relative"}'), 'whsec_!!!', NULL, '{"Host": "x"}')
FROM pgrelay.webhooks w WHERE w.channel = 'h_orders';
SELECT pgrelay._check_webhook(jsonb_populate_record(w, '{"ca_file": "relative"}'), 'whsec_!!!', NULL, NULL)
FROM pgrelay.webhooks w WHERE w.channel = 'h_orders';
SELECT pgrelay._check_webhook(jsonb_populate_record(w, '{"ca_file": "relative"}'), NULL, NULL, NULL)
FROM pgrelay.webhooks w WHERE w.channel = 'h_orders';
SET SESSION AUTHORIZATION regress_hook_admin;
-- the channel's settings are checked by register() (error)
SELECT pgrelay.register_webhook('h_bad', 'https://h.example/', max_attempts => 0);
SELECT pgrelay.register_webhook('bad name', 'https://h.example/');
-- nothing of a refused registration stays
SELECT count(*) AS left_behind FROM pgrelay.webhooks WHERE channel IN ('h_bad', 'bad name');
-- a channel of another action type is not turned into a webhook, and register() makes no
-- webhook without an endpoint (error)
RESET SESSION AUTHORIZATION;
CREATE FUNCTION regress_hook_sink(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE sql AS $$ SELECT $$;
GRANT EXECUTE ON FUNCTION regress_hook_sink(text) TO pgrelay_processor;
SELECT channel FROM pgrelay.register('h_sql', 'sql', handler => 'regress_hook_sink(text)');
SET SESSION AUTHORIZATION regress_hook_admin;
SELECT pgrelay.register_webhook('h_sql', 'https://h.example/');
SELECT pgrelay.register('h_new', 'webhook');
SELECT pgrelay.register('h_sql', 'webhook');
RESET SESSION AUTHORIZATION;

-- only admins choose endpoints: producers, the Processor, monitors and nobody else may not (error)
SET SESSION AUTHORIZATION regress_hook_producer;
SELECT pgrelay.register_webhook('h_evil', 'https://evil.example/');
SELECT count(*) FROM pgrelay.webhooks;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_hook_proc;
SELECT pgrelay.register_webhook('h_orders', 'https://evil.example/');
SELECT count(*) FROM pgrelay.webhook_secrets;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_hook_monitor;
SELECT pgrelay.register_webhook('h_orders', 'https://evil.example/');
SELECT channel, endpoint, method, state, signed FROM pgrelay.webhook_status ORDER BY channel;
SELECT count(*) FROM pgrelay.webhooks;
RESET SESSION AUTHORIZATION;

-- a producer queues a payload; it can never change where it goes
SET SESSION AUTHORIZATION regress_hook_producer;
SELECT pgrelay.notify('h_orders', '{"url": "https://evil.example/", "id": 42}') AS id \gset
RESET SESSION AUTHORIZATION;

-- the Processor claims the event with its endpoint (secrets as given: references stay references)
SET SESSION AUTHORIZATION regress_hook_proc;
BEGIN;
SELECT payload, attempt, event_id = :id AS event_id_is_the_event,
       endpoint - 'signing_secret' AS endpoint, endpoint ->> 'signing_secret' LIKE 'whsec_%' AS has_key
FROM pgrelay._webhook_claim(:id);
ROLLBACK;
-- an event of another action type is not a webhook (error)
RESET SESSION AUTHORIZATION;
SELECT pgrelay.notify('h_sql', 'x') AS sql_id \gset
SET SESSION AUTHORIZATION regress_hook_proc;
SELECT * FROM pgrelay._webhook_claim(:sql_id);
-- a paused channel's event is not claimed
RESET SESSION AUTHORIZATION;
SELECT pgrelay.pause('h_orders');
SET SESSION AUTHORIZATION regress_hook_proc;
SELECT count(*) AS claimed_while_paused FROM pgrelay._webhook_claim(:id);
RESET SESSION AUTHORIZATION;
SELECT pgrelay.resume('h_orders');

-- 410 Gone: the Processor marks the endpoint gone and pauses the channel, in its transaction
SET SESSION AUTHORIZATION regress_hook_proc;
BEGIN;
SELECT count(*) FROM pgrelay._webhook_claim(:id);
SELECT pgrelay._webhook_gone(:id, 410, 'HTTP 410 Gone: the endpoint no longer accepts webhooks');
SELECT outcome FROM pgrelay._write_log(:id, 'permanent', 'HTTP 410 Gone');
SELECT pgrelay._queue_mark_done(:id);
COMMIT;
-- only for a webhook event (error)
SELECT pgrelay._webhook_gone(:sql_id, 410, 'x');
RESET SESSION AUTHORIZATION;
-- admins and monitors see it; producers keep queueing (the channel is paused, not inactive)
SELECT channel, state, gone_status, gone_reason FROM pgrelay.webhook_status WHERE channel = 'h_orders';
SELECT channel, queued, paused FROM pgrelay.queue_depth WHERE channel = 'h_orders';
SELECT outcome, error FROM pgrelay.log WHERE channel = 'h_orders';
SET SESSION AUTHORIZATION regress_hook_producer;
SELECT pgrelay.notify('h_orders', '{"after": "gone"}') IS NOT NULL AS still_queues;
RESET SESSION AUTHORIZATION;
-- resume(channel) clears it
SELECT pgrelay.resume('h_orders');
SELECT channel, state, gone_at FROM pgrelay.webhook_status WHERE channel = 'h_orders';
-- ... and the Processor records a 410 in its one finish (_finish_held, gone_status)
SELECT pgrelay.notify('h_orders', '{"id": 43}') AS id \gset
SET SESSION AUTHORIZATION regress_hook_proc;
BEGIN;
SELECT count(*) FROM pgrelay._webhook_claim(:id);
SELECT outcome, retry_id FROM pgrelay._finish_held(:id, 'permanent', 'HTTP 410 Gone: not here any more', gone_status => 410);
COMMIT;
-- a gone_status for an event of a channel without an endpoint (error): nothing of the finish stays
SELECT pgrelay._finish_held(:sql_id, 'permanent', 'x', gone_status => 410);
RESET SESSION AUTHORIZATION;
SELECT channel, state, gone_status, gone_reason FROM pgrelay.webhook_status WHERE channel = 'h_orders';
SELECT paused FROM pgrelay.channels WHERE channel = 'h_orders';
SELECT outcome, error FROM pgrelay.log WHERE event_id = :id;
SELECT count(*) AS finished_left FROM pgrelay.queue WHERE id = :id;
SELECT count(*) AS sql_event_queued, (SELECT count(*) FROM pgrelay.log WHERE queue_id = :sql_id) AS logged
FROM pgrelay.queue WHERE id = :sql_id;
SELECT pgrelay.resume('h_orders');

-- a watched table's changes become webhook events
CREATE TABLE regress_hook_orders (id integer PRIMARY KEY, total numeric);
SELECT pgrelay.watch_table('regress_hook_orders', 'h_orders') IS NOT NULL AS watched;
INSERT INTO regress_hook_orders VALUES (1, 10);
SELECT action_type, payload::jsonb ->> 'operation' AS operation FROM pgrelay.queue
WHERE channel = 'h_orders' AND payload LIKE '%operation%';
SELECT pgrelay.unwatch_table('regress_hook_orders', 'h_orders');
DROP TABLE regress_hook_orders;

-- the replication classification knows both tables
SELECT relation, replicate FROM pgrelay.replication_tables() WHERE relation::text LIKE 'pgrelay.webhook%' ORDER BY 1;

-- changing a webhook channel to another action type drops its endpoint; unregister() drops it too
DELETE FROM pgrelay.queue;
SELECT channel, action_type FROM pgrelay.register('h_plain', 'sql', handler => 'regress_hook_sink(text)');
SELECT count(*) AS endpoints_of_h_plain FROM pgrelay.webhooks WHERE channel = 'h_plain';
SELECT pgrelay.unregister('h_orders');
SELECT count(*) AS endpoints, (SELECT count(*) FROM pgrelay.webhook_secrets) AS secrets FROM pgrelay.webhooks;

-- in a transaction whose constraints were made immediate (as process_one() makes them once a
-- handler returned), a webhook channel is still registered
BEGIN;
SET CONSTRAINTS ALL IMMEDIATE;
SELECT channel, url FROM pgrelay.register_webhook('h_immediate', 'https://hooks.example.com/x');
ROLLBACK;

DELETE FROM pgrelay.log;
DELETE FROM pgrelay.failed_events;
DELETE FROM pgrelay.channels WHERE channel IN ('h_plain', 'h_sql');
DROP FUNCTION regress_hook_sink(text);
DROP ROLE regress_hook_admin, regress_hook_proc, regress_hook_producer, regress_hook_monitor;
