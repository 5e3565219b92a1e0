"""Nothing a less trusted role planted ever runs. A schema named like pg_relay's that another role
made first (with functions, operators and views in it) is refused by `pg_relay install` and
`upgrade`, by their SQL run through psql and by CREATE EXTENSION, and is ignored or refused by the
Processor and `pg_relay status`, before anything in it is used; a role named like pg_relay's that
existed before the install and can log in, or that another role may grant, is refused. A handler's
code runs as its owner and nothing of it outlives the handler in the Processor's session: not a
prepared statement put in place of the Processor's, not a search_path.

Every planted function here draws a value from a sequence first (a draw is never rolled back), so
"it never ran" is checked even where the statement that would have run it failed.
"""
import os
import subprocess

import psycopg
import psycopg.sql
import pytest

import testlib

V = testlib.EXT_VERSION


@pytest.fixture
def c(tmp_path):
    """A fresh cluster (the roles are the cluster's) with a database app owned by mgr (CREATEROLE,
    not a superuser: a managed service's customer) and mallory, who may create schemas in it."""
    cl = testlib.Cluster(os.path.join(testlib.work_dir("planted-"), "c"))
    cl.start()
    with cl.connect() as s:
        s.execute("CREATE ROLE mgr LOGIN CREATEROLE")
        s.execute("CREATE ROLE mallory LOGIN")
        s.execute("CREATE DATABASE app OWNER mgr")
    with psycopg.connect(cl.dsn("app"), autocommit=True) as s:
        s.execute("GRANT CREATE ON DATABASE app TO mallory")
        # the witness: a sequence anybody may draw from, in a schema of its own
        s.execute("CREATE SCHEMA witness; GRANT USAGE ON SCHEMA witness TO PUBLIC")
        s.execute("CREATE SEQUENCE witness.ran; GRANT USAGE, UPDATE ON SEQUENCE witness.ran TO PUBLIC")
    yield cl
    cl.stop("immediate")


def dsn(cl, role, db="app"):
    return cl.dsn(db, user=role)


def run(*args, stdin=None):
    return subprocess.run([testlib.PROCESSOR] + list(args), capture_output=True, text=True, timeout=120,
                          input=stdin)


def ran(cl, db="app"):
    """How often anything planted ran."""
    with psycopg.connect(cl.dsn(db), autocommit=True) as s:
        return s.execute("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM witness.ran").fetchone()[0]


def member(cl, role, of):
    with cl.connect() as s:
        return s.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", (role, of)).fetchone()[0]


def superuser(cl, role):
    with cl.connect() as s:
        return s.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", (role,)).fetchone()[0]


# What a role plants in a schema it made: installation() that makes it a member of its caller,
# fetch() and set_status() for the notifier's place, and look-alikes of the comparison operators
# the checks of an install use, for the types they compare.
PLANT = """
CREATE SCHEMA {s};
CREATE FUNCTION {s}.installation(OUT version text, OUT method text) LANGUAGE plpgsql AS $f$
BEGIN
    PERFORM nextval('witness.ran');
    EXECUTE format('GRANT %I TO {who}', current_user);
    version := '{v}'; method := 'script';
END $f$;
CREATE FUNCTION {s}.fetch(pk text, event_id bigint) RETURNS jsonb LANGUAGE plpgsql AS $f$
BEGIN PERFORM nextval('witness.ran'); RETURN '{{}}'; END $f$;
CREATE FUNCTION {s}.set_status(pk text, result jsonb) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN PERFORM nextval('witness.ran'); RETURN 'sent'; END $f$;
"""
OPERATORS = [("name", "name"), ("oid", "oid"), ("text", "text"), ("oid", "integer"), ("name", "text"),
             ("text", "name"), ("boolean", "boolean"), ("integer", "integer")]


def plant(cl, schema, who="mallory", db="app", operators=True, version=V):
    sql = PLANT.format(s=schema, who=who, v=version)
    if operators:
        for i, (l, r) in enumerate(OPERATORS):
            for op, name in (("=", "eq"), ("<>", "ne")):
                sql += """
CREATE FUNCTION {s}.{n}{i}(a {l}, b {r}) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN PERFORM nextval('witness.ran'); RETURN a::text OPERATOR(pg_catalog.{op}) b::text; END $f$;
CREATE OPERATOR {s}.{op} (LEFTARG = {l}, RIGHTARG = {r}, FUNCTION = {s}.{n}{i});
""".format(s=schema, n=name, i=i, l=l, r=r, op=op)
    with psycopg.connect(dsn(cl, who, db), autocommit=True) as m:
        m.execute(sql)


