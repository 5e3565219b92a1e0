/* extension/pg_relay/src/watch.sql: table-change events: a trigger that queues an event per changed row */

/*
 * A watch (watch_table) is a row of pgrelay.watches and an AFTER ROW trigger on the table. The
 * trigger runs as the extension's owner, so that whoever may change the table may queue its
 * events and nothing else; what it reads of a row is decided by the rights of the watcher (the
 * role that called watch_table), checked at every change:
 *
 *   columns         only those the watcher may SELECT now (all, or its column privileges)
 *   row security    while row-level security applies to the watcher, nothing is queued: which
 *                   rows its policies would show cannot be told from a trigger
 *   casts to json   to_jsonb() runs a cast to json of a type the row holds; such a cast whose
 *                   function neither a superuser nor the extension's owner owns would run with the
 *                   owner's rights, so the change fails instead (only casts the row's types reach
 *                   count: a cast anybody makes for a type of their own changes nothing here)
 *   partitions      a partition of a watched partitioned table gets the trigger from PostgreSQL;
 *                   it finds the watch through its ancestors (EXECUTE on the trigger function is
 *                   PUBLIC for that; a trigger no watch describes queues nothing and says so)
 */

-- pgrelay._watch_cast_risk()
CREATE OR REPLACE FUNCTION pgrelay._watch_cast_risk(rel oid)
RETURNS TABLE (source regtype, func regprocedure, owner name)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    -- Internal (_watch_trigger): a cast to json or jsonb that to_jsonb() could run for a value
    -- of the row type of rel, and whose function neither a superuser nor the caller (the
    -- extension's owner) owns. The types a row reaches: its columns' types, a domain's base
    -- type, an array's element type, a composite's attributes, recursively.
    WITH RECURSIVE reach(typ) AS (
        SELECT a.atttypid FROM pg_attribute a
        WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped
        UNION
        SELECT n.next
        FROM reach r JOIN pg_type t ON t.oid = r.typ
        CROSS JOIN LATERAL (SELECT NULLIF(t.typbasetype, 0) AS next
                            UNION ALL SELECT NULLIF(t.typelem, 0)
                            UNION ALL SELECT a.atttypid FROM pg_attribute a
                                      WHERE a.attrelid = t.typrelid AND t.typrelid <> 0
                                        AND a.attnum > 0 AND NOT a.attisdropped) n
        WHERE n.next IS NOT NULL
    )
    SELECT c.castsource::regtype, p.oid::regprocedure, o.rolname
    FROM pg_cast c JOIN pg_proc p ON p.oid = c.castfunc JOIN pg_roles o ON o.oid = p.proowner
    WHERE c.casttarget IN ('json'::regtype, 'jsonb'::regtype) AND NOT o.rolsuper AND o.rolname <> current_user
      AND c.castsource IN (SELECT r.typ FROM reach r)
    LIMIT 1
$$;
COMMENT ON FUNCTION pgrelay._watch_cast_risk(oid) IS
    'Internal: a cast to json that to_jsonb() of a row of the table would run with the extension owner''s rights';

-- pgrelay._watch_readable()
CREATE OR REPLACE FUNCTION pgrelay._watch_readable(w pgrelay.watches, OUT state text, OUT readable text[])
LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (_watch_trigger, watched_tables): what the watcher of w may read of its table now.
 * state is 'active', or why nothing is queued; readable the columns it may read (NULL: all).
 */
DECLARE
    t record;
    r record;
BEGIN
    SELECT c.relrowsecurity, c.relforcerowsecurity, c.relowner INTO t FROM pg_class c WHERE c.oid = w.relid;
    IF NOT FOUND THEN
        state := 'table dropped';
        RETURN;
    END IF;
    SELECT o.rolsuper, o.rolbypassrls INTO r FROM pg_roles o WHERE o.oid = w.watcher;
    IF NOT FOUND THEN
        state := 'watcher dropped';
        RETURN;
    END IF;
    IF t.relrowsecurity AND NOT (r.rolsuper OR r.rolbypassrls OR (t.relowner = w.watcher AND NOT t.relforcerowsecurity)) THEN
        state := 'row-level security applies to the watcher';
        RETURN;
    END IF;
    IF NOT has_table_privilege(w.watcher, w.relid, 'SELECT') THEN
        readable := ARRAY(SELECT a.attname::text FROM pg_attribute a
                          WHERE a.attrelid = w.relid AND a.attnum > 0 AND NOT a.attisdropped
                            AND (w.columns IS NULL OR a.attname = ANY (w.columns))
                            AND has_column_privilege(w.watcher, w.relid, a.attnum, 'SELECT')
                          ORDER BY a.attnum);
        IF cardinality(readable) = 0 THEN
            state := 'watcher may not read the table';
            RETURN;
        END IF;
    END IF;
    state := 'active';
END
$$;
COMMENT ON FUNCTION pgrelay._watch_readable(pgrelay.watches) IS
    'Internal: whether the watcher of a watch may read its table now, and which columns';

-- pgrelay._watch_trigger()
CREATE OR REPLACE FUNCTION pgrelay._watch_trigger() RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The trigger watch_table() puts on a table: AFTER INSERT/UPDATE/DELETE FOR EACH ROW, it queues
 * one event on the channel TG_ARGV[0] in the changing transaction (a rollback discards it with the
 * change). The payload is a JSON object: operation, schema, table, old and new (the row before and
 * after, NULL where there is none: only the columns the watch lists that its watcher may read),
 * txid (the changing transaction's id) and event_id (the id of this event, the one a webhook sends
 * as webhook-id, as a string: JSON numbers lose digits above 2^53). See the top of this file for
 * what is checked at each change.
 *
 * A watch of a topic (TG_ARGV[0] is then the topic) publishes the payload instead (publish(): one
 * event on each subscriber whose event types take event_type.operation, or the operation alone),
 * without event_id: each delivery has its own, and all carry the publication id. As a refused
 * event on a channel does, a publication the topic refuses (no subscriber for the operation, one
 * that does not take it) fails the change.
 */
DECLARE
    w pgrelay.watches;
    plain boolean;
    seen record;
    readable text[];
    caster record;
    cols text[];
    old_row jsonb;
    new_row jsonb;
    id bigint;
BEGIN
    -- The watch, and whether its watcher reads the whole table (the common case, decided in the
    -- same statement; _watch_readable() says the rest).
    SELECT x.relid, x.channel, x.trigger_name, x.watcher, x.operations, x.columns, x.created_at, x.topic,
           x.event_type, c.relrowsecurity IS FALSE AND has_table_privilege(x.watcher, x.relid, 'SELECT')
    INTO w.relid, w.channel, w.trigger_name, w.watcher, w.operations, w.columns, w.created_at, w.topic,
         w.event_type, plain
    FROM pgrelay.watches x LEFT JOIN pg_class c ON c.oid = x.relid
    WHERE x.relid = TG_RELID AND x.trigger_name = TG_NAME;
    IF NOT FOUND THEN
        -- a partition: the watch is its partitioned ancestor's
        SELECT x.* INTO w FROM pgrelay.watches x
        WHERE x.trigger_name = TG_NAME AND x.relid IN (SELECT pg_partition_ancestors(TG_RELID))
        LIMIT 1;
        plain := false;
    END IF;
    IF NOT FOUND OR COALESCE(w.channel, w.topic) IS DISTINCT FROM TG_ARGV[0] THEN
        RAISE EXCEPTION 'trigger % of table % was not made by pgrelay.watch_table()', TG_NAME, TG_RELID::regclass
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Drop the trigger; watch the table with pgrelay.watch_table().';
    END IF;
    IF NOT plain THEN
        SELECT * INTO seen FROM pgrelay._watch_readable(w);
        IF seen.state <> 'active' THEN
            RETURN NULL;    -- the watcher may read nothing of the change: pgrelay.watched_tables says why
        END IF;
        readable := seen.readable;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_cast c JOIN pg_proc p ON p.oid = c.castfunc JOIN pg_roles o ON o.oid = p.proowner
               WHERE c.casttarget IN ('json'::regtype, 'jsonb'::regtype) AND NOT o.rolsuper
                 AND o.rolname <> current_user) THEN
        SELECT * INTO caster FROM pgrelay._watch_cast_risk(TG_RELID);
        IF FOUND THEN
            RAISE EXCEPTION 'the change of watched table % is not queued: a cast to json runs code of role %',
                            TG_RELID::regclass, caster.owner
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = pg_catalog.format('The cast from %s uses %s, which would run with the rights of pg_relay''s owner.',
                                                 caster.source, caster.func),
                      HINT = 'Drop the cast, or have a superuser check its function and take it over (ALTER FUNCTION ... OWNER TO).';
        END IF;
    END IF;
    cols := COALESCE(readable, w.columns);
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
    IF w.topic IS NOT NULL THEN
        PERFORM pgrelay.publish(w.topic,
                                jsonb_build_object('operation', lower(TG_OP), 'schema', TG_TABLE_SCHEMA,
                                                   'table', TG_TABLE_NAME, 'old', old_row, 'new', new_row,
                                                   'txid', txid_current())::text,
                                concat_ws('.', w.event_type, lower(TG_OP)), NULL);
        RETURN NULL;
    END IF;
    id := pgrelay._next_id();
    PERFORM pgrelay._enqueue(w.channel,
                             jsonb_build_object('operation', lower(TG_OP), 'schema', TG_TABLE_SCHEMA,
                                                'table', TG_TABLE_NAME, 'old', old_row, 'new', new_row,
                                                'txid', txid_current(), 'event_id', id::text)::text,
                             NULL, id, any_payload => true);
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgrelay._watch_trigger() IS
    'Internal: the row trigger of watch_table(); queues a JSON description of the change on its channel';

