/*
 * kafka_producer.c - the channels' shared producers and a batch's produce-and-wait
 * (kafka_producer.h).
 *
 * Delivery reports and errors reach us on librdkafka's background thread (background_event_cb):
 * no worker has to poll for another's report. Each message's opaque is its Report in the
 * worker's Batch; the worker waits on the batch until no report is due or its deadline.
 */
#include "kafka_producer.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One channel's producer. */
struct Producer {
	struct Producer *next;
	char *channel;
	char *fingerprint; /* the settings and the resolved password it was made with (wiped at free) */
	rd_kafka_t *rk;
	int users;    /* workers producing through it now (under registry_mu) */
	bool retired; /* replaced or unusable: freed by its last user */
	pthread_mutex_t mu;
	bool fatal;             /* librdkafka's fatal error: no message may go through it again */
	int config_err;         /* the last error of the set-up's kind (resolve, auth, TLS), 0: none */
	char config_error[256]; /* its text */
	char last_error[256];   /* the last error of any kind, for a message that timed out */
	bool scram;             /* logs in with SCRAM: see scram_note */
};

/* One message's delivery report, as it came. */
struct Report {
	struct Batch *b;
	bool done;
	rd_kafka_resp_err_t err;
	int32_t partition;
	int64_t offset;
};

/*
 * The reports of one batch, awaited together. Held by the waiter and by each report still due:
 * the last of them frees it, so a report arriving after the waiter gave up touches nothing freed.
 */
struct Batch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs; /* the waiter, and each message queued whose report has not come */
	int due;  /* the reports the waiter still waits for */
	struct Report r[];
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static struct Producer *producers;

/* batch_unref drops one holder of b, the caller holding b->mu; the last frees it. */
static void
batch_unref(struct Batch *b)
{
	bool last = --b->refs == 0;

	pthread_mutex_unlock(&b->mu);
	if (last) {
		pthread_cond_destroy(&b->cv);
		pthread_mutex_destroy(&b->mu);
		free(b);
	}
}

static struct Batch *
batch_new(int n)
{
	struct Batch *b = calloc(1, sizeof *b + (size_t) n * sizeof b->r[0]);
	pthread_condattr_t ca;
	int i;

	if (b == NULL)
		return NULL;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&b->cv, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		free(b);
		return NULL;
	}
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&b->mu, NULL);
	b->refs = 1;
	for (i = 0; i < n; i++)
		b->r[i].b = b;
	return b;
}

/* is_config_error: an error of a broker connection that fixing the settings or the set-up cures. */
static bool
is_config_error(rd_kafka_resp_err_t err)
{
	return err == RD_KAFKA_RESP_ERR__RESOLVE || err == RD_KAFKA_RESP_ERR__AUTHENTICATION ||
		   err == RD_KAFKA_RESP_ERR__SSL || err == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED ||
		   err == RD_KAFKA_RESP_ERR_UNSUPPORTED_SASL_MECHANISM ||
		   err == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED;
}

enum KafkaOutcome
kafka_error_outcome(int code)
{
	rd_kafka_resp_err_t err = (rd_kafka_resp_err_t) code;

	switch (err) {
	case RD_KAFKA_RESP_ERR_NO_ERROR:
		return KO_SENT;
	/* the topic or the cluster is not as the settings say */
	case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
	case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
	case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
	case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
		return KO_CONFIG;
	/* the message itself: sending it again changes nothing */
	case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
	case RD_KAFKA_RESP_ERR_INVALID_RECORD:
	case RD_KAFKA_RESP_ERR_INVALID_MSG: /* a corrupt message */
	case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
	case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
	case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
	case RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS:
		return KO_PERMANENT;
	default:
		return is_config_error(err) ? KO_CONFIG : KO_RETRY;
	}
}

