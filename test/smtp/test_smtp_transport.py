"""The SMTP transport (processor/src/mail/smtp*.c) against a real SMTP server (test/fixtures/smtpd.py).

Each test starts its own server with the behaviour under test, delivers one or more fetch()
documents with tool_deliver, and checks the set_status-style result and what the server got.
"""
import base64
import email
import email.policy
import socket

from testlib import make_doc


def only(results):
    assert len(results) == 1, results
    return results[0]


def rcpt_status(result):
    return {r["id"]: r["status"] for r in result["recipients"]}


def test_plain_delivery(smtpd, deliver):
    s = smtpd()
    doc = make_doc(s.port, recipients=[
        {"id": 1, "kind": "to", "address": "ann@example.org", "name": "Ann", "status": "pending"},
        {"id": 2, "kind": "bcc", "address": "audit@example.com", "name": None, "status": "pending"},
    ])
    r = only(deliver(doc))
    assert r["outcome"] == "sent" and r["error"] is None and r["unknown_outcome"] is False
    assert r["reply_code"] == 250 and r["reply"].startswith("250 2.0.0 OK queued as")
    assert rcpt_status(r) == {1: "sent", 2: "sent"}
    assert "trace" not in r
    [(env, raw)] = s.messages()
    assert env["mail_from"] == "noreply@example.com"
    assert env["rcpt_tos"] == ["ann@example.org", "audit@example.com"]   # Bcc in the envelope
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert msg["Bcc"] is None and b"audit@example.com" not in raw      # ... never in a header
    assert msg["Message-ID"] == "<4242.test@example.com>"
    assert msg.get_content().rstrip() == "Hello Ann"


def test_envelope_holds_only_pending_and_retrying(smtpd, deliver):
    s = smtpd()
    doc = make_doc(s.port, recipients=[
        {"id": 1, "kind": "to", "address": "a@example.org", "name": None, "status": "sent"},
        {"id": 2, "kind": "cc", "address": "b@example.org", "name": None, "status": "retrying"},
        {"id": 3, "kind": "to", "address": "c@example.org", "name": None, "status": "failed"},
    ])
    r = only(deliver(doc))
    assert r["outcome"] == "sent" and rcpt_status(r) == {2: "sent"}
    [(env, raw)] = s.messages()
    assert env["rcpt_tos"] == ["b@example.org"]
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert [a.addr_spec for a in msg["To"].addresses] == ["a@example.org", "c@example.org"]
    assert [a.addr_spec for a in msg["Cc"].addresses] == ["b@example.org"]


def test_starttls(smtpd, deliver, certs):
    s = smtpd("--starttls", "--cert", "{certs}/server.pem", "--key", "{certs}/server.key")
    r = only(deliver(make_doc(s.port, "starttls", smtp_ca_file=str(certs / "ca.pem"))))
    assert r["outcome"] == "sent", r
    assert s.messages()[0][0]["tls"] is True


def test_starttls_optional_uses_tls_when_offered(smtpd, deliver, certs):
    s = smtpd("--starttls", "--cert", "{certs}/server.pem", "--key", "{certs}/server.key")
    r = only(deliver(make_doc(s.port, "starttls_optional", smtp_ca_file=str(certs / "ca.pem"))))
    assert r["outcome"] == "sent", r
    assert s.messages()[0][0]["tls"] is True


def test_starttls_optional_without_tls(smtpd, deliver):
    s = smtpd()
    r = only(deliver(make_doc(s.port, "starttls_optional")))
    assert r["outcome"] == "sent", r
    assert s.messages()[0][0]["tls"] is False


def test_implicit_tls(smtpd, deliver, certs):
    s = smtpd("--implicit-tls", "--cert", "{certs}/server.pem", "--key", "{certs}/server.key")
    r = only(deliver(make_doc(s.port, "tls", smtp_ca_file=str(certs / "ca.pem"),
                              smtp_host="localhost")))
    assert r["outcome"] == "sent", r
    assert s.messages()[0][0]["tls"] is True


