"""The fake Microsoft token endpoint + Graph sendMail (test/fixtures/graphd.py), tested on its own.

The Graph transport's tests will trust this fake, so it must check what it claims: every rule is
driven here with a request that breaks it (right status, right error shape, nothing accepted) and
with one that keeps it (accepted). A fake that accepted anything would fail most of this file.
Standard library clients only: http.client with the throwaway CA, smtplib for XOAUTH2.
"""
import base64
import copy
import http.client
import json
import re
import smtplib
import socket
import ssl
import time
import urllib.parse

import pytest

import testlib
from testlib import GraphServer as G

GUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# what a client sees when the server closes without answering
DROPPED = (ConnectionError, ssl.SSLError)


# ---------------------------------------------------------------------------------------------
# A small client on http.client: one object = one connection (kept alive between requests)

class Reply:
    def __init__(self, resp, body):
        self.status, self.headers, self.body = resp.status, resp.headers, body

    def json(self):
        return json.loads(self.body)


class Client:
    def __init__(self, g, plain=False, answer_timeout=None):
        """answer_timeout: connect (and TLS) first with the patient default, then wait this long
        for answers - so only a missing answer can time out, never a slow handshake."""
        if plain:
            self.conn = http.client.HTTPConnection(g.host, g.http_port, timeout=30)
        else:
            self.conn = http.client.HTTPSConnection(g.host, g.port, timeout=30,
                                                    context=g.ssl_context())
        if answer_timeout is not None:
            self.conn.connect()
            self.conn.sock.settimeout(answer_timeout)

    def request(self, method, url, body=None, headers=None, **kw):
        path = urllib.parse.urlsplit(url)._replace(scheme="", netloc="").geturl()
        self.conn.request(method, path, body=body, headers=headers or {}, **kw)
        resp = self.conn.getresponse()
        return Reply(resp, resp.read())

    def close(self):
        self.conn.close()


def form(**fields):
    """The client-credentials form; keyword None drops a field."""
    base = {"grant_type": "client_credentials", "client_id": G.CLIENT_ID,
            "client_secret": G.CLIENT_SECRET, "scope": G.GRAPH_SCOPE}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


FORM_TYPE = {"Content-Type": "application/x-www-form-urlencoded"}


def post_token(g, fields=None, headers=None, tenant=None, client=None, body=None):
    c = client or Client(g)
    if body is None:
        body = urllib.parse.urlencode(form() if fields is None else fields)
    return c.request("POST", g.token_url(tenant), body, dict(FORM_TYPE, **(headers or {})))


def get_token(g, scope=G.GRAPH_SCOPE, client=None):
    r = post_token(g, form(scope=scope), client=client)
    assert r.status == 200, r.body
    return r.json()["access_token"]


def message(**over):
    msg = {
        "subject": "Hello",
        "body": {"contentType": "Text", "content": "Hello Ann"},
        "toRecipients": [{"emailAddress": {"address": "ann@example.org", "name": "Ann"}}],
    }
    msg.update(over)
    return {"message": msg, "saveToSentItems": False}


def send(g, doc, token, user=None, headers=None, client=None, raw=None):
    h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    h.update(headers or {})
    body = raw if raw is not None else json.dumps(doc).encode()
    return (client or Client(g)).request("POST", g.sendmail_url(user), body, h)


def record_of(g, reply):
    """The spool record of the request that got `reply`, found by the request id it was given
    (Graph: request-id, token endpoint: x-ms-request-id)."""
    key = "request-id" if "request-id" in reply.headers else "x-ms-request-id"
    rid = reply.headers[key]
    for r in g.requests():
        if [key, rid] in r["response_headers"]:
            return r
    raise AssertionError("no record with %s %s" % (key, rid))


def until_status(status, what, attempt):
    """Repeat attempt() until its reply has `status` (polling, never a fixed sleep)."""
    def check():
        r = attempt()
        return r if r.status == status else None
    return testlib.wait_for(check, what, timeout=30, interval=0.2)


def assert_aad_error(reply, status, error, aadsts):
    """The identity platform's error shape."""
    assert reply.status == status, reply.body
    assert reply.headers["Content-Type"].startswith("application/json")
    doc = reply.json()
    assert {"error", "error_description", "error_codes", "timestamp", "trace_id",
            "correlation_id"} <= set(doc)
    assert doc["error"] == error
    assert doc["error_description"].startswith("AADSTS%d:" % aadsts)
    assert doc["error_codes"] == [aadsts]
    assert GUID.match(doc["trace_id"]) and GUID.match(doc["correlation_id"])
    assert "access_token" not in doc
    return doc


def assert_graph_error(reply, status, code):
    """Graph's OData error shape, with the request id in both the header and innerError."""
    assert reply.status == status, reply.body
    assert reply.headers["Content-Type"].startswith("application/json")
    doc = reply.json()
    assert set(doc) == {"error"}
    err = doc["error"]
    assert set(err) == {"code", "message", "innerError"}
    assert err["code"] == code, err
    assert isinstance(err["message"], str) and err["message"]
    inner = err["innerError"]
    assert set(inner) == {"request-id", "date", "client-request-id"}
    assert GUID.match(inner["request-id"]) and inner["request-id"] == reply.headers["request-id"]
    return err


# One server for the many stateless rejection cases: each finds its own record by request id.

@pytest.fixture(scope="module")
def shared(tmp_path_factory, certs):
    g = G(tmp_path_factory.mktemp("graphd-shared"), certs)
    yield g
    g.stop()


@pytest.fixture(scope="module")
def shared_token(shared):
    return get_token(shared)


# ---------------------------------------------------------------------------------------------
# Token endpoint

def test_token_issued_with_bearer_type_lifetime_and_opaque_token(graphd):
    g = graphd()
    r = post_token(g)
    assert r.status == 200
    doc = r.json()
    assert set(doc) == {"token_type", "expires_in", "ext_expires_in", "access_token"}
    assert doc["token_type"] == "Bearer"
    assert doc["expires_in"] == 3599 and doc["ext_expires_in"] == 3599
    assert len(doc["access_token"]) >= 32
    assert post_token(g).json()["access_token"] != doc["access_token"]       # random each time
    info = g.tokens()[doc["access_token"]]
    assert info["scope"] == G.GRAPH_SCOPE and info["client_id"] == G.CLIENT_ID
    assert info["expires_at"] - info["issued_at"] == pytest.approx(3599)
    c = g.counters()
    assert c["token_requests"] == 2 and c["tokens_issued"] == 2


