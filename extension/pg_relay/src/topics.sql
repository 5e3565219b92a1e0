/* extension/pg_relay/src/topics.sql: topics: one publication, one event on each channel subscribed */

-- pgrelay._check_event_types()
CREATE OR REPLACE FUNCTION pgrelay._check_event_types(event_types text[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (subscribe): the event types a subscription takes, checked, without duplicates and
 * sorted. NULL: every publication. Each entry is an event type (the form of a name: _check_name),
 * matched exactly, or a prefix of one followed by * ('order.*'; '*' alone takes every typed
 * publication).
 */
DECLARE
    bad text;
BEGIN
    IF event_types IS NULL THEN
        RETURN NULL;
    END IF;
    IF array_ndims(event_types) > 1 THEN
        RAISE EXCEPTION 'event_types must be a one-dimensional array' USING ERRCODE = 'array_subscript_error';
    END IF;
    IF cardinality(event_types) = 0 THEN
        RAISE EXCEPTION 'event_types must not be empty'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass NULL to take every publication of the topic.';
    END IF;
    IF array_position(event_types, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'event_types must not hold a NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT e INTO bad FROM unnest(event_types) WITH ORDINALITY u(e, o)
    WHERE e !~ '^([[:alnum:]_.:/-]{1,128}|[[:alnum:]_.:/-]{0,127}\*)$'
    ORDER BY o LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'invalid event type "%"', pgrelay._show(bad)
            USING ERRCODE = 'invalid_name',
                  DETAIL = 'An event type has 1 to 128 letters, digits or the characters _ . : / -, '
                           'and may end with * to take every event type it is a prefix of.';
    END IF;
    RETURN ARRAY(SELECT DISTINCT e FROM unnest(event_types) e ORDER BY e);
END
$$;
COMMENT ON FUNCTION pgrelay._check_event_types(text[]) IS
    'Internal: a subscription''s event types, checked, without duplicates and sorted';

-- pgrelay.create_topic()
CREATE OR REPLACE FUNCTION pgrelay.create_topic(topic text, description text DEFAULT NULL)
RETURNS pgrelay.topics
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Creates a topic, or changes the description of the one of that name (a NULL description keeps
 * the one it has). Returns its row. A topic has a name as a channel's (_check_name).
 */
DECLARE
    t pgrelay.topics;
BEGIN
    PERFORM pgrelay._check_name('topic', 'topic', create_topic.topic);
    INSERT INTO pgrelay.topics AS x (topic, description) VALUES (create_topic.topic, create_topic.description)
    ON CONFLICT ON CONSTRAINT topics_pkey DO UPDATE SET description = COALESCE(EXCLUDED.description, x.description)
    RETURNING * INTO t;
    RETURN t;
END
$$;
COMMENT ON FUNCTION pgrelay.create_topic(text, text) IS
    'Creates a topic producers publish() to (or changes its description); returns its row';

-- pgrelay.drop_topic()
CREATE OR REPLACE FUNCTION pgrelay.drop_topic(topic text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- Drops a topic and its subscriptions (not while a table is watched or a schedule publishes on
    -- it). The events its publications queued stay queued and run.
    IF drop_topic.topic IS NULL THEN
        RAISE EXCEPTION 'topic must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF EXISTS (SELECT 1 FROM pgrelay.watches w WHERE w.topic = drop_topic.topic
                                                 AND EXISTS (SELECT 1 FROM pg_class k WHERE k.oid = w.relid)) THEN
        RAISE EXCEPTION 'topic "%" is watched by table %', drop_topic.topic,
                        (SELECT string_agg(w.relid::text, ', ' ORDER BY w.relid::text) FROM pgrelay.watches w
                         WHERE w.topic = drop_topic.topic AND EXISTS (SELECT 1 FROM pg_class k WHERE k.oid = w.relid))
            USING ERRCODE = 'object_in_use',
                  HINT = 'Stop watching it first: SELECT pgrelay.unwatch_table(table, topic => topic).';
    END IF;
    DELETE FROM pgrelay.watches w WHERE w.topic = drop_topic.topic;  -- of tables that were dropped
    IF EXISTS (SELECT 1 FROM pgrelay.schedule_entries s WHERE s.topic = drop_topic.topic) THEN
        RAISE EXCEPTION 'topic "%" has schedule %', drop_topic.topic,
                        (SELECT string_agg(quote_literal(s.name), ', ' ORDER BY s.name)
                         FROM pgrelay.schedule_entries s WHERE s.topic = drop_topic.topic)
            USING ERRCODE = 'object_in_use',
                  HINT = 'Remove it first: SELECT pgrelay.unschedule(name).';
    END IF;
    DELETE FROM pgrelay.topics x WHERE x.topic = drop_topic.topic;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" does not exist', pgrelay._show(drop_topic.topic)
            USING ERRCODE = 'undefined_object';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay.drop_topic(text) IS
    'Drops a topic and its subscriptions (the events its publications queued stay queued)';

-- pgrelay.subscribe()
CREATE OR REPLACE FUNCTION pgrelay.subscribe(topic text, channel text, event_types text[] DEFAULT NULL)
RETURNS pgrelay.subscriptions
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Subscribes a channel to a topic, or changes the event types of its subscription: from the
 * caller's commit on, each publication on the topic that the event types take (NULL: all) is also
 * an event on the channel. Returns the subscription. An email channel (action type notify) is
 * refused: its payload is the id of one notification, which no publication shared by several
 * channels can be.
 */
DECLARE
    c pgrelay.channels;
    s pgrelay.subscriptions;
    types text[];
BEGIN
    IF subscribe.topic IS NULL THEN
        RAISE EXCEPTION 'topic must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF subscribe.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    types := pgrelay._check_event_types(subscribe.event_types);
    PERFORM 1 FROM pgrelay.topics x WHERE x.topic = subscribe.topic FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'topic "%" does not exist', pgrelay._show(subscribe.topic)
            USING ERRCODE = 'undefined_object',
                  HINT = 'Create it with pgrelay.create_topic().';
    END IF;
    SELECT * INTO c FROM pgrelay.channels x WHERE x.channel = subscribe.channel FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(subscribe.channel)
            USING ERRCODE = 'undefined_object',
                  HINT = 'Create it with pgrelay.register().';
    END IF;
    IF c.action_type = 'notify' THEN
        RAISE EXCEPTION 'channel "%" sends email and cannot subscribe to a topic', c.channel
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = 'An email event''s payload is the id of one pgrelay_notifier notification.',
                  HINT = 'Subscribe a sql or webhook channel, whose handler may queue email with pgrelay_notifier.send().';
    END IF;
    INSERT INTO pgrelay.subscriptions AS x (topic, channel, event_types)
    VALUES (subscribe.topic, c.channel, types)
    ON CONFLICT ON CONSTRAINT subscriptions_pkey DO UPDATE SET event_types = EXCLUDED.event_types
    RETURNING * INTO s;
    RETURN s;
END
$$;
COMMENT ON FUNCTION pgrelay.subscribe(text, text, text[]) IS
    'Subscribes a channel to a topic (or changes the event types it takes); returns the subscription';

-- pgrelay.unsubscribe()
CREATE OR REPLACE FUNCTION pgrelay.unsubscribe(topic text, channel text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- Ends a subscription: publications after the caller's commit queue nothing on the channel.
    -- The events earlier publications queued on it stay queued and run (pgrelay.cancel(channel)
    -- withdraws them).
    IF unsubscribe.topic IS NULL THEN
        RAISE EXCEPTION 'topic must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF unsubscribe.channel IS NULL THEN
        RAISE EXCEPTION 'channel must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM pgrelay.subscriptions x WHERE x.topic = unsubscribe.topic AND x.channel = unsubscribe.channel;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'channel "%" is not subscribed to topic "%"', pgrelay._show(unsubscribe.channel),
                        pgrelay._show(unsubscribe.topic)
            USING ERRCODE = 'undefined_object';
    END IF;
END
$$;
COMMENT ON FUNCTION pgrelay.unsubscribe(text, text) IS
    'Ends a channel''s subscription to a topic (the events already queued on it stay queued)';

-- pgrelay._publish_refused()
CREATE OR REPLACE FUNCTION pgrelay._publish_refused(topic text, channel text, payload text, run_at timestamptz)
RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
/*
 * Internal (publish, which pins search_path, when a subscriber channel does not take the event):
 * the error _enqueue_refused() gives notify() on that channel, with the topic named first, so that
 * a producer that names only the topic learns which subscriber refused. Never returns.
 */
DECLARE
    m text;
    st text;
    d text;
    h text;
BEGIN
    BEGIN
        PERFORM pgrelay._enqueue_refused(_publish_refused.channel, _publish_refused.payload, _publish_refused.run_at);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, st = RETURNED_SQLSTATE, d = PG_EXCEPTION_DETAIL,
                                h = PG_EXCEPTION_HINT;
    END;
    RAISE EXCEPTION 'publication on topic "%" refused: %', _publish_refused.topic, m
        USING ERRCODE = st,
              DETAIL = concat_ws(' ', NULLIF(d, ''),
                                 format('A publication queues an event on every channel subscribed to the topic, or on none; '
                                        'channel "%s" is subscribed.', _publish_refused.channel)),
              HINT = COALESCE(NULLIF(h, ''),
                              'An admin can end the subscription: pgrelay.unsubscribe(topic, channel).');
END
$$;
COMMENT ON FUNCTION pgrelay._publish_refused(text, text, text, timestamptz) IS
    'Internal: the error of a publication a subscriber channel does not take, naming the topic';

-- pgrelay._publish_keyed()
CREATE OR REPLACE FUNCTION pgrelay._publish_keyed(topic text, payload text, event_type text, run_at timestamptz,
                                                  key text, key_mode text, pub bigint,
                                                  OUT subscribers bigint, OUT queued bigint, OUT refused text)
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (publish with a key, which pins search_path and checked its arguments): the
 * publication pub as notify(key => key, key_mode => key_mode) on each channel whose subscription
 * takes the event type, in the order of the channels' names, each carrying pub and event_type.
 * All or nothing as publish(): the subscribers are read with whether each takes the event first,
 * and when one does not (refused: the first such channel), nothing is queued. A key belongs to
 * each channel (_enqueue_keyed): each subscriber keeps, replaces or debounces its own waiting
 * event of the key, and a key another role's event holds on one subscriber (without shared_keys)
 * fails the whole publication. queued counts the deliveries that now stand (new or kept).
 */
DECLARE
    chans text[];
    ch text;
BEGIN
    SELECT count(*), min(m.channel) FILTER (WHERE NOT m.takes), array_agg(m.channel ORDER BY m.channel)
    INTO subscribers, refused, chans
    FROM (SELECT x.channel,
                 pgrelay._channel_takes(x.active, x.max_payload_bytes, x.action_type, _publish_keyed.payload,
                                        _publish_keyed.run_at, false) AS takes
          FROM pgrelay.subscriptions s
          JOIN pgrelay.channels x ON x.channel = s.channel
          WHERE s.topic = _publish_keyed.topic
            AND (s.event_types IS NULL
                 OR EXISTS (SELECT 1 FROM unnest(s.event_types) e
                            WHERE e = _publish_keyed.event_type
                               OR (right(e, 1) = '*' AND starts_with(_publish_keyed.event_type, left(e, -1)))))) m;
    queued := 0;
    IF refused IS NOT NULL OR subscribers = 0 THEN
        RETURN;
    END IF;
    FOREACH ch IN ARRAY chans LOOP
        PERFORM pgrelay._enqueue_keyed(ch, _publish_keyed.payload, _publish_keyed.run_at, _publish_keyed.key,
                                       _publish_keyed.key_mode, pgrelay._next_id(), _publish_keyed.pub,
                                       _publish_keyed.event_type);
        queued := queued + 1;
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgrelay._publish_keyed(text, text, text, timestamptz, text, text, bigint) IS
    'Internal: a publication with a key, as notify(key => ...) on each subscribed channel (all or none)';

-- pgrelay.publish()
CREATE OR REPLACE FUNCTION pgrelay.publish(topic text, payload text, event_type text DEFAULT NULL,
                                           run_at timestamptz DEFAULT NULL, key text DEFAULT NULL,
                                           key_mode text DEFAULT 'keep')
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Publishes a payload on a topic in the caller's transaction: one event on each channel whose
 * subscription takes the event type, each exactly as notify(channel, payload, run_at) would queue
 * it (its own event id, the channel's action type, this node's ownership), and each carrying the
 * publication's id, which is returned (an id of _next_id(), like an event id), and its event type.
 * With a key, each of those events is queued as notify(channel, payload, run_at, key, key_mode)
 * would queue it (_publish_keyed): a key is per channel, so each subscriber keeps, replaces or
 * debounces its own waiting event of the key.
 *
 * All or nothing: one statement reads the matching subscriptions with whether each channel takes
 * the event (_channel_takes: the checks of notify) and queues the events only when every one of
 * them does. A publication no subscriber takes, or that one subscriber does not take (inactive,
 * payload too large), is refused with an error, as notify() on such a channel is: the producer
 * learns in its own transaction, and no subscriber silently misses an event. Subscriptions are
 * read as the statement's snapshot sees them.
 *
 * The event types are matched in the statement itself, not by a function: a SQL function with a
 * subquery is never inlined, and running one per subscription doubled the cost of a publication.
 * The deliveries' ids are made in the statement as notify_many() makes its ids: a value of the id
 * clock each, with _next_id()'s arithmetic, not a PL/pgSQL _next_id() call per subscriber (the
 * clock was just brought to the wall clock by the publication's own _next_id(); only the end of
 * the id space goes to _id_clock_catch_up, which refuses it).
 * Whether the topic exists is asked only when no subscription matched.
 */
DECLARE
    pub bigint;
    node integer;
    subscribers bigint;
    queued bigint;
    refused text;
BEGIN
    IF publish.topic IS NULL THEN
        RAISE EXCEPTION 'topic must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF publish.payload IS NULL THEN
        RAISE EXCEPTION 'payload must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass an empty string for an event without a payload.';
    END IF;
    IF publish.event_type IS NOT NULL AND publish.event_type !~ '^[[:alnum:]_.:/-]{1,128}$' THEN
        RAISE EXCEPTION 'invalid event type "%"', pgrelay._show(publish.event_type)
            USING ERRCODE = 'invalid_name',
                  DETAIL = 'An event type has 1 to 128 letters, digits or the characters _ . : / -';
    END IF;
    IF publish.run_at IS NOT NULL AND NOT isfinite(publish.run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', publish.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    pub := pgrelay._next_id();
    IF publish.key IS NOT NULL THEN
        PERFORM pgrelay._check_key(publish.key, publish.key_mode);
        SELECT k.subscribers, k.queued, k.refused INTO subscribers, queued, refused
        FROM pgrelay._publish_keyed(publish.topic, publish.payload, publish.event_type, publish.run_at,
                                    publish.key, publish.key_mode, pub) k;
    ELSE
        node := pgrelay._node_id();
        WITH m AS MATERIALIZED (
            SELECT x.channel, x.action_type, x.node_restricted,
                   pgrelay._channel_takes(x.active, x.max_payload_bytes, x.action_type, publish.payload,
                                          publish.run_at, false) AS takes
            FROM pgrelay.subscriptions s
            JOIN pgrelay.channels x ON x.channel = s.channel
            WHERE s.topic = publish.topic
              AND (s.event_types IS NULL
                   OR EXISTS (SELECT 1 FROM unnest(s.event_types) e
                              WHERE e = publish.event_type
                                 OR (right(e, 1) = '*' AND starts_with(publish.event_type, left(e, -1)))))
        ), ins AS (
            INSERT INTO pgrelay.queue (id, event_id, channel, action_type, payload, owner_node, node_restricted,
                                       run_at, queued_at, publication_id, event_type)
            SELECT n.id, n.id, n.channel, n.action_type, publish.payload, node, n.node_restricted,
                   pgrelay._run_at(publish.run_at), now(), pub, publish.event_type
            FROM (SELECT k.channel, k.action_type, k.node_restricted,
                         ((c.v >> 12) << 22) | (node::bigint << 12) | (c.v & 4095) AS id
                  FROM (SELECT m.channel, m.action_type, m.node_restricted, nextval('pgrelay._id_clock') AS v
                        FROM m
                        WHERE NOT EXISTS (SELECT 1 FROM m WHERE NOT m.takes)
                        ORDER BY m.channel) k,
                       LATERAL (SELECT CASE WHEN k.v >= 9007199254740992 THEN pgrelay._id_clock_catch_up(k.v)
                                            ELSE k.v END AS v) c) n
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM ins), (SELECT min(m.channel) FROM m WHERE NOT m.takes)
        INTO subscribers, queued, refused;
    END IF;
    IF refused IS NOT NULL THEN
        RETURN pgrelay._publish_refused(publish.topic, refused, publish.payload, publish.run_at);
    END IF;
    IF subscribers = 0 AND NOT EXISTS (SELECT 1 FROM pgrelay.topics x WHERE x.topic = publish.topic) THEN
        RAISE EXCEPTION 'topic "%" does not exist', pgrelay._show(publish.topic)
            USING ERRCODE = 'undefined_object',
                  HINT = 'An admin creates it with pgrelay.create_topic().';
    END IF;
    IF subscribers = 0 THEN
        RAISE EXCEPTION 'topic "%" has no subscriber%', publish.topic,
                        CASE WHEN publish.event_type IS NULL THEN ' for a publication without an event type'
                             ELSE format(' for event type "%s"', publish.event_type) END
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'A publication nobody subscribed to would deliver nothing.',
                  HINT = 'An admin subscribes channels with pgrelay.subscribe(topic, channel, event_types).';
    END IF;
    IF queued <> subscribers THEN  -- a guard only
        RAISE EXCEPTION 'the publication on topic "%" could not be queued', publish.topic
            USING ERRCODE = 'internal_error';
    END IF;
    RETURN pub;
END
$$;
COMMENT ON FUNCTION pgrelay.publish(text, text, text, timestamptz, text, text) IS
    'Queues one event on each channel subscribed to a topic (all or none) in the caller''s transaction; returns the publication id';

-- pgrelay.topic_subscribers
CREATE OR REPLACE VIEW pgrelay.topic_subscribers AS
-- Per subscription, the deliveries of publications on its channel (of any topic: an event records
-- its publication, not its topic): waiting, due, retrying, the age of the oldest due one; failed
-- for good (pgrelay.failed_events, whose log row names the publication); attempts that failed for
-- good in the last hour (the log rows of the last hour found through the primary key, as
-- channel_stats finds them). No payload: the monitor role reads it.
SELECT s.topic, s.channel, c.action_type, s.event_types, COALESCE(q.queued, 0) AS queued,
       COALESCE(q.due, 0) AS due, COALESCE(q.retrying, 0) AS retrying, q.oldest_due_age,
       COALESCE(f.failed, 0) AS failed, COALESCE(r.failed_1h, 0) AS failed_1h, c.active, c.paused
FROM pgrelay.subscriptions s
JOIN pgrelay.channels c ON c.channel = s.channel
LEFT JOIN (SELECT x.channel, count(*) AS queued, count(*) FILTER (WHERE x.run_at <= now()) AS due,
                  count(*) FILTER (WHERE x.attempt > 1) AS retrying,
                  now() - min(x.run_at) FILTER (WHERE x.run_at <= now()) AS oldest_due_age
           FROM pgrelay.queue x
           WHERE x.publication_id IS NOT NULL GROUP BY x.channel) q ON q.channel = s.channel
LEFT JOIN (SELECT x.channel, count(*) AS failed
           FROM pgrelay.failed_events x JOIN pgrelay.log l ON l.id = x.log_id
           WHERE l.publication_id IS NOT NULL GROUP BY x.channel) f ON f.channel = s.channel
LEFT JOIN (SELECT l.channel, count(*) AS failed_1h
           FROM pgrelay.log l
           WHERE l.id >= (GREATEST(floor(date_part('epoch', now() - interval '1 hour') * 1000)::bigint
                                   - 1767225600000, 0) << 22)
             AND l.finished_at > now() - interval '1 hour' AND l.outcome = 'failed'
             AND l.publication_id IS NOT NULL
           GROUP BY l.channel) r ON r.channel = s.channel;
COMMENT ON VIEW pgrelay.topic_subscribers IS
    'Each topic''s subscribed channels, the event types they take (NULL: all), and of the deliveries of publications '
    'on the channel (of any topic): waiting, due, retrying, the oldest due one''s age, failed for good, failed in the '
    'last hour; without payloads';

-- pgrelay.publish_many()
CREATE OR REPLACE FUNCTION pgrelay.publish_many(topic text, payloads text[], event_type text DEFAULT NULL,
                                                run_at timestamptz DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Publishes each payload on a topic, as many publish() calls would, in the caller's transaction,
 * and returns the publication ids in the order of payloads. All or nothing, as publish(): a
 * payload one subscriber refuses fails the call, whose error names the payload's position (read
 * by position, as notify_many() does: an array may start at any index) in its detail.
 */
DECLARE
    pos bigint;
    m text;
    st text;
    d text;
    h text;
    pubs bigint[] := '{}';
    p text;
BEGIN
    IF publish_many.topic IS NULL THEN
        RAISE EXCEPTION 'topic must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF array_ndims(publish_many.payloads) > 1 THEN
        RAISE EXCEPTION 'payloads must be a one-dimensional array' USING ERRCODE = 'array_subscript_error';
    END IF;
    IF publish_many.payloads IS NULL OR array_position(publish_many.payloads, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'payloads must not be NULL nor hold a NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Pass an empty string for an event without a payload.';
    END IF;
    -- publish() checks these too: here, so that their error names no payload
    IF publish_many.event_type IS NOT NULL AND publish_many.event_type !~ '^[[:alnum:]_.:/-]{1,128}$' THEN
        RAISE EXCEPTION 'invalid event type "%"', pgrelay._show(publish_many.event_type)
            USING ERRCODE = 'invalid_name',
                  DETAIL = 'An event type has 1 to 128 letters, digits or the characters _ . : / -';
    END IF;
    IF publish_many.run_at IS NOT NULL AND NOT isfinite(publish_many.run_at) THEN
        RAISE EXCEPTION 'run_at must be a finite time, not %', publish_many.run_at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(publish_many.payloads) = 0 THEN
        RETURN '{}';
    END IF;
    -- one block, one subtransaction for the call (not one per payload): pos keeps its value
    pos := 0;
    BEGIN
        FOREACH p IN ARRAY publish_many.payloads LOOP
            pos := pos + 1;
            pubs := pubs || pgrelay.publish(publish_many.topic, p, publish_many.event_type, publish_many.run_at);
        END LOOP;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, st = RETURNED_SQLSTATE, d = PG_EXCEPTION_DETAIL,
                                h = PG_EXCEPTION_HINT;
        d := concat_ws(' ', NULLIF(d, ''), format('Payload %s of %s (counted from 1); nothing of the call was queued.',
                                                  pos, cardinality(publish_many.payloads)));
        IF COALESCE(h, '') = '' THEN
            RAISE EXCEPTION '%', m USING ERRCODE = st, DETAIL = d;
        END IF;
        RAISE EXCEPTION '%', m USING ERRCODE = st, DETAIL = d, HINT = h;
    END;
    RETURN pubs;
END
$$;
COMMENT ON FUNCTION pgrelay.publish_many(text, text[], text, timestamptz) IS
    'Publishes each payload on a topic (all or none) in the caller''s transaction; returns the publication ids in order';

-- pgrelay.publication_status()
CREATE OR REPLACE FUNCTION pgrelay.publication_status(publication_id bigint)
RETURNS TABLE (event_id bigint, channel text, action_type text, state text, attempts integer, last_error text,
               last_attempt_at timestamptz, run_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * The deliveries of one publication (publish()): one row per event, by channel, with where it
 * stands. A delivery with a queue row is queued (its first attempt waits) or retrying (attempt > 1);
 * else its last log row says: done (ok, partial), failed, cancelled. attempts counts its log rows
 * that ran (all but a cancellation); last_error is the queue row's while it waits, else the last
 * attempt's. No payload: the monitor role calls it. Both tables are read through their partial
 * indexes on publication_id (queue_publication_idx, log_publication_idx): the cost is that of the
 * publication's rows, whatever the size of the queue and the log. An unknown id has no row.
 */
BEGIN
    IF publication_status.publication_id IS NULL THEN
        RAISE EXCEPTION 'publication_id must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    RETURN QUERY
    WITH q AS (
        SELECT DISTINCT ON (x.event_id) x.event_id, x.channel, x.action_type, x.attempt, x.run_at, x.last_error
        FROM pgrelay.queue x
        WHERE x.publication_id = publication_status.publication_id
        ORDER BY x.event_id, x.id DESC
    ), l AS (
        SELECT DISTINCT ON (y.event_id) y.event_id, y.channel, y.action_type, y.outcome, y.error, y.finished_at,
               count(*) FILTER (WHERE y.outcome <> 'cancelled') OVER (PARTITION BY y.event_id) AS ran
        FROM pgrelay.log y
        WHERE y.publication_id = publication_status.publication_id
        ORDER BY y.event_id, y.id DESC
    )
    SELECT COALESCE(q.event_id, l.event_id), COALESCE(q.channel, l.channel), COALESCE(q.action_type, l.action_type),
           CASE WHEN q.event_id IS NOT NULL AND q.attempt > 1 THEN 'retrying'
                WHEN q.event_id IS NOT NULL THEN 'queued'
                WHEN l.outcome IN ('ok', 'partial') THEN 'done'
                WHEN l.outcome IN ('failed', 'cancelled') THEN l.outcome
                -- it waits to run again, but for a later publication of its key (replace, debounce)
                ELSE 'superseded' END,
           COALESCE(l.ran, 0)::integer,
           CASE WHEN q.event_id IS NOT NULL THEN q.last_error ELSE l.error END,
           l.finished_at, q.run_at
    FROM q FULL JOIN l ON l.event_id = q.event_id
    ORDER BY 2, 1;
END
$$;
COMMENT ON FUNCTION pgrelay.publication_status(bigint) IS
    'The deliveries of one publication: per event, its channel, state (queued, retrying, done, failed, cancelled, superseded), '
    'attempts, last error, last attempt''s end and due time; without payloads';