def test_starttls_required_but_not_offered_is_permanent(smtpd, deliver):
    s = smtpd()
    r = only(deliver(make_doc(s.port, "starttls")))
    assert r["outcome"] == "failed", r
    assert "STARTTLS" in r["error"] and "configuration" in r["error"]
    assert rcpt_status(r) == {1: "failed"}
    assert s.messages() == []


def test_certificate_for_another_host_is_rejected(smtpd, deliver, certs):
    s = smtpd("--starttls", "--cert", "{certs}/wrong.pem", "--key", "{certs}/wrong.key")
    r = only(deliver(make_doc(s.port, "starttls", smtp_ca_file=str(certs / "ca.pem"))))
    assert r["outcome"] == "failed", r
    assert "certificate" in r["error"] and "configuration" in r["error"]
    assert s.messages() == []


def test_starttls_optional_never_downgrades_on_a_bad_certificate(smtpd, deliver, certs):
    s = smtpd("--starttls", "--cert", "{certs}/wrong.pem", "--key", "{certs}/wrong.key")
    r = only(deliver(make_doc(s.port, "starttls_optional", smtp_ca_file=str(certs / "ca.pem"))))
    assert r["outcome"] == "failed" and "certificate" in r["error"], r
    assert s.messages() == []


def test_unknown_ca_is_rejected_by_default(smtpd, deliver):
    s = smtpd("--implicit-tls", "--cert", "{certs}/server.pem", "--key", "{certs}/server.key")
    r = only(deliver(make_doc(s.port, "tls")))   # no ca_file: the system store lacks our CA
    assert r["outcome"] == "failed", r
    assert "certificate" in r["error"]
    assert s.messages() == []


AUTH = ("--auth-user", "relay", "--auth-password", "pw-Secret-123")


def test_auth_plain(smtpd, deliver):
    s = smtpd(*AUTH, "--auth-mechs", "PLAIN")
    r = only(deliver(make_doc(s.port, smtp_username="relay", smtp_password="env:SMTP_PW"),
                     env={"SMTP_PW": "pw-Secret-123"}))
    assert r["outcome"] == "sent", r
    assert s.messages()[0][0]["login"] == "relay"


def test_auth_login_with_file_secret(smtpd, deliver, tmp_path):
    s = smtpd(*AUTH, "--auth-mechs", "LOGIN")
    secrets = tmp_path / "secrets"
    (secrets / "profile" / "test").mkdir(parents=True)      # the profile's own directory
    (secrets / "profile" / "test" / "smtp_pw").write_text("pw-Secret-123\n")
    r = only(deliver(make_doc(s.port, smtp_username="relay", smtp_password="file:smtp_pw"),
                     args=["--secrets-dir", str(secrets)]))
    assert r["outcome"] == "sent", r
    assert s.messages()[0][0]["login"] == "relay"


def test_auth_over_starttls(smtpd, deliver, certs):
    s = smtpd(*AUTH, "--auth-require-tls", "--require-starttls", "--cert", "{certs}/server.pem",
              "--key", "{certs}/server.key")
    r = only(deliver(make_doc(s.port, "starttls", smtp_ca_file=str(certs / "ca.pem"),
                              smtp_username="relay", smtp_password="pw-Secret-123")))
    assert r["outcome"] == "sent", r
    env = s.messages()[0][0]
    assert env["tls"] is True and env["login"] == "relay"


def test_auth_wrong_password_is_permanent(smtpd, deliver):
    s = smtpd(*AUTH)
    r = only(deliver(make_doc(s.port, smtp_username="relay", smtp_password="wrong-pw-777",
                              profile_debug=True)))
    assert r["outcome"] == "failed", r
    assert "authentication failed" in r["error"] and "configuration" in r["error"]
    assert r["reply_code"] == 535
    assert "wrong-pw-777" not in str(r)
    assert s.messages() == []


