-- High availability: the node map, membership, heartbeats, the dead-node rule, adoption,
-- leadership, re-homing and the replication set-up. Spock needs a patched server and cannot be
-- installed here: its path runs against a stand-in schema "spock" with the shape of Spock's
-- catalog (node, local_node, sub_show_status(), replication sets). pglogical's path runs on real
-- clusters in test/ha.
\set SHOW_CONTEXT never
DELETE FROM pgrelay.queue;
SET pg_relay.node_id = 1;
CREATE FUNCTION regress_ha_noop(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
SELECT channel FROM pgrelay.register('ha_free', 'sql', handler => 'regress_ha_noop(text)');
SELECT channel FROM pgrelay.register('ha_pinned', 'sql', handler => 'regress_ha_noop(text)', node_restricted => true);

-- set_node(): maps a name to a node id; renames; keeps a description
SELECT node_id, node_name, description FROM pgrelay.set_node(1, 'one', 'first node');
SELECT node_id, node_name, description FROM pgrelay.set_node(2, 'two');
SELECT node_id, node_name, description FROM pgrelay.set_node(1, 'uno');
-- out of range, empty, or a name mapped to another id (error)
SELECT pgrelay.set_node(1024, 'big');
SELECT pgrelay.set_node(3, '');
SELECT pgrelay.set_node(3, 'two');
-- a name no engine can have, or one with a line break or an invisible character (error)
SELECT pgrelay.set_node(3, repeat('n', 64));
SELECT pgrelay.set_node(3, E'three\nfour');
SELECT pgrelay.set_node(3, E'th\u202eree');

-- without a replication engine the members are pgrelay.nodes (and this node)
SELECT * FROM pgrelay.cluster_nodes();
SET pg_relay.node_id = 7;
SELECT node_id, node_name, is_local FROM pgrelay.cluster_nodes();
SET pg_relay.node_id = 1;

-- dead_after: the argument, else the setting, else 60 s
SELECT pgrelay._dead_after(NULL), pgrelay._dead_after('5 seconds');
SET pg_relay.dead_after = '250ms';
SELECT pgrelay._dead_after(NULL);
-- a setting that is no duration, or one out of range (error)
SET pg_relay.dead_after = 'soon';
SELECT pgrelay._dead_after(NULL);
SELECT pgrelay._dead_after('1 millisecond');
-- in seconds too: this one compares as 60 s and is 5.25 days and 60 s
SELECT pgrelay._dead_after('1 year -359 days -23 hours -59 minutes');
SET pg_relay.dead_after = '100ms';

-- _startup_queue_check(): rows of owners that are not configured come here, restricted or not
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, node_restricted) VALUES
    (0, 'ha_free', 'sql', 'of 2', 2, false),
    (0, 'ha_free', 'sql', 'of 9', 9, false),
    (0, 'ha_pinned', 'sql', 'pinned of 9', 9, true),
    (0, 'ha_free', 'sql', 'of 12', 12, false);
SELECT * FROM pgrelay._startup_queue_check();
SELECT payload, owner_node FROM pgrelay.queue ORDER BY payload;
DELETE FROM pgrelay.queue;

-- _ha_tick() is for the multi-node and leader modes, and its flags are never NULL (errors)
SELECT * FROM pgrelay._ha_tick(NULL, true, true, false);
SELECT * FROM pgrelay._ha_tick(NULL, true, NULL, false);

-- Static membership, nodes 1 and 2. Node 2's Processor beat once and went silent; without an
-- engine its silence alone decides (there is no link to ask about). The ticks run with a
-- dead_after of 10 s (a tick more than dead_after / 2 after the last one would re-arm the watch);
-- the watch itself is called with 100 ms to find node 2 dead.
SET pg_relay.dead_after = '10s';
SET pg_relay.mode = 'multi-node';
SELECT dispatch, is_leader, waiting, adopted, in_recovery, node FROM pgrelay._ha_tick(NULL, true, true, false);
SELECT node_id, mode, leader, stopped_at IS NULL AS running, heard FROM pgrelay.heartbeats;
INSERT INTO pgrelay.heartbeats (node_id, beat, beat_at, mode, leader, heard, links, started_at)
VALUES (2, 1000, now(), 'multi-node', false, '{}', '{}', now());
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, node_restricted) VALUES
    (0, 'ha_free', 'sql', 'free of 2', 2, false),
    (0, 'ha_pinned', 'sql', 'pinned of 2', 2, true),
    (0, 'ha_free', 'sql', 'free of 1', 1, false);
