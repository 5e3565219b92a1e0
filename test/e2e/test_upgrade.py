"""Extension upgrades: every released version of pg_relay and pg_relay_notifier upgrades to the
current one with ALTER EXTENSION ... UPDATE, the result is the same catalog as a fresh install of
the current version, and events queued before the upgrade are done after it."""
import difflib
import os
import re

import pytest

import testlib

EXTENSIONS = ("pg_relay", "pg_relay_notifier")
TOP = os.path.join(os.path.dirname(__file__), "..", "..", "extension")


def released(ext):
    """The released versions of ext, oldest first (the scripts kept in released/)."""
    names = os.listdir(os.path.join(TOP, ext, "released"))
    vs = [re.match(r"%s--([0-9.]+)\.sql$" % ext, n).group(1) for n in names]
    return sorted(vs, key=lambda v: [int(x) for x in v.split(".")])


def current(ext):
    with open(os.path.join(TOP, ext, ext + ".control")) as f:
        return re.search(r"default_version = '([^']+)'", f.read()).group(1)


# One query per kind of object an extension owns; each row is one line of the snapshot. ACLs are
# exploded and sorted, so the order in which grants were made does not matter.
MEMBERS = """
    SELECT d.objid FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
    WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = %(ext)s
      AND d.classid = {cls}::regclass
"""
ACL = """(SELECT string_agg(format('%%s=%%s%%s', CASE a.grantee WHEN 0 THEN 'PUBLIC'
                                          ELSE a.grantee::regrole::text END,
                                 a.privilege_type, CASE WHEN a.is_grantable THEN '*' ELSE '' END),
                          ',' ORDER BY 1)
          FROM aclexplode({acl}) a)"""
SNAPSHOT = [
    ("function", """
        SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid),
               obj_description(p.oid, 'pg_proc'), """ + ACL.format(acl="COALESCE(p.proacl, acldefault('f'::pg_catalog.char, p.proowner))") + """
        FROM pg_proc p WHERE p.oid IN (""" + MEMBERS.format(cls="'pg_proc'") + """)"""),
    ("relation", """
        SELECT c.oid::regclass::text, c.relkind, c.relpersistence, c.reloptions::text,
               obj_description(c.oid, 'pg_class'), """ + ACL.format(acl="COALESCE(c.relacl, acldefault(CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END::pg_catalog.char, c.relowner))") + """,
               CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END
        FROM pg_class c WHERE c.oid IN (""" + MEMBERS.format(cls="'pg_class'") + """)"""),
    ("column", """
        SELECT c.oid::regclass::text, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(ad.adbin, ad.adrelid), a.attidentity, a.attgenerated,
               col_description(c.oid, a.attnum), a.attcollation::regcollation::text,
               """ + ACL.format(acl="a.attacl") + """,
               -- position among the live columns: ADD COLUMN must land where a fresh CREATE puts it
               row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum)
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
        WHERE c.oid IN (""" + MEMBERS.format(cls="'pg_class'") + """)"""),
    ("constraint", """
        SELECT co.conrelid::regclass::text, co.conname, pg_get_constraintdef(co.oid)
        FROM pg_constraint co WHERE co.conrelid IN (""" + MEMBERS.format(cls="'pg_class'") + """)"""),
    ("index", """
        SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
        WHERE i.indrelid IN (""" + MEMBERS.format(cls="'pg_class'") + """)"""),
    ("trigger", """
        SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
        WHERE NOT t.tgisinternal AND t.tgrelid IN (""" + MEMBERS.format(cls="'pg_class'") + """)"""),
    ("sequence", """
        SELECT s.seqrelid::regclass::text, s.seqtypid::regtype::text, s.seqstart, s.seqincrement,
               s.seqmax, s.seqmin, s.seqcache, s.seqcycle
        FROM pg_sequence s WHERE s.seqrelid IN (""" + MEMBERS.format(cls="'pg_class'") + """)"""),
    ("type", """
        SELECT t.oid::regtype::text, t.typtype,
               (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid)
        FROM pg_type t WHERE t.oid IN (""" + MEMBERS.format(cls="'pg_type'") + """)"""),
    ("config_dump", """
        SELECT c::regclass::text, e.extcondition[array_position(e.extconfig, c)]
        FROM pg_extension e CROSS JOIN unnest(e.extconfig) c WHERE e.extname = %(ext)s"""),
    ("schema", """
        SELECT n.nspname, obj_description(n.oid, 'pg_namespace'), """ + ACL.format(acl="n.nspacl") + """
        FROM pg_namespace n WHERE n.oid IN (""" + MEMBERS.format(cls="'pg_namespace'") + """)"""),
]

