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

/*
 * kafka_kind_deliver produces the event to the channel's topic through the channel's shared
 * producer, waits for its delivery report and classifies what came of it. It fills a->rep (a
 * configuration error) and logs nothing.
 */
void kafka_kind_deliver(void *st, struct Verdict *v);

/* kafka_kind_shutdown destroys the producers; once no worker delivers any more. */
void kafka_kind_shutdown(void);

#endif
