-- demo/setup.sql - what an admin does once (run by demo/run as the superuser postgres).
--
-- Variables (psql -v): sink_port, the port of the local SMTP sink; graph_url and graph_ca, the
-- address of the local fake of Microsoft Graph and its token endpoint, and the CA it is signed by;
-- hook_url, the local webhook receiver (signed by the same CA); redis_port, the local redis-server.

SET client_min_messages = warning;

-- Both extensions: pg_relay (the queue) first, then the email notifier on top of it.
CREATE EXTENSION pg_relay;
CREATE EXTENSION pg_relay_notifier;

-- Three roles, each with only the rights its job needs:
--   demo_app    the application: places orders, queues events and emails (pgrelay_producer)
--   demo_relay  the Processor's login (pgrelay_processor)
--   demo_shop   owns the shop's tables and the SQL handler; a handler is SECURITY DEFINER and runs
--               with its owner's rights, so the Processor itself needs no rights on the tables
CREATE ROLE demo_app LOGIN IN ROLE pgrelay_producer;
CREATE ROLE demo_relay LOGIN IN ROLE pgrelay_processor;
CREATE ROLE demo_shop NOLOGIN;

-- The application's tables, made by their owner.
CREATE SCHEMA shop AUTHORIZATION demo_shop;
SET ROLE demo_shop;
CREATE TABLE shop.orders (
    order_id  integer PRIMARY KEY,
    customer  text NOT NULL,
    total     numeric(10, 2) NOT NULL,
    status    text NOT NULL DEFAULT 'placed',
    placed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE shop.order_audit (
    audit_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id   integer NOT NULL,
    note       text NOT NULL,
    handled_by name NOT NULL DEFAULT current_user,
    handled_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The handler of the SQL channel order_placed: pg_relay calls it with the event's payload, after
-- the producer's transaction committed, in a transaction of the Processor's own. SECURITY DEFINER
-- with a pinned search_path: it runs as demo_shop, whoever calls it.
CREATE FUNCTION shop.order_placed(payload text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = shop, pg_catalog AS $$
DECLARE
    id integer := (payload::jsonb ->> 'order_id')::integer;
    o orders;
BEGIN
    SELECT * INTO o FROM orders WHERE order_id = id FOR UPDATE;
    IF NOT FOUND THEN
        -- SQLSTATE PGSTP: retrying cannot help, fail the event at once (any other error is retried)
        RAISE EXCEPTION 'order % does not exist', id USING ERRCODE = 'PGSTP';
    END IF;
    UPDATE orders SET status = 'confirmed' WHERE order_id = id;
    INSERT INTO order_audit (order_id, note)
    VALUES (id, format('confirmed: %s, %s EUR', o.customer, o.total));
END
$$;
REVOKE EXECUTE ON FUNCTION shop.order_placed(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION shop.order_placed(text) TO pgrelay_processor;
GRANT USAGE ON SCHEMA shop TO demo_app, pgrelay_processor;
GRANT SELECT, INSERT ON shop.orders TO demo_app;
RESET ROLE;

-- A SQL channel: events of order_placed run shop.order_placed(payload).
SELECT channel, action_type, handler, max_attempts
FROM pgrelay.register('order_placed', 'sql', handler => 'shop.order_placed(text)');

-- An email profile (the local SMTP sink: plain SMTP, no TLS, no login) and a notify channel on it.
SELECT name, host, port, security, from_address
FROM pgrelay_notifier.create_profile('demo_sink',
        host         => '127.0.0.1',
        port         => :sink_port,
        security     => 'none',
        from_address => 'shop@example.com',
        from_name    => 'Example Shop');

SELECT channel, profile
FROM pgrelay_notifier.create_channel('shop_mail', 'demo_sink', max_attempts => 3);

-- A Microsoft Graph profile: the shop's Microsoft 365 mailbox sends through Graph, with an app
-- registration's client credentials (its secret stays in the Processor's environment). The real
-- service needs no URLs, CA or scope; here Graph and its token endpoint are a local fake
-- (test/fixtures/graphd.py) with a throwaway CA, so the profile names them.
SELECT name, transport, sender, graph_url
FROM pgrelay_notifier.create_profile('demo_m365', transport => 'graph',
        tenant_id     => 'contoso.onmicrosoft.com',
        client_id     => '6731de76-14a6-49ae-97bc-6eba6914391e',
        client_secret => 'env:DEMO_GRAPH_SECRET',
        sender        => 'shop@contoso.com',
        from_name     => 'Contoso Shop',
        login_url     => :'graph_url',
        graph_url     => :'graph_url',
        ca_file       => :'graph_ca',
        scope         => 'https://graph.microsoft.com/.default');

SELECT channel, profile
FROM pgrelay_notifier.create_channel('m365_mail', 'demo_m365', max_attempts => 3);

-- A webhook channel: every committed insert or update of shop.orders is POSTed, signed, to the
-- receiver. The signing key stays in the Processor's environment; the CA is the demo's own.
SELECT channel, url, signing
FROM pgrelay.register_webhook('order_events', :'hook_url',
        signing_secret => 'env:DEMO_HOOK_SECRET',
        headers        => '{"X-Shop": "example"}',
        ca_file        => :'graph_ca',
        timeout        => '10 seconds');
SELECT pgrelay.watch_table('shop.orders', 'order_events', operations => '{insert,update}',
                           columns => '{order_id,customer,total,status}') AS trigger;

-- A Redis stream fed by the same changes: a destination channel; its settings are one row of
-- pgrelay.destinations, checked by register().
SELECT channel, action_type
FROM pgrelay.register('order_stream', 'redis',
        settings => json_build_object('host', '127.0.0.1', 'port', :'redis_port'::integer,
                                      'stream', 'shop:orders', 'maxlen', 10000)::jsonb);
SELECT pgrelay.watch_table('shop.orders', 'order_stream', operations => '{insert,update}',
                           columns => '{order_id,customer,total,status}') AS trigger;
