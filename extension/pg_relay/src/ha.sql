/* extension/pg_relay/src/ha.sql: high availability: membership, heartbeats, the dead-node rule, adoption, leadership, replication set-up */

/*
 * How the nodes of a multi-master cluster share the queue (docs/ha.md has the whole story):
 *
 *   membership   cluster_nodes(): every node the replication engine knows (Spock, else pglogical,
 *                else the static table pgrelay.nodes), its pg_relay node id (pgrelay.nodes maps
 *                engine node names to ids) and whether the engine reports the link from it up.
 *   heartbeats   every tick each Processor writes its node's row of pgrelay.heartbeats (replicated);
 *                the row also says which beats of its peers it has seen (acknowledgements).
 *   observation  each node keeps what it saw of its peers' beats, and when by its own clock, in the
 *                unlogged table pgrelay.peer_observations (never replicated).
 *   dead         a peer whose beat has not moved for dead_after of the observer's clock AND whose
 *                link the engine does not report up. The lowest-id live node adopts a dead node's
 *                unrestricted rows (multi-node); the lowest live node leads (leader).
 *   in contact   a node dispatches its own rows (multi-node) or leads (leader) only while every
 *                peer it hears from has acknowledged one of its beats within dead_after / 2: a peer
 *                that might decide it is dead has by then heard from it, or it has stopped.
 */

-- The internal functions of the tick (_heartbeat, _verdicts, _ha_observe, _adopt) run every poll
-- interval on tables of a few rows: they keep one generic plan per statement
-- (plan_cache_mode = force_generic_plan) instead of planning again on every call, which made most of
-- a tick's cost.

-- pgrelay._dead_after_setting()
CREATE OR REPLACE FUNCTION pgrelay._dead_after_setting(dead_after interval DEFAULT NULL) RETURNS interval
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (_dead_after): the argument, else the setting pg_relay.dead_after, else 60 seconds;
 * checked to lie between 100 milliseconds and 1 day.
 */
DECLARE
    v text;
BEGIN
    IF dead_after IS NULL THEN
        v := current_setting('pg_relay.dead_after', true);
        IF v IS NULL OR btrim(v) = '' THEN
            RETURN interval '60 seconds';
        END IF;
        BEGIN
            dead_after := v::interval;
        EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
            RAISE EXCEPTION 'invalid pg_relay.dead_after "%"', pgrelay._show(v)
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = 'A duration between 100 milliseconds and 1 day, such as 60s.';
        END;
    END IF;
    IF NOT pgrelay._duration_ok(dead_after, '100 milliseconds', '1 day') THEN
        RAISE EXCEPTION 'dead_after must be between 100 milliseconds and 1 day, not %', dead_after
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN dead_after;
END
$$;
COMMENT ON FUNCTION pgrelay._dead_after_setting(interval) IS
    'dead_after as set: the argument, else the setting pg_relay.dead_after, else 60 s (100 ms to 1 day)';

-- pgrelay._engine_reconnect()
CREATE OR REPLACE FUNCTION pgrelay._engine_reconnect(OUT delay interval, OUT setting text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (_dead_after): how long the replication engine leaves the link from a peer down after
 * that peer's server restarted, before this node's apply worker for it tries again. Spock waits
 * spock.restart_delay_default (5 s unless set) before it relaunches a crashed apply worker;
 * pglogical holds one back for 5 s (a fixed delay). NULL without an engine. setting names what
 * says so, for messages.
 */
DECLARE
    eng text := pgrelay._engine();
    v text;
BEGIN
    IF eng = 'spock' THEN
        -- an integer of milliseconds, as set in the file, or with a unit, as SHOW gives it
        v := NULLIF(btrim(current_setting('spock.restart_delay_default', true)), '');
        BEGIN
            delay := CASE WHEN v IS NULL THEN interval '5 s'
                          WHEN v ~ '^[0-9]{1,9}$' THEN v::bigint * interval '1 ms'
                          ELSE v::interval END;
        EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
            delay := interval '5 s';
        END;
        setting := format('spock.restart_delay_default (%s)', COALESCE(v, 'not set: 5s'));
    ELSIF eng = 'pglogical' THEN
        delay := interval '5 s';
        setting := 'pglogical''s delay before it relaunches a crashed apply worker (5s)';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._engine_reconnect() IS
    'Internal: how long the replication engine leaves a link down after the peer restarted (and which setting says so)';

-- pgrelay._dead_after()
CREATE OR REPLACE FUNCTION pgrelay._dead_after(dead_after interval DEFAULT NULL) RETURNS interval
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    -- dead_after as used: as set (_dead_after_setting), but never below twice the time the
    -- engine leaves the link from a restarted peer down (_engine_reconnect). A node whose server
    -- restarted is back at once, but its peers hear from it again only once their apply worker for
    -- it is back; found dead before that, its events whose finish had not reached them yet would
    -- run again. _ha_tick warns when the setting is raised.
    SELECT GREATEST(pgrelay._dead_after_setting(dead_after), 2 * (SELECT r.delay FROM pgrelay._engine_reconnect() r))
$$;
COMMENT ON FUNCTION pgrelay._dead_after(interval) IS
    'dead_after to use: as set (argument, pg_relay.dead_after, 60 s), raised to twice the engine''s reconnect delay';

-- pgrelay._schema_trusted()
CREATE OR REPLACE FUNCTION pgrelay._schema_trusted(schema name) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    -- Internal (_engine): may pg_relay read and call objects of this schema with its owner's
    -- rights? Only when it belongs to a superuser or to pg_relay's own owner (the role that
    -- installed pg_relay, on a managed service the database's owner, which installed the engine
    -- too), and no other role may create objects in it: then nothing in it is anybody else's code.
    SELECT EXISTS (
        SELECT 1 FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner
        WHERE n.nspname = schema
          AND (r.rolsuper OR n.nspowner = (SELECT p.nspowner FROM pg_namespace p WHERE p.nspname = 'pgrelay'))
          AND NOT EXISTS (SELECT 1 FROM aclexplode(n.nspacl) a
                          WHERE a.privilege_type = 'CREATE' AND a.grantee <> n.nspowner))
$$;
COMMENT ON FUNCTION pgrelay._schema_trusted(name) IS
    'Internal: is the schema a superuser''s or pg_relay''s owner''s, with nobody else allowed to create in it?';

-- pgrelay._engine()
CREATE OR REPLACE FUNCTION pgrelay._engine() RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * The replication engine this database is a node of: spock, else pglogical, else static (the
 * table pgrelay.nodes). An engine's schema counts only when _schema_trusted() says so: the
 * functions below read and call objects in it with the rights of pg_relay's owner, so a schema
 * another role made, or may write in, must never be trusted. A database with the engine installed
 * but no local node of it is not a member of that engine's cluster.
 */