def test_install_and_upgrade_refuse_a_planted_schema_and_run_nothing_of_it(c):
    """mallory made schema pgrelay first, with installation() and look-alike operators, and let
    mgr create in it: pg_relay install and upgrade refuse it by its owner, from the catalog,
    before anything in it runs; mallory does not become a member of mgr."""
    plant(c, "pgrelay")
    with psycopg.connect(dsn(c, "mallory"), autocommit=True) as m:
        m.execute("GRANT USAGE, CREATE ON SCHEMA pgrelay TO mgr")
    for cmd in (("install",), ("install", "--notifier"), ("upgrade",)):
        r = run(*cmd, "-d", dsn(c, "mgr"))
        assert r.returncode == 1, r.stdout + r.stderr
        assert "schema pgrelay belongs to role mallory, which is neither a superuser nor the role installing;" \
               " nothing in it was used" in r.stderr, r.stderr
        assert "hint: if the schema is not yours, have its owner or a superuser drop it" in r.stderr
    assert ran(c) == 0 and not member(c, "mallory", "mgr")


def test_install_through_psql_refuses_a_planted_schema_and_runs_nothing_of_it(c):
    """The SQL of pg_relay install --print (and of upgrade --print) run by psql as mgr: the
    guard says whose the schema is with pg_catalog's operators only, and nothing planted runs."""
    plant(c, "pgrelay")
    with psycopg.connect(dsn(c, "mallory"), autocommit=True) as m:
        m.execute("GRANT USAGE, CREATE ON SCHEMA pgrelay TO mgr")
    for cmd in (("install", "--print"), ("upgrade", "--print", "--from=1.3")):
        sql = run(*cmd).stdout
        r = subprocess.run(testlib.program("psql") + ["-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction",
                            "-d", dsn(c, "mgr")], input=sql, capture_output=True, text=True, timeout=120)
        assert r.returncode != 0
        assert "schema pgrelay belongs to role mallory, which is neither a superuser nor the role installing" \
               " pg_relay (mgr)" in r.stderr, r.stderr
    assert ran(c) == 0 and not member(c, "mallory", "mgr")


def test_create_extension_into_a_planted_schema_runs_nothing_of_it(c):
    """CREATE EXTENSION, by a superuser, into the schema mallory made: refused, and none of her
    operators ran as the superuser while the guard looked at the schema."""
    plant(c, "pgrelay")
    with psycopg.connect(dsn(c, "mallory"), autocommit=True) as m:
        m.execute("GRANT USAGE, CREATE ON SCHEMA pgrelay TO PUBLIC")
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="schema pgrelay belongs to role mallory"):
            s.execute("CREATE EXTENSION pg_relay")
    assert ran(c) == 0 and not member(c, "mallory", "postgres")


def test_the_notifier_install_refuses_a_planted_notifier_schema(c):
    """pg_relay is mgr's; mallory made schema pgrelay_notifier: install --notifier and upgrade
    --notifier refuse it and run nothing of it."""
    assert run("install", "-d", dsn(c, "mgr")).returncode == 0
    plant(c, "pgrelay_notifier")
    for cmd in (("install", "--notifier"), ("upgrade", "--notifier")):
        r = run(*cmd, "-d", dsn(c, "mgr"))
        assert r.returncode == 1, r.stdout + r.stderr
        assert "schema pgrelay_notifier belongs to role mallory, which is neither a superuser nor the role" \
               " installing" in r.stderr, r.stderr
    assert ran(c) == 0 and not member(c, "mallory", "mgr")


