/* extension/pg_relay/src/producer.sql: what producers call: notify */

-- pgrelay._run_at()
CREATE OR REPLACE FUNCTION pgrelay._run_at(wanted timestamptz) RETURNS timestamptz
LANGUAGE sql VOLATILE AS $$
    -- Internal: the run_at every statement that writes pgrelay.queue gives a row: the time
    -- wanted (NULL: now), never before the clock read here, inside that statement and so after its
    -- lock on the queue. The probe's floors rest on it (_queue_bound). Inlined into the statement.
    SELECT GREATEST(wanted, pg_catalog.clock_timestamp())
$$;
COMMENT ON FUNCTION pgrelay._run_at(timestamptz) IS
    'Internal: the run_at a queue row is written with: the time wanted, never before the clock';

-- pgrelay._email_payload_refused()
CREATE OR REPLACE FUNCTION pgrelay._email_payload_refused(channel text, n bigint) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (notify, notify_many, schedule): the error of a payload on an email channel (action
 * type notify) that is no notification id: such an event could deliver nothing, and would only
 * fail when it runs. The payload itself is not repeated. Never returns.
 */
BEGIN
    RAISE EXCEPTION '% of channel "%" must be a notification id: it sends email',
                    CASE WHEN n IS NULL THEN 'the payload' ELSE pg_catalog.format('payload %s', n) END,
                    channel
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'An email event''s payload is the id of its pgrelay_notifier notification: 1 to 19 digits.',
              HINT = 'Queue email with pgrelay_notifier.send().';
END
$$;
COMMENT ON FUNCTION pgrelay._email_payload_refused(text, bigint) IS
    'Internal: the error of a payload on an email channel that is no notification id';

-- pgrelay._enqueue_refused()
CREATE OR REPLACE FUNCTION pgrelay._enqueue_refused(channel text, payload text, run_at timestamptz)
RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
/*
 * Internal (notify and _enqueue, which pin search_path, call it when their INSERT queued nothing):
 * raises the error that says why the event was refused. Never returns.
 */
DECLARE
    c pgrelay.channels;