-- node 2 runs a Processor and was never heard from: node 1 waits for it (and sees nothing dead)
SELECT dispatch, waiting, adopted FROM pgrelay._ha_tick(NULL, true, false, false);
SELECT node_id, is_local, link_up, link, mode, dead, acknowledged FROM pgrelay.cluster_status;
-- once it has been silent for dead_after, node 1 (the lowest live node) adopts its free rows
SELECT pg_sleep(0.15);
SELECT * FROM pgrelay.multi_master_watch('100ms');
SELECT payload, owner_node FROM pgrelay.queue ORDER BY payload;
SET pg_relay.dead_after = '100ms';
SELECT node_id, dead FROM pgrelay.cluster_status;
SET pg_relay.dead_after = '10s';
-- found dead once: a later watch returns nothing more
SELECT * FROM pgrelay.multi_master_watch('100ms');
-- node 2 beats again: alive, and node 1 waits until node 2 acknowledges it ...
UPDATE pgrelay.heartbeats SET beat = 2000 WHERE node_id = 2;
SELECT dispatch, waiting, adopted FROM pgrelay._ha_tick(NULL, true, false, false);
-- ... which it does by naming node 1's latest beat in its heartbeat
UPDATE pgrelay.heartbeats SET beat = 3000,
       heard = jsonb_build_object('1', (SELECT beat FROM pgrelay.heartbeats WHERE node_id = 1))
WHERE node_id = 2;
SELECT dispatch, waiting, adopted FROM pgrelay._ha_tick(NULL, true, false, false);
-- a drain round decides nothing and writes nothing
SELECT has_work, dispatch, is_leader FROM pgrelay._ha_tick(NULL, false, false, false);
-- with the Processor's bound, the probe's floors under this node's own rows come back with it
SELECT has_work, next_bound -> 'floor' IS NOT NULL AS bounded FROM pgrelay._ha_tick(NULL, false, false, false, '{}');

-- Leader mode: node 1 is the lowest live node and in contact, but node 2 says it still leads
SET pg_relay.mode = 'leader';
UPDATE pgrelay.heartbeats SET beat = 4000, leader = true, mode = 'leader',
       heard = jsonb_build_object('1', (SELECT beat FROM pgrelay.heartbeats WHERE node_id = 1))
WHERE node_id = 2;
SELECT dispatch, is_leader, why FROM pgrelay._ha_tick(NULL, true, false, false);
SELECT current_setting('pg_relay.is_leader') AS published;
SELECT pgrelay.is_lowest_live_master();
-- node 2 has handed over: node 1 leads, and the session says so
UPDATE pgrelay.heartbeats SET beat = 5000, leader = false,
       heard = jsonb_build_object('1', (SELECT beat FROM pgrelay.heartbeats WHERE node_id = 1))
WHERE node_id = 2;
SELECT dispatch, is_leader, why FROM pgrelay._ha_tick(NULL, true, false, true);
SELECT current_setting('pg_relay.is_leader') AS published;
SELECT leader FROM pgrelay.heartbeats WHERE node_id = 1;
-- a node whose Processor stopped cleanly is no candidate: node 2 leads once node 1 says it stopped
SELECT pgrelay._heartbeat_stop();
SET pg_relay.node_id = 2;
SELECT node_id, mode, leader, dead FROM pgrelay.cluster_status WHERE node_id = 1;
SELECT pgrelay.is_lowest_live_master('1 hour');
SET pg_relay.node_id = 1;
-- is_lowest_live_master() with a dead_after out of range (error)
SELECT pgrelay.is_lowest_live_master('0');
RESET pg_relay.is_leader;
DELETE FROM pgrelay.queue;
DELETE FROM pgrelay.heartbeats;
DELETE FROM pgrelay.peer_observations;

