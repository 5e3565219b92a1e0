/*
 * held.h - the finishing of a claimed event, and the held transaction a notify or webhook event
 * keeps open from the claim, across the delivery outside the database, to the commit
 * (docs/interface.md). This module sends every statement of that transaction, and every statement
 * that finishes an event whatever its kind: the finish (one call: the log row, where the database
 * takes the retry decision, and the row finished; a webhook's 410 marked), the kind's own record
 * (set_status) and the commit; and, after a failed one, the transaction of its own that records
 * what the failure could not.
 * notify.c and webhook.c read the claimed row, deliver and classify; worker.c logs.
 */
#ifndef PGRELAY_HELD_H
#define PGRELAY_HELD_H

#include <stdbool.h>
#include <stddef.h>

#include "compiler.h"
#include "outcome.h"
#include "pgconn.h"
#include "pgrelay.h"

struct TransportCache;

/*
 * What running one event came to besides its outcome, for the worker to log: the code that runs
 * an event (process_one, the held transaction) never logs.
 */
struct EventReport {
	char notification[24]; /* a notify event's notification id (its payload), once claimed */
	char error[1024];      /* OC_RETRY, OC_TIMEOUT, OC_FAILED: why the attempt failed */
	char retry_at[40];     /* ... and when it runs again (ISO 8601), "" for never */
	const char *step;      /* OC_LOST: the statement that failed (its error is the connection's) */
	char profile[128];     /* a notify event's profile, once its message is read */
	long wait_ms;          /* OC_DEFERRED: until the limit lets the next message go */
	long http_status;      /* a webhook's answer, 0 when none */
	bool gone;             /* a webhook's endpoint answered 410: its channel was paused */
	char endpoint[256];    /* a webhook's scheme://host[:port], for the webhook_gone line */
	/*
	 * OC_RETRY, OC_FAILED because of the set-up (held_config_error; CE_NONE: not so): the kind,
	 * the SQLSTATE the attempt is recorded with, and what to change.
	 */
	enum ConfigError config_error;
	char sqlstate[6];
	const char *hint;
};

/* One event in its held transaction: what every kind of event has. */
struct Held {
	struct PgConn *pg;
	const struct WorkerSettings *ws;
	struct TransportCache *tc; /* the worker's delivery sessions; NULL when none could be made */
	struct EventReport *rep;
	char id[24];      /* the queue row's id, as the statements take it */
	int attempt;      /* the attempt the claim started */
	char started[40]; /* ISO 8601, when the attempt started (held_claimed): _finish_held, set_status */
};

/*
 * What a kind of event does in its transaction once it is open: claim (held_claim, held_claimed),
 * deliver, and finish (held_finish or held_defer). Its outcome is the event's.
 */
typedef enum Outcome (*HeldRun)(struct Held *h);

/*
 * held_run opens the held transaction of event id on pg, lets it stay idle as long as a delivery
 * may take (ws's --max-delivery-time) plus a minute for the steps around it, each statement bounded
 * to a minute, and runs the kind's run in it, with the sessions of tc. It returns the event's
 * outcome and fills rep with what the caller logs. On OC_LOST a statement failed: pg holds its
 * error, rep->step names it, and the transaction is left as the failure left it, for the caller to
 * report and then replace a lost session (pgconn_lost) or give the event up (held_abandon).
 */
enum Outcome held_run(struct PgConn *pg, const struct WorkerSettings *ws, long long id,
					  struct TransportCache *tc, struct EventReport *rep, HeldRun run);

/* held_lost names the step that failed in the report and returns OC_LOST (see held_run). */
enum Outcome held_lost(struct EventReport *rep, const char *step);

/*
 * held_claim runs the kind's claim, whose one row is the event and what comes with it (no row when
 * the claim failed: gone, locked, not due). A claim that also fetches (STMT_CLAIM_FETCH) and raises
 * is rolled back to the savepoint held_run made and the row claimed again alone (alone, or
 * STMT_COUNT for none): the fetch's error, in err, is then a transient failure of the event rather
 * than an aborted transaction. Returns the result for the caller to read and clear, or NULL when a
 * statement failed (h->pg says why).
 */
PGresult *held_claim(struct Held *h, enum StmtId claim, enum StmtId alone, char *err, size_t errlen);

