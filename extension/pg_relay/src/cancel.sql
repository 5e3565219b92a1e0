/* extension/pg_relay/src/cancel.sql: withdrawing events that have not run: cancel */

-- pgrelay._cancel_node()
CREATE OR REPLACE FUNCTION pgrelay._cancel_node(owner_node integer, node_restricted boolean) RETURNS integer
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    -- Internal (cancel): NULL when an event of this owner may be cancelled on this node, else the
    -- node that runs it (-1: the leader, unknown here). Only the node that runs an event may
    -- withdraw it: its row lock is what keeps a cancel and a run apart, and that lock does not
    -- replicate. The mode is the one this node's Processor last announced (pgrelay.heartbeats);
    -- without a heartbeat the node runs alone (single), and runs every event it holds.
    SELECT CASE
        WHEN h.mode IS NULL OR h.mode = 'single' THEN NULL
        WHEN owner_node = pgrelay._node_id() AND (h.mode = 'multi-node' OR node_restricted) THEN NULL
        WHEN h.mode = 'multi-node' OR node_restricted THEN owner_node
        WHEN h.leader THEN NULL
        ELSE COALESCE((SELECT l.node_id FROM pgrelay.heartbeats l WHERE l.leader ORDER BY l.beat_at DESC LIMIT 1), -1)
    END
    FROM (SELECT NULL::integer) one
    LEFT JOIN pgrelay.heartbeats h ON h.node_id = pgrelay._node_id()
$$;
COMMENT ON FUNCTION pgrelay._cancel_node(integer, boolean) IS
    'Internal: NULL if this node may cancel an event of this owner, else the node that runs it (-1: the leader)';

-- pgrelay._cancel_rows()
CREATE OR REPLACE FUNCTION pgrelay._cancel_rows(ids bigint[]) RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
/*
 * Internal (cancel): deletes queue rows the caller has locked and writes the cancelled log row of
 * each (attempt: the attempt that will not run; _finish_rows). Returns how many.
 */
DECLARE
    qs pgrelay.queue[];
    ls pgrelay.log[];
    node integer := pgrelay._node_id();
    last bigint;     -- the highest value of the id clock drawn
BEGIN
    -- The log ids drawn in the statement, as _complete_events() draws a batch's: one value of the
    -- id clock per row, the wall clock looked at for the first and every 1024th.
    WITH d AS (
        DELETE FROM pgrelay.queue x WHERE x.id = ANY (ids) RETURNING x AS q
    ), n AS MATERIALIZED (
        SELECT d.q, row_number() OVER () AS o FROM d
    ), v AS MATERIALIZED (
        SELECT n.q, CASE WHEN n.o % 1024 = 1 THEN pgrelay._id_clock_catch_up(nextval('pgrelay._id_clock'))
                         ELSE nextval('pgrelay._id_clock') END AS v
        FROM n
    )
    SELECT array_agg(v.q),
           array_agg(pgrelay._log_row(v.q, ((v.v >> 12) << 22) | (node::bigint << 12) | (v.v & 4095), 'cancelled',
                                      format('cancelled by %s', session_user), NULL, NULL, clock_timestamp(),
                                      clock_timestamp(), NULL)),
           max(v.v)
    INTO qs, ls, last
    FROM v;
    -- the id space's end, which _id_clock_catch_up checks, for the rows it did not see
    IF last >= 9007199254740992 THEN
        RAISE EXCEPTION 'pg_relay id space exhausted' USING ERRCODE = 'numeric_value_out_of_range';
    END IF;
    PERFORM pgrelay._finish_rows(qs, ls, true, false);
    RETURN COALESCE(cardinality(qs), 0);
END
$$;
COMMENT ON FUNCTION pgrelay._cancel_rows(bigint[]) IS
    'Internal: removes locked queue rows with a cancelled log row each';

-- pgrelay.cancel()
CREATE OR REPLACE FUNCTION pgrelay.cancel(event_id bigint) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * Withdraws an event that has not run: queued, scheduled for later or waiting to retry. It leaves
 * the queue with a log row of outcome cancelled, in the caller's transaction. Returns
 *   cancelled  it will not run
 *   running    an attempt is running now: nothing is cancelled, the attempt finishes as it
 *              will (if it then waits to retry, cancel it again)
 *   finished   it ran already (done, failed or cancelled): see pgrelay.log
 * An id that was never an event is an error. An event is never both run and cancelled: the
 * running attempt holds the row's lock, and this call skips a locked row rather than wait.
 * Email events (channels of action type notify) are cancelled through their notification,
 * with pgrelay_notifier.cancel(), which keeps the notification's status true; the error's hint
 * names the call, with the payload as a number only when it is one (a producer wrote it: it
 * never reaches the hint as text). An email event whose payload is no notification id has no
 * notification to keep true and sends nothing: it is cancelled here like any other.
 */
DECLARE
    q pgrelay.queue;
    n integer;
    nid bigint;
