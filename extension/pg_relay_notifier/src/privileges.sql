/* extension/pg_relay_notifier/src/privileges.sql: privileges: PUBLIC gets nothing; each role gets what its job needs */

REVOKE ALL ON SCHEMA pgrelay_notifier FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA pgrelay_notifier FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgrelay_notifier FROM PUBLIC;

GRANT USAGE ON SCHEMA pgrelay_notifier TO pgrelay_producer, pgrelay_processor, pgrelay_admin;

GRANT EXECUTE ON FUNCTION
    pgrelay_notifier.send(text, text[], text, text, text, text[], text[], text[], text, text, jsonb, jsonb, timestamptz),
    pgrelay_notifier.get_status(bigint),
    pgrelay_notifier.cancel(bigint),
    pgrelay_notifier.address_error(text),
    pgrelay_notifier.parse_mailbox(text)
TO pgrelay_producer;
GRANT SELECT ON pgrelay_notifier.recent_failures TO pgrelay_producer;

GRANT EXECUTE ON FUNCTION
    pgrelay_notifier.fetch(text, bigint),
    pgrelay_notifier.set_status(text, jsonb)
TO pgrelay_processor;

GRANT EXECUTE ON FUNCTION
    pgrelay_notifier.create_profile(text, text, text, integer, text, text, text, text, text, text, text, text, text,
                                    text, text, text, boolean, text, text, interval, interval, integer, bigint,
                                    boolean, text, text[], text),
    pgrelay_notifier.alter_profile(text, text, integer, text, text, text, text, text, text, text, text, text, text,
                                   text, text, boolean, text, text, interval, interval, integer, bigint, boolean,
                                   text, text[], text[], text),
    pgrelay_notifier.drop_profile(text),
    pgrelay_notifier.create_channel(text, text, text, integer, interval, interval, interval, boolean, text,
                                    boolean, jsonb),
    pgrelay_notifier.alter_channel(text, text, text, integer, interval, interval, interval, boolean, text,
                                   boolean, jsonb),
    pgrelay_notifier.drop_channel(text),
    pgrelay_notifier.get_status(bigint),
    pgrelay_notifier.cancel(bigint),
    pgrelay_notifier.requeue(bigint, timestamptz),
    pgrelay_notifier.requeue_failed(text, timestamptz, timestamptz, text, timestamptz, boolean),
    pgrelay_notifier.purge(interval),
    pgrelay_notifier.address_error(text),
    pgrelay_notifier.parse_mailbox(text)
TO pgrelay_admin;
GRANT SELECT ON pgrelay_notifier.profiles, pgrelay_notifier.channels, pgrelay_notifier.notifications,
                pgrelay_notifier.recipients, pgrelay_notifier.attachments, pgrelay_notifier.attempts,
                pgrelay_notifier.attempt_traces, pgrelay_notifier.recent_failures,
                pgrelay_notifier.profile_summary, pgrelay_notifier.profile_credentials
TO pgrelay_admin;

-- The monitor role reads the views, and nothing else.
GRANT USAGE ON SCHEMA pgrelay_notifier TO pgrelay_monitor;
GRANT SELECT ON pgrelay_notifier.recent_failures, pgrelay_notifier.profile_summary,
                pgrelay_notifier.profile_credentials
TO pgrelay_monitor;
-- Which version is installed, and how: for the Processor's startup check and pg_relay status.
GRANT EXECUTE ON FUNCTION pgrelay_notifier.installation() TO pgrelay_processor, pgrelay_admin, pgrelay_monitor;
