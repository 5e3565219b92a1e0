/*
 * pgconn.c - libpq behind a small API: connect with keyword arrays and reconnect with backoff,
 * run the statements of statements.c, one-line errors, notices into our log, cancel from another
 * thread.
 */
#include "pgconn.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "utf8.h"

/* The first reconnect delay; it doubles up to --reconnect-max. */
#define RECONNECT_MIN_MS 100

void
pgconn_init(struct PgConn *c, const char *label, const char *conninfo, const char *mode)
{
	memset(c, 0, sizeof *c);
	pthread_mutex_init(&c->cancel_mu, NULL);
	snprintf(c->label, sizeof c->label, "%s", label);
	snprintf(c->mode, sizeof c->mode, "%s", mode);
	c->conninfo = conninfo;
	c->timeout_ms = -1;
	c->session_timeout_ms = -1;
}

const char *
pgconn_label(const struct PgConn *c)
{
	return c->label;
}

void
pgconn_destroy(struct PgConn *c)
{
	if (c == NULL)
		return;
	pgconn_close(c);
	pthread_mutex_destroy(&c->cancel_mu);
}

/* is_worker: a worker's connection, not the control connection (the kind in the metrics). */
static bool
is_worker(const struct PgConn *c)
{
	return strncmp(c->label, "worker", 6) == 0;
}

/*
 * set_error keeps a one-line copy of a libpq message (they end in newlines and tabs), without
 * control characters: it is printed on terminals and quotes names anybody may choose.
 */
static void
set_error(struct PgConn *c, const char *msg, const char *sqlstate)
{
	size_t i, n = 0;
	bool space = false;

	for (i = 0; msg && msg[i] && n < sizeof c->error - 1; i++) {
		char ch = msg[i];

		if (ch == '\n' || ch == '\t' || ch == '\r' || ch == ' ') {
			space = n > 0;
			continue;
		}
		if (space && n < sizeof c->error - 2)
			c->error[n++] = ' ';
		space = false;
		c->error[n++] = ch;
	}
	c->error[n] = '\0';
	utf8_no_controls(c->error);
	snprintf(c->sqlstate, sizeof c->sqlstate, "%s", sqlstate ? sqlstate : "");
}

static void
notice_receiver(void *arg, const PGresult *res)
{
	struct PgConn *c = arg;
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);

	/* a WARNING says something is wrong (a handler that meddled with the session, say): shown */
	if (severity != NULL && strcmp(severity, "WARNING") == 0)
		log_warn_c(c, "server_warning", LOG_STR("message", msg),
				   LOG_OPT_STR("hint", PQresultErrorField(res, PG_DIAG_MESSAGE_HINT)));
	else
		log_debug_c(c, "notice", LOG_STR("message", msg));
}

/*
 * connect_once opens the session (closing any old one): keepalives and a connect timeout unless
 * the connection string says otherwise, application_name pg_relay unless it or PGAPPNAME names
 * another (fallback_application_name), then the session settings.
 * Returns false with c->error set.
 */
static bool
connect_once(struct PgConn *c)
{
	/* Defaults first: anything the connection string sets (expand_dbname) overrides them. */
	const char *keys[] = {"fallback_application_name", "connect_timeout",  "keepalives", "keepalives_idle",
						  "keepalives_interval",       "keepalives_count", "dbname",     NULL};
	const char *vals[] = {"pg_relay", "10", "1", "30", "10", "3", c->conninfo, NULL};
	const char *params[1];
	PGconn *conn;

	pgconn_close(c);
	if (c->conninfo == NULL)
		keys[6] = NULL; /* PG* environment variables only */
	conn = PQconnectdbParams(keys, vals, 1);
	if (conn == NULL) {
		set_error(c, "out of memory", NULL);
		c->lost = true;
		return false;
	}
	if (PQstatus(conn) != CONNECTION_OK) {
		set_error(c, PQerrorMessage(conn), NULL);
		c->lost = true;
		PQfinish(conn);
		return false;
	}
	PQsetNoticeReceiver(conn, notice_receiver, c);
	c->conn = conn;
	metrics_conn_opened(is_worker(c));
	c->sessions++;
	c->opened_us = now_us();
	c->timeout_ms = -1;
	c->prepared = 0;
	c->distrust_prepared = false;
	pthread_mutex_lock(&c->cancel_mu);
	c->cancel = PQgetCancel(conn);
	pthread_mutex_unlock(&c->cancel_mu);

	params[0] = c->mode;
	if (!pgconn_exec(c, STMT_SESSION_SETUP, params) ||
		(c->session_timeout_ms >= 0 && !pgconn_set_timeout(c, c->session_timeout_ms))) {
		pgconn_close(c);
		return false;
	}
	return true;
}

