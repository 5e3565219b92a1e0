"""`make demo` stays working: run demo/run as CI would and check what it shows."""
import os
import subprocess

import testlib


def test_demo_runs_and_shows_events_and_mail():
    env = dict(os.environ)
    env.pop("PGRELAY_PG_PREFIX", None)       # the demo builds its own prefix, as for a user
    r = subprocess.run(["bash", os.path.join(testlib.ROOT, "demo", "run")], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300, env=env, cwd=testlib.ROOT)
    assert r.returncode == 0, r.stdout[-4000:]
    out = r.stdout
    assert "2 message(s) in the sink's spool" in out
    assert "info batch " in out and "failed=1" in out
    for status in ("sent", "partially_sent"):
        assert " %s " % status in out
    assert "order 9999 does not exist" in out
    # one message through the fake Microsoft Graph, with one token, recorded with Graph's request-id
    assert "POST /v1.0/users/shop%40contoso.com/sendMail -> 202" in out
    assert "1 token request(s), 1 sendMail request(s) (1 accepted), over 1 connection(s)" in out
    assert "demo~Secret" not in out
    # webhooks: the watched orders' inserts and updates, each signature checked by the receiver
    assert out.count("-> 200   signature valid") == 4
    assert "4 request(s) over " in out and "every signature checked by the receiver" in out
    assert "insert of shop.orders: order 1001" in out and "update of shop.orders: order 1003, status confirmed" in out
    assert "order 1002" not in out.split("The webhook receiver received")[1].split("What just happened")[0]
    # the same changes in the Redis stream, read back with redis-cli
    stream = out.split("The Redis stream shop:orders holds")[1].split("What just happened")[0]
    assert "4 entries in the stream" in stream and "channel order_stream  attempt 1" in stream
    assert "insert of shop.orders: order 1001" in stream and "order 1002" not in stream
    assert "Stopped the cluster, the SMTP sink, the fake Graph, the webhook receiver and redis-server" in out
    # what it says of SQL events is what the Processor does (and the README says): they share a
    # transaction, up to 50
    told = " ".join(out.split("What just happened")[1].split())
    assert "a worker finishes the SQL events it takes in one transaction, up to 50 (--events-per-commit)" in told
    assert "in its own transaction" not in told
    assert "events-per-commit=50" in out.split("What just happened")[0]
