/* extension/pg_relay/src/roles.sql: the four NOLOGIN roles (cluster-wide; created once, kept on DROP EXTENSION) */

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['pgrelay_producer', 'pgrelay_processor', 'pgrelay_admin', 'pgrelay_monitor'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
            EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
            -- Monitoring agents that already read pg_monitor's views read pg_relay's too; only when
            -- the role is made, so that an admin who revoked it does not see it come back.
            IF r = 'pgrelay_monitor' THEN
                GRANT pgrelay_monitor TO pg_monitor;
            END IF;
        END IF;
    END LOOP;
END
$$;

COMMENT ON ROLE pgrelay_producer IS 'pg_relay: may queue events with pgrelay.notify() (and send mail with pg_relay_notifier)';
COMMENT ON ROLE pgrelay_processor IS 'pg_relay: the Processor''s role: may run the dispatch functions';
COMMENT ON ROLE pgrelay_admin IS 'pg_relay: may register channels, pause, resume and re-queue failed events';
COMMENT ON ROLE pgrelay_monitor IS 'pg_relay: may read the views of pg_relay and pg_relay_notifier, nothing else (granted to pg_monitor)';
