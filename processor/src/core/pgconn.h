/*
 * pgconn.h - every libpq call of the Processor goes through this module, and so does getting a
 * session back after it was lost (backoff, attempts, the reconnecting/reconnected lines). The rest
 * of the code calls pgconn_* and only reads results.
 */
#ifndef PGRELAY_PGCONN_H
#define PGRELAY_PGCONN_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "compiler.h"
#include "log.h"
#include "statements.h"

struct PgConn {
	PGconn *conn;              /* NULL while disconnected */
	PGcancel *cancel;          /* lets another thread cancel the running statement */
	pthread_mutex_t cancel_mu; /* guards cancel against a concurrent reconnect */
	char label[32];            /* "control", "worker-2": the conn= field of log lines */
	long timeout_ms;           /* statement_timeout set on this session, -1 when unknown */
	char sqlstate[6];          /* SQLSTATE of the last failure ("" for none) */
	char error[1024];          /* one-line message of the last failure */
	char hint[512];            /* the server's HINT of the last failure ("" for none) */
	bool lost;                 /* the last failure was the connection itself */
	uint64_t prepared;         /* statements prepared on this session (bit per enum StmtId) */
	bool distrust_prepared;    /* a handler may have replaced them: drop all before the next one */
	unsigned long sessions;    /* sessions opened so far: a new one starts from the server's defaults */
	long long opened_us;       /* when the current session was opened (now_us) */
	/* What to connect to, set once by pgconn_init. */
	const char *conninfo;    /* connection string, NULL: the PG* environment; outlives c */
	char mode[16];           /* pg_relay.mode of every session */
	long session_timeout_ms; /* statement_timeout each new session starts with, -1: the server's */
	bool one_attempt;        /* no retries (--once): a failed attempt is the caller's to report */
	/*
	 * Until its first session, a failure only a change of set-up ends (lasting) is not retried
	 * either: the caller reports it and stops (the control connection of a Processor starting).
	 */
	bool stop_if_lasting;
	/* Reconnecting. */
	long backoff_ms;           /* the delay before jitter; 0 while connected */
	long long next_attempt_us; /* when the next attempt is due (now_us) */
	int attempts;              /* failed attempts, and the lost session, since the last success */
	bool lasting;              /* the last attempt failed for a reason only a change of set-up ends */
};

/*
 * pgconn_init prepares c for pgconn_session: label names it in log lines, conninfo (NULL: the PG*
 * environment; it must outlive c) and mode say what every session connects to.
 */
void pgconn_init(struct PgConn *c, const char *label, const char *conninfo, const char *mode);
/* pgconn_label is the connection's name in log lines (the log_*_c macros write it as conn=). */
const char *pgconn_label(const struct PgConn *c);

/*
 * The log calls about one connection (log.h's family): c is a struct PgConn *, whose label
 * ("control", "worker-2") is written first as conn=<label>.
 */
#define log_error_c(c, ev, ...) LOG_AT(LL_ERROR, pgconn_label(c), ev, __VA_ARGS__)
#define log_warn_c(c, ev, ...) LOG_AT(LL_WARN, pgconn_label(c), ev, __VA_ARGS__)
#define log_info_c(c, ev, ...) LOG_AT(LL_INFO, pgconn_label(c), ev, __VA_ARGS__)
#define log_debug_c(c, ev, ...) LOG_AT(LL_DEBUG, pgconn_label(c), ev, __VA_ARGS__)
#define log_trace_c(c, ev, ...) LOG_AT(LL_TRACE, pgconn_label(c), ev, __VA_ARGS__)
void pgconn_destroy(struct PgConn *c);

/*
 * pgconn_session returns true when c has a usable session: the one it had, or a new one when a
 * connection attempt was due now and succeeded. Otherwise it returns false and *wait_ms is the
 * time until the next attempt is due. A failed attempt logs "reconnecting" (attempt, retry_in_ms,
 * error) and waits longer each time (capped exponential backoff with jitter, at most
 * reconnect_max_ms); the first success after failures or a lost session logs "reconnected".
 * c->lasting says whether the failure lasts until someone changes the set-up; such a failure
 * before the first session of a connection that stops on it (stop_if_lasting) logs nothing.
 */
bool pgconn_session(struct PgConn *c, long reconnect_max_ms, long *wait_ms) MUSTCHECK;
/*
 * pgconn_lost closes a session that failed under a statement (c->lost). The caller has logged
 * why; the next pgconn_session tries again at once and logs "reconnected" when it is back.
 */
void pgconn_lost(struct PgConn *c);
/*
 * pgconn_rollback rolls back the transaction a failed statement left open, if any, so that the
 * session can be used again; when that fails too, the session is closed (and reopened by the next
 * pgconn_session).
 */
