/* extension/pg_relay/src/guard.sql: the schema must be the installer's or a superuser's, and nobody else's to write in (install and update) */

-- The schema pgrelay exists before anything of pg_relay is created in it: CREATE EXTENSION uses
-- the schema of that name when there is one, and an install over a plain connection (pg_relay
-- install) makes it. A role that could create it first (the owner of the database, say) would own
-- the schema of SECURITY DEFINER functions: it could add look-alike functions next to ours, grant
-- its USAGE to anyone, or drop the schema and with it the whole of pg_relay and its data; a role
-- that may CREATE in it could add look-alikes too. So the schema must belong to a superuser or to
-- the role that installs (which owns every object of pg_relay then), and no other role may create
-- in it. Checked again at every update. The roles that may create are named quoted as identifiers:
-- the hint is a statement to run, and a role's name is whatever its creator chose.
--
-- This check runs while the schema is still on the path (CREATE EXTENSION searches pg_catalog
-- first, then the schema), before anything says whose the schema is: so it names every operator
-- with its schema and compares values of one type only, and an operator or function that the
-- schema's owner put there is never picked.
DO $$
DECLARE
    s record;
BEGIN
    SELECT r.rolname, r.rolsuper, r.rolname OPERATOR(pg_catalog.=) current_user AS installs,
           (SELECT pg_catalog.string_agg(DISTINCT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'::pg_catalog.text
                                                 ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)::pg_catalog.text) END, ', ')
            FROM pg_catalog.aclexplode(n.nspacl) a
            WHERE a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'::pg_catalog.text
              AND a.grantee OPERATOR(pg_catalog.<>) n.nspowner) AS creators
    INTO s
    FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
    WHERE n.nspname OPERATOR(pg_catalog.=) 'pgrelay'::pg_catalog.name;
    IF NOT (s.rolsuper OR s.installs) THEN
        RAISE EXCEPTION 'schema pgrelay belongs to role %, which is neither a superuser nor the role installing pg_relay (%)',
                        s.rolname, current_user
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Its owner could change or drop the functions and tables of pg_relay. Nothing in it was used.',
                  HINT = 'If the schema is not yours, have its owner or a superuser drop it (DROP SCHEMA pgrelay CASCADE), then install pg_relay again; if its owner is to own pg_relay, install as that role.';
    END IF;
    IF s.creators IS NOT NULL THEN
        RAISE EXCEPTION 'role(s) % may create objects in schema pgrelay', s.creators
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'They could put look-alikes of the functions of pg_relay next to them.',
                  HINT = pg_catalog.format('REVOKE CREATE ON SCHEMA pgrelay FROM %s;', s.creators);
    END IF;
END
$$;
