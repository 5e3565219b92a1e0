"""Secrets and producers' input, end to end with the Processor: a secret given as env:, file: or a
literal never shows in pgrelay.log, the notifier's tables and status output, debug traces, the
Processor's log (at trace level), and env:/file: secrets not in the server log either, with every
statement and its parameters logged; a producer's payloads reach handlers as data, never as SQL,
and an event a producer forges for someone's email delivers nothing."""
import base64
import json
import os
import re

import psycopg
import pytest

import testlib
from testlib import HookServer as H

TLS = ("--starttls", "--cert", "{certs}/server.pem", "--key", "{certs}/server.key", "--auth-require-tls")
# Server-side logging that shows everything a statement carries, errors included.
LOG_ALL = ("log_statement = all", "log_parameter_max_length = -1", "log_parameter_max_length_on_error = -1",
           "log_min_error_statement = error", "log_min_messages = info")


@pytest.fixture
def logged_cluster():
    c = testlib.Cluster(os.path.join(testlib.work_dir("secrets-"), "c"), conf=LOG_ALL)
    c.start()
    yield c
    c.stop("immediate")


def forms(secret, user="relay"):
    """The secret and how SMTP AUTH carries it: PLAIN (base64 of NUL user NUL secret) and LOGIN
    (base64 of the secret alone)."""
    return [secret, base64.b64encode(b"\0" + user.encode() + b"\0" + secret.encode()).decode(),
            base64.b64encode(secret.encode()).decode()]


