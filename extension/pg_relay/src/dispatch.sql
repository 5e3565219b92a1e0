/* extension/pg_relay/src/dispatch.sql: what the Processor runs every tick: the probe and the fetch of pending ids */

-- pgrelay._has_due_work()
CREATE OR REPLACE FUNCTION pgrelay._has_due_work(free_any boolean DEFAULT true, restricted_any boolean DEFAULT true,
                                      own_free boolean DEFAULT false, own_restricted boolean DEFAULT false,
                                      node integer DEFAULT 0)
RETURNS TABLE (has_work boolean)
LANGUAGE sql STABLE AS $$
    -- Is an event of the dispatch scope (_dispatch_scope) due? One index probe per action type
    -- and part of the scope: unrestricted rows of any owner on queue_free_idx, a node's own rows
    -- on queue_node_idx; restricted rows of any owner (single mode, where they are rare) with one
    -- look at queue_node_idx. So a node whose scope is empty costs the
    -- same however many rows other nodes own, and the probe never reads pgrelay.log. A set-
    -- returning SQL function so that the planner inlines it and EXPLAIN can show this plan; the
    -- parts left out of the scope are never run.
    --
    -- Each part is a LATERAL ... ORDER BY <the index's order> LIMIT 1. The LIMIT keeps the planner
    -- from turning it into a join that reads every due row; the ORDER BY makes any other path
    -- sort every candidate first, so even a generic plan (PL/pgSQL keeps one), which guesses a
    -- node's share of the queue from the average owner, reads the index: with every row owned by
    -- one node, a sequential scan "stopping at the first row" would read all of them for a node
    -- that owns none.
    SELECT (free_any AND EXISTS (SELECT 1 FROM pgrelay.action_types a
                                 CROSS JOIN LATERAL (SELECT 1 FROM pgrelay.queue q
                                                     WHERE NOT q.node_restricted
                                                       AND q.action_type = a.action_type
                                                       AND q.run_at <= pg_catalog.now()
                                                     ORDER BY q.run_at LIMIT 1) due))
        OR (restricted_any AND EXISTS (SELECT 1 FROM pgrelay.queue q
                                       WHERE q.node_restricted AND q.run_at <= pg_catalog.now()))
        OR (own_free AND EXISTS (SELECT 1 FROM pgrelay.action_types a
                                 CROSS JOIN LATERAL (SELECT 1 FROM pgrelay.queue q
                                                     WHERE NOT q.node_restricted
                                                       AND q.owner_node = node
                                                       AND q.action_type = a.action_type
                                                       AND q.run_at <= pg_catalog.now()
                                                     ORDER BY q.run_at LIMIT 1) due))
        OR (own_restricted AND EXISTS (SELECT 1 FROM pgrelay.action_types a
                                       CROSS JOIN LATERAL (SELECT 1 FROM pgrelay.queue q
                                                           WHERE q.node_restricted
                                                             AND q.owner_node = node
                                                             AND q.action_type = a.action_type
                                                             AND q.run_at <= pg_catalog.now()
                                                           ORDER BY q.run_at LIMIT 1) due))
$$;
COMMENT ON FUNCTION pgrelay._has_due_work(boolean, boolean, boolean, boolean, integer) IS
    'Is an event of a dispatch scope due? (the query behind queue_has_work and queue_probe)';

-- pgrelay.queue_has_work()
CREATE OR REPLACE FUNCTION pgrelay.queue_has_work() RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN (SELECT p.has_work FROM pgrelay.queue_probe() p);
END
$$;
COMMENT ON FUNCTION pgrelay.queue_has_work() IS
    'true when at least one queued event this session may dispatch is due (any event in single mode)';

-- pgrelay.queue_probe()
CREATE OR REPLACE FUNCTION pgrelay.queue_probe(seen_generation bigint DEFAULT NULL,
                                    OUT has_work boolean, OUT reload_requested boolean,
                                    OUT paused boolean, OUT reload_generation bigint,
                                    OUT schedule_due boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * PL/pgSQL, not SQL: a SECURITY DEFINER SQL function is never inlined, and PostgreSQL plans the
 * body of a SQL function afresh on every call, which made planning (~0.2 ms) most of the cost of
 * a probe. PL/pgSQL plans this statement once per session (docs/benchmarks.md).
 *
 * has_work looks only at the events the session's dispatch rule offers (settings pg_relay.mode,
 * pg_relay.node_id, pg_relay.is_leader; every event in single mode, which skips reading them).
 * An empty queue (the idle case) is answered by the first statement alone.
 *
 * schedule_due: an active schedule's next occurrence has come (one look at the index of
 * pgrelay.schedule_entries, in the same first statement): the Processor then runs
 * pgrelay._schedule_fire(), which fires on the one node that fires schedules. Never on a standby.
 */
DECLARE
    scope_free boolean := true;
    scope_restricted boolean := true;
    scope_own_free boolean := false;
    scope_own_restricted boolean := false;
    scope_node integer := 0;
    ctx record;
