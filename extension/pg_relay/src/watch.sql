/* extension/pg_relay/src/watch.sql: table-change events: a trigger that queues an event per changed row */

-- pgrelay._watch_trigger()
CREATE OR REPLACE FUNCTION pgrelay._watch_trigger() RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The trigger watch_table() puts on a table: AFTER INSERT/UPDATE/DELETE FOR EACH ROW, it queues
 * one event on the channel TG_ARGV[0] in the changing transaction (a rollback discards it with the
 * change). TG_ARGV[1], when given, is the JSON array of the columns to put in old and new. The
 * payload is a JSON object: operation, schema, table, old and new (the row before and after, NULL
 * where there is none), txid (the changing transaction's id) and event_id (the id of this event,
 * the one a webhook sends as webhook-id, as a string: JSON numbers lose digits above 2^53).
 * SECURITY DEFINER so that whoever may change the table may queue its events, and nothing else.
 *
 * Note that to_jsonb() converts a value of a type that has a cast to json with that cast's
 * function, and here it runs as the extension's owner, a superuser: the owner of an enum or range
 * type (any role that may create types) could make a cast to json whose function then ran with
 * superuser rights at every change of a watched table. So no row is converted while a cast to
 * json or jsonb has a function that a role other than a superuser owns.
 */
DECLARE
    cols text[];
    old_row jsonb;
    new_row jsonb;
    id bigint := pgrelay._next_id();
    caster record;
BEGIN
    SELECT c.castsource::regtype AS source, p.oid::regprocedure AS func, r.rolname AS owner INTO caster
    FROM pg_cast c JOIN pg_proc p ON p.oid = c.castfunc JOIN pg_roles r ON r.oid = p.proowner
    WHERE c.casttarget IN ('json'::regtype, 'jsonb'::regtype) AND NOT r.rolsuper
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'the change of a watched table is not queued while a cast to json runs code of role %',
                        caster.owner
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = pg_catalog.format('The cast from %s uses %s, which would run with the rights of pg_relay''s owner.',
                                             caster.source, caster.func),
                  HINT = 'Drop the cast, or have a superuser check its function and take it over (ALTER FUNCTION ... OWNER TO).';
    END IF;
    IF TG_NARGS > 1 THEN
        cols := ARRAY(SELECT jsonb_array_elements_text(TG_ARGV[1]::jsonb));
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        old_row := to_jsonb(OLD);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        new_row := to_jsonb(NEW);
    END IF;
    IF cols IS NOT NULL THEN
        old_row := (SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(old_row) e WHERE e.key = ANY (cols));
        new_row := (SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(new_row) e WHERE e.key = ANY (cols));
    END IF;
    PERFORM pgrelay._enqueue(TG_ARGV[0],
                             jsonb_build_object('operation', lower(TG_OP), 'schema', TG_TABLE_SCHEMA,
                                                'table', TG_TABLE_NAME, 'old', old_row, 'new', new_row,
                                                'txid', txid_current(), 'event_id', id::text)::text,
                             NULL, id);
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgrelay._watch_trigger() IS
    'Internal: the row trigger of watch_table(); queues a JSON description of the change on its channel';

-- pgrelay._watch_name()
CREATE OR REPLACE FUNCTION pgrelay._watch_name(channel text) RETURNS name
LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
    -- One trigger per table and channel, named after the channel (readable in \d) and made unique
    -- by a digest of it (a channel name may be longer than a name, or differ only in characters
    -- an identifier would rather not hold).
    SELECT format('pgrelay_watch_%s_%s', left(md5(channel), 8),
                  left(regexp_replace(lower(channel), '[^a-z0-9_]+', '_', 'g'), 40))::name
$$;
COMMENT ON FUNCTION pgrelay._watch_name(text) IS 'Internal: the name of the trigger that watches a table for a channel';

-- pgrelay.watch_table()
CREATE OR REPLACE FUNCTION pgrelay.watch_table("table" regclass, channel text,
                                               operations text[] DEFAULT '{insert,update,delete}',
                                               columns text[] DEFAULT NULL)
RETURNS name
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Makes every committed INSERT, UPDATE or DELETE of a row of the table (those listed in
 * operations) an event on the channel, in the same transaction, with the columns listed (NULL:
 * all) of the old and new row; see _watch_trigger for the payload. Watching again replaces the
 * trigger. The caller (its login role) must be allowed to read the table and put triggers on it:
 * watching never shows anyone a row they could not read. Returns the trigger's name.
 */
DECLARE
    t record;
    c pgrelay.channels;
    ops text[];
    bad text;
    trig name := pgrelay._watch_name(watch_table.channel);
