/* extension/pg_relay_notifier/src/views.sql: operator views */

CREATE OR REPLACE VIEW pgrelay_notifier.recent_failures WITH (security_barrier) AS
SELECT n.notification_id, n.channel, n.profile, n.status, n.attempts, n.last_error, n.last_attempt_at,
       n.next_attempt_at, n.created_at, n.created_by,
       (SELECT count(*) FROM pgrelay_notifier.recipients r
        WHERE r.notification_id = n.notification_id AND r.status = 'failed') AS failed_recipients,
       (SELECT count(*) FROM pgrelay_notifier.recipients r
        WHERE r.notification_id = n.notification_id) AS recipients
FROM pgrelay_notifier.notifications n
WHERE n.status IN ('failed', 'partially_sent', 'retrying')
  AND n.last_attempt_at > now() - interval '7 days'
  AND (n.created_by = session_user OR pg_catalog.pg_has_role(session_user, 'pgrelay_admin', 'MEMBER')
       OR pg_catalog.pg_has_role(session_user, 'pgrelay_monitor', 'MEMBER'))
ORDER BY n.last_attempt_at DESC;
COMMENT ON VIEW pgrelay_notifier.recent_failures IS
    'Notifications whose last attempt in the past 7 days failed (failed, partially_sent, or retrying after '
    'a transient failure), newest first; producers see their own, admins and monitors all';

CREATE OR REPLACE VIEW pgrelay_notifier.profile_summary AS
SELECT p.name AS profile, p.transport, p.debug,
       (SELECT count(*) FROM pgrelay_notifier.channels c WHERE c.profile = p.name) AS channels,
       count(n.notification_id) FILTER (WHERE n.status = 'queued') AS queued,
       count(n.notification_id) FILTER (WHERE n.status = 'retrying') AS retrying,
       count(n.notification_id) FILTER (WHERE n.status = 'sent') AS sent,
       count(n.notification_id) FILTER (WHERE n.status = 'partially_sent') AS partially_sent,
       count(n.notification_id) FILTER (WHERE n.status = 'failed') AS failed,
       count(n.notification_id) FILTER (WHERE n.status = 'cancelled') AS cancelled,
       max(n.sent_at) AS last_sent_at,
       max(n.last_attempt_at) FILTER (WHERE n.status IN ('failed', 'partially_sent', 'retrying')) AS last_failure_at
FROM pgrelay_notifier.profiles p
LEFT JOIN pgrelay_notifier.notifications n ON n.profile = p.name
GROUP BY p.name, p.transport, p.debug;
COMMENT ON VIEW pgrelay_notifier.profile_summary IS
    'Per profile: channels and notifications by status (since the last purge), last success and failure';

CREATE OR REPLACE VIEW pgrelay_notifier.profile_credentials AS
SELECT p.name AS profile,
       CASE WHEN s.password IS NULL THEN NULL
            WHEN s.password ~ '^(env|file):' THEN s.password ELSE '(literal)' END AS password,
       CASE WHEN s.oauth_token IS NULL THEN NULL
            WHEN s.oauth_token ~ '^(env|file):' THEN s.oauth_token ELSE '(literal)' END AS oauth_token,
       CASE WHEN s.client_secret IS NULL THEN NULL
            WHEN s.client_secret ~ '^(env|file):' THEN s.client_secret ELSE '(literal)' END AS client_secret
FROM pgrelay_notifier.profiles p
LEFT JOIN pgrelay_notifier.profile_secrets s ON s.profile = p.name;
COMMENT ON VIEW pgrelay_notifier.profile_credentials IS
    'Which secrets each profile has: env:/file: references as written, literal values only as (literal)';