BEGIN
    -- First the flags, and whether the queue holds any row at all: an idle queue is empty, and
    -- then this one statement is the whole probe (half the cost of the statement below).
    SELECT EXISTS (SELECT 1 FROM pgrelay.queue q),
           queue_probe.seen_generation IS NOT NULL AND c.reload_generation > queue_probe.seen_generation,
           c.paused,
           c.reload_generation,
           EXISTS (SELECT 1 FROM pgrelay.schedule_entries s WHERE s.active AND s.next_run_at <= pg_catalog.now())
           AND NOT pg_catalog.pg_is_in_recovery()
    INTO queue_probe.has_work, queue_probe.reload_requested, queue_probe.paused,
         queue_probe.reload_generation, queue_probe.schedule_due
    FROM pgrelay.control c;
    IF NOT queue_probe.has_work THEN
        RETURN;
    END IF;
    IF COALESCE(current_setting('pg_relay.mode', true), '') NOT IN ('', 'single') THEN
        SELECT * INTO ctx FROM pgrelay._dispatch_context();
        SELECT s.free_any, s.restricted_any, s.own_free, s.own_restricted
        INTO scope_free, scope_restricted, scope_own_free, scope_own_restricted
        FROM pgrelay._dispatch_scope(ctx.mode, ctx.is_leader) s;
        scope_node := ctx.node;
    END IF;
    has_work := (SELECT d.has_work
                 FROM pgrelay._has_due_work(scope_free, scope_restricted, scope_own_free, scope_own_restricted,
                                            scope_node) d);
END
$$;
COMMENT ON FUNCTION pgrelay.queue_probe(bigint) IS
    'The Processor''s tick probe: is work of this session''s dispatch scope due, was a reload requested since seen_generation, is dispatch paused, is a schedule due';

-- pgrelay.queue_pending_ids()
CREATE OR REPLACE FUNCTION pgrelay.queue_pending_ids(max_rows integer DEFAULT NULL)
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
 * Returns nothing while dispatch is paused; a paused or inactive channel offers nothing.
 *
 * The dispatch rule (_dispatch_allowed) is applied as the scope of _dispatch_scope: each part of
 * it is read from its own index (as in _has_due_work), so rows the rule does not offer this node
 * are never read. A part left out of the scope is not run.
 */
#variable_conflict use_column
DECLARE
    ctx record;
    s record;
