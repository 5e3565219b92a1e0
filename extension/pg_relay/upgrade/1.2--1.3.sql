/* extension/pg_relay/upgrade/1.2--1.3.sql: schema changes from 1.2 to 1.3 (the code follows from src/) */

-- ---- High availability and replayed rows (HA branch) ----
-- A claim recognises a replayed row (its attempt is in pgrelay.log already) and finishes it: the
-- claim's row type and the claims' results say so.
-- (IF EXISTS: an upgrade from 1.1 runs this after 1.1--1.2, whose functions the code below creates.)
ALTER TYPE pgrelay._claim ADD ATTRIBUTE replayed_log bigint;
DROP FUNCTION IF EXISTS pgrelay._webhook_claim(bigint);
DROP FUNCTION IF EXISTS pgrelay._queue_claim(bigint);
DROP FUNCTION IF EXISTS pgrelay._claim_events(bigint[]);
-- The dead-node rule counts a peer not heard from yet as live: the verdicts say which are.
DROP FUNCTION IF EXISTS pgrelay._ha_observe(interval);
DROP FUNCTION IF EXISTS pgrelay._verdicts(interval);
-- ---- end of the HA branch's block ----
