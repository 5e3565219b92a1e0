/*
 * rmq_publish.h - an event published to a RabbitMQ exchange as one persistent message, and
 * confirmed: the attempt ends when the broker has acked it (publisher confirms), nacked it,
 * returned it as unroutable (mandatory), refused it, or when the deadline passes: while the
 * messages are written too (the connection's guard cuts a write a blocked broker holds up), and
 * the connection is then dropped. The events go in batches, every message sent before the confirms
 * are read (rmq_publish_many); one event alone is a batch of one.
 *
 * A worker keeps one RmqSession (its connection, reused while the next event goes to the same
 * broker as the same user). Never logs, never exits.
 */
#ifndef PGRELAY_RMQ_PUBLISH_H
#define PGRELAY_RMQ_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>

#include "rmq_conn.h"

/* A channel's destination, its secrets resolved. */
struct RmqTarget {
	struct RmqAddress addr;
	const char *exchange; /* "": the default exchange */
	bool mandatory;       /* an unroutable message comes back and fails */
	long timeout_ms;      /* the whole attempt: connect, login, publish, confirm */
};

/* One event as its message carries it. */
/* the headers a message may carry: channel, attempt, queued_at, key, publication_id, event_type */
#define RMQ_HEADERS_MAX 6

struct RmqMessage {
	const char *routing_key;    /* what the exchange routes it by */
	const char *event_id;       /* message_id */
	const char *channel;        /* header channel */
	int attempt;                /* header attempt */
	const char *queued_at;      /* header queued_at, ISO 8601 */
	const char *key;            /* header key; NULL: the event has none */
	const char *publication_id; /* header publication_id; "": not published on a topic */
	const char *event_type;     /* header event_type; NULL: none */
	const char *payload;        /* the body */
	size_t payload_len;
	bool json; /* content_type application/json */
};

enum RmqOutcome {
	QO_SENT,       /* acked by the broker */
	QO_RETRY,      /* not published, nacked, or unknown (timed out, lost): try again later */
	QO_CONFIG,     /* refused for what the channel's settings or the broker's set-up say */
	QO_UNROUTABLE, /* returned: no queue is bound for its routing key (mandatory) */
};

struct RmqResult {
	enum RmqOutcome outcome;
	bool unknown;           /* QO_RETRY after the message went out: it may have been queued */
	unsigned long long tag; /* its delivery tag on the connection, QO_SENT */
	char error[512];        /* why, otherwise; never holds a secret */
	bool pending;           /* (rmq_publish_many's own: published, not answered for yet) */
	bool returned;          /* (rmq_publish_many's own: a basic.return named it) */
};

struct RmqSession {
	struct RmqConn *conn;  /* NULL until the first event, and after a failure */
	bool reused;           /* this attempt runs on a connection kept from an earlier one */
	long long deadline_ms; /* this attempt's end (now_us() / 1000 based) */
};

/*
 * rmq_publish_many publishes m[0..n) to t (each by its own routing key) through s on one
 * connection (kept, or replaced when it is not t's or the broker closed it), pipelined: every
 * message sent, then the connection read until the broker has answered for every delivery tag (an
 * ack or a nack, one or many at once) or t's timeout, for the whole batch, has passed. Each message
 * gets its own result in r[0..n): acked QO_SENT, nacked QO_RETRY, returned (mandatory, unroutable:
 * matched by its message_id) QO_UNROUTABLE; one the broker did not answer for before the
 * connection was lost, closed or the deadline passed is QO_RETRY, unknown (it may have been
 * queued: its message_id lets the consumer drop a copy).
 * The message ids of a batch must differ.
 */
void rmq_publish_many(struct RmqSession *s, const struct RmqTarget *t, const struct RmqMessage *m, int n,
					  struct RmqResult *r);

/* rmq_session_close closes s's connection, if any. */
void rmq_session_close(struct RmqSession *s);

#endif