def test_status_and_the_processor_ignore_a_notifier_schema_of_another_role(c, processors):
    """A superuser installed pg_relay by CREATE EXTENSION in a database appowner owns; appowner
    made schema pgrelay_notifier with an installation() that would make it a superuser, and a
    fetch(). pg_relay status (as a superuser) and the Processor ignore that schema and say why,
    run nothing of it, and do not refuse to start; an email event fails with the reason, its
    fetch() never called."""
    with c.connect() as s:
        s.execute("CREATE ROLE appowner LOGIN")
        s.execute("CREATE DATABASE shop OWNER appowner")
    with psycopg.connect(c.dsn("shop"), autocommit=True) as s:
        s.execute("CREATE EXTENSION pg_relay")
        s.execute("CREATE ROLE relay LOGIN IN ROLE pgrelay_processor")
        s.execute("CREATE SCHEMA witness; GRANT USAGE ON SCHEMA witness TO PUBLIC")
        s.execute("CREATE SEQUENCE witness.ran; GRANT USAGE, UPDATE ON SEQUENCE witness.ran TO PUBLIC")
        s.execute("GRANT pgrelay_admin, pgrelay_producer TO appowner")
    plant(c, "pgrelay_notifier", who="appowner", db="shop", operators=False)
    with psycopg.connect(dsn(c, "appowner", "shop"), autocommit=True) as a:
        a.execute("CREATE OR REPLACE FUNCTION pgrelay_notifier.installation(OUT version text, OUT method text)"
                  " LANGUAGE plpgsql AS $f$ BEGIN PERFORM nextval('witness.ran');"
                  " ALTER ROLE appowner SUPERUSER; version := '%s'; method := 'script'; END $f$" % V)
    r = run("status", "-d", c.dsn("shop"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning: schema pgrelay_notifier belongs to role appowner, not to the owner of pg_relay" in r.stderr
    assert "pg_relay_notifier - (ignored)" in r.stdout
    assert not superuser(c, "appowner") and ran(c, "shop") == 0

    # an email channel and an event of it, as an admin could register them
    with psycopg.connect(dsn(c, "appowner", "shop"), autocommit=True) as a:
        a.execute("SELECT pgrelay.register('mail', 'notify')")
        event = a.execute("SELECT pgrelay.notify('mail', '1')").fetchone()[0]
    p = processors("--once", "-d", dsn(c, "relay", "shop"))
    assert p.wait_exit() == 0
    line = p.lines("notifier_ignored")[0]
    assert "schema pgrelay_notifier belongs to role appowner" in line
    with psycopg.connect(c.dsn("shop"), autocommit=True) as s:
        err = s.execute("SELECT error FROM pgrelay.log WHERE event_id = %s", (event,)).fetchone()[0]
    assert err.startswith("pg_relay_notifier is not installed"), err
    assert not superuser(c, "appowner") and ran(c, "shop") == 0


def test_status_refuses_to_run_code_of_an_owner_that_could_not_act_as_it(c):
    """pg_relay installed by mgr over a plain connection; a superuser runs pg_relay status: mgr
    could not act as the superuser, so nothing of the schema is used and status says so. As mgr,
    or as a monitor role mgr made, it works."""
    assert run("install", "-d", dsn(c, "mgr")).returncode == 0
    r = run("status", "-d", c.dsn("app"))
    assert r.returncode == 1
    assert "schema pgrelay belongs to role mgr, which is not a superuser and could not act as this role" \
           in r.stderr, r.stderr
    with psycopg.connect(dsn(c, "mgr"), autocommit=True) as m:
        m.execute("CREATE ROLE mon LOGIN IN ROLE pgrelay_monitor")
    for role in ("mgr", "mon"):
        r = run("status", "-d", dsn(c, role))
        assert r.returncode == 0 and "pg_relay %s (script)" % V in r.stdout, r.stdout + r.stderr


def test_a_role_of_ours_that_can_log_in_is_refused(c):
    """A role named pgrelay_processor made before the install, which can log in: whoever logs in
    as it would run the Processor's functions. CREATE EXTENSION and pg_relay install refuse it."""
    with c.connect() as s:
        s.execute("CREATE ROLE pgrelay_processor LOGIN")
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        with pytest.raises(psycopg.errors.InsufficientPrivilege,
                           match="role pgrelay_processor exists already and is not a role pg_relay makes: it can log in"):
            s.execute("CREATE EXTENSION pg_relay")
    r = run("install", "-d", dsn(c, "mgr"))
    assert r.returncode == 1 and "role pgrelay_processor exists already" in r.stderr, r.stderr


def test_a_role_of_ours_that_another_role_may_grant_is_refused(c):
    """pgrelay_admin made before the install, and mallory may grant it (ADMIN OPTION): she could
    make any role an admin of this database's pg_relay. The install refuses it, naming her; once a
    superuser takes the option back it installs, naming the role's members."""
    with c.connect() as s:
        s.execute("CREATE ROLE pgrelay_admin NOLOGIN")
        s.execute("CREATE ROLE alice LOGIN IN ROLE pgrelay_admin")
        s.execute("GRANT pgrelay_admin TO mallory WITH ADMIN OPTION")
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        with pytest.raises(psycopg.errors.InsufficientPrivilege,
                           match="role pgrelay_admin exists already, and mallory may grant it to anyone") as e:
            s.execute("CREATE EXTENSION pg_relay")
        assert "SET pg_relay.accept_role_admins = 'mallory'" in e.value.diag.message_hint
        assert "REVOKE ADMIN OPTION FOR pgrelay_admin FROM mallory CASCADE" in e.value.diag.message_hint
    r = run("install", "-d", dsn(c, "mgr"))
    assert r.returncode == 1 and "mallory may grant it to anyone" in r.stderr, r.stderr
    # named and accepted by the installer: installed, the role's members named
    r = subprocess.run([testlib.PROCESSOR, "install", "-d", dsn(c, "mgr")], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PGOPTIONS="-c pg_relay.accept_role_admins=mallory"))
    assert r.returncode == 0, r.stderr
    with psycopg.connect(c.dsn("postgres"), autocommit=True) as s:
        s.execute("CREATE DATABASE other")
    with psycopg.connect(c.dsn("other"), autocommit=True) as s:
        s.execute("REVOKE ADMIN OPTION FOR pgrelay_admin FROM mallory CASCADE")
        s.execute("SET pg_relay.accept_role_admins = 'mgr'")  # who made the other roles, in app
        notices = []
        s.add_notice_handler(lambda d: notices.append(d.message_primary))
        s.execute("CREATE EXTENSION pg_relay")
    assert any("role pgrelay_admin exists already; its members (alice, mallory" in n for n in notices), notices


def test_the_hint_that_accepts_a_role_admin_quotes_its_name(c):
    """The role that may grant pgrelay_admin has a name like a statement (whoever made it chose
    it): the hint gives the setting that accepts it as one literal, which runs as one statement
    and lets the install go through; nothing in the name runs. A shell command is not offered for
    such a name."""
    bad = "x'; SELECT nextval('witness.ran'); --"
    with c.connect() as s:
        s.execute("CREATE ROLE pgrelay_admin NOLOGIN")
        s.execute(psycopg.sql.SQL("CREATE ROLE {} NOLOGIN").format(psycopg.sql.Identifier(bad)))
        s.execute(psycopg.sql.SQL("GRANT pgrelay_admin TO {} WITH ADMIN OPTION").format(psycopg.sql.Identifier(bad)))
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="may grant it to anyone") as e:
            s.execute("CREATE EXTENSION pg_relay")
        hint = e.value.diag.message_hint
        assert "(pg_relay install: the same setting in PGOPTIONS)" in hint, hint
        statement = hint.split(" install with ", 1)[1].split(" (pg_relay install", 1)[0]
        assert statement == "SET pg_relay.accept_role_admins = 'x''; SELECT nextval(''witness.ran''); --'", hint
        s.execute(statement)
        s.execute("CREATE EXTENSION pg_relay")
    assert ran(c) == 0


