"""Webhooks end to end: pgrelay.register_webhook() and notify() in the database, the Processor's held
transaction, and a real receiver (test/fixtures/hookd.py) over HTTPS with the throwaway CA, which
checks every Standard Webhooks signature with Python's hmac, independently of the Processor."""
import datetime
import json
import os
import signal
import socket
import subprocess

import testlib
from testlib import HookServer as H

TOKEN = "Bearer t0ken-from-the-environment"
FILE_KEY = "key-read-from-a-secrets-file"
ENV = {"HOOK_SECRET": H.SECRET, "HOOK_TOKEN": TOKEN}
# the variables the channel "hook" may name as env: (the Processor's --secret-env)
BIND = "--secret-env=HOOK_SECRET=webhook/hook, HOOK_TOKEN=webhook/hook, NOT_SET_ANYWHERE=webhook/hook"


def hook(db, h, channel="hook", url=None, **kw):
    """register_webhook for receiver h: its CA, the signing secret env:HOOK_SECRET, short backoff."""
    args = dict(url=url or h.url(), ca_file=h.ca, signing_secret="env:HOOK_SECRET",
                backoff_base="10 milliseconds", backoff_max="50 milliseconds")
    args.update(kw)
    for k, v in list(args.items()):
        if isinstance(v, dict):
            args[k] = json.dumps(v)
    db.sql("SELECT pgrelay.register_webhook(%%(channel)s, %s)" % ", ".join("%s => %%(%s)s" % (k, k) for k in args),
           dict(args, channel=channel))


def log_rows(db, channel="hook"):
    return db.sql("SELECT event_id, attempt, outcome, error, detail, retry_at, finished_at FROM pgrelay.log"
                  " WHERE channel = %s ORDER BY id", (channel,))


def when(record):
    return datetime.datetime.fromisoformat(record["time"])


def assert_no_secret(text):
    for secret in (H.SECRET, TOKEN, FILE_KEY, "t0ken-from-the-environment"):
        assert secret not in text


def test_signed_delivery_with_secret_headers(db, hookd, processors, tmp_path):
    """One event: POST to the endpoint, signed as Standard Webhooks says (checked by hookd with
    Python's hmac), webhook-id = the event id, the channel's headers resolved from the environment
    and the secrets directory; the attempt recorded with its status, latency and the answer; no
    secret in the Processor's log or in the debug trace."""
    h = hookd()
    secrets = tmp_path / "secrets"
    (secrets / "webhook" / "hook").mkdir(parents=True)         # the channel's own secrets directory
    (secrets / "webhook" / "hook" / "hook_key").write_text(FILE_KEY + "\n")
    hook(db, h, headers={"Authorization": "env:HOOK_TOKEN", "X-Api-Key": "file:hook_key", "X-Source": "pg_relay"},
         debug=True)
    payload = '{"order": 42, "note": "caf\u00e9"}'
    eid = db.scalar("SELECT pgrelay.notify('hook', %s)", (payload,))
    p = processors("-d", db.dsn, "--once", "--secrets-dir", str(secrets), BIND, env=ENV)
    assert p.wait_exit() == 0
    [r] = h.requests()
    assert r["method"] == "POST" and r["path"] == "/hooks" and r["listener"] == "https"
    assert r["signature"] == "valid" and r["status"] == 200
    assert r["webhook_id"] == str(eid)
    assert H.header(r, "webhook-signature").startswith("v1,")
    assert abs(int(r["timestamp"]) - when(r).timestamp()) < 60
    assert H.header(r, "Content-Type") == "application/json"
    assert H.header(r, "Authorization") == TOKEN
    assert H.header(r, "X-Api-Key") == FILE_KEY
    assert H.header(r, "X-Source") == "pg_relay"
    assert h.body(r) == payload.encode()
    [(event_id, attempt, outcome, error, detail, retry_at, _)] = log_rows(db)
    assert (event_id, attempt, outcome, error, retry_at) == (eid, 1, "ok", None, None)
    assert detail["transport"] == "webhook" and detail["status"] == 200
    assert detail["webhook_id"] == str(eid) and detail["timestamp"] == int(r["timestamp"])
    assert detail["latency_ms"] >= 0 and json.loads(detail["response"]) == {"ok": True, "request": 1}
    # the trace: header lines with secrets and the signature redacted, the body by its size only
    trace = detail["trace"]
    for name in ("Authorization", "X-Api-Key", "X-Source", "webhook-signature"):
        assert "> %s: [redacted]" % name in trace
    assert "> webhook-id: %d" % eid in trace and "[body %d bytes]" % len(payload.encode()) in trace
    assert_no_secret(trace)
    assert H.header(r, "webhook-signature")[3:] not in trace
    assert_no_secret(p.log())


