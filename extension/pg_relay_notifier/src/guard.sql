/* extension/pg_relay_notifier/src/guard.sql: the schema must belong to a superuser (install and update) */

-- The control file names schema pgrelay_notifier, and CREATE EXTENSION uses a schema of that name
-- when one exists already. A role that could create it first (the owner of the database, say)
-- would own the schema of SECURITY DEFINER functions owned by a superuser, among them the only
-- one that hands out secrets: it could add look-alike functions next to ours, grant its USAGE to
-- anyone, or drop the schema and with it the whole extension and its data. So a schema that is
-- not a superuser's is refused, before anything is created in it.
DO $$
DECLARE
    owner_name name;
    owner_super boolean;
BEGIN
    SELECT r.rolname, r.rolsuper INTO owner_name, owner_super
    FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner
    WHERE n.nspname = 'pgrelay_notifier';
    IF NOT owner_super THEN
        RAISE EXCEPTION 'schema pgrelay_notifier belongs to role %, which is not a superuser', owner_name
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'Its owner could change or drop the functions and tables of pg_relay_notifier.',
                  HINT = 'Drop the schema (DROP SCHEMA pgrelay_notifier), then run CREATE EXTENSION pg_relay_notifier again.';
    END IF;
END
$$;
