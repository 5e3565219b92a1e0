/* extension/pg_relay/src/helpers.sql: small pure helpers: backoff, error classes, the dispatch rule */

-- pgrelay.interface_version()
CREATE OR REPLACE FUNCTION pgrelay.interface_version() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 1 $$;
COMMENT ON FUNCTION pgrelay.interface_version() IS
    'Version of the Processor/notifier interface this extension implements (docs/interface.md)';

-- pgrelay._backoff()
CREATE OR REPLACE FUNCTION pgrelay._backoff(attempt integer, base interval, cap interval,
                                 jitter double precision DEFAULT pg_catalog.random())
RETURNS interval
LANGUAGE sql IMMUTABLE AS $$
    -- Exponential from base (attempt 1 waits base), capped, with "equal jitter": a uniform
    -- value between half the delay and the whole delay, so retries of a burst spread out.
    SELECT pg_catalog.make_interval(secs => (d * (0.5 + 0.5 * GREATEST(LEAST(jitter, 1), 0)))::double precision)
    FROM (SELECT LEAST(pg_catalog.date_part('epoch', cap),
                       pg_catalog.date_part('epoch', base)
                       * pg_catalog.power(2::double precision, LEAST(GREATEST(attempt, 1) - 1, 60))) AS d) s
$$;
COMMENT ON FUNCTION pgrelay._backoff(integer, interval, interval, double precision) IS
    'Delay before the retry of a failed attempt: min(cap, base * 2^(attempt-1)), scaled by 0.5 + jitter/2';

-- pgrelay._classify_error()
CREATE OR REPLACE FUNCTION pgrelay._classify_error(sqlstate text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN sqlstate = '57014' THEN 'timeout'
        WHEN pg_catalog.left(sqlstate, 2) IN ('40', '08', '53')
          OR sqlstate IN ('55P03', '57P03', '58000', '58030', 'PGRTY') THEN 'transient'
        ELSE 'permanent'
    END
$$;
COMMENT ON FUNCTION pgrelay._classify_error(text) IS
    'transient (retry), timeout (retry) or permanent, from the SQLSTATE a handler raised';

-- pgrelay._dispatch_context()
CREATE OR REPLACE FUNCTION pgrelay._dispatch_context(OUT mode text, OUT node integer, OUT is_leader boolean)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    mode := COALESCE(NULLIF(pg_catalog.current_setting('pg_relay.mode', true), ''), 'single');
    IF mode NOT IN ('single', 'multi-node', 'leader') THEN
        RAISE EXCEPTION 'invalid pg_relay.mode "%"', mode
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use single, multi-node or leader.';
    END IF;
    node := pgrelay._this_node();
    is_leader := COALESCE(NULLIF(pg_catalog.current_setting('pg_relay.is_leader', true), ''), 'off')::boolean;
END
$$;
COMMENT ON FUNCTION pgrelay._dispatch_context() IS
    'The session''s dispatch mode, node id and leadership (settings pg_relay.mode, pg_relay.node_id, pg_relay.is_leader)';

-- pgrelay._dispatch_allowed()
CREATE OR REPLACE FUNCTION pgrelay._dispatch_allowed(owner_node integer, node_restricted boolean,
                                          mode text, node integer, is_leader boolean)
RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE mode
        WHEN 'single' THEN true
        WHEN 'multi-node' THEN owner_node = node
        WHEN 'leader' THEN CASE WHEN node_restricted THEN owner_node = node ELSE is_leader END
        ELSE false
    END
$$;
COMMENT ON FUNCTION pgrelay._dispatch_allowed(integer, boolean, text, integer, boolean) IS
    'The dispatch rule (docs/ha.md): may this node offer a row with this owner and restriction?';

-- pgrelay.should_dispatch_single()
CREATE OR REPLACE FUNCTION pgrelay.should_dispatch_single() RETURNS boolean
LANGUAGE sql STABLE AS $$ SELECT NOT pg_catalog.pg_is_in_recovery() $$;
COMMENT ON FUNCTION pgrelay.should_dispatch_single() IS
    'Mode gate of --mode=single: true on a writable primary, false on a standby';

-- pgrelay._handler_sql()
CREATE OR REPLACE FUNCTION pgrelay._handler_sql(handler text) RETURNS text
LANGUAGE plpgsql STABLE STRICT AS $$
/*
 * Resolves the stored signature afresh (the function may have been dropped or replaced) and
 * returns its quoted, schema-qualified name for EXECUTE. PL/pgSQL rather than SQL because it runs
 * once per event: PL/pgSQL keeps the plan of the lookup for the session, while PostgreSQL plans
 * the body of a SQL function that cannot be inlined again on every call (docs/benchmarks.md).
 */
DECLARE
    v text;
BEGIN
    SELECT pg_catalog.format('%I.%I', n.nspname, p.proname) INTO v
    FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    WHERE p.oid = handler::pg_catalog.regprocedure;
    RETURN v;
END
$$;
COMMENT ON FUNCTION pgrelay._handler_sql(text) IS
    'Quoted qualified name of a handler given as regprocedure text; errors if it no longer exists';
