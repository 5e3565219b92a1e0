/* extension/pg_relay/src/roles.sql: the four NOLOGIN roles (cluster-wide; created once, kept on DROP EXTENSION) */

-- Making a role needs CREATEROLE (or a superuser). On a managed service the role that owns the
-- database usually has it; when it has not, the roles must exist already: the error names them
-- and the statements that make them, for a role that may.
DO $$
DECLARE
    r text;
    -- in this order, whatever plan the anti-join gets (the error lists them so)
    missing text[] := ARRAY(SELECT u.x FROM pg_catalog.unnest(ARRAY['pgrelay_producer', 'pgrelay_processor',
                                                                     'pgrelay_admin', 'pgrelay_monitor'])
                                              WITH ORDINALITY AS u(x, n)
                            WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles o WHERE o.rolname = u.x)
                            ORDER BY u.n);
    comments text[] := ARRAY[
        'pg_relay: may queue events with pgrelay.notify() (and send mail with pg_relay_notifier)',
        'pg_relay: the Processor''s role: may run the dispatch functions',
        'pg_relay: may register channels, pause, resume and re-queue failed events',
        'pg_relay: may read the views of pg_relay and pg_relay_notifier, nothing else (granted to pg_monitor)'];
BEGIN
    IF cardinality(missing) > 0 AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles o
                                                WHERE o.rolname = current_user AND (o.rolsuper OR o.rolcreaterole)) THEN
        RAISE EXCEPTION 'pg_relay needs the roles %, and % may not create roles', pg_catalog.array_to_string(missing, ', '),
                        current_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = pg_catalog.format('Have a role with CREATEROLE run: %s; then install again.',
                                           (SELECT pg_catalog.string_agg(pg_catalog.format('CREATE ROLE %I NOLOGIN', u.x), '; ' ORDER BY u.n)
                                            FROM pg_catalog.unnest(missing) WITH ORDINALITY AS u(x, n)));
    END IF;
    FOREACH r IN ARRAY missing LOOP
        EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
        EXECUTE pg_catalog.format('COMMENT ON ROLE %I IS %L', r,
                                  comments[pg_catalog.array_position(ARRAY['pgrelay_producer', 'pgrelay_processor',
                                                                           'pgrelay_admin', 'pgrelay_monitor'], r)]);
        -- Monitoring agents that already read pg_monitor's views read pg_relay's too; only when
        -- the role is made, so that an admin who revoked it does not see it come back.
        IF r = 'pgrelay_monitor' THEN
            GRANT pgrelay_monitor TO pg_monitor;
        END IF;
    END LOOP;
END
$$;
