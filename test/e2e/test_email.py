"""Email delivery end to end: pgrelay_notifier.send() in the database, the Processor's held
transaction, a real SMTP server (test/fixtures/smtpd.py) with real TLS, the message parsed back.
"""
import base64
import email
import email.policy
import os
import signal

import pytest

import testlib

TLS = ("--cert", "{certs}/server.pem", "--key", "{certs}/server.key")
AUTH = ("--auth-user", "relay", "--auth-password", "s3cr3t-pw")


@pytest.fixture
def mail(db):
    db.sql("CREATE EXTENSION pg_relay_notifier")
    return db


def profile(db, server, certs=None, security="none", **kw):
    """create_profile for the test server, and the channel 'mail' on it."""
    args = dict(host="127.0.0.1", port=server.port, security=security,
                from_address="noreply@example.com", from_name="Example App",
                connect_timeout="2 seconds", timeout="5 seconds")
    if certs is not None:
        args["ca_file"] = str(certs / "ca.pem")
    args.update(kw)
    db.sql("SELECT pgrelay_notifier.create_profile('p', %s)" % ", ".join("%s => %%(%s)s" % (k, k) for k in args),
           args)
    db.sql("SELECT pgrelay_notifier.create_channel('mail', 'p', backoff_base => '10 ms', backoff_max => '50 ms',"
           " max_attempts => 5)")


def send(db, to=("Ann Example <ann@example.org>",), **kw):
    args = dict(to=list(to), subject="Hello", body_text="Hello Ann")
    args.update(kw)
    cols = ", ".join('"%s" => %%(%s)s' % (k, k) for k in args)
    return db.scalar("SELECT pgrelay_notifier.send('mail', %s)" % cols, args)


def status(db, nid):
    return db.scalar("SELECT status FROM pgrelay_notifier.get_status(%s)", (nid,))


def parsed(raw):
    return email.message_from_bytes(raw, policy=email.policy.default)


def test_plain_delivery_end_to_end(mail, smtpd, processors):
    s = smtpd()
    profile(mail, s)
    nid = send(mail, to=["Ann Example <ann@example.org>"], cc=["bob@example.org"], bcc=["audit@example.com"],
               subject="Grüße aus Köln — ünïcödé", body_text="Hallo Ann, schön dich zu sehen.",
               body_html="<p>Hallo <b>Ann</b></p><img src=\"cid:logo@example.com\">",
               reply_to=["Support <support@example.com>"], headers='[["X-Campaign", "welcome"]]',
               attachments='[{"filename": "Bericht ü.txt", "content_text": "Zahlen: 1, 2, 3\\n"},'
                           ' {"filename": "logo.png", "content_type": "image/png",'
                           '  "content_base64": "iVBORw0KGgo=", "content_id": "logo@example.com"}]')
    p = processors("-d", mail.dsn, "--once")
    assert p.wait_exit() == 0
    [(env, raw)] = s.messages()
    assert env["mail_from"] == "noreply@example.com"
    assert sorted(env["rcpt_tos"]) == ["ann@example.org", "audit@example.com", "bob@example.org"]
    m = parsed(raw)
    assert m["Subject"] == "Grüße aus Köln — ünïcödé"
    assert m["From"].addresses[0].display_name == "Example App"
    assert m["From"].addresses[0].addr_spec == "noreply@example.com"
    assert [a.addr_spec for a in m["To"].addresses] == ["ann@example.org"]
    assert m["To"].addresses[0].display_name == "Ann Example"
    assert [a.addr_spec for a in m["Cc"].addresses] == ["bob@example.org"]
    assert m["Bcc"] is None and b"audit@example.com" not in raw
    assert m["Reply-To"].addresses[0].addr_spec == "support@example.com"
    assert m["X-Campaign"] == "welcome"
    assert m["Message-ID"] == mail.scalar("SELECT message_id FROM pgrelay_notifier.get_status(%s)", (nid,))
    assert m["Date"] is not None
    assert m.get_body(("plain",)).get_content().strip() == "Hallo Ann, schön dich zu sehen."
    assert "<b>Ann</b>" in m.get_body(("html",)).get_content()
    atts = {a.get_filename(): a for a in m.iter_attachments()}
    assert atts["Bericht ü.txt"].get_content() == "Zahlen: 1, 2, 3\n"
    inline = [part for part in m.walk() if part["Content-ID"] == "<logo@example.com>"]
    assert inline and inline[0].get_content() == base64.b64decode("iVBORw0KGgo=")
    for line in raw.split(b"\r\n"):
        assert len(line) <= 998
    assert b"\n" not in raw.replace(b"\r\n", b"")                  # CRLF only
    # bookkeeping on both sides of the interface
    assert status(mail, nid) == "sent"
    assert mail.sql("SELECT action_type, outcome, attempt FROM pgrelay.log") == [("notify", "ok", 1)]
    assert mail.scalar("SELECT detail->>'reply_code' FROM pgrelay.log") == "250"
    assert mail.scalar("SELECT count(*) FROM pgrelay.queue") == 0