# Rows the extensions seed into their own tables are part of what an install makes.
SEED_DATA = {
    "pg_relay": ["SELECT action_type, run_order, description FROM pgrelay.action_types",
                 "SELECT paused, reload_generation FROM pgrelay.control"],
    "pg_relay_notifier": [],
}


def snapshot(db, ext):
    lines = []
    for kind, query in SNAPSHOT:
        for row in db.sql(query, {"ext": ext}):
            lines.append("%s %s" % (kind, " | ".join("NULL" if v is None else str(v) for v in row)))
    for q in SEED_DATA[ext]:
        for row in db.sql(q):
            lines.append("data %s" % " | ".join("NULL" if v is None else str(v) for v in row))
    return sorted(lines)


def upgrade_paths():
    return [(ext, v) for ext in EXTENSIONS for v in released(ext)]


@pytest.mark.parametrize("ext,old", upgrade_paths())
def test_upgrade_equals_fresh_install(cluster, ext, old):
    """ALTER EXTENSION UPDATE from each released version gives the catalog of a fresh install."""
    fresh = testlib.Database(cluster, extensions=())
    upgraded = testlib.Database(cluster, extensions=())
    try:
        if ext == "pg_relay_notifier":
            fresh.sql("CREATE EXTENSION pg_relay")
            upgraded.sql("CREATE EXTENSION pg_relay VERSION %s" % quote(released("pg_relay")[0]))
        fresh.sql("CREATE EXTENSION %s" % ext)
        upgraded.sql("CREATE EXTENSION %s VERSION %s" % (ext, quote(old)))
        if ext == "pg_relay_notifier":
            upgraded.sql("ALTER EXTENSION pg_relay UPDATE")
        upgraded.sql("ALTER EXTENSION %s UPDATE" % ext)
        assert upgraded.scalar("SELECT extversion FROM pg_extension WHERE extname = %s", (ext,)) == current(ext)
        a, b = snapshot(fresh, ext), snapshot(upgraded, ext)
        diff = "\n".join(difflib.unified_diff(a, b, "fresh %s" % current(ext), "upgraded from %s" % old,
                                              lineterm="", n=0))
        assert a == b, "the upgraded catalog differs from a fresh install:\n" + diff[:20000]
    finally:
        fresh.close()
        upgraded.close()


def quote(v):
    return "'%s'" % v.replace("'", "''")


def test_events_queued_before_the_upgrade_are_done_after_it(cluster, processors):
    """Events and their channels outlive ALTER EXTENSION UPDATE and the current Processor runs them."""
    db = testlib.Database(cluster, extensions=())
    try:
        db.sql("CREATE EXTENSION pg_relay VERSION %s" % quote(released("pg_relay")[0]))
        db.sql("CREATE TABLE public.done (payload text)")
        db.sql("""CREATE FUNCTION public.handle(p text) RETURNS void LANGUAGE sql
                  SECURITY DEFINER SET search_path = pg_catalog, public
                  AS $$ INSERT INTO public.done VALUES (p) $$""")
        db.sql("GRANT EXECUTE ON FUNCTION public.handle(text) TO pgrelay_processor")
        db.sql("SELECT pgrelay.register('old_channel', 'sql', handler => 'public.handle(text)')")
        for i in range(5):
            db.sql("SELECT pgrelay.notify('old_channel', %s)", ("e%d" % i,))
        # before the update the Processor refuses to start, and says which side to upgrade
        p = processors("--once", "-d", db.dsn)
        assert p.wait_exit() == 1
        line = p.lines("startup_failed")[0]
        assert "pg_relay %s (extension) is older than this Processor" % released("pg_relay")[0] in line
        assert "ALTER EXTENSION pg_relay UPDATE" in line
        db.sql("ALTER EXTENSION pg_relay UPDATE")
        p = processors("--once", "-d", db.dsn)
        assert p.wait_exit() == 0
        assert sorted(r[0] for r in db.sql("SELECT payload FROM public.done")) == ["e%d" % i for i in range(5)]
        assert db.scalar("SELECT count(*) FROM pgrelay.queue") == 0
        assert db.scalar("SELECT count(*) FROM pgrelay.log WHERE outcome = 'ok'") == 5
    finally:
        db.close()


