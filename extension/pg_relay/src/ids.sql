/* extension/pg_relay/src/ids.sql: node identity and the ids of queue, log and notification rows */

-- pgrelay._invalid_node_id()
CREATE OR REPLACE FUNCTION pgrelay._invalid_node_id(v text) RETURNS integer
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- a node id is printable ASCII: anything else is shown as ? (pgrelay._show() is for text a
    -- caller gave; this is a setting)
    RAISE EXCEPTION 'invalid pg_relay.node_id "%"', pg_catalog.regexp_replace(pg_catalog.left(v, 100), '[^\x20-\x7e]', '?', 'g')
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = 'The node id must be an integer between 0 and 1023.';
END
$$;
COMMENT ON FUNCTION pgrelay._invalid_node_id(text) IS
    'Internal: the error of a pg_relay.node_id that is not an integer between 0 and 1023';

-- pgrelay._node_id_of()
CREATE OR REPLACE FUNCTION pgrelay._node_id_of(v text) RETURNS integer
LANGUAGE plpgsql STABLE AS $$
/*
 * Internal (_node_id() calls it when pg_relay.node_id is set, from statements of functions that
 * pin search_path; operators are schema-qualified all the same): the node id the setting v
 * names, or the error of a setting that is not an integer between 0 and 1023.
 */
BEGIN
    IF pg_catalog.btrim(v) OPERATOR(pg_catalog.=) '' THEN
        RETURN 0;
    END IF;
    -- nested, not AND: the cast must never see text the pattern refused
    IF v OPERATOR(pg_catalog.~) '^\s*[0-9]{1,4}\s*$' THEN
        IF CAST(v AS pg_catalog.int4) OPERATOR(pg_catalog.<=) 1023 THEN
            RETURN CAST(v AS pg_catalog.int4);
        END IF;
    END IF;
    RETURN pgrelay._invalid_node_id(v);
END
$$;
COMMENT ON FUNCTION pgrelay._node_id_of(text) IS
    'Internal: the node id a pg_relay.node_id setting names, or its error';

-- pgrelay._node_id()
CREATE OR REPLACE FUNCTION pgrelay._node_id() RETURNS integer
LANGUAGE sql STABLE AS $$
    -- Internal: this node's id, as _this_node() says it, for the extension's own statements. A
    -- plain SQL expression (no SET clause, no FROM) that the planner inlines into the calling
    -- statement: ids, queue rows and log rows ask for it on every insert, and a call of a
    -- function with a SET clause costs a few microseconds (docs/design/benchmark-notes.md).
    -- The expression is kept small, because every execution of a statement compiles the
    -- expressions in its plan: an unset setting (single mode) is 0 at once, and only a set one
    -- is parsed and checked, by _node_id_of(). Operators are schema-qualified: an inlined body
    -- is read with the caller's search_path.
    SELECT CASE WHEN COALESCE(pg_catalog.current_setting('pg_relay.node_id', true), '') OPERATOR(pg_catalog.=) ''
                THEN 0
                ELSE pgrelay._node_id_of(pg_catalog.current_setting('pg_relay.node_id', true))
           END
$$;
COMMENT ON FUNCTION pgrelay._node_id() IS
    'Internal: this node''s id (pg_relay.node_id, 0 when unset), inlined into the extension''s statements';

-- pgrelay._this_node()
CREATE OR REPLACE FUNCTION pgrelay._this_node() RETURNS integer
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- What _node_id() says, for the processor, admin and monitor roles: SECURITY DEFINER so that
    -- it may call the internal _node_id_of(), which no role may execute. It reads the caller's
    -- setting and returns a number or the error of a bad setting, nothing else.
    RETURN pgrelay._node_id_of(COALESCE(pg_catalog.current_setting('pg_relay.node_id', true), ''));
END
$$;
COMMENT ON FUNCTION pgrelay._this_node() IS
    'This node''s id: the pg_relay.node_id setting (0 to 1023), 0 when unset';

