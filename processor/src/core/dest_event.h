/*
 * dest_event.h - one event of a destination kind (redis, kafka, rabbitmq) from its claim to its
 * commit, and the steps those kinds take alike, written once: the claimed row read, the channel's
 * settings loaded, the timeout, the password resolved as the channel's, the batch's head (one
 * target for a channel's events), the verdict of an attempt that sent nothing, the log detail.
 *
 * A kind gives its DestSteps: its target (the settings made into what its send takes), its send
 * (one event, a batch) and its verdicts. Its entry in the table of kinds (dispatch/kind.c) names
 * these functions for read, read_row, deliver, deliver_many and close.
 */
#ifndef PGRELAY_DEST_EVENT_H
#define PGRELAY_DEST_EVENT_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "attempt.h"
#include "dest_row.h"

struct DestEvent;

/* What a destination kind gives the shared steps. */
struct DestSteps {
	const char *name;   /* the action type, as the verdicts name it ("the channel has no redis settings") */
	size_t target_size; /* sizeof the kind's target */
	/*
	 * target fills t (the kind's target, zeroed) from the channel's settings doc (register() checked
	 * and completed them) but for the password, and returns where in t the resolved password goes;
	 * NULL when the settings lack what the kind needs.
	 */
	const char **(*target)(struct DestEvent *e, json_t *doc, void *t);
	/* one sends e alone to t and gives its verdict; NULL: the kind sends one as a batch of one */
	void (*one)(struct DestEvent *e, json_t *doc, const void *t, struct Verdict *v);
	/*
	 * many sends the events sts[0..n) of one channel to t together and gives each its verdict in
	 * vs[i] (kind.h: the contract of deliver_many); false, nothing sent, when memory ran out.
	 */
	bool (*many)(void *const *sts, int n, json_t *doc, const void *t, struct Verdict *vs);
};

/* A destination event's state, from the claim to the commit. */
struct DestEvent {
	struct Attempt *a;
	const struct DestSteps *kind;
	struct DestRow r; /* the claimed row */
	char attempt[16]; /* the attempt's number as text, as a message's header carries it */
	char *error;      /* the verdict's error, NULL until one is given (a batch's events seldom have one) */
	char *detail;     /* the log row's detail (JSON), NULL until made */
};

/* dest_event_open makes the state of one event of kind in the attempt a; NULL when out of memory. */
void *dest_event_open(struct Attempt *a, const struct DestSteps *kind);

/* dest_event_close frees it, the resolved password wiped. */
void dest_event_close(void *st);

/*
 * dest_event_read reads the claim (_destination_claim): payload, attempt, event id, channel, key,
 * queue time, the channel's settings, its timeout, replayed.
 */
enum HeldClaim dest_event_read(void *st, PGresult *res, bool trusted, const char *fetch_error);

/*
 * dest_event_read_row reads row of the batched claim (_destination_claim_many: the columns of
 * _destination_claim, then the event's id), leaving res to the caller.
 */
enum HeldClaim dest_event_read_row(void *st, const PGresult *res, int row);

/*
 * dest_event_deliver_many delivers the events sts[0..n) (claimed together, of one channel): the
 * channel's settings and its secret read once, with the first event, into the kind's target, then
 * the kind's send. Settings that make no target fail every event as they fail the first; a batch
 * that memory ran out for goes one event at a time. Fills each event's a->rep (a configuration
 * error) and logs nothing.
 */
void dest_event_deliver_many(void *const *sts, int n, struct Verdict *vs);

/* dest_event_deliver delivers one event alone: dest_event_deliver_many of one. */
void dest_event_deliver(void *st, struct Verdict *v);

/* dest_event_text is the string member key of the settings doc, or NULL. */
const char *dest_event_text(const json_t *doc, const char *key);

/*
 * dest_event_timeout_ms is e's timeout: the kind's own setting own (an integer, NULL: none), else
 * the channel's timeout, else 30 s; never over --max-delivery-time.
 */
long dest_event_timeout_ms(const struct DestEvent *e, const json_t *own);

/*
 * dest_event_nothing_sent is the verdict of an attempt that sent nothing: result, with a copy of
 * error. The copy is made only here: a batch allocates an event's state for each of its events,
 * and a fixed 1 kB for an error most never have was 0.4 MB of peak RSS at 8 workers
 * (docs/design/memory.md). Out of memory for the copy: the event is lost (offered again).
 */
void dest_event_nothing_sent(struct DestEvent *e, struct Verdict *v, enum AttemptResult result,
							 const char *error);

/*
 * dest_event_misconfigured is the verdict of a send the destination refused for what the channel's
 * settings or its own set-up say: retried, so that the event goes once they are fixed, and noted
 * as a configuration error with hint (what to fix).
 */
void dest_event_misconfigured(struct DestEvent *e, struct Verdict *v, const char *error, const char *hint);

/*
 * dest_event_detail makes d (a reference taken; NULL: out of memory) the log row's detail of e's
 * attempt, as compact JSON kept with e on the heap (a Redis stream's name alone may be 512 bytes,
 * an exchange's and a routing key 255 each, and a cut document would be no JSON). Without memory
 * the log row goes without its detail.
 */
void dest_event_detail(struct DestEvent *e, struct Verdict *v, json_t *d);

#endif
