/*
 * attempt.h - what the held transaction of an event (dispatch/held.c) and the code of its kind
 * (mail/notify.c, webhook/webhook.c) share, so that neither calls the other: held.c opens the
 * transaction and sends every statement, in one sequence (claim, read, deliver, finish, commit);
 * the kind reads its claimed row, delivers, says what the attempt came to (a Verdict) and names
 * the statement of its own record. The table of kinds is dispatch/kind.c.
 */
#ifndef PGRELAY_ATTEMPT_H
#define PGRELAY_ATTEMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "outcome.h"
#include "pgrelay.h"
#include "statements.h"

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
	 * OC_RETRY, OC_FAILED because of the set-up (attempt_config_error; CE_NONE: not so): the kind,
	 * the SQLSTATE the attempt is recorded with, and what to change.
	 */
	enum ConfigError config_error;
	char sqlstate[6];
	const char *hint;
};

/* One event in its held transaction, as its kind sees it: held.c fills it, but for attempt. */
struct Attempt {
	const struct WorkerSettings *ws;
	struct TransportCache *tc; /* the worker's delivery sessions; NULL when none could be made */
	struct EventReport *rep;
	char id[24];      /* the queue row's id */
	int attempt;      /* the attempt the claim started (the kind reads it from its claim) */
	char started[40]; /* ISO 8601, when the attempt started: once claimed */
};

/* What the kind read from its claim. */
enum HeldClaim {
	HC_FAILED = -1, /* the claim statement failed, or memory ran out reading it */
	HC_SKIPPED,     /* no row: the claim failed */
	HC_CLAIMED,     /* the event is claimed: its attempt starts */
	HC_REPLAYED     /* the row was replayed: its attempt is recorded already, the claim finished it */
};

/*
 * What the attempt came to, as the kind classified it. The strings stay the kind's, valid until
 * its state is closed.
 */
struct Verdict {
	const char *lost; /* the kind could not go on (out of memory): the step, the event unfinished */
	long defer_ms;    /* > 0: moved past a rate limit, no attempt spent, nothing below recorded */
	enum AttemptResult result;
	const char *error;  /* NULL when none */
	const char *detail; /* JSON for pgrelay.log, or NULL */
	long retry_after_s; /* the server's Retry-After, -1 when none */
	long gone_status;   /* a webhook's endpoint answered so (410): marked gone by the finish; 0: not */
};

/* The statement of the kind's own record, sent with the COMMIT once the event is finished. */
struct RecordStmt {
	enum StmtId id; /* STMT_COUNT: none */
	const char *const *values;
	const char *lost_as; /* the step named when it fails (or could not be made) */
};

/*
 * attempt_config_error notes that the attempt fails because of the set-up (a secret that cannot be
 * read): its kind and hint for the worker's line and the metric, and the SQLSTATE the log row gets
 * (pgrelay.error_kind() makes it a configuration error).
 */
static inline void
attempt_config_error(struct EventReport *rep, enum ConfigError kind, const char *sqlstate, const char *hint)
{
	rep->config_error = kind;
	snprintf(rep->sqlstate, sizeof rep->sqlstate, "%s", sqlstate);
	rep->hint = hint;
}

#endif
