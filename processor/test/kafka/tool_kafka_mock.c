/*
 * tool_kafka_mock - a Kafka cluster for the tests: librdkafka's mock cluster (rdkafka_mock.h), its
 * brokers listening on loopback, in this process. Prints "bootstrap HOST:PORT,..." once it
 * listens, then runs one command a line from stdin, answering "ok" (or "error ...") to each:
 *
 *   topic NAME PARTITIONS        create a topic
 *   topic-error NAME CODE        the cluster's metadata answers error CODE for the topic
 *   produce-errors CODE COUNT    the next COUNT Produce requests fail with error CODE
 *   down | up                    every broker stops (closes its connections) or starts answering
 *
 * It stops when stdin closes, or on SIGTERM.
 *
 *   tool_kafka_mock [BROKERS]
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The Kafka protocol's ApiKey of Produce requests. */
#define PRODUCE_API_KEY 0

static int brokers = 1;

/* run runs one command line on mc; false when it is not one. */
static bool
run(rd_kafka_mock_cluster_t *mc, char *line)
{
	char name[256];
	int a, b, i;

	if (sscanf(line, "topic %255s %d", name, &a) == 2)
		return rd_kafka_mock_topic_create(mc, name, a, 1) == RD_KAFKA_RESP_ERR_NO_ERROR;
	if (sscanf(line, "topic-error %255s %d", name, &a) == 2) {
		rd_kafka_mock_topic_set_error(mc, name, (rd_kafka_resp_err_t) a);
		return true;
	}
	if (sscanf(line, "produce-errors %d %d", &a, &b) == 2 && b > 0 && b <= 1000) {
		rd_kafka_resp_err_t errs[1000];

		for (i = 0; i < b; i++)
			errs[i] = (rd_kafka_resp_err_t) a;
		rd_kafka_mock_push_request_errors_array(mc, PRODUCE_API_KEY, (size_t) b, errs);
		return true;
	}
	if (strcmp(line, "down") == 0 || strcmp(line, "up") == 0) {
		for (i = 1; i <= brokers; i++)
			if ((line[0] == 'd' ? rd_kafka_mock_broker_set_down(mc, i)
								: rd_kafka_mock_broker_set_up(mc, i)) != RD_KAFKA_RESP_ERR_NO_ERROR)
				return false;
		return true;
	}
	return false;
}

int
main(int argc, char **argv)
{
	char err[512], line[1024];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk;
	rd_kafka_mock_cluster_t *mc;

	if (argc > 1)
		brokers = atoi(argv[1]) > 0 ? atoi(argv[1]) : 1;
	/* the mock cluster lives in a client instance: this one sends nothing */
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
	if (rk == NULL) {
		fprintf(stderr, "tool_kafka_mock: %s\n", err);
		return 1;
	}
	mc = rd_kafka_mock_cluster_new(rk, brokers);
	if (mc == NULL) {
		fprintf(stderr, "tool_kafka_mock: the mock cluster could not be made\n");
		rd_kafka_destroy(rk);
		return 1;
	}
	printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
	fflush(stdout);
	while (fgets(line, sizeof line, stdin) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		puts(run(mc, line) ? "ok" : "error: not a command, or it failed");
		fflush(stdout);
	}
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(rk);
	return 0;
}
