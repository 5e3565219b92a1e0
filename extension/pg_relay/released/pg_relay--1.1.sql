/* extension/pg_relay/pg_relay--1.1.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION pg_relay" to load this file. \quit

/*
 * pg_relay 1.1: the durable event queue (schema pgrelay).
 *
 * Producers call pgrelay.notify() in their own transaction; the external Processor polls
 * queue_probe(), fetches queue_pending_ids() and finishes each event with process_one() (SQL
 * actions) or with the three steps _queue_claim / _write_log / _queue_mark_done inside one held
 * transaction (notify actions). docs/sql-api.md documents every object below.
 *
 * Security model: functions that touch the tables are SECURITY DEFINER with a pinned search_path,
 * so the three roles need no table privileges. process_one() is the exception: it is SECURITY
 * INVOKER because it runs the channel's handler, and a handler must run with the privileges of the
 * Processor's role, never with the extension owner's.
 */

--------------------------------------------------------------------------------
-- Roles (cluster-wide; created once, kept on DROP EXTENSION)
--------------------------------------------------------------------------------
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['pgrelay_producer', 'pgrelay_processor', 'pgrelay_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
        END IF;
    END LOOP;
END
$$;

COMMENT ON ROLE pgrelay_producer IS 'pg_relay: may queue events with pgrelay.notify() (and send mail with pg_relay_notifier)';
COMMENT ON ROLE pgrelay_processor IS 'pg_relay: the Processor''s role: may run the dispatch functions';
COMMENT ON ROLE pgrelay_admin IS 'pg_relay: may register channels, pause, resume and re-queue failed events';

--------------------------------------------------------------------------------
-- Ids (SPEC section 7)
--------------------------------------------------------------------------------

-- The logical clock behind _next_id(): value = milliseconds since 2026-01-01 UTC * 4096 + sequence.
CREATE SEQUENCE pgrelay._id_clock;

-- pgrelay._this_node()
CREATE FUNCTION pgrelay._this_node() RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text := pg_catalog.current_setting('pg_relay.node_id', true);
BEGIN
    IF v IS NULL OR pg_catalog.btrim(v) = '' THEN
        RETURN 0;
    END IF;
    IF v ~ '^\s*[0-9]{1,4}\s*$' THEN
        IF v::integer <= 1023 THEN
            RETURN v::integer;
        END IF;
    END IF;
    RAISE EXCEPTION 'invalid pg_relay.node_id "%"', v
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'The node id must be an integer between 0 and 1023.';
END
$$;
COMMENT ON FUNCTION pgrelay._this_node() IS
    'This node''s id: the pg_relay.node_id setting (0 to 1023), 0 when unset';

-- pgrelay._next_id()
CREATE FUNCTION pgrelay._next_id() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Returns 41 bits of milliseconds since 2026-01-01 UTC | 10 bits node id | 12 bits sequence.
 *
 * The millisecond and sequence fields come together from one logical clock (the sequence
 * pgrelay._id_clock, counting ms * 4096 + n) that is moved forward to the wall clock whenever it
 * lags behind. Moving it forward (setval) must not race with another session doing the same, or
 * both could hand out the same value; a session-level advisory lock serialises that step. The
 * lock is held for a few microseconds, never across the caller's transaction, and released on
 * every error path. When more than 4096 ids are drawn in one millisecond the logical clock simply
 * runs ahead of the wall clock for a moment: ids stay unique and ordered.
 */
DECLARE
    node   bigint := pgrelay._this_node();
    v      bigint;
    wall   bigint;
BEGIN
    PERFORM pg_catalog.pg_advisory_lock(1885827584, 0);
    BEGIN
        v := pg_catalog.nextval('pgrelay._id_clock');
        wall := (pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint
                 - 1767225600000) * 4096;
        IF v < wall THEN
            PERFORM pg_catalog.setval('pgrelay._id_clock', wall);
            v := wall;
        END IF;
        PERFORM pg_catalog.pg_advisory_unlock(1885827584, 0);
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        PERFORM pg_catalog.pg_advisory_unlock(1885827584, 0);
        RAISE;
    END;
    IF (v >> 12) >= (1::bigint << 41) THEN
        RAISE EXCEPTION 'pg_relay id space exhausted' USING ERRCODE = 'numeric_value_out_of_range';
    END IF;
    RETURN ((v >> 12) << 22) | (node << 12) | (v & 4095);
END
$$;
COMMENT ON FUNCTION pgrelay._next_id() IS
    'Next unique id: 41-bit ms since 2026-01-01 | 10-bit node id | 12-bit sequence';

-- pgrelay.decode_id()
CREATE FUNCTION pgrelay.decode_id(id bigint, OUT created_at timestamptz, OUT node_id integer, OUT seq integer)
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT pg_catalog.to_timestamp(((id >> 22) + 1767225600000) / 1000.0),
           ((id >> 12) & 1023)::integer,
           (id & 4095)::integer
$$;
COMMENT ON FUNCTION pgrelay.decode_id(bigint) IS
    'Splits an id made by _next_id() into its time, node id and sequence';

-- pgrelay._id_floor()
CREATE FUNCTION pgrelay._id_floor(ts timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT GREATEST(pg_catalog.floor(pg_catalog.date_part('epoch', ts) * 1000)::bigint - 1767225600000, 0) << 22
$$;
COMMENT ON FUNCTION pgrelay._id_floor(timestamptz) IS
    'The smallest id _next_id() can make at time ts (for range scans on id)';

--------------------------------------------------------------------------------
-- Catalog (SPEC section 2)
--------------------------------------------------------------------------------

CREATE TABLE pgrelay.action_types (
    action_type text PRIMARY KEY,
    run_order   integer,
    description text
);
COMMENT ON TABLE pgrelay.action_types IS
    'Kinds of action; lower run_order is dispatched first within a batch, NULL last';
INSERT INTO pgrelay.action_types (action_type, run_order, description) VALUES
    ('sql', 10, 'call the channel''s handler function with the payload'),
    ('notify', 20, 'deliver a pg_relay_notifier message; the payload is the notification id');

CREATE TABLE pgrelay.channels (
    channel          text PRIMARY KEY,
    action_type      text NOT NULL REFERENCES pgrelay.action_types,
    handler          text,
    active           boolean NOT NULL DEFAULT true,
    concurrency_mode text NOT NULL DEFAULT 'parallel'
                     CHECK (concurrency_mode IN ('parallel', 'channel')),
    node_restricted  boolean NOT NULL DEFAULT false,
    max_attempts     integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 1000),
    timeout          interval NOT NULL DEFAULT '30 seconds'
                     CHECK (timeout > '0' AND timeout <= '24 hours'),
    backoff_base     interval NOT NULL DEFAULT '10 seconds' CHECK (backoff_base > '0'),
    backoff_max      interval NOT NULL DEFAULT '1 hour' CHECK (backoff_max >= backoff_base),
    description      text,
    registered_by    name NOT NULL DEFAULT session_user,
    registered_at    timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay.channels IS 'Named event channels; change them with pgrelay.register()';
COMMENT ON COLUMN pgrelay.channels.handler IS
    'The handler of a sql channel, as the text of a regprocedure (schema-qualified). Stored as text '
    'because pg_upgrade refuses tables with regprocedure columns.';

CREATE TABLE pgrelay.queue (
    id              bigint PRIMARY KEY DEFAULT pgrelay._next_id(),
    event_id        bigint NOT NULL,
    channel         text NOT NULL,
    action_type     text NOT NULL,
    payload         text NOT NULL,
    owner_node      integer NOT NULL DEFAULT pgrelay._this_node(),
    node_restricted boolean NOT NULL DEFAULT false,
    attempt         integer NOT NULL DEFAULT 1,
    run_at          timestamptz NOT NULL DEFAULT now(),
    queued_at       timestamptz NOT NULL DEFAULT now(),
    last_error      text
);
COMMENT ON TABLE pgrelay.queue IS
    'Pending events only: a finished event leaves this table (its history is in pgrelay.log)';
-- The one secondary index serves the probe (action_type = x AND run_at <= now()) and the ordered
-- fetch of queue_pending_ids() (per action type, by run_at, queued_at, id).
CREATE INDEX queue_dispatch_idx ON pgrelay.queue (action_type, run_at, queued_at, id);

CREATE TABLE pgrelay.log (
    id          bigint PRIMARY KEY DEFAULT pgrelay._next_id(),
    queue_id    bigint NOT NULL,
    event_id    bigint NOT NULL,
    channel     text NOT NULL,
    action_type text NOT NULL,
    payload     text,
    attempt     integer NOT NULL,
    outcome     text NOT NULL
                CHECK (outcome IN ('ok', 'partial', 'retry', 'timeout', 'failed', 'cancelled')),
    error       text,
    sqlstate    text,
    detail      jsonb,
    node_id     integer NOT NULL,
    queued_at   timestamptz,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    retry_at    timestamptz
);
COMMENT ON TABLE pgrelay.log IS 'The audit trail: one row per attempt';
COMMENT ON COLUMN pgrelay.log.outcome IS
    'ok: done; partial: done, some recipients failed; retry: transient failure, retried at retry_at; '
    'timeout: timed out, retried at retry_at; failed: permanent failure or attempts exhausted; '
    'cancelled: the work was withdrawn before the attempt';
CREATE INDEX log_event_idx ON pgrelay.log (event_id);

CREATE TABLE pgrelay.failed_events (
    event_id    bigint PRIMARY KEY,
    channel     text NOT NULL,
    action_type text NOT NULL,
    payload     text NOT NULL,
    attempts    integer NOT NULL,
    error       text,
    sqlstate    text,
    log_id      bigint NOT NULL,
    node_id     integer NOT NULL,
    queued_at   timestamptz NOT NULL,
    failed_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay.failed_events IS
    'Events whose last attempt failed for good; re-queue with retry_failed(), drop with discard_failed()';

CREATE TABLE pgrelay.control (
    singleton           boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    paused              boolean NOT NULL DEFAULT false,
    paused_at           timestamptz,
    reload_generation   bigint NOT NULL DEFAULT 0,
    reload_requested_at timestamptz
);
COMMENT ON TABLE pgrelay.control IS 'The flags queue_probe() reports: paused and the reload generation';
INSERT INTO pgrelay.control DEFAULT VALUES;

-- pg_dump keeps user data of extension tables only when told to.
SELECT pg_catalog.pg_extension_config_dump('pgrelay.channels', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.queue', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.log', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.failed_events', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay.action_types',
                                           $$WHERE action_type NOT IN ('sql', 'notify')$$);
SELECT pg_catalog.pg_extension_config_dump('pgrelay._id_clock', '');

--------------------------------------------------------------------------------
-- Small pure helpers
--------------------------------------------------------------------------------

-- pgrelay.interface_version()
CREATE FUNCTION pgrelay.interface_version() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 1 $$;
COMMENT ON FUNCTION pgrelay.interface_version() IS
    'Version of the Processor/notifier interface this extension implements (docs/interface.md)';

-- pgrelay._backoff()
CREATE FUNCTION pgrelay._backoff(attempt integer, base interval, cap interval,
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
CREATE FUNCTION pgrelay._classify_error(sqlstate text) RETURNS text
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
CREATE FUNCTION pgrelay._dispatch_context(OUT mode text, OUT node integer, OUT is_leader boolean)
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
CREATE FUNCTION pgrelay._dispatch_allowed(owner_node integer, node_restricted boolean,
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
    'The dispatch rule of SPEC section 6: may this node offer a row with this owner and restriction?';

-- pgrelay.should_dispatch_single()
CREATE FUNCTION pgrelay.should_dispatch_single() RETURNS boolean
LANGUAGE sql STABLE AS $$ SELECT NOT pg_catalog.pg_is_in_recovery() $$;
COMMENT ON FUNCTION pgrelay.should_dispatch_single() IS
    'Mode gate of --mode=single: true on a writable primary, false on a standby';

-- pgrelay._handler_sql()
CREATE FUNCTION pgrelay._handler_sql(handler text) RETURNS text
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

--------------------------------------------------------------------------------
-- Probe and fetch (what the Processor runs every tick)
--------------------------------------------------------------------------------

-- pgrelay._has_due_work()
CREATE FUNCTION pgrelay._has_due_work() RETURNS TABLE (has_work boolean)
LANGUAGE sql STABLE AS $$
    -- One index probe per action type on queue_dispatch_idx; never reads pgrelay.log. A set-
    -- returning SQL function so that the planner inlines it and EXPLAIN can show this plan.
    SELECT EXISTS (SELECT 1
                   FROM pgrelay.action_types a
                   WHERE EXISTS (SELECT 1 FROM pgrelay.queue q
                                 WHERE q.action_type = a.action_type
                                   AND q.run_at <= pg_catalog.now()))
$$;
COMMENT ON FUNCTION pgrelay._has_due_work() IS
    'Is any queued event due? (the query behind queue_has_work and queue_probe)';

-- pgrelay.queue_has_work()
CREATE FUNCTION pgrelay.queue_has_work() RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- PL/pgSQL keeps this plan for the session (see queue_probe).
    RETURN (SELECT d.has_work FROM pgrelay._has_due_work() d);
END
$$;
COMMENT ON FUNCTION pgrelay.queue_has_work() IS 'true when at least one queued event is due';

-- pgrelay.queue_probe()
CREATE FUNCTION pgrelay.queue_probe(seen_generation bigint DEFAULT NULL,
                                    OUT has_work boolean, OUT reload_requested boolean,
                                    OUT paused boolean, OUT reload_generation bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * PL/pgSQL, not SQL: a SECURITY DEFINER SQL function is never inlined, and PostgreSQL plans the
 * body of a SQL function afresh on every call, which made planning (~0.2 ms) most of the cost of
 * a probe. PL/pgSQL plans this statement once per session (docs/benchmarks.md).
 */
BEGIN
    SELECT (SELECT d.has_work FROM pgrelay._has_due_work() d),
           queue_probe.seen_generation IS NOT NULL AND c.reload_generation > queue_probe.seen_generation,
           c.paused,
           c.reload_generation
    INTO queue_probe.has_work, queue_probe.reload_requested, queue_probe.paused,
         queue_probe.reload_generation
    FROM pgrelay.control c;
END
$$;
COMMENT ON FUNCTION pgrelay.queue_probe(bigint) IS
    'The Processor''s tick probe: is work due, was a reload requested since seen_generation, is dispatch paused';

-- pgrelay.queue_pending_ids()
CREATE FUNCTION pgrelay.queue_pending_ids(max_rows integer DEFAULT NULL)
RETURNS TABLE (id bigint, action_type text, channel text, timeout_ms integer, attempt integer)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
-- jit off: action_types is far too small for autovacuum to ever analyze it, so the planner
-- guesses 850 rows and a cost over jit_above_cost; compiling the plan took 60-160 ms per call
-- for a query that runs in 2 ms (docs/benchmarks.md).
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
/*
 * Every eligible row (or max_rows of them), ordered by action_types.run_order NULLS LAST, run_at,
 * queued_at. Rows are read per action type in index order and locked FOR UPDATE SKIP LOCKED, so
 * concurrent Processors get disjoint sets and rows in flight are passed over; the locks end with
 * the caller's statement. A channel with concurrency_mode 'channel' offers only its first row.
 * Returns nothing while dispatch is paused.
 */
#variable_conflict use_column
DECLARE
    ctx record;
BEGIN
    IF max_rows IS NOT NULL AND max_rows < 1 THEN
        RAISE EXCEPTION 'max_rows must be positive, not %', max_rows
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (SELECT c.paused FROM pgrelay.control c) THEN
        RETURN;
    END IF;
    SELECT * INTO ctx FROM pgrelay._dispatch_context();

    RETURN QUERY
    WITH cand AS (
        SELECT s.*
        FROM pgrelay.action_types a
        CROSS JOIN LATERAL (
            SELECT q.id, q.action_type, q.channel, q.run_at, q.queued_at, q.attempt,
                   a.run_order, c.concurrency_mode, c.timeout
            FROM pgrelay.queue q
            JOIN pgrelay.channels c ON c.channel = q.channel
            WHERE q.action_type = a.action_type
              AND q.run_at <= now()
              AND c.active
              AND pgrelay._dispatch_allowed(q.owner_node, q.node_restricted,
                                            ctx.mode, ctx.node, ctx.is_leader)
            ORDER BY q.run_at, q.queued_at, q.id
            LIMIT max_rows
            FOR UPDATE OF q SKIP LOCKED
        ) s
    ), ranked AS (
        SELECT cand.*,
               row_number() OVER (PARTITION BY cand.channel
                                  ORDER BY cand.run_at, cand.queued_at, cand.id) AS rn
        FROM cand
    )
    SELECT r.id, r.action_type, r.channel,
           (date_part('epoch', r.timeout) * 1000)::integer,
           r.attempt
    FROM ranked r
    WHERE r.concurrency_mode = 'parallel' OR r.rn = 1
    ORDER BY r.run_order NULLS LAST, r.run_at, r.queued_at, r.id
    LIMIT max_rows;
END
$$;
COMMENT ON FUNCTION pgrelay.queue_pending_ids(integer) IS
    'Eligible (id, action_type, channel, timeout_ms, attempt) rows in dispatch order, locked FOR UPDATE SKIP LOCKED';

--------------------------------------------------------------------------------
-- Finishing an event: claim, log, mark done
--------------------------------------------------------------------------------

-- pgrelay._queue_claim()
CREATE FUNCTION pgrelay._queue_claim(id bigint)
RETURNS TABLE (queue_id bigint, event_id bigint, channel text, action_type text, payload text,
               attempt integer, max_attempts integer, timeout_ms integer, handler text,
               queued_at timestamptz, run_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Locks the row until the caller's transaction ends and re-validates it. Returns no row (the event
 * is skipped, never failed) when it is gone, locked by someone else, not yet due, its channel is
 * missing or inactive, the dispatch rule no longer offers it to this node, or its channel runs one
 * event at a time and another transaction holds that channel.
 */
#variable_conflict use_column
DECLARE
    q pgrelay.queue;
    c pgrelay.channels;
    ctx record;
BEGIN
    SELECT * INTO q FROM pgrelay.queue x WHERE x.id = _queue_claim.id FOR UPDATE SKIP LOCKED;
    IF NOT FOUND OR q.run_at > now() THEN
        RETURN;
    END IF;
    SELECT * INTO c FROM pgrelay.channels y WHERE y.channel = q.channel;
    IF NOT FOUND OR NOT c.active THEN
        RETURN;
    END IF;
    -- single mode (no setting, or the Processor's default) offers every row: skip the rule.
    IF COALESCE(current_setting('pg_relay.mode', true), '') NOT IN ('', 'single') THEN
        SELECT * INTO ctx FROM pgrelay._dispatch_context();
        IF NOT pgrelay._dispatch_allowed(q.owner_node, q.node_restricted, ctx.mode, ctx.node, ctx.is_leader) THEN
            RETURN;
        END IF;
    END IF;
    -- One event of the channel in flight across every session of this database: the lock is
    -- transaction-scoped, so it covers process_one() and the Processor's held transaction alike.
    IF c.concurrency_mode = 'channel'
       AND NOT pg_try_advisory_xact_lock(1885827585, hashtext(q.channel)) THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT q.id, q.event_id, q.channel, q.action_type, q.payload, q.attempt,
                        c.max_attempts, (date_part('epoch', c.timeout) * 1000)::integer,
                        c.handler, q.queued_at, q.run_at;
END
$$;
COMMENT ON FUNCTION pgrelay._queue_claim(bigint) IS
    'Claims a queue row for this transaction after re-validating it; no row means skipped';

-- pgrelay._lock_claimed()
CREATE FUNCTION pgrelay._lock_claimed(id bigint) RETURNS pgrelay.queue
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (called by the SECURITY DEFINER functions below, executable by nobody else): the queue
 * row, locked by this transaction, or a clear error if it is gone or held by another.
 */
DECLARE
    q pgrelay.queue;
BEGIN
    -- Our own lock does not block us; someone else's makes the row invisible here.
    SELECT * INTO q FROM pgrelay.queue x WHERE x.id = _lock_claimed.id FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM pgrelay.queue x WHERE x.id = _lock_claimed.id) THEN
            RAISE EXCEPTION 'queue row % is claimed by another transaction', id
                USING ERRCODE = 'lock_not_available';
        END IF;
        RAISE EXCEPTION 'queue row % does not exist', id
            USING ERRCODE = 'no_data_found',
                  HINT = 'It was finished already, or never existed.';
    END IF;
    RETURN q;
END
$$;
COMMENT ON FUNCTION pgrelay._lock_claimed(bigint) IS
    'Internal: the queue row, locked by this transaction; a clear error if it is gone or held by another';

-- pgrelay._log_attempt()
CREATE FUNCTION pgrelay._log_attempt(q pgrelay.queue, result text, error text, sqlstate text,
                                     started_at timestamptz, detail jsonb, retry_at timestamptz)
RETURNS pgrelay.log
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal: writes the one audit row of an attempt on the locked row q and takes the retry
 * decision, once, for everybody: result ok/partial/cancelled finish the event; permanent fails
 * it; transient and timeout retry it until the channel's max_attempts, then fail it. The row's
 * retry_at is the caller's (a provider's Retry-After) or now + the channel's backoff.
 */
DECLARE
    c pgrelay.channels;
    l pgrelay.log;
BEGIN
    IF result IS NULL OR result NOT IN ('ok', 'partial', 'transient', 'timeout', 'permanent', 'cancelled') THEN
        RAISE EXCEPTION 'invalid result "%"', result
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use ok, partial, transient, timeout, permanent or cancelled.';
    END IF;
    SELECT * INTO c FROM pgrelay.channels y WHERE y.channel = q.channel;

    l.outcome := CASE
        WHEN result IN ('ok', 'partial', 'cancelled') THEN result
        WHEN result = 'permanent' THEN 'failed'
        WHEN q.attempt >= COALESCE(c.max_attempts, 1) THEN 'failed'
        WHEN result = 'timeout' THEN 'timeout'
        ELSE 'retry'
    END;
    IF l.outcome IN ('retry', 'timeout') THEN
        l.retry_at := COALESCE(_log_attempt.retry_at,
                               clock_timestamp() + pgrelay._backoff(q.attempt, c.backoff_base, c.backoff_max));
    END IF;
    INSERT INTO pgrelay.log (id, queue_id, event_id, channel, action_type, payload, attempt, outcome,
                             error, sqlstate, detail, node_id, queued_at, started_at, finished_at, retry_at)
    VALUES (pgrelay._next_id(), q.id, q.event_id, q.channel, q.action_type, q.payload, q.attempt,
            l.outcome, error, sqlstate, detail, pgrelay._this_node(), q.queued_at,
            COALESCE(started_at, clock_timestamp()), clock_timestamp(), l.retry_at)
    RETURNING * INTO l;
    RETURN l;
END
$$;
COMMENT ON FUNCTION pgrelay._log_attempt(pgrelay.queue, text, text, text, timestamptz, jsonb, timestamptz) IS
    'Internal: writes the audit row of one attempt and resolves its outcome';

-- pgrelay._settle()
CREATE FUNCTION pgrelay._settle(q pgrelay.queue, l pgrelay.log) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal: finishes the locked row q as its log row l says: deletes it, and inserts the next
 * attempt (same event_id, attempt + 1, run_at = l.retry_at) for retry/timeout, or records the
 * event in failed_events for failed. Returns the id of the retry row, or NULL.
 */
DECLARE
    v bigint;
BEGIN
    DELETE FROM pgrelay.queue x WHERE x.id = q.id;

    IF l.outcome IN ('retry', 'timeout') THEN
        v := pgrelay._next_id();
        INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node,
                                   node_restricted, attempt, run_at, queued_at, last_error)
        VALUES (v, q.event_id, q.channel, q.action_type, q.payload, q.owner_node,
                q.node_restricted, q.attempt + 1, l.retry_at, q.queued_at, l.error);
        RETURN v;
    ELSIF l.outcome = 'failed' THEN
        INSERT INTO pgrelay.failed_events AS f (event_id, channel, action_type, payload, attempts,
                                                error, sqlstate, log_id, node_id, queued_at, failed_at)
        VALUES (q.event_id, q.channel, q.action_type, q.payload, q.attempt, l.error, l.sqlstate,
                l.id, l.node_id, q.queued_at, l.finished_at)
        ON CONFLICT (event_id) DO UPDATE
            SET attempts = EXCLUDED.attempts, error = EXCLUDED.error, sqlstate = EXCLUDED.sqlstate,
                log_id = EXCLUDED.log_id, node_id = EXCLUDED.node_id, failed_at = EXCLUDED.failed_at;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgrelay._settle(pgrelay.queue, pgrelay.log) IS
    'Internal: deletes a finished queue row and queues its retry or records its failure';

-- pgrelay._write_log()
CREATE FUNCTION pgrelay._write_log(queue_id bigint, result text, error text DEFAULT NULL,
                                   sqlstate text DEFAULT NULL, started_at timestamptz DEFAULT NULL,
                                   detail jsonb DEFAULT NULL, retry_at timestamptz DEFAULT NULL,
                                   OUT log_id bigint, OUT outcome text, OUT next_run_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
-- The log lookups by (event_id, queue_id) must use log_event_idx even when the log was
-- analyzed empty: a session keeps the plan, and a sequential scan grows with the log.
SET enable_seqscan = off AS $$
/*
 * Step 2 of 3 (claim, log, mark done) of the Processor's held transaction: writes the audit row of
 * this attempt on a claimed row and returns the resolved outcome and, for a retry, when. A second
 * log row for the same attempt is refused.
 */
DECLARE
    q pgrelay.queue;
    l pgrelay.log;
BEGIN
    IF result IS NULL OR result NOT IN ('ok', 'partial', 'transient', 'timeout', 'permanent', 'cancelled') THEN
        RAISE EXCEPTION 'invalid result "%"', result
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use ok, partial, transient, timeout, permanent or cancelled.';
    END IF;
    q := pgrelay._lock_claimed(queue_id);
    IF EXISTS (SELECT 1 FROM pgrelay.log x WHERE x.event_id = q.event_id AND x.queue_id = q.id) THEN
        RAISE EXCEPTION 'the log row of queue row % is written already', q.id
            USING ERRCODE = 'unique_violation';
    END IF;
    l := pgrelay._log_attempt(q, result, error, sqlstate, started_at, detail, retry_at);
    log_id := l.id;
    outcome := l.outcome;
    next_run_at := l.retry_at;
END
$$;
COMMENT ON FUNCTION pgrelay._write_log(bigint, text, text, text, timestamptz, jsonb, timestamptz) IS
    'Writes the audit row of one attempt on a claimed queue row and returns the resolved outcome';

-- pgrelay._queue_mark_done()
CREATE FUNCTION pgrelay._queue_mark_done(queue_id bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
-- The log lookups by (event_id, queue_id) must use log_event_idx even when the log was
-- analyzed empty: a session keeps the plan, and a sequential scan grows with the log.
SET enable_seqscan = off AS $$
/*
 * Step 3 of 3: finishes a claimed row as its log row says (see _settle). Returns the id of the
 * retry row, or NULL. A row without its log row is refused.
 */
DECLARE
    q pgrelay.queue;
    l pgrelay.log;
BEGIN
    q := pgrelay._lock_claimed(queue_id);
    SELECT * INTO l FROM pgrelay.log x
    WHERE x.event_id = q.event_id AND x.queue_id = q.id
    ORDER BY x.id DESC LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'queue row % has no log row', q.id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Write it with pgrelay._write_log() first.';
    END IF;
    RETURN pgrelay._settle(q, l);
END
$$;
COMMENT ON FUNCTION pgrelay._queue_mark_done(bigint) IS
    'Finishes a claimed queue row according to its log row; returns the retry row id or NULL';

-- pgrelay._complete()
CREATE FUNCTION pgrelay._complete(queue_id bigint, result text, error text DEFAULT NULL,
                                  sqlstate text DEFAULT NULL, started_at timestamptz DEFAULT NULL,
                                  OUT log_id bigint, OUT outcome text, OUT retry_id bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Steps 2 and 3 at once, for a caller that claimed the row in this same statement
 * (process_one): the row is locked and read once, and nothing has to be looked up again.
 */
DECLARE
    q pgrelay.queue;
    l pgrelay.log;
BEGIN
    q := pgrelay._lock_claimed(queue_id);
    l := pgrelay._log_attempt(q, result, error, sqlstate, started_at, NULL, NULL);
    log_id := l.id;
    outcome := l.outcome;
    retry_id := pgrelay._settle(q, l);
END
$$;
COMMENT ON FUNCTION pgrelay._complete(bigint, text, text, text, timestamptz) IS
    'Writes the log row of an attempt and finishes the claimed queue row, in one call';

-- pgrelay._queue_defer()
CREATE FUNCTION pgrelay._queue_defer(queue_id bigint, run_at timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Moves a claimed row to a later run_at without counting an attempt or writing a log row: the
 * Processor uses it when a rate limit says "not now".
 */
BEGIN
    IF run_at IS NULL THEN
        RAISE EXCEPTION 'run_at must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM pgrelay._lock_claimed(queue_id);
    UPDATE pgrelay.queue x SET run_at = _queue_defer.run_at WHERE x.id = queue_id;
END
$$;
COMMENT ON FUNCTION pgrelay._queue_defer(bigint, timestamptz) IS
    'Postpones a claimed queue row without spending an attempt (rate limits)';

-- pgrelay.process_one()
CREATE FUNCTION pgrelay.process_one(id bigint, OUT outcome text, OUT log_id bigint,
                                    OUT retry_id bigint, OUT error text)
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Claims the row, runs the channel's handler with the payload inside a subtransaction (so a
 * failing handler cannot take the bookkeeping with it), writes the log row and finishes the row.
 * outcome is skipped when the claim fails, else the log row's outcome.
 *
 * The channel timeout reaches the handler through statement_timeout: the Processor sets it to the
 * channel's timeout before this statement, the cancel lands inside the handler, is caught here and
 * logged as a timeout; the connection stays usable. SECURITY INVOKER on purpose: the handler runs
 * with the caller's privileges and search_path.
 */
DECLARE
    c record;
    started timestamptz;
    result text := 'ok';
    state text;
    l record;
BEGIN
    SELECT * INTO c FROM pgrelay._queue_claim(process_one.id);
    IF NOT FOUND THEN
        outcome := 'skipped';
        RETURN;
    END IF;
    IF c.action_type <> 'sql' THEN
        RAISE EXCEPTION 'event % is a "%" event; process_one() runs sql actions only', c.queue_id, c.action_type
            USING ERRCODE = 'wrong_object_type',
                  HINT = 'notify events are delivered by the Processor.';
    END IF;

    started := pg_catalog.clock_timestamp();
    BEGIN
        EXECUTE pg_catalog.format('SELECT %s($1)', pgrelay._handler_sql(c.handler)) USING c.payload;
    EXCEPTION WHEN OTHERS OR query_canceled OR assert_failure THEN
        GET STACKED DIAGNOSTICS error = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
        result := pgrelay._classify_error(state);
    END;

    SELECT * INTO l FROM pgrelay._complete(c.queue_id, result, error, state, started);
    outcome := l.outcome;
    log_id := l.log_id;
    retry_id := l.retry_id;
END
$$;
COMMENT ON FUNCTION pgrelay.process_one(bigint) IS
    'Runs one sql event end to end; returns skipped, ok, retry, timeout or failed';

--------------------------------------------------------------------------------
-- Producers
--------------------------------------------------------------------------------

-- pgrelay.notify()
CREATE FUNCTION pgrelay.notify(channel text, payload text, run_at timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Queues one event in the caller's transaction: a rollback discards it, a commit guarantees it.
 * Returns the queue id, which is also the event id.
 */
DECLARE
    c pgrelay.channels;
    v bigint;
BEGIN
    IF notify.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF notify.payload IS NULL THEN
        RAISE EXCEPTION 'payload must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass an empty string for an event without a payload.';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = notify.channel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" does not exist', notify.channel
            USING ERRCODE = 'undefined_object',
                  HINT = 'Create it with pgrelay.register().';
    END IF;
    IF NOT c.active THEN
        RAISE EXCEPTION 'channel "%" is not active', notify.channel
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    v := pgrelay._next_id();
    INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, node_restricted,
                               run_at, queued_at)
    VALUES (v, v, c.channel, c.action_type, notify.payload, c.node_restricted,
            COALESCE(notify.run_at, now()), now());
    RETURN v;
END
$$;
COMMENT ON FUNCTION pgrelay.notify(text, text, timestamptz) IS
    'Queues an event on an active channel in the caller''s transaction; returns its id';

--------------------------------------------------------------------------------
-- Administration
--------------------------------------------------------------------------------

-- pgrelay.request_reload()
CREATE FUNCTION pgrelay.request_reload() RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE pgrelay.control
    SET reload_generation = reload_generation + 1, reload_requested_at = now()
    RETURNING reload_generation
$$;
COMMENT ON FUNCTION pgrelay.request_reload() IS
    'Asks every Processor to reload its configuration and channel settings; returns the new generation';

-- pgrelay.pause()
CREATE FUNCTION pgrelay.pause() RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE pgrelay.control SET paused = true, paused_at = COALESCE(paused_at, now())
    RETURNING paused
$$;
COMMENT ON FUNCTION pgrelay.pause() IS
    'Stops dispatch on every Processor (queue_pending_ids returns nothing) until resume()';

-- pgrelay.resume()
CREATE FUNCTION pgrelay.resume() RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE pgrelay.control SET paused = false, paused_at = NULL
    RETURNING paused
$$;
COMMENT ON FUNCTION pgrelay.resume() IS 'Resumes dispatch after pause()';

-- pgrelay.register()
CREATE FUNCTION pgrelay.register(channel text, action_type text DEFAULT NULL,
                                 handler regprocedure DEFAULT NULL,
                                 concurrency_mode text DEFAULT NULL,
                                 node_restricted boolean DEFAULT NULL,
                                 max_attempts integer DEFAULT NULL,
                                 timeout interval DEFAULT NULL,
                                 backoff_base interval DEFAULT NULL,
                                 backoff_max interval DEFAULT NULL,
                                 active boolean DEFAULT NULL,
                                 description text DEFAULT NULL)
RETURNS pgrelay.channels
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Creates a channel, or updates one: an argument left NULL keeps the current value (or takes the
 * default for a new channel). Everything is validated here so that the Processor never meets a
 * channel it cannot run. Asks the Processors to reload.
 */
DECLARE
    prev pgrelay.channels;
    ch pgrelay.channels;
    p record;
    queued bigint;
BEGIN
    IF register.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF register.channel !~ '^[[:alnum:]_.:/-]{1,128}$' THEN
        RAISE EXCEPTION 'invalid channel name "%"', register.channel
            USING ERRCODE = 'invalid_name',
                  DETAIL = 'A channel name has 1 to 128 letters, digits or the characters _ . : / -';
    END IF;

    SELECT * INTO prev FROM pgrelay.channels x WHERE x.channel = register.channel FOR UPDATE;
    IF NOT FOUND THEN
        IF register.action_type IS NULL THEN
            RAISE EXCEPTION 'channel "%" does not exist; give its action_type to create it', register.channel
                USING ERRCODE = 'null_value_not_allowed';
        END IF;
        prev := NULL;
        ch.channel := register.channel;
        ch.active := true;
        ch.concurrency_mode := 'parallel';
        ch.node_restricted := false;
        ch.max_attempts := 5;
        ch.timeout := '30 seconds';
        ch.backoff_base := '10 seconds';
        ch.backoff_max := '1 hour';
        ch.registered_by := session_user;
        ch.registered_at := now();
    ELSE
        ch := prev;
    END IF;

    ch.action_type := COALESCE(register.action_type, ch.action_type);
    IF NOT EXISTS (SELECT 1 FROM pgrelay.action_types a WHERE a.action_type = ch.action_type) THEN
        RAISE EXCEPTION 'action type "%" does not exist', ch.action_type
            USING ERRCODE = 'undefined_object',
                  HINT = 'See pgrelay.action_types.';
    END IF;
    IF prev.channel IS NOT NULL AND prev.action_type <> ch.action_type THEN
        SELECT count(*) INTO queued FROM pgrelay.queue q WHERE q.channel = register.channel;
        IF queued > 0 THEN
            RAISE EXCEPTION 'channel "%" still has % queued event(s); its action type cannot change', register.channel, queued
                USING ERRCODE = 'object_in_use';
        END IF;
    END IF;

    IF register.handler IS NOT NULL THEN
        SELECT p2.oid, p2.prokind, p2.pronargs, p2.proargtypes, n.nspname, p2.proname
        INTO p
        FROM pg_catalog.pg_proc p2 JOIN pg_catalog.pg_namespace n ON n.oid = p2.pronamespace
        WHERE p2.oid = register.handler;
        IF p.prokind <> 'f' OR p.pronargs <> 1 OR p.proargtypes[0] <> 'text'::regtype THEN
            RAISE EXCEPTION 'handler % must be a function taking one text argument', register.handler
                USING ERRCODE = 'invalid_function_definition';
        END IF;
        IF p.nspname IN ('pg_catalog', 'information_schema') THEN
            RAISE EXCEPTION 'handler % is a system function', register.handler
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'Write a handler function of your own that calls it.';
        END IF;
        IF NOT has_function_privilege('pgrelay_processor', p.oid, 'EXECUTE') THEN
            RAISE EXCEPTION 'handler % is not executable by role pgrelay_processor', register.handler
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'GRANT EXECUTE ON FUNCTION ... TO pgrelay_processor.';
        END IF;
        ch.handler := format('%I.%I(text)', p.nspname, p.proname);
    END IF;
    IF ch.action_type = 'sql' AND ch.handler IS NULL THEN
        RAISE EXCEPTION 'channel "%": a sql channel needs a handler function taking one text argument', register.channel
            USING ERRCODE = 'null_value_not_allowed';
    ELSIF ch.action_type <> 'sql' THEN
        IF register.handler IS NOT NULL THEN
            RAISE EXCEPTION 'channel "%": % channels take no handler', register.channel, ch.action_type
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        ch.handler := NULL;
    END IF;

    ch.concurrency_mode := COALESCE(register.concurrency_mode, ch.concurrency_mode);
    IF ch.concurrency_mode NOT IN ('parallel', 'channel') THEN
        RAISE EXCEPTION 'invalid concurrency_mode "%"', ch.concurrency_mode
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use parallel (the default) or channel (one event of the channel at a time).';
    END IF;
    ch.node_restricted := COALESCE(register.node_restricted, ch.node_restricted);
    ch.max_attempts := COALESCE(register.max_attempts, ch.max_attempts);
    IF ch.max_attempts < 1 OR ch.max_attempts > 1000 THEN
        RAISE EXCEPTION 'max_attempts must be between 1 and 1000, not %', ch.max_attempts
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    ch.timeout := COALESCE(register.timeout, ch.timeout);
    IF ch.timeout <= '0' OR ch.timeout > '24 hours' THEN
        RAISE EXCEPTION 'timeout must be positive and at most 24 hours, not %', ch.timeout
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    ch.backoff_base := COALESCE(register.backoff_base, ch.backoff_base);
    IF ch.backoff_base <= '0' THEN
        RAISE EXCEPTION 'backoff_base must be positive, not %', ch.backoff_base
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    ch.backoff_max := COALESCE(register.backoff_max, ch.backoff_max);
    IF ch.backoff_max < ch.backoff_base THEN
        RAISE EXCEPTION 'backoff_max (%) must not be less than backoff_base (%)', ch.backoff_max, ch.backoff_base
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    ch.active := COALESCE(register.active, ch.active);
    ch.description := COALESCE(register.description, ch.description);
    ch.updated_at := now();

    IF prev.channel IS NULL THEN
        INSERT INTO pgrelay.channels SELECT ch.*;
    ELSE
        UPDATE pgrelay.channels x
        SET action_type = ch.action_type, handler = ch.handler, active = ch.active,
            concurrency_mode = ch.concurrency_mode, node_restricted = ch.node_restricted,
            max_attempts = ch.max_attempts, timeout = ch.timeout,
            backoff_base = ch.backoff_base, backoff_max = ch.backoff_max,
            description = ch.description, updated_at = ch.updated_at
        WHERE x.channel = register.channel;
    END IF;
    PERFORM pgrelay.request_reload();
    RETURN ch;
END
$$;
COMMENT ON FUNCTION pgrelay.register(text, text, regprocedure, text, boolean, integer, interval, interval, interval, boolean, text) IS
    'Creates or updates a channel (named arguments; NULL keeps the current value) and asks the Processors to reload';

-- pgrelay.unregister()
CREATE FUNCTION pgrelay.unregister(channel text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    queued bigint;
BEGIN
    -- SHARE mode waits for transactions that are queueing events right now, so no event can
    -- commit into a channel that no longer exists.
    LOCK TABLE pgrelay.queue IN SHARE MODE;
    IF NOT EXISTS (SELECT 1 FROM pgrelay.channels x WHERE x.channel = unregister.channel) THEN
        RAISE EXCEPTION 'channel "%" does not exist', unregister.channel
            USING ERRCODE = 'undefined_object';
    END IF;
    SELECT count(*) INTO queued FROM pgrelay.queue q WHERE q.channel = unregister.channel;
    IF queued > 0 THEN
        RAISE EXCEPTION 'channel "%" still has % queued event(s)', unregister.channel, queued
            USING ERRCODE = 'object_in_use',
                  HINT = 'Deactivate it with pgrelay.register(channel, active => false) and let the queue drain.';
    END IF;
    DELETE FROM pgrelay.channels x WHERE x.channel = unregister.channel;
    PERFORM pgrelay.request_reload();
END
$$;
COMMENT ON FUNCTION pgrelay.unregister(text) IS 'Drops a channel that has no queued events';

-- pgrelay.retry_failed()
CREATE FUNCTION pgrelay.retry_failed(event_id bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Puts a failed event back in the queue as attempt 1 (a fresh max_attempts budget), keeping its
 * event_id so its history stays linked in pgrelay.log. Returns the new queue id.
 */
DECLARE
    f pgrelay.failed_events;
    c pgrelay.channels;
    v bigint;
BEGIN
    DELETE FROM pgrelay.failed_events x WHERE x.event_id = retry_failed.event_id RETURNING * INTO f;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'event % is not in pgrelay.failed', retry_failed.event_id
            USING ERRCODE = 'no_data_found';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = f.channel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" of event % does not exist any more', f.channel, f.event_id
            USING ERRCODE = 'undefined_object';
    END IF;
    v := pgrelay._next_id();
    INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, node_restricted,
                               attempt, run_at, queued_at)
    VALUES (v, f.event_id, f.channel, c.action_type, f.payload, c.node_restricted, 1, now(), now());
    RETURN v;
END
$$;
COMMENT ON FUNCTION pgrelay.retry_failed(bigint) IS
    'Re-queues a failed event (see pgrelay.failed) with a fresh attempt budget; returns the queue id';

-- pgrelay.discard_failed()
CREATE FUNCTION pgrelay.discard_failed(event_id bigint) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM pgrelay.failed_events x WHERE x.event_id = discard_failed.event_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'event % is not in pgrelay.failed', discard_failed.event_id
            USING ERRCODE = 'no_data_found';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay.discard_failed(bigint) IS
    'Forgets a failed event (its log rows stay)';

-- pgrelay.purge_log()
CREATE FUNCTION pgrelay.purge_log(older_than interval) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n bigint;
BEGIN
    IF older_than IS NULL OR older_than < '0' THEN
        RAISE EXCEPTION 'older_than must be a positive interval, not %', COALESCE(older_than::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Log ids start with their creation time, so the primary key is the retention index.
    DELETE FROM pgrelay.log l WHERE l.id < pgrelay._id_floor(now() - older_than);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION pgrelay.purge_log(interval) IS
    'Deletes log rows written more than older_than ago; returns how many';

--------------------------------------------------------------------------------
-- Operator views
--------------------------------------------------------------------------------

CREATE VIEW pgrelay.queue_depth AS
SELECT COALESCE(c.channel, q.channel) AS channel,
       COALESCE(c.action_type, q.action_type) AS action_type,
       COALESCE(c.active, false) AS active,
       count(q.id) AS queued,
       count(q.id) FILTER (WHERE q.run_at <= now()) AS due,
       count(q.id) FILTER (WHERE q.attempt > 1) AS retrying,
       now() - min(q.run_at) FILTER (WHERE q.run_at <= now()) AS oldest_due_age,
       min(q.run_at) FILTER (WHERE q.run_at > now()) AS next_run_at
FROM pgrelay.channels c
FULL JOIN pgrelay.queue q ON q.channel = c.channel
GROUP BY 1, 2, 3;
COMMENT ON VIEW pgrelay.queue_depth IS
    'Per channel: queued and due events, retries waiting, age of the oldest due event';

CREATE VIEW pgrelay.failed AS
SELECT f.event_id, f.channel, f.action_type, f.payload, f.attempts, f.error, f.sqlstate,
       f.failed_at, f.queued_at, f.log_id, f.node_id
FROM pgrelay.failed_events f;
COMMENT ON VIEW pgrelay.failed IS
    'Events that failed for good (permanent error or attempts exhausted), newest last';

--------------------------------------------------------------------------------
-- Privileges: PUBLIC gets nothing; each role gets what its job needs
--------------------------------------------------------------------------------
REVOKE ALL ON SCHEMA pgrelay FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA pgrelay FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA pgrelay FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgrelay FROM PUBLIC;

GRANT USAGE ON SCHEMA pgrelay TO pgrelay_producer, pgrelay_processor, pgrelay_admin;

GRANT EXECUTE ON FUNCTION pgrelay.notify(text, text, timestamptz) TO pgrelay_producer;

GRANT EXECUTE ON FUNCTION
    pgrelay.queue_probe(bigint),
    pgrelay.queue_has_work(),
    pgrelay.queue_pending_ids(integer),
    pgrelay.process_one(bigint),
    pgrelay._queue_claim(bigint),
    pgrelay._write_log(bigint, text, text, text, timestamptz, jsonb, timestamptz),
    pgrelay._queue_mark_done(bigint),
    pgrelay._complete(bigint, text, text, text, timestamptz),
    pgrelay._queue_defer(bigint, timestamptz),
    pgrelay.should_dispatch_single(),
    pgrelay.interface_version(),
    pgrelay._this_node(),
    pgrelay._classify_error(text),
    pgrelay._handler_sql(text),
    pgrelay.decode_id(bigint)
TO pgrelay_processor;

GRANT EXECUTE ON FUNCTION
    pgrelay.register(text, text, regprocedure, text, boolean, integer, interval, interval, interval, boolean, text),
    pgrelay.unregister(text),
    pgrelay.pause(),
    pgrelay.resume(),
    pgrelay.request_reload(),
    pgrelay.retry_failed(bigint),
    pgrelay.discard_failed(bigint),
    pgrelay.purge_log(interval),
    pgrelay.queue_probe(bigint),
    pgrelay.queue_has_work(),
    pgrelay.interface_version(),
    pgrelay._this_node(),
    pgrelay.decode_id(bigint)
TO pgrelay_admin;

GRANT SELECT ON pgrelay.channels, pgrelay.action_types, pgrelay.queue, pgrelay.log,
                pgrelay.failed_events, pgrelay.control, pgrelay.queue_depth, pgrelay.failed
TO pgrelay_admin;
GRANT UPDATE (run_order, description) ON pgrelay.action_types TO pgrelay_admin;
GRANT SELECT ON pgrelay.queue_depth, pgrelay.failed TO pgrelay_processor;
