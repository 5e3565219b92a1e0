"""pg_relay web over HTTP: the protection the HTTP side adds (loopback by default, and there nothing
without the sign-in token of its start or a user of the password file; TLS and a password file of
salted hashes elsewhere; failed sign-ins throttled per client and per name; actions only as
same-origin POSTs with a CSRF token, the Host of a loopback console, a strict
Content-Security-Policy, bounded requests, slow clients that cannot keep the others out) and the
database's decision of who sees and does what (a monitor reads outcomes, never payloads; an admin
acts; no secret is ever on a page). test_console_browser.py drives the same console in a real
browser."""
import os
import re
import socket
import stat
import subprocess
import threading
import urllib.parse

import pytest

import testlib
import webconsole

SIGNING = "whsec_" + "c2VjcmV0LXNpZ25pbmcta2V5LWZvci10aGUtdGVzdHMh"   # literal: stored in webhook_secrets
HEADER_SECRET = "Bearer header-s3cret-9f2e"
PATH_SECRET = "path-t0ken-77aa"
SMTP_SECRET = "smtp-passw0rd-4c1d"
PAYLOAD_MARK = "payload-only-admins-read-5e"
SECRETS = (SIGNING, HEADER_SECRET, PATH_SECRET, SMTP_SECRET)
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def roles(db):
    for name, group in (("console_admin", "pgrelay_admin"), ("console_monitor", "pgrelay_monitor"),
                        ("console_nobody", None)):
        db.sql("DO $$ BEGIN CREATE ROLE %s LOGIN%s; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
               % (name, " IN ROLE " + group if group else ""))


def dsn_as(db, role):
    return db.dsn.replace("user=postgres", "user=" + role)


@pytest.fixture
def relay(cluster):
    """A database with both extensions, a SQL channel whose handler fails a payload with 'bad' in
    it, failed and done events, a webhook channel and an email profile whose secrets are literals."""
    d = testlib.Database(cluster, extensions=("pg_relay", "pg_relay_notifier"))
    roles(d)
    d.sql("""CREATE FUNCTION public.h(p text) RETURNS void SECURITY DEFINER SET search_path = public
             LANGUAGE plpgsql AS $$ BEGIN IF p LIKE '%bad%' THEN RAISE EXCEPTION 'handler refused it'
             USING ERRCODE = 'PGSTP'; END IF; END $$""")
    d.sql("GRANT EXECUTE ON FUNCTION public.h(text) TO pgrelay_processor, console_admin")
    d.sql("SELECT pgrelay.register('orders', 'sql', handler => 'public.h(text)')")
    d.sql("SELECT pgrelay.register_webhook('hook', %s, signing_secret => %s, headers => %s)",
          ("https://127.0.0.1:9/hooks/" + PATH_SECRET, SIGNING, '{"Authorization": "%s"}' % HEADER_SECRET))
    d.sql("SELECT pgrelay_notifier.create_profile('p', host => '127.0.0.1', port => 2525, security => 'starttls',"
          " username => 'relay', password => %s, from_address => 'noreply@example.com')", (SMTP_SECRET,))
    d.sql("SELECT pgrelay_notifier.create_channel('mail', 'p')")
    d.sql("SELECT pgrelay.notify('orders', 'ok ' || g) FROM generate_series(1, 5) g")
    d.failed = [d.scalar("SELECT pgrelay.notify('orders', %s)", ("bad %s %d" % (PAYLOAD_MARK, i),)) for i in range(2)]
    d.sql("SELECT pgrelay.process_one(id) FROM pgrelay.queue WHERE channel = 'orders' ORDER BY id")
    d.sql("SELECT pgrelay.notify('hook', '{\"id\": 1}')")
    yield d
    d.close()


@pytest.fixture
def consoles(request):
    started = []

    def start(dsn, *args, **kw):
        c = webconsole.Console(dsn, *args, **kw)
        started.append(c)
        return c

    yield start
    for c in started:
        if c.proc.proc.poll() is None:
            c.stop()
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            print("---- console log ----\n" + c.proc.log()[-6000:])


def web(*args, stdin=None):
    return subprocess.run([testlib.PROCESSOR, "web"] + list(args), input=stdin, capture_output=True, text=True,
                          timeout=120)


# ---- usage ---------------------------------------------------------------------------------------