-- The tick that adopts probes from no bound: the adopted row keeps the dead node's run_at, an
-- hour below the floor this node had found under its own rows, and is seen in that same tick.
-- Node 2 beat once and went silent; the ticks (a transaction each, every 20 ms) go on until the
-- rule finds it dead (dead_after 1 s).
SET pg_relay.mode = 'multi-node';
SET pg_relay.dead_after = '1s';
CREATE FUNCTION regress_warm_bound() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    b jsonb := '{}';
    t0 timestamptz := clock_timestamp();
BEGIN
    -- drain rounds (no beat) until the probe has a floor under this node's own free rows
    LOOP
        SELECT t.next_bound INTO b FROM pgrelay._ha_tick(NULL, false, false, false, b) t;
        EXIT WHEN b -> 'floor' ? 'own:sql' OR clock_timestamp() - t0 > interval '10 s';
        PERFORM pg_sleep(0.02);
    END LOOP;
    RETURN b;
END
$$;
CREATE PROCEDURE regress_tick_until_adopted(bound jsonb, INOUT adopted text DEFAULT NULL,
                                            INOUT has_work boolean DEFAULT NULL) LANGUAGE plpgsql AS $$
DECLARE
    t record;
BEGIN
    FOR i IN 1..500 LOOP
        SELECT * INTO t FROM pgrelay._ha_tick(NULL, true, false, false, bound);
        IF t.adopted IS NOT NULL THEN
            adopted := t.adopted;
            has_work := t.has_work;
            RETURN;
        END IF;
        COMMIT;
        PERFORM pg_sleep(0.02);
    END LOOP;
END
$$;
SELECT dispatch, adopted FROM pgrelay._ha_tick(NULL, true, true, false);
INSERT INTO pgrelay.heartbeats (node_id, beat, beat_at, mode, leader, heard, links, started_at)
VALUES (2, 1000, now(), 'multi-node', false, '{}', '{}', now());
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, node_restricted, run_at)
VALUES (0, 'ha_free', 'sql', 'old free of 2', 2, false, now() - interval '1 hour');
SELECT regress_warm_bound() AS bound \gset
SELECT (:'bound'::jsonb -> 'floor' ->> 'own:sql')::timestamptz > now() - interval '1 hour' AS floor_above_the_row;
CALL regress_tick_until_adopted(:'bound');
SELECT payload, owner_node FROM pgrelay.queue;
DROP PROCEDURE regress_tick_until_adopted(jsonb, text, boolean);
DROP FUNCTION regress_warm_bound();
RESET pg_relay.mode;
SET pg_relay.dead_after = '10s';
DELETE FROM pgrelay.queue;
DELETE FROM pgrelay.heartbeats;
DELETE FROM pgrelay.peer_observations;

