-- privileges: PUBLIC nothing; producers send and follow their own mail; admins manage; the
-- Processor only fetch()es and set_status()es; nobody but the owner reads secrets
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
CREATE ROLE regress_producer IN ROLE pgrelay_producer;
CREATE ROLE regress_producer2 IN ROLE pgrelay_producer;
CREATE ROLE regress_admin IN ROLE pgrelay_admin;
CREATE ROLE regress_processor IN ROLE pgrelay_processor;
CREATE ROLE regress_nobody;
GRANT EXECUTE ON FUNCTION regress_error(text) TO PUBLIC;

-- what each role may execute and read, from the catalog
SELECT r.rolname, string_agg(p.proname, ', ' ORDER BY p.proname) AS may_execute
FROM pg_roles r CROSS JOIN pg_proc p
WHERE r.rolname IN ('pgrelay_producer', 'pgrelay_processor', 'pgrelay_admin', 'pgrelay_monitor', 'regress_nobody')
  AND p.pronamespace = 'pgrelay_notifier'::regnamespace
  AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
GROUP BY r.rolname ORDER BY r.rolname;
SELECT r.rolname, string_agg(c.relname, ', ' ORDER BY c.relname) AS may_select
FROM pg_roles r CROSS JOIN pg_class c
WHERE r.rolname IN ('pgrelay_producer', 'pgrelay_processor', 'pgrelay_admin', 'pgrelay_monitor', 'regress_nobody')
  AND c.relnamespace = 'pgrelay_notifier'::regnamespace AND c.relkind IN ('r', 'v')
  AND has_table_privilege(r.oid, c.oid, 'SELECT')
GROUP BY r.rolname ORDER BY r.rolname;
-- the monitor's columns: counts, statuses and errors of notifications, never a subject, body or
-- address (an error text may quote what a server said about one), and of secrets only how each
-- is given (a reference, or "(literal)"), never a value
SELECT c.relname, string_agg(a.attname, ', ' ORDER BY a.attnum) AS monitor_reads
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relnamespace = 'pgrelay_notifier'::regnamespace
  AND has_column_privilege('pgrelay_monitor', c.oid, a.attnum, 'SELECT')
