/*
 * kafka_kind.c - the kafka kind of event (held.c runs its held transaction, docs/kafka.md), in
 * batches of one channel's events (held_run_many):
 *
 *   BEGIN; _destination_claim_many (the rows and the channel's settings); every event produced to
 *   the topic and each delivery report awaited outside the database (kafka_producer.c);
 *   _finish_held_many; COMMIT.
 *
 * or one event alone (_destination_claim, _finish_held) when a batch's statement failed. The
 * claimed rows stay locked until the reports, so no other worker takes them. A crash after the
 * brokers took a message and before COMMIT, or a report that did not come in time, sends it again
 * on a later attempt: at least once, a consumer drops the second copy by its event_id header.
 */
#include "kafka_kind.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_producer.h"
#include "dest_row.h"
#include "pgconn.h"
#include "secrets.h"

/* A kafka event's state, from the claim to the commit. */
struct KafkaEvent {
	struct Attempt *a;
	struct DestRow r; /* the claimed row */
	char *field_key;  /* the message key taken from the payload (key: field) */
	char attempt[16]; /* the attempt's number, as its header carries it */
	char error[1024];
	char *detail; /* the log row's detail (JSON), NULL until made */
};

void *
kafka_kind_open(struct Attempt *a)
{
	struct KafkaEvent *e = calloc(1, sizeof *e);

	if (e != NULL)
		e->a = a;
	return e;
}

void
kafka_kind_close(void *st)
{
	struct KafkaEvent *e = st;

	if (e == NULL)
		return;
	dest_row_free(&e->r);
	free(e->field_key);
	free(e->detail);
	free(e);
}

void
kafka_kind_shutdown(void)
{
	kafka_producers_close();
}

enum HeldClaim
kafka_kind_read_row(void *st, const PGresult *res, int row)
{
	struct KafkaEvent *e = st;

	return dest_row_read(&e->r, &e->a->attempt, res, row);
}

enum HeldClaim
kafka_kind_read(void *st, PGresult *res, bool trusted, const char *fetch_error)
{
	struct KafkaEvent *e = st;

	(void) trusted; /* the claim names nothing of another schema, and fetches nothing */
	(void) fetch_error;
	return dest_row_read_one(&e->r, &e->a->attempt, res);
}

/* nothing_sent is the verdict of an attempt that delivered nothing: result, with error. */
static void
nothing_sent(struct KafkaEvent *e, struct Verdict *v, enum AttemptResult result, const char *error)
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
 * target_of fills t from the settings document (register() checked and completed it), the
 * password resolved for this channel only. False with the reason in e->error; *config: it is the
 * set-up's (a secret that cannot be read).
 */
static bool
target_of(struct KafkaEvent *e, json_t *doc, struct KafkaTarget *t, bool *config)
{
	const char *ref = text_of(doc, "password");
	struct SecretOwner o = {SO_CHANNEL, e->r.channel, e->a->ws->secrets_dir, e->a->ws->secret_env};
	json_t *own_timeout = json_object_get(doc, "timeout_ms");

	*config = false;
	t->channel = e->r.channel;
	t->settings = e->r.settings;
	t->brokers = text_of(doc, "brokers");
	t->topic = text_of(doc, "topic");
	t->tls = json_is_true(json_object_get(doc, "tls"));
	t->tls_verify = !json_is_false(json_object_get(doc, "tls_verify"));
	t->ca_file = text_of(doc, "ca_file");
	t->sasl_mechanism = text_of(doc, "sasl_mechanism");
	t->user = text_of(doc, "user");
	/* the channel's own timeout_ms setting, else its timeout, within max-delivery-time */
	t->timeout_ms = json_is_integer(own_timeout) ? (long) json_integer_value(own_timeout)
					: e->r.timeout_ms > 0        ? e->r.timeout_ms
												 : 30000;
	if (e->a->ws->max_delivery_time_ms > 0 && e->a->ws->max_delivery_time_ms < t->timeout_ms)
		t->timeout_ms = e->a->ws->max_delivery_time_ms;
	if (t->brokers == NULL || t->topic == NULL || text_of(doc, "key") == NULL) {
		snprintf(e->error, sizeof e->error, "the channel's kafka settings are incomplete");
		return false;
	}
	dest_row_forget_password(&e->r);
	if (ref != NULL && !secrets_resolve(ref, &o, &e->r.password, e->error, sizeof e->error)) {
		*config = true;
		return false;
	}
	t->password = e->r.password;
	return true;
}

/*
 * key_of sets the message's key as the settings say: the event's key, a member of the payload (a
 * JSON object), or none. False with the reason in e->error: the payload has no such member.
 */
static bool
key_of(struct KafkaEvent *e, json_t *doc, struct KafkaMessage *m)
{
	const char *how = text_of(doc, "key");
	const char *field = text_of(doc, "key_field");
	json_t *payload, *v;

	m->key = NULL;
	m->key_len = 0;
	if (strcmp(how, "event") == 0 && e->r.key != NULL) {
		m->key = e->r.key;
		m->key_len = strlen(e->r.key);
	}
	if (strcmp(how, "field") != 0 || field == NULL)
		return true;
	payload = json_loads(e->r.payload, JSON_DECODE_ANY, NULL);
	v = json_is_object(payload) ? json_object_get(payload, field) : NULL;
	if (json_is_string(v))
		e->field_key = strdup(json_string_value(v));
	else if (v != NULL && !json_is_null(v) && !json_is_object(v) && !json_is_array(v))
		e->field_key = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT); /* a number or a boolean as written */
	json_decref(payload);
	if (e->field_key == NULL) {
		snprintf(e->error, sizeof e->error,
				 "the message key is the payload's member \"%.200s\" (key_field), and the payload %s", field,
				 v == NULL ? "is no JSON object with that member" : "has no string, number or boolean there");
		return false;
	}
	m->key = e->field_key;
	m->key_len = strlen(e->field_key);
	return true;
}