bool
pgconn_alive(struct PgConn *c)
{
	struct pollfd pfd;
	int round;

	if (c->conn == NULL || PQstatus(c->conn) != CONNECTION_OK)
		return false;
	/*
	 * An idle session has nothing to read unless the server said something, usually goodbye: a
	 * FATAL message (libpq hands it to the notice receiver), then the end of the stream, which
	 * only the next read sees. Read until there is nothing more, or the connection is gone.
	 */
	for (round = 0; round < 4; round++) {
		pfd.fd = PQsocket(c->conn);
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (pfd.fd < 0)
			break;
		if (poll(&pfd, 1, 0) <= 0)
			return true;
		if (!PQconsumeInput(c->conn) || (PQisBusy(c->conn), PQstatus(c->conn) != CONNECTION_OK)) {
			set_error(c, PQerrorMessage(c->conn), NULL);
			c->lost = true;
			return false;
		}
	}
	return pfd.fd >= 0; /* still talking after four reads: alive, the statement will tell */
}

/*
 * The connections this process holds (pgconn_hint_workers), which the hint of a server out of
 * connection slots names: "" until the Processor says, before its first connection.
 */
static char slots_needed[96];

void
pgconn_hint_workers(int workers)
{
	snprintf(slots_needed, sizeof slots_needed,
			 "; this Processor needs %d connections (--workers=%d and its control connection)", workers + 1,
			 workers);
}

/*
 * slots_hint: the hint for a connection the server refused for want of a slot (SQLSTATE 53300),
 * which ends when other sessions do: what is full, what this Processor needs, and what to raise.
 */
static const char *
slots_hint(const char *error)
{
	static const struct {
		const char *says;
		const char *what;
		const char *fix;
	} full[] = {
		/* before the generic entries below, which would read these as a missing role or database */
		{"too many connections for role", "the role's CONNECTION LIMIT is reached",
		 "raise it (ALTER ROLE ... CONNECTION LIMIT n, -1 for none), or end the role's other sessions"},
		{"too many connections for database", "the database's CONNECTION LIMIT is reached",
		 "raise it (ALTER DATABASE ... CONNECTION LIMIT n, -1 for none), or end its other sessions"},
		{"too many clients already", "the server has no connection slot left",
		 "raise max_connections (a server restart), end idle sessions, or lower --workers"},
		{"remaining connection slots are reserved",
		 "the slots left are reserved (superuser_reserved_connections, reserved_connections)",
		 "raise max_connections (a server restart), end idle sessions, or lower --workers"},
	};
	static _Thread_local char hint[512];
	size_t i;

	for (i = 0; i < sizeof full / sizeof full[0]; i++)
		if (strstr(error, full[i].says) != NULL) {
			snprintf(hint, sizeof hint, "%s%s: %s", full[i].what, slots_needed, full[i].fix);
			return hint;
		}
	return NULL;
}

