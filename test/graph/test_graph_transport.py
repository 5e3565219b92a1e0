"""The Microsoft Graph transport (processor/src/mail/graph*.c and oauth*.c, src/http/https.c) against
the fake token endpoint and Graph (test/fixtures/graphd.py).

Each test starts its own fake with the behaviour under test, delivers fetch() documents with
tool_deliver (one process: one token cache, one session, so one kept-alive connection), and
checks the set_status-style result against what the fake received, field by field, and how many
requests and connections it took.
"""
import base64
import json
import socket

import pytest

import testlib
from testlib import GraphServer as G, make_graph_doc

SECRET_ENV = {"GRAPH_SECRET": G.CLIENT_SECRET}


def only(results):
    assert len(results) == 1, results
    return results[0]


def header(record, name):
    """The value of a request header the fake recorded (first one, any case); None when absent."""
    for k, v in record["headers"]:
        if k.lower() == name.lower():
            return v
    return None


def bearer(record):
    scheme, _, token = header(record, "Authorization").partition(" ")
    assert scheme == "Bearer"
    return token


def response_header(record, name):
    for k, v in record["response_headers"]:
        if k.lower() == name.lower():
            return v
    return None


FULL = dict(
    recipients=[
        {"id": 1, "kind": "to", "address": "ann@example.org", "name": "Ann Éxample", "status": "pending"},
        {"id": 2, "kind": "to", "address": "carl@example.org", "name": None, "status": "pending"},
        {"id": 3, "kind": "cc", "address": "bob@example.org", "name": "Bob", "status": "pending"},
        {"id": 4, "kind": "bcc", "address": "audit@contoso.com", "name": None, "status": "pending"},
    ],
    reply_to=[{"address": "support@contoso.com", "name": "Support"}],
    subject="Grüße — your order",
    body_text="Hello Ann",
    body_html='<p>Hello <b>Ann</b></p><img src="cid:logo@contoso.com">',
    headers=[["X-Campaign", "welcome"], ["x-order", "1001"]],
    attachments=[
        {"filename": "Rechnung ü.pdf", "content_type": "application/pdf", "size": 5, "content_id": None,
         "content_base64": base64.b64encode(b"%PDF-").decode()},
        {"filename": "logo.png", "content_type": "image/png", "size": 4, "content_id": "logo@contoso.com",
         "content_base64": base64.b64encode(b"\x89PNG").decode()},
    ],
)


