/*
 * rmq_kind.c - the rabbitmq kind of event (held.c runs its held transaction, docs/rabbitmq.md).
 * The events of a channel run in batches (held_run_many):
 *
 *   BEGIN; _destination_claim_many (the rows and the channel's settings); every message published
 *   to the exchange outside the database, then the broker's confirms read, under the channel's
 *   timeout for the whole batch (rmq_publish.c); _finish_held_many; COMMIT.
 *
 * One event alone (a batch that failed is run one event per transaction) goes the same way with
 * _destination_claim and _finish_held. The claimed rows stay locked until the broker's confirms,
 * so no other worker takes them; a crash between the confirms and COMMIT, or a connection lost
 * before a confirm, leaves an event for a later attempt that publishes it again: at least once,
 * and the consumer drops the second copy by its message_id (the event's id).
 */
#include "rmq_kind.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dest_row.h"
#include "pgconn.h"
#include "rmq_publish.h"
#include "secrets.h"

/* A rabbitmq event's state, from the claim to the commit. */
struct RmqEvent {
	struct Attempt *a;
	struct DestRow r; /* the claimed row */
	char error[1024];
	char *detail; /* the log row's detail (JSON), NULL until made */
};

/*
 * Each worker thread keeps its connection between events: the next event to the same broker
 * (same address, virtual host, TLS and credentials) reuses it.
 */
static _Thread_local struct RmqSession session;

void *
rmq_kind_open(struct Attempt *a)
{
	struct RmqEvent *e = calloc(1, sizeof *e);

	if (e != NULL)
		e->a = a;
	return e;
}

void
rmq_kind_close(void *st)
{
	struct RmqEvent *e = st;

	if (e == NULL)
		return;
	dest_row_free(&e->r);
	free(e->detail);
	free(e);
}

void
rmq_kind_thread_end(void)
{
	rmq_session_close(&session);
}

enum HeldClaim
rmq_kind_read_row(void *st, const PGresult *res, int row)
{
	struct RmqEvent *e = st;

	return dest_row_read(&e->r, &e->a->attempt, res, row);
}

enum HeldClaim
rmq_kind_read(void *st, PGresult *res, bool trusted, const char *fetch_error)
{
	struct RmqEvent *e = st;

	(void) trusted; /* the claim names nothing of another schema, and fetches nothing */
	(void) fetch_error;
	return dest_row_read_one(&e->r, &e->a->attempt, res);
}

/* nothing_sent is the verdict of an attempt that published nothing: result, with error. */
static void
nothing_sent(struct RmqEvent *e, struct Verdict *v, enum AttemptResult result, const char *error)
{
	if (error != e->error)
		snprintf(e->error, sizeof e->error, "%s", error);
	v->result = result;
	v->error = e->error;
}

/* text_of is the string member key of doc, or NULL. */
static const char *
text_of(json_t *doc, const char *key)
{
	return json_string_value(json_object_get(doc, key));
}

/*
 * routing_key_of is the event's routing key by the settings: fixed, the event's key, or a field
 * of its JSON payload (a string or a number; payload is the parsed document, NULL when it is no
 * JSON). NULL with the reason in e->error when the event has none: no retry gives it one.
 */
static const char *
routing_key_of(struct RmqEvent *e, json_t *doc, json_t *payload, char *buf, size_t buflen)
{
	const char *from = text_of(doc, "routing_key_from");
	const char *field = text_of(doc, "routing_key_field");
	json_t *v;

	if (from == NULL || strcmp(from, "fixed") == 0)
		return text_of(doc, "routing_key");
	if (strcmp(from, "key") == 0) {
		if (e->r.key == NULL || strlen(e->r.key) > 255)
			snprintf(e->error, sizeof e->error, "the event has no key of 1 to 255 bytes to route by");
		return e->r.key != NULL && strlen(e->r.key) <= 255 ? e->r.key : NULL;
	}
	v = json_is_object(payload) && field != NULL ? json_object_get(payload, field) : NULL;
	if (json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) <= 255 &&
		strlen(json_string_value(v)) == json_string_length(v))
		return json_string_value(v);
	if (json_is_integer(v)) {
		snprintf(buf, buflen, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return buf;
	}
	snprintf(e->error, sizeof e->error,
			 "the payload has no field \"%.200s\" (a string of 1 to 255 bytes or a "
			 "whole number) to route by",
			 field != NULL ? field : "");
	return NULL;
}

