/*
 * kind.h - the kinds of event a worker runs, one entry each in one table: sql (process_one and
 * process_batch, worker.c), notify (mail/notify.c) and webhook (webhook/webhook.c). A held kind's
 * entry says how its row is claimed and gives its steps, which held.c runs in one sequence (claim,
 * read, deliver, finish, record, commit); the kind's code knows nothing of dispatch/.
 */
#ifndef PGRELAY_KIND_H
#define PGRELAY_KIND_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "attempt.h"
#include "outcome.h"
#include "statements.h"
#include "worker.h"

struct DestKind {
	const char *name;       /* the action type */
	enum WorkerState state; /* what the worker shows while it runs one */
	bool held;              /* run in a held transaction (held.c); false: process_one (worker.c) */
	/*
	 * The claim. trusted, when not STMT_COUNT, is asked first: its one boolean says whether the
	 * claim may fetch (name the kind's other schema). claim claims the row (and fetches); alone
	 * claims it without the fetch, when not trusted or after the fetch raised (STMT_COUNT: none).
	 */
	enum StmtId trusted, claim, alone;
	/* the kind's state of one event, NULL when out of memory; close frees it */
	void *(*open)(struct Attempt *a);
	void (*close)(void *st);
	/*
	 * read reads the claim's row (res, NULL when the claim failed; it clears it): trusted as asked,
	 * fetch_error the fetch's error ("" when none).
	 */
	enum HeldClaim (*read)(void *st, PGresult *res, bool trusted, const char *fetch_error);
	/* deliver delivers the claimed event and classifies what came of it, in v */
	void (*deliver)(void *st, struct Verdict *v);
	/*
	 * record names the statement of the kind's own record of the finished attempt (oc, and when
	 * the event runs again: NULL for never), or leaves s->id STMT_COUNT; false when it could not
	 * be made (out of memory). NULL: the kind records nothing of its own.
	 */
	bool (*record)(void *st, enum Outcome oc, const char *next_attempt_at, struct RecordStmt *s);
};

/* dest_kind_find is the entry of the action type, or NULL for one this Processor does not run. */
const struct DestKind *dest_kind_find(const char *action_type);

#endif
