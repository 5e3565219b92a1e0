-- create_channel(), alter_channel(), drop_channel(): notify channels registered with pg_relay
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SELECT name FROM pgrelay_notifier.create_profile('c_main', host => 'smtp.example.com', from_address => 'app@example.com');
SELECT name FROM pgrelay_notifier.create_profile('c_other', host => 'smtp2.example.com', from_address => 'app@example.com');
CREATE FUNCTION regress_sink(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
GRANT EXECUTE ON FUNCTION regress_sink(text) TO pgrelay_processor;

-- a channel with pg_relay's defaults: action type notify, never node_restricted
SELECT channel, profile, created_by = session_user AS by_me FROM pgrelay_notifier.create_channel('c_welcome', 'c_main');
SELECT channel, action_type, handler, active, concurrency_mode, node_restricted, max_attempts, timeout,
       backoff_base, backoff_max, description
FROM pgrelay.channels WHERE channel = 'c_welcome';
-- every register() parameter by name; a profile serves many channels
SELECT channel, profile
FROM pgrelay_notifier.create_channel(channel => 'c_alerts', profile => 'c_main', concurrency_mode => 'channel',
                                     max_attempts => 8, timeout => '2 minutes', backoff_base => '30 seconds',
                                     backoff_max => '6 hours', active => false, description => 'ops alerts',
                                     node_restricted => false);
SELECT channel, action_type, active, concurrency_mode, node_restricted, max_attempts, timeout,
       backoff_base, backoff_max, description
FROM pgrelay.channels WHERE channel = 'c_alerts';
-- options: further named arguments of register(), passed on unchanged (values quoted, never spliced)
SELECT channel FROM pgrelay_notifier.create_channel('c_opts', 'c_main',
       options => '{"max_attempts": 3, "backoff_base": "1 minute", "description": "it''s quoted; DROP TABLE x", "active": true, "node_restricted": false}');
SELECT max_attempts, backoff_base, description, active, node_restricted FROM pgrelay.channels WHERE channel = 'c_opts';
-- intervals survive any intervalstyle of the caller
SET intervalstyle = iso_8601;
SELECT channel FROM pgrelay_notifier.create_channel('c_iso', 'c_other', timeout => '90 seconds',
                                                    options => '{"backoff_max": "2 hours"}');
SET intervalstyle = postgres;
SELECT timeout, backoff_max FROM pgrelay.channels WHERE channel = 'c_iso';
SELECT channel, profile FROM pgrelay_notifier.channels ORDER BY channel;

-- node_restricted => true is refused, as argument or option (error)
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', node_restricted => true);
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', options => '{"node_restricted": true}');
-- NULLs, unknown profile, existing channels (error)
SELECT pgrelay_notifier.create_channel(NULL, 'c_main');
SELECT pgrelay_notifier.create_channel('c_bad', NULL);
SELECT pgrelay_notifier.create_channel('c_bad', 'no_profile');
SELECT pgrelay_notifier.create_channel('c_welcome', 'c_main');
SELECT channel FROM pgrelay.register('c_sqljobs', 'sql', handler => 'regress_sink(text)');
SELECT pgrelay_notifier.create_channel('c_sqljobs', 'c_main');
-- options: not an object, unknown keys, keys that would change the action, given twice (error)
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', options => '[1, 2]');
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', options => '{"colour": "blue"}');
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', options => '{"max_attempts\"; DROP TABLE x; --": 1}');
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', options => '{"handler": "regress_sink(text)"}');
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', options => '{"action_type": "sql"}');
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', max_attempts => 2, options => '{"max_attempts": 3}');
-- pg_relay's own validation, unchanged (error)
SELECT pgrelay_notifier.create_channel('c bad', 'c_main');
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', concurrency_mode => 'serial');
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', options => '{"max_attempts": 0}');
SELECT pgrelay_notifier.create_channel('c_bad', 'c_main', options => '{"timeout": "soon"}');
-- nothing was left behind by the failures
SELECT count(*) FROM pgrelay.channels WHERE channel LIKE 'c_bad%' OR channel = 'c bad';
SELECT count(*) FROM pgrelay_notifier.channels WHERE channel LIKE 'c_bad%';

-- alter_channel: another profile, register() settings as arguments or options
SELECT channel, profile FROM pgrelay_notifier.alter_channel('c_welcome', profile => 'c_other', max_attempts => 9,
                                                            options => '{"description": "welcome mails"}');
SELECT action_type, max_attempts, description, timeout FROM pgrelay.channels WHERE channel = 'c_welcome';
SELECT channel FROM pgrelay_notifier.alter_channel('c_alerts', active => true);
SELECT active, max_attempts FROM pgrelay.channels WHERE channel = 'c_alerts';
-- a channel unregistered behind the notifier's back is registered again
SELECT pgrelay.unregister('c_iso');
SELECT channel, profile FROM pgrelay_notifier.alter_channel('c_iso');
SELECT action_type, timeout FROM pgrelay.channels WHERE channel = 'c_iso';
-- alter errors (error)
SELECT pgrelay_notifier.alter_channel('c_none', max_attempts => 2);
SELECT pgrelay_notifier.alter_channel('c_sqljobs', max_attempts => 2);
SELECT pgrelay_notifier.alter_channel('c_welcome', profile => 'no_profile');
SELECT pgrelay_notifier.alter_channel('c_welcome', node_restricted => true);
SELECT pgrelay_notifier.alter_channel('c_welcome', options => '{"colour": "blue"}');
SELECT profile FROM pgrelay_notifier.channels WHERE channel = 'c_welcome';

-- drop_channel: refused while a notification waits for delivery (error)
SELECT pgrelay_notifier.send('c_welcome', ARRAY['ann@example.org'], 'Hi', 'Hello') AS n \gset
SELECT pgrelay_notifier.drop_channel('c_welcome');
-- a cancelled notification no longer counts, but pg_relay still has its event (error)
SELECT pgrelay_notifier.cancel(:n);
SELECT pgrelay_notifier.drop_channel('c_welcome');
DELETE FROM pgrelay.queue WHERE channel = 'c_welcome';
SELECT pgrelay_notifier.drop_channel('c_welcome');
SELECT count(*) AS relay_channel FROM pgrelay.channels WHERE channel = 'c_welcome';
SELECT count(*) AS mapping FROM pgrelay_notifier.channels WHERE channel = 'c_welcome';
-- the notification stays, for get_status()
SELECT status, channel FROM pgrelay_notifier.get_status(:n);
-- unknown channels and other pg_relay channels (error)
SELECT pgrelay_notifier.drop_channel('c_welcome');
SELECT pgrelay_notifier.drop_channel('c_sqljobs');

SELECT pgrelay_notifier.drop_channel(channel) FROM pgrelay_notifier.channels ORDER BY channel;
SELECT pgrelay.unregister('c_sqljobs');
DELETE FROM pgrelay_notifier.notifications;
SELECT pgrelay_notifier.drop_profile('c_main'), pgrelay_notifier.drop_profile('c_other');
DROP FUNCTION regress_sink(text);
SELECT count(*) FROM pgrelay.channels;