/* on_event serves the producer's reports and errors, on librdkafka's background thread. */
static void
on_event(rd_kafka_t *rk, rd_kafka_event_t *ev, void *opaque)
{
	struct Producer *p = opaque;
	const rd_kafka_message_t *m;

	(void) rk;
	switch (rd_kafka_event_type(ev)) {
	case RD_KAFKA_EVENT_DR:
		while ((m = rd_kafka_event_message_next(ev)) != NULL) {
			struct Report *w = m->_private;

			if (w == NULL)
				continue;
			pthread_mutex_lock(&w->b->mu);
			w->err = m->err;
			w->partition = m->partition;
			w->offset = m->offset;
			w->done = true;
			if (--w->b->due == 0)
				pthread_cond_signal(&w->b->cv);
			batch_unref(w->b);
		}
		break;
	case RD_KAFKA_EVENT_ERROR:
		pthread_mutex_lock(&p->mu);
		snprintf(p->last_error, sizeof p->last_error, "%s", rd_kafka_event_error_string(ev));
		if (rd_kafka_event_error_is_fatal(ev))
			p->fatal = true;
		if (is_config_error(rd_kafka_event_error(ev))) {
			p->config_err = rd_kafka_event_error(ev);
			snprintf(p->config_error, sizeof p->config_error, "%s", rd_kafka_event_error_string(ev));
		}
		pthread_mutex_unlock(&p->mu);
		break;
	default:
		break;
	}
	rd_kafka_event_destroy(ev);
}

/* quiet drops librdkafka's own log lines: what matters comes back as the attempt's error. */
static void
quiet(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	(void) rk;
	(void) level;
	(void) fac;
	(void) buf;
}

/* set is one rd_kafka_conf_set; false with the reason in err. */
static bool
set(rd_kafka_conf_t *conf, const char *name, const char *value, char *err, size_t errlen)
{
	return rd_kafka_conf_set(conf, name, value, err, errlen) == RD_KAFKA_CONF_OK;
}

/* configure fills conf from t; false with the reason in err (the set-up's: a bad setting). */
static bool
configure(rd_kafka_conf_t *conf, const struct KafkaTarget *t, char *err, size_t errlen)
{
	char timeout[24], propagation[24];
	const char *protocol = t->tls ? (t->sasl_mechanism ? "sasl_ssl" : "ssl")
								  : (t->sasl_mechanism ? "sasl_plaintext" : "plaintext");

	snprintf(timeout, sizeof timeout, "%ld", t->timeout_ms);
	/* an unknown topic fails within the timeout, not after librdkafka's 30 s of patience */
	snprintf(propagation, sizeof propagation, "%ld", t->timeout_ms / 2 > 0 ? t->timeout_ms / 2 : 1);
	if (!set(conf, "bootstrap.servers", t->brokers, err, errlen) ||
		!set(conf, "client.id", "pg_relay", err, errlen) ||
		!set(conf, "enable.idempotence", "true", err, errlen) || !set(conf, "acks", "all", err, errlen) ||
		/*
		 * a worker queues its whole batch at once: 2 ms lets it leave in one request per partition
		 * (with 0 the first message goes alone and the rest wait for it: 6.8 ms a batch of 50 on
		 * the mock cluster against 2.7)
		 */
		!set(conf, "linger.ms", "2", err, errlen) || !set(conf, "message.timeout.ms", timeout, err, errlen) ||
		!set(conf, "topic.metadata.propagation.max.ms", propagation, err, errlen) ||
		/* the topic is the operator's to create, with its partitions and replication */
		!set(conf, "allow.auto.create.topics", "false", err, errlen) ||
		!set(conf, "security.protocol", protocol, err, errlen))
		return false;
	if (t->tls && t->ca_file != NULL && !set(conf, "ssl.ca.location", t->ca_file, err, errlen))
		return false;
	if (t->tls && !t->tls_verify &&
		(!set(conf, "enable.ssl.certificate.verification", "false", err, errlen) ||
		 !set(conf, "ssl.endpoint.identification.algorithm", "none", err, errlen)))
		return false;
	if (t->sasl_mechanism != NULL &&
		(!set(conf, "sasl.mechanisms", t->sasl_mechanism, err, errlen) ||
		 !set(conf, "sasl.username", t->user ? t->user : "", err, errlen) ||
		 !set(conf, "sasl.password", t->password ? t->password : "", err, errlen)))
		return false;
	return true;
}