def test_sendmail_carries_the_whole_message(graphd, deliver):
    g = graphd()
    r = only(deliver(make_graph_doc(g, graph_save_to_sent_items=False, **FULL), env=SECRET_ENV))
    assert r["outcome"] == "sent" and r["error"] is None and r["unknown_outcome"] is False, r
    assert r["reply_code"] == 202 and r["reply"] == "202 Accepted"
    assert r["recipients"] == []                    # Graph says nothing per recipient
    [tok] = g.requests("token")
    [req] = g.requests("sendmail")
    # the token request: a form with the app's credentials, the secret intact despite + / = & %
    assert header(tok, "Content-Type") == "application/x-www-form-urlencoded"
    assert tok["method"] == "POST" and tok["path"] == "/%s/oauth2/v2.0/token" % G.TENANT
    assert tok["form"] == {"grant_type": "client_credentials", "client_id": G.CLIENT_ID,
                           "client_secret": G.CLIENT_SECRET, "scope": G.GRAPH_SCOPE}
    # sendMail as the sender mailbox, %-encoded, with that token
    assert req["method"] == "POST" and req["path"] == "/v1.0/users/relay%40contoso.com/sendMail"
    assert req["status"] == 202 and req["mailbox"] == G.SENDER
    assert header(req, "Content-Type") == "application/json"
    assert header(req, "Expect") is None
    assert g.tokens()[bearer(req)]["scope"] == G.GRAPH_SCOPE
    assert r["provider_message_id"] == response_header(req, "request-id")
    assert header(req, "client-request-id") == response_header(req, "client-request-id")
    doc = req["json"]
    assert set(doc) == {"message", "saveToSentItems"} and doc["saveToSentItems"] is False
    msg = doc["message"]
    assert msg["subject"] == "Grüße — your order"
    assert msg["body"] == {"contentType": "HTML", "content": FULL["body_html"]}
    assert msg["toRecipients"] == [{"emailAddress": {"address": "ann@example.org", "name": "Ann Éxample"}},
                                   {"emailAddress": {"address": "carl@example.org"}}]
    assert msg["ccRecipients"] == [{"emailAddress": {"address": "bob@example.org", "name": "Bob"}}]
    assert msg["bccRecipients"] == [{"emailAddress": {"address": "audit@contoso.com"}}]
    assert msg["replyTo"] == [{"emailAddress": {"address": "support@contoso.com", "name": "Support"}}]
    assert "from" not in msg                         # the mailbox sends as itself
    assert msg["internetMessageId"] == "<4242.test@contoso.com>"
    assert msg["internetMessageHeaders"] == [{"name": "X-Campaign", "value": "welcome"},
                                             {"name": "x-order", "value": "1001"}]
    pdf, logo = msg["attachments"]
    assert pdf["@odata.type"] == logo["@odata.type"] == "#microsoft.graph.fileAttachment"
    assert (pdf["name"], pdf["contentType"], pdf["isInline"]) == ("Rechnung ü.pdf", "application/pdf", False)
    assert "contentId" not in pdf
    assert (logo["name"], logo["isInline"], logo["contentId"]) == ("logo.png", True, "logo@contoso.com")
    files = [g.file(a["file"]) for a in req["attachments"]]
    assert files == [b"%PDF-", b"\x89PNG"]
    c = g.counters()
    assert (c["token_requests"], c["sendmail_requests"], c["sendmail_accepted"]) == (1, 1, 1)


def test_text_body_and_a_from_other_than_the_sender(graphd, deliver):
    g = graphd()
    doc = make_graph_doc(g, body_html=None, body_text="Plain text",
                         **{"from": {"address": "billing@contoso.com", "name": "Billing"}})
    r = only(deliver(doc, env=SECRET_ENV))
    assert r["outcome"] == "sent", r
    msg = g.requests("sendmail")[0]["json"]["message"]
    assert msg["body"] == {"contentType": "Text", "content": "Plain text"}
    assert msg["from"] == {"emailAddress": {"address": "billing@contoso.com", "name": "Billing"}}
    assert "attachments" not in msg and "internetMessageHeaders" not in msg
    assert g.requests("sendmail")[0]["json"]["saveToSentItems"] is True


def test_only_the_envelope_is_sent_to(graphd, deliver):
    g = graphd()
    doc = make_graph_doc(g, recipients=[
        {"id": 1, "kind": "to", "address": "done@example.org", "name": None, "status": "sent"},
        {"id": 2, "kind": "to", "address": "again@example.org", "name": None, "status": "retrying"},
        {"id": 3, "kind": "cc", "address": "gone@example.org", "name": None, "status": "failed"},
        {"id": 4, "kind": "bcc", "address": "new@example.org", "name": None, "status": "pending"}])
    assert only(deliver(doc, env=SECRET_ENV))["outcome"] == "sent"
    msg = g.requests("sendmail")[0]["json"]["message"]
    assert msg["toRecipients"] == [{"emailAddress": {"address": "again@example.org"}}]
    assert msg["bccRecipients"] == [{"emailAddress": {"address": "new@example.org"}}]
    assert "ccRecipients" not in msg


def test_one_token_and_one_connection_for_many_messages(graphd, deliver):
    g = graphd()
    results = deliver(make_graph_doc(g), repeat=5, env=SECRET_ENV)
    assert [r["outcome"] for r in results] == ["sent"] * 5
    c = g.counters()
    assert c["token_requests"] == 1 and c["tokens_issued"] == 1
    assert c["connections"] == 1 and c["tls_handshake_failures"] == 0
    assert c["sendmail_requests"] == c["sendmail_accepted"] == 5
    assert {r["connection"] for r in g.requests()} == {1}
    assert len({bearer(r) for r in g.requests("sendmail")}) == 1