const char *
pgconn_connect_hint(const char *error, bool *config)
{
	static const struct {
		const char *says;
		bool config; /* nothing will change until someone changes the set-up */
		const char *hint;
	} known[] = {
		{"password authentication failed", true,
		 "check the role's password: the connection string, PGPASSWORD, or a .pgpass file (PGPASSFILE)"},
		{"no password supplied", true,
		 "give the role's password: the connection string, PGPASSWORD or .pgpass"},
		{"no pg_hba.conf entry", true,
		 "add a pg_hba.conf line for this host, role and database, then reload"},
		/* Peer authentication ignores any password: one works over TCP only (Debian's default). */
		{"Peer authentication failed", true,
		 "on this socket the server takes the OS user, not a password: connect over TCP "
		 "(host=127.0.0.1) to log in with the role's password, or map this OS user to the role "
		 "(pg_ident.conf and map= in pg_hba.conf): docs/operations.md, Authentication"},
		{"Ident authentication failed", true,
		 "map this OS user to the role (pg_ident.conf and map= in pg_hba.conf), or use a password"},
		{"is not permitted to log in", true, "ALTER ROLE ... LOGIN for the Processor's role"},
		{"role \"", true, "create the login role, or fix user= in --dbname"},
		{"database \"", true, "create the database, or fix dbname= in --dbname"},
		{"SSL", true, "check the sslmode and certificates in --dbname"},
		{"Connection refused", false, "is the server running, and listening on that host and port?"},
		{"No such file or directory", false, "is the server running, and is host= the socket directory?"},
		{"timeout expired", false, "the server did not answer within connect_timeout: network, firewall?"},
		{"could not translate host name", false, "check host= in --dbname: the name does not resolve"},
		{"the database system is starting up", false, "the server is starting: wait"},
		{"the database system is shutting down", false, "the server is stopping"},
	};
	const char *slots = error != NULL ? slots_hint(error) : NULL;
	size_t i;

	*config = false;
	if (slots != NULL)
		return slots; /* it may pass by itself, as other sessions end */
	for (i = 0; error != NULL && i < sizeof known / sizeof known[0]; i++)
		if (strstr(error, known[i].says) != NULL) {
			*config = known[i].config;
			return known[i].hint;
		}
	return NULL;
}

bool
pgconn_session(struct PgConn *c, long reconnect_max_ms, long *wait_ms)
{
	long long now = now_us();
	const char *hint;

	*wait_ms = 0;
	if (pgconn_is_up(c))
		return true;
	if (now < c->next_attempt_us) {
		*wait_ms = (long) ((c->next_attempt_us - now) / 1000) + 1;
		return false;
	}
	c->lasting = false;
	if (connect_once(c)) {
		if (c->attempts > 0) {
			log_info_c(c, "reconnected", LOG_INT("attempts", c->attempts));
			metrics_reconnected(is_worker(c));
		}
		c->attempts = 0;
		c->backoff_ms = 0;
		return true;
	}
	c->attempts++;
	metrics_conn_failed(is_worker(c));
	c->backoff_ms = backoff_next(c->backoff_ms, RECONNECT_MIN_MS, reconnect_max_ms);
	*wait_ms = backoff_jitter(c->backoff_ms, backoff_random());
	c->next_attempt_us = now_us() + *wait_ms * 1000LL;
	hint = pgconn_connect_hint(c->error, &c->lasting);
	/*
	 * A failure that only an admin can end (a password, a missing role) is an error; before the
	 * first session of a connection that stops on it, it is the caller's to report.
	 */
	if (!c->one_attempt && !(c->stop_if_lasting && c->lasting && c->sessions == 0))
		LOG_AT(c->lasting ? LL_ERROR : LL_WARN, pgconn_label(c), "reconnecting",
			   LOG_INT("attempt", c->attempts), LOG_MS("retry_in_ms", *wait_ms), LOG_STR("error", c->error),
			   LOG_OPT_STR("hint", hint));
	return false;
}

void
pgconn_lost(struct PgConn *c)
{
	pgconn_close(c);
	c->attempts = 1; /* counts the lost session, so "reconnected" is logged */
	c->backoff_ms = 0;
	c->next_attempt_us = 0; /* the first attempt at once, then back off */
}

void
pgconn_rollback(struct PgConn *c)
{
	if (c->conn == NULL || PQtransactionStatus(c->conn) == PQTRANS_IDLE)
		return;
	if (!pgconn_exec(c, STMT_ROLLBACK, NULL))
		pgconn_close(c);
}

