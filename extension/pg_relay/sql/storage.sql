-- _queue_compact(): the queue's indexes are rebuilt once they are ten times the size of the queue's
-- table, which holds at most 1 MB, and at least min_size (10 MB by default).
-- (INDEX_CLEANUP ON: a VACUUM that finds dead rows on fewer than 2 % of the pages leaves them
-- marked in the table, without cleaning the indexes, and cannot truncate the table after them.)
\set SHOW_CONTEXT never
CREATE FUNCTION regress_compact_noop(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
SELECT channel FROM pgrelay.register('compact', 'sql', handler => 'regress_compact_noop(text)');
-- From indexes of a few pages (the tests before left theirs as large as their backlogs): with
-- min_size 0 and an empty, vacuumed table, any index is ten times its size.
VACUUM (INDEX_CLEANUP ON) pgrelay.queue;
SELECT pg_relation_size('pgrelay.queue') AS heap, pgrelay._queue_compact(0) AS rebuilt;
SELECT pg_indexes_size('pgrelay.queue') < 131072 AS indexes_small;
CREATE TEMP TABLE regress_sizes AS
SELECT pg_relation_filenode('pgrelay.queue_free_idx') AS filenode;
-- A backlog of 150,000 events, all finished but those on the table's page 150: vacuum can truncate
-- the table only after them, so it keeps 1.2 MB; its indexes are ten times that: kept.
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload)
SELECT n, 'compact', 'sql', 'event ' || n FROM generate_series(1, 150000) n;
DELETE FROM pgrelay.queue WHERE channel = 'compact' AND (ctid::text::point)[0] <> 150;
VACUUM (INDEX_CLEANUP ON) pgrelay.queue;
SELECT pg_relation_size('pgrelay.queue') > 1048576 AS heap_over_1mb,
       pg_indexes_size('pgrelay.queue') >= 10 * pg_relation_size('pgrelay.queue') AS indexes_ten_times,
       pgrelay._queue_compact(1048576) AS rebuilt;
-- those finished too: the table is given back, its index pages only emptied: rebuilt, down to a
-- few pages, in new files; once is enough
DELETE FROM pgrelay.queue WHERE channel = 'compact';
VACUUM (INDEX_CLEANUP ON) pgrelay.queue;
SELECT pg_relation_size('pgrelay.queue') AS heap, pg_indexes_size('pgrelay.queue') > 10485760 AS indexes_over_10mb;
SELECT pgrelay._queue_compact() AS rebuilt;
SELECT pg_indexes_size('pgrelay.queue') < 131072 AS indexes_small,
       pg_relation_filenode('pgrelay.queue_free_idx') <> s.filenode AS new_file
FROM regress_sizes s;
SELECT pgrelay._queue_compact(1048576) AS rebuilt_again;
-- A backlog of 20,000: indexes of about 3 MB, below the default min_size: kept; above 1 MB: rebuilt.
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload)
SELECT n, 'compact', 'sql', 'event ' || n FROM generate_series(1, 20000) n;
DELETE FROM pgrelay.queue WHERE channel = 'compact';
VACUUM (INDEX_CLEANUP ON) pgrelay.queue;
SELECT pg_indexes_size('pgrelay.queue') BETWEEN 1048576 AND 10485760 AS indexes_between,
       pgrelay._queue_compact() AS rebuilt;
SELECT pgrelay._queue_compact(1048576) AS rebuilt;
-- the queue works on: an event queued after the rebuild is offered and runs
SELECT pgrelay.notify('compact', 'after') IS NOT NULL AS queued;
SELECT r.outcome FROM pgrelay.queue_pending_ids() p CROSS JOIN LATERAL pgrelay.process_one(p.id) r
WHERE p.channel = 'compact';
SELECT count(*) AS left_queued FROM pgrelay.queue WHERE channel = 'compact';
-- bad input
SELECT pgrelay._queue_compact(-1);
SELECT pgrelay._queue_compact(NULL);
-- The report calls it, and its errors never cost the report (an event trigger refusing REINDEX on
-- PostgreSQL 17 and later, a full disk): a warning, and the report stands. Shown with a stand-in
-- that raises, then the function put back as it was.
CREATE TEMP TABLE regress_compact_def AS
SELECT pg_get_functiondef('pgrelay._queue_compact(bigint)'::regprocedure) AS def;
CREATE OR REPLACE FUNCTION pgrelay._queue_compact(min_size bigint DEFAULT 10485760) RETURNS boolean
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no REINDEX here' USING ERRCODE = 'insufficient_privilege'; END $$;
SELECT pgrelay._processor_report('host-c', 99, '9.9.9', 1, 0, now(), '10 seconds') AS reported;
SELECT count(*) AS reports FROM pgrelay.processors WHERE host = 'host-c' AND pid = 99;
SELECT pgrelay._processor_stop('host-c', 99) AS stopped;
DO $$ BEGIN EXECUTE (SELECT def FROM regress_compact_def); END $$;
SELECT p.prosecdef, p.proconfig FROM pg_proc p WHERE p.oid = 'pgrelay._queue_compact(bigint)'::regprocedure;
DROP TABLE regress_compact_def;
DROP TABLE regress_sizes;
SELECT pgrelay.unregister('compact');
DROP FUNCTION regress_compact_noop(text);
