/* extension/pg_relay/upgrade/1.1--1.2.sql: schema changes from 1.1 to 1.2 (the code follows from src/) */

-- Channels: two new settings, and bounds on every duration so that each makes a valid timer and
-- timestamp. Values outside the new bounds are brought inside them first.
UPDATE pgrelay.channels
SET timeout = GREATEST(timeout, interval '1 millisecond'),
    backoff_base = LEAST(GREATEST(backoff_base, interval '1 millisecond'), interval '1 day'),
    backoff_max = LEAST(GREATEST(backoff_max, LEAST(GREATEST(backoff_base, interval '1 millisecond'), interval '1 day')),
                        interval '30 days');
ALTER TABLE pgrelay.channels
    DROP CONSTRAINT channels_timeout_check,
    DROP CONSTRAINT channels_backoff_base_check,
    DROP CONSTRAINT channels_check,
    ADD CONSTRAINT channels_timeout_check CHECK (timeout >= '1 millisecond' AND timeout <= '24 hours'),
    ADD CONSTRAINT channels_backoff_base_check CHECK (backoff_base >= '1 millisecond' AND backoff_base <= '1 day'),
    ADD CONSTRAINT channels_check CHECK (backoff_max >= backoff_base AND backoff_max <= '30 days'),
    ADD COLUMN max_payload_bytes integer NOT NULL DEFAULT 1048576
               CHECK (max_payload_bytes BETWEEN 1 AND 104857600),
    ADD COLUMN retry_policy text NOT NULL DEFAULT 'all' CHECK (retry_policy IN ('all', 'strict')),
    ADD COLUMN paused boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN pgrelay.channels.paused IS
    'pause(channel): no event of the channel is dispatched, while notify() keeps queueing them';
COMMENT ON COLUMN pgrelay.channels.max_payload_bytes IS
    'Largest payload notify() accepts on this channel, in bytes';
COMMENT ON COLUMN pgrelay.channels.retry_policy IS
    'all: every handler error is retried until max_attempts (SQLSTATE PGSTP stops at once); '
    'strict: only errors that can pass by themselves are retried';

-- Channels that existed before keep the retry behaviour they had (strict); new ones retry every
-- error. Handlers must now be SECURITY DEFINER: say which are not, before their events fail.
UPDATE pgrelay.channels SET retry_policy = 'strict';
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c.channel, c.handler FROM pgrelay.channels c
             WHERE c.handler IS NOT NULL
               AND NOT COALESCE((SELECT p.prosecdef FROM pg_catalog.pg_proc p
                                 WHERE p.oid = pg_catalog.to_regprocedure(c.handler)), true) LOOP
        RAISE WARNING 'pg_relay 1.2: the handler % of channel "%" is not SECURITY DEFINER; its events fail until it is',
                      r.handler, r.channel
            USING HINT = pg_catalog.format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = ...', r.handler);
    END LOOP;
    IF FOUND THEN
        RAISE NOTICE 'pg_relay 1.2: channels keep retry_policy strict; pgrelay.register(channel, retry_policy => ''all'') retries every error';
    END IF;
END
$$;

-- The log: one row per attempt, enforced by the index that finds it.
DROP INDEX pgrelay.log_event_idx;
CREATE UNIQUE INDEX log_event_idx ON pgrelay.log (event_id, queue_id);

-- Functions whose arguments or result changed (created again by the code below).
DROP FUNCTION pgrelay.register(text, text, regprocedure, text, boolean, integer, interval, interval, interval,
                               boolean, text);
DROP FUNCTION pgrelay._classify_error(text);
DROP FUNCTION pgrelay.process_one(bigint);
DROP FUNCTION pgrelay._complete(bigint, text, text, text, timestamptz);
DROP FUNCTION pgrelay.pause();
DROP FUNCTION pgrelay.resume();