-- Cold start. A configured peer this node has never heard from counts as live until the rule
-- finds it dead (silent for dead_after since this node started watching, and its link not up;
-- without an engine, silence alone). Node 2 starts first, before node 1's Processor ever beat:
-- node 1 is the lowest live node, so node 2 does not lead, and says why.
SET pg_relay.mode = 'leader';
SET pg_relay.node_id = 2;
SELECT dispatch, is_leader, waiting, why FROM pgrelay._ha_tick(NULL, true, true, false);
SELECT node_id, leader, dead, silent_for >= '0' AS never_negative FROM pgrelay.cluster_status;
SELECT node_id, unheard, candidate, waiting FROM pgrelay._verdicts('10s');
-- silent for dead_after (100 ms here) with no link to say otherwise: dead, and node 2 leads
SELECT pg_sleep(0.15);
SELECT pgrelay.is_lowest_live_master('100ms');
SELECT node_id, unheard, candidate, dead FROM pgrelay._verdicts('100ms');
-- node 1's Processor beats: it is heard, the lowest live node, and node 2 does not lead
INSERT INTO pgrelay.heartbeats (node_id, beat, beat_at, mode, leader, heard, links, started_at)
VALUES (1, 1000, now(), 'leader', false, '{}', '{}', now());
SELECT dispatch, is_leader, waiting, why FROM pgrelay._ha_tick(NULL, true, false, false);
-- node 1 stops cleanly while node 2 watches: believed at once, node 2 leads
UPDATE pgrelay.heartbeats SET stopped_at = now() WHERE node_id = 1;
UPDATE pgrelay.heartbeats SET heard = jsonb_build_object('2', 0) WHERE node_id = 1;
SELECT is_leader, why FROM pgrelay._ha_tick(NULL, true, false, false);
-- node 2's Processor starts again while node 1's heartbeat still says it stopped: that is not
-- news this node watched (node 1 may be starting right now, its first beat on the way), so node
-- 1 counts as live for dead_after, then the stop is believed
SELECT is_leader, why FROM pgrelay._ha_tick(NULL, true, true, false);
SELECT node_id, unheard, candidate FROM pgrelay._verdicts('10s');
SELECT pg_sleep(0.15);
SELECT node_id, unheard, candidate FROM pgrelay._verdicts('100ms');
SELECT pgrelay.is_lowest_live_master('100ms');
-- the same when node 1's last beat arrived while node 2's Processor was not running: a beat that
-- moved before this node started watching was not heard by it, so the stop it carries is believed
-- only after dead_after too
UPDATE pgrelay.heartbeats SET beat = beat + 1 WHERE node_id = 1;
SELECT is_leader, why FROM pgrelay._ha_tick(NULL, true, true, false);
SELECT node_id, unheard, candidate FROM pgrelay._verdicts('10s');
DELETE FROM pgrelay.heartbeats;
DELETE FROM pgrelay.peer_observations;
-- The lowest node, node 1, starting with node 2 never heard from: it waits for node 2 to hear
-- from it, for dead_after / 2 at most (node 2 counts node 1 as live meanwhile, so it does not lead)
SET pg_relay.node_id = 1;
SELECT dispatch, is_leader, waiting, why FROM pgrelay._ha_tick(NULL, true, true, false);
SELECT pg_sleep(0.06);
SELECT pgrelay.is_lowest_live_master('100ms');
RESET pg_relay.mode;
RESET pg_relay.is_leader;
DELETE FROM pgrelay.heartbeats;
DELETE FROM pgrelay.peer_observations;

-- A row offered under a gate that has closed since fails re-validation at claim, and is skipped:
-- leadership moved, the row was adopted away, or dispatch was paused.
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, node_restricted)
VALUES (0, 'ha_free', 'sql', 'gate', 1, false);
SET pg_relay.mode = 'leader';
SET pg_relay.is_leader = on;
SELECT id AS gate_id FROM pgrelay.queue_pending_ids() \gset
SET pg_relay.is_leader = off;
SELECT count(*) FROM pgrelay._queue_claim(:gate_id);
SELECT outcome FROM pgrelay.process_one(:gate_id);
-- a batch applies the same rule at its claim
SELECT outcome FROM pgrelay.process_batch(ARRAY[:gate_id]);
SET pg_relay.mode = 'multi-node';
SELECT count(*) FROM pgrelay.queue_pending_ids();
UPDATE pgrelay.queue SET owner_node = 2 WHERE id = :gate_id;
SELECT outcome FROM pgrelay.process_one(:gate_id);
SELECT outcome FROM pgrelay.process_batch(ARRAY[:gate_id]);
-- restricted to its owner: another node's batch never takes it
UPDATE pgrelay.queue SET owner_node = 2, node_restricted = true WHERE id = :gate_id;
SELECT outcome FROM pgrelay.process_batch(ARRAY[:gate_id]);
UPDATE pgrelay.queue SET owner_node = 1, node_restricted = false WHERE id = :gate_id;
SELECT pgrelay.pause();
SELECT count(*) FROM pgrelay._queue_claim(:gate_id);
SELECT outcome FROM pgrelay.process_batch(ARRAY[:gate_id]);
SELECT pgrelay.resume();
SELECT outcome FROM pgrelay.process_one(:gate_id);
RESET pg_relay.mode;
RESET pg_relay.is_leader;

