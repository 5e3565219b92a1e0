#!/usr/bin/python3
"""demo/show_mail.py SPOOL - print the messages the SMTP sink (test/fixtures/smtpd.py) received.

The sink writes each message as msg-NNNN.eml (the bytes as received) and msg-NNNN.json (the SMTP
envelope). Headers are decoded with Python's email parser, so an RFC 2047 encoded subject shows
as the text the application sent.
"""
import email
import email.policy
import glob
import json
import os
import sys


def raw_header(raw, name):
    """The lines of header field NAME as they were on the wire (folded lines included)."""
    head = raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    for i, line in enumerate(head):
        if line.lower().startswith(name + b":"):
            lines = [line]
            for cont in head[i + 1:]:
                if not cont[:1] in (b" ", b"\t"):
                    break
                lines.append(cont)
            return [x.decode("ascii", "replace") for x in lines]
    return None


def show(eml_path):
    with open(eml_path, "rb") as f:
        raw = f.read()
    with open(eml_path[:-4] + ".json") as f:
        env = json.load(f)
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    print("  %s (%d bytes)" % (os.path.basename(eml_path), len(raw)))
    print("    envelope    MAIL FROM:<%s>  RCPT TO (accepted):%s"
          % (env["mail_from"], " ".join("<%s>" % r for r in env["rcpt_tos"])))
    for name in ("From", "To", "Cc", "Subject", "Message-ID"):
        if msg[name] is not None:
            print("    %-11s %s" % (name, msg[name]))
    wire = raw_header(raw, b"subject")
    if wire and wire != ["Subject: " + str(msg["Subject"])]:
        for i, line in enumerate(wire):
            print("    %-11s %s" % ("" if i else "(on wire)", line.strip()))
    body = msg.get_body(("plain",))
    if body is not None:
        first = body.get_content().strip().splitlines()[0]
        print("    %-11s %s ..." % ("text body", first))
    parts = [p.get_content_type() for p in msg.walk() if not p.is_multipart()]
    print("    %-11s %s" % ("MIME parts", ", ".join(parts)))
    for att in msg.iter_attachments():
        content = att.get_content()
        size = len(content.encode() if isinstance(content, str) else content)
        print("    %-11s %s (%s, %d bytes)" % ("attachment", att.get_filename(), att.get_content_type(), size))


def main():
    spool = sys.argv[1]
    messages = sorted(glob.glob(os.path.join(spool, "msg-*.eml")))
    print("%d message(s) in the sink's spool %s" % (len(messages), spool))
    for path in messages:
        print()
        show(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