static void
producer_free(struct Producer *p)
{
	if (p == NULL)
		return;
	if (p->rk != NULL)
		rd_kafka_destroy(p->rk); /* waits for the reports still due, each bounded by its timeout */
	if (p->fingerprint != NULL) {
		explicit_bzero(p->fingerprint, strlen(p->fingerprint));
		free(p->fingerprint);
	}
	free(p->channel);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* fingerprint_of is what a producer is made from: the settings and the resolved password. */
static char *
fingerprint_of(const struct KafkaTarget *t)
{
	size_t n = strlen(t->settings) + (t->password ? strlen(t->password) : 0) + 2;
	char *f = malloc(n);

	if (f != NULL)
		snprintf(f, n, "%s\n%s", t->settings, t->password ? t->password : "");
	return f;
}

/* producer_new makes the channel's producer; NULL with the reason in r (the set-up's). */
static struct Producer *
producer_new(const struct KafkaTarget *t, char *fingerprint, struct KafkaResult *r)
{
	struct Producer *p = calloc(1, sizeof *p);
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_queue_t *main_q, *bg_q;

	if (p == NULL || conf == NULL || (p->channel = strdup(t->channel)) == NULL) {
		snprintf(r->error, sizeof r->error, "out of memory making the channel's producer");
		r->outcome = KO_RETRY;
		goto fail;
	}
	pthread_mutex_init(&p->mu, NULL);
	p->scram = t->sasl_mechanism != NULL && strncmp(t->sasl_mechanism, "SCRAM-", 6) == 0;
	if (!configure(conf, t, r->error, sizeof r->error)) {
		r->outcome = KO_CONFIG;
		goto fail;
	}
	rd_kafka_conf_set_events(conf, RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR);
	rd_kafka_conf_set_background_event_cb(conf, on_event);
	rd_kafka_conf_set_log_cb(conf, quiet);
	rd_kafka_conf_set_opaque(conf, p);
	p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, r->error, sizeof r->error);
	if (p->rk == NULL) {
		r->outcome = KO_CONFIG;
		goto fail;
	}
	/* the reports and errors come to the main queue: served on the background thread, by on_event */
	main_q = rd_kafka_queue_get_main(p->rk);
	bg_q = rd_kafka_queue_get_background(p->rk);
	if (main_q != NULL && bg_q != NULL)
		rd_kafka_queue_forward(main_q, bg_q);
	if (main_q != NULL)
		rd_kafka_queue_destroy(main_q);
	if (bg_q != NULL)
		rd_kafka_queue_destroy(bg_q);
	p->fingerprint = fingerprint;
	p->users = 1;
	return p;
fail:
	if (conf != NULL)
		rd_kafka_conf_destroy(conf);
	if (p != NULL)
		p->fingerprint = NULL;
	producer_free(p);
	explicit_bzero(fingerprint, strlen(fingerprint));
	free(fingerprint);
	return NULL;
}

/* usable: p may take another message (not made unusable by a fatal error). */
static bool
usable(struct Producer *p)
{
	bool ok;

	pthread_mutex_lock(&p->mu);
	ok = !p->fatal;
	pthread_mutex_unlock(&p->mu);
	return ok;
}

/*
 * acquire is the channel's producer as t says, made or remade as needed, taken for one message
 * (release gives it back); NULL with the reason in r.
 */
