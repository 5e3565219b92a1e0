CREATE EXTENSION pg_relay;
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