def test_starttls_and_auth_with_an_env_secret(mail, smtpd, certs, processors):
    s = smtpd("--require-starttls", "--auth-require-tls", *AUTH, *TLS)
    profile(mail, s, certs, security="starttls", username="relay", password="env:RELAY_PW")
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once", "--secret-env=RELAY_PW=profile/p", env={"RELAY_PW": "s3cr3t-pw"})
    assert p.wait_exit() == 0
    [(env, raw)] = s.messages()
    assert env["tls"] and env["login"] == "relay"
    assert status(mail, nid) == "sent"
    assert "s3cr3t-pw" not in p.log()


def test_implicit_tls_with_a_file_secret(mail, smtpd, certs, processors, tmp_path):
    s = smtpd("--implicit-tls", *AUTH, *TLS)
    (tmp_path / "profile" / "p").mkdir(parents=True)         # the profile's own secrets directory
    (tmp_path / "profile" / "p" / "relay_pw").write_text("s3cr3t-pw\n")
    profile(mail, s, certs, security="tls", username="relay", password="file:relay_pw")
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once", "--secrets-dir", str(tmp_path))
    assert p.wait_exit() == 0
    assert s.messages()[0][0]["tls"]
    assert status(mail, nid) == "sent"


def test_wrong_password_fails_for_good(mail, smtpd, certs, processors):
    s = smtpd("--starttls", *AUTH, *TLS)
    profile(mail, s, certs, security="starttls", username="relay", password="wrong-pw")
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once")
    assert p.wait_exit() == 0
    assert s.messages() == []
    assert status(mail, nid) == "failed"
    assert mail.sql("SELECT outcome FROM pgrelay.log") == [("failed",)]
    assert "535" in mail.scalar("SELECT error FROM pgrelay.log")
    assert "wrong-pw" not in p.log()


def test_certificate_of_another_host_is_refused(mail, smtpd, certs, processors):
    s = smtpd("--starttls", "--cert", "{certs}/wrong.pem", "--key", "{certs}/wrong.key")
    profile(mail, s, certs, security="starttls")
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once")
    assert p.wait_exit() == 0
    assert s.messages() == [] and status(mail, nid) == "failed"
    assert "certificate" in mail.scalar("SELECT error FROM pgrelay.log").lower()


def test_partial_rcpt_rejection(mail, smtpd, processors):
    s = smtpd("--reject-rcpt", "gone@example.org=550")
    profile(mail, s)
    nid = send(mail, to=["ann@example.org", "gone@example.org"])
    p = processors("-d", mail.dsn, "--once")
    assert p.wait_exit() == 0
    [(env, raw)] = s.messages()
    assert env["rcpt_tos"] == ["ann@example.org"]
    assert status(mail, nid) == "partially_sent"
    rcpts = {r["address"]: (r["status"], r["code"]) for r in
             mail.scalar("SELECT recipients FROM pgrelay_notifier.get_status(%s)", (nid,))}
    assert rcpts == {"ann@example.org": ("sent", 250), "gone@example.org": ("failed", 550)}
    assert mail.sql("SELECT outcome FROM pgrelay.log") == [("partial",)]


def test_4xx_then_success_on_retry(mail, smtpd, processors):
    s = smtpd("--data-reply", "451:1")
    profile(mail, s)
    nid = send(mail)
    p = processors("-d", mail.dsn, "--poll-interval=20ms")
    testlib.wait_for(lambda: status(mail, nid) == "sent", "the retry to get through")
    assert p.stop() == 0
    assert mail.sql("SELECT attempt, outcome FROM pgrelay.log ORDER BY id") == [(1, "retry"), (2, "ok")]
    assert len(s.messages()) == 1                 # the 451'd message was not stored
    line = p.lines("attempt_failed")[0]
    assert "outcome=retry" in line and " notification=%d " % nid in line


