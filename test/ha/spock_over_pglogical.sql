-- test/ha/spock_over_pglogical.sql: a Spock stand-in that replicates. Spock needs a patched
-- PostgreSQL and cannot run where pg_relay is tested; this schema gives a pglogical 2 node the
-- catalog and functions of Spock 5.0.x that pg_relay reads (node, local_node, replication_set,
-- sub_show_status(), repset_add_table()), over pglogical's own, so that pg_relay takes the node for a
-- Spock node (its engine is then "spock") while the rows replicate for real. It also behaves as
-- Spock does where that matters to pg_relay: an apply worker whose provider went away comes back
-- only after a delay, spock.restart_delay_default (5 s unless set). pglogical holds a crashed apply
-- worker back for the same 5 s, so the delay is real here; the harness sets the setting on every
-- node (a placeholder, as Spock's own would read), for pg_relay to read.
--
-- Run as a superuser (Spock's schema belongs to the superuser that made the extension) on a node
-- whose pglogical node exists, before replication is set up.
CREATE SCHEMA spock;
CREATE VIEW spock.node AS
SELECT n.node_id, n.node_name, NULL::text AS location, NULL::text AS country, NULL::jsonb AS info
FROM pglogical.node n;
CREATE VIEW spock.local_node AS
SELECT l.node_id, l.node_local_interface FROM pglogical.local_node l;
CREATE VIEW spock.replication_set AS
SELECT s.set_id, s.set_nodeid, s.set_name, s.replicate_insert, s.replicate_update, s.replicate_delete,
       s.replicate_truncate
FROM pglogical.replication_set s;

CREATE FUNCTION spock.sub_show_status(subscription_name name DEFAULT NULL,
    OUT subscription_name text, OUT status text, OUT provider_node text, OUT provider_dsn text,
    OUT slot_name text, OUT replication_sets text[], OUT forward_origins text[])
RETURNS SETOF record LANGUAGE sql STABLE AS $$
    SELECT s.subscription_name, s.status, s.provider_node, s.provider_dsn, s.slot_name, s.replication_sets,
           NULL::text[]
    FROM pglogical.show_subscription_status($1) s
$$;

CREATE FUNCTION spock.repset_add_table(set_name name, relation regclass, synchronize_data boolean DEFAULT false,
    columns text[] DEFAULT NULL, row_filter text DEFAULT NULL, include_partitions boolean DEFAULT true)
RETURNS boolean LANGUAGE sql CALLED ON NULL INPUT AS $$
    SELECT pglogical.replication_set_add_table($1, $2, COALESCE($3, false), $4, $5)
$$;
CREATE VIEW spock.replication_set_table AS
SELECT t.set_id, t.set_reloid, t.set_att_list, t.set_row_filter FROM pglogical.replication_set_table t;
