/* extension/pg_relay/src/roles.sql: the NOLOGIN roles (cluster-wide; created once, kept on DROP EXTENSION) */

-- Making a role needs CREATEROLE (or a superuser). On a managed service the role that owns the
-- database usually has it; when it has not, the roles must exist already: the error names them
-- and the statements that make them, for a superuser (a role that makes them with CREATEROLE may
-- grant them, on PostgreSQL 16 and later, and the install then refuses them, below).
--
-- A role of that name may exist before this install: the roles are the whole cluster's, and
-- anybody with CREATEROLE may have made one. Its members get pg_relay's rights in this database
-- (the Processor's role reads secrets). So a fresh install refuses one that is more than a NOLOGIN
-- group, and one that a role other than a superuser or the installer may grant (ADMIN OPTION)
-- unless the installer names that role in pg_relay.accept_role_admins, and names the members it
-- has. An update only warns about both: it must not fail on a set-up
-- that works, but says what to fix.
DO $$
DECLARE
    fresh boolean := pg_catalog.to_regclass('pgrelay.queue') IS NULL;
    -- the roles the installer accepts as granters of pg_relay's roles, by name
    -- (names separated by commas, each without the spaces around it: a name that needs quotes in
    -- SQL is given as it is, not quoted)
    accepted text[] := ARRAY(SELECT pg_catalog.btrim(a.x) FROM pg_catalog.unnest(pg_catalog.string_to_array(
                           COALESCE(pg_catalog.current_setting('pg_relay.accept_role_admins', true), ''), ',')) a(x));
    o record;
BEGIN
    FOR o IN
        SELECT r.rolname,
               pg_catalog.concat_ws(', ', CASE WHEN r.rolcanlogin THEN 'can log in' END,
                                    CASE WHEN r.rolsuper THEN 'is a superuser' END,
                                    CASE WHEN r.rolcreaterole THEN 'has CREATEROLE' END,
                                    CASE WHEN r.rolcreatedb THEN 'has CREATEDB' END,
                                    CASE WHEN r.rolreplication THEN 'has REPLICATION' END,
                                    CASE WHEN r.rolbypassrls THEN 'has BYPASSRLS' END) AS attrs,
               (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.rolname), ', ' ORDER BY a.rolname)
                FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles a ON a.oid = m.member
                WHERE m.roleid = r.oid AND m.admin_option AND NOT a.rolsuper AND a.rolname <> current_user
                  AND NOT a.rolname::text = ANY (accepted)) AS admins,
               -- the same, as the value of pg_relay.accept_role_admins (the hint quotes it as a
               -- literal: a role's name is whatever its creator chose, quotes too)
               (SELECT pg_catalog.string_agg(a.rolname::text, ',' ORDER BY a.rolname)
                FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles a ON a.oid = m.member
                WHERE m.roleid = r.oid AND m.admin_option AND NOT a.rolsuper AND a.rolname <> current_user
                  AND NOT a.rolname::text = ANY (accepted)) AS admin_names,
               (SELECT pg_catalog.string_agg(DISTINCT pg_catalog.quote_ident(a.rolname), ', ')
                FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles a ON a.oid = m.member
                WHERE m.roleid = r.oid AND a.rolname <> 'pg_monitor') AS members
        FROM pg_catalog.pg_roles r
        WHERE r.rolname IN ('pgrelay_producer', 'pgrelay_processor', 'pgrelay_admin', 'pgrelay_monitor', 'pgrelay_nobody')
        ORDER BY r.rolname
    LOOP
        IF o.attrs <> '' AND fresh THEN
            RAISE EXCEPTION 'role % exists already and is not a role pg_relay makes: it %', o.rolname, o.attrs
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = 'pg_relay makes its roles NOLOGIN and without attributes: whoever logs in as this one, or uses what it has, holds the rights pg_relay gives it.',
                      HINT = pg_catalog.format('If it is not yours, have a superuser drop it (DROP ROLE %I); if it is, take away what it should not have (ALTER ROLE %I NOLOGIN ...) and grant it to login roles instead; then install again.',
                                               o.rolname, o.rolname);
        ELSIF o.attrs <> '' THEN
            RAISE WARNING 'role % %', o.rolname, o.attrs
                USING DETAIL = 'pg_relay makes its roles NOLOGIN and without attributes: whoever logs in as this one, or uses what it has, holds the rights pg_relay gives it.',
                      HINT = pg_catalog.format('ALTER ROLE %I NOLOGIN ...; grant it to login roles instead.', o.rolname);
        END IF;
        IF o.admins IS NOT NULL AND fresh THEN
            RAISE EXCEPTION 'role % exists already, and % may grant it to anyone', o.rolname, o.admins
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = 'The roles of pg_relay are the whole cluster''s: a role granted this one holds its rights in this database too.',
                      -- PGOPTIONS is shown only for names that need no quoting there nor in a shell
                      HINT = pg_catalog.format('If %s is to be trusted with this database''s pg_relay too, install with SET pg_relay.accept_role_admins = %L%s; if not, have a superuser take the option back (REVOKE ADMIN OPTION FOR %I FROM %s CASCADE).',
                                               o.admins, o.admin_names,
                                               CASE WHEN o.admin_names ~ '^[a-z_][a-z0-9_]*(,[a-z_][a-z0-9_]*)*$'
                                                    THEN pg_catalog.format(' (pg_relay install: PGOPTIONS=''-c pg_relay.accept_role_admins=%s'')', o.admin_names)
                                                    ELSE ' (pg_relay install: the same setting in PGOPTIONS)' END,
                                               o.rolname, o.admins);
        ELSIF o.admins IS NOT NULL THEN
            RAISE WARNING 'role % may be granted to anyone by %', o.rolname, o.admins
                USING DETAIL = 'The roles of pg_relay are the whole cluster''s: a role granted this one holds its rights in every database of pg_relay.',
                      HINT = pg_catalog.format('REVOKE ADMIN OPTION FOR %I FROM %s', o.rolname, o.admins);
        END IF;
        IF fresh AND o.members IS NOT NULL THEN
            RAISE WARNING 'role % exists already; its members (%) get its rights in this database', o.rolname, o.members;
        END IF;
    END LOOP;
END
$$;

DO $$
DECLARE
    r text;
    -- in this order, whatever plan the anti-join gets (the error lists them so)
    missing text[] := ARRAY(SELECT u.x FROM pg_catalog.unnest(ARRAY['pgrelay_producer', 'pgrelay_processor',
                                                                     'pgrelay_admin', 'pgrelay_monitor',
                                                                     'pgrelay_nobody'])
                                              WITH ORDINALITY AS u(x, n)
                            WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles o WHERE o.rolname = u.x)
                            ORDER BY u.n);
    comments text[] := ARRAY[
        'pg_relay: may queue events with pgrelay.notify() (and send mail with pg_relay_notifier)',
        'pg_relay: the Processor''s role: may run the dispatch functions',
        'pg_relay: may register channels, pause, resume and re-queue failed events',
        'pg_relay: may read the views of pg_relay and pg_relay_notifier, nothing else (granted to pg_monitor)',
        'pg_relay: holds no right at all; owns the function that fires a handler''s deferred triggers, which so run with none'];
