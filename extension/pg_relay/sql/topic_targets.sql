-- topic targets: publish_many(), watch_table(topic => ...), schedule(topic => ...)
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
DELETE FROM pgrelay.queue;
CREATE TABLE regress_tt_calls (payload text);
CREATE FUNCTION regress_tt(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$
    INSERT INTO regress_tt_calls VALUES (payload) $$;
SELECT channel FROM pgrelay.register('tt_a', 'sql', handler => 'regress_tt(text)');
SELECT channel FROM pgrelay.register('tt_b', 'sql', handler => 'regress_tt(text)', max_payload_bytes => 200);
SELECT topic FROM pgrelay.create_topic('tt');
SELECT channel FROM pgrelay.subscribe('tt', 'tt_a');
SELECT channel FROM pgrelay.subscribe('tt', 'tt_b', '{"row.*",tick}');

-- publish_many: one publication per payload, ids in order, each delivery carrying its publication's
SELECT pgrelay.publish_many('tt', '{one,two,three}', 'tick') AS pubs \gset
SELECT cardinality(:'pubs'::bigint[]) AS n,
       (SELECT bool_and(p[i] < p[i + 1]) FROM generate_subscripts(:'pubs'::bigint[], 1) i,
                                              LATERAL (SELECT :'pubs'::bigint[] AS p) x WHERE i < 3) AS ascending;
SELECT payload, array_agg(channel ORDER BY channel) AS channels, count(DISTINCT publication_id) AS pubs,
       min(publication_id) = (:'pubs'::bigint[])[CASE payload WHEN 'one' THEN 1 WHEN 'two' THEN 2 ELSE 3 END] AS its_pub
FROM pgrelay.queue GROUP BY payload ORDER BY payload;
-- an array starting at another index is read by position
SELECT cardinality(pgrelay.publish_many('tt', '[0:1]={zero,one}', 'tick')) AS n;
-- all or nothing: the too-large payload 2 (tt_b takes 200 bytes) refuses the whole call, naming its position
SELECT count(*) AS before FROM pgrelay.queue \gset
SELECT pgrelay.publish_many('tt', ARRAY['fine', repeat('x', 201)], 'tick');
SELECT count(*) = :before AS nothing_queued FROM pgrelay.queue;
-- empty: nothing; bad arguments
SELECT pgrelay.publish_many('tt', '{}');
SELECT pgrelay.publish_many(NULL, '{x}');
SELECT pgrelay.publish_many('tt', NULL);
SELECT pgrelay.publish_many('tt', '{x,NULL}');
SELECT pgrelay.publish_many('tt', '{{x},{y}}');
SELECT pgrelay.publish_many('nope', '{x}');
SELECT pgrelay.publish_many('tt', '{x}', 'bad type');
SELECT pgrelay.publish_many('tt', '{x}', run_at => 'infinity');
DELETE FROM pgrelay.queue;

-- watch_table(topic => ...): each change is a publication of type event_type.operation
CREATE TABLE regress_tt_rows (id int PRIMARY KEY, v text);
SELECT pgrelay.watch_table('regress_tt_rows', topic => 'tt', event_type => 'row', operations => '{insert,update}') AS trig \gset
SELECT "table", channel, topic, event_type, operations, state FROM pgrelay.watched_tables;
INSERT INTO regress_tt_rows VALUES (1, 'a');
UPDATE regress_tt_rows SET v = 'b';
SELECT channel, publication_id IS NOT NULL AS published, payload::jsonb - 'txid' AS payload
FROM pgrelay.queue ORDER BY id;
SELECT count(DISTINCT publication_id) AS publications FROM pgrelay.queue;
-- watching again replaces the watch (one trigger, the new event type)
SELECT pgrelay.watch_table('regress_tt_rows', topic => 'tt', event_type => 'row2') = :'trig' AS same_trigger;
SELECT topic, event_type FROM pgrelay.watches;
-- a change no subscriber takes is refused with the change (tt_a takes all, so unsubscribe it first)
SELECT pgrelay.unsubscribe('tt', 'tt_a');
INSERT INTO regress_tt_rows VALUES (2, 'c');
SELECT channel FROM pgrelay.subscribe('tt', 'tt_a');
-- bad arguments
SELECT pgrelay.watch_table('regress_tt_rows');
SELECT pgrelay.watch_table('regress_tt_rows', 'tt_a', topic => 'tt');
SELECT pgrelay.watch_table('regress_tt_rows', 'tt_a', event_type => 'row');
SELECT pgrelay.watch_table('regress_tt_rows', topic => 'nope');
SELECT pgrelay.watch_table('regress_tt_rows', topic => 'tt', event_type => 'bad type');
SELECT pgrelay.watch_table('regress_tt_rows', topic => 'tt', event_type => repeat('x', 122));
-- a channel and a topic watch of one table stand side by side
SELECT pgrelay.watch_table('regress_tt_rows', 'tt_a', operations => '{delete}') IS NOT NULL AS watched;
SELECT count(*) AS watches FROM pgrelay.watches WHERE relid = 'regress_tt_rows'::regclass;
-- drop_topic refuses a watched topic
SELECT pgrelay.drop_topic('tt');
SELECT pgrelay.unwatch_table('regress_tt_rows', topic => 'nope');
SELECT pgrelay.unwatch_table('regress_tt_rows', 'tt_a', topic => 'tt');
SELECT pgrelay.unwatch_table('regress_tt_rows', topic => 'tt');
SELECT pgrelay.unwatch_table('regress_tt_rows', 'tt_a');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'regress_tt_rows'::regclass AND NOT tgisinternal;
DELETE FROM pgrelay.queue;

-- schedule(topic => ...): each occurrence is a publication; the run records the publication id
SELECT name, channel, topic, event_type FROM pgrelay.schedule('tt_tick', topic => 'tt', cron => '* * * * *',
                                                                  payload => 'tock', event_type => 'tick');
SELECT name, channel, topic, event_type FROM pgrelay.schedules;
SELECT outcome, event_id AS pub FROM pgrelay._schedule_fire(now() + interval '1 minute') \gset
SELECT :'outcome' AS outcome, array_agg(channel ORDER BY channel) AS channels,
       bool_and(publication_id = :pub) AS its_pub, bool_and(payload = 'tock') AS payloads
FROM pgrelay.queue;
SELECT event_id = :pub AS run_records_pub FROM pgrelay.schedule_runs WHERE schedule = 'tt_tick';
-- a publication refused when it fires is a failed run (tt_a, which takes every type, unsubscribed)
SELECT pgrelay.unsubscribe('tt', 'tt_a');
SELECT name FROM pgrelay.schedule('tt_tick', event_type => 'nobody');
SELECT outcome, event_id, reason FROM pgrelay._schedule_fire(now() + interval '2 minutes');
SELECT channel FROM pgrelay.subscribe('tt', 'tt_a');
-- moved to a channel and back: the other target is cleared
SELECT channel, topic, event_type FROM pgrelay.schedule('tt_tick', channel => 'tt_a');
SELECT channel, topic, event_type FROM pgrelay.schedule('tt_tick', topic => 'tt');
-- bad arguments
SELECT pgrelay.schedule('tt_new', topic => 'nope', cron => '* * * * *');
SELECT pgrelay.schedule('tt_new', channel => 'tt_a', topic => 'tt', cron => '* * * * *');
SELECT pgrelay.schedule('tt_new', channel => 'tt_a', cron => '* * * * *', event_type => 'x');
SELECT pgrelay.schedule('tt_tick', event_type => 'bad type');
SELECT pgrelay.schedule('tt_new', cron => '* * * * *');
-- drop_topic refuses a topic a schedule publishes on
SELECT pgrelay.drop_topic('tt');
SELECT pgrelay.unschedule('tt_tick');

DELETE FROM pgrelay.queue;
SELECT pgrelay.drop_topic('tt');
SELECT pgrelay.unregister('tt_a');
SELECT pgrelay.unregister('tt_b');
DROP TABLE regress_tt_rows, regress_tt_calls;
DROP FUNCTION regress_tt(text);
