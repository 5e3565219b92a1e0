/* extension/pg_relay_notifier/upgrade/1.1--1.3.sql: schema changes from 1.1 to 1.3 (the code follows from src/) */

-- requeue_failed takes all_channels: a NULL channel no longer means every channel (created again
-- by the code below). IF EXISTS: an upgrade from 1.0 never had it.
DROP FUNCTION IF EXISTS pgrelay_notifier.requeue_failed(text, timestamptz, timestamptz, text, timestamptz);
