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
 * Here: the channel's target, the message (its key), the produce and its verdict; the rest is
 * every destination event's (dest_event.c).
 */
#include "kafka_kind.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dest_event.h"
#include "kafka_producer.h"

void
kafka_kind_shutdown(void)
{
	kafka_producers_close();
}

/* target_of fills t from the channel's settings (DestSteps.target). */
static const char **
target_of(struct DestEvent *e, json_t *doc, void *target)
{
	struct KafkaTarget *t = target;

	t->channel = e->r.channel;
	t->settings = e->r.settings;
	t->brokers = dest_event_text(doc, "brokers");
	t->topic = dest_event_text(doc, "topic");
	t->tls = json_is_true(json_object_get(doc, "tls"));
	t->tls_verify = !json_is_false(json_object_get(doc, "tls_verify"));
	t->ca_file = dest_event_text(doc, "ca_file");
	t->sasl_mechanism = dest_event_text(doc, "sasl_mechanism");
	t->user = dest_event_text(doc, "user");
	/* the channel's own timeout_ms setting, else its timeout */
	t->timeout_ms = dest_event_timeout_ms(e, json_object_get(doc, "timeout_ms"));
	if (t->brokers == NULL || t->topic == NULL || dest_event_text(doc, "key") == NULL)
		return NULL;
	return &t->password;
}

/*
 * key_of sets the message's key as the settings say: the event's key, a member of the payload (a
 * JSON object, copied into *owned, which the caller frees once produced), or none. False with the
 * reason in err: the payload has no such member.
 */
static bool
key_of(const struct DestEvent *e, json_t *doc, struct KafkaMessage *m, char **owned, char *err, size_t errlen)
{
	const char *how = dest_event_text(doc, "key");
	const char *field = dest_event_text(doc, "key_field");
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
		*owned = strdup(json_string_value(v));
	else if (v != NULL && !json_is_null(v) && !json_is_object(v) && !json_is_array(v))
		*owned = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT); /* a number or a boolean as written */
	json_decref(payload);
	if (*owned == NULL) {
		snprintf(err, errlen,
				 "the message key is the payload's member \"%.200s\" (key_field), and the payload %s", field,
				 v == NULL ? "is no JSON object with that member" : "has no string, number or boolean there");
		return false;
	}
	m->key = *owned;
	m->key_len = strlen(*owned);
	return true;
}

/* verdict_of turns the report into the attempt's verdict and its log detail. */
static void
verdict_of(struct DestEvent *e, const struct KafkaTarget *t, const struct KafkaResult *r, struct Verdict *v)
{
	json_t *d = json_pack("{s:s}", "topic", t->topic);

	if (d != NULL && r->outcome == KO_SENT) {
		json_object_set_new(d, "partition", json_integer(r->partition));
		json_object_set_new(d, "offset", json_integer(r->offset));
	}
	dest_event_detail(e, v, d);
	switch (r->outcome) {
	case KO_SENT:
		v->result = AR_OK;
		break;
	case KO_CONFIG:
		dest_event_misconfigured(
			e, v, r->error,
			"fix the channel's settings (pgrelay.register(channel, settings => ...)) or the "
			"Kafka cluster (the topic, the brokers' addresses, TLS, SASL users), as the "
			"error says");
		break;
	case KO_RETRY:
		dest_event_nothing_sent(e, v, AR_TRANSIENT, r->error);
		break;
	case KO_PERMANENT:
		dest_event_nothing_sent(e, v, AR_PERMANENT, r->error);
		break;
	}
}

/*
 * message_of makes e's message as doc says, into m (its key, when taken from the payload, into
 * *owned). False with e's verdict in v: the payload has no member for the key.
 */
static bool
message_of(struct DestEvent *e, json_t *doc, struct KafkaMessage *m, char **owned, struct Verdict *v)
{
	char err[1024];

	*m = (struct KafkaMessage){.event_id = e->r.event_id,
							   .channel = e->r.channel,
							   .attempt = e->attempt,
							   .queued_at = e->r.queued_at,
							   .publication_id = e->r.publication_id,
							   .event_type = e->r.event_type,
							   .payload = e->r.payload,
							   .payload_len = strlen(e->r.payload)};
	if (key_of(e, doc, m, owned, err, sizeof err))
		return true;
	dest_event_nothing_sent(e, v, AR_PERMANENT, err);
	return false;
}

/*
 * produce_all produces the events of sts[0..n), of one channel, to t together
 * (kafka_produce_many), and gives each its verdict; one without its message fails alone
 * (DestSteps.many, and one event alone: a batch of one).
 */
static bool
produce_all(void *const *sts, int n, json_t *doc, const void *t, struct Verdict *vs)
{
	struct KafkaMessage *ms = calloc((size_t) n, sizeof *ms);
	struct KafkaResult *rs = calloc((size_t) n, sizeof *rs);
	int *of = calloc((size_t) n, sizeof *of);       /* the event of each message */
	char **keys = calloc((size_t) n, sizeof *keys); /* each message's key taken from its payload */
	bool ok = ms != NULL && rs != NULL && of != NULL && keys != NULL;
	int i, c = 0;

	for (i = 0; ok && i < n; i++)
		if (message_of(sts[i], doc, &ms[c], &keys[c], &vs[i]))
			of[c++] = i;
	if (c > 0)
		kafka_produce_many(t, ms, c, rs);
	for (i = 0; i < c; i++) {
		verdict_of(sts[of[i]], t, &rs[i], &vs[of[i]]);
		free(keys[i]);
	}
	free(ms);
	free(rs);
	free(of);
	free(keys);
	return ok;
}

static const struct DestSteps kafka = {"kafka", sizeof(struct KafkaTarget), target_of, NULL, produce_all};

void *
kafka_kind_open(struct Attempt *a)
{
	return dest_event_open(a, &kafka);
}