def test_help_and_bad_usage():
    r = web("--help")
    assert r.returncode == 0 and "--listen=ADDR:PORT" in r.stdout and "--hash-password" in r.stdout, r.stdout
    for args, says in ((["--nope"], 'unknown option "--nope"'), (["--listen"], "needs a value"),
                       (["extra"], 'unexpected argument "extra"'),
                       (["--listen=0.0.0.0:0"], "needs --tls-cert, --tls-key and --auth-file"),
                       (["--listen=[::]:0", "--tls-cert=a", "--tls-key=b"], "needs --tls-cert, --tls-key and --auth-file"),
                       (["--tls-cert=a"], "--tls-cert and --tls-key go together"),
                       (["--auth-file=a", "--token-file=b"], "--token-file is for a console without --auth-file"),
                       (["--listen=127.0.0.1"], "expected HOST:PORT"),
                       (["--listen=127.0.0.1:99999"], "port must be a number"),
                       (["--iterations=5"], "--iterations must be a number from 1000"),
                       (["--iterations= 1000"], "--iterations must be a number from 1000"),
                       (["--iterations=+1000"], "--iterations must be a number from 1000"),
                       (["--log-level=loud"], "--log-level must be")):
        r = web(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert says in r.stderr and len(r.stderr.splitlines()) <= 2, (args, r.stderr)
        assert ('Try "pg_relay web --help"' in r.stderr) == (args[0] in ("--nope", "--listen", "extra", "--auth-file=a",
                                                                           "--iterations=5", "--iterations= 1000",
                                                                           "--iterations=+1000", "--log-level=loud")), args
    assert "pg_relay web" in subprocess.run([testlib.PROCESSOR, "--help"], capture_output=True, text=True).stdout


def test_a_database_it_cannot_read_is_a_clear_failure(relay, cluster):
    r = web("-d", cluster.dsn("no_such_database"), "--listen=127.0.0.1:0")
    assert r.returncode == 1 and "could not read the database" in r.stderr, r.stderr


# ---- what each role sees and does ----------------------------------------------------------------

PAGES = ["/", "/channels", "/events", "/failures", "/processors", "/schedules", "/topics", "/events?outcome=failed",
         "/events?channel=orders", "/failures?channel=orders", "/events?key=product:1", "/events?outcome=snoozed"]


def test_admin_reads_payloads_and_acts(relay, consoles):
    c = consoles(dsn_as(relay, "console_admin"))
    for path in PAGES:
        r = c.get(path)
        assert r.status == 200, (path, r.body)
        assert "console_admin" in r.body and "pgrelay_admin" in r.body
    ev = relay.failed[0]
    page = c.get("/event?id=%d" % ev).body
    assert PAYLOAD_MARK in page and "handler refused" in page and "PGSTP" in page and "failed for good" in page
    assert PAYLOAD_MARK in c.get("/events?q=" + PAYLOAD_MARK).body
    r = c.post("/action/retry", {"csrf": c.csrf("/event?id=%d" % ev), "event_id": ev})
    assert r.status == 200 and "queued again" in r.body, r.body
    assert relay.scalar("SELECT count(*) FROM pgrelay.failed WHERE event_id = %s", (ev,)) == 0
    assert relay.scalar("SELECT count(*) FROM pgrelay.queue WHERE event_id = %s", (ev,)) == 1
    assert "queued" in c.get("/event?id=%d" % ev).body
    # twice: the database says why not, and nothing changes
    r = c.post("/action/retry", {"csrf": c.csrf("/channels"), "event_id": ev})
    assert r.status == 409 and "is not in pgrelay.failed" in r.body
    r = c.post("/action/pause", {"csrf": c.csrf("/channels"), "channel": "orders"})
    assert r.status == 200 and relay.scalar("SELECT paused FROM pgrelay.channels WHERE channel = 'orders'")
    assert "paused" in c.get("/channels").body
    r = c.post("/action/resume", {"csrf": c.csrf("/channels"), "channel": "orders"})
    assert r.status == 200 and not relay.scalar("SELECT paused FROM pgrelay.channels WHERE channel = 'orders'")
    r = c.post("/action/pause", {"csrf": c.csrf("/channels")})
    assert r.status == 200 and relay.scalar("SELECT paused FROM pgrelay.dispatch_state")
    assert "PAUSED everywhere" in c.get("/").body
    c.post("/action/resume", {"csrf": c.csrf("/channels")})
    assert not relay.scalar("SELECT paused FROM pgrelay.dispatch_state")
    # the set of a filter: the other failed event
    r = c.post("/action/discard-failed", {"csrf": c.csrf("/failures"), "channel": "orders", "error": "%refused%"})
    assert r.status == 200 and "(1)" in r.body, r.body
    assert relay.scalar("SELECT count(*) FROM pgrelay.failed") == 0
    assert "web_action action=discard-failed target=orders role=console_admin result=done" in c.proc.log()


def test_monitor_reads_outcomes_not_payloads_and_is_refused_actions(relay, consoles):
    c = consoles(dsn_as(relay, "console_monitor"))
    ev = relay.failed[0]
    for path in PAGES + ["/event?id=%d" % ev, "/events?q=" + PAYLOAD_MARK]:
        r = c.get(path)
        assert r.status == 200, (path, r.body)
        assert PAYLOAD_MARK not in r.body, path
        assert "Error" not in r.body.split("<main>")[1][:40], path   # a page, not an error page
    page = c.get("/event?id=%d" % ev).body
    assert "failed for good" in page and "PGSTP" in page
    assert "may not read payloads" in page
    assert "may not read payloads" in c.get("/events").body
    assert "may not read the channels&#39; settings" in c.get("/channels").body
    assert "orders" in c.get("/events?outcome=failed").body
    for path, fields in (("/action/retry", {"event_id": ev}), ("/action/discard", {"event_id": ev}),
                         ("/action/pause", {"channel": "orders"}), ("/action/pause", {}),
                         ("/action/retry-failed", {"channel": "orders"})):
        fields = dict(fields, csrf=c.csrf("/event?id=%d" % ev))
        r = c.post(path, fields)
        assert r.status == 403 and "permission denied" in r.body and "Refused by the database" in r.body, (path, r.body)
    assert relay.scalar("SELECT count(*) FROM pgrelay.failed") == 2
    assert not relay.scalar("SELECT paused FROM pgrelay.channels WHERE channel = 'orders'")
    assert not relay.scalar("SELECT paused FROM pgrelay.dispatch_state")
    assert "result=refused" in c.proc.log()


def test_a_role_without_pg_relay_sees_why(relay, consoles):
    c = consoles(dsn_as(relay, "console_nobody"))
    for path in ["/", "/channels", "/events", "/failures", "/processors", "/schedules", "/topics", "/event?id=1"]:
        r = c.get(path)
        assert r.status == 200 and "may not read" in r.body, (path, r.body)


def test_no_secret_on_any_page(relay, consoles):
    """Every page an admin can reach by following the console's own links, and the pages of every
    event: none shows a webhook's signing secret, header value or URL path, or a profile's password."""
    c = consoles(dsn_as(relay, "console_admin"))
    seen, todo = set(), ["/"] + ["/event?id=%d" % e for (e,) in relay.sql("SELECT DISTINCT event_id FROM pgrelay.log")]
    while todo and len(seen) < 200:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        body = c.get(path).body
        for s in SECRETS:
            assert s not in body, (s, path)
        for link in re.findall(r'href="(/[^"]*)"', body):
            link = link.replace("&amp;", "&")
            if not link.startswith("/static/"):
                todo.append(link)
    assert len(seen) > 10
    assert "127.0.0.1:9" in c.get("/channels").body          # the endpoint's host and port, not its path


# ---- the job queue: schedules, keys, snoozes, cancel ------------------------------------------------

def test_schedules_page_and_pause_resume(relay, consoles):
    admin = consoles(dsn_as(relay, "console_admin"))
    assert "No schedule is defined" in admin.get("/schedules").body
    assert '<a href="/schedules"' in admin.get("/").body                    # in the navigation
    relay.sql("SELECT pgrelay.schedule('nightly', 'orders', '30 2 * * *', timezone => 'Europe/Berlin')")
    relay.sql("SELECT pgrelay.register('quiet', 'sql', handler => 'public.h(text)', active => false)")
    relay.sql("SELECT pgrelay.schedule('hourly-quiet', 'quiet', '@hourly')")
    # fire both at their next time: one queues its event, the inactive channel refuses the other
    relay.sql("SELECT * FROM pgrelay._schedule_fire(%s)",
              (relay.scalar("SELECT max(next_run_at) FROM pgrelay.schedules"),))
    queued = relay.scalar("SELECT last_event_id FROM pgrelay.schedules WHERE name = 'nightly'")
    assert queued and relay.scalar("SELECT last_outcome FROM pgrelay.schedules WHERE name = 'hourly-quiet'") == "failed"

    mon = consoles(dsn_as(relay, "console_monitor"))
    r = mon.get("/schedules")
    assert r.status == 200, r.body
    row = re.search(r"<tr><td>nightly</td>.*?</tr>", r.body).group(0)
    for cell in ("30 2 * * *", "Europe/Berlin", "active", "once", "queued", '<a href="/event?id=%d">' % queued):
        assert cell in row, (cell, row)
    row = re.search(r"<tr><td>hourly-quiet</td>.*?</tr>", r.body).group(0)
    assert "@hourly" in row and "failed" in row and "is not active" in row, row
    assert "/action/schedule-pause" not in r.body and "may not pause or resume schedules" in r.body
    # a monitor is refused by the database
    r = mon.post("/action/schedule-pause", {"csrf": mon.csrf("/channels"), "name": "nightly"})
    assert r.status == 403 and "permission denied" in r.body, r.body
    assert relay.scalar("SELECT active FROM pgrelay.schedules WHERE name = 'nightly'")

    page = admin.get("/schedules").body
    assert 'action="/action/schedule-pause"' in page and 'name="name" value="nightly"' in page
    # the token and the Origin are required
    for fields, origin in (({"name": "nightly"}, True), ({"name": "nightly", "csrf": "0" * 64}, True),
                           ({"name": "nightly", "csrf": admin.csrf("/schedules")}, False)):
        assert admin.post("/action/schedule-pause", fields, origin=origin).status == 403
    assert admin.get("/action/schedule-pause?name=nightly").status == 405
    assert relay.scalar("SELECT active FROM pgrelay.schedules WHERE name = 'nightly'")
    r = admin.post("/action/schedule-pause", {"csrf": admin.csrf("/schedules"), "name": "nightly"})
    assert r.status == 200 and "The schedule is paused" in r.body, r.body
    assert not relay.scalar("SELECT active FROM pgrelay.schedules WHERE name = 'nightly'")
    row = re.search(r"<tr><td>nightly</td>.*?</tr>", admin.get("/schedules").body).group(0)
    assert "paused" in row and ">Resume</button>" in row, row
    r = admin.post("/action/schedule-resume", {"csrf": admin.csrf("/schedules"), "name": "nightly"})
    assert r.status == 200 and "resumed" in r.body
    assert relay.scalar("SELECT active FROM pgrelay.schedules WHERE name = 'nightly'")
    r = admin.post("/action/schedule-pause", {"csrf": admin.csrf("/schedules"), "name": "nope"})
    assert r.status == 409 and "schedule &quot;nope&quot; does not exist" in r.body, r.body
    assert "action=schedule-pause target=nightly role=console_admin result=done" in admin.proc.log()


def test_topics_page_and_the_deliveries_of_a_publication(relay, consoles):
    """The Topics page lists each subscription with its filter, backlog and failures (monitors too;
    admins also the descriptions and the topics nobody subscribed to), every name and text escaped;
    an event page of a delivery names its publication and links its sibling deliveries."""
    admin = consoles(dsn_as(relay, "console_admin"))
    assert "No topic is defined" in admin.get("/topics").body
    assert '<a href="/topics"' in admin.get("/").body                       # in the navigation
    relay.sql("SELECT pgrelay.create_topic('shop', %s)", ('<b>"orders" & co</b>',))
    relay.sql("SELECT pgrelay.create_topic('lonely')")
    relay.sql("SELECT pgrelay.subscribe('shop', 'orders')")
    relay.sql("SELECT pgrelay.subscribe('shop', 'hook', '{order.*}')")
    # a name create_topic() would refuse, written by the table's owner: shown escaped all the same
    hostile = "<i>x</i>&\"q'"
    relay.sql("INSERT INTO pgrelay.topics (topic) VALUES (%s)", (hostile,))
    relay.sql("INSERT INTO pgrelay.subscriptions (topic, channel) VALUES (%s, 'orders')", (hostile,))
    pub = relay.scalar("SELECT pgrelay.publish('shop', 'bad order', 'order.created')")
    mine = relay.scalar("SELECT event_id FROM pgrelay.queue WHERE publication_id = %s AND channel = 'orders'", (pub,))
    other = relay.scalar("SELECT event_id FROM pgrelay.queue WHERE publication_id = %s AND channel = 'hook'", (pub,))
    relay.sql("SELECT pgrelay.process_one(id) FROM pgrelay.queue WHERE event_id = %s", (mine,))   # fails for good

    body = admin.get("/topics").body
    table = re.search(r'<table id="topics">.*?</table>', body, re.S).group(0)
    assert "&lt;b&gt;&quot;orders&quot; &amp; co&lt;/b&gt;" in table and "<b>" not in table, table
    assert "&lt;i&gt;x&lt;/i&gt;&amp;&quot;q&#39;" in table and "<i>x" not in table, table
    assert re.search(r"<strong>lonely</strong>.*?no subscriber", table, re.S), table
    rows = re.findall(r"<tr>.*?</tr>", table, re.S)
    hook = [x for x in rows if "/events?channel=hook" in x][0]
    assert "<code>order.*</code>" in hook and re.findall(r'<td class="num[^"]*">([^<]*)</td>', hook)[:3] == ["1", "1", "0"], hook
    orders = [x for x in rows if "/events?channel=orders" in x]
    assert len(orders) == 2, rows                                           # on shop and on the other
    for x in orders:
        assert ">all</span>" in x and '<a href="/failures?channel=orders">1</a>' in x, x

    mon = consoles(dsn_as(relay, "console_monitor"))
    body = mon.get("/topics").body
    assert "/events?channel=hook" in body and "<code>order.*</code>" in body
    assert "lonely" not in body and "orders&quot; &amp; co" not in body
    assert "may not read the topics&#39; descriptions" in body

    # the event page of a delivery: its publication and every delivery of it, as admin and monitor
    for c in (admin, mon):
        page = c.get("/event?id=%d" % mine).body
        assert re.search(r'id="publication">A delivery of publication <code>%d</code>' % pub, page), page
        sib = re.search(r'<table id="siblings">.*?</table>', page, re.S).group(0)
        assert '<a href="/event?id=%d">%d</a>' % (other, other) in sib and "%d (this event)" % mine in sib, sib
        row = re.search(r'<tr><td><a href="/event\?id=%d">.*?</tr>' % other, sib, re.S).group(0)
        assert "hook" in row and ">queued</span>" in row, row
        row = re.search(r'<tr class="current">.*?</tr>', sib, re.S).group(0)
        assert "orders" in row and ">failed</span>" in row and "handler refused it" in row, row
    # an admin sees the publication of a delivery that has not run yet (its queue row)
    page = admin.get("/event?id=%d" % other).body
    assert "%d (this event)" % other in page and '<a href="/event?id=%d">' % mine in page
    # an event of notify() is no delivery of a publication
    assert 'id="publication"' not in admin.get("/event?id=%d" % relay.failed[0]).body


def test_keys_and_snoozes_on_the_pages(relay, consoles):
    relay.sql("""CREATE FUNCTION public.later(p text) RETURNS void SECURITY DEFINER SET search_path = public
                 LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'partner busy' USING ERRCODE = 'PGSNZ',
                 DETAIL = '3600'; END $$""")
    relay.sql("GRANT EXECUTE ON FUNCTION public.later(text) TO pgrelay_processor, console_admin")
    relay.sql("SELECT pgrelay.register('partner', 'sql', handler => 'public.later(text)')")
    one = relay.scalar("SELECT pgrelay.notify('orders', 'one', now() + interval '1 hour', key => 'product:1')")
    two = relay.scalar("SELECT pgrelay.notify('orders', 'two', now() + interval '1 hour', key => 'product:2')")
    sn = relay.scalar("SELECT pgrelay.notify('partner', 'x', key => 'product:1')")
    assert relay.scalar("SELECT outcome FROM pgrelay.process_one(%s)", (sn,)) == "snoozed"
    assert relay.scalar("SELECT snoozes FROM pgrelay.queue WHERE event_id = %s", (sn,)) == 1

    c = consoles(dsn_as(relay, "console_admin"))
    body = c.get("/events?key=product:1").body
    waiting = re.search(r'<table id="key-waiting">.*?</table>', body, re.S).group(0)
    assert ">%d</a>" % one in waiting and ">%d</a>" % sn in waiting and ">%d</a>" % two not in waiting, waiting
    attempts = re.search(r'<table id="events">.*?</table>', body, re.S).group(0)
    assert re.findall(r'<td><a href="/event\?id=(\d+)">', attempts) == [str(sn)]
    assert "snoozed" in attempts and "product:1" in attempts
    body = c.get("/events?key=product:1&channel=orders").body
    assert ">%d</a>" % sn not in body and ">%d</a>" % one in body and "No attempt matches" in body
    body = c.get("/events?key=" + urllib.parse.quote("product:1' OR ''='")).body
    assert "No event waits with this key" in body and "No attempt matches" in body
    assert [str(sn)] == re.findall(r'<td><a href="/event\?id=(\d+)">', c.get("/events?outcome=snoozed").body)
    page = c.get("/event?id=%d" % sn).body
    assert re.search(r"Key <code>product:1</code>.*snoozed 1 time", page), page
    assert "partner busy" in page
    # per channel: waiting with a key, snoozed
    for path, table in (("/", "channels"), ("/channels", "channel-table")):
        rows = re.search(r'<table id="%s">.*?</table>' % table, c.get(path).body, re.S).group(0)
        row = re.search(r'<tr><td><a href="/events\?channel=partner">.*?</tr>', rows, re.S).group(0)
        nums = re.findall(r'<td class="num">([^<]*)</td>', row)
        heads = re.findall(r"<th[^>]*>([^<]*)</th>", rows)
        numeric = [h for h in heads if h in ("Queued", "Due", "Retrying", "Oldest due", "Keyed", "Snoozed")]
        got = dict(zip(numeric, nums))
        assert got["Keyed"] == "1" and got["Snoozed"] == "1" and got["Queued"] == "1", (path, got, row)
    # a monitor may not read the queue: no key, and the filter is off
    m = consoles(dsn_as(relay, "console_monitor"))
    body = m.get("/events?key=product:1").body
    assert "your role may not read the queue" in body and "key-waiting" not in body and "product:1" not in body


def test_cancel_an_event(relay, consoles):
    ev = relay.scalar("SELECT pgrelay.notify('orders', 'not yet', now() + interval '1 hour')")
    mon = consoles(dsn_as(relay, "console_monitor"))
    assert "/action/cancel" not in mon.get("/event?id=%d" % ev).body
    r = mon.post("/action/cancel", {"csrf": mon.csrf("/channels"), "event_id": ev})
    assert r.status == 403 and "permission denied" in r.body
    c = consoles(dsn_as(relay, "console_admin"))
    page = c.get("/event?id=%d" % ev).body
    assert 'action="/action/cancel"' in page and ">Cancel</button>" in page and "queued" in page
    assert "No key" in page and "snoozed 0 time(s)" in page
    assert c.post("/action/cancel", {"event_id": ev}).status == 403
    assert c.post("/action/cancel", {"csrf": c.csrf("/channels"), "event_id": ev}, origin=False).status == 403
    assert c.post("/action/cancel", {"csrf": c.csrf("/channels"), "event_id": "1; x"}).status == 400
    assert relay.scalar("SELECT count(*) FROM pgrelay.queue WHERE event_id = %s", (ev,)) == 1
    r = c.post("/action/cancel", {"csrf": c.csrf("/event?id=%d" % ev), "event_id": ev})
    assert r.status == 200 and "The event is cancelled" in r.body and "(cancelled)" in r.body, r.body
    assert relay.scalar("SELECT count(*) FROM pgrelay.queue WHERE event_id = %s", (ev,)) == 0
    assert relay.scalar("SELECT outcome FROM pgrelay.log WHERE event_id = %s", (ev,)) == "cancelled"
    page = c.get("/event?id=%d" % ev).body
    assert "/action/cancel" not in page and "cancelled by console_admin" in page
    assert 'Finished: last attempt <span class="tag cancelled">cancelled' in page, page
    # again, and a finished event: the database says finished, nothing changes
    for e in (ev, relay.failed[0]):
        r = c.post("/action/cancel", {"csrf": c.csrf("/channels"), "event_id": e})
        assert r.status == 200 and "(finished)" in r.body and "has run already" in r.body, r.body
    assert relay.scalar("SELECT count(*) FROM pgrelay.log WHERE event_id = %s", (ev,)) == 1
    # an email is cancelled through its notification: the database's error and its hint
    relay.sql("SELECT pgrelay_notifier.send('mail', \"to\" => ARRAY['ann@example.org'], subject => 's',"
              " body_text => 'b')")
    mail = relay.scalar("SELECT event_id FROM pgrelay.queue WHERE channel = 'mail'")
    r = c.post("/action/cancel", {"csrf": c.csrf("/channels"), "event_id": mail})
    assert r.status == 409 and "sends an email" in r.body and "Hint: SELECT pgrelay_notifier.cancel(" in r.body, r.body
    assert relay.scalar("SELECT count(*) FROM pgrelay.queue WHERE event_id = %s", (mail,)) == 1
    r = c.post("/action/cancel", {"csrf": c.csrf("/channels"), "event_id": 12345})
    assert r.status == 409 and "does not exist" in r.body
    assert "web_action action=cancel target=%d role=console_admin result=done" % ev in c.proc.log()


# ---- the HTTP side's own protection --------------------------------------------------------------

def test_actions_need_post_same_origin_and_the_csrf_token(relay, consoles):
    c = consoles(dsn_as(relay, "console_admin"))
    ev = relay.failed[0]
    token = c.csrf("/event?id=%d" % ev)
    fields = {"csrf": token, "event_id": ev}
    assert c.get("/action/retry?event_id=%d&csrf=%s" % (ev, token)).status == 405
    r = c.post("/action/retry", fields, origin=False)
    assert r.status == 403 and "Origin" in r.body
    for origin in ("http://evil.example", "null", c.origin() + ".evil.example", "https://" + c.address()):
        assert c.post("/action/retry", fields, origin=origin).status == 403, origin
    for bad in ("", "0" * 64, token[:-1], token.upper(), token + "0"):
        r = c.post("/action/retry", dict(fields, csrf=bad))
        assert r.status == 403 and "token" in r.body, bad
    r = c.post("/action/retry", {"event_id": ev})
    assert r.status == 403
    assert relay.scalar("SELECT count(*) FROM pgrelay.failed WHERE event_id = %s", (ev,)) == 1
    assert c.post("/action/retry", fields).status == 200
    assert "why=origin" in c.proc.log() and "why=csrf" in c.proc.log()


def test_without_a_password_file_nothing_but_the_sign_in_token_gets_in(relay, consoles):
    """A loopback console serves every user of the host: without --auth-file, no page and no action
    without the session cookie that the token of this start gives, and the token is in one log line."""
    c = consoles(dsn_as(relay, "console_admin"), "--log-level=debug")
    # what any local user can send: no page, no form, no action
    for path in ["/", "/channels", "/events", "/event?id=%d" % relay.failed[0], "/static/console.css", "/nope"]:
        r = c.get(path, cookie=False)
        assert r.status == 401 and "not signed in" in r.body and "csrf" not in r.body, (path, r.status, r.body)
    token = re.search(r"/sign-in\?token=([0-9a-f]{64})$", c.sign_in_url).group(1)
    assert c.sign_in_url == c.url + "sign-in?token=" + token
    for cookie in ("pg_relay_%d=%s" % (c.port(), "0" * 64), "pg_relay_%d=%s" % (c.port(), token),
                   "pg_relay=" + c.cookie.split("=", 1)[1], c.cookie + "0"):
        assert c.get("/", headers={"Cookie": cookie}, cookie=False).status == 401, cookie
    csrf = c.csrf("/channels")
    r = c.post("/action/pause", {"csrf": csrf}, cookie=False)
    assert r.status == 401 and not relay.scalar("SELECT paused FROM pgrelay.dispatch_state")
    # a wrong token signs nobody in
    for path in ("/sign-in", "/sign-in?token=", "/sign-in?token=" + "0" * 64, "/sign-in?token=" + token[:-1],
                 "/sign-in?token=" + token.upper(), "/sign-in?token=" + token + "0"):
        r = c.get(path, cookie=False)
        assert r.status == 401 and r.header("Set-Cookie") is None, path
    assert c.request("/sign-in?token=" + token, method="POST", data="", cookie=False).status == 405
    # the token's answer: the cookie, for this port, that no script reads and no other site sends
    r = c.get("/sign-in?token=" + token, cookie=False)
    assert r.status == 303 and r.header("Location") == "/"
    assert re.fullmatch(r"pg_relay_%d=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict" % c.port(),
                        r.header("Set-Cookie")), r.header("Set-Cookie")
    assert c.cookie.startswith("pg_relay_%d=" % c.port()) and token not in c.cookie
    # each sign-in opens a session of its own
    assert r.header("Set-Cookie").split(";")[0] != c.cookie
    r = c.post("/action/pause", {"csrf": csrf})
    assert r.status == 200 and relay.scalar("SELECT paused FROM pgrelay.dispatch_state")
    c.post("/action/resume", {"csrf": csrf})
    # the token is in its one line and nowhere else, at every log level
    log = c.proc.log()
    assert log.count(token) == 1 and re.search(r'info web_sign_in url="%s"\n' % re.escape(c.sign_in_url), log), log
    assert "web_signed_in address=127.0.0.1" in log and "why=token address=127.0.0.1" in log
    assert c.cookie.split("=", 1)[1] not in log
    # a new start, a new token: the old one and its cookie are no good
    again = consoles(dsn_as(relay, "console_admin"))
    assert again.sign_in_url != c.sign_in_url
    assert again.get("/sign-in?token=" + token, cookie=False).status == 401
    assert again.get("/", headers={"Cookie": c.cookie.replace(str(c.port()), str(again.port()))},
                     cookie=False).status == 401
    # the address is shown whatever the log level
    quiet = testlib.Processor(["web", "-d", dsn_as(relay, "console_admin"), "--listen=127.0.0.1:0",
                               "--log-level=error"])
    try:
        quiet.wait_log(r'web_sign_in url="http://127\.0\.0\.1:\d+/sign-in\?token=[0-9a-f]{64}"')
        assert "web_listening" not in quiet.log()
    finally:
        assert quiet.stop() == 0


def test_sign_out_ends_this_browsers_session(relay, consoles):
    """Sign-out is an action (a same-origin POST with the CSRF token): it closes the session of
    its cookie, which then signs nobody in, and clears the cookie; another browser's session stays."""
    c = consoles(dsn_as(relay, "console_admin"))
    other = c.get("/sign-in?token=" + c.sign_in_url.rsplit("=", 1)[1], cookie=False).header("Set-Cookie").split(";")[0]
    page = c.get("/").body
    assert re.search(r'<form class="action" method="post" action="/sign-out">.*id="sign-out">Sign out</button>',
                     page), page
    csrf = c.csrf("/")
    assert c.get("/sign-out").status == 405
    assert c.post("/sign-out", {"csrf": csrf}, origin=False).status == 403
    assert c.post("/sign-out", {"csrf": "0" * 64}).status == 403
    assert c.get("/").status == 200
    r = c.post("/sign-out", {"csrf": csrf})
    assert r.status == 200 and "session has ended: its cookie signs nobody in any more" in r.body, (r.status, r.body)
    assert r.header("Set-Cookie") == "pg_relay_%d=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" % c.port()
    assert "/static/" not in r.body                   # nothing the page needs is served any more
    for path in ("/", "/channels", "/static/console.css"):
        assert c.get(path).status == 401, path
    assert c.post("/sign-out", {"csrf": csrf}).status == 401
    assert c.get("/", headers={"Cookie": other}, cookie=False).status == 200
    assert "web_signed_out session=cookie" in c.proc.log()


def test_a_port_in_use_is_named_with_the_reason(relay):
    """A console that cannot listen says the address and port it tried (libmicrohttpd's own message
    says "port 0"), why, and what to change."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        for listen, named in (("127.0.0.1:%d" % port, ""), ("localhost:%d" % port, " (--listen=localhost:%d)" % port)):
            r = web("-d", dsn_as(relay, "console_admin"), "--listen=" + listen)
            assert r.returncode == 1, r.stderr
            assert r.stderr.splitlines()[-1] == (
                "pg_relay web: cannot listen on address 127.0.0.1 port %d%s: Address already in use (another program, "
                "or another console, listens there: stop it, or give --listen another port; port 0 takes any free "
                "one)" % (port, named)), r.stderr
            assert "port 0:" not in r.stderr
    finally:
        taken.close()


def test_the_sign_in_address_in_a_token_file(relay, consoles, tmp_path):
    path = tmp_path / "console.url"
    c = consoles(dsn_as(relay, "console_admin"), "--token-file=" + str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    assert re.fullmatch(re.escape(c.url) + r"sign-in\?token=[0-9a-f]{64}\n", text), text
    token = text.strip().rsplit("=", 1)[1]
    assert token not in c.proc.log() and "web_sign_in file=%s" % path in c.proc.log()
    assert c.get("/").status == 200 and c.get("/", cookie=False).status == 401
    # the next start writes its own into the same file
    c2 = consoles(dsn_as(relay, "console_admin"), "--token-file=" + str(path))
    assert path.read_text() != text and c2.get("/").status == 200
    # a file others may read, or of another user, is refused and left as it is
    path.chmod(0o644)
    r = web("-d", dsn_as(relay, "console_admin"), "--listen=127.0.0.1:0", "--token-file=" + str(path))
    assert r.returncode == 1 and "remove it or name another" in r.stderr and "token=" not in r.stderr, r.stderr
    assert path.read_text() == c2.sign_in_url + "\n"
    r = web("-d", dsn_as(relay, "console_admin"), "--listen=127.0.0.1:0", "--token-file=" + str(tmp_path / "no" / "f"))
    assert r.returncode == 1 and "cannot write the token file" in r.stderr, r.stderr


def test_slow_clients_cannot_keep_another_out(relay, consoles):
    """Slow clients (a request's header lines sent one a second, as a slowloris does, so that they
    are never idle) from two loopback addresses, from the address every local browser uses, and
    from more addresses than the console has connections: another client is served each time."""
    c = consoles(dsn_as(relay, "console_admin"))
    slow, stop = [], threading.Event()

    def open_slow(source, n):
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", c.port()), source_address=(source, 0), timeout=30)
            s.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\n" % c.address().encode())
            slow.append(s)

    def trickle():
        while not stop.wait(1):
            for s in list(slow):
                try:
                    s.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    pass

    t = threading.Thread(target=trickle)
    t.start()
    try:
        open_slow("127.0.0.2", 16)
        open_slow("127.0.0.3", 16)
        assert c.get("/").status == 200
        open_slow("127.0.0.1", 24)
        assert c.get("/").status == 200
        for i in range(4, 14):
            open_slow("127.0.0.%d" % i, 8)
        assert c.get("/").status == 200
        assert c.get("/", source="127.0.0.2").status == 200
    finally:
        stop.set()
        t.join()
        for s in slow:
            s.close()


def test_failed_sign_ins_stop_their_client_not_the_others(relay, consoles, tmp_path):
    auth = tmp_path / "users"
    auth.write_text("".join(web("--hash-password=" + n, "--iterations=1000", stdin="pw-%s\n" % n).stdout
                            for n in ("ann", "bob")))
    c = consoles(dsn_as(relay, "console_admin"), "--auth-file=" + str(auth))
    # 20 failures from one client, under any names: that client is not checked any more
    for i in range(20):
        assert c.get("/", user="mallory%d" % (i % 3), password="guess", source="127.0.0.2").status == 401
    r = c.get("/", user="ann", password="pw-ann", source="127.0.0.2")
    assert r.status == 429 and r.header("Retry-After") == "10"
    # every other client still signs in, and is still checked
    assert c.get("/", user="ann", password="pw-ann", source="127.0.0.1").status == 200
    assert c.get("/", user="bob", password="wrong", source="127.0.0.3").status == 401
    # a name guessed at from many clients: those that failed are stopped, its user signs in elsewhere
    for i in range(20):
        assert c.get("/", user="bob", password="guess", source="127.0.0.%d" % (10 + i)).status == 401
    assert c.get("/", user="bob", password="pw-bob", source="127.0.0.10").status == 429
    assert c.get("/", user="bob", password="pw-bob", source="127.0.0.40").status == 200
    assert c.get("/", user="ann", password="pw-ann", source="127.0.0.11").status == 200
    assert "web_auth_throttled path=/ address=127.0.0.2" in c.proc.log()
    assert not re.search(r"address=127\.0\.0\.1$", c.proc.log(), re.M)


def test_every_answer_carries_the_security_headers(relay, consoles):
    c = consoles(dsn_as(relay, "console_admin"))
    for path, cookie in [("/", True), ("/events", True), ("/static/console.css", True), ("/static/console.js", True),
                         ("/nope", True), ("/event?id=x", True), ("/", False), ("/sign-in?token=x", False)]:
        r = c.get(path, cookie=cookie)
        assert r.header("Content-Security-Policy") == CSP, path
        assert r.header("X-Content-Type-Options") == "nosniff" and r.header("X-Frame-Options") == "DENY", path
        assert r.header("Cache-Control") == "no-store" and r.header("Referrer-Policy") == "same-origin", path
    assert c.get("/nope").status == 404 and c.get("/event?id=x").status == 400
    assert c.get("/static/console.css").header("Content-Type") == "text/css; charset=utf-8"
    page = c.get("/").body
    assert "<script>" not in page and " style=" not in page and " on" not in re.sub(r"<[^>]*>", "", page)[:0]
    assert not re.search(r"<[^>]+\son[a-z]+=", page)                    # no inline event handlers
    assert c.request("/", method="DELETE").status == 405
    assert c.get("/", headers={"Host": "evil.example:%s" % c.address().split(":")[-1]}).status == 421
    assert c.get("/", headers={"Host": "localhost:%s" % c.address().split(":")[-1]}).status == 200
    r = c.post("/action/retry", "x=" + "a" * 20000)
    assert r.status == 413


def test_bad_filters_are_a_message_not_an_error(relay, consoles):
    c = consoles(dsn_as(relay, "console_admin"))
    for path, says in (("/events?from=yesterday-ish", "A filter is not valid"),
                       ("/events?outcome=lost", "The outcome must be one of the list"),
                       ("/events?event=12x", "an event id a number"),
                       ("/events?before=-1", "an event id a number"),
                       ("/failures?after=soon", "the filter"),
                       ("/failures?below=x", "below must be an event id"),
                       ("/events?channel=" + urllib.parse.quote("'; DROP TABLE pgrelay.log; --"), "No attempt matches")):
        r = c.get(path)
        assert r.status == 200 and says in r.body, (path, r.body[-2000:])
    assert relay.scalar("SELECT count(*) FROM pgrelay.log") == 7
    r = c.post("/action/retry", {"csrf": c.csrf("/channels"), "event_id": "1 OR 1=1"})
    assert r.status == 400


def test_keyset_pages_of_the_log(relay, consoles):
    relay.sql("SELECT pgrelay.notify('orders', 'more ' || g) FROM generate_series(1, 120) g")
    relay.sql("SELECT pgrelay.process_one(id) FROM pgrelay.queue WHERE channel = 'orders' ORDER BY id")
    c = consoles(dsn_as(relay, "console_monitor"))
    ids, path = [], "/events?channel=orders"
    while path:
        body = c.get(path).body
        ids += [int(x) for x in re.findall(r'<td><a href="/event\?id=(\d+)">', body)]
        m = re.search(r'id="older" href="([^"]+)"', body)
        path = m.group(1).replace("&amp;", "&") if m else None
    want = [e for (e,) in relay.sql("SELECT event_id FROM pgrelay.log WHERE channel = 'orders' ORDER BY id DESC")]
    assert ids == want and len(ids) == 127


def test_password_file(relay, consoles, tmp_path):
    r = web("--hash-password=ann", "--iterations=1000", stdin="correct horse\n")
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip()
    assert re.fullmatch(r"ann:pbkdf2-sha256:1000:[A-Za-z0-9+/=]{24}:[A-Za-z0-9+/=]{44}", line), line
    again = web("--hash-password=ann", "--iterations=1000", stdin="correct horse\n").stdout.strip()
    assert again != line                                        # a new salt each time
    assert web("--hash-password=a:b", stdin="x\n").returncode == 2
    assert web("--hash-password=ann", stdin="").returncode == 2
    auth = tmp_path / "users"
    auth.write_text("# the console's users\n%s\n%s\n" % (line, again.replace("ann:", "bob:")))
    c = consoles(dsn_as(relay, "console_admin"), "--auth-file=" + str(auth))
    r = c.get("/")
    assert r.status == 401 and r.header("WWW-Authenticate") == 'Basic realm="pg_relay", charset="UTF-8"'
    assert c.get("/", user="ann", password="wrong").status == 401
    assert c.get("/", user="carol", password="correct horse").status == 401
    assert c.get("/static/console.css").status == 401
    r = c.get("/", user="ann", password="correct horse")
    assert r.status == 200 and "signed in as ann" in r.body
    assert c.get("/", user="bob", password="correct horse").status == 200
    # a token is the user's: bob's is no good for ann
    token = c.csrf("/channels", user="bob", password="correct horse")
    ev = relay.failed[0]
    assert c.post("/action/retry", {"csrf": token, "event_id": ev}, user="ann", password="correct horse").status == 403
    assert c.post("/action/retry", {"csrf": token, "event_id": ev}, user="bob", password="correct horse").status == 200
    assert "user=bob role=console_admin result=done" in c.proc.log()
    # sign-out: a 401 makes the browser forget the password; the same form again (its user typed
    # the password into the browser's prompt) leads back in
    page = c.get("/", user="ann", password="correct horse").body
    nonce = re.search(r'name="n" value="([0-9a-f]{64})"', page).group(1)
    fields = {"csrf": c.csrf("/", user="ann", password="correct horse"), "n": nonce}
    r = c.post("/sign-out", fields, user="ann", password="correct horse")
    assert r.status == 401 and r.header("WWW-Authenticate") == 'Basic realm="pg_relay", charset="UTF-8"'
    assert "no longer sends your password" in r.body and r.header("Set-Cookie") is None
    r = c.post("/sign-out", fields, user="ann", password="correct horse")
    assert r.status == 303 and r.header("Location") == "/"
    assert c.post("/sign-out", fields).status == 401 and "web_signed_out session=password user=ann" in c.proc.log()
    for text, says in (("ann:pbkdf2-sha256:1000:abc\n", "users:1: expected NAME:pbkdf2-sha256"),
                       ("ann:md5:1000:x:y\n", "unknown hash scheme"),
                       (line + "\n" + line + "\n", "user ann is in the file twice"),
                       ("# nobody\n", "has no user"),
                       (line.replace(":1000:", ":10:") + "\n", "iteration count")):
        auth.write_text(text)
        r = web("-d", dsn_as(relay, "console_admin"), "--listen=127.0.0.1:0", "--auth-file=" + str(auth))
        assert r.returncode == 1 and says in r.stderr, (text, r.stderr)


def test_tls_and_listening_beyond_loopback(relay, consoles, certs, tmp_path):
    line = web("--hash-password=ops", "--iterations=1000", stdin="s3cret\n").stdout
    auth = tmp_path / "users"
    auth.write_text(line)
    tls = ["--tls-cert=%s/server.pem" % certs, "--tls-key=%s/server.key" % certs]
    c = consoles(dsn_as(relay, "console_admin"), *tls, "--auth-file=" + str(auth), listen="0.0.0.0:0",
                 ca=str(certs / "ca.pem"))
    port = c.address().split(":")[-1]
    assert c.url.startswith("https://0.0.0.0:")
    base = "https://localhost:%s/" % port
    r = c.get("/", base=base, user="ops", password="s3cret")
    assert r.status == 200 and r.header("Strict-Transport-Security") == "max-age=31536000"
    assert c.get("/", base=base).status == 401
    # plain HTTP to the TLS port gets no page
    with pytest.raises(Exception):
        webconsole.Console.request(c, "/", base="http://127.0.0.1:%s/" % port, user="ops", password="s3cret")
    # an action needs the https origin
    token = c.csrf("/channels", base=base, user="ops", password="s3cret")
    ev = relay.failed[0]
    r = c.post("/action/retry", {"csrf": token, "event_id": ev}, origin="http://localhost:" + port, base=base,
               user="ops", password="s3cret")
    assert r.status == 403
    r = c.post("/action/retry", {"csrf": token, "event_id": ev}, origin="https://localhost:" + port, base=base,
               user="ops", password="s3cret")
    assert r.status == 200, r.body
    # TLS on loopback without a password file is allowed
    c2 = consoles(dsn_as(relay, "console_monitor"), *tls, ca=str(certs / "ca.pem"))
    assert c2.url.startswith("https://127.0.0.1:")
    assert c2.get("/", base="https://localhost:%s/" % c2.address().split(":")[-1]).status == 200
