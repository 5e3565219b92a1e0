"""The privilege matrix of docs/security.md, proved on a fresh install: every function, table,
view, sequence and schema of both extensions is allowed or denied to producer, processor, admin,
monitor and PUBLIC exactly as that section says. The section is the decision record: the test
reads it, compares it with the catalog (so a new object without a decision fails, with a message
that says what to add where), and then runs every statement as every role.

Also here: the SECURITY DEFINER functions pin their search_path, and look-alike operators, functions
and tables that other roles created first in `public` and in `pg_temp` never run; an extension
schema that somebody else created first is refused."""
import os
import re

import psycopg
import pytest

import testlib

DOC = os.path.join(testlib.ROOT, "docs", "security.md")
SECTION = "## The privilege matrix"
SCHEMAS = ("pgrelay", "pgrelay_notifier")
# The matrix's columns, in order, and the role that plays each one. PUBLIC is played by a role
# that is a member of nothing (made per test run).
COLUMNS = ("producer", "processor", "admin", "monitor", "PUBLIC")
GROUP_ROLES = {"producer": "pgrelay_producer", "processor": "pgrelay_processor",
               "admin": "pgrelay_admin", "monitor": "pgrelay_monitor"}
PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER", "USAGE",
              "CREATE", "EXECUTE")
KINDS = {"r": "table", "v": "view", "S": "sequence", "m": "materialized view", "p": "table", "f": "foreign table"}
DENIED = re.compile(r"permission denied for (function|procedure|schema|table|view|sequence|relation)")
HOW_TO_ADD = ("add a row to the table of section \"The privilege matrix\" in docs/security.md "
              "(| {obj} | producer | processor | admin | monitor | PUBLIC |, naming in each cell what "
              "that role may do) and grant exactly that in extension/{ext}/src/privileges.sql")


def where(schema):
    return "pg_relay" if schema == "pgrelay" else "pg_relay_notifier"


# ---- the decision record --------------------------------------------------------------------


