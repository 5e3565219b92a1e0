/*
 * rmq_kind.h - the rabbitmq kind of event: the event published to its channel's RabbitMQ exchange
 * and confirmed by the broker (docs/rabbitmq.md). Its steps in the table of kinds
 * (dispatch/kind.c) are those of every destination event (dest_event.h) with the rabbitmq target
 * and publish; the held transaction sends the statements.
 */
#ifndef PGRELAY_RMQ_KIND_H
#define PGRELAY_RMQ_KIND_H

#include "attempt.h"

/*
 * rmq_kind_open makes the state of one rabbitmq event in the attempt a (dest_event_open); NULL
 * when out of memory. The events of a batch (claimed together, of one channel; one alone is a
 * batch of one) are published together over this worker thread's kept connection
 * (rmq_kind_thread_end closes it): every message sent, then the broker's confirms read until each
 * is answered for or the channel's timeout passes, each event its own verdict (rmq_publish_many):
 * acked ok, nacked retried, returned failed, unanswered retried.
 */
void *rmq_kind_open(struct Attempt *a);

/* rmq_kind_thread_end closes the calling worker thread's RabbitMQ connection, if it has one. */
void rmq_kind_thread_end(void);

#endif
