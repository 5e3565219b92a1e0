"""Microsoft Graph delivery end to end: pgrelay_notifier.send() in the database, the Processor's held
transaction, the fake token endpoint and Graph sendMail (test/fixtures/graphd.py) over real TLS.
"""
import base64
import datetime
import subprocess

import pytest

import testlib
from testlib import GraphServer as G

ENV = {"GRAPH_SECRET": G.CLIENT_SECRET}
# the variable the profile m365 may name as env: (the Processor's --secret-env)
BIND = "--secret-env=GRAPH_SECRET=profile/m365"


@pytest.fixture
def mail(db):
    db.sql("CREATE EXTENSION pg_relay_notifier")
    return db


def graph_profile(db, g, **kw):
    """create_profile for the fake Graph g, and the channel 'mail' on it."""
    args = dict(transport="graph", tenant_id=G.TENANT, client_id=G.CLIENT_ID, client_secret="env:GRAPH_SECRET",
                sender=G.SENDER, login_url=g.base_url, graph_url=g.base_url, scope=G.GRAPH_SCOPE, ca_file=g.ca,
                from_name="Contoso Relay", connect_timeout="2 seconds", timeout="5 seconds")
    args.update(kw)
    db.sql("SELECT pgrelay_notifier.create_profile('m365', %s)" % ", ".join("%s => %%(%s)s" % (k, k) for k in args),
           args)
    db.sql("SELECT pgrelay_notifier.create_channel('mail', 'm365', backoff_base => '10 ms', backoff_max => '50 ms',"
           " max_attempts => 5)")


def send(db, to=("Ann Example <ann@example.org>",), **kw):
    args = dict(to=list(to), subject="Hello", body_text="Hello Ann")
    args.update(kw)
    cols = ", ".join('"%s" => %%(%s)s' % (k, k) for k in args)
    return db.scalar("SELECT pgrelay_notifier.send('mail', %s)" % cols, args)


def status(db, nid):
    return db.scalar("SELECT status FROM pgrelay_notifier.get_status(%s)", (nid,))


def bearer(record):
    for k, v in record["headers"]:
        if k.lower() == "authorization":
            return v.split(" ", 1)[1]
    return None


def response_header(record, name):
    return dict((k.lower(), v) for k, v in record["response_headers"]).get(name)


def when(record):
    return datetime.datetime.fromisoformat(record["time"])