def test_an_update_warns_about_a_role_another_role_may_grant(c):
    """An install of 1.3 whose pgrelay_monitor mallory may grant: the update to this version goes
    through (it must not break a set-up that works) with a warning naming her."""
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        s.execute("CREATE EXTENSION pg_relay VERSION '1.3'")
        s.execute("GRANT pgrelay_monitor TO mallory WITH ADMIN OPTION")
        notices = []
        s.add_notice_handler(lambda d: notices.append((d.severity_nonlocalized, d.message_primary)))
        s.execute("ALTER EXTENSION pg_relay UPDATE")
        assert s.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_relay'").fetchone()[0] == V
    assert ("WARNING", "role pgrelay_monitor may be granted to anyone by mallory") in notices, notices


@pytest.fixture
def relay(c):
    """pg_relay installed by a superuser in database app, the Processor's role relay, and a
    schema mh of mallory's for her handler (registered by an admin)."""
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        s.execute("CREATE EXTENSION pg_relay")
        s.execute("CREATE ROLE relay LOGIN IN ROLE pgrelay_processor")
        s.execute("CREATE SCHEMA mh AUTHORIZATION mallory")
    return c


def handler_events(c, body, batch, n=3):
    """mallory's SECURITY DEFINER handler mh.handler(text) with body, registered on channel h
    (batched or not), and n events of it."""
    with psycopg.connect(dsn(c, "mallory"), autocommit=True) as m:
        m.execute("CREATE FUNCTION mh.evil() RETURNS text LANGUAGE plpgsql AS $f$"
                  " BEGIN PERFORM nextval('witness.ran'); RETURN 'x'; END $f$")
        m.execute("CREATE FUNCTION mh.handler(payload text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER"
                  " AS $f$ BEGIN %s END $f$" % body)
        m.execute("GRANT USAGE ON SCHEMA mh TO PUBLIC; GRANT EXECUTE ON FUNCTION mh.handler(text) TO PUBLIC")
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        s.execute("SELECT pgrelay.register('h', 'sql', 'mh.handler(text)', batch => %s)", (batch,))
        return [s.execute("SELECT pgrelay.notify('h', %s)", (str(i),)).fetchone()[0] for i in range(n)]


def outcomes(c, events):
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        return [r[0] for r in s.execute("SELECT outcome FROM pgrelay.log WHERE event_id = ANY(%s) ORDER BY event_id",
                                        (events,)).fetchall()]


HIJACK = """
    BEGIN EXECUTE 'DEALLOCATE pgrelay_process_batch'; EXCEPTION WHEN OTHERS THEN NULL; END;
    BEGIN EXECUTE 'DEALLOCATE pgrelay_process_one'; EXCEPTION WHEN OTHERS THEN NULL; END;
    EXECUTE 'PREPARE pgrelay_process_batch(text) AS SELECT NULL::bigint, mh.evil(), NULL::text, NULL::text, NULL::text, NULL::bigint';
    EXECUTE 'PREPARE pgrelay_process_one(text) AS SELECT mh.evil(), NULL::text, NULL::text, NULL::text, NULL::bigint';
"""


