-- test/ha/spock_standin.sql: a stand-in for the catalog of pgEdge Spock 5.0.x, for the tests of
-- pg_relay's Spock path (Spock needs a patched PostgreSQL and cannot be installed where pg_relay
-- is tested). Its shape and behaviour are those read from a live Spock 5.0.11 pair: the columns of
-- node, local_node, replication_set and replication_set_table with their keys; three replication
-- sets per node (default, default_insert_only, ddl_sql) owned by the local node; node ids that
-- are 16-bit hashes of the node name; sub_show_status() with slot names spk_<db>_<provider>_<sub>
-- and forward_origins NULL (as a subscription made with forward_origins '{}' shows it); and
-- repset_add_table() raising errors as Spock does: an unknown set, a table without a primary key
-- in a set that replicates updates or deletes, a table already in the set (a duplicate key).
--
-- Input: psql variables local (this node's name) and peers (a text[] literal of the other
-- nodes' names). spock.regress_status (provider_node, status, slot) is what sub_show_status()
-- reports for each subscription of this node; the tests change it to take links down.
CREATE SCHEMA spock;
CREATE FUNCTION spock.regress_node_id(name text) RETURNS oid LANGUAGE sql IMMUTABLE AS
$$ SELECT (pg_catalog.hashtext(name) & 65535)::oid $$;
CREATE TABLE spock.node (node_id oid PRIMARY KEY, node_name name NOT NULL UNIQUE, location text, country text,
                         info jsonb);
CREATE TABLE spock.node_interface (if_id oid PRIMARY KEY, if_name name NOT NULL,
                                   if_nodeid oid REFERENCES spock.node (node_id), if_dsn text NOT NULL);
CREATE TABLE spock.local_node (node_id oid PRIMARY KEY REFERENCES spock.node (node_id),
                               node_local_interface oid NOT NULL REFERENCES spock.node_interface (if_id));
CREATE TABLE spock.replication_set (set_id oid PRIMARY KEY, set_nodeid oid NOT NULL, set_name name NOT NULL,
                                    replicate_insert boolean NOT NULL DEFAULT true,
                                    replicate_update boolean NOT NULL DEFAULT true,
                                    replicate_delete boolean NOT NULL DEFAULT true,
                                    replicate_truncate boolean NOT NULL DEFAULT true,
                                    UNIQUE (set_nodeid, set_name));
CREATE TABLE spock.replication_set_table (set_id oid NOT NULL, set_reloid regclass NOT NULL, set_att_list text[],
                                          set_row_filter pg_node_tree, PRIMARY KEY (set_id, set_reloid));
CREATE TABLE spock.regress_status (provider_node text, status text, slot_name text);

INSERT INTO spock.node (node_id, node_name)
SELECT spock.regress_node_id(n), n FROM unnest(:'peers'::text[] || :'local'::text) n;
INSERT INTO spock.node_interface
SELECT spock.regress_node_id(n.node_name || '/if'), n.node_name, n.node_id, 'host=' || n.node_name
FROM spock.node n;
INSERT INTO spock.local_node
SELECT n.node_id, spock.regress_node_id(n.node_name || '/if') FROM spock.node n WHERE n.node_name = :'local';
INSERT INTO spock.replication_set (set_id, set_nodeid, set_name, replicate_update, replicate_delete, replicate_truncate)
SELECT spock.regress_node_id(:'local' || '/' || s), l.node_id, s, s <> 'default_insert_only',
       s <> 'default_insert_only', s <> 'default_insert_only'
FROM spock.local_node l CROSS JOIN unnest(ARRAY['default', 'default_insert_only', 'ddl_sql']) s;
-- each peer's subscription of this node to it, replicating
INSERT INTO spock.regress_status
SELECT p, 'replicating', format('spk_%s_%s_sub_%s_%s', current_database(), p, p, :'local')
FROM unnest(:'peers'::text[]) p;

CREATE FUNCTION spock.sub_show_status(subscription_name name DEFAULT NULL,
    OUT subscription_name text, OUT status text, OUT provider_node text, OUT provider_dsn text,
    OUT slot_name text, OUT replication_sets text[], OUT forward_origins text[])
RETURNS SETOF record LANGUAGE sql STABLE AS $$
    SELECT 'sub_' || s.provider_node || '_' || l.node_name, s.status, s.provider_node, 'host=' || s.provider_node,
           s.slot_name, '{default,default_insert_only,ddl_sql}'::text[], NULL::text[]
    FROM spock.regress_status s CROSS JOIN (SELECT n.node_name FROM spock.node n JOIN spock.local_node USING (node_id)) l
$$;

CREATE FUNCTION spock.repset_add_table(set_name name, relation regclass, synchronize_data boolean DEFAULT false,
    columns text[] DEFAULT NULL, row_filter text DEFAULT NULL, include_partitions boolean DEFAULT true)
RETURNS boolean LANGUAGE plpgsql CALLED ON NULL INPUT AS $$
DECLARE
    s spock.replication_set;
BEGIN
    SELECT * INTO s FROM spock.replication_set x JOIN spock.local_node l ON l.node_id = x.set_nodeid
    WHERE x.set_name = repset_add_table.set_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'replication set % not found', set_name;
    END IF;
    IF (s.replicate_update OR s.replicate_delete)
       AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = relation AND i.indisprimary) THEN
        RAISE EXCEPTION 'table % cannot be added to replication set %', relation, set_name
            USING DETAIL = 'table does not have PRIMARY KEY and given replication set is configured to replicate UPDATEs and/or DELETEs',
                  HINT = 'Add a PRIMARY KEY to the table';
    END IF;
    -- a table already in the set: the catalog's primary key refuses it (a duplicate key error)
    INSERT INTO spock.replication_set_table (set_id, set_reloid) VALUES (s.set_id, relation);
    RETURN true;
END
$$;