def test_auth_xoauth2(smtpd, deliver):
    s = smtpd(*AUTH, "--auth-mechs", "XOAUTH2", "--xoauth2-token", "tok-ABC-987")
    r = only(deliver(make_doc(s.port, smtp_username="relay", smtp_oauth_token="tok-ABC-987",
                              profile_debug=True)))
    assert r["outcome"] == "sent", r
    assert "tok-ABC-987" not in r["trace"]
    assert "AUTH XOAUTH2" in r["trace"]


def app_doc(s, g, certs, **kw):
    """An SMTP profile (STARTTLS with the test CA) with an OAuth2 app on the fake token endpoint:
    the same CA verifies both servers, as profile.smtp.ca_file does."""
    return make_doc(s.port, "starttls", smtp_ca_file=str(certs / "ca.pem"), smtp_username=g.SENDER,
                    smtp_tenant_id=g.TENANT, smtp_client_id=g.CLIENT_ID, smtp_client_secret="env:APP_SECRET",
                    smtp_login_url=g.base_url, **kw)


def xoauth2_server(smtpd, g):
    """Exchange Online's XOAUTH2 as smtpd.py fakes it: only tokens the fake token endpoint issued
    for the Outlook resource, unexpired, for the mailbox."""
    return smtpd("--starttls", "--cert", "{certs}/server.pem", "--key", "{certs}/server.key",
                 "--auth-user", g.SENDER, "--auth-mechs", "XOAUTH2", "--xoauth2-tokens", g.tokens_file())


def test_auth_xoauth2_with_an_app_token(smtpd, graphd, deliver, certs):
    g = graphd()
    s = xoauth2_server(smtpd, g)
    results = deliver(app_doc(s, g, certs, profile_debug=True), repeat=3, env={"APP_SECRET": g.CLIENT_SECRET})
    assert [r["outcome"] for r in results] == ["sent"] * 3, results
    [tok] = g.requests("token")                                  # one token for three messages
    assert tok["form"] == {"grant_type": "client_credentials", "client_id": g.CLIENT_ID,
                           "client_secret": g.CLIENT_SECRET, "scope": g.OUTLOOK_SCOPE}
    assert [m[0]["login"] for m in s.messages()] == [g.SENDER] * 3
    assert s.connections() == 1
    trace = results[0]["trace"]
    assert "AUTH XOAUTH2" in trace and "client_secret=[redacted]" in trace
    for secret in [g.CLIENT_SECRET] + list(g.tokens()):
        assert secret not in trace


def test_auth_xoauth2_app_refused_fails_without_smtp(smtpd, graphd, deliver, certs):
    g = graphd()
    s = xoauth2_server(smtpd, g)
    r = only(deliver(app_doc(s, g, certs), env={"APP_SECRET": "not-the-secret"}))
    assert r["outcome"] == "failed", r
    assert "no OAuth2 token for SMTP AUTH XOAUTH2" in r["error"] and "invalid_client" in r["error"]
    assert [x["status"] for x in r["recipients"]] == ["failed"]
    assert s.connections() == 0