def test_an_unreachable_server_names_the_profile_and_the_retry_time(mail, processors):
    """No SMTP server listens: the attempt_failed line names the profile the message was sent
    with, and the time of the next attempt, the one pgrelay.log and the console show."""
    [port] = testlib.free_ports(1)
    mail.sql("SELECT pgrelay_notifier.create_profile('p', host => '127.0.0.1', port => %s, security => 'none',"
             " from_address => 'noreply@example.com', connect_timeout => '2 seconds')", (port,))
    mail.sql("SELECT pgrelay_notifier.create_channel('mail', 'p', backoff_base => '1 hour', backoff_max => '1 hour')")
    nid = send(mail)
    p = processors("-d", mail.dsn)
    line = p.wait_log(r" attempt_failed ").string
    retry_at = mail.scalar("SELECT to_char(retry_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
                           " FROM pgrelay.log")
    assert retry_at is not None
    assert " notification=%d profile=p outcome=retry sqlstate=- retry_at=%s " % (nid, retry_at) in line, line
    assert p.stop() == 0


def test_5xx_is_permanent(mail, smtpd, processors):
    s = smtpd("--data-reply", "554")
    profile(mail, s)
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once")
    assert p.wait_exit() == 0
    assert status(mail, nid) == "failed"
    assert mail.sql("SELECT attempt, outcome FROM pgrelay.log") == [(1, "failed")]
    assert mail.scalar("SELECT count(*) FROM pgrelay.failed") == 1


def test_reply_bytes_that_are_not_utf8_are_stored_replaced(mail, smtpd, processors):
    """A server's reply with bytes that are not UTF-8 ("554 ... \\xff") is recorded with U+FFFD in
    their place: one attempt, one log row, the event failed for good, never re-sent."""
    s = smtpd("--data-reply", "554", "--garbage-in-replies")
    profile(mail, s, debug=True)
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once")
    assert p.wait_exit() == 0
    assert mail.sql("SELECT attempt, outcome FROM pgrelay.log") == [(1, "failed")]
    assert "refused by test \ufffd\ufffd" in mail.scalar("SELECT error FROM pgrelay.log")
    assert status(mail, nid) == "failed"
    reply = mail.scalar("SELECT reply FROM pgrelay_notifier.attempts")
    assert reply.startswith("554 5.3.0 refused by test \ufffd\ufffd")
    assert "\ufffd" in mail.scalar("SELECT trace FROM pgrelay_notifier.attempt_traces")
    assert len(s.messages()) == 0


def test_transient_reply_bytes_that_are_not_utf8_are_retried_normally(mail, smtpd, processors):
    """451 with bytes that are not UTF-8: retried with backoff like any 4xx, each attempt logged."""
    s = smtpd("--data-reply", "451:1", "--garbage-in-replies")
    profile(mail, s)
    nid = send(mail)
    p = processors("-d", mail.dsn, "--poll-interval=20ms")
    testlib.wait_for(lambda: status(mail, nid) == "sent", "the retry to get through")
    assert p.stop() == 0
    assert mail.sql("SELECT attempt, outcome FROM pgrelay.log ORDER BY id") == [(1, "retry"), (2, "ok")]
    assert "\ufffd" in mail.scalar("SELECT error FROM pgrelay.log WHERE attempt = 1")


def test_hung_server_is_cut_off_and_retried(mail, smtpd, processors):
    s = smtpd("--hang", "connect")
    profile(mail, s, timeout="1 second", connect_timeout="1 second")
    mail.sql("SELECT pgrelay.register('mail', backoff_base => '1 hour', backoff_max => '2 hours')")
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once")
    assert p.wait_exit() == 0
    assert mail.sql("SELECT outcome FROM pgrelay.log") == [("retry",)]
    assert "timed out" in mail.scalar("SELECT error FROM pgrelay.log").lower() or \
           "timeout" in mail.scalar("SELECT error FROM pgrelay.log").lower()
    assert status(mail, nid) == "retrying"
    assert mail.scalar("SELECT attempt FROM pgrelay.queue") == 2


