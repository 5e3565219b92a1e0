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

-- pgrelay._floor_key()
CREATE OR REPLACE FUNCTION pgrelay._floor_key(own boolean, restricted boolean, action_type text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    -- Internal: the key of a part of the queue and action type in the floors of a bound
    -- (_queue_bound writes them, _queue_fetch reads them): "<action type>" for the unrestricted
    -- rows of any owner (single mode), "own:<action type>" and "own restricted:<action type>" for
    -- this node's own rows. Inlined into the statements that use it.
    SELECT CASE WHEN NOT own THEN '' WHEN restricted THEN 'own restricted:' ELSE 'own:' END || action_type
$$;
COMMENT ON FUNCTION pgrelay._floor_key(boolean, boolean, text) IS
    'Internal: the key of a part of the queue and action type in the floors of the probe''s bound';

-- pgrelay._queue_bound()
CREATE OR REPLACE FUNCTION pgrelay._queue_bound(bound jsonb, mode text DEFAULT 'single', node integer DEFAULT 0,
                                                OUT next_bound jsonb, OUT due boolean)
LANGUAGE plpgsql STABLE AS $$
/*
 * Internal (queue_probe, with the Processor's bound): a lower bound, per part of the queue and
 * action type, on the run_at of every row of the part that is pending or may yet become visible,
 * so that the probe and the fetch start their index scans there instead of at the start of the
 * part's index. Without it they step over the index entry of every row finished since the oldest
 * snapshot any session holds (a long REPEATABLE READ transaction, a standby's
 * hot_standby_feedback, a replication slot): while it is held no vacuum may remove them, and each
 * entry costs a visit of its heap tuple (docs/architecture.md, "A held snapshot").
 *
 * The parts with floors are those whose rows only this node writes (mode, node; keys: _floor_key):
 *   single      unrestricted rows (queue_free_idx)
 *   multi-node  this node's own rows, unrestricted and restricted (queue_node_idx)
 *   leader      this node's own restricted rows; not the unrestricted rows the leader runs, whose
 *               retries other nodes write
 * A multi-node node's own rows are queued by its notify(), its schedules and its own retries; a
 * row it adopts keeps the dead node's run_at, so the caller starts the bound again from none after
 * an adoption (_ha_tick).
 *
 * bound is the jsonb this function returned last time (the Processor keeps it; '{}' to begin):
 *   floor  {key: run_at}: no row of the part and type below it can be pending (the bound itself)
 *   safe   every transaction that wrote pgrelay.queue and read the clock before this time has ended
 *          and is visible to this statement's snapshot, so a row of it can only be below a floor if
 *          this scan sees it
 *   ready  a time found safe by the previous call, in a statement whose snapshot may predate the
 *          commits it waited for: safe from this call on
 *   at, wait  the time being proved safe, and the transactions that held a write lock on
 *          pgrelay.queue just after it (pg_locks): once none of them holds one, it is
 *   swept  when the floors were last dropped: once a minute they are, and one scan from the start
 *          finds whatever an unforeseen writer put below them (a row delayed, never lost); a
 *          clock earlier than any time in the bound drops all of it
 *   every  how long at least between two looks at pg_locks (100 ms; each costs about 18 us with
 *          100 connections); the isolation tests set 0
 *
 * Each call must read with a snapshot taken after the previous call returned (one statement per
 * call outside REPEATABLE READ and SERIALIZABLE, as the Processor's probes are): `ready` is
 * proved against the transactions the previous call saw end.
 *
 * Why a floor is sound: every statement that writes a queue row's run_at takes its lock on
 * pgrelay.queue first and writes at least clock_timestamp() read in that statement (_run_at():
 * notify(), _enqueue(), retries, snoozes and deferrals all write through it). A row whose run_at
 * is below `at` was written by a transaction that held its lock before `at`, so in `wait` or
 * already ended; once `wait` is gone that row is committed (or rolled back) and visible to any
 * later snapshot. So the floor min(first row this scan sees, safe) holds for good. Not for rows
 * other nodes write: they arrive by replication with the run_at of their origin, at any time.
 */
DECLARE
    t timestamptz := pg_catalog.clock_timestamp();
    safe timestamptz := COALESCE((bound ->> 'ready')::timestamptz, (bound ->> 'safe')::timestamptz);
    ready timestamptz;
    at timestamptz := (bound ->> 'at')::timestamptz;
    wait text[] := ARRAY(SELECT pg_catalog.jsonb_array_elements_text(COALESCE(bound -> 'wait', '[]')));
    swept timestamptz := (bound ->> 'swept')::timestamptz;
    floors jsonb := COALESCE(bound -> 'floor', '{}');
    every interval := COALESCE((bound ->> 'every')::interval, interval '100 ms');
BEGIN
    -- A clock stepped back would leave floors and times above the rows written from now on: start
    -- again from none, as a new Processor does.
    IF t < GREATEST(at, swept, safe) THEN
        floors := '{}';
        at := NULL;
        wait := '{}';
        safe := NULL;
        swept := t;
    END IF;
    -- the clock first, then the writers: one that took its lock after this look reads a later clock
    IF at IS NULL OR (t - at >= every AND (pg_catalog.cardinality(wait) = 0 OR NOT EXISTS (
            SELECT 1 FROM pg_catalog.pg_locks l
            WHERE l.locktype = 'relation' AND l.relation = 'pgrelay.queue'::regclass
              AND l.virtualtransaction = ANY (wait)))) THEN
        ready := at;
        at := t;
        wait := ARRAY(SELECT DISTINCT l.virtualtransaction FROM pg_catalog.pg_locks l
                      WHERE l.locktype = 'relation' AND l.relation = 'pgrelay.queue'::regclass
                        AND l.mode IN ('RowExclusiveLock', 'ShareRowExclusiveLock', 'ExclusiveLock',
                                       'AccessExclusiveLock')
                        AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid());
    END IF;
    IF swept IS NULL OR t - swept >= interval '60 s' THEN
        floors := '{}';
        swept := t;
    END IF;
    -- per part and action type, the first row at or above its floor, due or not, of any channel
    SELECT COALESCE(bool_or(f.first <= pg_catalog.now()), false),
           COALESCE(jsonb_object_agg(f.key, f.floor) FILTER (WHERE f.floor IS NOT NULL), '{}')
    INTO due, floors
    FROM (SELECT o.key, COALESCE(n.run_at, m.run_at) AS first,
                 CASE WHEN safe IS NULL THEN o.floor
                      ELSE GREATEST(o.floor, LEAST(COALESCE(n.run_at, m.run_at), safe)) END AS floor
          FROM (VALUES (false, false), (true, false), (true, true)) k(own, restricted)
          CROSS JOIN pgrelay.action_types a
          CROSS JOIN LATERAL (SELECT x.key, (floors ->> x.key)::timestamptz AS floor
                              FROM (SELECT pgrelay._floor_key(k.own, k.restricted, a.action_type) AS key) x) o
          -- single mode: unrestricted rows of any owner (queue_free_idx)
          LEFT JOIN LATERAL (SELECT q.run_at FROM pgrelay.queue q
                             WHERE NOT k.own AND NOT q.node_restricted AND q.action_type = a.action_type
                               AND q.run_at >= COALESCE(o.floor, '-infinity')
                             ORDER BY q.run_at LIMIT 1) n ON true
          -- multi-node and leader: this node's own rows (queue_node_idx)
          LEFT JOIN LATERAL (SELECT q.run_at FROM pgrelay.queue q
                             WHERE k.own AND q.node_restricted = k.restricted
                               AND q.owner_node = _queue_bound.node AND q.action_type = a.action_type
                               AND q.run_at >= COALESCE(o.floor, '-infinity')
                             ORDER BY q.run_at LIMIT 1) m ON true
          WHERE CASE _queue_bound.mode WHEN 'single' THEN NOT k.own
                                       WHEN 'multi-node' THEN k.own
                                       WHEN 'leader' THEN k.own AND k.restricted END) f;
    next_bound := jsonb_build_object('floor', floors, 'safe', safe, 'ready', ready, 'at', at,
                                     'wait', to_jsonb(wait), 'swept', swept)
                  || CASE WHEN bound ? 'every' THEN jsonb_build_object('every', bound -> 'every') ELSE '{}' END;
END
$$;
COMMENT ON FUNCTION pgrelay._queue_bound(jsonb, text, integer) IS
    'Internal: the probe''s floors under finished queue rows (the parts only this node writes), and whether a row above them is due';

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
CREATE OR REPLACE FUNCTION pgrelay.queue_probe(seen_generation bigint DEFAULT NULL, bound jsonb DEFAULT NULL,
                                    OUT has_work boolean, OUT reload_requested boolean,
                                    OUT paused boolean, OUT reload_generation bigint,
                                    OUT schedule_due boolean, OUT next_bound jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan AS $$
/*
 * PL/pgSQL, not SQL: a SECURITY DEFINER SQL function is never inlined, and PostgreSQL plans the
 * body of a SQL function afresh on every call, which made planning (~0.2 ms) most of the cost of
 * a probe. PL/pgSQL plans this statement once per session (docs/design/benchmark-notes.md).
 *
 * force_generic_plan, for these statements and those of _queue_bound, which runs under it: the
 * statements that take the bound's times as parameters would otherwise be planned again on every
 * call whenever the planner's estimate for the given times came out below its estimate for any
 * time, which depends on the statistics of the moment and on the session's history: a long-lived
 * session's probe cost 75-125 us instead of 46. The plan for any time is the one wanted anyway:
 * an index scan from the floor, LIMIT 1 (probe_plan checks the setting).
 *
 * has_work looks only at the events the session's dispatch rule offers (settings pg_relay.mode,
 * pg_relay.node_id, pg_relay.is_leader; every event in single mode, which skips reading them).
 * An empty queue (the idle case) is answered by the first statement alone.
 *
 * schedule_due: an active schedule's next occurrence has come (one look at the index of
 * pgrelay.schedule_entries, in the same first statement): the Processor then runs
 * pgrelay._schedule_fire(), which fires on the one node that fires schedules. Never on a standby.
 *
 * bound (the Processor passes what next_bound said last time, '{}' to begin): the floors of
 * _queue_bound(), so that the parts of the queue only this node writes are looked for from there
 * on, not from the start of their index, and the queue is not read from its first heap page: both
 * step over every row finished since the oldest snapshot a session holds. The other parts
 * (restricted rows in single mode, the leader's unrestricted rows) are read as without a bound.
 * next_bound is NULL without one, and on a standby.
 */
DECLARE
    scope_free boolean := true;
    scope_restricted boolean := true;
    scope_own_free boolean := false;
    scope_own_restricted boolean := false;
    scope_node integer := 0;
    ctx record;
    -- not on a standby: its rows come by replay, which takes no lock and keeps the primary's run_at
    bounded boolean := queue_probe.bound IS NOT NULL AND NOT pg_catalog.pg_is_in_recovery();
    scope_mode text := 'single';
BEGIN
    -- First the flags, and whether the queue holds any row at all: an idle queue is empty, and
    -- then this one statement is the whole probe (half the cost of the statement below).
    SELECT NOT bounded AND EXISTS (SELECT 1 FROM pgrelay.queue q),
           queue_probe.seen_generation IS NOT NULL AND c.reload_generation > queue_probe.seen_generation,
           c.paused,
           c.reload_generation,
           EXISTS (SELECT 1 FROM pgrelay.schedule_entries s WHERE s.active AND s.next_run_at <= pg_catalog.now())
           AND NOT pg_catalog.pg_is_in_recovery()
    INTO queue_probe.has_work, queue_probe.reload_requested, queue_probe.paused,
         queue_probe.reload_generation, queue_probe.schedule_due
    FROM pgrelay.control c;
    IF NOT bounded AND NOT queue_probe.has_work THEN
        RETURN;
    END IF;
    IF COALESCE(current_setting('pg_relay.mode', true), '') NOT IN ('', 'single') THEN
        SELECT * INTO ctx FROM pgrelay._dispatch_context();
        SELECT s.free_any, s.restricted_any, s.own_free, s.own_restricted
        INTO scope_free, scope_restricted, scope_own_free, scope_own_restricted
        FROM pgrelay._dispatch_scope(ctx.mode, ctx.is_leader) s;
        scope_node := ctx.node;
        scope_mode := ctx.mode;
    END IF;
    IF bounded THEN
        -- the parts only this node writes from their floors on (single mode: the unrestricted
        -- rows; multi-node: the node's own rows; leader: its own restricted rows), the rest as
        -- without a bound (single: the restricted rows; leader: the unrestricted rows it leads)
        SELECT b.next_bound, b.due INTO queue_probe.next_bound, queue_probe.has_work
        FROM pgrelay._queue_bound(queue_probe.bound, scope_mode, scope_node) b;
        has_work := has_work OR (SELECT d.has_work
                                 FROM pgrelay._has_due_work(scope_free AND scope_mode = 'leader', scope_restricted,
                                                            false, false, scope_node) d);
        RETURN;
    END IF;
    has_work := (SELECT d.has_work
                 FROM pgrelay._has_due_work(scope_free, scope_restricted, scope_own_free, scope_own_restricted,
                                            scope_node) d);
END
$$;
COMMENT ON FUNCTION pgrelay.queue_probe(bigint, jsonb) IS
    'The Processor''s tick probe: is work of this session''s dispatch scope due, was a reload requested since seen_generation, is dispatch paused, is a schedule due; bound: the floors under finished rows';

-- pgrelay.queue_pending_ids()
CREATE OR REPLACE FUNCTION pgrelay.queue_pending_ids(max_rows integer DEFAULT NULL)
RETURNS TABLE (id bigint, action_type text, channel text, timeout_ms integer, attempt integer)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
-- jit off: action_types is far too small for autovacuum to ever analyze it, so the planner
-- guesses 850 rows and a cost over jit_above_cost; compiling the plan took 60-160 ms per call
-- for a query that runs in 2 ms (docs/design/benchmark-notes.md).
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
CREATE OR REPLACE FUNCTION pgrelay._queue_fetch(max_rows integer, bound jsonb DEFAULT NULL)
RETURNS TABLE (id bigint, action_type text, channel text, timeout_ms integer, attempt integer, batch boolean,
               event_id bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
-- jit off: as queue_pending_ids; force_generic_plan: as queue_probe (planned for the given
-- floors, a fetch of 50 rows cost 640 us instead of 144)
SET search_path = pg_catalog, pg_temp SET jit = off SET plan_cache_mode = force_generic_plan AS $$
/*
 * The Processor's fetch: the rows queue_pending_ids() offers, in the same order and under the
 * same rule, but read without row locks, and with whether each event may be finished in a batch
 * (its channel's batch setting; sql events only), and the event each row is an attempt of
 * (event_id: the Processor's log lines name it, the same across retries). The claim is the one row lock an event takes:
 * a fetch that locked its rows too (for the length of its statement) would take a second, and
 * write it, for every event. So a row in flight is offered again: the Processor leaves out the
 * ids its own workers hold, and the claim skips a row another Processor holds. A channel that
 * runs one event at a time offers its first row even while that row is in flight (and so
 * nothing until it is done).
 *
 * bound: what queue_probe() returned as next_bound: the parts of the queue only this node writes
 * (single mode: the unrestricted rows; multi-node: its own rows; leader: its own restricted rows)
 * are read from their floors on, per action type (_queue_bound says why that loses none).
 */
#variable_conflict use_column
DECLARE
    ctx record;
    s record;
    floors jsonb;
    single boolean;
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
    floors := COALESCE(bound -> 'floor', '{}');
    single := ctx.mode = 'single';

    RETURN QUERY
    WITH cand AS (
        -- unrestricted rows of any owner (queue_free_idx)
        SELECT f.*
        FROM pgrelay.action_types a
        CROSS JOIN LATERAL (
            SELECT q.id, q.action_type, q.channel, q.run_at, q.queued_at, q.attempt,
                   a.run_order, c.concurrency_mode, c.timeout, c.batch, q.event_id
            FROM pgrelay.queue q
            JOIN pgrelay.channels c ON c.channel = q.channel
            WHERE NOT q.node_restricted
              AND q.action_type = a.action_type
              -- floors only in single mode: the leader's unrestricted rows are retried by others
              AND q.run_at >= COALESCE(CASE WHEN single
                                       THEN (floors ->> pgrelay._floor_key(false, false, a.action_type))::timestamptz
                                       END, '-infinity')
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
                   a.run_order, c.concurrency_mode, c.timeout, c.batch, q.event_id
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
                   a.run_order, c.concurrency_mode, c.timeout, c.batch, q.event_id
            FROM pgrelay.queue q
            JOIN pgrelay.channels c ON c.channel = q.channel
            WHERE q.node_restricted = k.restricted
              AND q.owner_node = ctx.node
              AND q.action_type = a.action_type
              AND q.run_at >= COALESCE((floors ->> pgrelay._floor_key(true, k.restricted, a.action_type))::timestamptz,
                                       '-infinity')
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
           r.batch AND r.action_type = 'sql',
           r.event_id
    FROM ranked r
    WHERE r.concurrency_mode = 'parallel' OR r.rn = 1
    ORDER BY r.run_order NULLS LAST, r.run_at, r.queued_at, r.id
    LIMIT max_rows;
END
$$;
COMMENT ON FUNCTION pgrelay._queue_fetch(integer, jsonb) IS
    'The Processor''s fetch: queue_pending_ids() without row locks, with whether each event may batch and its event id';