def test_missing_secret_fails_without_connecting(smtpd, deliver):
    s = smtpd(*AUTH)
    r = only(deliver(make_doc(s.port, smtp_username="relay", smtp_password="env:NOT_SET_PW")))
    assert r["outcome"] == "failed"
    assert "env:NOT_SET_PW" in r["error"]
    assert s.connections() == 0


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def test_multipart_message_parses_back(smtpd, deliver):
    s = smtpd()
    pdf = bytes(range(256)) * 40
    subject = "Grüße aus Köln – " + "€" * 30 + " 😀 long enough to need several encoded words"
    doc = make_doc(
        s.port,
        **{"from": {"address": "noreply@example.com", "name": "Jörg, the Sender"}},
        recipients=[
            {"id": 1, "kind": "to", "address": "ann@example.org", "name": "Ann Ñandú", "status": "pending"},
            {"id": 2, "kind": "to", "address": "zoe@example.org", "name": "Doe, Zoe", "status": "pending"},
            {"id": 3, "kind": "cc", "address": "bob@example.org", "name": None, "status": "pending"},
            {"id": 4, "kind": "bcc", "address": "audit@example.com", "name": "Audit", "status": "pending"},
        ],
        reply_to=[{"address": "support@example.com", "name": "Support Désk"}],
        subject=subject,
        body_text="Hello Ann,\n.a line starting with a dot\nlast line with trailing space \n" + "x" * 200,
        body_html="<p>Hello <b>Ann</b> <img src=\"cid:logo@example.com\"></p>",
        headers=[["X-Campaign", "welcome"], ["List-Unsubscribe", "<mailto:unsub@example.com>"],
                 ["X-Long", " ".join(["word%d" % i for i in range(40)])]],
        attachments=[
            {"filename": "Résumé €.pdf", "content_type": "application/pdf", "size": len(pdf),
             "content_id": None, "content_base64": base64.encodebytes(pdf).decode()},
            {"filename": "logo.png", "content_type": "image/png", "size": len(PNG),
             "content_id": "logo@example.com", "content_base64": base64.b64encode(PNG).decode()},
        ])
    r = only(deliver(doc))
    assert r["outcome"] == "sent", r
    [(env, raw)] = s.messages()
    assert env["rcpt_tos"] == ["ann@example.org", "zoe@example.org", "bob@example.org",
                               "audit@example.com"]
    assert b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b"")   # CRLF only
    assert max(len(line) for line in raw.split(b"\r\n")) <= 78
    assert all(b < 128 for b in raw)                                   # 7-bit clean
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert str(msg["Subject"]) == subject
    assert msg["From"].addresses[0].display_name == "Jörg, the Sender"
    assert msg["From"].addresses[0].addr_spec == "noreply@example.com"
    assert [(a.display_name, a.addr_spec) for a in msg["To"].addresses] == [
        ("Ann Ñandú", "ann@example.org"), ("Doe, Zoe", "zoe@example.org")]
    assert [a.addr_spec for a in msg["Cc"].addresses] == ["bob@example.org"]
    assert msg["Reply-To"].addresses[0].display_name == "Support Désk"
    assert msg["Bcc"] is None and b"audit@example.com" not in raw
    assert msg["X-Campaign"] == "welcome"
    assert msg["List-Unsubscribe"] == "<mailto:unsub@example.com>"
    assert msg["X-Long"] == " ".join(["word%d" % i for i in range(40)])
    assert msg["MIME-Version"] == "1.0" and msg["Date"].datetime is not None
    # mixed( alternative( text, related( html, logo ) ), pdf )
    assert msg.get_content_type() == "multipart/mixed"
    mixed = list(msg.iter_parts())
    assert [p.get_content_type() for p in mixed] == ["multipart/alternative", "application/pdf"]
    alt = list(mixed[0].iter_parts())
    assert [p.get_content_type() for p in alt] == ["text/plain", "multipart/related"]
    assert alt[0].get_content().replace("\r\n", "\n") == doc["body_text"]
    related = list(alt[1].iter_parts())
    assert [p.get_content_type() for p in related] == ["text/html", "image/png"]
    assert related[0].get_content() == doc["body_html"]
    assert related[1]["Content-ID"] == "<logo@example.com>"
    assert related[1].get_content_disposition() == "inline"
    assert related[1].get_content() == PNG
    assert mixed[1].get_filename() == "Résumé €.pdf"
    assert mixed[1].get_content_disposition() == "attachment"
    assert mixed[1].get_content() == pdf


def test_html_only_and_text_only(smtpd, deliver):
    s = smtpd()
    rs = deliver([make_doc(s.port, body_text=None, body_html="<p>only html</p>"),
                  make_doc(s.port, body_text="only text", body_html=None)])
    assert [r["outcome"] for r in rs] == ["sent", "sent"]
    html, text = [email.message_from_bytes(raw, policy=email.policy.default)
                  for _, raw in s.messages()]
    # a single-part body ends with the CRLF of its last line
    assert html.get_content_type() == "text/html" and html.get_content() == "<p>only html</p>\r\n"
    assert text.get_content_type() == "text/plain" and text.get_content() == "only text\r\n"


