/* extension/pg_relay_notifier/src/guard.sql: the schema must be the installer's or a superuser's, and nobody else's to write in (install and update) */

-- The schema pgrelay_notifier exists before anything of pg_relay_notifier is created in it: CREATE EXTENSION uses
-- the schema of that name when there is one, and an install over a plain connection (pg_relay
-- install) makes it. A role that could create it first (the owner of the database, say) would own
-- the schema of SECURITY DEFINER functions: it could add look-alike functions next to ours, grant
-- its USAGE to anyone, or drop the schema and with it the whole of pg_relay_notifier and its data; a role
-- that may CREATE in it could add look-alikes too. So the schema must belong to a superuser or to
-- the role that installs (which owns every object of pg_relay_notifier then), and no other role may create
-- in it. Checked again at every update.
DO $$
DECLARE
    s record;
BEGIN
    SELECT r.rolname, r.rolsuper, r.rolname = current_user AS installs,
           (SELECT pg_catalog.string_agg(DISTINCT CASE a.grantee WHEN 0 THEN 'PUBLIC'
                                                 ELSE pg_catalog.pg_get_userbyid(a.grantee)::text END, ', ')
            FROM pg_catalog.aclexplode(n.nspacl) a
            WHERE a.privilege_type = 'CREATE' AND a.grantee <> n.nspowner) AS creators
    INTO s
    FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner
    WHERE n.nspname = 'pgrelay_notifier';
    IF NOT (s.rolsuper OR s.installs) THEN
        RAISE EXCEPTION 'schema pgrelay_notifier belongs to role %, which is neither a superuser nor the role installing pg_relay_notifier (%)',
                        s.rolname, current_user
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Its owner could change or drop the functions and tables of pg_relay_notifier.',
                  HINT = 'Drop the schema (DROP SCHEMA pgrelay_notifier), then install pg_relay_notifier again.';
    END IF;
    IF s.creators IS NOT NULL THEN
        RAISE EXCEPTION 'role(s) % may create objects in schema pgrelay_notifier', s.creators
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'They could put look-alikes of the functions of pg_relay_notifier next to them.',
                  HINT = pg_catalog.format('REVOKE CREATE ON SCHEMA pgrelay_notifier FROM %s;', s.creators);
    END IF;
END
$$;