def test_server_down_then_back_delivers(mail, smtpd, processors, tmp_path):
    s = smtpd()
    port = s.port
    s.stop()
    profile(mail, s)
    # enough attempts that the retries cannot run out before the server is back, however slow
    mail.sql("SELECT pgrelay.register('mail', max_attempts => 1000)")
    nid = send(mail)
    p = processors("-d", mail.dsn, "--poll-interval=20ms")
    p.wait_log(r" attempt_failed .*outcome=retry", count=2)
    # Between two attempts the notification is retrying; while the next one is in flight it is
    # sending (the poll interval is short): wait for the state, do not sample it.
    testlib.wait_for(lambda: status(mail, nid) == "retrying", "the notification retrying")
    back = testlib.SmtpServer(tmp_path / "back", ["--port", str(port)])
    try:
        testlib.wait_for(lambda: status(mail, nid) == "sent", "delivery after the server came back")
        assert p.stop() == 0
        assert len(back.messages()) == 1
        assert mail.scalar("SELECT count(*) FROM pgrelay.log WHERE outcome = 'retry'") >= 2
    finally:
        back.stop()


def test_connections_are_reused_within_a_profile(mail, smtpd, processors):
    s = smtpd()
    profile(mail, s)
    ids = [send(mail, subject="n%d" % i) for i in range(5)]
    p = processors("-d", mail.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    assert [status(mail, i) for i in ids] == ["sent"] * 5
    assert len(s.messages()) == 5 and s.connections() == 1


def test_debug_trace_is_stored_redacted(mail, smtpd, certs, processors):
    s = smtpd("--starttls", *AUTH, *TLS)
    profile(mail, s, certs, security="starttls", username="relay", password="s3cr3t-pw", debug=True)
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once")
    assert p.wait_exit() == 0
    trace = mail.scalar("SELECT string_agg(trace, '') FROM pgrelay_notifier.attempt_traces")
    assert trace and "MAIL FROM" in trace and "[redacted]" in trace
    assert "s3cr3t-pw" not in trace
    assert base64.b64encode(b"\0relay\0s3cr3t-pw").decode() not in trace
    assert status(mail, nid) == "sent"


def test_cancelled_before_delivery_is_never_sent(mail, smtpd, processors):
    s = smtpd()
    profile(mail, s)
    nid = send(mail)
    mail.sql("SELECT pgrelay_notifier.cancel(%s)", (nid,))
    p = processors("-d", mail.dsn, "--once")
    assert p.wait_exit() == 0
    assert s.messages() == [] and s.connections() == 0
    assert mail.sql("SELECT outcome FROM pgrelay.log") == [("cancelled",)]
    assert status(mail, nid) == "cancelled"


def test_rate_limit_defers_without_failing(mail, smtpd, processors):
    s = smtpd()
    profile(mail, s, rate_limit_per_minute=2)
    ids = [send(mail, subject="n%d" % i) for i in range(3)]
    p = processors("-d", mail.dsn, "--once", "--workers=2")
    assert p.wait_exit() == 0
    assert len(s.messages()) == 2
    assert sorted(status(mail, i) for i in ids) == ["queued", "sent", "sent"]
    # the third waits in the queue for the window to move: no attempt spent, no log row
    [(attempt, later)] = mail.sql("SELECT attempt, run_at > now() + interval '30 seconds' FROM pgrelay.queue")
    assert attempt == 1 and later
    assert mail.scalar("SELECT count(*) FROM pgrelay.log") == 2
    assert "deferred=1" in p.lines("batch")[0]


def test_unknown_outcome_is_retried_with_the_same_message_id(mail, smtpd, processors, tmp_path):
    s = smtpd("--drop-after-body")
    profile(mail, s)
    mail.sql("SELECT pgrelay.register('mail', backoff_base => '1 hour', backoff_max => '2 hours')")
    nid = send(mail)
    p = processors("-d", mail.dsn, "--once")
    assert p.wait_exit() == 0
    [(outcome, unknown)] = mail.sql("SELECT outcome, detail->>'unknown_outcome' FROM pgrelay.log")
    assert (outcome, unknown) == ("retry", "true")
    assert status(mail, nid) == "retrying"
    first = parsed(s.messages()[0][1])["Message-ID"]
    # the retry (made due now) goes to a healthy server with the same Message-ID
    s.stop()
    ok = testlib.SmtpServer(tmp_path / "ok", ["--port", str(s.port)])
    try:
        mail.sql("UPDATE pgrelay.queue SET run_at = now()")
        p = processors("-d", mail.dsn, "--once")
        assert p.wait_exit() == 0
        assert status(mail, nid) == "sent"
        assert parsed(ok.messages()[0][1])["Message-ID"] == first
    finally:
        ok.stop()


def test_sigkill_mid_delivery_loses_nothing(mail, smtpd, processors, tmp_path):
    """Kill -9 the Processor while messages are in flight; after a restart every message arrives,
    with at most one duplicate per event that was in flight, recognisable by its Message-ID."""
    s = smtpd("--hang", "body")
    profile(mail, s, timeout="60 seconds")
    ids = [send(mail, subject="n%d" % i) for i in range(12)]
    p = processors("-d", mail.dsn, "--workers=4")
    # four workers are stuck after sending the message bodies to the hanging server
    testlib.wait_for(lambda: len(s.messages()) == 4, "four deliveries in flight")
    p.signal(signal.SIGKILL)
    p.wait_exit()
    s.stop()
    hung = [parsed(raw)["Message-ID"] for _, raw in s.messages()]
    ok = testlib.SmtpServer(tmp_path / "ok", ["--port", str(s.port)])
    try:
        # the killed transactions rolled back: every notification is still to be sent
        testlib.wait_for(lambda: mail.scalar("SELECT count(*) FROM pgrelay.queue") == 12, "the rollback")
        p = processors("-d", mail.dsn, "--once", "--workers=4")
        assert p.wait_exit() == 0
        assert [status(mail, i) for i in ids] == ["sent"] * 12
        got = [parsed(raw)["Message-ID"] for _, raw in ok.messages()] + hung
        expected = {mail.scalar("SELECT message_id FROM pgrelay_notifier.get_status(%s)", (i,)) for i in ids}
        assert set(got) == expected                          # nothing lost
        dups = len(got) - len(expected)
        assert dups <= 4 and dups == len(hung)               # at most one per in-flight event
    finally:
        ok.stop()


def test_run_order_dispatches_notify_before_sql_when_asked(mail, smtpd, processors):
    """With one worker the dispatch order is the processing order: run_order NULLS LAST first,
    then run_at. Put notify (run_order 1) before sql (10) and an email goes before a SQL event
    that is older."""
    s = smtpd()
    profile(mail, s)
    mail.sql("CREATE FUNCTION noop(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS ''")
    mail.sql("SELECT pgrelay.register('jobs', 'sql', handler => 'noop(text)')")
    mail.sql("SELECT pgrelay.notify('jobs', 'older sql event', now() - interval '1 minute')")
    send(mail)
    mail.sql("UPDATE pgrelay.action_types SET run_order = 1 WHERE action_type = 'notify'")
    p = processors("-d", mail.dsn, "--once", "--workers=1", "--log-level=trace")
    assert p.wait_exit() == 0
    done = p.lines("event_done")
    assert "channel=mail" in done[0] and "channel=jobs" in done[1]
    # and the default order (sql 10, notify 20) puts the SQL event first
    mail.sql("UPDATE pgrelay.action_types SET run_order = 20 WHERE action_type = 'notify'")
    mail.sql("SELECT pgrelay.notify('jobs', 'sql event')")
    send(mail)
    p = processors("-d", mail.dsn, "--once", "--workers=1", "--log-level=trace")
    assert p.wait_exit() == 0
    done = p.lines("event_done")
    assert "channel=jobs" in done[0] and "channel=mail" in done[1]


def test_a_failing_fetch_is_a_transient_failure_not_a_stuck_row(mail, smtpd, processors):
    """If fetch() itself raises (here: the notifier was dropped under a queued email), the held
    transaction rolls back to its savepoint, claims the row again and records a transient failure
    with the reason; the worker's session stays usable for the next event."""
    s = smtpd()
    profile(mail, s)
    mail.sql("SELECT pgrelay.register('mail', backoff_base => '1 hour', backoff_max => '2 hours')")
    send(mail)
    mail.sql("DROP EXTENSION pg_relay_notifier CASCADE")
    mail.sql("CREATE FUNCTION noop(p text) RETURNS void SECURITY DEFINER SET search_path = public LANGUAGE sql AS ''")
    mail.sql("SELECT pgrelay.register('jobs', 'sql', handler => 'noop(text)')")
    mail.sql("SELECT pgrelay.notify('jobs', 'after the failed fetch')")
    p = processors("-d", mail.dsn, "--once", "--workers=1")
    assert p.wait_exit() == 0
    rows = mail.sql("SELECT channel, outcome, error FROM pgrelay.log ORDER BY id")
    assert [(c, o) for c, o, _ in rows] == [("jobs", "ok"), ("mail", "retry")] or \
           [(c, o) for c, o, _ in rows] == [("mail", "retry"), ("jobs", "ok")]
    err = [e for c, _, e in rows if c == "mail"][0]
    assert err.startswith("fetch failed:") and "pgrelay_notifier" in err
    assert mail.sql("SELECT channel, attempt FROM pgrelay.queue") == [("mail", 2)]
    assert s.connections() == 0


def xoauth2_setup(mail, smtpd, graphd, certs, *flags):
    """An Exchange Online look-alike: STARTTLS, XOAUTH2 with tokens the fake token endpoint issued
    for the Outlook resource; a profile with an OAuth2 app on that endpoint (the same test CA)."""
    g = graphd()
    s = smtpd("--starttls", *TLS, "--auth-user", g.SENDER, "--auth-mechs", "XOAUTH2",
              "--xoauth2-tokens", g.tokens_file(), *flags)
    profile(mail, s, certs, security="starttls", username=g.SENDER, tenant_id=g.TENANT, client_id=g.CLIENT_ID,
            client_secret="env:APP_SECRET", login_url=g.base_url, from_address=g.SENDER)
    return g, s, {"APP_SECRET": g.CLIENT_SECRET}


# the variable the profile p of xoauth2_setup may name (--secret-env)
BIND_APP = "--secret-env=APP_SECRET=profile/p"


def test_smtp_xoauth2_with_an_oauth2_app(mail, smtpd, graphd, certs, processors):
    g, s, env = xoauth2_setup(mail, smtpd, graphd, certs)
    ids = [send(mail, subject="n%d" % i) for i in range(3)]
    p = processors("-d", mail.dsn, "--once", "--workers=1", BIND_APP, env=env)
    assert p.wait_exit() == 0
    assert [status(mail, i) for i in ids] == ["sent"] * 3
    [tok] = g.requests("token")
    assert tok["form"]["scope"] == g.OUTLOOK_SCOPE and tok["form"]["client_secret"] == g.CLIENT_SECRET
    assert [m[0]["login"] for m in s.messages()] == [g.SENDER] * 3
    assert s.connections() == 1
    for secret in [g.CLIENT_SECRET] + list(g.tokens()):
        assert secret not in p.log()


def test_smtp_xoauth2_token_refused_is_replaced_within_the_attempt(mail, smtpd, graphd, certs, processors):
    """The cached token is revoked; the next message needs a new connection (the server closes
    the old one with 421), whose AUTH refuses the token: the Processor drops it, fetches a new one
    and authenticates again, in the same attempt."""
    g, s, env = xoauth2_setup(mail, smtpd, graphd, certs, "--421-on-reuse")
    first = send(mail, subject="first")
    p = processors("-d", mail.dsn, "--workers=1", "--poll-interval=20ms", BIND_APP, env=env)
    testlib.wait_for(lambda: status(mail, first) == "sent", "the first message")
    g.expire_tokens()
    second = send(mail, subject="second")
    testlib.wait_for(lambda: status(mail, second) == "sent", "the second message")
    assert p.stop() == 0
    assert g.counters()["token_requests"] == 2
    assert mail.sql("SELECT attempt, outcome FROM pgrelay.log ORDER BY id") == [(1, "ok"), (1, "ok")]
    assert len(s.messages()) == 2


def test_valgrind_email_run_is_clean(mail, smtpd):
    """The release build under valgrind delivers mail (libcurl, TLS set-up, the held transaction)
    without a memory error or a leak."""
    import subprocess
    s = smtpd()
    profile(mail, s)
    ids = [send(mail, subject="n%d" % i) for i in range(5)]
    r = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite,indirect",
                        "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99",
                        testlib.PROCESSOR_RELEASE, "-d", mail.dsn, "--once", "--workers=2"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:]
    assert "ERROR SUMMARY: 0 errors" in r.stdout
    assert [status(mail, i) for i in ids] == ["sent"] * 5
