/*
 * rmq_kind.c - the rabbitmq kind of event (held.c runs its held transaction, docs/rabbitmq.md).
 * The events of a channel run in batches (held_run_many):
 *
 *   BEGIN; _destination_claim_many (the rows and the channel's settings); every message published
 *   to the exchange outside the database, then the broker's confirms read, under the channel's
 *   timeout for the whole batch (rmq_publish.c); _finish_held_many; COMMIT.
 *
 * One event alone (a batch that failed is run one event per transaction) is a batch of one, with
 * _destination_claim and _finish_held. The claimed rows stay locked until the broker's confirms,
 * so no other worker takes them; a crash between the confirms and COMMIT, or a connection lost
 * before a confirm, leaves an event for a later attempt that publishes it again: at least once,
 * and the consumer drops the second copy by its message_id (the event's id). Here: the channel's
 * target, each routing key, the publish and each verdict; the rest is every destination event's
 * (dest_event.c).
 */
#include "rmq_kind.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dest_event.h"
#include "rmq_publish.h"

/*
 * Each worker thread keeps its connection between events: the next event to the same broker
 * (same address, virtual host, TLS and credentials) reuses it.
 */
static _Thread_local struct RmqSession session;

void
rmq_kind_thread_end(void)
{
	rmq_session_close(&session);
}

/*
 * routing_key_of is the event's routing key by the settings: fixed, the event's key, or a field
 * of its JSON payload (a string or a number, made in number; payload is the parsed document, NULL
 * when it is no JSON). NULL, e's verdict given in v, when the event has none: no retry gives it
 * one.
 */
static const char *
routing_key_of(struct DestEvent *e, json_t *doc, json_t *payload, char *number, size_t numlen,
			   struct Verdict *v)
{
	const char *from = dest_event_text(doc, "routing_key_from");
	const char *field = dest_event_text(doc, "routing_key_field");
	char err[512];
	json_t *j;

