"""The install over a plain connection (`pg_relay install`), as on a managed service: no superuser
and no server files. The installing role has what RDS's rds_superuser, Cloud SQL's
cloudsqlsuperuser or Azure's azure_pg_admin have (LOGIN, CREATEDB, CREATEROLE, pg_monitor, owner of
the database); nothing of ours is created with CREATE EXTENSION. Each test gets a cluster of its
own: the roles are cluster-wide, and whether they exist is part of what is tested."""
import json
import os
import re
import subprocess

import psycopg
import pytest

import testlib
from testlib import HookServer as H

RELEASED = os.path.join(testlib.ROOT, "extension", "pg_relay", "released")
V = testlib.EXT_VERSION
MANAGER = "mgr"


@pytest.fixture
def managed(tmp_path):
    """A fresh cluster with the role a managed service gives its customer (mgr) and a database mgr
    owns: only the service, here the bootstrap superuser, made them."""
    c = testlib.Cluster(os.path.join(testlib.work_dir("managed-"), "c"))
    c.start()
    with c.connect() as s:
        s.execute("CREATE ROLE %s LOGIN CREATEDB CREATEROLE IN ROLE pg_monitor" % MANAGER)
        s.execute("CREATE DATABASE app OWNER %s" % MANAGER)
    yield c
    c.stop("immediate")


def as_role(cluster, role, dbname="app"):
    return cluster.dsn(dbname, user=role)