/* What the kind read from its claim. */
enum HeldClaim {
	HC_FAILED = -1, /* the claim statement failed, or memory ran out reading it */
	HC_SKIPPED,     /* no row: the claim failed */
	HC_CLAIMED,     /* the event is claimed: its attempt starts */
	HC_REPLAYED     /* the row was replayed: its attempt is recorded already, the claim finished it */
};

/*
 * held_claimed acts on the claim: a skipped event is rolled back (OC_SKIPPED), a replayed one
 * committed (OC_REPLAYED), a failed claim is OC_LOST. Returns true when the event is claimed and
 * its attempt starts now (h->started); otherwise false with the event's outcome in *oc.
 */
bool held_claimed(struct Held *h, enum HeldClaim c, enum Outcome *oc) MUSTCHECK;

/* A statement of the kind's own, sent with the COMMIT after the finish. */
struct HeldStep {
	enum StmtId id; /* STMT_COUNT: none */
	const char *const *values;
	const char *lost_as; /* the step named when it fails (as when recording it fails) */
};

/*
 * The kind's own record of an attempt, made once the finish has said what the attempt came to (oc,
 * and when the event runs again: NULL for never): set_status of a notify event. It leaves step->id
 * STMT_COUNT for no statement, and returns false when it could not be made (out of memory;
 * step->lost_as names it).
 */
typedef bool (*HeldRecord)(void *arg, enum Outcome oc, const char *next_attempt_at, struct HeldStep *step);

/* What the attempt came to, as the kind classified it. */
struct HeldResult {
	enum AttemptResult result;
	const char *error;  /* NULL when none */
	const char *detail; /* JSON for pgrelay.log, or NULL */
	long retry_after_s; /* the server's Retry-After, -1 when none */
	long gone_status;   /* a webhook's endpoint answered so (410): marked gone by the finish; 0: not */
	HeldRecord record;  /* NULL: nothing of the kind's own */
	void *arg;          /* record's */
};

/*
 * held_config_error notes that the attempt fails because of the set-up (a secret that cannot be
 * read), before held_finish records it: its kind and hint for the worker's line and the metric,
 * and the SQLSTATE the log row gets (pgrelay.error_kind() makes it a configuration error).
 */
void held_config_error(struct Held *h, enum ConfigError kind, const char *sqlstate, const char *hint);

/*
 * held_finish finishes the claimed event with what its attempt came to: _finish_held (the log row,
 * the retry decision, the row finished, in one call), then the kind's record and COMMIT in one
 * round trip. Returns the outcome the database gave the event (rep->error: why it failed), or
 * OC_LOST.
 */
enum Outcome held_finish(struct Held *h, const struct HeldResult *r);

/*
 * held_defer moves the claimed event past a rate limit's window, wait_ms, and commits: no attempt
 * spent, no log row. Returns OC_DEFERRED, or OC_LOST.
 */
enum Outcome held_defer(struct Held *h, long wait_ms);

/*
 * held_abandon makes pg usable again after a statement of event id failed without losing the
 * connection (a lost session is the caller's to replace): it rolls back the transaction the
 * failure broke, and the event is offered again later. Unless the error persists (bad data, a
 * constraint, a bug: it would come back however often the event is offered, and the event would
 * run or deliver again and again without ever being recorded): then the event is failed for good,
 * with reason and sqlstate, in a transaction of its own, and lands in pgrelay.failed for an admin
 * to re-queue once the cause is fixed. Returns true when it was failed so.
 */
bool held_abandon(struct PgConn *pg, long long id, const char *reason, const char *sqlstate);

/*
 * held_record_error records an attempt of event id whose transaction rolled back with nothing
 * recorded, as the handler's error (error, sqlstate), in a transaction of its own: the transaction
 * on pg is rolled back, the event claimed again and finished as held_finish does. Returns true
 * with the event's outcome in *oc and when it runs again in retry_at (left as it is when never);
 * false, with nothing recorded and pg rolled back, when that failed.
 */
bool held_record_error(struct PgConn *pg, long long id, const char *error, const char *sqlstate,
					   enum Outcome *oc, char *retry_at, size_t retry_at_len);

#endif