def test_graph_delivery_end_to_end(mail, graphd, processors):
    g = graphd()
    graph_profile(mail, g)
    nid = send(mail, to=["Ann Example <ann@example.org>"], cc=["bob@example.org"], bcc=["audit@contoso.com"],
               subject="Grüße aus Köln", body_text="Hallo Ann", body_html='<p>Hallo</p><img src="cid:logo@contoso.com">',
               reply_to=["Support <support@contoso.com>"], headers='[["X-Campaign", "welcome"]]',
               attachments='[{"filename": "Bericht ü.txt", "content_text": "Zahlen: 1, 2, 3\\n"},'
                           ' {"filename": "logo.png", "content_type": "image/png",'
                           '  "content_base64": "iVBORw0KGgo=", "content_id": "logo@contoso.com"}]')
    p = processors("-d", mail.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    [req] = g.requests("sendmail")
    msg = req["json"]["message"]
    assert req["status"] == 202 and req["mailbox"] == G.SENDER
    assert msg["subject"] == "Grüße aus Köln"
    assert msg["body"] == {"contentType": "HTML", "content": '<p>Hallo</p><img src="cid:logo@contoso.com">'}
    assert msg["toRecipients"] == [{"emailAddress": {"address": "ann@example.org", "name": "Ann Example"}}]
    assert msg["ccRecipients"] == [{"emailAddress": {"address": "bob@example.org"}}]
    assert msg["bccRecipients"] == [{"emailAddress": {"address": "audit@contoso.com"}}]
    assert msg["replyTo"] == [{"emailAddress": {"address": "support@contoso.com", "name": "Support"}}]
    assert msg["internetMessageId"] == mail.scalar(
        "SELECT message_id FROM pgrelay_notifier.get_status(%s)", (nid,))
    assert msg["internetMessageHeaders"] == [{"name": "X-Campaign", "value": "welcome"}]
    assert [(a["name"], a["isInline"]) for a in req["attachments"]] == [("Bericht ü.txt", False), ("logo.png", True)]
    assert g.file(req["attachments"][0]["file"]) == "Zahlen: 1, 2, 3\n".encode()
    assert g.file(req["attachments"][1]["file"]) == base64.b64decode("iVBORw0KGgo=")
    assert req["json"]["saveToSentItems"] is True
    # bookkeeping on both sides of the interface; Graph's request-id is the provider's message id
    assert status(mail, nid) == "sent"
    recipients = mail.scalar("SELECT recipients FROM pgrelay_notifier.get_status(%s)", (nid,))
    assert [r["status"] for r in recipients] == ["sent"] * 3
    assert mail.sql("SELECT transport, reply_code, provider_message_id FROM pgrelay_notifier.attempts") == \
        [("graph", 202, response_header(req, "request-id"))]
    assert mail.sql("SELECT action_type, outcome, attempt FROM pgrelay.log") == [("notify", "ok", 1)]
    assert mail.scalar("SELECT detail->>'transport' FROM pgrelay.log") == "graph"
    log = p.log()
    for secret in [G.CLIENT_SECRET] + list(g.tokens()):
        assert secret not in log


def test_workers_share_one_token_and_keep_their_connections(mail, graphd, processors):
    g = graphd()
    graph_profile(mail, g)
    ids = [send(mail, subject="n%d" % i) for i in range(10)]
    p = processors("-d", mail.dsn, "--once", "--workers=2", BIND, env=ENV)
    assert p.wait_exit() == 0
    assert [status(mail, i) for i in ids] == ["sent"] * 10
    c = g.counters()
    assert c["token_requests"] == 1                       # the second worker waited for the first's
    assert c["sendmail_requests"] == c["sendmail_accepted"] == 10
    assert 1 <= c["connections"] <= 2                     # one kept-alive connection per worker at most


def test_token_refreshed_before_expiry_while_other_workers_send(mail, graphd, processors):
    """Tokens live 12 s here: the Processor refreshes after 6 s. The refresh is held up at the
    token endpoint for 2 s; meanwhile the other worker keeps sending with the old token, which is
    still valid; no request is refused."""
    g = graphd(expires_in=12)
    graph_profile(mail, g)
    first = send(mail, subject="first")
    p = processors("-d", mail.dsn, "--workers=2", "--poll-interval=50ms", BIND, env=ENV)
    testlib.wait_for(lambda: status(mail, first) == "sent", "the first message")
    [(old, info)] = g.tokens().items()
    g.script("token", "slow seconds=2")
    due = datetime.datetime.fromtimestamp(info["issued_at"] + 7, datetime.timezone.utc)
    ids = [send(mail, subject="n%d" % i, run_at=due) for i in range(6)]
    testlib.wait_for(lambda: all(status(mail, i) == "sent" for i in ids), "the six later messages")
    assert p.stop() == 0
    tokens = g.tokens()
    assert len(tokens) == 2 and g.counters()["token_requests"] == 2
    [new] = [t for t in tokens if t != old]
    assert tokens[new]["issued_at"] < info["expires_at"]             # refreshed before expiry
    refresh = g.requests("token")[1]
    sends = g.requests("sendmail")
    assert [r["status"] for r in sends] == [202] * 7 and g.counters()["sendmail_accepted"] == 7
    # while the refresh was out, the old token kept working; afterwards the new one is used
    during = [r for r in sends if when(r) > when(refresh) and bearer(r) == old]
    assert during, [(r["time"], bearer(r) == old) for r in sends]
    assert new in [bearer(r) for r in sends]            # the refreshing worker's message


def test_a_token_expired_early_is_refreshed_within_the_attempt(mail, graphd, processors):
    g = graphd()
    graph_profile(mail, g)
    first = send(mail, subject="first")
    p = processors("-d", mail.dsn, "--poll-interval=20ms", BIND, env=ENV)
    testlib.wait_for(lambda: status(mail, first) == "sent", "the first message")
    g.expire_tokens()                                   # revoked: the cached token gets a 401
    second = send(mail, subject="second")
    testlib.wait_for(lambda: status(mail, second) == "sent", "the second message")
    assert p.stop() == 0
    assert [r["status"] for r in g.requests("sendmail")] == [202, 401, 202]
    assert g.counters()["token_requests"] == 2
    assert mail.sql("SELECT attempt, outcome FROM pgrelay.log ORDER BY id") == [(1, "ok"), (1, "ok")]


def test_retry_after_is_honoured(mail, graphd, processors):
    g = graphd()
    graph_profile(mail, g)
    g.script("sendmail", "429 retry-after=2")
    nid = send(mail)
    p = processors("-d", mail.dsn, "--poll-interval=20ms", BIND, env=ENV)
    testlib.wait_for(lambda: status(mail, nid) == "sent", "the retry after Retry-After")
    assert p.stop() == 0
    rows = mail.sql("SELECT attempt, outcome, retry_at - started_at FROM pgrelay.log ORDER BY id")
    assert [(a, o) for a, o, _ in rows] == [(1, "retry"), (2, "ok")]
    # not the channel's 10 ms backoff: the answer's Retry-After, counted from after the answer
    assert rows[0][2] >= datetime.timedelta(seconds=2)
    throttled, sent = g.requests("sendmail")
    assert (throttled["status"], sent["status"]) == (429, 202)
    assert when(sent) - when(throttled) >= datetime.timedelta(seconds=2)
    assert "ApplicationThrottled" in mail.scalar("SELECT error FROM pgrelay.log WHERE attempt = 1")


def test_a_server_error_is_retried_with_backoff(mail, graphd, processors):
    g = graphd()
    graph_profile(mail, g)
    g.script("sendmail", "503")
    nid = send(mail)
    p = processors("-d", mail.dsn, "--poll-interval=20ms", BIND, env=ENV)
    testlib.wait_for(lambda: status(mail, nid) == "sent", "the retry")
    assert p.stop() == 0
    assert mail.sql("SELECT attempt, outcome FROM pgrelay.log ORDER BY id") == [(1, "retry"), (2, "ok")]
    assert "serviceNotAvailable" in mail.scalar("SELECT error FROM pgrelay.log WHERE attempt = 1")
    assert g.counters()["sendmail_requests"] == 2 and g.counters()["sendmail_accepted"] == 1


def test_a_refusal_is_recorded_with_graphs_code(mail, graphd, processors):
    g = graphd()
    graph_profile(mail, g)
    g.script("sendmail", "400 code=ErrorInvalidRecipients")
    nid = send(mail, to=["ann@example.org", "bob@example.org"])
    p = processors("-d", mail.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    assert mail.sql("SELECT attempt, outcome FROM pgrelay.log") == [(1, "failed")]
    assert "ErrorInvalidRecipients" in mail.scalar("SELECT error FROM pgrelay.log")
    st = mail.sql("SELECT status, last_error, recipients FROM pgrelay_notifier.get_status(%s)", (nid,))[0]
    assert st[0] == "failed" and "HTTP 400 ErrorInvalidRecipients" in st[1]
    assert [r["status"] for r in st[2]] == ["failed", "failed"]
    [req] = g.requests("sendmail")
    assert mail.sql("SELECT reply_code, reply, provider_message_id FROM pgrelay_notifier.attempts") == \
        [(400, "400 ErrorInvalidRecipients: Invalid request.", response_header(req, "request-id"))]


def test_unknown_outcome_is_retried_with_the_same_message_id(mail, graphd, processors):
    g = graphd()
    graph_profile(mail, g)
    mail.sql("SELECT pgrelay.register('mail', backoff_base => '1 hour', backoff_max => '2 hours')")
    g.script("sendmail", "drop")
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    [(outcome, unknown)] = mail.sql("SELECT outcome, detail->>'unknown_outcome' FROM pgrelay.log")
    assert (outcome, unknown) == ("retry", "true")
    assert status(mail, nid) == "retrying"
    assert mail.scalar("SELECT unknown_outcome FROM pgrelay_notifier.attempts") is True
    mail.sql("UPDATE pgrelay.queue SET run_at = now()")
    p = processors("-d", mail.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    assert status(mail, nid) == "sent"
    first, second = g.requests("sendmail")
    assert first["json"]["message"]["internetMessageId"] == second["json"]["message"]["internetMessageId"]
    assert g.counters()["sendmail_accepted"] == 2            # the dropped one was accepted: a duplicate


def test_a_token_refusal_is_recorded_without_the_secret(mail, graphd, processors):
    g = graphd()
    graph_profile(mail, g)
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once", BIND, env={"GRAPH_SECRET": "Wrong+Secret/=&%"})
    assert p.wait_exit() == 0
    assert status(mail, nid) == "failed"
    error = mail.scalar("SELECT error FROM pgrelay.log")
    assert "invalid_client: AADSTS7000215" in error and "(configuration)" in error
    assert g.counters()["sendmail_requests"] == 0
    stored = mail.scalar("SELECT string_agg(concat_ws(' ', error, reply), ' ') FROM pgrelay_notifier.attempts")
    for text in (p.log(), error, stored):
        assert "Wrong+Secret" not in text and G.CLIENT_SECRET not in text


def test_a_wrong_secret_never_borrows_another_profiles_token(mail, graphd, processors):
    """Two profiles of the same tenant and app, the second with a wrong secret and another sender:
    once the first has a token, the second still asks the token endpoint with its own secret and
    fails on its first message with the endpoint's reason; no message is sent as its sender."""
    g = graphd(mailboxes=[G.SENDER, "ceo@contoso.com"])
    graph_profile(mail, g)
    mail.sql("SELECT pgrelay_notifier.create_profile('m365b', transport => 'graph', tenant_id => %s,"
             " client_id => %s, client_secret => 'not-the-secret', sender => 'ceo@contoso.com',"
             " login_url => %s, graph_url => %s, scope => %s, ca_file => %s)",
             (G.TENANT, G.CLIENT_ID, g.base_url, g.base_url, G.GRAPH_SCOPE, g.ca))
    mail.sql("SELECT pgrelay_notifier.create_channel('mail_b', 'm365b', max_attempts => 1)")
    first = send(mail)
    second = mail.scalar("SELECT pgrelay_notifier.send('mail_b', \"to\" => ARRAY['ann@example.org'],"
                         " subject => 'as the ceo', body_text => 'x')")
    p = processors("-d", mail.dsn, "--once", "--workers=1", BIND, env=ENV)
    assert p.wait_exit() == 0
    assert status(mail, first) == "sent" and status(mail, second) == "failed"
    assert [r["mailbox"] for r in g.requests("sendmail")] == [G.SENDER]
    error = mail.scalar("SELECT last_error FROM pgrelay_notifier.get_status(%s)", (second,))
    assert "invalid_client: AADSTS7000215" in error
    assert g.counters()["token_requests"] == 2


def test_debug_trace_is_stored_redacted(mail, graphd, processors):
    g = graphd()
    graph_profile(mail, g, debug=True)
    nid = send(mail, attachments='[{"filename": "a.bin", "content_base64": "c2VjcmV0LWJ5dGVz"}]')
    p = processors("-d", mail.dsn, "--once", BIND, env=ENV)
    assert p.wait_exit() == 0
    assert status(mail, nid) == "sent"
    trace = mail.scalar("SELECT string_agg(trace, '') FROM pgrelay_notifier.attempt_traces")
    assert "oauth2/v2.0/token" in trace and "sendMail" in trace and "202 Accepted" in trace
    assert "client_secret=[redacted]" in trace and "Authorization: [redacted]" in trace
    for secret in [G.CLIENT_SECRET, "c2VjcmV0LWJ5dGVz", "Hello Ann"] + list(g.tokens()):
        assert secret not in trace


def test_valgrind_graph_run_is_clean(mail, graphd):
    """The release build under valgrind delivers through Graph (HTTPS, the token cache shared by
    two workers, JSON) without a memory error or a leak."""
    g = graphd()
    graph_profile(mail, g)
    ids = [send(mail, subject="n%d" % i) for i in range(3)]
    r = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite,indirect",
                        "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
                        testlib.PROCESSOR_RELEASE, "-d", mail.dsn, "--once", "--workers=2", BIND],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                       env=dict(__import__("os").environ, **ENV))
    assert r.returncode == 0, r.stdout[-6000:]
    assert "ERROR SUMMARY: 0 errors" in r.stdout
    assert [status(mail, i) for i in ids] == ["sent"] * 3
