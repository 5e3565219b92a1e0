-- demo/produce.sql - what the application does (run by demo/run as the login role demo_app, a
-- member of pgrelay_producer). Each event and each email is queued inside the application's own
-- transaction: COMMIT guarantees it, ROLLBACK discards it with everything else.

\set ECHO queries
\pset footer off

\echo '-- Transaction 1: Ann places order 1001. Its event, its email and its webhook (a watched table) commit with it.'
BEGIN;
INSERT INTO shop.orders (order_id, customer, total) VALUES (1001, 'Ann Example', 42.50);
SELECT pgrelay.notify('order_placed', '{"order_id": 1001}') AS event_id;
SELECT pgrelay_notifier.send('shop_mail',
        "to"        => ARRAY['Ann Example <ann@example.org>'],
        subject     => 'Ihre Bestellung 1001 — vielen Dank! ✓',
        body_text   => E'Hallo Ann,\n\nwir haben Ihre Bestellung 1001 über 42,50 € erhalten.\n',
        body_html   => '<p>Hallo Ann,</p><p>wir haben Ihre Bestellung <b>1001</b> über 42,50 € erhalten.</p>',
        attachments => '[{"filename": "Rechnung 1001 – Bücher.txt",
                          "content_text": "Rechnung 1001\nBücher: 42,50 EUR\n"}]') AS notification_id;
COMMIT;

\echo '-- Transaction 2: order 1002 is rolled back. Its event, its email and its webhook vanish with it.'
BEGIN;
INSERT INTO shop.orders (order_id, customer, total) VALUES (1002, 'Carl Rollback', 9.99);
SELECT pgrelay.notify('order_placed', '{"order_id": 1002}') AS event_id;
SELECT pgrelay_notifier.send('shop_mail', ARRAY['carl@example.org'], 'Order 1002', 'Thank you, Carl.')
    AS notification_id;
ROLLBACK;

\echo '-- Transaction 3: Bob places order 1003. The email is copied to an address the SMTP server rejects.'
BEGIN;
INSERT INTO shop.orders (order_id, customer, total) VALUES (1003, 'Bob Builder', 17.00);
SELECT pgrelay.notify('order_placed', '{"order_id": 1003}') AS event_id;
SELECT pgrelay_notifier.send('shop_mail',
        "to"      => ARRAY['Bob Builder <bob@example.org>'],
        cc        => ARRAY['nobody@example.org'],
        subject   => 'Your order 1003',
        body_text => E'Hello Bob,\n\nthank you for your order 1003 (17.00 EUR).\n') AS notification_id;
COMMIT;

\echo '-- Transaction 4: a receipt for Ann from the shop''s Microsoft 365 mailbox, through Microsoft Graph.'
BEGIN;
SELECT pgrelay_notifier.send('m365_mail',
        "to"        => ARRAY['Ann Example <ann@example.org>'],
        subject     => 'Receipt for order 1001',
        body_html   => '<p>Thank you, Ann: we received <b>42.50 EUR</b>.</p>',
        headers     => '{"X-Order": "1001"}',
        attachments => '[{"filename": "receipt-1001.txt", "content_text": "Order 1001: 42.50 EUR paid\n"}]')
    AS notification_id;
COMMIT;

\echo '-- Transaction 5: an event whose handler will fail: there is no order 9999.'
SELECT pgrelay.notify('order_placed', '{"order_id": 9999}') AS event_id;