def test_default_scope_follows_the_graph_url(graphd, deliver):
    """Without a scope the token is asked for {graph_url}/.default (national clouds); trailing
    slashes of the URLs are dropped."""
    port = testlib.free_ports(1)[0]
    scope = "https://127.0.0.1:%d/.default" % port
    g = graphd(args=["--port", str(port), "--scope", scope, "--graph-scope", scope])
    doc = make_graph_doc(g, graph_scope=None, graph_login_url=g.base_url + "/", graph_graph_url=g.base_url + "//")
    assert only(deliver(doc, env=SECRET_ENV))["outcome"] == "sent"
    assert g.requests("token")[0]["form"]["scope"] == scope
    assert g.requests("sendmail")[0]["path"] == "/v1.0/users/relay%40contoso.com/sendMail"


def test_sender_as_a_user_id(graphd, deliver):
    g = graphd()
    mid = g.mailbox_id()
    r = only(deliver(make_graph_doc(g, graph_sender=mid), env=SECRET_ENV))
    assert r["outcome"] == "sent", r
    req = g.requests("sendmail")[0]
    assert req["path"] == "/v1.0/users/%s/sendMail" % mid and req["mailbox"] == G.SENDER
    assert req["json"]["message"]["from"]["emailAddress"]["address"] == G.SENDER


def test_401_drops_the_token_and_sends_once_more(graphd, deliver):
    g = graphd()
    g.script("sendmail", "401")
    r = only(deliver(make_graph_doc(g), env=SECRET_ENV))
    assert r["outcome"] == "sent" and r["reply_code"] == 202, r
    first, second = g.requests("sendmail")
    assert (first["status"], second["status"]) == (401, 202)
    assert bearer(first) != bearer(second)
    c = g.counters()
    assert (c["token_requests"], c["sendmail_requests"], c["sendmail_accepted"]) == (2, 2, 1)


def test_a_second_401_is_permanent(graphd, deliver):
    g = graphd()
    g.script("sendmail", "401", "401")
    r = only(deliver(make_graph_doc(g), env=SECRET_ENV))
    assert r["outcome"] == "failed" and r["reply_code"] == 401, r
    assert "InvalidAuthenticationToken" in r["error"] and "refused twice" in r["error"]
    c = g.counters()
    assert (c["token_requests"], c["sendmail_requests"], c["sendmail_accepted"]) == (2, 2, 0)


@pytest.mark.parametrize("entry, status", [("429 retry-after=7", 429), ("503 retry-after=3", 503),
                                           ("503", 503), ("504", 504), ("500", 500)])
def test_throttling_and_server_errors_are_transient(graphd, deliver, entry, status):
    g = graphd()
    g.script("sendmail", entry)
    r = only(deliver(make_graph_doc(g), env=SECRET_ENV))
    assert r["outcome"] == "retrying" and r["reply_code"] == status and r["unknown_outcome"] is False, r
    assert ("Retry-After" in r["error"]) == ("retry-after" in entry)
    assert g.counters()["sendmail_accepted"] == 0 and g.counters()["sendmail_requests"] == 1


def test_a_refusal_is_permanent_with_graphs_code_and_message(graphd, deliver):
    g = graphd()
    g.script("sendmail", "400 code=ErrorInvalidRecipients")
    r = only(deliver(make_graph_doc(g), env=SECRET_ENV))
    assert r["outcome"] == "failed", r
    assert r["reply"] == "400 ErrorInvalidRecipients: Invalid request."
    assert "HTTP 400 ErrorInvalidRecipients: Invalid request." in r["error"]
    assert r["provider_message_id"] == response_header(g.requests("sendmail")[0], "request-id")


