#!/usr/bin/python3
"""check_mime.py DIR - parse every NAME.eml the MIME fuzz targets wrote (FUZZ_DUMP_DIR) with
Python's email package under its strict policy (any defect is an error), and compare what it
reads with NAME.json, what the message was made of: Subject, From, To, Cc, Reply-To, the custom
header fields in order, both bodies, the attachments' file names and sizes.

The Processor checks an address only so far as it cannot break out of <...>: the notifier
validates addresses (docs/notifier.md, Address validation) before anything is queued. Messages
with an address outside those rules (which the fuzzer makes freely) are counted apart, and so are
those with an address that is not ASCII (sent with SMTPUTF8, raw UTF-8 in the header): the strict
policy is an RFC 5322 one. Prints a summary line; exits 1 on the first message that fails, with
the reason."""
import email
import email.header
import email.policy
import ipaddress
import json
import os
import re
import sys

ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
LOCAL = re.compile(r'^(%s(\.%s)*|"([\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])+")$' % (ATEXT, ATEXT))
LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$")


def notifier_accepts(address):
    """The notifier's address rules (addresses.sql), in short."""
    if not address.isascii() or len(address) > 254 or "@" not in address:
        return False
    local, domain = address.rsplit("@", 1)
    if len(local) > 64 or not LOCAL.match(local):
        return False
    if domain.startswith("["):
        inner = domain[1:-1] if domain.endswith("]") else ""
        try:
            if inner.startswith("IPv6:"):
                return ipaddress.ip_address(inner[5:]).version == 6
            return ipaddress.ip_address(inner).version == 4 and inner == str(ipaddress.ip_address(inner))
        except ValueError:
            return False
    labels = domain.split(".")
    return (len(domain) <= 253 and len(labels) >= 2 and not labels[-1].isdigit()
            and all(len(l) <= 63 and LABEL.match(l) for l in labels))


def norm(text):
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_mailboxes(value):
    """The mailboxes of an address field's unfolded value: commas outside quoted strings."""
    out, cur, quoted, i = [], "", False, 0
    while i < len(value):
        c = value[i]
        if c == "\\" and quoted:
            cur += value[i:i + 2]
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        if c == "," and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    return out + [cur]


def display_names(raw, field):
    """The display names of a field as RFC 2047 reads them: adjacent encoded words are joined
    without the blanks between them (section 6.2). Python's parser for address fields keeps a blank
    there, so a long name, written as several words, would not compare."""
    msg = email.message_from_bytes(raw, policy=email.policy.compat32)
    value = msg.get(field)
    if value is None:
        return []
    value = value.replace("\r\n", "").replace("\n", "").strip()
    names = []
    for mb in split_mailboxes(value):
        mb = mb.strip()
        name = mb[:mb.rindex("<")].strip() if "<" in mb else ""
        if name.startswith("=?"):
            name = str(email.header.make_header(email.header.decode_header(name)))
        elif name.startswith('"'):
            name = re.sub(r"\\(.)", r"\1", name[1:-1])
        names.append(name or None)
    return names


def unstructured(msg, raw, field):
    """Every value of an unstructured field as read: Python shows a value that starts on a
    continuation line (encoded words after a long field name must, for RFC 2047's 76 characters)
    with a leading blank, which the field's folding put there."""
    raws = email.message_from_bytes(raw, policy=email.policy.compat32).get_all(field, [])
    return [str(v)[1:] if r.startswith(("\r\n", "\n")) and str(v).startswith(" ") else str(v)
            for v, r in zip(msg.get_all(field, []), raws)]


def mailboxes(header, raw=None, field=None):
    got = [(a.addr_spec, a.display_name or None) for a in (header.addresses if header is not None else ())]
    if raw is not None:
        got = [(addr, name) for (addr, _), name in zip(got, display_names(raw, field))]
    return got


def check(raw, want):
    msg = email.message_from_bytes(raw, policy=email.policy.strict)
    for name, value in msg.items():          # every field parsed, strictly
        str(value)
    if want["subject"] is not None and unstructured(msg, raw, "Subject") != [want["subject"]]:
        return "Subject reads %r, not %r" % (unstructured(msg, raw, "Subject"), want["subject"])
    got = mailboxes(msg["From"], raw, "From")
    expect = [(want["from"]["address"], want["from"].get("name"))]
    if got != expect:
        return "From reads %r, not %r" % (got, expect)
    for field, key in (("To", "to"), ("Cc", "cc"), ("Reply-To", "reply_to")):
        expect = [(m["address"], m.get("name")) for m in want[key]]
        got = mailboxes(msg[field], raw, field)
        if got != expect:
            return "%s reads %r, not %r" % (field, got, expect)
    names = [n for n, _ in want["headers"]]
    for name in dict.fromkeys(n.lower() for n in names):
        expect = [v for n, v in want["headers"] if n.lower() == name]
        got = unstructured(msg, raw, name)
        if got != expect:
            return "%s reads %r, not %r" % (name, got, expect)
    for kind in ("plain", "html"):
        text = want["body_" + ("text" if kind == "plain" else "html")]
        if text is None:
            continue
        part = msg.get_body((kind,))
        if part is None:
            return "no text/%s body" % kind
        got = norm(part.get_content())
        if got not in (norm(text), norm(text) + "\n"):
            return "text/%s reads %r, not %r" % (kind, got[:200], norm(text)[:200])
    files = [(p.get_filename(), len(p.get_payload(decode=True))) for p in msg.walk()
             if not p.is_multipart() and p.get("Content-Transfer-Encoding") == "base64"]
    expect = [(a["filename"], a["size"]) for a in want["attachments"]]
    if sorted(files, key=str) != sorted(expect, key=str):
        return "attachments read %r, not %r" % (files, expect)
    return None


def main():
    d = sys.argv[1]
    checked = utf8 = outside = 0
    for name in sorted(os.listdir(d)):
        if not name.endswith(".eml"):
            continue
        with open(os.path.join(d, name), "rb") as f:
            raw = f.read()
        with open(os.path.join(d, name[:-4] + ".json")) as f:
            want = json.load(f)
        everyone = [want["from"]] + want["to"] + want["cc"] + want["reply_to"]
        if any(not m["address"].isascii() for m in everyone):
            utf8 += 1
            continue
        if not all(notifier_accepts(m["address"]) for m in everyone):
            outside += 1
            continue
        try:
            why = check(raw, want)
        except Exception as e:          # a defect under the strict policy, or a parse error
            why = "%s: %s" % (type(e).__name__, e)
        if why:
            print("%s: %s" % (name, why))
            return 1
        checked += 1
    print("strict parse: %d messages read back as made; skipped %d with SMTPUTF8 addresses and %d with"
          " addresses the notifier refuses" % (checked, utf8, outside))
    return 0


if __name__ == "__main__":
    sys.exit(main())
