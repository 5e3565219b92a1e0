/*
 * test_pgconn.c - reconnecting without a server: attempts, backoff, waiting until an attempt is
 * due, the one-attempt mode of --once, and what a lost session does to the next success.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "pgconn.h"
#include "unit.h"

/* Nothing listens here: every attempt fails at once, without a network. */
#define NOWHERE "host=/nonexistent/pg_relay_test port=1 connect_timeout=1"

static struct PgConn conn;
static long waited;
static bool up;

static void
one_session(void)
{
	up = pgconn_session(&conn, 30000, &waited);
}

static void
test_failed_attempts_back_off(void)
{
	const char *out;

	pgconn_init(&conn, "worker-3", NOWHERE, "single");
	out = unit_capture(one_session);
	CHECK(!up && conn.attempts == 1);
	CHECK(waited >= 50 && waited <= 100); /* the first delay, 100 ms, with jitter */
	CHECK(strstr(out, " warn reconnecting conn=worker-3 attempt=1 retry_in_ms=") != NULL);
	CHECK(strstr(out, " error=") != NULL);

	/* not due yet: no attempt, no line, the time left */
	out = unit_capture(one_session);
	CHECK(!up && conn.attempts == 1 && waited > 0 && waited <= 101);
	CHECK_STR(out, "");

	/* due again: the second attempt doubles the delay */
	conn.next_attempt_us = 0;
	out = unit_capture(one_session);
	CHECK(!up && conn.attempts == 2 && conn.backoff_ms == 200);
	CHECK(strstr(out, "attempt=2 ") != NULL);
	pgconn_destroy(&conn);
}

static void
test_one_attempt_is_not_logged(void)
{
	const char *out;

	pgconn_init(&conn, "control", NOWHERE, "single");
	conn.one_attempt = true;
	out = unit_capture(one_session);
	CHECK(!up && conn.attempts == 1 && conn.error[0] != '\0');
	CHECK_STR(out, "");
	pgconn_destroy(&conn);
}

static void
test_lost_session_reconnects_at_once(void)
{
	pgconn_init(&conn, "worker-1", NOWHERE, "single");
	conn.backoff_ms = 3200;
	conn.next_attempt_us = 1LL << 62;
	pgconn_lost(&conn);
	CHECK(conn.attempts == 1 && conn.backoff_ms == 0 && conn.next_attempt_us == 0);
	unit_capture(one_session); /* due at once: an attempt is made (and fails here) */
	CHECK(!up && conn.attempts == 2 && conn.backoff_ms == 100);
	pgconn_destroy(&conn);
}

/* The hints of set-up errors name the fix; the first matching entry wins. */
static void
test_connect_hints(void)
{
	bool config;
	const char *h;

	h = pgconn_connect_hint("FATAL:  Peer authentication failed for user \"relay\"", &config);
	CHECK(config && h != NULL && strstr(h, "pg_ident.conf") != NULL && strstr(h, "host=127.0.0.1") != NULL);
	h = pgconn_connect_hint("FATAL:  role \"relay\" is not permitted to log in", &config);
	CHECK(config && h != NULL && strstr(h, "LOGIN") != NULL);
	h = pgconn_connect_hint("FATAL:  role \"relay\" does not exist", &config);
	CHECK(config && h != NULL && strstr(h, "create the login role") != NULL);
	h = pgconn_connect_hint("connection to server failed: Connection refused", &config);
	CHECK(!config && h != NULL);
	CHECK(pgconn_connect_hint("something else", &config) == NULL && !config);
}

/*
 * A server out of connection slots (SQLSTATE 53300) may have room later: a warning whose hint says
 * what is full, what the Processor needs, and what to raise; never read as a missing role or
 * database.
 */
static void
test_slot_hints(void)
{
	bool config = true;
	const char *h;

	h = pgconn_connect_hint("connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: FATAL: sorry, too "
							"many clients already",
							&config);
	CHECK(!config && h != NULL);
	CHECK_STR(h, "the server has no connection slot left: raise max_connections (a server restart), end "
				 "idle sessions, or lower --workers");
	pgconn_hint_workers(4);
	h = pgconn_connect_hint("FATAL: sorry, too many clients already", &config);
	CHECK(!config && h != NULL);
	CHECK_STR(h, "the server has no connection slot left; this Processor needs 5 connections (--workers=4 "
				 "and its control connection): raise max_connections (a server restart), end idle "
				 "sessions, or lower --workers");
	/* PostgreSQL 15, and 16 and later */
	h = pgconn_connect_hint("FATAL: remaining connection slots are reserved for non-replication superuser "
							"connections",
							&config);
	CHECK(!config && h != NULL && strstr(h, "reserved") != NULL && strstr(h, "max_connections") != NULL);
	h = pgconn_connect_hint("FATAL: remaining connection slots are reserved for roles with the SUPERUSER "
							"attribute",
							&config);
	CHECK(!config && h != NULL && strstr(h, "needs 5 connections") != NULL);
	h = pgconn_connect_hint("FATAL: too many connections for role \"relay\"", &config);
	CHECK(!config && h != NULL && strstr(h, "ALTER ROLE ... CONNECTION LIMIT") != NULL);
	CHECK(strstr(h, "create the login role") == NULL);
	h = pgconn_connect_hint("FATAL: too many connections for database \"app\"", &config);
	CHECK(!config && h != NULL && strstr(h, "ALTER DATABASE ... CONNECTION LIMIT") != NULL);
}

int
main(void)
{
	RUN(test_failed_attempts_back_off);
	RUN(test_one_attempt_is_not_logged);
	RUN(test_lost_session_reconnects_at_once);
	RUN(test_connect_hints);
	RUN(test_slot_hints);
	return UNIT_DONE();
}