-- pgrelay._watch_table_of()
CREATE OR REPLACE FUNCTION pgrelay._watch_table_of("table" regclass, OUT oid oid, OUT relkind "char",
                                                   OUT nspname name, OUT relname name, OUT ispartition boolean)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
/* Internal (watch_table, unwatch_table): the relation a regclass names, or a clear error. */
BEGIN
    SELECT x.oid, x.relkind, n.nspname, x.relname, x.relispartition INTO oid, relkind, nspname, relname, ispartition
    FROM pg_class x JOIN pg_namespace n ON n.oid = x.relnamespace WHERE x.oid = "table";
    IF NOT FOUND THEN
        -- a regclass may hold the number of a relation that is gone (or never was)
        RAISE EXCEPTION 'relation with OID % does not exist', "table"::oid USING ERRCODE = 'undefined_table';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._watch_table_of(regclass) IS 'Internal: the relation of watch_table() and unwatch_table()';

-- pgrelay.watch_table()
CREATE OR REPLACE FUNCTION pgrelay.watch_table("table" regclass, channel text DEFAULT NULL,
                                               operations text[] DEFAULT '{insert,update,delete}',
                                               columns text[] DEFAULT NULL, topic text DEFAULT NULL,
                                               event_type text DEFAULT NULL)
RETURNS name
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Makes every committed INSERT, UPDATE or DELETE of a row of the table (those listed in
 * operations) an event on the channel, in the same transaction, with the columns listed (NULL:
 * all) of the old and new row; see _watch_trigger for the payload. The caller (its login role)
 * becomes the watch's watcher: it must be allowed to put triggers on the table and to read the
 * columns, and row-level security must not apply to it; each change is read with its rights as
 * they are then. Watching again replaces the watch. Returns the trigger's name.
 *
 * With topic instead of channel, each change is published on the topic (see _watch_trigger), with
 * the event type event_type.operation ('order.insert'), or the operation alone when event_type is
 * NULL: subscribers choose the operations they take with their event types ('order.*').
 */