class Matrix:
    """The privilege matrix as docs/security.md writes it.

    objects: {key: {column: {privilege: set of columns or None}}}, key such as
    "schema pgrelay", "table pgrelay.queue", "function pgrelay.notify(...)" or
    "function pgrelay.retry_failed(bigint)"; internal: the set of internal function keys."""

    def __init__(self, path=DOC):
        with open(path) as f:
            text = f.read()
        start = text.index(SECTION)
        end = text.find("\n## ", start + len(SECTION))
        self.text = text[start:end if end > 0 else len(text)]
        self.objects, self.internal = {}, set()
        self._parse()

    @staticmethod
    def cell(text):
        """'SELECT, UPDATE (run_order, description)' -> {SELECT: None, UPDATE: {run_order, ...}};
        the markers "(own)" and "(own rows)" say the function checks the caller itself."""
        text = re.sub(r"\((own|own rows)\)", "", text)
        out = {}
        for m in re.finditer(r"([A-Z]+)(?:\s*\(([^)]*)\))?", text):
            priv, cols = m.group(1), m.group(2)
            assert priv in PRIVILEGES, "docs/security.md: unknown privilege %r in %r" % (priv, text)
            out[priv] = None if cols is None else {c.strip() for c in cols.split(",")}
        return out

    def _parse(self):
        lines = self.text.splitlines()
        for line in lines:
            if not line.startswith("| ") or line.startswith("| object") or line.startswith("|---"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            assert len(cells) == 1 + len(COLUMNS), "docs/security.md: malformed matrix row %r" % line
            m = re.fullmatch(r"(?:(schema|table|view|sequence) )?`([^`]+)`", cells[0])
            assert m, "docs/security.md: cannot read the object %r" % cells[0]
            key = "%s %s" % (m.group(1) or "function", m.group(2))
            assert key not in self.objects, "docs/security.md: %s is listed twice" % key
            self.objects[key] = {col: self.cell(c) for col, c in zip(COLUMNS, cells[1:])}
        internal = self.text[self.text.index("**Internal functions**"):]
        for m in re.finditer(r"^- `([a-z_]+)`: (.*?)(?=^- |\n\n|\Z)", internal, re.M | re.S):
            for name in re.findall(r"`([^`]+)`", m.group(2)):
                self.internal.add("function %s.%s" % (m.group(1), name))


def catalog_functions(conn):
    """[(key_full, key_short, schema, oid, argtypes)] of both schemas."""
    rows = conn.execute("""
        SELECT n.nspname, p.proname, pg_catalog.oidvectortypes(p.proargtypes), p.oid,
               ARRAY(SELECT pg_catalog.format_type(t, NULL) FROM unnest(p.proargtypes) t)
        FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = ANY(%s) ORDER BY 1, 2, 3""", (list(SCHEMAS),)).fetchall()
    return [("function %s.%s(%s)" % (s, n, a), "function %s.%s(...)" % (s, n), s, oid, types)
            for s, n, a, oid, types in rows]


def decisions(conn, matrix):
    """{catalog key: (decision or None for internal, schema, oid, kind, extra)} for every object
    of both schemas, or fail with what is missing or stale in docs/security.md."""
    problems, found, used = [], {}, set()
    funcs = catalog_functions(conn)
    overloads = {}
    for full, short, *_ in funcs:
        overloads[short] = overloads.get(short, 0) + 1
    for full, short, schema, oid, types in funcs:
        key = full if full in matrix.objects or full in matrix.internal else short
        if key == short and overloads[short] > 1 and (short in matrix.objects or short in matrix.internal):
            problems.append("%s is overloaded: write each of its %d functions with its argument types in "
                            "docs/security.md (for example `%s`)" % (short[9:], overloads[short], full[9:]))
            continue
        if key in matrix.objects:
            found[full] = (matrix.objects[key], schema, oid, "function", types)
        elif key in matrix.internal:
            found[full] = (None, schema, oid, "function", types)
        else:
            problems.append("%s has no decision: %s, or list it under \"Internal functions\" there if no "
                            "role may call it" % (full[9:], HOW_TO_ADD.format(obj="`%s`" % short[9:],
                                                                              ext=where(schema))))
            continue
        used.add(key)
    for schema, relname, relkind, oid in conn.execute("""
            SELECT n.nspname, c.relname, c.relkind, c.oid
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ANY(%s) AND c.relkind NOT IN ('i', 'I', 'c', 't')
            ORDER BY 1, 2""", (list(SCHEMAS),)).fetchall():
        kind = KINDS.get(relkind, relkind)
        key = "%s %s.%s" % (kind.split()[-1] if kind == "foreign table" else kind, schema, relname)
        key = key.replace("materialized view ", "view ")
        if key not in matrix.objects:
            problems.append("%s has no decision: %s" % (key, HOW_TO_ADD.format(obj="%s `%s.%s`" % (
                key.split()[0], schema, relname), ext=where(schema))))
            continue
        found[key] = (matrix.objects[key], schema, oid, kind, relkind)
        used.add(key)
    for schema in SCHEMAS:
        key = "schema " + schema
        if key not in matrix.objects:
            problems.append("%s has no decision: %s" % (key, HOW_TO_ADD.format(obj="schema `%s`" % schema,
                                                                             ext=where(schema))))
            continue
        found[key] = (matrix.objects[key], schema, None, "schema", None)
        used.add(key)
    for key in sorted((set(matrix.objects) | matrix.internal) - used):
        problems.append("docs/security.md lists %s, which a fresh install does not have: remove or "
                        "correct its entry" % key)
    assert not problems, "the privilege matrix and the catalog disagree:\n  " + "\n  ".join(problems)
    return found


# ---- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fresh(cluster):
    """A database with both extensions, and a role that is a member of nothing (PUBLIC's stand-in)."""
    d = testlib.Database(cluster, extensions=("pg_relay", "pg_relay_notifier"))
    nobody = "proof_nobody_%d" % os.getpid()
    d.sql('CREATE ROLE "%s"' % nobody)
    d.roles = dict(GROUP_ROLES, PUBLIC=nobody)
    yield d
    d.close()
    with cluster.connect() as c:
        c.execute('DROP ROLE IF EXISTS "%s"' % nobody)


@pytest.fixture(scope="module")
def matrix():
    return Matrix()


# ---- the matrix against the catalog -----------------------------------------------------------


def test_every_object_has_exactly_one_decision(fresh, matrix):
    """Every function, table, view, sequence and schema of both extensions appears in the matrix
    (or among the internal functions), and the matrix lists nothing that does not exist."""
    found = decisions(fresh.conn, matrix)
    assert len(found) == len(catalog_functions(fresh.conn)) + fresh.scalar(
        "SELECT count(*) FROM pg_class WHERE relnamespace IN ('pgrelay'::regnamespace, "
        "'pgrelay_notifier'::regnamespace) AND relkind NOT IN ('i', 'I', 'c', 't')") + len(SCHEMAS)


def acl_rows(conn):
    """Every (object key, grantee, privilege, column or None, grantable) the catalog grants on the
    objects of both schemas, the owner's own privileges left out."""
    return conn.execute("""
        WITH s AS (SELECT oid, nspname FROM pg_namespace WHERE nspname = ANY(%(s)s))
        SELECT 'function ' || s.nspname || '.' || p.proname || '(' || oidvectortypes(p.proargtypes) || ')',
               a.grantee, a.privilege_type, NULL::text, a.is_grantable
        FROM pg_proc p JOIN s ON s.oid = p.pronamespace,
             aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a WHERE a.grantee <> p.proowner
        UNION ALL
        SELECT CASE c.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'view ' WHEN 'S' THEN 'sequence '
                              ELSE 'table ' END || s.nspname || '.' || c.relname,
               a.grantee, a.privilege_type, NULL, a.is_grantable
        FROM pg_class c JOIN s ON s.oid = c.relnamespace,
             aclexplode(COALESCE(c.relacl, acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char",
                                                       c.relowner))) a
        WHERE c.relkind NOT IN ('i', 'I', 'c', 't') AND a.grantee <> c.relowner
        UNION ALL
        SELECT CASE c.relkind WHEN 'v' THEN 'view ' ELSE 'table ' END || s.nspname || '.' || c.relname,
               a.grantee, a.privilege_type, t.attname, a.is_grantable
        FROM pg_attribute t JOIN pg_class c ON c.oid = t.attrelid JOIN s ON s.oid = c.relnamespace,
             aclexplode(t.attacl) a WHERE t.attacl IS NOT NULL AND a.grantee <> c.relowner
        UNION ALL
        SELECT 'schema ' || n.nspname, a.grantee, a.privilege_type, NULL, a.is_grantable
        FROM pg_namespace n, aclexplode(COALESCE(n.nspacl, acldefault('n', n.nspowner))) a
        WHERE n.nspname = ANY(%(s)s) AND a.grantee <> n.nspowner""", {"s": list(SCHEMAS)}).fetchall()


def test_catalog_grants_are_exactly_the_matrix(fresh, matrix):
    """The ACLs of a fresh install, read from the catalog: each role holds exactly the privileges
    its cell names (and no other role, nor PUBLIC, holds any), none with GRANT OPTION."""
    found = decisions(fresh.conn, matrix)
    oid_of = dict(fresh.sql("SELECT oid, rolname FROM pg_roles"))
    column_of = {v: k for k, v in GROUP_ROLES.items()}
    granted = {}
    problems = []
    for key, grantee, priv, col, grantable in acl_rows(fresh.conn):
        who = "PUBLIC" if grantee == 0 else column_of.get(oid_of.get(grantee))
        if who is None:
            problems.append("%s: %s is granted to role %s, which the matrix does not know"
                            % (key, priv, oid_of.get(grantee)))
            continue
        if grantable:
            problems.append("%s: %s is granted to %s WITH GRANT OPTION" % (key, priv, who))
        granted.setdefault((key, who), {}).setdefault(priv, set()).add(col)
    for key, (decision, schema, *_rest) in found.items():
        for who in COLUMNS:
            want = (decision or {}).get(who, {}) if decision is not None else {}
            have = granted.get((key, who), {})
            want_norm = {p: ({None} if cols is None else set(cols)) for p, cols in want.items()}
            if want_norm != have:
                problems.append("%s, %s: the matrix says %s, the catalog grants %s (fix "
                                "extension/%s/src/privileges.sql or docs/security.md)"
                                % (key, who, fmt(want_norm), fmt(have), where(schema)))
    assert not problems, "\n  ".join(["grants differ from docs/security.md:"] + problems)


def fmt(privs):
    if not privs:
        return "nothing"
    return ", ".join(p if cols == {None} else "%s (%s)" % (p, ", ".join(sorted(c for c in cols if c)))
                     for p, cols in sorted(privs.items()))


# ---- the matrix in action: every statement as every role --------------------------------------


def attempt(conn, sql):
    """Run sql in a savepoint that is rolled back; return the error message, or None."""
    conn.execute("SAVEPOINT attempt")
    try:
        conn.execute(sql)
        return None
    except psycopg.Error as e:
        return str(e.diag.message_primary or e)
    finally:
        conn.execute("ROLLBACK TO SAVEPOINT attempt")


def statements(key, kind, schema, extra, conn):
    """[(privilege, column, sql)] that exercise privilege on the object."""
    name = key.split(" ", 1)[1]
    if kind == "function" and conn.execute("SELECT prorettype = 'trigger'::regtype FROM pg_proc WHERE oid = %s::regprocedure",
                                           (name,)).fetchone()[0]:
        # a trigger function cannot be called: its EXECUTE is used when a trigger is made (the
        # catalog test checks the grant; pg_relay/sql/watch.sql makes partitions as the table owner)
        return []
    if kind == "function":
        # a sub-select, not a constant: a STRICT function of constant NULLs is folded away by the
        # planner before any privilege is checked
        args = ", ".join("(SELECT NULL::%s)" % t for t in extra)
        fn = name[:name.index("(")]
        sch, fname = fn.split(".", 1)
        return [("EXECUTE", None, 'SELECT %s."%s"(%s)' % (sch, fname, args))]
    if kind == "schema":
        return [("CREATE", None, "CREATE TABLE %s.proof_probe (x int)" % name)]
    if kind == "sequence":
        return [("SELECT", None, "SELECT last_value FROM %s" % name),
                ("UPDATE", None, "SELECT pg_catalog.setval('%s', pg_catalog.nextval('%s'))" % (name, name))]
    out = [("SELECT", None, "SELECT 1 FROM %s LIMIT 0" % name)]
    if kind == "view":
        return out      # nobody may write a view; the catalog test checks the rest
    out.append(("INSERT", None, "INSERT INTO %s SELECT * FROM %s WHERE false" % (name, name)))
    out.append(("DELETE", None, "DELETE FROM %s WHERE false" % name))
    out.append(("TRUNCATE", None, "TRUNCATE %s" % name))
    for (col,) in conn.execute("SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
                               " AND NOT attisdropped ORDER BY attnum", (name,)).fetchall():
        out.append(("UPDATE", col, 'UPDATE %s SET "%s" = "%s" WHERE false' % (name, col, col)))
    return out


def allowed(decision, who, priv, col):
    """What the matrix grants who, or PUBLIC (every role has what PUBLIC has)."""
    if decision is None:
        return False
    for column in (who, "PUBLIC"):
        cell = decision.get(column, {})
        if priv in cell and (cell[priv] is None or col is None or col in cell[priv]):
            return True
    return False


def test_every_statement_as_every_role(fresh, matrix):
    """Each function called, each table read, written, updated column by column, deleted from and
    truncated, each sequence read and advanced, each schema written into, as each role: denied
    ("permission denied") exactly where the matrix says so. Everything is rolled back."""
    found = decisions(fresh.conn, matrix)
    conn = psycopg.connect(fresh.dsn)          # one transaction, rolled back at the end
    problems, tried = [], 0
    try:
        plan = [(key, d, priv, col, sql) for key, (d, schema, oid, kind, extra) in sorted(found.items())
                for priv, col, sql in statements(key, kind, schema, extra, conn)]
        for who in COLUMNS:
            conn.execute('SET ROLE "%s"' % fresh.roles[who])
            for key, d, priv, col, sql in plan:
                err = attempt(conn, sql)
                tried += 1
                denied = err is not None and DENIED.search(err) is not None
                if denied == allowed(d, who, priv, col):
                    problems.append("%s as %s: %s (%s)" % (sql, who, "denied" if denied else "allowed",
                                                          err or "no error"))
            conn.execute("RESET ROLE")
    finally:
        conn.rollback()
        conn.close()
    assert not problems, "%d of %d statements disagree with docs/security.md:\n  %s" % (
        len(problems), tried, "\n  ".join(problems))
    assert tried > 1000


# ---- search_path and look-alikes ---------------------------------------------------------------


# The functions that pin search_path in their bodies: they must first read the caller's path to
# give it back.
IN_BODY = ("pgrelay.process_one(bigint)", "pgrelay.process_batch(bigint[])")
# What they call before the pin and right after RESET ALL: SQL functions without a SET clause, so
# that the planner inlines them (a SET clause would hide the caller's path and undo the pin), which
# name the schema of every function they call.
INLINED = ("pgrelay._settings_restore(text[])", "pgrelay._settings_saved()")
# What looks up a name the caller gave on the caller's path, as a cast in the caller's statement
# would (register()'s handler), and what runs a handler once per event for them (_run_handler: a
# SET clause would cost a tenth of the event): SECURITY INVOKER without a SET clause, naming the
# schema of everything else it uses.
ON_CALLER_PATH = ("pgrelay.register(text,text,text,text,boolean,integer,interval,interval,interval,boolean,text,"
                  "integer,text,boolean,boolean,jsonb)",
                  "pgrelay._run_handler(text,oid,text,text,interval,timestamp with time zone,interval,boolean)")


def test_security_definer_functions_pin_search_path(cluster):
    """Every SECURITY DEFINER function of both schemas, and every function any role may execute,
    runs with search_path = pg_catalog, pg_temp (process_one() and process_batch() pin it in their
    bodies; the settings helpers they call on the caller's path name every schema)."""
    d = testlib.Database(cluster, extensions=("pg_relay", "pg_relay_notifier"))
    try:
        rows = d.sql("""
            SELECT p.oid::regprocedure::text, p.prosecdef, p.proconfig
            FROM pg_proc p
            WHERE p.pronamespace IN ('pgrelay'::regnamespace, 'pgrelay_notifier'::regnamespace)
              AND (p.prosecdef OR EXISTS (SELECT 1 FROM aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a
                                           WHERE a.grantee <> p.proowner AND a.privilege_type = 'EXECUTE'))
            ORDER BY 1""")
        bodies = [d.scalar("SELECT prosrc FROM pg_proc WHERE oid = %s::regprocedure", (f,)) for f in IN_BODY]
        inlined = [d.sql("SELECT l.lanname, p.prosrc FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
                         " WHERE p.oid = %s::regprocedure", (f,))[0] for f in INLINED]
        on_caller_path = [d.sql("SELECT p.oid::regprocedure::text, p.prosecdef, p.proconfig, p.prosrc FROM pg_proc p"
                                " WHERE p.oid = %s::regprocedure", (f,))[0] for f in ON_CALLER_PATH]
    finally:
        d.close()
    assert len(rows) > 40
    unpinned = [name for name, _, config in rows
                if "search_path=pg_catalog, pg_temp" not in (config or [])
                and name not in IN_BODY + INLINED + tuple(n for n, _, _, _ in on_caller_path)]
    assert unpinned == []
    for name, definer, config, body in on_caller_path:
        code = re.sub(r"'(?:[^']|'')*'", "''", re.sub(r"/\*.*?\*/", "", body, flags=re.S))
        assert not definer and not config, name
        # every function it calls and every type it casts to or declares names its schema (as do
        # its operators: OPERATOR(pg_catalog.=))
        assert re.findall(r"(?<![\w.])(?!OPERATOR\()(\w+)\s*\(", code) == [], (name, code)
        assert re.findall(r"::\s*(?!pg_catalog\.)\w+", code) == [], (name, code)
        declared = code[code.index("DECLARE") + len("DECLARE"):code.index("BEGIN")].split(";")[:-1]
        assert declared and all(re.fullmatch(r"\s*\w+ (pg_catalog|pgrelay)\.\w+", d) for d in declared), declared
    assert sorted(name for name, _, config in rows if name in INLINED and not config) == list(INLINED)
    for language, body in inlined:
        code = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        assert language == "sql"
        assert re.search(r"(?<!pg_catalog\.)\b(current_setting|set_config)\(", code) is None, code
    for body in bodies:
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
        m.execute("SELECT pgrelay.notify('proof_jobs', 'batch ' || g) FROM generate_series(1, 2) g")
        batch = [i for (i,) in r.execute("SELECT id FROM pgrelay.queue_pending_ids(10)").fetchall()]
        assert [o for (o,) in r.execute("SELECT outcome FROM pgrelay.process_batch(%s)", (batch,))] == ["ok", "ok"]
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
        assert "schema %s belongs to role %s, which is neither a superuser nor the role installing" % (schema, owner) \
            in str(e.value)
        assert e.value.diag.message_hint == (
            "If the schema is not yours, have its owner or a superuser drop it (DROP SCHEMA %s CASCADE), then"
            " install %s again; if its owner is to own %s, install as that role." % (schema, ext, ext))
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


# A channel for the events of a watch that no Processor runs here: an email channel takes
# notification ids only, so a sql channel with a handler that does nothing.
SINK_CHANNEL = """CREATE FUNCTION public.sink(p text) RETURNS void SECURITY DEFINER SET search_path = pg_catalog
                  LANGUAGE sql AS 'SELECT NULL';
                  SELECT pgrelay.register('changes', 'sql', handler => 'public.sink(text)');"""


def test_a_cast_to_json_never_runs_as_the_extension_owner(cluster):
    """The trigger of watch_table() turns rows into JSON as pg_relay's owner, a superuser, and
    to_jsonb() converts a value through its type's cast to json. The owner of a watched table
    makes an enum type with a cast whose function records who runs it: a change of the table is
    refused with the reason, and the function never runs - until a superuser takes it over."""
    d = testlib.Database(cluster, extensions=("pg_relay",))
    owner, admin = "proof_tabowner_%d" % os.getpid(), "proof_watcher_%d" % os.getpid()
    try:
        d.sql('CREATE ROLE "%s" LOGIN; CREATE ROLE "%s" LOGIN IN ROLE pgrelay_admin' % (owner, admin))
        d.sql('GRANT CREATE ON SCHEMA public TO "%s"' % owner)
        d.sql("CREATE TABLE public.ran_as (who name, super boolean); GRANT INSERT ON public.ran_as TO PUBLIC")
        d.sql(SINK_CHANNEL)
        with psycopg.connect(d.dsn.replace("user=postgres", "user=" + owner), autocommit=True) as o:
            o.execute("""CREATE TYPE public.mood AS ENUM ('happy');
                         CREATE FUNCTION public.mood_json(v public.mood) RETURNS json LANGUAGE plpgsql AS $f$
                         BEGIN INSERT INTO public.ran_as SELECT current_user, rolsuper FROM pg_roles
                               WHERE rolname = current_user;
                               RETURN to_json(v::text); END $f$;
                         CREATE CAST (public.mood AS json) WITH FUNCTION public.mood_json(public.mood);
                         CREATE TABLE public.feelings (id int, m public.mood);""")
            o.execute('GRANT SELECT, TRIGGER ON public.feelings TO "%s"' % admin)
            with psycopg.connect(d.dsn.replace("user=postgres", "user=" + admin), autocommit=True) as a:
                a.execute("SELECT pgrelay.watch_table('public.feelings', 'changes')")
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
                o.execute("INSERT INTO public.feelings VALUES (1, 'happy')")
            assert "is not queued: a cast to json runs code of role %s" % owner in str(e.value)
            assert d.sql("SELECT * FROM public.ran_as") == []
            assert d.scalar("SELECT count(*) FROM pgrelay.queue") == 0
            # a superuser who has checked the function takes it over: the change is queued
            d.sql("ALTER FUNCTION public.mood_json(public.mood) OWNER TO postgres")
            o.execute("INSERT INTO public.feelings VALUES (2, 'happy')")
        assert d.scalar("SELECT payload::jsonb -> 'new' ->> 'm' FROM pgrelay.queue") == "happy"
    finally:
        d.close()
        with cluster.connect() as c:
            for role in (owner, admin):
                c.execute('DROP ROLE IF EXISTS "%s"' % role)


def test_a_cast_nobody_watches_blocks_no_write(cluster):
    """A role with no grants at all makes a temporary enum type with a cast to json and keeps its
    session open: the writes of other roles to a watched table go on, and are queued."""
    d = testlib.Database(cluster, extensions=("pg_relay",))
    nobody, writer = "proof_castmaker_%d" % os.getpid(), "proof_writer_%d" % os.getpid()
    try:
        d.sql('CREATE ROLE "%s" LOGIN; CREATE ROLE "%s" LOGIN' % (nobody, writer))
        d.sql(SINK_CHANNEL)
        d.sql('CREATE TABLE public.orders (id int); GRANT INSERT ON public.orders TO "%s"' % writer)
        d.sql("SELECT pgrelay.watch_table('public.orders', 'changes')")
        with psycopg.connect(d.dsn.replace("user=postgres", "user=" + nobody), autocommit=True) as n:
            n.execute("""CREATE TYPE pg_temp.e AS ENUM ('x');
                         CREATE FUNCTION pg_temp.e_json(pg_temp.e) RETURNS json LANGUAGE sql AS 'SELECT ''1''::json';
                         CREATE CAST (pg_temp.e AS json) WITH FUNCTION pg_temp.e_json(pg_temp.e);""")
            assert d.scalar("SELECT count(*) FROM pg_cast WHERE castsource::regtype::text LIKE 'pg_temp%'") == 1
            with psycopg.connect(d.dsn.replace("user=postgres", "user=" + writer), autocommit=True) as w:
                w.execute("INSERT INTO public.orders VALUES (1)")
        assert d.scalar("SELECT payload::jsonb -> 'new' ->> 'id' FROM pgrelay.queue") == "1"
    finally:
        d.close()
        with cluster.connect() as c:
            for role in (nobody, writer):
                c.execute('DROP ROLE IF EXISTS "%s"' % role)
