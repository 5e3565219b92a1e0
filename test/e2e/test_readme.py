"""README.md's "Install" and "Use it" run as written: every ```sql block, in order, in psql on a
fresh database, then the Processor as the README's login role does the event; the links between
README.md and docs/ resolve, and the pages send nobody to material outside the repository."""
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
        psql = testlib.program("psql")
        for block in blocks:
            r = subprocess.run(psql + ["-X", "-v", "ON_ERROR_STOP=1", "-d", db.dsn], input=block,
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
