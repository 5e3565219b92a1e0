-- pgrelay._next_id(), _this_node(), decode_id(), _id_floor()
\set SHOW_CONTEXT never
SET intervalstyle = postgres;
SET timezone = 'UTC';

-- one million ids in one statement: no duplicate, strictly increasing in call order
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(id > prev) AS increasing
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev
      FROM (SELECT n, pgrelay._next_id() AS id FROM generate_series(1, 1000000) n) s) t;

-- bit layout, checked by decoding a constructed id: 1000 ms after the epoch, node 5, sequence 42
SELECT * FROM pgrelay.decode_id((1000::bigint << 22) | (5 << 12) | 42);
SELECT pgrelay._id_floor('2026-01-01 00:00:01+00') = (1000::bigint << 22) AS floor_ok,
       pgrelay._id_floor('2020-01-01 00:00:00+00') AS floor_before_epoch;

-- a fresh id carries the wall-clock millisecond, this node's id and a 12-bit sequence
SET pg_relay.node_id = 7;
SELECT pgrelay._this_node();
WITH i AS (SELECT pgrelay._next_id() AS id,
                  floor(date_part('epoch', clock_timestamp()) * 1000)::bigint - 1767225600000 AS wall_ms)
SELECT id > 0 AS positive,
       abs((id >> 22) - wall_ms) < 1000 AS ms_is_now,
       (id >> 12) & 1023 AS node,
       (SELECT node_id FROM pgrelay.decode_id(id)) AS decoded_node,
       (SELECT created_at BETWEEN now() - interval '1 minute' AND clock_timestamp() + interval '1 second'
        FROM pgrelay.decode_id(id)) AS decoded_time_ok
FROM i;

-- more than 4096 ids in one millisecond: put the logical clock at the last sequence value of a
-- millisecond 5 s ahead; the next ids roll into the following millisecond instead of repeating
SELECT setval('pgrelay._id_clock',
              (floor(date_part('epoch', clock_timestamp()) * 1000)::bigint - 1767225600000 + 5000) * 4096 + 4093)
       IS NOT NULL AS clock_set;
SELECT n, (s.id >> 22) - min(s.id >> 22) OVER () AS ms_step, s.id & 4095 AS seq
FROM (SELECT n, pgrelay._next_id() AS id FROM generate_series(1, 6) n) s
ORDER BY n;

-- node ids out of range or not a number (error)
SET pg_relay.node_id = 1024;
SELECT pgrelay._next_id();
SET pg_relay.node_id = -1;
SELECT pgrelay._this_node();
SET pg_relay.node_id = 'abc';
SELECT pgrelay._this_node();
-- as the Processor's role, which calls it itself; a line break shows as ? (error)
SET pg_relay.node_id = E'7\n8';
SET ROLE pgrelay_processor;
SELECT pgrelay._this_node();
RESET ROLE;
SET pg_relay.node_id = 1023;
SELECT pgrelay._this_node(), (pgrelay._next_id() >> 12) & 1023 AS node;
RESET pg_relay.node_id;
SELECT pgrelay._this_node();

-- the extension's own statements read the node id through _node_id(): blank is 0, a set value is
-- parsed and checked like _this_node() does (error for a bad one)
SET pg_relay.node_id = '  ';
SELECT pgrelay._node_id() AS blank, pgrelay._this_node() AS blank_this;
SET pg_relay.node_id = ' 12 ';
SELECT pgrelay._node_id() AS twelve, (pgrelay._next_id() >> 12) & 1023 AS id_node;
SET pg_relay.node_id = '1e3';
SELECT pgrelay._node_id();
RESET pg_relay.node_id;

-- a clock far behind the wall clock is moved forward to it by the next id (the slow path)
SELECT setval('pgrelay._id_clock', 1) IS NOT NULL AS clock_behind;
SELECT abs((pgrelay._next_id() >> 22)
           - (floor(date_part('epoch', clock_timestamp()) * 1000)::bigint - 1767225600000)) < 1000 AS caught_up;
SELECT (pgrelay._next_id() >> 22)
       - (floor(date_part('epoch', clock_timestamp()) * 1000)::bigint - 1767225600000) BETWEEN -1000 AND 1000
       AS stays_caught_up;

-- the last value of the 41 bits of milliseconds, then past them: the id space is exhausted (error)
SELECT setval('pgrelay._id_clock', 9007199254740990) IS NOT NULL AS clock_at_end;
SELECT pgrelay._next_id() = ((2199023255551::bigint << 22) | 4095) AS last_id;
SELECT pgrelay._next_id();
SELECT setval('pgrelay._id_clock',
              (floor(date_part('epoch', clock_timestamp()) * 1000)::bigint - 1767225600000) * 4096) IS NOT NULL
       AS clock_reset;
