/*
 * test_kafka_outcome.c - a message's librdkafka error classified: what passes is retried, what
 * the message itself causes fails it, what the settings or the cluster's set-up cause is a
 * configuration error.
 */
#include <librdkafka/rdkafka.h>

#include "kafka_producer.h"
#include "unit.h"

static void
test_errors_are_classified(void)
{
	static const struct {
		rd_kafka_resp_err_t err;
		enum KafkaOutcome want;
	} cases[] = {
		{RD_KAFKA_RESP_ERR_NO_ERROR, KO_SENT},
		{RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, KO_RETRY},
		{RD_KAFKA_RESP_ERR__TRANSPORT, KO_RETRY},
		{RD_KAFKA_RESP_ERR__TIMED_OUT, KO_RETRY},
		{RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, KO_RETRY},
		{RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, KO_RETRY},
		{RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, KO_RETRY},
		{RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, KO_RETRY},
		{RD_KAFKA_RESP_ERR__QUEUE_FULL, KO_RETRY},
		{RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, KO_PERMANENT},
		{RD_KAFKA_RESP_ERR_INVALID_RECORD, KO_PERMANENT},
		{RD_KAFKA_RESP_ERR_INVALID_MSG, KO_PERMANENT},
		{RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, KO_PERMANENT},
		{RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, KO_CONFIG},
		{RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, KO_CONFIG},
		{RD_KAFKA_RESP_ERR__RESOLVE, KO_CONFIG},
		{RD_KAFKA_RESP_ERR__SSL, KO_CONFIG},
		{RD_KAFKA_RESP_ERR__AUTHENTICATION, KO_CONFIG},
		{RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED, KO_CONFIG},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		CHECK(kafka_error_outcome(cases[i].err) == cases[i].want);
}

int
main(void)
{
	RUN(test_errors_are_classified);
	return UNIT_DONE();
}
