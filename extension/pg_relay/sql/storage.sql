-- _queue_compact(): the queue's indexes are rebuilt once they are ten times the size of the rows
-- left in the queue (whose heap holds at most 1 MB), and of at least min_size (10 MB by default).
\set SHOW_CONTEXT never
CREATE FUNCTION regress_compact_noop(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
SELECT channel FROM pgrelay.register('compact', 'sql', handler => 'regress_compact_noop(text)');
-- from indexes of a few pages (the tests before left theirs as large as their backlogs)
VACUUM pgrelay.queue;
SELECT pgrelay._queue_compact(0) IS NOT NULL AS started;
SELECT pg_indexes_size('pgrelay.queue') < 131072 AS indexes_small;
CREATE TEMP TABLE regress_sizes AS
SELECT pg_relation_filenode('pgrelay.queue_free_idx') AS filenode;
-- a backlog of 20,000 events: the heap is larger than 1 MB, nothing is rebuilt
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload)
SELECT n, 'compact', 'sql', 'event ' || n FROM generate_series(1, 20000) n;
SELECT pg_relation_size('pgrelay.queue') > 1048576 AS heap_large,
       pg_indexes_size('pgrelay.queue') > 1048576 AS indexes_large,
       pgrelay._queue_compact(1048576) AS rebuilt;
-- finished and vacuumed: the heap is given back, the index pages only emptied
DELETE FROM pgrelay.queue WHERE channel = 'compact';
VACUUM pgrelay.queue;
SELECT pg_relation_size('pgrelay.queue') AS heap, pg_indexes_size('pgrelay.queue') > 1048576 AS indexes_large;
-- below min_size (10 MB by default): kept
SELECT pgrelay._queue_compact() AS rebuilt;
-- above it: rebuilt, down to a few pages; once is enough
SELECT pgrelay._queue_compact(1048576) AS rebuilt;
SELECT pg_indexes_size('pgrelay.queue') < 131072 AS indexes_small,
       pg_relation_filenode('pgrelay.queue_free_idx') <> s.filenode AS new_file
FROM regress_sizes s;
SELECT pgrelay._queue_compact(0) AS rebuilt_again_with_min_0, pgrelay._queue_compact(1048576) AS rebuilt_again;
-- the queue still works: an event queued and dispatched after the rebuild
SELECT pgrelay.notify('compact', 'after') IS NOT NULL AS queued;
SELECT count(*) FROM pgrelay.queue_pending_ids() WHERE channel = 'compact';
DELETE FROM pgrelay.queue WHERE channel = 'compact';
-- bad input
SELECT pgrelay._queue_compact(-1);
SELECT pgrelay._queue_compact(NULL);
DROP TABLE regress_sizes;
SELECT pgrelay.unregister('compact');
DROP FUNCTION regress_compact_noop(text);
