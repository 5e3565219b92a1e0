-- roles: producer, processor, admin; PUBLIC gets nothing
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
CREATE ROLE regress_producer IN ROLE pgrelay_producer;
CREATE ROLE regress_processor IN ROLE pgrelay_processor;
CREATE ROLE regress_admin IN ROLE pgrelay_admin;
CREATE ROLE regress_nobody;
CREATE TABLE regress_done (payload text);
GRANT INSERT ON regress_done TO pgrelay_processor;
CREATE FUNCTION regress_record(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$
    INSERT INTO regress_done VALUES (payload) $$;
DELETE FROM pgrelay.queue;

-- admin: registers channels, reads everything, pauses
SET ROLE regress_admin;
SELECT channel FROM pgrelay.register('s_jobs', 'sql', handler => 'regress_record(text)');
SELECT pgrelay.pause(), pgrelay.resume();
SELECT count(*) FROM pgrelay.channels WHERE channel = 's_jobs';
SELECT count(*) >= 0 AS can_read FROM pgrelay.log;
-- but does not queue events or run them, and cannot write the tables directly (error)
SELECT pgrelay.notify('s_jobs', 'x');
SELECT * FROM pgrelay.process_one(1);
DELETE FROM pgrelay.queue;
UPDATE pgrelay.channels SET active = false;
RESET ROLE;

-- producer: may notify
SET ROLE regress_producer;
SELECT pgrelay.notify('s_jobs', 'from producer') AS id \gset
-- and nothing else (error)
SELECT count(*) FROM pgrelay.queue;
SELECT count(*) FROM pgrelay.log;
SELECT count(*) FROM pgrelay.channels;
UPDATE pgrelay.channels SET active = false;
DELETE FROM pgrelay.queue;
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload) VALUES (0, 's_jobs', 'sql', 'x');
SELECT pgrelay.register('s_jobs', active => false);
SELECT * FROM pgrelay.queue_pending_ids();
SELECT * FROM pgrelay.process_one(:id);
SELECT pgrelay.pause();
SELECT pgrelay._next_id();
RESET ROLE;

-- processor: runs the dispatch functions; the handler runs with the processor's privileges
SET ROLE regress_processor;
SELECT has_work FROM pgrelay.queue_probe();
SELECT p.outcome FROM pgrelay.queue_pending_ids() q, pgrelay.process_one(q.id) p;
-- but cannot read or change the tables, register or queue (error)
SELECT count(*) FROM pgrelay.queue;
SELECT count(*) FROM pgrelay.log;
SELECT pgrelay.register('s_jobs', active => false);
SELECT pgrelay.notify('s_jobs', 'x');
RESET ROLE;
SELECT payload FROM regress_done;

-- a role without membership gets nothing at all (error)
SET ROLE regress_nobody;
SELECT pgrelay.notify('s_jobs', 'x');
SELECT pgrelay.queue_has_work();
SELECT count(*) FROM pgrelay.queue_depth;
RESET ROLE;

-- catalog checks: every SECURITY DEFINER function pins search_path; PUBLIC may execute none
SELECT p.oid::regprocedure AS definer_without_search_path
FROM pg_proc p
WHERE p.pronamespace = 'pgrelay'::regnamespace AND p.prosecdef
  AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%');
SELECT p.oid::regprocedure AS public_can_execute
FROM pg_proc p
WHERE p.pronamespace = 'pgrelay'::regnamespace
  AND has_function_privilege('public', p.oid, 'EXECUTE');
SELECT c.relname AS public_can_read
FROM pg_class c
WHERE c.relnamespace = 'pgrelay'::regnamespace AND c.relkind IN ('r', 'v', 'S')
  AND (has_table_privilege('public', c.oid, 'SELECT') OR has_table_privilege('public', c.oid, 'INSERT'));
SELECT has_schema_privilege('public', 'pgrelay', 'USAGE') AS public_schema_usage;

DROP FUNCTION regress_record(text);
DELETE FROM pgrelay.channels WHERE channel = 's_jobs';
DROP TABLE regress_done;
DROP ROLE regress_producer, regress_processor, regress_admin, regress_nobody;
