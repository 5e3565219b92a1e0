"""The Debian package of the extensions for each PostgreSQL major that runs in a chroot
(test/lib/pgchroot: 17 on Debian 13, 18 on Debian unstable), built and installed the Debian way
inside that release: `pg_buildext updatecontrol` makes debian/control list postgresql-NN-pg-relay
for the release's major (debian/control.in, debian/pgversions), dpkg-buildpackage builds it with
pg_buildext and that major's PGXS, and `dpkg -i` installs it into a throwaway copy of the chroot
(`pgchroot scratch`), whose own server then runs CREATE EXTENSION from the package's files, an
upgrade from the released 1.3, and an event the Processor runs. The machine's own major (15) is
test_package.py's, with the Processor's package. Root only (the chroots)."""
import os
import re
import subprocess

import psycopg
import pytest

import testlib

PGCHROOT = os.path.join(testlib.ROOT, "test", "lib", "pgchroot")
VERSION = open(os.path.join(testlib.ROOT, "VERSION")).read().strip()
EXTENSIONS = ("pg_relay", "pg_relay_notifier")


def run(cmd, env=None, cwd=None, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
                       timeout=600)
    if check:
        assert r.returncode == 0, "%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stdout[-6000:])
    return r


def packaged_files(major):
    """What the package must put into the major's extension directory: each extension's control
    file, its released base scripts, its script of this version and an upgrade script to it from
    each released version (extension/*/Makefile)."""
    files = set()
    for ext in EXTENSIONS:
        d = os.path.join(testlib.ROOT, "extension", ext)
        makefile = open(os.path.join(d, "Makefile")).read()
        version = re.search(r"^EXT_VERSION *= *(\S+)", makefile, re.M).group(1)
        released = re.search(r"^RELEASED *= *(.*)$", makefile, re.M).group(1).split()
        files |= {ext + ".control", "%s--%s.sql" % (ext, version)}
        files |= {"%s--%s--%s.sql" % (ext, r, version) for r in released}
        files |= set(os.listdir(os.path.join(d, "released")))
    return {"usr/share/postgresql/%s/extension/%s" % (major, f) for f in files}


@pytest.fixture
def chroot_copy():
    """A throwaway copy of the session major's chroot, and the environment that runs that major in
    it without the tests' private prefix: its server uses the chroot's own share directory."""
    major = testlib.pg_major()
    if os.geteuid() != 0:
        pytest.skip("the chroots of other PostgreSQL majors are root's")
    if testlib.runs_here(major):
        pytest.skip("PostgreSQL %s is this machine's own: test_package.py builds and installs its package" % major)
    tools = run([PGCHROOT, "run", major, "--", "sh", "-c", "command -v dpkg-buildpackage dh pg_buildext"],
                check=False)
    assert tools.returncode == 0, ("the chroot of PostgreSQL %s has no package build tools (made before they "
                                   "were part of it): test/lib/pgchroot ensure %s makes one that has" % (major, major))
    work = testlib.work_dir("package%s-" % major)
    root = os.path.join(work, "root")
    run([PGCHROOT, "scratch", major, root])
    env = {k: v for k, v in os.environ.items() if k not in ("PGRELAY_PG_PREFIX", "PG_BINDIR")}
    env.update({"PGRELAY_PG_MAJOR": major, "PGRELAY_CHROOT_" + major: root})
    yield major, work, env
    if not testlib.keep_dirs():
        testlib.remove_tree(work)


