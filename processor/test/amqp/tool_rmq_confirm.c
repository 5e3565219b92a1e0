/*
 * tool_rmq_confirm.c - the benchmark's reference for the rabbitmq phase (bench/run rabbitmq):
 * rabbitmq-c on its own, one process, one connection, publishing COUNT persistent, mandatory
 * messages with the properties and headers a pg_relay event carries, BATCH at a time: a batch
 * published, then the broker's confirms read until every message of it is acked (BATCH in flight,
 * as a worker of the Processor has with its default batch). Prints "N messages in MS ms".
 *
 *   tool_rmq_confirm HOST PORT EXCHANGE ROUTING_KEY COUNT [BATCH]   (BATCH: 1 when not given)
 *
 * It uses rabbitmq-c's calls directly, not the Processor's amqp/ code, so that the comparison is
 * against the library alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>

static int
fail(const char *what)
{
	fprintf(stderr, "tool_rmq_confirm: %s\n", what);
	return 1;
}

/*
 * confirmed waits until every tag of first..last is acked (one at a time, or many at once when
 * multiple; the broker may ack out of order), acked[] marking each; 0 when they are.
 */
static int
confirmed(amqp_connection_state_t st, uint64_t first, uint64_t last, char *acked)
{
	uint64_t left = last - first + 1, t;
	amqp_frame_t f;

	memset(acked, 0, (size_t) left);
	while (left > 0) {
		if (amqp_simple_wait_frame(st, &f) != AMQP_STATUS_OK)
			return -1;
		if (f.frame_type != AMQP_FRAME_METHOD)
			continue;
		if (f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
			const amqp_basic_ack_t *ack = f.payload.method.decoded;

			for (t = ack->multiple ? first : ack->delivery_tag; t <= ack->delivery_tag && t <= last; t++)
				if (t >= first && !acked[t - first]) {
					acked[t - first] = 1;
					left--;
				}
		} else if (f.payload.method.id != AMQP_CONNECTION_BLOCKED_METHOD &&
				   f.payload.method.id != AMQP_CONNECTION_UNBLOCKED_METHOD) {
			return -1; /* a nack, a return, a close */
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	amqp_connection_state_t st;
	amqp_socket_t *sock;
	amqp_basic_properties_t p;
	amqp_table_entry_t h[3];
	struct timespec t0, t1;
	char id[32], body[96];
	long count, batch = 1, i, first = 1;
	char *acked;

	if ((argc != 6 && argc != 7) || (count = atol(argv[5])) <= 0 ||
		(argc == 7 && (batch = atol(argv[6])) <= 0))
		return fail("usage: tool_rmq_confirm HOST PORT EXCHANGE ROUTING_KEY COUNT [BATCH]");
	if ((acked = malloc((size_t) batch)) == NULL)
		return fail("out of memory");
	if ((st = amqp_new_connection()) == NULL || (sock = amqp_tcp_socket_new(st)) == NULL)
		return fail("out of memory");
	if (amqp_socket_open(sock, argv[1], atoi(argv[2])) != AMQP_STATUS_OK)
		return fail("cannot connect");
	if (amqp_login(st, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest").reply_type !=
			AMQP_RESPONSE_NORMAL ||
		amqp_channel_open(st, 1) == NULL || amqp_confirm_select(st, 1) == NULL)
		return fail("cannot log in, open the channel or select confirms");
	memset(&p, 0, sizeof p);
	p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG |
			   AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_APP_ID_FLAG;
	p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
	p.content_type = amqp_cstring_bytes("application/json");
	p.app_id = amqp_cstring_bytes("pg_relay");
	h[0].key = amqp_cstring_bytes("channel");
	h[0].value.kind = AMQP_FIELD_KIND_UTF8;
	h[0].value.value.bytes = amqp_cstring_bytes("rmq");
	h[1].key = amqp_cstring_bytes("attempt");
	h[1].value.kind = AMQP_FIELD_KIND_I32;
	h[1].value.value.i32 = 1;
	h[2].key = amqp_cstring_bytes("queued_at");
	h[2].value.kind = AMQP_FIELD_KIND_UTF8;
	h[2].value.value.bytes = amqp_cstring_bytes("2026-12-07T05:26:39.757214Z");
	p.headers.num_entries = 3;
	p.headers.entries = h;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 1; i <= count; i++) {
		snprintf(id, sizeof id, "%ld", 123378813181624320L + i);
		snprintf(body, sizeof body, "{\"order\": %ld, \"note\": \"bench\"}", i);
		p.message_id = amqp_cstring_bytes(id);
		if (amqp_basic_publish(st, 1, amqp_cstring_bytes(argv[3]), amqp_cstring_bytes(argv[4]), 1, 0, &p,
							   amqp_cstring_bytes(body)) != AMQP_STATUS_OK)
			return fail("a publish failed");
		if (i % batch != 0 && i != count)
			continue;
		if (confirmed(st, (uint64_t) first, (uint64_t) i, acked) != 0)
			return fail("a publish was not confirmed");
		first = i + 1;
		amqp_maybe_release_buffers(st);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%ld messages in %.0f ms\n", count,
		   (double) (t1.tv_sec - t0.tv_sec) * 1000.0 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6);
	free(acked);
	if (amqp_connection_close(st, AMQP_REPLY_SUCCESS).reply_type != AMQP_RESPONSE_NORMAL)
		return fail("cannot close the connection");
	return amqp_destroy_connection(st) == AMQP_STATUS_OK ? 0 : fail("cannot close the socket");
}
