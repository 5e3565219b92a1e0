/*
 * pgconn.h - every libpq call of the Processor goes through this module. The rest of the code
 * calls pgconn_* and only reads results.
 */
#ifndef PGRELAY_PGCONN_H
#define PGRELAY_PGCONN_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>

#include "buf.h"
#include "statements.h"

struct PgConn {
	PGconn *conn;              /* NULL while disconnected */
	PGcancel *cancel;          /* lets another thread cancel the running statement */
	pthread_mutex_t cancel_mu; /* guards cancel against a concurrent reconnect */
	char label[32];            /* "control", "worker-2": the conn= field of log lines */
	long timeout_ms;           /* statement_timeout set on this session, -1 when unknown */
	char sqlstate[6];          /* SQLSTATE of the last failure ("" for none) */
	char error[1024];          /* one-line message of the last failure */
	bool lost;                 /* the last failure was the connection itself */
	unsigned prepared;         /* statements prepared on this session (bit per enum StmtId) */
};

void pgconn_init(struct PgConn *c, const char *label);
/* pgconn_label is the connection's name in log lines (the log_*_c macros write it as conn=). */
const char *pgconn_label(const struct PgConn *c);
void pgconn_destroy(struct PgConn *c);

/*
 * pgconn_connect opens the session (closing any old one): application_name=pg_relay, keepalives
 * and a connect timeout unless the connection string says otherwise, then the session settings
 * pg_relay.mode = mode. Returns false with c->error set.
 */
bool pgconn_connect(struct PgConn *c, const char *conninfo, const char *mode) MUSTCHECK;
void pgconn_close(struct PgConn *c);
bool pgconn_is_up(const struct PgConn *c);

/*
 * pgconn_query runs one statement of the table (statements.c) with its values as text
 * parameters. A statement marked prepared is prepared by its first run on a session and then only
 * bound and executed, so the server neither parses nor plans it again. Returns the result (tuples
 * or command ok; free it with pgconn_clear) or NULL with c->error, c->sqlstate and c->lost set.
 */
PGresult *pgconn_query(struct PgConn *c, enum StmtId id, const char *const *values) MUSTCHECK;
/*
 * pgconn_script runs parameterless statements separated by semicolons in one round trip (the
 * simple query protocol). Only for fixed text: values never go into it.
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