DECLARE
    t record;
    c pgrelay.channels;
    w pgrelay.watches;
    ops text[];
    bad text;
    trig name;
    seen record;
BEGIN
    IF watch_table."table" IS NULL OR (watch_table.channel IS NULL AND watch_table.topic IS NULL) THEN
        RAISE EXCEPTION 'table and channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF watch_table.channel IS NOT NULL AND watch_table.topic IS NOT NULL THEN
        RAISE EXCEPTION 'a watch is of a channel or of a topic, not both' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF watch_table.event_type IS NOT NULL AND watch_table.topic IS NULL THEN
        RAISE EXCEPTION 'event_type is for a watch that publishes on a topic'
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Give topic => instead of channel.';
    END IF;
    IF watch_table.event_type !~ '^[[:alnum:]_.:/-]{1,121}$' THEN
        RAISE EXCEPTION 'invalid event type "%"', pgrelay._show(watch_table.event_type)
            USING ERRCODE = 'invalid_name',
                  DETAIL = 'A watch''s event type has 1 to 121 letters, digits or the characters _ . : / - '
                           '(each change''s is it followed by . and the operation).';
    END IF;
    SELECT * INTO t FROM pgrelay._watch_table_of(watch_table."table");
    IF t.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '% is not a table', watch_table."table" USING ERRCODE = 'wrong_object_type';
    END IF;
    IF t.nspname IN ('pgrelay', 'pg_catalog', 'information_schema') OR t.nspname LIKE 'pg_toast%' THEN
        RAISE EXCEPTION 'table % cannot be watched', watch_table."table"
            USING ERRCODE = 'insufficient_privilege', DETAIL = 'pg_relay''s own and system tables are not watched.';
    END IF;
    IF NOT has_table_privilege(session_user, t.oid, 'TRIGGER') THEN
        RAISE EXCEPTION '% may not put triggers on table %', session_user, watch_table."table"
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'The table''s owner can GRANT SELECT, TRIGGER ON it.';
    END IF;
    IF watch_table.topic IS NOT NULL THEN
        PERFORM 1 FROM pgrelay.topics x WHERE x.topic = watch_table.topic FOR KEY SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'topic "%" does not exist', pgrelay._show(watch_table.topic)
                USING ERRCODE = 'undefined_object', HINT = 'Create it with pgrelay.create_topic().';
        END IF;
    ELSE
        SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = watch_table.channel;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(watch_table.channel)
                USING ERRCODE = 'undefined_object', HINT = 'Create it with pgrelay.register().';
        END IF;
    END IF;
    -- An email channel's payloads are notification ids (notify() refuses anything else): the
    -- JSON document of a change would fail every change of the table.
    IF c.action_type = 'notify' THEN
        RAISE EXCEPTION 'channel "%" sends email; a watch queues JSON documents, not notification ids', c.channel
            USING ERRCODE = 'wrong_object_type';
    END IF;
    SELECT array_agg(DISTINCT lower(o) ORDER BY lower(o)) INTO ops FROM unnest(watch_table.operations) o;
    IF ops IS NULL OR NOT ops <@ ARRAY['delete', 'insert', 'update'] OR array_position(ops, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'operations must be a non-empty list of insert, update and delete, not %',
                        COALESCE(watch_table.operations::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- in the order given, whatever plan the anti-join gets
    SELECT string_agg(format('%L', u.x), ', ' ORDER BY u.n) INTO bad
    FROM unnest(watch_table.columns) WITH ORDINALITY AS u(x, n)
    WHERE u.x IS NULL OR NOT EXISTS (SELECT 1 FROM pg_attribute a
                                     WHERE a.attrelid = t.oid AND a.attname = u.x AND a.attnum > 0
                                       AND NOT a.attisdropped);
    IF cardinality(watch_table.columns) = 0 THEN
        RAISE EXCEPTION 'columns must name at least one column (NULL: all of them)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'table % has no column %', watch_table."table", pgrelay._show(bad)
            USING ERRCODE = 'undefined_column';
    END IF;
    -- the watcher must be able to read every column the payload will hold
    SELECT string_agg(a.attname::text, ', ' ORDER BY a.attnum) INTO bad FROM pg_attribute a
    WHERE a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
      AND (watch_table.columns IS NULL OR a.attname = ANY (watch_table.columns))
      AND NOT has_column_privilege(session_user, t.oid, a.attnum, 'SELECT');
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION '% may not read column(s) % of table %', session_user, bad, watch_table."table"
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Watching never shows anyone a value they could not read: list only readable columns, or have the table''s owner GRANT SELECT.';
    END IF;
    IF t.ispartition AND EXISTS (SELECT 1 FROM pgrelay.watches x
                                 WHERE (x.channel = watch_table.channel OR x.topic = watch_table.topic)
                                   AND x.relid IN (SELECT pg_partition_ancestors(t.oid)) AND x.relid <> t.oid) THEN
        RAISE EXCEPTION 'table % is watched for % "%" already, through its partitioned table',
                        watch_table."table", CASE WHEN watch_table.topic IS NULL THEN 'channel' ELSE 'topic' END,
                        pgrelay._show(COALESCE(watch_table.channel, watch_table.topic))
            USING ERRCODE = 'duplicate_object';
    END IF;

    DELETE FROM pgrelay.watches x WHERE NOT EXISTS (SELECT 1 FROM pg_class k WHERE k.oid = x.relid);
    SELECT * INTO w FROM pgrelay.watches x
    WHERE x.relid = t.oid AND (x.channel = watch_table.channel OR x.topic = watch_table.topic);
    -- the trigger's name: readable in \d, and unique by the id in it (a name cut from the channel
    -- alone could be another channel's)
    trig := COALESCE(w.trigger_name,
                     format('pgrelay_watch_%s_%s', pgrelay._next_id(),
                            left(regexp_replace(lower(COALESCE(watch_table.channel, watch_table.topic)),
                                                '[^a-z0-9_]+', '_', 'g'), 28))::name);
    IF w.trigger_name IS NULL AND EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = t.oid AND g.tgname = trig) THEN
        RAISE EXCEPTION 'table % has a trigger named % already', watch_table."table", trig USING ERRCODE = 'duplicate_object';
    END IF;
    INSERT INTO pgrelay.watches AS x (relid, channel, trigger_name, watcher, operations, columns, topic, event_type)
    VALUES (t.oid, watch_table.channel, trig, session_user::regrole, ops, watch_table.columns, watch_table.topic,
            watch_table.event_type)
    ON CONFLICT ON CONSTRAINT watches_pkey DO UPDATE
        SET watcher = EXCLUDED.watcher, operations = EXCLUDED.operations, columns = EXCLUDED.columns,
            event_type = EXCLUDED.event_type, created_at = now()
    RETURNING * INTO w;
    SELECT * INTO seen FROM pgrelay._watch_readable(w);
    IF seen.state <> 'active' THEN
        RAISE EXCEPTION 'table % cannot be watched by %: %', watch_table."table", session_user, seen.state
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Its changes would be read with the watcher''s rights, and which rows its policies show cannot be told from a trigger: watch it as a role row-level security does not apply to (its owner, or one with BYPASSRLS).';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = t.oid AND g.tgname = trig) THEN
        EXECUTE format('DROP TRIGGER %I ON %I.%I', trig, t.nspname, t.relname);
    END IF;
    EXECUTE format('CREATE TRIGGER %I AFTER %s ON %I.%I FOR EACH ROW EXECUTE FUNCTION pgrelay._watch_trigger(%L)',
                   trig, array_to_string(ops, ' OR '), t.nspname, t.relname,
                   COALESCE(watch_table.channel, watch_table.topic));
    RETURN trig;
END
$$;
COMMENT ON FUNCTION pgrelay.watch_table(regclass, text, text[], text[], text, text) IS
    'Queues an event on the channel (or publishes on the topic) for every change (insert, update, delete) of a row of the table, read with the caller''s rights; returns the trigger name';

-- pgrelay.unwatch_table()
CREATE OR REPLACE FUNCTION pgrelay.unwatch_table("table" regclass, channel text DEFAULT NULL, topic text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/* Removes the watch of the table for the channel (or topic): its trigger and its row of pgrelay.watches. */
DECLARE
    t record;
    w pgrelay.watches;
BEGIN
    IF unwatch_table."table" IS NULL OR (unwatch_table.channel IS NULL AND unwatch_table.topic IS NULL) THEN
        RAISE EXCEPTION 'table and channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF unwatch_table.channel IS NOT NULL AND unwatch_table.topic IS NOT NULL THEN
        RAISE EXCEPTION 'a watch is of a channel or of a topic, not both' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO t FROM pgrelay._watch_table_of(unwatch_table."table");
    IF NOT has_table_privilege(session_user, t.oid, 'TRIGGER') THEN
        RAISE EXCEPTION '% may not change the triggers of table %', session_user, unwatch_table."table"
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    DELETE FROM pgrelay.watches x
    WHERE x.relid = t.oid AND (x.channel = unwatch_table.channel OR x.topic = unwatch_table.topic) RETURNING * INTO w;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'table % is not watched for % "%"', unwatch_table."table",
                        CASE WHEN unwatch_table.topic IS NULL THEN 'channel' ELSE 'topic' END,
                        pgrelay._show(COALESCE(unwatch_table.channel, unwatch_table.topic))
            USING ERRCODE = 'undefined_object';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = t.oid AND g.tgname = w.trigger_name) THEN
        EXECUTE format('DROP TRIGGER %I ON %I.%I', w.trigger_name, t.nspname, t.relname);
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay.unwatch_table(regclass, text, text) IS
    'Stops queueing the table''s changes on the channel or topic (drops the trigger watch_table made)';
