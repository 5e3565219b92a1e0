"""Who may do what with the extensions' objects: an extension schema that somebody else created
first is refused."""
import os

import psycopg
import pytest

import testlib


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