BEGIN
    -- infinity would never be due and -infinity would jump every queue: only real times.
    IF _enqueue_refused.run_at IS NOT NULL AND NOT pg_catalog.isfinite(_enqueue_refused.run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', _enqueue_refused.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF _enqueue_refused.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF _enqueue_refused.payload IS NULL THEN
        RAISE EXCEPTION 'payload must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass an empty string for an event without a payload.';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = _enqueue_refused.channel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(_enqueue_refused.channel)
            USING ERRCODE = 'undefined_object',
                  HINT = 'Create it with pgrelay.register().';
    END IF;
    IF NOT c.active THEN
        RAISE EXCEPTION 'channel "%" is not active', _enqueue_refused.channel
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF pg_catalog.octet_length(_enqueue_refused.payload) > c.max_payload_bytes THEN
        RAISE EXCEPTION 'payload of % bytes is larger than the % bytes channel "%" accepts',
                        pg_catalog.octet_length(_enqueue_refused.payload), c.max_payload_bytes, _enqueue_refused.channel
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'An admin can raise the limit: pgrelay.register(channel, max_payload_bytes => ...).';
    END IF;
    IF c.action_type = 'notify' AND pgrelay._notification_id(_enqueue_refused.payload) IS NULL THEN
        PERFORM pgrelay._email_payload_refused(c.channel, NULL);
    END IF;
    -- a guard only: the INSERT that found nothing checks nothing else
    RAISE EXCEPTION 'the event could not be queued on channel "%"', _enqueue_refused.channel
        USING ERRCODE = 'internal_error';
END
$$;
COMMENT ON FUNCTION pgrelay._enqueue_refused(text, text, timestamptz) IS
    'Internal: the error of an event notify() or _enqueue() could not queue';

-- pgrelay._channel_takes()
CREATE OR REPLACE FUNCTION pgrelay._channel_takes(active boolean, max_payload_bytes integer, action_type text,
                                                  payload text, run_at timestamptz, any_payload boolean)
RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    -- Internal (_enqueue, _enqueue_keyed, publish): does a channel with these columns take an event
    -- of this payload and run_at? Active, the payload within its size, of the form an email channel
    -- (action type notify) takes unless any_payload, and a finite run_at (NULL: now). When it does
    -- not, _enqueue_refused() says why. A plain expression, inlined into its callers' statements
    -- (operators schema-qualified: an inlined body is read with the caller's search_path).
    SELECT active
       AND pg_catalog.octet_length(payload) OPERATOR(pg_catalog.<=) max_payload_bytes
       AND (any_payload OR action_type OPERATOR(pg_catalog.<>) 'notify'
            OR payload OPERATOR(pg_catalog.~) pgrelay._notification_id_form())
       AND (run_at IS NULL OR pg_catalog.isfinite(run_at))
$$;
COMMENT ON FUNCTION pgrelay._channel_takes(boolean, integer, text, text, timestamptz, boolean) IS
    'Internal: whether a channel takes an event of this payload and run_at (active, size, form, finite time)';

-- pgrelay._enqueue()
CREATE OR REPLACE FUNCTION pgrelay._enqueue(channel text, payload text, run_at timestamptz, id bigint,
                                            any_payload boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (notify with a run_at, notify_many, the schedules, and the table-change trigger, which
 * pins search_path and needs the event id before it writes the payload): checks and queues one
 * event with the given id in the caller's transaction. Returns the id. notify() runs the same
 * INSERT itself (see there).
 *
 * One statement: the INSERT reads the channel and inserts the row only when the channel exists,
 * is active and takes a payload of this size, of the form an email channel takes (a notification
 * id) unless any_payload, and run_at is a real time. Only when it inserted nothing does
 * _enqueue_refused() say why. any_payload is the trigger's: the change of a table is never
 * refused for what the payload of its event looks like (watch_table() refuses an email channel,
 * but a watch made before it did is kept).
 */
BEGIN
    INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,
                               run_at, queued_at)
    SELECT _enqueue.id, _enqueue.id, x.channel, x.action_type, _enqueue.payload, pgrelay._node_id(),
           x.node_restricted, pgrelay._run_at(_enqueue.run_at), pg_catalog.now()
    FROM pgrelay.channels x
    WHERE x.channel = _enqueue.channel
      AND pgrelay._channel_takes(x.active, x.max_payload_bytes, x.action_type, _enqueue.payload, _enqueue.run_at,
                                 _enqueue.any_payload);
    IF FOUND THEN
        RETURN _enqueue.id;
    END IF;
    RETURN pgrelay._enqueue_refused(_enqueue.channel, _enqueue.payload, _enqueue.run_at);
END
$$;
COMMENT ON FUNCTION pgrelay._enqueue(text, text, timestamptz, bigint, boolean) IS
    'Internal: checks an event and queues it with the given id in the caller''s transaction';

-- pgrelay._key_lock()
CREATE OR REPLACE FUNCTION pgrelay._key_lock(channel text, key text) RETURNS void
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    -- Internal: the transaction's lock on a channel's key (held until it ends): producers of one key
    -- queue one after another, and a retry or snooze of a keyed event waits for them. Different
    -- keys whose hashes collide only wait for each other.
    SELECT pg_catalog.pg_advisory_xact_lock(1885827587, pg_catalog.hashtext(channel || E'\n' || key))
$$;
COMMENT ON FUNCTION pgrelay._key_lock(text, text) IS
    'Internal: the advisory lock of a channel''s key, until the transaction ends';

-- pgrelay._check_key()
CREATE OR REPLACE FUNCTION pgrelay._check_key(key text, key_mode text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    -- Internal (_enqueue_keyed, publish): a key and a key_mode a call may give, or a clear error.
    IF key_mode IS NULL OR key_mode NOT IN ('keep', 'replace', 'debounce') THEN
        RAISE EXCEPTION 'key_mode must be keep, replace or debounce, not %', COALESCE(pgrelay._show(key_mode), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF key = '' OR pg_catalog.octet_length(key) > 512 OR pgrelay._has_control(key) THEN
        RAISE EXCEPTION 'key "%" must be 1 to 512 bytes without control or invisible characters', pgrelay._show(key)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay._check_key(text, text) IS
    'Internal: checks a key and key_mode of notify() or publish()';

-- pgrelay._enqueue_keyed()
CREATE OR REPLACE FUNCTION pgrelay._enqueue_keyed(channel text, payload text, run_at timestamptz, key text,
                                                  key_mode text, id bigint, publication_id bigint DEFAULT NULL,
                                                  event_type text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (notify, notify_many and publish with a key): at most one event of a channel and key waits to
 * start on this node. Under the key's lock (_key_lock), the waiting event of the key, if there is
 * one, is found and locked (SKIP LOCKED: an event that is being run right now does not wait, it
 * is running, not waiting), and key_mode says what this call makes of it:
 *   keep      nothing changes; its id is returned
 *   replace   its payload becomes this one (run_at stays)
 *   debounce  its payload and its run_at become this call's (run_at NULL: now)
 * Without a waiting event, a new one is queued with the given id. Returns the id of the event that
 * now stands (its event id). The checks of a new event apply to a replacement too. publication_id
 * and event_type: the publication (publish()) the call delivers, NULL for notify(); a replaced or
 * debounced event carries the call's, as it carries its payload, so that the receiver is told
 * whose payload it gets.
 *
 * A key is its producer's: the event records the login role that queued it (key_owner,
 * session_user: notify() runs as the extension's owner), and a call by another role that finds
 * it is refused, in every key_mode, so that no producer replaces, moves or learns the id of
 * another's event. A channel registered with shared_keys lets every producer's calls find it. A
 * retry or a snooze keeps its event's key and owner. An event of a key without an owner (one
 * queued before 1.4) is nobody's to find on a channel that does not share its keys: a call then
 * queues a new event beside it, as beside a running one.
 */
DECLARE
    pending record;
    c pgrelay.channels;
BEGIN
    PERFORM pgrelay._check_key(_enqueue_keyed.key, _enqueue_keyed.key_mode);
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = _enqueue_keyed.channel
      AND pgrelay._channel_takes(x.active, x.max_payload_bytes, x.action_type, _enqueue_keyed.payload,
                                 _enqueue_keyed.run_at, false);
    IF NOT FOUND THEN
        RETURN pgrelay._enqueue_refused(_enqueue_keyed.channel, _enqueue_keyed.payload, _enqueue_keyed.run_at);
    END IF;
    PERFORM pgrelay._key_lock(c.channel, _enqueue_keyed.key);
    SELECT q.id, q.event_id, q.key_owner INTO pending FROM pgrelay.queue q
    WHERE q.owner_node = pgrelay._node_id() AND q.channel = c.channel AND q.key = _enqueue_keyed.key
      AND (c.shared_keys OR q.key_owner IS NOT NULL)
    ORDER BY q.id LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF FOUND AND NOT c.shared_keys AND pending.key_owner <> session_user THEN
        RAISE EXCEPTION 'key "%" of channel "%" is held by an event another role queued', pgrelay._show(_enqueue_keyed.key),
                        c.channel
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'A key belongs to the role that queued its waiting event.',
                  HINT = 'Give each producer keys of its own, or have an admin share the channel''s keys: '
                         'pgrelay.register(channel, shared_keys => true).';
    END IF;
    IF FOUND THEN
        IF key_mode = 'replace' THEN
            UPDATE pgrelay.queue q SET payload = _enqueue_keyed.payload, publication_id = _enqueue_keyed.publication_id,
                                       event_type = _enqueue_keyed.event_type
            WHERE q.id = pending.id;
        ELSIF key_mode = 'debounce' THEN
            UPDATE pgrelay.queue q SET payload = _enqueue_keyed.payload,
                                       run_at = pgrelay._run_at(_enqueue_keyed.run_at),
                                       publication_id = _enqueue_keyed.publication_id,
                                       event_type = _enqueue_keyed.event_type
            WHERE q.id = pending.id;
        END IF;
        RETURN pending.event_id;
    END IF;
    INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,
                               run_at, queued_at, key, key_owner, publication_id, event_type)
    VALUES (_enqueue_keyed.id, _enqueue_keyed.id, c.channel, c.action_type, _enqueue_keyed.payload,
            pgrelay._node_id(), c.node_restricted, pgrelay._run_at(_enqueue_keyed.run_at),
            pg_catalog.now(), _enqueue_keyed.key, session_user, _enqueue_keyed.publication_id,
            _enqueue_keyed.event_type);
    RETURN _enqueue_keyed.id;
END
$$;
COMMENT ON FUNCTION pgrelay._enqueue_keyed(text, text, timestamptz, text, text, bigint, bigint, text) IS
    'Internal: queues an event of a key, or keeps, replaces or debounces the one waiting';

-- pgrelay.notify()
CREATE OR REPLACE FUNCTION pgrelay.notify(channel text, payload text, run_at timestamptz DEFAULT NULL,
                                          key text DEFAULT NULL, key_mode text DEFAULT 'keep')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Queues one event in the caller's transaction: a rollback discards it, a commit guarantees it.
 * Returns the queue id, which is also the event id. With a key, at most one event of the channel
 * and key waits to start on this node: key_mode says whether a second call keeps the waiting one,
 * replaces its payload or also moves its run_at (debounce), and the id returned is that of the
 * event that now stands (_enqueue_keyed).
 *
 * Every producer runs this once per event, so its common case (no run_at) does in its own body
 * what _next_id() and _enqueue() do, with their statements copied (a change to one is a change to
 * both, and to notify_many's ids): each nested PL/pgSQL call, and each expression a statement's
 * plan holds, costs a share of a notify measured in percent (docs/design/benchmark-notes.md).
 * The id: one nextval of the clock and one test that sends the rare cases to
 * _id_clock_catch_up(); then the one INSERT, and _enqueue_refused() only when it queued nothing.
 * An event with a run_at goes through _enqueue(). The INSERT checks what the channel takes: an
 * active channel, the payload's size, and on an email channel (action type notify) a payload of
 * the form of a notification id (_notification_id_form: one regular expression, folded into the
 * plan).
 */
DECLARE
    v bigint := pg_catalog.nextval('pgrelay._id_clock');
BEGIN
    IF v < (pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint
            - 1767225600000) * 4096 - 1048576
       OR v >= 9007199254740992 THEN
        v := pgrelay._id_clock_catch_up(v);
    END IF;
    v := ((v >> 12) << 22) | (pgrelay._node_id()::bigint << 12) | (v & 4095);
    IF notify.key IS NOT NULL THEN
        RETURN pgrelay._enqueue_keyed(notify.channel, notify.payload, notify.run_at, notify.key, notify.key_mode, v);
    END IF;
    IF notify.run_at IS NOT NULL THEN
        RETURN pgrelay._enqueue(notify.channel, notify.payload, notify.run_at, v);
    END IF;
    INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,
                               run_at, queued_at)
    SELECT v, v, x.channel, x.action_type, notify.payload, pgrelay._node_id(),
           x.node_restricted, pgrelay._run_at(NULL), pg_catalog.now()
    FROM pgrelay.channels x
    WHERE x.channel = notify.channel AND x.active
      AND pg_catalog.octet_length(notify.payload) <= x.max_payload_bytes
      AND (x.action_type <> 'notify' OR notify.payload ~ pgrelay._notification_id_form());
    IF FOUND THEN
        RETURN v;
    END IF;
    RETURN pgrelay._enqueue_refused(notify.channel, notify.payload, NULL);
END
$$;
COMMENT ON FUNCTION pgrelay.notify(text, text, timestamptz, text, text) IS
    'Queues an event on an active channel in the caller''s transaction; with a key, at most one waits to start; returns its id';

-- pgrelay.notify_many()
CREATE OR REPLACE FUNCTION pgrelay.notify_many(channel text, payloads text[], run_at timestamptz DEFAULT NULL,
                                               keys text[] DEFAULT NULL, key_mode text DEFAULT 'keep')
RETURNS bigint[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Queues one event per payload in the caller's transaction, as many notify() calls would, and
 * returns their ids in the order of payloads. The channel and the arguments are checked once,
 * then one INSERT queues them all. With keys (one
 * per payload, NULL for an event without one), each keyed event is queued as notify(key => ...)
 * queues it, in order: two payloads of one key in one call are two calls.
 * Both arrays are read by position (unnest ... WITH ORDINALITY), never by subscript: an array may
 * start at any index ('[0:1]={a,b}'), and the position an error names counts from 1.
 */
DECLARE
    c pgrelay.channels;
    ids bigint[];
    last bigint;
    node integer;
    bad bigint;
    bad_bytes integer;
BEGIN
    IF notify_many.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF array_ndims(notify_many.payloads) > 1 THEN
        RAISE EXCEPTION 'payloads must be a one-dimensional array' USING ERRCODE = 'array_subscript_error';
    END IF;
    IF array_ndims(notify_many.keys) > 1 THEN
        RAISE EXCEPTION 'keys must be a one-dimensional array' USING ERRCODE = 'array_subscript_error';
    END IF;
    IF notify_many.payloads IS NULL OR array_position(notify_many.payloads, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'payloads must not be NULL nor hold a NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass an empty string for an event without a payload.';
    END IF;
    IF notify_many.keys IS NOT NULL AND cardinality(notify_many.keys) <> cardinality(notify_many.payloads) THEN
        RAISE EXCEPTION 'keys must have one element per payload (% keys, % payloads)',
                        cardinality(notify_many.keys), cardinality(notify_many.payloads)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF notify_many.run_at IS NOT NULL AND NOT isfinite(notify_many.run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', notify_many.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(notify_many.payloads) = 0 THEN
        RETURN '{}';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = notify_many.channel AND x.active;
    IF NOT FOUND THEN
        RETURN ARRAY[pgrelay._enqueue_refused(notify_many.channel, '', NULL)];
    END IF;
    IF c.action_type = 'notify' THEN
        SELECT min(p.o) INTO bad FROM unnest(notify_many.payloads) WITH ORDINALITY p(payload, o)
        WHERE pgrelay._notification_id(p.payload) IS NULL;
        IF bad IS NOT NULL THEN
            PERFORM pgrelay._email_payload_refused(c.channel, bad);
        END IF;
    END IF;
    SELECT p.o, octet_length(p.payload) INTO bad, bad_bytes FROM unnest(notify_many.payloads) WITH ORDINALITY p(payload, o)
    WHERE octet_length(p.payload) > c.max_payload_bytes
    ORDER BY p.o LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'payload % of % bytes is larger than the % bytes channel "%" accepts', bad,
                        bad_bytes, c.max_payload_bytes, c.channel
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'An admin can raise the limit: pgrelay.register(channel, max_payload_bytes => ...).';
    END IF;
    IF notify_many.keys IS NOT NULL THEN
        RETURN ARRAY(SELECT CASE WHEN p.key IS NULL
                                 THEN pgrelay._enqueue(c.channel, p.payload, notify_many.run_at, pgrelay._next_id())
                                 ELSE pgrelay._enqueue_keyed(c.channel, p.payload, notify_many.run_at, p.key,
                                                             notify_many.key_mode, pgrelay._next_id()) END
                     FROM unnest(notify_many.payloads, notify_many.keys) WITH ORDINALITY AS p(payload, key, o)
                     ORDER BY p.o);
    END IF;
    -- One id per row, drawn in the order of payloads (the CTE is evaluated once, row by row, and
    -- all of it before the INSERT): a value of the id clock as _next_id() draws it, made into an
    -- id below with _next_id's arithmetic. The wall clock is looked at (_id_clock_catch_up,
    -- _next_id's slow path) for the first row and every 1024th after it, not for each: a
    -- PL/pgSQL _next_id() call per row was a sixth of the call's time, and 1024 values are drawn
    -- in a fraction of a millisecond, so the ids keep to the wall clock as _next_id's do.
    node := pgrelay._node_id();
    WITH rows AS MATERIALIZED (
        SELECT p.payload, p.o,
               CASE WHEN p.o % 1024 = 1 THEN pgrelay._id_clock_catch_up(nextval('pgrelay._id_clock'))
                    ELSE nextval('pgrelay._id_clock') END AS v
        FROM unnest(notify_many.payloads) WITH ORDINALITY p(payload, o)
    ), made AS MATERIALIZED (
        SELECT r.payload, r.o, r.v, ((r.v >> 12) << 22) | (node::bigint << 12) | (r.v & 4095) AS id
        FROM rows r
    ), ins AS (
        INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,
                                   run_at, queued_at)
        SELECT r.id, r.id, c.channel, c.action_type, r.payload, node, c.node_restricted,
               pgrelay._run_at(notify_many.run_at), now()
        FROM made r
    )
    SELECT array_agg(r.id ORDER BY r.o), max(r.v) INTO ids, last FROM made r;
    -- the id space's end, which _id_clock_catch_up checks, for the rows it did not see
    IF last >= 9007199254740992 THEN
        RAISE EXCEPTION 'pg_relay id space exhausted' USING ERRCODE = 'numeric_value_out_of_range';
    END IF;
    RETURN ids;
END
$$;
COMMENT ON FUNCTION pgrelay.notify_many(text, text[], timestamptz, text[], text) IS
    'Queues one event per payload on an active channel in one statement; returns their ids in order';