def test_echoed_secrets_are_cut_from_what_is_recorded(db, hookd, processors):
    """A receiver that echoes the request's headers in its error: the token and the signature are
    cut from the error (which pgrelay.failed shows monitors), the recorded answer and the trace."""
    h = hookd()
    h.script("400 echo=headers")
    hook(db, h, headers={"Authorization": "env:HOOK_TOKEN"}, debug=True)
    db.sql("SELECT pgrelay.notify('hook', '{}')")
    p = processors("-d", db.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    [r] = h.requests()
    signature = H.header(r, "webhook-signature")
    [(_, _, outcome, error, detail, _, _)] = log_rows(db)
    assert outcome == "failed" and error.startswith("HTTP 400: ") and "[redacted]" in error
    for text in (error, detail["response"], detail["trace"], db.scalar("SELECT error FROM pgrelay.failed")):
        assert_no_secret(text)
        assert signature not in text and signature[3:] not in text


def test_text_payload_put_and_keep_alive(db, hookd, processors):
    """A payload that is not JSON goes as text/plain; the channel's method (PUT); three events on one
    worker share one kept-alive TLS connection."""
    h = hookd()
    hook(db, h, method="PUT")
    for i in range(3):
        db.sql("SELECT pgrelay.notify('hook', %s)", ("plain text %d" % i,))
    p = processors("-d", db.dsn, "--once", "--workers=1", BIND, env=ENV)
    assert p.wait_exit() == 0
    rs = h.requests()
    assert [h.body(r) for r in rs] == [b"plain text 0", b"plain text 1", b"plain text 2"]
    assert {r["method"] for r in rs} == {"PUT"} and {r["signature"] for r in rs} == {"valid"}
    assert {H.header(r, "Content-Type") for r in rs} == {"text/plain; charset=utf-8"}
    assert h.counters()["https_connections"] == 1
    assert [d["reused_connection"] for *_, d, _r, _f in log_rows(db)] == [False, True, True]


def test_retries_after_500_timeout_and_dropped_connection(db, hookd, processors):
    """500, then no answer within the channel's timeout, then a connection closed without an
    answer (the receiver got the request: an unknown outcome), then 200: four attempts of one event,
    each signed afresh with the same webhook-id, the last one done."""
    h = hookd()
    h.script("500", "hang seconds=20", "drop")
    hook(db, h, timeout="1 second")
    eid = db.scalar("SELECT pgrelay.notify('hook', '{\"id\": 1}')")
    p = processors("-d", db.dsn, "--poll-interval=50ms", BIND, env=ENV)
    testlib.wait_for(lambda: any(row[2] == "ok" for row in log_rows(db)), "the event done", 60)
    rows = log_rows(db)
    assert [(r[1], r[2]) for r in rows] == [(1, "retry"), (2, "retry"), (3, "retry"), (4, "ok")]
    assert rows[0][3].startswith("HTTP 500: ")
    assert rows[1][3].startswith("no answer after the request was sent") and rows[1][4]["unknown_outcome"]
    assert rows[2][3].startswith("no answer after the request was sent") and rows[2][4]["unknown_outcome"]
    assert [r[4]["status"] for r in rows] == [500, None, None, 200]
    rs = h.requests()
    assert [r["webhook_id"] for r in rs] == [str(eid)] * 4
    assert {r["signature"] for r in rs} == {"valid"}
    assert [r["status"] for r in rs] == [500, None, None, 200]
    assert len(p.lines("attempt_failed")) == 3
    p.stop()


def test_retry_after_is_honoured(db, hookd, processors):
    """429 and 503 with Retry-After: the next attempt comes when the receiver said, not after the
    channel's backoff (an hour here)."""
    h = hookd()
    h.script("503 retry-after=2", "429 retry-after=1")
    hook(db, h, backoff_base="1 hour", backoff_max="2 hours")
    db.sql("SELECT pgrelay.notify('hook', '{}')")
    p = processors("-d", db.dsn, "--poll-interval=50ms", BIND, env=ENV)
    testlib.wait_for(lambda: any(row[2] == "ok" for row in log_rows(db)), "the event done", 30)
    rs = h.requests()
    assert [r["status"] for r in rs] == [503, 429, 200]
    assert (when(rs[1]) - when(rs[0])).total_seconds() >= 2
    assert (when(rs[2]) - when(rs[1])).total_seconds() >= 1
    rows = log_rows(db)
    assert [r[4]["retry_after_s"] for r in rows] == [2, 1, None]
    assert rows[0][3].startswith("HTTP 503 (retried when Retry-After says)")
    p.stop()


def test_permanent_answers_fail_at_once(db, hookd, processors):
    """4xx (but 408, 425, 429) and 3xx fail the event at once: no retry, in pgrelay.failed."""
    h = hookd()
    h.script("400", "404", "301 location=https://elsewhere.example/hook", "408", "pass")
    hook(db, h)
    ids = [db.scalar("SELECT pgrelay.notify('hook', %s)", ('{"n": %d}' % i,)) for i in range(4)]
    p = processors("-d", db.dsn, "--poll-interval=50ms", "--workers=1", BIND, env=ENV)
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "the queue drained", 30)
    p.stop()
    outcome = {e: [(r[2], r[3]) for r in log_rows(db) if r[0] == e] for e in ids}
    assert outcome[ids[0]] == [("failed", 'HTTP 400: {"ok": false, "request": 1}')]
    assert outcome[ids[1]][0][1].startswith("HTTP 404")
    assert outcome[ids[2]] == [("failed", "HTTP 301: redirects are not followed; register the endpoint's new URL"
                                          " (Location: https://elsewhere.example/hook)")]
    assert [o for o, _ in outcome[ids[3]]] == ["retry", "ok"]
    assert sorted(db.sql("SELECT event_id FROM pgrelay.failed")) == sorted([(i,) for i in ids[:3]])


