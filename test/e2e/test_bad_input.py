"""The bad-input catalogue: every SQL entry point of both extensions and every Processor flag and
config key, fed NULLs, empty strings, huge values, wrong types, unknown names, injection attempts,
out-of-range durations and counts, and invisible or control characters in whatever becomes a mail
header or a display name. Each case must fail with its SQLSTATE and a clear one-line message (or,
where the documentation says so, return the documented result) and change nothing: every table of
both schemas hashes the same before and after it. A Processor given a bad flag or config line exits
2 with one line and never touches the queue.

Coverage is checked against the catalog and against the Processor's own --help and
--sample-config, so an entry point, flag or key added later without cases here fails the test
with what to add where."""
import os
import re
import subprocess
from collections import namedtuple

import psycopg
import pytest
from psycopg.types.json import Jsonb

import testlib

SCHEMAS = ("pgrelay", "pgrelay_notifier")
# What no error message may contain: a line break or another control character, or an invisible
# formatting character (bidirectional override, zero-width space, byte order mark, ...).
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064"
                    "\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]")
CONTROLS = {"CR LF": "\r\n", "LF": "\n", "TAB": "\t", "NEL": "\u0085", "U+2028": "\u2028", "U+2029": "\u2029",
            "RLO": "\u202e", "LRI": "\u2066", "ZWSP": "\u200b", "BOM": "\ufeff", "RLM": "\u200f",
            "word joiner": "\u2060", "tag": "\U000e0041", "DEL": "\x7f", "ESC": "\x1b"}

Case = namedtuple("Case", "fn role sql params expect")
# expect: ("error", SQLSTATE, text the message holds) or ("result", value or callable)


def err(state, text):
    return ("error", state, text)


def result(value):
    return ("result", value)


CASES = []


def case(fn, role, sql, params=(), expect=None):
    CASES.append(Case(fn, role, sql, tuple(params), expect))


# ---- pgrelay, producers ---------------------------------------------------------------------

N = "pgrelay.notify"
case(N, "producer", "SELECT pgrelay.notify(NULL, 'x')", (), err("22004", "channel must not be NULL"))
case(N, "producer", "SELECT pgrelay.notify('c_sql', NULL)", (), err("22004", "payload must not be NULL"))
case(N, "producer", "SELECT pgrelay.notify('', 'x')", (), err("42704", 'channel "" does not exist'))
case(N, "producer", "SELECT pgrelay.notify('nope', 'x')", (), err("42704", 'channel "nope" does not exist'))
for inj in ["c_sql'; DROP TABLE pgrelay.queue; --", 'c_sql" OR 1=1 --', "%I%s%L", "c_sql/..",
            "C_SQL", " c_sql"]:
    case(N, "producer", "SELECT pgrelay.notify(%s, 'x')", (inj,), err("42704", "does not exist"))
for label, ch in CONTROLS.items():
    case(N, "producer", "SELECT pgrelay.notify(%s, 'x')", ("c_sql" + ch,), err("42704", "does not exist"))
case(N, "producer", "SELECT pgrelay.notify('c_off', 'x')", (), err("55000", 'channel "c_off" is not active'))
case(N, "producer", "SELECT pgrelay.notify('c_tiny', %s)", ("x" * 11,),
     err("54000", 'payload of 11 bytes is larger than the 10 bytes channel "c_tiny" accepts'))
case(N, "producer", "SELECT pgrelay.notify('c_tiny', %s)", ("é" * 6,), err("54000", "payload of 12 bytes"))
case(N, "producer", "SELECT pgrelay.notify('c_sql', %s)", ("x" * 1048577,), err("54000", "1048577 bytes"))
case(N, "producer", "SELECT pgrelay.notify('c_sql', 'x', 'infinity')", (), err("22023", "run_at must be a finite time"))
case(N, "producer", "SELECT pgrelay.notify('c_sql', 'x', '-infinity')", (), err("22023", "run_at must be a finite time"))
case(N, "producer", "SELECT pgrelay.notify('c_sql', 'x', 'next tuesday')", (), err("22007", "invalid input syntax"))
case(N, "producer", "SELECT pgrelay.notify('c_sql', 'x', '294277-01-01')", (), err("22008", "out of range"))
case(N, "producer", "SELECT pgrelay.notify('c_sql', 'x', 42)", (), err("42883", "does not exist"))
case(N, "producer", "SELECT pgrelay.notify('c_sql')", (), err("42883", "does not exist"))
case(N, "producer", "SELECT pgrelay.notify(channel => 'c_sql', payload => 'x', priority => 1)", (),
     err("42883", "does not exist"))
# keys: checked before anything is queued, and the channel's own checks apply to a keyed event
for k in ("", "k" * 513, "é" * 257, "😀" * 128 + "k"):
    case(N, "producer", "SELECT pgrelay.notify('c_sql', 'x', key => %s)", (k,), err("22023", "must be 1 to 512 bytes"))
for label in ("LF", "RLO", "ZWSP", "BOM", "tag", "DEL"):
    case(N, "producer", "SELECT pgrelay.notify('c_sql', 'x', key => %s)", ("k" + CONTROLS[label],),
         err("22023", "without control or invisible characters"))
for mode in (None, "", "KEEP", "preserve_run_at", "keep'; --"):
    case(N, "producer", "SELECT pgrelay.notify('c_sql', 'x', key => 'k', key_mode => %s)", (mode,),
         err("22023", "key_mode must be keep, replace or debounce"))
case(N, "producer", "SELECT pgrelay.notify('nope', 'x', key => 'k')", (), err("42704", 'channel "nope" does not exist'))
case(N, "producer", "SELECT pgrelay.notify('c_off', 'x', key => 'k')", (), err("55000", "is not active"))
case(N, "producer", "SELECT pgrelay.notify('c_tiny', %s, key => 'k')", ("x" * 11,), err("54000", "larger than the 10 bytes"))
case(N, "producer", "SELECT pgrelay.notify('c_sql', 'x', 'infinity', key => 'k')", (), err("22023", "run_at must be a finite time"))
case(N, "producer", "SELECT pgrelay.notify('c_sql', NULL, key => 'k')", (), err("22004", "payload must not be NULL"))
# a key is its producer's: another producer's call with it is refused in every mode, naming no payload
for mode in ("keep", "replace", "debounce"):
    case(N, "producer2", "SELECT pgrelay.notify('c_sql', 'x', '9999-12-31', key => 'held', key_mode => %s)", (mode,),
         err("42501", 'key "held" of channel "c_sql" is held by an event another role queued'))
# an email channel's payload is a notification id: 1 to 19 digits within bigint, nothing else
for p in ("not-a-number", "", " 42", "42 ", "-1", "+1", "1e3", "9223372036854775808", "1" * 20, "４２",
          "1); ALTER ROLE prod SUPERUSER; SELECT (1", "42" + CONTROLS["LF"]):
    case(N, "producer", "SELECT pgrelay.notify('c_mail', %s)", (p,), err("22023", 'of channel "c_mail" must be a notification id'))
case(N, "producer", "SELECT pgrelay.notify('c_mail', 'x', now() + interval '1 day')", (),
     err("22023", 'the payload of channel "c_mail" must be a notification id'))
case(N, "producer", "SELECT pgrelay.notify('c_mail', 'x', key => 'k')", (),
     err("22023", 'the payload of channel "c_mail" must be a notification id'))