-- remove_node(): forgets a node; its rows are re-homed by the next _startup_queue_check()
SELECT pgrelay.remove_node(2);
SELECT node_id, node_name FROM pgrelay.nodes;
-- a node that is not in the map (error)
SELECT pgrelay.remove_node(2);

-- Spock, through a stand-in catalog with the shape and errors of Spock 5.0.11's (see its file):
-- this database is node sp1, its peers sp2 and sp3; sp3's subscription is down
\set local sp1
\set peers '{sp2,sp3}'
\set ECHO none
\i ../../test/ha/spock_standin.sql
\set ECHO all
UPDATE spock.regress_status SET status = 'down', slot_name = NULL WHERE provider_node = 'sp3';
-- node ids are 16-bit hashes of the names, three sets per node, forward_origins NULL
SELECT node_name, node_id < 65536 AS sixteen_bits FROM spock.node ORDER BY node_name;
SELECT set_name, replicate_update FROM spock.replication_set ORDER BY set_name;
SELECT provider_node, status, slot_name, forward_origins FROM spock.sub_show_status() ORDER BY 1;
SELECT pgrelay._engine();
-- an engine node without a pg_relay node id (error)
SELECT * FROM pgrelay.cluster_nodes();
SELECT node_id FROM pgrelay.set_node(1, 'sp1');
SELECT node_id FROM pgrelay.set_node(2, 'sp2');
SELECT node_id FROM pgrelay.set_node(3, 'sp3');
SELECT * FROM pgrelay.cluster_nodes();
-- this database is Spock node sp1, mapped to 1, but pg_relay.node_id says 2 (error)
SET pg_relay.node_id = 2;
SELECT * FROM pgrelay.cluster_nodes();
SET pg_relay.node_id = 1;
-- a node the engine still has cannot be removed (error)
SELECT pgrelay.remove_node(3);
-- sp2 publishes in its heartbeat which slot on sp1 its subscription streams from; a slot that is
-- not there (or inactive) is a link that is down, whatever the status says
INSERT INTO pgrelay.heartbeats (node_id, beat, beat_at, mode, leader, heard, links, started_at)
VALUES (2, 1000, now(), 'multi-node', false, '{}', '{"sp1": "spk_contrib_regression_sp1_sub_sp1_sp2"}', now()),
       (3, 1000, now(), 'multi-node', false, '{}', '{}', now());
SELECT node_id, link_up, link FROM pgrelay.cluster_nodes();
UPDATE pgrelay.heartbeats SET links = '{}' WHERE node_id = 2;
SELECT node_id, link_up, link FROM pgrelay.cluster_nodes();