void
pgconn_close(struct PgConn *c)
{
	pthread_mutex_lock(&c->cancel_mu);
	if (c->cancel)
		PQfreeCancel(c->cancel);
	c->cancel = NULL;
	pthread_mutex_unlock(&c->cancel_mu);
	if (c->conn) {
		PQfinish(c->conn);
		metrics_conn_closed(is_worker(c));
	}
	c->conn = NULL;
	c->timeout_ms = -1;
	c->prepared = 0;
	c->distrust_prepared = false;
}

bool
pgconn_is_up(const struct PgConn *c)
{
	return c->conn != NULL && PQstatus(c->conn) == CONNECTION_OK;
}

/* start_statement clears the last failure; false when there is no session to run on. */
static bool
start_statement(struct PgConn *c)
{
	c->lost = false;
	c->sqlstate[0] = '\0';
	c->error[0] = '\0';
	if (c->conn == NULL) {
		set_error(c, "not connected", NULL);
		c->lost = true;
		return false;
	}
	return true;
}

/* check_result returns res when it succeeded; otherwise records the failure, frees res, NULL. */
static PGresult *
check_result(struct PgConn *c, PGresult *res)
{
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;

	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)
		return res;

	if (res != NULL && PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) != NULL)
		set_error(c, PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY),
				  PQresultErrorField(res, PG_DIAG_SQLSTATE));
	else
		set_error(c, PQerrorMessage(c->conn), NULL);
	snprintf(c->hint, sizeof c->hint, "%s",
			 res && PQresultErrorField(res, PG_DIAG_MESSAGE_HINT)
				 ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT)
				 : "");
	utf8_no_controls(c->hint);
	/*
	 * An error without a SQLSTATE was made by libpq itself ("server closed the connection
	 * unexpectedly"): treat it as a lost session even if PQstatus has not caught up yet.
	 */
	c->lost = PQstatus(c->conn) != CONNECTION_OK || c->sqlstate[0] == '\0';
	/* 57P01..57P03: the server is shutting down or restarting; the session is gone with it. */
	if (strncmp(c->sqlstate, "57P0", 4) == 0 && strcmp(c->sqlstate, "57P04") != 0)
		c->lost = true;
	PQclear(res);
	return NULL;
}

_Static_assert(STMT_COUNT <= 64, "struct PgConn.prepared has a bit per statement");

void
pgconn_distrust_prepared(struct PgConn *c)
{
	c->distrust_prepared = true;
}

/* drop_distrusted drops every prepared statement of a distrusted session (pgconn_distrust_prepared). */
static bool
drop_distrusted(struct PgConn *c)
{
	PGresult *res;

	if (!c->distrust_prepared)
		return true;
	res = check_result(c, PQexec(c->conn, "DEALLOCATE ALL"));
	if (res == NULL)
		return false;
	PQclear(res);
	c->prepared = 0;
	c->distrust_prepared = false;
	return true;
}

/* run_prepared prepares st on this session if it is not yet, then binds and executes it. */
static PGresult *
run_prepared(struct PgConn *c, enum StmtId id, const struct Statement *st, const char *const *values)
{
	uint64_t bit = (uint64_t) 1 << id;
	PGresult *res;

	if (!drop_distrusted(c))
		return NULL;
	if ((c->prepared & bit) == 0) {
		res = check_result(c, PQprepare(c->conn, st->name, st->sql, st->nparams, NULL));
		if (res == NULL)
			return NULL;
		PQclear(res);
		c->prepared |= bit;
	}
	res = check_result(c, PQexecPrepared(c->conn, st->name, st->nparams, values, NULL, NULL, 0));
	/*
	 * 26000: the statement is gone (DISCARD ALL by a pooler, a handler's DEALLOCATE): prepare it
	 * again, at once when no transaction is open (nothing ran, and nothing was aborted), else next
	 * time.
	 */
	if (res == NULL && strcmp(c->sqlstate, "26000") == 0) {
		c->prepared &= ~bit;
		if (!c->lost && PQtransactionStatus(c->conn) == PQTRANS_IDLE &&
			(res = check_result(c, PQprepare(c->conn, st->name, st->sql, st->nparams, NULL))) != NULL) {
			PQclear(res);
			c->prepared |= bit;
			res = check_result(c, PQexecPrepared(c->conn, st->name, st->nparams, values, NULL, NULL, 0));
		}
	}
	return res;
}