def test_unknown_sender_mailbox_is_permanent(graphd, deliver):
    g = graphd()
    r = only(deliver(make_graph_doc(g, graph_sender="nobody@contoso.com"), env=SECRET_ENV))
    assert r["outcome"] == "failed" and r["reply_code"] == 404, r
    assert "ErrorInvalidUser" in r["error"] and "sender mailbox does not exist" in r["error"]
    assert g.counters()["sendmail_accepted"] == 0


def test_access_denied_is_permanent(graphd, deliver):
    g = graphd()
    g.configure(deny_mailboxes=[G.SENDER])
    r = only(deliver(make_graph_doc(g), env=SECRET_ENV))
    assert r["outcome"] == "failed" and r["reply_code"] == 403, r
    assert "ErrorAccessDenied" in r["error"] and "Mail.Send" in r["error"]


def test_no_answer_after_the_body_is_an_unknown_outcome(graphd, deliver):
    g = graphd()
    g.script("sendmail", "hang seconds=60")
    r = only(deliver(make_graph_doc(g), env=SECRET_ENV, args=["--max-time-ms", "1500"]))
    assert r["outcome"] == "retrying" and r["unknown_outcome"] is True, r
    assert "may have been accepted" in r["error"]
    req = g.requests("sendmail")[0]
    assert header(req, "client-request-id") in r["error"]
    assert g.counters()["sendmail_accepted"] == 1           # it was, in fact


def test_a_dropped_connection_is_unknown_and_never_resent(graphd, deliver):
    """The second message's connection was kept alive from the first and dies unanswered after
    the request: libcurl would re-send it on a fresh connection; the transport must not."""
    g = graphd()
    g.script("sendmail", "pass", "drop")
    first, second = deliver(make_graph_doc(g), repeat=2, env=SECRET_ENV)
    assert first["outcome"] == "sent"
    assert second["outcome"] == "retrying" and second["unknown_outcome"] is True, second
    c = g.counters()
    assert c["sendmail_requests"] == 2 and c["sendmail_accepted"] == 2    # one request per message


def test_a_dropped_large_request_is_unknown(graphd, deliver):
    """Over 1 MB of body: no 'Expect: 100-continue', so no interim answer is taken for one."""
    g = graphd()
    g.script("sendmail", "drop")
    data = bytes(range(256)) * 6000                          # 1.5 MB
    doc = make_graph_doc(g, attachments=[{"filename": "big.bin", "content_type": "application/octet-stream",
                                          "size": len(data), "content_id": None,
                                          "content_base64": base64.b64encode(data).decode()}])
    r = only(deliver(doc, env=SECRET_ENV))
    assert r["outcome"] == "retrying" and r["unknown_outcome"] is True, r
    req = g.requests("sendmail")[0]
    assert header(req, "Expect") is None and req["body_size"] > 1024 * 1024
    assert g.file(req["attachments"][0]["file"]) == data


def test_over_4_mb_fails_before_any_request(graphd, deliver):
    g = graphd()
    data = b"\0" * (3 * 1024 * 1024 + 1)
    doc = make_graph_doc(g, attachments=[{"filename": "big.bin", "content_type": "application/octet-stream",
                                          "size": len(data), "content_id": None,
                                          "content_base64": base64.b64encode(data).decode()}])
    r = only(deliver(doc, env=SECRET_ENV))
    assert r["outcome"] == "failed", r
    assert "4194304 bytes Microsoft Graph takes in one request" in r["error"]
    assert g.counters()["connections"] == 0 and g.counters()["requests"] == 0


def test_a_header_graph_cannot_take_fails_before_any_request(graphd, deliver):
    g = graphd()
    doc = make_graph_doc(g, headers=[["X-Ok", "1"], ["List-Unsubscribe", "<mailto:u@contoso.com>"]])
    r = only(deliver(doc, env=SECRET_ENV))
    assert r["outcome"] == "failed", r
    assert 'header field "List-Unsubscribe" cannot be sent through Microsoft Graph' in r["error"]
    assert g.counters()["requests"] == 0