void pgconn_rollback(struct PgConn *c);

/*
 * pgconn_distrust_prepared: foreign code (a handler) ran in this session and the statement that
 * ran it failed before it could drop what the handler prepared (process_one and process_batch do
 * that when they return): the session's prepared statements are dropped (DEALLOCATE ALL) and made
 * again before the next one runs, so that none a handler put in place of ours runs with our rights.
 */
void pgconn_distrust_prepared(struct PgConn *c);
void pgconn_close(struct PgConn *c);
bool pgconn_is_up(const struct PgConn *c);

/*
 * pgconn_alive looks, without a round trip, whether an idle session is still there: the server
 * announces a shutdown or restart before it closes the socket. False (with c->error) when it is
 * gone.
 */
bool pgconn_alive(struct PgConn *c);

/*
 * pgconn_connect_hint says what to check after a failed connection attempt, from libpq's message
 * (NULL when it does not know); *config is true when the failure lasts until someone changes the
 * set-up (a password, a role, a database, pg_hba.conf), false when it may pass by itself (the
 * server out of connection slots, say). The text may be the calling thread's own buffer: use it
 * before the thread's next call.
 */
const char *pgconn_connect_hint(const char *error, bool *config);
/*
 * pgconn_hint_workers: the Processor runs workers worker connections and its control connection,
 * which the hint of a server out of connection slots names. Call before any connection is made.
 */
void pgconn_hint_workers(int workers);

/*
 * pgconn_query runs one statement of the table (statements.c) with its values as text
 * parameters. A statement marked prepared is prepared by its first run on a session and then only
 * bound and executed, so the server neither parses nor plans it again. Returns the result (tuples
 * or command ok; free it with pgconn_clear) or NULL with c->error, c->sqlstate and c->lost set.
 */
PGresult *pgconn_query(struct PgConn *c, enum StmtId id, const char *const *values) MUSTCHECK;
/*
 * pgconn_query_sql runs one statement that is not in the table, with its values as text
 * parameters: the web console's reads, whose text its pages put together from fixed parts (no
 * outside value ever goes into sql). Returns the result or NULL, as pgconn_query.
 */
PGresult *pgconn_query_sql(struct PgConn *c, const char *sql, int nparams,
						   const char *const *values) MUSTCHECK;
/*
 * pgconn_script runs parameterless statements separated by semicolons in one round trip (the
 * simple query protocol). Only for SQL built into the Processor (statements.c, install_sql.h): no
 * outside value goes into it.
 */
bool pgconn_script(struct PgConn *c, const char *sql) MUSTCHECK;

/* One statement of a pipeline. */
struct PgPipeStmt {
	enum StmtId id;
	const char *const *values;
};

/*
 * pgconn_pipeline sends n statements at once and reads their results: one round trip (a prepared
 * statement goes by name once this session has prepared it, else by its text). It stops
 * at the first failure (the server skips the rest); returns false with c->error set then, and
 * the caller's transaction is aborted.
 */
bool pgconn_pipeline(struct PgConn *c, const struct PgPipeStmt *stmts, int n) MUSTCHECK;

/*
 * pgconn_query_guarded runs guard, then statement id, in one round trip and one implicit
 * transaction, and returns id's result as pgconn_query does. When the guard fails (it raises an
 * error when something id relies on is not as checked), id is not even bound: the server skips it
 * unread, and *guard_failed is set.
 */
PGresult *pgconn_query_guarded(struct PgConn *c, const struct PgPipeStmt *guard, enum StmtId id,
							   const char *const *values, bool *guard_failed) MUSTCHECK;

/* pgconn_exec is pgconn_query for statements whose rows do not matter. */
bool pgconn_exec(struct PgConn *c, enum StmtId id, const char *const *values) MUSTCHECK;
void pgconn_clear(PGresult *res);

/* pgconn_value is the text of a field, or NULL for SQL NULL. */
const char *pgconn_value(const PGresult *res, int row, int col);

/* pgconn_set_timeout sets statement_timeout (0 = none) unless the session has it already. */
bool pgconn_set_timeout(struct PgConn *c, long ms) MUSTCHECK;

/* pgconn_cancel asks the server to cancel the statement running on c; safe from any thread. */
void pgconn_cancel(struct PgConn *c);

/* pgconn_check_conninfo: is the connection string well-formed? (NULL is: the environment) */
bool pgconn_check_conninfo(const char *conninfo, char *err, size_t errlen);

/* pgconn_describe_conninfo writes the connection settings without any password. */
void pgconn_describe_conninfo(const char *conninfo, struct Buf *out);
void pgconn_describe_versions(struct Buf *out);

#endif
