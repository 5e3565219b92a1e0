/*
 * held.h - the finishing of a claimed event, and the held transaction a notify or webhook event
 * keeps open from the claim, across the delivery outside the database, to the commit
 * (docs/interface.md). This module sends every statement of that transaction, in one sequence
 * whatever the kind (claim, read, deliver, finish, record, commit: the kind's steps are its entry
 * in the table of kinds, kind.h), and every statement that finishes an event: the finish (one
 * call: the log row, where the database takes the retry decision, and the row finished; a
 * webhook's 410 marked), the kind's own record (set_status) and the commit; and, after a failed
 * one, the transaction of its own that records what the failure could not. worker.c logs.
 */
#ifndef PGRELAY_HELD_H
#define PGRELAY_HELD_H

#include <stdbool.h>
#include <stddef.h>

#include "attempt.h"
#include "kind.h"
#include "outcome.h"
#include "pgconn.h"
#include "pgrelay.h"

struct TransportCache;

/*
 * held_run runs event id of the held kind k in its held transaction on pg: opened (its idle
 * timeout as long as a delivery may take, ws's --max-delivery-time, plus a minute for the steps
 * around it; each statement bounded to a minute), the row claimed and read, the event skipped
 * (rolled back), replayed (committed), deferred past a rate limit, or delivered with the sessions
 * of tc and finished, the kind's record with the commit. It returns the event's outcome and fills
 * rep with what the caller logs. On OC_LOST a statement failed: pg holds its error, rep->step
 * names it, and the transaction is left as the failure left it, for the caller to report and
 * then replace a lost session (pgconn_lost) or give the event up (held_abandon).
 */
enum Outcome held_run(struct PgConn *pg, const struct WorkerSettings *ws, long long id,
					  struct TransportCache *tc, struct EventReport *rep, const struct DestKind *k);

/*
 * held_run_many runs the n events ids[0..n) of the held kind k, which batches (kind.h: events of
 * one channel), in one held transaction on pg: opened as held_run's, the events claimed in one
 * statement, delivered together by the kind, finished in one statement (one log row per attempt,
 * each event its own outcome) and committed once. Returns OC_OK when it committed, each event's
 * outcome in ocs[i] (OC_SKIPPED: not claimed; OC_LOST: the kind could not try it, left
 * unfinished, reps[i].step naming why) and what the caller logs in reps[i]. OC_LOST when a
 * statement failed: nothing of the batch is finished, *step names it, pg holds its error and the
 * transaction is left as the failure left it, for the caller to roll back or replace a lost
 * session (the events may have been delivered: a second delivery is the kind's to make harmless).
 */
enum Outcome held_run_many(struct PgConn *pg, const struct WorkerSettings *ws, const long long *ids, int n,
						   struct TransportCache *tc, struct EventReport *reps, enum Outcome *ocs,
						   const struct DestKind *k, const char **step);

/*
 * held_abandon makes pg usable again after a statement of event id failed without losing the
 * connection (a lost session is the caller's to replace): it rolls back the transaction the
 * failure broke, and the event is offered again later (OC_LOST). Unless the error persists (bad
 * data, a constraint, a bug: it would come back however often the event is offered, and the event
 * would run or deliver again and again without ever being recorded): then the event is claimed
 * again in a transaction of its own and, when that claim holds it, failed for good with reason and
 * sqlstate (OC_FAILED), landing in pgrelay.failed for an admin to re-queue once the cause is
 * fixed. A claim that skips it (its channel or dispatch paused, not due, claimed by another
 * session, gone) leaves it as it is, rolled back: OC_SKIPPED; one that finds it replayed finishes
 * it as held_run does (OC_REPLAYED). OC_LOST too when failing it failed (pg rolled back).
 */
enum Outcome held_abandon(struct PgConn *pg, long long id, const char *reason, const char *sqlstate);

/*
 * held_record_error records an attempt of event id whose transaction rolled back with nothing
 * recorded, as the handler's error (error, sqlstate), in a transaction of its own: the transaction
 * on pg is rolled back, the event claimed again and, when the claim holds it, finished as held_run
 * finishes one. Returns true with the event's outcome in *oc and when it runs again in retry_at
 * (left as it is when never); false, with nothing recorded and no transaction open, when the claim
 * did not hold the event (skipped: left as it is; or replayed: finished by the claim) or a
 * statement failed.
 */
bool held_record_error(struct PgConn *pg, long long id, const char *error, const char *sqlstate,
					   enum Outcome *oc, char *retry_at, size_t retry_at_len);

#endif
