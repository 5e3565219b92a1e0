"""Who may do what with the extensions' objects: the SECURITY DEFINER functions pin their
search_path, and look-alike operators, functions, types and tables that other roles created first
in `public` and in `pg_temp` never run; an extension schema that somebody else created first is
refused."""
import os

import psycopg
import pytest

import testlib


# ---- search_path and look-alikes ---------------------------------------------------------------


def test_security_definer_functions_pin_search_path(cluster):
    """Every SECURITY DEFINER function of both schemas, and every function any role may execute,
    runs with search_path = pg_catalog, pg_temp (process_one() pins it in its body, because it
    must first read the caller's path to give it back)."""
    d = testlib.Database(cluster, extensions=("pg_relay", "pg_relay_notifier"))
    try:
        rows = d.sql("""
            SELECT p.oid::regprocedure::text, p.prosecdef, p.proconfig
            FROM pg_proc p
            WHERE p.pronamespace IN ('pgrelay'::regnamespace, 'pgrelay_notifier'::regnamespace)
              AND (p.prosecdef OR EXISTS (SELECT 1 FROM aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a
                                           WHERE a.grantee <> p.proowner AND a.privilege_type = 'EXECUTE'))
            ORDER BY 1""")
        body = d.scalar("SELECT prosrc FROM pg_proc WHERE oid = 'pgrelay.process_one(bigint)'::regprocedure")
    finally:
        d.close()
    assert len(rows) > 40
    unpinned = [name for name, _, config in rows
                if "search_path=pg_catalog, pg_temp" not in (config or []) and name != "pgrelay.process_one(bigint)"]
    assert unpinned == []
    assert "pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true)" in body


# Look-alikes of what the extensions' functions use, made by an ordinary role in public before
# the extensions are installed: same operators and functions for the same argument types. Each
# records that it ran, and then does what the original does, so that nothing else changes.
TRAP_OPERATORS = [
    ("=", "text", "text", "texteq"), ("<>", "text", "text", "textne"), ("~", "text", "text", "textregexeq"),
    ("!~", "text", "text", "textregexne"), ("||", "text", "text", "textcat"), ("=", "bigint", "bigint", "int8eq"),
    ("<", "bigint", "bigint", "int8lt"), ("=", "integer", "integer", "int4eq"), (">", "integer", "integer", "int4gt"),
    ("<", "integer", "integer", "int4lt"), ("=", "oid", "regprocedure", None), ("=", "name", "name", "nameeq"),
    ("->", "jsonb", "text", "jsonb_object_field"), ("->>", "jsonb", "text", "jsonb_object_field_text"),
    ("?", "jsonb", "text", "jsonb_exists"), ("=", "boolean", "boolean", "booleq"),
    ("<=", "timestamptz", "timestamptz", "timestamptz_le"), (">", "interval", "interval", "interval_gt"),
]
TRAP_FUNCTIONS = [
    ("lower", "text", "text"), ("upper", "text", "text"), ("length", "text", "integer"),
    ("octet_length", "text", "integer"), ("btrim", "text", "text"), ("reverse", "text", "text"),
    ("jsonb_typeof", "jsonb", "text"), ("jsonb_array_length", "jsonb", "integer"), ("hashtext", "text", "integer"),
    ("isfinite", "timestamptz", "boolean"), ("cardinality", "text[]", "integer"), ("to_regprocedure", "text", "regprocedure"),
]
TEMP_TABLES = ["channels", "queue", "log", "failed_events", "control", "action_types", "profiles",
               "profile_secrets", "notifications", "recipients", "attachments", "attempts", "text", "record"]


def trap_sql(schema):
    """Look-alike operators and functions in schema; each inserts into public.proof_trap."""
    out = []
    for i, (op, left, right, proc) in enumerate(TRAP_OPERATORS):
        call = "%s(a, b)" % proc if proc else "a OPERATOR(pg_catalog.=) b::oid"
        out.append("""CREATE FUNCTION %(s)s.proof_op%(i)d(a %(l)s, b %(r)s) RETURNS %(ret)s LANGUAGE plpgsql AS $f$
                      BEGIN INSERT INTO public.proof_trap VALUES ('%(s)s %(op)s', current_user);
                      RETURN pg_catalog.%(call)s; END $f$;
                      CREATE OPERATOR %(s)s.%(op)s (LEFTARG = %(l)s, RIGHTARG = %(r)s, FUNCTION = %(s)s.proof_op%(i)d)"""
                   % {"s": schema, "i": i, "l": left, "r": right, "op": op, "call": call,
                      "ret": {"||": "text", "->": "jsonb", "->>": "text"}.get(op, "boolean")})
    for name, arg, ret in TRAP_FUNCTIONS:
        out.append("""CREATE FUNCTION %(s)s.%(n)s(a %(a)s) RETURNS %(r)s LANGUAGE plpgsql AS $f$
                      BEGIN INSERT INTO public.proof_trap VALUES ('%(s)s %(n)s()', current_user);
                      RETURN pg_catalog.%(n)s(a); END $f$""" % {"s": schema, "n": name, "a": arg, "r": ret})
    out.append("""CREATE FUNCTION %s.now() RETURNS timestamptz LANGUAGE plpgsql AS $f$
                  BEGIN INSERT INTO public.proof_trap VALUES ('now()', current_user); RETURN pg_catalog.now(); END $f$"""
               % schema)
    return out