PGresult *
pgconn_query(struct PgConn *c, enum StmtId id, const char *const *values)
{
	const struct Statement *st = statement(id);

	if (!start_statement(c))
		return NULL;
	if (st->prepared)
		return run_prepared(c, id, st, values);
	return check_result(c, PQexecParams(c->conn, st->sql, st->nparams, NULL, values, NULL, NULL, 0));
}

PGresult *
pgconn_query_sql(struct PgConn *c, const char *sql, int nparams, const char *const *values)
{
	if (!start_statement(c))
		return NULL;
	return check_result(c, PQexecParams(c->conn, sql, nparams, NULL, values, NULL, NULL, 0));
}

bool
pgconn_script(struct PgConn *c, const char *sql)
{
	PGresult *res;
	bool ok = true;

	if (!start_statement(c))
		return false;
	if (!PQsendQuery(c->conn, sql))
		return check_result(c, NULL) != NULL;
	/* One result per statement; keep the first failure, read them all. */
	while ((res = PQgetResult(c->conn)) != NULL) {
		if (ok) {
			res = check_result(c, res);
			ok = res != NULL;
		}
		PQclear(res);
	}
	return ok;
}

/* send_in_pipeline queues one statement of a pipeline: by name when it is prepared, else as text. */
static bool
send_in_pipeline(struct PgConn *c, const struct PgPipeStmt *ps)
{
	const struct Statement *st = statement(ps->id);

	if (st->prepared && (c->prepared & ((uint64_t) 1 << ps->id)) != 0)
		return PQsendQueryPrepared(c->conn, st->name, st->nparams, ps->values, NULL, NULL, 0) == 1;
	return PQsendQueryParams(c->conn, st->sql, st->nparams, NULL, ps->values, NULL, NULL, 0) == 1;
}

/*
 * read_pipeline reads the results of n statements and the sync. After a failure the server
 * reports the rest as aborted: only the first error is kept, and *failed says whose it was. A
 * successful result of the last statement is handed to *last when last is not NULL.
 */
static bool
read_pipeline(struct PgConn *c, int n, PGresult **last, int *failed)
{
	PGresult *res;
	bool ok = true;
	int i;

	for (i = 0; i <= n; i++) {
		while ((res = PQgetResult(c->conn)) != NULL) {
			ExecStatusType st = PQresultStatus(res);

			if (st == PGRES_PIPELINE_SYNC) {
				PQclear(res);
				break;
			}
			if (ok && st != PGRES_PIPELINE_ABORTED) {
				res = check_result(c, res);
				ok = res != NULL;
				if (!ok)
					*failed = i;
				else if (last != NULL && i == n - 1 && *last == NULL) {
					*last = res;
					continue;
				}
			}
			PQclear(res);
		}
		if (PQstatus(c->conn) != CONNECTION_OK) {
			ok = false;
			c->lost = true;
			break;
		}
	}
	return ok;
}

/* run_pipeline is pgconn_pipeline, keeping the last statement's result (read_pipeline). */
static bool
run_pipeline(struct PgConn *c, const struct PgPipeStmt *stmts, int n, PGresult **last, int *failed)
{
	bool ok = true;
	int i;

	*failed = -1;
	if (!PQenterPipelineMode(c->conn))
		return check_result(c, NULL) != NULL;
	for (i = 0; i < n && ok; i++)
		ok = send_in_pipeline(c, &stmts[i]);
	if (!ok || !PQpipelineSync(c->conn)) {
		check_result(c, NULL);
		PQexitPipelineMode(c->conn);
		return false;
	}
	ok = read_pipeline(c, n, last, failed);
	if (!PQexitPipelineMode(c->conn) && ok) {
		set_error(c, PQerrorMessage(c->conn), NULL);
		ok = false;
	}
	return ok;
}

bool
pgconn_pipeline(struct PgConn *c, const struct PgPipeStmt *stmts, int n)
{
	int failed;

	if (!start_statement(c) || !drop_distrusted(c))
		return false;
	return run_pipeline(c, stmts, n, NULL, &failed);
}

