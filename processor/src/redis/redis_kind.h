/*
 * redis_kind.h - the redis kind of event: the event appended to its channel's Redis stream
 * (docs/destinations.md). The steps of its entry in the table of kinds (dispatch/kind.c); the
 * held transaction sends the statements.
 */
#ifndef PGRELAY_REDIS_KIND_H
#define PGRELAY_REDIS_KIND_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "attempt.h"

/* redis_kind_open makes the state of one redis event in the attempt a; NULL when out of memory. */
void *redis_kind_open(struct Attempt *a);

/* redis_kind_close frees it, the resolved password wiped. */
void redis_kind_close(void *st);

/*
 * redis_kind_read reads the claim (_destination_claim): payload, attempt, event id, channel, key,
 * queue time, the channel's settings, its timeout, replayed.
 */
enum HeldClaim redis_kind_read(void *st, PGresult *res, bool trusted, const char *fetch_error);

/*
 * redis_kind_deliver appends the event to the channel's stream, over this worker thread's kept
 * connection (redis_kind_thread_end closes it), and classifies what came of it. It fills a->rep (a
 * configuration error) and logs nothing.
 */
void redis_kind_deliver(void *st, struct Verdict *v);

/*
 * redis_kind_read_row reads row of the batched claim (_destination_claim_many: the columns of
 * _destination_claim, then the event's id), leaving res to the caller.
 */
enum HeldClaim redis_kind_read_row(void *st, const PGresult *res, int row);

/*
 * redis_kind_deliver_many appends the events sts[0..n) (claimed together, of one channel) to the
 * channel's stream in one pipeline on the kept connection: every script call sent, then every
 * reply read; each event gets its own verdict in vs[i] (redis_stream_append_many).
 */
void redis_kind_deliver_many(void *const *sts, int n, struct Verdict *vs);

/* redis_kind_thread_end closes the calling worker thread's Redis connection, if it has one. */
void redis_kind_thread_end(void);

#endif