/* verdict_of turns the report into the attempt's verdict and its log detail. */
static void
verdict_of(struct KafkaEvent *e, const struct KafkaTarget *t, const struct KafkaResult *r, struct Verdict *v)
{
	json_t *d = json_pack("{s:s}", "topic", t->topic);
	char *text;

	if (d != NULL && r->outcome == KO_SENT) {
		json_object_set_new(d, "partition", json_integer(r->partition));
		json_object_set_new(d, "offset", json_integer(r->offset));
	}
	text = d != NULL ? json_dumps(d, JSON_COMPACT) : NULL;
	json_decref(d);
	free(e->detail);
	e->detail = text;
	v->detail = text; /* NULL (out of memory): the log row goes without its detail */
	switch (r->outcome) {
	case KO_SENT:
		v->result = AR_OK;
		break;
	case KO_CONFIG:
		/* retried, so that the event goes once the settings or the cluster are fixed */
		attempt_config_error(e->a->rep, CE_DESTINATION, SECRETS_SQLSTATE,
							 "fix the channel's settings (pgrelay.register(channel, settings => ...)) or the "
							 "Kafka cluster (the topic, the brokers' addresses, TLS, SASL users), as the "
							 "error says");
		nothing_sent(e, v, AR_TRANSIENT, r->error);
		break;
	case KO_RETRY:
		nothing_sent(e, v, AR_TRANSIENT, r->error);
		break;
	case KO_PERMANENT:
		nothing_sent(e, v, AR_PERMANENT, r->error);
		break;
	}
}

/*
 * message_of makes e's message as doc says, into m (its attempt number in e->attempt). False with
 * e's verdict in v: the payload has no member for the key.
 */
static bool
message_of(struct KafkaEvent *e, json_t *doc, struct KafkaMessage *m, struct Verdict *v)
{
	snprintf(e->attempt, sizeof e->attempt, "%d", e->a->attempt);
	*m = (struct KafkaMessage){.event_id = e->r.event_id,
							   .channel = e->r.channel,
							   .attempt = e->attempt,
							   .queued_at = e->r.queued_at,
							   .publication_id = e->r.publication_id,
							   .event_type = e->r.event_type,
							   .payload = e->r.payload,
							   .payload_len = strlen(e->r.payload)};
	if (key_of(e, doc, m))
		return true;
	nothing_sent(e, v, AR_PERMANENT, e->error);
	return false;
}

/*
 * produce_all produces the events of sts[0..n), of one channel, to t together
 * (kafka_produce_many), and gives each its verdict; one without its message fails alone. False,
 * nothing sent, when memory ran out.
 */
static bool
produce_all(void *const *sts, int n, json_t *doc, const struct KafkaTarget *t, struct Verdict *vs)
{
	struct KafkaMessage *ms = calloc((size_t) n, sizeof *ms);
	struct KafkaResult *rs = calloc((size_t) n, sizeof *rs);
	int *of = calloc((size_t) n, sizeof *of); /* the event of each message */
	bool ok = ms != NULL && rs != NULL && of != NULL;
	int i, c = 0;

	for (i = 0; ok && i < n; i++)
		if (message_of(sts[i], doc, &ms[c], &vs[i]))
			of[c++] = i;
	if (c > 0)
		kafka_produce_many(t, ms, c, rs);
	for (i = 0; i < c; i++)
		verdict_of(sts[of[i]], t, &rs[i], &vs[of[i]]);
	free(ms);
	free(rs);
	free(of);
	return ok;
}

void
kafka_kind_deliver_many(void *const *sts, int n, struct Verdict *vs)
{
	struct KafkaEvent *first = sts[0];
	struct KafkaTarget t = {0};
	json_t *doc = first->r.settings != NULL ? json_loads(first->r.settings, 0, NULL) : NULL;
	enum AttemptResult result = AR_PERMANENT;
	bool config = false;
	int i;

	/* the events are of one channel: its settings, and its secret, are read once */
	if (doc == NULL)
		snprintf(first->error, sizeof first->error, "the channel has no kafka settings");
	else if (target_of(first, doc, &t, &config))
		result = produce_all(sts, n, doc, &t, vs) ? AR_OK : AR_TRANSIENT;
	else if (config)
		result = AR_TRANSIENT;
	if (result == AR_TRANSIENT && !config)
		snprintf(first->error, sizeof first->error, "out of memory");
	/* nothing produced: every event of the batch fails as the first did */
	for (i = 0; result != AR_OK && i < n; i++) {
		struct KafkaEvent *e = sts[i];

		if (config)
			attempt_config_error(e->a->rep, CE_SECRET, SECRETS_SQLSTATE, secrets_hint(first->error));
		nothing_sent(e, &vs[i], result, first->error);
	}
	json_decref(doc);
}

void
kafka_kind_deliver(void *st, struct Verdict *v)
{
	kafka_kind_deliver_many(&st, 1, v);
}
