/*
 * kafka_producer.h - events produced to a Kafka topic through librdkafka, each finished only by its
 * own delivery report. The producer is idempotent (enable.idempotence, acks=all), so a retry
 * inside librdkafka adds no second copy, and the messages of one key keep their order in their
 * partition. Each message carries the headers event_id, channel, attempt and queued_at, and a
 * published event also publication_id and event_type.
 *
 * One producer per channel per process, shared by the worker threads (librdkafka's producer is
 * thread-safe): made on a channel's first event, rebuilt when its settings (or its resolved
 * password) change, or after librdkafka declared it unusable. Never logs, never exits.
 */
#ifndef PGRELAY_KAFKA_PRODUCER_H
#define PGRELAY_KAFKA_PRODUCER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A channel's destination, its secrets resolved. */
struct KafkaTarget {
	const char *channel;
	const char *settings; /* the settings as stored: a change rebuilds the producer */
	const char *brokers;  /* host:port[,host:port...] */
	const char *topic;
	bool tls;                   /* SSL or SASL_SSL */
	bool tls_verify;            /* verify the brokers' certificates (default true) */
	const char *ca_file;        /* NULL: the system's CAs */
	const char *sasl_mechanism; /* NULL: no SASL; else PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 */
	const char *user;
	const char *password;
	long timeout_ms; /* message.timeout.ms: the delivery report comes by then */
};

/* One event as its message carries it. */
struct KafkaMessage {
	const char *event_id;
	const char *channel;
	const char *attempt;
	const char *queued_at;      /* ISO 8601 */
	const char *publication_id; /* "": not published on a topic */
	const char *event_type;     /* NULL: none */
	const char *key;            /* NULL: none (the partitioner picks a partition) */
	size_t key_len;
	const char *payload;
	size_t payload_len;
};

enum KafkaOutcome {
	KO_SENT,      /* acknowledged by all in-sync replicas */
	KO_RETRY,     /* not delivered, or not known to be: try again later */
	KO_PERMANENT, /* refused for the message itself (too large, invalid, not authorised on the topic) */
	KO_CONFIG,    /* refused for the settings or the cluster's set-up: fix them, then retry */
};

struct KafkaResult {
	enum KafkaOutcome outcome;
	int32_t partition; /* KO_SENT */
	int64_t offset;    /* KO_SENT */
	char error[512];   /* why, otherwise; never holds a secret */
};

/*
 * kafka_produce_many produces ms[0..n) to t's topic through the channel's producer, all queued
 * before any is awaited, then waits for every message's own report (not a flush of the other
 * workers' messages) until t->timeout_ms and a margin passed: rs[i] is what came of ms[i]. One
 * refused at once (too large, queue full) fails alone; one whose report did not come is KO_RETRY.
 */
void kafka_produce_many(const struct KafkaTarget *t, const struct KafkaMessage *ms, int n,
						struct KafkaResult *rs);

/* kafka_error_outcome classifies a librdkafka error code (rd_kafka_resp_err_t) of a message. */
enum KafkaOutcome kafka_error_outcome(int err);

/* kafka_producers_close destroys every producer; called once the workers have stopped. */
void kafka_producers_close(void);

#endif