@pytest.mark.parametrize("batch", [True, False])
def test_a_handler_cannot_put_its_statement_in_place_of_the_processors(relay, processors, batch):
    """A handler replaces the Processor's prepared statements (DEALLOCATE and PREPARE, which no
    rollback undoes) with its own, which would run as the Processor's role: process_one and
    process_batch drop what SQL prepared before they return, with a warning, and every event of
    the channel runs, none of her statements ever."""
    events = handler_events(relay, HIJACK, batch)
    p = processors("--once", "--workers=1", "-d", dsn(relay, "relay"))
    assert p.wait_exit() == 0
    assert outcomes(relay, events) == ["ok"] * 3
    assert ran(relay) == 0
    assert "a handler left the prepared statement pgrelay_process_" in p.log()


def test_a_failed_statement_leaves_no_statement_of_a_handler_behind(relay, processors):
    """The session ran a plain event first (so process_one is prepared in it); then a batch whose
    handler puts her statement in place of process_one and is cancelled by someone else (a cancel
    the batch cannot take as a timeout: it raises query_canceled itself): the batch's statement fails, so nothing dropped what she
    prepared, and the Processor runs the batch's events one by one with process_one. It drops
    every prepared statement of the session before it runs one again: hers never runs."""
    with psycopg.connect(relay.dsn("app"), autocommit=True) as s:
        s.execute("CREATE FUNCTION public.fine(payload text) RETURNS void LANGUAGE sql SECURITY DEFINER AS ''")
        s.execute("GRANT EXECUTE ON FUNCTION public.fine(text) TO pgrelay_processor")
        s.execute("SELECT pgrelay.register('plain', 'sql', 'public.fine(text)', batch => false)")
        first = s.execute("SELECT pgrelay.notify('plain', 'x')").fetchone()[0]
    events = handler_events(relay, """
        BEGIN EXECUTE 'DEALLOCATE pgrelay_process_one'; EXCEPTION WHEN OTHERS THEN NULL; END;
        EXECUTE 'PREPARE pgrelay_process_one(text) AS SELECT mh.evil(), NULL::text, NULL::text, NULL::text, NULL::bigint';
        RAISE EXCEPTION 'as if cancelled' USING ERRCODE = 'query_canceled';""", True, n=2)
    p = processors("--once", "--workers=1", "-d", dsn(relay, "relay"))
    assert p.wait_exit() == 0
    assert outcomes(relay, [first]) == ["ok"] and "ok" not in outcomes(relay, events)
    assert ran(relay) == 0


def test_a_handlers_search_path_is_not_used_after_it_returns(relay, processors):
    """The handler sets a search_path for the session that puts her schema, with a look-alike
    clock_timestamp(), first: process_batch pins its own again before it looks anything up."""
    with psycopg.connect(dsn(relay, "mallory"), autocommit=True) as m:
        m.execute("CREATE FUNCTION mh.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS $f$"
                  " BEGIN PERFORM nextval('witness.ran'); RETURN pg_catalog.clock_timestamp(); END $f$")
    events = handler_events(relay, "PERFORM pg_catalog.set_config('search_path', 'mh, pg_catalog, pg_temp', false);",
                            True)
    p = processors("--once", "--workers=1", "-d", dsn(relay, "relay"))
    assert p.wait_exit() == 0
    assert outcomes(relay, events) == ["ok"] * 3
    assert ran(relay) == 0


@pytest.mark.parametrize("batch", [True, False])
def test_a_cursor_a_handler_holds_is_not_run_by_the_processors_commit(relay, processors, batch):
    """A handler declares a cursor WITH HOLD over her function and leaves it open: the commit of
    the Processor's transaction would run the rest of its query as the Processor's role. It is
    closed, with a warning, before the transaction ends; every event runs, her function never."""
    events = handler_events(relay, "EXECUTE format('DECLARE %I CURSOR WITH HOLD FOR SELECT mh.evil()',"
                                   " 'held_' || payload);", batch)
    p = processors("--once", "--workers=1", "-d", dsn(relay, "relay"))
    assert p.wait_exit() == 0
    assert outcomes(relay, events) == ["ok"] * 3
    assert ran(relay) == 0
    assert "a handler left the cursor held_0 WITH HOLD in the Processor" in p.log()


