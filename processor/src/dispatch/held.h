/*
 * held.h - the held transaction of a delivery: a notify or webhook event's transaction stays open
 * from the claim, across the delivery outside the database, to the commit (docs/interface.md).
 * These are the steps both kinds of event take the same way.
 */
#ifndef PGRELAY_HELD_H
#define PGRELAY_HELD_H

#include <stdbool.h>

#include "outcome.h"
#include "pgconn.h"
#include "pgrelay.h"

/* One attempt as _write_log records it. */
struct HeldAttempt {
	const char *queue_id;
	enum AttemptResult result;
	const char *error;    /* NULL when none */
	const char *sqlstate; /* NULL when none */
	const char *started;  /* ISO 8601 */
	const char *detail;   /* JSON for pgrelay.log, or NULL */
	long retry_after_s;   /* the server's Retry-After, -1 when none */
};

/*
 * held_begin opens the transaction on pg and lets it stay idle as long as a delivery may take
 * (max_delivery_ms) plus a minute for the steps around it, each statement bounded to a minute,
 * with the savepoint a failing fetch rolls back to: one round trip. False when it failed (pg
 * says why).
 */
bool held_begin(struct PgConn *pg, long max_delivery_ms);

/*
 * held_lost gives up after a failed statement: it names the step in rep and returns OC_LOST; the
 * caller reports it and rolls back, and the event is offered again later.
 */
enum Outcome held_lost(struct EventReport *rep, const char *step);

/*
 * held_write_log writes the attempt's log row, where the retry decision is taken. Returns the
 * result (its first column the outcome, its second when the event runs again), or NULL when the
 * statement failed. The caller clears it.
 */
PGresult *held_write_log(struct PgConn *pg, const struct HeldAttempt *a);

#endif