-- dead_after is never less than twice the time the engine leaves a link down after the peer's
-- server restarted: Spock's spock.restart_delay_default (5 s unless set, milliseconds in the file,
-- with a unit as SHOW gives it), so a restarted peer is heard again before it can be found dead
SELECT * FROM pgrelay._engine_reconnect();
SELECT pgrelay._dead_after('100ms'), pgrelay._dead_after('1 min');
SET spock.restart_delay_default = 7000;
SELECT * FROM pgrelay._engine_reconnect();
SELECT pgrelay._dead_after('100ms');
SET spock.restart_delay_default = '2s';
SELECT pgrelay._dead_after('100ms');
SET spock.restart_delay_default = 'soon';
SELECT pgrelay._dead_after('100ms');
-- the first tick of a Processor says so when the setting is raised
SET pg_relay.mode = 'multi-node';
SET pg_relay.dead_after = '1s';
SET spock.restart_delay_default = 5000;
SELECT dispatch FROM pgrelay._ha_tick(NULL, true, true, false);
SELECT dispatch FROM pgrelay._ha_tick(NULL, true, false, false);
RESET pg_relay.dead_after;
DELETE FROM pgrelay.heartbeats;
DELETE FROM pgrelay.peer_observations;
-- (a stand-in with no delay, for the rule's tests below)
SET spock.restart_delay_default = 0;

-- The dead-node rule: sp2 and sp3 are both silent for dead_after, but only sp3's link is down.
INSERT INTO pgrelay.queue (event_id, channel, action_type, payload, owner_node, node_restricted) VALUES
    (0, 'ha_free', 'sql', 'free of 2', 2, false),
    (0, 'ha_free', 'sql', 'free of 3', 3, false),
    (0, 'ha_pinned', 'sql', 'pinned of 3', 3, true);
SELECT dispatch, waiting, adopted FROM pgrelay._ha_tick(NULL, true, true, false);
SELECT pg_sleep(0.15);
SELECT * FROM pgrelay.multi_master_watch('100ms');
SELECT payload, owner_node FROM pgrelay.queue ORDER BY payload;
SET pg_relay.dead_after = '100ms';
SELECT node_id, link_up, dead FROM pgrelay.cluster_status ORDER BY node_id;
SET pg_relay.dead_after = '10s';
-- sp2's subscription goes down too: now it is dead as well
UPDATE spock.regress_status SET status = 'down' WHERE provider_node = 'sp2';
SELECT * FROM pgrelay.multi_master_watch('100ms');
SELECT payload, owner_node FROM pgrelay.queue ORDER BY payload;
-- every configured node is known: nothing to re-home
SELECT * FROM pgrelay._startup_queue_check();
RESET pg_relay.mode;
RESET spock.restart_delay_default;
DELETE FROM pgrelay.queue;
DELETE FROM pgrelay.heartbeats;
DELETE FROM pgrelay.peer_observations;

-- replication_setup(): pg_relay's replicated tables into the engine's set, this node mapped;
-- a second run adds nothing (Spock itself refuses a table twice: a duplicate key). It warns when
-- commit timestamps are off, as here.
SELECT relation, added FROM pgrelay.replication_setup();
SELECT relation, added FROM pgrelay.replication_setup();
SELECT s.set_name, count(*) FROM spock.replication_set_table t JOIN spock.replication_set s USING (set_id)
GROUP BY 1 ORDER BY 1;
\set VERBOSITY terse
SELECT spock.repset_add_table('default', 'pgrelay.queue');
\set VERBOSITY default
-- another of the node's sets may be named; one the node does not have is a clear error
SELECT count(*) AS added FROM pgrelay.replication_setup('ddl_sql') WHERE added;
SELECT * FROM pgrelay.replication_setup('nonesuch');
-- what Spock refuses itself: an unknown set, a table without a primary key in 'default'
CREATE TABLE regress_ha_nokey (x integer);
SELECT spock.repset_add_table('nonesuch', 'regress_ha_nokey');
SELECT spock.repset_add_table('default', 'regress_ha_nokey');
SELECT spock.repset_add_table('default_insert_only', 'regress_ha_nokey');
DROP TABLE regress_ha_nokey;
-- every table and sequence of pg_relay has a decision
SELECT relation, replicate FROM pgrelay.replication_tables();
SELECT count(*) FROM pgrelay.replication_tables() WHERE replicate IS NULL;
-- pg_relay.node_id must be set on the server for the set-up (error)
RESET pg_relay.node_id;
SELECT * FROM pgrelay.replication_setup();
SET pg_relay.node_id = 1;

-- A schema named spock that a superuser does not own is not trusted as the engine's catalog.
CREATE ROLE regress_ha_owner;
ALTER SCHEMA spock OWNER TO regress_ha_owner;
SELECT pgrelay._engine();
DROP SCHEMA spock CASCADE;
DROP ROLE regress_ha_owner;
-- without an engine there is no replication set to fill (error)
SELECT * FROM pgrelay.replication_setup();

-- A node alone (no peer configured) leads at its first tick: there is nobody to wait for
DELETE FROM pgrelay.nodes;
SET pg_relay.mode = 'leader';
SET pg_relay.dead_after = '10s';
SELECT dispatch, is_leader, waiting, why FROM pgrelay._ha_tick(NULL, true, true, false);
RESET pg_relay.mode;
RESET pg_relay.is_leader;
DELETE FROM pgrelay.heartbeats;
DELETE FROM pgrelay.peer_observations;
SELECT pgrelay.unregister('ha_free'), pgrelay.unregister('ha_pinned');
DROP FUNCTION regress_ha_noop(text);
RESET pg_relay.dead_after;
RESET pg_relay.node_id;