def test_a_handler_leaves_the_processors_session_listening_to_nothing(relay, processors):
    """A handler listens to a channel in the Processor's session: the Processor reads no
    notification, so each one sent there would stay in its memory. The next event's handler, in
    the same session and a later transaction, finds the session listening to nothing."""
    with psycopg.connect(dsn(relay, "mallory"), autocommit=True) as m:
        m.execute("CREATE TABLE mh.heard (channels text[]); GRANT INSERT ON mh.heard TO PUBLIC")
    events = handler_events(relay, """
        IF payload = '0' THEN
            EXECUTE 'LISTEN mh_flood';
        ELSE
            INSERT INTO mh.heard SELECT ARRAY(SELECT pg_catalog.pg_listening_channels());
        END IF;""", False, n=2)
    p = processors("--once", "--workers=1", "-d", dsn(relay, "relay"))
    assert p.wait_exit() == 0
    assert outcomes(relay, events) == ["ok"] * 2
    with psycopg.connect(relay.dsn("app"), autocommit=True) as s:
        assert s.execute("SELECT channels FROM mh.heard").fetchall() == [([],)]


def test_a_handler_made_security_invoker_by_one_before_it_in_the_batch_does_not_run(relay, processors):
    """The first handler of a batch makes itself SECURITY INVOKER (its owner may: ALTER FUNCTION),
    in the batch's transaction, after the claim checked it: the next events of the batch would run
    it as the Processor's role. Each handler is checked again before it runs; they fail with the
    reason, and her function never runs as the Processor."""
    events = handler_events(relay, """
        IF current_user = 'mallory' THEN
            EXECUTE 'ALTER FUNCTION mh.handler(text) SECURITY INVOKER';
        ELSE
            PERFORM mh.evil();
        END IF;""", True)
    p = processors("--once", "--workers=1", "-d", dsn(relay, "relay"))
    assert p.wait_exit() == 0
    assert ran(relay) == 0
    with psycopg.connect(relay.dsn("app"), autocommit=True) as s:
        rows = s.execute("SELECT outcome, error, sqlstate FROM pgrelay.log WHERE event_id = ANY(%s) ORDER BY event_id",
                         (events,)).fetchall()
    assert rows[0][0] == "ok"
    assert [r[1:] for r in rows[1:]] == [("handler mh.handler(text) is gone, or is not SECURITY DEFINER any more", "42501")] * 2, rows


def test_an_extension_update_says_whose_the_schema_is_before_it_changes_anything(c):
    """pg_relay 1.3 by CREATE EXTENSION, and its schema's owner let mallory create in it (what the
    guard refuses); she put there a look-alike of an operator the update's schema changes use (a
    channel's duration checked in seconds: numeric <= integer). ALTER EXTENSION UPDATE, by a
    superuser, is refused before those changes run: her operator never runs as the superuser."""
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        s.execute("CREATE EXTENSION pg_relay VERSION '1.3'")
        s.execute("CREATE FUNCTION public.fine(payload text) RETURNS void LANGUAGE sql SECURITY DEFINER AS ''")
        s.execute("SELECT pgrelay.register('c', 'sql', 'public.fine(text)')")
        s.execute("GRANT CREATE ON SCHEMA pgrelay TO mallory")
    with psycopg.connect(dsn(c, "mallory"), autocommit=True) as m:
        m.execute("CREATE SCHEMA mh; GRANT USAGE ON SCHEMA mh TO PUBLIC")
        m.execute("CREATE FUNCTION mh.le(numeric, integer) RETURNS boolean LANGUAGE plpgsql AS $f$"
                  " BEGIN PERFORM nextval('witness.ran'); RETURN $1 OPERATOR(pg_catalog.<=) $2; END $f$")
        m.execute("CREATE OPERATOR pgrelay.<= (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = mh.le)")
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="may create objects in schema pgrelay"):
            s.execute("ALTER EXTENSION pg_relay UPDATE")
    assert ran(c) == 0 and not member(c, "mallory", "postgres")


def test_replication_tables_leave_out_a_notifier_schema_of_another_role(relay):
    """The tables a multi-master cluster must replicate leave out those of a schema named
    pgrelay_notifier that mallory made: replication_setup() would add them to the replication set,
    and the peers' apply workers would fire her triggers as a superuser."""
    with psycopg.connect(dsn(relay, "mallory"), autocommit=True) as m:
        m.execute("CREATE SCHEMA pgrelay_notifier; CREATE TABLE pgrelay_notifier.inbox (id int PRIMARY KEY)")
    with psycopg.connect(relay.dsn("app"), autocommit=True) as s:
        rels = [r[0] for r in s.execute("SELECT relation::text FROM pgrelay.replication_tables()").fetchall()]
    assert "pgrelay.queue" in rels and not any(r.startswith("pgrelay_notifier.") for r in rels), rels