def test_secrets_never_reach_logs_tables_status_or_traces(logged_cluster, smtpd, certs, processors, tmp_path):
    secrets = {"env": "envpw-7Hq2-Zx9", "file": "filepw-4Kt8-Wm3", "literal": "litpw-9Rb5-Yc1",
               "bad": "badpw-2Nd6-Vp4"}
    servers = {k: smtpd(*TLS, "--auth-user", "relay", "--auth-password", secrets[k])
               for k in ("env", "file", "literal")}
    servers["bad"] = smtpd(*TLS, "--auth-user", "relay", "--auth-password", "the-right-one")
    (tmp_path / "profile" / "p_file").mkdir(parents=True)    # the profile's own secrets directory
    (tmp_path / "profile" / "p_file" / "proof_pw").write_text(secrets["file"] + "\n")
    given = {"env": "env:PROOF_PW_ENV", "file": "file:proof_pw", "literal": secrets["literal"],
             "bad": "env:PROOF_PW_BAD"}
    with logged_cluster.connect() as c:
        c.execute("CREATE EXTENSION pg_relay; CREATE EXTENSION pg_relay_notifier")
        ids = {}
        for k, server in servers.items():
            c.execute("SELECT pgrelay_notifier.create_profile(%s, host => '127.0.0.1', port => %s,"
                      " security => 'starttls', ca_file => %s, username => 'relay', password => %s,"
                      " from_address => 'noreply@example.com', debug => true)",
                      ("p_" + k, server.port, str(certs / "ca.pem"), given[k]))
            c.execute("SELECT pgrelay_notifier.create_channel(%s, %s, max_attempts => 1)", ("m_" + k, "p_" + k))
            ids[k] = c.execute("SELECT pgrelay_notifier.send(%s, ARRAY['ann@example.org'], 'Hello', 'Body')",
                               ("m_" + k,)).fetchone()[0]
    p = processors("-d", logged_cluster.dsn(), "--once", "--log-level=trace", "--secrets-dir", str(tmp_path),
                   "--secret-env=PROOF_PW_ENV=profile/p_env, PROOF_PW_BAD=profile/p_bad",
                   env={"PROOF_PW_ENV": secrets["env"], "PROOF_PW_BAD": secrets["bad"]})
    assert p.wait_exit() == 0

    with logged_cluster.connect() as c:
        status = {k: c.execute("SELECT status FROM pgrelay_notifier.get_status(%s)", (i,)).fetchone()[0]
                  for k, i in ids.items()}
        assert status == {"env": "sent", "file": "sent", "literal": "sent", "bad": "failed"}
        assert all(len(s.messages()) == 1 for k, s in servers.items() if k != "bad")
        # every place the outcome of an attempt is kept or shown
        shown = {
            "pgrelay.log": c.execute("SELECT string_agg(l::text, E'\\n') FROM pgrelay.log l").fetchone()[0],
            "pgrelay.failed": c.execute("SELECT string_agg(f::text, E'\\n') FROM pgrelay.failed f").fetchone()[0],
            "get_status": "\n".join(str(c.execute("SELECT * FROM pgrelay_notifier.get_status(%s)", (i,)).fetchone())
                                    for i in ids.values()),
            "views": c.execute("""SELECT concat_ws(E'\\n',
                                      (SELECT string_agg(v::text, ' ') FROM pgrelay_notifier.recent_failures v),
                                      (SELECT string_agg(v::text, ' ') FROM pgrelay_notifier.profile_summary v),
                                      (SELECT string_agg(v::text, ' ') FROM pgrelay_notifier.profile_credentials v),
                                      (SELECT string_agg(v::text, ' ') FROM pgrelay.queue_depth v))""").fetchone()[0],
        }
        for table in ("profiles", "channels", "notifications", "recipients", "attachments", "attempts",
                      "attempt_traces"):
            shown["pgrelay_notifier." + table] = c.execute(
                "SELECT string_agg(t::text, E'\\n') FROM pgrelay_notifier.%s t" % table).fetchone()[0]
        traces = c.execute("SELECT string_agg(trace, E'\\n') FROM pgrelay_notifier.attempt_traces").fetchone()[0]
        assert traces.count("AUTH") >= 4 and "[redacted]" in traces      # the traces exist, and were redacted
        assert "535" in shown["pgrelay.log"]                              # the refused login is recorded
    shown["processor log"] = p.log()
    server_log = logged_cluster.server_log()
    # statements and parameters logged ("Parameters: $1 = ..." since PostgreSQL 17)
    assert "set_status" in server_log and "parameters: $1" in server_log.lower()

    for k, secret in secrets.items():
        for form in forms(secret):
            for where, text in shown.items():
                assert form not in (text or ""), "%s secret (%r) found in %s" % (k, form, where)
            if k != "literal":
                assert form not in server_log, "%s secret (%r) found in the server log" % (k, form)
    # A literal secret is in the server log only where the statement that set it is: the documented
    # cost of literals (docs/notifier.md, Secrets). The Processor never sends it back.
    # (a "parameters:" detail line belongs to the statement its server process logged before it).
    statement = {}
    for line in server_log.splitlines():
        m = re.match(r"\S+ \S+ \S+ \[(\d+)\] \S* ?(\w+):  (.*)", line)
        if m and m.group(2) == "LOG":
            statement[m.group(1)] = m.group(3)
        if secrets["literal"] in line:
            where = statement.get(m.group(1), "") if m and "parameters:" in m.group(3).lower() else line
            assert "create_profile" in where, line


