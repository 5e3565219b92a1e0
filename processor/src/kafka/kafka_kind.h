/*
 * kafka_kind.h - the kafka kind of event: the event produced to its channel's Kafka topic
 * (docs/kafka.md). Its steps in the table of kinds (dispatch/kind.c) are those of every
 * destination event (dest_event.h) with the kafka target and produce; the held transaction sends
 * the statements.
 */
#ifndef PGRELAY_KAFKA_KIND_H
#define PGRELAY_KAFKA_KIND_H

#include "attempt.h"

/*
 * kafka_kind_open makes the state of one kafka event in the attempt a (dest_event_open); NULL when
 * out of memory. The events of a batch (of one channel; one alone is a batch of one) are produced
 * to the topic through the channel's shared producer, all at once, and every delivery report is
 * awaited under the channel's timeout for the whole batch, each event its own verdict.
 */
void *kafka_kind_open(struct Attempt *a);

/* kafka_kind_shutdown destroys the producers; once no worker delivers any more. */
void kafka_kind_shutdown(void);

#endif
