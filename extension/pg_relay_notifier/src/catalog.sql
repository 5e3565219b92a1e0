/* extension/pg_relay_notifier/src/catalog.sql: tables and indexes (run once, by the base install; upgrades change them in upgrade/) */

CREATE TABLE pgrelay_notifier.profiles (
    name                  text PRIMARY KEY,
    transport             text NOT NULL CHECK (transport IN ('smtp', 'graph')),
    -- transport smtp
    host                  text,
    port                  integer CHECK (port BETWEEN 1 AND 65535),
    security              text CHECK (security IN ('starttls', 'starttls_optional', 'tls', 'none')),
    username              text,
    ca_file               text,
    helo_name             text,
    -- transport graph
    tenant_id             text,
    client_id             text,
    sender                text,
    login_url             text,
    graph_url             text,
    save_to_sent_items    boolean,
    -- both
    from_address          text,
    from_name             text,
    connect_timeout       interval NOT NULL DEFAULT '10 seconds',
    timeout               interval NOT NULL DEFAULT '60 seconds',
    rate_limit_per_minute integer CHECK (rate_limit_per_minute > 0),
    max_message_bytes     bigint NOT NULL DEFAULT 26214400 CHECK (max_message_bytes > 0),
    debug                 boolean NOT NULL DEFAULT false,
    description           text,
    created_by            name NOT NULL DEFAULT session_user,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    -- since 1.1
    allowed_from          text[],
    scope                 text,
    CHECK ((transport = 'smtp') = (host IS NOT NULL AND security IS NOT NULL)),
    CHECK ((transport = 'graph') = (tenant_id IS NOT NULL AND client_id IS NOT NULL AND sender IS NOT NULL))
);
COMMENT ON TABLE pgrelay_notifier.profiles IS
    'How mail leaves: one SMTP server or Microsoft Graph mailbox per profile (secrets are in profile_secrets)';
COMMENT ON COLUMN pgrelay_notifier.profiles.port IS
    'NULL: the default of the security mode (587 starttls, 465 tls, 25 none)';
COMMENT ON COLUMN pgrelay_notifier.profiles.allowed_from IS
    'From addresses a producer may give to send() besides from_address: addresses, or @domain for a whole domain';
COMMENT ON COLUMN pgrelay_notifier.profiles.scope IS
    'OAuth2 scope the Processor asks tokens for (NULL: the resource''s default: {graph_url}/.default for Graph, '
    'https://outlook.office365.com/.default for SMTP)';

CREATE TABLE pgrelay_notifier.profile_secrets (
    profile       text PRIMARY KEY
                  REFERENCES pgrelay_notifier.profiles (name) ON UPDATE CASCADE ON DELETE CASCADE,
    password      text,
    oauth_token   text,
    client_secret text
);
COMMENT ON TABLE pgrelay_notifier.profile_secrets IS
    'Profile secrets: a literal value or a reference (env:NAME, file:NAME, value:TEXT) that only the '
    'Processor resolves. No role but the extension owner has any privilege on this table.';

CREATE TABLE pgrelay_notifier.channels (
    channel    text PRIMARY KEY,
    profile    text NOT NULL
               REFERENCES pgrelay_notifier.profiles (name) ON UPDATE CASCADE ON DELETE RESTRICT,
    created_by name NOT NULL DEFAULT session_user,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay_notifier.channels IS
    'The notify channels of this extension and the profile each one sends with';
CREATE INDEX channels_profile_idx ON pgrelay_notifier.channels (profile);

CREATE TABLE pgrelay_notifier.notifications (
    notification_id bigint PRIMARY KEY DEFAULT pgrelay._next_id(),
    channel         text NOT NULL,
    profile         text NOT NULL,
    status          text NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued', 'sending', 'sent', 'partially_sent', 'retrying',
                                      'failed', 'cancelled')),
    message_id      text NOT NULL,
    from_address    text NOT NULL,
    from_name       text,
    reply_to        jsonb NOT NULL DEFAULT '[]',
    subject         text,
    body_text       text,
    body_html       text,
    headers         jsonb NOT NULL DEFAULT '[]',
    size_bytes      bigint NOT NULL DEFAULT 0,
    run_at          timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    last_attempt_at timestamptz,
    next_attempt_at timestamptz,
    sent_at         timestamptz,
    cancelled_at    timestamptz,
    cancelled_by    name,
    finished_at     timestamptz,
    created_by      name NOT NULL DEFAULT session_user,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    -- since 1.1
    queue_event_id  bigint,
    CHECK (body_text IS NOT NULL OR body_html IS NOT NULL)
);
COMMENT ON TABLE pgrelay_notifier.notifications IS
    'One row per send(); status queued, retrying, sent, partially_sent, failed or cancelled '
    '(sending is reported by get_status while a delivery holds the notification, never stored)';