THREE = [
    {"id": 1, "kind": "to", "address": "ann@example.org", "name": None, "status": "pending"},
    {"id": 2, "kind": "to", "address": "bad@example.org", "name": None, "status": "pending"},
    {"id": 3, "kind": "cc", "address": "cat@example.org", "name": None, "status": "pending"},
]


def test_partial_rcpt_rejection(smtpd, deliver):
    s = smtpd("--reject-rcpt", "bad@example.org=550")
    r = only(deliver(make_doc(s.port, recipients=THREE)))
    assert r["outcome"] == "partially_sent", r
    assert rcpt_status(r) == {1: "sent", 2: "failed", 3: "sent"}
    bad = [x for x in r["recipients"] if x["id"] == 2][0]
    assert bad["code"] == 550 and "bad@example.org" in bad["reply"]
    assert r["reply_code"] == 250
    assert s.messages()[0][0]["rcpt_tos"] == ["ann@example.org", "cat@example.org"]


def test_450_for_one_recipient_retries_only_that_one(smtpd, deliver):
    s = smtpd("--reject-rcpt", "bad@example.org=450")
    r = only(deliver(make_doc(s.port, recipients=THREE)))
    assert r["outcome"] == "retrying", r
    assert rcpt_status(r) == {1: "sent", 2: "retrying", 3: "sent"}
    assert len(s.messages()) == 1


def test_every_recipient_rejected_is_permanent(smtpd, deliver):
    s = smtpd("--reject-rcpt", "ann@example.org=550")
    r = only(deliver(make_doc(s.port)))
    assert r["outcome"] == "failed", r
    assert r["reply_code"] == 550 and rcpt_status(r) == {1: "failed"}


def test_451_at_end_of_data_then_accepted(smtpd, deliver):
    s = smtpd("--data-reply", "451:1")
    first, second = deliver(make_doc(s.port), repeat=2)
    assert first["outcome"] == "retrying" and first["reply_code"] == 451, first
    assert first["unknown_outcome"] is False
    assert rcpt_status(first) == {1: "retrying"}
    assert second["outcome"] == "sent", second
    assert len(s.messages()) == 1


def test_451_to_data_command_is_transient(smtpd, deliver):
    s = smtpd("--data-cmd-reply", "451:1")
    first, second = deliver(make_doc(s.port), repeat=2)
    assert first["outcome"] == "retrying" and first["reply_code"] == 451, first
    assert second["outcome"] == "sent", second


def test_554_at_end_of_data_is_permanent(smtpd, deliver):
    s = smtpd("--data-reply", "554")
    r = only(deliver(make_doc(s.port, recipients=THREE)))
    assert r["outcome"] == "failed" and r["reply_code"] == 554, r
    assert set(rcpt_status(r).values()) == {"failed"}
    assert s.messages() == []


HANG = {"profile_timeout_ms": 1500, "profile_connect_timeout_ms": 1500}


def test_server_silent_after_connect_times_out(smtpd, deliver):
    s = smtpd("--hang", "connect")
    r = only(deliver(make_doc(s.port, **HANG)))
    assert r["outcome"] == "retrying", r
    assert r["unknown_outcome"] is False and "timed out" in r["error"]
    assert rcpt_status(r) == {1: "retrying"}


def test_server_silent_after_data_command_times_out(smtpd, deliver):
    s = smtpd("--hang", "data-cmd")
    r = only(deliver(make_doc(s.port, **HANG)))
    assert r["outcome"] == "retrying", r
    assert r["unknown_outcome"] is False


