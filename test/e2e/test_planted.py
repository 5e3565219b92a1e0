"""A handler's code runs as its owner and nothing of it outlives the handler in the Processor's
session: not a prepared statement put in place of the Processor's (which would run with the
Processor's rights), neither when the batch returns nor when it fails, and not a search_path.

Every planted function here draws a value from a sequence first (a draw is never rolled back), so
"it never ran" is checked even where the statement that would have run it failed.
"""
import os
import subprocess

import psycopg
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
