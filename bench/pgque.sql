-- bench/pgque.sql - the bench's side of PgQue in `make bench-peers` (bench/bench.py runs it in the
-- database where it installed PgQue's sql/pgque.sql from PGQUE_SQL).
--
-- The same work as pg_relay's bench channel: every event's handling inserts one row into
-- bench.sink through a SECURITY DEFINER handler. The consumer is a procedure that loops
-- batch -> handler per event -> finish -> COMMIT until no batch is left; bench.py runs one
-- session of it for one consumer and four for four cooperative subconsumers.
CREATE SCHEMA bench;
CREATE TABLE bench.sink (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text NOT NULL,
                         at timestamptz NOT NULL DEFAULT clock_timestamp());

-- As pg_relay's bench.record(text).
CREATE FUNCTION bench.record(payload text) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    INSERT INTO bench.sink (payload) VALUES (payload);
END
$$;

-- A fresh queue named qname, with the consumers registered before any event is sent (a
-- consumer sees the events of the ticks after its registration). subconsumers = 0: one normal
-- consumer 'solo'; N > 0: a cooperative consumer 'coop' with subconsumers s1..sN.
CREATE PROCEDURE bench.new_queue(qname text, subconsumers integer) LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM pgque.queue q WHERE q.queue_name = new_queue.qname) THEN
        -- drop_queue(force) unregisters normal consumers only; subconsumers first.
        PERFORM pgque.unregister_subconsumer(qname, split_part(c.co_name, '.', 1), split_part(c.co_name, '.', 2))
        FROM pgque.subscription s
        JOIN pgque.consumer c ON c.co_id = s.sub_consumer
        JOIN pgque.queue q ON q.queue_id = s.sub_queue
        WHERE q.queue_name = new_queue.qname AND s.sub_role = 'coop_member';
        PERFORM pgque.drop_queue(qname, true);
    END IF;
    PERFORM pgque.create_queue(qname);
    IF subconsumers = 0 THEN
        PERFORM pgque.subscribe(qname, 'solo');
    ELSE
        PERFORM pgque.register_subconsumer(qname, 'coop', 's' || i)
        FROM generate_series(1, subconsumers) i;
    END IF;
END
$$;

-- Sends n events ('event 1' ... 'event n'), per_tick at a time with send_batch, each followed by a
-- tick in a transaction of its own (the ticker must see the send committed): a backlog in ticks
-- of per_tick events, the batches the consumers then get. Ticking with a 500-event threshold is
-- what PgQue's ticker does under a steady load (queue_ticker_max_count, default 500); a tick that
-- the threshold would not make (the last, shorter chunk) is forced.
CREATE PROCEDURE bench.fill(qname text, n integer, per_tick integer) LANGUAGE plpgsql AS $$
DECLARE
    done integer := 0;
    k integer;
BEGIN
    WHILE done < n LOOP
        k := least(per_tick, n - done);
        PERFORM pgque.send_batch(qname, ARRAY(SELECT 'event ' || g FROM generate_series(done + 1, done + k) g));
        COMMIT;
        IF pgque.ticker(qname) IS NULL THEN
            PERFORM pgque.force_next_tick(qname);
            PERFORM pgque.ticker(qname);
        END IF;
        COMMIT;
        done := done + k;
    END LOOP;
END
$$;

-- The consumer: next batch, the handler once per event, finish the batch, COMMIT; until no batch
-- is left. A cooperative subconsumer commits its batch allocation first: next_batch locks the
-- group's cursor row (FOR UPDATE) until the end of the transaction, and holding it through the
-- handlers would run the subconsumers one after another.
CREATE PROCEDURE bench.consume(qname text, consumer text, subconsumer text) LANGUAGE plpgsql AS $$
DECLARE
    batch bigint;
    ev record;
BEGIN
    LOOP
        IF subconsumer IS NULL THEN
            batch := pgque.next_batch(qname, consumer);
        ELSE
            batch := pgque.next_batch(qname, consumer, subconsumer);
            COMMIT;
        END IF;
        EXIT WHEN batch IS NULL;
        FOR ev IN SELECT e.ev_data FROM pgque.get_batch_events(batch) e LOOP
            PERFORM bench.record(ev.ev_data);
        END LOOP;
        PERFORM pgque.finish_batch(batch);
        COMMIT;
    END LOOP;
END
$$;
