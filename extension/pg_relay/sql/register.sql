-- pgrelay.register() and pgrelay.unregister()
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
CREATE FUNCTION regress_handler(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION regress_int(n integer) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION regress_two(a text, b text) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE PROCEDURE regress_proc(a text) LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION regress_private(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
REVOKE EXECUTE ON FUNCTION regress_private(text) FROM PUBLIC;
CREATE SCHEMA "Regress Schema";
CREATE FUNCTION "Regress Schema"."Odd Name"(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;

SELECT pgrelay.request_reload() AS generation_before \gset

-- a new sql channel gets the defaults
SELECT channel, action_type, handler, active, concurrency_mode, node_restricted, max_attempts,
       timeout, backoff_base, backoff_max, description
FROM pgrelay.register('r_orders', 'sql', handler => 'regress_handler(text)');
-- registering asks the Processors to reload
SELECT reload_generation > :generation_before AS reload_requested FROM pgrelay.control;

-- re-registering changes only the arguments given
SELECT channel, action_type, handler, concurrency_mode, max_attempts, timeout, backoff_base, backoff_max
FROM pgrelay.register('r_orders', concurrency_mode => 'channel', max_attempts => 3,
                      timeout => '5 seconds', backoff_base => '1 second', backoff_max => '1 minute',
                      description => 'orders');
SELECT channel, concurrency_mode, max_attempts, description
FROM pgrelay.register('r_orders', timeout => '10 seconds');

-- the handler is stored schema-qualified and quoted
SELECT handler FROM pgrelay.register('r_odd', 'sql', handler => '"Regress Schema"."Odd Name"(text)');

-- a notify channel has no handler
SELECT channel, action_type, handler FROM pgrelay.register('r_mail', 'notify', max_attempts => 10);

-- invalid channel names (error)
SELECT pgrelay.register(NULL, 'sql', handler => 'regress_handler(text)');
SELECT pgrelay.register('', 'sql', handler => 'regress_handler(text)');
SELECT pgrelay.register('has space', 'sql', handler => 'regress_handler(text)');
SELECT pgrelay.register(repeat('x', 129), 'sql', handler => 'regress_handler(text)');
-- the message shows line breaks and invisible characters as ?, on one line (error)
SELECT pgrelay.register(E'line\nbreak\u202eexe', 'sql', handler => 'regress_handler(text)');
-- a new channel needs an action type (error)
SELECT pgrelay.register('r_new');
-- unknown action type (error)
SELECT pgrelay.register('r_new', 'carrier_pigeon');
-- a sql channel without a handler (error)
SELECT pgrelay.register('r_new', 'sql');
-- handler of the wrong signature (error)
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_int(integer)');
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_two(text,text)');
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_proc(text)');
-- a handler that does not exist (error)
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_missing(text)');
-- a handler without its argument types, or not a signature at all: how to write it (error)
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_handler');
SELECT pgrelay.register('r_new', 'sql', handler => 'public.regress_handler(text');
SELECT pgrelay.register('r_new', 'sql', handler => 'two words(text)');
SELECT pgrelay.register('r_new', 'sql', handler => '');
-- '-' is no function at all (error)
SELECT pgrelay.register('r_new', 'sql', handler => '-');
-- the handler is looked up on the caller's search_path, as a cast in its statement would
CREATE SCHEMA regress_path;
CREATE FUNCTION regress_path.regress_on_path(payload text) RETURNS void SECURITY DEFINER SET search_path = public
LANGUAGE sql AS $$ SELECT $$;
SET search_path = regress_path, public;
SELECT handler FROM pgrelay.register('r_path', 'sql', handler => 'regress_on_path(text)');
RESET search_path;
SELECT pgrelay.unregister('r_path');
DROP SCHEMA regress_path CASCADE;
-- a system function as handler (error)
SELECT pgrelay.register('r_new', 'sql', handler => 'pg_catalog.upper(text)');
-- a handler the Processor's role cannot execute (error)
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_private(text)');
-- a handler on a notify channel (error)
SELECT pgrelay.register('r_new', 'notify', handler => 'regress_handler(text)');
-- bad concurrency_mode (error)
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_handler(text)', concurrency_mode => 'serial');
-- attempts out of range (error)
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_handler(text)', max_attempts => 0);
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_handler(text)', max_attempts => 1001);
-- timeouts not positive or too long (error)
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_handler(text)', timeout => '0');
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_handler(text)', timeout => '-1 second');
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_handler(text)', timeout => '25 hours');
-- backoff not positive, or max below base (error)
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_handler(text)', backoff_base => '0');
SELECT pgrelay.register('r_new', 'sql', handler => 'regress_handler(text)',
                        backoff_base => '1 minute', backoff_max => '10 seconds');
-- none of the failed calls created the channel
SELECT count(*) FROM pgrelay.channels WHERE channel = 'r_new';

-- the action type cannot change while events are queued (error), and can once they are gone
SELECT pgrelay.notify('r_mail', '1') > 0 AS queued;
SELECT pgrelay.register('r_mail', 'sql', handler => 'regress_handler(text)');
DELETE FROM pgrelay.queue WHERE channel = 'r_mail';
SELECT action_type, handler FROM pgrelay.register('r_mail', 'sql', handler => 'regress_handler(text)');
-- and back: turning it into a notify channel drops the handler
SELECT action_type, handler FROM pgrelay.register('r_mail', 'notify');

-- The steps of register(), alone: a new channel's defaults (_channel_new), and the checks of its
-- action type (_check_action_type: unknown type, a change with events queued, a webhook channel
-- without its endpoint; errors)
SELECT channel, action_type, handler, active, concurrency_mode, node_restricted, max_attempts, timeout,
       backoff_base, backoff_max, max_payload_bytes, retry_policy, paused, batch, description,
       registered_by = session_user AS by_me, registered_at = now() AS now
FROM pgrelay._channel_new('r_new');
SELECT pgrelay._check_action_type(NULL, c) FROM pgrelay.channels c WHERE c.channel = 'r_mail';
SELECT pgrelay._check_action_type(NULL, jsonb_populate_record(c, '{"action_type": "carrier_pigeon"}'))
FROM pgrelay.channels c WHERE c.channel = 'r_mail';
SELECT pgrelay._check_action_type(NULL, jsonb_populate_record(c, '{"action_type": "webhook"}'))
FROM pgrelay.channels c WHERE c.channel = 'r_mail';
SELECT pgrelay.notify('r_mail', '7') > 0 AS queued;
SELECT pgrelay._check_action_type(c, jsonb_populate_record(c, '{"action_type": "sql"}'))
FROM pgrelay.channels c WHERE c.channel = 'r_mail';
DELETE FROM pgrelay.queue WHERE channel = 'r_mail';
-- unregister: unknown channel (error), channel with queued events (error), then success
SELECT pgrelay.unregister('no_such_channel');
SELECT pgrelay.notify('r_odd', '1') > 0 AS queued;
SELECT pgrelay.unregister('r_odd');
DELETE FROM pgrelay.queue WHERE channel = 'r_odd';
SELECT pgrelay.unregister('r_odd');
SELECT count(*) FROM pgrelay.channels WHERE channel = 'r_odd';

DROP FUNCTION "Regress Schema"."Odd Name"(text);
DROP SCHEMA "Regress Schema";
