"""pgrelay._next_id() under concurrency: eight sessions drawing ids at the same time never get
the same id, each session's ids rise, and drawing an id does not wait for other sessions."""
import threading

import psycopg


def test_eight_concurrent_sessions_never_share_an_id(db):
    db.sql("CREATE UNLOGGED TABLE ids (id bigint PRIMARY KEY, session int, n int)")
    barrier = threading.Barrier(8)
    errors = []

    def draw(session):
        try:
            with psycopg.connect(db.dsn, autocommit=True) as c:
                barrier.wait()
                # The primary key would refuse a duplicate; every statement draws 2,000 ids.
                for batch in range(25):
                    c.execute("INSERT INTO ids SELECT pgrelay._next_id(), %s, %s * 2000 + n"
                              " FROM generate_series(1, 2000) n", (session, batch))
        except Exception as e:  # reported below, with the session that failed
            errors.append((session, e))

    threads = [threading.Thread(target=draw, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert db.scalar("SELECT count(*) FROM ids") == 400000
    # within a session, later ids are larger: the logical clock only moves forward
    assert db.scalar("""SELECT count(*) FROM (
                            SELECT id < lag(id) OVER (PARTITION BY session ORDER BY n) AS back FROM ids) s
                        WHERE back""") == 0
    # and they decode to this node and a time close to now
    assert db.scalar("SELECT count(DISTINCT node_id) FROM ids, pgrelay.decode_id(id)") == 1
    assert db.scalar("""SELECT bool_and(created_at BETWEEN now() - interval '10 minutes'
                                                  AND clock_timestamp() + interval '10 seconds')
                        FROM ids, pgrelay.decode_id(id)""")


def test_drawing_ids_does_not_wait_for_other_sessions(db):
    """The common path takes no lock: while another session holds the advisory lock that moving the
    logical clock forward takes, a session keeps drawing ids (with lock_timeout set, waiting would
    fail the statement)."""
    with psycopg.connect(db.dsn, autocommit=True) as holder, psycopg.connect(db.dsn, autocommit=True) as c:
        c.execute("SET lock_timeout = '2s'")
        c.execute("SELECT pgrelay._next_id()")          # the clock is at the wall clock now
        holder.execute("SELECT pg_advisory_lock(1885827584, 0)")
        try:
            n = c.execute("SELECT count(DISTINCT pgrelay._next_id()) FROM generate_series(1, 2000)").fetchone()[0]
            assert n == 2000
        finally:
            holder.execute("SELECT pg_advisory_unlock(1885827584, 0)")
