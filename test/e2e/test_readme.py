"""README.md's "Install" and "Use it" run as written: every ```sql block, in order, in psql on a
fresh database, then the Processor as the README's login role does the event."""
import os
import re
import subprocess

import testlib


def readme_sql():
    with open(os.path.join(testlib.ROOT, "README.md")) as f:
        text = f.read()
    text = text[text.index("## Install"):text.index("## Guarantees")]
    return re.findall(r"```sql\n(.*?)```", text, re.S)


def test_readme_use_it_runs_verbatim(cluster, processors):
    blocks = readme_sql()
    assert len(blocks) >= 4
    db = testlib.Database(cluster, extensions=())
    try:
        existing = {r[0] for r in db.sql("SELECT rolname FROM pg_roles WHERE rolname IN ('relay', 'app', 'dba')")}
        assert not existing, "roles of another test are in the way: %s" % existing
        psql = os.path.join(testlib.pg_prefix(), "lib", "postgresql", "15", "bin", "psql")
        for block in blocks:
            r = subprocess.run([psql, "-X", "-v", "ON_ERROR_STOP=1", "-d", db.dsn], input=block,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            assert r.returncode == 0, "README block failed:\n%s\n---\n%s" % (block, r.stdout)
        # The README's mail server is smtp.example.com: tests talk to loopback only, so the mail
        # channel is switched off before the Processor runs (its email stays queued).
        db.sql("SELECT pgrelay.register('welcome_mail', active => false)")
        p = processors("--once", "-d", db.dsn.replace("user=postgres", "user=relay"))
        assert p.wait_exit() == 0
        assert db.sql("SELECT order_id FROM app.invoices") == [(42,)]
        assert db.scalar("SELECT count(*) FROM pgrelay.log WHERE channel = 'order_placed' AND outcome = 'ok'") == 1
        assert db.scalar("SELECT count(*) FROM pgrelay.queue WHERE channel = 'welcome_mail'") == 1
    finally:
        db.close()
        with cluster.connect() as c:
            for role in ("relay", "app", "dba"):
                c.execute("DROP ROLE IF EXISTS %s" % role)
