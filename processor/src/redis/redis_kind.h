/*
 * redis_kind.h - the redis kind of event: the event appended to its channel's Redis stream
 * (docs/destinations.md). Its steps in the table of kinds (dispatch/kind.c) are those of every
 * destination event (dest_event.h) with the redis target and append; the held transaction sends
 * the statements.
 */
#ifndef PGRELAY_REDIS_KIND_H
#define PGRELAY_REDIS_KIND_H

#include "attempt.h"

/*
 * redis_kind_open makes the state of one redis event in the attempt a (dest_event_open); NULL when
 * out of memory. Delivered alone, it is appended over this worker thread's kept connection
 * (redis_kind_thread_end closes it); the events of a batch (claimed together, of one channel) are
 * appended in one pipeline on it, every script call sent, then every reply read, each event its
 * own verdict (redis_stream_append_many).
 */
void *redis_kind_open(struct Attempt *a);

/* redis_kind_thread_end closes the calling worker thread's Redis connection, if it has one. */
void redis_kind_thread_end(void);

#endif