-- pgrelay._id_clock_catch_up()
CREATE OR REPLACE FUNCTION pgrelay._id_clock_catch_up(v bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Internal (_next_id's slow path; notify_many(), and the statements that write the log rows of a
 * batch or of a cancel, call it for every 1024th of their ids, whatever their value): v, a value drawn from pgrelay._id_clock. When it is more than 256 ms behind the
 * wall clock, moves the clock forward to the wall clock and returns the value to use instead;
 * otherwise returns v. Either way, an error past the id space.
 *
 * Moving the clock forward must not race with another session doing the same, so this takes a
 * session-level advisory lock for a few microseconds (released on every error path) and looks
 * again under it, with the same margin of 2^20 values: another session may have moved the clock
 * to a wall clock it read a moment before ours, and others keep drawing from it meanwhile without
 * the lock, so a fresh value just below our wall clock must be kept, not set back over values
 * already drawn. The value it sets is handed to this caller only (nextval continues after it),
 * and any value other sessions drew meanwhile is below it: the clock cannot advance by a million
 * values in the microseconds between two statements.
 */
DECLARE
    wall bigint := (pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint
                    - 1767225600000) * 4096;
BEGIN
    IF v < wall - 1048576 THEN
        PERFORM pg_catalog.pg_advisory_lock(1885827584, 0);
        BEGIN
            v := pg_catalog.nextval('pgrelay._id_clock');
            IF v < wall - 1048576 THEN
                PERFORM pg_catalog.setval('pgrelay._id_clock', wall);
                v := wall;
            END IF;
            PERFORM pg_catalog.pg_advisory_unlock(1885827584, 0);
        EXCEPTION WHEN OTHERS OR query_canceled THEN
            PERFORM pg_catalog.pg_advisory_unlock(1885827584, 0);
            RAISE;
        END;
    END IF;
    IF (v >> 12) >= (1::bigint << 41) THEN
        RAISE EXCEPTION 'pg_relay id space exhausted' USING ERRCODE = 'numeric_value_out_of_range';
    END IF;
    RETURN v;
END
$$;
COMMENT ON FUNCTION pgrelay._id_clock_catch_up(bigint) IS
    'Internal: moves pgrelay._id_clock forward to the wall clock (the slow path of _next_id)';

-- pgrelay._next_id()
CREATE OR REPLACE FUNCTION pgrelay._next_id() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
/*
 * Returns 41 bits of milliseconds since 2026-01-01 UTC | 10 bits node id | 12 bits sequence.
 *
 * The millisecond and sequence fields come together from one logical clock: the sequence
 * pgrelay._id_clock, counting ms * 4096 + n. Every id is one nextval() of it, so ids are unique
 * and increasing without any lock: this is the path nearly every call takes, so producers in
 * many sessions never wait for one another.
 *
 * The clock only counts the ids drawn, so it falls behind the wall clock (which moves 4096 units
 * a millisecond). When it is more than 2^20 units (256 ms) behind, the caller moves it forward
 * to the wall clock with setval (_id_clock_catch_up). Ids therefore read the wall clock to within
 * 256 ms. When more than 4096 ids are drawn in one millisecond the clock runs ahead of the wall
 * clock for a moment instead of repeating.
 *
 * A retry row and the log row of a single event take one, notify() runs these same two
 * statements in its own body, and notify_many(), a batch's log rows (_complete_events) and a
 * cancel's (_cancel_rows) draw the clock's values in their statement (every 1024th through
 * _id_clock_catch_up) and make them into ids with the same arithmetic, so the common path is
 * kept to two: the nextval, and one test that sends both rare cases (behind the wall clock, or
 * past the 41 bits of milliseconds, 2^53 units) to the slow path. Each statement is compiled once
 * per transaction, so fewer and smaller statements are measurably cheaper
 * (docs/design/benchmark-notes.md).
 */
DECLARE
    v bigint := pg_catalog.nextval('pgrelay._id_clock');
BEGIN
    IF v < (pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint
            - 1767225600000) * 4096 - 1048576
       OR v >= 9007199254740992 THEN
        v := pgrelay._id_clock_catch_up(v);
    END IF;
    RETURN ((v >> 12) << 22) | (pgrelay._node_id()::bigint << 12) | (v & 4095);
END
$$;
COMMENT ON FUNCTION pgrelay._next_id() IS
    'Next unique id: 41-bit ms since 2026-01-01 | 10-bit node id | 12-bit sequence';

-- pgrelay.decode_id()
CREATE OR REPLACE FUNCTION pgrelay.decode_id(id bigint, OUT created_at timestamptz, OUT node_id integer, OUT seq integer)
LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.to_timestamp(((id >> 22) + 1767225600000) / 1000.0),
           ((id >> 12) & 1023)::integer,
           (id & 4095)::integer
$$;
COMMENT ON FUNCTION pgrelay.decode_id(bigint) IS
    'Splits an id made by _next_id() into its time, node id and sequence';

-- pgrelay._id_floor()
CREATE OR REPLACE FUNCTION pgrelay._id_floor(ts timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT GREATEST(pg_catalog.floor(pg_catalog.date_part('epoch', ts) * 1000)::bigint - 1767225600000, 0) << 22
$$;
COMMENT ON FUNCTION pgrelay._id_floor(timestamptz) IS
    'The smallest id _next_id() can make at time ts (for range scans on id)';