NM = "pgrelay.notify_many"
case(NM, "producer", "SELECT pgrelay.notify_many(NULL, ARRAY['x'])", (), err("22004", "channel must not be NULL"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_sql', NULL)", (), err("22004", "payloads must not be NULL"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_sql', ARRAY['x', NULL])", (), err("22004", "nor hold a NULL"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_sql', ARRAY[['x'], ['y']])", (), err("2202E", "one-dimensional"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_sql', ARRAY[]::text[])", (), result([]))
case(NM, "producer", "SELECT pgrelay.notify_many('nope', ARRAY['x'])", (), err("42704", 'channel "nope" does not exist'))
case(NM, "producer", "SELECT pgrelay.notify_many(%s, ARRAY['x'])", ("c_sql'; DROP TABLE pgrelay.queue; --",),
     err("42704", "does not exist"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_off', ARRAY['x'])", (), err("55000", "is not active"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_tiny', ARRAY['ok', %s])", ("x" * 11,),
     err("54000", "payload 2 of 11 bytes is larger than the 10 bytes"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_tiny', ('[0:1]={{ok,' || %s || '}}')::text[])", ("x" * 11,),
     err("54000", "payload 2 of 11 bytes is larger than the 10 bytes"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_sql', ARRAY['x', 'y'], keys => ARRAY[['a'], ['b']])", (),
     err("2202E", "keys must be a one-dimensional array"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_sql', ARRAY['x'], 'infinity')", (), err("22023", "run_at must be a finite time"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_sql', ARRAY['x', 'y'], keys => ARRAY['k'])", (),
     err("22023", "keys must have one element per payload (1 keys, 2 payloads)"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_sql', ARRAY['x', 'y'], keys => ARRAY['k', ''])", (),
     err("22023", "must be 1 to 512 bytes"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_sql', ARRAY['x'], keys => ARRAY['k'], key_mode => 'merge')", (),
     err("22023", "key_mode must be keep, replace or debounce"))
case(NM, "producer", "SELECT pgrelay.notify_many('c_sql', 'x')", (), err("22P02", "malformed array literal"))
case(NM, "producer2", "SELECT pgrelay.notify_many('c_sql', ARRAY['x'], keys => ARRAY['held'])", (),
     err("42501", 'key "held" of channel "c_sql" is held by an event another role queued'))
case(NM, "producer", "SELECT pgrelay.notify_many('c_mail', ARRAY['1', 'not-a-number'])", (),
     err("22023", 'payload 2 of channel "c_mail" must be a notification id'))
case(NM, "producer", "SELECT pgrelay.notify_many('c_mail', ARRAY['1', 'x'], keys => ARRAY['a', 'b'])", (),
     err("22023", 'payload 2 of channel "c_mail" must be a notification id'))

# ---- pgrelay, topics (SETUP: t_orders <- c_sql {order.*}, c_tiny {order.big}; t_off <- c_off, which is
# inactive; t_empty without a subscriber)

PB = "pgrelay.publish"
case(PB, "producer", "SELECT pgrelay.publish(NULL, 'x')", (), err("22004", "topic must not be NULL"))
case(PB, "producer", "SELECT pgrelay.publish('t_orders', NULL)", (), err("22004", "payload must not be NULL"))
case(PB, "producer", "SELECT pgrelay.publish('nope', 'x')", (), err("42704", 'topic "nope" does not exist'))
for inj in ["t_orders'; DROP TABLE pgrelay.queue; --", "%I%s%L", "t_orders" + CONTROLS["RLO"]]:
    case(PB, "producer", "SELECT pgrelay.publish(%s, 'x')", (inj,), err("42704", "does not exist"))
for et in ["", "order*", "order created", "x" * 129, "order" + CONTROLS["LF"]]:
    case(PB, "producer", "SELECT pgrelay.publish('t_orders', 'x', %s)", (et,), err("42602", "invalid event type"))
case(PB, "producer", "SELECT pgrelay.publish('t_orders', 'x', 'order.new', 'infinity')", (),
     err("22023", "run_at must be a finite time"))
case(PB, "producer", "SELECT pgrelay.publish('t_empty', 'x')", (), err("55000", 'topic "t_empty" has no subscriber'))
case(PB, "producer", "SELECT pgrelay.publish('t_orders', 'x', 'refund')", (),
     err("55000", 'topic "t_orders" has no subscriber for event type "refund"'))
case(PB, "producer", "SELECT pgrelay.publish('t_orders', 'x')", (),
     err("55000", 'has no subscriber for a publication without an event type'))
case(PB, "producer", "SELECT pgrelay.publish('t_orders', %s, 'order.big')", ("x" * 11,),
     err("54000", 'publication on topic "t_orders" refused: payload of 11 bytes is larger than the 10 bytes channel "c_tiny"'))
case(PB, "producer", "SELECT pgrelay.publish('t_off', 'x')", (),
     err("55000", 'publication on topic "t_off" refused: channel "c_off" is not active'))
case(PB, "producer", "SELECT pgrelay.publish('t_orders')", (), err("42883", "does not exist"))
case(PB, "producer", "SELECT pgrelay.publish('t_orders', 'x', run_at => 'next tuesday')", (), err("22007", "invalid input syntax"))
for key in ["", "k" * 513, "a" + CONTROLS["LF"] + "b", "k" + CONTROLS["RLO"]]:
    case(PB, "producer", "SELECT pgrelay.publish('t_orders', 'x', 'order.new', key => %s)", (key,),
         err("22023", "must be 1 to 512 bytes"))
for mode in ["merge", None, "KEEP"]:
    case(PB, "producer", "SELECT pgrelay.publish('t_orders', 'x', 'order.new', key => 'k', key_mode => %s)", (mode,),
         err("22023", "key_mode must be keep, replace or debounce"))
case(PB, "producer2", "SELECT pgrelay.publish('t_orders', 'x', 'order.new', key => 'held')", (),
     err("42501", 'key "held" of channel "c_sql" is held by an event another role queued'))
case(PB, "producer", "SELECT pgrelay.publish('t_orders', %s, 'order.big', key => 'k')", ("x" * 11,),
     err("54000", 'publication on topic "t_orders" refused: payload of 11 bytes is larger than the 10 bytes channel "c_tiny"'))
case(PB, "producer", "SELECT pgrelay.publish('t_empty', 'x', key => 'k')", (),
     err("55000", 'topic "t_empty" has no subscriber'))
PBM = "pgrelay.publish_many"
case(PBM, "producer", "SELECT pgrelay.publish_many(NULL, ARRAY['x'])", (), err("22004", "topic must not be NULL"))
case(PBM, "producer", "SELECT pgrelay.publish_many('t_orders', NULL)", (), err("22004", "payloads must not be NULL"))
case(PBM, "producer", "SELECT pgrelay.publish_many('t_orders', ARRAY['x', NULL], 'order.new')", (),
     err("22004", "nor hold a NULL"))
case(PBM, "producer", "SELECT pgrelay.publish_many('t_orders', ARRAY[['x'], ['y']])", (), err("2202E", "one-dimensional"))
case(PBM, "producer", "SELECT pgrelay.publish_many('t_orders', ARRAY[]::text[])", (), result([]))
case(PBM, "producer", "SELECT pgrelay.publish_many('nope', ARRAY['x'])", (), err("42704", 'topic "nope" does not exist'))
case(PBM, "producer", "SELECT pgrelay.publish_many(%s, ARRAY['x'])", ("t_orders'; DROP TABLE pgrelay.queue; --",),
     err("42704", "does not exist"))
for et in ["", "order created", "x" * 129, "order" + CONTROLS["LF"]]:
    case(PBM, "producer", "SELECT pgrelay.publish_many('t_orders', ARRAY['x'], %s)", (et,), err("42602", "invalid event type"))
case(PBM, "producer", "SELECT pgrelay.publish_many('t_orders', ARRAY['x'], 'order.new', 'infinity')", (),
     err("22023", "run_at must be a finite time"))
case(PBM, "producer", "SELECT pgrelay.publish_many('t_empty', ARRAY['x'])", (), err("55000", 'topic "t_empty" has no subscriber'))
case(PBM, "producer", "SELECT pgrelay.publish_many('t_orders', ARRAY['ok', %s], 'order.big')", ("x" * 11,),
     err("54000", 'publication on topic "t_orders" refused: payload of 11 bytes is larger than the 10 bytes channel "c_tiny"'))
case(PBM, "producer", "SELECT pgrelay.publish_many('t_off', ARRAY['x'])", (),
     err("55000", 'publication on topic "t_off" refused: channel "c_off" is not active'))
case(PBM, "producer", "SELECT pgrelay.publish_many('t_orders', 'x')", (), err("22P02", "malformed array literal"))

CT = "pgrelay.create_topic"
case(CT, "admin", "SELECT pgrelay.create_topic(NULL)", (), err("22004", "topic must not be NULL"))
case(CT, "admin", "SELECT pgrelay.create_topic('')", (), err("42602", 'invalid topic name ""'))
case(CT, "admin", "SELECT pgrelay.create_topic(%s)", ("t" * 129,), err("42602", "invalid topic name"))
for inj in ["t'; DROP TABLE pgrelay.queue; --", "%I%s%L", "has space"]:
    case(CT, "admin", "SELECT pgrelay.create_topic(%s)", (inj,), err("42602", "invalid topic name"))
for label in ("CR LF", "RLO", "ZWSP", "BOM"):
    case(CT, "admin", "SELECT pgrelay.create_topic(%s)", ("t" + CONTROLS[label] + "x",), err("42602", "invalid topic name"))

DT = "pgrelay.drop_topic"
case(DT, "admin", "SELECT pgrelay.drop_topic(NULL)", (), err("22004", "topic must not be NULL"))
case(DT, "admin", "SELECT pgrelay.drop_topic('nope')", (), err("42704", 'topic "nope" does not exist'))
case(DT, "admin", "SELECT pgrelay.drop_topic(%s)", ("t_orders'; --",), err("42704", "does not exist"))

SB = "pgrelay.subscribe"
case(SB, "admin", "SELECT pgrelay.subscribe(NULL, 'c_sql')", (), err("22004", "topic must not be NULL"))
case(SB, "admin", "SELECT pgrelay.subscribe('t_orders', NULL)", (), err("22004", "channel must not be NULL"))
case(SB, "admin", "SELECT pgrelay.subscribe('nope', 'c_sql')", (), err("42704", 'topic "nope" does not exist'))
case(SB, "admin", "SELECT pgrelay.subscribe('t_orders', 'nope')", (), err("42704", 'channel "nope" does not exist'))
case(SB, "admin", "SELECT pgrelay.subscribe('t_orders', %s)", ("c_sql'; DROP TABLE pgrelay.queue; --",),
     err("42704", "does not exist"))
case(SB, "admin", "SELECT pgrelay.subscribe('t_orders', 'c_mail')", (),
     err("42809", 'channel "c_mail" sends email and cannot subscribe to a topic'))
case(SB, "admin", "SELECT pgrelay.subscribe('t_orders', 'c_hook', ARRAY[]::text[])", (), err("22023", "event_types must not be empty"))
case(SB, "admin", "SELECT pgrelay.subscribe('t_orders', 'c_hook', ARRAY['a', NULL])", (),
     err("22004", "event_types must not hold a NULL"))
case(SB, "admin", "SELECT pgrelay.subscribe('t_orders', 'c_hook', ARRAY[['a'], ['b']])", (),
     err("2202E", "event_types must be a one-dimensional array"))
for et in ["", "a b", "order.*.x", "**", "x" * 129, "a" + CONTROLS["U+2028"]]:
    case(SB, "admin", "SELECT pgrelay.subscribe('t_orders', 'c_hook', ARRAY[%s])", (et,), err("42602", "invalid event type"))
case(SB, "admin", "SELECT pgrelay.subscribe('t_orders', 'c_hook', 'order.*')", (), err("22P02", "malformed array literal"))

US = "pgrelay.unsubscribe"
case(US, "admin", "SELECT pgrelay.unsubscribe(NULL, 'c_sql')", (), err("22004", "topic must not be NULL"))
case(US, "admin", "SELECT pgrelay.unsubscribe('t_orders', NULL)", (), err("22004", "channel must not be NULL"))
case(US, "admin", "SELECT pgrelay.unsubscribe('t_orders', 'c_hook')", (),
     err("42704", 'channel "c_hook" is not subscribed to topic "t_orders"'))
case(US, "admin", "SELECT pgrelay.unsubscribe('nope', %s)", ("c_sql" + CONTROLS["RLO"],),
     err("42704", "is not subscribed to topic"))

# ---- pgrelay, admin ------------------------------------------------------------------------

R = "pgrelay.register"
case(R, "admin", "SELECT pgrelay.register(NULL, 'sql', handler => 'public.h_ok(text)')", (),
     err("22004", "channel must not be NULL"))
for name in ["", "has space", "x" * 129, "a'b", "x;DROP TABLE pgrelay.queue", "%I", "a\"b", "a@b", "a*b", "ünï\u202e"]:
    case(R, "admin", "SELECT pgrelay.register(%s, 'sql', handler => 'public.h_ok(text)')", (name,),
         err("42602", "invalid channel name"))
for label in ("LF", "RLO", "ZWSP", "U+2028", "BOM", "tag"):
    case(R, "admin", "SELECT pgrelay.register(%s, 'sql', handler => 'public.h_ok(text)')",
         ("new" + CONTROLS[label],), err("42602", "invalid channel name"))
case(R, "admin", "SELECT pgrelay.register('new_one')", (), err("22004", "give its action_type to create it"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'redis')", (), err("22004", "a redis channel needs its settings"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'redis', settings => '{{\"host\": 7}}')", (),
     err("22023", 'redis setting "host" must be a string'))
case(R, "admin", "SELECT pgrelay.register('new_one', 'redis', settings => 'null')", (),
     err("22023", "the settings must be a JSON object"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'redis', settings => '{{\"host\": \"h\", \"password\": \"pw\"}}')",
     (), err("22023", "must be a secret reference"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'kafka', settings => '{{\"brokers\": \"k:9092\", \"acks\": 1}}')",
     (), err("22023", 'unknown kafka setting "acks"'))
case(R, "admin", "SELECT pgrelay.register('new_one', 'kafka', settings => '{{\"brokers\": \"k:9092\", \"key\": \"field\"}}')",
     (), err("22023", '"key_field" goes with "key": "field"'))
case(R, "admin", "SELECT pgrelay.register('new_one', 'kafka', settings => '{{\"brokers\": \"k\"}}')",
     (), err("22023", 'kafka setting "brokers" must be a list of host:port'))
case(R, "admin", "SELECT pgrelay.register('new_one', 'rabbitmq', settings => '{{\"host\": \"h\", \"queue\": \"q\"}}')",
     (), err("22023", 'unknown rabbitmq setting "queue"'))
case(R, "admin", "SELECT pgrelay.register('new_one', 'rabbitmq', settings => '{{\"host\": \"h\", \"mandatory\": 1}}')",
     (), err("22023", 'rabbitmq setting "mandatory" must be true or false'))
case(R, "admin", "SELECT pgrelay.register('new_one', 'rabbitmq', settings => '{{\"host\": \"h\", \"password\": \"pw\"}}')",
     (), err("22023", "must be a secret reference"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'carrier_pigeon')", (),
     err("42704", 'action type "carrier_pigeon" does not exist'))
case(R, "admin", "SELECT pgrelay.register('new_one', 'webhook')", (),
     err("22023", 'channel "new_one": a webhook channel needs an endpoint'))
case(R, "admin", "SELECT pgrelay.register('c_tiny', 'webhook')", (),
     err("22023", 'channel "c_tiny": a webhook channel needs an endpoint'))
case(R, "admin", "SELECT pgrelay.register('new_one', 'sql')", (), err("22004", "a sql channel needs a handler"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'sql', handler => 'public.h_int(integer)')", (),
     err("42P13", "must be a function taking one text argument"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'sql', handler => 'upper(text)')", (),
     err("42501", "is a system function"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'sql', handler => 'public.h_invoker(text)')", (),
     err("42501", "must be SECURITY DEFINER"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'sql', handler => 'public.h_private(text)')", (),
     err("42501", "is not executable by role pgrelay_processor"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'sql', handler => 'public.h_adminless(text)')", (),
     err("42501", "who registers it"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'sql', handler => 'public.nope(text)')", (),
     err("42883", "does not exist"))
# a handler that is no signature: how to write one, never an echo of what was given
for h in ("public.h_ok(text); DROP TABLE x", "public.h_ok", "", "two words(text)", "h_ok(text" + CONTROLS["LF"]):
    case(R, "admin", "SELECT pgrelay.register('new_one', 'sql', handler => %s)", (h,),
         err("22023", "handler must name a function with its argument types, such as 'app.order_placed(text)'"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'sql', handler => '-')", (), err("42883", "handler - does not exist"))
# the cast's own error, whose wording PostgreSQL 17 changed
case(R, "admin", "SELECT pgrelay.register('new_one', 'sql', handler => 'nowhere.h_ok(text)')", (),
     err("3F000", 'schema "nowhere" does not exist') if int(testlib.pg_major()) < 17
     else err("42883", 'function "nowhere.h_ok(text)" does not exist'))
case(R, "admin", "SELECT pgrelay.register('new_one', 'sql', handler => 'public.h_ok(nosuchtype)')", (),
     err("42704", 'type "nosuchtype" does not exist'))
# register() once the handler is looked up: what it refuses, register() refuses
RI = "pgrelay._register"
case(RI, "admin", "SELECT pgrelay._register(NULL, 'sql', 'public.h_ok(text)')", (), err("22004", "channel must not be NULL"))
case(RI, "admin", "SELECT pgrelay._register('new_one', 'sql', 'public.h_invoker(text)')", (),
     err("42501", "must be SECURITY DEFINER"))
case(RI, "admin", "SELECT pgrelay._register('new_one', 'sql', 'public.h_ok')", (), err("22P02", "expected a left parenthesis"))
case(RI, "admin", "SELECT pgrelay._register('new_one', 'sql', 0)", (), err("42883", "handler - does not exist"))
case(RI, "producer", "SELECT pgrelay._register('new_one', 'sql', 'public.h_ok(text)')", (), err("42501", "permission denied"))
case(R, "admin", "SELECT pgrelay.register('new_one', 'notify', handler => 'public.h_ok(text)')", (),
     err("22023", "notify channels take no handler"))
case(R, "admin", "SELECT pgrelay.register('c_sql', concurrency_mode => 'serial')", (),
     err("22023", 'invalid concurrency_mode "serial"'))
case(R, "admin", "SELECT pgrelay.register('c_mail', batch => true)", (),
     err("22023", 'channel "c_mail": notify channels finish one event per transaction; batch applies to sql channels'))
case(R, "admin", "SELECT pgrelay.register('c_hook', batch => true)", (),
     err("22023", 'channel "c_hook": webhook channels finish one event per transaction; batch applies to sql channels'))
case(R, "admin", "SELECT pgrelay.register('c_sql', batch => 'perhaps')", (), err("22P02", "invalid input syntax for type boolean"))
case(R, "admin", "SELECT pgrelay.register('c_sql', retry_policy => 'sometimes')", (),
     err("22023", 'invalid retry_policy "sometimes"'))
for v in (0, -1, 1001, 2147483647):
    case(R, "admin", "SELECT pgrelay.register('c_sql', max_attempts => %s)", (v,),
         err("22023", "max_attempts must be between 1 and 1000"))
case(R, "admin", "SELECT pgrelay.register('c_sql', max_attempts => 'many')", (), err("22P02", "invalid input syntax"))
case(R, "admin", "SELECT pgrelay.register('c_sql', max_attempts => 99999999999)", (), err("42883", "does not exist"))
for v in ("0", "0.4 ms", "-1 second", "25 hours", "1000 years", "1 year -359 days"):
    case(R, "admin", "SELECT pgrelay.register('c_sql', timeout => %s)", (v,),
         err("22023", "timeout must be between 1 millisecond and 24 hours"))
case(R, "admin", "SELECT pgrelay.register('c_sql', timeout => 'forever')", (), err("22007", "invalid input syntax"))
for v in ("0", "-5 s", "2 days", "1 year -359 days"):
    case(R, "admin", "SELECT pgrelay.register('c_sql', backoff_base => %s)", (v,),
         err("22023", "backoff_base must be between 1 millisecond and 1 day"))
case(R, "admin", "SELECT pgrelay.register('c_sql', backoff_base => '1 minute', backoff_max => '1 second')", (),
     err("22023", "must not be less than backoff_base"))
case(R, "admin", "SELECT pgrelay.register('c_sql', backoff_max => '31 days')", (),
     err("22023", "backoff_max must be at most 30 days"))
case(R, "admin", "SELECT pgrelay.register('c_sql', backoff_max => '10000 years -3599999 days')", (),
     err("22023", "backoff_max must be at most 30 days"))
case(R, "admin", "SELECT pgrelay.register('c_sql', shared_keys => 'sometimes')", (), err("22P02", "invalid input syntax"))
for v in (0, -1, 104857601):
    case(R, "admin", "SELECT pgrelay.register('c_sql', max_payload_bytes => %s)", (v,),
         err("22023", "max_payload_bytes must be between 1 and 104857600"))
case(R, "admin", "SELECT pgrelay.register('c_busy', 'notify')", (),
     err("55006", 'channel "c_busy" still has 1 queued event(s); its action type cannot change'))
case(R, "admin", "SELECT pgrelay.register('c_sql', active => 'perhaps')", (), err("22P02", "invalid input syntax"))
case(R, "admin", "SELECT pgrelay.register('c_sql', node => 3)", (), err("42883", "does not exist"))

U = "pgrelay.unregister"
case(U, "admin", "SELECT pgrelay.unregister(NULL)", (), err("42704", "does not exist"))
case(U, "admin", "SELECT pgrelay.unregister('nope')", (), err("42704", 'channel "nope" does not exist'))
case(U, "admin", "SELECT pgrelay.unregister(%s)", ("c_sql' OR '1'='1",), err("42704", "does not exist"))
case(U, "admin", "SELECT pgrelay.unregister(%s)", ("c_sql\u200b",), err("42704", "does not exist"))
case(U, "admin", "SELECT pgrelay.unregister('c_busy')", (), err("55006", 'channel "c_busy" still has 1 queued event(s)'))

for fn in ("pause", "resume"):
    case("pgrelay." + fn, "admin", "SELECT pgrelay.%s('nope')" % fn, (), err("42704", 'channel "nope" does not exist'))
    case("pgrelay." + fn, "admin", "SELECT pgrelay.%s(%%s)" % fn, ("c_sql%",), err("42704", "does not exist"))
    case("pgrelay." + fn, "admin", "SELECT pgrelay.%s(%%s)" % fn, ("c_sql\u202e",), err("42704", "does not exist"))
    case("pgrelay." + fn, "admin", "SELECT pgrelay.%s(1, 2)" % fn, (), err("42883", "does not exist"))

case("pgrelay.request_reload", "admin", "SELECT pgrelay.request_reload(1)", (), err("42883", "does not exist"))
case("pgrelay.request_reload", "admin", "SELECT pgrelay.request_reload('everything')", (), err("42883", "does not exist"))

RB = "pgrelay.retry_failed(bigint)"
case(RB, "admin", "SELECT pgrelay.retry_failed(NULL::bigint)", (), err("22004", "event_id must not be NULL"))
case(RB, "admin", "SELECT pgrelay.retry_failed(-1)", (), err("P0002", "event -1 is not in pgrelay.failed"))
case(RB, "admin", "SELECT pgrelay.retry_failed(9223372036854775807)", (), err("P0002", "is not in pgrelay.failed"))
case(RB, "admin", "SELECT pgrelay.retry_failed(9223372036854775808)", (), err("42883", "does not exist"))
RT = "pgrelay.retry_failed(text, timestamp with time zone, timestamp with time zone, text, boolean)"
case(RT, "admin", "SELECT pgrelay.retry_failed('nope')", (), err("42704", 'channel "nope" does not exist'))
case(RT, "admin", "SELECT pgrelay.retry_failed(%s)", ("' OR 1=1 --",), err("42704", "does not exist"))
# a NULL or an event id typed as a string never means every channel
case(RT, "admin", "SELECT pgrelay.retry_failed(NULL)", (), err("22004", "channel must not be NULL"))
case(RT, "admin", "SELECT pgrelay.retry_failed(%s)", (None,), err("22004", "channel must not be NULL"))
case(RT, "admin", "SELECT pgrelay.retry_failed('123')", (), err("42704", 'channel "123" does not exist'))
case(RT, "admin", "SELECT pgrelay.retry_failed('c_sql', all_channels => true)", (), err("22023", "not both"))
case(RT, "admin", "SELECT pgrelay.retry_failed('c_sql', all_channels => NULL)", (), err("22004", "all_channels must not be NULL"))
case(RT, "admin", "SELECT pgrelay.retry_failed('c_sql', error_like => %s)", ("%'; DELETE FROM pgrelay.queue; --",), result(0))
case(RT, "admin", "SELECT pgrelay.retry_failed('c_sql', failed_after => now(), failed_before => now() - interval '1 day')",
     (), result(0))
case(RT, "admin", "SELECT pgrelay.retry_failed('c_sql', failed_after => 'yesterday-ish')", (), err("22007", "invalid input syntax"))
DB = "pgrelay.discard_failed(bigint)"
case(DB, "admin", "SELECT pgrelay.discard_failed(NULL::bigint)", (), err("22004", "event_id must not be NULL"))
case(DB, "admin", "SELECT pgrelay.discard_failed(0)", (), err("P0002", "event 0 is not in pgrelay.failed"))
DT = "pgrelay.discard_failed(text, timestamp with time zone, timestamp with time zone, text, boolean)"
case(DT, "admin", "SELECT pgrelay.discard_failed('nope')", (), err("42704", 'channel "nope" does not exist'))
case(DT, "admin", "SELECT pgrelay.discard_failed(NULL)", (), err("22004", "channel must not be NULL"))
case(DT, "admin", "SELECT pgrelay.discard_failed(NULL::text, error_like => '%%')", (), err("22004", "channel must not be NULL"))
case(DT, "admin", "SELECT pgrelay.discard_failed('42')", (), err("42704", 'channel "42" does not exist'))
case(DT, "admin", "SELECT pgrelay.discard_failed(NULL, all_channels => NULL)", (), err("22004", "all_channels must not be NULL"))
case(DT, "admin", "SELECT pgrelay.discard_failed(%s, error_like => %s)", ("c_sql", "_%'); TRUNCATE pgrelay.log; --"), result(0))
case(DT, "admin", "SELECT pgrelay.discard_failed('c_sql', failed_before => '294277-01-01')", (),
     err("22008", "out of range"))
CB = "pgrelay.cancel(bigint)"
case(CB, "admin", "SELECT pgrelay.cancel(NULL::bigint)", (), err("22004", "event_id must not be NULL"))
case(CB, "admin", "SELECT pgrelay.cancel(0)", (), err("P0002", "event 0 does not exist"))
case(CB, "admin", "SELECT pgrelay.cancel(9223372036854775807)", (), err("P0002", "does not exist"))
case(CB, "admin", "SELECT pgrelay.cancel({ev_q})", (), err("42809", "sends an email; cancel its notification instead"))
CT = "pgrelay.cancel(text, text, timestamp with time zone, timestamp with time zone, boolean)"
case(CT, "admin", "SELECT pgrelay.cancel(NULL::text)", (), err("22004", "channel must not be NULL"))
case(CT, "admin", "SELECT pgrelay.cancel('nope')", (), err("42704", 'channel "nope" does not exist'))
case(CT, "admin", "SELECT pgrelay.cancel('42')", (), err("42704", 'channel "42" does not exist'))
case(CT, "admin", "SELECT pgrelay.cancel(%s)", ("c_sql' OR true --",), err("42704", "does not exist"))
case(CT, "admin", "SELECT pgrelay.cancel('c_mail')", (), err("42809", "sends emails"))
case(CT, "admin", "SELECT pgrelay.cancel('c_sql', all_channels => true)", (), err("22023", "not both"))
case(CT, "admin", "SELECT pgrelay.cancel(NULL, all_channels => NULL)", (), err("22004", "all_channels must not be NULL"))
case(CT, "admin", "SELECT pgrelay.cancel('c_sql', key => 'no such key')", (), result(0))
case(CT, "admin", "SELECT pgrelay.cancel('c_sql', key => %s)", ("%",), result(0))
case(CT, "admin", "SELECT pgrelay.cancel('c_sql', queued_after => now(), queued_before => now() - interval '1 day')", (),
     err("22023", "must be before queued_before"))
case(CT, "admin", "SELECT pgrelay.cancel('c_sql', queued_before => 'soonish')", (), err("22007", "invalid input syntax"))

W_T = "pgrelay.watch_table"
case(W_T, "admin", "SELECT pgrelay.watch_table(NULL, 'c_sql')", (), err("22004", "table and channel must not be NULL"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', NULL)", (), err("22004", "must not be NULL"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.nope', 'c_sql')", (), err("42P01", 'relation "public.nope" does not exist'))
case(W_T, "admin", "SELECT pgrelay.watch_table(424242, 'c_sql')", (), err("42P01", "relation with OID 424242 does not exist"))
case(W_T, "admin", "SELECT pgrelay.watch_table(%s, 'c_sql')", ("public.w_tab; DROP TABLE public.w_tab",),
     err("42602", "invalid name syntax"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_view', 'c_sql')", (), err("42809", "is not a table"))
case(W_T, "admin", "SELECT pgrelay.watch_table('pgrelay.queue', 'c_sql')", (), err("42501", "table pgrelay.queue cannot be watched"))
case(W_T, "admin", "SELECT pgrelay.watch_table('pg_catalog.pg_authid', 'c_sql')", (), err("42501", "cannot be watched"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_secret', 'c_sql')", (), err("42501", "may not put triggers on table public.w_secret"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_cols', 'c_sql')", (),
     err("42501", "may not read column(s) secret of table public.w_cols"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_cols', 'c_sql', columns => '{{secret}}')", (),
     err("42501", "may not read column(s) secret"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_rls', 'c_sql')", (),
     err("42501", "cannot be watched by proof_admin_"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', 'nope')", (), err("42704", 'channel "nope" does not exist'))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', %s)", ("c_sql\u202e\n",), err("42704", 'channel "c_sql??" does not exist'))
for ops in ["{truncate}", "{}", "{insert,NULL}", "{insert; DROP TABLE x}"]:
    case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', 'c_sql', operations => %s)", (ops,),
         err("22023", "operations must be a non-empty list of insert, update and delete"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', 'c_sql', columns => '{{}}')", (),
     err("22023", "columns must name at least one column"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', 'c_sql', columns => %s)", (["id", "nope"],),
     err("42703", "table public.w_tab has no column 'nope'"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', 'c_sql', columns => %s)", (["id\r\nx"],),
     err("42703", "has no column 'id??x'"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', 'c_sql', columns => %s)", ([None],),
     err("42703", "has no column NULL"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab')", (), err("22004", "table and channel must not be NULL"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', 'c_sql', topic => 't_orders')", (),
     err("22023", "a watch is of a channel or of a topic, not both"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', 'c_sql', event_type => 'order')", (),
     err("22023", "event_type is for a watch that publishes on a topic"))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', topic => 'nope')", (), err("42704", 'topic "nope" does not exist'))
case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', topic => %s)", ("t_orders'; --",), err("42704", "does not exist"))
for et in ["", "order row", "x" * 122, "order*", "order" + CONTROLS["RLO"]]:
    case(W_T, "admin", "SELECT pgrelay.watch_table('public.w_tab', topic => 't_orders', event_type => %s)", (et,),
         err("42602", "invalid event type"))
WR = "pgrelay._watch_readable"
case(WR, "admin", "SELECT (pgrelay._watch_readable(NULL::pgrelay.watches)).state", (), result(None))
case(WR, "monitor", "SELECT (pgrelay._watch_readable(NULL)).state", (), result(None))
case(WR, "admin", "SELECT pgrelay._watch_readable('x')", (), err("22P02", "malformed record literal"))
WTR = "pgrelay._watch_trigger"
case(WTR, "producer", "SELECT pgrelay._watch_trigger()", (), err("0A000", "trigger functions can only be called as triggers"))
case(WTR, "admin", "SELECT pgrelay._watch_trigger()", (), err("0A000", "trigger functions can only be called as triggers"))
U_T = "pgrelay.unwatch_table"
case(U_T, "admin", "SELECT pgrelay.unwatch_table(NULL, 'c_sql')", (), err("22004", "table and channel must not be NULL"))
case(U_T, "admin", "SELECT pgrelay.unwatch_table(424242, 'c_sql')", (), err("42P01", "relation with OID 424242 does not exist"))
case(U_T, "admin", "SELECT pgrelay.unwatch_table('public.w_tab', 'nope')", (),
     err("42704", 'table public.w_tab is not watched for channel "nope"'))
case(U_T, "admin", "SELECT pgrelay.unwatch_table('public.w_secret', 'c_sql')", (),
     err("42501", "may not change the triggers of table public.w_secret"))
case(U_T, "admin", "SELECT pgrelay.unwatch_table('public.w_tab')", (), err("22004", "table and channel must not be NULL"))
case(U_T, "admin", "SELECT pgrelay.unwatch_table('public.w_tab', 'c_sql', 't_orders')", (),
     err("22023", "a watch is of a channel or of a topic, not both"))
case(U_T, "admin", "SELECT pgrelay.unwatch_table('public.w_tab', topic => 'nope')", (),
     err("42704", 'table public.w_tab is not watched for topic "nope"'))

# ---- pgrelay, recurring events (admin; the Processor fires) ----------------------------------
SCH = "pgrelay.schedule"
case(SCH, "admin", "SELECT pgrelay.schedule(NULL, 'c_sql', '* * * * *')", (), err("22004", "name must not be NULL"))
case(SCH, "admin", "SELECT pgrelay.schedule('', 'c_sql', '* * * * *')", (), err("42602", 'invalid schedule name ""'))
case(SCH, "admin", "SELECT pgrelay.schedule(%s, 'c_sql', '* * * * *')", ("x" * 129,), err("42602", "invalid schedule name"))
for inj in ["s'; DROP TABLE pgrelay.queue; --", "%I%s%L", "has space"]:
    case(SCH, "admin", "SELECT pgrelay.schedule(%s, 'c_sql', '* * * * *')", (inj,), err("42602", "invalid schedule name"))
for label, ch in CONTROLS.items():
    case(SCH, "admin", "SELECT pgrelay.schedule(%s, 'c_sql', '* * * * *')", ("s" + ch + "x",),
         err("42602", "invalid schedule name"))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new')", (),
     err("22004", 'schedule "s_new" does not exist; give its channel and cron to create it'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql')", (), err("22004", "give its channel and cron"))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', cron => '* * * * *')", (), err("22004", "give its channel and cron"))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'nope', '* * * * *')", (), err("42704", 'channel "nope" does not exist'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', %s, '* * * * *')", ("c_sql'; --",), err("42704", "does not exist"))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', %s, '* * * * *')", ("c\u202esql",), err("42704", 'channel "c?sql" does not exist'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', topic => 'nope', cron => '* * * * *')", (),
     err("42704", 'topic "nope" does not exist'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', topic => 't_orders')", (),
     err("22023", "a schedule targets a channel or a topic, not both"))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', event_type => 'order.new')", (),
     err("22023", "event_type is for a schedule that publishes on a topic"))
for et in ["", "order new", "x" * 129, "order.*"]:
    case(SCH, "admin", "SELECT pgrelay.schedule('s_new', topic => 't_orders', cron => '* * * * *', event_type => %s)", (et,),
         err("42602", "invalid event type"))
for cron, says in [("", '"": 0 fields, not 5'), ("* * * *", "4 fields, not 5"), ("* * * * * *", "6 fields, not 5"),
                   ("60 * * * *", 'minute field "60": 60 is out of range 0-59'),
                   ("* 24 * * *", 'hour field "24": 24 is out of range 0-23'),
                   ("* * 0 * *", 'day-of-month field "0": 0 is out of range 1-31'),
                   ("* * * 13 *", 'month field "13": 13 is out of range 1-12'),
                   ("* * * * 8", 'day-of-week field "8": 8 is out of range 0-7'),
                   ("* * * BRU *", '"BRU" is not a number or a name (JAN FEB'),
                   ("*/0 * * * *", "the step after / must be a positive number"),
                   ("9-1 * * * *", "the range 9-1 ends before it starts"),
                   ("1,,2 * * * *", "a list item is empty"), ("99999 * * * *", '"99999" is not a number'),
                   ("@reboot", "unknown macro"), ("* * * * *; DROP TABLE pgrelay.queue", "only digits, names"),
                   ("* * * * *\r\n*", "only digits, names"), ("1," * 600 + "1 * * * *", "longer than 1000 characters"),
                   ("0 0 30 2 *", "names no time in the next 10 years")]:
    case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', %s)", (cron,), err("22023", says))
for label, ch in CONTROLS.items():
    if label == "TAB":
        continue  # a tab separates fields
    case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', %s)", ("* * * * *" + ch,),
         err("22023", "invalid cron expression"))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', timezone => 'Nowhere/City')", (),
     err("22023", 'unknown time zone "Nowhere/City"'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', timezone => '')", (),
     err("22023", 'unknown time zone ""'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', timezone => %s)", ("Europe/Berlin\r\n",),
     err("22023", 'unknown time zone "Europe/Berlin??"'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', timezone => %s)", ("x" * 5000,),
     err("22023", "unknown time zone"))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', timezone => 'CET')", (),
     err("22023", 'time zone "CET" is an abbreviation'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_tiny', '* * * * *', %s)", ("x" * 11,),
     err("54000", 'payload of 11 bytes is larger than the 10 bytes channel "c_tiny" accepts'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', catch_up => 'all')", (),
     err("22023", 'invalid catch_up "all"'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', catch_up => %s)", ("once\r\n",),
     err("22023", 'invalid catch_up "once??"'))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', active => 'maybe')", (),
     err("22P02", "invalid input syntax for type boolean"))
case(SCH, "admin", "SELECT pgrelay.schedule('s_new', 'c_sql', '* * * * *', every => '1 hour')", (),
     err("42883", "does not exist"))
UNS = "pgrelay.unschedule"
case(UNS, "admin", "SELECT pgrelay.unschedule(NULL)", (), err("22004", "name must not be NULL"))
case(UNS, "admin", "SELECT pgrelay.unschedule('nope')", (), err("42704", 'schedule "nope" does not exist'))
case(UNS, "admin", "SELECT pgrelay.unschedule(%s)", ("x'; DELETE FROM pgrelay.schedule_entries; --",),
     err("42704", "does not exist"))
case(UNS, "admin", "SELECT pgrelay.unschedule(%s)", ("s\r\nx",), err("42704", 'schedule "s??x" does not exist'))
CNR = "pgrelay.cron_next_runs"
case(CNR, "admin", "SELECT pgrelay.cron_next_runs(NULL)", (), err("22004", "cron must not be NULL"))
case(CNR, "admin", "SELECT pgrelay.cron_next_runs('61 * * * *')", (), err("22023", 'minute field "61"'))
case(CNR, "admin", "SELECT pgrelay.cron_next_runs('* * * * *', NULL)", (), err("22004", "timezone must not be NULL"))
case(CNR, "admin", "SELECT pgrelay.cron_next_runs('* * * * *', 'Mars/Base')", (), err("22023", 'unknown time zone "Mars/Base"'))
case(CNR, "admin", "SELECT pgrelay.cron_next_runs('* * * * *', 'EST')", (), err("22023", "is an abbreviation"))
case(CNR, "admin", "SELECT pgrelay.cron_next_runs('* * * * *', 'UTC', 'infinity')", (),
     err("22023", "after must be a finite time, not infinity"))
case(CNR, "admin", "SELECT pgrelay.cron_next_runs('* * * * *', 'UTC', 'soon')", (),
     err("22007", "invalid input syntax for type timestamp with time zone"))
for n in ("0", "-1", "1001", "NULL"):
    case(CNR, "admin", "SELECT pgrelay.cron_next_runs('* * * * *', count => %s)" % n, (),
         err("22023", "count must be between 1 and 1000, not %s" % n))
case(CNR, "admin", "SELECT pgrelay.cron_next_runs('* * * * *', count => 99999999999)", (),
     err("42883", "does not exist"))
case(CNR, "admin", "SELECT count(*) FROM pgrelay.cron_next_runs('0 0 30 2 *', 'UTC', '2026-01-01', 1000)", (), result(0))
SF = "pgrelay._schedule_fire"
case(SF, "processor", "SELECT * FROM pgrelay._schedule_fire('infinity')", (), err("22023", "at must be a finite time, not infinity"))
case(SF, "processor", "SELECT * FROM pgrelay._schedule_fire('-infinity')", (), err("22023", "at must be a finite time"))
case(SF, "processor", "SELECT * FROM pgrelay._schedule_fire('soon')", (),
     err("22007", "invalid input syntax for type timestamp with time zone"))
case(SF, "processor", "SELECT count(*) FROM pgrelay._schedule_fire('2000-01-01')", (), result(0))
case(SF, "processor", "SELECT * FROM pgrelay._schedule_fire(1, 2)", (), err("42883", "does not exist"))

RWH = "pgrelay.register_webhook"


def webhook(expect, channel="h_new", **kw):
    """A register_webhook() case: named arguments given as parameters."""
    args = dict(kw)
    names = ", ".join("%s => %%s" % k for k in args)
    case(RWH, "admin", "SELECT pgrelay.register_webhook(%%s%s)" % (", " + names if names else ""),
         (channel,) + tuple(args.values()), expect)


URL = "https://127.0.0.1:8443/hook"
webhook(err("22004", "channel must not be NULL"), channel=None, url=URL)
for name in ["", "has space", "x" * 129, "a'b", "h\n", "h\u202e"]:
    webhook(err("42602", "invalid channel name"), channel=name, url=URL)
webhook(err("22004", 'webhook "h_new": url is missing'))
webhook(err("22004", "url is missing"), url=None)
for url, why in [("ftp://127.0.0.1/x", "must start with https://"), ("HTTPS://h.example/x", "must start with https://"),
                 ("", "must start with https://"), ("h.example/x", "must start with https://"),
                 ("javascript:alert(1)", "must start with https://"), ("file:///etc/passwd", "must start with https://"),
                 ("http://h.example/x", "is http://: webhooks are sent over https:// unless"),
                 ("https://u:pw@h.example/x", "must not hold credentials"), ("https://@h.example/x", "must not hold credentials"),
                 ("https://h.example/x#frag", "must not have a fragment"),
                 ("https://h.example/a b", "contains a space or a control character"),
                 ("https://h.example/a\r\nHost: evil", "contains a space or a control character"),
                 ("https://h.example:99999/x", "has a port outside 1-65535"), ("https://h.example:0/x", "has a port outside"),
                 ("https://-bad-.example/x", "is not a valid URL"), ("https://h.example/x<script>", "is not a valid URL"), ('https://h.example/"x"', "is not a valid URL"),
                 ("https://h.example/\u202ex", "is not a valid URL"), ("https://" + "a" * 2048, "is longer than 2048 characters")]:
    webhook(err("22023", why), url=url)
for label, ch in CONTROLS.items():
    webhook(err("22023", "url"), url="https://h.example/" + ch)
webhook(err("22023", 'webhook "c_sql\u202e?": url'.replace("\u202e", "?")), channel="c_sql\u202e\n", url="ftp://x/")
for headers, why in [('["X-A", "a"]', "headers must be a JSON object"), ('"X-A: a"', "headers must be a JSON object"),
                     ('{"Bad Name": "x"}', 'header name "Bad Name" is not a token'),
                     ('{"X-A:": "x"}', 'header name "X-A:" is not a token'), ('{"": "x"}', 'header name "" is not a token'),
                     ('{"X-A\\r\\nHost": "x"}', 'header name "X-A??Host" is not a token'),
                     ('{"X-\\u202eA": "x"}', 'header name "X-?A" is not a token'),
                     ('{"X-A": "one\\r\\nX-Injected: two"}', 'header "X-A" has a control character'),
                     ('{"X-A": "nul\\u0001"}', 'header "X-A" has a control character'),
                     ('{"X-A": "del\\u007f"}', 'header "X-A" has a control character'),
                     ('{"X-A": ""}', 'header "X-A" has an empty value'), ('{"X-A": 1}', 'header "X-A" must have a string value'),
                     ('{"X-A": null}', 'header "X-A" must have a string value'),
                     ('{"X-A": "a", "x-a": "b"}', 'is given twice'),
                     ('{"Host": "evil.example"}', 'header "Host" is set by pg_relay'),
                     ('{"Transfer-Encoding": "chunked"}', "is set by pg_relay"), ('{"webhook-id": "1"}', "is set by pg_relay"),
                     ('{"Proxy-Authorization": "x"}', "is set by pg_relay"),
                     ('{"X-A": "env:1BAD"}', "is not a valid env: reference"),
                     ('{"X-A": "file:../etc/shadow"}', "is not a valid file: reference"),
                     ('{"X-A": "file:.hidden"}', "is not a valid file: reference"),
                     ('{"X-A": "value:"}', "is an empty value: reference"),
                     ('{"X-A": "%s"}' % ("v" * 8193), "longer than 8192 bytes"),
                     ("{%s}" % ", ".join('"X-%d": "v"' % i for i in range(51)), "has more than 50 headers")]:
    webhook(err("22023", why), url=URL, headers=Jsonb(__import__("json").loads(headers)))
webhook(err("22P02", "invalid input syntax for type json"), url=URL, headers="not json")
for secret, why in [("a-raw-passphrase-of-many-bytes", "must be whsec_ followed by the base64"),
                    ("whsec_AAAAAAAAAAAAAAAAAAAAAA==", "is a key of 16 bytes"),
                    ("whsec_" + "A" * 88, "is a key of 66 bytes"), ("whsec_!!!", "the rest is not base64"),
                    ("value:short", "must be whsec_"), ("", "signing_secret is empty"), ("env:", "is not a valid env: reference"),
                    ("env:A B", "is not a valid env: reference"), ("file:a/b", "is not a valid file: reference")]:
    webhook(err("22023", why), url=URL, signing_secret=secret)
for method in ("GET", "DELETE", "post; x", "POST\r\n", ""):
    webhook(err("22023", "invalid method"), url=URL, method=method)
for ca in ("relative/ca.pem", "/etc/ca\n.pem", "/" + "c" * 1100):
    webhook(err("22023", "ca_file must be an absolute path"), url=URL, ca_file=ca)
for reset in (["url"], ["channel"], [None], ["method; DROP TABLE x"]):
    webhook(err("22023", "cannot be reset"), url=URL, reset=reset)
webhook(err("22023", "method is both given and reset"), url=URL, method="PUT", reset=["method"])
webhook(err("42710", 'channel "c_sql" exists already with action type sql'), channel="c_sql", url=URL)
webhook(err("42710", 'channel "c_mail" exists already with action type notify'), channel="c_mail", url=URL)
webhook(err("22023", "max_attempts must be between 1 and 1000"), url=URL, max_attempts=0)
webhook(err("22023", "timeout must be between 1 millisecond and 24 hours"), url=URL, timeout="25 hours")
webhook(err("22023", 'invalid concurrency_mode "serial"'), url=URL, concurrency_mode="serial")
webhook(err("22P02", "invalid input syntax"), url=URL, allow_http="perhaps")
webhook(err("22023", 'url "http://127.0.0.1/x" is http://'), channel="c_hook", url="http://127.0.0.1/x")
webhook(err("22023", 'url "http://127.0.0.1:9/plain" is http://'), channel="c_plain", allow_http=False)
case(RWH, "admin", "SELECT pgrelay.register_webhook('h_new', %s, priority => 1)", (URL,), err("42883", "does not exist"))

PL = "pgrelay.purge_log"
for v in (None, "0", "-1 day", "1001 years", "0.000001 s" if False else "-0.5 s"):
    case(PL, "admin", "SELECT pgrelay.purge_log(%s)", (v,),
         err("22023", "older_than must be a positive interval of at most 1000 years"))
case(PL, "admin", "SELECT pgrelay.purge_log('a while')", (), err("22007", "invalid input syntax"))
case(PL, "admin", "SELECT pgrelay.purge_log(30)", (), err("42883", "does not exist"))

# ---- pgrelay, the web console (admin and monitor) --------------------------------------------------

TP = "pgrelay.throughput"
for role in ("monitor", "admin"):
    case(TP, role, "SELECT * FROM pgrelay.throughput(NULL)", (), err("22004", "since, until and bucket must not be NULL"))
    case(TP, role, "SELECT * FROM pgrelay.throughput(now() - interval '1 hour', NULL)", (),
         err("22004", "must not be NULL"))
    case(TP, role, "SELECT * FROM pgrelay.throughput(now() - interval '1 hour', now(), NULL)", (),
         err("22004", "must not be NULL"))
for since, until in (("now()", "now()"), ("now()", "now() - interval '1 hour'"),
                     ("now() - interval '25 hours'", "now()"), ("'-infinity'", "now()"),
                     ("now() - interval '1 hour'", "'infinity'"), ("'2026-01-01'", "'2026-01-03'")):
    case(TP, "monitor", "SELECT * FROM pgrelay.throughput(%s, %s)" % (since, until), (),
         err("22023", "since and until must be finite times, since before until, at most 1 day apart"))
for b in ("30 seconds", "90 seconds", "0", "-1 minute", "2 days", "1 mon"):
    case(TP, "monitor", "SELECT * FROM pgrelay.throughput(now() - interval '1 hour', now(), %s)", (b,),
         err("22023", "bucket must be a whole number of minutes from 1 minute to 1 day"))
case(TP, "monitor", "SELECT * FROM pgrelay.throughput('yesterday-ish')", (), err("22007", "invalid input syntax"))
case(TP, "monitor", "SELECT * FROM pgrelay.throughput(now() - interval '1 hour', now(), 'often')", (),
     err("22007", "invalid input syntax"))
case(TP, "monitor", "SELECT * FROM pgrelay.throughput(%s)", ("'; DROP TABLE pgrelay.log; --",),
     err("22007", "invalid input syntax"))
case(TP, "monitor", "SELECT * FROM pgrelay.throughput(1)", (), err("42883", "does not exist"))
case(TP, "monitor", "SELECT count(*) >= 0 FROM pgrelay.throughput(now() - interval '1 hour')", (), result(True))

PS = "pgrelay.publication_status"
for role in ("monitor", "admin"):
    case(PS, role, "SELECT * FROM pgrelay.publication_status(NULL)", (), err("22004", "publication_id must not be NULL"))
    case(PS, role, "SELECT count(*) FROM pgrelay.publication_status(-1)", (), result(0))
case(PS, "monitor", "SELECT * FROM pgrelay.publication_status('recent')", (), err("22P02", "invalid input syntax"))
case(PS, "monitor", "SELECT * FROM pgrelay.publication_status(%s)", ("1; DROP TABLE pgrelay.log; --",),
     err("22P02", "invalid input syntax"))
case(PS, "monitor", "SELECT * FROM pgrelay.publication_status('9223372036854775808')", (), err("22003", "out of range"))
case(PS, "monitor", "SELECT * FROM pgrelay.publication_status(1, 2)", (), err("42883", "does not exist"))
case(PS, "producer", "SELECT * FROM pgrelay.publication_status(1)", (), err("42501", "permission denied"))

# ---- pgrelay, the Processor -------------------------------------------------------------------

case("pgrelay.queue_probe", "processor", "SELECT * FROM pgrelay.queue_probe('recent')", (), err("22P02", "invalid input syntax"))
case("pgrelay.queue_probe", "processor", "SELECT * FROM pgrelay.queue_probe(1, 2)", (), err("42883", "does not exist"))
case("pgrelay.queue_has_work", "processor", "SELECT pgrelay.queue_has_work('c_sql')", (), err("42883", "does not exist"))
for v in (0, -1, -2147483648):
    case("pgrelay.queue_pending_ids", "processor", "SELECT * FROM pgrelay.queue_pending_ids(%s)", (v,),
         err("22023", "max_rows must be positive"))
case("pgrelay.queue_pending_ids", "processor", "SELECT * FROM pgrelay.queue_pending_ids(4294967296)", (),
     err("42883", "does not exist"))
case("pgrelay.process_one", "processor", "SELECT outcome FROM pgrelay.process_one(NULL)", (), result("skipped"))
case("pgrelay.process_one", "processor", "SELECT outcome FROM pgrelay.process_one(-1)", (), result("skipped"))
case("pgrelay.process_one", "processor", "SELECT outcome FROM pgrelay.process_one({q_future})", (), result("skipped"))
case("pgrelay.process_one", "processor", "SELECT outcome FROM pgrelay.process_one({q_mail_due})", (),
     err("42809", "process_one() runs sql actions only"))
case("pgrelay.process_one", "processor", "SELECT outcome FROM pgrelay.process_one('one')", (), err("22P02", "invalid input syntax"))
PB = "pgrelay.process_batch"
case(PB, "processor", "SELECT count(*) FROM pgrelay.process_batch(NULL)", (), result(0))
case(PB, "processor", "SELECT count(*) FROM pgrelay.process_batch('{{}}')", (), result(0))
case(PB, "processor", "SELECT string_agg(outcome, ',') FROM pgrelay.process_batch(ARRAY[NULL]::bigint[])", (),
     result("skipped"))
case(PB, "processor", "SELECT string_agg(outcome, ',') FROM pgrelay.process_batch(ARRAY[-1, {q_future}, {q_off}, -1])",
     (), result("skipped,skipped,skipped,skipped"))
case(PB, "processor", "SELECT count(*) FROM pgrelay.process_batch(ARRAY[{q_mail_due}])", (),
     err("42809", "process_batch() runs sql actions only"))
case(PB, "processor", "SELECT count(*) FROM pgrelay.process_batch('one')", (), err("22P02", "malformed array literal"))
case(PB, "processor", "SELECT count(*) FROM pgrelay.process_batch(42)", (), err("42883", "does not exist"))
case(PB, "processor", "SELECT count(*) FROM pgrelay.process_batch(ARRAY[[1, 2], [3, 4]])", (), result(4))
CE = "pgrelay._claim_event"
case(CE, "processor", "SELECT queue_id FROM pgrelay._claim_event(NULL)", (), result(None))
case(CE, "processor", "SELECT queue_id FROM pgrelay._claim_event({q_future})", (), result(None))
case(CE, "processor", "SELECT queue_id FROM pgrelay._claim_event({q_off})", (), result(None))
case(CE, "processor", "SELECT queue_id FROM pgrelay._claim_event('one')", (), err("22P02", "invalid input syntax"))
CES = "pgrelay._claim_events"
case(CES, "processor", "SELECT count(*) FROM pgrelay._claim_events(NULL)", (), result(0))
case(CES, "processor", "SELECT count(*) FROM pgrelay._claim_events(ARRAY[-1, {q_future}, {q_off}])", (), result(0))
case(CES, "processor", "SELECT count(*) FROM pgrelay._claim_events('{{1,x}}')", (), err("22P02", "invalid input syntax"))
GO = "pgrelay._gate_open"
case(GO, "processor", "SELECT pgrelay._gate_open(NULL)", (), result(False))
case(GO, "processor", "SELECT pgrelay._gate_open('nope')", (), result(False))
case(GO, "processor", "SELECT pgrelay._gate_open('c_off')", (), result(False))
case(GO, "processor", "SELECT pgrelay._gate_open(%s)", ("c_sql\u202e",), result(False))
# the settings process_one and process_batch save before a handler and put back after it: what
# they save restores to the same session; a value a setting refuses is refused whole (the
# statement fails, so none of the others is set either)
SS = "pgrelay._settings_saved"
case(SS, "processor", "SELECT pg_catalog.cardinality(pgrelay._settings_saved())", (), result(8))
FS = "pgrelay._forget_handler_state"
case(FS, "processor", "SELECT pgrelay._forget_handler_state()::text", (), result(""))
case(FS, "processor", "SELECT pgrelay._forget_handler_state('all')", (), err("42883", "does not exist"))
DT = "pgrelay._deferred_triggers"
case(DT, "processor", "SELECT pgrelay._deferred_triggers()", (), result(True))
case(DT, "processor", "SELECT pgrelay._deferred_triggers(true)", (), err("42883", "does not exist"))
SR = "pgrelay._settings_restore"
case(SR, "processor", "SELECT pgrelay._settings_restore(pgrelay._settings_saved())", (), result("pg_catalog, pg_temp"))
case(SR, "processor", "SELECT pgrelay._settings_restore(ARRAY['', 'soon'])", (),
     err("22023", 'invalid value for parameter "statement_timeout": "soon"'))
case(SR, "processor", "SELECT pgrelay._settings_restore(ARRAY['', '0', '', '', '0', 'Mars/Olympus_Mons'])", (),
     err("22023", 'invalid value for parameter "TimeZone": "Mars/Olympus_Mons"'))
case(SR, "processor", "SELECT pgrelay._settings_restore(ARRAY['', '0', '', '', '0', 'UTC', 'Martian'])", (),
     err("22023", 'invalid value for parameter "DateStyle": "Martian"'))
case(SR, "processor", "SELECT pgrelay._settings_restore('later')", (), err("22P02", "malformed array literal"))
CEV = "pgrelay._complete_events"
ONE = "ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[now()], ARRAY[now()]"
case(CEV, "processor", "SELECT count(*) FROM pgrelay._complete_events(NULL, NULL, NULL, NULL, NULL, NULL)", (), result(0))
case(CEV, "processor", "SELECT count(*) FROM pgrelay._complete_events(ARRAY[-1], ARRAY['ok'], %s)" % ONE, (),
     err("P0002", "only 0 of the 1 claimed queue rows of the batch are there"))
for r in ("nonsense", "OK", None):
    case(CEV, "processor", "SELECT count(*) FROM pgrelay._complete_events(ARRAY[{q_busy}], ARRAY[%s]::text[], " + ONE + ")",
         (r,), err("22023", "invalid result in"))
case(CEV, "processor", "SELECT count(*) FROM pgrelay._complete_events(ARRAY[{q_busy}], ARRAY[]::text[], %s)" % ONE, (),
     err("22023", "a batch needs one result, error, sqlstate, start and finish per id"))
case(CEV, "processor", "SELECT count(*) FROM pgrelay._complete_events(ARRAY[{q_busy}, -1], ARRAY['ok', 'ok'], %s)" % ONE,
     (), err("22023", "a batch needs one result, error, sqlstate, start and finish per id"))
FHM = "pgrelay._finish_held_many"
THREE = ONE.rsplit(", ", 1)[0]  # no finish times: each attempt finishes at the call
case(FHM, "processor", "SELECT count(*) FROM pgrelay._finish_held_many(NULL, NULL, NULL, NULL, NULL, NULL)", (), result(0))
case(FHM, "processor", "SELECT count(*) FROM pgrelay._finish_held_many(ARRAY[-1], ARRAY['ok'], %s, NULL)" % THREE, (),
     err("P0002", "only 0 of the 1 claimed queue rows of the batch are there"))
for r in ("nonsense", "OK", None):
    case(FHM, "processor",
         "SELECT count(*) FROM pgrelay._finish_held_many(ARRAY[{q_busy}], ARRAY[%s]::text[], " + THREE + ", NULL)",
         (r,), err("22023", "invalid result in"))
case(FHM, "processor",
     "SELECT count(*) FROM pgrelay._finish_held_many(ARRAY[{q_busy}], ARRAY['ok'], %s, ARRAY[]::jsonb[])" % THREE, (),
     err("22023", "a batch needs one result, error, sqlstate, start and finish per id"))
case(FHM, "processor",
     "SELECT count(*) FROM pgrelay._finish_held_many(ARRAY[{q_busy}], ARRAY['ok'], ARRAY[NULL]::text[], "
     "ARRAY[NULL]::text[], ARRAY['infinity']::timestamptz[], NULL)", (), err("22023", "started must hold finite times"))
BR = "pgrelay._batch_results"
NINE = ", ".join(["NULL"] * 9)
case(BR, "processor", "SELECT count(*) FROM pgrelay._batch_results(%s)" % NINE, (), result(0))
case(BR, "processor", "SELECT outcome FROM pgrelay._batch_results(ARRAY[-1], %s)" % NINE[6:], (), result("skipped"))
case(BR, "processor", "SELECT count(*) FROM pgrelay._batch_results(ARRAY[-1], ARRAY[-1], ARRAY['ok'], %s, NULL, NULL)" % ONE,
     (), err("P0002", "only 0 of the 1 claimed queue rows of the batch are there"))
RH = "pgrelay._run_handler"
case(RH, "processor", "SELECT (pgrelay._run_handler(NULL, NULL, 'x', 'c_sql', '1 s', now(), '0', false))[1:3]::text",
     (), result('{error,"query string argument of EXECUTE is null",22004}'))
case(RH, "processor", "SELECT (pgrelay._run_handler('pgrelay.nope', NULL, 'x', 'c_sql', '1 s', now(), '0', false))[3]",
     (), result("42883"))
case(RH, "processor", "SELECT (pgrelay._run_handler('pg_catalog.length', 'pg_catalog.length(text)'::regprocedure, 'x',"
     " 'c_sql', '1 s', now(), '0', false))[1:3]::text", (),
     result('{error,"handler pg_catalog.length(text) is gone, or is not SECURITY DEFINER any more",42501}'))
QF = "pgrelay._queue_fetch"
for v in (0, -1, None):
    case(QF, "processor", "SELECT count(*) FROM pgrelay._queue_fetch(%s)", (v,), err("22023", "max_rows must be positive"))
case(QF, "processor", "SELECT count(*) FROM pgrelay._queue_fetch(4294967296)", (), err("42883", "does not exist"))
case("pgrelay._queue_claim", "processor", "SELECT count(*) FROM pgrelay._queue_claim(NULL)", (), result(0))
case("pgrelay._queue_claim", "processor", "SELECT count(*) FROM pgrelay._queue_claim(-42)", (), result(0))
case("pgrelay._queue_claim", "processor", "SELECT count(*) FROM pgrelay._queue_claim({q_future})", (), result(0))
case("pgrelay._queue_claim", "processor", "SELECT count(*) FROM pgrelay._queue_claim({q_off})", (), result(0))
W = "pgrelay._write_log"
case(W, "processor", "SELECT * FROM pgrelay._write_log(NULL, 'ok')", (), err("P0002", "does not exist"))
case(W, "processor", "SELECT * FROM pgrelay._write_log(-1, 'ok')", (), err("P0002", "queue row -1 does not exist"))
for r in (None, "", "OK", "success", "ok'; --"):
    case(W, "processor", "SELECT * FROM pgrelay._write_log({q_busy}, %s)", (r,), err("22023", "invalid result"))
case(W, "processor", "SELECT * FROM pgrelay._write_log({q_busy}, 'transient', retry_at => 'infinity')", (),
     err("22023", "retry_at must be a finite time"))
case(W, "processor", "SELECT * FROM pgrelay._write_log({q_busy}, 'transient', retry_at => '-infinity')", (),
     err("22023", "retry_at must be a finite time"))
case(W, "processor", "SELECT * FROM pgrelay._write_log({q_busy}, 'ok', started_at => 'infinity')", (),
     err("22023", "started_at must be a finite time"))
case(W, "processor", "SELECT * FROM pgrelay._write_log({q_busy}, 'ok', detail => '{{bad json')", (),
     err("22P02", "invalid input syntax for type json"))
MD = "pgrelay._queue_mark_done"
case(MD, "processor", "SELECT pgrelay._queue_mark_done(NULL)", (), err("P0002", "does not exist"))
case(MD, "processor", "SELECT pgrelay._queue_mark_done({q_busy})", (), err("55000", "has no log row"))
case(MD, "processor", "SELECT pgrelay._queue_mark_done(0)", (), err("P0002", "queue row 0 does not exist"))
CP = "pgrelay._complete"
case(CP, "processor", "SELECT * FROM pgrelay._complete(NULL, 'ok')", (), err("P0002", "does not exist"))
case(CP, "processor", "SELECT * FROM pgrelay._complete({q_busy}, 'nonsense')", (), err("22023", 'invalid result "nonsense"'))
case(CP, "processor", "SELECT * FROM pgrelay._complete({q_busy}, NULL)", (), err("22023", "invalid result"))
FH = "pgrelay._finish_held"
case(FH, "processor", "SELECT * FROM pgrelay._finish_held(NULL, 'ok')", (), err("P0002", "does not exist"))
case(FH, "processor", "SELECT * FROM pgrelay._finish_held(-1, 'ok')", (), err("P0002", "queue row -1 does not exist"))
for r in (None, "", "OK", "ok'; --"):
    case(FH, "processor", "SELECT * FROM pgrelay._finish_held({q_busy}, %s)", (r,), err("22023", "invalid result"))
case(FH, "processor", "SELECT * FROM pgrelay._finish_held({q_busy}, 'transient', retry_at => 'infinity')", (),
     err("22023", "retry_at must be a finite time"))
case(FH, "processor", "SELECT * FROM pgrelay._finish_held({q_busy}, 'ok', started_at => '-infinity')", (),
     err("22023", "started_at must be a finite time"))
case(FH, "processor", "SELECT * FROM pgrelay._finish_held({q_busy}, 'ok', detail => '{{bad json')", (),
     err("22P02", "invalid input syntax for type json"))
case(FH, "processor", "SELECT * FROM pgrelay._finish_held({q_busy}, 'permanent', 'gone', gone_status => 410)", (),
     err("42704", 'channel "c_busy" has no webhook endpoint'))
case(FH, "processor", "SELECT * FROM pgrelay._finish_held({q_busy}, 'ok', gone_status => 'gone')", (),
     err("22P02", "invalid input syntax"))
SZ = "pgrelay._snooze"
case(SZ, "processor", "SELECT outcome FROM pgrelay._snooze(NULL, 'later', '60', now())", (), err("P0002", "does not exist"))
case(SZ, "processor", "SELECT outcome FROM pgrelay._snooze(-1, 'later', '60', now())", (), err("P0002", "queue row -1 does not exist"))
DF = "pgrelay._queue_defer"
case(DF, "processor", "SELECT pgrelay._queue_defer({q_busy}, NULL)", (), err("22004", "run_at must not be NULL"))
case(DF, "processor", "SELECT pgrelay._queue_defer(NULL, now())", (), err("P0002", "does not exist"))
case(DF, "processor", "SELECT pgrelay._queue_defer({q_busy}, 'infinity')", (), err("22023", "run_at must be a finite time"))
case(DF, "processor", "SELECT pgrelay._queue_defer({q_busy}, '-infinity')", (), err("22023", "run_at must be a finite time"))
WC = "pgrelay._webhook_claim"
case(WC, "processor", "SELECT count(*) FROM pgrelay._webhook_claim(NULL)", (), result(0))
case(WC, "processor", "SELECT count(*) FROM pgrelay._webhook_claim(-1)", (), result(0))
case(WC, "processor", "SELECT count(*) FROM pgrelay._webhook_claim({q_hook_future})", (), result(0))
case(WC, "processor", "SELECT count(*) FROM pgrelay._webhook_claim({q_busy})", (),
     err("42809", 'an event of channel "c_busy" is a "sql" event, not a webhook'))
case(WC, "processor", "SELECT count(*) FROM pgrelay._webhook_claim('one')", (), err("22P02", "invalid input syntax"))
DC = "pgrelay._destination_claim"
case(DC, "processor", "SELECT count(*) FROM pgrelay._destination_claim(NULL)", (), result(0))
case(DC, "processor", "SELECT count(*) FROM pgrelay._destination_claim(-1)", (), result(0))
case(DC, "processor", "SELECT count(*) FROM pgrelay._destination_claim({q_hook_future})", (), result(0))
case(DC, "processor", "SELECT count(*) FROM pgrelay._destination_claim('one')", (), err("22P02", "invalid input syntax"))
DCM = "pgrelay._destination_claim_many"
case(DCM, "processor", "SELECT count(*) FROM pgrelay._destination_claim_many(NULL)", (), result(0))
case(DCM, "processor", "SELECT count(*) FROM pgrelay._destination_claim_many(ARRAY[-1, NULL])", (), result(0))
case(DCM, "processor", "SELECT count(*) FROM pgrelay._destination_claim_many(ARRAY[{q_hook_future}])", (), result(0))
case(DCM, "processor", "SELECT count(*) FROM pgrelay._destination_claim_many('one')", (),
     err("22P02", "malformed array literal"))
WG = "pgrelay._webhook_gone"
case(WG, "processor", "SELECT pgrelay._webhook_gone(NULL, 410, 'gone')", (), err("P0002", "does not exist"))
case(WG, "processor", "SELECT pgrelay._webhook_gone(-1, 410, 'gone')", (), err("P0002", "queue row -1 does not exist"))
case(WG, "processor", "SELECT pgrelay._webhook_gone({q_busy}, 410, 'gone')", (),
     err("42704", 'channel "c_busy" has no webhook endpoint'))
case(WG, "processor", "SELECT pgrelay._webhook_gone({q_busy}, 'gone', 'x')", (), err("22P02", "invalid input syntax"))
case("pgrelay.should_dispatch_single", "processor", "SELECT pgrelay.should_dispatch_single('leader')", (),
     err("42883", "does not exist"))
case("pgrelay.interface_version", "processor", "SELECT pgrelay.interface_version(1)", (), err("42883", "does not exist"))
case("pgrelay.installation", "monitor", "SELECT pgrelay.installation('1.2')", (), err("42883", "does not exist"))
case("pgrelay.installation", "monitor", "SELECT method FROM pgrelay.installation()", (), result("extension"))
case("pgrelay_notifier.installation", "processor", "SELECT pgrelay_notifier.installation(NULL)", (),
     err("42883", "does not exist"))
case("pgrelay_notifier.installation", "admin", "SELECT version FROM pgrelay_notifier.installation()", (), result(testlib.EXT_VERSION))
TN = "pgrelay._this_node"
for v in ("1024", "-1", "abc", "1e3", "99999999999", "3 4"):
    case(TN, "processor", "SELECT set_config('pg_relay.node_id', %s, true), pgrelay._this_node()", (v,),
         err("22023", 'invalid pg_relay.node_id'))
case(TN, "processor", "SELECT pgrelay._this_node(1)", (), err("42883", "does not exist"))
case("pgrelay.decode_id", "monitor", "SELECT pgrelay.decode_id(NULL)", (), result(None))
case("pgrelay.decode_id", "monitor", "SELECT pgrelay.decode_id('x')", (), err("22P02", "invalid input syntax"))
TE = "pgrelay._timeout_error"
case(TE, "processor", "SELECT pgrelay._timeout_error('c_sql', '5 seconds')", (),
     result("the handler ran longer than the channel's timeout of 5 s: make it faster, or raise the timeout: "
            "SELECT pgrelay.register('c_sql', timeout => '10 seconds')"))
case(TE, "processor", "SELECT pgrelay._timeout_error(%s, '20 hours')", ("x'); DROP TABLE pgrelay.queue; --",),
     result("timeout of 72000 s: make it faster, or raise the timeout: SELECT pgrelay.register('x''); DROP TABLE "
            "pgrelay.queue; --', timeout => '86400 seconds')"))
case(TE, "processor", "SELECT pgrelay._timeout_error(NULL, '5 seconds')", (), result(None))
case(TE, "admin", "SELECT pgrelay._timeout_error('c_sql', '5 seconds')", (), err("42501", "permission denied"))
CH = "pgrelay._config_hint"
case(CH, "processor", "SELECT kind FROM pgrelay._config_hint(NULL, '42501', current_user)", (), result(None))
case(CH, "processor", "SELECT kind FROM pgrelay._config_hint(%s, '42501', current_user)",
     ("c_sql'; DROP TABLE pgrelay.queue; --",), result(None))
case(CH, "processor", "SELECT kind FROM pgrelay._config_hint('c_sql', NULL, current_user)", (), result(None))
case(CH, "processor", "SELECT kind FROM pgrelay._config_hint('c_sql', %s, current_user)", ("'; DROP TABLE x; --",),
     result(None))
case(CH, "processor", "SELECT hint FROM pgrelay._config_hint('c_sql', '42501', current_user)", (),
     result("the handler public.h_ok(text) runs as its owner"))
case(CH, "processor", "SELECT kind FROM pgrelay._config_hint('c_sql', '42501', NULL)", (),
     err("22004", "role must not be NULL"))
case(CH, "processor", "SELECT kind FROM pgrelay._config_hint('c_sql', '42501', 'no such role')", (),
     err("42704", 'role "no such role" does not exist'))
case(CH, "admin", "SELECT pgrelay._config_hint('c_sql', '42501', current_user)", (), err("42501", "permission denied"))
case("pgrelay.error_kind", "monitor", "SELECT pgrelay.error_kind(NULL)", (), result(None))
case("pgrelay.error_kind", "monitor", "SELECT pgrelay.error_kind(%s)", ("'; DROP TABLE x; --",), result("handler"))
case("pgrelay.error_kind", "monitor", "SELECT pgrelay.error_kind('')", (), result("handler"))

# ---- pgrelay, high availability ---------------------------------------------------------------


def with_settings(fn, role, settings, source, expect):
    """A case that calls source (a function call or a view, as in FROM) with the session settings
    given set for its statement first: the correlated sub-select runs after set_config(), which a
    set-returning function in the select list would not wait for."""
    sets = " || ".join("set_config('%s', %%s, true)" % k for k in settings)
    case(fn, role, "SELECT (SELECT count(*) FROM %s x WHERE s.v IS NOT NULL) FROM (SELECT %s AS v) s" % (source, sets),
         tuple(settings.values()), expect)


SN = "pgrelay.set_node"
for v in ("NULL", "1024", "-1", "2147483647"):
    case(SN, "admin", "SELECT pgrelay.set_node(%s, 'n9')" % v, (), err("22023", "node_id must be between 0 and 1023, not"))
case(SN, "admin", "SELECT pgrelay.set_node('one', 'n9')", (), err("22P02", "invalid input syntax"))
case(SN, "admin", "SELECT pgrelay.set_node(99999999999, 'n9')", (), err("42883", "does not exist"))
case(SN, "admin", "SELECT pgrelay.set_node(9, NULL)", (), err("22023", "node_name must not be empty"))
case(SN, "admin", "SELECT pgrelay.set_node(9, '')", (), err("22023", "node_name must not be empty"))
for name in ["x" * 64, "\u00e9" * 32, "n" * 100000]:
    case(SN, "admin", "SELECT pgrelay.set_node(9, %s)", (name,),
         err("22023", "must be at most 63 bytes without control or invisible characters"))
for label, ch in CONTROLS.items():
    case(SN, "admin", "SELECT pgrelay.set_node(9, %s)", ("n" + ch + "9",),
         err("22023", "must be at most 63 bytes without control or invisible characters"))
case(SN, "admin", "SELECT pgrelay.set_node(9, 'n1')", (), err("23505", 'node name "n1" is mapped to pg_relay node 1 already'))
case(SN, "admin", "SELECT pgrelay.set_node(9, 'n9', 'd', 'extra')", (), err("42883", "does not exist"))
RN = "pgrelay.remove_node"
case(RN, "admin", "SELECT pgrelay.remove_node(NULL)", (), err("42704", "is not in pgrelay.nodes"))
case(RN, "admin", "SELECT pgrelay.remove_node(2)", (), err("42704", "pg_relay node 2 is not in pgrelay.nodes"))
case(RN, "admin", "SELECT pgrelay.remove_node(-1)", (), err("42704", "pg_relay node -1 is not in pgrelay.nodes"))
case(RN, "admin", "SELECT pgrelay.remove_node('n1')", (), err("22P02", "invalid input syntax"))
RTB = "pgrelay.replication_tables"
case(RTB, "admin", "SELECT count(*) FROM pgrelay.replication_tables() WHERE replicate IS NULL", (), result(0))
case(RTB, "admin", "SELECT * FROM pgrelay.replication_tables('pgrelay.queue')", (), err("42883", "does not exist"))
RS = "pgrelay.replication_setup"
for v in (None, "", "default'; DROP TABLE pgrelay.queue; --", "s" * 10000, "set\n1"):
    case(RS, "admin", "SELECT * FROM pgrelay.replication_setup(%s)", (v,),
         err("55000", "this database is not a node of Spock or pglogical"))
MMW = "pgrelay.multi_master_watch"
ILM = "pgrelay.is_lowest_live_master"
for fn, call in ((MMW, "SELECT * FROM pgrelay.multi_master_watch(%s)"), (ILM, "SELECT pgrelay.is_lowest_live_master(%s)")):
    for v in ("0", "50 ms", "-1 s", "2 days", "1000 years"):
        case(fn, "processor", call, (v,), err("22023", "dead_after must be between 100 milliseconds and 1 day"))
    for v in ("soon", "1 s; DROP TABLE pgrelay.queue"):
        case(fn, "processor", call, (v,), err("22007", "invalid input syntax for type interval"))
    # PostgreSQL 17 made 'infinity' an interval: there the range check refuses it instead.
    case(fn, "processor", call, ("infinity",),
         err("22007", "invalid input syntax for type interval") if int(testlib.pg_major()) < 17 else
         err("22023", "dead_after must be between 100 milliseconds and 1 day, not infinity"))
    for v in ("soon", "60s\nx", "\u202e60s"):
        with_settings(fn, "processor", {"pg_relay.dead_after": v}, call.replace("SELECT * FROM ", "").replace(
            "SELECT ", "").replace("%s", "NULL"), err("22023", "invalid pg_relay.dead_after"))
    with_settings(fn, "processor", {"pg_relay.dead_after": "0"}, call.replace("SELECT * FROM ", "").replace(
        "SELECT ", "").replace("%s", "NULL"), err("22023", "dead_after must be between 100 milliseconds and 1 day"))
HT = "pgrelay._ha_tick"
case(HT, "processor", "SELECT * FROM pgrelay._ha_tick(NULL, true, true, false)", (),
     err("22023", '_ha_tick() is for the multi-node and leader modes, not "single"'))
for mode in ("bogus", "leader\n", "LEADER", "multi_node"):
    with_settings(HT, "processor", {"pg_relay.mode": mode}, "pgrelay._ha_tick(NULL, true, true, false)",
                  err("22023", "_ha_tick() is for the multi-node and leader modes"))
for args in ("NULL, NULL, true, false", "NULL, true, NULL, false", "NULL, true, true, NULL"):
    with_settings(HT, "processor", {"pg_relay.mode": "leader"}, "pgrelay._ha_tick(%s)" % args,
                  err("22004", "beat, first and holding must not be NULL"))
with_settings(HT, "processor", {"pg_relay.mode": "leader", "pg_relay.node_id": "1024"},
              "pgrelay._ha_tick(NULL, true, true, false)", err("22023", "invalid pg_relay.node_id"))
with_settings(HT, "processor", {"pg_relay.mode": "multi-node", "pg_relay.dead_after": "1 week"},
              "pgrelay._ha_tick(NULL, true, true, false)", err("22023", "dead_after must be between 100 milliseconds and 1 day"))
case(HT, "processor", "SELECT * FROM pgrelay._ha_tick(NULL, 'yes please', true, false)", (), err("22P02", "invalid input syntax"))
SQC = "pgrelay._startup_queue_check"
with_settings(SQC, "processor", {"pg_relay.node_id": "5000"}, "pgrelay._startup_queue_check()",
              err("22023", "invalid pg_relay.node_id"))
case(SQC, "processor", "SELECT * FROM pgrelay._startup_queue_check(1)", (), err("42883", "does not exist"))
HST = "pgrelay._heartbeat_stop"
with_settings(HST, "processor", {"pg_relay.node_id": "x"}, "pgrelay._heartbeat_stop()",
              err("22023", "invalid pg_relay.node_id"))
case(HST, "processor", "SELECT pgrelay._heartbeat_stop(true)", (), err("42883", "does not exist"))
CN = "pgrelay.cluster_nodes"
with_settings(CN, "processor", {"pg_relay.node_id": "-1"}, "pgrelay.cluster_nodes()",
              err("22023", "invalid pg_relay.node_id"))
case(CN, "admin", "SELECT * FROM pgrelay.cluster_nodes('n1')", (), err("42883", "does not exist"))
CST = "pgrelay._cluster_status"
with_settings(CST, "monitor", {"pg_relay.dead_after": "soon"}, "pgrelay._cluster_status()",
              err("22023", 'invalid pg_relay.dead_after "soon"'))
with_settings(CST, "monitor", {"pg_relay.dead_after": "0"}, "pgrelay.cluster_status",
              err("22023", "dead_after must be between 100 milliseconds and 1 day"))
case(CST, "monitor", "SELECT * FROM pgrelay._cluster_status(1)", (), err("42883", "does not exist"))

PR = "pgrelay._processor_report"
PR_CALL = "SELECT pgrelay._processor_report(%s, %s, %s, %s, %s, %s, %s)"
PR_OK = ("host-a", 42, "1.2.3", 4, 0, "2026-03-01 10:00:00+00", "10 seconds")


def report(i, value, expect):
    args = list(PR_OK)
    args[i] = value
    case(PR, "processor", PR_CALL, tuple(args), expect)


for i in range(7):
    report(i, None, err("22004", "must not be NULL"))
for host in ("", "x" * 101, "x" * 100000, "host\nother", "host\u202e", "\u200bhost", "host\x1b[31m"):
    report(0, host, err("22023", "host must be 1 to 100 and version 1 to 64 visible characters"))
for version in ("", "9" * 65, "1.2\r\n"):
    report(2, version, err("22023", "host must be 1 to 100 and version 1 to 64 visible characters"))
report(1, "forty-two", err("22P02", "invalid input syntax"))
report(3, 0, err("22023", "workers must be at least 1 and busy between 0 and workers, not 0 and 0"))
report(4, -1, err("22023", "workers must be at least 1 and busy between 0 and workers"))
report(4, 5, err("22023", "workers must be at least 1 and busy between 0 and workers, not 4 and 5"))
for t in ("infinity", "-infinity"):
    report(5, t, err("22023", "started_at must be a finite time"))
report(5, "yesterday-ish", err("22007", "invalid input syntax"))
for every in ("0", "-1 s", "2 days", "1000 years"):
    report(6, every, err("22023", "report_every must be more than 0 and at most 1 day"))
report(6, "soon", err("22007", "invalid input syntax"))
# how many of its workers are connected comes in the setting pg_relay.workers_connected
for v in ("5", "-1", "four", "99999999999", "1e2", " 3", "\u0663"):
    with_settings(PR, "processor", {"pg_relay.workers_connected": v},
                  "pgrelay._processor_report('host-a', 42, '1.2.3', 4, 0, now(), '10 seconds')",
                  err("22023", "pg_relay.workers_connected must be between 0 and workers (4), not"))
PS = "pgrelay._processor_stop"
case(PS, "processor", "SELECT pgrelay._processor_stop(NULL, 1)", (), err("22004", "host and pid must not be NULL"))
case(PS, "processor", "SELECT pgrelay._processor_stop('h', NULL)", (), err("22004", "host and pid must not be NULL"))
case(PS, "processor", "SELECT pgrelay._processor_stop(%s, 1)", ("' OR 1=1 --",), result(False))
case(PS, "processor", "SELECT pgrelay._processor_stop('h', 'one')", (), err("22P02", "invalid input syntax"))

# ---- pg_relay_notifier, producers -------------------------------------------------------------

S = "pgrelay_notifier.send"


def send(role="producer", **kw):
    """A send() case: the arguments below (by name) over a valid message."""
    args = {"channel": "c_mail", "to": ["ann@example.org"], "subject": "Hi", "body_text": "Body"}
    expect = kw.pop("expect")
    args.update(kw)
    args = {k: v for k, v in args.items() if v is not _omit}
    sql = "SELECT pgrelay_notifier.send(%s)" % ", ".join('"%s" => %%s' % k for k in args)
    case(S, role, sql, list(args.values()), expect)


_omit = object()
send(channel=None, expect=err("22004", "channel must not be NULL"))
send(channel="nope", expect=err("42704", 'channel "nope" does not exist'))
send(channel="c_sql", expect=err("42809", "is not a pg_relay_notifier channel"))
send(channel="c_mail_off", expect=err("55000", 'channel "c_mail_off" is not active'))
send(channel="c_mail\u202e", expect=err("42704", "does not exist"))
send(to=_omit, expect=err("22023", "a message needs at least one recipient"))
send(to=[], expect=err("22023", "a message needs at least one recipient"))
send(to=[None], expect=err("22004", "to address 1 is NULL"))
send(to=["a%d@example.org" % i for i in range(501)], expect=err("54000", "too many recipients (501 given"))
send(to=["x@example.org"] * 300, cc=["y@example.org"] * 201, expect=err("54000", "too many recipients"))
for bad, why in [("", "the address is empty"), ("ann", "has no @"), ("ann@localhost", "not fully qualified"),
                 ("ann@192.168.1.1", "all digits"), ("ann@@example.org", "only allowed inside quotes"),
                 (".ann@example.org", "leading, trailing or doubled dot"), ("ann@exa_mple.org", "inner hyphens"),
                 ("ünï@example.org", "non-ASCII"), ("ann@bücher.example", "non-ASCII"),
                 ("ann@example.org>\r\nRCPT TO:<eve@evil.example", "control or invisible"),
                 ("ann@example.org\nBcc: eve@evil.example", "control or invisible"),
                 ("<ann@example.org> eve@evil.example", "only allowed inside quotes"),
                 ("a" * 65 + "@example.org", "longer than 64"), ("a@" + "b" * 64 + ".org", "longer than 63"),
                 ("a@" + ".".join(["b" * 60] * 5) + ".org", "longer than"),
                 ("ann@[300.1.1.1]", "IPv4 address literal is malformed"), ("ann@[1::2]", "address literal is malformed"),
                 ('"ann"@example.org"', "may only hold letters"), ('""@example.org', "local part (before @) is empty")]:
    send(to=[bad], expect=err("22023", why))
for label, ch in CONTROLS.items():
    send(to=["Ann%sEve <ann@example.org>" % ch], expect=err("22023", "control or invisible formatting character"))
send(to=['Ann "Boss" <ann@example.org>'], expect=err("22023", "must be quoted"))
send(to=['"Ann <ann@example.org>'], expect=err("22023", "quoted display name is malformed"))
send(to=["%s <ann@example.org>" % ("n" * 257)], expect=err("22023", "display name is longer than 256"))
send(cc=["bad"], expect=err("22023", 'invalid cc address "bad"'))
send(bcc=["x@y"], expect=err("22023", 'invalid bcc address "x@y"'))
send(reply_to=["r%d@example.org" % i for i in range(21)], expect=err("54000", "too many reply_to addresses (21"))
send(reply_to=["not an address"], expect=err("22023", "invalid reply_to address"))
for label, ch in CONTROLS.items():
    send(subject="Invoice" + ch + "fdp.exe", expect=err("22023", "subject contains a control or invisible formatting character"))
send(subject="Hi\r\nBcc: eve@evil.example", expect=err("22023", "subject contains a control"))
send(subject="s" * 999, expect=err("22023", "subject is longer than 998 characters"))
send(body_text=None, body_html=None, expect=err("22004", "a message needs body_text or body_html"))
send(channel="c_small", body_text="x" * 1025, expect=err("54000", "the bodies alone are 1025 bytes"))
send(channel="c_small", body_text="é" * 513, expect=err("54000", "the bodies alone are 1026 bytes"))
send(channel="c_small", attachments='[{"filename": "a.bin", "content_text": "%s"}]' % ("x" * 1100),
     expect=err("54000", "the message is"))
send(from_address="ceo@example.org", expect=err("42501", 'from_address "ceo@example.org" is not allowed by profile "p_smtp"'))
send(from_address="noreply@example.com.evil.example", expect=err("42501", "is not allowed"))
send(from_address="x@sub.example.net", expect=err("42501", "is not allowed"))       # @example.net, not subdomains
send(from_address="noreply@example.com\r\nBcc: eve@evil.example", expect=err("22023", "control or invisible"))
send(from_address="Boss <ceo@example.org>", expect=err("42501", "is not allowed"))
for label, ch in CONTROLS.items():
    send(from_name="Bank" + ch + "Support", expect=err("22023", "from_name must be at most 256 characters without control"))
send(from_name="n" * 257, expect=err("22023", "from_name must be at most 256 characters"))
send(headers='"X-A: 1"', expect=err("22023", "headers must be a JSON object or an array"))
send(headers='[["X-A"]]', expect=err("22023", "headers[1] must be a [name, value] pair of strings"))
send(headers='[["X-A", "1", "2"]]', expect=err("22023", "must be a [name, value] pair"))
send(headers='[[1, "x"]]', expect=err("22023", "must be a [name, value] pair"))
send(headers='{"X-A": 1}', expect=err("22023", 'header "X-A": the value must be a JSON string, not number'))
send(headers='{"X-A": null}', expect=err("22023", "must be a JSON string, not null"))
send(headers="[" + ",".join('["X-H%d", "v"]' % i for i in range(101)) + "]", expect=err("54000", "too many header fields (101"))
for name in ["X A", "X:A", "", "X-Ü", "X-A\r\nBcc", "X-\u202eA", "x" * 77]:
    send(headers=Jsonb([[name, "v"]]), expect=err("22023", "header field name"))
for name in ["From", "to", "CC", "bcc", "Subject", "Date", "Message-ID", "MIME-Version", "Reply-To", "Content-Type",
             "content-transfer-encoding"]:
    send(headers=Jsonb([[name, "v"]]), expect=err("22023", "is written by the Processor"))
for name in ["Sender", "Return-Path", "Received", "Received-SPF", "Delivered-To", "Envelope-To", "DKIM-Signature",
             "DomainKey-Signature", "Authentication-Results", "Resent-From", "ARC-Seal"]:
    send(headers=Jsonb([[name, "v"]]), expect=err("42501", "never by a producer"))
for label, ch in CONTROLS.items():
    send(headers=Jsonb({"X-Note": "a" + ch + "b"}),
         expect=err("22023", 'header "X-Note": the value contains a control or invisible formatting character'))
send(headers=Jsonb({"X-Note": "é" * 500}), expect=err("22023", "longer than 998 octets"))
A = "attachments"
send(attachments='{"filename": "a"}', expect=err("22023", "attachments must be a JSON array of objects"))
send(attachments="[" + ",".join('{"filename": "f%d", "content_text": "x"}' % i for i in range(101)) + "]",
     expect=err("54000", "too many attachments (101"))
send(attachments='["a.txt"]', expect=err("22023", "attachment 1 must be a JSON object"))
send(attachments='[{"filename": "a", "content_text": "x", "contentType": "text/plain"}]',
     expect=err("22023", 'unknown key "contentType"'))
send(attachments='[{"filename": "a", "content_text": 5}]', expect=err("22023", "content_text must be a JSON string"))
send(attachments='[{"content_text": "x"}]', expect=err("22023", "filename is missing or empty"))
send(attachments='[{"filename": "", "content_text": "x"}]', expect=err("22023", "filename is missing or empty"))
for fname in ["../../etc/passwd", "a/b", "a\\b", "..", ".", "x" * 256]:
    send(attachments=Jsonb([{"filename": fname, "content_text": "x"}]),
         expect=err("22023", "a file name is a plain name of at most 255 characters"))
for label, ch in CONTROLS.items():
    send(attachments=Jsonb([{"filename": "invoice" + ch + "fdp.exe", "content_text": "x"}]),
         expect=err("22023", "the file name contains a control or invisible formatting character"))
send(attachments='[{"filename": "a", "content_text": "x", "content_base64": "eA=="}]',
     expect=err("22023", "give exactly one of content_base64 and content_text"))
send(attachments='[{"filename": "a"}]', expect=err("22023", "give exactly one of content_base64 and content_text"))
for b64 in ["eA=", "e===", "@@@@", "eA==eA==", "ZXhhbXBsZQ=!"]:
    send(attachments='[{"filename": "a", "content_base64": "%s"}]' % b64, expect=err("22023", "content_base64 is not valid base64"))
for ctype in ["text", "text/", "/plain", "text/plain\r\nBcc: eve@evil.example", "text/plain; charset", "text/pl ain",
              'text/plain; name="a\u202eb"', "t" * 250 + "/plain"]:
    send(attachments=Jsonb([{"filename": "a", "content_text": "x", "content_type": ctype}]),
         expect=err("22023", "invalid content type"))
send(attachments='[{"filename": "a", "content_text": "x", "content_type": "multipart/mixed"}]',
     expect=err("22023", "cannot be multipart"))
for cid in ["<a@b>", "a b", 'a"b', "", "a\r\nb", "a" * 251, "ü@x"]:
    send(attachments=Jsonb([{"filename": "a", "content_text": "x", "content_id": cid}]), expect=err("22023", "content_id"))
send(attachments='[{"filename": "a", "content_text": "x", "content_id": "c"}, {"filename": "b", "content_text": "y", "content_id": "c"}]',
     expect=err("22023", 'content_id "c" is used twice'))
send(run_at="infinity", expect=err("22023", "run_at must be a finite time"))
send(run_at="-infinity", expect=err("22023", "run_at must be a finite time"))
send(headers="not json", expect=err("22P02", "invalid input syntax for type json"))
send(to="ann@example.org", expect=err("22P02", "malformed array literal"))

GS = "pgrelay_notifier.get_status"
case(GS, "producer", "SELECT * FROM pgrelay_notifier.get_status(NULL)", (), err("P0002", "notification NULL does not exist"))
case(GS, "producer", "SELECT * FROM pgrelay_notifier.get_status(-1)", (), err("P0002", "notification -1 does not exist"))
case(GS, "producer", "SELECT * FROM pgrelay_notifier.get_status({nid_other})", (), err("P0002", "does not exist"))
case(GS, "producer", "SELECT * FROM pgrelay_notifier.get_status('{nid_q}; DROP TABLE x')", (), err("22P02", "invalid input syntax"))
CA = "pgrelay_notifier.cancel"
case(CA, "producer", "SELECT pgrelay_notifier.cancel(NULL)", (), err("P0002", "does not exist"))
case(CA, "producer", "SELECT pgrelay_notifier.cancel({nid_other})", (), err("P0002", "does not exist"))
case(CA, "producer", "SELECT pgrelay_notifier.cancel({nid_sent})", (), err("55000", "was sent already and cannot be cancelled"))
case(CA, "admin", "SELECT pgrelay_notifier.cancel(0)", (), err("P0002", "notification 0 does not exist"))
AE = "pgrelay_notifier.address_error"
for a, why in [(None, "the address is NULL"), ("", "the address is empty"), ("a@b\u202e.example", "control or invisible"),
               ("ann@example.org; DROP TABLE x", "may only hold letters"), ("x" * 300, "longer than 254")]:
    case(AE, "producer", "SELECT pgrelay_notifier.address_error(%s)", (a,), result(why))
PM = "pgrelay_notifier.parse_mailbox"
for mb, why in [(None, "the address is NULL"), ("Ann <ann@example>", "not fully qualified"),
                ("Ann\u2028 <ann@example.org>", "control or invisible"), ("Ann <>", "the address is empty"),
                ('"A\\" <a@example.org>', "quoted display name is malformed")]:
    case(PM, "producer", "SELECT * FROM pgrelay_notifier.parse_mailbox(%s)", (mb,), err("22023", why))

# ---- pg_relay_notifier, the Processor ----------------------------------------------------------

F = "pgrelay_notifier.fetch"
for pk in [None, "", "abc", "-1", "0", "99999999999999999999", "9223372036854775808", "{nid_q}; DROP TABLE x",
           " {nid_q}", "{nid_q}.0", "0x10"]:
    case(F, "processor", "SELECT pgrelay_notifier.fetch(%s, {ev_q})", (pk,), result(None))
case(F, "processor", "SELECT pgrelay_notifier.fetch('{nid_q}', NULL)", (), result(None))
case(F, "processor", "SELECT pgrelay_notifier.fetch('{nid_q}', {ev_q} + 1)", (), result(None))
case(F, "processor", "SELECT pgrelay_notifier.fetch('{nid_q}', 'x')", (), err("22P02", "invalid input syntax"))
SS = "pgrelay_notifier.set_status"
for pk in [None, "", "x", "-5", "99999999999999999999"]:
    case(SS, "processor", "SELECT pgrelay_notifier.set_status(%s, '{{\"outcome\": \"sent\"}}')", (pk,),
         err("22023", "invalid notification id"))
case(SS, "processor", "SELECT pgrelay_notifier.set_status('1', '{{\"outcome\": \"sent\"}}')", (), err("P0002", "notification 1 does not exist"))
case(SS, "processor", "SELECT pgrelay_notifier.set_status('{nid_sent}', '{{\"outcome\": \"sent\"}}')", (),
     err("55000", "its status cannot change"))
for doc, why in [(None, "must be a JSON object"), ("[]", "must be a JSON object"), ('"sent"', "must be a JSON object"),
                 ("{}", "outcome is missing"), ('{"outcome": "delivered"}', 'invalid outcome "delivered"'),
                 ('{"outcome": 1}', "outcome must be a string"),
                 ('{"outcome": "sent", "transport": "pigeon"}', 'invalid transport "pigeon"'),
                 ('{"outcome": "sent", "attempt": 0}', "attempt must be an integer between 1 and 99999"),
                 ('{"outcome": "sent", "attempt": 1.5}', "attempt must be an integer"),
                 ('{"outcome": "sent", "attempt": "2"}', "attempt must be an integer"),
                 ('{"outcome": "sent", "reply_code": 1000}', "reply_code must be an integer between 0 and 999"),
                 ('{"outcome": "sent", "started_at": "yesterday at noon"}', "started_at is not a timestamp"),
                 ('{"outcome": "sent", "finished_at": "2026-13-45"}', "finished_at is not a timestamp"),
                 ('{"outcome": "retrying", "next_attempt_at": "infinity"}', "next_attempt_at must be a finite time"),
                 ('{"outcome": "sent", "unknown_outcome": "yes"}', "unknown_outcome must be a boolean"),
                 ('{"outcome": "sent", "error": ["x"]}', "error must be a string"),
                 ('{"outcome": "sent", "recipients": {}}', "recipients must be an array"),
                 ('{"outcome": "sent", "recipients": [1]}', "each recipient result must be an object"),
                 ('{"outcome": "sent", "recipients": [{"status": "sent"}]}', "a recipient result has no id"),
                 ('{"outcome": "sent", "recipients": [{"id": 99, "status": "sent"}]}', "has no recipient 99"),
                 ('{"outcome": "sent", "recipients": [{"id": 1, "status": "sent"}, {"id": 1, "status": "sent"}]}', "listed twice"),
                 ('{"outcome": "sent", "recipients": [{"id": 1, "status": "lost"}]}', 'invalid status "lost"'),
                 ('{"outcome": "sent", "recipients": [{"id": 1, "status": "failed"}]}', "outcome sent needs every listed recipient sent"),
                 ('{"outcome": "failed", "recipients": [{"id": 1, "status": "retrying"}]}', "status retrying needs outcome retrying"),
                 ('{"outcome": "sent", "recipients": [{"id": 1, "status": "sent", "code": "250"}]}', "code must be an integer")]:
    case(SS, "processor", "SELECT pgrelay_notifier.set_status('{nid_q}', %s)", (doc,), err("22023", why))
case(SS, "processor", "SELECT pgrelay_notifier.set_status('{nid_q}', '{{not json')", (), err("22P02", "invalid input syntax"))

# ---- pg_relay_notifier, admin -------------------------------------------------------------------

CPR = "pgrelay_notifier.create_profile"


def profile(fn=CPR, name="p_new", expect=None, secret=None, **kw):
    """A create_profile (or alter_profile) case over a valid SMTP profile."""
    args = {"host": "smtp.example.com"} if fn == CPR else {}
    args.update(kw)
    args = {k: v for k, v in args.items() if v is not _omit}
    sql = "SELECT name FROM %s(%%s%s)" % (fn, "".join(', "%s" => %%s' % k for k in args))
    case(fn, "admin", sql, [name] + list(args.values()), expect if secret is None else expect + (secret,))


profile(name=None, expect=err("22004", "profile name must not be NULL"))
for name in ["", ".hidden", "-x", "a b", "a/b", "n" * 64, "p'; DROP TABLE x; --", "ünï", "p\u202e"]:
    profile(name=name, expect=err("42602", "invalid profile name"))
profile(name="p_smtp", expect=err("42710", 'profile "p_smtp" exists already'))
profile(transport="pigeon", expect=err("22023", 'invalid transport "pigeon"'))
profile(transport=None, expect=err("22023", 'invalid transport "NULL"'))
profile(host=_omit, expect=err("22004", "an smtp profile needs a host"))
for host, why in [("smtp.example.com:25", "give the port separately"), ("smtp example.com", "may only hold letters"),
                  ("smtp.example.com\r\nX-Injected: 1", "may only hold letters"), ("", "the domain is empty"),
                  ("1.2.3", "neither a host name nor an IPv4 address"), ("[::1", "invalid host"),
                  ("[zz::1]", "the IPv6 address is malformed"), ("::1", "write an IPv6 address in brackets"),
                  ("-smtp.example.com", "inner hyphens"), ("smtp.example.com.", "empty label"),
                  ("smtp/../etc", "may only hold letters"), ("h" * 64 + ".com", "longer than 63")]:
    profile(host=host, expect=err("22023", why))
for port in (0, -1, 65536):
    profile(port=port, expect=err("22023", "port must be between 1 and 65535"))
profile(security="ssl", expect=err("22023", 'invalid security "ssl"'))
profile(username="", expect=err("22023", "username must be 1 to 256 characters without control characters"))
profile(username="relay\r\nAUTH", expect=err("22023", "username must be 1 to 256"))
profile(username="u" * 257, expect=err("22023", "username must be 1 to 256"))
profile(password="pw-1234", expect=err("22023", "password needs a username"), secret="pw-1234")
profile(username="u", password="", expect=err("22023", "password is empty"))
for ref, why in [("env:1BAD", "not a valid env: reference"), ("env:", "not a valid env: reference"),
                 ("env:A-B", "not a valid env: reference"), ("file:", "not a valid file: reference"),
                 ("file:../etc/passwd", "not a valid file: reference"), ("file:.hidden", "not a valid file: reference"),
                 ("file:a/b", "not a valid file: reference"), ("file:a\nb", "not a valid file: reference"),
                 ("value:", "is an empty value: reference")]:
    profile(username="u", password=ref, expect=err("22023", why))
profile(username="u", password="pw-5678", oauth_token="tok-5678", expect=err("22023", "give one kind of credentials"),
        secret="pw-5678")
SMTP_APP = {"username": "relay@contoso.com", "tenant_id": "contoso.onmicrosoft.com",
            "client_id": "0f8fad5b-d9cb-469f-a165-70867728950e", "client_secret": "env:SMTP_APP_SECRET"}
for missing in ("tenant_id", "client_id", "client_secret"):
    profile(**dict(SMTP_APP, **{missing: _omit}), expect=err("22023", "an OAuth2 app needs tenant_id, client_id and client_secret together"))
profile(**dict(SMTP_APP, username=_omit), expect=err("22023", "an OAuth2 app needs a username"))
profile(**dict(SMTP_APP, password="pw-7890"), expect=err("22023", "give one kind of credentials"), secret="pw-7890")
profile(**dict(SMTP_APP, oauth_token="tok-7890"), expect=err("22023", "give one kind of credentials"), secret="tok-7890")
profile(**dict(SMTP_APP, client_id="app'; DROP TABLE x; --"), expect=err("22023", "is not a GUID"))
profile(**dict(SMTP_APP, tenant_id="../../common"), expect=err("22023", "is neither a GUID nor a domain name"))
profile(**dict(SMTP_APP, client_secret="file:../secret"), expect=err("22023", "not a valid file: reference"))
profile(**dict(SMTP_APP, security="none"), expect=err("22023", "never sent over an unencrypted connection"))
profile(**dict(SMTP_APP, login_url="http://login.example.com"), expect=err("22023", "login_url"))
profile(login_url="https://login.microsoftonline.com", expect=err("22023", "login_url is a setting of the OAuth2 app"))
profile(scope="https://outlook.office365.com/.default", expect=err("22023", "scope is a setting of the OAuth2 app"))
profile(security="none", username="u", password="pw-9012", expect=err("22023", "never sent over an unencrypted connection"),
        secret="pw-9012")
for path in ["relative/ca.pem", "../ca.pem", "", "/etc/ssl/ca\n.pem", "/" + "x" * 1024]:
    profile(ca_file=path, expect=err("22023", "ca_file must be an absolute path"))
for helo, why in [("bad name", "is not a host name or address literal"), ("[1.2.3.999]", "is not a host name"),
                  ("helo\r\nMAIL FROM", "is not a host name")]:
    profile(helo_name=helo, expect=err("22023", why))
GRAPH = {"transport": "graph", "host": _omit, "tenant_id": "contoso.onmicrosoft.com",
         "client_id": "0f8fad5b-d9cb-469f-a165-70867728950e", "client_secret": "env:GRAPH_SECRET",
         "sender": "relay@contoso.com"}
profile(**dict(GRAPH, tenant_id=_omit), expect=err("22004", "a graph profile needs tenant_id"))
profile(**dict(GRAPH, tenant_id="not a tenant"), expect=err("22023", "is neither a GUID nor a domain name"))
profile(**dict(GRAPH, client_id="my-app"), expect=err("22023", "is not a GUID"))
profile(**dict(GRAPH, sender="nobody"), expect=err("22023", "is neither a mailbox address nor a user id"))
for url, why in [("http://login.example.com", "must start with https://"), ("https://login.example.com/?x=1", "no query"),
                 ("https://login.example.com/#f", "no query or fragment"), ("javascript:alert(1)", "must start with https://"),
                 ("https://login.example.com/\r\nHost: evil", "is not a valid https URL"), ("https://", "is not a valid https URL"),
                 ("https://user@login.example.com", "is not a valid https URL"), ("HTTPS://x.example", "must start with https://")]:
    profile(**dict(GRAPH, login_url=url), expect=err("22023", "login_url"))
    profile(**dict(GRAPH, graph_url=url), expect=err("22023", "graph_url"))
profile(**dict(GRAPH, port=25), expect=err("22023", "port is not a setting of transport graph"))
profile(from_address="Ann <ann@example.org>", expect=err("22023", "invalid from_address"))
profile(from_address="not-an-address", expect=err("22023", "invalid from_address"))
for label, ch in CONTROLS.items():
    profile(from_name="Support" + ch + "Team", expect=err("22023", "from_name must be at most 256 characters without control"))
profile(from_name="n" * 257, expect=err("22023", "from_name must be at most 256"))
for v in ("0", "-1 s", "11 minutes"):
    profile(connect_timeout=v, expect=err("22023", "connect_timeout must be between 1 millisecond and 10 minutes"))
for v in ("0", "25 hours", "-1 day"):
    profile(timeout=v, expect=err("22023", "timeout must be between 1 millisecond and 24 hours"))
profile(connect_timeout="30 seconds", timeout="10 seconds", expect=err("22023", "must not exceed timeout"))
profile(timeout="eventually", expect=err("22007", "invalid input syntax"))
for v in (0, -5, 1000001):
    profile(rate_limit_per_minute=v, expect=err("22023", "rate_limit_per_minute must be between 1 and 1000000"))
for v in (0, 1023, 104857601, -1):
    profile(max_message_bytes=v, expect=err("22023", "max_message_bytes must be between 1024 and 104857600"))
profile(allowed_from=["a%d@example.org" % i for i in range(101)], expect=err("54000", "allowed_from has 101 entries"))
for entry in ["nobody", "@", "@localhost", "@exa mple.org", "Ann <ann@example.org>", None, "@example.org\r\n"]:
    profile(allowed_from=[entry], expect=err("22023", "allowed_from entry"))
for scope in ['a "b"', "a  b", " a", "a\\b", "ü", "a\tb"]:
    profile(**dict(GRAPH, scope=scope), expect=err("22023", "is not an OAuth2 scope"))
    profile(**dict(SMTP_APP, scope=scope), expect=err("22023", "is not an OAuth2 scope"))
for path in ["relative/ca.pem", "/etc/ssl/ca\r\n.pem"]:
    profile(**dict(GRAPH, ca_file=path), expect=err("22023", "ca_file must be an absolute path"))

APR = "pgrelay_notifier.alter_profile"
profile(APR, name="nope", debug=True, expect=err("42704", 'profile "nope" does not exist'))
profile(APR, name=None, debug=True, expect=err("42704", 'profile "NULL" does not exist'))
profile(APR, name="p_smtp", reset=["host"], expect=err("22023", "host cannot be reset"))
profile(APR, name="p_smtp", reset=["transport"], expect=err("22023", "transport cannot be reset"))
profile(APR, name="p_smtp", reset=["colour"], expect=err("22023", 'unknown setting "colour" in reset'))
profile(APR, name="p_smtp", reset=["port; DROP TABLE x"], expect=err("22023", "unknown setting"))
profile(APR, name="p_smtp", reset=[None], expect=err("22004", "reset must not hold NULL"))
profile(APR, name="p_smtp", port=2525, reset=["port"], expect=err("22023", "port is both given and reset"))
profile(APR, name="p_smtp", port=70000, expect=err("22023", "port must be between 1 and 65535"))
profile(APR, name="p_smtp", host="bad host", expect=err("22023", "invalid host"))
profile(APR, name="p_smtp", username="u", password="pw-3456", expect=err("22023", "never sent over an unencrypted"),
        secret="pw-3456")
profile(APR, name="p_smtp", from_name="A\u202eB", expect=err("22023", "from_name must be at most 256"))
profile(APR, name="p_smtp", tenant_id="contoso.onmicrosoft.com", expect=err("22023", "an OAuth2 app needs tenant_id, client_id and client_secret together"))
profile(APR, name="p_graph", client_secret="", expect=err("22023", "client_secret is empty"))
profile(APR, name="p_graph", reset=["client_secret"], expect=err("22023", "client_secret cannot be reset"))

DP = "pgrelay_notifier.drop_profile"
case(DP, "admin", "SELECT pgrelay_notifier.drop_profile(NULL)", (), err("42704", 'profile "NULL" does not exist'))
case(DP, "admin", "SELECT pgrelay_notifier.drop_profile('nope')", (), err("42704", 'profile "nope" does not exist'))
case(DP, "admin", "SELECT pgrelay_notifier.drop_profile('p_smtp')", (), err("2BP01", "is used by channel(s)"))
case(DP, "admin", "SELECT pgrelay_notifier.drop_profile(%s)", ("p_smtp' OR '1'='1",), err("42704", "does not exist"))

CC = "pgrelay_notifier.create_channel"
case(CC, "admin", "SELECT pgrelay_notifier.create_channel(NULL, 'p_smtp')", (), err("22004", "channel and profile must not be NULL"))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', NULL)", (), err("22004", "must not be NULL"))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'nope')", (), err("42704", 'profile "nope" does not exist'))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('c_mail', 'p_smtp')", (), err("42710", 'channel "c_mail" exists already'))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('c_sql', 'p_smtp')", (), err("42710", 'pg_relay channel "c_sql" exists already'))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('has space', 'p_smtp')", (), err("42602", 'invalid channel name "has space"'))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel(%s, 'p_smtp')", ("m'); DROP TABLE pgrelay.queue; --",),
     err("42602", "invalid channel name"))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', node_restricted => true)", (),
     err("0A000", "notify channels cannot be node_restricted"))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', options => '{{\"node_restricted\": true}}')", (),
     err("0A000", "cannot be node_restricted"))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', options => '[1]')", (),
     err("22023", "options must be a JSON object"))
for key in ["handler", "channel", "action_type"]:
    case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', options => %s)",
         (Jsonb({key: "x"}),), err("22023", 'option "%s" cannot be set' % key))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', options => %s)",
     (Jsonb({"colour": "red"}),), err("22023", 'unknown channel option "colour"'))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', options => %s)",
     (Jsonb({"max_attempts => 1, handler": 1}),), err("22023", "unknown channel option"))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', max_attempts => 3, options => %s)",
     (Jsonb({"max_attempts": 4}),), err("22023", 'channel option "max_attempts" is given twice'))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', options => %s)",
     (Jsonb({"max_attempts": "1); DROP TABLE pgrelay.queue; --"}),), err("22P02", "invalid input syntax"))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', max_attempts => 0)", (),
     err("22023", "max_attempts must be between 1 and 1000"))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', timeout => '2 days')", (),
     err("22023", "timeout must be between"))
case(CC, "admin", "SELECT pgrelay_notifier.create_channel('m_new', 'p_smtp', concurrency_mode => 'solo')", (),
     err("22023", 'invalid concurrency_mode "solo"'))
AC = "pgrelay_notifier.alter_channel"
case(AC, "admin", "SELECT pgrelay_notifier.alter_channel('nope')", (), err("42704", 'channel "nope" is not a pg_relay_notifier channel'))
case(AC, "admin", "SELECT pgrelay_notifier.alter_channel('c_sql')", (), err("42704", "is not a pg_relay_notifier channel"))
case(AC, "admin", "SELECT pgrelay_notifier.alter_channel('c_mail', profile => 'nope')", (), err("42704", 'profile "nope" does not exist'))
case(AC, "admin", "SELECT pgrelay_notifier.alter_channel('c_mail', options => '\"x\"')", (), err("22023", "options must be a JSON object"))
case(AC, "admin", "SELECT pgrelay_notifier.alter_channel('c_mail', backoff_max => '1 year')", (), err("22023", "backoff_max must be at most 30 days"))
case(AC, "admin", "SELECT pgrelay_notifier.alter_channel('c_mail', node_restricted => true)", (), err("0A000", "cannot be node_restricted"))
DC = "pgrelay_notifier.drop_channel"
case(DC, "admin", "SELECT pgrelay_notifier.drop_channel(NULL)", (), err("42704", "is not a pg_relay_notifier channel"))
case(DC, "admin", "SELECT pgrelay_notifier.drop_channel('c_sql')", (), err("42704", "is not a pg_relay_notifier channel"))
case(DC, "admin", "SELECT pgrelay_notifier.drop_channel('c_mail')", (), err("55006", "still has 3 notification(s) waiting"))
RQ = "pgrelay_notifier.requeue"
case(RQ, "admin", "SELECT pgrelay_notifier.requeue(NULL)", (), err("P0002", "does not exist"))
case(RQ, "admin", "SELECT pgrelay_notifier.requeue(1)", (), err("P0002", "notification 1 does not exist"))
case(RQ, "admin", "SELECT pgrelay_notifier.requeue({nid_q})", (), err("55000", "only failed or partially sent notifications"))
case(RQ, "admin", "SELECT pgrelay_notifier.requeue({nid_sent})", (), err("55000", "only failed or partially sent"))
case(RQ, "admin", "SELECT pgrelay_notifier.requeue({nid_failed}, 'infinity')", (), err("22023", "run_at must be a finite time"))
RF = "pgrelay_notifier.requeue_failed"
case(RF, "admin", "SELECT pgrelay_notifier.requeue_failed('nope')", (), err("42704", 'channel "nope" does not exist'))
case(RF, "admin", "SELECT pgrelay_notifier.requeue_failed(%s)", ("' OR 1=1 --",), err("42704", "does not exist"))
case(RF, "admin", "SELECT pgrelay_notifier.requeue_failed(NULL)", (), err("22004", "channel must not be NULL"))
case(RF, "admin", "SELECT pgrelay_notifier.requeue_failed('{nid_failed}')", (), err("42704", "does not exist"))
case(RF, "admin", "SELECT pgrelay_notifier.requeue_failed('c_mail', all_channels => true)", (), err("22023", "not both"))
case(RF, "admin", "SELECT pgrelay_notifier.requeue_failed('c_mail', error_like => %s)",
     ("%'; DELETE FROM pgrelay.queue; --",), result(0))
case(RF, "admin", "SELECT pgrelay_notifier.requeue_failed('c_mail', now(), now() - interval '1 day')", (), result(0))
case(RF, "admin", "SELECT pgrelay_notifier.requeue_failed('c_mail', finished_after => 'infinity')", (), result(0))
case(RF, "admin", "SELECT pgrelay_notifier.requeue_failed(NULL, run_at => 'infinity', all_channels => true)", (),
     err("22023", "run_at must be a finite time"))
case(RF, "admin", "SELECT pgrelay_notifier.requeue_failed('c_mail', run_at => '-infinity')", (),
     err("22023", "run_at must be a finite time"))
PU = "pgrelay_notifier.purge"
for v in (None, "-1 day", "0", "1001 years"):
    case(PU, "admin", "SELECT * FROM pgrelay_notifier.purge(%s)", (v,),
         err("22023", "older_than must be a positive interval of at most 1000 years"))
case(PU, "admin", "SELECT * FROM pgrelay_notifier.purge('soon')", (), err("22007", "invalid input syntax"))


# ---- the database the cases run in ---------------------------------------------------------------

SETUP = """
CREATE FUNCTION public.h_ok(p text) RETURNS void SECURITY DEFINER SET search_path = pg_catalog LANGUAGE sql AS '';
CREATE FUNCTION public.h_invoker(p text) RETURNS void LANGUAGE sql AS '';
CREATE FUNCTION public.h_int(p integer) RETURNS void SECURITY DEFINER SET search_path = pg_catalog LANGUAGE sql AS '';
CREATE FUNCTION public.h_private(p text) RETURNS void SECURITY DEFINER SET search_path = pg_catalog LANGUAGE sql AS '';
REVOKE EXECUTE ON FUNCTION public.h_private(text) FROM PUBLIC;
CREATE FUNCTION public.h_adminless(p text) RETURNS void SECURITY DEFINER SET search_path = pg_catalog LANGUAGE sql AS '';
REVOKE EXECUTE ON FUNCTION public.h_adminless(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.h_adminless(text) TO pgrelay_processor;
SELECT pgrelay.register('c_sql', 'sql', handler => 'public.h_ok(text)');
SELECT pgrelay.register('c_tiny', 'sql', handler => 'public.h_ok(text)', max_payload_bytes => 10);
SELECT pgrelay.register('c_off', 'sql', handler => 'public.h_ok(text)');
SELECT pgrelay.register('c_busy', 'sql', handler => 'public.h_ok(text)');
SELECT pgrelay_notifier.create_profile('p_smtp', host => '127.0.0.1', port => 2525, security => 'none',
       from_address => 'noreply@example.com', allowed_from => '{@example.net}');
SELECT pgrelay_notifier.create_profile('p_small', host => '127.0.0.1', security => 'none',
       from_address => 'noreply@example.com', max_message_bytes => 1024);
SELECT pgrelay_notifier.create_profile('p_graph', transport => 'graph', tenant_id => 'contoso.onmicrosoft.com',
       client_id => '0f8fad5b-d9cb-469f-a165-70867728950e', client_secret => 'env:GRAPH_SECRET',
       sender => 'relay@contoso.com');
SELECT pgrelay_notifier.create_channel('c_mail', 'p_smtp');
SELECT pgrelay_notifier.create_channel('c_small', 'p_small');
SELECT pgrelay_notifier.create_channel('c_mail_off', 'p_smtp', active => false);
SELECT pgrelay.register_webhook('c_hook', 'https://127.0.0.1:9/hook', signing_secret => 'env:HOOK_SECRET');
SELECT pgrelay.register_webhook('c_plain', 'http://127.0.0.1:9/plain', allow_http => true);
CREATE TABLE public.w_tab (id int, note text);
CREATE VIEW public.w_view AS SELECT * FROM public.w_tab;
SELECT pgrelay.set_node(1, 'n1');
SELECT pgrelay.create_topic('t_orders');
SELECT pgrelay.create_topic('t_off');
SELECT pgrelay.create_topic('t_empty');
SELECT pgrelay.subscribe('t_orders', 'c_sql', '{order.*}');
SELECT pgrelay.subscribe('t_orders', 'c_tiny', '{order.big}');
SELECT pgrelay.subscribe('t_off', 'c_off');
CREATE TABLE public.w_secret (id int);
CREATE TABLE public.w_cols (id int, secret text);
CREATE TABLE public.w_rls (id int, owner name);
ALTER TABLE public.w_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY w_rls_mine ON public.w_rls USING (owner = current_user);
"""


@pytest.fixture(scope="module")
def bench(cluster):
    """The database, its login roles (one per role of the catalogue) and the ids the cases name."""
    d = testlib.Database(cluster, extensions=("pg_relay", "pg_relay_notifier"))
    suffix = os.getpid()
    roles = {"producer": "pgrelay_producer", "producer2": "pgrelay_producer", "admin": "pgrelay_admin",
             "processor": "pgrelay_processor", "monitor": "pgrelay_monitor"}
    logins = {k: "proof_%s_%d" % (k, suffix) for k in roles}
    for k, group in roles.items():
        d.sql('CREATE ROLE "%s" LOGIN IN ROLE %s' % (logins[k], group))
    conns = {}
    try:
        d.conn.execute(SETUP)
        d.sql('GRANT EXECUTE ON FUNCTION public.h_private(text) TO "%s"' % logins["admin"])
        d.sql('GRANT SELECT, TRIGGER ON public.w_tab, public.w_view TO "%s"' % logins["admin"])
        d.sql('GRANT TRIGGER, SELECT (id) ON public.w_cols TO "%s"' % logins["admin"])
        d.sql('GRANT SELECT, TRIGGER ON public.w_rls TO "%s"' % logins["admin"])
        conns = {k: psycopg.connect(d.dsn.replace("user=postgres", "user=" + v), autocommit=True)
                 for k, v in logins.items()}
        ids = {}
        p = conns["producer"]
        ids["q_busy"] = p.execute("SELECT pgrelay.notify('c_busy', 'waiting')").fetchone()[0]
        ids["q_future"] = p.execute("SELECT pgrelay.notify('c_sql', 'later', now() + interval '1 day')").fetchone()[0]
        ids["q_held"] = p.execute("SELECT pgrelay.notify('c_sql', 'held', now() + interval '1 day', key => 'held')").fetchone()[0]
        ids["q_off"] = p.execute("SELECT pgrelay.notify('c_off', 'held')").fetchone()[0]
        ids["q_hook_future"] = p.execute("SELECT pgrelay.notify('c_hook', '{}', now() + interval '1 day')").fetchone()[0]
        d.sql("SELECT pgrelay.register('c_off', active => false)")
        send_sql = "SELECT pgrelay_notifier.send('c_mail', ARRAY['ann@example.org'], 'S', 'B', run_at => now() + interval '1 day')"
        ids["nid_q"] = p.execute(send_sql).fetchone()[0]
        ids["nid_sent"] = p.execute(send_sql).fetchone()[0]
        ids["nid_failed"] = p.execute(send_sql).fetchone()[0]
        ids["nid_other"] = conns["producer2"].execute(send_sql).fetchone()[0]
        nid_due = conns["producer2"].execute(send_sql.replace(", run_at => now() + interval '1 day'", "")).fetchone()[0]
        d.sql("SELECT pgrelay_notifier.set_status(%s, '{\"outcome\": \"sent\"}')", (str(ids["nid_sent"]),))
        d.sql("SELECT pgrelay_notifier.set_status(%s, '{\"outcome\": \"failed\"}')", (str(ids["nid_failed"]),))
        d.sql("DELETE FROM pgrelay.queue WHERE payload IN (%s, %s, %s)",
              (str(ids["nid_sent"]), str(ids["nid_failed"]), str(ids["nid_other"])))
        ids["ev_q"] = d.scalar("SELECT queue_event_id FROM pgrelay_notifier.notifications WHERE notification_id = %s",
                               (ids["nid_q"],))
        ids["q_mail"] = d.scalar("SELECT id FROM pgrelay.queue WHERE payload = %s", (str(ids["nid_q"]),))
        ids["q_mail_due"] = d.scalar("SELECT id FROM pgrelay.queue WHERE payload = %s", (str(nid_due),))
        yield d, conns, ids
    finally:
        for c in conns.values():
            c.close()
        d.close()
        with cluster.connect() as c:
            for v in logins.values():
                c.execute('DROP ROLE IF EXISTS "%s"' % v)


def snapshot(conn):
    """{table: (rows, md5 of its sorted rows)} for every table of both schemas."""
    tables = [r[0] for r in conn.execute(
        "SELECT c.oid::regclass::text FROM pg_class c WHERE c.relkind = 'r'"
        " AND c.relnamespace IN ('pgrelay'::regnamespace, 'pgrelay_notifier'::regnamespace) ORDER BY 1").fetchall()]
    sql = " UNION ALL ".join("SELECT '%s', count(*), md5(COALESCE(string_agg(t::text, '|' ORDER BY t::text), ''))"
                             " FROM %s t" % (t, t) for t in tables)
    return {name: (n, h) for name, n, h in conn.execute(sql).fetchall()}


def fill(p, ids):
    """A parameter with {name} placeholders for the ids of the bench filled in (JSON is left as is)."""
    if not isinstance(p, str) or "{" not in p:
        return p
    try:
        return p.format(**ids)
    except (KeyError, IndexError, ValueError):
        return p


def run_case(c, conns, ids, superconn):
    """None when the case behaves as the catalogue says, else what went wrong."""
    sql = c.sql.format(**ids)
    params = [fill(p, ids) for p in c.params]
    before = snapshot(superconn)
    got_err, value = None, None
    try:
        cur = conns[c.role].execute(sql, params or None)
        row = cur.fetchone() if cur.description else None
        value = row[0] if row else None
    except psycopg.Error as e:
        got_err = e
    after = snapshot(superconn)
    problems = []
    if before != after:
        problems.append("changed " + ", ".join(t for t in before if before[t] != after[t]))
    kind = c.expect[0]
    if kind == "error":
        state, text = c.expect[1], c.expect[2]
        if got_err is None:
            problems.append("no error (returned %r)" % (value,))
        else:
            msg = got_err.diag.message_primary or ""
            if got_err.diag.sqlstate != state:
                problems.append("SQLSTATE %s, not %s (%s)" % (got_err.diag.sqlstate, state, msg))
            if text not in msg:
                problems.append("message %r does not say %r" % (msg, text))
            if UNSAFE.search(msg):
                problems.append("message %r holds a control or invisible character" % msg)
            for secret in c.expect[3:]:
                if secret in str(got_err):
                    problems.append("message repeats the secret %r" % secret)
    else:
        want = c.expect[1]
        if got_err is not None:
            problems.append("error %s: %s" % (got_err.diag.sqlstate, got_err.diag.message_primary))
        elif isinstance(want, str) and isinstance(value, str) and want not in value or \
                not isinstance(want, str) and value != want:
            problems.append("returned %r, not %r" % (value, want))
    return "; ".join(problems) or None


def entry_points(conn):
    """{key: signature} of every function a role of pg_relay may execute; key is schema.name, or
    the full signature for overloaded names (as CASES names them)."""
    rows = conn.execute("""
        SELECT n.nspname || '.' || p.proname, n.nspname || '.' || p.proname || '(' || oidvectortypes(p.proargtypes) || ')'
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = ANY(%s) AND EXISTS (
            SELECT 1 FROM unnest(ARRAY['pgrelay_producer', 'pgrelay_processor', 'pgrelay_admin', 'pgrelay_monitor']) r
            WHERE has_function_privilege(r, p.oid, 'EXECUTE'))""", (list(SCHEMAS),)).fetchall()
    names = [short for short, _ in rows]
    return {short if names.count(short) == 1 else full: full for short, full in rows}


def test_every_entry_point_has_cases(bench):
    """Every function that producer, processor, admin or monitor may execute has bad-input cases
    here, and every case names an entry point that exists."""
    d, conns, ids = bench
    eps = entry_points(d.conn)
    covered = {}
    for c in CASES:
        covered[c.fn] = covered.get(c.fn, 0) + 1
    missing = ["%s has no bad-input case: add rows to CASES in test/e2e/test_bad_input.py (the call, the role "
               "that may make it, and the SQLSTATE and message it must fail with, or the documented result)"
               % full for key, full in sorted(eps.items()) if key not in covered]
    unknown = ["CASES names %s, which is not an entry point (a function some role may execute); "
               "name overloaded functions with their argument types" % fn for fn in sorted(set(covered) - set(eps))]
    assert not missing + unknown, "\n  ".join([""] + missing + unknown)
    assert len(CASES) >= 100


def test_catalogue(bench):
    """Every case: the SQLSTATE and message (or the documented result) it promises, a message of
    one line without control or invisible characters that repeats no secret, and not one row of
    either schema changed."""
    d, conns, ids = bench
    problems = []
    for c in CASES:
        why = run_case(c, conns, ids, d.conn)
        if why:
            problems.append("%s as %s: %s %r\n      -> %s" % (c.fn, c.role, c.sql, [p if not isinstance(p, str) or len(p) < 60
                                                                                   else p[:57] + "..." for p in c.params], why))
    per_fn = {}
    for c in CASES:
        per_fn[c.fn] = per_fn.get(c.fn, 0) + 1
    assert not problems, "%d of %d cases failed:\n  %s" % (len(problems), len(CASES), "\n  ".join(problems))


# ---- the Processor's flags and config keys --------------------------------------------------------

def pg_relay(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([testlib.PROCESSOR] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, errors="surrogateescape", timeout=60, env=e)


# (setting, bad value, what the one line says). Each runs as --setting=value and as a config file line.
SETTINGS_CASES = [
    ("batch-size", "0", "expected an integer from 1 to 100000"), ("batch-size", "100001", "from 1 to 100000"),
    ("batch-size", "-1", "from 1 to 100000"), ("batch-size", "1e3", "from 1 to 100000"),
    ("batch-size", "99999999999999999999", "from 1 to 100000"), ("batch-size", "", "from 1 to 100000"),
    ("batch-size", "0x10", "from 1 to 100000"), ("batch-size", "ten", "from 1 to 100000"),
    ("dbname", "host=/tmp port", "invalid --dbname"), ("dbname", "postgresql://[::1", "invalid --dbname"),
    ("dbname", "bogus=1", "invalid --dbname"), ("dbname", "host='unterminated", "invalid --dbname"),
    ("log-format", "xml", "expected one of text, json"), ("log-format", "", "one of text, json"),
    ("log-format", "JSON", "one of text, json"), ("log-format", "json\u202e", "json\\xe2\\x80\\xae"),
    ("log-level", "loud", "expected one of error, warn, info, debug, trace"), ("log-level", "DEBUG", "one of error"),
    ("log-level", "", "one of error"),
    ("max-delivery-time", "999ms", "a duration from 1000ms to 3600s"), ("max-delivery-time", "2h", "from 1000ms to 3600s"),
    ("max-delivery-time", "0", "from 1000ms"), ("max-delivery-time", "-1s", "from 1000ms"),
    ("max-delivery-time", "inf", "from 1000ms"), ("max-delivery-time", "nan", "from 1000ms"),
    ("max-delivery-time", "5 fortnights", "from 1000ms"), ("max-delivery-time", "1e3", "from 1000ms"),
    ("mode", "cluster", "expected one of single, multi-node, leader"), ("mode", "", "one of single"),
    ("mode", "leader", "--once cannot be used with --mode=leader"),
    ("mode", "multi-node", "--once cannot be used with --mode=multi-node"), ("mode", "Leader", "one of single"),
    ("once", "maybe", "expected on or off"), ("once", "2", "on or off"),
    ("poll-interval", "9ms", "a duration from 10ms to 3600s"), ("poll-interval", "2h", "from 10ms to 3600s"),
    ("poll-interval", "0x10", "from 10ms"), ("poll-interval", "fast", "from 10ms"), ("poll-interval", "1,5s", "from 10ms"),
    ("poll-interval", "1.s", "from 10ms"), ("poll-interval", "99999999999999999999s", "from 10ms"),
    ("reconnect-max", "99ms", "a duration from 100ms to 3600s"), ("reconnect-max", "2h", "from 100ms"),
    ("secret-env", "SMTP_PASSWORD", "is not VARIABLE=profile/NAME, VARIABLE=webhook/CHANNEL or VARIABLE=channel/CHANNEL"),
    ("secret-env", "PGPASSWORD=profile/default", "PGPASSWORD is one of the Processor's own connection settings"),
    ("secret-env", "PGHOST=webhook/x", "own connection settings"),
    ("secret-env", "X=chanel/a", "is neither profile, webhook nor channel"),
    ("secret-env", "1X=profile/a", "is not an environment variable name"),
    ("secret-env", "X=profile/", "is not VARIABLE=profile/NAME"),
    ("secret-env", "X\x1b=profile/a", "X\\x1b"),
    ("secret-env", "X=profile/a" + ",Y=profile/b" * 400, "longer than 4095 bytes"),
    ("secrets-dir", "/nonexistent/proof", "No such file or directory"),
    ("secrets-dir", "/etc/passwd", "is not a directory"),
    ("secrets-dir", "/nonexistent\nfake line", "\\x0afake line"),
    ("shutdown-timeout", "-1", "a duration from 0ms to 3600s"), ("shutdown-timeout", "2h", "from 0ms to 3600s"),
    ("shutdown-timeout", "soon", "from 0ms"),
    ("metrics", "9471", "expected HOST:PORT"), ("metrics", "127.0.0.1:65536", "port must be a number from 0 to 65535"),
    ("metrics", "::1:9471", "IPv6 address goes in brackets"), ("metrics", "[::1]9471", "expected [IPv6 address]:PORT"),
    ("metrics", "127.0.0.1:http", "port must be a number"), ("metrics", "127.0.0.1:-1", "port must be a number"),
    ("metrics", "127.0.0.1:9471\nx", "\\x0ax"), ("metrics", "\u202e127.0.0.1", "\\xe2\\x80\\xae127.0.0.1"),
    ("events-per-commit", "0", "expected an integer from 1 to 1000"), ("events-per-commit", "1001", "from 1 to 1000"),
    ("events-per-commit", "-1", "from 1 to 1000"), ("events-per-commit", "5e1", "from 1 to 1000"),
    ("events-per-commit", "", "from 1 to 1000"), ("events-per-commit", "fifty", "from 1 to 1000"),
    ("events-per-commit", "\u200b50", "\\xe2\\x80\\x8b50"),
    ("workers", "0", "expected an integer from 1 to 64"), ("workers", "65", "from 1 to 64"),
    ("workers", "abc", "from 1 to 64"), ("workers", "-1", "from 1 to 64"), ("workers", "4.5", "from 1 to 64"),
    ("workers", "\u200b4", "\\xe2\\x80\\x8b4"),
    # no sign, and no white space around the digits (a file's value keeps the spaces inside its quotes)
    ("workers", "+4", "from 1 to 64"), ("workers", "' 4'", "from 1 to 64"), ("batch-size", "+1000", "from 1 to 100000"),
    ("events-per-commit", "'50 '", "from 1 to 1000"), ("events-per-commit", "-0", "from 1 to 1000"),
]
FLAG_CASES = [
    (["--bogus"], 'unknown option "--bogus"'), (["-x"], 'unknown option "-x"'),
    # --notifier belongs to pg_relay install and upgrade (test_managed.py has their bad input)
    (["--notifier"], 'unknown option "--notifier"'),
    (["--workers"], 'option "--workers" needs a value'), (["-w"], 'option "-w" needs a value'),
    (["--workers= 4"], 'invalid value " 4" for --workers'), (["--batch-size=1000 "], 'invalid value "1000 " for --batch-size'),
    (["--config"], 'option "--config" needs a value'), (["extra"], 'unexpected argument "extra"'),
    (["--workers=2", "--", "--once"], 'unexpected argument "--once"'),
    (["--config=/nonexistent/proof.conf"], "could not open config file"),
    (["--config=/etc"], 'config file "/etc" is not a regular file'),
    (["--config=/dev/null"], 'config file "/dev/null" is not a regular file'),
    (["--config=/nonexistent\nfake line"], "\\x0afake line"),
    (["--help=yes"], 'unknown option "--help=yes"'), (["--version=1"], 'unknown option "--version=1"'),
    (["--sample-config=x"], 'unknown option "--sample-config=x"'), (["--verbose=3"], 'unknown option "--verbose=3"'),
]
# Whole config files that are broken as files (the line each error names).
FILE_CASES = [
    ("workers = 2\nnot_a_key = 1\n", 'line 2: unknown setting "not_a_key"'),
    ("workers 2\n", "line 1: expected key = value"),
    ("[pg_relay]\n", "line 1: expected key = value"),
    ("workers = 2 # two\n", 'line 1: invalid value "2 # two" for workers'),
    ("work\u200bers = 2\n", 'unknown setting "work\\xe2\\x80\\x8bers"'),
    ("workers\ufeff = 2\n", 'unknown setting "workers\\xef\\xbb\\xbf"'),
    ("\u202eworkers = 2\n", 'unknown setting "\\xe2\\x80\\xaeworkers"'),
    ("workers = 2\nlog_level = 'warn\n", "line 2: invalid value \"'warn\" for log-level"),
    ("workers = '2'\x00\n", "line 1: the line contains a NUL byte"),
    ("dbname = '" + "x" * 70000 + "'\n", "line 1: the line is longer than 65536 bytes"),
    ("=2\n", 'line 1: unknown setting ""'),
    ("help = on\n", 'line 1: unknown setting "help"'),
    ("config = /etc/pg_relay.conf\n", 'line 1: unknown setting "config"'),
]


def settings_of(binary_output):
    return sorted(set(re.findall(r"^#([a-z-]+) = ", binary_output, re.M)))


@pytest.fixture(scope="module")
def queued(cluster):
    """A database with one due event: a Processor that accepted a bad setting would run it."""
    d = testlib.Database(cluster)
    d.sql("CREATE FUNCTION public.h(p text) RETURNS void SECURITY DEFINER SET search_path = pg_catalog LANGUAGE sql AS ''")
    d.sql("SELECT pgrelay.register('c', 'sql', handler => 'public.h(text)')")
    d.sql("SELECT pgrelay.notify('c', 'untouched')")
    yield d
    d.close()


def test_every_flag_and_config_key_has_cases():
    """Every setting --sample-config lists has bad values here, and so has every flag --help
    shows; a setting or flag added later without cases fails with what to add where."""
    keys = settings_of(pg_relay("--sample-config").stdout)
    assert len(keys) >= 12
    have = {k for k, _, _ in SETTINGS_CASES}
    missing = ["setting %s has no bad-value case: add rows to SETTINGS_CASES in test/e2e/test_bad_input.py" % k
               for k in keys if k not in have]
    stale = ["SETTINGS_CASES names %s, which --sample-config does not list" % k for k in sorted(have - set(keys))]
    flags = set(re.findall(r"--([a-z-]+)", pg_relay("--help").stdout))
    tried = {re.match(r"--?([a-z-]*)", a).group(1) for args, _ in FLAG_CASES for a in args if a.startswith("-")}
    missing += ["flag --%s has no bad-input case: add rows to FLAG_CASES (or SETTINGS_CASES) in "
                "test/e2e/test_bad_input.py" % f for f in sorted(flags - have - tried)]
    assert not missing + stale, "\n  ".join([""] + missing + stale)


def check_refused(r, says, db, problems, what):
    lines = r.stderr.splitlines()
    ok = (r.returncode == 2 and len(lines) == 2 and lines[0].startswith("pg_relay: ") and says in lines[0]
          and lines[1] == 'Try "pg_relay --help" for more information.' and r.stdout == ""
          and not UNSAFE.search(lines[0]))
    if not ok:
        problems.append("%s: exit %s, stderr %r" % (what, r.returncode, r.stderr[:300]))
    if db.sql("SELECT payload FROM pgrelay.queue") != [("untouched",)] or db.scalar("SELECT count(*) FROM pgrelay.log"):
        problems.append("%s: the queue was touched" % what)


def test_bad_settings_exit_2_with_one_line_and_touch_nothing(queued, tmp_path):
    """Each bad value of each setting, as a flag and as a config file line; each bad flag; each
    broken config file: exit status 2, one line naming the problem (bytes that are not printable
    ASCII shown as \\xNN), the hint line, and the due event still queued."""
    problems, n = [], 0
    for key, value, says in SETTINGS_CASES:
        r = pg_relay("-d", queued.dsn, "--once", "--%s=%s" % (key, value))
        check_refused(r, says, queued, problems, "--%s=%r" % (key, value))
        n += 1
        if "\n" in value:
            continue        # a line break ends the line in a file: FILE_CASES has those
        conf = tmp_path / ("c%d.conf" % n)
        # no -d on the command line: a flag would win over the file; the bad line comes last
        conf.write_text("dbname = '%s'\nonce = on\n%s = %s\n"
                        % (queued.dsn, key.replace("-", "_") if n % 2 else key, value))
        r = pg_relay("--config", str(conf))
        check_refused(r, says, queued, problems, "%s = %r in a file" % (key, value))
        n += 1
    for args, says in FLAG_CASES:
        check_refused(pg_relay("-d", queued.dsn, "--once", *args), says, queued, problems, repr(args))
        n += 1
    for text, says in FILE_CASES:
        conf = tmp_path / ("f%d.conf" % n)
        conf.write_bytes(text.encode())
        r = pg_relay("-d", queued.dsn, "--once", "--config", str(conf))
        check_refused(r, str(conf) + " " + says if says.startswith("line") else says, queued, problems, repr(text[:40]))
        n += 1
    assert not problems, "%d of %d cases failed:\n  %s" % (len(problems), n, "\n  ".join(problems))
    assert n >= 100


def test_a_password_in_a_bad_dbname_is_not_repeated():
    r = pg_relay("--dbname=host=/tmp password=hunter2-proof port")
    assert r.returncode == 2 and "hunter2-proof" not in r.stderr and "invalid --dbname" in r.stderr