BEGIN
    IF max_rows IS NOT NULL AND max_rows < 1 THEN
        RAISE EXCEPTION 'max_rows must be positive, not %', max_rows
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (SELECT c.paused FROM pgrelay.control c) THEN
        RETURN;
    END IF;
    SELECT * INTO ctx FROM pgrelay._dispatch_context();
    SELECT * INTO s FROM pgrelay._dispatch_scope(ctx.mode, ctx.is_leader);

    RETURN QUERY
    WITH free_rows AS (
        -- unrestricted rows of any owner (queue_free_idx)
        SELECT f.*
        FROM pgrelay.action_types a
        CROSS JOIN LATERAL (
            SELECT q.id, q.action_type, q.channel, q.run_at, q.queued_at, q.attempt,
                   a.run_order, c.concurrency_mode, c.timeout
            FROM pgrelay.queue q
            JOIN pgrelay.channels c ON c.channel = q.channel
            WHERE NOT q.node_restricted
              AND q.action_type = a.action_type
              AND q.run_at <= now()
              AND c.active AND NOT c.paused
            ORDER BY q.run_at, q.queued_at, q.id
            LIMIT max_rows
            FOR UPDATE OF q SKIP LOCKED
        ) f
        WHERE s.free_any
    ), restricted_rows AS (
        -- restricted rows of any owner (queue_node_idx): single mode only
        SELECT r.*
        FROM pgrelay.action_types a
        CROSS JOIN LATERAL (
            SELECT q.id, q.action_type, q.channel, q.run_at, q.queued_at, q.attempt,
                   a.run_order, c.concurrency_mode, c.timeout
            FROM pgrelay.queue q
            JOIN pgrelay.channels c ON c.channel = q.channel
            WHERE q.node_restricted
              AND q.action_type = a.action_type
              AND q.run_at <= now()
              AND c.active AND NOT c.paused
            ORDER BY q.run_at, q.queued_at, q.id
            LIMIT max_rows
            FOR UPDATE OF q SKIP LOCKED
        ) r
        WHERE s.restricted_any
    ), own_rows AS (
        -- this node's rows, unrestricted and restricted as the scope says (queue_node_idx)
        SELECT o.*
        FROM (VALUES (false, s.own_free), (true, s.own_restricted)) k(restricted, wanted)
        CROSS JOIN pgrelay.action_types a
        CROSS JOIN LATERAL (
            SELECT q.id, q.action_type, q.channel, q.run_at, q.queued_at, q.attempt,
                   a.run_order, c.concurrency_mode, c.timeout
            FROM pgrelay.queue q
            JOIN pgrelay.channels c ON c.channel = q.channel
            WHERE q.node_restricted = k.restricted
              AND q.owner_node = ctx.node
              AND q.action_type = a.action_type
              AND q.run_at <= now()
              AND c.active AND NOT c.paused
            ORDER BY q.run_at, q.queued_at, q.id
            LIMIT max_rows
            FOR UPDATE OF q SKIP LOCKED
        ) o
        WHERE k.wanted
    ), cand AS (
        SELECT * FROM free_rows
        UNION ALL SELECT * FROM restricted_rows
        UNION ALL SELECT * FROM own_rows
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

-- pgrelay._queue_fetch()
CREATE OR REPLACE FUNCTION pgrelay._queue_fetch(max_rows integer)
RETURNS TABLE (id bigint, action_type text, channel text, timeout_ms integer, attempt integer, batch boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER
-- jit off: as queue_pending_ids
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
/*
 * The Processor's fetch: the rows queue_pending_ids() offers, in the same order and under the
 * same rule, but read without row locks, and with whether each event may be finished in a batch
 * (its channel's batch setting; sql events only). The claim is the one row lock an event takes:
 * a fetch that locked its rows too (for the length of its statement) would take a second, and
 * write it, for every event. So a row in flight is offered again: the Processor leaves out the
 * ids its own workers hold, and the claim skips a row another Processor holds. A channel that
 * runs one event at a time offers its first row even while that row is in flight (and so
 * nothing until it is done).
 */
#variable_conflict use_column
DECLARE
    ctx record;
    s record;
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RAISE EXCEPTION 'max_rows must be positive, not %', max_rows
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (SELECT c.paused FROM pgrelay.control c) THEN
        RETURN;
    END IF;
    SELECT * INTO ctx FROM pgrelay._dispatch_context();
    SELECT * INTO s FROM pgrelay._dispatch_scope(ctx.mode, ctx.is_leader);

    RETURN QUERY
    WITH cand AS (
        -- unrestricted rows of any owner (queue_free_idx)
        SELECT f.*
        FROM pgrelay.action_types a
        CROSS JOIN LATERAL (
            SELECT q.id, q.action_type, q.channel, q.run_at, q.queued_at, q.attempt,
                   a.run_order, c.concurrency_mode, c.timeout, c.batch
            FROM pgrelay.queue q
            JOIN pgrelay.channels c ON c.channel = q.channel
            WHERE NOT q.node_restricted
              AND q.action_type = a.action_type
              AND q.run_at <= now()
              AND c.active AND NOT c.paused
            ORDER BY q.run_at, q.queued_at, q.id
            LIMIT max_rows
        ) f
        WHERE s.free_any
        UNION ALL
        -- restricted rows of any owner (queue_node_idx): single mode only
        SELECT r.*
        FROM pgrelay.action_types a
        CROSS JOIN LATERAL (
            SELECT q.id, q.action_type, q.channel, q.run_at, q.queued_at, q.attempt,
                   a.run_order, c.concurrency_mode, c.timeout, c.batch
            FROM pgrelay.queue q
            JOIN pgrelay.channels c ON c.channel = q.channel
            WHERE q.node_restricted
              AND q.action_type = a.action_type
              AND q.run_at <= now()
              AND c.active AND NOT c.paused
            ORDER BY q.run_at, q.queued_at, q.id
            LIMIT max_rows
        ) r
        WHERE s.restricted_any
        UNION ALL
        -- this node's rows, unrestricted and restricted as the scope says (queue_node_idx)
        SELECT o.*
        FROM (VALUES (false, s.own_free), (true, s.own_restricted)) k(restricted, wanted)
        CROSS JOIN pgrelay.action_types a
        CROSS JOIN LATERAL (
            SELECT q.id, q.action_type, q.channel, q.run_at, q.queued_at, q.attempt,
                   a.run_order, c.concurrency_mode, c.timeout, c.batch
            FROM pgrelay.queue q
            JOIN pgrelay.channels c ON c.channel = q.channel
            WHERE q.node_restricted = k.restricted
              AND q.owner_node = ctx.node
              AND q.action_type = a.action_type
              AND q.run_at <= now()
              AND c.active AND NOT c.paused
            ORDER BY q.run_at, q.queued_at, q.id
            LIMIT max_rows
        ) o
        WHERE k.wanted
    ), ranked AS (
        SELECT cand.*,
               row_number() OVER (PARTITION BY cand.channel
                                  ORDER BY cand.run_at, cand.queued_at, cand.id) AS rn
        FROM cand
    )
    SELECT r.id, r.action_type, r.channel,
           (date_part('epoch', r.timeout) * 1000)::integer,
           r.attempt,
           r.batch AND r.action_type = 'sql'
    FROM ranked r
    WHERE r.concurrency_mode = 'parallel' OR r.rn = 1
    ORDER BY r.run_order NULLS LAST, r.run_at, r.queued_at, r.id
    LIMIT max_rows;
END
$$;
COMMENT ON FUNCTION pgrelay._queue_fetch(integer) IS
    'The Processor''s fetch: queue_pending_ids() without row locks, with whether each event may batch';