def test_the_printed_install_run_without_one_transaction_binds_nothing_of_another_role(c):
    """pg_relay install --print run by psql -f without -1: the script sets its path for the
    session, so an operator mallory put in a schema named after the installer (first on the
    default path) is bound into no view of pg_relay."""
    with psycopg.connect(dsn(c, "mallory"), autocommit=True) as m:
        m.execute("CREATE SCHEMA mgr; GRANT USAGE ON SCHEMA mgr TO PUBLIC")
        m.execute("CREATE FUNCTION mgr.mul(integer, interval) RETURNS interval LANGUAGE plpgsql AS $f$"
                  " BEGIN PERFORM nextval('witness.ran'); RETURN $1::float8 * $2; END $f$")
        m.execute("CREATE OPERATOR mgr.* (LEFTARG = integer, RIGHTARG = interval, FUNCTION = mgr.mul)")
    sql = run("install", "--print").stdout
    r = subprocess.run(testlib.program("psql") + ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn(c, "mgr")],
                       input=sql, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        foreign = s.execute("""
            SELECT DISTINCT d.refobjid::regoperator::text FROM pg_depend d JOIN pg_rewrite w ON w.oid = d.objid
            JOIN pg_class v ON v.oid = w.ev_class
            WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_operator'::regclass
              AND v.relnamespace = 'pgrelay'::regnamespace
              AND (SELECT oprnamespace FROM pg_operator WHERE oid = d.refobjid) <> 'pg_catalog'::regnamespace""").fetchall()
        assert foreign == []
        assert s.execute("SHOW search_path").fetchone()[0] == '"$user", public'


def test_the_console_reads_nothing_of_a_notifier_schema_of_another_role(relay):
    """An email channel with no notifier installed, and mallory (a producer who may create
    schemas) made pgrelay_notifier with views named like the notifier's tables over her function:
    the console's page of an email event, as an admin, reads none of them."""
    from webconsole import Console
    with psycopg.connect(relay.dsn("app"), autocommit=True) as s:
        s.execute("GRANT pgrelay_producer TO mallory")
        s.execute("CREATE ROLE webadmin LOGIN IN ROLE pgrelay_admin")
        s.execute("SELECT pgrelay.register('mail', 'notify')")
    with psycopg.connect(dsn(relay, "mallory"), autocommit=True) as m:
        m.execute("CREATE SCHEMA pgrelay_notifier; GRANT USAGE ON SCHEMA pgrelay_notifier TO PUBLIC")
        m.execute("CREATE FUNCTION pgrelay_notifier.spy() RETURNS bigint LANGUAGE plpgsql AS $f$"
                  " BEGIN RETURN nextval('witness.ran'); END $f$")
        for view, cols in (("notifications", "pgrelay_notifier.spy() AS notification_id, 'x'::text AS status,"
                                              " 's'::text AS subject, 'f'::text AS from_address, 'm'::text AS message_id,"
                                              " 1 AS attempts, ''::text AS last_error, now() AS sent_at,"
                                              " 'p'::text AS profile"),
                           ("recipients", "pgrelay_notifier.spy() AS notification_id, 1 AS recipient_id,"
                                          " 'to'::text AS kind, 'a'::text AS address, 'n'::text AS name,"
                                          " 'x'::text AS status, 250 AS code, ''::text AS reply"),
                           ("attempts", "pgrelay_notifier.spy() AS notification_id, 1 AS attempt"),
                           ("attempt_traces", "pgrelay_notifier.spy() AS notification_id, 1 AS attempt")):
            m.execute("CREATE VIEW pgrelay_notifier.%s AS SELECT %s" % (view, cols))
            m.execute("GRANT SELECT ON pgrelay_notifier.%s TO PUBLIC" % view)
        event = m.execute("SELECT pgrelay.notify('mail', '1')").fetchone()[0]
    web = Console(dsn(relay, "webadmin"))
    try:
        r = web.request("/event?id=%d" % event)
        assert r.status == 200, r.body
    finally:
        web.proc.stop()
    assert ran(relay) == 0


