-- watch_table() / unwatch_table(): table changes become events in the changing transaction
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
DELETE FROM pgrelay.queue;
CREATE FUNCTION regress_sink2(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
SELECT channel FROM pgrelay.register('w_orders', 'sql', handler => 'regress_sink2(text)');
CREATE TABLE regress_orders (id integer PRIMARY KEY, customer text, secret text, total numeric);

SELECT pgrelay.watch_table('regress_orders', 'w_orders') AS trigger_name;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'regress_orders'::regclass;

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

-- only the listed operations and columns; watching again replaces the trigger
SELECT pgrelay.watch_table('regress_orders', 'w_orders', operations => '{INSERT,delete}',
                           columns => '{id,total}') = pgrelay._watch_name('w_orders') AS same_trigger;
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
SELECT pgrelay.watch_table('pgrelay.log', 'w_orders');
SELECT pgrelay.watch_table(NULL, 'w_orders');
SELECT pgrelay.watch_table(424242, 'w_orders');
SELECT pgrelay.watch_table('regress_orders', E'w_orders\n\u202e');
SELECT pgrelay.watch_table('regress_orders', 'w_orders', columns => ARRAY[E'id\nx']);
SELECT pgrelay.unwatch_table(NULL, 'w_orders');
SELECT pgrelay.unwatch_table(424242, 'w_orders');

-- the caller must be able to read the table and put triggers on it: watching never shows a row
-- to someone who could not read it (error)
CREATE ROLE regress_watcher IN ROLE pgrelay_admin;
SET SESSION AUTHORIZATION regress_watcher;
SELECT pgrelay.watch_table('regress_orders', 'w_orders');
RESET SESSION AUTHORIZATION;
GRANT SELECT, TRIGGER ON regress_orders TO regress_watcher;
SET SESSION AUTHORIZATION regress_watcher;
SELECT pgrelay.watch_table('regress_orders', 'w_orders', columns => '{id}') IS NOT NULL AS watched;
RESET SESSION AUTHORIZATION;

-- a producer's change to a watched table queues the event without any right on pgrelay
CREATE ROLE regress_writer;
GRANT INSERT ON regress_orders TO regress_writer;
SET ROLE regress_writer;
INSERT INTO regress_orders VALUES (4, 'Dee', 'x', 1);
RESET ROLE;
SELECT payload::jsonb -> 'new' AS new FROM pgrelay.queue WHERE channel = 'w_orders';

-- unwatch_table removes the trigger; then changes queue nothing
SELECT pgrelay.unwatch_table('regress_orders', 'w_orders');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'regress_orders'::regclass;
INSERT INTO regress_orders VALUES (5, 'Eve', 'y', 2);
SELECT count(*) AS events_of_eve FROM pgrelay.queue WHERE channel = 'w_orders' AND payload LIKE '%"id": 5%';
SELECT pgrelay.unwatch_table('regress_orders', 'w_orders');

DELETE FROM pgrelay.queue;
DROP VIEW regress_orders_v;
DROP TABLE regress_orders;
DROP ROLE regress_watcher, regress_writer;
SELECT pgrelay.unregister('w_orders');
DROP FUNCTION regress_sink2(text);