/*
 * target_of fills t from the settings document (register() checked and completed it), the
 * password resolved for this channel only. False with the reason in e->error; *config: it is the
 * set-up's (a secret that cannot be read).
 */
static bool
target_of(struct RmqEvent *e, json_t *doc, struct RmqTarget *t, bool *config)
{
	const char *ref = text_of(doc, "password");
	struct SecretOwner o = {SO_CHANNEL, e->r.channel, e->a->ws->secrets_dir, e->a->ws->secret_env};

	*config = false;
	t->addr.host = text_of(doc, "host");
	t->addr.port = (int) json_integer_value(json_object_get(doc, "port"));
	t->addr.vhost = text_of(doc, "vhost");
	t->addr.tls = json_is_true(json_object_get(doc, "tls"));
	t->addr.ca_file = text_of(doc, "ca_file");
	t->addr.tls_verify = !json_is_false(json_object_get(doc, "tls_verify"));
	t->addr.user = text_of(doc, "user");
	t->exchange = text_of(doc, "exchange");
	t->mandatory = !json_is_false(json_object_get(doc, "mandatory"));
	t->timeout_ms = e->r.timeout_ms > 0 ? e->r.timeout_ms : 30000;
	if (e->a->ws->max_delivery_time_ms > 0 && e->a->ws->max_delivery_time_ms < t->timeout_ms)
		t->timeout_ms = e->a->ws->max_delivery_time_ms;
	if (t->addr.host == NULL || t->addr.vhost == NULL || t->addr.user == NULL || t->exchange == NULL ||
		t->addr.port <= 0) {
		snprintf(e->error, sizeof e->error, "the channel's rabbitmq settings are incomplete");
		return false;
	}
	dest_row_forget_password(&e->r);
	if (ref != NULL && !secrets_resolve(ref, &o, &e->r.password, e->error, sizeof e->error)) {
		*config = true;
		return false;
	}
	t->addr.password = e->r.password;
	return true;
}