	if (from == NULL || strcmp(from, "fixed") == 0)
		return dest_event_text(doc, "routing_key");
	if (strcmp(from, "key") == 0) {
		if (e->r.key != NULL && strlen(e->r.key) <= 255)
			return e->r.key;
		dest_event_nothing_sent(e, v, AR_PERMANENT, "the event has no key of 1 to 255 bytes to route by");
		return NULL;
	}
	j = json_is_object(payload) && field != NULL ? json_object_get(payload, field) : NULL;
	if (json_is_string(j) && json_string_length(j) > 0 && json_string_length(j) <= 255 &&
		strlen(json_string_value(j)) == json_string_length(j))
		return json_string_value(j);
	if (json_is_integer(j)) {
		snprintf(number, numlen, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		return number;
	}
	snprintf(err, sizeof err,
			 "the payload has no field \"%.200s\" (a string of 1 to 255 bytes or a "
			 "whole number) to route by",
			 field != NULL ? field : "");
	dest_event_nothing_sent(e, v, AR_PERMANENT, err);
	return NULL;
}

/* target_of fills t from the channel's settings but for the routing key (DestSteps.target). */
static const char **
target_of(struct DestEvent *e, json_t *doc, void *target)
{
	struct RmqTarget *t = target;

	t->addr.host = dest_event_text(doc, "host");
	t->addr.port = (int) json_integer_value(json_object_get(doc, "port"));
	t->addr.vhost = dest_event_text(doc, "vhost");
	t->addr.tls = json_is_true(json_object_get(doc, "tls"));
	t->addr.ca_file = dest_event_text(doc, "ca_file");
	t->addr.tls_verify = !json_is_false(json_object_get(doc, "tls_verify"));
	t->addr.user = dest_event_text(doc, "user");
	t->exchange = dest_event_text(doc, "exchange");
	t->mandatory = !json_is_false(json_object_get(doc, "mandatory"));
	t->timeout_ms = dest_event_timeout_ms(e, NULL);
	if (t->addr.host == NULL || t->addr.vhost == NULL || t->addr.user == NULL || t->exchange == NULL ||
		t->addr.port <= 0)
		return NULL;
	return &t->addr.password;
}

/* message_of is e's message by routing key (json: the payload is JSON, sent as application/json). */
static struct RmqMessage
message_of(const struct DestEvent *e, const char *routing_key, bool json)
{
	return (struct RmqMessage){.routing_key = routing_key,
							   .event_id = e->r.event_id,
							   .channel = e->r.channel,
							   .attempt = e->a->attempt,
							   .queued_at = e->r.queued_at,
							   .key = e->r.key,
							   .publication_id = e->r.publication_id,
							   .event_type = e->r.event_type,
							   .payload = e->r.payload,
							   .payload_len = strlen(e->r.payload),
							   .json = json};
}

/* verdict_of turns the result of publishing m into the attempt's verdict and its log detail. */
static void
verdict_of(struct DestEvent *e, const struct RmqTarget *t, const struct RmqMessage *m,
		   const struct RmqResult *r, struct Verdict *v)
{
	json_t *d = json_pack("{s:s, s:s, s:s, s:i}", "exchange", t->exchange, "routing_key", m->routing_key,
						  "host", t->addr.host, "port", t->addr.port);

	if (d != NULL && r->outcome == QO_SENT)
		json_object_set_new(d, "confirmed", json_true());
	else if (d != NULL && r->unknown)
		json_object_set_new(d, "unknown", json_true());
	dest_event_detail(e, v, d);
	switch (r->outcome) {
	case QO_SENT:
		v->result = AR_OK;
		break;
	case QO_CONFIG:
		dest_event_misconfigured(
			e, v, r->error,
			"fix the channel's settings (pgrelay.register(channel, settings => ...)) or "
			"the broker's users, permissions, virtual hosts and exchanges, as the error says");
		break;
	case QO_UNROUTABLE:
		dest_event_nothing_sent(e, v, AR_PERMANENT, r->error);
		break;
	case QO_RETRY:
		dest_event_nothing_sent(e, v, AR_TRANSIENT, r->error);
		break;
	}
}

/* A batch being published: each event's message and result, in the order given. */
struct RmqBatch {
	struct DestEvent **events; /* those with a routing key, published */
	struct RmqMessage *msgs;
	char (*numbers)[32]; /* a routing key from a number field */
	json_t **payloads;   /* each event's parsed payload, NULL when none */
	struct RmqResult *rs;
	int n;
};

static void
batch_free(struct RmqBatch *b, int n)
{
	int i;

	for (i = 0; b->payloads != NULL && i < n; i++)
		json_decref(b->payloads[i]);
	free(b->events);
	free(b->msgs);
	free(b->numbers);
	free(b->payloads);
	free(b->rs);
}

/*
 * publish_all publishes the events of sts[0..n), of one channel, to t on the kept connection in
 * one batch (rmq_publish_many), and gives each its verdict; an event without a routing key fails
 * alone, unpublished (DestSteps.many, and one event alone: a batch of one).
 */
static bool
publish_all(void *const *sts, int n, json_t *doc, const void *target, struct Verdict *vs)
{
	struct RmqBatch b = {calloc((size_t) n, sizeof *b.events),  calloc((size_t) n, sizeof *b.msgs),
						 calloc((size_t) n, sizeof *b.numbers), calloc((size_t) n, sizeof *b.payloads),
						 calloc((size_t) n, sizeof *b.rs),      0};
	struct Verdict **mine = calloc((size_t) n, sizeof *mine);
	const struct RmqTarget *t = target;
	int i;

	if (b.events == NULL || b.msgs == NULL || b.numbers == NULL || b.payloads == NULL || b.rs == NULL ||
		mine == NULL) {
		batch_free(&b, n);
		free(mine);
		return false;
	}
	for (i = 0; i < n; i++) {
		struct DestEvent *e = sts[i];
		const char *key;

		b.payloads[i] = json_loadb(e->r.payload, strlen(e->r.payload), JSON_DECODE_ANY, NULL);
		key = routing_key_of(e, doc, b.payloads[i], b.numbers[i], sizeof b.numbers[i], &vs[i]);
		if (key == NULL)
			continue;
		b.msgs[b.n] = message_of(e, key, b.payloads[i] != NULL);
		b.events[b.n] = e;
		mine[b.n++] = &vs[i];
	}
	if (b.n > 0)
		rmq_publish_many(&session, t, b.msgs, b.n, b.rs);
	for (i = 0; i < b.n; i++)
		verdict_of(b.events[i], t, &b.msgs[i], &b.rs[i], mine[i]);
	batch_free(&b, n);
	free(mine);
	return true;
}

static const struct DestSteps rabbitmq = {"rabbitmq", sizeof(struct RmqTarget), target_of, NULL, publish_all};

void *
rmq_kind_open(struct Attempt *a)
{
	return dest_event_open(a, &rabbitmq);
}
