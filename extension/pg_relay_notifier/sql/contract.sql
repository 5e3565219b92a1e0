-- The boundaries of docs/interface.md and the conventions of the extension, from the catalog
\set SHOW_CONTEXT never
SET intervalstyle = postgres;

-- the notifier never touches the event tables of pg_relay: no function body names them
SELECT p.oid::regprocedure AS touches_queue_or_log
FROM pg_proc p
WHERE p.pronamespace = 'pgrelay_notifier'::regnamespace
  AND p.prosrc ~* 'pgrelay"?\s*\.\s*"?(queue|log|failed_events)"?($|[^a-z0-9_])';
-- the pg_relay objects its function bodies name (calls, the read of pgrelay.channels, comments)
SELECT DISTINCT m[1] AS uses
FROM pg_proc p, regexp_matches(p.prosrc, '(pgrelay\.[a-z_]+)', 'g') m
WHERE p.pronamespace = 'pgrelay_notifier'::regnamespace
ORDER BY 1;
-- fetch and set_status: the signatures of interface version 1, SECURITY DEFINER, for the Processor only
SELECT p.oid::regprocedure AS function, pg_get_function_result(p.oid) AS result, p.prosecdef AS definer,
       p.proconfig AS settings
FROM pg_proc p
WHERE p.oid IN ('pgrelay_notifier.fetch(text, bigint)'::regprocedure, 'pgrelay_notifier.set_status(text, jsonb)'::regprocedure)
ORDER BY 1;
SELECT pgrelay.interface_version();
-- notification ids come from pgrelay._next_id()
SELECT pg_get_expr(d.adbin, d.adrelid) AS notification_id_default
FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
WHERE d.adrelid = 'pgrelay_notifier.notifications'::regclass AND a.attname = 'notification_id';
-- every function has a comment; every table and view too
SELECT p.oid::regprocedure AS function_without_comment
FROM pg_proc p
WHERE p.pronamespace = 'pgrelay_notifier'::regnamespace AND obj_description(p.oid, 'pg_proc') IS NULL;
SELECT c.relname AS relation_without_comment
FROM pg_class c
WHERE c.relnamespace = 'pgrelay_notifier'::regnamespace AND c.relkind IN ('r', 'v')
  AND obj_description(c.oid, 'pg_class') IS NULL;
-- pg_dump keeps the data of every table
SELECT c.relname AS table_not_dumped
FROM pg_class c
WHERE c.relnamespace = 'pgrelay_notifier'::regnamespace AND c.relkind = 'r'
  AND NOT c.oid = ANY ((SELECT extconfig FROM pg_extension WHERE extname = 'pg_relay_notifier')::oid[]);
-- the extension's objects belong to it, and it needs pg_relay
SELECT e.extname, e.extversion, n.nspname AS schema, e.extrelocatable,
       (SELECT array_agg(r.extname) FROM pg_depend d JOIN pg_extension r ON r.oid = d.refobjid
        WHERE d.classid = 'pg_extension'::regclass AND d.objid = e.oid AND d.deptype = 'n') AS requires
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'pg_relay_notifier';
-- pg_relay cannot be dropped from under the notifier (error)
DROP EXTENSION pg_relay;
-- nothing was left behind by the other tests
SELECT (SELECT count(*) FROM pgrelay_notifier.profiles) AS profiles,
       (SELECT count(*) FROM pgrelay_notifier.channels) AS channels,
       (SELECT count(*) FROM pgrelay_notifier.notifications) AS notifications,
       (SELECT count(*) FROM pgrelay.channels) AS relay_channels,
       (SELECT count(*) FROM pgrelay.queue) AS queued;
-- dropping and re-creating the extension works
DROP EXTENSION pg_relay_notifier;
CREATE EXTENSION pg_relay_notifier;
SELECT count(*) FROM pgrelay_notifier.profiles;