static struct Producer *
acquire(const struct KafkaTarget *t, struct KafkaResult *r)
{
	char *fp = fingerprint_of(t);
	struct Producer **pp, *p, *old = NULL;

	if (fp == NULL) {
		snprintf(r->error, sizeof r->error, "out of memory");
		r->outcome = KO_RETRY;
		return NULL;
	}
	pthread_mutex_lock(&registry_mu);
	for (pp = &producers; *pp != NULL; pp = &(*pp)->next)
		if (strcmp((*pp)->channel, t->channel) == 0)
			break;
	p = *pp;
	if (p != NULL && strcmp(p->fingerprint, fp) == 0 && usable(p)) {
		p->users++;
		pthread_mutex_unlock(&registry_mu);
		explicit_bzero(fp, strlen(fp));
		free(fp);
		return p;
	}
	if (p != NULL) {
		/* settings changed, or unusable: its users finish with it, the last one frees it */
		*pp = p->next;
		p->retired = true;
		if (p->users == 0)
			old = p;
	}
	p = producer_new(t, fp, r);
	if (p != NULL) {
		p->next = producers;
		producers = p;
	}
	pthread_mutex_unlock(&registry_mu);
	producer_free(old);
	return p;
}

static void
release(struct Producer *p)
{
	bool last;

	pthread_mutex_lock(&registry_mu);
	last = --p->users == 0 && p->retired;
	pthread_mutex_unlock(&registry_mu);
	if (last)
		producer_free(p);
}

void
kafka_producers_close(void)
{
	struct Producer *p, *next;

	pthread_mutex_lock(&registry_mu);
	p = producers;
	producers = NULL;
	pthread_mutex_unlock(&registry_mu);
	for (; p != NULL; p = next) {
		next = p->next;
		producer_free(p);
	}
}

/* wait_all waits until b has no report due or timeout_ms passed (CLOCK_MONOTONIC); b->mu held. */
static void
wait_all(struct Batch *b, long timeout_ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (b->due > 0 && pthread_cond_timedwait(&b->cv, &b->mu, &until) == 0)
		;
}

/*
 * scram_note: what to add to a refused SCRAM login's error. librdkafka before 2.6.1 puts its own
 * nonce twice in SCRAM's last message; Kafka 3 brokers let that by, Kafka 4 brokers check the
 * nonce as RFC 5802 asks and refuse the login as if the password were wrong. Said with the error,
 * since the password is then the first thing an operator would change, and the wrong one.
 */
static const char *
scram_note(const struct Producer *p)
{
	bool refused = p->config_err == RD_KAFKA_RESP_ERR__AUTHENTICATION ||
				   p->config_err == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED;

	if (!p->scram || !refused || rd_kafka_version() >= 0x020601ff)
		return "";
	return "; librdkafka before 2.6.1 cannot log in with SCRAM to Kafka 4 brokers: with those, use "
		   "PLAIN over TLS or a newer librdkafka";
}

/* failed fills r for a message that did not go: outcome and error, the producer's own added. */
static void
failed(struct Producer *p, rd_kafka_resp_err_t err, struct KafkaResult *r)
{
	r->outcome = (enum KafkaOutcome) kafka_error_outcome(err);
	pthread_mutex_lock(&p->mu);
	if (err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT && p->config_err != 0) {
		/* never acknowledged because the brokers could not be reached as configured */
		r->outcome = KO_CONFIG;
		snprintf(r->error, sizeof r->error, "%s: %s%s", rd_kafka_err2str(err), p->config_error,
				 scram_note(p));
	} else if (err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT && p->last_error[0] != '\0') {
		snprintf(r->error, sizeof r->error, "%s (last error: %s)", rd_kafka_err2str(err), p->last_error);
	} else {
		snprintf(r->error, sizeof r->error, "%s", rd_kafka_err2str(err));
	}
	pthread_mutex_unlock(&p->mu);
}