BEGIN
    IF cancel.event_id IS NULL THEN
        RAISE EXCEPTION 'event_id must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'pgrelay.cancel(channel, key => ..., queued_before => ...) cancels the events of a channel.';
    END IF;
    SELECT * INTO q FROM pgrelay.queue x WHERE x.event_id = cancel.event_id
    ORDER BY x.id LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM pgrelay.queue x WHERE x.event_id = cancel.event_id) THEN
            RETURN 'running';
        ELSIF EXISTS (SELECT 1 FROM pgrelay.log l WHERE l.event_id = cancel.event_id)
              OR EXISTS (SELECT 1 FROM pgrelay.failed_events f WHERE f.event_id = cancel.event_id) THEN
            RETURN 'finished';
        END IF;
        RAISE EXCEPTION 'event % does not exist', cancel.event_id
            USING ERRCODE = 'no_data_found',
                  HINT = 'notify() returns the event id; pgrelay.queue lists the events that wait.';
    END IF;
    nid := pgrelay._notification_id(q.payload);
    IF q.action_type = 'notify' AND nid IS NOT NULL THEN
        RAISE EXCEPTION 'event % sends an email; cancel its notification instead', q.event_id
            USING ERRCODE = 'wrong_object_type',
                  HINT = format('SELECT pgrelay_notifier.cancel(%s);', nid);
    END IF;
    n := pgrelay._cancel_node(q.owner_node, q.node_restricted);
    IF n IS NOT NULL THEN
        RAISE EXCEPTION 'event % is run by %; cancel it there', q.event_id,
                        CASE WHEN n = -1 THEN 'the leader' ELSE format('node %s', n) END
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Only the node that runs an event can withdraw it before it starts (docs/ha.md).';
    END IF;
    PERFORM pgrelay._cancel_rows(ARRAY[q.id]);
    RETURN 'cancelled';
END
$$;
COMMENT ON FUNCTION pgrelay.cancel(bigint) IS
    'Withdraws an event that has not run (cancelled log row); returns cancelled, running or finished';

-- pgrelay.cancel() by filter
CREATE OR REPLACE FUNCTION pgrelay.cancel(channel text, key text DEFAULT NULL, queued_after timestamptz DEFAULT NULL,
                                          queued_before timestamptz DEFAULT NULL, all_channels boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
/*
 * cancel() for every event of a channel (or of every channel: all_channels => true) that waits on
 * this node and matches the filter: its key, and when it was first queued (queued_after <=
 * queued_at < queued_before). Events running now are left to finish, events this node does not
 * run are left to the node that runs them (_cancel_node), and email events to
 * pgrelay_notifier.cancel(); a channel of email events is an error. Returns how many were
 * cancelled.
 */
DECLARE
    ch pgrelay.channels;
BEGIN
    IF all_channels IS NULL THEN
        RAISE EXCEPTION 'all_channels must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    ELSIF all_channels AND channel IS NOT NULL THEN
        RAISE EXCEPTION 'cancel(): give a channel or all_channels => true, not both'
            USING ERRCODE = 'invalid_parameter_value';
    ELSIF NOT all_channels THEN
        IF channel IS NULL THEN
            RAISE EXCEPTION 'cancel(): channel must not be NULL'
                USING ERRCODE = 'null_value_not_allowed',
                      HINT = 'cancel(<event id>) cancels one event; cancel(NULL, all_channels => true) every channel''s.';
        END IF;
        SELECT * INTO ch FROM pgrelay.channels c WHERE c.channel = cancel.channel;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'channel "%" does not exist', pgrelay._show(channel)
                USING ERRCODE = 'undefined_object',
                      HINT = CASE WHEN channel ~ '^\s*[0-9]+\s*$'
                                  THEN format('To cancel the event %s, pass its id as a number: cancel(%s).',
                                              btrim(channel), btrim(channel))
                                  ELSE 'pgrelay.channels lists the channels.' END;
        ELSIF ch.action_type = 'notify' THEN
            RAISE EXCEPTION 'channel "%" sends emails; cancel its notifications with pgrelay_notifier.cancel()', channel
                USING ERRCODE = 'wrong_object_type';
        END IF;
    END IF;
    IF queued_after IS NOT NULL AND queued_before IS NOT NULL AND queued_after >= queued_before THEN
        RAISE EXCEPTION 'queued_after (%) must be before queued_before (%)', queued_after, queued_before
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN pgrelay._cancel_rows(ARRAY(
        SELECT x.id FROM pgrelay.queue x
        WHERE (all_channels OR x.channel = cancel.channel)
          AND x.action_type <> 'notify'
          AND (cancel.key IS NULL OR x.key = cancel.key)
          AND (queued_after IS NULL OR x.queued_at >= queued_after)
          AND (queued_before IS NULL OR x.queued_at < queued_before)
          AND pgrelay._cancel_node(x.owner_node, x.node_restricted) IS NULL
        FOR UPDATE OF x SKIP LOCKED));
END
$$;
COMMENT ON FUNCTION pgrelay.cancel(text, text, timestamptz, timestamptz, boolean) IS
    'Withdraws the waiting events of a channel (or all) that match a key and a time range; returns how many';
