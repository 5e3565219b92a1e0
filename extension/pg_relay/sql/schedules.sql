-- Recurring events: the cron evaluator (cron_next_runs), schedule(), unschedule(), the view
-- pgrelay.schedules, the probe's schedule_due and _schedule_fire() on a clock the test walks
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SET timezone = 'UTC';
DELETE FROM pgrelay.queue;
CREATE FUNCTION regress_tick(payload text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS $$ SELECT $$;
SELECT channel FROM pgrelay.register('s_jobs', 'sql', handler => 'regress_tick(text)', max_payload_bytes => 20);
SELECT channel FROM pgrelay.register('s_off', 'sql', handler => 'regress_tick(text)', active => false);

-- ---- the evaluator: fields, lists, ranges, steps, names
SELECT * FROM pgrelay.cron_next_runs('*/15 * * * *', 'UTC', '2026-05-01 10:07', 4);
SELECT * FROM pgrelay.cron_next_runs('1-30/10 9 * * *', 'UTC', '2026-05-01 00:00', 4);
SELECT * FROM pgrelay.cron_next_runs('5/20 3 * * *', 'UTC', '2026-05-01 00:00', 4);
-- 2026-05-01 is a Friday: the weekdays of the week-end are passed over
SELECT to_char(t, 'Dy YYYY-MM-DD HH24:MI') FROM pgrelay.cron_next_runs('0 9,17 * * mon-FRI', 'UTC', '2026-05-01 12:00', 5) t;
SELECT * FROM pgrelay.cron_next_runs('0 0 1 jan,Jul *', 'UTC', '2026-05-01', 3);
SELECT * FROM pgrelay.cron_next_runs('0 0 1-3,20 FEB-MAR *', 'UTC', '2026-05-01', 5);
-- 0 and 7 are Sunday; SUN ends a range as 7
SELECT to_char(t, 'Dy DD') FROM pgrelay.cron_next_runs('0 0 * * 7', 'UTC', '2026-05-01', 2) t;
SELECT to_char(t, 'Dy DD') FROM pgrelay.cron_next_runs('0 0 * * 0', 'UTC', '2026-05-01', 2) t;
SELECT to_char(t, 'Dy DD') FROM pgrelay.cron_next_runs('0 0 * * sat-sun', 'UTC', '2026-05-01', 3) t;
SELECT to_char(t, 'Dy DD') FROM pgrelay.cron_next_runs('0 0 * * FRI-SUN', 'UTC', '2026-05-01', 4) t;
-- both day fields restricted: a day matches either (the 13th, and every Friday)
SELECT to_char(t, 'Dy MM-DD') FROM pgrelay.cron_next_runs('0 12 13 * FRI', 'UTC', '2026-01-01', 5) t;
-- a day field that starts with * : a day must match both (odd days that are Fridays)
SELECT to_char(t, 'Dy MM-DD') FROM pgrelay.cron_next_runs('0 12 */2 * FRI', 'UTC', '2026-01-01', 4) t;
-- the last day of February in leap years only, searched month by month, not minute by minute
SELECT * FROM pgrelay.cron_next_runs('0 0 29 2 *', 'UTC', '2026-01-01', 3);
-- the macros
SELECT m, pgrelay.cron_next_runs(m, 'UTC', '2026-05-01 10:07', 1)
FROM unnest(ARRAY['@hourly', '@daily', '@midnight', '@weekly', '@monthly', '@yearly', '@ANNUALLY']) m;
-- spaces and tabs between fields
SELECT * FROM pgrelay.cron_next_runs(E'  30\t 4  * * *  ', 'UTC', '2026-05-01', 1);
-- strictly after: a time on an occurrence gives the next one
SELECT * FROM pgrelay.cron_next_runs('0 * * * *', 'UTC', '2026-05-01 10:00', 1);
-- a day that never comes: no rows
SELECT count(*) FROM pgrelay.cron_next_runs('0 0 30 2 *', 'UTC', '2026-01-01', 1);

-- ---- time zones and summer time
-- New York: 09:00 is 14:00 UTC in winter, 13:00 after the clocks went forward on 8 March 2026
SELECT * FROM pgrelay.cron_next_runs('0 9 * * *', 'America/New_York', '2026-03-06 00:00', 4);
-- a time that does not exist (Berlin, 29 March 2026, 02:00 -> 03:00): moved forward by the gap,
-- 02:30 is 03:30 CEST (01:30 UTC); 02:00-02:45 become 03:00-03:45, which they coincide with
SELECT t, t AT TIME ZONE 'Europe/Berlin' AS berlin
FROM pgrelay.cron_next_runs('30 2 * * *', 'Europe/Berlin', '2026-03-27 12:00', 3) t;
SELECT t, t AT TIME ZONE 'Europe/Berlin' AS berlin
FROM pgrelay.cron_next_runs('*/15 1-3 * * *', 'Europe/Berlin', '2026-03-29 00:50', 6) t;
-- New York, 8 March 2026, 02:00 -> 03:00: 02:30 is 03:30 EDT (07:30 UTC)
SELECT t, t AT TIME ZONE 'America/New_York' AS new_york
FROM pgrelay.cron_next_runs('30 2 * * *', 'America/New_York', '2026-03-07 12:00', 2) t;
-- a time that happens twice (Berlin, 25 October 2026, 03:00 CEST -> 02:00 CET): once, at the
-- first instant (02:30 CEST, 00:30 UTC); in the repeated hour nothing runs again
SELECT t, t AT TIME ZONE 'Europe/Berlin' AS berlin
FROM pgrelay.cron_next_runs('30 2 * * *', 'Europe/Berlin', '2026-10-24 12:00', 2) t;
SELECT t, t AT TIME ZONE 'Europe/Berlin' AS berlin
FROM pgrelay.cron_next_runs('*/20 * * * *', 'Europe/Berlin', '2026-10-24 23:50', 7) t;
-- New York, 1 November 2026, 02:00 EDT -> 01:00 EST: 01:30 once, at 01:30 EDT (05:30 UTC)
SELECT t, t AT TIME ZONE 'America/New_York' AS new_york
FROM pgrelay.cron_next_runs('30 1 * * *', 'America/New_York', '2026-10-31 12:00', 2) t;
-- counted from a time inside the repeated hour, its first instant is past: the next day's
SELECT pgrelay.cron_next_runs('30 2 * * *', 'Europe/Berlin', '2026-10-25 01:10', 1);
-- time zone names are case-insensitive; UTC is the default
SELECT * FROM pgrelay.cron_next_runs('0 12 * * *', 'europe/berlin', '2026-07-01', 1);
SELECT * FROM pgrelay.cron_next_runs('0 12 * * *', after => '2026-07-01', count => 1);

-- ---- expressions that cannot be read (error)
SELECT pgrelay.cron_next_runs(NULL);
SELECT pgrelay.cron_next_runs('');
SELECT pgrelay.cron_next_runs('* * * *');
SELECT pgrelay.cron_next_runs('* * * * * *');
SELECT pgrelay.cron_next_runs('60 * * * *');
SELECT pgrelay.cron_next_runs('* 24 * * *');
SELECT pgrelay.cron_next_runs('* * 0 * *');
SELECT pgrelay.cron_next_runs('* * 32 * *');
SELECT pgrelay.cron_next_runs('* * * 13 *');
SELECT pgrelay.cron_next_runs('* * * * 8');
SELECT pgrelay.cron_next_runs('*/0 * * * *');
SELECT pgrelay.cron_next_runs('*/x * * * *');
SELECT pgrelay.cron_next_runs('1/2/3 * * * *');
SELECT pgrelay.cron_next_runs('30-10 * * * *');
SELECT pgrelay.cron_next_runs('1-2-3 * * * *');
SELECT pgrelay.cron_next_runs('1- * * * *');
SELECT pgrelay.cron_next_runs('1,,2 * * * *');
SELECT pgrelay.cron_next_runs('a * * * *');
SELECT pgrelay.cron_next_runs('* * * FOO *');
SELECT pgrelay.cron_next_runs('* * * * MONDAY');
SELECT pgrelay.cron_next_runs('* * * * SAT-MON');
SELECT pgrelay.cron_next_runs('? * * * *');
SELECT pgrelay.cron_next_runs(E'* * * *\n*');
SELECT pgrelay.cron_next_runs('@reboot');
SELECT pgrelay.cron_next_runs(repeat('1,', 600) || '1 * * * *');
-- other arguments (error)
SELECT pgrelay.cron_next_runs('* * * * *', NULL);
SELECT pgrelay.cron_next_runs('* * * * *', 'Mars/Olympus_Mons');
SELECT pgrelay.cron_next_runs('* * * * *', 'CET');
SELECT pgrelay.cron_next_runs('* * * * *', E'Europe/Berlin\n');
SELECT pgrelay.cron_next_runs('* * * * *', 'UTC', 'infinity');
SELECT pgrelay.cron_next_runs('* * * * *', 'UTC', count => 0);
SELECT pgrelay.cron_next_runs('* * * * *', 'UTC', count => 1001);
SELECT pgrelay.cron_next_runs('* * * * *', 'UTC', count => NULL);

-- ---- schedule(): a new schedule takes the defaults; its next run is counted from now
SELECT name, channel, cron, timezone, payload, catch_up, active, last_run_at,
       next_run_at = pgrelay._cron_next(cron, timezone, now()) AS next_from_now
FROM pgrelay.schedule('s_every15', 's_jobs', '*/15 * * * *', 'tick');
SELECT name, channel, cron, timezone, payload, catch_up, active
FROM pgrelay.schedule('s_berlin', 's_jobs', '30 2 * * *', 'nightly', 'Europe/Berlin', catch_up => 'skip');
-- an inactive channel is allowed: its occurrences fail until it is active
SELECT name, channel FROM pgrelay.schedule('s_offline', 's_off', '0 * * * *', 'x');
-- updating changes only what is given; a payload change keeps the next run
UPDATE pgrelay.schedule_entries SET next_run_at = '2030-01-01 00:00+00' WHERE name = 's_every15';
SELECT name, cron, payload, next_run_at FROM pgrelay.schedule('s_every15', payload => 'tock');
SELECT name, cron, payload, next_run_at FROM pgrelay.schedule('s_every15', payload => 'tick');
-- a new cron expression or time zone counts the next run from now again
SELECT cron, next_run_at = pgrelay._cron_next('0 */2 * * *', 'UTC', now()) AS next_from_now
FROM pgrelay.schedule('s_every15', cron => '0 */2 * * *');
SELECT timezone, next_run_at = pgrelay._cron_next('0 */2 * * *', 'Asia/Tokyo', now()) AS next_from_now
FROM pgrelay.schedule('s_every15', timezone => 'Asia/Tokyo');
SELECT cron, timezone FROM pgrelay.schedule('s_every15', cron => '*/15 * * * *', timezone => 'UTC');

-- schedule() arguments (error)
SELECT pgrelay.schedule(NULL, 's_jobs', '* * * * *');
SELECT pgrelay.schedule('', 's_jobs', '* * * * *');
SELECT pgrelay.schedule('has space', 's_jobs', '* * * * *');
SELECT pgrelay.schedule(E'line\nbreak', 's_jobs', '* * * * *');
SELECT pgrelay.schedule(repeat('x', 129), 's_jobs', '* * * * *');
SELECT pgrelay.schedule('s_new');
SELECT pgrelay.schedule('s_new', 's_jobs');
SELECT pgrelay.schedule('s_new', cron => '* * * * *');
SELECT pgrelay.schedule('s_new', 'no_such_channel', '* * * * *');
-- an email channel's payload is a notification id
SELECT channel FROM pgrelay.register('s_mail', 'notify');
SELECT pgrelay.schedule('s_new', 's_mail', '* * * * *');
SELECT pgrelay.schedule('s_new', 's_mail', '* * * * *', payload => '{"to": "ann"}');
SELECT pgrelay.unregister('s_mail');
SELECT pgrelay.schedule('s_new', 's_jobs', '61 * * * *');
SELECT pgrelay.schedule('s_new', 's_jobs', '0 0 30 2 *');
SELECT pgrelay.schedule('s_new', 's_jobs', '* * * * *', timezone => 'Nowhere/City');
SELECT pgrelay.schedule('s_new', 's_jobs', '* * * * *', timezone => 'EST');
SELECT pgrelay.schedule('s_new', 's_jobs', '* * * * *', repeat('x', 21));
SELECT pgrelay.schedule('s_new', 's_jobs', '* * * * *', catch_up => 'all');
SELECT pgrelay.schedule('s_every15', channel => 'no_such_channel');
SELECT pgrelay.schedule('s_every15', cron => 'every minute');
-- nothing of the refused calls was kept
SELECT name, channel, cron, timezone, payload FROM pgrelay.schedule_entries ORDER BY name;

-- ---- firing, on a clock the test walks (the schedule's next run pinned to 2030-01-01 00:00 UTC)
UPDATE pgrelay.schedule_entries SET next_run_at = '2030-01-01 00:00+00' WHERE name = 's_every15';
UPDATE pgrelay.schedule_entries SET active = false WHERE name IN ('s_berlin', 's_offline');
-- before its time: nothing
SELECT * FROM pgrelay._schedule_fire('2029-12-31 23:59:59+00');
-- at its time: queued, on time, with the occurrence as the event's run_at
SELECT schedule, occurrence, outcome, late, event_id IS NOT NULL AS has_event, reason
FROM pgrelay._schedule_fire('2030-01-01 00:00:00.5+00');
SELECT q.channel, q.payload, q.run_at, q.event_id = e.last_event_id AS is_last_event
FROM pgrelay.queue q, pgrelay.schedule_entries e WHERE e.name = 's_every15' AND q.channel = 's_jobs';
SELECT name, last_run_at, last_outcome, next_run_at FROM pgrelay.schedule_entries WHERE name = 's_every15';
-- the same moment again, and the rest of the minute: nothing more
SELECT * FROM pgrelay._schedule_fire('2030-01-01 00:00:00.5+00');
SELECT * FROM pgrelay._schedule_fire('2030-01-01 00:14:59+00');
-- the next occurrence, 40 seconds late: still on time
SELECT schedule, occurrence, outcome, late FROM pgrelay._schedule_fire('2030-01-01 00:15:40+00');
-- no Processor fired for three hours: catch_up once queues the first missed run, once, late
SELECT schedule, occurrence, outcome, late, reason FROM pgrelay._schedule_fire('2030-01-01 03:07+00');
SELECT next_run_at FROM pgrelay.schedule_entries WHERE name = 's_every15';
-- missed runs while the next one is on time: only the one on time is queued
UPDATE pgrelay.schedule_entries SET next_run_at = '2030-01-01 03:15+00' WHERE name = 's_every15';
SELECT schedule, occurrence, outcome, late FROM pgrelay._schedule_fire('2030-01-01 04:00:20+00');
SELECT count(*) AS queued, count(DISTINCT event_id) AS events FROM pgrelay.queue WHERE channel = 's_jobs';
-- catch_up skip: a missed run is recorded as skipped, nothing queued; on time it is queued
SELECT name, active FROM pgrelay.schedule('s_every15', active => false);
SELECT name, active, next_run_at >= now() AS next_from_now FROM pgrelay.schedule('s_berlin', active => true);
UPDATE pgrelay.schedule_entries SET next_run_at = '2030-03-30 00:30+00' WHERE name = 's_berlin';
SELECT schedule, occurrence, outcome, late, event_id, reason FROM pgrelay._schedule_fire('2030-03-31 12:00+00');
SELECT next_run_at, next_run_at AT TIME ZONE 'Europe/Berlin' AS berlin FROM pgrelay.schedule_entries WHERE name = 's_berlin';
SELECT schedule, occurrence, outcome, late FROM pgrelay._schedule_fire('2030-04-01 00:30:10+00');
-- a refused event (inactive channel) is recorded as failed with the reason; the schedule goes on
SELECT name FROM pgrelay.schedule('s_berlin', active => false);
SELECT name, active FROM pgrelay.schedule('s_offline', active => true);
UPDATE pgrelay.schedule_entries SET next_run_at = '2030-01-01 05:00+00' WHERE name = 's_offline';
SELECT schedule, occurrence, outcome, event_id, reason FROM pgrelay._schedule_fire('2030-01-01 05:00+00');
SELECT name, last_outcome, last_reason, next_run_at FROM pgrelay.schedule_entries WHERE name = 's_offline';
SELECT name FROM pgrelay.schedule('s_offline', active => false);
-- the runs, by occurrence
SELECT schedule, occurrence, outcome, late, event_id IS NOT NULL AS has_event, node_id
FROM pgrelay.schedule_runs ORDER BY schedule, occurrence;

-- an occurrence with a row in schedule_runs (fired on another node, its row replicated while this
-- node's row of the schedule is older) is never queued again: firing only moves the schedule on
SELECT name FROM pgrelay.schedule('s_every15', active => true);
UPDATE pgrelay.schedule_entries SET next_run_at = '2030-01-01 04:00+00' WHERE name = 's_every15';
SELECT * FROM pgrelay._schedule_fire('2030-01-01 04:00:30+00');
SELECT next_run_at, last_run_at FROM pgrelay.schedule_entries WHERE name = 's_every15';
SELECT count(*) AS queued FROM pgrelay.queue WHERE channel = 's_jobs';
-- at (error)
SELECT pgrelay._schedule_fire('infinity');

-- ---- which node fires: single mode (above); leader mode only the leader; never a standby
UPDATE pgrelay.schedule_entries SET next_run_at = '2030-01-01 06:00+00' WHERE name = 's_every15';
SET pg_relay.mode = 'leader';
SET pg_relay.is_leader = off;
SELECT * FROM pgrelay._schedule_fire('2030-01-01 06:00+00');
SET pg_relay.is_leader = on;
SELECT schedule, occurrence, outcome FROM pgrelay._schedule_fire('2030-01-01 06:00+00');
-- multi-node, without a replication engine or other members: this node is the lowest live node
SET pg_relay.mode = 'multi-node';
SELECT schedule, occurrence, outcome FROM pgrelay._schedule_fire('2030-01-01 06:15+00');
RESET pg_relay.mode;
RESET pg_relay.is_leader;

-- ---- the probe: schedule_due when an active schedule's next run has come (by the real clock)
SELECT has_work, schedule_due FROM pgrelay.queue_probe();
UPDATE pgrelay.schedule_entries SET next_run_at = now() - interval '1 second' WHERE name = 's_every15';
SELECT schedule_due FROM pgrelay.queue_probe();
-- an empty queue still says it
DELETE FROM pgrelay.queue;
SELECT has_work, schedule_due FROM pgrelay.queue_probe();
UPDATE pgrelay.schedule_entries SET active = false WHERE name = 's_every15';
SELECT schedule_due FROM pgrelay.queue_probe();
UPDATE pgrelay.schedule_entries SET active = true WHERE name = 's_every15';
-- fired by the real clock, as the Processor does: due no more
SELECT schedule, outcome FROM pgrelay._schedule_fire();
SELECT schedule_due FROM pgrelay.queue_probe();
-- _ha_tick passes it on to the node that fires (here, leader mode: the lowest live node leads)
UPDATE pgrelay.schedule_entries SET next_run_at = now() - interval '1 second' WHERE name = 's_every15';
SET pg_relay.mode = 'leader';
SELECT is_leader, schedule_due FROM pgrelay._ha_tick(NULL, true, true, false);
SELECT is_leader, schedule_due FROM pgrelay._ha_tick(NULL, false, false, true);
RESET pg_relay.mode;
RESET pg_relay.is_leader;
DELETE FROM pgrelay.heartbeats;

-- ---- the view: no payload, its size
SELECT name, channel, cron, timezone, catch_up, active, last_outcome, last_run_at IS NOT NULL AS ran,
       next_run_at IS NOT NULL AS has_next, payload_bytes
FROM pgrelay.schedules ORDER BY name;
SELECT count(*) AS payload_columns FROM information_schema.columns
WHERE table_schema = 'pgrelay' AND table_name = 'schedules' AND column_name = 'payload';

-- ---- unschedule(): the schedule and its runs go, the events it queued stay
SELECT count(*) > 0 AS has_runs FROM pgrelay.schedule_runs WHERE schedule = 's_every15';
SELECT pgrelay.unschedule('s_every15');
SELECT count(*) AS runs FROM pgrelay.schedule_runs WHERE schedule = 's_every15';
SELECT count(*) AS queued FROM pgrelay.queue WHERE channel = 's_jobs';
-- (error)
SELECT pgrelay.unschedule('s_every15');
SELECT pgrelay.unschedule(NULL);
-- a channel with a schedule cannot be dropped (error)
DELETE FROM pgrelay.queue;
SELECT pgrelay.unregister('s_off');
SELECT pgrelay.unschedule('s_offline');
SELECT pgrelay.unregister('s_off');
SELECT pgrelay.unschedule('s_berlin');
SELECT pgrelay.unregister('s_jobs');
DROP FUNCTION regress_tick(text);