# Look-alike types: domains over the built-in types whose CHECK records that a value passed through
# them. A PL/pgSQL variable declared with an unqualified type name is resolved on the caller's
# search_path when the function is first compiled in a session.
TRAP_TYPES = ["text", "bigint", "integer", "boolean", "jsonb", "interval", "timestamptz", "record"]


def trap_types_sql():
    out = ["""CREATE FUNCTION public.proof_check(v pg_catalog.text) RETURNS boolean LANGUAGE plpgsql AS $f$
              BEGIN INSERT INTO public.proof_trap VALUES ('domain check', current_user); RETURN true; END $f$"""]
    for t in TRAP_TYPES:
        base = {"record": "int4", "bigint": "int8", "integer": "int4", "boolean": "bool"}.get(t, t)
        out.append("CREATE DOMAIN public.%s AS pg_catalog.%s CHECK (public.proof_check(VALUE::pg_catalog.text))"
                   % (t, base))
    return out


def test_look_alikes_in_public_and_pg_temp_never_run(cluster, processors, smtpd):
    """An ordinary role that may create objects in public (as on databases made before
    PostgreSQL 15) plants look-alike operators and functions there before the extensions are
    installed; every role then works with public first on its search_path and its own look-alikes
    (tables, operators, functions) in pg_temp. A whole round - channels, profiles, events, an
    email, retries, the Processor's statements - runs, and not one look-alike ever fires."""
    d = testlib.Database(cluster, extensions=())
    mallory = "proof_mallory_%d" % os.getpid()
    relay = "proof_relay_%d" % os.getpid()
    try:
        d.sql("CREATE TABLE public.proof_trap (what text, who name); GRANT INSERT, SELECT ON public.proof_trap TO PUBLIC")
        d.sql('CREATE ROLE "%s" LOGIN; GRANT CREATE ON SCHEMA public TO PUBLIC' % mallory)
        with psycopg.connect(d.dsn.replace("user=postgres", "user=" + mallory), autocommit=True) as m:
            for stmt in trap_sql("public") + trap_types_sql():
                m.execute(stmt)
        d.sql("CREATE EXTENSION pg_relay; CREATE EXTENSION pg_relay_notifier")
        d.sql('CREATE ROLE "%s" LOGIN IN ROLE pgrelay_processor' % relay)
        for role in ("pgrelay_producer", "pgrelay_admin", "pgrelay_monitor"):
            d.sql('GRANT %s TO "%s"' % (role, mallory))

        def session(user):
            c = psycopg.connect(d.dsn.replace("user=postgres", "user=" + user), autocommit=True)
            c.execute("SET search_path = public, pg_temp, pg_catalog")
            for stmt in trap_sql("pg_temp"):
                c.execute(stmt)
            # made last: a temporary table "text" shadows the type in this session's own statements
            for t in TEMP_TABLES:
                c.execute('CREATE TEMP TABLE "%s" (x int)' % t)
            return c

        d.sql("""CREATE TABLE public.proof_done (p text); GRANT INSERT ON public.proof_done TO PUBLIC;
                 CREATE FUNCTION public.proof_h(p text) RETURNS void SECURITY DEFINER
                 SET search_path = pg_catalog LANGUAGE sql AS 'INSERT INTO public.proof_done VALUES (p)';
                 GRANT EXECUTE ON FUNCTION public.proof_h(text) TO PUBLIC""")
        s = smtpd()
        m = session(mallory)       # producer, admin and monitor at once
        m.execute("SELECT pgrelay.register('proof_jobs', 'sql', handler => 'public.proof_h(pg_catalog.text)',"
                  " backoff_base => '10 ms', backoff_max => '20 ms')")
        m.execute("SELECT pgrelay_notifier.create_profile('proof', host => '127.0.0.1', port => %s,"
                  " security => 'none', from_address => 'noreply@example.com', from_name => 'Proof')", (s.port,))
        m.execute("SELECT pgrelay_notifier.create_channel('proof_mail', 'proof')")
        m.execute("SELECT pgrelay_notifier.alter_profile('proof', debug => true, reset => '{from_name}')")
        for n in range(5):
            m.execute("SELECT pgrelay.notify('proof_jobs', %s)", ("p%d" % n,))
        ids = [m.execute("SELECT pgrelay_notifier.send('proof_mail', ARRAY['Ann <ann@example.org>'], 'Hi', 'Body',"
                         " headers => '{\"X-Proof\": \"1\"}')").fetchone()[0] for _ in range(3)]
        m.execute("SELECT pgrelay_notifier.get_status(%s)", (ids[0],))
        m.execute("SELECT pgrelay_notifier.cancel(%s)", (ids[2],))
        m.execute("SELECT * FROM pgrelay.queue_depth, pgrelay.channel_stats, pgrelay.failed")
        m.execute("SELECT * FROM pgrelay_notifier.recent_failures, pgrelay_notifier.profile_summary,"
                  " pgrelay_notifier.profile_credentials")
        # the Processor itself, with its own look-alikes planted in its role's session defaults
        d.sql('ALTER ROLE "%s" SET search_path = public, pg_temp, pg_catalog' % relay)
        p = processors("-d", d.dsn.replace("user=postgres", "user=" + relay), "--once")
        assert p.wait_exit() == 0
        assert d.scalar("SELECT count(*) FROM public.proof_done") == 5
        assert [d.scalar("SELECT status FROM pgrelay_notifier.notifications WHERE notification_id = %s", (i,))
                for i in ids] == ["sent", "sent", "cancelled"]
        # the Processor's role by hand: claim, fetch, log, status, done - and a retry
        r = session(relay)
        m.execute("SELECT pgrelay.notify('proof_jobs', 'by hand')")
        r.execute("SELECT * FROM pgrelay.queue_probe(0)")
        [(qid,)] = r.execute("SELECT id FROM pgrelay.queue_pending_ids(10)").fetchall()
        r.execute("SELECT * FROM pgrelay.process_one(%s)", (qid,))
        nid = m.execute("SELECT pgrelay_notifier.send('proof_mail', ARRAY['bob@example.org'], 'Hi', 'Body')").fetchone()[0]
        [(qid,)] = r.execute("SELECT id FROM pgrelay.queue_pending_ids(10)").fetchall()
        with r.transaction():
            [(payload, event)] = r.execute("SELECT payload, event_id FROM pgrelay._queue_claim(%s)", (qid,)).fetchall()
            assert r.execute("SELECT pgrelay_notifier.fetch(%s, %s)", (payload, event)).fetchone()[0]["status"] == "queued"
            r.execute("SELECT * FROM pgrelay._write_log(%s, 'transient', 'greylisted')", (qid,))
            r.execute("SELECT pgrelay_notifier.set_status(%s, '{\"outcome\": \"retrying\", \"trace\": \"S: 451\"}')",
                      (payload,))
            r.execute("SELECT pgrelay._queue_mark_done(%s)", (qid,))
        # the admin's maintenance
        m.execute("SELECT pgrelay.pause(), pgrelay.resume(), pgrelay.request_reload()")
        m.execute("SELECT pgrelay.retry_failed('proof_jobs'), pgrelay.discard_failed('proof_jobs')")
        m.execute("SELECT pgrelay.purge_log('1 day'), pgrelay_notifier.purge('1 day')")
        m.execute("SELECT pgrelay_notifier.address_error('a@b.example'), pgrelay_notifier.parse_mailbox('A <a@b.example>')")
        assert d.scalar("SELECT status FROM pgrelay_notifier.notifications WHERE notification_id = %s", (nid,)) == "retrying"
        m.close()
        r.close()
        assert d.sql("SELECT what, who FROM public.proof_trap") == []
    finally:
        d.close()
        with cluster.connect() as c:
            for role in (mallory, relay):
                c.execute('DROP ROLE IF EXISTS "%s"' % role)


