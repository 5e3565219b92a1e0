#!/usr/bin/python3
"""demo/show_stream.py - print the entries of a Redis stream, as `redis-cli --raw XRANGE` writes
them on standard input (the id, then each field and its value, one per line)."""
import json
import sys


def entries(lines):
    i = 0
    while i < len(lines) and lines[i]:
        entry, i = {"id": lines[i]}, i + 1
        while i + 1 < len(lines) and lines[i] in ("event_id", "channel", "attempt", "queued_at", "key", "payload"):
            entry[lines[i]] = lines[i + 1]
            i += 2
        yield entry


def main():
    n = 0
    for e in entries(sys.stdin.read().split("\n")):
        body = json.loads(e["payload"])
        change = body.get("new") or body.get("old") or {}
        print("  %s  event_id %s  channel %s  attempt %s  queued_at %s"
              % (e["id"], e["event_id"], e["channel"], e["attempt"], e["queued_at"]))
        print("    %s of %s.%s: order %s, status %s" % (body.get("operation"), body.get("schema"), body.get("table"),
                                                      change.get("order_id"), change.get("status")))
        n += 1
    print("  %d entr%s in the stream" % (n, "y" if n == 1 else "ies"))


if __name__ == "__main__":
    main()
