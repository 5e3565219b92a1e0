#!/usr/bin/python3
"""demo/show_hooks.py SPOOL - print what the webhook receiver (test/fixtures/hookd.py) received.

The receiver checked each request's Standard Webhooks signature itself (Python's hmac) and kept one
req-NNNNNN.json per request with the raw body beside it. The signature is shown shortened.
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


def main(spool):
    records = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(spool, "req-*.json")))]
    for r in records:
        body = json.loads(open(os.path.join(spool, r["body_file"]), "rb").read())
        change = body.get("new") or body.get("old") or {}
        print("  %s %s -> %s   signature %s" % (r["method"], r["path"], r["status"], r["signature"]))
        print("    webhook-id %s  webhook-timestamp %s  webhook-signature %s..."
              % (r["webhook_id"], r["timestamp"], (header(r, "webhook-signature") or "")[:12]))
        print("    %s of %s.%s: order %s, status %s" % (body.get("operation"), body.get("schema"),
                                                      body.get("table"), change.get("order_id"),
                                                      change.get("status")))
    c = json.load(open(os.path.join(spool, "counters.json")))
    print("  %d request(s) over %d connection(s), every signature checked by the receiver"
          % (c["requests"], c["connections"]))


if __name__ == "__main__":
    main(sys.argv[1])