BEGIN
    IF pgrelay._schema_trusted('spock') AND to_regclass('spock.local_node') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM spock.local_node) THEN
            RETURN 'spock';
        END IF;
    END IF;
    IF pgrelay._schema_trusted('pglogical') AND to_regclass('pglogical.local_node') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pglogical.local_node) THEN
            RETURN 'pglogical';
        END IF;
    END IF;
    RETURN 'static';
END
$$;
COMMENT ON FUNCTION pgrelay._engine() IS
    'Internal: the replication engine this database is a node of: spock, pglogical or static';

-- pgrelay._engine_members()
CREATE OR REPLACE FUNCTION pgrelay._engine_members(engine text)
RETURNS TABLE (engine_node text, is_local boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- Each statement is planned when it first runs, so the other engine's catalog need not exist.
    IF engine = 'spock' THEN
        RETURN QUERY SELECT n.node_name::text, n.node_id = l.node_id
                     FROM spock.node n CROSS JOIN spock.local_node l;
    ELSIF engine = 'pglogical' THEN
        RETURN QUERY SELECT n.node_name::text, n.node_id = l.node_id
                     FROM pglogical.node n CROSS JOIN pglogical.local_node l;
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._engine_members(text) IS
    'Internal: the nodes the engine knows (this one and the providers of its subscriptions)';

-- pgrelay._engine_subscriptions()
CREATE OR REPLACE FUNCTION pgrelay._engine_subscriptions(engine text)
RETURNS TABLE (provider text, status text, slot text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF engine = 'spock' THEN
        RETURN QUERY SELECT s.provider_node, s.status, s.slot_name FROM spock.sub_show_status() s;
    ELSIF engine = 'pglogical' THEN
        RETURN QUERY SELECT s.provider_node, s.status, s.slot_name FROM pglogical.show_subscription_status() s;
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._engine_subscriptions(text) IS
    'Internal: this node''s subscriptions: provider node, status (replicating, down, ...) and its slot on the provider';

-- pgrelay.cluster_nodes()
CREATE OR REPLACE FUNCTION pgrelay.cluster_nodes()
RETURNS TABLE (node_id integer, node_name text, engine text, is_local boolean, link_up boolean, link text)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Every configured node with its pg_relay node id and whether the engine reports the link from it
 * to this node up. Under Spock or pglogical the nodes are the engine's (this node and the
 * providers of its subscriptions), mapped to ids by pgrelay.nodes; an engine node without an id
 * there is an error that names it. The link from a peer is up when every subscription of this
 * node to it is replicating and this node's slot for the peer's subscription (which the peer
 * publishes in its heartbeat) is active: a hung peer still reads "replicating", and only the
 * slot shows it, once wal_sender_timeout has passed. link_up is NULL for this node, for a peer
 * this node does not subscribe to, and without an engine (static membership: the rows of
 * pgrelay.nodes, and this node).
 */
#variable_conflict use_column
DECLARE
    eng text := pgrelay._engine();
    me integer := pgrelay._this_node();
    here text;
    ids integer[] := '{}';
    names text[] := '{}';
    locals boolean[] := '{}';
    r record;
BEGIN
    IF eng = 'static' THEN
        RETURN QUERY
        SELECT n.node_id, n.node_name, 'static'::text, n.node_id = me, NULL::boolean,
               CASE WHEN n.node_id = me THEN 'local' ELSE 'no replication engine' END
        FROM pgrelay.nodes n
        UNION ALL
        SELECT me, NULL::text, 'static'::text, true, NULL::boolean, 'local'
        WHERE NOT EXISTS (SELECT 1 FROM pgrelay.nodes n WHERE n.node_id = me)
        ORDER BY 1;
        RETURN;
    END IF;

    FOR r IN SELECT m.engine_node, m.is_local, x.node_id AS mapped,
                    count(x.node_id) OVER (PARTITION BY m.engine_node) AS maps,
                    string_agg(x.node_id::text, ', ') OVER (PARTITION BY m.engine_node) AS mapped_ids
             FROM pgrelay._engine_members(eng) m
             LEFT JOIN pgrelay.nodes x ON x.node_name = m.engine_node
             ORDER BY m.engine_node, x.node_id LOOP
        IF r.mapped IS NULL THEN
            RAISE EXCEPTION '% node "%" has no pg_relay node id', eng, r.engine_node
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = 'pgrelay.nodes maps each node of the replication engine to its pg_relay.node_id.',
                      HINT = format('Map it, on any node (pgrelay.nodes replicates): SELECT pgrelay.set_node(<its pg_relay.node_id>, %L);',
                                    r.engine_node);
        END IF;
        IF r.maps > 1 THEN
            RAISE EXCEPTION '% node "%" is mapped to more than one pg_relay node id (%)', eng, r.engine_node, r.mapped_ids
                USING ERRCODE = 'unique_violation',
                      HINT = 'Remove the wrong one with pgrelay.remove_node(node_id).';
        END IF;
        IF r.is_local AND r.mapped <> me THEN
            RAISE EXCEPTION 'this database is % node "%", mapped to pg_relay node %, but pg_relay.node_id is %',
                            eng, r.engine_node, r.mapped, me
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Set pg_relay.node_id on this server to the mapped id, or correct the map with pgrelay.set_node().';
        END IF;
        IF r.is_local THEN
            here := r.engine_node;
        END IF;
        ids := ids || r.mapped;
        names := names || r.engine_node;
        locals := locals || r.is_local;
    END LOOP;

    RETURN QUERY
    WITH members AS (
        SELECT * FROM unnest(ids, names, locals) AS m(node_id, engine_node, is_local)
    ), subs AS (
        SELECT s.provider, array_agg(s.status ORDER BY s.status) AS statuses
        FROM pgrelay._engine_subscriptions(eng) s
        GROUP BY s.provider
    ), slots AS (
        -- the slot on this node that the peer's subscription to this node streams from
        SELECT h.node_id, h.links ->> here AS slot
        FROM pgrelay.heartbeats h
        WHERE h.node_id = ANY (ids)
    )
    SELECT m.node_id, m.engine_node, eng, m.is_local,
           CASE WHEN m.is_local OR sb.statuses IS NULL THEN NULL
                ELSE sb.statuses <@ ARRAY['replicating'] AND COALESCE(rs.active, sl.slot IS NULL)
           END,
           CASE WHEN m.is_local THEN 'local'
                WHEN sb.statuses IS NULL THEN 'no subscription'
                ELSE array_to_string(sb.statuses, ',')
                     || CASE WHEN sl.slot IS NULL OR rs.active THEN ''
                             WHEN rs.active IS NULL THEN '; slot ' || sl.slot || ' missing'
                             ELSE '; slot ' || sl.slot || ' inactive' END
           END
    FROM members m
    LEFT JOIN subs sb ON sb.provider = m.engine_node
    LEFT JOIN slots sl ON sl.node_id = m.node_id
    LEFT JOIN pg_replication_slots rs ON rs.slot_name = sl.slot
    ORDER BY 1;
END
$$;
COMMENT ON FUNCTION pgrelay.cluster_nodes() IS
    'Every configured node: pg_relay node id, engine node name, engine (spock, pglogical, static), this node?, link from it up?';

-- pgrelay.set_node()
CREATE OR REPLACE FUNCTION pgrelay.set_node(node_id integer, node_name text, description text DEFAULT NULL)
RETURNS pgrelay.nodes
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Maps an engine node name to a pg_relay node id (or, without an engine, adds a member), or
 * renames the node of an id. A name maps to one id only. Asks the Processors to reload, which
 * re-homes the pending rows of owners that are no longer configured (_startup_queue_check).
 */
DECLARE
    v pgrelay.nodes;
BEGIN
    IF set_node.node_id IS NULL OR set_node.node_id < 0 OR set_node.node_id > 1023 THEN
        RAISE EXCEPTION 'node_id must be between 0 and 1023, not %', COALESCE(set_node.node_id::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF set_node.node_name IS NULL OR set_node.node_name = '' THEN
        RAISE EXCEPTION 'node_name must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The name is an engine's node name (a name: at most 63 bytes), and it is shown in
    -- cluster_status and quoted in errors: a longer one could never match, and a line break or an
    -- invisible character would make it read as something else.
    IF octet_length(set_node.node_name) > 63 OR pgrelay._has_control(set_node.node_name) THEN
        RAISE EXCEPTION 'node_name "%" must be at most 63 bytes without control or invisible characters',
                        pgrelay._show(set_node.node_name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use the replication engine''s node name, or a plain name for a member.';
    END IF;
    SELECT * INTO v FROM pgrelay.nodes x WHERE x.node_name = set_node.node_name AND x.node_id <> set_node.node_id;
    IF FOUND THEN
        RAISE EXCEPTION 'node name "%" is mapped to pg_relay node % already', set_node.node_name, v.node_id
            USING ERRCODE = 'unique_violation',
                  HINT = 'Remove that mapping first with pgrelay.remove_node().';
    END IF;
    INSERT INTO pgrelay.nodes AS x (node_id, node_name, description)
    VALUES (set_node.node_id, set_node.node_name, set_node.description)
    ON CONFLICT ON CONSTRAINT nodes_pkey DO UPDATE
        SET node_name = EXCLUDED.node_name, description = COALESCE(EXCLUDED.description, x.description),
            updated_at = now()
    RETURNING * INTO v;
    PERFORM pgrelay.request_reload();
    RETURN v;
END
$$;
COMMENT ON FUNCTION pgrelay.set_node(integer, text, text) IS
    'Maps an engine node name to a pg_relay node id (without an engine: adds a member); asks the Processors to reload';

-- pgrelay.remove_node()
CREATE OR REPLACE FUNCTION pgrelay.remove_node(node_id integer) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Forgets a node: its mapping and its heartbeat. Refused while the engine still has the node
 * (cluster_nodes() would then fail on it). Asks the Processors to reload: the next
 * _startup_queue_check() re-homes the node's pending rows.
 */
DECLARE
    v pgrelay.nodes;
    eng text := pgrelay._engine();
BEGIN
    SELECT * INTO v FROM pgrelay.nodes x WHERE x.node_id = remove_node.node_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pg_relay node % is not in pgrelay.nodes', remove_node.node_id
            USING ERRCODE = 'undefined_object';
    END IF;
    IF EXISTS (SELECT 1 FROM pgrelay._engine_members(eng) m WHERE m.engine_node = v.node_name) THEN
        RAISE EXCEPTION '% node "%" still exists', eng, v.node_name
            USING ERRCODE = 'object_in_use',
                  HINT = 'Drop the node from the replication engine first, or map its name to another id with pgrelay.set_node().';
    END IF;
    DELETE FROM pgrelay.nodes x WHERE x.node_id = remove_node.node_id;
    DELETE FROM pgrelay.heartbeats h WHERE h.node_id = remove_node.node_id;
    PERFORM pgrelay.request_reload();
END
$$;
COMMENT ON FUNCTION pgrelay.remove_node(integer) IS
    'Forgets a node that the replication engine no longer has; its pending rows are re-homed by the Processors';

-- pgrelay._heartbeat()
CREATE OR REPLACE FUNCTION pgrelay._heartbeat(first boolean, holding boolean, dead_after interval)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $$
/*
 * Internal (_ha_tick): writes this node's heartbeat: a new beat (milliseconds of this node's
 * clock, always more than the last), the beat this node has seen of each peer (the peers read
 * their entry as an acknowledgement), the slots of its subscriptions, and whether it leads
 * (holding: the Processor leads, or events it started as leader still run).
 *
 * Returns true when it re-armed this node's observation: at the first tick of a Processor, and
 * after a gap of more than dead_after / 2 since its last beat (the Processor or the server was
 * stopped, or hung). Whatever it saw before is stale then: every peer's silence is counted again
 * from now, and nothing is dispatched until the peers it hears from have acknowledged it. The
 * peers' beats are taken as they are now, so that only a beat that moves from here on counts as
 * heard: one that moved while this node was not watching (a last beat and a stop that arrived
 * after its previous Processor's last look) is no news this node watched.
 *
 * The row is deleted and inserted afresh every time rather than updated: an UPDATE of a row a
 * peer does not have (one written before the subscription to this node existed) is skipped there,
 * an INSERT always arrives. It costs a second small WAL record per tick.
 */
DECLARE
    me integer := pgrelay._this_node();
    t timestamptz := clock_timestamp();
    now_ms bigint := floor(date_part('epoch', t) * 1000)::bigint;
    win_ms bigint := floor(date_part('epoch', dead_after) * 500)::bigint;
    h pgrelay.heartbeats;
    rearm boolean;
    v_heard jsonb;
    v_links jsonb;
BEGIN
    SELECT * INTO h FROM pgrelay.heartbeats x WHERE x.node_id = me FOR UPDATE;
    rearm := first OR h.node_id IS NULL OR h.stopped_at IS NOT NULL OR now_ms - h.beat > win_ms;
    IF rearm THEN
        UPDATE pgrelay.peer_observations o
        SET since = t, heard_at = NULL, dead_since = NULL,
            beat = (SELECT x.beat FROM pgrelay.heartbeats x WHERE x.node_id = o.node_id)
        WHERE o.node_id <> me;
        INSERT INTO pgrelay.peer_observations AS o (node_id, beat, since) VALUES (me, NULL, t)
        ON CONFLICT (node_id) DO UPDATE SET since = t;
    END IF;
    SELECT COALESCE(jsonb_object_agg(x.node_id::text, x.beat), '{}') INTO v_heard
    FROM pgrelay.heartbeats x WHERE x.node_id <> me;
    SELECT COALESCE(jsonb_object_agg(s.provider, s.slot), '{}') INTO v_links
    FROM pgrelay._engine_subscriptions(pgrelay._engine()) s WHERE s.slot IS NOT NULL;
    DELETE FROM pgrelay.heartbeats x WHERE x.node_id = me;
    INSERT INTO pgrelay.heartbeats (node_id, beat, beat_at, mode, leader, heard, links, started_at)
    VALUES (me, GREATEST(now_ms, COALESCE(h.beat, 0) + 1), t,
            COALESCE(NULLIF(current_setting('pg_relay.mode', true), ''), 'single'), holding, v_heard, v_links,
            CASE WHEN first OR h.node_id IS NULL OR h.stopped_at IS NOT NULL THEN t ELSE h.started_at END);
    RETURN rearm;
END
$$;
COMMENT ON FUNCTION pgrelay._heartbeat(boolean, boolean, interval) IS
    'Internal: writes this node''s heartbeat; true when it re-armed the observation of the peers';

-- pgrelay._verdicts()
CREATE OR REPLACE FUNCTION pgrelay._verdicts(dead_after interval)
RETURNS TABLE (node_id integer, node_name text, engine text, is_local boolean, link_up boolean, link text,
               mode text, leader boolean, beat_at timestamptz, stopped_at timestamptz,
               heard_at timestamptz, silent_for interval, fresh boolean, dead boolean, candidate boolean,
               acked boolean, waiting boolean, unheard boolean)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $$
/*
 * Internal: the rule applied to what this node has observed (nothing is written here).
 *   silent_for  how long, by this node's clock, the peer's beat has not moved (counted from when
 *               this node armed its observation if it has not seen one since); never negative;
 *               NULL (unknown) while this node has no observation of the peer
 *   fresh       its beat moved within dead_after / 2; undecided: not yet seen to move, and armed
 *               less than dead_after / 2 ago
 *   dead        silent for dead_after and the engine does not report its link up
 *   unheard     its beat has not moved since this node started watching, and its heartbeat (if
 *               any) does not say that its Processor runs: nothing says whether a Processor of it
 *               runs or is starting right now. It counts as running (live) until it is dead; a
 *               heartbeat that says it stopped is believed once this node has watched it for
 *               dead_after without hearing from it (a Processor started meanwhile would have
 *               been heard), even while its link is up.
 *   candidate   its Processor runs (its heartbeat says so, in multi-node or leader mode, or it is
 *               unheard) and it is not dead
 *   leader      its heartbeat says it leads, and it is a candidate: a dead or stopped node leads
 *               nothing
 *   acked       its heartbeat acknowledges a beat this node wrote within dead_after / 2, and after
 *               this node last armed its observation
 *   waiting     a candidate this node hears from (or may soon) that has not acknowledged it
 * PL/pgSQL so that the plan is made once per session: it runs every tick. The clock is read inside
 * the statement, after its snapshot: an observation another session committed before it can then
 * never be later than "now" (a silence would read negative).
 */
#variable_conflict use_column
DECLARE
    me integer := pgrelay._this_node();
BEGIN
    RETURN QUERY
    WITH k AS MATERIALIZED (
        SELECT clock_timestamp() AS t,
               floor(date_part('epoch', clock_timestamp()) * 1000)::bigint
               - floor(date_part('epoch', dead_after) * 500)::bigint AS ack_floor
    ), a AS MATERIALIZED (
        SELECT COALESCE((SELECT o.since FROM pgrelay.peer_observations o WHERE o.node_id = me), k.t) AS armed
        FROM k
    ), v AS (
        -- acknowledged: a beat of this node written within dead_after / 2, and since it armed its
        -- observation (a Processor that started, or whose server restarted, counts only beats
        -- its peers saw from it after that: an acknowledgement of a beat from before says nothing
        -- of whether they hear it now)
        SELECT c.*, h.mode AS h_mode, h.leader AS h_leader, h.beat_at AS h_beat_at,
               h.stopped_at AS h_stopped_at, h.node_id IS NOT NULL AS has_beat,
               COALESCE((h.heard ->> me::text)::bigint, 0)
                   >= GREATEST(k.ack_floor, floor(date_part('epoch', a.armed) * 1000)::bigint) AS h_acked,
               o.heard_at AS o_heard_at, o.node_id IS NOT NULL AS observed, k.t,
               CASE WHEN c.is_local THEN interval '0'
                    ELSE GREATEST(k.t - COALESCE(o.since, a.armed), interval '0') END AS silent
        FROM pgrelay.cluster_nodes() c
        CROSS JOIN k CROSS JOIN a
        LEFT JOIN pgrelay.heartbeats h ON h.node_id = c.node_id
        LEFT JOIN pgrelay.peer_observations o ON o.node_id = c.node_id AND NOT c.is_local
    ), w AS (
        SELECT v.*,
               v.is_local OR (v.o_heard_at IS NOT NULL AND v.t - v.o_heard_at < dead_after / 2) AS is_fresh,
               NOT v.is_local AND v.o_heard_at IS NULL AND v.silent < dead_after / 2 AS is_undecided,
               NOT v.is_local AND v.silent >= dead_after AND v.link_up IS NOT TRUE AS is_dead,
               v.has_beat AND v.h_stopped_at IS NULL AND v.h_mode IN ('multi-node', 'leader') AS says_runs
        FROM v
    ), x AS (
        SELECT w.*,
               NOT w.is_local AND w.o_heard_at IS NULL AND NOT w.says_runs AND NOT w.is_dead
               AND (NOT w.has_beat OR w.silent < dead_after) AS is_unheard
        FROM w
    ), y AS (
        SELECT x.*, (x.says_runs OR x.is_unheard) AND NOT x.is_dead AS runs_live FROM x
    )
    SELECT y.node_id, y.node_name, y.engine, y.is_local, y.link_up, y.link, y.h_mode,
           COALESCE(y.h_leader, false) AND y.h_stopped_at IS NULL AND (y.is_local OR y.runs_live),
           y.h_beat_at, y.h_stopped_at, y.o_heard_at,
           -- unknown, not none, while this node watches nothing of the peer (its Processor has not
           -- ticked since the server started: the observations are unlogged)
           CASE WHEN y.is_local OR y.observed THEN y.silent END, y.is_fresh, y.is_dead,
           y.is_local OR y.runs_live,
           y.is_local OR y.h_acked,
           NOT y.is_local AND y.runs_live AND (y.is_fresh OR y.is_undecided) AND NOT y.h_acked,
           y.is_unheard
    FROM y
    ORDER BY y.node_id;
END
$$;
COMMENT ON FUNCTION pgrelay._verdicts(interval) IS
    'Internal: each configured node as this node sees it: silent for how long, fresh, dead, unheard, candidate, acknowledging';

-- pgrelay._ha_observe()
CREATE OR REPLACE FUNCTION pgrelay._ha_observe(dead_after interval,
                                    OUT in_contact boolean, OUT waiting integer[], OUT lowest integer,
                                    OUT others_leading integer[], OUT dead integer[], OUT newly_dead integer[],
                                    OUT unheard integer[])
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $$
/*
 * Internal: records which peers' beats moved since the last look (by this node's clock), then
 * applies the rule: in_contact (every candidate this node hears from has acknowledged it; waiting
 * lists those that have not), the lowest candidate, the other candidates that say they lead, the
 * dead nodes, those found dead just now, and the candidates this node has not heard from since it
 * started watching (live until they are found dead: a peer never heard from is not known to be
 * dead).
 */
DECLARE
    me integer := pgrelay._this_node();
    t timestamptz := clock_timestamp();
    members integer[];
BEGIN
    INSERT INTO pgrelay.peer_observations AS o (node_id, beat, since, heard_at)
    SELECT h.node_id, h.beat,
           COALESCE((SELECT s.since FROM pgrelay.peer_observations s WHERE s.node_id = me), t), NULL
    FROM pgrelay.heartbeats h WHERE h.node_id <> me
    ON CONFLICT (node_id) DO UPDATE SET beat = EXCLUDED.beat, since = t, heard_at = t
        WHERE o.beat IS DISTINCT FROM EXCLUDED.beat;

    SELECT COALESCE(bool_and(NOT v.waiting), true),
           COALESCE(array_agg(v.node_id ORDER BY v.node_id) FILTER (WHERE v.waiting), '{}'),
           min(v.node_id) FILTER (WHERE v.candidate),
           COALESCE(array_agg(v.node_id ORDER BY v.node_id) FILTER (WHERE v.candidate AND v.leader AND NOT v.is_local), '{}'),
           COALESCE(array_agg(v.node_id ORDER BY v.node_id) FILTER (WHERE v.dead), '{}'),
           COALESCE(array_agg(v.node_id ORDER BY v.node_id) FILTER (WHERE NOT v.is_local), '{}'),
           COALESCE(array_agg(v.node_id ORDER BY v.node_id) FILTER (WHERE v.unheard), '{}')
    INTO in_contact, waiting, lowest, others_leading, dead, members, unheard
    FROM pgrelay._verdicts(dead_after) v;

    -- Peers that never beat are watched from when this node armed; nodes that left are forgotten.
    INSERT INTO pgrelay.peer_observations (node_id, beat, since)
    SELECT m, NULL, COALESCE((SELECT s.since FROM pgrelay.peer_observations s WHERE s.node_id = me), t)
    FROM unnest(members) m
    ON CONFLICT (node_id) DO NOTHING;
    DELETE FROM pgrelay.peer_observations o
    WHERE o.node_id <> me AND o.node_id <> ALL (members)
      AND NOT EXISTS (SELECT 1 FROM pgrelay.heartbeats h WHERE h.node_id = o.node_id);

    UPDATE pgrelay.peer_observations o SET dead_since = NULL
    WHERE o.dead_since IS NOT NULL AND o.node_id <> ALL (dead);
    WITH found AS (
        UPDATE pgrelay.peer_observations o SET dead_since = t
        WHERE o.dead_since IS NULL AND o.node_id = ANY (dead)
        RETURNING o.node_id
    )
    SELECT COALESCE(array_agg(f.node_id ORDER BY f.node_id), '{}') INTO newly_dead FROM found f;
END
$$;
COMMENT ON FUNCTION pgrelay._ha_observe(interval) IS
    'Internal: notes which peers'' beats moved, then applies the dead-node and contact rules';

-- pgrelay._adopt()
CREATE OR REPLACE FUNCTION pgrelay._adopt(dead integer[], newly_dead integer[], adopter integer)
RETURNS TABLE (node_id integer, adopted bigint)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $$
/*
 * Internal: when this node is the adopter (the lowest live candidate), moves the pending
 * unrestricted rows of each dead node to this node. Rows locked right now are left for the next
 * tick rather than waited for. Node-restricted rows are never adopted: they stay with their node.
 * Returns a row per dead node this node adopted rows from, or found dead just now.
 */
#variable_conflict use_column
DECLARE
    me integer := pgrelay._this_node();
    d integer;
    n bigint;
BEGIN
    IF adopter IS DISTINCT FROM me THEN
        RETURN;
    END IF;
    FOREACH d IN ARRAY dead LOOP
        UPDATE pgrelay.queue q SET owner_node = me
        WHERE q.id IN (SELECT x.id FROM pgrelay.queue x
                       WHERE x.node_restricted = false AND x.owner_node = d
                       FOR UPDATE SKIP LOCKED);
        GET DIAGNOSTICS n = ROW_COUNT;
        IF n > 0 OR d = ANY (newly_dead) THEN
            node_id := d;
            adopted := n;
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgrelay._adopt(integer[], integer[], integer) IS
    'Internal: the adopter takes the pending unrestricted rows of dead nodes';

-- pgrelay.multi_master_watch()
CREATE OR REPLACE FUNCTION pgrelay.multi_master_watch(dead_after interval DEFAULT NULL)
RETURNS TABLE (node_id integer, adopted bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The adoption watcher of multi-node mode: notes which peers' heartbeats moved, decides which
 * peers are dead (silent for dead_after by this node's clock AND their link reported down), and
 * if this node is the lowest-id live node, moves the dead nodes' pending unrestricted rows to
 * itself. Returns the dead nodes it adopted rows from (or found dead just now) and how many rows.
 * dead_after defaults to the setting pg_relay.dead_after (60 s). The Processor runs the same
 * steps inside its tick (_ha_tick).
 */
#variable_conflict use_column
DECLARE
    st record;
BEGIN
    SELECT * INTO st FROM pgrelay._ha_observe(pgrelay._dead_after(dead_after));
    RETURN QUERY SELECT a.node_id, a.adopted FROM pgrelay._adopt(st.dead, st.newly_dead, st.lowest) a;
END
$$;
COMMENT ON FUNCTION pgrelay.multi_master_watch(interval) IS
    'Multi-node: decides which peers are dead and, on the lowest live node, adopts their pending unrestricted rows';

-- pgrelay.is_lowest_live_master()
CREATE OR REPLACE FUNCTION pgrelay.is_lowest_live_master(dead_after interval DEFAULT NULL) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Leader mode: true when this node is the lowest-id live node whose Processor runs, no other live
 * node still says it leads (a leader hands over only once the events it started have finished and
 * its word has replicated, so two leaders never run the same row), and every peer it hears from
 * has acknowledged it (in contact). Notes which peers' heartbeats moved, as multi_master_watch
 * does. dead_after defaults to the setting pg_relay.dead_after (60 s).
 */
DECLARE
    st record;
BEGIN
    SELECT * INTO st FROM pgrelay._ha_observe(pgrelay._dead_after(dead_after));
    RETURN st.in_contact AND st.lowest = pgrelay._this_node() AND cardinality(st.others_leading) = 0;
END
$$;
COMMENT ON FUNCTION pgrelay.is_lowest_live_master(interval) IS
    'Leader mode: is this node the lowest-id live node, in contact, with no other node still leading?';

-- pgrelay._startup_queue_check()
CREATE OR REPLACE FUNCTION pgrelay._startup_queue_check()
RETURNS TABLE (owner_node integer, rehomed bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The catch-all the Processor runs at start and on every reload in multi-node and leader mode:
 * pending rows whose owner is not a configured node (a node removed from the cluster, an unknown
 * id) move to this node, restricted or not, so that nothing stays stuck for good. This is the only
 * way a row of an unknown owner changes hands. Rows locked right now are left for the next run.
 * Nothing happens on a standby.
 */
#variable_conflict use_column
DECLARE
    me integer := pgrelay._this_node();
    configured integer[];
BEGIN
    IF pg_is_in_recovery() THEN
        RETURN;
    END IF;
    configured := ARRAY(SELECT c.node_id FROM pgrelay.cluster_nodes() c);
    RETURN QUERY
    WITH orphan AS (
        SELECT q.id, q.owner_node FROM pgrelay.queue q
        WHERE q.owner_node <> ALL (configured)
        FOR UPDATE SKIP LOCKED
    ), moved AS (
        UPDATE pgrelay.queue q SET owner_node = me FROM orphan o
        WHERE q.id = o.id
        RETURNING o.owner_node
    )
    SELECT m.owner_node, count(*) FROM moved m GROUP BY m.owner_node ORDER BY m.owner_node;
END
$$;
COMMENT ON FUNCTION pgrelay._startup_queue_check() IS
    'Re-homes pending rows whose owner is not a configured node onto this node; returns (old owner, rows)';

-- pgrelay._ha_tick()
CREATE OR REPLACE FUNCTION pgrelay._ha_tick(seen_generation bigint, beat boolean, first boolean, holding boolean,
                                 bound jsonb DEFAULT NULL,
                                 OUT has_work boolean, OUT reload_requested boolean, OUT paused boolean,
                                 OUT reload_generation bigint, OUT dispatch boolean, OUT is_leader boolean,
                                 OUT waiting text, OUT adopted text, OUT in_recovery boolean,
                                 OUT node integer, OUT why text, OUT schedule_due boolean, OUT next_bound jsonb)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The Processor's tick in multi-node and leader mode, in one round trip: heartbeat, observation,
 * the mode's decision, then the probe with the decision applied.
 *
 *   multi-node  multi_master_watch(); dispatch is true while this node is in contact (waiting
 *               lists the peers it waits for), adopted lists "node:rows" it just adopted
 *   leader      is_lowest_live_master(), published on this session as pg_relay.is_leader (the
 *               Processor publishes it on its worker sessions between events)
 *
 * node is this node's id; why says why it does not lead (leader mode). schedule_due: a schedule
 * is due and this node is the one that fires schedules (the leader; in multi-node mode the lowest
 * live node, in contact): the Processor then runs pgrelay._schedule_fire(). Only on a beat.
 *
 * first: the Processor's first tick; holding: the Processor leads, or events it started as leader
 * still run (the heartbeat says so, and no other node leads meanwhile). With beat false (a drain
 * round) only the probe runs and the last decision stands (dispatch and is_leader are NULL). On a
 * standby (in_recovery) nothing is written and nothing is dispatched.
 *
 * bound, next_bound: queue_probe()'s floors under this node's finished rows (the Processor passes
 * on what next_bound said last time, '{}' to begin). Rows adopted in this tick keep the dead
 * node's run_at, which may be below them: after an adoption the probe starts again from none.
 *
 * The heartbeat is committed asynchronously: losing the last beats in a crash costs nothing.
 */
DECLARE
    mode text := COALESCE(NULLIF(current_setting('pg_relay.mode', true), ''), 'single');
    da interval;
    st record;
    p record;
    fires boolean := false;
BEGIN
    IF beat IS NULL OR first IS NULL OR holding IS NULL THEN
        RAISE EXCEPTION '_ha_tick(): beat, first and holding must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF mode NOT IN ('multi-node', 'leader') THEN
        RAISE EXCEPTION '_ha_tick() is for the multi-node and leader modes, not "%"', pgrelay._show(mode)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The session''s pg_relay.mode says the mode.';
    END IF;
    node := pgrelay._this_node();
    in_recovery := pg_is_in_recovery();
    IF in_recovery THEN
        dispatch := false;
        is_leader := false;
        PERFORM set_config('pg_relay.is_leader', 'off', false);
    ELSIF beat THEN
        da := pgrelay._dead_after(NULL);
        IF first AND da > pgrelay._dead_after_setting(NULL) THEN
            RAISE WARNING 'pg_relay.dead_after (%s) is below twice %: %s is used',
                          trim_scale(extract(epoch FROM pgrelay._dead_after_setting(NULL))),
                          (SELECT r.setting FROM pgrelay._engine_reconnect() r), trim_scale(extract(epoch FROM da))
                USING DETAIL = 'After a node''s server restarts, the engine leaves the link from it down that long, and a node found dead meanwhile would have its events run again here before their finish arrived.',
                      HINT = format('Set pg_relay.dead_after to %ss or more.', trim_scale(extract(epoch FROM da)));
        END IF;
        PERFORM set_config('synchronous_commit', 'off', true);
        PERFORM pgrelay._heartbeat(first, holding, da);
        SELECT * INTO st FROM pgrelay._ha_observe(da);
        waiting := NULLIF(array_to_string(st.waiting, ','), '');
        IF mode = 'multi-node' THEN
            dispatch := st.in_contact;
            is_leader := false;
            fires := st.in_contact AND st.lowest = node;
            SELECT string_agg(a.node_id || ':' || a.adopted, ',' ORDER BY a.node_id) INTO adopted
            FROM pgrelay._adopt(st.dead, st.newly_dead, st.lowest) a;
        ELSE
            dispatch := true;
            is_leader := st.in_contact AND st.lowest = node AND cardinality(st.others_leading) = 0;
            why := CASE WHEN st.lowest IS DISTINCT FROM node AND st.lowest = ANY (st.unheard)
                            THEN format('node %s is the lowest live node: not heard from since this node started watching, it counts as live until it is found dead',
                                        st.lowest)
                        WHEN st.lowest IS DISTINCT FROM node THEN format('node %s is the lowest live node', st.lowest)
                        WHEN cardinality(st.others_leading) > 0
                            THEN format('node %s still leads', array_to_string(st.others_leading, ','))
                        WHEN NOT st.in_contact THEN format('waiting for node %s to hear from this one', waiting)
                   END;
            PERFORM set_config('pg_relay.is_leader', CASE WHEN is_leader THEN 'on' ELSE 'off' END, false);
            fires := is_leader;
        END IF;
    END IF;
    SELECT * INTO p
    FROM pgrelay.queue_probe(seen_generation, CASE WHEN adopted IS NOT NULL AND bound IS NOT NULL THEN '{}' ELSE bound END);
    next_bound := p.next_bound;
    has_work := p.has_work;
    reload_requested := p.reload_requested;
    paused := p.paused;
    reload_generation := p.reload_generation;
    schedule_due := COALESCE(p.schedule_due AND fires, false);
END
$$;
COMMENT ON FUNCTION pgrelay._ha_tick(bigint, boolean, boolean, boolean, jsonb) IS
    'The Processor''s multi-node/leader tick: heartbeat, watch or leadership, and the probe, in one call';

-- pgrelay._heartbeat_stop()
CREATE OR REPLACE FUNCTION pgrelay._heartbeat_stop() RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    -- A Processor that stops cleanly, with nothing left running, says so: its node is no longer a
    -- candidate for leadership, so another node may lead at once instead of after dead_after.
    UPDATE pgrelay.heartbeats h SET stopped_at = now(), leader = false
    WHERE h.node_id = pgrelay._this_node()
    RETURNING true
$$;
COMMENT ON FUNCTION pgrelay._heartbeat_stop() IS
    'The Processor stopped cleanly: this node no longer leads nor runs anything';

-- pgrelay._cluster_status()
CREATE OR REPLACE FUNCTION pgrelay._cluster_status()
RETURNS TABLE (node_id integer, node_name text, engine text, is_local boolean, link_up boolean, link text,
               mode text, leader boolean, beat_at timestamptz, silent_for interval, dead boolean,
               acknowledged boolean, stopped_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- What this node's Processor last saw of every node, and the rule applied to it with
    -- pg_relay.dead_after; reads only, so monitoring changes nothing. On a standby there is
    -- nothing to show, and what the node observed (an unlogged table) cannot even be read: no
    -- rows, rather than an error for every monitoring query that reads the view.
    IF pg_is_in_recovery() THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT v.node_id, v.node_name, v.engine, v.is_local, v.link_up, v.link, v.mode, v.leader, v.beat_at,
           v.silent_for, v.dead, v.acked, v.stopped_at
    FROM pgrelay._verdicts(pgrelay._dead_after(NULL)) v;
END
$$;
COMMENT ON FUNCTION pgrelay._cluster_status() IS
    'The rows of the view pgrelay.cluster_status';

-- pgrelay.replication_tables()
CREATE OR REPLACE FUNCTION pgrelay.replication_tables()
RETURNS TABLE (relation regclass, replicate boolean, why text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    -- Every table and sequence of pg_relay, and of the extensions built on it (pg_relay_notifier),
    -- with whether a multi-master cluster must replicate it and why. A relation of pg_relay that
    -- nobody classified yet shows replicate NULL.
    WITH rules(name, replicate, why) AS (VALUES
        ('pgrelay.queue', true, 'pending events: every node must see them to adopt or lead them, and see them leave when done'),
        ('pgrelay.channels', true, 'a channel registered on one node is used by producers and Processors on all'),
        ('pgrelay.action_types', true, 'run order changes apply cluster-wide'),
        ('pgrelay.control', true, 'pause() and request_reload() act on every node''s Processor'),
        ('pgrelay.failed_events', true, 'failures can be seen and re-queued from any node'),
        ('pgrelay.nodes', true, 'the map from engine nodes to pg_relay node ids is the same everywhere'),
        ('pgrelay.heartbeats', true, 'how the nodes hear from each other'),
        ('pgrelay.webhooks', true, 'a webhook endpoint registered on one node is used by the Processors of all'),
        ('pgrelay.webhook_secrets', true, 'the header values and signing secret of a webhook endpoint, with it'),
        ('pgrelay.destinations', true, 'a destination registered on one node is used by the Processors of all'),
        ('pgrelay.schedule_entries', true, 'a schedule and its next occurrence: whichever node fires next reads it'),
        ('pgrelay.schedule_runs', true, 'the occurrences fired: a node never queues one that any node queued'),
        ('pgrelay.topics', true, 'a topic created on one node is published to by producers on all'),
        ('pgrelay.subscriptions', true, 'a publication on any node queues an event on each channel subscribed, as every node sees them'),
        ('pgrelay.log', false, 'each node''s own audit of the attempts it made; its second unique index (event_id, queue_id) would stop a subscription on the duplicate split-brain can cause, and it is the bulk of the writes'),
        ('pgrelay.peer_observations', false, 'node-local by nature (what this node saw, by its own clock); unlogged, so it cannot be replicated'),
        ('pgrelay.processor_reports', false, 'node-local: the Processors running against this node, each written by its own Processor'),
        ('pgrelay.backlog_samples', false, 'node-local: the backlog of this node''s queue a minute, written by this node''s Processors'),
        ('pgrelay.watches', false, 'node-local: a watch is a trigger on this node''s table, named by this node''s OID of it; watch the table on each node that takes its writes'),
        ('pgrelay._id_clock', false, 'a sequence: node-local; ids are unique across nodes because they carry the node id')
    ), own AS (
        -- the tables and sequences of schema pgrelay: pg_relay's, installed either way
        SELECT c.oid::regclass AS rel
        FROM pg_class c
        WHERE c.relnamespace = 'pgrelay'::regnamespace AND c.relkind IN ('r', 'p', 'S')
    ), dependents AS (
        SELECT d.objid::regclass AS rel, de.extname
        FROM pg_extension e
        JOIN pg_depend x ON x.refclassid = 'pg_extension'::regclass AND x.refobjid = e.oid
                        AND x.classid = 'pg_extension'::regclass AND x.deptype = 'n'
        JOIN pg_extension de ON de.oid = x.objid
        JOIN pg_depend d ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = de.oid
                        AND d.classid = 'pg_class'::regclass AND d.deptype = 'e'
        JOIN pg_class c ON c.oid = d.objid
        WHERE e.extname = 'pg_relay' AND c.relkind IN ('r', 'p') AND c.relpersistence = 'p'
        UNION
        -- pg_relay_notifier installed by pg_relay install: no extension, its own schema, which
        -- counts only when it is pg_relay's owner's or a superuser's and closed to others, and
        -- then only its tables of that owner (a schema of that name that another role made holds
        -- her tables, whose triggers the peers' apply workers would run)
        SELECT c.oid::regclass, 'pg_relay_notifier'
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'pgrelay_notifier' AND c.relkind IN ('r', 'p') AND c.relpersistence = 'p'
          AND c.relowner = n.nspowner AND pgrelay._schema_trusted('pgrelay_notifier')
          AND NOT EXISTS (SELECT 1 FROM pg_extension x WHERE x.extname = 'pg_relay_notifier')
    )
    SELECT o.rel, r.replicate, COALESCE(r.why, 'not classified')
    FROM own o LEFT JOIN rules r ON r.name::regclass = o.rel
    UNION ALL
    SELECT dp.rel, true,
           'state of ' || dp.extname || ', which builds on pg_relay: a node that adopts or leads an event reads it there'
    FROM dependents dp
    ORDER BY 2 DESC, 1
$$;
COMMENT ON FUNCTION pgrelay.replication_tables() IS
    'Each table and sequence of pg_relay and of extensions built on it: must a multi-master cluster replicate it, and why';

-- pgrelay._engine_has_set()
CREATE OR REPLACE FUNCTION pgrelay._engine_has_set(engine text, set_name text) RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- Internal (replication_setup): is set_name a replication set of this node? (Each statement is
    -- planned when it first runs, so the other engine's catalog need not exist.)
    IF engine = 'spock' THEN
        RETURN EXISTS (SELECT 1 FROM spock.replication_set s JOIN spock.local_node l ON l.node_id = s.set_nodeid
                       WHERE s.set_name = _engine_has_set.set_name);
    END IF;
    RETURN EXISTS (SELECT 1 FROM pglogical.replication_set s JOIN pglogical.local_node l ON l.node_id = s.set_nodeid
                   WHERE s.set_name = _engine_has_set.set_name);
END
$$;
COMMENT ON FUNCTION pgrelay._engine_has_set(text, text) IS
    'Internal: is the set one of this node''s replication sets in the engine''s catalog?';

-- pgrelay._engine_sets()
CREATE OR REPLACE FUNCTION pgrelay._engine_sets(engine text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- Internal (replication_setup's hint): this node's replication sets, by name.
    IF engine = 'spock' THEN
        RETURN (SELECT COALESCE(string_agg(s.set_name::text, ', ' ORDER BY s.set_name), 'none')
                FROM spock.replication_set s JOIN spock.local_node l ON l.node_id = s.set_nodeid);
    END IF;
    RETURN (SELECT COALESCE(string_agg(s.set_name::text, ', ' ORDER BY s.set_name), 'none')
            FROM pglogical.replication_set s JOIN pglogical.local_node l ON l.node_id = s.set_nodeid);
END
$$;
COMMENT ON FUNCTION pgrelay._engine_sets(text) IS
    'Internal: this node''s replication sets in the engine''s catalog, by name';

-- pgrelay.replication_setup()
CREATE OR REPLACE FUNCTION pgrelay.replication_setup(set_name text DEFAULT 'default')
RETURNS TABLE (relation regclass, added boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Run once on every node of a Spock or pglogical cluster, before its subscriptions are made: adds
 * every table replication_tables() says must replicate to the replication set set_name (without
 * copying data), and maps this node's engine node name to its pg_relay.node_id in pgrelay.nodes.
 * Returns each table and whether it was added now (false: it was in the set already). Warns when
 * the conflict resolution is not last_update_wins or commit timestamps are off.
 */
#variable_conflict use_column
DECLARE
    eng text := pgrelay._engine();
    here text;
    r record;
    member boolean;
BEGIN
    IF eng = 'static' THEN
        RAISE EXCEPTION 'this database is not a node of Spock or pglogical'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Create the engine''s node first (spock.node_create or pglogical.create_node); without an engine, add pg_relay''s tables to your replication by hand (see pgrelay.replication_tables()).';
    END IF;
    IF COALESCE(btrim(current_setting('pg_relay.node_id', true)), '') = '' THEN
        RAISE EXCEPTION 'pg_relay.node_id is not set on this server'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Every node needs its own id (0 to 1023): ids of queue and log rows carry it.',
                  HINT = 'SET pg_relay.node_id = <id>; ALTER SYSTEM SET pg_relay.node_id = <id>; SELECT pg_reload_conf(); (one statement at a time: before PostgreSQL 17 ALTER SYSTEM knows the name only after the SET)';
    END IF;
    -- The set must be one of this node's: the engines' own error for another names no choice.
    IF NOT pgrelay._engine_has_set(eng, set_name) THEN
        RAISE EXCEPTION '% node has no replication set "%"', eng, pgrelay._show(set_name)
            USING ERRCODE = 'undefined_object',
                  HINT = format('This node''s sets: %s.', pgrelay._engine_sets(eng));
    END IF;
    SELECT m.engine_node INTO here FROM pgrelay._engine_members(eng) m WHERE m.is_local;
    PERFORM pgrelay.set_node(pgrelay._this_node(), here);

    FOR r IN SELECT t.relation FROM pgrelay.replication_tables() t WHERE t.replicate LOOP
        IF eng = 'spock' THEN
            member := EXISTS (SELECT 1 FROM spock.replication_set s
                              JOIN spock.replication_set_table st ON st.set_id = s.set_id
                              JOIN spock.local_node l ON l.node_id = s.set_nodeid
                              WHERE s.set_name = replication_setup.set_name AND st.set_reloid = r.relation);
            IF NOT member THEN
                PERFORM spock.repset_add_table(replication_setup.set_name, r.relation, false);
            END IF;
        ELSE
            member := EXISTS (SELECT 1 FROM pglogical.replication_set s
                              JOIN pglogical.replication_set_table st ON st.set_id = s.set_id
                              JOIN pglogical.local_node l ON l.node_id = s.set_nodeid
                              WHERE s.set_name = replication_setup.set_name AND st.set_reloid = r.relation);
            IF NOT member THEN
                PERFORM pglogical.replication_set_add_table(replication_setup.set_name, r.relation, false);
            END IF;
        END IF;
        relation := r.relation;
        added := NOT member;
        RETURN NEXT;
    END LOOP;

    IF current_setting('track_commit_timestamp') <> 'on' THEN
        RAISE WARNING 'track_commit_timestamp is off on this node'
            USING DETAIL = 'Conflicts between nodes must be resolved by commit time (last_update_wins).',
                  HINT = 'ALTER SYSTEM SET track_commit_timestamp = on, then restart the server.';
    END IF;
    IF eng = 'pglogical' AND COALESCE(current_setting('pglogical.conflict_resolution', true), 'apply_remote') <> 'last_update_wins' THEN
        RAISE WARNING 'pglogical.conflict_resolution is %, not last_update_wins',
                      COALESCE(current_setting('pglogical.conflict_resolution', true), 'apply_remote')
            USING DETAIL = 'With apply_remote two nodes that update the same row keep each other''s value, and diverge.',
                  HINT = 'ALTER SYSTEM SET pglogical.conflict_resolution = ''last_update_wins''; SELECT pg_reload_conf();';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay.replication_setup(text) IS
    'Adds the tables a multi-master cluster must replicate to the engine''s replication set and maps this node; run on every node';