COMMENT ON COLUMN pgrelay_notifier.notifications.channel IS
    'The channel at send() time (no foreign key: history outlives a dropped channel)';
COMMENT ON COLUMN pgrelay_notifier.notifications.profile IS
    'The profile the message was composed for (the channel''s profile at send() time)';
COMMENT ON COLUMN pgrelay_notifier.notifications.queue_event_id IS
    'The pg_relay event send() or requeue() queued for this notification: the only one fetch() serves it to';
COMMENT ON COLUMN pgrelay_notifier.notifications.finished_at IS
    'When the notification reached sent, partially_sent, failed or cancelled (purge() uses it)';
CREATE INDEX notifications_finished_idx ON pgrelay_notifier.notifications (finished_at)
    WHERE finished_at IS NOT NULL;
CREATE INDEX notifications_open_idx ON pgrelay_notifier.notifications (channel)
    WHERE status IN ('queued', 'retrying');
CREATE INDEX notifications_profile_idx ON pgrelay_notifier.notifications (profile, status);
CREATE INDEX notifications_attempt_idx ON pgrelay_notifier.notifications (last_attempt_at)
    WHERE status IN ('failed', 'partially_sent', 'retrying');

CREATE TABLE pgrelay_notifier.recipients (
    notification_id bigint NOT NULL
                    REFERENCES pgrelay_notifier.notifications ON DELETE CASCADE,
    recipient_id    integer NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('to', 'cc', 'bcc')),
    address         text NOT NULL,
    name            text,
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'sent', 'failed', 'retrying')),
    code            integer,
    reply           text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (notification_id, recipient_id)
);
COMMENT ON TABLE pgrelay_notifier.recipients IS
    'Recipients of a notification in the order given to send() (recipient_id 1, 2, ...), with the '
    'latest delivery result of each';

CREATE TABLE pgrelay_notifier.attachments (
    notification_id bigint NOT NULL
                    REFERENCES pgrelay_notifier.notifications ON DELETE CASCADE,
    position        integer NOT NULL,
    filename        text NOT NULL,
    content_type    text NOT NULL,
    content_id      text,
    content         bytea NOT NULL,
    PRIMARY KEY (notification_id, position)
);
COMMENT ON TABLE pgrelay_notifier.attachments IS
    'Attachments (content_id NULL) and inline parts (content_id set, referenced as cid:content_id)';

CREATE TABLE pgrelay_notifier.attempts (
    attempt_id          bigint PRIMARY KEY DEFAULT pgrelay._next_id(),
    notification_id     bigint NOT NULL
                        REFERENCES pgrelay_notifier.notifications ON DELETE CASCADE,
    attempt             integer NOT NULL,
    outcome             text NOT NULL CHECK (outcome IN ('sent', 'partially_sent', 'retrying', 'failed')),
    status              text NOT NULL,
    transport           text,
    started_at          timestamptz,
    finished_at         timestamptz,
    reply_code          integer,
    reply               text,
    provider_message_id text,
    error               text,
    unknown_outcome     boolean NOT NULL DEFAULT false,
    next_attempt_at     timestamptz,
    recipients          jsonb NOT NULL DEFAULT '[]',
    recorded_at         timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay_notifier.attempts IS
    'One row per delivery attempt, as reported by the Processor through set_status(); status is '
    'the notification''s status after the attempt';
CREATE INDEX attempts_notification_idx ON pgrelay_notifier.attempts (notification_id);

CREATE TABLE pgrelay_notifier.attempt_traces (
    attempt_id  bigint PRIMARY KEY REFERENCES pgrelay_notifier.attempts ON DELETE CASCADE,
    trace       text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pgrelay_notifier.attempt_traces IS
    'Redacted protocol transcripts, stored only for profiles with debug on';
CREATE INDEX attempt_traces_recorded_idx ON pgrelay_notifier.attempt_traces (recorded_at);

-- pg_dump keeps user data of extension tables only when told to.
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.profiles', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.profile_secrets', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.channels', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.notifications', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.recipients', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.attachments', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.attempts', '');
SELECT pg_catalog.pg_extension_config_dump('pgrelay_notifier.attempt_traces', '');