def test_the_extension_package_of_a_chroot_major(chroot_copy, processors):
    major, work, env = chroot_copy
    pkg = "postgresql-%s-pg-relay" % major
    src = os.path.join(work, "src")
    testlib.copy_source(src)

    # --- built in the chroot, as that Debian release builds it --------------------------------
    # Every build dependency debian/control names is checked. build-essential (a C and C++
    # toolchain), which dpkg-checkbuilddeps adds to every build, is not: the packages are pure SQL
    # and the chroot has no C++ compiler (-I, then dpkg-buildpackage -d).
    run([PGCHROOT, "run", major, "--", "sh", "-ec",
         "pg_buildext updatecontrol; dpkg-checkbuilddeps -I -A; dpkg-buildpackage -us -uc -A -d"], env=env, cwd=src)
    control = open(os.path.join(src, "debian", "control")).read()
    assert re.findall(r"^Package: (\S+)$", control, re.M) == ["pg-relay", pkg]
    assert re.search(r"^Build-Depends-Indep: postgresql-client-%s$" % major, control, re.M)
    debs = sorted(f for f in os.listdir(work) if f.endswith(".deb"))
    assert debs == ["%s_%s_all.deb" % (pkg, VERSION)]
    deb = os.path.join(work, debs[0])
    depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout.strip()
    assert re.fullmatch(r"postgresql-%s( \(>> [0-9.]+\))?" % major, depends), depends
    listing = run(["dpkg-deb", "-c", deb]).stdout
    files = {line.split()[-1][2:] for line in listing.splitlines() if "/extension/" in line and not line.endswith("/")}
    assert files == packaged_files(major)

    # --- installed into the copy of the chroot; the cache's chroot does not have it ------------
    run([PGCHROOT, "run", major, "--", "dpkg", "-i", deb], env=env)
    r = run([PGCHROOT, "run", major, "--", "dpkg-query", "-W", "-f", "${Status} ${Version}", pkg], env=env)
    assert r.stdout == "install ok installed " + VERSION
    control_file = "/usr/share/postgresql/%s/extension/pg_relay.control" % major
    assert run([PGCHROOT, "run", major, "--", "dpkg", "-S", control_file], env=env).stdout.startswith(pkg + ": ")
    cache_env = {k: v for k, v in env.items() if not k.startswith("PGRELAY_CHROOT_")}
    assert run([PGCHROOT, "run", major, "--", "dpkg-query", "-W", pkg], env=cache_env, check=False).returncode != 0

    # --- its server uses the package's files: CREATE EXTENSION, an upgrade, an event -----------
    cluster = os.path.join(work, "cluster")
    run([testlib.PGCLUSTER, "init", cluster], env=env)
    try:
        port = int(run([testlib.PGCLUSTER, "start", cluster], env=env).stdout.strip())
        use_the_package(major, cluster, port, processors)
    finally:
        run([testlib.PGCLUSTER, "stop", cluster, "immediate"], env=env, check=False)


def use_the_package(major, cluster, port, processors):
    dsn = "host=%s port=%d user=postgres dbname=%%s" % (cluster, port)
    with psycopg.connect(dsn % "postgres", autocommit=True) as c:
        assert c.execute("SELECT setting FROM pg_config WHERE name = 'SHAREDIR'").fetchone()[0] == \
            "/usr/share/postgresql/%s" % major
        c.execute("CREATE DATABASE app")
        c.execute("CREATE DATABASE old")
    with psycopg.connect(dsn % "app", autocommit=True) as db:
        db.execute("CREATE EXTENSION pg_relay; CREATE EXTENSION pg_relay_notifier")
        assert db.execute("SELECT array_agg(extversion ORDER BY extname) FROM pg_extension WHERE extname LIKE 'pg_relay%'"
                          ).fetchone()[0] == [testlib.EXT_VERSION] * 2
        db.execute("CREATE ROLE relay LOGIN IN ROLE pgrelay_processor")
        db.execute("CREATE TABLE done (p text)")
        db.execute("CREATE FUNCTION handler(p text) RETURNS void SECURITY DEFINER SET search_path = public "
                   "LANGUAGE sql AS 'INSERT INTO done VALUES (p)'")
        db.execute("SELECT pgrelay.register('order_placed', 'sql', handler => 'handler(text)')")
        db.execute("SELECT pgrelay.notify('order_placed', 'one')")
        p = processors("--once", "-d", "host=%s port=%d dbname=app user=relay" % (cluster, port))
        assert p.wait_exit() == 0
        assert db.execute("SELECT p FROM done").fetchall() == [("one",)]
        assert db.execute("SELECT outcome FROM pgrelay.log").fetchall() == [("ok",)]
    with psycopg.connect(dsn % "old", autocommit=True) as old:
        old.execute("CREATE EXTENSION pg_relay VERSION '1.3'")
        old.execute("ALTER EXTENSION pg_relay UPDATE")
        assert old.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_relay'").fetchone()[0] == \
            testlib.EXT_VERSION