/* headers_of is the message's headers; NULL when out of memory. */
static rd_kafka_headers_t *
headers_of(const struct KafkaMessage *m)
{
	rd_kafka_headers_t *h = rd_kafka_headers_new(6);

	if (h == NULL)
		return NULL;
	if (rd_kafka_header_add(h, "event_id", -1, m->event_id, -1) ||
		rd_kafka_header_add(h, "channel", -1, m->channel, -1) ||
		rd_kafka_header_add(h, "attempt", -1, m->attempt, -1) ||
		rd_kafka_header_add(h, "queued_at", -1, m->queued_at, -1) ||
		(m->publication_id[0] != '\0' &&
		 rd_kafka_header_add(h, "publication_id", -1, m->publication_id, -1)) ||
		(m->event_type != NULL && rd_kafka_header_add(h, "event_type", -1, m->event_type, -1))) {
		rd_kafka_headers_destroy(h);
		return NULL;
	}
	return h;
}

/* produce_one queues m with w as its opaque; its error when librdkafka refused it at once. */
static rd_kafka_resp_err_t
produce_one(struct Producer *p, const struct KafkaTarget *t, const struct KafkaMessage *m, struct Report *w)
{
	rd_kafka_headers_t *h = headers_of(m);
	size_t key_len = m->key != NULL ? m->key_len : 0;
	rd_kafka_resp_err_t err;

	if (h == NULL)
		return RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE; /* out of memory: retried */
	err = rd_kafka_producev(p->rk, RD_KAFKA_V_TOPIC(t->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
							RD_KAFKA_V_VALUE((void *) m->payload, m->payload_len),
							RD_KAFKA_V_KEY((const void *) m->key, key_len), RD_KAFKA_V_HEADERS(h),
							RD_KAFKA_V_OPAQUE(w), RD_KAFKA_V_END);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		rd_kafka_headers_destroy(h); /* not queued: no report will come, and the headers stay ours */
	return err;
}

/* result_of fills r from w's report; a report that did not come is a retry. */
static void
result_of(struct Producer *p, const struct Report *w, long waited_ms, struct KafkaResult *r)
{
	if (!w->done) {
		r->outcome = KO_RETRY;
		snprintf(r->error, sizeof r->error, "no delivery report within %ld ms", waited_ms);
	} else if (w->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
		r->outcome = KO_SENT;
		r->partition = w->partition;
		r->offset = w->offset;
		pthread_mutex_lock(&p->mu);
		p->config_err = 0; /* the brokers took a message: the set-up works */
		pthread_mutex_unlock(&p->mu);
	} else {
		failed(p, w->err, r);
	}
}

void
kafka_produce_many(const struct KafkaTarget *t, const struct KafkaMessage *ms, int n, struct KafkaResult *rs)
{
	/* message.timeout.ms bounds each report; the margin is for librdkafka's own timer */
	long waited_ms = t->timeout_ms + 5000;
	struct Producer *p;
	struct Batch *b;
	int i;

	memset(rs, 0, (size_t) n * sizeof *rs);
	if ((p = acquire(t, &rs[0])) == NULL || (b = batch_new(n)) == NULL) {
		if (p != NULL) {
			rs[0].outcome = KO_RETRY;
			snprintf(rs[0].error, sizeof rs[0].error, "out of memory");
			release(p);
		}
		for (i = 1; i < n; i++)
			rs[i] = rs[0];
		return;
	}
	/* all queued first: librdkafka sends them in as few requests as it can */
	for (i = 0; i < n; i++) {
		rd_kafka_resp_err_t err;

		pthread_mutex_lock(&b->mu);
		b->refs++; /* before the call: the report may come before it returns */
		b->due++;
		pthread_mutex_unlock(&b->mu);
		if ((err = produce_one(p, t, &ms[i], &b->r[i])) == RD_KAFKA_RESP_ERR_NO_ERROR)
			continue;
		pthread_mutex_lock(&b->mu);
		b->refs--;
		b->due--;
		b->r[i].done = true;
		b->r[i].err = err;
		pthread_mutex_unlock(&b->mu);
	}
	pthread_mutex_lock(&b->mu);
	wait_all(b, waited_ms);
	for (i = 0; i < n; i++)
		result_of(p, &b->r[i], waited_ms, &rs[i]);
	batch_unref(b);
	release(p);
}