def test_durations_out_of_range_in_seconds_are_set_to_their_bounds(cluster):
    """pg_relay 1.3 bounded a channel's durations as intervals compare only: '1 year -359 days' was
    a timeout of 1 day to it, and of 6.25 days to the Processor. The upgrade sets such a duration
    to its bound in seconds, says so, and the table's constraints then refuse it."""
    db = testlib.Database(cluster, extensions=())
    try:
        db.sql("CREATE EXTENSION pg_relay VERSION '1.3'")
        db.sql("""CREATE FUNCTION public.h(p text) RETURNS void SECURITY DEFINER SET search_path = pg_catalog
                  LANGUAGE sql AS 'SELECT NULL'""")
        db.sql("SELECT pgrelay.register('odd', 'sql', handler => 'public.h(text)', timeout => '1 year -359 days',"
               " backoff_max => '10 years -3599 days')")
        db.sql("SELECT pgrelay.register('plain', 'sql', handler => 'public.h(text)', timeout => '5 minutes',"
               " backoff_max => '1 month')")
        notices = []
        db.conn.add_notice_handler(lambda d: notices.append(d.message_primary))
        db.sql("ALTER EXTENSION pg_relay UPDATE")
        assert notices == ['channel "odd": timeout 1 year -359 days, backoff_base 00:00:10 and backoff_max'
                           ' 10 years -3599 days are out of range in seconds; set to their bounds'], notices
        assert db.sql("SELECT channel, extract(epoch FROM timeout)::int, extract(epoch FROM backoff_base)::int,"
                      " extract(epoch FROM backoff_max)::int FROM pgrelay.channels ORDER BY 1") == \
            [("odd", 86400, 10, 2592000), ("plain", 300, 10, 2592000)]
        assert db.scalar("SELECT backoff_max::text FROM pgrelay.channels WHERE channel = 'plain'") == "1 mon"
        with pytest.raises(Exception, match="channels_timeout_check"):
            db.sql("UPDATE pgrelay.channels SET timeout = '1 year -359 days' WHERE channel = 'odd'")
    finally:
        db.close()


def test_a_watch_of_1_2_is_kept_by_the_upgrade(cluster):
    """A table watched under pg_relay 1.2 (a trigger, no record of who watches) is recorded by the
    upgrade with the table's owner as the watcher, and its changes keep being queued."""
    db = testlib.Database(cluster, extensions=())
    try:
        db.sql("CREATE EXTENSION pg_relay VERSION '1.2'")
        db.sql("SELECT pgrelay.register('changes', 'notify')")
        db.sql("CREATE TABLE public.orders (id int, note text)")
        trigger = db.scalar("SELECT pgrelay.watch_table('public.orders', 'changes', operations => '{insert}',"
                            " columns => '{id}')")
        db.sql("ALTER EXTENSION pg_relay UPDATE")
        assert db.sql("SELECT \"table\"::text, channel, trigger_name::text, watcher::text, operations, columns, state"
                      " FROM pgrelay.watched_tables") == \
            [("orders", "changes", trigger, "postgres", ["insert"], ["id"], "active")]
        db.sql("INSERT INTO public.orders VALUES (1, 'x')")
        assert db.scalar("SELECT payload::jsonb -> 'new' FROM pgrelay.queue") == {"id": 1}
    finally:
        db.close()