def pg_relay(*args, check=True):
    r = subprocess.run([testlib.PROCESSOR] + list(args), capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def install(cluster, *extra, role=MANAGER, dbname="app", check=True):
    return pg_relay("install", "-d", as_role(cluster, role, dbname), *extra, check=check)


def superuser_roles(conn):
    return [r[0] for r in conn.execute("SELECT rolname FROM pg_roles WHERE rolsuper").fetchall()]


# ---- the catalog: the same objects, privileges and behaviour as CREATE EXTENSION ---------------

# One query per kind of object in a schema; each row is one line of the snapshot. The owner of
# everything is the installing role, which differs between the two installs: ACLs name it OWNER.
ACL = """(SELECT string_agg(format('%%s=%%s%%s', CASE a.grantee WHEN 0 THEN 'PUBLIC' WHEN {owner} THEN 'OWNER'
                                          ELSE a.grantee::regrole::text END,
                                 a.privilege_type, CASE WHEN a.is_grantable THEN '*' ELSE '' END),
                          ',' ORDER BY 1)
          FROM aclexplode({acl}) a)"""
IN_SCHEMA = "(SELECT oid FROM pg_namespace WHERE nspname = %(schema)s)"
SNAPSHOT = [
    ("function", """
        SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid), obj_description(p.oid, 'pg_proc'), """
     + ACL.format(owner="p.proowner", acl="COALESCE(p.proacl, acldefault('f', p.proowner))") + """
        FROM pg_proc p WHERE p.pronamespace = """ + IN_SCHEMA),
    ("relation", """
        SELECT c.oid::regclass::text, c.relkind, c.relpersistence, c.reloptions::text,
               obj_description(c.oid, 'pg_class'), """
     + ACL.format(owner="c.relowner", acl="COALESCE(c.relacl, acldefault(CASE WHEN c.relkind = 'S' THEN 's' "
                                          "ELSE 'r' END::\"char\", c.relowner))") + """,
               CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END
        FROM pg_class c WHERE c.relnamespace = """ + IN_SCHEMA),
    ("column", """
        SELECT c.oid::regclass::text, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(ad.adbin, ad.adrelid), col_description(c.oid, a.attnum), """
     + ACL.format(owner="c.relowner", acl="a.attacl") + """,
               row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum)
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
        WHERE c.relnamespace = """ + IN_SCHEMA),
    ("constraint", """
        SELECT co.conrelid::regclass::text, co.conname, pg_get_constraintdef(co.oid)
        FROM pg_constraint co WHERE co.connamespace = """ + IN_SCHEMA),
    ("index", """
        SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE c.relnamespace = """ + IN_SCHEMA),
    ("trigger", """
        SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
        WHERE NOT t.tgisinternal AND c.relnamespace = """ + IN_SCHEMA),
    ("type", """
        SELECT t.oid::regtype::text, t.typtype,
               (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid)
        FROM pg_type t LEFT JOIN pg_class c ON c.oid = t.typrelid
        WHERE t.typnamespace = """ + IN_SCHEMA + """ AND t.typcategory <> 'A' AND (c.oid IS NULL OR c.relkind = 'c')"""),
    ("schema", """
        SELECT n.nspname, obj_description(n.oid, 'pg_namespace'), """
     + ACL.format(owner="n.nspowner", acl="n.nspacl") + """
        FROM pg_namespace n WHERE n.nspname = %(schema)s"""),
    ("data", "SELECT action_type, run_order, description FROM pgrelay.action_types WHERE %(schema)s = 'pgrelay'"),
    ("data", "SELECT paused, reload_generation FROM pgrelay.control WHERE %(schema)s = 'pgrelay'"),
]


def snapshot(conn, schema):
    lines = []
    for kind, query in SNAPSHOT:
        for row in conn.execute(query, {"schema": schema}).fetchall():
            lines.append("%s %s" % (kind, " | ".join("NULL" if v is None else str(v) for v in row)))
    return sorted(lines)


def assert_same(a, b, what):
    import difflib
    diff = "\n".join(difflib.unified_diff(a, b, "CREATE EXTENSION", what, lineterm="", n=0))
    assert a == b, "the catalogs differ:\n" + diff[:20000]


def test_a_plain_install_has_the_objects_of_create_extension(managed):
    """pg_relay install (as mgr) and CREATE EXTENSION (as a superuser), object by object: every
    function with its body and comment, table, view, column, constraint, index, trigger, type and
    schema, with the same grants; the same seed rows."""
    install(managed, "--notifier")
    with managed.connect() as s:
        s.execute("CREATE DATABASE ext")
    with managed.connect("ext") as e, psycopg.connect(as_role(managed, MANAGER), autocommit=True) as p:
        # mgr made the cluster's roles (and on PostgreSQL 16 and later may grant them): accepted
        e.execute("SET pg_relay.accept_role_admins = '%s'" % MANAGER)
        e.execute("CREATE EXTENSION pg_relay; CREATE EXTENSION pg_relay_notifier")
        for schema in ("pgrelay", "pgrelay_notifier"):
            assert_same(snapshot(e, schema), snapshot(p, schema), "pg_relay install: " + schema)
        assert p.execute("SELECT * FROM pgrelay.installation()").fetchone() == (V, "script")
        assert e.execute("SELECT * FROM pgrelay.installation()").fetchone() == (V, "extension")
        assert p.execute("SELECT count(*) FROM pg_extension WHERE extname LIKE 'pg_relay%'").fetchone()[0] == 0
        # the roles, made once for the cluster; the monitor role is pg_monitor's
        assert p.execute("SELECT array_agg(rolname ORDER BY rolname) FROM pg_roles WHERE rolname LIKE 'pgrelay\\_%'"
                         ).fetchone()[0] == ["pgrelay_admin", "pgrelay_monitor", "pgrelay_nobody", "pgrelay_processor",
                                              "pgrelay_producer"]
        assert p.execute("SELECT pg_has_role('pg_monitor', 'pgrelay_monitor', 'MEMBER')").fetchone()[0]
        assert p.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0] is False


