-- watch_table() / unwatch_table(): table changes become events in the changing transaction, read
-- with the rights of the role that watches
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
DELETE FROM pgrelay.queue;
CREATE FUNCTION regress_sink2(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
SELECT channel FROM pgrelay.register('w_orders', 'sql', handler => 'regress_sink2(text)');
CREATE TABLE regress_orders (id integer PRIMARY KEY, customer text, secret text, total numeric);
-- trigger names carry an id: shown as N
CREATE FUNCTION regress_masked(t text) RETURNS text LANGUAGE sql AS $$ SELECT regexp_replace(t, '[0-9]{6,}', 'N', 'g') $$;

SELECT regress_masked(pgrelay.watch_table('regress_orders', 'w_orders')) AS trigger_name;
SELECT regress_masked(tgname) AS tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'regress_orders'::regclass;
SELECT "table", channel, watcher, operations, columns, state, readable_columns FROM pgrelay.watched_tables;

-- insert, update, delete: one event each, with the old and new rows, the txid and the event id
BEGIN;
INSERT INTO regress_orders VALUES (1, 'Ann', 's3', 42.5);
SELECT txid_current() AS txid \gset
COMMIT;
UPDATE regress_orders SET total = 50 WHERE id = 1;
DELETE FROM regress_orders WHERE id = 1;
SELECT p ->> 'operation' AS operation, p ->> 'schema' AS schema, p ->> 'table' AS "table",
       p -> 'old' AS old, p -> 'new' AS new,
       (p ->> 'event_id')::bigint = q.event_id AS event_id_is_the_event
FROM pgrelay.queue q, LATERAL (SELECT q.payload::jsonb AS p) x
WHERE q.channel = 'w_orders' ORDER BY q.id;
SELECT (payload::jsonb ->> 'txid')::bigint = :txid AS txid_of_the_insert
FROM pgrelay.queue WHERE channel = 'w_orders' ORDER BY id LIMIT 1;

-- a rolled-back change queues nothing
DELETE FROM pgrelay.queue;
BEGIN;
INSERT INTO regress_orders VALUES (2, 'Bob', 's4', 1);
ROLLBACK;
SELECT count(*) AS after_rollback FROM pgrelay.queue WHERE channel = 'w_orders';

-- only the listed operations and columns; watching again replaces the watch, same trigger
SELECT tgname AS first_name FROM pg_trigger WHERE tgrelid = 'regress_orders'::regclass \gset
SELECT pgrelay.watch_table('regress_orders', 'w_orders', operations => '{INSERT,delete}',
                           columns => '{id,total}') = :'first_name' AS same_trigger;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'regress_orders'::regclass;
INSERT INTO regress_orders VALUES (3, 'Cid', 'hidden', 7);
UPDATE regress_orders SET total = 8 WHERE id = 3;
DELETE FROM regress_orders WHERE id = 3;
SELECT payload::jsonb ->> 'operation' AS operation, payload::jsonb -> 'old' AS old, payload::jsonb -> 'new' AS new
FROM pgrelay.queue WHERE channel = 'w_orders' ORDER BY id;
DELETE FROM pgrelay.queue;

-- errors: not a table, a column it lacks, bad operations, an unknown channel, pg_relay's own tables
CREATE VIEW regress_orders_v AS SELECT * FROM regress_orders;
SELECT pgrelay.watch_table('regress_orders_v', 'w_orders');
SELECT pgrelay.watch_table('regress_orders', 'w_orders', columns => '{id,nonesuch}');
SELECT pgrelay.watch_table('regress_orders', 'w_orders', columns => '{}');
SELECT pgrelay.watch_table('regress_orders', 'w_orders', operations => '{truncate}');
SELECT pgrelay.watch_table('regress_orders', 'w_orders', operations => '{}');
SELECT pgrelay.watch_table('regress_orders', 'w_nonesuch');
-- an email channel takes notification ids, not the JSON of a change
SELECT channel FROM pgrelay.register('w_mail', 'notify');
SELECT pgrelay.watch_table('regress_orders', 'w_mail');
SELECT pgrelay.unregister('w_mail');
SELECT pgrelay.watch_table('pgrelay.log', 'w_orders');
SELECT pgrelay.watch_table(NULL, 'w_orders');
SELECT pgrelay.watch_table(424242, 'w_orders');
SELECT pgrelay.watch_table('regress_orders', E'w_orders\n\u202e');
SELECT pgrelay.watch_table('regress_orders', 'w_orders', columns => ARRAY[E'id\nx']);
SELECT pgrelay.unwatch_table(NULL, 'w_orders');
SELECT pgrelay.unwatch_table(424242, 'w_orders');
-- a watched channel cannot be dropped (error)
SELECT pgrelay.unregister('w_orders');

-- the watcher must be able to put triggers on the table and read what it watches (error)
CREATE ROLE regress_watcher IN ROLE pgrelay_admin;
SET SESSION AUTHORIZATION regress_watcher;
SELECT pgrelay.watch_table('regress_orders', 'w_orders');
RESET SESSION AUTHORIZATION;
GRANT TRIGGER ON regress_orders TO regress_watcher;
GRANT SELECT (id, total) ON regress_orders TO regress_watcher;
SET SESSION AUTHORIZATION regress_watcher;
SELECT pgrelay.watch_table('regress_orders', 'w_orders');
SELECT pgrelay.watch_table('regress_orders', 'w_orders', columns => '{id,secret}');
SELECT pgrelay.watch_table('regress_orders', 'w_orders', columns => '{id,total}') IS NOT NULL AS watched;
RESET SESSION AUTHORIZATION;
SELECT watcher, columns, state, readable_columns FROM pgrelay.watched_tables;

-- a writer's change queues the event without any right on pgrelay
CREATE ROLE regress_writer;
GRANT INSERT, UPDATE, DELETE ON regress_orders TO regress_writer;
SET ROLE regress_writer;
INSERT INTO regress_orders VALUES (4, 'Dee', 'x', 1);
RESET ROLE;
SELECT payload::jsonb -> 'new' AS new FROM pgrelay.queue WHERE channel = 'w_orders';
DELETE FROM pgrelay.queue;

-- each change is read with the watcher's rights as they are then: a revoked column leaves the
-- payload, a revoked table queues nothing, a grant brings them back
REVOKE SELECT (total) ON regress_orders FROM regress_watcher;
INSERT INTO regress_orders VALUES (5, 'Eve', 'y', 2);
SELECT payload::jsonb -> 'new' AS new FROM pgrelay.queue WHERE channel = 'w_orders';
DELETE FROM pgrelay.queue;
REVOKE SELECT ON regress_orders FROM regress_watcher;
SELECT state, readable_columns FROM pgrelay.watched_tables;
INSERT INTO regress_orders VALUES (6, 'Fay', 'z', 3);
SELECT count(*) AS queued_without_rights FROM pgrelay.queue WHERE channel = 'w_orders';
GRANT SELECT ON regress_orders TO regress_watcher;
INSERT INTO regress_orders VALUES (7, 'Gus', 'w', 4);
SELECT payload::jsonb -> 'new' AS new FROM pgrelay.queue WHERE channel = 'w_orders';
DELETE FROM pgrelay.queue;

-- row-level security: a policy that would hide rows from the watcher stops the watch at once
-- (which rows it would show cannot be told from a trigger); watch_table() refuses such a table
-- (error); a role that row security does not bind (BYPASSRLS, or the table's owner) may watch it
ALTER TABLE regress_orders ENABLE ROW LEVEL SECURITY;
CREATE POLICY regress_mine ON regress_orders FOR SELECT USING (customer = current_user);
CREATE POLICY regress_write ON regress_orders FOR INSERT TO regress_writer WITH CHECK (true);
SELECT state FROM pgrelay.watched_tables;
SET ROLE regress_writer;
INSERT INTO regress_orders VALUES (8, 'regress_watcher', 'v', 5);
RESET ROLE;
SELECT count(*) AS queued_under_rls FROM pgrelay.queue WHERE channel = 'w_orders';
SET SESSION AUTHORIZATION regress_watcher;
SELECT pgrelay.watch_table('regress_orders', 'w_orders', columns => '{id}');
RESET SESSION AUTHORIZATION;
SELECT count(*) AS still_one_watch FROM pgrelay.watches;
ALTER ROLE regress_watcher BYPASSRLS;
SELECT state FROM pgrelay.watched_tables;
ALTER ROLE regress_watcher NOBYPASSRLS;
ALTER TABLE regress_orders DISABLE ROW LEVEL SECURITY;
DROP POLICY regress_mine ON regress_orders;
DROP POLICY regress_write ON regress_orders;
SELECT state FROM pgrelay.watched_tables;

-- unwatch_table removes the trigger and the watch; then changes queue nothing
SELECT pgrelay.unwatch_table('regress_orders', 'w_orders');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'regress_orders'::regclass;
SELECT count(*) AS watches FROM pgrelay.watches;
INSERT INTO regress_orders VALUES (9, 'Hal', 'u', 6);
SELECT count(*) AS events_of_hal FROM pgrelay.queue WHERE channel = 'w_orders';
SELECT pgrelay.unwatch_table('regress_orders', 'w_orders');

-- two channels whose names the old trigger names could not tell apart: each has its own watch
SELECT (pgrelay.register(c, 'sql', handler => 'regress_sink2(text)')).channel
FROM unnest(ARRAY['wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww_1dafb', 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww_3791a']) c;
SELECT left(md5('wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww_1dafb'), 8) = left(md5('wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww_3791a'), 8)
       AS same_digest_prefix;
SELECT pgrelay.watch_table('regress_orders', 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww_1dafb') <>
       pgrelay.watch_table('regress_orders', 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww_3791a') AS two_triggers;
SELECT pgrelay.unwatch_table('regress_orders', 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww_3791a');
INSERT INTO regress_orders VALUES (10, 'Ida', 't', 7);
SELECT channel FROM pgrelay.queue;
SELECT pgrelay.unwatch_table('regress_orders', 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww_1dafb');
DELETE FROM pgrelay.queue;
SELECT pgrelay.unregister(c)
FROM unnest(ARRAY['wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww_1dafb', 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww_3791a']) c;

-- a watched partitioned table: its owner (no superuser) can still add partitions, created or
-- attached, and their rows are watched
CREATE ROLE regress_tab_owner;
GRANT CREATE ON SCHEMA public TO regress_tab_owner;
SET ROLE regress_tab_owner;
CREATE TABLE regress_parts (day date, n int) PARTITION BY RANGE (day);
CREATE TABLE regress_parts_1 PARTITION OF regress_parts FOR VALUES FROM ('2026-01-01') TO ('2026-02-01');
RESET ROLE;
SELECT regress_masked(pgrelay.watch_table('regress_parts', 'w_orders', operations => '{insert}')) AS trigger_name;
SET ROLE regress_tab_owner;
CREATE TABLE regress_parts_2 PARTITION OF regress_parts FOR VALUES FROM ('2026-02-01') TO ('2026-03-01');
CREATE TABLE regress_parts_3 (day date, n int);
ALTER TABLE regress_parts ATTACH PARTITION regress_parts_3 FOR VALUES FROM ('2026-03-01') TO ('2026-04-01');
INSERT INTO regress_parts VALUES ('2026-01-05', 1), ('2026-02-05', 2), ('2026-03-05', 3);
RESET ROLE;
SELECT payload::jsonb ->> 'table' AS "table", payload::jsonb -> 'new' ->> 'n' AS n
FROM pgrelay.queue WHERE channel = 'w_orders' ORDER BY id;
-- a partition of a watched table is not watched twice for the channel (error)
SELECT pgrelay.watch_table('regress_parts_2', 'w_orders');
SELECT pgrelay.unwatch_table('regress_parts', 'w_orders');
SELECT count(*) AS triggers_left FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE c.relname LIKE 'regress_parts%' AND t.tgfoid = 'pgrelay._watch_trigger'::regproc;
DELETE FROM pgrelay.queue;

-- a trigger on _watch_trigger() that watch_table() did not make queues nothing: the change fails
-- with the reason (EXECUTE on the trigger function is PUBLIC, for partitions; a producer has
-- USAGE on the schema)
GRANT pgrelay_producer TO regress_tab_owner;
SET ROLE regress_tab_owner;
CREATE TABLE regress_forged (x int);
CREATE TRIGGER forged AFTER INSERT ON regress_forged FOR EACH ROW EXECUTE FUNCTION pgrelay._watch_trigger('w_orders');
INSERT INTO regress_forged VALUES (1);
DROP TABLE regress_forged;
RESET ROLE;
REVOKE pgrelay_producer FROM regress_tab_owner;
SELECT count(*) AS forged_events FROM pgrelay.queue;

-- a cast to json that to_jsonb() would run for the row's types, owned by a role that is no
-- superuser: the change fails with the reason; a cast for a type the row does not use changes
-- nothing
CREATE ROLE regress_caster;
GRANT CREATE ON SCHEMA public TO regress_caster;
SET ROLE regress_caster;
CREATE TYPE regress_mood AS ENUM ('ok', 'sad');
CREATE TYPE regress_other AS ENUM ('x');
CREATE FUNCTION regress_mood_json(regress_mood) RETURNS json LANGUAGE sql AS $$ SELECT '"cast ran"'::json $$;
CREATE FUNCTION regress_other_json(regress_other) RETURNS json LANGUAGE sql AS $$ SELECT '"cast ran"'::json $$;
CREATE CAST (regress_other AS json) WITH FUNCTION regress_other_json(regress_other);
RESET ROLE;
CREATE TABLE regress_moods (id int, mood regress_mood[]);
SELECT regress_masked(pgrelay.watch_table('regress_moods', 'w_orders')) AS trigger_name;
INSERT INTO regress_moods VALUES (1, '{ok}');
SELECT payload::jsonb -> 'new' AS new FROM pgrelay.queue WHERE channel = 'w_orders';
SET ROLE regress_caster;
CREATE CAST (regress_mood AS json) WITH FUNCTION regress_mood_json(regress_mood);
RESET ROLE;
INSERT INTO regress_moods VALUES (2, '{sad}');
INSERT INTO regress_orders VALUES (11, 'Jo', 's', 8);
SELECT count(*) AS events FROM pgrelay.queue WHERE channel = 'w_orders';
-- a dropped table's watch shows as such, and leaves with its channel
DROP TABLE regress_moods;
SELECT state FROM pgrelay.watched_tables;
DROP CAST (regress_mood AS json);
DROP CAST (regress_other AS json);
DROP FUNCTION regress_mood_json(regress_mood), regress_other_json(regress_other);
DROP TYPE regress_mood, regress_other;
REVOKE CREATE ON SCHEMA public FROM regress_caster, regress_tab_owner;

DELETE FROM pgrelay.queue;
DROP VIEW regress_orders_v;
DROP TABLE regress_orders, regress_parts;
DROP ROLE regress_watcher, regress_writer, regress_tab_owner, regress_caster;
SELECT pgrelay.unregister('w_orders');
SELECT count(*) AS watches_left FROM pgrelay.watches;
DROP FUNCTION regress_sink2(text), regress_masked(text);