/* message_of is e's message (json: the payload is JSON, sent as application/json). */
static struct RmqMessage
message_of(const struct RmqEvent *e, bool json)
{
	return (struct RmqMessage){.event_id = e->r.event_id,
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

/* verdict_of turns the publish's result into the attempt's verdict and its log detail. */
static void
verdict_of(struct RmqEvent *e, const struct RmqTarget *t, const struct RmqResult *r, struct Verdict *v)
{
	json_t *d = json_pack("{s:s, s:s, s:s, s:i}", "exchange", t->exchange, "routing_key", t->routing_key,
						  "host", t->addr.host, "port", t->addr.port);
	char *text;

	if (d != NULL && r->outcome == QO_SENT)
		json_object_set_new(d, "confirmed", json_true());
	else if (d != NULL && r->unknown)
		json_object_set_new(d, "unknown", json_true());
	/* on the heap: the exchange and the routing key alone may be 255 bytes each */
	text = d != NULL ? json_dumps(d, JSON_COMPACT) : NULL;
	json_decref(d);
	free(e->detail);
	e->detail = text;
	v->detail = text; /* NULL (out of memory): the log row goes without its detail */
	switch (r->outcome) {
	case QO_SENT:
		v->result = AR_OK;
		break;
	case QO_CONFIG:
		/* retried, so that the event goes once the settings or the broker are fixed */
		attempt_config_error(
			e->a->rep, CE_DESTINATION, SECRETS_SQLSTATE,
			"fix the channel's settings (pgrelay.register(channel, settings => ...)) or "
			"the broker's users, permissions, virtual hosts and exchanges, as the error says");
		nothing_sent(e, v, AR_TRANSIENT, r->error);
		break;
	case QO_UNROUTABLE:
		nothing_sent(e, v, AR_PERMANENT, r->error);
		break;
	case QO_RETRY:
		nothing_sent(e, v, AR_TRANSIENT, r->error);
		break;
	}
}

void
rmq_kind_deliver(void *st, struct Verdict *v)
{
	struct RmqEvent *e = st;
	struct RmqTarget t = {0};
	struct RmqMessage m;
	struct RmqResult r;
	char number[32];
	json_t *doc, *payload;
	bool config;

	if (e->r.settings == NULL || (doc = json_loads(e->r.settings, 0, NULL)) == NULL) {
		nothing_sent(e, v, AR_PERMANENT, "the channel has no rabbitmq settings");
		return;
	}
	if (!target_of(e, doc, &t, &config)) {
		if (config)
			attempt_config_error(e->a->rep, CE_SECRET, SECRETS_SQLSTATE, secrets_hint(e->error));
		nothing_sent(e, v, config ? AR_TRANSIENT : AR_PERMANENT, e->error);
		json_decref(doc);
		return;
	}
	payload = json_loadb(e->r.payload, strlen(e->r.payload), JSON_DECODE_ANY, NULL);
	t.routing_key = routing_key_of(e, doc, payload, number, sizeof number);
	if (t.routing_key == NULL) {
		nothing_sent(e, v, AR_PERMANENT, e->error);
	} else {
		m = message_of(e, payload != NULL);
		rmq_publish(&session, &t, &m, &r);
		verdict_of(e, &t, &r, v);
	}
	json_decref(payload);
	json_decref(doc);
}

/* A batch being published: each event's message, routing key and result, in the order given. */
struct RmqBatch {
	struct RmqEvent **events; /* those with a routing key, published */
	struct RmqMessage *msgs;
	const char **keys;
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
	free(b->keys);
	free(b->numbers);
	free(b->payloads);
	free(b->rs);
}

/*
 * publish_all publishes the events of sts[0..n), of one channel, to the target of the first on
 * the kept connection in one batch (rmq_publish_many), and gives each its verdict; an event
 * without a routing key fails alone, unpublished. False, nothing sent, when memory ran out.
 */
static bool
publish_all(void *const *sts, int n, json_t *doc, const struct RmqTarget *t, struct Verdict *vs)
{
	struct RmqBatch b = {calloc((size_t) n, sizeof *b.events),
						 calloc((size_t) n, sizeof *b.msgs),
						 calloc((size_t) n, sizeof *b.keys),
						 calloc((size_t) n, sizeof *b.numbers),
						 calloc((size_t) n, sizeof *b.payloads),
						 calloc((size_t) n, sizeof *b.rs),
						 0};
	struct Verdict **mine = calloc((size_t) n, sizeof *mine);
	struct RmqTarget each = *t;
	int i;

	if (b.events == NULL || b.msgs == NULL || b.keys == NULL || b.numbers == NULL || b.payloads == NULL ||
		b.rs == NULL || mine == NULL) {
		batch_free(&b, n);
		free(mine);
		return false;
	}
	for (i = 0; i < n; i++) {
		struct RmqEvent *e = sts[i];
		const char *key;

		b.payloads[i] = json_loadb(e->r.payload, strlen(e->r.payload), JSON_DECODE_ANY, NULL);
		key = routing_key_of(e, doc, b.payloads[i], b.numbers[i], sizeof b.numbers[i]);
		if (key == NULL) {
			nothing_sent(e, &vs[i], AR_PERMANENT, e->error);
			continue;
		}
		b.msgs[b.n] = message_of(e, b.payloads[i] != NULL);
		b.keys[b.n] = key;
		b.events[b.n] = e;
		mine[b.n++] = &vs[i];
	}
	if (b.n > 0)
		rmq_publish_many(&session, t, b.msgs, b.keys, b.n, b.rs);
	for (i = 0; i < b.n; i++) {
		each.routing_key = b.keys[i];
		verdict_of(b.events[i], &each, &b.rs[i], mine[i]);
	}
	batch_free(&b, n);
	free(mine);
	return true;
}

void
rmq_kind_deliver_many(void *const *sts, int n, struct Verdict *vs)
{
	struct RmqEvent *first = sts[0];
	struct RmqTarget t = {0};
	json_t *doc = first->r.settings != NULL ? json_loads(first->r.settings, 0, NULL) : NULL;
	bool config, sent = false;
	int i;

	/* the events are of one channel: its settings, and its secret, are read once */
	if (doc != NULL && target_of(first, doc, &t, &config))
		sent = publish_all(sts, n, doc, &t, vs);
	json_decref(doc);
	/* settings that do not make a target, or no memory for the batch: each event as alone */
	for (i = 0; !sent && i < n; i++)
		rmq_kind_deliver(sts[i], &vs[i]);
}