def test_an_admin_cannot_have_a_secret_sent_that_its_channel_or_profile_was_not_given(db, hookd, smtpd, certs,
                                                                                      processors, tmp_path):
    """An admin points webhooks and an email profile at servers of its own and names in them the
    Processor's own database password (env:PGPASSWORD), the env: variable and the file: secret the
    operator gave to another profile. Nothing reaches those servers: each attempt fails and says
    why. The secrets still reach what they were given to."""
    given = {"db": "dbpw-3Jm8-Qa2", "env": "envpw-6Lp1-Tz7", "file": "filepw-8Wc4-Bn5", "hook": "hookpw-5Rd9-Kx3"}
    (tmp_path / "profile" / "default").mkdir(parents=True)
    (tmp_path / "profile" / "default" / "smtp_password").write_text(given["file"] + "\n")
    h = hookd()
    good = smtpd(*TLS, "--auth-user", "relay", "--auth-password", given["file"])
    evil = smtpd(*TLS)
    admin = "proof_admin_%d" % os.getpid()
    db.sql("CREATE EXTENSION pg_relay_notifier")
    db.sql('CREATE ROLE "%s" IN ROLE pgrelay_admin, pgrelay_producer' % admin)    # any producer can queue
    try:
        db.sql('SET ROLE "%s"' % admin)
        for channel, headers in [("steal_db", {"X-Db": "env:PGPASSWORD"}), ("steal_env", {"X-Env": "env:SMTP_PASSWORD"}),
                                 ("steal_file", {"X-File": "file:smtp_password"}), ("ok_hook", {"X-Ok": "env:HOOK_OK"})]:
            db.sql("SELECT pgrelay.register_webhook(%s, %s, allow_http => true, headers => %s, signing_secret => %s,"
                   " max_attempts => 1)", (channel, h.http_base_url + "/" + channel, json.dumps(headers), H.SECRET))
            db.sql("SELECT pgrelay.notify(%s, '{}')", (channel,))
        for name, server, password in [("default", good, "file:smtp_password"), ("evil_env", evil, "env:SMTP_PASSWORD"),
                                       ("evil_file", evil, "file:smtp_password")]:
            db.sql("SELECT pgrelay_notifier.create_profile(%s, host => '127.0.0.1', port => %s, security => %s,"
                   " ca_file => %s, username => 'relay', password => %s, from_address => 'noreply@example.com')",
                   (name, server.port, "starttls", str(certs / "ca.pem"), password))
            db.sql("SELECT pgrelay_notifier.create_channel(%s, %s, max_attempts => 1)", ("m_" + name, name))
            db.sql("SELECT pgrelay_notifier.send(%s, ARRAY['ann@example.org'], 'Hello', 'Body')", ("m_" + name,))
        db.sql("RESET ROLE")
        p = processors("-d", db.dsn, "--once", "--secrets-dir", str(tmp_path),
                       "--secret-env=SMTP_PASSWORD=profile/default, HOOK_OK=webhook/ok_hook",
                       env={"PGPASSWORD": given["db"], "SMTP_PASSWORD": given["env"], "HOOK_OK": given["hook"]})
        assert p.wait_exit() == 0
        errors = dict(db.sql("SELECT channel, COALESCE(error, outcome) FROM pgrelay.log"))
        assert errors["steal_db"] == ("header X-Db: secret env:PGPASSWORD: the Processor's own connection settings"
                                      " are never secrets of webhook/steal_db")
        assert errors["steal_env"].startswith("header X-Env: secret env:SMTP_PASSWORD is not bound to webhook/steal_env")
        assert errors["steal_file"].startswith("header X-File: secret file:smtp_password of webhook/steal_file: cannot"
                                               " open %s/webhook/steal_file/smtp_password" % tmp_path)
        assert errors["m_evil_env"].startswith(
            "profile.smtp.password: secret env:SMTP_PASSWORD is not bound to profile/evil_env")
        assert errors["m_evil_file"].startswith(
            "profile.smtp.password: secret file:smtp_password of profile/evil_file: cannot open")
        assert errors["ok_hook"] == "ok" and errors["m_default"] == "ok"
        # only the webhook given its secret was sent, with it; the admin's mail server saw nobody
        [r] = h.requests()
        assert r["path"] == "/ok_hook" and H.header(r, "X-Ok") == given["hook"]
        assert evil.connections() == 0 and good.messages()[0][0]["login"] == "relay"
        for secret in (given["db"], given["env"], given["file"]):
            assert secret not in json.dumps(r["headers"])
        for secret in given.values():
            assert secret not in p.log() and secret not in "\n".join(errors.values())
    finally:
        db.sql("RESET ROLE")
        db.sql('DROP ROLE IF EXISTS "%s"' % admin)


SQL_PAYLOADS = [
    "'); DROP TABLE public.canary; --",
    "x'; INSERT INTO public.pwned VALUES ('quote'); --",
    "$1); INSERT INTO public.pwned VALUES ('dollar'); --",
    "$$; INSERT INTO public.pwned VALUES ('dollar quote'); $$",
    "%s %I %L %%",
    "\\'; SELECT pg_sleep(30); --",
    "E'\\x27'; COMMIT; INSERT INTO public.pwned VALUES ('commit');",
    "\"; RESET ALL; SET ROLE postgres; --",
    "a\r\nb\tc\x0bd\x1fe",
    "\u202egnp.exe \u200b\u2028 ünï ✓ 𝄞",
    "",
    "x" * 1048576,
]
# payloads of the form of a notification id, which notify() queues on a mail channel, and others,
# which it refuses
FORGED = ["1", "0", "{mine}", "0{mine}"]
MALFORMED = ["-1", "99999999999999999999", "1; DROP TABLE public.canary", "' OR 1=1 --", "{mine} ", " {mine}",
             "{mine}.0"]