def test_the_console_refuses_a_pg_relay_whose_owner_could_not_act_as_it(c):
    """pg_relay installed by mgr over a plain connection; the console run as a superuser: mgr
    could not act as the superuser, so the console reads nothing of the schema (mgr could have
    put a function of its own in a view there) and says why, as pg_relay status does."""
    assert run("install", "-d", dsn(c, "mgr")).returncode == 0
    r = subprocess.run([testlib.PROCESSOR, "web", "-d", c.dsn("app"), "--listen=127.0.0.1:0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "schema pgrelay belongs to role mgr, which is not a superuser and could not act as this role" \
           in r.stderr, r.stderr


def test_a_role_name_cannot_draw_lines_in_a_refusal(c):
    """A schema pgrelay made by a role whose name holds a newline and a line that reads like
    success: the refusal shows the name with the control character replaced, on one line."""
    with c.connect() as s:
        s.execute('CREATE ROLE "x\npg_relay install: pg_relay %s installed" LOGIN' % V)
    with psycopg.connect(c.dsn("app"), autocommit=True) as s:
        s.execute('CREATE SCHEMA pgrelay AUTHORIZATION "x\npg_relay install: pg_relay %s installed"' % V)
    r = run("install", "-d", dsn(c, "mgr"))
    assert r.returncode == 1
    assert not any(l.startswith("pg_relay install: pg_relay") and l.endswith("installed")
                   for l in r.stdout.splitlines() + r.stderr.splitlines()), r.stderr
    assert "schema pgrelay belongs to role x?pg_relay install: pg_relay %s installed, which is neither" % V in r.stderr


def test_a_server_message_cannot_drive_the_terminal(c):
    """The install's refusal quotes a role's name from the server's error: a name holding terminal
    escapes (clear the screen, move the cursor) reaches stderr with each control character shown
    as "?"."""
    evil = "m\x1b[2J\x1b[1;1H\rok"
    with c.connect() as s:
        s.execute("CREATE ROLE pgrelay_admin NOLOGIN")
        s.execute('CREATE ROLE "%s" NOLOGIN' % evil)
        s.execute('GRANT pgrelay_admin TO "%s" WITH ADMIN OPTION' % evil)
    r = run("install", "-d", dsn(c, "mgr"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "m?[2J?[1;1H?ok" in r.stderr and "may grant it to anyone" in r.stderr, r.stderr
    assert not any(ch in r.stderr + r.stdout for ch in "\x1b\r"), repr(r.stderr)


def test_a_running_processor_stops_when_its_schema_is_made_anew(relay, processors):
    """pg_relay is dropped under a running Processor and, in the same transaction, mallory makes a
    schema pgrelay of her own with the functions its tick calls: the Processor finds at its next
    probe that the schema is not the one it checked at start, stops (exit 1, install_changed) and
    calls nothing of hers."""
    p = processors("-d", dsn(relay, "relay"), "--poll-interval=50ms")
    p.wait_log(r" started ")
    plant_sql = (PLANT.format(s="pgrelay", who="mallory", v=V) + """
CREATE FUNCTION pgrelay.queue_probe(seen bigint, bound jsonb, OUT has_work boolean, OUT reload_requested boolean,
    OUT paused boolean, OUT reload_generation bigint, OUT schedule_due boolean, OUT next_bound jsonb)
LANGUAGE plpgsql AS $f$ BEGIN PERFORM nextval('witness.ran'); has_work := false; END $f$;
CREATE FUNCTION pgrelay.should_dispatch_single() RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN PERFORM nextval('witness.ran'); RETURN true; END $f$;
GRANT USAGE ON SCHEMA pgrelay TO PUBLIC;
""")
    # DROP EXTENSION locks pg_relay's relations one by one while the Processor's statements take
    # theirs: the server may end either side as a deadlock's victim, and an admin runs it again
    for attempt in range(10):
        try:
            with psycopg.connect(relay.dsn("app"), autocommit=True) as s:
                with s.transaction():
                    s.execute("DROP EXTENSION pg_relay")
                    s.execute("DROP SCHEMA IF EXISTS pgrelay CASCADE")
                    s.execute("SET LOCAL ROLE mallory")
                    s.execute(plant_sql)
            break
        except psycopg.errors.DeadlockDetected:
            assert attempt < 9, "ten deadlocks in a row"
    assert p.wait_exit() == 1
    assert p.lines("install_changed"), p.log()
    assert ran(relay) == 0


@pytest.mark.parametrize("batch", [True, False])
def test_a_handlers_deferred_triggers_fire_with_no_rights(relay, processors, batch):
    """A handler inserts into a table of its owner's that has a deferred constraint trigger (not
    SECURITY DEFINER: it runs as the current user). Left for the commit, it would fire as the
    Processor's role; it fires when the handler returns, as pgrelay_nobody, which holds no
    right: never with the Processor's."""
    with psycopg.connect(dsn(relay, "mallory"), autocommit=True) as m:
        m.execute("CREATE TABLE mh.t (x int)")
        m.execute("CREATE FUNCTION mh.spy() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
                  " IF pg_has_role(current_user, 'pgrelay_processor', 'MEMBER') THEN"
                  " PERFORM nextval('witness.ran'); END IF; RETURN NULL; END $f$")
        m.execute("CREATE CONSTRAINT TRIGGER spy AFTER INSERT ON mh.t DEFERRABLE INITIALLY DEFERRED"
                  " FOR EACH ROW EXECUTE FUNCTION mh.spy()")
    events = handler_events(relay, "INSERT INTO mh.t VALUES (1);", batch)
    p = processors("--once", "--workers=1", "-d", dsn(relay, "relay"))
    assert p.wait_exit() == 0
    assert outcomes(relay, events) == ["ok"] * 3
    assert ran(relay) == 0
    with psycopg.connect(relay.dsn("app"), autocommit=True) as s:
        assert s.execute("SELECT count(*) FROM mh.t").fetchone()[0] == 3
