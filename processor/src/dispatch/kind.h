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
	/*
	 * The batched held run (held_run_many), for a kind whose destination takes many messages at
	 * once (a broker: Redis pipelines its script calls; Kafka produces all, then waits for each
	 * message's own delivery report; RabbitMQ publishes all, then reads the confirms). NULL
	 * deliver_many: the kind runs one event per transaction (held_run). The contract:
	 *   - claim_many claims the events of $1 (bigint[], the worker's batch: events of one channel)
	 *     in one statement: one row per claimed event, in the order of the ids, with the columns
	 *     of the kind's claim and the event's id in a column named queue_id; an event without a
	 *     row is skipped. Each event has its own state (open, close: as above).
	 *   - read_row reads one row of it into an event's state (res stays the caller's).
	 *   - deliver_many delivers the n claimed events sts[0..n) together (sends all, then waits
	 *     for all the answers, under the channel's timeout for the whole batch) and gives each
	 *     its own verdict in vs[i], prepared as a transient failure with no error: one refused
	 *     fails alone; one whose answer did not come (a connection lost part way) is a transient
	 *     failure, retried, so the kind must make a second delivery harmless (Redis's marker, an
	 *     idempotent producer, a message id the consumer checks). It sends no SQL, never defers
	 *     (defer_ms is not read), and sets lost only for an event it could not try at all: that
	 *     event is left unfinished, offered again.
	 * Then every event is finished in one statement (_finish_held_many: one log row per attempt,
	 * each event its own outcome) and committed once; the kind's record is not run.
	 */
	enum StmtId claim_many;
	enum HeldClaim (*read_row)(void *st, const PGresult *res, int row);
	void (*deliver_many)(void *const *sts, int n, struct Verdict *vs);
};

/* dest_kind_batches: events of k may run together in one held transaction (held_run_many). */
static inline bool
dest_kind_batches(const struct DestKind *k)
{
	return k != NULL && k->held && k->deliver_many != NULL;
}

/* dest_kind_find is the entry of the action type, or NULL for one this Processor does not run. */
const struct DestKind *dest_kind_find(const char *action_type);

#endif