def test_a_producer_cannot_make_the_processor_run_sql_or_deliver_mail(db, smtpd, processors):
    """Payloads made of SQL, quotes, format specifiers and control characters reach the handler
    byte for byte and run nothing; events a producer queues itself on a mail channel, with ids it
    guessed or learned, deliver nothing and touch no notification, and those that are no notification
    id are refused when they are queued."""
    producer = "proof_producer_%d" % os.getpid()
    s = smtpd()
    db.sql("CREATE EXTENSION pg_relay_notifier")
    db.sql("""CREATE TABLE public.canary (x int); INSERT INTO public.canary VALUES (1);
              CREATE TABLE public.pwned (how text); GRANT INSERT ON public.pwned TO PUBLIC;
              CREATE TABLE public.received (n serial, payload text);
              CREATE FUNCTION public.keep(p text) RETURNS void SECURITY DEFINER SET search_path = pg_catalog
              LANGUAGE sql AS 'INSERT INTO public.received (payload) VALUES (p)';
              GRANT EXECUTE ON FUNCTION public.keep(text) TO pgrelay_processor""")
    db.sql("SELECT pgrelay.register('jobs', 'sql', handler => 'public.keep(text)')")
    db.sql("SELECT pgrelay_notifier.create_profile('p', host => '127.0.0.1', port => %s, security => 'none',"
           " from_address => 'noreply@example.com')", (s.port,))
    db.sql("SELECT pgrelay_notifier.create_channel('mail', 'p', max_attempts => 1)")
    db.sql('CREATE ROLE "%s" LOGIN IN ROLE pgrelay_producer' % producer)
    try:
        with psycopg.connect(db.dsn.replace("user=postgres", "user=" + producer), autocommit=True) as c:
            # a message of the producer's own, held until tomorrow: forged events must not release it
            mine = c.execute("SELECT pgrelay_notifier.send('mail', ARRAY['ann@example.org'], 'Later', 'Body',"
                             " run_at => now() + interval '1 day')").fetchone()[0]
            for payload in SQL_PAYLOADS:
                c.execute("SELECT pgrelay.notify('jobs', %s)", (payload,))
            for forged in FORGED:
                c.execute("SELECT pgrelay.notify('mail', %s)", (forged.format(mine=mine),))
            for bad in MALFORMED:
                with pytest.raises(psycopg.errors.InvalidParameterValue, match="must be a notification id"):
                    c.execute("SELECT pgrelay.notify('mail', %s)", (bad.format(mine=mine),))
        p = processors("-d", db.dsn, "--once")
        assert p.wait_exit() == 0
        assert sorted(r[0] for r in db.sql("SELECT payload FROM public.received")) == sorted(SQL_PAYLOADS)
        assert db.sql("SELECT * FROM public.canary") == [(1,)]
        assert db.sql("SELECT * FROM public.pwned") == []
        rows = db.sql("SELECT channel, outcome, error FROM pgrelay.log ORDER BY id")
        assert [(ch, o) for ch, o, _ in rows if ch == "jobs"] == [("jobs", "ok")] * len(SQL_PAYLOADS)
        forged = [(o, e) for ch, o, e in rows if ch == "mail"]
        assert len(forged) == len(FORGED)
        assert all(o == "failed" and "the notification does not exist" in e for o, e in forged), forged
        assert s.connections() == 0 and s.messages() == []
        assert db.sql("SELECT status, attempts FROM pgrelay_notifier.notifications") == [("queued", 0)]
        assert db.scalar("SELECT count(*) FROM pgrelay.queue WHERE channel = 'mail'") == 1
    finally:
        db.sql('DROP ROLE IF EXISTS "%s"' % producer)