@pytest.mark.parametrize("change, error, aadsts", [
    ({"env": {"GRAPH_SECRET": "wrong+secret"}}, "invalid_client", 7000215),
    ({"graph_tenant_id": "unknown.onmicrosoft.com"}, "invalid_request", 90002),
    ({"graph_client_id": "00000000-0000-0000-0000-000000000000"}, "unauthorized_client", 700016),
    ({"graph_scope": "https://graph.microsoft.com/Mail.Send"}, "invalid_scope", 70011),
])
def test_token_refusals_are_permanent_with_the_services_error(graphd, deliver, change, error, aadsts):
    g = graphd()
    change = dict(change)
    env = change.pop("env", SECRET_ENV)
    r = only(deliver(make_graph_doc(g, **change), env=env))
    assert r["outcome"] == "failed", r
    assert "%s: AADSTS%d:" % (error, aadsts) in r["error"] and "(configuration)" in r["error"]
    assert "\r" not in r["error"] and "\n" not in r["error"]
    assert "wrong+secret" not in json.dumps(r)
    assert g.counters()["sendmail_requests"] == 0


def test_token_endpoint_unavailable_is_transient(graphd, deliver):
    g = graphd()
    g.script("token", "503", "429 retry-after=5")
    first, second = deliver(make_graph_doc(g), repeat=2, env=SECRET_ENV)
    assert first["outcome"] == second["outcome"] == "retrying", (first, second)
    assert "temporarily_unavailable" in first["error"] and second["reply_code"] == 429
    assert g.counters()["token_requests"] == 2 and g.counters()["sendmail_requests"] == 0


def test_an_untrusted_certificate_is_permanent(graphd, deliver):
    g = graphd()
    r = only(deliver(make_graph_doc(g, graph_ca_file=None), env=SECRET_ENV))  # the system store lacks our CA
    assert r["outcome"] == "failed" and "certificate" in r["error"], r
    c = g.counters()
    assert c["tls_handshake_failures"] >= 1 and c["requests"] == 0


def test_plain_http_is_never_used(graphd, deliver):
    g = graphd(plain_http=True)
    doc = make_graph_doc(g, graph_login_url=g.http_base_url, graph_graph_url=g.http_base_url)
    r = only(deliver(doc, env=SECRET_ENV))
    assert r["outcome"] == "failed", r
    assert g.counters()["http_connections"] == 0 and g.counters()["requests"] == 0


def test_nobody_listening_is_transient(graphd, deliver):
    g = graphd()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = "https://127.0.0.1:%d" % s.getsockname()[1]
    token = g.base_url
    r = only(deliver(make_graph_doc(g, graph_login_url=token, graph_graph_url=closed), env=SECRET_ENV))
    assert r["outcome"] == "retrying" and r["unknown_outcome"] is False, r
    assert "failed reaching Microsoft Graph" in r["error"]


def test_debug_trace_hides_credentials_tokens_and_contents(graphd, deliver):
    g = graphd()
    g.script("sendmail", "401")                               # two tokens in one attempt
    r = only(deliver(make_graph_doc(g, profile_debug=True, **FULL), env=SECRET_ENV))
    assert r["outcome"] == "sent", r
    trace = r["trace"]
    assert "* POST %s/%s/oauth2/v2.0/token" % (g.base_url, G.TENANT) in trace
    assert "* POST %s/v1.0/users/relay%%40contoso.com/sendMail" % g.base_url in trace
    assert "> POST /contoso.onmicrosoft.com/oauth2/v2.0/token HTTP/1.1" in trace
    assert "client_secret=[redacted]" in trace and '"access_token":"[redacted]"' in trace
    assert "> Authorization: [redacted]" in trace
    assert "< HTTP/1.1 401 Unauthorized" in trace and "< HTTP/1.1 202 Accepted" in trace
    assert '"contentBytes":"[5 bytes]"' in trace and "bytes of body]" in trace
    assert "InvalidAuthenticationToken" in trace                # the error body is shown
    for secret in [G.CLIENT_SECRET, "Xy~8Q%2Bb"] + list(g.tokens()):
        assert secret not in trace
    assert FULL["attachments"][0]["content_base64"] not in trace and "<b>Ann</b>" not in trace
