"""README.md's "Install" and "Use it" run as written: every ```sql block, in order, in psql on a
fresh database, as a superuser; and the path without one (`pg_relay install` and the owner's block
for the roles, then the same blocks as the database's owner) on 15, 17 and 18. Then the Processor
as the README's login role does the event. The links between README.md and docs/ resolve, and the
pages send nobody to material outside the repository."""
import os
import re
import subprocess

import testlib

# The first line of the README's block for the roles on the path without a superuser: that path
# runs it instead of the superuser's first block, and the superuser's path skips it.
OWNER_BLOCK = "-- the roles, made by the owner"


def readme_text():
    with open(os.path.join(testlib.ROOT, "README.md")) as f:
        text = f.read()
    return text[text.index("## Install"):text.index("## Guarantees")]


def readme_sql():
    return re.findall(r"```sql\n(.*?)```", readme_text(), re.S)


def superuser_blocks():
    return [b for b in readme_sql() if not b.startswith(OWNER_BLOCK)]


def owner_blocks():
    """The owner's block for the roles in place of the superuser's first block, then the rest."""
    blocks = readme_sql()
    [owner] = [b for b in blocks if b.startswith(OWNER_BLOCK)]
    rest = superuser_blocks()
    assert rest[0].startswith("CREATE EXTENSION pg_relay;")
    return [owner] + rest[1:]


def run_blocks(blocks, dsn, major=None):
    psql = testlib.program("psql", major)
    for block in blocks:
        r = subprocess.run(psql + ["-X", "-v", "ON_ERROR_STOP=1", "-d", dsn], input=block,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0, "README block failed:\n%s\n---\n%s" % (block, r.stdout)


def test_readme_use_it_runs_verbatim(cluster, processors):
    blocks = superuser_blocks()
    assert len(blocks) >= 4
    db = testlib.Database(cluster, extensions=())
    try:
        existing = {r[0] for r in db.sql("SELECT rolname FROM pg_roles WHERE rolname IN ('relay', 'app', 'dba')")}
        assert not existing, "roles of another test are in the way: %s" % existing
        run_blocks(blocks, db.dsn)
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


def test_readme_runs_verbatim_as_the_owner_without_a_superuser(processors):
    """A managed service's customer: the owner of the database, with CREATEROLE and pg_monitor,
    no superuser. The README's `pg_relay install` with its flags, the owner's block for the roles,
    then every block of "Use it" as the owner; the Processor as relay runs the event."""
    c = testlib.Cluster(os.path.join(testlib.work_dir("readme-owner-"), "c"))
    c.start()
    try:
        with c.connect() as s:
            s.execute("CREATE ROLE owner LOGIN CREATEDB CREATEROLE IN ROLE pg_monitor")
            s.execute("CREATE DATABASE app OWNER owner")
        [flags] = re.findall(r'^pg_relay install -d "[^"]*dbname=app user=owner[^"]*"((?: --[a-z-]+)*)',
                             readme_text(), re.M)
        r = subprocess.run([testlib.PROCESSOR, "install", "-d", c.dsn("app", user="owner")] + flags.split(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        assert r.returncode == 0, r.stdout
        run_blocks(owner_blocks(), c.dsn("app", user="owner"), c.major)
        with c.connect("app", user="dba") as d:
            d.execute("SELECT pgrelay.register('welcome_mail', active => false)")  # as above
        p = processors("--once", "-d", c.dsn("app", user="relay"))
        assert p.wait_exit() == 0
        with c.connect("app", user="app") as a:
            assert a.execute("SELECT order_id FROM app.invoices").fetchall() == [(42,)]
        with c.connect("app", user="dba") as d:
            assert d.execute("SELECT count(*) FROM pgrelay.log WHERE channel = 'order_placed' AND outcome = 'ok'"
                             ).fetchone()[0] == 1
            assert d.execute("SELECT count(*) FROM pgrelay.queue WHERE channel = 'welcome_mail'").fetchone()[0] == 1
            assert d.execute("SELECT array_agg(rolname::text) FROM pg_roles WHERE rolsuper").fetchone()[0] == ["postgres"]
            assert d.execute("SELECT * FROM pgrelay.installation()").fetchone()[1] == "script"
    finally:
        c.stop("immediate")


def doc_pages():
    docs = os.path.join(testlib.ROOT, "docs")
    return [os.path.join(testlib.ROOT, "README.md")] + sorted(
        os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))


def anchors(path):
    """The #anchors a Markdown page's headings make (GitHub's rule: lower case, punctuation but
    - and _ dropped, spaces to -, a repeated heading numbered)."""
    seen, out = {}, set()
    with open(path) as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    for h in re.findall(r"^#{1,6} +(.*?) *$", text, re.M):
        a = re.sub(r"[^\w\- ]", "", h.lower().replace("`", "")).replace(" ", "-")
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else "%s-%d" % (a, n))
    return out


def test_every_link_between_the_pages_resolves():
    """Each relative link of README.md and docs/*.md names a file of the repository, and each
    #anchor a heading of the page it points into."""
    broken = []
    for page in doc_pages():
        with open(page) as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(dest):
                broken.append("%s: %s (no such file)" % (os.path.relpath(page, testlib.ROOT), target))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                broken.append("%s: %s (no such heading)" % (os.path.relpath(page, testlib.ROOT), target))
    assert not broken, "\n".join(broken)


def test_the_pages_stand_alone():
    """The documentation never sends a reader to material outside the repository: design notes,
    a specification or an issue tracker users do not have."""
    outside = re.compile(r"SPEC\.md|\bSPEC\b|(?i:\bseeds?/|\bseed \d{3}\b|\bthe issue\b|\bissue #?\d+\b|"
                         r"shared/reference)")
    found = []
    for page in doc_pages() + [os.path.join(testlib.ROOT, "docs", "pg_relay.1")]:
        with open(page) as f:
            for n, line in enumerate(f, 1):
                if outside.search(line):
                    found.append("%s:%d: %s" % (os.path.relpath(page, testlib.ROOT), n, line.strip()))
    assert not found, "\n".join(found)
