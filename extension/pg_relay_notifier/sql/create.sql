CREATE EXTENSION pg_relay_notifier;
