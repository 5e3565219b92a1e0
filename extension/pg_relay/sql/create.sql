CREATE EXTENSION pg_relay;
\set SHOW_CONTEXT never
SET intervalstyle = postgres;

-- the queue is vacuumed after every 1,000 dead rows, without autovacuum's cost delay
SELECT unnest(reloptions) AS queue_option FROM pg_class WHERE oid = 'pgrelay.queue'::regclass ORDER BY 1;