def test_token_lifetime_is_configurable_at_start_and_at_run_time(graphd):
    g = graphd(expires_in=2)
    assert post_token(g).json()["expires_in"] == 2
    g.configure(expires_in=7)
    doc = post_token(g).json()
    assert doc["expires_in"] == 7 and doc["ext_expires_in"] == 7


def test_token_secret_with_reserved_characters_round_trips_form_encoded(shared):
    assert set("+/=&% ") <= set(G.CLIENT_SECRET)
    r = post_token(shared)
    assert r.status == 200
    assert record_of(shared, r)["form"]["client_secret"] == G.CLIENT_SECRET
    assert record_of(shared, r)["client_auth"] == "form"


@pytest.mark.parametrize("encode, status, error, aadsts", [
    # not encoded at all: '&' splits the field, a bare '%' is malformed
    (lambda s: s, 400, "invalid_request", 9002313),
    # only '&' escaped: the bare '%' is still there
    (lambda s: s.replace("&", "%26"), 400, "invalid_request", 9002313),
    # a URL-path encoder that keeps '+', '/' and '=': '+' then decodes to a space
    (lambda s: urllib.parse.quote(s, safe="/+="), 401, "invalid_client", 7000215),
], ids=["raw", "only-ampersand", "path-encoded"])
def test_token_secret_sent_badly_encoded_is_refused(shared, encode, status, error, aadsts):
    body = "grant_type=client_credentials&client_id=%s&client_secret=%s&scope=%s" % (
        G.CLIENT_ID, encode(G.CLIENT_SECRET), urllib.parse.quote(G.GRAPH_SCOPE, safe=""))
    assert_aad_error(post_token(shared, body=body), status, error, aadsts)


def basic(cid, secret):
    """RFC 6749 §2.3.1: id and secret form-urlencoded, then base64 of id:secret."""
    pair = "%s:%s" % (urllib.parse.quote_plus(cid), urllib.parse.quote_plus(secret))
    return "Basic " + base64.b64encode(pair.encode()).decode()


def test_token_client_secret_by_http_basic(shared):
    r = post_token(shared, form(client_id=None, client_secret=None),
                   headers={"Authorization": basic(G.CLIENT_ID, G.CLIENT_SECRET)})
    assert r.status == 200, r.body
    assert record_of(shared, r)["client_auth"] == "basic"


def test_token_http_basic_without_form_encoding_is_refused(shared):
    raw = "Basic " + base64.b64encode(("%s:%s" % (G.CLIENT_ID, G.CLIENT_SECRET)).encode()).decode()
    r = post_token(shared, form(client_id=None, client_secret=None),
                   headers={"Authorization": raw})
    assert_aad_error(r, 401, "invalid_client", 7000215)


def test_token_secret_in_form_and_basic_at_once_is_refused(shared):
    r = post_token(shared, headers={"Authorization": basic(G.CLIENT_ID, G.CLIENT_SECRET)})
    assert_aad_error(r, 400, "invalid_request", 9002313)


def test_token_tenant_by_guid_or_domain(shared):
    assert post_token(shared, tenant=G.TENANT_ID).status == 200
    assert post_token(shared, tenant=G.TENANT).status == 200