GROUP BY c.relname ORDER BY c.relname;
-- nobody may write a table directly
SELECT c.relname, r.rolname
FROM pg_roles r CROSS JOIN pg_class c
WHERE r.rolname IN ('pgrelay_producer', 'pgrelay_processor', 'pgrelay_admin')
  AND c.relnamespace = 'pgrelay_notifier'::regnamespace AND c.relkind = 'r'
  AND has_table_privilege(r.oid, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE');
-- the secrets table has no grant at all: only its owner can read it
SELECT relacl IS NULL OR array_length(relacl, 1) = 1 AS owner_only
FROM pg_class WHERE oid = 'pgrelay_notifier.profile_secrets'::regclass;

-- admin: manages profiles and channels, sees every notification, never a secret
SET SESSION AUTHORIZATION regress_admin;
SELECT name FROM pgrelay_notifier.create_profile('v_main', host => 'smtp.example.com', username => 'relay',
       password => 'Literal-S3cret', from_address => 'app@example.com');
SELECT security FROM pgrelay_notifier.alter_profile('v_main', security => 'tls');
SELECT channel FROM pgrelay_notifier.create_channel('v_mail', 'v_main');
SELECT channel FROM pgrelay_notifier.alter_channel('v_mail', max_attempts => 4);
SELECT name, created_by FROM pgrelay_notifier.profiles;
SELECT profile, password FROM pgrelay_notifier.profile_credentials;
-- but cannot read secrets, write tables, send, or play the Processor (error)
SELECT password FROM pgrelay_notifier.profile_secrets;
UPDATE pgrelay_notifier.profiles SET debug = true;
INSERT INTO pgrelay_notifier.channels (channel, profile) VALUES ('v_x', 'v_main');
SELECT pgrelay_notifier.send('v_mail', ARRAY['ann@example.org'], 's', 'b');
SELECT pgrelay_notifier.fetch('1', 1);
SELECT pgrelay_notifier.set_status('1', '{"outcome": "sent"}');
SELECT pgrelay_notifier._profile_doc('v_main');
RESET SESSION AUTHORIZATION;

-- producer: sends, and follows its own notifications only
SET SESSION AUTHORIZATION regress_producer;
SELECT pgrelay_notifier.send('v_mail', ARRAY['ann@example.org'], 'From producer 1', 'b') AS mine \gset
SELECT pgrelay_notifier.send('v_mail', ARRAY['ann@example.org'], 'Cancel me', 'b') AS mine2 \gset
SELECT status, channel FROM pgrelay_notifier.get_status(:mine);
SELECT pgrelay_notifier.cancel(:mine2);
SELECT pgrelay_notifier.address_error('ann@example'), (pgrelay_notifier.parse_mailbox('Ann <ann@example.org>')).name;
RESET SESSION AUTHORIZATION;
SELECT created_by FROM pgrelay_notifier.notifications WHERE notification_id = :mine;
SET SESSION AUTHORIZATION regress_producer2;
SELECT pgrelay_notifier.send('v_mail', ARRAY['bob@example.org'], 'From producer 2', 'b') AS theirs \gset
-- another producer's notification looks exactly like one that does not exist (error)
SELECT regress_error(format('SELECT pgrelay_notifier.get_status(%s)', :mine));
SELECT regress_error(format('SELECT pgrelay_notifier.cancel(%s)', :mine));
SELECT regress_error('SELECT pgrelay_notifier.get_status(1)');
RESET SESSION AUTHORIZATION;
SELECT status FROM pgrelay_notifier.notifications WHERE notification_id = :mine;
-- recent_failures shows a producer its own failures only
SELECT pgrelay_notifier.set_status(:'mine', '{"outcome": "retrying", "error": "421 mine"}');
SELECT pgrelay_notifier.set_status(:'theirs', '{"outcome": "retrying", "error": "421 theirs"}');
SET SESSION AUTHORIZATION regress_producer;
SELECT last_error, created_by FROM pgrelay_notifier.recent_failures;
-- and nothing else: tables, secrets, profiles, channels, the Processor's functions, internals (error)
SELECT count(*) FROM pgrelay_notifier.notifications;
SELECT count(*) FROM pgrelay_notifier.recipients;
SELECT password FROM pgrelay_notifier.profile_secrets;
SELECT count(*) FROM pgrelay_notifier.profiles;
SELECT count(*) FROM pgrelay_notifier.profile_credentials;
SELECT count(*) FROM pgrelay_notifier.profile_summary;
SELECT pgrelay_notifier.fetch(:'mine', regress_event(:'mine'));
SELECT pgrelay_notifier.set_status(:'mine', '{"outcome": "sent"}');
SELECT pgrelay_notifier.create_profile('v_x', host => 'smtp.example.com');
SELECT pgrelay_notifier.alter_profile('v_main', debug => true);
SELECT pgrelay_notifier.drop_profile('v_main');
SELECT pgrelay_notifier.create_channel('v_x', 'v_main');
SELECT pgrelay_notifier.alter_channel('v_mail', active => false);
SELECT pgrelay_notifier.drop_channel('v_mail');
SELECT pgrelay_notifier.purge('1 day');
SELECT pgrelay_notifier.requeue(:mine);
SELECT pgrelay_notifier._profile_doc('v_main');
SELECT pgrelay.register('v_mail', active => false);
RESET SESSION AUTHORIZATION;

-- admin: sees and cancels anybody's notifications
SET SESSION AUTHORIZATION regress_admin;
SELECT status FROM pgrelay_notifier.get_status(:theirs);
SELECT last_error, created_by FROM pgrelay_notifier.recent_failures ORDER BY last_error;
SELECT pgrelay_notifier.cancel(:theirs);
SELECT (pgrelay_notifier.purge('1 day')).notifications;
RESET SESSION AUTHORIZATION;

-- processor: fetch() (secrets as stored) and set_status(), nothing else
SET SESSION AUTHORIZATION regress_processor;
SELECT pgrelay_notifier.fetch(:'mine', regress_event(:'mine')) -> 'profile' -> 'smtp' ->> 'password' AS password;
SELECT pgrelay_notifier.set_status(:'mine', '{"outcome": "sent"}');
-- (error)
SELECT pgrelay_notifier.send('v_mail', ARRAY['ann@example.org'], 's', 'b');
SELECT regress_error(format('SELECT pgrelay_notifier.get_status(%s)', :mine));
SELECT regress_error(format('SELECT pgrelay_notifier.cancel(%s)', :mine));
SELECT count(*) FROM pgrelay_notifier.notifications;
SELECT password FROM pgrelay_notifier.profile_secrets;
SELECT pgrelay_notifier.create_profile('v_x', host => 'smtp.example.com');
RESET SESSION AUTHORIZATION;

-- a role without membership gets nothing at all (error)
SET SESSION AUTHORIZATION regress_nobody;
SELECT pgrelay_notifier.address_error('ann@example.org');
SELECT pgrelay_notifier.send('v_mail', ARRAY['ann@example.org'], 's', 'b');
SELECT count(*) FROM pgrelay_notifier.recent_failures;
RESET SESSION AUTHORIZATION;

-- catalog checks: every SECURITY DEFINER function pins search_path; PUBLIC may execute or read nothing
SELECT p.oid::regprocedure AS definer_without_search_path
FROM pg_proc p
WHERE p.pronamespace = 'pgrelay_notifier'::regnamespace AND p.prosecdef
  AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%');
SELECT p.oid::regprocedure AS public_can_execute
FROM pg_proc p
WHERE p.pronamespace = 'pgrelay_notifier'::regnamespace AND has_function_privilege('public', p.oid, 'EXECUTE');
SELECT c.relname AS public_can_read
FROM pg_class c
WHERE c.relnamespace = 'pgrelay_notifier'::regnamespace AND c.relkind IN ('r', 'v')
  AND (has_table_privilege('public', c.oid, 'SELECT') OR has_table_privilege('public', c.oid, 'INSERT'));
SELECT has_schema_privilege('public', 'pgrelay_notifier', 'USAGE') AS public_schema_usage;

DELETE FROM pgrelay.queue;
DELETE FROM pgrelay_notifier.notifications;
SELECT pgrelay_notifier.drop_channel('v_mail');
SELECT pgrelay_notifier.drop_profile('v_main');
DROP ROLE regress_producer, regress_producer2, regress_admin, regress_processor, regress_nobody;