def test_gone_pauses_the_channel(db, hookd, processors):
    """410 Gone: the event fails, the channel is paused (its producers keep queueing) and its
    endpoint marked gone, with a webhook_gone line; resume() clears it and the queue drains."""
    h = hookd()
    h.script("410")
    hook(db, h)
    first = db.scalar("SELECT pgrelay.notify('hook', '{\"n\": 1}')")
    p = processors("-d", db.dsn, "--poll-interval=50ms", BIND, env=ENV)
    line = p.wait_log(r"webhook_gone .*channel=hook")
    assert "status=410" in line.string and "endpoint=%s" % h.base_url in line.string
    assert "action=channel_paused" in line.string
    assert db.sql("SELECT state, gone_status FROM pgrelay.webhook_status") == [("gone", 410)]
    assert db.sql("SELECT outcome FROM pgrelay.log") == [("failed",)]
    assert db.sql("SELECT event_id FROM pgrelay.failed") == [(first,)]
    second = db.scalar("SELECT pgrelay.notify('hook', '{\"n\": 2}')")
    assert db.sql("SELECT queued, paused FROM pgrelay.queue_depth WHERE channel = 'hook'") == [(1, True)]
    assert len(h.requests()) == 1
    db.sql("SELECT pgrelay.resume('hook')")
    db.sql("SELECT pgrelay.retry_failed(%s)", (first,))
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "the queue drained", 30)
    assert sorted(r["webhook_id"] for r in h.requests()[1:]) == sorted([str(first), str(second)])
    assert db.sql("SELECT state FROM pgrelay.webhook_status") == [("active",)]
    p.stop()


