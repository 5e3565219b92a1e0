-- address_error() and parse_mailbox(): the address rules of send()
\set SHOW_CONTEXT never
SET intervalstyle = postgres;

-- Tricky addresses, valid and invalid, in one query: error is NULL exactly for the valid ones.
-- Rules: RFC 5321 mailbox; local part a dot-atom or a quoted string of at most 64 octets; domain
-- of LDH labels (at most 63 each, 253 in all) with a dot and a non-numeric top-level label, or an
-- address literal; at most 254 octets; ASCII only (no SMTPUTF8). Shown: CR, LF, TAB as #.
SELECT n,
       CASE WHEN length(a) > 60 THEN left(a, 24) || '...' || right(a, 16) || ' (' || octet_length(a) || ' octets)'
            ELSE translate(a, E'\r\n\t', '###') END AS address,
       pgrelay_notifier.address_error(a) IS NULL AS valid,
       pgrelay_notifier.address_error(a) AS error
FROM (VALUES
    (1, 'simple@example.com'),
    (2, 'very.common@example.com'),
    (3, 'disposable.style.email.with+symbol@example.com'),
    (4, 'user.name+tag+sorting@example.com'),
    (5, 'x@example.com'),
    (6, 'a@b.co'),
    (7, 'UPPER.Case@EXAMPLE.COM'),
    (8, 'user@sub.domain.example.co.uk'),
    (9, 'user%example.com@example.org'),
    (10, 'mailhost!username@example.org'),
    (11, '#!$%&''*+-/=?^_`{}|~@example.org'),
    (12, '_______@example.com'),
    (13, '1234567890@example.com'),
    (14, 'user-@example.org'),
    (15, 'email@xn--bcher-kva.example'),
    (16, '"john..doe"@example.org'),
    (17, '" "@example.org'),
    (18, '"very.(),:;<>[]\".VERY.\"very@\\ \"very\".unusual"@strange.example.com'),
    (19, '"a@b"@example.com'),
    (20, 'user@[192.0.2.1]'),
    (21, 'user@[IPv6:2001:db8::1]'),
    (22, 'user@[IPv6:::ffff:192.0.2.1]'),
    (23, repeat('l', 64) || '@example.com'),
    (24, 'a@' || repeat('b', 63) || '.com'),
    (30, NULL),
    (31, ''),
    (32, 'plainaddress'),
    (33, '@example.com'),
    (34, 'user@'),
    (35, 'A@b@c@example.com'),
    (36, 'a"b(c)d,e:f;g<h>i[j\k]l@example.com'),
    (37, 'just"not"right@example.com'),
    (38, 'this is"not\allowed@example.com'),
    (39, 'user name@example.com'),
    (40, 'john..doe@example.com'),
    (41, '.john@example.com'),
    (42, 'john.@example.com'),
    (43, '""@example.com'),
    (44, '"unterminated@example.com'),
    (45, '"\"@example.com'),
    (46, repeat('l', 65) || '@example.com'),
    (47, repeat('l', 64) || '@' || repeat('b', 63) || '.' || repeat('c', 63) || '.' || repeat('d', 58) || '.com'),
    (48, 'user@example..com'),
    (49, 'user@.example.com'),
    (50, 'user@example.com.'),
    (51, 'user@-example.com'),
    (52, 'user@example-.com'),
    (53, 'user@exa_mple.com'),
    (54, 'user@' || repeat('b', 64) || '.com'),
    (55, 'user@localhost'),
    (56, 'user@192.168.1.1'),
    (57, 'user@[300.1.1.1]'),
    (58, 'user@[192.0.2.01]'),
    (59, 'user@[IPv6:2001:db8::zz]'),
    (60, 'user@[2001:db8::1]'),
    (61, 'user@[IPv6:::1'),
    (62, 'jöran@example.com'),
    (63, 'user@bücher.example'),
    (64, E'user@example.com\r\nBcc: victim@example.org'),
    (65, E'user\n@example.com'),
    (66, E'user@example.com\t'),
    (67, 'Ann <ann@example.com>'),
    (68, 'user@example.c_m')
) t(n, a)
ORDER BY n;

-- parse_mailbox: display names, quoted or not, UTF-8 allowed
SELECT m AS mailbox, (pgrelay_notifier.parse_mailbox(m)).*
FROM (VALUES ('ann@example.org'),
             ('  ann@example.org  '),
             ('Ann Example <ann@example.org>'),
             ('<ann@example.org>'),
             ('Ann < ann@example.org >'),
             ('"Doe, John" <john@example.org>'),
             ('"Ann \"The Admin\" Example" <ann@example.org>'),
             ('"" <ann@example.org>'),
             ('Jörg Müller <joerg@example.de>'),
             ('张伟 <zhang@example.cn>'),
             ('Quoted Local <"a b"@example.org>')) t(m);

-- parse_mailbox errors (error)
SELECT pgrelay_notifier.parse_mailbox('Ann "The Admin" Example <ann@example.org>');
SELECT pgrelay_notifier.parse_mailbox('"Ann <ann@example.org>');
SELECT pgrelay_notifier.parse_mailbox(E'Ann\r\nBcc: victim@example.org <ann@example.org>');
SELECT pgrelay_notifier.parse_mailbox(E'Ann\u2028Example <ann@example.org>');
SELECT pgrelay_notifier.parse_mailbox('Ann <ann@example.org');
SELECT pgrelay_notifier.parse_mailbox('Ann <>');
SELECT pgrelay_notifier.parse_mailbox('Ann <Bob <bob@example.org>>');
SELECT pgrelay_notifier.parse_mailbox(repeat('x', 257) || ' <ann@example.org>');
SELECT pgrelay_notifier.parse_mailbox('Ann <jöran@example.org>');
SELECT pgrelay_notifier.parse_mailbox(NULL);