BEGIN
    IF watch_table."table" IS NULL OR watch_table.channel IS NULL THEN
        RAISE EXCEPTION 'table and channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT x.oid, x.relkind, n.nspname, x.relname INTO t
    FROM pg_class x JOIN pg_namespace n ON n.oid = x.relnamespace WHERE x.oid = watch_table."table";
    IF NOT FOUND THEN
        -- a regclass may hold the number of a relation that is gone (or never was)
        RAISE EXCEPTION 'relation with OID % does not exist', watch_table."table"::oid
            USING ERRCODE = 'undefined_table';
    END IF;
    IF t.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '% is not a table', watch_table."table" USING ERRCODE = 'wrong_object_type';
    END IF;
    IF t.nspname IN ('pgrelay', 'pg_catalog', 'information_schema') OR t.nspname LIKE 'pg_toast%' THEN
        RAISE EXCEPTION 'table % cannot be watched', watch_table."table"
            USING ERRCODE = 'insufficient_privilege', DETAIL = 'pg_relay''s own and system tables are not watched.';
    END IF;
    IF NOT (has_table_privilege(session_user, t.oid, 'SELECT') AND has_table_privilege(session_user, t.oid, 'TRIGGER')) THEN
        RAISE EXCEPTION '% may not read table % and put triggers on it', session_user, watch_table."table"
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'The table''s owner can GRANT SELECT, TRIGGER ON it.';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = watch_table.channel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(watch_table.channel)
            USING ERRCODE = 'undefined_object', HINT = 'Create it with pgrelay.register().';
    END IF;
    SELECT array_agg(DISTINCT lower(o) ORDER BY lower(o)) INTO ops FROM unnest(watch_table.operations) o;
    IF ops IS NULL OR NOT ops <@ ARRAY['delete', 'insert', 'update'] OR array_position(ops, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'operations must be a non-empty list of insert, update and delete, not %',
                        COALESCE(watch_table.operations::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(format('%L', x), ', ') INTO bad FROM unnest(watch_table.columns) x
    WHERE x IS NULL OR NOT EXISTS (SELECT 1 FROM pg_attribute a
                                   WHERE a.attrelid = t.oid AND a.attname = x AND a.attnum > 0 AND NOT a.attisdropped);
    IF cardinality(watch_table.columns) = 0 THEN
        RAISE EXCEPTION 'columns must name at least one column (NULL: all of them)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'table % has no column %', watch_table."table", pgrelay._show(bad)
            USING ERRCODE = 'undefined_column';
    END IF;

    IF EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = t.oid AND g.tgname = trig) THEN
        EXECUTE format('DROP TRIGGER %I ON %I.%I', trig, t.nspname, t.relname);
    END IF;
    EXECUTE format('CREATE TRIGGER %I AFTER %s ON %I.%I FOR EACH ROW EXECUTE FUNCTION pgrelay._watch_trigger(%L%s)',
                   trig, array_to_string(ops, ' OR '), t.nspname, t.relname, watch_table.channel,
                   CASE WHEN watch_table.columns IS NULL THEN ''
                        ELSE format(', %L', to_jsonb(watch_table.columns)::text) END);
    RETURN trig;
END
$$;
COMMENT ON FUNCTION pgrelay.watch_table(regclass, text, text[], text[]) IS
    'Queues an event on the channel for every change (insert, update, delete) of a row of the table; returns the trigger name';

-- pgrelay.unwatch_table()
CREATE OR REPLACE FUNCTION pgrelay.unwatch_table("table" regclass, channel text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/* Removes the trigger watch_table() put on the table for the channel. */
DECLARE
    t record;
    trig name := pgrelay._watch_name(unwatch_table.channel);
BEGIN
    IF unwatch_table."table" IS NULL OR unwatch_table.channel IS NULL THEN
        RAISE EXCEPTION 'table and channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT n.nspname, x.relname, x.oid INTO t
    FROM pg_class x JOIN pg_namespace n ON n.oid = x.relnamespace WHERE x.oid = unwatch_table."table";
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', unwatch_table."table"::oid
            USING ERRCODE = 'undefined_table';
    END IF;
    IF NOT has_table_privilege(session_user, t.oid, 'TRIGGER') THEN
        RAISE EXCEPTION '% may not change the triggers of table %', session_user, unwatch_table."table"
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = t.oid AND g.tgname = trig) THEN
        RAISE EXCEPTION 'table % is not watched for channel "%"', unwatch_table."table", pgrelay._show(unwatch_table.channel)
            USING ERRCODE = 'undefined_object';
    END IF;
    EXECUTE format('DROP TRIGGER %I ON %I.%I', trig, t.nspname, t.relname);
END
$$;
COMMENT ON FUNCTION pgrelay.unwatch_table(regclass, text) IS
    'Stops queueing the table''s changes on the channel (drops the trigger watch_table made)';