PGresult *
pgconn_query_guarded(struct PgConn *c, const struct PgPipeStmt *guard, enum StmtId id,
					 const char *const *values, bool *guard_failed)
{
	const struct Statement *st = statement(id);
	struct PgPipeStmt steps[2] = {*guard, {id, values}};
	uint64_t bit = (uint64_t) 1 << id;
	PGresult *res = NULL;
	int failed;

	*guard_failed = false;
	if (!start_statement(c) || !drop_distrusted(c))
		return NULL;
	/*
	 * Prepared once per session outside the pipeline, so that the statement need not be parsed
	 * again at each guarded run; parsing names objects but runs none of them.
	 */
	if (st->prepared && (c->prepared & bit) == 0) {
		res = check_result(c, PQprepare(c->conn, st->name, st->sql, st->nparams, NULL));
		if (res == NULL)
			return NULL;
		PQclear(res);
		res = NULL;
		c->prepared |= bit;
	}
	if (!run_pipeline(c, steps, 2, &res, &failed)) {
		PQclear(res);
		*guard_failed = failed == 0;
		/* 26000: the statement is gone (DISCARD ALL, DEALLOCATE): prepare it again next time. */
		if (failed == 1 && strcmp(c->sqlstate, "26000") == 0)
			c->prepared &= ~bit;
		return NULL;
	}
	return res;
}

bool
pgconn_exec(struct PgConn *c, enum StmtId id, const char *const *values)
{
	PGresult *res = pgconn_query(c, id, values);

	if (res == NULL)
		return false;
	PQclear(res);
	return true;
}

void
pgconn_clear(PGresult *res)
{
	PQclear(res);
}

const char *
pgconn_value(const PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col))
		return NULL;
	return PQgetvalue(res, row, col);
}

bool
pgconn_set_timeout(struct PgConn *c, long ms)
{
	char val[32];
	const char *params[1] = {val};

	if (c->timeout_ms == ms)
		return true;
	snprintf(val, sizeof val, "%ld", ms);
	if (!pgconn_exec(c, STMT_SET_TIMEOUT, params))
		return false;
	c->timeout_ms = ms;
	return true;
}

void
pgconn_cancel(struct PgConn *c)
{
	char err[256];

	pthread_mutex_lock(&c->cancel_mu);
	if (c->cancel && !PQcancel(c->cancel, err, sizeof err))
		log_warn_c(c, "cancel_failed", LOG_STR("error", err));
	pthread_mutex_unlock(&c->cancel_mu);
}

bool
pgconn_check_conninfo(const char *conninfo, char *err, size_t errlen)
{
	PQconninfoOption *opts;
	char *errmsg = NULL;
	size_t n;

	if (conninfo == NULL)
		return true;
	opts = PQconninfoParse(conninfo, &errmsg);
	if (opts != NULL) {
		PQconninfoFree(opts);
		return true;
	}
	snprintf(err, errlen, "invalid --dbname: %s", errmsg ? errmsg : "out of memory");
	n = strlen(err);
	while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == ' '))
		err[--n] = '\0';
	PQfreemem(errmsg);
	return false;
}

void
pgconn_describe_conninfo(const char *conninfo, struct Buf *out)
{
	PQconninfoOption *opts, *o;
	char *errmsg = NULL;
	bool first = true;

	if (conninfo == NULL) {
		buf_puts(out, "(PG environment)");
		return;
	}
	opts = PQconninfoParse(conninfo, &errmsg);
	if (opts == NULL) {
		PQfreemem(errmsg);
		buf_puts(out, "(invalid connection string)");
		return;
	}
	for (o = opts; o->keyword; o++) {
		if (o->val == NULL || strstr(o->keyword, "password") != NULL)
			continue;
		buf_printf(out, "%s%s=%s", first ? "" : " ", o->keyword, o->val);
		first = false;
	}
	PQconninfoFree(opts);
}

void
pgconn_describe_versions(struct Buf *out)
{
	int v = PQlibVersion();

	buf_printf(out, "libpq %d.%d\n", v / 10000, v % 10000);
}