BEGIN
    IF cardinality(missing) > 0 AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles o
                                                WHERE o.rolname = current_user AND (o.rolsuper OR o.rolcreaterole)) THEN
        RAISE EXCEPTION 'pg_relay needs the roles %, and % may not create roles', pg_catalog.array_to_string(missing, ', '),
                        current_user
            USING ERRCODE = 'insufficient_privilege',
                  -- the installer gives one function to pgrelay_nobody (privileges.sql), which needs
                  -- the right to act as it
                  HINT = pg_catalog.format('Have a superuser run: %s; GRANT pgrelay_nobody TO %I; then install again.',
                                           (SELECT pg_catalog.string_agg(pg_catalog.format('CREATE ROLE %I NOLOGIN', u.x), '; ' ORDER BY u.n)
                                            FROM pg_catalog.unnest(missing) WITH ORDINALITY AS u(x, n)),
                                           current_user);
    END IF;
    FOREACH r IN ARRAY missing LOOP
        EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
        EXECUTE pg_catalog.format('COMMENT ON ROLE %I IS %L', r,
                                  comments[pg_catalog.array_position(ARRAY['pgrelay_producer', 'pgrelay_processor',
                                                                           'pgrelay_admin', 'pgrelay_monitor',
                                                                           'pgrelay_nobody'], r)]);
        -- Monitoring agents that already read pg_monitor's views read pg_relay's too; only when
        -- the role is made, so that an admin who revoked it does not see it come back.
        IF r = 'pgrelay_monitor' THEN
            GRANT pgrelay_monitor TO pg_monitor;
        END IF;
    END LOOP;
END
$$;
