/*
 * rmq_kind.h - the rabbitmq kind of event: the event published to its channel's RabbitMQ exchange
 * and confirmed by the broker (docs/rabbitmq.md). The steps of its entry in the table of kinds (dispatch/kind.c); the
 * held transaction sends the statements.
 */
#ifndef PGRELAY_RMQ_KIND_H
#define PGRELAY_RMQ_KIND_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "attempt.h"

/* rmq_kind_open makes the state of one rabbitmq event in the attempt a; NULL when out of memory. */
void *rmq_kind_open(struct Attempt *a);

/* rmq_kind_close frees it, the resolved password wiped. */
void rmq_kind_close(void *st);

/*
 * rmq_kind_read reads the claim (_destination_claim): payload, attempt, event id, channel, key,
 * queue time, the channel's settings, its timeout, replayed.
 */
enum HeldClaim rmq_kind_read(void *st, PGresult *res, bool trusted, const char *fetch_error);

/*
 * rmq_kind_deliver publishes the event to the channel's exchange, over this worker thread's kept
 * connection (rmq_kind_thread_end closes it), and classifies what came of it. It fills a->rep (a
 * configuration error) and logs nothing.
 */
void rmq_kind_deliver(void *st, struct Verdict *v);

/*
 * rmq_kind_read_row reads row of the batched claim (_destination_claim_many: the columns of
 * _destination_claim, then the event's id), leaving res to the caller.
 */
enum HeldClaim rmq_kind_read_row(void *st, const PGresult *res, int row);

/*
 * rmq_kind_deliver_many publishes the events sts[0..n) (claimed together, of one channel) to the
 * channel's exchange on the kept connection: every message sent, then the broker's confirms read
 * until each is answered for or the channel's timeout passes; each event gets its own verdict in
 * vs[i] (rmq_publish_many): acked ok, nacked retried, returned failed, unanswered retried.
 */
void rmq_kind_deliver_many(void *const *sts, int n, struct Verdict *vs);

/* rmq_kind_thread_end closes the calling worker thread's RabbitMQ connection, if it has one. */
void rmq_kind_thread_end(void);

#endif
