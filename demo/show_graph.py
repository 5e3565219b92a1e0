#!/usr/bin/python3
"""demo/show_graph.py SPOOL - print what the fake Microsoft Graph (test/fixtures/graphd.py) received.

The fake keeps one req-NNNNNN.json per request (headers, the decoded form or JSON body, the answer)
and counters.json. Credentials are never printed: the client secret and bearer tokens are shown as
[redacted], as the Processor's own traces show them.
"""
import glob
import json
import os
import sys


def header(record, name):
    for k, v in record["headers"]:
        if k.lower() == name:
            return v
    return None


def show_token(r):
    form = dict(r.get("form") or {})
    if "client_secret" in form:
        form["client_secret"] = "[redacted]"
    print("  %s %s -> %s" % (r["method"], r["path"], r["status"]))
    print("    form        %s" % "  ".join("%s=%s" % kv for kv in sorted(form.items())))


def addresses(recipients):
    return ", ".join(("%s <%s>" % (e["emailAddress"]["name"], e["emailAddress"]["address"])
                      if e["emailAddress"].get("name") else e["emailAddress"]["address"])
                     for e in recipients or [])


def show_sendmail(r):
    print("  %s %s -> %s" % (r["method"], r["path"], r["status"]))
    print("    header      Authorization: Bearer [redacted]   Content-Type: %s" % header(r, "content-type"))
    doc = r.get("json") or {}
    msg = doc.get("message", {})
    print("    subject     %s" % msg.get("subject"))
    print("    to          %s" % addresses(msg.get("toRecipients")))
    print("    body        %s, %d characters" % (msg["body"]["contentType"], len(msg["body"]["content"])))
    for h in msg.get("internetMessageHeaders", []):
        print("    header      %s: %s" % (h["name"], h["value"]))
    print("    Message-ID  %s" % msg.get("internetMessageId"))
    for a in r.get("attachments", []):
        print("    attachment  %s (%s, %d bytes)" % (a["name"], a["contentType"], a["size"]))
    print("    saveToSentItems %s" % json.dumps(doc.get("saveToSentItems")))


def main(spool):
    records = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(spool, "req-*.json")))]
    for r in records:
        if r["path"].endswith("/oauth2/v2.0/token"):
            show_token(r)
        else:
            show_sendmail(r)
    c = json.load(open(os.path.join(spool, "counters.json")))
    print("  %d token request(s), %d sendMail request(s) (%d accepted), over %d connection(s)"
          % (c["token_requests"], c["sendmail_requests"], c["sendmail_accepted"], c["connections"]))


if __name__ == "__main__":
    main(sys.argv[1])
