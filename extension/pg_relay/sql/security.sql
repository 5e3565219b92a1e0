-- What no role can do through pg_relay: run code as the Processor, change the session of the events
-- that follow, or slip values past the checks.
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
DELETE FROM pgrelay.queue;
CREATE ROLE regress_owner;
CREATE ROLE regress_proc IN ROLE pgrelay_processor;
CREATE ROLE regress_admin2 IN ROLE pgrelay_admin;
CREATE SCHEMA regress_app AUTHORIZATION regress_owner;
GRANT USAGE ON SCHEMA regress_app TO PUBLIC;
CREATE TABLE regress_app.seen (payload text, who name, path text, leader text);
ALTER TABLE regress_app.seen OWNER TO regress_owner;

-- Every function any role may execute is immune to the caller's search_path: it pins its own.
-- process_one and process_batch pin it in their bodies (they must read the caller's first, to give
-- it back); _settings_saved and _settings_restore, which they call before the pin and after RESET
-- ALL, name the schema of all they call instead (below), and so do _run_handler, which they call
-- once per event (a SET clause would cost a tenth of the event), and register, which looks the
-- handler up on the caller's path on purpose, as a cast in the caller's statement would.
SELECT p.oid::regprocedure AS unpinned_entry_point
FROM pg_proc p
WHERE p.pronamespace = 'pgrelay'::regnamespace
  AND EXISTS (SELECT 1 FROM aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a
              WHERE a.grantee <> p.proowner AND a.privilege_type = 'EXECUTE')
  AND NOT COALESCE('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false)
  AND p.oid NOT IN ('pgrelay.process_one(bigint)'::regprocedure, 'pgrelay.process_batch(bigint[])'::regprocedure,
                    'pgrelay._settings_saved()'::regprocedure, 'pgrelay._settings_restore(text[])'::regprocedure,
                    'pgrelay._run_handler(text, oid, text, text, interval, timestamptz, interval, boolean)'::regprocedure,
                    'pgrelay.register(text, text, text, text, boolean, integer, interval, interval, interval, boolean,'
                    ' text, integer, text, boolean, boolean, jsonb)'::regprocedure)
ORDER BY 1;

-- A handler must be SECURITY DEFINER: it runs with its owner's rights, never the Processor's (error)
SET ROLE regress_owner;
CREATE FUNCTION regress_app.invoker(payload text) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION regress_app.handler(payload text) RETURNS void SECURITY DEFINER
SET search_path = regress_app, pg_catalog LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO seen VALUES (payload, current_user, current_setting('search_path'),
                             current_setting('pg_relay.is_leader', true));
    -- everything a handler could do to the session it runs in
    PERFORM set_config('search_path', 'regress_app, public', false),
            set_config('pg_relay.is_leader', 'on', false),
            set_config('pg_relay.mode', 'leader', false),
            set_config('statement_timeout', '0', false),
            set_config('work_mem', '77MB', false),
            set_config('TimeZone', 'Asia/Tokyo', false);
END
$$;
GRANT EXECUTE ON FUNCTION regress_app.invoker(text), regress_app.handler(text) TO pgrelay_processor, regress_admin2;
RESET ROLE;
SELECT pgrelay.register('s_invoker', 'sql', handler => 'regress_app.invoker(text)');
-- the registering role must be able to run the handler itself (error)
REVOKE EXECUTE ON FUNCTION regress_app.handler(text) FROM PUBLIC, regress_admin2;
SET SESSION AUTHORIZATION regress_admin2;
SELECT pgrelay.register('s_sec', 'sql', handler => 'regress_app.handler(text)');
RESET SESSION AUTHORIZATION;
GRANT EXECUTE ON FUNCTION regress_app.handler(text) TO regress_admin2;
SET SESSION AUTHORIZATION regress_admin2;
SELECT channel, handler FROM pgrelay.register('s_sec', 'sql', handler => 'regress_app.handler(text)');
RESET SESSION AUTHORIZATION;

-- The handler runs as its owner, with its own search_path; whatever it sets is gone afterwards.
SET statement_timeout = '40s';
SET work_mem = '5MB';
SET TimeZone = 'UTC';
SELECT set_config('pg_relay.is_leader', 'off', false), set_config('pg_relay.mode', 'single', false);
SELECT pgrelay.notify('s_sec', 'one') AS id \gset
SET ROLE regress_proc;
SELECT outcome, error FROM pgrelay.process_one(:id);
RESET ROLE;
SELECT payload, who, path, leader FROM regress_app.seen;
SELECT current_setting('search_path') AS search_path, current_setting('statement_timeout') AS statement_timeout,
       current_setting('work_mem') AS work_mem_reset, current_setting('TimeZone') AS timezone,
       current_setting('pg_relay.is_leader') AS is_leader, current_setting('pg_relay.mode') AS mode;
-- so the next event starts from the same state
SELECT pgrelay.notify('s_sec', 'two') AS id \gset
SET ROLE regress_proc;
SELECT outcome FROM pgrelay.process_one(:id);
RESET ROLE;
SELECT payload, who, path, leader FROM regress_app.seen ORDER BY payload;
-- and so does each event of a batch: the second handler starts from the state the first found,
-- and the session is as it was afterwards
SELECT set_config('pg_relay.is_leader', 'off', false);
SELECT pgrelay.notify('s_sec', 'batch 1') AS b1, pgrelay.notify('s_sec', 'batch 2') AS b2 \gset
SET statement_timeout = '70s';
SET ROLE regress_proc;
SELECT outcome, error FROM pgrelay.process_batch(ARRAY[:b1, :b2]);
RESET ROLE;
SELECT payload, who, path, leader FROM regress_app.seen WHERE payload LIKE 'batch%' ORDER BY payload;
SELECT current_setting('search_path') AS search_path, current_setting('statement_timeout') AS statement_timeout,
       current_setting('work_mem') AS work_mem_reset, current_setting('TimeZone') AS timezone,
       current_setting('pg_relay.is_leader') AS is_leader, current_setting('pg_relay.mode') AS mode;
RESET statement_timeout;
RESET TimeZone;

-- The owner turns the handler into SECURITY INVOKER after registration: its events fail with a
-- clear error instead of running as the Processor.
ALTER FUNCTION regress_app.handler(text) SECURITY INVOKER;
SELECT pgrelay.notify('s_sec', 'three') AS id \gset
SET ROLE regress_proc;
SELECT outcome, error FROM pgrelay.process_one(:id);
RESET ROLE;
SELECT sqlstate, pgrelay.error_kind(sqlstate) FROM pgrelay.log WHERE payload = 'three';
SELECT count(*) AS ran FROM regress_app.seen WHERE payload = 'three';
ALTER FUNCTION regress_app.handler(text) SECURITY DEFINER;
DELETE FROM pgrelay.queue;

-- Look-alike operators in a schema on the caller's search_path never run: not in the functions the
-- Processor calls, not in process_one before it pins its path.
CREATE TABLE public.regress_trap (fired text);
GRANT INSERT ON public.regress_trap TO PUBLIC;
CREATE FUNCTION public.regress_trap_eq(a oid, b regprocedure) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.regress_trap VALUES ('oid = regprocedure'); RETURN a = b::oid; END $$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regprocedure, FUNCTION = public.regress_trap_eq);
CREATE FUNCTION public.regress_trap_ne(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.regress_trap VALUES ('text <> text'); RETURN a OPERATOR(pg_catalog.<>) b; END $$;
CREATE OPERATOR public.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = public.regress_trap_ne);
-- and look-alikes of what process_one and process_batch call before the pin (_settings_saved)
CREATE FUNCTION public.current_setting(text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.regress_trap VALUES ('current_setting()'); RETURN pg_catalog.current_setting($1); END $$;
CREATE FUNCTION public.current_setting(text, boolean) RETURNS text LANGUAGE plpgsql AS $$
BEGIN INSERT INTO public.regress_trap VALUES ('current_setting(, missing_ok)'); RETURN pg_catalog.current_setting($1, $2); END $$;
SELECT pgrelay.notify('s_sec', 'four') AS id \gset
SELECT pgrelay.notify('s_sec', 'five') AS id5 \gset
SET ROLE regress_proc;
SET search_path = public, pg_catalog;
SELECT count(*) >= 0 AS probed FROM pgrelay.queue_probe();
SELECT outcome FROM pgrelay.process_one(:id);
SELECT count(*) FROM pgrelay.queue_pending_ids();
SELECT count(*) FROM pgrelay._queue_fetch(10);
SELECT outcome FROM pgrelay.process_batch(ARRAY[:id5]);
RESET search_path;
RESET ROLE;
SELECT count(*) AS trap_fired FROM public.regress_trap;
DROP OPERATOR public.= (oid, regprocedure);
DROP OPERATOR public.<> (text, text);
DROP FUNCTION public.current_setting(text), public.current_setting(text, boolean);

-- The session's settings are saved and put back by two SQL functions that the planner inlines
-- into process_one and process_batch: a SET clause (or anything else that stops the inlining)
-- would hide the caller's search_path from _settings_saved, undo the pin of _settings_restore on
-- return, and cost a function call per event.
CREATE FUNCTION regress_plan_calls(query text, fn text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || query LOOP
        IF strpos(line, fn) > 0 THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END
$$;
SELECT regress_plan_calls('SELECT pgrelay._settings_saved()', '_settings_saved') AS saved_called,
       regress_plan_calls('SELECT pgrelay._settings_restore(''{}'')', '_settings_restore') AS restore_called,
       regress_plan_calls('SELECT pgrelay._settings_restore(''{}'')', 'set_config') AS restore_sets;
DROP FUNCTION regress_plan_calls(text, text);
SELECT proname, proconfig, prosecdef FROM pg_proc
WHERE oid IN ('pgrelay._settings_saved()'::regprocedure, 'pgrelay._settings_restore(text[])'::regprocedure)
ORDER BY 1;
-- What they save comes back after RESET ALL; the pin lasts until the transaction ends, the rest
-- for the session; unset pg_relay.* settings come back empty
SET statement_timeout = '41s';
SET TimeZone = 'America/Santiago';
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'iso_8601';
SET client_connection_check_interval = '3s';
SET search_path = public, regress_app;
SELECT set_config('pg_relay.mode', 'multi', false), set_config('pg_relay.is_leader', 'on', false);
SELECT pgrelay._settings_saved() AS saved \gset
SELECT :'saved';
BEGIN;
RESET ALL;
SELECT pgrelay._settings_restore(:'saved') AS pinned;
SELECT current_setting('search_path') AS search_path, current_setting('statement_timeout') AS statement_timeout,
       current_setting('TimeZone') AS timezone, current_setting('DateStyle') AS datestyle,
       current_setting('IntervalStyle') AS intervalstyle,
       current_setting('client_connection_check_interval') AS check_interval,
       current_setting('pg_relay.mode') AS mode, current_setting('pg_relay.is_leader') AS is_leader;
COMMIT;
SELECT current_setting('search_path') AS search_path_after_commit, current_setting('TimeZone') AS timezone;
RESET ALL;
-- (an empty array: every setting reset, the pg_relay.* ones empty)
SELECT pgrelay._settings_restore('{}') AS pinned;
SELECT current_setting('pg_relay.mode') AS mode, current_setting('pg_relay.is_leader') AS is_leader;
RESET ALL;
-- Every setting put back is set for the session again, also one that RESET ALL brought back to
-- its saved value: a value from the server's configuration would follow the next reload, and
-- the Processor does not send statement_timeout again while it believes it set
SELECT pgrelay._settings_saved() AS saved \gset
BEGIN;
RESET ALL;
SELECT pgrelay._settings_restore(:'saved') AS pinned;
SELECT name, source = 'session' AS set_again FROM pg_settings
WHERE name IN ('DateStyle', 'IntervalStyle', 'TimeZone', 'statement_timeout', 'client_connection_check_interval')
ORDER BY 1;
COMMIT;
RESET ALL;
SET intervalstyle = postgres;

-- Values that would break the queue are refused where they come in (error)
SELECT pgrelay.notify('s_sec', 'x', 'infinity');
SELECT pgrelay.notify('s_sec', 'x', '-infinity');
SELECT max_payload_bytes FROM pgrelay.register('s_sec', max_payload_bytes => 10);
SELECT pgrelay.notify('s_sec', repeat('x', 11));
SELECT pgrelay.notify('s_sec', repeat('x', 10)) AS id \gset
SELECT length(payload) FROM pgrelay.queue WHERE id = :id;
SELECT pgrelay.register('s_sec', max_payload_bytes => 0);
SELECT pgrelay.register('s_sec', max_payload_bytes => 104857601);
SELECT pgrelay.register('s_sec', backoff_base => '1000000 years');
SELECT pgrelay.register('s_sec', backoff_max => '31 days');
SELECT pgrelay.register('s_sec', timeout => '0.4 ms');
SELECT timeout FROM pgrelay.register('s_sec', timeout => '1 ms');
SELECT pgrelay.purge_log('0');
SELECT pgrelay.purge_log('1000000 years');
-- a duration whose parts have opposite signs is bounded by what it is used as, not by how
-- intervals compare: '1 year -359 days' compares as 1 day and is 6.25 days in seconds, the
-- Processor's measure of a timeout or a backoff (error)
SELECT pgrelay.register('s_sec', timeout => '1 year -359 days');
SELECT pgrelay.register('s_sec', backoff_base => '1 year -359 days');
SELECT pgrelay.register('s_sec', backoff_max => '10000 years -3599999 days');
SELECT pgrelay.register('s_sec', backoff_base => '1 day', backoff_max => '-1 year 366 days');
SELECT timeout, backoff_base, backoff_max, extract(epoch FROM backoff_max) / 86400 AS backoff_max_days
FROM pgrelay.register('s_sec', timeout => '1 day -1 hour', backoff_base => '1 day', backoff_max => '1 month');
-- the table says the same
\set VERBOSITY terse
UPDATE pgrelay.channels SET timeout = '1 year -359 days' WHERE channel = 's_sec';
UPDATE pgrelay.channels SET backoff_max = '10 years -3599 days' WHERE channel = 's_sec';
\set VERBOSITY default
-- purge_log(): the bound is on the cut-off it makes, before now and at most 1000 years back:
-- '-10000 years 3600001 days' compares as 1 day and is a cut-off in 2170, which would delete the
-- whole log; '10000 years -3599999 days' would be one before the year 1 (error)
SELECT count(*) > 0 AS logged FROM pgrelay.log;
SELECT pgrelay.purge_log('-10000 years 3600001 days');
SELECT pgrelay.purge_log('10000 years -3599999 days');
SELECT pgrelay.purge_log('1000 years 1 day');
SELECT count(*) > 0 AS still_logged FROM pgrelay.log;
SELECT pgrelay.purge_log('1 day -1 hour') >= 0 AS purged;
DELETE FROM pgrelay.queue;

-- What a handler prepares in the session is dropped once the handlers ran, with a warning each:
-- the Processor runs its own statements by name in that session; so are the cursors it declared
-- WITH HOLD (the commit would run the rest of their query as the Processor), and what it listens
-- to (the Processor reads no notification); a cursor that is not held ends with the transaction.
-- What the session made before the statement that calls it is left alone.
PREPARE regress_before AS SELECT 1;
BEGIN;
DECLARE regress_kept CURSOR WITH HOLD FOR SELECT 1;
COMMIT;
BEGIN;
DO $$ BEGIN
    EXECUTE 'PREPARE regress_stmt_a AS SELECT 1';
    EXECUTE 'PREPARE "Regress Stmt B"(int) AS SELECT $1';
    EXECUTE 'DECLARE "Regress Held" CURSOR WITH HOLD FOR SELECT 1';
    EXECUTE 'DECLARE regress_not_held CURSOR FOR SELECT 1';
    LISTEN "Regress Chan";
    PERFORM pgrelay._forget_handler_state();
END $$;
SELECT name FROM pg_cursors ORDER BY name;
COMMIT;
SELECT name FROM pg_prepared_statements WHERE from_sql ORDER BY name;
SELECT name FROM pg_cursors ORDER BY name;
SELECT count(*) FROM pg_listening_channels();
SELECT pgrelay._forget_handler_state();
DEALLOCATE regress_before;
CLOSE regress_kept;

-- A handler's deferred triggers fire when it returns, as pgrelay_nobody, which holds no right (not
-- even CREATE or USAGE on the schema), not at the commit as the Processor's role. (PostgreSQL 18
-- fires them as the role that queued them, the handler's owner here: no more than the handler.)
CREATE TABLE public.regress_deferred (x int);
GRANT INSERT ON public.regress_deferred TO regress_owner;
CREATE FUNCTION public.regress_deferred_who() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'fired as %', CASE WHEN current_user IN ('pgrelay_nobody', 'regress_owner')
                                    THEN 'no more than the handler' ELSE current_user::text END;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER regress_deferred_t AFTER INSERT ON public.regress_deferred
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.regress_deferred_who();
BEGIN;
SET LOCAL ROLE regress_owner;
INSERT INTO public.regress_deferred VALUES (1);
RESET ROLE;
SELECT pgrelay._deferred_triggers();
COMMIT;
SELECT p.proowner::regrole, pg_catalog.has_schema_privilege('pgrelay_nobody', 'pgrelay', 'CREATE') AS may_create,
       pg_catalog.has_schema_privilege('pgrelay_nobody', 'pgrelay', 'USAGE') AS may_use
FROM pg_proc p WHERE p.oid = 'pgrelay._deferred_triggers()'::regprocedure;
DROP TABLE public.regress_deferred;
DROP FUNCTION public.regress_deferred_who();

DELETE FROM pgrelay.log WHERE channel IN ('s_sec', 's_invoker');
DELETE FROM pgrelay.failed_events WHERE channel IN ('s_sec', 's_invoker');
DELETE FROM pgrelay.channels WHERE channel IN ('s_sec', 's_invoker');
DROP TABLE public.regress_trap;
DROP FUNCTION public.regress_trap_eq(oid, regprocedure), public.regress_trap_ne(text, text);
DROP SCHEMA regress_app CASCADE;
DROP ROLE regress_owner, regress_proc, regress_admin2;
