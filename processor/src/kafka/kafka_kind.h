/*
 * kafka_kind.h - the kafka kind of event: the event produced to its channel's Kafka topic
 * (docs/kafka.md). The steps of its entry in the table of kinds (dispatch/kind.c); the held
 * transaction sends the statements.
 */
#ifndef PGRELAY_KAFKA_KIND_H
#define PGRELAY_KAFKA_KIND_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "attempt.h"

/* kafka_kind_open makes the state of one kafka event in the attempt a; NULL when out of memory. */
void *kafka_kind_open(struct Attempt *a);

/* kafka_kind_close frees it, the resolved password wiped. */
void kafka_kind_close(void *st);

/*
 * kafka_kind_read reads the claim (_destination_claim): payload, attempt, event id, channel, key,
 * queue time, the channel's settings, its timeout, replayed.
 */
enum HeldClaim kafka_kind_read(void *st, PGresult *res, bool trusted, const char *fetch_error);

/* kafka_kind_read_row reads row of the batch's claim (_destination_claim_many): as kafka_kind_read. */
enum HeldClaim kafka_kind_read_row(void *st, const PGresult *res, int row);

/*
 * kafka_kind_deliver_many produces the n events sts[0..n) of one channel to its topic through the
 * channel's shared producer, all at once, waits for every delivery report (under the channel's
 * timeout for the whole batch) and classifies what came of each, in vs[i]. It fills each event's
 * a->rep (a configuration error) and logs nothing.
 */
void kafka_kind_deliver_many(void *const *sts, int n, struct Verdict *vs);

/* kafka_kind_deliver delivers one event alone: kafka_kind_deliver_many of one. */
void kafka_kind_deliver(void *st, struct Verdict *v);

/* kafka_kind_shutdown destroys the producers; once no worker delivers any more. */
void kafka_kind_shutdown(void);

#endif
