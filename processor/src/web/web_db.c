/*
 * web_db.c - the web console's database session (pgconn.c does the libpq work), and the question
 * every request starts with: what may this role read and do?
 */
#include "web_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "install_state.h"
#include "pgconn.h"

static struct PgConn db;
static unsigned long setup_session; /* the session whose client_encoding was set */
static char last_error[1200];
static char last_hint[512];

/*
 * One round trip. A name is looked up only when the role may use its schema (to_regclass refuses
 * a schema the role may not use, and CASE keeps it from being evaluated then), and an object that
 * does not exist (an older pg_relay, no notifier) reads as not allowed. The notifier's schema
 * counts only when it is pg_relay's owner's or a superuser's and closed to others (NOTIFIER_TRUSTED):
 * a schema of that name that another role made holds her views, whose functions would run as the
 * console's role.
 */
static const char caps_sql[] =
	"SELECT current_user, pg_catalog.current_database(),"
	" (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_relay'),"
	" pg_catalog.pg_has_role(current_user, 'pgrelay_admin', 'MEMBER'),"
	" pg_catalog.pg_has_role(current_user, 'pgrelay_monitor', 'MEMBER'),"
	" CASE WHEN r THEN COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay.log'), "
	"'SELECT'), false) END,"
	" CASE WHEN r THEN COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay.attempts'), "
	"'SELECT'), false) END,"
	" CASE WHEN r THEN COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay.channels'), "
	"'SELECT'), false) END,"
	" CASE WHEN r THEN COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay.queue'), "
	"'SELECT'), false) END,"
	" CASE WHEN r THEN COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay.failed'), "
	"'SELECT'), false) END,"
	" CASE WHEN r THEN "
	"COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay.queue_depth'), 'SELECT'),"
	"                           false) END,"
	" CASE WHEN n THEN "
	"COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay_notifier.notifications'),"
	"                           'SELECT') AND pg_catalog.has_table_privilege("
	"                           pg_catalog.to_regclass('pgrelay_notifier.recipients'), 'SELECT') AND"
	"                           "
	"pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay_notifier.attempts'),"
	"                           'SELECT'), false) END,"
	" CASE WHEN n THEN "
	"COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay_notifier.attempt_traces'),"
	"                           'SELECT'), false) END,"
	" CASE WHEN r THEN COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay.schedules'), "
	"'SELECT'), false) END,"
	" CASE WHEN r THEN "
	"COALESCE(pg_catalog.has_function_privilege(pg_catalog.to_regprocedure('pgrelay.retry_failed(bigint)'),"
	"                           'EXECUTE'), false) END,"
	" CASE WHEN r THEN "
	"COALESCE(pg_catalog.has_function_privilege(pg_catalog.to_regprocedure('pgrelay.pause(text)'),"
	"                           'EXECUTE'), false) END,"
	/* schedule() of 1.4 (with topic and event_type), else of 1.3: one that may call it */
	" CASE WHEN r THEN COALESCE(pg_catalog.has_function_privilege(COALESCE(pg_catalog.to_regprocedure("
	"'pgrelay.schedule(text, text, text, text, text, text, boolean, text, text)'), "
	"pg_catalog.to_regprocedure("
	"'pgrelay.schedule(text, text, text, text, text, text, boolean)')), 'EXECUTE'), false) END,"
	" CASE WHEN r THEN COALESCE(pg_catalog.has_function_privilege(pg_catalog.to_regprocedure("
	"'pgrelay.cancel(bigint)'), 'EXECUTE'), false) END,"
	/* topics (1.4): absent objects of an older pg_relay read as not allowed */
	" CASE WHEN r THEN COALESCE(pg_catalog.has_table_privilege("
	"pg_catalog.to_regclass('pgrelay.topic_subscribers'), 'SELECT'), false) END,"
	" CASE WHEN r THEN COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass('pgrelay.topics'), "
	"'SELECT'), false) END,"
	" CASE WHEN r THEN COALESCE(pg_catalog.has_function_privilege(pg_catalog.to_regprocedure("
	"'pgrelay.publication_status(bigint)'), 'EXECUTE'), false) END,"
	" pg_catalog.pg_is_in_recovery(), pg_catalog.date_part('epoch', pg_catalog.now())"
	" FROM (SELECT COALESCE((SELECT pg_catalog.has_schema_privilege(oid, 'USAGE') FROM "
	"pg_catalog.pg_namespace"
	"                        WHERE nspname = 'pgrelay'), false) AS r,"
	"              COALESCE((SELECT pg_catalog.has_schema_privilege(oid, 'USAGE') FROM "
	"pg_catalog.pg_namespace"
	"                        WHERE nspname = 'pgrelay_notifier'), false) AND " NOTIFIER_TRUSTED " AS n) s";

/*
 * trusted: may the console use pg_relay's schema on this session? Asked of the catalog, as the
 * Processor and pg_relay status ask (install_state.c): a schema pgrelay whose owner could not act as
 * the console's role holds views and functions that would run with the console's rights. False
 * with the reason in err (and its hint after it).
 */
