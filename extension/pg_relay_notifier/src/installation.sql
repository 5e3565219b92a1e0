/* extension/pg_relay_notifier/src/installation.sql: which version of pg_relay_notifier this database has, and how it was installed */

-- pgrelay_notifier.installation()
CREATE OR REPLACE FUNCTION pgrelay_notifier.installation(OUT version text, OUT method text)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    -- The version of the SQL this database runs (written in by the build), and how it came:
    -- extension (CREATE EXTENSION, pg_extension has it too) or script (pg_relay install over a
    -- plain connection, where pg_extension has nothing). The Processor and pg_relay status read
    -- it, so that both kinds of install look the same to them.
    SELECT '@EXT_VERSION@'::text,
           CASE WHEN EXISTS (SELECT 1 FROM pg_extension e WHERE e.extname = 'pg_relay_notifier') THEN 'extension' ELSE 'script' END
$$;
COMMENT ON FUNCTION pgrelay_notifier.installation() IS
    'The version of pg_relay_notifier in this database, and how it was installed: extension or script';
