/* extension/pg_relay/upgrade/1.2--1.3.sql: schema changes from 1.2 to 1.3 (the code follows from src/) */

-- Set-based retry_failed/discard_failed take all_channels: a NULL channel no longer means every
-- channel (created again by the code below). IF EXISTS: an upgrade from 1.1 never had them.
DROP FUNCTION IF EXISTS pgrelay.retry_failed(text, timestamptz, timestamptz, text);
DROP FUNCTION IF EXISTS pgrelay.discard_failed(text, timestamptz, timestamptz, text);