def raw_post(g, body, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    return Client(g).request("POST", g.token_url(), body, headers)


# (name, request, status, error, AADSTS code): each breaks exactly one rule of the token endpoint
BAD_TOKEN_REQUESTS = [
    ("unknown tenant", lambda g: post_token(g, tenant="fabrikam.onmicrosoft.com"),
     400, "invalid_request", 90002),
    ("common tenant", lambda g: post_token(g, tenant="common"), 400, "invalid_request", 90002),
    ("json body", lambda g: raw_post(g, json.dumps(form()), "application/json"),
     400, "invalid_request", 900144),
    ("no content type", lambda g: raw_post(g, urllib.parse.urlencode(form()), None),
     400, "invalid_request", 900144),
    ("no grant_type", lambda g: post_token(g, form(grant_type=None)),
     400, "invalid_request", 900144),
    ("password grant", lambda g: post_token(g, form(grant_type="password")),
     400, "unsupported_grant_type", 70003),
    ("no client_id", lambda g: post_token(g, form(client_id=None)),
     400, "invalid_request", 900144),
    ("unknown client_id",
     lambda g: post_token(g, form(client_id="00000000-0000-0000-0000-000000000001")),
     400, "unauthorized_client", 700016),
    ("no secret", lambda g: post_token(g, form(client_secret=None)),
     401, "invalid_client", 7000218),
    ("wrong secret", lambda g: post_token(g, form(client_secret=G.CLIENT_SECRET + "x")),
     401, "invalid_client", 7000215),
    ("no scope", lambda g: post_token(g, form(scope=None)), 400, "invalid_request", 900144),
    ("permission instead of .default",
     lambda g: post_token(g, form(scope="https://graph.microsoft.com/Mail.Send")),
     400, "invalid_scope", 70011),
    ("two scopes", lambda g: post_token(g, form(scope=G.GRAPH_SCOPE + " " + G.OUTLOOK_SCOPE)),
     400, "invalid_scope", 70011),
    ("other cloud's scope",
     lambda g: post_token(g, form(scope="https://graph.microsoft.us/.default")),
     400, "invalid_scope", 70011),
    ("non-ascii body",
     lambda g: post_token(g, body=urllib.parse.urlencode(form()).encode() + b"&x=\xc3\xa9"),
     400, "invalid_request", 9002313),
    ("bare percent", lambda g: post_token(g, body=urllib.parse.urlencode(form()) + "&x=100%"),
     400, "invalid_request", 9002313),
    ("field twice", lambda g: post_token(g, body=urllib.parse.urlencode(form()) + "&scope="
                                         + urllib.parse.quote(G.GRAPH_SCOPE)),
     400, "invalid_request", 9002313),
    ("GET", lambda g: Client(g).request("GET", g.token_url()), 400, "invalid_request", 900561),
]


@pytest.mark.parametrize("make, status, error, aadsts", [b[1:] for b in BAD_TOKEN_REQUESTS],
                         ids=[b[0] for b in BAD_TOKEN_REQUESTS])
def test_token_request_refused_in_the_real_error_shape(shared, make, status, error, aadsts):
    g = shared
    before = g.counters()["tokens_issued"]
    r = make(g)
    assert_aad_error(r, status, error, aadsts)
    rec = record_of(g, r)
    assert rec["status"] == status and rec["error"] == error
    assert rec["response"]["error_codes"] == [aadsts]
    assert g.counters()["tokens_issued"] == before


def test_token_error_correlation_id_is_the_clients_request_id(shared):
    crid = "0b3f3a4e-5d6c-4e7f-8a9b-0c1d2e3f4a5b"
    r = post_token(shared, form(client_secret="wrong"), headers={"client-request-id": crid})
    doc = assert_aad_error(r, 401, "invalid_client", 7000215)
    assert doc["correlation_id"] == crid and crid in doc["error_description"]


# ---------------------------------------------------------------------------------------------
# sendMail: success, addressing the mailbox, authorization

def test_sendmail_accepted_is_202_with_empty_body_and_request_id(graphd):
    g = graphd()
    token = get_token(g)
    crid = "7d1c6b2a-3e4f-4a5b-9c8d-1e2f3a4b5c6d"
    r = send(g, message(), token, headers={"client-request-id": crid})
    assert r.status == 202
    assert r.body == b"" and r.headers["Content-Length"] == "0"
    assert "Content-Type" not in r.headers
    assert GUID.match(r.headers["request-id"])
    assert r.headers["client-request-id"] == crid
    rec = record_of(g, r)
    assert rec["status"] == 202 and rec["mailbox"] == G.SENDER
    assert rec["json"] == message()
    assert ["Authorization", "Bearer " + token] in rec["headers"]
    c = g.counters()
    assert c["sendmail_requests"] == 1 and c["sendmail_accepted"] == 1


def test_sendmail_without_client_request_id_gets_one(shared, shared_token):
    r = send(shared, message(), shared_token)
    assert r.status == 202 and GUID.match(r.headers["client-request-id"])


@pytest.mark.parametrize("user", ["relay%40contoso.com", "relay@contoso.com",
                                  "RELAY%40Contoso.com", "by-id"])
def test_sendmail_mailbox_by_upn_encoded_or_not_or_by_id(shared, shared_token, user):
    if user == "by-id":
        user = shared.mailbox_id()
    c = Client(shared)
    r = c.request("POST", "%s/v1.0/users/%s/sendMail" % (shared.base_url, user),
                  json.dumps(message()), {"Authorization": "Bearer " + shared_token,
                                          "Content-Type": "application/json"})
    assert r.status == 202, r.body
    assert record_of(shared, r)["mailbox"] == G.SENDER


def test_sendmail_unknown_mailbox_is_404_error_invalid_user(shared, shared_token):
    r = send(shared, message(), shared_token, user="nobody@contoso.com")
    assert_graph_error(r, 404, "ErrorInvalidUser")


def test_sendmail_denied_mailbox_is_403_access_denied(graphd):
    g = graphd(args=["--deny-mailbox", "scoped-out@contoso.com"],
               mailboxes=[G.SENDER, "scoped-out@contoso.com"])
    token = get_token(g)
    assert_graph_error(send(g, message(), token, user="scoped-out@contoso.com"), 403,
                       "ErrorAccessDenied")
    assert send(g, message(), token).status == 202
    g.configure(deny_mailboxes=[G.SENDER])                  # changed at run time
    assert_graph_error(send(g, message(), token), 403, "ErrorAccessDenied")
    g.configure(deny_mailboxes=[])
    assert send(g, message(), token).status == 202
    assert g.counters()["sendmail_accepted"] == 2


def test_sendmail_me_is_refused_for_an_app_token(shared, shared_token):
    c = Client(shared)
    r = c.request("POST", shared.base_url + "/v1.0/me/sendMail", json.dumps(message()),
                  {"Authorization": "Bearer " + shared_token, "Content-Type": "application/json"})
    assert_graph_error(r, 400, "BadRequest")


def test_sendmail_only_post(shared, shared_token):
    r = Client(shared).request("GET", shared.sendmail_url(),
                               headers={"Authorization": "Bearer " + shared_token})
    assert_graph_error(r, 405, "MethodNotAllowed")


@pytest.mark.parametrize("auth", ["none", "empty bearer", "basic", "unknown token",
                                  "outlook token", "token as basic"])
def test_sendmail_without_a_valid_graph_token_is_401(shared, shared_token, auth):
    headers = {"Content-Type": "application/json"}
    if auth == "empty bearer":
        headers["Authorization"] = "Bearer "
    elif auth == "basic":
        headers["Authorization"] = basic(G.CLIENT_ID, G.CLIENT_SECRET)
    elif auth == "unknown token":
        headers["Authorization"] = "Bearer " + shared_token[::-1]
    elif auth == "outlook token":       # right issuer, wrong resource (the SMTP token)
        headers["Authorization"] = "Bearer " + get_token(shared, G.OUTLOOK_SCOPE)
    elif auth == "token as basic":
        headers["Authorization"] = "Basic " + shared_token
    r = Client(shared).request("POST", shared.sendmail_url(), json.dumps(message()), headers)
    assert_graph_error(r, 401, "InvalidAuthenticationToken")
    assert r.headers["WWW-Authenticate"].startswith("Bearer ")
    assert record_of(shared, r)["status"] == 401


def test_sendmail_with_expired_token_is_401_until_a_new_token(graphd):
    g = graphd()
    token = get_token(g)
    assert send(g, message(), token).status == 202
    g.expire_tokens()
    err = assert_graph_error(send(g, message(), token), 401, "InvalidAuthenticationToken")
    assert "expired" in err["message"]
    assert send(g, message(), get_token(g)).status == 202


def test_sendmail_token_expires_after_its_lifetime(graphd):
    g = graphd(expires_in=1)
    token = get_token(g)
    r = until_status(401, "the 1-second token to expire", lambda: send(g, message(), token))
    err = assert_graph_error(r, 401, "InvalidAuthenticationToken")
    assert "expired" in err["message"]
    info = g.tokens()[token]
    assert info["expires_at"] - info["issued_at"] == pytest.approx(1)


# ---------------------------------------------------------------------------------------------
# sendMail: the JSON body

def full_message():
    """Every member a relay may send, each in its documented shape."""
    pdf = bytes(range(256)) * 33
    png = b"\x89PNG\r\n\x1a\n" + bytes(100)
    doc = message(
        subject="Grüße – 😀",
        body={"contentType": "html", "content": "<p>Hi <img src=\"cid:logo@x\"></p>"},
        toRecipients=[{"emailAddress": {"address": "ann@example.org", "name": "Ann"}},
                      {"emailAddress": {"address": "zoe@example.org"}}],
        ccRecipients=[{"emailAddress": {"address": "bob@example.org", "name": None}}],
        bccRecipients=[{"emailAddress": {"address": "audit@example.com"}}],
        replyTo=[{"emailAddress": {"address": "support@example.com", "name": "Support"}}],
        **{"from": {"emailAddress": {"address": G.SENDER, "name": "Relay"}}},
        internetMessageHeaders=[{"name": "X-Event-Id", "value": "4242"},
                                {"name": "x-pg-relay", "value": "yes"}],
        internetMessageId="<4242.test@example.com>",
        attachments=[
            {"@odata.type": "#microsoft.graph.fileAttachment", "name": "report.pdf",
             "contentType": "application/pdf", "contentBytes": base64.b64encode(pdf).decode()},
            {"@odata.type": "#microsoft.graph.fileAttachment", "name": "logo.png",
             "contentType": "image/png", "isInline": True, "contentId": "logo@x",
             "contentBytes": base64.b64encode(png).decode()},
        ])
    doc["saveToSentItems"] = "false"
    return doc, [pdf, png]


def test_sendmail_accepts_every_documented_member_and_keeps_attachments_byte_for_byte(graphd):
    g = graphd()
    doc, blobs = full_message()
    r = send(g, doc, get_token(g))
    assert r.status == 202, r.body
    rec = record_of(g, r)
    assert rec["json"] == doc
    assert [a["name"] for a in rec["attachments"]] == ["report.pdf", "logo.png"]
    assert [g.file(a["file"]) for a in rec["attachments"]] == blobs
    assert rec["attachments"][1]["isInline"] is True
    assert rec["attachments"][1]["contentId"] == "logo@x"
    assert rec["attachments"][0]["size"] == len(blobs[0])


@pytest.mark.parametrize("content_type", ["Text", "text", "TEXT", "HTML", "html", "Html"])
def test_sendmail_body_content_type_is_case_insensitive(shared, shared_token, content_type):
    r = send(shared, message(body={"contentType": content_type, "content": "x"}), shared_token)
    assert r.status == 202


@pytest.mark.parametrize("value", [True, False, "true", "false"])
def test_sendmail_save_to_sent_items_bool_or_string(shared, shared_token, value):
    doc = message()
    doc["saveToSentItems"] = value
    assert send(shared, doc, shared_token).status == 202


def test_sendmail_save_to_sent_items_may_be_left_out(shared, shared_token):
    doc = message()
    del doc["saveToSentItems"]
    assert send(shared, doc, shared_token).status == 202


def att(**over):
    a = {"@odata.type": "#microsoft.graph.fileAttachment", "name": "a.txt",
         "contentBytes": base64.b64encode(b"hello").decode()}
    a.update(over)
    return {k: v for k, v in a.items() if v is not None}


def rcpt(address, **extra):
    return [{"emailAddress": dict({"address": address}, **extra)}]


def without(key):
    doc = message()
    del doc["message"][key]
    return doc


# (name, document, status, code): each breaks exactly one rule of the sendMail body
BAD_BODIES = [
    ("message missing", {"saveToSentItems": False}, 400, "RequestBodyRead"),
    ("message not an object", {"message": "hi"}, 400, "RequestBodyRead"),
    ("payload not an object", [message()], 400, "RequestBodyRead"),
    ("unknown top-level member", dict(message(), sendNow=True), 400, "RequestBodyRead"),
    ("unknown message member", message(bodyPreview="x"), 400, "RequestBodyRead"),
    ("wrong message @odata.type", message(**{"@odata.type": "#microsoft.graph.event"}), 400,
     "RequestBodyRead"),
    ("subject not a string", message(subject=42), 400, "RequestBodyRead"),
    ("body not an object", message(body="Hello"), 400, "RequestBodyRead"),
    ("body contentType unknown", message(body={"contentType": "Markdown", "content": "x"}), 400,
     "RequestBodyRead"),
    ("body contentType missing", message(body={"content": "x"}), 400, "RequestBodyRead"),
    ("body content missing", message(body={"contentType": "Text"}), 400, "RequestBodyRead"),
    ("body content not a string", message(body={"contentType": "Text", "content": ["x"]}), 400,
     "RequestBodyRead"),
    ("body unknown member", message(body={"contentType": "Text", "content": "x", "charset": "u"}),
     400, "RequestBodyRead"),
    ("no recipients at all", without("toRecipients"), 400, "ErrorInvalidRecipients"),
    ("toRecipients not a list", message(toRecipients={"emailAddress": {"address": "a@b.org"}}),
     400, "RequestBodyRead"),
    ("recipient is a bare string", message(toRecipients=["ann@example.org"]), 400,
     "RequestBodyRead"),
    ("recipient without emailAddress", message(toRecipients=[{"address": "ann@example.org"}]),
     400, "RequestBodyRead"),
    ("recipient unknown member", message(toRecipients=[{"emailAddress": {"address": "a@b.org"},
                                                        "type": "to"}]), 400, "RequestBodyRead"),
    ("emailAddress unknown member", message(toRecipients=rcpt("a@b.org", kind="to")), 400,
     "RequestBodyRead"),
    ("address missing", message(toRecipients=[{"emailAddress": {"name": "Ann"}}]), 400,
     "ErrorInvalidRecipients"),
    ("address not plausible", message(toRecipients=rcpt("ann.example.org")), 400,
     "ErrorInvalidRecipients"),
    ("address with display name", message(toRecipients=rcpt("Ann <ann@example.org>")), 400,
     "ErrorInvalidRecipients"),
    ("address with two @", message(toRecipients=rcpt("a@b@example.org")), 400,
     "ErrorInvalidRecipients"),
    ("address without domain dot", message(toRecipients=rcpt("ann@localhost")), 400,
     "ErrorInvalidRecipients"),
    ("name not a string", message(toRecipients=rcpt("a@b.org", name=7)), 400, "RequestBodyRead"),
    ("bad cc address", message(ccRecipients=rcpt("nope")), 400, "ErrorInvalidRecipients"),
    ("bad bcc address", message(bccRecipients=rcpt("nope")), 400, "ErrorInvalidRecipients"),
    ("bad replyTo address", message(replyTo=rcpt("nope")), 400, "ErrorInvalidRecipients"),
    ("from is a list", message(**{"from": rcpt("relay@contoso.com")}), 400, "RequestBodyRead"),
    ("bad from address", message(**{"from": {"emailAddress": {"address": "relay"}}}), 400,
     "ErrorInvalidRecipients"),
    ("header name without x-", message(internetMessageHeaders=[{"name": "Reply-To",
                                                                "value": "a@b.org"}]), 400,
     "InvalidInternetMessageHeader"),
    ("header name with colon", message(internetMessageHeaders=[{"name": "X-A:b", "value": "1"}]),
     400, "InvalidInternetMessageHeader"),
    ("header value with CRLF", message(internetMessageHeaders=[
        {"name": "X-Event", "value": "1\r\nBcc: evil@example.org"}]), 400,
     "InvalidInternetMessageHeader"),
    ("header without value", message(internetMessageHeaders=[{"name": "X-Event"}]), 400,
     "RequestBodyRead"),
    ("headers not a list", message(internetMessageHeaders={"X-Event": "1"}), 400,
     "RequestBodyRead"),
    ("internetMessageId not a string", message(internetMessageId=4242), 400, "RequestBodyRead"),
    ("attachments not a list", message(attachments=att()), 400, "RequestBodyRead"),
    ("attachment @odata.type missing", message(attachments=[att(**{"@odata.type": None})]), 400,
     "RequestBodyRead"),
    ("attachment @odata.type item", message(attachments=[
        att(**{"@odata.type": "#microsoft.graph.itemAttachment"})]), 400, "RequestBodyRead"),
    ("attachment @odata.type without #", message(attachments=[
        att(**{"@odata.type": "microsoft.graph.fileAttachment"})]), 400, "RequestBodyRead"),
    ("attachment name missing", message(attachments=[att(name=None)]), 400, "RequestBodyRead"),
    ("attachment name empty", message(attachments=[att(name="")]), 400, "RequestBodyRead"),
    ("attachment contentBytes missing", message(attachments=[att(contentBytes=None)]), 400,
     "RequestBodyRead"),
    ("attachment contentBytes not base64", message(attachments=[att(contentBytes="héllo!")]),
     400, "RequestBodyRead"),
    ("attachment contentBytes bad padding", message(attachments=[att(contentBytes="aGVsbG8")]),
     400, "RequestBodyRead"),
    ("attachment contentBytes with newline", message(attachments=[
        att(contentBytes="aGVs\nbG8=")]), 400, "RequestBodyRead"),
    ("attachment isInline a string", message(attachments=[att(isInline="true")]), 400,
     "RequestBodyRead"),
    ("attachment unknown member", message(attachments=[att(size=5)]), 400, "RequestBodyRead"),
    ("saveToSentItems yes", dict(message(), saveToSentItems="yes"), 400, "RequestBodyRead"),
    ("saveToSentItems number", dict(message(), saveToSentItems=0), 400, "RequestBodyRead"),
    ("importance unknown", message(importance="urgent"), 400, "RequestBodyRead"),
]


@pytest.mark.parametrize("doc, status, code", [b[1:] for b in BAD_BODIES],
                         ids=[b[0] for b in BAD_BODIES])
def test_sendmail_body_breaking_a_rule_is_refused(shared, shared_token, doc, status, code):
    before = shared.counters()["sendmail_accepted"]
    r = send(shared, doc, shared_token)
    assert_graph_error(r, status, code)
    rec = record_of(shared, r)
    assert rec["status"] == status and rec["error"] == code
    assert "attachments" not in rec
    assert shared.counters()["sendmail_accepted"] == before


@pytest.mark.parametrize("raw, code", [
    (b"{not json", "BadRequest"),
    (b'{"message": {"subject": "\xff"}}', "BadRequest"),
    (b'{"message": {"subject": NaN}}', "BadRequest"),
    (b"", "BadRequest"),
    (b'{"message": {"subject": "a", "subject": "b"}}', "RequestBodyRead"),
], ids=["not-json", "not-utf8", "nan", "empty", "duplicate-member"])
def test_sendmail_unreadable_json_is_400(shared, shared_token, raw, code):
    r = send(shared, None, shared_token, raw=raw)
    assert_graph_error(r, 400, code)


@pytest.mark.parametrize("content_type, status", [
    ("application/json", 202),
    ("application/json; charset=utf-8", 202),
    ("Application/JSON;charset=UTF-8", 202),
    ("application/json; charset=iso-8859-1", 415),
    ("text/html", 415),
    ("application/x-www-form-urlencoded", 415),
    (None, 400),
])
def test_sendmail_content_type(shared, shared_token, content_type, status):
    c = Client(shared)
    h = {"Authorization": "Bearer " + shared_token}
    if content_type:
        h["Content-Type"] = content_type
    r = c.request("POST", shared.sendmail_url(), json.dumps(message()).encode(), h)
    assert r.status == status, r.body
    if status != 202:
        assert_graph_error(r, status, "UnsupportedMediaType" if status == 415 else "BadRequest")


def test_sendmail_500_recipients_accepted_501_refused(shared, shared_token):
    def people(n, domain):
        return [{"emailAddress": {"address": "p%d@%s" % (i, domain)}} for i in range(n)]
    ok = message(toRecipients=people(200, "a.org"), ccRecipients=people(200, "b.org"),
                 bccRecipients=people(100, "c.org"))
    assert send(shared, ok, shared_token).status == 202
    too_many = copy.deepcopy(ok)
    too_many["message"]["bccRecipients"].append({"emailAddress": {"address": "one@more.org"}})
    assert_graph_error(send(shared, too_many, shared_token), 400, "ErrorInvalidRecipients")
    # replyTo is not a recipient: it does not count
    many_reply_to = dict(ok, message=dict(ok["message"], replyTo=people(10, "r.org")))
    assert send(shared, many_reply_to, shared_token).status == 202


def sized(total):
    """A valid sendMail body of exactly `total` bytes (padded in the subject)."""
    raw = (total - 1000) * 3 // 4                     # base64 makes 4 of 3, leave room for JSON
    doc = message(subject="", attachments=[att(contentBytes=base64.b64encode(
        bytes(raw)).decode())])
    pad = total - len(json.dumps(doc).encode())
    assert pad >= 0
    doc["message"]["subject"] = "x" * pad
    body = json.dumps(doc).encode()
    assert len(body) == total
    return body


def test_sendmail_body_over_4_mb_is_413_on_a_connection_that_stays_usable(graphd):
    g = graphd()
    token = get_token(g)
    c = Client(g)
    limit = 4 * 1024 * 1024
    r = send(g, None, token, raw=sized(limit), client=c)
    assert r.status == 202, r.body
    r = send(g, None, token, raw=sized(limit + 1), client=c)
    assert_graph_error(r, 413, "RequestEntityTooLarge")
    rec = record_of(g, r)
    assert rec["body_size"] == limit + 1 and rec["body_file"] is None
    assert send(g, message(), token, client=c).status == 202
    assert g.counters()["sendmail_accepted"] == 2
    assert len({r["connection"] for r in g.requests("sendmail")}) == 1


def test_sendmail_chunked_request_body(shared, shared_token):
    body = json.dumps(message()).encode()
    r = Client(shared).request(
        "POST", shared.sendmail_url(), iter([body[:10], body[10:]]),
        {"Authorization": "Bearer " + shared_token, "Content-Type": "application/json"},
        encode_chunked=True)
    assert r.status == 202, r.body
    assert ["Transfer-Encoding", "chunked"] in record_of(shared, r)["headers"]


def test_sendmail_expect_100_continue(shared, shared_token):
    """libcurl sends Expect: 100-continue before a body over 1 MB and waits for the 100."""
    body = sized(2 * 1024 * 1024)
    r = send(shared, None, shared_token, raw=body, headers={"Expect": "100-continue"})
    assert r.status == 202, r.body
    assert shared.file(record_of(shared, r)["body_file"]) == body


# ---------------------------------------------------------------------------------------------
# sendMail: the MIME form

def mime(text):
    return base64.b64encode(text.encode()).decode()


GOOD_MIME = ("From: Relay <relay@contoso.com>\r\nTo: Ann <ann@example.org>\r\n"
             "Bcc: audit@example.com\r\nSubject: MIME hello\r\nMessage-ID: <1@example.com>\r\n"
             "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello Ann\r\n")


def send_mime(g, payload, token):
    return Client(g).request("POST", g.sendmail_url(), payload,
                             {"Authorization": "Bearer " + token, "Content-Type": "text/plain"})


def test_sendmail_mime_form_accepted_and_message_kept(shared, shared_token):
    r = send_mime(shared, mime(GOOD_MIME), shared_token)
    assert r.status == 202 and r.body == b""
    rec = record_of(shared, r)
    assert rec["mime"]["recipients"] == ["ann@example.org", "audit@example.com"]
    assert rec["mime"]["subject"] == "MIME hello"
    assert shared.file(rec["mime"]["file"]) == GOOD_MIME.encode()


@pytest.mark.parametrize("payload, code", [
    ("not base64 at all!", "ErrorMimeContentInvalidBase64String"),
    (mime(GOOD_MIME)[:-2], "ErrorMimeContentInvalidBase64String"),
    (mime(GOOD_MIME.replace("\r\n", "\n")), "ErrorMimeContentInvalid"),
    (mime(GOOD_MIME.replace("Hello Ann", "x" * 999)), "ErrorMimeContentInvalid"),
    (mime("Hello Ann, no header at all"), "ErrorMimeContentInvalid"),
    (mime(GOOD_MIME.replace("To: Ann <ann@example.org>\r\nBcc: audit@example.com\r\n", "")),
     "ErrorInvalidRecipients"),
    (mime(GOOD_MIME.replace("ann@example.org", "ann")), "ErrorInvalidRecipients"),
], ids=["not-base64", "bad-padding", "bare-LF", "line-over-998", "no-header",
        "no-recipients", "bad-address"])
def test_sendmail_mime_form_breaking_a_rule_is_refused(shared, shared_token, payload, code):
    assert_graph_error(send_mime(shared, payload, shared_token), 400, code)


# ---------------------------------------------------------------------------------------------
# Connections, TLS, plain HTTP, records

def test_keep_alive_two_requests_on_one_connection_count_as_one(graphd):
    g = graphd()
    c = Client(g)
    token = get_token(g, client=c)
    assert send(g, message(), token, client=c).status == 202
    assert g.counters()["connections"] == 1
    recs = g.requests()
    assert [r["connection"] for r in recs] == [1, 1]
    assert send(g, message(), token).status == 202         # a new client: a new connection
    assert g.counters()["connections"] == 2
    assert g.requests()[-1]["connection"] == 2


def test_https_certificate_chains_to_the_throwaway_ca_only(graphd):
    g = graphd()
    c = http.client.HTTPSConnection("127.0.0.1", g.port, timeout=30,
                                    context=ssl.create_default_context())     # system CAs
    with pytest.raises(ssl.SSLCertVerificationError):
        c.request("GET", "/")
    testlib.wait_for(lambda: g.counters()["tls_handshake_failures"] == 1, "the failed handshake")
    assert post_token(g).status == 200


def test_plain_http_listener_serves_the_same_endpoints_and_says_so(graphd):
    g = graphd(plain_http=True)
    assert g.http_base_url.startswith("http://")
    r = Client(g, plain=True).request("POST", g.token_url(base=g.http_base_url),
                                      urllib.parse.urlencode(form()), FORM_TYPE)
    assert r.status == 200
    rec = g.requests()[-1]
    assert rec["listener"] == "http" and rec["tls"] is False
    c = g.counters()
    assert c["http_connections"] == 1 and c["https_connections"] == 0
    # plain HTTP on the HTTPS port does not get an answer: it is a failed handshake
    s = socket.create_connection(("127.0.0.1", g.port), timeout=30)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        answer = s.recv(1024)
    except ConnectionResetError:
        answer = b""
    assert not answer.startswith(b"HTTP/")
    s.close()
    testlib.wait_for(lambda: g.counters()["tls_handshake_failures"] == 1, "the failed handshake")


def test_ipv6_loopback(graphd):
    g = graphd(host="::1")
    assert g.base_url.startswith("https://[::1]:")
    c = Client(g)
    assert send(g, message(), get_token(g, client=c), client=c).status == 202
    assert g.counters()["connections"] == 1


def test_records_keep_authorization_but_the_log_never_shows_tokens_or_secrets(graphd):
    g = graphd()
    token = get_token(g)
    assert send(g, message(), token).status == 202
    rec = g.requests("sendmail")[0]
    assert dict(rec["headers"])["Authorization"] == "Bearer " + token
    assert g.file(rec["body_file"]) == json.dumps(message()).encode()
    log = open(g.log.name).read()
    assert "sendMail HTTP/1.1\" 202" in log
    assert token not in log and G.CLIENT_SECRET not in log
    assert urllib.parse.quote_plus(G.CLIENT_SECRET) not in log


# ---------------------------------------------------------------------------------------------
# Fault injection

@pytest.mark.parametrize("entry, status, code, retry_after", [
    ("429 retry-after=3", 429, "ApplicationThrottled", "3"),
    ("429", 429, "ApplicationThrottled", None),
    ("503 retry-after=7", 503, "serviceNotAvailable", "7"),
    ("503", 503, "serviceNotAvailable", None),
    ("504", 504, "UnknownError", None),
    ("500", 500, "generalException", None),
    ("502", 502, "UnknownError", None),
    ("400 code=ErrorMessageSizeExceeded", 400, "ErrorMessageSizeExceeded", None),
    ("403", 403, "ErrorAccessDenied", None),
])
def test_fault_scripted_sendmail_status_then_normal_again(graphd, entry, status, code,
                                                          retry_after):
    g = graphd()
    token = get_token(g)
    g.script("sendmail", entry)
    r = send(g, message(), token)
    assert_graph_error(r, status, code)
    assert r.headers.get("Retry-After") == retry_after
    rec = record_of(g, r)
    assert rec["fault"] == entry and rec["status"] == status
    assert g.counters()["sendmail_accepted"] == 0            # not processed
    assert send(g, message(), token).status == 202         # the queue is empty again
    assert g.counters()["sendmail_accepted"] == 1


def test_fault_queue_is_consumed_in_order_and_times_repeats(graphd):
    g = graphd()
    token = get_token(g)
    g.script("sendmail", "503 times=2", "429 retry-after=1")
    assert [send(g, message(), token).status for _ in range(4)] == [503, 503, 429, 202]
    assert g.state()["scripts"] == {"token": [], "sendmail": []}


def test_fault_script_does_not_touch_the_other_endpoint(graphd):
    g = graphd()
    g.script("sendmail", "500")
    token = get_token(g)                                     # the token endpoint is unaffected
    assert send(g, message(), token).status == 500


def test_fault_script_from_the_command_line(graphd):
    g = graphd(args=["--script", "token:503 retry-after=2", "--script", "sendmail:504"])
    r = post_token(g)
    assert_aad_error(r, 503, "temporarily_unavailable", 90033)
    assert r.headers["Retry-After"] == "2"
    token = get_token(g)
    assert_graph_error(send(g, message(), token), 504, "UnknownError")
    assert send(g, message(), token).status == 202


def test_fault_clear_empties_the_queues(graphd):
    g = graphd()
    g.script("sendmail", "500", "500")
    g.script("token", "500")
    g.clear_script()
    assert send(g, message(), get_token(g)).status == 202


def test_fault_bad_script_entries_are_refused_by_the_control_port(graphd):
    g = graphd()
    for bad in ("teapot", "200", "429 retry-after=soon", "hang forever"):
        with pytest.raises(AssertionError):
            g.script("sendmail", bad)
    with pytest.raises(AssertionError):
        g.script("graph", "500")
    assert g.state()["scripts"]["sendmail"] == []


def test_fault_401_expires_the_token_so_only_a_refresh_gets_through(graphd):
    g = graphd()
    token = get_token(g)
    g.script("sendmail", "401")
    r = send(g, message(), token)
    assert_graph_error(r, 401, "InvalidAuthenticationToken")
    assert r.headers["WWW-Authenticate"].startswith("Bearer ")
    # retrying with the same token is a genuine 401 now, not the script
    r = send(g, message(), token)
    assert_graph_error(r, 401, "InvalidAuthenticationToken")
    assert record_of(g, r)["fault"] is None
    assert send(g, message(), get_token(g)).status == 202


def test_fault_hang_reads_the_body_and_never_answers(graphd):
    g = graphd()
    token = get_token(g)
    g.script("sendmail", "hang seconds=600")
    c = Client(g, answer_timeout=0.5)
    with pytest.raises(socket.timeout):
        send(g, message(), token, client=c)
    [rec] = g.wait_requests(1, "sendmail")
    assert rec["status"] is None and rec["would_status"] == 202
    assert rec["fault"] == "hang seconds=600"
    assert g.file(rec["body_file"]) == json.dumps(message()).encode()
    # the server keeps serving other connections meanwhile
    assert send(g, message(), token).status == 202
    c.close()


def test_fault_hang_ends_by_closing_without_an_answer(graphd):
    g = graphd()
    token = get_token(g)
    g.script("sendmail", "hang seconds=0.2")
    with pytest.raises(DROPPED):
        send(g, message(), token)
    assert g.requests("sendmail")[0]["status"] is None


def test_fault_drop_after_the_body_the_message_was_accepted(graphd):
    g = graphd()
    token = get_token(g)
    g.script("sendmail", "drop")
    doc, blobs = full_message()
    with pytest.raises(DROPPED):
        send(g, doc, token)
    [rec] = g.requests("sendmail")
    assert rec["status"] is None and rec["would_status"] == 202 and rec["fault"] == "drop"
    # the ambiguous case: the client saw nothing, but the message is in
    assert g.counters()["sendmail_accepted"] == 1
    assert [g.file(a["file"]) for a in rec["attachments"]] == blobs


def test_fault_drop_of_an_invalid_request_accepts_nothing(graphd):
    g = graphd()
    token = get_token(g)
    g.script("sendmail", "drop")
    with pytest.raises(DROPPED):
        send(g, message(toRecipients=rcpt("nope")), token)
    [rec] = g.requests("sendmail")
    assert rec["would_status"] == 400 and g.counters()["sendmail_accepted"] == 0


def test_fault_slow_answers_late(graphd):
    g = graphd()
    token = get_token(g)
    g.script("sendmail", "slow seconds=600")
    c = Client(g, answer_timeout=0.3)
    with pytest.raises(socket.timeout):
        send(g, message(), token, client=c)
    c.close()
    g.clear_script()
    g.script("sendmail", "slow seconds=0.3")
    r = send(g, message(), token)
    assert r.status == 202
    assert record_of(g, r)["fault"] == "slow seconds=0.3"


@pytest.mark.parametrize("entry, status, error, aadsts", [
    ("429 retry-after=5", 429, "temporarily_unavailable", 90033),
    ("500", 500, "temporarily_unavailable", 90033),
    ("503", 503, "temporarily_unavailable", 90033),
    ("401", 401, "invalid_client", 7000215),
    ("400 code=invalid_scope aadsts=70011", 400, "invalid_scope", 70011),
])
def test_fault_scripted_token_status(graphd, entry, status, error, aadsts):
    g = graphd()
    g.script("token", entry)
    r = post_token(g)
    assert_aad_error(r, status, error, aadsts)
    assert r.headers.get("Retry-After") == ("5" if "retry-after" in entry else None)
    assert g.counters()["tokens_issued"] == 0
    assert post_token(g).status == 200


def test_fault_token_drop_and_hang(graphd):
    g = graphd()
    g.script("token", "drop", "hang seconds=600")
    with pytest.raises(DROPPED):
        post_token(g)
    with pytest.raises(socket.timeout):
        post_token(g, client=Client(g, answer_timeout=0.5))
    recs = g.wait_requests(2, "token")
    assert [(r["fault"], r["status"], r["would_status"]) for r in recs] == [
        ("drop", None, 200), ("hang seconds=600", None, 200)]
    assert post_token(g).status == 200


def test_fault_expire_all_tokens_now(graphd):
    g = graphd()
    graph, outlook = get_token(g), get_token(g, G.OUTLOOK_SCOPE)
    g.expire_tokens()
    assert_graph_error(send(g, message(), graph), 401, "InvalidAuthenticationToken")
    assert all(t["expires_at"] < time.time() for t in g.tokens().values())
    assert outlook in g.tokens()


# ---------------------------------------------------------------------------------------------
# SMTP XOAUTH2 with a token from the fake (test/fixtures/smtpd.py --xoauth2-tokens)

def xoauth2(user, token, challenges):
    """smtplib authobject: the XOAUTH2 initial response; to an error challenge, an empty reply."""
    def respond(challenge=None):
        if challenge is None:
            return "user=%s\x01auth=Bearer %s\x01\x01" % (user, token)
        challenges.append(challenge)
        return ""
    return respond


def smtp_session(s, certs):
    c = smtplib.SMTP("127.0.0.1", s.port, timeout=30)
    c.ehlo("relay.test")
    c.starttls(context=ssl.create_default_context(cafile=str(certs / "ca.pem")))
    c.ehlo("relay.test")
    return c


def xoauth2_server(smtpd, g, *extra):
    return smtpd("--starttls", "--cert", "{certs}/server.pem", "--key", "{certs}/server.key",
                 "--auth-require-tls", "--auth-user", G.SENDER, "--auth-mechs", "XOAUTH2",
                 "--xoauth2-tokens", g.tokens_file(), *extra)


def test_xoauth2_with_an_outlook_token_from_the_fake(graphd, smtpd, certs):
    g = graphd()
    s = xoauth2_server(smtpd, g)
    token = get_token(g, G.OUTLOOK_SCOPE)
    c = smtp_session(s, certs)
    assert "XOAUTH2" in c.esmtp_features["auth"]
    code, _ = c.auth("XOAUTH2", xoauth2(G.SENDER, token, []), initial_response_ok=True)
    assert code == 235
    c.sendmail(G.SENDER, ["ann@example.org"], b"Subject: hi\r\n\r\nhello\r\n")
    c.quit()
    [(env, _)] = s.messages()
    assert env["login"] == G.SENDER and env["tls"] is True


@pytest.mark.parametrize("case", ["graph token", "unknown token", "expired token", "wrong user"])
def test_xoauth2_refused_like_exchange_online(graphd, smtpd, certs, case):
    g = graphd()
    s = xoauth2_server(smtpd, g)
    user, token = G.SENDER, get_token(g, G.OUTLOOK_SCOPE)
    if case == "graph token":
        token = get_token(g, G.GRAPH_SCOPE)
    elif case == "unknown token":
        token = token[::-1]
    elif case == "expired token":
        g.expire_tokens()
    elif case == "wrong user":
        user = "someone-else@contoso.com"
    c = smtp_session(s, certs)
    challenges = []
    with pytest.raises(smtplib.SMTPAuthenticationError) as e:
        c.auth("XOAUTH2", xoauth2(user, token, challenges), initial_response_ok=True)
    assert e.value.smtp_code == 535
    assert e.value.smtp_error == b"5.7.3 Authentication unsuccessful"
    assert challenges == []                          # Exchange Online answers 535 at once
    c.close()


def test_xoauth2_error_challenge_then_535(graphd, smtpd, certs):
    g = graphd()
    s = xoauth2_server(smtpd, g, "--xoauth2-error-challenge")
    c = smtp_session(s, certs)
    challenges = []
    with pytest.raises(smtplib.SMTPAuthenticationError) as e:
        c.auth("XOAUTH2", xoauth2(G.SENDER, "not-a-token", challenges), initial_response_ok=True)
    assert e.value.smtp_code == 535
    assert [json.loads(ch) for ch in challenges] == [
        {"status": "401", "schemes": "bearer", "scope": G.OUTLOOK_SCOPE}]
    # and a good token still works in the same mode
    c.close()
    c = smtp_session(s, certs)
    code, _ = c.auth("XOAUTH2", xoauth2(G.SENDER, get_token(g, G.OUTLOOK_SCOPE), []),
                     initial_response_ok=True)
    assert code == 235
    c.quit()