def test_server_silent_after_body_is_unknown_outcome(smtpd, deliver):
    s = smtpd("--hang", "body")
    r = only(deliver(make_doc(s.port, **HANG)))
    assert r["outcome"] == "retrying" and r["unknown_outcome"] is True, r
    assert len(s.messages()) == 1   # the server did get it: hence "unknown", not "failed"


def test_connection_dropped_after_body_is_unknown_outcome(smtpd, deliver):
    s = smtpd("--drop-after-body")
    r = only(deliver(make_doc(s.port)))
    assert r["outcome"] == "retrying" and r["unknown_outcome"] is True, r
    assert "may have been delivered" in r["error"] and r["reply_code"] is None
    assert len(s.messages()) == 1


def test_connection_refused_is_transient(deliver):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()   # nothing listens there now
    r = only(deliver(make_doc(port)))
    assert r["outcome"] == "retrying" and r["unknown_outcome"] is False, r


def test_connection_is_reused(smtpd, deliver):
    s = smtpd()
    rs = deliver(make_doc(s.port), repeat=3)
    assert [r["outcome"] for r in rs] == ["sent"] * 3
    assert s.connections() == 1
    assert [env["connection"] for env, _ in s.messages()] == [1, 1, 1]


def test_profile_change_opens_a_new_connection(smtpd, deliver):
    s = smtpd()
    rs = deliver([make_doc(s.port), make_doc(s.port, smtp_helo_name="other.test")])
    assert [r["outcome"] for r in rs] == ["sent", "sent"]
    assert s.connections() == 2


def test_dead_reused_connection_is_retried_on_a_new_one(smtpd, deliver):
    s = smtpd("--421-on-reuse")
    rs = deliver(make_doc(s.port, profile_debug=True), repeat=2)
    assert [r["outcome"] for r in rs] == ["sent", "sent"], rs
    assert s.connections() == 2 and len(s.messages()) == 2
    assert "retrying once on a new connection" in rs[1]["trace"]


def test_trace_is_redacted(smtpd, deliver):
    s = smtpd(*AUTH, "--auth-mechs", "LOGIN")
    body = "the secret body text"
    r = only(deliver(make_doc(s.port, smtp_username="relay", smtp_password="pw-Secret-123",
                              profile_debug=True, body_text=body)))
    assert r["outcome"] == "sent", r
    t = r["trace"]
    assert "pw-Secret-123" not in t
    for secret in (b"pw-Secret-123", b"relay", b"\0relay\0pw-Secret-123"):
        assert base64.b64encode(secret).decode() not in t
    assert "C: AUTH LOGIN\r\n" in t and "S: 334 [redacted]" in t and "C: [redacted]" in t
    assert "S: 235" in t and "C: MAIL FROM:<noreply@example.com>" in t
    assert "C: Subject: Hello" in t and "[body " in t and body not in t
    assert t.index("S: 354") < t.index("[body ") < t.index("S: 250 2.0.0 OK queued")


def test_trace_redacts_plain_initial_response(smtpd, deliver):
    s = smtpd(*AUTH, "--auth-mechs", "PLAIN")
    r = only(deliver(make_doc(s.port, smtp_username="relay", smtp_password="pw-Secret-123",
                              profile_debug=True)))
    assert r["outcome"] == "sent"
    assert "pw-Secret-123" not in r["trace"]
    assert base64.b64encode(b"\0relay\0pw-Secret-123").decode() not in r["trace"]


def test_message_over_max_bytes_fails_before_connecting(smtpd, deliver):
    s = smtpd()
    r = only(deliver(make_doc(s.port, profile_max_message_bytes=100)))
    assert r["outcome"] == "failed" and "max_message_bytes" in r["error"], r
    assert s.connections() == 0


def test_invalid_document_fails(smtpd, deliver):
    s = smtpd()
    r = only(deliver(make_doc(s.port, subject="Hi\r\nBcc: evil@example.com")))
    assert r["outcome"] == "failed" and "subject contains a control character" in r["error"]
    assert s.connections() == 0
