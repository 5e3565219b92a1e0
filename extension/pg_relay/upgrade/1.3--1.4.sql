/* extension/pg_relay/upgrade/1.3--1.4.sql: schema changes from 1.3 to 1.4 (the code follows from src/) */

-- _enqueue() takes any_payload (the table-change trigger's): the old signature goes, so that a call
-- with four arguments is not ambiguous
DROP FUNCTION IF EXISTS pgrelay._enqueue(text, text, timestamptz, bigint);