def test_tls_verification_is_always_on(db, hookd, processors):
    """Without the channel's CA file the throwaway CA is not trusted: a permanent failure that says
    why, and nothing sent."""
    h = hookd()
    hook(db, h, ca_file=None)
    db.sql("SELECT pgrelay.notify('hook', '{}')")
    p = processors("-d", db.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    [row] = log_rows(db)
    assert row[2] == "failed" and row[3].startswith("TLS certificate verification failed")
    assert h.requests() == []


def test_http_when_the_admin_allows_it(db, hookd, processors):
    """http:// only with allow_http (an admin's explicit choice); then it is sent and signed."""
    h = hookd()
    hook(db, h, url=h.http_base_url + "/plain", allow_http=True, ca_file=None)
    db.sql("SELECT pgrelay.notify('hook', '{}')")
    p = processors("-d", db.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    [r] = h.requests()
    assert (r["listener"], r["path"], r["signature"], r["status"]) == ("http", "/plain", "valid", 200)


def test_missing_secret_is_retried_and_named(db, hookd, processors):
    """A secret reference that cannot be resolved: the attempt fails (and is retried) naming the
    reference, never sending anything."""
    h = hookd()
    hook(db, h, headers={"Authorization": "env:NOT_SET_ANYWHERE"}, max_attempts=1)
    db.sql("SELECT pgrelay.notify('hook', '{}')")
    p = processors("-d", db.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    [row] = log_rows(db)
    assert row[2] == "failed"
    assert row[3] == "header Authorization: secret env:NOT_SET_ANYWHERE: the environment variable is not set"
    assert h.requests() == []


def test_watched_table_becomes_webhooks(db, hookd, processors):
    """watch_table(): an insert, an update and a delete become three signed requests whose payloads
    say what changed and carry the webhook-id; a rolled-back change sends nothing."""
    h = hookd()
    hook(db, h)
    db.sql("CREATE TABLE orders (id integer PRIMARY KEY, total numeric)")
    db.sql("SELECT pgrelay.watch_table('orders', 'hook')")
    db.sql("INSERT INTO orders VALUES (1, 10)")
    db.sql("UPDATE orders SET total = 12 WHERE id = 1")
    db.sql("DELETE FROM orders WHERE id = 1")
    with db.conn.transaction(force_rollback=True):
        db.sql("INSERT INTO orders VALUES (2, 99)")
    p = processors("-d", db.dsn, "--once", "--workers=1", BIND, env=ENV)
    assert p.wait_exit() == 0
    rs = h.requests()
    docs = [json.loads(h.body(r)) for r in rs]
    assert [d["operation"] for d in docs] == ["insert", "update", "delete"]
    assert [(d["old"], d["new"]) for d in docs] == [(None, {"id": 1, "total": 10}),
                                                    ({"id": 1, "total": 10}, {"id": 1, "total": 12}),
                                                    ({"id": 1, "total": 12}, None)]
    assert [d["event_id"] for d in docs] == [r["webhook_id"] for r in rs]
    assert {r["signature"] for r in rs} == {"valid"}
    assert db.sql("SELECT outcome, count(*) FROM pgrelay.log GROUP BY 1") == [("ok", 3)]


def test_sigkill_mid_request_redelivers_once(db, hookd, processors):
    """The Processor is killed (SIGKILL) while three requests are in flight (the receiver has them
    and has not answered): nothing was committed, so a new Processor sends each event again, with
    the same webhook-id. Every event is delivered, at most twice, and recorded once."""
    h = hookd()
    h.script("hang seconds=30 times=3")
    hook(db, h)
    ids = [db.scalar("SELECT pgrelay.notify('hook', %s)", ('{"n": %d}' % i,)) for i in range(3)]
    p = processors("-d", db.dsn, "--workers=3", "--poll-interval=50ms", BIND, env=ENV)
    h.wait_requests(3)
    p.proc.send_signal(signal.SIGKILL)
    p.proc.wait()
    assert db.scalar("SELECT count(*) FROM pgrelay.log") == 0
    q = processors("-d", db.dsn, "--workers=3", "--poll-interval=50ms", BIND, env=ENV)
    testlib.wait_for(lambda: db.scalar("SELECT count(*) FROM pgrelay.queue") == 0, "the queue drained", 60)
    q.stop()
    rs = h.requests()
    for e in ids:
        sent = [r for r in rs if r["webhook_id"] == str(e)]
        assert 1 <= len(sent) <= 2 and sent[-1]["status"] == 200
    assert {r["signature"] for r in rs} == {"valid"}
    assert sorted(db.sql("SELECT event_id, attempt, outcome FROM pgrelay.log")) == sorted((e, 1, "ok") for e in ids)


def listening(port, proc):
    assert proc.poll() is None, proc.communicate()[0].decode()
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_receiver_example_in_the_docs_verifies(db, processors, tmp_path):
    """docs/webhooks.md's receiver example, run as written, verifies and handles a JSON and a text
    payload and refuses a forgery."""
    doc = open(os.path.join(testlib.ROOT, "docs", "webhooks.md")).read()
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    receiver = tmp_path / "receiver.py"
    receiver.write_text(code)
    [port] = testlib.free_ports(1)
    proc = subprocess.Popen([testlib.PYTHON, str(receiver)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=dict(os.environ, WEBHOOK_SECRET=H.SECRET, PORT=str(port)))
    try:
        testlib.wait_for(lambda: listening(port, proc), "the receiver to listen")
        url = "http://127.0.0.1:%d/hooks" % port
        db.sql("SELECT pgrelay.register_webhook('hook', %s, allow_http => true, signing_secret => 'env:HOOK_SECRET')",
               (url,))
        db.sql("SELECT pgrelay.register_webhook('forged', %s, allow_http => true, signing_secret => %s)",
               (url, "whsec_" + "A" * 43 + "="))
        ok = db.scalar("SELECT pgrelay.notify('hook', '{\"id\": 1}')")
        text = db.scalar("SELECT pgrelay.notify('hook', 'plain text, not JSON')")
        forged = db.scalar("SELECT pgrelay.notify('forged', '{\"id\": 2}')")
        p = processors("-d", db.dsn, "--once", BIND, env=ENV)
        assert p.wait_exit() == 0
        assert db.sql("SELECT event_id, outcome FROM pgrelay.log ORDER BY event_id") == \
            [(ok, "ok"), (text, "ok"), (forged, "failed")]
        assert db.scalar("SELECT error FROM pgrelay.log WHERE event_id = %s", (forged,)).startswith("HTTP 401")
    finally:
        proc.terminate()
        out = proc.communicate(timeout=10)[0].decode()
    assert "verified webhook %d {'id': 1}" % ok in out
    assert "verified webhook %d plain text, not JSON" % text in out


def test_valgrind_webhook_run_is_clean(db, hookd):
    """The release build under valgrind delivers webhooks (HTTPS, HMAC with libcrypto, the kept-alive
    client of two workers, a retried 500) without a memory error or a leak."""
    h = hookd()
    h.script("500")
    hook(db, h, headers={"Authorization": "env:HOOK_TOKEN"}, debug=True, backoff_base="1 millisecond",
         backoff_max="1 millisecond")
    for i in range(3):
        db.sql("SELECT pgrelay.notify('hook', %s)", ('{"n": %d}' % i,))
    r = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite,indirect",
                        "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
                        testlib.PROCESSOR_RELEASE, "-d", db.dsn, "--once", "--workers=2", BIND],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                       env=dict(os.environ, **ENV))
    assert r.returncode == 0, r.stdout[-6000:]
    assert "ERROR SUMMARY: 0 errors" in r.stdout
    assert {row[2] for row in log_rows(db)} >= {"ok"}
    assert {r["signature"] for r in h.requests()} == {"valid"}