@pytest.mark.parametrize("ext, schema", [("pg_relay", "pgrelay"), ("pg_relay_notifier", "pgrelay_notifier")])
def test_a_schema_somebody_else_created_first_is_refused(cluster, ext, schema):
    """The owner of a database may create schemas in it. Had it made the extension's schema
    before CREATE EXTENSION, it would own the schema of SECURITY DEFINER functions owned by a
    superuser (it could plant look-alikes there, or drop the schema with the whole extension):
    CREATE EXTENSION refuses such a schema and creates nothing. A superuser's schema is fine."""
    d = testlib.Database(cluster, extensions=())
    owner = "proof_dbowner_%d" % os.getpid()
    try:
        d.sql('CREATE ROLE "%s" LOGIN; ALTER DATABASE "%s" OWNER TO "%s"' % (owner, d.name, owner))
        if ext == "pg_relay_notifier":
            d.sql("CREATE EXTENSION pg_relay")
        with psycopg.connect(d.dsn.replace("user=postgres", "user=" + owner), autocommit=True) as o:
            o.execute("CREATE SCHEMA %s" % schema)
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
            d.sql("CREATE EXTENSION %s" % ext)
        assert "schema %s belongs to role %s, which is not a superuser" % (schema, owner) in str(e.value)
        assert e.value.diag.message_hint == "Drop the schema (DROP SCHEMA %s), then run CREATE EXTENSION %s again." % (
            schema, ext)
        assert d.scalar("SELECT count(*) FROM pg_extension WHERE extname = %s", (ext,)) == 0
        assert d.scalar("SELECT count(*) FROM pg_proc WHERE pronamespace = %s::regnamespace", (schema,)) == 0
        # a schema a superuser made is used as it is
        d.sql("DROP SCHEMA %s; CREATE SCHEMA %s" % (schema, schema))
        d.sql("CREATE EXTENSION %s" % ext)
        assert d.scalar("SELECT extversion FROM pg_extension WHERE extname = %s", (ext,)) is not None
    finally:
        d.close()
        with cluster.connect() as c:
            c.execute('DROP ROLE IF EXISTS "%s"' % owner)