static bool
trusted(char *err, size_t errlen)
{
	struct InstallState st;

	if (!install_state_read(&db, IR_USER, &st)) {
		snprintf(err, errlen, "%s", db.error);
		return false;
	}
	if (st.relay.kind != IK_FOREIGN)
		return true;
	snprintf(err, errlen, "%s (hint: %s)", st.relay.why, st.relay.hint);
	return false;
}

bool
web_db_open(const char *conninfo, char *err, size_t errlen)
{
	long wait_ms;

	pgconn_init(&db, "web", conninfo, "single");
	/* A page waits at most this long for a statement; a slow page is a bug, not a wait. */
	db.session_timeout_ms = 10000;
	if (!pgconn_session(&db, 1000, &wait_ms)) {
		snprintf(err, errlen, "%s", db.error);
		return false;
	}
	return trusted(err, errlen);
}

void
web_db_close(void)
{
	pgconn_destroy(&db);
}

/* session makes sure there is a session, text comes back as UTF-8 on it. */
static bool
session(void)
{
	long wait_ms;
	PGresult *res;

	if (!pgconn_session(&db, 5000, &wait_ms)) {
		snprintf(last_error, sizeof last_error, "the database cannot be reached (retrying): %s", db.error);
		return false;
	}
	if (setup_session != db.sessions) {
		/* a new session: the schema may have been dropped and made again by another role */
		if (!trusted(last_error, sizeof last_error))
			return false;
		res =
			pgconn_query_sql(&db, "SELECT pg_catalog.set_config('client_encoding', 'UTF8', false)", 0, NULL);
		if (res == NULL) {
			snprintf(last_error, sizeof last_error, "%s", db.error);
			return false;
		}
		pgconn_clear(res);
		setup_session = db.sessions;
	}
	return true;
}

PGresult *
web_db_query(const char *sql, int n, const char *const *values)
{
	PGresult *res;

	last_error[0] = '\0';
	last_hint[0] = '\0';
	if (!session())
		return NULL;
	res = pgconn_query_sql(&db, sql, n, values);
	if (res == NULL) {
		snprintf(last_error, sizeof last_error, "%s", db.error);
		snprintf(last_hint, sizeof last_hint, "%s", db.hint);
		if (db.lost)
			pgconn_lost(&db);
	}
	return res;
}

const char *
web_db_error(void)
{
	return last_error;
}

const char *
web_db_hint(void)
{
	return last_hint;
}

const char *
web_db_sqlstate(void)
{
	return db.sqlstate;
}

void
web_db_clear(PGresult *res)
{
	pgconn_clear(res);
}

const char *
web_db_value(const PGresult *res, int row, int col)
{
	const char *v = pgconn_value(res, row, col);

	return v ? v : "";
}

bool
web_db_null(const PGresult *res, int row, int col)
{
	return pgconn_value(res, row, col) == NULL;
}

bool
web_db_flag(const PGresult *res, int row, int col)
{
	return strcmp(web_db_value(res, row, col), "t") == 0;
}

int
web_db_rows(const PGresult *res)
{
	return PQntuples(res);
}

bool
web_db_caps(struct WebCaps *caps)
{
	PGresult *res;

	memset(caps, 0, sizeof *caps);
	res = web_db_query(caps_sql, 0, NULL);
	if (res == NULL)
		return false;
	snprintf(caps->role, sizeof caps->role, "%s", web_db_value(res, 0, 0));
	snprintf(caps->database, sizeof caps->database, "%s", web_db_value(res, 0, 1));
	snprintf(caps->version, sizeof caps->version, "%s", web_db_value(res, 0, 2));
	caps->admin = web_db_flag(res, 0, 3);
	caps->monitor = web_db_flag(res, 0, 4);
	caps->read_log = web_db_flag(res, 0, 5);
	caps->read_attempts = web_db_flag(res, 0, 6);
	caps->read_channels = web_db_flag(res, 0, 7);
	caps->read_queue = web_db_flag(res, 0, 8);
	caps->read_failed = web_db_flag(res, 0, 9);
	caps->read_views = web_db_flag(res, 0, 10);
	caps->read_mail = web_db_flag(res, 0, 11);
	caps->read_traces = web_db_flag(res, 0, 12);
	caps->read_schedules = web_db_flag(res, 0, 13);
	caps->act_failed = web_db_flag(res, 0, 14);
	caps->act_pause = web_db_flag(res, 0, 15);
	caps->act_schedule = web_db_flag(res, 0, 16);
	caps->act_cancel = web_db_flag(res, 0, 17);
	caps->read_topics = web_db_flag(res, 0, 18);
	caps->read_topiclist = web_db_flag(res, 0, 19);
	caps->read_pubs = web_db_flag(res, 0, 20);
	caps->standby = web_db_flag(res, 0, 21);
	caps->now = atof(web_db_value(res, 0, 22));
	caps->ok = true;
	web_db_clear(res);
	return true;
}
