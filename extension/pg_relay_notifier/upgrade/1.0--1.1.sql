/* extension/pg_relay_notifier/upgrade/1.0--1.1.sql: schema changes from 1.0 to 1.1 (the code follows from src/) */

-- Profiles: the addresses producers may send as besides from_address, and an OAuth2 scope.
ALTER TABLE pgrelay_notifier.profiles ADD COLUMN allowed_from text[], ADD COLUMN scope text;
COMMENT ON COLUMN pgrelay_notifier.profiles.allowed_from IS
    'From addresses a producer may give to send() besides from_address: addresses, or @domain for a whole domain';
COMMENT ON COLUMN pgrelay_notifier.profiles.scope IS
    'OAuth2 scope the Processor asks tokens for (NULL: the resource''s default: {graph_url}/.default for Graph, '
    'https://outlook.office365.com/.default for SMTP)';

-- Each notification remembers the one event that may deliver it. Notifications not finished yet
-- get the earliest event queued (or failed) for them: send() queued it in the transaction that
-- made the notification, before anyone could learn the id, and retries keep its event id. This
-- one-time read of pgrelay.queue and pgrelay.failed_events is the only place the notifier looks
-- at pg_relay's tables.
ALTER TABLE pgrelay_notifier.notifications ADD COLUMN queue_event_id bigint;
COMMENT ON COLUMN pgrelay_notifier.notifications.queue_event_id IS
    'The pg_relay event send() or requeue() queued for this notification: the only one fetch() serves it to';
UPDATE pgrelay_notifier.notifications n
SET queue_event_id = e.event_id
FROM (SELECT DISTINCT ON (x.payload) x.payload, x.event_id
      FROM (SELECT q.payload, q.event_id FROM pgrelay.queue q WHERE q.action_type = 'notify'
            UNION ALL
            SELECT f.payload, f.event_id FROM pgrelay.failed_events f WHERE f.action_type = 'notify') x
      ORDER BY x.payload, x.event_id) e
WHERE e.payload = n.notification_id::text AND n.status IN ('queued', 'retrying', 'failed');

-- Functions whose arguments changed (created again by the code below).
DROP FUNCTION pgrelay_notifier.fetch(text);
DROP FUNCTION pgrelay_notifier.create_profile(text, text, text, integer, text, text, text, text, text, text, text,
                                              text, text, text, text, text, boolean, text, text, interval, interval,
                                              integer, bigint, boolean, text);
DROP FUNCTION pgrelay_notifier.alter_profile(text, text, integer, text, text, text, text, text, text, text, text,
                                             text, text, text, text, boolean, text, text, interval, interval,
                                             integer, bigint, boolean, text, text[]);