def test_print_gives_the_sql_of_the_install(managed):
    """pg_relay install --print is the SQL the install runs: psql --single-transaction -f of it
    gives the same catalog."""
    install(managed, "--notifier")
    with managed.connect() as s:
        s.execute("CREATE DATABASE by_psql OWNER %s" % MANAGER)
    for ext in ((), ("--notifier",)):
        sql = pg_relay("install", "--print", *ext).stdout
        r = subprocess.run([testlib.PGCLUSTER, "psql", managed.path, "--single-transaction", "-v", "ON_ERROR_STOP=1",
                            "-d", "dbname=by_psql user=%s" % MANAGER, "-f", "-"], input=sql, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    with psycopg.connect(as_role(managed, MANAGER), autocommit=True) as a, \
            psycopg.connect(as_role(managed, MANAGER, "by_psql"), autocommit=True) as b:
        for schema in ("pgrelay", "pgrelay_notifier"):
            assert_same(snapshot(a, schema), snapshot(b, schema), "psql -f of --print: " + schema)


def test_install_is_idempotent_and_refuses_what_it_cannot_finish(managed):
    """Run twice: the second run changes nothing. A schema somebody else made first, or one
    anybody may create in, is refused with the reason, and nothing is installed."""
    with managed.connect() as s:
        s.execute("CREATE ROLE squatter LOGIN")
        s.execute("CREATE DATABASE taken OWNER %s" % MANAGER)
        s.execute("CREATE DATABASE open OWNER %s" % MANAGER)
    with psycopg.connect(as_role(managed, MANAGER, "taken"), autocommit=True) as t:
        t.execute("GRANT CREATE ON DATABASE taken TO squatter")
    with psycopg.connect(as_role(managed, "squatter", "taken"), autocommit=True) as q:
        q.execute("CREATE SCHEMA pgrelay")
    r = install(managed, dbname="taken", check=False)
    assert r.returncode == 1
    assert "schema pgrelay belongs to role squatter, which is neither a superuser nor the role installing;" \
           " nothing in it was used" in r.stderr
    with psycopg.connect(as_role(managed, MANAGER, "open"), autocommit=True) as o:
        o.execute("CREATE SCHEMA pgrelay; GRANT CREATE ON SCHEMA pgrelay TO PUBLIC")
    r = install(managed, dbname="open", check=False)
    assert r.returncode == 1 and "role(s) PUBLIC may create objects in schema pgrelay" in r.stderr
    assert "hint: REVOKE CREATE ON SCHEMA pgrelay FROM PUBLIC;" in r.stderr
    # the hint is SQL to run: a role's name in it is quoted, whatever the name holds
    odd = "x; ALTER ROLE %s SUPERUSER; --" % MANAGER
    with managed.connect() as s:
        s.execute('CREATE ROLE "%s"' % odd)
    with psycopg.connect(as_role(managed, MANAGER, "open"), autocommit=True) as o:
        o.execute('REVOKE CREATE ON SCHEMA pgrelay FROM PUBLIC; GRANT CREATE ON SCHEMA pgrelay TO "%s"' % odd)
    r = install(managed, dbname="open", check=False)
    assert r.returncode == 1 and 'hint: REVOKE CREATE ON SCHEMA pgrelay FROM "%s";' % odd in r.stderr, r.stderr
    with psycopg.connect(as_role(managed, MANAGER, "open"), autocommit=True) as o:
        o.execute('REVOKE CREATE ON SCHEMA pgrelay FROM "%s"' % odd)
    with managed.connect() as s:
        s.execute('DROP ROLE "%s"' % odd)
    with psycopg.connect(as_role(managed, MANAGER, "open"), autocommit=True) as o:
        assert o.execute("SELECT count(*) FROM pg_proc WHERE pronamespace = 'pgrelay'::regnamespace").fetchone()[0] == 0

    assert install(managed, "--notifier").stdout.splitlines() == [
        f"pg_relay install: pg_relay {V} installed", f"pg_relay install: pg_relay_notifier {V} installed"]
    assert install(managed, "--notifier").stdout.splitlines() == [
        f"pg_relay install: pg_relay {V} is installed already",
        f"pg_relay install: pg_relay_notifier {V} is installed already"]
    assert pg_relay("upgrade", "-d", as_role(managed, MANAGER)).stdout.strip() == \
        f"pg_relay upgrade: pg_relay {V} is installed already"


def test_without_createrole_the_missing_roles_are_named(managed):
    """An installer that may not create roles: the install fails, nothing is changed, and the
    error names the roles and the statements a role with CREATEROLE runs first."""
    with managed.connect() as s:
        s.execute("CREATE ROLE plain LOGIN")
        s.execute("CREATE DATABASE plain OWNER plain")
    r = install(managed, role="plain", dbname="plain", check=False)
    assert r.returncode == 1
    assert ("pg_relay needs the roles pgrelay_producer, pgrelay_processor, pgrelay_admin, pgrelay_monitor,"
            " pgrelay_nobody,"
            " and plain may not create roles") in r.stderr
    assert "hint: Have a superuser run: CREATE ROLE pgrelay_producer NOLOGIN; CREATE ROLE" in r.stderr
    with managed.connect("plain") as p:
        assert p.execute("SELECT to_regnamespace('pgrelay')").fetchone()[0] is None
    # once a superuser made them, as the hint says, the same role installs
    with managed.connect() as s:
        s.execute(r.stderr.split("hint: Have a superuser run: ")[1].split("; then install again.")[0])
    assert install(managed, role="plain", dbname="plain").stdout.strip() == f"pg_relay install: pg_relay {V} installed"


def test_bad_arguments_are_refused_with_one_line():
    """Usage errors of install and upgrade: exit 2, the reason, and where to read more."""
    for args, says in [(["install", "--bogus"], 'unknown option "--bogus"'),
                       (["install", "extra"], 'unexpected argument "extra"'),
                       (["install", "--from=1.2"], "--from is for pg_relay upgrade --print"),
                       (["install", "-d"], 'option "-d" needs a value'),
                       (["install", "--print", "-d", "dbname=x"], "--print connects to nothing"),
                       (["upgrade", "--print"], "--print and --from=VERSION go together"),
                       (["upgrade", "--from=1.2"], "--print and --from=VERSION go together"),
                       (["install", "-d", "host=/tmp port"], "invalid")]:
        r = pg_relay(*args, check=False)
        lines = r.stderr.splitlines()
        assert r.returncode == 2 and says in lines[0] and lines[-1].startswith('Try "pg_relay ') or \
            (r.returncode == 2 and says in r.stderr), (args, r.stderr)
        assert r.stdout == ""
    r = pg_relay("install", "-d", "host=127.0.0.1 port=1 connect_timeout=2", check=False)
    assert r.returncode == 1 and "could not connect" in r.stderr
    assert "pg_relay install [-d CONNINFO] [--notifier]" in pg_relay("install", "--help").stdout
    assert "pg_relay upgrade --print --from=VERSION" in pg_relay("upgrade", "--help").stdout


def test_the_processor_and_status_tell_the_kinds_apart(managed, processors):
    """The Processor and pg_relay status find the install without pg_extension, say which kind,
    and refuse a database with half of one or with both kinds."""
    install(managed, "--notifier")
    with psycopg.connect(as_role(managed, MANAGER), autocommit=True) as m:
        m.execute("CREATE ROLE relay LOGIN IN ROLE pgrelay_processor")  # the installer makes the logins
    with managed.connect() as s:
        s.execute("CREATE DATABASE half OWNER %s" % MANAGER)
        s.execute("CREATE DATABASE mixed OWNER %s" % MANAGER)
        s.execute("CREATE DATABASE none OWNER %s" % MANAGER)
    p = processors("--once", "-d", as_role(managed, "relay"))
    assert p.wait_exit() == 0
    assert f"sql=\"pg_relay {V} (script), pg_relay_notifier {V} (script)\"" in p.lines("started")[0]
    out = pg_relay("status", "-d", as_role(managed, MANAGER)).stdout
    assert re.search(r"^Versions: +pg_relay %s \(script\), pg_relay_notifier %s \(script\), interface \d+; this"
                     r" pg_relay " % (re.escape(V), re.escape(V)), out, re.M), out

    # a schema with something in it but no installation(): not an install of ours (an empty one is
    # no install at all)
    with psycopg.connect(as_role(managed, MANAGER, "half"), autocommit=True) as h:
        h.execute("CREATE SCHEMA pgrelay; CREATE TABLE pgrelay.queue (id bigint)")
    p = processors("--once", "-d", as_role(managed, "relay", "half"))
    assert p.wait_exit() == 1
    assert "schema pgrelay exists but holds no complete install of pg_relay" in p.lines("startup_failed")[0]
    r = install(managed, dbname="half", check=False)
    assert r.returncode == 1 and "schema pgrelay exists but holds no complete install of pg_relay" in r.stderr

    # pg_relay by CREATE EXTENSION (a superuser), pg_relay_notifier by the SQL of pg_relay install
    with managed.connect("mixed") as m:
        m.execute("SET pg_relay.accept_role_admins = '%s'" % MANAGER)
        m.execute("CREATE EXTENSION pg_relay")
    r = install(managed, "--notifier", dbname="mixed", check=False)
    assert r.returncode == 1 and "pg_relay is installed as an extension: pg_relay_notifier must be too" in r.stderr
    with managed.connect("mixed") as m:
        m.execute("CREATE SCHEMA pgrelay_notifier AUTHORIZATION postgres")
        m.execute(pg_relay("install", "--print", "--notifier").stdout)
    p = processors("--once", "-d", as_role(managed, "relay", "mixed"))
    assert p.wait_exit() == 1
    assert "pg_relay is installed by CREATE EXTENSION and pg_relay_notifier by pg_relay install" \
           in p.lines("startup_failed")[0]
    r = pg_relay("status", "-d", as_role(managed, MANAGER, "mixed"), check=False)
    assert r.returncode == 1 and "both must come the same way" in r.stderr

    p = processors("--once", "-d", as_role(managed, "relay", "none"))
    assert p.wait_exit() == 1
    line = p.lines("startup_failed")[0]
    assert "pg_relay is not installed in this database" in line and "pg_relay install -d" in line


def test_upgrade_takes_the_upgrade_path_of_the_extension(managed):
    """pg_relay upgrade runs the same upgrade steps as ALTER EXTENSION UPDATE. A plain install of
    1.2 is made here from the released script of 1.2 (pg_relay install came with 1.3), marked with
    the installation() a plain install has: upgraded, it is the catalog of a fresh plain install;
    an install by CREATE EXTENSION is left to ALTER EXTENSION."""
    with open(os.path.join(RELEASED, "pg_relay--1.2.sql")) as f:
        released = f.read()
    old = re.sub(r"^\\echo .*$", "", released, flags=re.M)
    old = re.sub(r"^SELECT pg_catalog\.pg_extension_config_dump\(.*?\);$", "", old, flags=re.M | re.S)
    # 1.2's guard wanted a superuser to own the schema (CREATE EXTENSION was its only install)
    old, n = re.subn(r"^DO \$\$\nDECLARE\n    owner_name name;.*?^\$\$;$", "", old, count=1, flags=re.M | re.S)
    assert n == 1
    with managed.connect() as s:
        s.execute("CREATE DATABASE fresh OWNER %s" % MANAGER)
        s.execute("CREATE DATABASE ext")
    with psycopg.connect(as_role(managed, MANAGER), autocommit=True) as c:
        with c.transaction():
            c.execute("CREATE SCHEMA pgrelay; SET LOCAL search_path = pgrelay, pg_catalog")
            c.execute(old)
            c.execute("""CREATE FUNCTION pgrelay.installation(OUT version text, OUT method text) LANGUAGE sql
                         AS $$ SELECT '1.2'::text, 'script'::text $$""")
        c.execute("INSERT INTO pgrelay.channels (channel, action_type, handler) VALUES ('kept', 'notify', NULL)")
    out = pg_relay("upgrade", "-d", as_role(managed, MANAGER)).stdout
    assert out.strip() == f"pg_relay upgrade: pg_relay upgraded from 1.2 to {V}"
    install(managed, dbname="fresh")
    with psycopg.connect(as_role(managed, MANAGER), autocommit=True) as a, \
            psycopg.connect(as_role(managed, MANAGER, "fresh"), autocommit=True) as b:
        assert_same(snapshot(b, "pgrelay"), snapshot(a, "pgrelay"), "upgraded from 1.2")
        assert a.execute("SELECT channel FROM pgrelay.channels").fetchall() == [("kept",)]
    sql = pg_relay("upgrade", "--print", "--from=1.2").stdout
    assert "this upgrade of pg_relay is from version 1.2" in sql and "CREATE TABLE pgrelay.watches" in sql
    r = pg_relay("upgrade", "--print", "--from=0.9", check=False)
    assert r.returncode == 1 and f"there is no upgrade of pg_relay from version 0.9 to {V}" in r.stderr
    with managed.connect("ext") as e:
        e.execute("CREATE EXTENSION pg_relay VERSION '1.2'")
    r = pg_relay("upgrade", "-d", managed.dsn("ext"), check=False)
    assert r.returncode == 1 and "hint: upgrade it with ALTER EXTENSION pg_relay UPDATE" in r.stderr


def test_the_managed_path_end_to_end(managed, smtpd, hookd, processors):
    """Installer, admin, producer, monitor and the Processor are all roles without SUPERUSER, and
    nothing of ours is an extension: a SQL event run once after a retry, one that fails for good,
    an email and a signed webhook, and pg_relay status as the monitor."""
    install(managed, "--notifier")
    mail = smtpd()
    h = hookd()
    with psycopg.connect(as_role(managed, MANAGER), autocommit=True) as m:
        # the installer, a CREATEROLE role, makes the logins of the others
        m.execute("""CREATE ROLE dba LOGIN IN ROLE pgrelay_admin; CREATE ROLE app LOGIN IN ROLE pgrelay_producer;
                     CREATE ROLE relay LOGIN IN ROLE pgrelay_processor; CREATE ROLE mon LOGIN IN ROLE pgrelay_monitor;
                     GRANT CREATE ON DATABASE app TO app""")
    with psycopg.connect(as_role(managed, "app"), autocommit=True) as a:
        # the first attempt of 'flaky' fails (a sequence: its count survives the rollback)
        a.execute("""CREATE SCHEMA shop;
                     CREATE TABLE shop.done (payload text); CREATE SEQUENCE shop.tries;
                     CREATE FUNCTION shop.handle(p text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
                     SET search_path = shop, pg_catalog AS $$
                     BEGIN
                         IF p = 'flaky' AND nextval('tries') = 1 THEN RAISE EXCEPTION 'not yet'; END IF;
                         IF p = 'broken' THEN RAISE EXCEPTION 'broken for good' USING ERRCODE = 'PGSTP'; END IF;
                         INSERT INTO done VALUES (p);
                     END $$;
                     GRANT USAGE ON SCHEMA shop TO pgrelay_processor, dba;
                     GRANT EXECUTE ON FUNCTION shop.handle(text) TO pgrelay_processor, dba""")
    with psycopg.connect(as_role(managed, "dba"), autocommit=True) as d:
        d.execute("SELECT pgrelay.register('orders', 'sql', handler => 'shop.handle(text)', backoff_base => '10 ms',"
                  " backoff_max => '20 ms', batch => false)")
        d.execute("SELECT pgrelay_notifier.create_profile('sink', host => '127.0.0.1', port => %s, security => 'none',"
                  " from_address => 'noreply@example.com')", (mail.port,))
        d.execute("SELECT pgrelay_notifier.create_channel('mail', 'sink')")
        d.execute("SELECT pgrelay.register_webhook('hook', %s, allow_http => true, signing_secret => %s)",
                  (h.http_base_url + "/hook", H.SECRET))
    with psycopg.connect(as_role(managed, "app"), autocommit=True) as a:
        for payload in ("flaky", "broken"):
            a.execute("SELECT pgrelay.notify('orders', %s)", (payload,))
        a.execute("SELECT pgrelay.notify('hook', '{\"order\": 42}')")
        nid = a.execute("SELECT pgrelay_notifier.send('mail', ARRAY['ann@example.org'], 'Hello', 'Body')").fetchone()[0]
    p = processors("-d", as_role(managed, "relay"), "--poll-interval=20ms")
    with psycopg.connect(as_role(managed, "dba"), autocommit=True) as d:
        testlib.wait_for(lambda: d.execute("SELECT count(*) FROM pgrelay.queue").fetchone()[0] == 0,
                         "every event finished")
        outcomes = d.execute("SELECT payload, attempt, outcome FROM pgrelay.log WHERE channel = 'orders'"
                             " ORDER BY payload, attempt").fetchall()
        assert outcomes == [("broken", 1, "failed"), ("flaky", 1, "retry"), ("flaky", 2, "ok")]
        assert d.execute("SELECT channel, error FROM pgrelay.failed").fetchall() == [("orders", "broken for good")]
        assert d.execute("SELECT status FROM pgrelay_notifier.get_status(%s)", (nid,)).fetchone()[0] == "sent"
    assert p.stop() == 0
    assert len(mail.messages()) == 1
    [r] = h.requests()
    assert r["signature"] == "valid" and json.loads(h.body(r)) == {"order": 42}
    with psycopg.connect(as_role(managed, "app"), autocommit=True) as a:
        assert a.execute("SELECT payload FROM shop.done").fetchall() == [("flaky",)]
    out = pg_relay("status", "-d", as_role(managed, "mon")).stdout
    assert f"pg_relay {V} (script), pg_relay_notifier {V} (script)" in out and "Channels:" in out
    with managed.connect("app") as s:
        assert superuser_roles(s) == ["postgres"]
        assert s.execute("SELECT count(*) FROM pg_extension WHERE extname LIKE 'pg_relay%'").fetchone()[0] == 0


def test_the_report_rebuilds_the_queue_indexes_of_a_script_install(managed, processors):
    """The rebuild of the queue's indexes that the Processor's report runs needs no superuser: on an
    install by pg_relay install, the installing role owns the queue, and the report rebuilds its
    emptied indexes for a Processor role that owns nothing."""
    install(managed)
    with psycopg.connect(as_role(managed, MANAGER), autocommit=True) as m:
        m.execute("CREATE ROLE relay LOGIN IN ROLE pgrelay_processor")  # the installer makes the logins
        m.execute("INSERT INTO pgrelay.queue (event_id, channel, action_type, payload)"
                  " SELECT n, 'gone', 'sql', 'old ' || n FROM generate_series(1, 120000) n")
        m.execute("DELETE FROM pgrelay.queue")
        m.execute("VACUUM pgrelay.queue")
        assert m.execute("SELECT pg_relation_size('pgrelay.queue')").fetchone()[0] == 0
        assert m.execute("SELECT pg_indexes_size('pgrelay.queue')").fetchone()[0] >= 10 * 1024 * 1024
        before = m.execute("SELECT pg_relation_filenode('pgrelay.queue_free_idx')").fetchone()[0]
        p = processors("-d", as_role(managed, "relay"), "--workers=1")
        testlib.wait_for(lambda: m.execute("SELECT pg_indexes_size('pgrelay.queue')").fetchone()[0] < 1024 * 1024,
                         "the report's rebuild of the queue's indexes")
        assert m.execute("SELECT pg_relation_filenode('pgrelay.queue_free_idx')").fetchone()[0] != before
    assert p.stop() == 0
    assert not p.lines("report_failed")
    assert "were not rebuilt" not in p.log()
