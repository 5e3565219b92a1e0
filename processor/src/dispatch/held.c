/*
 * held.c - the steps a notify and a webhook event take alike in their held transaction.
 */
#include "held.h"

#include <stdio.h>

#include "statements.h"

/* Each statement of the transaction (claim, log row, status, finish, commit) may take this long. */
#define HELD_STATEMENT_MS 60000L
/* The transaction may stay idle this much longer than the delivery, for the steps around it. */
#define HELD_IDLE_GRACE_MS 60000L

bool
held_begin(struct PgConn *pg, long max_delivery_ms)
{
	char sql[STMT_SCRIPT_MAX];

	statement_begin_held(sql, sizeof sql, max_delivery_ms + HELD_IDLE_GRACE_MS);
	return pgconn_set_timeout(pg, HELD_STATEMENT_MS) && pgconn_script(pg, sql);
}

enum Outcome
held_lost(struct EventReport *rep, const char *step)
{
	rep->step = step;
	return OC_LOST;
}

PGresult *
held_write_log(struct PgConn *pg, const struct HeldAttempt *a)
{
	char retry_at[32] = "";
	const char *params[7] = {
		a->queue_id, attempt_result_name(a->result), a->error, a->sqlstate, a->started, a->detail, NULL};

	if (a->retry_after_s >= 0) {
		snprintf(retry_at, sizeof retry_at, "%ld", a->retry_after_s);
		params[6] = retry_at;
	}
	return pgconn_query(pg, STMT_WRITE_LOG, params);
}
